// SPDX-License-Identifier: MIT
/*
 * Which folios really back a range: pagemap gives each page's PFN,
 * kpageflags marks compound heads and tails, so walking the tails from a
 * head gives the folio's size. PAGEMAP_SCAN's PAGE_IS_HUGE tells PMD from
 * PTE mappings, which kpageflags cannot.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "internal.h"
#include "pagemap_compat.h"

#define CHUNK		512
#define MAX_FOLIO_PAGES (1ul << (MREG_HIST_ORDERS - 1))

struct folio_walk {
	int pagemap_fd;
	int kpageflags_fd;
	uint64_t head; /* PFN of the current folio's head */
	uint64_t nr;   /* its size in pages, 0 if none yet */
	struct mreg_folio_hist *hist;
};

static int read_u64s(int fd, uint64_t *buf, size_t nr, uint64_t index)
{
	ssize_t n = pread(fd, buf, nr * 8, (off_t)(index * 8));

	if (n < 0)
		return -errno;
	return (int)(n / 8);
}

static int kpf(struct folio_walk *w, uint64_t pfn, uint64_t *flags)
{
	int n = read_u64s(w->kpageflags_fd, flags, 1, pfn);

	return n == 1 ? 0 : (n < 0 ? n : -EIO);
}

/* Walk back from a tail page to its head (bounded by the largest order). */
static int find_head(struct folio_walk *w, uint64_t pfn, uint64_t *head)
{
	uint64_t flags, steps;
	int ret;

	for (steps = 0; steps < MAX_FOLIO_PAGES && pfn; steps++) {
		pfn--;
		ret = kpf(w, pfn, &flags);
		if (ret)
			return ret;
		if (flags & (1ull << KPF_COMPOUND_HEAD)) {
			*head = pfn;
			return 0;
		}
	}
	return -EIO;
}

/* Count the tails after @head in bulk reads. */
static int count_tails(struct folio_walk *w, uint64_t head, uint64_t *nr)
{
	uint64_t flags[CHUNK], pfn = head + 1;
	int n, i;

	*nr = 1;
	while (*nr < MAX_FOLIO_PAGES) {
		n = read_u64s(w->kpageflags_fd, flags, CHUNK, pfn);
		if (n <= 0)
			return n;
		for (i = 0; i < n; i++) {
			if (!(flags[i] & (1ull << KPF_COMPOUND_TAIL)))
				return 0;
			(*nr)++;
		}
		pfn += (uint64_t)n;
	}
	return 0;
}

static int enter_folio(struct folio_walk *w, uint64_t pfn)
{
	uint64_t flags, head = pfn;
	int ret;

	ret = kpf(w, pfn, &flags);
	if (ret)
		return ret;
	w->head = pfn;
	w->nr = 1;
	if (flags & (1ull << KPF_COMPOUND_TAIL)) {
		ret = find_head(w, pfn, &head);
		if (ret)
			return ret;
		flags = 1ull << KPF_COMPOUND_HEAD;
	}
	if (flags & (1ull << KPF_COMPOUND_HEAD)) {
		ret = count_tails(w, head, &w->nr);
		if (ret)
			return ret;
		w->head = head;
	}
	w->hist->folios[mreg_ilog2(w->nr)]++;
	return 0;
}

static int account_page(struct folio_walk *w, uint64_t entry)
{
	uint64_t pfn = entry & PM_PFN_MASK;
	int ret;

	if (!(entry & PM_PRESENT)) {
		w->hist->unbacked_bytes += w->hist->page_size;
		w->nr = 0;
		return 0;
	}
	if (!pfn)
		return -EPERM; /* PFNs are hidden without CAP_SYS_ADMIN */
	if (!w->nr || pfn < w->head || pfn >= w->head + w->nr) {
		ret = enter_folio(w, pfn);
		if (ret)
			return ret;
	}
	w->hist->bytes[mreg_ilog2(w->nr)] += w->hist->page_size;
	return 0;
}

static int walk_pages(struct folio_walk *w, uint64_t first, uint64_t count)
{
	uint64_t entries[CHUNK], done = 0;
	int n, i, ret;

	while (done < count) {
		size_t want = count - done < CHUNK ? count - done : CHUNK;

		n = read_u64s(w->pagemap_fd, entries, want, first + done);
		if (n <= 0)
			return n < 0 ? n : -EIO;
		for (i = 0; i < n; i++) {
			ret = account_page(w, entries[i]);
			if (ret)
				return ret;
		}
		done += (uint64_t)n;
	}
	return 0;
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

static int verify_exact(const void *addr, size_t len,
			struct mreg_folio_hist *hist)
{
	uint64_t page = hist->page_size, start = (uintptr_t)addr;
	struct folio_walk w = {.hist = hist};
	int ret;

	w.pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	w.kpageflags_fd = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
	if (w.pagemap_fd < 0 || w.kpageflags_fd < 0) {
		ret = -EPERM;
		goto out;
	}
	ret = walk_pages(&w, start / page, (len + page - 1) / page);
	if (!ret)
		ret = pmd_mapped(w.pagemap_fd, start, start + len,
				 &hist->pmd_mapped_bytes);
	if (!ret)
		hist->method = MREG_VERIFY_EXACT;
out:
	if (w.pagemap_fd >= 0)
		close(w.pagemap_fd);
	if (w.kpageflags_fd >= 0)
		close(w.kpageflags_fd);
	return ret;
}

MREG_EXPORT int mreg_verify_range(const void *addr, size_t len,
				  struct mreg_folio_hist *hist)
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
	if (!len || (uintptr_t)addr % (uintptr_t)page)
		ret = mreg_fail(-EINVAL, "verify: addr %p len %zu", addr, len);
	else
		ret = verify_exact(addr, len, &h);
	mreg_copy_out(hist, &h, sizeof(h));
	return ret;
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
