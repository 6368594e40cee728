// SPDX-License-Identifier: MIT
/*
 * mreg-cache-bench: what a registration cache buys on a realistic pattern.
 * A few large buffers (malloc'd, so glibc maps each), many transfers from
 * them, three in four of a whole buffer (a message buffer sent again and
 * again) and one in four of a random slice of one, and now and then a
 * buffer freed and a new one allocated, often at the same address: the
 * case a cache must get right. Two modes, same seed, same pattern:
 *
 *   none   register, transfer, deregister, every time
 *   cache  mreg_cache_get, transfer, mreg_cache_put (the monitor AUTO
 *          chooses: mreg.ko's watches when loaded, else userfaultfd)
 *
 * A transfer is one IORING_OP_WRITE_FIXED of the slice to a memfd,
 * checked against the buffer's bytes, so a stale registration would fail
 * the cell rather than speed it up. Prints one line per mode: ns per
 * transfer and ns of it in the registration calls (get+put, or register
 * and deregister; medians of -r runs), hits, misses, invalidations, and the
 * folio histogram of the buffers as allocated (mreg_verify_range(): an
 * estimate is never shown as verified).
 *
 *   mreg-cache-bench [-b BUFS] [-s MB] [-n TRANSFERS] [-f EVERY] [-r RUNS]
 *
 * Defaults: 8 buffers of 4 MB, 2000 transfers, a reallocation every 200,
 * median of 5 runs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <liburing.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <mreg/mreg.h>

#include "bench.h"

#define MAX_BUFS 64
#define SLICE	 (256u << 10)

struct opts {
	int bufs, transfers, free_every, runs;
	size_t size;
};

struct run {
	char *buf[MAX_BUFS];
	struct mreg_domain *d;
	struct mreg_cache *c;
	int memfd;
	char *check;
	uint64_t seed;
	uint64_t reg_ns;	     /* in get+put, or register+deregister */
	struct mreg_folio_hist hist; /* of every buffer allocated, summed */
	int verified;		     /* each read exactly (pagemap) */
};

static uint64_t rnd(struct run *r)
{
	r->seed ^= r->seed << 13;
	r->seed ^= r->seed >> 7;
	r->seed ^= r->seed << 17;
	return r->seed;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void hist_add(struct run *r, char *p, size_t len)
{
	struct mreg_folio_hist h = {.size = sizeof(h)};
	char *a = (char *)((uintptr_t)p & ~4095ul);
	int i;

	/* The whole pages of the block: malloc's header sits before it. */
	len = ((uintptr_t)p + len - (uintptr_t)a) & ~4095ul;
	if (mreg_verify_range(a, len, &h) || h.method != MREG_VERIFY_EXACT) {
		r->verified = 0;
		return;
	}
	for (i = 0; i < MREG_HIST_ORDERS; i++) {
		r->hist.folios[i] += h.folios[i];
		r->hist.bytes[i] += h.bytes[i];
	}
	r->hist.method = h.method;
	r->hist.page_size = h.page_size;
}

static char *buf_new(struct run *r, size_t size)
{
	char *p = malloc(size);
	size_t i;

	if (!p)
		return NULL;
	for (i = 0; i < size; i += 4096)
		p[i] = (char)rnd(r);
	hist_add(r, p, size);
	return p;
}

static int write_fixed(struct run *r, struct mreg_region *reg, char *p,
		       unsigned int len)
{
	struct io_uring *ring = mreg_domain_native(r->d);
	struct mreg_region_info info = {.size = sizeof(info)};
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int res;

	if (mreg_region_query(reg, &info))
		return -EINVAL;
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_write_fixed(sqe, r->memfd, p, len, 0, (int)info.index);
	io_uring_submit(ring);
	if (io_uring_wait_cqe(ring, &cqe))
		return -EIO;
	res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	if (res != (int)len || pread(r->memfd, r->check, len, 0) != len ||
	    memcmp(r->check, p, len))
		return -EIO;
	return 0;
}

/* One transfer of @p, @len through the registration the mode gives. */
static int transfer(struct run *r, char *p, unsigned int len)
{
	struct mreg_region *reg;
	char *a = (char *)((uintptr_t)p & ~4095ul);
	size_t alen = ((uintptr_t)p + len + 4095 - (uintptr_t)a) & ~4095ul;
	uint64_t t0 = now_ns(), t1;
	int ret;

	ret = r->c ? mreg_cache_get(r->c, p, len, &reg)
		   : mreg_region_register(r->d, a, alen, &reg);
	if (ret)
		return ret;
	t1 = now_ns();
	r->reg_ns += t1 - t0;
	ret = write_fixed(r, reg, p, len);
	t0 = now_ns();
	if (r->c)
		mreg_cache_put(r->c, reg);
	else
		mreg_region_deregister(reg, NULL);
	r->reg_ns += now_ns() - t0;
	return ret;
}

static int one_run(const struct opts *o, int cached, uint64_t *ns,
		   uint64_t *reg_ns, struct mreg_cache_stats *st, struct run *r)
{
	struct mreg_domain_attr da = {.backend = MREG_BACKEND_IO_URING,
				      .comp_mask = MREG_DOMAIN_ATTR_MAX_REGIONS,
				      .max_regions = 512};
	struct mreg_cache_attr ca = {.size = sizeof(ca)};
	int i, b, ret = 0;
	uint64_t t0;

	memset(r, 0, sizeof(*r));
	r->seed = 0x2545f4914f6cdd1dull;
	r->verified = 1;
	r->hist.size = sizeof(r->hist);
	r->memfd = memfd_create("cache-bench", MFD_CLOEXEC);
	r->check = malloc(o->size);
	if (mreg_domain_open(&da, &r->d))
		return -1;
	if (cached && mreg_cache_open(r->d, &ca, &r->c))
		return -1;
	for (b = 0; b < o->bufs; b++)
		r->buf[b] = buf_new(r, o->size);
	t0 = now_ns();
	for (i = 0; i < o->transfers && !ret; i++) {
		b = (int)(rnd(r) % (uint64_t)o->bufs);
		if (o->free_every && i % o->free_every == o->free_every - 1) {
			free(r->buf[b]);
			r->buf[b] = buf_new(r, o->size);
		}
		if (rnd(r) % 4)
			ret = transfer(r, r->buf[b], (unsigned int)o->size);
		else
			ret = transfer(r,
				       r->buf[b] + rnd(r) % (o->size - SLICE),
				       SLICE - (unsigned int)(rnd(r) % 4096));
	}
	*ns = (now_ns() - t0) / (uint64_t)o->transfers;
	*reg_ns = r->reg_ns / (uint64_t)o->transfers;
	if (r->c) {
		st->size = sizeof(*st);
		mreg_cache_stats(r->c, st);
		mreg_cache_close(r->c);
	}
	for (b = 0; b < o->bufs; b++)
		free(r->buf[b]);
	mreg_domain_close(r->d);
	close(r->memfd);
	free(r->check);
	return ret;
}

static int parse(int argc, char **argv, struct opts *o)
{
	int c;

	*o = (struct opts){.bufs = 8,
			   .size = 4u << 20,
			   .transfers = 2000,
			   .free_every = 200,
			   .runs = 5};
	while ((c = getopt(argc, argv, "b:s:n:f:r:")) != -1) {
		switch (c) {
		case 'b':
			o->bufs = atoi(optarg);
			break;
		case 's':
			o->size = (size_t)atoi(optarg) << 20;
			break;
		case 'n':
			o->transfers = atoi(optarg);
			break;
		case 'f':
			o->free_every = atoi(optarg);
			break;
		case 'r':
			o->runs = atoi(optarg);
			break;
		default:
			return -1;
		}
	}
	if (o->bufs < 1 || o->bufs > MAX_BUFS || o->size < 2 * SLICE ||
	    o->transfers < 1 || o->runs < 1 || o->runs > 99) {
		fprintf(stderr,
			"mreg-cache-bench: -b 1..%d, -s >= 1, -n >= 1, "
			"-r 1..99\n",
			MAX_BUFS);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const monitor[] = {"auto", "kmod", "uffd"};
	struct mreg_cache_stats st = {0};
	uint64_t ns[100], reg_ns[100];
	double samples[100];
	struct stats total, reg;
	char hist[256];
	struct opts o;
	struct run r;
	int mode, i;

	if (parse(argc, argv, &o))
		return 2;
	/* glibc's threshold would move to a freed buffer's size and later
	 * buffers would come from the heap: keep each its own mapping. */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	printf("# %d buffers of %zu MB, %d transfers (3/4 a whole buffer, 1/4 "
	       "a ~%u kB slice), one buffer freed and reallocated every %d; "
	       "io_uring WRITE_FIXED, checked\n",
	       o.bufs, o.size >> 20, o.transfers, SLICE >> 10, o.free_every);
	for (mode = 0; mode < 2; mode++) {
		for (i = 0; i < o.runs; i++) {
			if (one_run(&o, mode, &ns[i], &reg_ns[i], &st, &r)) {
				fprintf(stderr, "mreg-cache-bench: %s\n",
					mreg_last_error());
				return 1;
			}
		}
		for (i = 0; i < o.runs; i++)
			samples[i] = (double)ns[i];
		stats_compute(samples, o.runs, &total);
		for (i = 0; i < o.runs; i++)
			samples[i] = (double)reg_ns[i];
		stats_compute(samples, o.runs, &reg);
		mreg_folio_hist_format(&r.hist, hist, sizeof(hist));
		printf("mode=%s ns_per_transfer=%llu reg_ns_per_transfer=%llu",
		       mode ? "cache" : "none",
		       (unsigned long long)total.median,
		       (unsigned long long)reg.median);
		if (mode)
			printf(" monitor=%s hits=%llu misses=%llu "
			       "invalidated=%llu "
			       "evicted=%llu",
			       monitor[st.monitor], (unsigned long long)st.hits,
			       (unsigned long long)st.misses,
			       (unsigned long long)st.invalidated,
			       (unsigned long long)st.evicted);
		printf(" folios=%s %s\n", hist,
		       r.verified ? "verified" : "(not verified)");
	}
	return 0;
}
