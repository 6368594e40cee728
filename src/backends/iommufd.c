// SPDX-License-Identifier: MIT
/*
 * iommufd: an IOAS with a real device attached through its VFIO cdev, then
 * IOMMU_IOAS_MAP/UNMAP. The device matters: iommufd pins only when a
 * domain is attached, so an IOAS without one would time no pinning.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/iommufd.h>
#include <linux/vfio.h>

#include "../internal.h"
#include "../vfio_dev.h"

struct iommufd_domain {
	int iommufd;
	int device;
	uint32_t ioas_id;
	bool adopted; /* iommufd and IOAS are the caller's: never closed */
};

static int iommufd_supported(void)
{
	return !access("/dev/iommu", R_OK | W_OK);
}

static int alloc_ioas(struct iommufd_domain *f)
{
	struct iommu_ioas_alloc alloc = {.size = sizeof(alloc)};

	f->iommufd = open("/dev/iommu", O_RDWR | O_CLOEXEC);
	if (f->iommufd < 0)
		return mreg_fail(-errno, "iommufd: open /dev/iommu: %s",
				 strerror(errno));
	if (ioctl(f->iommufd, IOMMU_IOAS_ALLOC, &alloc))
		return mreg_fail(-errno, "iommufd: IOAS_ALLOC: %s",
				 strerror(errno));
	f->ioas_id = alloc.out_ioas_id;
	return 0;
}

static int attach_device(struct iommufd_domain *f, const char *bdf)
{
	struct vfio_device_bind_iommufd bind = {.argsz = sizeof(bind),
						.iommufd = f->iommufd};
	struct vfio_device_attach_iommufd_pt attach = {
		.argsz = sizeof(attach),
		.pt_id = f->ioas_id,
	};
	char path[64];
	int ret;

	ret = mreg_vfio_cdev_path(bdf, path, sizeof(path));
	if (ret)
		return ret;
	f->device = open(path, O_RDWR | O_CLOEXEC);
	if (f->device < 0)
		return mreg_fail(-errno, "iommufd: open %s: %s", path,
				 strerror(errno));
	if (ioctl(f->device, VFIO_DEVICE_BIND_IOMMUFD, &bind))
		return mreg_fail(-errno, "iommufd: bind %s: %s", bdf,
				 strerror(errno));
	if (ioctl(f->device, VFIO_DEVICE_ATTACH_IOMMUFD_PT, &attach))
		return mreg_fail(-errno, "iommufd: attach %s to IOAS %u: %s",
				 bdf, f->ioas_id, strerror(errno));
	return 0;
}

static void close_fds(struct iommufd_domain *f)
{
	if (f->device >= 0)
		close(f->device);
	if (f->iommufd >= 0)
		close(f->iommufd);
}

static int open_own(struct iommufd_domain *f,
		    const struct mreg_domain_attr *attr)
{
	int ret;

	if (!(attr->comp_mask & MREG_DOMAIN_ATTR_DEVICE) || !attr->device)
		return mreg_fail(-EINVAL, "iommufd: device (PCI address of a "
					  "vfio-pci device) is required");
	ret = alloc_ioas(f);
	return ret ? ret : attach_device(f, attr->device);
}

/* The caller's iommufd and IOAS, a device attached to it. */
static int adopt_ioas(struct iommufd_domain *f,
		      const struct mreg_domain_attr *attr)
{
	if (attr->fd < 0)
		return mreg_fail(-EBADF, "iommufd: adopt needs fd (/dev/iommu) "
					 "and ioas_id");
	f->iommufd = attr->fd;
	f->ioas_id = attr->ioas_id;
	f->adopted = true;
	return 0;
}

static int iommufd_domain_open(struct mreg_domain *d,
			       const struct mreg_domain_attr *attr)
{
	struct iommufd_domain *f;
	int ret;

	f = calloc(1, sizeof(*f));
	if (!f)
		return mreg_fail(-ENOMEM, "iommufd: out of memory");
	f->iommufd = f->device = -1;
	ret = mreg_adopted(attr) ? adopt_ioas(f, attr) : open_own(f, attr);
	if (ret) {
		if (!f->adopted)
			close_fds(f);
		free(f);
		return ret;
	}
	d->priv = f;
	d->native = &f->iommufd;
	return 0;
}

static void iommufd_domain_close(struct mreg_domain *d)
{
	struct iommufd_domain *f = d->priv;

	if (!f->adopted)
		close_fds(f);
	free(f);
}

static uint32_t map_flags(uint32_t access)
{
	uint32_t flags = IOMMU_IOAS_MAP_READABLE;

	if (access & (MREG_ACCESS_LOCAL_WRITE | MREG_ACCESS_REMOTE_WRITE))
		flags |= IOMMU_IOAS_MAP_WRITEABLE;
	return flags;
}

static int iommufd_reg(struct mreg_domain *d, struct mreg_region *r)
{
	struct iommufd_domain *f = d->priv;
	struct iommu_ioas_map map = {
		.size = sizeof(map),
		.flags = map_flags(r->access),
		.ioas_id = f->ioas_id,
		.user_va = r->info.addr,
		.length = r->info.length,
	};
	uint64_t t0;
	int ret;

	/* The kernel keeps the IOAS's allocator: a fixed IOVA is a flag. */
	if (r->comp_mask & (MREG_REGION_ATTR_IOVA | MREG_REGION_ATTR_IOVA_VA)) {
		map.flags |= IOMMU_IOAS_MAP_FIXED_IOVA;
		map.iova = r->want_iova;
	}

	t0 = mreg_now_ns();
	ret = ioctl(f->iommufd, IOMMU_IOAS_MAP, &map) ? -errno : 0;
	r->info.reg_ns = mreg_now_ns() - t0;
	if (ret)
		return mreg_fail(ret,
				 "iommufd: IOAS_MAP addr 0x%llx len %llu: "
				 "%s%s",
				 (unsigned long long)r->info.addr,
				 (unsigned long long)r->info.length,
				 strerror(-ret), mreg_reg_hint(ret));
	r->info.iova = map.iova;
	r->info.nr_slices = 1;
	return 0;
}

static int iommufd_dereg(struct mreg_domain *d, struct mreg_region *r,
			 uint64_t *ns)
{
	struct iommufd_domain *f = d->priv;
	struct iommu_ioas_unmap unmap = {
		.size = sizeof(unmap),
		.ioas_id = f->ioas_id,
		.iova = r->info.iova,
		.length = r->info.length,
	};
	uint64_t t0 = mreg_now_ns();
	int ret;

	ret = ioctl(f->iommufd, IOMMU_IOAS_UNMAP, &unmap) ? -errno : 0;
	*ns = mreg_now_ns() - t0;
	if (ret)
		return mreg_fail(ret, "iommufd: IOAS_UNMAP iova 0x%llx: %s",
				 (unsigned long long)unmap.iova,
				 strerror(-ret));
	return 0;
}

const struct mreg_backend_ops mreg_iommufd_ops = {
	.type = MREG_BACKEND_IOMMUFD,
	.name = "iommufd",
	.supported = iommufd_supported,
	.domain_open = iommufd_domain_open,
	.domain_close = iommufd_domain_close,
	.reg = iommufd_reg,
	.dereg = iommufd_dereg,
};
