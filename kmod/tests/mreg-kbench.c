// SPDX-License-Identifier: GPL-2.0
/*
 * mreg-kbench: gup_test-style timings through /dev/mreg on any kernel.
 * For 4 kB, 64 kB and 2 MB (PMD) folios it times every MREG_IOC_BENCH
 * method over one range and prints a methods x folio sizes table plus
 * JSON.  The folio sizes are set with the THP knobs and verified through
 * /proc/kpageflags when run as root.
 *
 *   mreg-kbench [-s MB] [-r reps] [-c pages_per_call] [-j out.json]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "mt.h"

#define NSIZES 3
#define MAXREPS 15
/* Rows timed from userspace around MREG_IOC_PIN / MREG_IOC_UNPIN. */
#define KB_PIN_ANON 100
#define KB_PIN_MEMFD 101

struct method {
	uint32_t method;
	uint32_t flags;
	const char *name;
};

static const struct method methods[] = {
	{ MREG_BENCH_GUP_FAST, 0, "get_user_pages_fast" },
	{ MREG_BENCH_PUP_FAST, 0, "pin_user_pages_fast" },
	{ MREG_BENCH_PUP_FAST, MREG_BENCH_FLAG_LONGTERM, "pin_user_pages_fast+LONGTERM" },
	{ MREG_BENCH_PUP, 0, "pin_user_pages" },
	{ MREG_BENCH_PUP, MREG_BENCH_FLAG_LONGTERM, "pin_user_pages+LONGTERM" },
	{ MREG_BENCH_PUP_REMOTE, 0, "pin_user_pages_remote" },
	{ KB_PIN_ANON, 0, "MREG_IOC_PIN (anon)" },
	{ MREG_BENCH_MEMFD_PIN_FOLIOS, 0, "memfd_pin_folios" },
	{ KB_PIN_MEMFD, 0, "MREG_IOC_PIN (memfd)" },
};

#define NMETHODS (sizeof(methods) / sizeof(methods[0]))

static const unsigned int sizes_kb[NSIZES] = { 4, 64, 2048 };

struct cell {
	uint64_t get_ns, put_ns, nr_pages, nr_folios, census;
	uint64_t hist[32];
	int err;
};

static struct cell cells[NMETHODS][NSIZES];
static uint64_t len = 256UL << 20;
static unsigned int reps = 3, ppc;
static const char *json_path;

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Untimed: the orders QUERY reports, one count per extent. */
static void extent_hist(int fd, uint32_t handle, struct mreg_bench *b)
{
	struct mreg_extent *e;
	uint64_t n, i;

	e = mt_query(fd, handle, &n);
	for (i = 0; i < n; i++)
		b->order_hist[e[i].order < 32 ? e[i].order : 31]++;
	free(e);
}

/* The pin service as the library uses it: PIN then UNPIN, wall time. */
static int pin_once(int fd, const struct method *m, uint64_t addr, int mfd,
		    struct mreg_bench *b)
{
	int memfd = m->method == KB_PIN_MEMFD;
	struct mreg_pin p;
	uint64_t t0 = now_ns();
	int ret;

	ret = mt_pin(fd, memfd ? 0 : addr, len, memfd ? MREG_PIN_FLAG_MEMFD : 0,
		     memfd ? mfd : 0, &p);
	if (ret)
		return ret;
	b->get_ns = now_ns() - t0;
	extent_hist(fd, p.out_handle, b);
	t0 = now_ns();
	ret = mt_unpin(fd, p.out_handle);
	b->put_ns = now_ns() - t0;
	b->nr_pages = p.out_nr_pages;
	b->nr_folios = p.out_nr_folios;
	return ret;
}

static int bench_once(int fd, const struct method *m, uint64_t addr, int mfd,
		      struct mreg_bench *b)
{
	memset(b, 0, sizeof(*b));
	if (m->method == KB_PIN_ANON || m->method == KB_PIN_MEMFD)
		return pin_once(fd, m, addr, mfd, b);
	b->size = sizeof(*b);
	b->method = m->method;
	b->flags = m->flags | MREG_BENCH_FLAG_WRITE;
	b->pages_per_call = ppc;
	b->length = len;
	if (m->method == MREG_BENCH_MEMFD_PIN_FOLIOS)
		b->memfd = mfd;
	else
		b->addr = addr;
	return mt_ioctl(fd, MREG_IOC_BENCH, b);
}

static int is_memfd(const struct method *m)
{
	return m->method == MREG_BENCH_MEMFD_PIN_FOLIOS ||
	       m->method == KB_PIN_MEMFD;
}

static void run_cell(int fd, const struct method *m, uint64_t addr, int mfd,
		     struct cell *c)
{
	uint64_t get[MAXREPS], put[MAXREPS];
	struct mreg_bench b;
	unsigned int r;

	for (r = 0; r < reps; r++) {
		c->err = bench_once(fd, m, addr, mfd, &b);
		if (c->err)
			return;
		get[r] = b.get_ns;
		put[r] = b.put_ns;
	}
	qsort(get, reps, 8, cmp_u64);
	qsort(put, reps, 8, cmp_u64);
	c->get_ns = get[reps / 2];
	c->put_ns = put[reps / 2];
	c->nr_pages = b.nr_pages;
	c->nr_folios = b.nr_folios;
	memcpy(c->hist, b.order_hist, sizeof(c->hist));
}

static uint64_t census(const void *p)
{
	uint64_t hist[32], n = 0;

	if (mt_have_pagemap())
		mt_folio_census(p, len, hist, &n);
	return n;
}

static void anon_size(int fd, int s)
{
	char *buf;
	size_t m;

	mt_thp_only(sizes_kb[s] == 4 ? 0 : sizes_kb[s]);
	buf = mt_map(len, MT_2M);
	mt_fill(buf, len, s);
	for (m = 0; m < NMETHODS; m++) {
		if (is_memfd(&methods[m]))
			continue;
		cells[m][s].census = census(buf);
		run_cell(fd, &methods[m], (uintptr_t)buf, 0, &cells[m][s]);
	}
	munmap(buf, len);
}

static void memfd_size(int fd, int s)
{
	int mfd = memfd_create("mreg-kbench", MFD_CLOEXEC);
	uint64_t n;
	char *buf;
	size_t m;

	mt_shmem_thp_only(sizes_kb[s] == 4 ? 0 : sizes_kb[s]);
	if (mfd < 0 || ftruncate(mfd, len))
		mt_fail("memfd: %s", strerror(errno));
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	MT_CHECK(buf != MAP_FAILED, "mmap memfd");
	mt_fill(buf, len, s);
	n = census(buf);
	for (m = 0; m < NMETHODS; m++) {
		if (!is_memfd(&methods[m]))
			continue;
		cells[m][s].census = n;
		run_cell(fd, &methods[m], 0, mfd, &cells[m][s]);
	}
	munmap(buf, len);
	close(mfd);
}

static unsigned int order_of(unsigned int kb)
{
	unsigned int o = 0;

	while ((4u << o) < kb)
		o++;
	return o;
}

static void print_table(void)
{
	size_t m;
	int s;

	printf("\nmreg-kbench: %llu MB, write, %s pages per call, median of %u (get ms / put ms / folios)\n",
	       (unsigned long long)(len >> 20), ppc ? "some" : "all", reps);
	printf("%-30s", "method");
	for (s = 0; s < NSIZES; s++)
		printf(" | %25ukB", sizes_kb[s]);
	printf("\n");
	for (m = 0; m < NMETHODS; m++) {
		printf("%-30s", methods[m].name);
		for (s = 0; s < NSIZES; s++) {
			struct cell *c = &cells[m][s];

			if (c->err)
				printf(" | %27s", strerror(-c->err));
			else
				printf(" | %9.2f %7.2f %8llu%c", c->get_ns / 1e6,
				       c->put_ns / 1e6,
				       (unsigned long long)c->nr_folios,
				       c->hist[order_of(sizes_kb[s])] ? ' ' : '*');
		}
		printf("\n");
	}
	printf("* no folio of that size: the kernel did not allocate it (6.12 gives memfds no mTHP)\n");
	printf("MREG_IOC_PIN rows: wall time of PIN / UNPIN from userspace, folios = out_nr_folios\n");
}

static void json_cell(FILE *f, size_t m, int s, int first)
{
	struct cell *c = &cells[m][s];
	int o, k = 0;

	fprintf(f, "%s\n    {\"method\": \"%s\", \"folio_kb\": %u, \"error\": %d, "
		"\"get_ns\": %llu, \"put_ns\": %llu, \"nr_pages\": %llu, "
		"\"nr_folios\": %llu, \"kpageflags_folios\": %llu, \"order_hist\": {",
		first ? "" : ",", methods[m].name, sizes_kb[s], c->err,
		(unsigned long long)c->get_ns, (unsigned long long)c->put_ns,
		(unsigned long long)c->nr_pages,
		(unsigned long long)c->nr_folios,
		(unsigned long long)c->census);
	for (o = 0; o < 32; o++)
		if (c->hist[o])
			fprintf(f, "%s\"%d\": %llu", k++ ? ", " : "", o,
				(unsigned long long)c->hist[o]);
	fprintf(f, "}}");
}

static void print_json(FILE *f)
{
	struct utsname u;
	size_t m;
	int s, first = 1;

	uname(&u);
	fprintf(f, "{\"tool\": \"mreg-kbench\", \"kernel\": \"%s\", \"length\": %llu, "
		"\"reps\": %u, \"pages_per_call\": %u, \"write\": true, \"cells\": [",
		u.release, (unsigned long long)len, reps, ppc);
	for (m = 0; m < NMETHODS; m++)
		for (s = 0; s < NSIZES; s++, first = 0)
			json_cell(f, m, s, first);
	fprintf(f, "\n]}\n");
}

static void parse(int argc, char **argv)
{
	int c;

	while ((c = getopt(argc, argv, "s:r:c:j:")) != -1) {
		switch (c) {
		case 's': len = strtoull(optarg, NULL, 0) << 20; break;
		case 'r': reps = atoi(optarg); break;
		case 'c': ppc = atoi(optarg); break;
		case 'j': json_path = optarg; break;
		default:
			fprintf(stderr, "usage: mreg-kbench [-s MB] [-r reps] [-c ppc] [-j json]\n");
			exit(2);
		}
	}
	if (!len || reps < 1 || reps > MAXREPS)
		mt_fail("bad -s or -r (reps 1..%d)", MAXREPS);
}

int main(int argc, char **argv)
{
	int fd = mt_open(), s;
	struct mreg_set_limit sl = { .size = sizeof(sl) };
	FILE *f;

	parse(argc, argv);
	sl.max_pages = len / MT_PAGE;
	if (mt_ioctl(fd, MREG_IOC_SET_LIMIT, &sl))
		mt_skip("range of %llu MB is above the module's per-file cap",
			(unsigned long long)(len >> 20));
	for (s = 0; s < NSIZES; s++) {
		anon_size(fd, s);
		memfd_size(fd, s);
	}
	print_table();
	print_json(stdout);
	if (json_path) {
		f = fopen(json_path, "w");
		MT_CHECK(f, "open %s", json_path);
		print_json(f);
		fclose(f);
	}
	close(fd);
	return 0;
}
