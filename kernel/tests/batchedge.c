// SPDX-License-Identifier: GPL-2.0
/*
 * batchedge: correctness tests at the edges of the GUP batching series
 * (PTE-mapped large folios batched in gup_fast_pte_range() and in slow
 * GUP's follow_page_pte()), through the kernel's /sys/kernel/debug/gup_test.
 *
 *   batchedge -f KB [-i ITERATIONS] [-c CASE]...
 *
 * -f 64 expects 64 kB mTHP folios (the caller enables only that size);
 * -f 2048 expects 2 MB THPs, which are split into PTE mappings by an
 * mprotect() round trip on one page, then MADV_NOHUGEPAGE keeps khugepaged
 * away. Every case verifies the folio sizes through /proc/kpageflags first.
 *
 * Which pages GUP returned is checked by content: every 4 kB page holds a
 * tag (case, page index, generation) at its start and end, and
 * PIN_LONGTERM_TEST_START + PIN_LONGTERM_TEST_READ copy out the pinned
 * pages themselves, so page i of the result must carry tag i. START uses
 * pin_user_pages_fast() (GUP-fast, then the slow path for the rest) or
 * pin_user_pages() (the slow path) and fails as a whole unless every page
 * was pinned. DUMP_USER_PAGES_TEST gives the exact count of one
 * get/pin_user_pages() call: it zeroes the which_pages[] entries beyond it.
 *
 * Exit: 0 all cases passed (some may be skipped), 1 a failure, 77 all
 * skipped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mm/gup_test.h"

#define PG		4096UL
#define PMD_SZ		(2UL << 20)
#define FOLL_WRITE	0x01
#define KPF_HEAD	(1ULL << 15)
#define KPF_TAIL	(1ULL << 16)
#define PM_PRESENT	(1ULL << 63)
#define PM_SOFT_DIRTY	(1ULL << 55)
#define PM_PFN		((1ULL << 55) - 1)
#define KSM_SYS		"/sys/kernel/mm/ksm/"

static int gup_fd, pm_fd, kpf_fd;
static unsigned long nrp;	/* pages per folio under test */
static unsigned int case_id;
static int failures, passes, skips, failed_cases;
static unsigned long pfns_checked;
static char *rdbuf;
static unsigned long rdbuf_pages;

static int cfail(const char *fmt, ...)
{
	va_list ap;

	printf("  FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	failures++;
	return -1;
}

static uint64_t tag(unsigned long i, unsigned int gen)
{
	return 0xbe00000000000000ULL | ((uint64_t)case_id << 40) |
	       ((uint64_t)gen << 32) | i;
}

static void tag_page(char *p, uint64_t t)
{
	memcpy(p, &t, 8);
	memcpy(p + PG - 8, &t, 8);
}

/* Tag pages [0, n) of p with tags first, first+1, ... */
static void tag_range(char *p, unsigned long n, unsigned long first,
		      unsigned int gen)
{
	unsigned long i;

	for (i = 0; i < n; i++)
		tag_page(p + i * PG, tag(first + i, gen));
}

/* PFN and folio geometry of the page at p, from pagemap and kpageflags. */
static uint64_t pfn_of(const void *p)
{
	uint64_t ent = 0;

	if (pread(pm_fd, &ent, 8, (uintptr_t)p / PG * 8) != 8 ||
	    !(ent & PM_PRESENT))
		return 0;
	return ent & PM_PFN;
}

static uint64_t kflags(uint64_t pfn)
{
	uint64_t f = 0;

	if (pread(kpf_fd, &f, 8, pfn * 8) != 8)
		return 0;
	return f;
}

/* Number of pages of the folio whose head is at pfn, 1 for a small one. */
static unsigned long folio_pages(uint64_t pfn)
{
	unsigned long n = 1;

	if (!(kflags(pfn) & KPF_HEAD))
		return 1;
	while (n < 1UL << 20 && (kflags(pfn + n) & KPF_TAIL))
		n++;
	return n;
}

/* Every nrp-page block of [p, p + nf * nrp) is one whole folio, in order. */
static int verify_folios(char *p, unsigned long nf)
{
	unsigned long f, i;
	uint64_t head;

	for (f = 0; f < nf; f++) {
		head = pfn_of(p + f * nrp * PG);
		if (!head || !(kflags(head) & KPF_HEAD) ||
		    folio_pages(head) != nrp)
			return -1;
		for (i = 1; i < nrp; i++)
			if (pfn_of(p + (f * nrp + i) * PG) != head + i)
				return -1;
	}
	return 0;
}

/*
 * nf folios of nrp pages, PMD-aligned, tagged 0..nf*nrp-1 (generation 0).
 * NULL if the kernel did not give us that layout.
 */
static char *alloc_folios(unsigned long nf)
{
	unsigned long size = nf * nrp * PG, off;
	char *raw, *p;
	int try;

	for (try = 0; try < 3; try++) {
		raw = mmap(NULL, size + PMD_SZ, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (raw == MAP_FAILED)
			return NULL;
		p = (char *)(((uintptr_t)raw + PMD_SZ - 1) & ~(PMD_SZ - 1));
		if (p > raw)
			munmap(raw, p - raw);
		munmap(p + size, raw + PMD_SZ - p);
		madvise(p, size, MADV_HUGEPAGE);
		tag_range(p, nf * nrp, 0, 0);
		if (nrp * PG == PMD_SZ) {
			/* Part of a PMD changing protection splits the PMD only. */
			for (off = 0; off < size; off += PMD_SZ)
				if (mprotect(p + off, PG, PROT_READ) ||
				    mprotect(p + off, PG, PROT_READ | PROT_WRITE))
					return NULL;
			madvise(p, size, MADV_NOHUGEPAGE);
		}
		if (!verify_folios(p, nf))
			return p;
		munmap(p, size);
	}
	return NULL;
}

/* ---- gup_test wrappers ---- */

static int lt_start(void *addr, unsigned long n, int write, int fast)
{
	struct pin_longterm_test t = {
		.addr = (uintptr_t)addr, .size = n * PG,
		.flags = (write ? PIN_LONGTERM_TEST_FLAG_USE_WRITE : 0) |
			 (fast ? PIN_LONGTERM_TEST_FLAG_USE_FAST : 0),
	};

	return ioctl(gup_fd, PIN_LONGTERM_TEST_START, &t) ? -errno : 0;
}

static void lt_stop(void)
{
	ioctl(gup_fd, PIN_LONGTERM_TEST_STOP);
}

static int lt_read(unsigned long n)
{
	uint64_t a = (uintptr_t)rdbuf;

	if (n > rdbuf_pages)
		return -E2BIG;
	memset(rdbuf, 0, n * PG);
	return ioctl(gup_fd, PIN_LONGTERM_TEST_READ, &a) ? -errno : 0;
}

static const char *how(int write, int fast)
{
	static const char * const s[] = { "read/slow", "read/fast", "write/slow",
				   "write/fast" };

	return s[!!write * 2 + !!fast];
}

/* The pinned pages' contents against exp[0..n) (both tag copies). */
static int cmp_read(const char *what, unsigned long n, const uint64_t *exp)
{
	unsigned long i;
	uint64_t a, b;
	int r = lt_read(n);

	if (r)
		return cfail("%s: PIN_LONGTERM_TEST_READ: %s", what,
			     strerror(-r));
	for (i = 0; i < n; i++) {
		memcpy(&a, rdbuf + i * PG, 8);
		memcpy(&b, rdbuf + i * PG + PG - 8, 8);
		if (a != exp[i] || b != exp[i])
			return cfail("%s: pinned page %lu holds %#llx/%#llx, "
				     "expected %#llx", what, i,
				     (unsigned long long)a,
				     (unsigned long long)b,
				     (unsigned long long)exp[i]);
	}
	return 0;
}

/* Pin [addr, addr + n), the pages must carry exp[]; unpin. */
static int pin_check(const char *what, char *addr, unsigned long n,
		     const uint64_t *exp, int write, int fast)
{
	char msg[160];
	int r;

	snprintf(msg, sizeof(msg), "%s (%s, %lu pages at +%#lx)", what,
		 how(write, fast), n, (unsigned long)((uintptr_t)addr % PMD_SZ));
	r = lt_start(addr, n, write, fast);
	if (r)
		return cfail("%s: PIN_LONGTERM_TEST_START: %s", msg,
			     strerror(-r));
	r = cmp_read(msg, n, exp);
	lt_stop();
	return r;
}

/* Every pin mode over the range; exp built from the current tags in addr. */
static int pin_check_all(const char *what, char *addr, unsigned long n,
			 int allow_write)
{
	uint64_t *exp = calloc(n, 8);
	unsigned long i;
	int m, r = 0;

	for (i = 0; i < n; i++)
		memcpy(&exp[i], addr + i * PG, 8);
	for (m = 0; m < (allow_write ? 4 : 2); m++)
		r |= pin_check(what, addr, n, exp, m >> 1, m & 1);
	free(exp);
	return r;
}

/* Pinning the range with this mode must fail as a whole. */
static int pin_refused(const char *what, char *addr, unsigned long n,
		       int write, int fast)
{
	int r = lt_start(addr, n, write, fast);

	if (!r) {
		lt_stop();
		return cfail("%s (%s): pinned %lu pages, expected an error",
			     what, how(write, fast), n);
	}
	return 0;
}

static int gup_call(unsigned long cmd, void *addr, unsigned long n,
		    unsigned int npc, unsigned int flags, struct gup_test *g)
{
	*g = (struct gup_test){ .addr = (uintptr_t)addr, .size = n * PG,
				.nr_pages_per_call = npc, .gup_flags = flags };
	return ioctl(gup_fd, cmd, g) ? -errno : 0;
}

/*
 * One get/pin_user_pages() call over n pages must return exactly want
 * pages: DUMP_USER_PAGES_TEST zeroes the which_pages[] entries beyond the
 * count it got, so page want must be kept and page want + 1 zeroed.
 */
static int expect_count(const char *what, void *addr, unsigned long n,
			int write, int pin, long want)
{
	struct gup_test g = { .addr = (uintptr_t)addr, .size = n * PG,
			      .nr_pages_per_call = n,
			      .gup_flags = write ? FOLL_WRITE : 0,
			      .test_flags = pin ?
				GUP_TEST_FLAG_DUMP_PAGES_USE_PIN : 0 };

	g.which_pages[0] = want > 0 ? want : 0;
	g.which_pages[1] = want + 1;
	if (ioctl(gup_fd, DUMP_USER_PAGES_TEST, &g))
		return cfail("%s: DUMP_USER_PAGES_TEST: %s", what,
			     strerror(errno));
	if ((want > 0 && !g.which_pages[0]) || g.which_pages[1])
		return cfail("%s: %s_user_pages(%s) over %lu pages returned "
			     "%s %ld pages", what, pin ? "pin" : "get",
			     write ? "FOLL_WRITE" : "read", n,
			     g.which_pages[1] ? "more than" : "fewer than",
			     want);
	return 0;
}

/*
 * The PFNs one get/pin_user_pages() call returned for pages idx[] of the
 * range, against the PFNs the page tables map there. DUMP_USER_PAGES_TEST
 * dump_page()s those pages into the kernel log ("---- page #N" followed by
 * "page: ... pfn:0x..."), which /dev/kmsg gives back.
 */
static int expect_pfns(const char *what, char *addr, unsigned long n,
		       int write, int pin, const unsigned int *idx, int cnt)
{
	struct gup_test g = { .addr = (uintptr_t)addr, .size = n * PG,
			      .nr_pages_per_call = n,
			      .gup_flags = write ? FOLL_WRITE : 0,
			      .test_flags = pin ?
				GUP_TEST_FLAG_DUMP_PAGES_USE_PIN : 0 };
	unsigned long long got[GUP_TEST_MAX_PAGES_TO_DUMP] = { 0 }, v;
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK), k, cur = -1;
	char rec[1024], *t;
	ssize_t len;

	if (fd < 0)
		return cfail("%s: /dev/kmsg: %s", what, strerror(errno));
	lseek(fd, 0, SEEK_END);
	for (k = 0; k < cnt && k < GUP_TEST_MAX_PAGES_TO_DUMP; k++)
		g.which_pages[k] = idx[k] + 1;
	if (ioctl(gup_fd, DUMP_USER_PAGES_TEST, &g)) {
		close(fd);
		return cfail("%s: DUMP_USER_PAGES_TEST: %s", what,
			     strerror(errno));
	}
	for (;;) {
		len = read(fd, rec, sizeof(rec) - 1);
		if (len < 0 && errno == EPIPE)
			continue;
		if (len <= 0)
			break;
		rec[len] = 0;
		t = strstr(rec, "---- page #");
		if (t) {
			unsigned int pg = strtoul(t + 11, NULL, 10);

			for (cur = -1, k = 0; k < cnt; k++)
				if (idx[k] == pg)
					cur = k;
			continue;
		}
		t = strstr(rec, " pfn:0x");
		if (t && cur >= 0 && strstr(rec, "page: refcount:")) {
			v = strtoull(t + 7, NULL, 16);
			got[cur] = v;
			cur = -1;
		}
	}
	close(fd);
	for (k = 0; k < cnt && k < GUP_TEST_MAX_PAGES_TO_DUMP; k++) {
		uint64_t want = pfn_of(addr + idx[k] * PG);

		if (got[k] != want)
			return cfail("%s: %s_user_pages page %u is pfn %#llx, "
				     "the page table maps %#llx", what,
				     pin ? "pin" : "get", idx[k], got[k],
				     (unsigned long long)want);
		pfns_checked++;
	}
	return 0;
}

/* The benchmark ioctls: n pages in calls of npc must all be taken. */
static int bench_all(const char *what, void *addr, unsigned long n,
		     unsigned int npc, int write)
{
	static const unsigned long cmds[] = { GUP_FAST_BENCHMARK,
		PIN_FAST_BENCHMARK, PIN_LONGTERM_BENCHMARK, GUP_BASIC_TEST,
		PIN_BASIC_TEST };
	static const char * const names[] = { "GUP_FAST", "PIN_FAST", "PIN_LONGTERM",
				       "GUP_BASIC", "PIN_BASIC" };
	struct gup_test g;
	unsigned int c;
	int r;

	for (c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++) {
		r = gup_call(cmds[c], addr, n, npc, write ? FOLL_WRITE : 0, &g);
		if (r)
			return cfail("%s: %s: %s", what, names[c],
				     strerror(-r));
		if (g.size != n * PG)
			return cfail("%s: %s -n %u: took %llu of %lu bytes",
				     what, names[c], npc,
				     (unsigned long long)g.size, n * PG);
	}
	return 0;
}

/* ---- cases ---- */

/*
 * A hole punched in a folio: GUP up to the hole, across it (must fail) and
 * from the mapped tail of the folio into the next folio.
 */
static int case_munmap(void)
{
	unsigned long q = nrp / 4;
	char *p = alloc_folios(2);
	int r = 0, m;

	if (!p)
		return 77;
	if (munmap(p + q * PG, q * PG))
		return cfail("munmap: %s", strerror(errno));
	for (m = 0; m < 4; m++)
		r |= pin_refused("across the hole", p, 2 * nrp, m >> 1, m & 1);
	r |= expect_count("up to the hole", p, nrp, 0, 1, q);
	r |= expect_count("up to the hole", p, nrp, 1, 0, q);
	r |= pin_check_all("mapped head of the folio", p, q, 1);
	{
		unsigned int ix[] = { 0, 1, nrp - 2 * q - 1, nrp - 2 * q,
				      nrp - 2 * q + 1, 2 * nrp - 2 * q - 1 };

		for (m = 0; m < 4; m++)
			r |= expect_pfns("mapped tail into the next folio",
					 p + 2 * q * PG, 2 * nrp - 2 * q,
					 m >> 1, m & 1, ix, 6);
	}
	r |= pin_check_all("mapped tail into the next folio", p + 2 * q * PG,
			   2 * nrp - 2 * q, 1);
	r |= pin_check_all("one page after the hole", p + 2 * q * PG, 1, 1);
	r |= bench_all("mapped tail, benchmarks", p + 2 * q * PG,
		       2 * nrp - 2 * q, nrp, 1);
	munmap(p, 2 * nrp * PG);
	return r;
}

/*
 * mremap() the first half of a folio to just after the second half: the
 * PTEs then map the folio's pages h..nrp-1, 0..h-1, all of one folio but
 * not in PFN order across the boundary. Each half alone and both together.
 */
static int case_mremap(void)
{
	unsigned long h = nrp / 2, i;
	char *p = alloc_folios(2), *dst;
	uint64_t *exp;
	int r = 0, m;

	if (!p)
		return 77;
	if (munmap(p + nrp * PG, nrp * PG))
		return cfail("munmap: %s", strerror(errno));
	dst = mremap(p, h * PG, h * PG, MREMAP_MAYMOVE | MREMAP_FIXED,
		     p + nrp * PG);
	if (dst == MAP_FAILED)
		return cfail("mremap: %s", strerror(errno));
	exp = calloc(nrp, 8);
	for (i = 0; i < nrp; i++)
		exp[i] = tag((i + h) % nrp, 0);
	for (m = 0; m < 4; m++) {
		r |= pin_check("halves swapped", p + h * PG, nrp, exp, m >> 1,
			       m & 1);
		r |= pin_check("second half in place", p + h * PG, h, exp,
			       m >> 1, m & 1);
		r |= pin_check("first half moved", dst, h, exp + h, m >> 1,
			       m & 1);
		r |= pin_check("across the seam, unaligned",
			       p + (h + 1) * PG, nrp - 2, exp + 1, m >> 1,
			       m & 1);
	}
	r |= expect_count("halves swapped", p + h * PG, nrp, 1, 1, nrp);
	{
		unsigned int seam[] = { 0, 1, nrp - h - 2, nrp - h - 1,
					nrp - h, nrp - h + 1, nrp - 2,
					nrp - 1 };

		for (m = 0; m < 4; m++)
			r |= expect_pfns("halves swapped", p + h * PG, nrp,
					 m >> 1, m & 1, seam, 8);
	}
	r |= bench_all("halves swapped, benchmarks", p + h * PG, nrp, nrp, 1);
	free(exp);
	munmap(p + h * PG, nrp * PG);
	return r;
}

/*
 * PROT_READ on the second quarter of a folio: read GUP over the folio
 * works, write GUP stops exactly at the read-only part and returns the
 * right pages for the writable parts.
 */
static int case_wrbit(void)
{
	unsigned long q = nrp / 4;
	char *p = alloc_folios(2);
	int r = 0, f;

	if (!p)
		return 77;
	if (mprotect(p + q * PG, q * PG, PROT_READ))
		return cfail("mprotect: %s", strerror(errno));
	r |= pin_check_all("whole folio, RO quarter", p, 2 * nrp, 0);
	for (f = 0; f < 2; f++) {
		r |= pin_refused("over the RO quarter", p, nrp, 1, f);
		r |= pin_refused("RO quarter only", p + q * PG, q, 1, f);
	}
	r |= expect_count("write up to the RO quarter", p, nrp, 1, 1, q);
	r |= expect_count("write up to the RO quarter", p, nrp, 1, 0, q);
	r |= expect_count("read over the RO quarter", p, nrp, 0, 1, nrp);
	r |= pin_check_all("RW head", p, q, 1);
	r |= pin_check_all("RW tail into the next folio", p + 2 * q * PG,
			   2 * nrp - 2 * q, 1);
	r |= bench_all("whole folio, read benchmarks", p, 2 * nrp, nrp, 0);
	munmap(p, 2 * nrp * PG);
	return r;
}

/*
 * A child forked to share the caller's memory: on go it overwrites its copy
 * (scribble(arg), in the child), reports, then waits for the end.
 */
struct cow_child {
	pid_t pid;
	int go[2], done[2];
};

static int cow_child_start(struct cow_child *cc, void (*scribble)(void *),
			   void *arg)
{
	char c;

	if (pipe(cc->go) || pipe(cc->done))
		return cfail("pipe: %s", strerror(errno));
	cc->pid = fork();
	if (cc->pid < 0)
		return cfail("fork: %s", strerror(errno));
	if (!cc->pid) {
		if (read(cc->go[0], &c, 1) != 1)
			_exit(1);
		scribble(arg);
		if (write(cc->done[1], "d", 1) != 1 || read(cc->go[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	return 0;
}

/* Let the child overwrite its copy; 0 once it has. */
static int cow_child_scribble(struct cow_child *cc)
{
	char c;

	return write(cc->go[1], "g", 1) == 1 && read(cc->done[0], &c, 1) == 1 ?
		0 : -1;
}

static int cow_child_end(struct cow_child *cc)
{
	int st, r = write(cc->go[1], "x", 1) < 0 ? -1 : 0;

	waitpid(cc->pid, &st, 0);
	close(cc->go[0]);
	close(cc->go[1]);
	close(cc->done[0]);
	close(cc->done[1]);
	return r;
}

struct tag_args {
	char *p;
	unsigned long n;
};

static void child_tags(void *arg)
{
	struct tag_args *t = arg;

	tag_range(t->p, t->n, 0, 7);
}

/*
 * After fork() the folios are shared read-only with a live child. A FOLL_PIN
 * read in the parent must unshare: the pinned pages are the parent's own,
 * so the child's later writes must not show in them and the parent's must.
 * Also a write bit that differs inside one VMA: the parent writes one page
 * of a shared folio (a 4 kB COW copy) before the pin.
 */
static int fork_one(const char *what, unsigned long skip, unsigned long n,
		    int wr, int fast, unsigned long cow_page)
{
	char *base = alloc_folios(2), *p, msg[120];
	struct cow_child cc;
	struct tag_args ta;
	uint64_t *exp;
	unsigned long i;
	int r = 0;

	/* Fresh folios each time: an unshare leaves 4 kB copies behind. */
	if (!base)
		return 77;
	p = base + skip * PG;
	exp = calloc(n, 8);
	tag_range(p, n, 0, 0);
	ta = (struct tag_args){ .p = p, .n = n };
	if (cow_child_start(&cc, child_tags, &ta))
		return -1;
	if (cow_page < n)
		tag_page(p + cow_page * PG, tag(cow_page, 1));
	for (i = 0; i < n; i++)
		exp[i] = tag(i, i == cow_page ? 1 : 0);
	snprintf(msg, sizeof(msg), "%s (%s)", what, how(wr, fast));
	r = lt_start(p, n, wr, fast);
	if (r) {
		r = cfail("%s: PIN_LONGTERM_TEST_START: %s", msg,
			  strerror(-r));
		goto out;
	}
	if (cow_child_scribble(&cc)) {
		r = cfail("%s: child did not write", msg);
		goto stop;
	}
	r = cmp_read(msg, n, exp);
	if (r)
		goto stop;
	/* The parent's writes land in the pinned pages. */
	tag_range(p, n, 0, 2);
	for (i = 0; i < n; i++)
		exp[i] = tag(i, 2);
	r = cmp_read(msg, n, exp);
stop:
	lt_stop();
out:
	if (cow_child_end(&cc))
		r = -1;
	free(exp);
	munmap(base, 2 * nrp * PG);
	return r;
}

static int case_fork(void)
{
	int r = 0, m, k;

	for (m = 0; m < 4; m++) {
		k = fork_one("shared folios", 0, 2 * nrp, m >> 1, m & 1, ~0UL);
		if (k == 77)
			return 77;
		r |= k;
		r |= fork_one("shared folios, unaligned", 3, 2 * nrp - 5,
			      m >> 1, m & 1, ~0UL);
		r |= fork_one("shared folios, one page COWed", 0, 2 * nrp,
			      m >> 1, m & 1, nrp / 2 + 1);
	}
	return r == 77 ? -1 : r;
}

/*
 * Ranges starting and ending inside folios: chunks of 123 pages (as
 * gup_test -n 123) pinned one by one, every mode, plus the benchmarks with
 * -n 123 and the exact count of one slow call.
 */
static int case_unaligned(void)
{
	unsigned long nf = nrp == 16 ? 32 : 3, n = nf * nrp - 8, off;
	char *p = alloc_folios(nf), *s = p ? p + 3 * PG : NULL;
	int r = 0;

	if (!p)
		return 77;
	for (off = 0; off < n && !r; off += 123)
		r |= pin_check_all("123-page chunk", s + off * PG,
				   n - off < 123 ? n - off : 123, 1);
	r |= pin_check_all("3 pages inside one folio", p + 5 * PG, 3, 1);
	r |= pin_check_all("whole unaligned range", s, n, 1);
	r |= bench_all("unaligned range -n 123", s, n, 123, 1);
	r |= bench_all("unaligned range -n 1", s, nrp + 2, 1, 0);
	r |= expect_count("unaligned range", s, n, 1, 1, n);
	r |= expect_count("unaligned range", s, n, 0, 0, n);
	{
		unsigned int ix[] = { 0, nrp - 4, nrp - 3, nrp - 2, 122, 123,
				      n - 2, n - 1 };

		for (off = 0; off < 4; off++)
			r |= expect_pfns("unaligned range", s, n, off >> 1,
					 off & 1, ix, 8);
	}
	munmap(p, nf * nrp * PG);
	return r;
}

/*
 * A write bit that changes inside one VMA and one folio, PFNs contiguous:
 * clear_refs 4 write-protects every PTE and clears soft-dirty, then writing
 * page 1 makes only that PTE writable again (the page is exclusive: reused,
 * same PFN). A FOLL_WRITE GUP from page 1 on must take a write fault for
 * every read-only PTE, which sets its soft-dirty bit: a batch that carried
 * page 1's write permission over to its neighbours would leave them clean.
 */
static int sd_clear(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY), r;

	if (fd < 0)
		return -1;
	r = write(fd, "4", 1) == 1 ? 0 : -1;
	close(fd);
	return r;
}

static unsigned long sd_count(char *p, unsigned long n)
{
	unsigned long i, c = 0;
	uint64_t ent;

	for (i = 0; i < n; i++)
		if (pread(pm_fd, &ent, 8, ((uintptr_t)p / PG + i) * 8) == 8 &&
		    (ent & PM_SOFT_DIRTY))
			c++;
	return c;
}

static int sd_one(char *p, unsigned long n, int mode)
{
	static const char * const names[] = { "pin write fast", "pin write slow",
				       "get write fast", "pin read fast" };
	unsigned long sd;
	struct gup_test g;
	int r, wr = mode != 3;

	if (sd_clear() || sd_count(p, n))
		return 77;
	tag_page(p + PG, tag(1, 0));
	if (sd_count(p, n) != 1 || verify_folios(p, 2))
		return cfail("soft-dirty: layout after clear_refs and one "
			     "write is not [RO][W][RO...] over whole folios");
	if (mode == 2) {
		r = gup_call(GUP_FAST_BENCHMARK, p + PG, n - 1, n - 1,
			     FOLL_WRITE, &g);
		if (r || g.size != (n - 1) * PG)
			return cfail("soft-dirty: GUP_FAST write: %s, %llu "
				     "bytes", strerror(-r),
				     (unsigned long long)g.size);
	} else {
		r = lt_start(p + PG, n - 1, wr, mode != 1);
		if (r)
			return cfail("soft-dirty: %s: %s", names[mode],
				     strerror(-r));
		lt_stop();
	}
	sd = sd_count(p, n);
	/* Page 0 is outside the range; the others fault iff written. */
	if (sd != (wr ? n - 1 : 1))
		return cfail("soft-dirty: after %s from page 1 over %lu pages, "
			     "%lu pages are soft-dirty, expected %lu",
			     names[mode], n - 1, sd, wr ? n - 1 : 1UL);
	return 0;
}

static int case_softdirty(void)
{
	unsigned long n = 2 * nrp;
	char *p = alloc_folios(2);
	int r = 0, m, k;

	if (!p)
		return 77;
	/* Fresh pages of a new VMA are soft-dirty where it is tracked. */
	if (!sd_count(p, n)) {
		printf("  skip: no soft-dirty tracking in this kernel "
		       "(CONFIG_MEM_SOFT_DIRTY: x86-64, powerpc, s390 only)\n");
		munmap(p, n * PG);
		return 77;
	}
	for (m = 0; m < 4; m++) {
		k = sd_one(p, n, m);
		if (k == 77) {
			printf("  skip: clear_refs 4 does not clear soft-dirty "
			       "(CONFIG_MEM_SOFT_DIRTY)\n");
			munmap(p, n * PG);
			return 77;
		}
		r |= k;
	}
	r |= pin_check_all("after the soft-dirty rounds", p, n, 1);
	munmap(p, n * PG);
	return r;
}

/* ---- concurrent munmap, fork, mprotect and zap against GUP-fast ---- */

struct race {
	char *p;
	unsigned long n;
	int stop;	/* set by the GUP thread, __atomic */
	int err;
	unsigned long iters;
};

static void *race_gup(void *arg)
{
	static const unsigned long cmds[] = { PIN_FAST_BENCHMARK,
		GUP_FAST_BENCHMARK, PIN_BASIC_TEST };
	struct race *rc = arg;
	struct gup_test g;
	unsigned long i;
	int r;

	for (i = 0; i < rc->iters; i++) {
		/*
		 * Pins write: a read pin may meet the shared zero page the
		 * munmap thread's fresh mapping faults in, which is not
		 * pin-counted, and gup_test's own check WARNs about it.
		 */
		r = gup_call(cmds[i % 3], rc->p, rc->n,
			     i & 1 ? nrp : 123,
			     cmds[i % 3] != GUP_FAST_BENCHMARK ||
			     (i >> 1) & 1 ? FOLL_WRITE : 0, &g);
		if (r && r != -EFAULT) {
			printf("  race: ioctl %lu: %s\n", i, strerror(-r));
			rc->err = 1;
			break;
		}
	}
	__atomic_store_n(&rc->stop, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *race_munmap(void *arg)
{
	struct race *rc = arg;
	char *q = rc->p + nrp * PG, *m;

	while (!__atomic_load_n(&rc->stop, __ATOMIC_ACQUIRE)) {
		munmap(q, nrp * PG);
		m = mmap(q, nrp * PG, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		if (m == MAP_FAILED) {
			rc->err = 1;
			break;
		}
		tag_range(m, nrp, nrp, 0);
		madvise(m + PG, 2 * PG, MADV_DONTNEED);
	}
	return NULL;
}

static void *race_mprotect(void *arg)
{
	struct race *rc = arg;
	char *q = rc->p + (2 * nrp + nrp / 4) * PG;

	while (!__atomic_load_n(&rc->stop, __ATOMIC_ACQUIRE)) {
		mprotect(q, nrp / 2 * PG, PROT_READ);
		mprotect(q, nrp / 2 * PG, PROT_READ | PROT_WRITE);
	}
	return NULL;
}

static void *race_fork(void *arg)
{
	struct race *rc = arg;
	pid_t pid;
	int st;

	while (!__atomic_load_n(&rc->stop, __ATOMIC_ACQUIRE)) {
		pid = fork();
		if (!pid)
			_exit(0);
		if (pid > 0)
			waitpid(pid, &st, 0);
		/* Writes after fork COW folios the GUP thread is batching. */
		tag_range(rc->p + 3 * nrp * PG, nrp, 3 * nrp, 3);
	}
	return NULL;
}

static int case_race(unsigned long iters)
{
	void *(*fn[])(void *) = { race_gup, race_munmap, race_mprotect,
				  race_fork };
	struct race rc = { .n = 4 * nrp, .iters = iters };
	pthread_t t[4];
	int i;

	rc.p = alloc_folios(4);
	if (!rc.p)
		return 77;
	for (i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, fn[i], &rc))
			return cfail("pthread_create: %s", strerror(errno));
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	if (rc.err)
		return cfail("concurrent GUP loop (%lu iterations) reported an "
			     "error", iters);
	printf("  %lu GUP calls against munmap/mmap+zap, mprotect, fork\n",
	       iters);
	/* The region must still pin right once the dust settles. */
	tag_range(rc.p, 4 * nrp, 0, 4);
	i = pin_check_all("after the race", rc.p, 4 * nrp, 1);
	munmap(rc.p, 4 * nrp * PG);
	return i;
}

/* ---- KSM ---- */

static int sys_write(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY), r;

	if (fd < 0)
		return -1;
	r = write(fd, val, strlen(val)) == (ssize_t)strlen(val) ? 0 : -1;
	close(fd);
	return r;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Pages of [p, p + n) that map a PFN another page of the range maps too:
 * merged KSM pages. (6.12's /proc/kpageflags sets KPF_KSM for every anon
 * page, since it tests mapping & PAGE_MAPPING_KSM, so it cannot tell.)
 */
static unsigned long shared_pfns(char *p, unsigned long n)
{
	uint64_t *pf = calloc(n, 8);
	unsigned long i, c = 0;

	for (i = 0; i < n; i++)
		pf[i] = pfn_of(p + i * PG);
	qsort(pf, n, 8, cmp_u64);
	for (i = 0; i < n; i++)
		if (pf[i] && ((i && pf[i - 1] == pf[i]) ||
			      (i + 1 < n && pf[i + 1] == pf[i])))
			c++;
	free(pf);
	return c;
}

/*
 * The first folio's pages all hold the same bytes, so ksmd merges them
 * (splitting the folio) into one KSM page; the second folio keeps distinct
 * tags. GUP reads see the KSM page; a FOLL_PIN must unshare every KSM page
 * into the process's own copy, so a later write by the process shows in
 * the pinned page.
 */
static int case_ksm(void)
{
	unsigned long i, merged = 0, n = 2 * nrp;
	char *p = alloc_folios(2);
	uint64_t *exp, first;
	int r = 0, m, waited;
	struct gup_test g;

	if (!p)
		return 77;
	if (access(KSM_SYS "run", W_OK)) {
		printf("  skip: no KSM in this kernel\n");
		return 77;
	}
	for (i = 0; i < nrp; i++)
		tag_page(p + i * PG, tag(0, 5));
	if (madvise(p, n * PG, MADV_MERGEABLE))
		return cfail("MADV_MERGEABLE: %s", strerror(errno));
	sys_write(KSM_SYS "pages_to_scan", "5000");
	sys_write(KSM_SYS "sleep_millisecs", "10");
	sys_write(KSM_SYS "run", "1");
	for (waited = 0; waited < 120; waited++) {
		merged = shared_pfns(p, nrp);
		if (merged >= nrp / 2)
			break;
		usleep(500000);
	}
	if (merged < 2) {
		sys_write(KSM_SYS "run", "2");
		printf("  skip: ksmd merged %lu pages in %d s\n", merged,
		       waited / 2);
		return 77;
	}
	printf("  ksmd merged %lu of %lu identical pages within %d.%d s\n",
	       merged, nrp, (waited + 1) / 2, (waited + 1) % 2 * 5);
	/*
	 * Stop ksmd (run=0 keeps what it merged): it would merge a page
	 * again as soon as its pin is gone, hiding whether the pin unshared.
	 */
	sys_write(KSM_SYS "run", "0");
	first = pfn_of(p);
	r |= gup_call(GUP_FAST_BENCHMARK, p, n, 123, 0, &g) ||
	     g.size != n * PG ? cfail("GUP_FAST over KSM pages: %s, %llu bytes",
				     strerror(errno),
				     (unsigned long long)g.size) : 0;
	r |= gup_call(GUP_BASIC_TEST, p, n, nrp, 0, &g) ||
	     g.size != n * PG ? cfail("GUP_BASIC over KSM pages: %s, %llu bytes",
				      strerror(errno),
				      (unsigned long long)g.size) : 0;
	r |= expect_count("KSM pages, get", p, n, 0, 0, n);
	{
		unsigned int ix[] = { 0, 1, 2, 3, nrp - 2, nrp - 1, nrp,
				      nrp + 1 };

		r |= expect_pfns("KSM pages, get", p, n, 0, 0, ix, 8);
	}
	if (pfn_of(p) != first || shared_pfns(p, nrp) < merged)
		r |= cfail("a read get (no pin) unshared KSM pages: %lu of %lu "
			   "still shared", shared_pfns(p, nrp), merged);
	exp = calloc(n, 8);
	for (i = 0; i < n; i++)
		exp[i] = i < nrp ? tag(0, 5) : tag(i, 0);
	for (m = 0; m < 4; m++)
		r |= pin_check("KSM + distinct pages", p, n, exp, m >> 1,
			       m & 1);
	if (shared_pfns(p, nrp))
		r |= cfail("%lu pages still map a shared KSM page after "
			   "every page was pinned", shared_pfns(p, nrp));
	/* The pinned pages are the process's own: its writes show in them. */
	if (!lt_start(p, n, 0, 1)) {
		for (i = 0; i < nrp; i++) {
			tag_page(p + i * PG, tag(i, 6));
			exp[i] = tag(i, 6);
		}
		r |= cmp_read("KSM pages pinned, then written", n, exp);
		lt_stop();
	} else {
		r |= cfail("KSM read pin: %s", strerror(errno));
	}
	r |= pin_check_all("after unsharing", p, n, 1);
	sys_write(KSM_SYS "run", "2");
	free(exp);
	munmap(p, n * PG);
	return r;
}

/* ---- mixed folio sizes, order-0 pages, holes, neighbours, SIGKILL ---- */

#define THP_SYS		"/sys/kernel/mm/transparent_hugepage/"
#define KPF_ZERO_PAGE	(1ULL << 24)
#define MIX_PAGES	1536UL	/* three page tables */

/* The THP knobs a case changes, saved first and written back after. */
static char thp_saved[24][16];
static const char * const thp_knobs[] = {
	"enabled", "hugepages-16kB/enabled", "hugepages-32kB/enabled",
	"hugepages-64kB/enabled", "hugepages-128kB/enabled",
	"hugepages-256kB/enabled", "hugepages-512kB/enabled",
	"hugepages-1024kB/enabled", "hugepages-2048kB/enabled",
};
#define NKNOBS	(sizeof(thp_knobs) / sizeof(thp_knobs[0]))

static void thp_save(void)
{
	char path[96], buf[128], *a, *b;
	unsigned int k;
	int fd;
	ssize_t n;

	for (k = 0; k < NKNOBS; k++) {
		thp_saved[k][0] = 0;
		snprintf(path, sizeof(path), THP_SYS "%s", thp_knobs[k]);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = 0;
		a = strchr(buf, '[');
		b = a ? strchr(a, ']') : NULL;
		if (a && b && b - a - 1 < 16)
			snprintf(thp_saved[k], 16, "%.*s", (int)(b - a - 1),
				 a + 1);
	}
}

static void thp_restore(void)
{
	char path[96];
	unsigned int k;

	for (k = 0; k < NKNOBS; k++) {
		snprintf(path, sizeof(path), THP_SYS "%s", thp_knobs[k]);
		if (thp_saved[k][0])
			sys_write(path, thp_saved[k]);
	}
}

/* Allow anonymous folios of kb kB only (4: none), for MADV_HUGEPAGE VMAs. */
static int thp_only(unsigned int kb)
{
	char path[96], want[32];
	unsigned int k;

	snprintf(want, sizeof(want), "hugepages-%ukB/enabled", kb);
	for (k = 1; k < NKNOBS; k++) {
		snprintf(path, sizeof(path), THP_SYS "%s", thp_knobs[k]);
		if (thp_saved[k][0])
			sys_write(path, strcmp(thp_knobs[k], want) ? "never" :
								    "always");
	}
	return sys_write(THP_SYS "enabled", "madvise");
}

/* What page i of the mixed layout must be: its folio size, 0 for a hole. */
enum { MIX_HOLE = 0, MIX_ZERO = -1 };

static long mix_expect(unsigned long i)
{
	if (i >= 300 && i < 304)
		return MIX_HOLE;
	if (i >= 310 && i < 314)
		return MIX_ZERO;
	if (i < 256 || (i >= 1280 && i < 1536))
		return 16;
	if (i >= 512 && i < 1024)
		return 512;
	return 1;
}

/* Holes unmapped again and zero pages mapped again (a pin fills both). */
static void mix_reset(char *p)
{
	volatile char c;
	unsigned long i;

	madvise(p + 300 * PG, 4 * PG, MADV_DONTNEED);
	madvise(p + 310 * PG, 4 * PG, MADV_DONTNEED);
	for (i = 310; i < 314; i++)
		c = p[i * PG];
	(void)c;
}

/* Page i of the layout holds what it was tagged with, or zeroes. */
static uint64_t mix_tag(unsigned long i, unsigned int gen)
{
	return mix_expect(i) > 0 ? tag(i, gen) : 0;
}

static int mix_verify(char *p)
{
	unsigned long i;
	uint64_t pfn;
	long want;

	for (i = 0; i < MIX_PAGES; i++) {
		want = mix_expect(i);
		pfn = pfn_of(p + i * PG);
		if (want == MIX_HOLE ? pfn != 0 :
		    want == MIX_ZERO ? !(kflags(pfn) & KPF_ZERO_PAGE) :
		    !pfn || folio_pages(pfn - (pfn % want)) != (unsigned long)want) {
			printf("  mixed layout: page %lu is pfn %#llx (%lu-page "
			       "folio), expected %s\n", i,
			       (unsigned long long)pfn,
			       pfn ? folio_pages(pfn - (pfn % (want > 0 ? want : 1))) : 0,
			       want == MIX_HOLE ? "a hole" :
			       want == MIX_ZERO ? "the zero page" :
			       want == 1 ? "an order-0 page" :
			       want == 16 ? "a 64 kB folio" : "a 2 MB folio");
			return -1;
		}
	}
	return 0;
}

/*
 * One VMA over three page tables: 64 kB folios, then order-0 pages with a
 * hole and zero pages among them; a 2 MB THP mapped by PTEs; order-0 pages,
 * then 64 kB folios. The page after the layout stays reserved for a
 * neighbour mapping. NULL if the kernel did not give that layout.
 */
static char *mix_alloc(void)
{
	unsigned long size = (MIX_PAGES + 1) * PG;
	char *raw, *p;

	raw = mmap(NULL, size + PMD_SZ, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	p = (char *)(((uintptr_t)raw + PMD_SZ - 1) & ~(PMD_SZ - 1));
	if (p > raw)
		munmap(raw, p - raw);
	munmap(p + size, raw + PMD_SZ - p);
	madvise(p, MIX_PAGES * PG, MADV_HUGEPAGE);
	/*
	 * The 2 MB THP first, while the other two page tables are empty:
	 * enabling the PMD size wakes khugepaged, which would collapse a
	 * page table of 64 kB folios into a THP of its own.
	 */
	thp_only(2048);
	tag_range(p + 512 * PG, 512, 512, 0);
	thp_only(64);
	tag_range(p, 256, 0, 0);
	tag_range(p + 1280 * PG, 256, 1280, 0);
	thp_only(4);
	tag_range(p + 256 * PG, 256, 256, 0);
	tag_range(p + 1024 * PG, 256, 1024, 0);
	madvise(p, MIX_PAGES * PG, MADV_NOHUGEPAGE);
	/* Part of a PMD changing protection splits the PMD only. */
	if (mprotect(p + 512 * PG, PG, PROT_READ) ||
	    mprotect(p + 512 * PG, PG, PROT_READ | PROT_WRITE))
		goto fail;
	mix_reset(p);
	if (!mix_verify(p))
		return p;
fail:
	munmap(p, size);
	return NULL;
}

/* Pin pages [off, off + n) of the layout at p: they must carry their tags. */
static int mix_pin(const char *what, char *p, unsigned long off,
		   unsigned long n, int write, int fast)
{
	uint64_t *exp = calloc(n, 8);
	unsigned long i;
	int r;

	for (i = 0; i < n; i++)
		exp[i] = mix_tag(off + i, 0);
	mix_reset(p);
	r = pin_check(what, p + off * PG, n, exp, write, fast);
	free(exp);
	return r;
}

/*
 * The mapping after page n_ok of the layout stops every GUP there: a pin of
 * one page more fails as a whole, one get/pin call returns n_ok pages.
 */
static int mix_stops(const char *what, char *p, unsigned long n_ok)
{
	int r = 0, m;

	for (m = 0; m < 4; m++) {
		mix_reset(p);
		r |= pin_refused(what, p, n_ok + 1, m >> 1, m & 1);
	}
	mix_reset(p);
	r |= expect_count(what, p, n_ok + 1, 0, 1, n_ok);
	mix_reset(p);
	r |= expect_count(what, p, n_ok + 1, 1, 0, n_ok);
	return r;
}

/*
 * The slow path walks every PTE of a page table under one lock, whatever
 * the folio sizes, and must stop at each entry that needs a fault or
 * special handling and go on after it: pins of the whole layout in every
 * mode by content, PFNs at every boundary against the page tables, exact
 * counts, the benchmarks; a PROT_NONE page and a VM_IO|VM_PFNMAP mapping
 * (/dev/mem) right after the layout.
 */
static int case_mixed(void)
{
	unsigned int ix[] = { 0, 255, 256, 299, 300, 304, 309, 310, 314, 511,
			      512, 513, 1023, 1024, 1279, 1280, 1534, 1535 };
	unsigned int nix = sizeof(ix) / sizeof(ix[0]), k;
	char *p, *nb;
	int r = 0, m, fd;

	thp_save();
	p = mix_alloc();
	if (!p) {
		thp_restore();
		printf("  skip: no 64 kB + 2 MB + 4 kB layout\n");
		return 77;
	}
	for (m = 0; m < 4; m++) {
		r |= mix_pin("mixed layout", p, 0, MIX_PAGES, m >> 1, m & 1);
		r |= mix_pin("mixed layout, unaligned", p, 3, 1000, m >> 1,
			     m & 1);
		r |= mix_pin("mixed layout, one order-0 page", p, 257, 1,
			     m >> 1, m & 1);
	}
	/* DUMP_USER_PAGES_TEST dumps 8 pages a call. */
	for (m = 0; m < 4; m++)
		for (k = 0; k < nix; k += GUP_TEST_MAX_PAGES_TO_DUMP) {
			mix_reset(p);
			r |= expect_pfns("mixed layout", p, MIX_PAGES, m >> 1,
					 m & 1, ix + k,
					 nix - k < GUP_TEST_MAX_PAGES_TO_DUMP ?
					 nix - k : GUP_TEST_MAX_PAGES_TO_DUMP);
		}
	mix_reset(p);
	r |= expect_count("mixed layout", p, MIX_PAGES, 0, 1, MIX_PAGES);
	mix_reset(p);
	r |= bench_all("mixed layout, benchmarks", p, MIX_PAGES, 512, 1);
	/*
	 * Writes: a read would pin the zero pages, and FOLL_PIN takes no pin
	 * on the zero page, which gup_test's benchmarks report as a WARN.
	 */
	mix_reset(p);
	r |= bench_all("mixed layout -n 123", p, MIX_PAGES, 123, 1);
	if (mprotect(p + (MIX_PAGES - 1) * PG, PG, PROT_NONE))
		r |= cfail("mprotect PROT_NONE: %s", strerror(errno));
	else
		r |= mix_stops("PROT_NONE last page", p, MIX_PAGES - 1);
	mprotect(p + (MIX_PAGES - 1) * PG, PG, PROT_READ | PROT_WRITE);
	fd = open("/dev/mem", O_RDONLY);
	nb = fd < 0 ? MAP_FAILED :
		mmap(p + MIX_PAGES * PG, PG, PROT_READ, MAP_SHARED | MAP_FIXED,
		     fd, 0);
	if (nb == MAP_FAILED) {
		printf("  no /dev/mem mapping (%s): PFNMAP neighbour not run\n",
		       strerror(errno));
	} else {
		r |= mix_stops("/dev/mem (VM_IO | VM_PFNMAP) neighbour", p,
			       MIX_PAGES);
		munmap(nb, PG);
	}
	if (fd >= 0)
		close(fd);
	munmap(p, (MIX_PAGES + 1) * PG);
	thp_restore();
	return r;
}

/* Pages the parent of case_mixfork() writes after fork(): order-0 ones. */
static int mixfork_written(unsigned long i)
{
	return mix_expect(i) == 1 && (i < 320 || i >= 324);
}

static void mix_tag_if(char *p, int (*pick)(unsigned long), unsigned int gen)
{
	unsigned long i;

	for (i = 0; i < MIX_PAGES; i++)
		if (mix_expect(i) > 0 && (!pick || pick(i)))
			tag_page(p + i * PG, tag(i, gen));
}

static void mix_child_tags(void *p)
{
	mix_tag_if(p, NULL, 7);
}

static int mixfork_one(int fast)
{
	char *p = mix_alloc(), msg[80];
	struct cow_child cc;
	uint64_t *exp;
	unsigned long i;
	int r = 0;

	if (!p)
		return 77;
	snprintf(msg, sizeof(msg), "mixed layout shared by fork (%s)",
		 how(0, fast));
	exp = calloc(MIX_PAGES, 8);
	if (cow_child_start(&cc, mix_child_tags, p))
		return -1;
	/* COW copies of the order-0 pages but four; the folios stay shared. */
	mix_tag_if(p, mixfork_written, 1);
	for (i = 0; i < MIX_PAGES; i++)
		exp[i] = mix_expect(i) > 0 ? tag(i, mixfork_written(i)) : 0;
	mix_reset(p);
	r = lt_start(p, MIX_PAGES, 0, fast);
	if (r) {
		r = cfail("%s: PIN_LONGTERM_TEST_START: %s", msg, strerror(-r));
		goto out;
	}
	if (cow_child_scribble(&cc)) {
		r = cfail("%s: child did not write", msg);
		goto stop;
	}
	r = cmp_read(msg, MIX_PAGES, exp);
	if (r)
		goto stop;
	/* The pinned pages are the parent's own: its writes show in them. */
	mix_tag_if(p, NULL, 2);
	for (i = 0; i < MIX_PAGES; i++)
		exp[i] = mix_tag(i, 2);
	r = cmp_read(msg, MIX_PAGES, exp);
stop:
	lt_stop();
out:
	if (cow_child_end(&cc))
		r = -1;
	free(exp);
	munmap(p, (MIX_PAGES + 1) * PG);
	return r;
}

/*
 * The mixed layout shared with a child by fork(), the parent having written
 * all but four of its order-0 pages since: a read pin of the whole layout
 * (FOLL_PIN without FOLL_WRITE) must stop at every page still shared, unshare
 * it and go on, so the child's later writes do not show in the pinned pages
 * and the parent's do.
 */
static int case_mixfork(void)
{
	int r, k;

	thp_save();
	r = mixfork_one(0);
	if (r != 77) {
		k = mixfork_one(1);
		r = k == 77 ? -1 : r | k;
	}
	thp_restore();
	return r;
}

/*
 * FOLL_PIN pins taken and not yet released, system-wide (/proc/vmstat):
 * 0 and *@out, or -1 without the counters. Unrefreshed per-CPU deltas
 * can make the difference negative for a moment: it is a value, not an
 * error (stock arm64 had one at the start of the kill case).
 */
static int pins_outstanding(long *out)
{
	char line[128];
	long acq = -1, rel = -1, v;
	FILE *f = fopen("/proc/vmstat", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "nr_foll_pin_acquired %ld", &v) == 1)
			acq = v;
		else if (sscanf(line, "nr_foll_pin_released %ld", &v) == 1)
			rel = v;
	}
	fclose(f);
	*out = acq - rel;
	return acq < 0 || rel < 0 ? -1 : 0;
}

/*
 * A child pins 512 MB of order-0 pages with FOLL_LONGTERM in one call, over
 * and over, faulting them in on the first call unless populate. The parent
 * waits until more than 10000 pins are outstanding, so the child is inside
 * a call with part of the range pinned, and kills it there.
 */
static int kill_one(const char *what, int populate)
{
	unsigned long n = 131072, waited;
	long seen = 0, base, now;
	struct gup_test g;
	int st, pfd[2];
	char *p, c;
	pid_t pid;

	if (pins_outstanding(&base))
		return cfail("%s: no nr_foll_pin_* in /proc/vmstat", what);
	if (pipe(pfd))
		return cfail("%s: pipe: %s", what, strerror(errno));
	pid = fork();
	if (pid < 0)
		return cfail("fork: %s", strerror(errno));
	if (!pid) {
		p = mmap(NULL, n * PG, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			_exit(2);
		madvise(p, n * PG, MADV_NOHUGEPAGE);
		if (populate)
			memset(p, 1, n * PG);
		if (write(pfd[1], "s", 1) != 1)
			_exit(3);
		for (;;)
			gup_call(PIN_LONGTERM_BENCHMARK, p, n, n, FOLL_WRITE,
				 &g);
	}
	close(pfd[1]);
	if (read(pfd[0], &c, 1) != 1) {
		close(pfd[0]);
		waitpid(pid, &st, 0);
		return cfail("%s: the child could not map 512 MB", what);
	}
	close(pfd[0]);
	for (waited = 0; waited < 600000; waited++) {
		if (!pins_outstanding(&now))
			seen = now - base;
		if (seen > 10000)
			break;
		usleep(100);
	}
	kill(pid, SIGKILL);
	if (seen <= 10000) {
		waitpid(pid, &st, 0);
		return cfail("%s: never more than %ld pins outstanding", what,
			     seen);
	}
	for (waited = 0; waited < 1200; waited++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			break;
		usleep(100000);
	}
	if (waited == 1200)
		return cfail("%s: the child did not die within 120 s of SIGKILL",
			     what);
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
		return cfail("%s: the child ended with status %#x, not SIGKILL",
			     what, st);
	printf("  %s: killed with about %ld pages pinned, died within %lu.%lu s\n",
	       what, seen, waited / 10, waited % 10);
	return 0;
}

/*
 * A fatal signal during a long slow-path pin: the task must die of it, and
 * (the harness checks, after vm.stat_refresh) every page it had pinned is
 * unpinned.
 */
static int case_kill(void)
{
	int r;

	thp_save();
	thp_only(4);
	r = kill_one("while faulting 512 MB in", 0);
	r |= kill_one("while walking 512 MB of present PTEs", 1);
	thp_restore();
	return r;
}

static const struct {
	const char *name;
	int (*fn)(void);
} cases[] = {
	{ "munmap", case_munmap },
	{ "mremap", case_mremap },
	{ "wrbit", case_wrbit },
	{ "fork", case_fork },
	{ "unaligned", case_unaligned },
	{ "softdirty", case_softdirty },
	{ "ksm", case_ksm },
	{ "mixed", case_mixed },
	{ "mixfork", case_mixfork },
	{ "kill", case_kill },
};

#define NCASES	(sizeof(cases) / sizeof(cases[0]))

static void report(const char *name, int r)
{
	printf("batchedge %lukB %s: %s\n", nrp * 4, name,
	       r == 77 ? "SKIP" : r ? "FAIL" : "ok");
	if (r == 77)
		skips++;
	else if (r)
		failed_cases++;
	else
		passes++;
	fflush(stdout);
}

int main(int argc, char **argv)
{
	unsigned long iters = 2000;
	const char *only[16];
	int nonly = 0, ncases = NCASES, c, k, i, r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt(argc, argv, "f:i:c:")) != -1) {
		switch (c) {
		case 'f':
			nrp = strtoul(optarg, NULL, 0) / 4;
			break;
		case 'i':
			iters = strtoul(optarg, NULL, 0);
			break;
		case 'c':
			if (nonly < 16)
				only[nonly++] = optarg;
			break;
		default:
			return 2;
		}
	}
	if (nrp != 16 && nrp != 512) {
		fprintf(stderr, "usage: batchedge -f 64|2048 [-i N] [-c CASE]\n");
		return 2;
	}
	gup_fd = open("/sys/kernel/debug/gup_test", O_RDWR);
	pm_fd = open("/proc/self/pagemap", O_RDONLY);
	kpf_fd = open("/proc/kpageflags", O_RDONLY);
	if (gup_fd < 0 || pm_fd < 0 || kpf_fd < 0) {
		printf("skip: need gup_test, pagemap and kpageflags (root)\n");
		return 77;
	}
	rdbuf_pages = 4 * 512;
	rdbuf = mmap(NULL, rdbuf_pages * PG, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (rdbuf == MAP_FAILED)
		return 1;
	madvise(rdbuf, rdbuf_pages * PG, MADV_NOHUGEPAGE);
	for (k = 0; k < ncases + 1; k++) {
		const char *name = k < ncases ? cases[k].name : "race";

		for (i = 0; i < nonly && strcmp(only[i], name); i++)
			;
		if (nonly && i == nonly)
			continue;
		case_id = k + 1;
		printf("batchedge %lukB %s:\n", nrp * 4, name);
		r = k < ncases ? cases[k].fn() : case_race(iters);
		if (r == 77)
			printf("  skip: the %lu kB folio layout or feature "
			       "was not available\n", nrp * 4);
		report(name, r == 77 ? 77 : r ? 1 : 0);
	}
	printf("batchedge %lukB: %d passed, %d failed, %d skipped "
	       "(%lu returned PFNs matched the page tables)\n", nrp * 4,
	       passes, failed_cases, skips, pfns_checked);
	if (failed_cases || failures)
		return 1;
	return passes ? 0 : 77;
}
