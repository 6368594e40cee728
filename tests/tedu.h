/* SPDX-License-Identifier: MIT */
/*
 * A userspace driver for qemu's edu device (1234:11e8) on vfio-pci: its DMA
 * engine copies between a 4 kB buffer inside the device and an IOVA, which
 * the guest's IOMMU translates through a VFIO type1 container or an
 * iommufd IOAS. The tests use it to check that what mreg maps is what a
 * device really reaches.
 */
#ifndef MREG_TEDU_H
#define MREG_TEDU_H

#include <stddef.h>
#include <stdint.h>

/* edu masks DMA addresses to 28 bits: every IOVA must lie below this. */
#define T_EDU_IOVA_LIMIT (1ull << 28)
/*
 * The device buffer is 4096 bytes, but qemu before 9.1 (Debian 12 ships
 * 7.2) aborts the whole VM on a transfer that ends at its last byte: 4095
 * is the most one DMA may move. See tedu.c.
 */
#define T_EDU_DMA_MAX 4095u

struct t_edu {
	int device;    /* VFIO device fd */
	int container; /* VFIO type1 container fd, or -1 */
	int group;     /* VFIO group fd, or -1 */
	int iommufd;   /* /dev/iommu fd, or -1 */
	uint32_t ioas_id;
	uint64_t bar0_offset; /* region offset of BAR0 in the device fd */
};

/*
 * Open the edu at PCI address @bdf through VFIO type1: group, container
 * (VFIO_TYPE1v2_IOMMU), device fd; bus mastering enabled.
 */
int t_edu_open_type1(const char *bdf, struct t_edu *e);
/*
 * Same through iommufd: /dev/iommu, IOMMU_IOAS_ALLOC, the device's cdev
 * (/sys/bus/pci/devices/BDF/vfio-dev/vfioN), VFIO_DEVICE_BIND_IOMMUFD,
 * VFIO_DEVICE_ATTACH_IOMMUFD_PT to the new IOAS (e->ioas_id).
 */
int t_edu_open_iommufd(const char *bdf, struct t_edu *e);
/*
 * Drive the edu behind a VFIO device fd opened by someone else (DPDK's
 * rte_vfio_setup_device(), say): BAR0 found, bus mastering enabled.  The
 * fd stays its owner's: do not t_edu_close() @e.
 */
int t_edu_attach(int device, const char *bdf, struct t_edu *e);
/*
 * Copy @len (1..T_EDU_DMA_MAX) bytes between the start of the edu's buffer
 * and @iova: @to_device 1: RAM->edu, 0: edu->RAM. Polls the command
 * register until done; -ETIMEDOUT if it never is, -ERANGE if the IOVA
 * range crosses T_EDU_IOVA_LIMIT, -EBUSY if a DMA is still running.
 * edu reports no DMA errors: an IOVA the IOMMU does not map faults in
 * the guest's DMAR log and copies nothing, so compare the data.
 */
int t_edu_dma(struct t_edu *e, uint64_t iova, size_t len, int to_device);
/* Close every fd @e holds (the device first) and set them to -1. */
void t_edu_close(struct t_edu *e);

#endif
