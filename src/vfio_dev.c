// SPDX-License-Identifier: MIT
/* A PCI device's VFIO nodes, and what a type1 container says of itself. */
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/vfio.h>

#include "internal.h"
#include "iova.h"
#include "vfio_dev.h"

int mreg_vfio_group_path(const char *device, char *path, size_t len)
{
	char link[PATH_MAX], target[PATH_MAX];
	ssize_t n;

	if (!strncmp(device, "/dev/vfio/", 10)) {
		snprintf(path, len, "%s", device);
		return 0;
	}
	snprintf(link, sizeof(link), "/sys/bus/pci/devices/%s/iommu_group",
		 device);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return mreg_fail(-ENODEV,
				 "vfio: device %s has no IOMMU group "
				 "(%s)",
				 device, strerror(errno));
	target[n] = '\0';
	snprintf(path, len, "/dev/vfio/%s", basename(target));
	return 0;
}

int mreg_vfio_cdev_path(const char *bdf, char *path, size_t len)
{
	char dir[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int ret = -ENODEV;

	snprintf(dir, sizeof(dir), "/sys/bus/pci/devices/%s/vfio-dev", bdf);
	d = opendir(dir);
	if (!d)
		return mreg_fail(-ENODEV,
				 "iommufd: %s has no VFIO cdev (not "
				 "bound to vfio-pci, or no VFIO_DEVICE_CDEV)",
				 bdf);
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "vfio", 4)) {
			snprintf(path, len, "/dev/vfio/devices/%s", de->d_name);
			ret = 0;
			break;
		}
	closedir(d);
	return ret;
}

/* VFIO_IOMMU_GET_INFO with its capability chain, sized by the kernel. */
static struct vfio_iommu_type1_info *get_info(int container)
{
	struct vfio_iommu_type1_info *info = calloc(1, sizeof(*info));
	uint32_t argsz = sizeof(*info);

	while (info) {
		info->argsz = argsz;
		if (ioctl(container, VFIO_IOMMU_GET_INFO, info)) {
			free(info);
			return NULL;
		}
		if (info->argsz <= argsz)
			return info;
		argsz = info->argsz;
		free(info);
		info = calloc(1, argsz);
	}
	return NULL;
}

static struct vfio_info_cap_header *find_cap(struct vfio_iommu_type1_info *info,
					     uint16_t id)
{
	uint32_t off;

	if (!(info->flags & VFIO_IOMMU_INFO_CAPS))
		return NULL;
	for (off = info->cap_offset; off;) {
		struct vfio_info_cap_header *h = (void *)((char *)info + off);

		if (h->id == id)
			return h;
		off = h->next;
	}
	return NULL;
}

int mreg_vfio_iova_init(int container, struct mreg_iova *iova)
{
	struct vfio_iommu_type1_info_cap_iova_range *cap;
	struct mreg_iova_range *ranges;
	struct vfio_iommu_type1_info *info = get_info(container);
	uint32_t i;
	int ret;

	if (!info)
		return mreg_fail(-errno, "vfio: VFIO_IOMMU_GET_INFO: %s",
				 strerror(errno));
	cap = (void *)find_cap(info, VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE);
	if (!cap) {
		free(info);
		return mreg_fail(-EOPNOTSUPP, "vfio: no IOVA range capability");
	}
	ranges = calloc(cap->nr_iovas, sizeof(*ranges));
	for (i = 0; ranges && i < cap->nr_iovas; i++) {
		/* Keep IOVA 0 out: a zero DMA address looks like a bug. */
		ranges[i].start = cap->iova_ranges[i].start
					  ? cap->iova_ranges[i].start
					  : MREG_VFIO_HUGE_ALIGN;
		ranges[i].last = cap->iova_ranges[i].end;
	}
	ret = ranges ? mreg_iova_init(iova, ranges, (int)cap->nr_iovas)
		     : -ENOMEM;
	free(ranges);
	free(info);
	return ret;
}

int mreg_vfio_dma_avail(int container, uint32_t *avail)
{
	struct vfio_iommu_type1_info_dma_avail *cap;
	struct vfio_iommu_type1_info *info = get_info(container);

	if (!info)
		return -errno;
	cap = (void *)find_cap(info, VFIO_IOMMU_TYPE1_INFO_DMA_AVAIL);
	if (cap)
		*avail = cap->avail;
	free(info);
	return cap ? 0 : -EOPNOTSUPP;
}
