// SPDX-License-Identifier: MIT
/*
 * mreg_verify_range() against an oracle, and with PAGEMAP_SCAN against
 * without it.
 *
 * The oracle is the obvious walk: for every page, its pagemap entry, then
 * kpageflags back to the folio's head and forward over its tails. The
 * library's walk reads each entry once and must give the same histogram,
 * for every folio size and backing, for ranges that start and end in the
 * middle of folios, with holes (a folio entered twice is one folio), and
 * on the zero page (no memory of the range's own: unbacked).
 *
 * Kernels before 6.7 have no PAGEMAP_SCAN: this test then makes the
 * ioctl fail with ENOTTY, as those kernels do, and checks that the smaps
 * path gives the same PMD-mapped bytes, exactly, for whole buffers; for
 * part of a VMA it may only be an estimate, and must say so. In the guest
 * on 5.10 and 6.1 the real kernel does the refusing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../src/pagemap_compat.h"
#include "tcommon.h"

#define PAGE	   4096ull
#define KPF_HEAD   (1ull << KPF_COMPOUND_HEAD)
#define KPF_TAIL   (1ull << KPF_COMPOUND_TAIL)
#define ORACLE_MAX (1ull << (MREG_HIST_ORDERS - 1))

static bool refuse_pagemap_scan;

/* Interposes glibc's ioctl() for libmreg: a kernel without PAGEMAP_SCAN. */
int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (refuse_pagemap_scan && req == PAGEMAP_SCAN) {
		errno = ENOTTY;
		return -1;
	}
	return (int)syscall(SYS_ioctl, fd, req, arg);
}

struct oracle {
	int pagemap;
	int kpageflags;
	uint64_t head;
	uint64_t nr;
	uint64_t last_pfn;
	uint64_t seen[1 << 16]; /* heads of large folios counted */
	size_t nr_seen;
};

/* Each large folio counts once, however often the range enters it. */
static bool first_entry(struct oracle *o)
{
	size_t i;

	if (o->nr == 1)
		return true;
	for (i = 0; i < o->nr_seen; i++)
		if (o->seen[i] == o->head)
			return false;
	if (o->nr_seen < sizeof(o->seen) / sizeof(o->seen[0]))
		o->seen[o->nr_seen++] = o->head;
	return true;
}

static uint64_t read_u64(int fd, uint64_t index)
{
	uint64_t v = 0;

	if (pread(fd, &v, 8, (off_t)(index * 8)) != 8)
		return 0;
	return v;
}

/* The folio holding @pfn: its head and size, one entry at a time. */
static void oracle_folio(struct oracle *o, uint64_t pfn)
{
	uint64_t flags = read_u64(o->kpageflags, pfn), head = pfn, n;

	while ((flags & KPF_TAIL) && pfn - head < ORACLE_MAX)
		flags = read_u64(o->kpageflags, --head);
	o->head = head;
	o->nr = 1;
	if (!(flags & KPF_HEAD))
		return;
	for (n = head + 1; read_u64(o->kpageflags, n) & KPF_TAIL; n++)
		o->nr++;
}

static int oracle_walk(const void *addr, size_t len, struct mreg_folio_hist *h)
{
	static struct oracle o;
	uint64_t v, e, pfn;
	bool in = false;

	memset(&o, 0, sizeof(o));
	memset(h, 0, sizeof(*h));
	h->page_size = PAGE;
	o.pagemap = open("/proc/self/pagemap", O_RDONLY);
	o.kpageflags = open("/proc/kpageflags", O_RDONLY);
	if (o.pagemap < 0 || o.kpageflags < 0)
		return -errno;
	for (v = (uintptr_t)addr; v < (uintptr_t)addr + len; v += PAGE) {
		e = read_u64(o.pagemap, v / PAGE);
		pfn = e & PM_PFN_MASK;
		/* No page, or the (huge) zero page: nothing of its own. */
		if (!(e & PM_PRESENT) ||
		    (read_u64(o.kpageflags, pfn) & (1ull << KPF_ZERO_PAGE))) {
			h->unbacked_bytes += PAGE;
			in = false;
			continue;
		}
		if (!in || pfn != o.last_pfn + 1 || pfn < o.head ||
		    pfn >= o.head + o.nr) {
			oracle_folio(&o, pfn);
			if (first_entry(&o))
				h->folios[__builtin_ctzll(o.nr)]++;
		}
		h->bytes[__builtin_ctzll(o.nr)] += PAGE;
		o.last_pfn = pfn;
		in = true;
	}
	close(o.pagemap);
	close(o.kpageflags);
	return 0;
}

static int same_folios(const char *what, const struct mreg_folio_hist *got,
		       const struct mreg_folio_hist *want)
{
	char g[256], w[256];

	mreg_folio_hist_format(got, g, sizeof(g));
	mreg_folio_hist_format(want, w, sizeof(w));
	T_CHECK(!memcmp(got->folios, want->folios, sizeof(got->folios)) &&
			!memcmp(got->bytes, want->bytes, sizeof(got->bytes)) &&
			got->unbacked_bytes == want->unbacked_bytes,
		"%s: library %s, oracle %s", what, g, w);
	return T_PASS;
}

/* [addr, addr + len) as the library and as the oracle see it. */
static int check_range(const char *what, void *addr, size_t len)
{
	struct mreg_folio_hist got = {.size = sizeof(got)}, want;

	T_CHECK(!mreg_verify_range(addr, len, &got), "%s: %s", what,
		mreg_last_error());
	T_CHECK(!oracle_walk(addr, len, &want), "%s: oracle: %m", what);
	return same_folios(what, &got, &want);
}

/*
 * Another process's view: a forked child maps the same folios at the same
 * addresses (fork copies anonymous PTEs and PMDs; shared memory it leaves
 * to be faulted again, so the child reads every page first), and
 * mreg_verify_pid_range() on it must give what mreg_verify_range() gives
 * here.
 */
static int check_other_process(const char *what, void *addr, size_t len)
{
	struct mreg_folio_hist mine = {.size = sizeof(mine)};
	struct mreg_folio_hist theirs = {.size = sizeof(theirs)};
	int ret, pipefd[2];
	pid_t pid;
	char c;

	T_CHECK(!pipe(pipefd), "pipe: %m");
	pid = fork();
	T_CHECK(pid >= 0, "fork: %m");
	if (!pid) {
		volatile uint8_t sum = 0;
		size_t off;

		for (off = 0; off < len; off += PAGE)
			sum += ((volatile uint8_t *)addr)[off];
		close(pipefd[0]);
		if (write(pipefd[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	if (read(pipefd[0], &c, 1) != 1)
		c = 0;
	close(pipefd[0]);
	ret = mreg_verify_range(addr, len, &mine);
	if (!ret)
		ret = mreg_verify_pid_range(pid, (uintptr_t)addr, len, &theirs);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	T_CHECK(c == 'r' && !ret, "%s: pid %d: %s", what, (int)pid,
		mreg_last_error());
	ret = same_folios(what, &theirs, &mine);
	T_CHECK(!ret && theirs.pmd_mapped_bytes == mine.pmd_mapped_bytes &&
			theirs.method == mine.method,
		"%s: pid %d: %" PRIu64 " PMD-mapped bytes, here %" PRIu64, what,
		(int)pid, theirs.pmd_mapped_bytes, mine.pmd_mapped_bytes);
	/* Gone: a clear errno, not an empty histogram. */
	ret = mreg_verify_pid_range(pid, (uintptr_t)addr, len, &theirs);
	T_CHECK(ret == -ESRCH,
		"%s: exited pid %d gave %d (%s)", what, (int)pid, ret,
		mreg_last_error());
	T_CHECK(mreg_verify_pid_range(-1, (uintptr_t)addr, len, &theirs) ==
				-EINVAL &&
			strstr(mreg_last_error(), "pid"),
		"%s: pid -1 not refused by name: %s", what, mreg_last_error());
	return T_PASS;
}

/* The same range with and without PAGEMAP_SCAN. */
static int check_pmd_fallback(const char *what, void *addr, size_t len,
			      bool whole_vma)
{
	struct mreg_folio_hist scan = {.size = sizeof(scan)};
	struct mreg_folio_hist smaps = {.size = sizeof(smaps)};
	int ret;

	if (mreg_verify_range(addr, len, &scan) ||
	    scan.method != MREG_VERIFY_EXACT)
		return T_PASS; /* this kernel has no PAGEMAP_SCAN either */
	refuse_pagemap_scan = true;
	ret = mreg_verify_range(addr, len, &smaps);
	refuse_pagemap_scan = false;
	T_CHECK(!ret, "%s without PAGEMAP_SCAN: %s", what, mreg_last_error());
	ret = same_folios(what, &smaps, &scan);
	if (ret)
		return ret;
	if (smaps.method == MREG_VERIFY_EXACT)
		T_CHECK(smaps.pmd_mapped_bytes == scan.pmd_mapped_bytes,
			"%s: smaps says %" PRIu64 " bytes PMD-mapped, "
			"PAGEMAP_SCAN %" PRIu64,
			what, smaps.pmd_mapped_bytes, scan.pmd_mapped_bytes);
	else
		T_CHECK(!whole_vma && smaps.method == MREG_VERIFY_ESTIMATE,
			"%s: method %u for a whole buffer", what, smaps.method);
	return T_PASS;
}

static int check_case(const struct t_folio *c)
{
	uint64_t len = c->size * 4 > (8u << 20) ? c->size * 4 : 8u << 20;
	size_t off = 3 * PAGE, cut = 5 * PAGE;
	struct mreg_buf *buf;
	char what[96];
	uint8_t *p;
	int ret;

	ret = t_buf(c, len, &buf);
	T_CHECK(!ret, "%s backing %u: %s", c->name, c->backing,
		mreg_last_error());
	p = mreg_buf_addr(buf);
	snprintf(what, sizeof(what), "%s backing %u", c->name, c->backing);
	ret = check_range(what, p, len);
	if (!ret)
		ret = check_other_process(what, p, len);
	if (!ret)
		ret = check_pmd_fallback(what, p, len, true);
	/* Entered and left in the middle of folios. */
	snprintf(what, sizeof(what), "%s backing %u, +3 pages -5 pages",
		 c->name, c->backing);
	if (!ret)
		ret = check_range(what, p + off, len - off - cut);
	if (!ret)
		ret = check_pmd_fallback(what, p + off, len - off - cut, false);
	/* Holes: pages dropped from the middle of folios. */
	snprintf(what, sizeof(what), "%s backing %u, holes", c->name,
		 c->backing);
	if (!ret && c->backing == MREG_BACKING_ANON && c->size < len &&
	    !madvise(p + c->size + PAGE, 2 * PAGE, MADV_DONTNEED))
		ret = check_range(what, p, len);
	mreg_buf_free(buf);
	printf("  %-10s backing %u: %s\n", c->name, c->backing,
	       ret ? "FAIL" : "same as the oracle");
	return ret;
}

/* PMD size on shared memory and memfd, where the kernel offers it. */
static int check_shared(void)
{
	struct t_folio c = {.size = t_pmd_size(), .level = MREG_MAP_PMD};
	uint32_t backing[] = {MREG_BACKING_SHMEM, MREG_BACKING_MEMFD};
	struct mreg_buf *buf;
	unsigned int i;
	int ret;

	for (i = 0; i < 2; i++) {
		c.backing = backing[i];
		snprintf(c.name, sizeof(c.name), "pmd");
		ret = t_buf(&c, 8u << 20, &buf);
		if (ret) {
			printf("  pmd        backing %u: not offered here: "
			       "%s\n",
			       c.backing, mreg_last_error());
			continue;
		}
		mreg_buf_free(buf);
		ret = check_case(&c);
		if (ret)
			return ret;
	}
	return T_PASS;
}

/* Read, never written: the zero page, or the huge one, backs it. */
static int check_zero_pages(void)
{
	size_t len = 4 * t_pmd_size(), i;
	struct mreg_folio_hist h = {.size = sizeof(h)};
	uint8_t *map, *p;
	int advice[] = {MADV_NOHUGEPAGE, MADV_HUGEPAGE}, a, ret = T_PASS;
	volatile uint8_t sum = 0;

	for (a = 0; a < 2 && !ret; a++) {
		map = mmap(NULL, len + t_pmd_size(), PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		T_CHECK(map != MAP_FAILED, "mmap");
		p = (uint8_t *)(((uintptr_t)map + t_pmd_size() - 1) &
				~(t_pmd_size() - 1));
		madvise(p, len, advice[a]);
		for (i = 0; i < len; i += PAGE)
			sum += p[i];
		ret = check_range(a ? "huge zero page" : "zero page", p, len);
		if (!ret)
			ret = check_pmd_fallback("zero pages", p, len, false);
		if (!ret) {
			mreg_verify_range(p, len, &h);
			T_CHECK(h.unbacked_bytes == len && !h.pmd_mapped_bytes,
				"%s: %" PRIu64 " unbacked, %" PRIu64
				" PMD-mapped of %zu",
				a ? "huge zero page" : "zero page",
				h.unbacked_bytes, h.pmd_mapped_bytes, len);
			printf("  %-10s read only: unbacked, as the oracle "
			       "says\n",
			       a ? "huge zero" : "zero");
		}
		munmap(map, len + t_pmd_size());
	}
	return ret;
}

int main(void)
{
	int ret;

	t_init("test_verify");
	if (access("/proc/kpageflags", R_OK))
		return t_skip("no /proc/kpageflags: needs root");
	ret = t_each_anon_folio(check_case);
	if (!ret)
		ret = check_shared();
	if (!ret)
		ret = check_zero_pages();
	return ret;
}
