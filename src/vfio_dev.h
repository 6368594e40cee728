/* SPDX-License-Identifier: MIT */
#ifndef MREG_VFIO_DEV_H
#define MREG_VFIO_DEV_H

#include <stddef.h>

/*
 * A VFIO device named by PCI address ("0000:00:03.0") or by group node
 * ("/dev/vfio/7"): its group node, and its cdev ("/dev/vfio/devices/vfio0")
 * where the kernel has VFIO_DEVICE_CDEV.
 */
int mreg_vfio_group_path(const char *device, char *path, size_t len);
int mreg_vfio_cdev_path(const char *bdf, char *path, size_t len);

#endif
