// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tvfio.h"

int t_vfio_device(char *bdf, size_t len)
{
	const char *env = getenv("MREG_VFIO_DEVICE");
	struct dirent *de;
	DIR *d;

	if (env && *env) {
		snprintf(bdf, len, "%s", env);
		return 0;
	}
	d = opendir("/sys/bus/pci/drivers/vfio-pci");
	if (!d)
		return -ENODEV;
	while ((de = readdir(d)))
		if (strchr(de->d_name, ':')) {
			snprintf(bdf, len, "%s", de->d_name);
			closedir(d);
			return 0;
		}
	closedir(d);
	return -ENODEV;
}
