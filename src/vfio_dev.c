// SPDX-License-Identifier: MIT
/* Find a PCI device's VFIO nodes through sysfs. */
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
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
