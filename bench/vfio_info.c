// SPDX-License-Identifier: MIT
/*
 * What a type1 container tells through VFIO_IOMMU_GET_INFO: its free DMA
 * entries (dma_avail), which the dpdk-heap cells check DPDK's mapping
 * against, and whether its IOVA ranges reach an address.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>

#include <linux/vfio.h>

#include "bench.h"

union vfio_info {
	struct vfio_iommu_type1_info info;
	char buf[4096];
};

/* Capability @id of @fd's type1 info, in @u; NULL if it has none. */
static void *info_cap(int fd, union vfio_info *u, uint16_t id)
{
	struct vfio_info_cap_header *cap;
	uint32_t off;

	u->info = (struct vfio_iommu_type1_info){.argsz = sizeof(*u)};
	if (ioctl(fd, VFIO_IOMMU_GET_INFO, &u->info) ||
	    !(u->info.flags & VFIO_IOMMU_INFO_CAPS) ||
	    u->info.argsz > sizeof(*u))
		return NULL;
	for (off = u->info.cap_offset; off && off + sizeof(*cap) <= sizeof(*u);
	     off = cap->next) {
		cap = (struct vfio_info_cap_header *)(u->buf + off);
		if (cap->id == id)
			return cap;
	}
	return NULL;
}

int vfio_dma_avail(int container, uint32_t *avail)
{
	struct vfio_iommu_type1_info_dma_avail *cap;
	union vfio_info u;

	cap = info_cap(container, &u, VFIO_IOMMU_TYPE1_INFO_DMA_AVAIL);
	if (!cap)
		return -ENOENT;
	*avail = cap->avail;
	return 0;
}

/* Whether [iova, iova + len) lies in one of @fd's IOVA ranges. */
bool vfio_iova_fits(int container, uint64_t iova, uint64_t len)
{
	struct vfio_iommu_type1_info_cap_iova_range *cap;
	uint64_t last = iova + len - 1;
	union vfio_info u;
	uint32_t i;

	cap = info_cap(container, &u, VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE);
	for (i = 0; cap && i < cap->nr_iovas; i++)
		if (iova >= cap->iova_ranges[i].start && last >= iova &&
		    last <= cap->iova_ranges[i].end)
			return true;
	return false;
}
