// SPDX-License-Identifier: MIT
/*
 * qemu's edu device driven from userspace through vfio-pci. Registers from
 * qemu's docs/specs/edu.rst and hw/misc/edu.c; what the device does that
 * a driver has to work around:
 *
 * - Only 0x80, 0x88, 0x90 and 0x98 decode above 0x80 (4- or 8-byte
 *   accesses). A 4-byte write at 0x80 replaces the whole 64-bit register
 *   with the zero-extended value; one at 0x84 is dropped, a read there
 *   gives ~0. vfio-pci (Debian's 6.12) carries an 8-byte pwrite of the
 *   region out as iowrite64_lo_hi, two 4-byte writes, so the high half
 *   never reaches edu that way. Nothing needs it (28-bit mask below): one
 *   4-byte access per register is both simplest and correct.
 * - The RAM-side address is ANDed with dma_mask, 28 bits by default: an
 *   IOVA at or above 256 MB is not refused but aliased to iova & 0xfffffff
 *   ("EDU: clamping DMA" on qemu's stdout), a DMA to whatever the IOMMU
 *   maps there. t_edu_dma() refuses such a range with -ERANGE instead.
 * - The device-side range is checked against the 4 kB buffer at 0x40000,
 *   before qemu 9.1 with an off-by-one (the end must be < 0x41000) and by
 *   hw_error(), which aborts qemu. On Debian 12's qemu 7.2 a 4096-byte DMA
 *   kills the VM ("hardware error: EDU: DMA range ... out of bounds"),
 *   hence T_EDU_DMA_MAX 4095. Newer qemu logs the error and copies anyway.
 * - A DMA the IOMMU refuses completes like any other: edu drops the
 *   result of pci_dma_read/write. The guest logs a DMAR fault; the data
 *   tells.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <linux/iommufd.h>
#include <linux/vfio.h>

#include "tedu.h"

#define EDU_IDENT    0x00
#define EDU_LIVENESS 0x04
#define EDU_DMA_SRC  0x80
#define EDU_DMA_DST  0x88
#define EDU_DMA_CNT  0x90
#define EDU_DMA_CMD  0x98

#define EDU_CMD_RUN    0x1 /* start; reads 1 until the copy is done */
#define EDU_CMD_TO_RAM 0x2 /* direction: 0 RAM->edu, 1 edu->RAM */

#define EDU_BUF 0x40000 /* the buffer's address on the device side */

#define PCI_CMD	       0x04
#define PCI_CMD_MEMORY 0x2
#define PCI_CMD_MASTER 0x4
#define DMA_TIMEOUT_MS 10000

static int fail(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Print "tedu: <what>: <strerror>" and hand @err (-errno) back. */
static int fail(int err, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "tedu: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s\n", strerror(-err));
	return err;
}

static int mmio_read(struct t_edu *e, uint32_t reg, uint32_t *val)
{
	ssize_t n = pread(e->device, val, 4, (off_t)(e->bar0_offset + reg));

	if (n != 4)
		return fail(n < 0 ? -errno : -EIO, "read of BAR0 0x%02x", reg);
	return 0;
}

static int mmio_write(struct t_edu *e, uint32_t reg, uint32_t val)
{
	ssize_t n = pwrite(e->device, &val, 4, (off_t)(e->bar0_offset + reg));

	if (n != 4)
		return fail(n < 0 ? -errno : -EIO, "write of BAR0 0x%02x", reg);
	return 0;
}

static void edu_init(struct t_edu *e)
{
	*e = (struct t_edu){
		.device = -1, .container = -1, .group = -1, .iommufd = -1};
}

static int region_offset(struct t_edu *e, uint32_t index, uint64_t *offset)
{
	struct vfio_region_info info = {.argsz = sizeof(info), .index = index};
	uint32_t rw = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;

	if (ioctl(e->device, VFIO_DEVICE_GET_REGION_INFO, &info))
		return -errno;
	if ((info.flags & rw) != rw || info.size <= EDU_DMA_CMD)
		return -ENXIO;
	*offset = info.offset;
	return 0;
}

/*
 * Memory decode along with bus mastering: vfio-pci fails BAR accesses
 * with -EIO while the command register it emulates has decode off, and
 * qemu gives a device no DMA address space without bus mastering. Set
 * both rather than trust what the last user of the device left.
 */
static int enable_bus_master(struct t_edu *e, const char *bdf)
{
	uint64_t cfg;
	uint16_t cmd;
	int ret = region_offset(e, VFIO_PCI_CONFIG_REGION_INDEX, &cfg);

	if (ret)
		return fail(ret, "%s: config region info", bdf);
	if (pread(e->device, &cmd, 2, (off_t)(cfg + PCI_CMD)) != 2)
		return fail(-errno, "%s: read of the PCI command register",
			    bdf);
	cmd |= PCI_CMD_MEMORY | PCI_CMD_MASTER;
	if (pwrite(e->device, &cmd, 2, (off_t)(cfg + PCI_CMD)) != 2)
		return fail(-errno, "%s: write of the PCI command register",
			    bdf);
	return 0;
}

/* An edu answers its ident and inverts what is written to liveness. */
static int check_edu(struct t_edu *e, const char *bdf)
{
	uint32_t id, live, probe = 0x5eed1e55;
	int ret = mmio_read(e, EDU_IDENT, &id);

	if (!ret)
		ret = mmio_write(e, EDU_LIVENESS, probe);
	if (!ret)
		ret = mmio_read(e, EDU_LIVENESS, &live);
	if (ret)
		return ret;
	if ((id & 0xffff) != 0x00ed)
		return fail(-ENODEV, "%s: ident 0x%08x is not an edu's", bdf,
			    id);
	if (live != ~probe)
		return fail(-EIO, "%s: liveness read 0x%08x after 0x%08x", bdf,
			    live, probe);
	return 0;
}

static int setup_device(struct t_edu *e, const char *bdf)
{
	int ret = region_offset(e, VFIO_PCI_BAR0_REGION_INDEX, &e->bar0_offset);

	if (ret)
		return fail(ret, "%s: BAR0 region info", bdf);
	ret = enable_bus_master(e, bdf);
	return ret ? ret : check_edu(e, bdf);
}

static int group_path(const char *bdf, char *path, size_t len)
{
	char link[PATH_MAX], target[PATH_MAX];
	const char *slash;
	ssize_t n;

	snprintf(link, sizeof(link), "/sys/bus/pci/devices/%s/iommu_group",
		 bdf);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return fail(-errno, "%s: no IOMMU group", bdf);
	target[n] = '\0';
	slash = strrchr(target, '/');
	n = snprintf(path, len, "/dev/vfio/%s", slash ? slash + 1 : target);
	return (size_t)n < len ? 0 : fail(-ENAMETOOLONG, "%s: group", bdf);
}

static int type1_container(struct t_edu *e, const char *bdf)
{
	e->container = open("/dev/vfio/vfio", O_RDWR | O_CLOEXEC);
	if (e->container < 0)
		return fail(-errno, "%s: open /dev/vfio/vfio", bdf);
	if (ioctl(e->container, VFIO_GET_API_VERSION) != VFIO_API_VERSION)
		return fail(-EINVAL, "%s: VFIO_GET_API_VERSION", bdf);
	if (ioctl(e->container, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU) != 1)
		return fail(-EOPNOTSUPP, "%s: no VFIO_TYPE1v2_IOMMU", bdf);
	return 0;
}

static int type1_group(struct t_edu *e, const char *bdf)
{
	struct vfio_group_status status = {.argsz = sizeof(status)};
	char path[PATH_MAX];
	int ret = group_path(bdf, path, sizeof(path));

	if (ret)
		return ret;
	e->group = open(path, O_RDWR | O_CLOEXEC);
	if (e->group < 0)
		return fail(-errno, "%s: open %s", bdf, path);
	if (ioctl(e->group, VFIO_GROUP_GET_STATUS, &status))
		return fail(-errno, "%s: VFIO_GROUP_GET_STATUS", bdf);
	if (!(status.flags & VFIO_GROUP_FLAGS_VIABLE))
		return fail(-EBUSY,
			    "%s: group %s not viable (another device in it "
			    "has a host driver)",
			    bdf, path);
	if (ioctl(e->group, VFIO_GROUP_SET_CONTAINER, &e->container))
		return fail(-errno, "%s: VFIO_GROUP_SET_CONTAINER", bdf);
	if (ioctl(e->container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU))
		return fail(-errno, "%s: VFIO_SET_IOMMU", bdf);
	return 0;
}

int t_edu_open_type1(const char *bdf, struct t_edu *e)
{
	int ret;

	edu_init(e);
	ret = type1_container(e, bdf);
	if (!ret)
		ret = type1_group(e, bdf);
	if (!ret) {
		e->device = ioctl(e->group, VFIO_GROUP_GET_DEVICE_FD, bdf);
		if (e->device < 0)
			ret = fail(-errno, "%s: VFIO_GROUP_GET_DEVICE_FD", bdf);
	}
	if (!ret)
		ret = setup_device(e, bdf);
	if (ret)
		t_edu_close(e);
	return ret;
}

int t_edu_attach(int device, const char *bdf, struct t_edu *e)
{
	int ret;

	edu_init(e);
	e->device = device;
	ret = setup_device(e, bdf);
	if (ret)
		e->device = -1;
	return ret;
}

static int cdev_path(const char *bdf, char *path, size_t len)
{
	char dir[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int n, ret = -ENODEV;

	snprintf(dir, sizeof(dir), "/sys/bus/pci/devices/%s/vfio-dev", bdf);
	d = opendir(dir);
	if (!d)
		return fail(-errno, "%s: no VFIO cdev (%s)", bdf, dir);
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "vfio", 4)) {
			n = snprintf(path, len, "/dev/vfio/devices/%s",
				     de->d_name);
			ret = (size_t)n < len ? 0 : -ENAMETOOLONG;
			break;
		}
	closedir(d);
	return ret ? fail(ret, "%s: nothing in %s", bdf, dir) : 0;
}

static int iommufd_ioas(struct t_edu *e, const char *bdf)
{
	struct iommu_ioas_alloc alloc = {.size = sizeof(alloc)};

	e->iommufd = open("/dev/iommu", O_RDWR | O_CLOEXEC);
	if (e->iommufd < 0)
		return fail(-errno, "%s: open /dev/iommu", bdf);
	if (ioctl(e->iommufd, IOMMU_IOAS_ALLOC, &alloc))
		return fail(-errno, "%s: IOMMU_IOAS_ALLOC", bdf);
	e->ioas_id = alloc.out_ioas_id;
	return 0;
}

/* Closing the cdev later undoes both the bind and the attach. */
static int iommufd_device(struct t_edu *e, const char *bdf)
{
	struct vfio_device_bind_iommufd bind = {.argsz = sizeof(bind),
						.iommufd = e->iommufd};
	struct vfio_device_attach_iommufd_pt attach = {.argsz = sizeof(attach),
						       .pt_id = e->ioas_id};
	char path[PATH_MAX];
	int ret = cdev_path(bdf, path, sizeof(path));

	if (ret)
		return ret;
	e->device = open(path, O_RDWR | O_CLOEXEC);
	if (e->device < 0)
		return fail(-errno, "%s: open %s", bdf, path);
	if (ioctl(e->device, VFIO_DEVICE_BIND_IOMMUFD, &bind))
		return fail(-errno, "%s: VFIO_DEVICE_BIND_IOMMUFD", bdf);
	if (ioctl(e->device, VFIO_DEVICE_ATTACH_IOMMUFD_PT, &attach))
		return fail(-errno, "%s: VFIO_DEVICE_ATTACH_IOMMUFD_PT", bdf);
	return 0;
}

int t_edu_open_iommufd(const char *bdf, struct t_edu *e)
{
	int ret;

	edu_init(e);
	ret = iommufd_ioas(e, bdf);
	if (!ret)
		ret = iommufd_device(e, bdf);
	if (!ret)
		ret = setup_device(e, bdf);
	if (ret)
		t_edu_close(e);
	return ret;
}

static int dma_check(struct t_edu *e, uint64_t iova, size_t len)
{
	uint32_t cmd;
	int ret;

	if (!len || len > T_EDU_DMA_MAX)
		return fail(-EINVAL, "DMA of %zu bytes (1..%u)", len,
			    T_EDU_DMA_MAX);
	if (iova >= T_EDU_IOVA_LIMIT || len > T_EDU_IOVA_LIMIT - iova)
		return fail(-ERANGE,
			    "DMA at iova 0x%llx+%zu crosses edu's 28-bit mask",
			    (unsigned long long)iova, len);
	/* edu drops register writes while a DMA runs. */
	ret = mmio_read(e, EDU_DMA_CMD, &cmd);
	if (!ret && (cmd & EDU_CMD_RUN))
		ret = fail(-EBUSY, "DMA still running from an earlier call");
	return ret;
}

/* Write a register and read it back: a dropped write fails here. */
static int dma_reg(struct t_edu *e, uint32_t reg, uint32_t val)
{
	uint32_t got;
	int ret = mmio_write(e, reg, val);

	if (!ret)
		ret = mmio_read(e, reg, &got);
	if (!ret && got != val)
		ret = fail(-EIO, "BAR0 0x%02x reads 0x%x after 0x%x", reg, got,
			   val);
	return ret;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * edu copies from a timer 100 ms (virtual clock) after the command write,
 * so every DMA takes that long; under TCG the virtual clock follows the
 * host's, and the timeout leaves room for a loaded host.
 */
static int dma_wait(struct t_edu *e, uint64_t iova, size_t len)
{
	const struct timespec tick = {.tv_nsec = 1000000};
	int64_t deadline = now_ms() + DMA_TIMEOUT_MS;
	uint32_t cmd;
	int ret;

	do {
		ret = mmio_read(e, EDU_DMA_CMD, &cmd);
		if (ret || !(cmd & EDU_CMD_RUN))
			return ret;
		nanosleep(&tick, NULL);
	} while (now_ms() < deadline);
	return fail(-ETIMEDOUT,
		    "DMA of %zu bytes at iova 0x%llx not done after %d ms", len,
		    (unsigned long long)iova, DMA_TIMEOUT_MS);
}

int t_edu_dma(struct t_edu *e, uint64_t iova, size_t len, int to_device)
{
	/* dma_check() bounds both far below 4 GB: 32 bits carry them. */
	uint32_t ram = (uint32_t)iova, cnt = (uint32_t)len;
	uint32_t src = to_device ? ram : EDU_BUF;
	uint32_t dst = to_device ? EDU_BUF : ram;
	uint32_t cmd = EDU_CMD_RUN | (to_device ? 0 : EDU_CMD_TO_RAM);
	int ret = dma_check(e, iova, len);

	if (!ret)
		ret = dma_reg(e, EDU_DMA_SRC, src);
	if (!ret)
		ret = dma_reg(e, EDU_DMA_DST, dst);
	if (!ret)
		ret = dma_reg(e, EDU_DMA_CNT, cnt);
	if (!ret)
		ret = mmio_write(e, EDU_DMA_CMD, cmd);
	return ret ? ret : dma_wait(e, iova, len);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void t_edu_close(struct t_edu *e)
{
	/* The device first: it holds the group and the iommufd binding. */
	close_fd(&e->device);
	close_fd(&e->group);
	close_fd(&e->container);
	close_fd(&e->iommufd);
}
