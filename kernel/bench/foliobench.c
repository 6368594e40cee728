// SPDX-License-Identifier: GPL-2.0
/*
 * foliobench: time GUP and io_uring buffer registration over a region whose
 * folio layout is set up and verified first, for the stock-vs-patched runs.
 *
 *   foliobench -t TEST -l LAYOUT [-m MB] [-n PAGES] [-r RUNS] [-w] [-c]
 *
 * TEST: fast (get_user_pages_fast), pinfast (pin_user_pages_fast),
 *       longterm (pin_user_pages + FOLL_LONGTERM, the slow path),
 *       gup (get_user_pages), uring (IORING_REGISTER_BUFFERS of the region).
 *       The GUP tests use the kernel's own /sys/kernel/debug/gup_test.
 * LAYOUT: 4k (MADV_NOHUGEPAGE), thp (MADV_HUGEPAGE: the sizes enabled in
 *       /sys/kernel/mm/transparent_hugepage decide), pte (MADV_HUGEPAGE,
 *       then every PMD mapping is split into PTEs by an mprotect() round
 *       trip on its first page, which leaves the 2 MB folios whole).
 *
 * Prints one line: the test, the layout, the folio histogram read from
 * /proc/kpageflags, the PMD-mapped size from smaps, and the median, min and
 * max time in microseconds of the RUNS calls.
 *
 * -c brackets each timed call with kcount marks (bench/tcg-plugin/) and
 * ends the cell with one, so the kcount TCG plugin, when qemu loads it,
 * records the kernel's instructions, atomics and memory accesses per call.
 * Without the plugin the marks are NOPs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "mm/gup_test.h"
#include "kcount-mark.h"

#define FOLL_WRITE	0x01
#define PMD_SZ		(2UL << 20)
#define KPF_HEAD	(1ULL << 15)
#define KPF_TAIL	(1ULL << 16)
#define MAX_RUNS	256
#define MAX_ORDER_HIST	20

struct opts {
	const char *test;
	const char *layout;
	unsigned long size;
	unsigned int nr_per_call;
	int runs;
	int write;
	int marks;
};

/* Around the one kernel call of a run only: setup and timing stay out. */
#define CALL_MARK(o, n)                  \
	do {                             \
		if ((o)->marks)          \
			KCOUNT_MARK(n);  \
	} while (0)

static void die(const char *what)
{
	fprintf(stderr, "foliobench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void usage(void)
{
	fprintf(stderr, "usage: foliobench -t fast|pinfast|longterm|gup|uring "
		"-l 4k|thp|pte [-m MB] [-n PAGES] [-r RUNS] [-w] [-c]\n");
	exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
	int c;

	*o = (struct opts){ .size = 256UL << 20, .nr_per_call = 512,
			    .runs = 9 };
	while ((c = getopt(argc, argv, "t:l:m:n:r:wc")) != -1) {
		switch (c) {
		case 't': o->test = optarg; break;
		case 'l': o->layout = optarg; break;
		case 'm': o->size = strtoul(optarg, NULL, 0) << 20; break;
		case 'n': o->nr_per_call = strtoul(optarg, NULL, 0); break;
		case 'r': o->runs = atoi(optarg); break;
		case 'w': o->write = 1; break;
		case 'c': o->marks = 1; break;
		default: usage();
		}
	}
	if (!o->test || !o->layout || o->runs < 1 || o->runs > MAX_RUNS)
		usage();
}

/* A PMD-aligned anonymous region, faulted in with the requested layout. */
static char *region_alloc(const struct opts *o)
{
	unsigned long off;
	char *raw, *p;

	raw = mmap(NULL, o->size + PMD_SZ, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		die("mmap");
	p = (char *)(((uintptr_t)raw + PMD_SZ - 1) & ~(PMD_SZ - 1));
	if (madvise(p, o->size, strcmp(o->layout, "4k") ?
		    MADV_HUGEPAGE : MADV_NOHUGEPAGE))
		die("madvise");
	for (off = 0; off < o->size; off += 4096)
		p[off] = 1;
	if (strcmp(o->layout, "pte"))
		return p;
	/* Changing the protection of part of a PMD splits only the mapping. */
	for (off = 0; off < o->size; off += PMD_SZ) {
		if (mprotect(p + off, 4096, PROT_READ) ||
		    mprotect(p + off, 4096, PROT_READ | PROT_WRITE))
			die("mprotect");
	}
	return p;
}

/* Folio sizes of the region, from the compound head/tail page flags. */
static void folio_histogram(const char *p, unsigned long size, char *out,
			    size_t outsz)
{
	unsigned long hist[MAX_ORDER_HIST] = { 0 }, run = 0, i, n = size / 4096;
	int pm = open("/proc/self/pagemap", O_RDONLY);
	int kf = open("/proc/kpageflags", O_RDONLY);
	uint64_t ent, flags;
	size_t len = 0;
	int order;

	if (pm < 0 || kf < 0) {
		snprintf(out, outsz, "unverified");
		return;
	}
	for (i = 0; i <= n; i++) {
		flags = 0;
		if (i < n && pread(pm, &ent, 8, ((uintptr_t)p / 4096 + i) * 8) == 8 &&
		    (ent & (1ULL << 63)))
			pread(kf, &flags, 8, (ent & ((1ULL << 55) - 1)) * 8);
		if (i < n && (flags & KPF_TAIL) && run) {
			run++;
			continue;
		}
		if (run) {
			order = __builtin_ctzl(run);
			hist[order < MAX_ORDER_HIST ? order : 0]++;
		}
		run = i < n ? 1 : 0;
	}
	close(pm);
	close(kf);
	for (order = 0; order < MAX_ORDER_HIST; order++)
		if (hist[order])
			len += snprintf(out + len, outsz - len, "%s%lux%lukB",
					len ? "," : "", hist[order],
					4UL << order);
}

static unsigned long smaps_pmd_kb(void)
{
	unsigned long kb, total = 0;
	char line[256];
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "AnonHugePages: %lu kB", &kb) == 1)
			total += kb;
	fclose(f);
	return total;
}

static unsigned long gup_cmd(const char *test)
{
	if (!strcmp(test, "fast"))
		return GUP_FAST_BENCHMARK;
	if (!strcmp(test, "pinfast"))
		return PIN_FAST_BENCHMARK;
	if (!strcmp(test, "longterm"))
		return PIN_LONGTERM_BENCHMARK;
	if (!strcmp(test, "gup"))
		return GUP_BASIC_TEST;
	usage();
	return 0;
}

static long run_gup(const struct opts *o, char *p, int fd)
{
	struct gup_test g = {
		.addr = (uintptr_t)p, .size = o->size,
		.nr_pages_per_call = o->nr_per_call,
		.gup_flags = o->write ? FOLL_WRITE : 0,
	};

	CALL_MARK(o, KCOUNT_MARK_BEGIN);
	if (ioctl(fd, gup_cmd(o->test), &g))
		die("gup_test ioctl");
	CALL_MARK(o, KCOUNT_MARK_END);
	return g.get_delta_usec;
}

static long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

/* One IORING_REGISTER_BUFFERS of the whole region, timed, then undone. */
static long run_uring(const struct opts *o, char *p, int ring)
{
	struct iovec iov = { .iov_base = p, .iov_len = o->size };
	long t0 = now_us(), t;
	long rc;

	CALL_MARK(o, KCOUNT_MARK_BEGIN);
	rc = syscall(__NR_io_uring_register, ring, IORING_REGISTER_BUFFERS,
		     &iov, 1);
	CALL_MARK(o, KCOUNT_MARK_END);
	t = now_us() - t0;
	if (rc)
		die("IORING_REGISTER_BUFFERS");
	if (syscall(__NR_io_uring_register, ring, IORING_UNREGISTER_BUFFERS,
		    NULL, 0))
		die("IORING_UNREGISTER_BUFFERS");
	return t;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

static int open_target(const struct opts *o)
{
	struct io_uring_params params = { 0 };
	int fd;

	if (!strcmp(o->test, "uring")) {
		fd = syscall(__NR_io_uring_setup, 4, &params);
		if (fd < 0)
			die("io_uring_setup");
		return fd;
	}
	fd = open("/sys/kernel/debug/gup_test", O_RDWR);
	if (fd < 0)
		die("/sys/kernel/debug/gup_test");
	return fd;
}

int main(int argc, char **argv)
{
	long t[MAX_RUNS];
	char hist[512] = "";
	struct opts o;
	int fd, i;
	char *p;

	parse(argc, argv, &o);
	fd = open_target(&o);
	p = region_alloc(&o);
	folio_histogram(p, o.size, hist, sizeof(hist));
	for (i = 0; i < o.runs; i++)
		t[i] = strcmp(o.test, "uring") ? run_gup(&o, p, fd) :
						 run_uring(&o, p, fd);
	CALL_MARK(&o, KCOUNT_MARK_CELL);
	qsort(t, o.runs, sizeof(t[0]), cmp_long);
	printf("test=%s layout=%s mb=%lu n=%u write=%d folios=%s pmd_kb=%lu "
	       "median_us=%ld min_us=%ld max_us=%ld runs=%d\n",
	       o.test, o.layout, o.size >> 20, o.nr_per_call, o.write, hist,
	       smaps_pmd_kb(), t[o.runs / 2], t[0], t[o.runs - 1], o.runs);
	return 0;
}
