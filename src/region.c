// SPDX-License-Identifier: MIT
/*
 * Domains and regions: argument checks happen here, once, so each backend
 * only talks to its kernel interface and times that call alone.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "iova.h"
#include "pieces.h"

#define DOMAIN_MASK                                               \
	(MREG_DOMAIN_ATTR_DEVICE | MREG_DOMAIN_ATTR_MAX_REGIONS | \
	 MREG_DOMAIN_ATTR_ACCESS | MREG_DOMAIN_ATTR_ADOPT |       \
	 MREG_DOMAIN_ATTR_SLOT_BASE)
#define REGION_MASK                                         \
	(MREG_REGION_ATTR_ACCESS | MREG_REGION_ATTR_IOVA |  \
	 MREG_REGION_ATTR_IOVA_VA | MREG_REGION_ATTR_SLOT | \
	 MREG_REGION_ATTR_PIECE_SIZE | MREG_REGION_ATTR_THREADS)
#define REGION_ATTR_MIN_SIZE offsetof(struct mreg_region_attr, reserved)
/* The fields of MREG_0.3: piece_size, threads. */
#define REGION_ATTR_SIZE_V3 sizeof(struct mreg_region_attr)
#define SPLIT_MASK	    (MREG_REGION_ATTR_PIECE_SIZE | MREG_REGION_ATTR_THREADS)
/* What one thread's share of a region is rounded up to. */
#define SHARE_ALIGN (2ull << 20)
#define ACCESS_MASK                                          \
	(MREG_ACCESS_LOCAL_WRITE | MREG_ACCESS_REMOTE_READ | \
	 MREG_ACCESS_REMOTE_WRITE)
#define DEFAULT_MAX_REGIONS 64

static const struct mreg_backend_ops *const backends[] = {
	&mreg_io_uring_ops,
#ifdef MREG_HAVE_VERBS
	&mreg_verbs_ops,
#endif
#ifdef MREG_HAVE_VFIO
	&mreg_vfio_ops,	    &mreg_iommufd_ops,
#endif
#ifdef MREG_HAVE_KMOD
	&mreg_kmod_ops,
#endif
#ifdef MREG_HAVE_DPDK
	&mreg_dpdk_ops,
#endif
};

#define BACKEND_LAST MREG_BACKEND_DPDK

static const char *const backend_names[] = {
	[MREG_BACKEND_IO_URING] = "io_uring",
	[MREG_BACKEND_VERBS] = "verbs",
	[MREG_BACKEND_VFIO] = "vfio",
	[MREG_BACKEND_IOMMUFD] = "iommufd",
	[MREG_BACKEND_KMOD] = "kmod",
	[MREG_BACKEND_DPDK] = "dpdk",
};

static const struct mreg_backend_ops *find_backend(int type)
{
	size_t i;

	for (i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if ((int)backends[i]->type == type)
			return backends[i];
	return NULL;
}

MREG_EXPORT int mreg_backend_supported(enum mreg_backend backend)
{
	const struct mreg_backend_ops *ops = find_backend(backend);

	return ops && ops->supported();
}

MREG_EXPORT const char *mreg_backend_name(enum mreg_backend backend)
{
	if (backend < MREG_BACKEND_IO_URING || backend > BACKEND_LAST)
		return "unknown";
	return backend_names[backend];
}

MREG_EXPORT int mreg_backend_parse(const char *name)
{
	int i;

	for (i = MREG_BACKEND_IO_URING; name && i <= BACKEND_LAST; i++)
		if (!strcmp(name, backend_names[i]))
			return i;
	return -EINVAL;
}

static int check_domain_attr(const struct mreg_domain_attr *attr,
			     const struct mreg_backend_ops **ops)
{
	if (attr->comp_mask & ~DOMAIN_MASK)
		return mreg_fail(-EINVAL, "domain: unknown comp_mask bits 0x%x",
				 attr->comp_mask & ~DOMAIN_MASK);
	if ((attr->comp_mask & MREG_DOMAIN_ATTR_ACCESS) &&
	    (attr->access & ~ACCESS_MASK))
		return mreg_fail(-EINVAL, "domain: unknown access bits 0x%x",
				 attr->access & ~ACCESS_MASK);
	if ((attr->comp_mask & MREG_DOMAIN_ATTR_MAX_REGIONS) &&
	    !attr->max_regions)
		return mreg_fail(-EINVAL, "domain: max_regions is zero");
	*ops = find_backend((int)attr->backend);
	if (!*ops)
		return mreg_fail(-EOPNOTSUPP,
				 "domain: backend %u (%s) is not built into "
				 "this library",
				 attr->backend,
				 mreg_backend_name(attr->backend));
	if ((attr->comp_mask & MREG_DOMAIN_ATTR_SLOT_BASE) &&
	    attr->backend != MREG_BACKEND_IO_URING)
		return mreg_fail(-EINVAL, "domain: slot_base is for io_uring");
	/* A field set without its bit is ignored by the rules, but these
	 * two mistakes would let mreg use objects or slots the caller
	 * meant to keep: say so instead. */
	if (attr->slot_base && !(attr->comp_mask & MREG_DOMAIN_ATTR_SLOT_BASE))
		return mreg_fail(-EINVAL,
				 "domain: slot_base %u is set but "
				 "MREG_DOMAIN_ATTR_SLOT_BASE is not",
				 attr->slot_base);
	if (attr->native && !mreg_adopted(attr))
		return mreg_fail(-EINVAL, "domain: native is set but "
					  "MREG_DOMAIN_ATTR_ADOPT is not");
	return 0;
}

MREG_EXPORT int mreg_domain_open(const struct mreg_domain_attr *attr,
				 struct mreg_domain **out)
{
	const struct mreg_backend_ops *ops = NULL;
	struct mreg_domain *d;
	int ret;

	if (!attr || !out)
		return mreg_fail(-EINVAL, "domain: attr and out are required");
	ret = check_domain_attr(attr, &ops);
	if (ret)
		return ret;
	d = calloc(1, sizeof(*d));
	if (!d)
		return mreg_fail(-ENOMEM, "domain: out of memory");
	d->ops = ops;
	d->max_regions = attr->comp_mask & MREG_DOMAIN_ATTR_MAX_REGIONS
				 ? attr->max_regions
				 : DEFAULT_MAX_REGIONS;
	d->access = attr->comp_mask & MREG_DOMAIN_ATTR_ACCESS
			    ? attr->access
			    : MREG_ACCESS_LOCAL_WRITE;
	pthread_mutex_init(&d->lock, NULL);
	ret = ops->domain_open(d, attr);
	if (ret) {
		pthread_mutex_destroy(&d->lock);
		free(d);
		return ret;
	}
	*out = d;
	return 0;
}

/*
 * Undo what failed registrations left behind, outside the lock (the
 * backends' dereg() takes it); those that still fail stay.  Return: how
 * many were undone.
 */
static uint32_t retry_stuck(struct mreg_domain *d)
{
	struct mreg_region *r, *next, *keep = NULL;
	uint32_t undone = 0;
	uint64_t ns = 0;

	mreg_domain_lock(d);
	r = d->stuck;
	d->stuck = NULL;
	mreg_domain_unlock(d);
	for (; r; r = next) {
		next = r->next_stuck;
		if (mreg_pieces_deregister(r, &ns)) {
			r->next_stuck = keep;
			keep = r;
			continue;
		}
		mreg_pieces_free(r);
		free(r);
		undone++;
	}
	mreg_domain_lock(d);
	for (; keep; keep = next) {
		next = keep->next_stuck;
		keep->next_stuck = d->stuck;
		d->stuck = keep;
	}
	d->nr_regions -= undone;
	mreg_domain_unlock(d);
	return undone;
}

MREG_EXPORT int mreg_domain_close(struct mreg_domain *d)
{
	uint32_t busy, caches;

	if (!d)
		return 0;
	retry_stuck(d);
	mreg_domain_lock(d);
	busy = d->nr_regions;
	caches = d->nr_caches;
	mreg_domain_unlock(d);
	if (caches)
		return mreg_fail(-EBUSY,
				 "domain: %u registration cache(s) open on it: "
				 "mreg_cache_close() first",
				 caches);
	if (busy && d->stuck)
		return mreg_fail(
			-EBUSY,
			"domain: %u region(s) still registered, pieces "
			"of a failed registration among them that "
			"could not be undone yet",
			busy);
	if (busy)
		return mreg_fail(-EBUSY,
				 "domain: %u region(s) still registered", busy);
	d->ops->domain_close(d);
	pthread_mutex_destroy(&d->lock);
	free(d);
	return 0;
}

MREG_EXPORT void *mreg_domain_native(struct mreg_domain *d)
{
	return d ? d->native : NULL;
}

const char *mreg_reg_hint(int err)
{
	switch (err) {
	case -EFAULT:
		return " (addr..len not fully mapped, PROT_NONE, or "
		       "VM_IO/PFNMAP)";
	case -ENOMEM:
		return " (out of memory, or len above RLIMIT_MEMLOCK without "
		       "CAP_IPC_LOCK)";
	case -EPERM:
		return " (access flags not allowed for this mapping?)";
	default:
		return "";
	}
}

/* Backends other than verbs take whole pages only. */
static int check_range(const struct mreg_domain *d, const void *addr,
		       uint64_t len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);

	if (!len)
		return mreg_fail(-EINVAL, "register: len is zero");
	if ((uintptr_t)addr > UINTPTR_MAX - len)
		return mreg_fail(-EOVERFLOW,
				 "register: addr %p + len %llu overflows", addr,
				 (unsigned long long)len);
	if (d->ops->type == MREG_BACKEND_VERBS)
		return 0;
	if ((uintptr_t)addr % page)
		return mreg_fail(-EINVAL,
				 "register: addr %p is not page-aligned (%s "
				 "pins whole pages)",
				 addr, d->ops->name);
	if (len % page)
		return mreg_fail(-EINVAL,
				 "register: len %llu is not a multiple of the "
				 "page size (%s pins whole pages)",
				 (unsigned long long)len, d->ops->name);
	return 0;
}

static bool has_iova(enum mreg_backend b)
{
	return b == MREG_BACKEND_VFIO || b == MREG_BACKEND_IOMMUFD ||
	       b == MREG_BACKEND_DPDK;
}

static int check_split_attr(const struct mreg_region_attr *a)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

	if ((a->comp_mask & SPLIT_MASK) && a->size < REGION_ATTR_SIZE_V3)
		return mreg_fail(-EINVAL,
				 "register: attr size %u has no piece_size "
				 "and threads (%zu bytes needed)",
				 a->size, REGION_ATTR_SIZE_V3);
	if (a->size >= REGION_ATTR_SIZE_V3 && a->reserved2)
		return mreg_fail(-EINVAL, "register: attr reserved2 is not 0");
	if ((a->comp_mask & MREG_REGION_ATTR_PIECE_SIZE) &&
	    (!a->piece_size || a->piece_size % page))
		return mreg_fail(-EINVAL,
				 "register: piece_size %llu is not a "
				 "non-zero multiple of the page size",
				 (unsigned long long)a->piece_size);
	if ((a->comp_mask & MREG_REGION_ATTR_THREADS) &&
	    (!a->threads || a->threads > MREG_REGION_THREADS_MAX))
		return mreg_fail(-EINVAL, "register: threads %u is not 1..%u",
				 a->threads, MREG_REGION_THREADS_MAX);
	if ((a->comp_mask & SPLIT_MASK) &&
	    (a->comp_mask & MREG_REGION_ATTR_SLOT))
		return mreg_fail(-EINVAL, "register: a fixed slot cannot be "
					  "split into pieces");
	return 0;
}

static int check_region_attr(const struct mreg_domain *d,
			     const struct mreg_region_attr *a)
{
	uint32_t iova = MREG_REGION_ATTR_IOVA | MREG_REGION_ATTR_IOVA_VA;
	int ret;

	if (a->size < REGION_ATTR_MIN_SIZE)
		return mreg_fail(-EINVAL, "register: attr size %u too small",
				 a->size);
	if (a->comp_mask & ~REGION_MASK)
		return mreg_fail(-EINVAL,
				 "register: unknown comp_mask bits 0x%x",
				 a->comp_mask & ~REGION_MASK);
	if (a->size >= offsetof(struct mreg_region_attr, piece_size) &&
	    a->reserved)
		return mreg_fail(-EINVAL, "register: attr reserved is not 0");
	if ((a->comp_mask & MREG_REGION_ATTR_ACCESS) &&
	    (a->access & ~ACCESS_MASK))
		return mreg_fail(-EINVAL, "register: unknown access bits 0x%x",
				 a->access & ~ACCESS_MASK);
	if ((a->comp_mask & iova) == iova)
		return mreg_fail(-EINVAL,
				 "register: IOVA and IOVA_VA both set");
	if ((a->comp_mask & iova) && !has_iova(d->ops->type))
		return mreg_fail(-EINVAL,
				 "register: an IOVA is for vfio, iommufd and "
				 "dpdk, not %s",
				 d->ops->name);
	if ((a->comp_mask & MREG_REGION_ATTR_SLOT) &&
	    d->ops->type != MREG_BACKEND_IO_URING)
		return mreg_fail(-EINVAL,
				 "register: a slot is for io_uring, "
				 "not %s",
				 d->ops->name);
	ret = check_split_attr(a);
	return ret ? ret : check_range(d, a->addr, a->length);
}

/* Count the region in before registering it, so that concurrent
 * registrations cannot overshoot max_regions together. */
static int reserve_region(struct mreg_domain *d)
{
	int ret = 0;

	mreg_domain_lock(d);
	if (d->nr_regions >= d->max_regions)
		ret = -ENOSPC;
	else
		d->nr_regions++;
	mreg_domain_unlock(d);
	if (ret)
		return mreg_fail(ret,
				 "register: domain holds max_regions "
				 "(%u) regions",
				 d->max_regions);
	return 0;
}

static void unreserve_region(struct mreg_domain *d)
{
	mreg_domain_lock(d);
	d->nr_regions--;
	mreg_domain_unlock(d);
}

static struct mreg_region *new_region(struct mreg_domain *d,
				      const struct mreg_region_attr *a)
{
	struct mreg_region *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->domain = d;
	r->info.size = sizeof(r->info);
	r->info.addr = (uintptr_t)a->addr;
	r->info.length = a->length;
	r->comp_mask = a->comp_mask;
	r->access =
		a->comp_mask & MREG_REGION_ATTR_ACCESS ? a->access : d->access;
	r->want_slot = a->slot;
	r->want_iova = a->comp_mask & MREG_REGION_ATTR_IOVA_VA
			       ? (uintptr_t)a->addr
			       : a->iova;
	return r;
}

static uint32_t attr_threads(const struct mreg_region_attr *a)
{
	return a->comp_mask & MREG_REGION_ATTR_THREADS ? a->threads : 1;
}

/*
 * The piece size: the caller's, else the backend's limit, brought down
 * to one share per thread when threads were asked for.  0: no split.
 */
static uint64_t piece_size(const struct mreg_domain *d,
			   const struct mreg_region_attr *a)
{
	uint64_t piece = d->ops->piece_max ? d->ops->piece_max(d) : 0;
	uint32_t threads = attr_threads(a);
	uint64_t share;

	if (a->comp_mask & MREG_REGION_ATTR_PIECE_SIZE)
		return a->piece_size;
	if (threads > 1) {
		share = (a->length + threads - 1) / threads;
		share = (share + SHARE_ALIGN - 1) / SHARE_ALIGN * SHARE_ALIGN;
		if (!piece || share < piece)
			piece = share;
	}
	return piece;
}

static int do_register(struct mreg_domain *d, struct mreg_region *r,
		       const struct mreg_region_attr *a)
{
	uint64_t piece = piece_size(d, a);
	int ret;

	if (piece && piece < a->length) {
		ret = mreg_pieces_layout(r, piece);
		if (ret)
			return ret;
	}
	if (!r->nr_pieces)
		return d->ops->reg(d, r);
	ret = mreg_pieces_register(r, attr_threads(a));
	if (ret && !mreg_pieces_left(r))
		mreg_pieces_free(r);
	return ret;
}

/* Keep a failed registration that still pins: see mreg_domain.stuck. */
static void park_stuck(struct mreg_domain *d, struct mreg_region *r)
{
	mreg_domain_lock(d);
	r->next_stuck = d->stuck;
	d->stuck = r;
	mreg_domain_unlock(d);
}

/* The caller's attr, as long as it is, in a struct of this version. */
static void copy_attr(struct mreg_region_attr *a,
		      const struct mreg_region_attr *in)
{
	memset(a, 0, sizeof(*a));
	memcpy(a, in, in->size < sizeof(*a) ? in->size : sizeof(*a));
}

MREG_EXPORT int mreg_region_register_attr(struct mreg_domain *d,
					  const struct mreg_region_attr *attr,
					  struct mreg_region **out)
{
	struct mreg_region_attr a;
	struct mreg_region *r;
	int ret;

	if (!d || !attr || !out)
		return mreg_fail(-EINVAL, "register: domain, attr and out are "
					  "required");
	if (attr->size < REGION_ATTR_MIN_SIZE)
		return mreg_fail(-EINVAL, "register: attr size %u too small",
				 attr->size);
	copy_attr(&a, attr);
	ret = check_region_attr(d, &a);
	if (ret)
		return ret;
	r = new_region(d, &a);
	if (!r)
		return mreg_fail(-ENOMEM, "register: out of memory");
	ret = reserve_region(d);
	if (ret) {
		free(r);
		return ret;
	}
	ret = do_register(d, r, &a);
	if (ret && r->nr_pieces) {
		park_stuck(d, r);
		return ret;
	}
	if (ret) {
		unreserve_region(d);
		free(r);
		return ret;
	}
	*out = r;
	return 0;
}

MREG_EXPORT int mreg_region_register(struct mreg_domain *d, void *addr,
				     size_t len, struct mreg_region **out)
{
	struct mreg_region_attr attr = {
		.size = sizeof(attr), .addr = addr, .length = len};

	return mreg_region_register_attr(d, &attr, out);
}

/* A region in pieces that failed midway keeps the rest: call again. */
MREG_EXPORT int mreg_region_deregister(struct mreg_region *r, uint64_t *ns)
{
	if (!r)
		return mreg_fail(-EINVAL, "deregister: region is NULL");
	if (r->cached)
		return mreg_fail(-EBUSY,
				 "deregister: region 0x%llx belongs to a cache: give it back with mreg_cache_put()",
				 (unsigned long long)r->info.addr);
	return mreg_region_release(r, ns);
}

int mreg_region_release(struct mreg_region *r, uint64_t *ns)
{
	uint64_t elapsed = 0;
	int ret;

	if (r->nr_pieces)
		ret = mreg_pieces_deregister(r, &elapsed);
	else
		ret = r->domain->ops->dereg(r->domain, r, &elapsed);
	if (ret)
		return ret;
	unreserve_region(r->domain);
	if (ns)
		*ns = elapsed;
	mreg_pieces_free(r);
	free(r);
	return 0;
}

MREG_EXPORT void *mreg_region_native(const struct mreg_region *r)
{
	return r ? r->native : NULL;
}

/*
 * The IOVA a VFIO region gets from the domain's allocator: the one asked
 * for, if free, else the lowest free one keeping @align's offset, so the
 * IOMMU can map huge pages.  Under the domain lock.
 */
int mreg_region_iova(struct mreg_domain *d, struct mreg_iova *a,
		     const struct mreg_region *r, uint64_t align,
		     uint64_t *iova)
{
	bool fixed = r->comp_mask &
		     (MREG_REGION_ATTR_IOVA | MREG_REGION_ATTR_IOVA_VA);
	int ret;

	mreg_domain_lock(d);
	if (fixed) {
		*iova = r->want_iova;
		ret = mreg_iova_reserve(a, r->want_iova, r->info.length);
	} else {
		ret = mreg_iova_alloc(a, r->info.length, align, r->info.addr,
				      iova);
	}
	mreg_domain_unlock(d);
	if (ret && fixed)
		return mreg_fail(ret,
				 "%s: iova 0x%llx..+%llu is taken or outside "
				 "the IOMMU's ranges",
				 d->ops->name, (unsigned long long)r->want_iova,
				 (unsigned long long)r->info.length);
	if (ret)
		return mreg_fail(ret, "%s: no free IOVA range of %llu bytes",
				 d->ops->name,
				 (unsigned long long)r->info.length);
	return 0;
}

MREG_EXPORT int mreg_region_query(const struct mreg_region *r,
				  struct mreg_region_info *info)
{
	if (!r || !info)
		return mreg_fail(-EINVAL, "query: region and info are "
					  "required");
	if (info->size < MREG_REGION_INFO_SIZE_V1 ||
	    info->size > MREG_OUT_SIZE_MAX)
		return mreg_fail(-EINVAL,
				 "query: info->size %u is not sizeof(struct "
				 "mreg_region_info) (%u or more)",
				 info->size, MREG_REGION_INFO_SIZE_V1);
	mreg_copy_out(info, &r->info, sizeof(r->info));
	return 0;
}

MREG_EXPORT int mreg_region_extents(const struct mreg_region *r,
				    struct mreg_region_extent *ext, size_t *nr)
{
	if (!r || !nr || (*nr && !ext))
		return mreg_fail(-EINVAL, "extents: region, nr and ext are "
					  "required");
	if (!r->domain->ops->extents)
		return mreg_fail(-EOPNOTSUPP,
				 "extents: the %s backend does "
				 "not report extents",
				 r->domain->ops->name);
	if (r->nr_pieces)
		return mreg_pieces_extents(r, ext, nr);
	return r->domain->ops->extents(r, ext, nr);
}
