// SPDX-License-Identifier: MIT
/*
 * Domains and regions: argument checks happen here, once, so each backend
 * only talks to its kernel interface and times that call alone.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define DOMAIN_MASK                                               \
	(MREG_DOMAIN_ATTR_DEVICE | MREG_DOMAIN_ATTR_MAX_REGIONS | \
	 MREG_DOMAIN_ATTR_ACCESS)
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
	if (backend < MREG_BACKEND_IO_URING || backend > MREG_BACKEND_DPDK)
		return "unknown";
	return backend_names[backend];
}

MREG_EXPORT int mreg_backend_parse(const char *name)
{
	int i;

	for (i = MREG_BACKEND_IO_URING; name && i <= MREG_BACKEND_DPDK; i++)
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
				 "domain: backend %s is not built in",
				 mreg_backend_name(attr->backend));
	return 0;
}

MREG_EXPORT int mreg_domain_open(const struct mreg_domain_attr *attr,
				 struct mreg_domain **out)
{
	const struct mreg_backend_ops *ops;
	struct mreg_domain *d;
	int ret;

	if (!attr || !out)
		return mreg_fail(-EINVAL, "domain: attr and out are required");
	ret = check_domain_attr(attr, &ops);
	if (ret)
		return ret;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
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

MREG_EXPORT int mreg_domain_close(struct mreg_domain *d)
{
	uint32_t busy;

	if (!d)
		return 0;
	mreg_domain_lock(d);
	busy = d->nr_regions;
	mreg_domain_unlock(d);
	if (busy)
		return mreg_fail(-EBUSY, "domain: %u regions still registered",
				 busy);
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
		return " (len above RLIMIT_MEMLOCK without CAP_IPC_LOCK?)";
	case -EPERM:
		return " (access flags not allowed for this mapping?)";
	default:
		return "";
	}
}

static int check_range(const void *addr, size_t len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);

	if (!len)
		return mreg_fail(-EINVAL, "register: len is zero");
	if ((uintptr_t)addr > UINTPTR_MAX - len)
		return mreg_fail(-EOVERFLOW,
				 "register: addr %p + len %zu "
				 "overflows",
				 addr, len);
	if ((uintptr_t)addr % page)
		return mreg_fail(-EINVAL,
				 "register: addr %p is not "
				 "page-aligned",
				 addr);
	if (len % page)
		return mreg_fail(-EINVAL,
				 "register: len %zu is not a multiple "
				 "of the page size",
				 len);
	return 0;
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

MREG_EXPORT int mreg_region_register(struct mreg_domain *d, void *addr,
				     size_t len, struct mreg_region **out)
{
	struct mreg_region *r;
	int ret;

	if (!d || !out)
		return mreg_fail(-EINVAL, "register: domain and out are "
					  "required");
	ret = check_range(addr, len);
	if (ret)
		return ret;
	r = calloc(1, sizeof(*r));
	if (!r)
		return mreg_fail(-ENOMEM, "register: out of memory");
	ret = reserve_region(d);
	if (ret) {
		free(r);
		return ret;
	}
	r->domain = d;
	r->info.addr = (uintptr_t)addr;
	r->info.length = len;
	ret = d->ops->reg(d, r);
	if (ret) {
		unreserve_region(d);
		free(r);
		return ret;
	}
	*out = r;
	return 0;
}

MREG_EXPORT int mreg_region_deregister(struct mreg_region *r, uint64_t *ns)
{
	uint64_t elapsed = 0;
	int ret;

	if (!r)
		return mreg_fail(-EINVAL, "deregister: region is NULL");
	ret = r->domain->ops->dereg(r->domain, r, &elapsed);
	if (ret)
		return ret;
	unreserve_region(r->domain);
	if (ns)
		*ns = elapsed;
	free(r);
	return 0;
}

MREG_EXPORT int mreg_region_query(const struct mreg_region *r,
				  struct mreg_region_info *info)
{
	if (!r || !info)
		return mreg_fail(-EINVAL, "query: region and info are "
					  "required");
	*info = r->info;
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
	return r->domain->ops->extents(r, ext, nr);
}
