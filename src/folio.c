// SPDX-License-Identifier: MIT
/*
 * Which folios really back a range: pagemap gives each page's PFN,
 * kpageflags marks compound heads and tails, so walking the tails from a
 * head gives the folio's size. PAGEMAP_SCAN's PAGE_IS_HUGE tells PMD from
 * PTE mappings, which kpageflags cannot; before Linux 6.7, smaps does.
 *
 * Reading costs what the buffer maps: pagemap is read in chunks, each
 * chunk's PFNs are grouped into runs of consecutive frames, and each
 * frame's kpageflags entry is read once, in one pread per run. Only a
 * folio the range maps in part needs entries beyond it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "internal.h"
#include "pagemap_compat.h"

/* Pagemap entries read at once: 32 MB of buffer with 4 kB pages. */
#define CHUNK		8192
#define MAX_FOLIO_PAGES (1ull << (MREG_HIST_ORDERS - 1))
#define KPF_HEAD	(1ull << KPF_COMPOUND_HEAD)
#define KPF_TAIL	(1ull << KPF_COMPOUND_TAIL)
#define KPF_ZERO	(1ull << KPF_ZERO_PAGE)
#define KPF_HUGE_ZERO	(KPF_ZERO | (1ull << KPF_THP))
/* A folio split or freed under the walk: the walk is done again. */
#define WALK_TRIES 3

/* Virtually consecutive pages with consecutive PFNs. */
struct pfn_run {
	uint64_t pfn;
	uint64_t nr;
	uint64_t *flags; /* kpageflags of pfn .. pfn + nr - 1 */
};

/* The union of a chunk's runs in PFN order, read with one pread each. */
struct pfn_extent {
	uint64_t pfn;
	uint64_t nr;
	uint64_t *flags;
};

/* The folio being walked: its head, the last page seen, how much of it the
 * range maps so far. */
struct folio_cursor {
	bool open;
	uint64_t head;
	uint64_t last;
	uint64_t pages_in;
};

/* Heads of the large folios counted so far: a folio the range enters
 * twice (a hole in it, or mapped twice) is one folio. */
struct head_set {
	uint64_t *slot; /* open addressing; 0 is empty (PFN 0 is no head) */
	size_t cap;	/* a power of two */
	size_t nr;
};

struct folio_walk {
	pid_t pid; /* 0: the calling process */
	int pagemap_fd;
	int kpageflags_fd;
	struct mreg_folio_hist *hist;
	struct folio_cursor cur;
	struct head_set heads;
	uint64_t huge_zero_bytes; /* the huge zero page, PMD-mapped */
	uint64_t scratch[CHUNK];  /* entries beyond what the range maps */
	uint64_t entries[CHUNK];
	uint64_t flags[CHUNK];
	struct pfn_run runs[CHUNK];
	struct pfn_extent extents[CHUNK];
	struct pfn_run *sorted[CHUNK];
	size_t run_start[CHUNK]; /* index in the chunk of each run's first page
				  */
	size_t nr_runs;
	size_t nr_extents;
};

static int read_u64s(int fd, uint64_t *buf, size_t nr, uint64_t index)
{
	ssize_t n = pread(fd, buf, nr * 8, (off_t)(index * 8));

	if (n < 0)
		return -errno;
	return (int)(n / 8);
}

static int read_all(int fd, uint64_t *buf, size_t nr, uint64_t index)
{
	int n;

	while (nr) {
		n = read_u64s(fd, buf, nr, index);
		if (n <= 0)
			return n < 0 ? n : -EIO;
		buf += n;
		nr -= (size_t)n;
		index += (uint64_t)n;
	}
	return 0;
}

/* The chunk's kpageflags entry for @pfn, if the chunk read it. */
static const uint64_t *chunk_flags(const struct folio_walk *w, uint64_t pfn)
{
	size_t lo = 0, hi = w->nr_extents, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (pfn < w->extents[mid].pfn)
			hi = mid;
		else if (pfn >= w->extents[mid].pfn + w->extents[mid].nr)
			lo = mid + 1;
		else
			return &w->extents[mid]
					.flags[pfn - w->extents[mid].pfn];
	}
	return NULL;
}

/*
 * Pages outside what the range maps: the head of a folio the range enters
 * in its middle, the tails of one it leaves early. Rare (an unaligned range,
 * a partly unmapped folio), and read in blocks that grow, so that a 1 GB
 * folio costs a few reads, not one per page.
 */
static int find_head(struct folio_walk *w, uint64_t pfn, uint64_t *head)
{
	uint64_t *flags = w->scratch, block = 16, n, i, done = 0;
	int ret;

	while (done < MAX_FOLIO_PAGES && pfn > done) {
		n = block < pfn - done ? block : pfn - done;
		n = n < CHUNK ? n : CHUNK;
		ret = read_all(w->kpageflags_fd, flags, n, pfn - done - n);
		if (ret)
			return ret;
		for (i = n; i-- > 0;) {
			if (flags[i] & KPF_HEAD) {
				*head = pfn - done - n + i;
				return 0;
			}
			/* Neither head nor tail: split since the tail was read.
			 */
			if (!(flags[i] & KPF_TAIL))
				return -EAGAIN;
		}
		done += n;
		block *= 32;
	}
	return -EAGAIN;
}

static int count_tails_from(struct folio_walk *w, uint64_t pfn, uint64_t *nr)
{
	uint64_t *flags = w->scratch, block = 1, i;
	int n;

	*nr = 0;
	while (*nr < MAX_FOLIO_PAGES) {
		n = read_u64s(w->kpageflags_fd, flags,
			      block < CHUNK ? block : CHUNK, pfn + *nr);
		if (n <= 0)
			return n; /* 0: the end of memory */
		for (i = 0; i < (uint64_t)n; i++) {
			if (!(flags[i] & KPF_TAIL))
				return 0;
			(*nr)++;
		}
		block *= 32;
	}
	return 0;
}

/*
 * The size of the cursor's folio, in pages. Folios are naturally aligned,
 * so one whose pages seen so far are a power of two n at a head not aligned
 * to 2n cannot be larger. Otherwise the page after the last one seen
 * decides: a tail means the folio goes on outside what the range maps.
 */
static int folio_pages(struct folio_walk *w, const uint64_t *next_flags,
		       uint64_t *nr)
{
	const struct folio_cursor *c = &w->cur;
	uint64_t seen = c->last - c->head + 1, more;
	int ret;

	*nr = seen;
	if (seen >= MAX_FOLIO_PAGES ||
	    (mreg_is_pow2(seen) && c->head % (2 * seen)))
		return 0;
	if (!next_flags)
		next_flags = chunk_flags(w, c->last + 1);
	if (next_flags && !(*next_flags & KPF_TAIL))
		return 0;
	ret = count_tails_from(w, c->last + 1, &more);
	*nr = seen + more;
	return ret;
}

static size_t head_hash(uint64_t pfn, size_t cap)
{
	return (size_t)((pfn * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
}

/* Add @head; false if it was there. -ENOMEM as true: count it again. */
static bool head_set_add(struct head_set *s, uint64_t head)
{
	size_t i;

	if (2 * (s->nr + 1) > s->cap) {
		struct head_set big = {.cap = s->cap ? 2 * s->cap : 1024};

		big.slot = calloc(big.cap, sizeof(*big.slot));
		if (!big.slot)
			return true;
		for (i = 0; i < s->cap; i++)
			if (s->slot[i])
				head_set_add(&big, s->slot[i]);
		free(s->slot);
		*s = big;
	}
	for (i = head_hash(head, s->cap); s->slot[i];
	     i = (i + 1) & (s->cap - 1))
		if (s->slot[i] == head)
			return false;
	s->slot[i] = head;
	s->nr++;
	return true;
}

/* @next_flags: the kpageflags of the page after the cursor's last, if known. */
static int close_folio(struct folio_walk *w, const uint64_t *next_flags)
{
	struct mreg_folio_hist *h = w->hist;
	unsigned int order;
	uint64_t nr;
	int ret;

	if (!w->cur.open)
		return 0;
	w->cur.open = false;
	ret = folio_pages(w, next_flags, &nr);
	if (ret)
		return ret;
	order = mreg_ilog2(nr);
	if (order >= MREG_HIST_ORDERS || !mreg_is_pow2(nr))
		return -EAGAIN; /* a folio split or freed under the walk */
	if (nr == 1 || head_set_add(&w->heads, w->cur.head))
		h->folios[order]++;
	h->bytes[order] += w->cur.pages_in * h->page_size;
	return 0;
}

static int open_folio(struct folio_walk *w, uint64_t pfn, uint64_t flags)
{
	uint64_t head = pfn;
	int ret;

	if (flags & KPF_TAIL) {
		const uint64_t *prev = chunk_flags(w, pfn - 1);

		if (prev && (*prev & KPF_HEAD))
			head = pfn - 1;
		else {
			ret = find_head(w, pfn, &head);
			if (ret)
				return ret;
		}
	}
	w->cur = (struct folio_cursor){
		.open = true, .head = head, .last = pfn, .pages_in = 1};
	if (!(flags & (KPF_HEAD | KPF_TAIL)))
		return close_folio(w, NULL); /* a 4 kB page: done already */
	return 0;
}

static int walk_page(struct folio_walk *w, uint64_t pfn, const uint64_t *flags)
{
	struct folio_cursor *c = &w->cur;
	int ret;

	/* The shared zero page, or the huge one: read, never written, and
	 * no memory of the range's own. */
	if (*flags & KPF_ZERO) {
		ret = close_folio(w, NULL);
		w->hist->unbacked_bytes += w->hist->page_size;
		if ((*flags & KPF_HUGE_ZERO) == KPF_HUGE_ZERO)
			w->huge_zero_bytes += w->hist->page_size;
		return ret;
	}
	if (c->open && pfn == c->last + 1 && (*flags & KPF_TAIL)) {
		c->last = pfn;
		c->pages_in++;
		return 0;
	}
	ret = close_folio(w, pfn == c->last + 1 ? flags : NULL);
	return ret ? ret : open_folio(w, pfn, *flags);
}

static int cmp_run_pfn(const void *a, const void *b)
{
	const struct pfn_run *x = *(struct pfn_run *const *)a;
	const struct pfn_run *y = *(struct pfn_run *const *)b;

	return x->pfn < y->pfn ? -1 : x->pfn > y->pfn;
}

/*
 * One pread per extent of consecutive PFNs, each page's entry read once
 * however often the chunk maps it: the runs, sorted by PFN, are merged
 * where they touch or overlap.
 */
static int read_chunk_flags(struct folio_walk *w)
{
	struct pfn_extent *e = NULL;
	uint64_t used = 0, end;
	size_t i;
	int ret;

	for (i = 0; i < w->nr_runs; i++)
		w->sorted[i] = &w->runs[i];
	qsort(w->sorted, w->nr_runs, sizeof(w->sorted[0]), cmp_run_pfn);
	w->nr_extents = 0;
	for (i = 0; i < w->nr_runs; i++) {
		struct pfn_run *r = w->sorted[i];

		if (e && r->pfn <= e->pfn + e->nr) {
			end = r->pfn + r->nr;
			if (end > e->pfn + e->nr) {
				used += end - (e->pfn + e->nr);
				e->nr = end - e->pfn;
			}
		} else {
			e = &w->extents[w->nr_extents++];
			*e = (struct pfn_extent){r->pfn, r->nr,
						 w->flags + used};
			used += r->nr;
		}
		r->flags = e->flags + (r->pfn - e->pfn);
	}
	for (i = 0; i < w->nr_extents; i++) {
		ret = read_all(w->kpageflags_fd, w->extents[i].flags,
			       w->extents[i].nr, w->extents[i].pfn);
		if (ret)
			return ret;
	}
	return 0;
}

/* Split @n pagemap entries into runs; holes are counted here. */
static int chunk_runs(struct folio_walk *w, size_t n)
{
	struct pfn_run *r = NULL;
	uint64_t pfn;
	size_t i;

	w->nr_runs = 0;
	for (i = 0; i < n; i++) {
		if (!(w->entries[i] & PM_PRESENT)) {
			r = NULL;
			continue;
		}
		pfn = w->entries[i] & PM_PFN_MASK;
		if (!pfn)
			return -EPERM; /* PFNs are hidden without CAP_SYS_ADMIN
					*/
		if (r && pfn == r->pfn + r->nr) {
			r->nr++;
			continue;
		}
		r = &w->runs[w->nr_runs];
		*r = (struct pfn_run){.pfn = pfn, .nr = 1};
		w->run_start[w->nr_runs++] = i;
	}
	return 0;
}

/* Walk the chunk's pages in virtual order, runs and holes alike. */
static int walk_chunk(struct folio_walk *w, size_t n)
{
	size_t i = 0, r, k;
	int ret;

	for (r = 0; r <= w->nr_runs; r++) {
		size_t next = r < w->nr_runs ? w->run_start[r] : n;

		if (next > i) { /* a hole before this run */
			ret = close_folio(w, NULL);
			if (ret)
				return ret;
			w->hist->unbacked_bytes +=
				(next - i) * w->hist->page_size;
		}
		if (r == w->nr_runs)
			break;
		for (k = 0; k < w->runs[r].nr; k++) {
			ret = walk_page(w, w->runs[r].pfn + k,
					&w->runs[r].flags[k]);
			if (ret)
				return ret;
		}
		i = next + w->runs[r].nr;
	}
	return 0;
}

static int walk_pages(struct folio_walk *w, uint64_t first, uint64_t count)
{
	uint64_t done = 0;
	int ret;

	while (done < count) {
		size_t want = count - done < CHUNK ? count - done : CHUNK;

		ret = read_all(w->pagemap_fd, w->entries, want, first + done);
		if (!ret)
			ret = chunk_runs(w, want);
		if (!ret)
			ret = read_chunk_flags(w);
		if (!ret)
			ret = walk_chunk(w, want);
		if (ret)
			return ret;
		done += want;
	}
	/* The chunk's flags are gone: the last folio's end is read anew. */
	w->nr_extents = 0;
	return close_folio(w, NULL);
}
/* /proc/self/@file, or /proc/@pid/@file for another process. */
static void proc_path(char *buf, size_t len, pid_t pid, const char *file)
{
	if (pid)
		snprintf(buf, len, "/proc/%d/%s", (int)pid, file);
	else
		snprintf(buf, len, "/proc/self/%s", file);
}

/* Bytes of [start, end) that a PMD (or PUD) maps, via PAGEMAP_SCAN. */
static int pmd_mapped(int pagemap_fd, uint64_t start, uint64_t end,
		      uint64_t *bytes)
{
	struct page_region regions[64];
	struct pm_scan_arg arg = {
		.size = sizeof(arg),
		.vec = (uintptr_t)regions,
		.vec_len = 64,
		.category_mask = PAGE_IS_HUGE,
		.return_mask = PAGE_IS_HUGE,
	};
	long n, i;

	*bytes = 0;
	for (arg.start = start; arg.start < end; arg.start = arg.walk_end) {
		arg.end = end;
		n = ioctl(pagemap_fd, PAGEMAP_SCAN, &arg);
		if (n < 0)
			return -errno;
		for (i = 0; i < n; i++)
			*bytes += regions[i].end - regions[i].start;
		if (arg.walk_end <= arg.start)
			break;
	}
	return 0;
}

/* One VMA of smaps: its span and the bytes a PMD or PUD maps. */
struct smaps_vma {
	uint64_t start;
	uint64_t end;
	uint64_t pmd_kb;
};

/*
 * Add @v's share of [start, end): all of it when the range covers the
 * VMA, and where it covers a part, only what the VMA's totals pin down
 * (none PMD-mapped, or all). Otherwise the range's share is unknown.
 */
static void smaps_add(const struct smaps_vma *v, uint64_t start, uint64_t end,
		      uint64_t *bytes, bool *exact)
{
	uint64_t lo = v->start > start ? v->start : start;
	uint64_t hi = v->end < end ? v->end : end;
	uint64_t pmd = v->pmd_kb << 10;

	if (lo >= hi)
		return;
	if (lo == v->start && hi == v->end)
		*bytes += pmd;
	else if (pmd == v->end - v->start)
		*bytes += hi - lo;
	else if (pmd) {
		*bytes += pmd < hi - lo ? pmd : hi - lo;
		*exact = false;
	}
}

static bool smaps_pmd_field(const char *line, uint64_t *kb)
{
	static const char *const fields[] = {
		"AnonHugePages:", "ShmemPmdMapped:", "FilePmdMapped:",
		"Shared_Hugetlb:", "Private_Hugetlb:"};
	size_t i, n;

	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		n = strlen(fields[i]);
		if (!strncmp(line, fields[i], n)) {
			*kb = strtoull(line + n, NULL, 10);
			return true;
		}
	}
	return false;
}

/*
 * Without PAGEMAP_SCAN (before Linux 6.7), the bytes a PMD maps come from
 * smaps, per VMA: exact for the VMAs the range covers whole, which an
 * mreg buffer always is (its guard pages keep it from merging).
 */
static int pmd_mapped_smaps(pid_t pid, uint64_t start, uint64_t end,
			    uint64_t *bytes, bool *exact)
{
	struct smaps_vma v = {0};
	char *line = NULL, path[64];
	size_t cap = 0;
	uint64_t kb;
	FILE *f;

	*bytes = 0;
	*exact = true;
	proc_path(path, sizeof(path), pid, "smaps");
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		unsigned long long lo, hi;

		if (sscanf(line, "%llx-%llx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			smaps_add(&v, start, end, bytes, exact);
			v = (struct smaps_vma){lo, hi, 0};
		} else if (smaps_pmd_field(line, &kb)) {
			v.pmd_kb += kb;
		}
	}
	smaps_add(&v, start, end, bytes, exact);
	free(line);
	fclose(f);
	return 0;
}

/*
 * @huge_zero: bytes of the range the walk found on the huge zero page,
 * which PAGEMAP_SCAN counts as PMD-mapped and smaps does not: no memory
 * of the range's own is mapped there.
 */
static int pmd_mapped_bytes(const struct folio_walk *w, uint64_t start,
			    uint64_t end, struct mreg_folio_hist *hist)
{
	uint64_t huge_zero = w->huge_zero_bytes;
	bool exact;
	int ret;

	ret = pmd_mapped(w->pagemap_fd, start, end, &hist->pmd_mapped_bytes);
	if (!ret)
		hist->pmd_mapped_bytes -= huge_zero < hist->pmd_mapped_bytes
						  ? huge_zero
						  : hist->pmd_mapped_bytes;
	if (ret != -ENOTTY && ret != -EINVAL)
		return ret;
	ret = pmd_mapped_smaps(w->pid, start, end, &hist->pmd_mapped_bytes,
			       &exact);
	if (!ret && !exact)
		hist->method = MREG_VERIFY_ESTIMATE;
	return ret;
}

static int walk_once(struct folio_walk *w, uint64_t start, size_t len)
{
	uint64_t page = w->hist->page_size;
	struct mreg_folio_hist *h = w->hist;
	uint32_t size = h->size, page_size = h->page_size;

	/* A retry starts from nothing. */
	memset(h, 0, sizeof(*h));
	h->size = size;
	h->page_size = page_size;
	w->cur.open = false;
	w->heads.nr = 0;
	if (w->heads.slot)
		memset(w->heads.slot, 0, w->heads.cap * sizeof(*w->heads.slot));
	w->huge_zero_bytes = 0;
	return walk_pages(w, start / page, (len + page - 1) / page);
}

/*
 * Why @path did not open. EACCES and EPERM both mean "not allowed" to a
 * caller: -EPERM, which mreg_buf_alloc() takes as its cue to estimate.
 */
static int open_error(const char *path, pid_t pid)
{
	int err = errno;

	if (err == EACCES || err == EPERM)
		return mreg_fail(-EPERM,
				 "verify: %s: %s: exact folios need uid 0, or "
				 "CAP_SYS_ADMIN with read access to "
				 "/proc/kpageflags%s",
				 path, strerror(err),
				 pid ? " and ptrace access to the process"
				     : "");
	if (pid && err == ENOENT)
		err = ESRCH;
	return mreg_fail(-err, "verify: %s: %s", path, strerror(errno));
}

/* Exited, reaped or not: a zombie's pagemap reads as empty. */
static bool pid_gone(pid_t pid)
{
	char path[64], line[512], *paren, state = 0;
	FILE *f;

	if (kill(pid, 0) && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return true;
	/* "pid (comm) S ...": comm may hold spaces and parentheses. */
	if (fgets(line, sizeof(line), f) && (paren = strrchr(line, ')')) &&
	    paren[1] == ' ')
		state = paren[2];
	fclose(f);
	return state == 'Z' || state == 'X';
}

/*
 * A walk that failed part way: hidden PFNs (no CAP_SYS_ADMIN), or pagemap
 * ending early, because the process exited or the range runs past the
 * end of its address space.
 */
static int walk_error(int ret, pid_t pid, uint64_t start, size_t len)
{
	if (ret == -EPERM)
		return mreg_fail(ret, "verify: pagemap hides the page frames: "
				      "exact folios need CAP_SYS_ADMIN");
	if (pid && pid_gone(pid))
		return mreg_fail(-ESRCH,
				 "verify: pid %d exited during the walk",
				 (int)pid);
	return mreg_fail(-EINVAL,
			 "verify: addr 0x%" PRIx64 " len %zu: pagemap ends "
			 "before the range does (past the end of the address "
			 "space?)",
			 start, len);
}

static int verify_exact(pid_t pid, uint64_t start, size_t len,
			struct mreg_folio_hist *hist, bool want_pmd)
{
	struct folio_walk *w;
	int ret = -EPERM, tries = 0;
	char path[64];

	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->hist = hist;
	w->pid = pid;
	proc_path(path, sizeof(path), pid, "pagemap");
	w->pagemap_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (w->pagemap_fd < 0) {
		ret = open_error(path, pid);
		goto out;
	}
	w->kpageflags_fd = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
	if (w->kpageflags_fd < 0) {
		ret = open_error("/proc/kpageflags", 0);
		goto out;
	}
	do
		ret = walk_once(w, start, len);
	while (ret == -EAGAIN && ++tries < WALK_TRIES);
	if (ret == -EPERM || ret == -EIO)
		ret = walk_error(ret, pid, start, len);
	else if (ret == -EAGAIN)
		ret = mreg_fail(ret,
				"verify: the folios of 0x%" PRIx64 " len %zu "
				"kept changing during %d walks",
				start, len, WALK_TRIES);
	hist->method = MREG_VERIFY_EXACT;
	if (!ret && want_pmd)
		ret = pmd_mapped_bytes(w, start, start + len, hist);
out:
	if (ret)
		hist->method = MREG_VERIFY_NONE;
	if (w->pagemap_fd >= 0)
		close(w->pagemap_fd);
	if (w->kpageflags_fd >= 0)
		close(w->kpageflags_fd);
	free(w->heads.slot);
	free(w);
	return ret;
}

static int verify_range(pid_t pid, uint64_t addr, size_t len,
			struct mreg_folio_hist *hist, bool want_pmd)
{
	long page = sysconf(_SC_PAGESIZE);
	struct mreg_folio_hist h = {.size = sizeof(h)};
	int ret;

	if (!hist || hist->size < MREG_FOLIO_HIST_SIZE_V1 ||
	    hist->size > MREG_OUT_SIZE_MAX)
		return mreg_fail(-EINVAL,
				 "verify: hist is NULL or hist->size is not "
				 "sizeof(struct mreg_folio_hist) (%u or more)",
				 MREG_FOLIO_HIST_SIZE_V1);
	h.page_size = (uint32_t)page;
	if (pid < 0)
		ret = mreg_fail(-EINVAL, "verify: pid %d is negative",
				(int)pid);
	else if (!len || addr % (uint64_t)page)
		ret = mreg_fail(-EINVAL,
				"verify: addr 0x%" PRIx64
				" len %zu: addr must be "
				"page-aligned and len non-zero",
				addr, len);
	else if (addr + len < addr)
		ret = mreg_fail(-EINVAL,
				"verify: addr 0x%" PRIx64 " + len %zu wraps",
				addr, len);
	else
		ret = verify_exact(pid, addr, len, &h, want_pmd);
	mreg_copy_out(hist, &h, sizeof(h));
	return ret;
}

MREG_EXPORT int mreg_verify_range(const void *addr, size_t len,
				  struct mreg_folio_hist *hist)
{
	return verify_range(0, (uintptr_t)addr, len, hist, true);
}

MREG_EXPORT int mreg_verify_pid_range(pid_t pid, uint64_t addr, size_t len,
				      struct mreg_folio_hist *hist)
{
	return verify_range(pid, addr, len, hist, true);
}

/* The folios alone, without pmd_mapped_bytes: before 6.7 that costs a read
 * of the whole smaps, every VMA of the process, which a DPDK process
 * registering in a loop cannot afford. */
int mreg_verify_folios(const void *addr, size_t len,
		       struct mreg_folio_hist *hist)
{
	return verify_range(0, (uintptr_t)addr, len, hist, false);
}

/* Without PFNs: trust the per-size fault counters' deltas. */
int mreg_verify_estimate(const char *stat, const uint64_t *alloc_before,
			 uint64_t folio_size, size_t len,
			 struct mreg_folio_hist *hist)
{
	uint64_t now = 0, bytes;
	unsigned int order;

	memset(hist, 0, sizeof(*hist));
	hist->size = sizeof(*hist);
	hist->page_size = (uint32_t)sysconf(_SC_PAGESIZE);
	hist->method = MREG_VERIFY_ESTIMATE;
	order = mreg_ilog2(folio_size / hist->page_size);
	if (alloc_before && !mreg_thp_stat(stat, folio_size, &now)) {
		bytes = (now - *alloc_before) * folio_size;
		bytes = bytes > len ? len : bytes;
		hist->folios[order] = bytes / folio_size;
		hist->bytes[order] = bytes;
	}
	hist->bytes[0] += len - hist->bytes[order];
	hist->folios[0] += (len - hist->bytes[order]) / hist->page_size;
	return 0;
}

bool mreg_hist_matches(const struct mreg_folio_hist *hist, uint64_t folio,
		       enum mreg_map_level level, uint64_t len)
{
	unsigned int order = mreg_ilog2(folio / hist->page_size);

	if (order >= MREG_HIST_ORDERS || hist->bytes[order] != len)
		return false;
	if (hist->method != MREG_VERIFY_EXACT)
		return true; /* no way to tell PMD from PTE mappings */
	if (level == MREG_MAP_PMD)
		return hist->pmd_mapped_bytes == len;
	return hist->pmd_mapped_bytes == 0;
}

static int size_name(char *buf, size_t len, uint64_t bytes)
{
	if (bytes >= (1ull << 30) && !(bytes % (1ull << 30)))
		return snprintf(buf, len, "%" PRIu64 "G", bytes >> 30);
	if (bytes >= (1ull << 20) && !(bytes % (1ull << 20)))
		return snprintf(buf, len, "%" PRIu64 "M", bytes >> 20);
	return snprintf(buf, len, "%" PRIu64 "K", bytes >> 10);
}

static const char *const method_names[] = {
	[MREG_VERIFY_NONE] = "unverified",
	[MREG_VERIFY_EXACT] = "exact",
	[MREG_VERIFY_ESTIMATE] = "estimate",
};

/* snprintf at @used, or only measure once @buflen is used up. */
static size_t append(char *buf, size_t buflen, size_t used, const char *fmt,
		     ...) MREG_PRINTF(4, 5);

static size_t append(char *buf, size_t buflen, size_t used, const char *fmt,
		     ...)
{
	bool room = used < buflen;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(room ? buf + used : NULL, room ? buflen - used : 0, fmt,
		      ap);
	va_end(ap);
	return used + (n > 0 ? (size_t)n : 0);
}

/* Like snprintf: the length of the whole text, whatever fits in @buf. */
MREG_EXPORT int mreg_folio_hist_format(const struct mreg_folio_hist *hist,
				       char *buf, size_t buflen)
{
	size_t used = 0;
	char name[24];
	int order;

	if (buf && buflen)
		buf[0] = '\0';
	else
		buflen = 0; /* a NULL buf only measures */
	for (order = MREG_HIST_ORDERS - 1; order >= 0; order--) {
		if (!hist->folios[order])
			continue;
		size_name(name, sizeof(name),
			  (uint64_t)hist->page_size << order);
		used = append(buf, buflen, used, "%s:%" PRIu64 " ", name,
			      hist->folios[order]);
	}
	if (hist->pmd_mapped_bytes) {
		size_name(name, sizeof(name), hist->pmd_mapped_bytes);
		used = append(buf, buflen, used, "pmd-mapped:%s ", name);
	}
	if (hist->unbacked_bytes) {
		size_name(name, sizeof(name), hist->unbacked_bytes);
		used = append(buf, buflen, used, "unbacked:%s ", name);
	}
	used = append(buf, buflen, used, "(%s)",
		      method_names[hist->method % 3]);
	return used > INT_MAX ? INT_MAX : (int)used;
}
