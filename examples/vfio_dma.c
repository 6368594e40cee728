// SPDX-License-Identifier: MIT
/*
 * mreg memory in a userspace driver's own VFIO container, with a real
 * device doing the DMA: qemu's edu (-device edu, 1234:11e8) bound to
 * vfio-pci. The driver opens the group, a type1 container and the device,
 * hands the container to mreg (MREG_DOMAIN_ATTR_ADOPT), registers a 64 kB
 * buffer, and has edu copy its first bytes into the device and back into
 * the buffer 32 kB further on, through the IOVA mreg mapped.
 *
 *   vfio_dma [BDF]      (default $MREG_VFIO_DEVICE), e.g. 0000:00:04.0
 *                       exit 0 ok, 1 failed, 77 no edu on vfio-pci
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <linux/vfio.h>
#include <mreg/mreg.h>

#define LEN  (64u << 10)
#define BACK (32u << 10) /* where the copy comes back */
/*
 * edu's buffer is 4096 bytes, but qemu before 9.1 aborts the VM on a DMA
 * that ends at its last byte: 4095 is the most one transfer may move.
 */
#define DMA_LEN 4095u

/* edu's BAR0 (qemu docs/specs/edu.rst) */
#define EDU_DMA_SRC    0x80
#define EDU_DMA_DST    0x88
#define EDU_DMA_CNT    0x90
#define EDU_DMA_CMD    0x98
#define EDU_CMD_RUN    0x1	    /* start; reads 1 until done */
#define EDU_CMD_TO_RAM 0x2	    /* direction: device -> RAM */
#define EDU_BUF	       0x40000	    /* the device buffer, device side */
#define EDU_DMA_MASK   (1ull << 28) /* edu drops IOVA bits above 27 */

#define PCI_COMMAND	   0x04
#define PCI_COMMAND_MEMORY 0x2
#define PCI_COMMAND_MASTER 0x4

struct edu {
	int container, group, device;
	uint64_t bar0; /* offset of BAR0 in the device fd */
};

static void print_log(void *ctx, int level, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "mreg[%d]: %s\n", level, msg);
}

static int fail(const char *what)
{
	int err = errno;

	fprintf(stderr, "vfio_dma: %s: %s\n", what, strerror(err));
	return err ? -err : -EIO;
}

/* /sys/bus/pci/devices/@bdf/@name: its first word, or "". */
static void sysfs_word(const char *bdf, const char *name, char *word)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/%s", bdf, name);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%15s", word) != 1)
		word[0] = '\0';
	if (f)
		fclose(f);
}

/* An edu at @bdf, on vfio-pci: else there is nothing to drive. */
static int is_edu_on_vfio(const char *bdf)
{
	char vendor[16], device[16], path[PATH_MAX], drv[PATH_MAX];
	ssize_t n;

	sysfs_word(bdf, "vendor", vendor);
	sysfs_word(bdf, "device", device);
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver", bdf);
	n = readlink(path, drv, sizeof(drv) - 1);
	drv[n > 0 ? n : 0] = '\0';
	return !strcmp(vendor, "0x1234") && !strcmp(device, "0x11e8") &&
	       strstr(drv, "/vfio-pci");
}

/* The group named by the device's iommu_group link: /dev/vfio/N. */
static int open_group(const char *bdf)
{
	char link[PATH_MAX], target[PATH_MAX], dev[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "/sys/bus/pci/devices/%s/iommu_group",
		 bdf);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return fail(link);
	target[n] = '\0';
	snprintf(dev, sizeof(dev), "/dev/vfio/%s", strrchr(target, '/') + 1);
	n = open(dev, O_RDWR | O_CLOEXEC);
	return n < 0 ? fail(dev) : (int)n;
}

/* Group into a new type1 container, then the device out of the group. */
static int open_vfio(const char *bdf, struct edu *e)
{
	struct vfio_group_status status = {.argsz = sizeof(status)};

	e->container = open("/dev/vfio/vfio", O_RDWR | O_CLOEXEC);
	if (e->container < 0)
		return fail("/dev/vfio/vfio");
	e->group = open_group(bdf);
	if (e->group < 0)
		return e->group;
	if (ioctl(e->group, VFIO_GROUP_GET_STATUS, &status))
		return fail("VFIO_GROUP_GET_STATUS");
	if (!(status.flags & VFIO_GROUP_FLAGS_VIABLE)) {
		errno = EBUSY;
		return fail("group not viable (a device in it has a driver)");
	}
	if (ioctl(e->group, VFIO_GROUP_SET_CONTAINER, &e->container))
		return fail("VFIO_GROUP_SET_CONTAINER");
	if (ioctl(e->container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU))
		return fail("VFIO_SET_IOMMU type1v2");
	e->device = ioctl(e->group, VFIO_GROUP_GET_DEVICE_FD, bdf);
	return e->device < 0 ? fail("VFIO_GROUP_GET_DEVICE_FD") : 0;
}

static int region_offset(struct edu *e, uint32_t index, uint64_t *offset)
{
	struct vfio_region_info info = {.argsz = sizeof(info), .index = index};

	if (ioctl(e->device, VFIO_DEVICE_GET_REGION_INFO, &info))
		return fail("VFIO_DEVICE_GET_REGION_INFO");
	*offset = info.offset;
	return 0;
}

/*
 * Bus mastering, or qemu gives edu no DMA address space; memory decode
 * too, or vfio-pci refuses BAR accesses. Whoever had the device last may
 * have left either off.
 */
static int enable_device(struct edu *e)
{
	uint64_t cfg;
	uint16_t cmd;

	if (region_offset(e, VFIO_PCI_CONFIG_REGION_INDEX, &cfg) ||
	    region_offset(e, VFIO_PCI_BAR0_REGION_INDEX, &e->bar0))
		return -EIO;
	if (pread(e->device, &cmd, 2, (off_t)(cfg + PCI_COMMAND)) != 2)
		return fail("read of the PCI command register");
	cmd |= PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER;
	if (pwrite(e->device, &cmd, 2, (off_t)(cfg + PCI_COMMAND)) != 2)
		return fail("write of the PCI command register");
	return 0;
}

/*
 * 4-byte accesses only: vfio-pci splits an 8-byte write in two, and edu
 * drops the upper half, while a 4-byte write at 0x80 sets the whole
 * 64-bit register. Below the 28-bit mask 32 bits are all there is.
 */
static int edu_write(struct edu *e, uint32_t reg, uint32_t val)
{
	if (pwrite(e->device, &val, 4, (off_t)(e->bar0 + reg)) != 4)
		return fail("write of edu's BAR0");
	return 0;
}

static int edu_read(struct edu *e, uint32_t reg, uint32_t *val)
{
	if (pread(e->device, val, 4, (off_t)(e->bar0 + reg)) != 4)
		return fail("read of edu's BAR0");
	return 0;
}

/* One DMA, waited for: edu starts it from a timer 100 ms later. */
static int edu_dma(struct edu *e, uint32_t src, uint32_t dst, uint32_t cmd)
{
	const struct timespec tick = {.tv_nsec = 1000000};
	uint32_t state = 0;
	int ms, ret;

	ret = edu_write(e, EDU_DMA_SRC, src);
	if (!ret)
		ret = edu_write(e, EDU_DMA_DST, dst);
	if (!ret)
		ret = edu_write(e, EDU_DMA_CNT, DMA_LEN);
	if (!ret)
		ret = edu_write(e, EDU_DMA_CMD, EDU_CMD_RUN | cmd);
	for (ms = 0; !ret && ms < 10000; ms++) {
		ret = edu_read(e, EDU_DMA_CMD, &state);
		if (!ret && !(state & EDU_CMD_RUN))
			return 0;
		nanosleep(&tick, NULL);
	}
	if (!ret)
		fprintf(stderr, "vfio_dma: edu's DMA never finished\n");
	return ret ? ret : -ETIMEDOUT;
}

/*
 * RAM -> device from the region's start, device -> RAM at +32 kB. edu
 * reports no DMA errors (an IOVA the IOMMU refuses just copies nothing):
 * the bytes tell.
 */
static int round_trip(struct edu *e, char *buf, uint64_t iova)
{
	uint32_t i, ram = (uint32_t)iova;
	int ret;

	for (i = 0; i < DMA_LEN; i++)
		buf[i] = (char)(i % 251 + 1);
	memset(buf + BACK, 0, DMA_LEN);
	ret = edu_dma(e, ram, EDU_BUF, 0);
	if (!ret)
		ret = edu_dma(e, EDU_BUF, ram + BACK, EDU_CMD_TO_RAM);
	if (!ret && memcmp(buf, buf + BACK, DMA_LEN)) {
		fprintf(stderr, "vfio_dma: the copy differs from the source\n");
		ret = -EIO;
	}
	return ret;
}

static int alloc_buf(struct mreg_buf **buf)
{
	struct mreg_buf_attr attr = {
		.size = sizeof(attr),
		.flags = MREG_BUF_ALLOW_FALLBACK,
		.length = LEN,
		.folio_size = 64 << 10,
	};
	char hist[256];
	int ret;

	if (geteuid() == 0) /* else whatever the system's THP policy gives */
		attr.flags |= MREG_BUF_SET_POLICY;
	ret = mreg_buf_alloc(&attr, buf);
	if (ret)
		return ret;
	mreg_folio_hist_format(mreg_buf_hist(*buf), hist, sizeof(hist));
	printf("buffer %u kB, folios %s\n", LEN >> 10, hist);
	return 0;
}

/* Map the buffer into the application's container, DMA, unmap. */
static int dma_through_mreg(struct edu *e, struct mreg_buf *buf)
{
	struct mreg_domain_attr dattr = {
		.backend = MREG_BACKEND_VFIO,
		.comp_mask = MREG_DOMAIN_ATTR_ADOPT,
		.fd = e->container,
	};
	struct mreg_region_info info = {.size = sizeof(info)};
	struct mreg_domain *domain;
	struct mreg_region *region;
	int ret;

	ret = mreg_domain_open(&dattr, &domain);
	if (ret)
		return ret;
	ret = mreg_region_register(domain, mreg_buf_addr(buf), LEN, &region);
	if (ret)
		goto out;
	mreg_region_query(region, &info);
	if (info.iova + LEN > EDU_DMA_MASK) {
		fprintf(stderr,
			"vfio_dma: IOVA 0x%llx is beyond edu's 28-bit "
			"DMA mask\n",
			(unsigned long long)info.iova);
		ret = -ERANGE;
	} else {
		printf("region at IOVA 0x%llx, below edu's 28-bit DMA mask\n",
		       (unsigned long long)info.iova);
		ret = round_trip(e, mreg_buf_addr(buf), info.iova);
	}
	mreg_region_deregister(region, NULL);
out:
	mreg_domain_close(domain);
	return ret;
}

static void close_edu(struct edu *e)
{
	/* The device first: it keeps the group busy. */
	if (e->device >= 0)
		close(e->device);
	if (e->group >= 0)
		close(e->group);
	if (e->container >= 0)
		close(e->container);
}

int main(int argc, char **argv)
{
	const char *bdf = argc > 1 ? argv[1] : getenv("MREG_VFIO_DEVICE");
	struct edu e = {.container = -1, .group = -1, .device = -1};
	struct mreg_buf *buf = NULL;
	int ret;

	mreg_set_log(print_log, NULL);
	if (!bdf || !is_edu_on_vfio(bdf)) {
		printf("vfio_dma: no edu device on vfio-pci at %s (qemu "
		       "-device edu; bind it to vfio-pci)\n",
		       bdf ? bdf : "(none given)");
		return 77;
	}
	ret = open_vfio(bdf, &e);
	if (!ret)
		ret = enable_device(&e);
	if (!ret)
		ret = alloc_buf(&buf);
	if (!ret)
		ret = dma_through_mreg(&e, buf);
	if (!ret)
		printf("edu DMA of %u bytes into the device and back at +%u kB "
		       "matches\n",
		       DMA_LEN, BACK >> 10);
	mreg_buf_free(buf);
	close_edu(&e);
	if (ret)
		fprintf(stderr, "vfio_dma: %s\n", strerror(-ret));
	return ret ? 1 : 0;
}
