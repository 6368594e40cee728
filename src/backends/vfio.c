// SPDX-License-Identifier: MIT
/*
 * VFIO type1: container, group and device, then MAP_DMA/UNMAP_DMA. Type1
 * leaves IOVAs to userspace: they come from the container's valid ranges
 * (CAP_IOVA_RANGE), and running into dma_entry_limit is reported with the
 * count the kernel says is left (CAP_DMA_AVAIL).
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/vfio.h>

#include "../internal.h"
#include "../iova.h"
#include "../vfio_dev.h"

struct vfio_domain {
	int container;
	int group;
	int device;
	bool adopted; /* the container is the caller's: never closed */
	struct mreg_iova iova;
};

static int vfio_supported(void)
{
	return !access("/dev/vfio/vfio", R_OK | W_OK);
}

static int open_group(struct vfio_domain *v, const char *device)
{
	struct vfio_group_status status = {.argsz = sizeof(status)};
	char path[64];
	int ret;

	ret = mreg_vfio_group_path(device, path, sizeof(path));
	if (ret)
		return ret;
	v->group = open(path, O_RDWR | O_CLOEXEC);
	if (v->group < 0)
		return mreg_fail(-errno, "vfio: open %s: %s", path,
				 strerror(errno));
	if (ioctl(v->group, VFIO_GROUP_GET_STATUS, &status) ||
	    !(status.flags & VFIO_GROUP_FLAGS_VIABLE))
		return mreg_fail(-EBUSY,
				 "vfio: group %s is not viable (every "
				 "device in it must be bound to vfio-pci)",
				 path);
	return 0;
}

static int open_container(struct vfio_domain *v, const char *device)
{
	int ret;

	v->container = open("/dev/vfio/vfio", O_RDWR | O_CLOEXEC);
	if (v->container < 0)
		return mreg_fail(-errno, "vfio: open /dev/vfio/vfio: %s",
				 strerror(errno));
	if (ioctl(v->container, VFIO_GET_API_VERSION) != VFIO_API_VERSION ||
	    !ioctl(v->container, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU))
		return mreg_fail(-EOPNOTSUPP, "vfio: no type1v2 IOMMU");
	ret = open_group(v, device);
	if (ret)
		return ret;
	if (ioctl(v->group, VFIO_GROUP_SET_CONTAINER, &v->container) ||
	    ioctl(v->container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU))
		return mreg_fail(-errno, "vfio: attach group to container: %s",
				 strerror(errno));
	return 0;
}

/* Holding the device fd keeps it claimed while we map for it. */
static int open_device(struct vfio_domain *v, const char *device)
{
	if (!strncmp(device, "/dev/vfio/", 10))
		return 0;
	v->device = ioctl(v->group, VFIO_GROUP_GET_DEVICE_FD, device);
	if (v->device < 0)
		return mreg_fail(-errno, "vfio: get device %s: %s", device,
				 strerror(errno));
	return 0;
}

static void close_fds(struct vfio_domain *v)
{
	if (v->device >= 0)
		close(v->device);
	if (v->group >= 0)
		close(v->group);
	if (v->container >= 0)
		close(v->container);
}

static int open_own(struct vfio_domain *v, const struct mreg_domain_attr *attr)
{
	int ret;

	if (!(attr->comp_mask & MREG_DOMAIN_ATTR_DEVICE) || !attr->device)
		return mreg_fail(-EINVAL, "vfio: device (PCI address or "
					  "/dev/vfio/N) is required");
	ret = open_container(v, attr->device);
	return ret ? ret : open_device(v, attr->device);
}

/* The caller's container, its group attached and the IOMMU type set. */
static int adopt_container(struct vfio_domain *v,
			   const struct mreg_domain_attr *attr)
{
	if (attr->fd < 0)
		return mreg_fail(-EBADF, "vfio: adopt needs fd (a container)");
	v->container = attr->fd;
	v->adopted = true;
	return 0;
}

static int vfio_domain_open(struct mreg_domain *d,
			    const struct mreg_domain_attr *attr)
{
	struct vfio_domain *v;
	int ret;

	v = calloc(1, sizeof(*v));
	if (!v)
		return mreg_fail(-ENOMEM, "vfio: out of memory");
	v->container = v->group = v->device = -1;
	ret = mreg_adopted(attr) ? adopt_container(v, attr) : open_own(v, attr);
	if (!ret)
		ret = mreg_vfio_iova_init(v->container, &v->iova);
	if (ret) {
		if (!v->adopted)
			close_fds(v);
		free(v);
		return ret;
	}
	d->priv = v;
	d->native = &v->container;
	return 0;
}

static void vfio_domain_close(struct mreg_domain *d)
{
	struct vfio_domain *v = d->priv;

	if (!v->adopted)
		close_fds(v);
	mreg_iova_fini(&v->iova);
	free(v);
}

static int map_failed(struct vfio_domain *v, struct mreg_region *r, int err)
{
	uint32_t avail = 0;

	if (err == -ENOSPC && !mreg_vfio_dma_avail(v->container, &avail))
		return mreg_fail(err,
				 "vfio: MAP_DMA: dma_entry_limit reached "
				 "(%u mappings left); raise vfio_iommu_type1 "
				 "dma_entry_limit or map larger regions",
				 avail);
	return mreg_fail(err, "vfio: MAP_DMA addr 0x%llx len %llu: %s%s",
			 (unsigned long long)r->info.addr,
			 (unsigned long long)r->info.length, strerror(-err),
			 mreg_reg_hint(err));
}

/* The allocator is the domain's: threads take and return IOVAs under its
 * lock, and MAP_DMA runs outside it. */
static int free_iova(struct mreg_domain *d, uint64_t iova, uint64_t len)
{
	struct vfio_domain *v = d->priv;
	int ret;

	mreg_domain_lock(d);
	ret = mreg_iova_free(&v->iova, iova, len);
	mreg_domain_unlock(d);
	return ret;
}

static int vfio_reg(struct mreg_domain *d, struct mreg_region *r)
{
	struct vfio_domain *v = d->priv;
	struct vfio_iommu_type1_dma_map map = {
		.argsz = sizeof(map),
		.flags = VFIO_DMA_MAP_FLAG_READ,
		.vaddr = r->info.addr,
		.size = r->info.length,
	};
	uint64_t t0, iova;
	int ret;
	bool fixed = r->comp_mask &
		     (MREG_REGION_ATTR_IOVA | MREG_REGION_ATTR_IOVA_VA);
	int tries = 0;

	if (r->access & (MREG_ACCESS_LOCAL_WRITE | MREG_ACCESS_REMOTE_WRITE))
		map.flags |= VFIO_DMA_MAP_FLAG_WRITE;
	/*
	 * An adopted container may hold mappings mreg did not make: an IOVA
	 * the kernel says is taken (-EEXIST) stays out of mreg's allocator,
	 * and the next free one is tried.
	 */
	do {
		ret = mreg_region_iova(d, &v->iova, r, MREG_VFIO_HUGE_ALIGN, &iova);
		if (ret)
			return ret;
		map.iova = iova;
		t0 = mreg_now_ns();
		ret = ioctl(v->container, VFIO_IOMMU_MAP_DMA, &map) ? -errno
								    : 0;
		r->info.reg_ns = mreg_now_ns() - t0;
	} while (ret == -EEXIST && !fixed && ++tries < 16);
	if (ret) {
		if (ret != -EEXIST)
			free_iova(d, map.iova, map.size);
		return map_failed(v, r, ret);
	}
	r->info.iova = map.iova;
	r->info.nr_slices = 1;
	return 0;
}

static int vfio_dereg(struct mreg_domain *d, struct mreg_region *r,
		      uint64_t *ns)
{
	struct vfio_domain *v = d->priv;
	struct vfio_iommu_type1_dma_unmap unmap = {
		.argsz = sizeof(unmap),
		.iova = r->info.iova,
		.size = r->info.length,
	};
	uint64_t t0 = mreg_now_ns();
	int ret;

	ret = ioctl(v->container, VFIO_IOMMU_UNMAP_DMA, &unmap) ? -errno : 0;
	*ns = mreg_now_ns() - t0;
	if (ret)
		return mreg_fail(ret, "vfio: UNMAP_DMA iova 0x%llx: %s",
				 (unsigned long long)unmap.iova,
				 strerror(-ret));
	/* The mapping is gone: the region is deregistered whatever the
	 * allocator says, or it could never be closed. */
	if (free_iova(d, r->info.iova, r->info.length))
		mreg_log(MREG_LOG_WARN, "vfio: iova 0x%llx..+%llu not returned",
			 (unsigned long long)r->info.iova,
			 (unsigned long long)r->info.length);
	return 0;
}

const struct mreg_backend_ops mreg_vfio_ops = {
	.type = MREG_BACKEND_VFIO,
	.name = "vfio",
	.supported = vfio_supported,
	.domain_open = vfio_domain_open,
	.domain_close = vfio_domain_close,
	.reg = vfio_reg,
	.dereg = vfio_dereg,
};
