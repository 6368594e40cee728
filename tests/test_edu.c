// SPDX-License-Identifier: MIT
/*
 * The edu driver (tedu) on its own, without mreg: map a buffer by hand
 * through VFIO type1 and through iommufd, have edu copy a pattern from
 * one IOVA into its buffer and back out to another, and compare. That the
 * copy lands, and after the unmap no longer does, proves the IOMMU
 * translated the IOVAs. usage: test_edu [BDF] (else $MREG_VFIO_DEVICE,
 * else the first device on vfio-pci).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/iommufd.h>
#include <linux/vfio.h>

#include "tcommon.h"
#include "tedu.h"
#include "tvfio.h"

#define IOVA	0x100000ull
#define MAP_LEN (64u << 10)
#define OUT	0x8000u /* where edu copies the pattern back to */
#define XFER	T_EDU_DMA_MAX

struct backend {
	const char *name;
	const char *node; /* missing: the kernel lacks the backend */
	const char *attr; /* in the device's sysfs dir: the same */
	int (*open)(const char *bdf, struct t_edu *e);
	int (*map)(struct t_edu *e, void *va, uint64_t iova, uint64_t len);
	int (*unmap)(struct t_edu *e, uint64_t iova, uint64_t len);
};

static int type1_map(struct t_edu *e, void *va, uint64_t iova, uint64_t len)
{
	struct vfio_iommu_type1_dma_map map = {
		.argsz = sizeof(map),
		.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
		.vaddr = (uintptr_t)va,
		.iova = iova,
		.size = len,
	};

	return ioctl(e->container, VFIO_IOMMU_MAP_DMA, &map) ? -errno : 0;
}

static int type1_unmap(struct t_edu *e, uint64_t iova, uint64_t len)
{
	struct vfio_iommu_type1_dma_unmap unmap = {
		.argsz = sizeof(unmap), .iova = iova, .size = len};

	if (ioctl(e->container, VFIO_IOMMU_UNMAP_DMA, &unmap))
		return -errno;
	return unmap.size == len ? 0 : -ENOENT;
}

static int ioas_map(struct t_edu *e, void *va, uint64_t iova, uint64_t len)
{
	struct iommu_ioas_map map = {
		.size = sizeof(map),
		.flags = IOMMU_IOAS_MAP_FIXED_IOVA | IOMMU_IOAS_MAP_READABLE |
			 IOMMU_IOAS_MAP_WRITEABLE,
		.ioas_id = e->ioas_id,
		.user_va = (uintptr_t)va,
		.length = len,
		.iova = iova,
	};

	return ioctl(e->iommufd, IOMMU_IOAS_MAP, &map) ? -errno : 0;
}

static int ioas_unmap(struct t_edu *e, uint64_t iova, uint64_t len)
{
	struct iommu_ioas_unmap unmap = {
		.size = sizeof(unmap),
		.ioas_id = e->ioas_id,
		.iova = iova,
		.length = len,
	};

	if (ioctl(e->iommufd, IOMMU_IOAS_UNMAP, &unmap))
		return -errno;
	return unmap.length == len ? 0 : -ENOENT;
}

static const struct backend backends[] = {
	{"type1", "/dev/vfio/vfio", "iommu_group", t_edu_open_type1, type1_map,
	 type1_unmap},
	{"iommufd", "/dev/iommu", "vfio-dev", t_edu_open_iommufd, ioas_map,
	 ioas_unmap},
};

/*
 * The pattern in, its complement everywhere edu is to write: every byte
 * must change, and one past the copy must not.
 */
static void fill(unsigned char *buf)
{
	size_t i;

	for (i = 0; i < XFER; i++)
		buf[i] = (unsigned char)(i * 7 + (i >> 8) + 1);
	for (i = 0; i < 4096; i++)
		buf[OUT + i] = (unsigned char)~buf[i];
}

static int compare(const unsigned char *buf)
{
	size_t i;

	for (i = 0; i < XFER; i++)
		T_CHECK(buf[OUT + i] == buf[i],
			"byte %zu: 0x%02x, want 0x%02x (no DMA, or the "
			"IOMMU faulted it: see dmesg)",
			i, buf[OUT + i], buf[i]);
	T_CHECK((buf[OUT + XFER] ^ buf[XFER]) == 0xff,
		"edu wrote past the %u bytes asked", XFER);
	return T_PASS;
}

/* RAM -> edu from IOVA, edu -> RAM to IOVA + OUT, compare. */
static int round_trip(struct t_edu *e, unsigned char *buf)
{
	int ret;

	fill(buf);
	ret = t_edu_dma(e, IOVA, XFER, 1);
	T_CHECK(!ret, "RAM->edu: %s", strerror(-ret));
	ret = t_edu_dma(e, IOVA + OUT, XFER, 0);
	T_CHECK(!ret, "edu->RAM: %s", strerror(-ret));
	return compare(buf);
}

/*
 * Unmapped, the same IOVA must be out of edu's reach: the IOMMU faults
 * the write (a DMAR line in dmesg) and the poison stays. edu's buffer
 * still holds the pattern, so a DMA that bypassed translation shows.
 */
static int blocked(struct t_edu *e, unsigned char *buf)
{
	size_t i;
	int ret;

	fill(buf);
	ret = t_edu_dma(e, IOVA + OUT, XFER, 0);
	T_CHECK(!ret, "edu->RAM after unmap: %s", strerror(-ret));
	for (i = 0; i < XFER; i++)
		T_CHECK((buf[OUT + i] ^ buf[i]) == 0xff,
			"byte %zu written through an unmapped IOVA", i);
	return T_PASS;
}

static int run(const struct backend *b, const char *bdf, unsigned char *buf)
{
	char path[128];
	struct t_edu e;
	int ret, unmapped;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/%s", bdf,
		 b->attr);
	if (access(b->node, F_OK) || access(path, F_OK))
		return t_skip("%s: no %s or no %s in this kernel", b->name,
			      b->node, path);
	ret = b->open(bdf, &e);
	T_CHECK(!ret, "%s: open %s: %s", b->name, bdf, strerror(-ret));
	ret = b->map(&e, buf, IOVA, MAP_LEN);
	T_CHECK(!ret, "%s: map iova 0x%llx: %s", b->name, IOVA, strerror(-ret));
	ret = round_trip(&e, buf);
	unmapped = b->unmap(&e, IOVA, MAP_LEN);
	if (!ret && !unmapped)
		ret = blocked(&e, buf);
	t_edu_close(&e);
	if (ret)
		return ret;
	T_CHECK(!unmapped, "%s: unmap: %s", b->name, strerror(-unmapped));
	printf("%s: %u bytes RAM->edu from iova 0x%llx, edu->RAM to "
	       "0x%llx: match; unmapped: blocked\n",
	       b->name, XFER, IOVA, IOVA + OUT);
	return T_PASS;
}

static unsigned long sysfs_hex(const char *bdf, const char *attr)
{
	unsigned long v = 0;
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/%s", bdf, attr);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fscanf(f, "%lx", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

/* DMA only into what is an edu: a vfio-pci device may be anything. */
static int is_edu(const char *bdf)
{
	return sysfs_hex(bdf, "vendor") == 0x1234 &&
	       sysfs_hex(bdf, "device") == 0x11e8;
}

int main(int argc, char **argv)
{
	unsigned char *buf;
	char bdf[64];
	size_t i;
	int ret, passed = 0;

	t_init("test_edu");
	if (argc > 1)
		snprintf(bdf, sizeof(bdf), "%s", argv[1]);
	else if (t_vfio_device(bdf, sizeof(bdf)))
		return t_skip("no device bound to vfio-pci");
	if (!is_edu(bdf))
		return t_skip("%s is not qemu's edu (1234:11e8)", bdf);
	buf = mmap(NULL, MAP_LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_CHECK(buf != MAP_FAILED, "mmap: %s", strerror(errno));
	for (i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
		ret = run(&backends[i], bdf, buf);
		if (ret == T_FAIL)
			return T_FAIL;
		passed += ret == T_PASS;
	}
	munmap(buf, MAP_LEN);
	return passed ? T_PASS : T_SKIP;
}
