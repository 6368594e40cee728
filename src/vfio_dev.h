/* SPDX-License-Identifier: MIT */
#ifndef MREG_VFIO_DEV_H
#define MREG_VFIO_DEV_H

#include <stddef.h>
#include <stdint.h>

struct mreg_iova;

/* IOVAs are kept at huge-page offsets, so the IOMMU can use huge pages. */
#define MREG_VFIO_HUGE_ALIGN (2ull << 20)

/*
 * A VFIO device named by PCI address ("0000:00:03.0") or by group node
 * ("/dev/vfio/7"): its group node, and its cdev ("/dev/vfio/devices/vfio0")
 * where the kernel has VFIO_DEVICE_CDEV.
 */
int mreg_vfio_group_path(const char *device, char *path, size_t len);
int mreg_vfio_cdev_path(const char *bdf, char *path, size_t len);

/*
 * Seed @iova with a type1 container's valid IOVA ranges
 * (VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE), IOVA 0 left out.
 */
int mreg_vfio_iova_init(int container, struct mreg_iova *iova);
/* The container's mappings left before dma_entry_limit, or -errno. */
int mreg_vfio_dma_avail(int container, uint32_t *avail);

#endif
