// SPDX-License-Identifier: MIT
/*
 * VFIO type1 through mreg on a real device (qemu's edu in the guest):
 * MAP_DMA of every folio size pins and UNMAP_DMA releases every pin; the
 * kernel refuses an overlapping IOVA and an unaligned address; hitting
 * dma_entry_limit gives -ENOSPC with a message that names it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/vfio.h>

#include "tcommon.h"
#include "tvfio.h"

#define LEN	    (32u << 20)
#define LIMIT_PARAM "/sys/module/vfio_iommu_type1/parameters/dma_entry_limit"

static char bdf[64];

static int open_domain(struct mreg_domain **d)
{
	struct mreg_domain_attr attr = {.backend = MREG_BACKEND_VFIO,
					.comp_mask = MREG_DOMAIN_ATTR_DEVICE,
					.device = bdf};

	return mreg_domain_open(&attr, d);
}

static int map_balance(const struct t_folio *c)
{
	struct mreg_region_info info = {.size = sizeof(info)};
	struct t_pins before, mapped;
	struct mreg_region *r;
	struct mreg_domain *d;
	struct mreg_buf *buf;

	T_CHECK(!t_buf(c, LEN, &buf), "%s: %s", c->name, mreg_last_error());
	T_CHECK(!open_domain(&d), "%s", mreg_last_error());
	t_pins_read(&before);
	T_CHECK(!mreg_region_register(d, mreg_buf_addr(buf), LEN, &r), "%s: %s",
		c->name, mreg_last_error());
	t_pins_read(&mapped);
	mreg_region_query(r, &info);
	T_CHECK(mapped.acquired - before.acquired >= LEN / 4096,
		"%s: MAP_DMA pinned %" PRIu64 " pages", c->name,
		mapped.acquired - before.acquired);
	T_CHECK(info.iova % (2u << 20) == info.addr % (2u << 20),
		"iova 0x%" PRIx64 " lost the 2 MB offset", info.iova);
	T_CHECK(!mreg_region_deregister(r, NULL), "%s", mreg_last_error());
	T_CHECK(t_pins_balanced(&before), "%s: pins leaked", c->name);
	T_CHECK(!mreg_domain_close(d), "%s", mreg_last_error());
	printf("  %-10s MAP_DMA iova 0x%" PRIx64 ", pins balanced\n", c->name,
	       info.iova);
	mreg_buf_free(buf);
	return T_PASS;
}

static int raw_map(int container, void *va, uint64_t iova, uint64_t len)
{
	struct vfio_iommu_type1_dma_map map = {
		.argsz = sizeof(map),
		.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
		.vaddr = (uintptr_t)va,
		.iova = iova,
		.size = len,
	};

	return ioctl(container, VFIO_IOMMU_MAP_DMA, &map) ? -errno : 0;
}

static int refusals(struct mreg_buf *buf)
{
	struct mreg_region_info info = {.size = sizeof(info)};
	struct mreg_region *r;
	struct mreg_domain *d;
	char *va = mreg_buf_addr(buf);
	int container, ret;

	T_CHECK(!open_domain(&d), "%s", mreg_last_error());
	container = *(int *)mreg_domain_native(d);
	T_CHECK(!mreg_region_register(d, va, 4u << 20, &r), "%s",
		mreg_last_error());
	mreg_region_query(r, &info);
	ret = raw_map(container, va + (4u << 20), info.iova + 4096, 1u << 20);
	T_CHECK(ret == -EEXIST, "overlapping IOVA: %d, want -EEXIST", ret);
	ret = raw_map(container, va + 1, info.iova + (64u << 20), 4096);
	T_CHECK(ret == -EINVAL, "unaligned vaddr: %d, want -EINVAL", ret);
	T_CHECK(mreg_region_register(d, va + 1, 4096, &r) == -EINVAL,
		"mreg must refuse an unaligned address");
	mreg_region_deregister(r, NULL);
	T_CHECK(!mreg_domain_close(d), "%s", mreg_last_error());
	printf("  overlapping IOVA and unaligned vaddr refused\n");
	return T_PASS;
}

/* Lower dma_entry_limit to 3 and map a 4th page-sized region. */
static int entry_limit(struct mreg_buf *buf)
{
	struct mreg_region *r[4] = {0};
	char old[32] = "";
	struct mreg_domain *d;
	int fd, i, ret = 0;

	fd = open(LIMIT_PARAM, O_RDWR);
	if (fd < 0 || read(fd, old, sizeof(old) - 1) <= 0)
		return t_skip("dma_entry_limit is not writable here");
	T_CHECK(pwrite(fd, "3", 1, 0) == 1, "set dma_entry_limit");
	T_CHECK(!open_domain(&d), "%s", mreg_last_error());
	for (i = 0; i < 4 && !ret; i++)
		ret = mreg_region_register(
			d, (char *)mreg_buf_addr(buf) + (size_t)i * (8u << 20),
			4096, &r[i]);
	pwrite(fd, old, strlen(old), 0);
	close(fd);
	T_CHECK(ret == -ENOSPC && i == 4, "4th map: %d after %d", ret, i);
	T_CHECK(strstr(mreg_last_error(), "dma_entry_limit"), "message: %s",
		mreg_last_error());
	for (i = 0; i < 3; i++)
		mreg_region_deregister(r[i], NULL);
	T_CHECK(!mreg_domain_close(d), "%s", mreg_last_error());
	printf("  dma_entry_limit: %s\n", mreg_last_error());
	return T_PASS;
}

int main(void)
{
	struct t_folio cases[32];
	struct mreg_buf *buf;
	int n, i, ret = T_PASS;

	t_init("test_vfio");
	if (!mreg_backend_supported(MREG_BACKEND_VFIO) ||
	    t_vfio_device(bdf, sizeof(bdf)))
		return t_skip("no /dev/vfio/vfio or no device bound to "
			      "vfio-pci");
	if (geteuid())
		return t_skip(
			"folio sizes are chosen through sysfs: needs root");
	n = t_folio_cases(cases, 32, MREG_BACKING_ANON);
	for (i = 0; i < n && !ret; i++)
		ret = map_balance(&cases[i]);
	T_CHECK(!ret && !t_buf(&cases[0], LEN, &buf), "%s", mreg_last_error());
	ret = refusals(buf);
	if (!ret)
		ret = entry_limit(buf);
	mreg_buf_free(buf);
	return ret == T_SKIP ? T_PASS : ret;
}
