// SPDX-License-Identifier: MIT
/*
 * Buffers backed by a chosen folio size. The sysfs policy is narrowed to
 * that size only while the buffer faults in, then put back, so the rest of
 * the system never runs with it. What the kernel really gave is then
 * verified; a buffer that did not get its folios never passes silently.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif

#define BUF_FLAGS \
	(MREG_BUF_ALLOW_FALLBACK | MREG_BUF_KEEP_POLICY | MREG_BUF_SET_POLICY)
#define ATTR_MIN_SIZE offsetof(struct mreg_buf_attr, map_level) + 4

struct mreg_buf {
	void *addr;
	size_t length;
	int fd;
	bool verified;
	bool unoffered; /* ALLOW_FALLBACK to a size this kernel lacks: 4 kB */
	struct mreg_buf_attr attr;
	struct mreg_folio_hist hist;
};

/* Saved system state, put back right after the buffer is populated. */
struct alloc_policy {
	bool locked; /* holds the policy lock (policy.c) */
	struct mreg_thp_policy *thp;
	struct mreg_policy_file hugetlb_nr;
	bool hugetlb_raised;
};

static uint64_t page_size(void)
{
	return (uint64_t)sysconf(_SC_PAGESIZE);
}

static void hugetlb_path(char *buf, size_t len, uint64_t folio_size,
			 const char *file)
{
	snprintf(buf, len,
		 "/sys/kernel/mm/hugepages/hugepages-%" PRIu64 "kB/%s",
		 folio_size >> 10, file);
}

static bool thp_size_offered(uint64_t folio_size, const char *control)
{
	char path[160];

	snprintf(path, sizeof(path), THP_SYSFS "/hugepages-%" PRIu64 "kB/%s",
		 folio_size >> 10, control);
	return !access(path, F_OK);
}

/* Before Linux 6.8 the PMD size is the only THP size, and has no directory. */
static bool pmd_thp_offered(const char *control)
{
	char path[160];

	snprintf(path, sizeof(path), THP_SYSFS "/%s", control);
	return !mreg_thp_per_size() && !access(path, F_OK);
}

static int no_mthp(const struct mreg_buf_attr *a)
{
	return mreg_fail(-EOPNOTSUPP,
			 "buf: folio_size %" PRIu64
			 " kB needs multi-size THP (mTHP, Linux 6.8): this "
			 "kernel offers %" PRIu64
			 " kB THP only, and 4 kB pages",
			 a->folio_size >> 10, mreg_pmd_size() >> 10);
}

static int check_folio_size(const struct mreg_buf_attr *a)
{
	bool pmd = a->folio_size == mreg_pmd_size();
	char path[160];

	if (!mreg_is_pow2(a->folio_size) || a->folio_size < page_size())
		return mreg_fail(-EINVAL,
				 "buf: folio_size %" PRIu64
				 " is not a power of two >= page size",
				 a->folio_size);
	if (a->folio_size == page_size())
		return a->backing == MREG_BACKING_HUGETLB
			       ? mreg_fail(-EINVAL, "buf: hugetlb needs a huge "
						    "folio_size")
			       : 0;
	switch (a->backing) {
	case MREG_BACKING_ANON:
		if (thp_size_offered(a->folio_size, "enabled") ||
		    (pmd && pmd_thp_offered("enabled")))
			return 0;
		if (!mreg_thp_per_size() && !pmd)
			return no_mthp(a);
		break;
	case MREG_BACKING_SHMEM:
		if (thp_size_offered(a->folio_size, "shmem_enabled") ||
		    (pmd && pmd_thp_offered("shmem_enabled")))
			return 0;
		if (!mreg_thp_per_size() && !pmd)
			return no_mthp(a);
		break;
	case MREG_BACKING_MEMFD:
		if (pmd)
			return 0;
		break;
	case MREG_BACKING_HUGETLB:
		hugetlb_path(path, sizeof(path), a->folio_size, "nr_hugepages");
		if (!access(path, F_OK))
			return 0;
		break;
	}
	return mreg_fail(-EOPNOTSUPP,
			 "buf: folio_size %" PRIu64
			 " kB is not offered for backing %u by this kernel",
			 a->folio_size >> 10, a->backing);
}

static int check_attr(const struct mreg_buf_attr *a)
{
	uint64_t pmd = mreg_pmd_size();

	if (a->size < ATTR_MIN_SIZE)
		return mreg_fail(-EINVAL, "buf: attr->size %u too small",
				 a->size);
	if (a->flags & ~BUF_FLAGS)
		return mreg_fail(-EINVAL, "buf: unknown flags 0x%x",
				 a->flags & ~BUF_FLAGS);
	if (!a->length)
		return mreg_fail(-EINVAL, "buf: length is zero");
	if (a->backing > MREG_BACKING_HUGETLB)
		return mreg_fail(-EINVAL, "buf: unknown backing %u",
				 a->backing);
	if (a->map_level > MREG_MAP_PMD)
		return mreg_fail(-EINVAL, "buf: unknown map_level %u",
				 a->map_level);
	if (a->map_level == MREG_MAP_PMD && a->folio_size != pmd &&
	    a->backing != MREG_BACKING_HUGETLB)
		return mreg_fail(-EINVAL,
				 "buf: map_level PMD needs a %" PRIu64
				 " kB folio_size",
				 pmd >> 10);
	if (a->map_level == MREG_MAP_PTE && a->backing == MREG_BACKING_HUGETLB)
		return mreg_fail(-EINVAL, "buf: hugetlb cannot be PTE-mapped");
	if (a->length > SIZE_MAX - 2 * a->folio_size)
		return mreg_fail(-EOVERFLOW,
				 "buf: length %" PRIu64 " overflows",
				 a->length);
	return check_folio_size(a);
}

static enum mreg_map_level effective_level(const struct mreg_buf_attr *a)
{
	if (a->map_level != MREG_MAP_DEFAULT)
		return a->map_level;
	if (a->backing == MREG_BACKING_HUGETLB ||
	    a->folio_size == mreg_pmd_size())
		return MREG_MAP_PMD;
	return MREG_MAP_PTE;
}

/*
 * Top up the hugetlb pool; surplus pages return when the buffer is freed.
 * The pool's size is saved to the record before it is raised.
 */
static int hugetlb_raise(struct alloc_policy *pol, uint64_t folio_size,
			 uint64_t need)
{
	char path[128], nr[32];
	uint64_t nr_pages, free_pages;
	int ret;

	hugetlb_path(path, sizeof(path), folio_size, "nr_hugepages");
	ret = mreg_policy_file_read(&pol->hugetlb_nr, path);
	if (!ret)
		nr_pages = strtoull(pol->hugetlb_nr.raw, NULL, 10);
	hugetlb_path(path, sizeof(path), folio_size, "free_hugepages");
	if (!ret)
		ret = mreg_sysfs_read_u64(path, &free_pages);
	if (ret || free_pages >= need)
		return ret;
	ret = mreg_policy_record(&pol->hugetlb_nr, 1);
	if (ret)
		return ret;
	snprintf(nr, sizeof(nr), "%" PRIu64, nr_pages + need - free_pages);
	pol->hugetlb_raised = true; /* a write that failed halfway, too */
	ret = mreg_sysfs_write(pol->hugetlb_nr.path, nr);
	if (ret)
		return mreg_fail(ret, "buf: raise %s to %s: %s",
				 pol->hugetlb_nr.path, nr, strerror(-ret));
	return 0;
}

/*
 * The policy is global: two allocations narrowing it at once would each
 * restore the other's narrowed view, hence the lock (policy.c).
 */
static int policy_apply(struct alloc_policy *pol, const struct mreg_buf_attr *a,
			uint64_t length)
{
	int ret;

	if (!(a->flags & MREG_BUF_SET_POLICY))
		return 0;
	if (geteuid())
		return mreg_fail(-EPERM, "buf: MREG_BUF_SET_POLICY writes "
					 "sysfs: needs root");
	ret = mreg_policy_lock();
	if (ret)
		return ret;
	pol->locked = true;
	if (a->backing == MREG_BACKING_HUGETLB)
		return hugetlb_raise(pol, a->folio_size,
				     length / a->folio_size);
	ret = mreg_thp_policy_save(&pol->thp);
	if (ret)
		return ret;
	if (a->backing == MREG_BACKING_ANON)
		return mreg_thp_select_anon(a->folio_size, MREG_THP_MADVISE);
	return mreg_thp_select_shmem(a->folio_size);
}

static int policy_restore(struct alloc_policy *pol)
{
	int ret = mreg_thp_policy_restore(pol->thp), put;

	pol->thp = NULL;
	if (pol->hugetlb_raised) {
		put = mreg_policy_file_put(&pol->hugetlb_nr);
		if (put < 0 && !ret)
			ret = mreg_fail(put, "buf: restore %s: %s",
					pol->hugetlb_nr.path, strerror(-put));
		pol->hugetlb_raised = false;
	}
	if (pol->locked)
		mreg_policy_unlock(!ret);
	pol->locked = false;
	return ret;
}

/*
 * An address range aligned to @align, held by a PROT_NONE reservation,
 * with a PROT_NONE guard page left on each side once the buffer is mapped
 * over it: the buffer's VMA then never merges with a neighbour, so the
 * per-VMA counters of smaps describe the buffer alone (folio.c).
 */
static void *reserve_aligned(size_t length, size_t align)
{
	size_t guard = page_size(), span = length + align + 2 * guard;
	uint8_t *base, *aligned;

	base = mmap(NULL, span, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return NULL;
	aligned = (uint8_t *)(((uintptr_t)base + guard + align - 1) &
			      ~(align - 1));
	if (aligned - guard > base)
		munmap(base, (size_t)(aligned - guard - base));
	munmap(aligned + length + guard,
	       (size_t)(base + span - (aligned + length + guard)));
	return aligned;
}

static void unreserve(void *addr, size_t length)
{
	size_t guard = page_size();

	munmap((uint8_t *)addr - guard, length + 2 * guard);
}

static int map_flags(const struct mreg_buf_attr *a)
{
	int flags = MAP_FIXED;

	switch (a->backing) {
	case MREG_BACKING_ANON:
		return flags | MAP_PRIVATE | MAP_ANONYMOUS;
	case MREG_BACKING_SHMEM:
		return flags | MAP_SHARED | MAP_ANONYMOUS;
	case MREG_BACKING_MEMFD:
		return flags | MAP_SHARED;
	default:
		return flags | MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB |
		       (int)(mreg_ilog2(a->folio_size) << MAP_HUGE_SHIFT);
	}
}

static int open_memfd(struct mreg_buf *buf)
{
	buf->fd = memfd_create("mreg", MFD_CLOEXEC);
	if (buf->fd < 0)
		return mreg_fail(-errno, "buf: memfd_create: %s",
				 strerror(errno));
	if (ftruncate(buf->fd, (off_t)buf->length))
		return mreg_fail(-errno, "buf: ftruncate memfd to %zu: %s",
				 buf->length, strerror(errno));
	return 0;
}

static int map_buffer(struct mreg_buf *buf)
{
	const struct mreg_buf_attr *a = &buf->attr;
	void *want, *got;
	int ret;

	if (a->backing == MREG_BACKING_MEMFD) {
		ret = open_memfd(buf);
		if (ret)
			return ret;
	}
	want = reserve_aligned(buf->length, a->folio_size);
	if (!want)
		return mreg_fail(-ENOMEM, "buf: no %zu bytes of address space",
				 buf->length);
	got = mmap(want, buf->length, PROT_READ | PROT_WRITE, map_flags(a),
		   buf->fd, 0);
	if (got == MAP_FAILED) {
		ret = -errno;
		unreserve(want, buf->length);
		return mreg_fail(ret, "buf: mmap %zu bytes: %s", buf->length,
				 strerror(-ret));
	}
	buf->addr = got;
	return 0;
}

/*
 * MADV_POPULATE_WRITE is Linux 5.14: before it, a write to each page
 * faults the buffer in. Hugetlb cannot SIGBUS here: its pages were
 * reserved by mmap(), which had no MAP_NORESERVE.
 */
static int populate_write(struct mreg_buf *buf)
{
	volatile uint8_t *p = buf->addr;
	size_t off, step = page_size();

	if (!madvise(buf->addr, buf->length, MADV_POPULATE_WRITE))
		return 0;
	if (errno != EINVAL)
		return mreg_fail(-errno,
				 "buf: MADV_POPULATE_WRITE on %zu "
				 "bytes: %s",
				 buf->length, strerror(errno));
	if (buf->attr.backing == MREG_BACKING_HUGETLB)
		step = buf->attr.folio_size;
	for (off = 0; off < buf->length; off += step)
		p[off] = 0;
	return 0;
}

static int madv(struct mreg_buf *buf, int advice, const char *name)
{
	if (!madvise(buf->addr, buf->length, advice))
		return 0;
	return mreg_fail(-errno, "buf: %s on %zu bytes: %s", name, buf->length,
			 strerror(errno));
}

/*
 * Fault the buffer in with the THP policy as it stands.  Sub-PMD folios
 * are then pinned to their layout: once the range is VM_NOHUGEPAGE,
 * khugepaged no longer collapses it into PMD-sized folios, which it
 * otherwise does within seconds of MADV_HUGEPAGE memory going idle.
 */
static int populate(struct mreg_buf *buf)
{
	uint64_t folio = buf->attr.folio_size;
	int ret = 0;

	if (buf->attr.backing == MREG_BACKING_HUGETLB)
		return populate_write(buf);
	if (buf->unoffered)
		folio = page_size();
	ret = folio == page_size()
		      ? madv(buf, MADV_NOHUGEPAGE, "MADV_NOHUGEPAGE")
		      : madv(buf, MADV_HUGEPAGE, "MADV_HUGEPAGE");
	if (!ret)
		ret = populate_write(buf);
	if (!ret && folio != page_size() && folio < mreg_pmd_size())
		ret = madv(buf, MADV_NOHUGEPAGE, "MADV_NOHUGEPAGE");
	return ret;
}

/*
 * Keep each PMD-sized folio but map it with PTEs. Anonymous memory: a
 * VMA boundary inside a PMD splits the mapping, not the folio, so one
 * page's madvise(MADV_RANDOM), undone by MADV_NORMAL, does it without
 * touching the PTEs' write bits (an mprotect() round trip clears them,
 * and 5.10's write fault then copies the page out of the folio). Shared
 * memory: with VM_NOHUGEPAGE the fault path refuses PMD mappings, so zap
 * and fault back in.
 */
static int split_pmd_mappings(struct mreg_buf *buf)
{
	size_t pmd = buf->attr.folio_size, off, page = page_size();
	uint8_t *p = buf->addr;
	int ret;

	ret = madv(buf, MADV_NOHUGEPAGE, "MADV_NOHUGEPAGE");
	if (ret || buf->attr.backing != MREG_BACKING_ANON) {
		if (!ret)
			ret = madv(buf, MADV_DONTNEED, "MADV_DONTNEED");
		return ret ? ret : populate_write(buf);
	}
	for (off = 0; off < buf->length; off += pmd)
		if (madvise(p + off, page, MADV_RANDOM) ||
		    madvise(p + off, page, MADV_NORMAL))
			return mreg_fail(-errno, "buf: split PMD at +%zu: %s",
					 off, strerror(errno));
	return 0;
}

/* The per-size counter that moves when this backing gets a folio. */
static const char *alloc_stat(const struct mreg_buf_attr *a)
{
	return a->backing == MREG_BACKING_ANON ? "anon_fault_alloc"
					       : "shmem_alloc";
}

/*
 * Policy in, fault in, policy out: the narrowed policy never outlives us,
 * and if we are killed in between, the record policy.c wrote before
 * narrowing it lets the next run put it back.
 */
static int fill(struct mreg_buf *buf, uint64_t *alloc_before)
{
	struct alloc_policy pol = {0};
	int ret = 0;

	if (!buf->unoffered)
		ret = policy_apply(&pol, &buf->attr, buf->length);
	if (!ret && mreg_thp_stat(alloc_stat(&buf->attr), buf->attr.folio_size,
				  alloc_before))
		*alloc_before = 0;
	if (!ret)
		ret = map_buffer(buf);
	if (!ret)
		ret = populate(buf);
	if (!ret && buf->attr.folio_size == mreg_pmd_size() &&
	    effective_level(&buf->attr) == MREG_MAP_PTE)
		ret = split_pmd_mappings(buf);
	if (policy_restore(&pol) && !ret)
		ret = mreg_fail(-EIO, "buf: could not restore THP policy");
	return ret;
}

/*
 * "; hugepages-64kB/enabled is [never]": the knob that decides for @size,
 * followed to the top-level one when it says inherit.  With @only_on,
 * nothing for a size that is off.
 */
static size_t knob_note(char *out, size_t len, uint64_t size,
			const char *control, bool only_on)
{
	char path[160], val[32];

	if (mreg_thp_per_size())
		snprintf(path, sizeof(path),
			 THP_SYSFS "/hugepages-%" PRIu64 "kB/%s", size >> 10,
			 control);
	else /* before 6.8: the top-level knob is the PMD size's */
		snprintf(path, sizeof(path), THP_SYSFS "/%s", control);
	if (mreg_sysfs_read_choice(path, val, sizeof(val)))
		return 0;
	if (!strcmp(val, "inherit")) {
		snprintf(path, sizeof(path), THP_SYSFS "/%s", control);
		if (mreg_sysfs_read_choice(path, val, sizeof(val)))
			return 0;
	}
	if (only_on && (!strcmp(val, "never") || !strcmp(val, "deny")))
		return 0;
	return (size_t)snprintf(out, len, "; %s is [%s]", path, val);
}

/*
 * Which policy stood between the caller and the folios asked for: the
 * asked size's own knob, and every larger size's, since the kernel takes
 * the largest enabled size that fits an aligned range.
 */
static void policy_hint(const struct mreg_buf_attr *a, size_t length, char *out,
			size_t len)
{
	const char *control =
		a->backing == MREG_BACKING_ANON ? "enabled" : "shmem_enabled";
	uint64_t sizes[32], free_pages = 0;
	size_t used = 0;
	char path[128];
	int n, i;

	out[0] = '\0';
	if (a->backing == MREG_BACKING_HUGETLB) {
		hugetlb_path(path, sizeof(path), a->folio_size,
			     "free_hugepages");
		mreg_sysfs_read_u64(path, &free_pages);
		snprintf(out, len,
			 "; %s is %" PRIu64 ", %zu needed (raise nr_hugepages, "
			 "or pass MREG_BUF_SET_POLICY as root)",
			 path, free_pages, length / a->folio_size);
		return;
	}
	if (a->folio_size > page_size())
		used += knob_note(out + used, len - used, a->folio_size,
				  control, false);
	n = mreg_thp_sizes(sizes, 32);
	for (i = 0; i < n && used < len; i++)
		if (sizes[i] > a->folio_size)
			used += knob_note(out + used, len - used, sizes[i],
					  control, true);
	if (used < len && !(a->flags & MREG_BUF_SET_POLICY))
		snprintf(out + used, len - used,
			 "; MREG_BUF_SET_POLICY (root) narrows the policy for "
			 "the allocation");
}

/* Asked for PTE-mapped shared THP, and the kernel mapped it by PMD. */
static bool shared_pmd_forced(const struct mreg_buf *buf)
{
	return buf->attr.backing != MREG_BACKING_ANON &&
	       buf->attr.folio_size == mreg_pmd_size() &&
	       effective_level(&buf->attr) == MREG_MAP_PTE &&
	       buf->hist.method == MREG_VERIFY_EXACT &&
	       buf->hist.pmd_mapped_bytes == buf->length;
}

static int verify(struct mreg_buf *buf, uint64_t alloc_before)
{
	char text[256], hint[512];
	int ret;

	buf->hist.size = sizeof(buf->hist);
	ret = mreg_verify_range(buf->addr, buf->length, &buf->hist);
	if (ret == -EPERM)
		ret = mreg_verify_estimate(alloc_stat(&buf->attr),
					   alloc_before ? &alloc_before : NULL,
					   buf->attr.folio_size, buf->length,
					   &buf->hist);
	if (ret)
		return ret;
	buf->verified =
		mreg_hist_matches(&buf->hist, buf->attr.folio_size,
				  effective_level(&buf->attr), buf->length);
	if (buf->verified)
		return 0;
	mreg_folio_hist_format(&buf->hist, text, sizeof(text));
	if (shared_pmd_forced(buf))
		return mreg_fail(-EOPNOTSUPP,
				 "buf: this kernel maps shared memory's PMD-"
				 "sized folios with a PMD even under "
				 "MADV_NOHUGEPAGE (Linux 6.12 stopped that): "
				 "no PTE-mapped %" PRIu64 " kB folios on "
				 "backing %u; got %s",
				 buf->attr.folio_size >> 10, buf->attr.backing,
				 text);
	policy_hint(&buf->attr, buf->length, hint, sizeof(hint));
	if (buf->attr.flags & MREG_BUF_ALLOW_FALLBACK) {
		mreg_log(MREG_LOG_WARN,
			 "buf: wanted %" PRIu64 " kB folios, got %s%s",
			 buf->attr.folio_size >> 10, text, hint);
		return 0;
	}
	return mreg_fail(
		-EAGAIN, "buf: wanted %" PRIu64 " kB %s folios, got %s%s",
		buf->attr.folio_size >> 10,
		effective_level(&buf->attr) == MREG_MAP_PMD ? "PMD-mapped"
							    : "PTE-mapped",
		text, hint);
}

MREG_EXPORT int mreg_buf_alloc(const struct mreg_buf_attr *attr,
			       struct mreg_buf **out)
{
	uint64_t alloc_before = 0;
	struct mreg_buf *buf;
	bool unoffered;
	int ret;

	if (!attr || !out)
		return mreg_fail(-EINVAL, "buf: attr and out are required");
	ret = check_attr(attr);
	/* Before mTHP, a fallback buffer asked for an mTHP size gets 4 kB. */
	unoffered =
		ret == -EOPNOTSUPP && (attr->flags & MREG_BUF_ALLOW_FALLBACK) &&
		!mreg_thp_per_size() && attr->backing != MREG_BACKING_HUGETLB;
	if (ret && !unoffered)
		return ret;
	buf = calloc(1, sizeof(*buf));
	if (!buf)
		return -ENOMEM;
	buf->unoffered = unoffered;
	buf->fd = -1;
	memcpy(&buf->attr, attr, ATTR_MIN_SIZE);
	buf->length =
		(attr->length + attr->folio_size - 1) & ~(attr->folio_size - 1);
	ret = fill(buf, &alloc_before);
	if (!ret)
		ret = verify(buf, alloc_before);
	if (ret) {
		mreg_buf_free(buf);
		return ret;
	}
	*out = buf;
	return 0;
}

MREG_EXPORT void mreg_buf_free(struct mreg_buf *buf)
{
	if (!buf)
		return;
	if (buf->addr)
		unreserve(buf->addr, buf->length);
	if (buf->fd >= 0)
		close(buf->fd);
	free(buf);
}

MREG_EXPORT void *mreg_buf_addr(const struct mreg_buf *buf)
{
	return buf->addr;
}

MREG_EXPORT size_t mreg_buf_length(const struct mreg_buf *buf)
{
	return buf->length;
}

MREG_EXPORT int mreg_buf_fd(const struct mreg_buf *buf)
{
	return buf->fd;
}

MREG_EXPORT const struct mreg_folio_hist *
mreg_buf_hist(const struct mreg_buf *buf)
{
	return &buf->hist;
}

MREG_EXPORT int mreg_buf_verified(const struct mreg_buf *buf)
{
	return buf->verified;
}
