// SPDX-License-Identifier: GPL-2.0
/*
 * vfio-group-check: open a VFIO group, check that it is viable, attach it
 * to a type1 container, and open the device, the sequence a VFIO user
 * (mreg's backend, DPDK, SPDK) goes through.  Sysfs alone cannot say
 * whether a group is viable; VFIO_GROUP_GET_STATUS does.
 *
 * usage: vfio-group-check GROUP BDF    exit 0 ok, 1 failure, 77 no type1
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/vfio.h>

static int fail(const char *what)
{
	fprintf(stderr, "vfio-group-check: %s: %s\n", what, strerror(errno));
	return 1;
}

static int check_container(int container)
{
	if (ioctl(container, VFIO_GET_API_VERSION) != VFIO_API_VERSION)
		return fail("VFIO_GET_API_VERSION");
	if (ioctl(container, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU) != 1) {
		printf("SKIP: container has no VFIO_TYPE1v2_IOMMU\n");
		return 77;
	}
	return 0;
}

static int check_group(int group, int container)
{
	struct vfio_group_status status = { .argsz = sizeof(status) };

	if (ioctl(group, VFIO_GROUP_GET_STATUS, &status))
		return fail("VFIO_GROUP_GET_STATUS");
	if (!(status.flags & VFIO_GROUP_FLAGS_VIABLE)) {
		fprintf(stderr, "vfio-group-check: group not viable\n");
		return 1;
	}
	printf("group viable\n");
	if (ioctl(group, VFIO_GROUP_SET_CONTAINER, &container))
		return fail("VFIO_GROUP_SET_CONTAINER");
	if (ioctl(container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU))
		return fail("VFIO_SET_IOMMU");
	return 0;
}

static int check_device(int group, const char *bdf)
{
	struct vfio_device_info info = { .argsz = sizeof(info) };
	int dev = ioctl(group, VFIO_GROUP_GET_DEVICE_FD, bdf);

	if (dev < 0)
		return fail("VFIO_GROUP_GET_DEVICE_FD");
	if (ioctl(dev, VFIO_DEVICE_GET_INFO, &info))
		return fail("VFIO_DEVICE_GET_INFO");
	printf("device %s: %u regions, %u irqs, flags 0x%x\n", bdf,
	       info.num_regions, info.num_irqs, info.flags);
	close(dev);
	return (info.flags & VFIO_DEVICE_FLAGS_PCI) ? 0 : 1;
}

int main(int argc, char **argv)
{
	char path[64];
	int container, group, ret;

	if (argc != 3) {
		fprintf(stderr, "usage: %s GROUP BDF\n", argv[0]);
		return 2;
	}
	snprintf(path, sizeof(path), "/dev/vfio/%s", argv[1]);
	container = open("/dev/vfio/vfio", O_RDWR);
	if (container < 0)
		return fail("/dev/vfio/vfio");
	group = open(path, O_RDWR);
	if (group < 0)
		return fail(path);
	ret = check_container(container);
	if (!ret)
		ret = check_group(group, container);
	if (!ret)
		ret = check_device(group, argv[2]);
	close(group);
	close(container);
	return ret;
}
