// SPDX-License-Identifier: MIT
/*
 * A device really reaches what mreg maps: the application opens qemu's
 * edu device itself, through a VFIO type1 container or an iommufd IOAS,
 * and hands the container or IOAS to mreg (MREG_DOMAIN_ATTR_ADOPT).  Two
 * regions registered through mreg, at the IOVA mreg chose or one the
 * application chose, are then the source and destination of edu's DMA
 * engine: the bytes written into one by the CPU come back in the other
 * through the device, at the start and at the end of each region.  After
 * the domain is closed the application's container or IOAS still maps.
 *
 *   test_dma [BDF]    default: $MREG_VFIO_DEVICE or the first vfio-pci device
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/iommufd.h>
#include <linux/vfio.h>

#include "tcommon.h"
#include "tedu.h"
#include "tvfio.h"

#define LEN	  (64u << 10)
#define CHUNK	  T_EDU_DMA_MAX
#define FIXED_SRC 0x200000ull
#define FIXED_DST 0x400000ull

static int adopt(const struct t_edu *e, struct mreg_domain **d)
{
	struct mreg_domain_attr attr = {.comp_mask = MREG_DOMAIN_ATTR_ADOPT};

	if (e->container >= 0) {
		attr.backend = MREG_BACKEND_VFIO;
		attr.fd = e->container;
	} else {
		attr.backend = MREG_BACKEND_IOMMUFD;
		attr.fd = e->iommufd;
		attr.ioas_id = e->ioas_id;
	}
	return mreg_domain_open(&attr, d);
}

/* At the IOVA mreg picks (@iova 0) or at @iova. */
static int reg(struct mreg_domain *d, void *buf, uint64_t iova,
	       struct mreg_region **r, uint64_t *got)
{
	struct mreg_region_attr a = {
		.size = sizeof(a), .addr = buf, .length = LEN, .iova = iova};
	struct mreg_region_info info = {.size = sizeof(info)};
	int ret;

	a.comp_mask = iova ? MREG_REGION_ATTR_IOVA : 0;
	ret = mreg_region_register_attr(d, &a, r);
	if (ret)
		return ret;
	mreg_region_query(*r, &info);
	*got = info.iova;
	return 0;
}

static void fill(unsigned char *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(i * 31 + seed);
}

/* @off of src through the device into @off of dst; compare. */
static int through_device(struct t_edu *e, unsigned char *src, uint64_t siova,
			  unsigned char *dst, uint64_t diova, size_t off,
			  unsigned int seed)
{
	int ret;

	fill(src + off, CHUNK, seed);
	memset(dst + off, 0, CHUNK);
	ret = t_edu_dma(e, siova + off, CHUNK, 1);
	if (!ret)
		ret = t_edu_dma(e, diova + off, CHUNK, 0);
	T_CHECK(!ret, "edu DMA at +0x%zx: %s", off, strerror(-ret));
	T_CHECK(!memcmp(src + off, dst + off, CHUNK),
		"bytes through the device differ at +0x%zx", off);
	return T_PASS;
}

static int dma_pair(struct t_edu *e, struct mreg_domain *d, unsigned char *src,
		    unsigned char *dst, uint64_t want_src, uint64_t want_dst,
		    const char *name)
{
	struct mreg_region *rs, *rd;
	uint64_t siova, diova;
	int ret;

	T_CHECK(!reg(d, src, want_src, &rs, &siova), "%s: %s", name,
		mreg_last_error());
	T_CHECK(!reg(d, dst, want_dst, &rd, &diova), "%s: %s", name,
		mreg_last_error());
	T_CHECK(!want_src || (siova == want_src && diova == want_dst),
		"%s: asked for iova 0x%" PRIx64 ", got 0x%" PRIx64, name,
		want_src, siova);
	T_CHECK(siova + LEN <= T_EDU_IOVA_LIMIT &&
			diova + LEN <= T_EDU_IOVA_LIMIT,
		"%s: iova 0x%" PRIx64 "/0x%" PRIx64 " beyond edu's 28 bits",
		name, siova, diova);
	ret = through_device(e, src, siova, dst, diova, 0, 1);
	if (!ret)
		ret = through_device(e, src, siova, dst, diova, LEN - CHUNK, 2);
	T_CHECK(!mreg_region_deregister(rs, NULL) &&
			!mreg_region_deregister(rd, NULL),
		"%s: %s", name, mreg_last_error());
	if (!ret)
		printf("    %s: iova 0x%" PRIx64 " -> edu -> iova 0x%" PRIx64
		       ", first and last %u bytes match\n",
		       name, siova, diova, CHUNK);
	return ret;
}

/* The application's container or IOAS still maps once mreg is gone. */
static int still_maps(const struct t_edu *e, void *buf)
{
	if (e->container >= 0) {
		struct vfio_iommu_type1_dma_map map = {
			.argsz = sizeof(map),
			.flags = VFIO_DMA_MAP_FLAG_READ,
			.vaddr = (uintptr_t)buf,
			.iova = FIXED_SRC,
			.size = LEN};
		struct vfio_iommu_type1_dma_unmap unmap = {
			.argsz = sizeof(unmap), .iova = FIXED_SRC, .size = LEN};

		return ioctl(e->container, VFIO_IOMMU_MAP_DMA, &map) ||
		       ioctl(e->container, VFIO_IOMMU_UNMAP_DMA, &unmap);
	} else {
		struct iommu_ioas_map map = {.size = sizeof(map),
					     .flags = IOMMU_IOAS_MAP_READABLE |
						      IOMMU_IOAS_MAP_FIXED_IOVA,
					     .ioas_id = e->ioas_id,
					     .user_va = (uintptr_t)buf,
					     .length = LEN,
					     .iova = FIXED_SRC};
		struct iommu_ioas_unmap unmap = {.size = sizeof(unmap),
						 .ioas_id = e->ioas_id,
						 .iova = FIXED_SRC,
						 .length = LEN};

		return ioctl(e->iommufd, IOMMU_IOAS_MAP, &map) ||
		       ioctl(e->iommufd, IOMMU_IOAS_UNMAP, &unmap);
	}
}

static int run(struct t_edu *e, const char *name, int mreg_iova)
{
	struct mreg_buf_attr ba = {.size = sizeof(ba),
				   .flags = MREG_BUF_ALLOW_FALLBACK,
				   .length = LEN,
				   .folio_size = 65536};
	struct mreg_buf *a = NULL, *b = NULL;
	struct t_pins before;
	struct mreg_domain *d;
	int ret = T_PASS;

	if (!geteuid())
		ba.flags |= MREG_BUF_SET_POLICY;
	t_pins_read(&before);
	T_CHECK(!adopt(e, &d), "%s: %s", name, mreg_last_error());
	T_CHECK(!mreg_buf_alloc(&ba, &a) && !mreg_buf_alloc(&ba, &b), "%s",
		mreg_last_error());
	printf("  %s (the application's %s):\n", name,
	       e->container >= 0 ? "container" : "iommufd and IOAS");
	if (mreg_iova)
		ret = dma_pair(e, d, mreg_buf_addr(a), mreg_buf_addr(b), 0, 0,
			       "mreg's IOVAs");
	if (!ret)
		ret = dma_pair(e, d, mreg_buf_addr(a), mreg_buf_addr(b),
			       FIXED_SRC, FIXED_DST, "chosen IOVAs");
	T_CHECK(!mreg_domain_close(d), "%s: %s", name, mreg_last_error());
	T_CHECK(!ret, "%s: DMA through the registrations", name);
	T_CHECK(!still_maps(e, mreg_buf_addr(a)),
		"%s: the application's object no longer maps: %s", name,
		strerror(errno));
	mreg_buf_free(a);
	mreg_buf_free(b);
	T_CHECK(t_pins_balanced(&before), "%s: pins left", name);
	printf("    the application's object still maps after the domain "
	       "closed; pins balanced\n");
	return T_PASS;
}

int main(int argc, char **argv)
{
	struct t_edu e;
	char bdf[64];
	int ret;

	t_init("test_dma");
	if (geteuid())
		return t_skip("VFIO needs root");
	if (argc > 1)
		snprintf(bdf, sizeof(bdf), "%s", argv[1]);
	else if (t_vfio_device(bdf, sizeof(bdf)))
		return t_skip("no device bound to vfio-pci");
	if (!mreg_backend_supported(MREG_BACKEND_VFIO))
		return t_skip("no VFIO here");
	ret = t_edu_open_type1(bdf, &e);
	if (ret)
		return t_skip("%s is not an edu on VFIO type1: %s", bdf,
			      strerror(-ret));
	ret = run(&e, "vfio", 1);
	t_edu_close(&e);
	if (ret)
		return ret;
	if (access("/dev/iommu", F_OK)) {
		printf("  iommufd: no /dev/iommu in this kernel: not run\n");
		return T_PASS;
	}
	ret = t_edu_open_iommufd(bdf, &e);
	T_CHECK(!ret, "iommufd: open %s: %s", bdf, strerror(-ret));
	/* iommufd picks IOVAs itself, likely above edu's 28 bits. */
	ret = run(&e, "iommufd", 0);
	t_edu_close(&e);
	return ret;
}
