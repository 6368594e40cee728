/* SPDX-License-Identifier: MIT */
#ifndef MREG_TVFIO_H
#define MREG_TVFIO_H

#include <stddef.h>

/* $MREG_VFIO_DEVICE, else the first device bound to vfio-pci. */
int t_vfio_device(char *bdf, size_t len);

#endif
