// SPDX-License-Identifier: MIT
/*
 * The registration cache's contract, apart from the stale-hit catalogue:
 * bad input gets -EINVAL (or the documented errno) and leaves nothing
 * registered or pinned; a cached region cannot be deregistered or its
 * domain closed under the cache; and the thread-safety the header
 * promises: several threads getting and putting overlapping ranges of
 * shared buffers while another replaces them, every transfer's bytes
 * checked, the counters balanced and the pins released at the end.
 * io_uring; monitor AUTO (mreg.ko's watches where loaded, else uffd).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tcommon.h"

#define PG	4096ul
#define BUFLEN	(64 * PG)
#define NBUFS	4
#define THREADS 4
#define ROUNDS	400

static struct mreg_domain *dom;
static int memfd;
static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;

static struct mreg_domain *open_domain(void)
{
	struct mreg_domain_attr a = {.backend = MREG_BACKEND_IO_URING,
				     .comp_mask = MREG_DOMAIN_ATTR_MAX_REGIONS,
				     .max_regions = 256};
	struct mreg_domain *d = NULL;

	return mreg_domain_open(&a, &d) ? NULL : d;
}

static int bad_open(void)
{
	struct mreg_cache_attr a = {.size = sizeof(a)};
	struct mreg_cache *c;

	T_CHECK(mreg_cache_open(NULL, &a, &c) == -EINVAL, "NULL domain");
	T_CHECK(mreg_cache_open(dom, NULL, &c) == -EINVAL, "NULL attr");
	T_CHECK(mreg_cache_open(dom, &a, NULL) == -EINVAL, "NULL out");
	a.size = 4;
	T_CHECK(mreg_cache_open(dom, &a, &c) == -EINVAL, "size 4");
	a.size = sizeof(a);
	a.monitor = 9;
	T_CHECK(mreg_cache_open(dom, &a, &c) == -EINVAL, "monitor 9");
	a.monitor = MREG_CACHE_MONITOR_UFFD;
	a.comp_mask = MREG_CACHE_ATTR_KMOD_FD;
	T_CHECK(mreg_cache_open(dom, &a, &c) == -EINVAL, "KMOD_FD with UFFD");
	a.comp_mask = 1u << 7;
	T_CHECK(mreg_cache_open(dom, &a, &c) == -EINVAL, "comp_mask");
	a.comp_mask = 0;
	a.reserved = 1;
	T_CHECK(mreg_cache_open(dom, &a, &c) == -EINVAL, "reserved");
	printf("  open: NULLs, sizes, monitor, comp_mask, reserved refused\n");
	return T_PASS;
}

static int bad_calls(struct mreg_cache *c)
{
	struct mreg_cache_stats st = {.size = 8};
	char *p = mmap(NULL, BUFLEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct mreg_region *r, *own;

	T_CHECK(p != MAP_FAILED, "mmap");
	memset(p, 1, BUFLEN);
	T_CHECK(mreg_cache_get(c, p, 0, &r) == -EINVAL, "len 0");
	T_CHECK(mreg_cache_get(c, (void *)-PG, 2 * PG, &r) == -EINVAL,
		"wrapping range");
	T_CHECK(mreg_cache_get(NULL, p, PG, &r) == -EINVAL, "NULL cache");
	T_CHECK(mreg_cache_get(c, p, PG, NULL) == -EINVAL, "NULL out");
	T_CHECK(mreg_cache_stats(c, &st) == -EINVAL, "stats size 8");
	T_CHECK(mreg_cache_put(c, NULL) == -EINVAL, "put NULL");
	/* A region of the domain that the cache does not own. */
	T_CHECK(!mreg_region_register(dom, p, PG, &own), "%s",
		mreg_last_error());
	T_CHECK(mreg_cache_put(c, own) == -EINVAL, "put of a foreign region");
	T_CHECK(!mreg_region_deregister(own, NULL), "%s", mreg_last_error());
	T_CHECK(!mreg_cache_get(c, p, PG, &r), "%s", mreg_last_error());
	T_CHECK(mreg_region_deregister(r, NULL) == -EBUSY,
		"deregister of a cached region");
	T_CHECK(mreg_domain_close(dom) == -EBUSY, "domain close under a cache");
	T_CHECK(mreg_cache_close(c) == -EBUSY,
		"cache close with a region held");
	T_CHECK(!mreg_cache_put(c, r), "%s", mreg_last_error());
	munmap(p, BUFLEN);
	/* Unmapped now: the registration fails, nothing stays behind. */
	T_CHECK(mreg_cache_get(c, p, PG, &r) < 0, "get of an unmapped range");
	printf("  calls: bad ranges and NULLs, foreign put, EBUSY for "
	       "deregister, domain and cache close, unmapped get refused\n");
	return T_PASS;
}

struct shared {
	struct mreg_cache *c;
	char *buf[NBUFS];
	_Atomic uint32_t tag[NBUFS]; /* what buf[i] holds once published */
	atomic_bool stop;
	atomic_uint bad, transfers;
};

static void fill(char *p, uint32_t tag)
{
	uint32_t *w = (uint32_t *)p;
	size_t i;

	for (i = 0; i < BUFLEN / 4; i++)
		w[i] = tag;
}

/* WRITE_FIXED of [p, p+len) through @r, back from the memfd: the first
 * word the device read. The ring is shared, so one transfer at a time;
 * the cache calls around it run concurrently. */
static int transfer(struct mreg_region *r, char *p, size_t len, uint32_t *got)
{
	struct io_uring *ring = mreg_domain_native(dom);
	struct mreg_region_info info = {.size = sizeof(info)};
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int res = -1;

	if (mreg_region_query(r, &info))
		return -1;
	pthread_mutex_lock(&ring_lock);
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_write_fixed(sqe, memfd, p, (unsigned int)len, 0,
				  (int)info.index);
	io_uring_submit(ring);
	if (!io_uring_wait_cqe(ring, &cqe)) {
		res = cqe->res;
		io_uring_cqe_seen(ring, cqe);
	}
	if (res == (int)len && pread(memfd, got, 4, 0) == 4)
		res = 0;
	pthread_mutex_unlock(&ring_lock);
	return res;
}

static void *worker(void *arg)
{
	struct shared *s = arg;
	unsigned int seed = (unsigned int)(uintptr_t)pthread_self(), i;
	struct mreg_region *r;
	uint32_t before, got;
	size_t off, len;
	int b, ret;

	for (i = 0; i < ROUNDS; i++) {
		b = rand_r(&seed) % NBUFS;
		off = (size_t)(rand_r(&seed) % 32) * PG;
		len = PG * (1 + (size_t)(rand_r(&seed) % 16));
		before = atomic_load(&s->tag[b]);
		ret = mreg_cache_get(s->c, s->buf[b] + off, len, &r);
		if (ret == -EAGAIN)
			continue; /* the buffer kept changing meanwhile */
		if (ret) {
			atomic_fetch_add(&s->bad, 1);
			break;
		}
		if (transfer(r, s->buf[b] + off, len, &got) ||
		    (got && got < before))
			atomic_fetch_add(&s->bad, 1);
		atomic_fetch_add(&s->transfers, 1);
		if (mreg_cache_put(s->c, r))
			atomic_fetch_add(&s->bad, 1);
	}
	return NULL;
}

/* Replace a buffer's mapping now and then, with the next tag. */
static void *remapper(void *arg)
{
	struct shared *s = arg;
	uint32_t tag = 2;
	int b = 0;

	while (!atomic_load(&s->stop)) {
		if (mmap(s->buf[b], BUFLEN, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
			 0) != s->buf[b]) {
			atomic_fetch_add(&s->bad, 1);
			break;
		}
		fill(s->buf[b], tag);
		atomic_store(&s->tag[b], tag++);
		b = (b + 1) % NBUFS;
		usleep(2000);
	}
	return NULL;
}

static int threads(struct mreg_cache *c)
{
	struct shared s = {.c = c};
	struct mreg_cache_stats st = {.size = sizeof(st)};
	pthread_t th[THREADS], rm;
	int i;

	for (i = 0; i < NBUFS; i++) {
		s.buf[i] = mmap(NULL, BUFLEN, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		T_CHECK(s.buf[i] != MAP_FAILED, "mmap");
		fill(s.buf[i], 1);
		atomic_store(&s.tag[i], 1);
	}
	pthread_create(&rm, NULL, remapper, &s);
	for (i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, worker, &s);
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	atomic_store(&s.stop, true);
	pthread_join(rm, NULL);
	T_CHECK(!mreg_cache_stats(c, &st), "%s", mreg_last_error());
	T_CHECK(!atomic_load(&s.bad), "%u transfers wrong or failed",
		atomic_load(&s.bad));
	T_CHECK(st.held == 0, "%llu entries still held",
		(unsigned long long)st.held);
	T_CHECK(st.hits + st.misses >= atomic_load(&s.transfers),
		"hits %llu + misses %llu < %u transfers",
		(unsigned long long)st.hits, (unsigned long long)st.misses,
		atomic_load(&s.transfers));
	printf("  threads: %d x %d gets against a remapper: %u transfers, "
	       "none stale, %llu hits, %llu misses, %llu invalidated\n",
	       THREADS, ROUNDS, atomic_load(&s.transfers),
	       (unsigned long long)st.hits, (unsigned long long)st.misses,
	       (unsigned long long)st.invalidated);
	for (i = 0; i < NBUFS; i++)
		munmap(s.buf[i], BUFLEN);
	return T_PASS;
}

int main(void)
{
	struct mreg_cache_attr a = {.size = sizeof(a)};
	struct mreg_cache *c;
	struct t_pins pins;
	int ret;

	t_init("test_cache_api");
	memfd = memfd_create("test_cache_api", MFD_CLOEXEC);
	T_CHECK(memfd >= 0, "memfd_create");
	dom = open_domain();
	if (!dom)
		return t_skip("no io_uring domain: %s", mreg_last_error());
	t_pins_read(&pins);
	ret = bad_open();
	if (ret)
		return ret;
	T_CHECK(!mreg_cache_open(dom, &a, &c), "%s", mreg_last_error());
	ret = bad_calls(c);
	if (!ret && !t_uring_sparse())
		printf("  threads: an io_uring domain holds one region at a "
		       "time "
		       "without sparse buffer tables (Linux 5.19): not run\n");
	else if (!ret)
		ret = threads(c);
	if (ret)
		return ret;
	T_CHECK(!mreg_cache_close(c), "%s", mreg_last_error());
	T_CHECK(!mreg_domain_close(dom), "%s", mreg_last_error());
	T_CHECK(t_pins_balanced(&pins), "pins left after close");
	printf("  pins balanced after close\n");
	return T_PASS;
}
