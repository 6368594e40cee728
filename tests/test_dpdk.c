// SPDX-License-Identifier: MIT
/*
 * The dpdk backend, checked by a device: qemu's edu, on vfio-pci, copies
 * with its DMA engine from one region into another through the DPDK VFIO
 * container mreg mapped them in, and the bytes must arrive.
 *
 *  own:     mreg starts the EAL (the test has not), creates the container
 *           and sets the device up; one region at an IOVA the test picks,
 *           one at IOVA = VA (a buffer mapped below edu's 28-bit limit).
 *           DPDK must know both, at those IOVAs, with the verified folio
 *           size as its page size; the calling thread's CPUs unchanged.
 *  bad:     unaligned, an IOVA taken, memory DPDK already has, the memseg
 *           lists used up, dma_entry_limit reached: each a clear error,
 *           nothing left mapped, the first region still moving data.
 *  adopt:   the application's own container and device in the running
 *           EAL; it still maps after mreg's domain is closed.
 *
 * Pins are balanced after each.
 *   test_dpdk [BDF]    default: $MREG_VFIO_DEVICE or the first vfio-pci device
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_memory.h>
#include <rte_vfio.h>

#include "tcommon.h"
#include "tedu.h"
#include "tpaths.h"
#include "tvfio.h"

#define LEN	   (1u << 20)
#define CHUNK	   T_EDU_DMA_MAX
#define FIXED_IOVA 0x200000ull
/* Below edu's 28 bits, so IOVA = VA reaches the device. */
#define LOW_VA ((void *)0x8000000ul)
#define SMALL  (64u << 10)
#define MANY   160
#define ENTRY_LIMIT_PARAM \
	"/sys/module/vfio_iommu_type1/parameters/dma_entry_limit"

struct bufs {
	struct mreg_buf *a; /* 64 kB folios where the system gives them */
	void *low;	    /* at LOW_VA */
};

static int open_own(const char *bdf, struct mreg_domain **d, uint32_t max)
{
	struct mreg_domain_attr attr = {.backend = MREG_BACKEND_DPDK,
					.comp_mask =
						MREG_DOMAIN_ATTR_DEVICE |
						MREG_DOMAIN_ATTR_MAX_REGIONS,
					.device = bdf,
					.max_regions = max};

	return mreg_domain_open(&attr, d);
}

static int reg(struct mreg_domain *d, void *addr, uint64_t len, uint64_t iova,
	       struct mreg_region **r)
{
	struct mreg_region_attr a = {.size = sizeof(a),
				     .comp_mask =
					     iova ? MREG_REGION_ATTR_IOVA : 0,
				     .addr = addr,
				     .length = len,
				     .iova = iova};

	return mreg_region_register_attr(d, &a, r);
}

static uint64_t iova_of(const struct mreg_region *r)
{
	struct mreg_region_info info = {.size = sizeof(info)};

	mreg_region_query(r, &info);
	return info.iova;
}

static void fill(unsigned char *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(i * 131 + seed);
}

/* @off of src through the device into @off of dst. */
static int through_device(struct t_edu *e, unsigned char *src,
			  const struct mreg_region *rs, unsigned char *dst,
			  const struct mreg_region *rd, size_t off,
			  unsigned int seed)
{
	int ret;

	fill(src + off, CHUNK, seed);
	memset(dst + off, 0, CHUNK);
	ret = t_edu_dma(e, iova_of(rs) + off, CHUNK, 1);
	if (!ret)
		ret = t_edu_dma(e, iova_of(rd) + off, CHUNK, 0);
	T_CHECK(!ret, "edu DMA at +0x%zx: %s", off, strerror(-ret));
	T_CHECK(!memcmp(src + off, dst + off, CHUNK),
		"bytes through the device differ at +0x%zx", off);
	return T_PASS;
}

static int dma_both_ways(struct t_edu *e, void *a, struct mreg_region *ra,
			 void *b, struct mreg_region *rb, unsigned int seed)
{
	int ret = through_device(e, a, ra, b, rb, 0, seed);

	if (!ret)
		ret = through_device(e, b, rb, a, ra, LEN - CHUNK, seed + 1);
	return ret;
}

/*
 * DPDK knows the region: the memseg of its last byte has the IOVA mreg
 * mapped, and the page size mreg told it.  (rte_mem_virt2iova() would
 * say VA whatever the memseg holds: the EAL runs IOVA as VA.)
 */
static int dpdk_knows(const struct mreg_region *r, void *addr,
		      uint64_t want_page)
{
	char *last = (char *)addr + LEN - 1;
	const struct rte_memseg *ms = rte_mem_virt2memseg(last, NULL);
	uint64_t iova;

	T_CHECK(ms, "DPDK has no memseg for %p", last);
	iova = ms->iova + (uint64_t)(last - (char *)ms->addr);
	T_CHECK(iova == iova_of(r) + LEN - 1,
		"DPDK's IOVA of the last byte is 0x%" PRIx64 ", not 0x%" PRIx64,
		iova, iova_of(r) + LEN - 1);
	T_CHECK(ms->hugepage_sz == want_page,
		"DPDK's page size for %p is %" PRIu64 ", not %" PRIu64, addr,
		(uint64_t)ms->hugepage_sz, want_page);
	return T_PASS;
}

static int alloc_bufs(struct bufs *b)
{
	struct mreg_buf_attr ba = {.size = sizeof(ba),
				   .flags = MREG_BUF_ALLOW_FALLBACK |
					    MREG_BUF_SET_POLICY,
				   .length = LEN,
				   .folio_size = 65536};

	T_CHECK(!mreg_buf_alloc(&ba, &b->a), "%s", mreg_last_error());
	b->low = mmap(LOW_VA, LEN, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	T_CHECK(b->low == LOW_VA, "mmap at %p: %s", LOW_VA, strerror(errno));
	memset(b->low, 0, LEN);
	return T_PASS;
}

static uint64_t verified_page(const struct mreg_buf *b)
{
	return mreg_buf_verified(b) ? 65536 : 4096;
}

static int same_cpus(const cpu_set_t *before)
{
	cpu_set_t now;

	T_CHECK(!sched_getaffinity(0, sizeof(now), &now), "%s",
		strerror(errno));
	T_CHECK(CPU_EQUAL(before, &now),
		"the EAL changed the calling thread's CPUs");
	return T_PASS;
}

static int own(const char *bdf, struct bufs *b)
{
	struct mreg_region *ra, *rb;
	struct mreg_dpdk_native *native;
	struct mreg_domain *d;
	struct t_edu e;
	cpu_set_t cpus;
	int ret;

	sched_getaffinity(0, sizeof(cpus), &cpus);
	T_CHECK(!open_own(bdf, &d, 8), "%s", mreg_last_error());
	T_CHECK(!same_cpus(&cpus), "affinity");
	T_CHECK(rte_eal_iova_mode() == RTE_IOVA_VA, "the EAL is not IOVA=VA");
	native = mreg_domain_native(d);
	T_CHECK(native && native->device_fd >= 0, "no device fd in native");
	T_CHECK(!t_edu_attach(native->device_fd, bdf, &e), "%s is no edu", bdf);
	T_CHECK(!reg(d, mreg_buf_addr(b->a), LEN, FIXED_IOVA, &ra), "%s",
		mreg_last_error());
	T_CHECK(!reg(d, b->low, LEN, 0, &rb), "%s", mreg_last_error());
	T_CHECK(iova_of(ra) == FIXED_IOVA && iova_of(rb) == (uintptr_t)LOW_VA,
		"iovas 0x%" PRIx64 " 0x%" PRIx64, iova_of(ra), iova_of(rb));
	ret = dpdk_knows(ra, mreg_buf_addr(b->a), verified_page(b->a));
	if (!ret)
		ret = dpdk_knows(rb, b->low, 4096);
	if (!ret)
		ret = dma_both_ways(&e, mreg_buf_addr(b->a), ra, b->low, rb, 7);
	T_CHECK(!mreg_region_deregister(ra, NULL) &&
			!mreg_region_deregister(rb, NULL),
		"%s", mreg_last_error());
	T_CHECK(!rte_mem_virt2memseg(b->low, NULL),
		"DPDK still has %p after deregistration", b->low);
	T_CHECK(!mreg_domain_close(d), "%s", mreg_last_error());
	if (!ret)
		printf("  own: edu DMA %s <-> IOVA=VA, bytes match; DPDK page "
		       "size %" PRIu64 " (verified folios)\n",
		       "fixed IOVA", verified_page(b->a));
	return ret;
}

static int expect(int got, int want, const char *what, const char *needle)
{
	const char *msg = mreg_last_error();

	T_CHECK(got == want, "%s: %d (%s), expected %d", what, got,
		strerror(-got), want);
	T_CHECK(!needle || strstr(msg, needle), "%s: message \"%s\" lacks %s",
		what, msg, needle);
	printf("  bad: %s: %s\n", what, msg);
	return T_PASS;
}

/* Until extmem runs out of memseg lists: -ENOSPC, nothing half done. */
static int memseg_lists(struct mreg_domain *d)
{
	static struct mreg_region *rs[MANY];
	char *area = mmap(NULL, (size_t)MANY * SMALL, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	int i, n, ret = 0;

	T_CHECK(area != MAP_FAILED, "%s", strerror(errno));
	for (n = 0; n < MANY && !ret; n++)
		ret = reg(d, area + (size_t)n * SMALL, SMALL,
			  (uint64_t)(0x1000000 + n * SMALL), &rs[n]);
	n--;
	for (i = 0; i < n; i++)
		T_CHECK(!mreg_region_deregister(rs[i], NULL), "%s",
			mreg_last_error());
	T_CHECK(!expect(ret, -ENOSPC, "memseg lists used up", "memseg"),
		"after %d regions", n);
	printf("    after %d regions\n", n);
	munmap(area, (size_t)MANY * SMALL);
	return T_PASS;
}

static int bad(const char *bdf, struct bufs *b)
{
	char *a = mreg_buf_addr(b->a);
	struct mreg_region *ra, *rb = NULL;
	struct mreg_domain *d;
	struct t_edu e;

	T_CHECK(!open_own(bdf, &d, MANY + 8), "%s", mreg_last_error());
	T_CHECK(!t_edu_attach(((struct mreg_dpdk_native *)mreg_domain_native(d))
				      ->device_fd,
			      bdf, &e),
		"edu");
	T_CHECK(!reg(d, a, LEN, FIXED_IOVA, &ra), "%s", mreg_last_error());
	T_CHECK(!expect(reg(d, a + 1, 4096, 0, &rb), -EINVAL, "unaligned addr",
			"page-aligned"),
		"unaligned");
	T_CHECK(!expect(reg(d, b->low, LEN, FIXED_IOVA + 4096, &rb), -EBUSY,
			"an IOVA another region has", "taken"),
		"iova");
	T_CHECK(!expect(reg(d, a, LEN, 0x800000, &rb), -EEXIST,
			"memory DPDK already has", "overlaps"),
		"extmem");
	T_CHECK(!memseg_lists(d), "memseg lists");
	T_CHECK(!reg(d, b->low, LEN, 0, &rb), "%s", mreg_last_error());
	T_CHECK(!dma_both_ways(&e, a, ra, b->low, rb, 11),
		"the first region after the failures");
	T_CHECK(!mreg_region_deregister(ra, NULL) &&
			!mreg_region_deregister(rb, NULL),
		"%s", mreg_last_error());
	T_CHECK(!mreg_domain_close(d), "%s", mreg_last_error());
	return T_PASS;
}

/* vfio_iommu_type1 reads the limit when the container gets its IOMMU. */
static int entry_limit(const char *bdf, struct bufs *b)
{
	struct mreg_region *r[3] = {NULL};
	struct mreg_domain *d;
	char old[32] = "";
	int ret, i;
	FILE *f = fopen(ENTRY_LIMIT_PARAM, "r");

	if (!f || !fgets(old, sizeof(old), f)) {
		if (f)
			fclose(f);
		printf("  bad: no %s: dma_entry_limit not run\n",
		       ENTRY_LIMIT_PARAM);
		return T_PASS;
	}
	fclose(f);
	T_CHECK(!t_write_file(ENTRY_LIMIT_PARAM, "2"), "set dma_entry_limit");
	ret = open_own(bdf, &d, 8);
	t_write_file(ENTRY_LIMIT_PARAM, old);
	T_CHECK(!ret, "%s", mreg_last_error());
	for (i = 0; i < 3 && !ret; i++)
		ret = reg(d, (char *)mreg_buf_addr(b->a) + i * SMALL, SMALL,
			  FIXED_IOVA + (uint64_t)i * SMALL, &r[i]);
	T_CHECK(!expect(ret, -ENOSPC, "dma_entry_limit 2, third region",
			"dma_entry_limit"),
		"entry limit after %d", i);
	for (i = 0; i < 2; i++)
		T_CHECK(r[i] && !mreg_region_deregister(r[i], NULL), "%s",
			mreg_last_error());
	T_CHECK(!mreg_domain_close(d), "%s", mreg_last_error());
	return T_PASS;
}

static int app_device(const char *bdf, int *container, int *device)
{
	struct vfio_device_info info = {.argsz = sizeof(info)};
	int group;

	*container = rte_vfio_container_create();
	T_CHECK(*container >= 0, "rte_vfio_container_create");
	T_CHECK(rte_vfio_get_group_num("/sys/bus/pci/devices", bdf, &group) > 0,
		"group of %s", bdf);
	T_CHECK(rte_vfio_container_group_bind(*container, group) >= 0,
		"group bind");
	T_CHECK(!rte_vfio_setup_device("/sys/bus/pci/devices", bdf, device,
				       &info),
		"rte_vfio_setup_device %s", bdf);
	return T_PASS;
}

static int adopt(const char *bdf, struct bufs *b)
{
	struct mreg_domain_attr attr = {.backend = MREG_BACKEND_DPDK,
					.comp_mask = MREG_DOMAIN_ATTR_ADOPT};
	struct mreg_region *ra, *rb;
	struct mreg_domain *d;
	int container, device, ret;
	struct t_edu e;

	T_CHECK(!app_device(bdf, &container, &device), "the app's device");
	T_CHECK(!t_edu_attach(device, bdf, &e), "edu");
	attr.fd = container;
	T_CHECK(!mreg_domain_open(&attr, &d), "%s", mreg_last_error());
	T_CHECK(!reg(d, mreg_buf_addr(b->a), LEN, FIXED_IOVA, &ra), "%s",
		mreg_last_error());
	T_CHECK(!reg(d, b->low, LEN, 0, &rb), "%s", mreg_last_error());
	ret = dma_both_ways(&e, mreg_buf_addr(b->a), ra, b->low, rb, 23);
	T_CHECK(!mreg_region_deregister(ra, NULL) &&
			!mreg_region_deregister(rb, NULL),
		"%s", mreg_last_error());
	T_CHECK(!mreg_domain_close(d), "%s", mreg_last_error());
	T_CHECK(!ret, "DMA through the adopted container");
	T_CHECK(!rte_vfio_container_dma_map(container, (uintptr_t)b->low,
					    FIXED_IOVA, LEN) &&
			!rte_vfio_container_dma_unmap(
				container, (uintptr_t)b->low, FIXED_IOVA, LEN),
		"the application's container no longer maps");
	T_CHECK(!rte_vfio_release_device("/sys/bus/pci/devices", bdf, device),
		"release");
	T_CHECK(!rte_vfio_container_destroy(container), "destroy");
	printf("  adopt: edu DMA through the application's container, which "
	       "still maps after close\n");
	return T_PASS;
}

int main(int argc, char **argv)
{
	struct t_pins before;
	struct bufs b;
	char bdf[64];
	int ret;

	t_init("test_dpdk");
	if (geteuid())
		return t_skip("VFIO needs root");
	if (!mreg_backend_supported(MREG_BACKEND_DPDK))
		return t_skip("no dpdk backend here (librte_eal or VFIO)");
	if (argc > 1)
		snprintf(bdf, sizeof(bdf), "%s", argv[1]);
	else if (t_vfio_device(bdf, sizeof(bdf)))
		return t_skip("no device bound to vfio-pci");
	t_pins_read(&before);
	T_CHECK(!alloc_bufs(&b), "buffers");
	ret = own(bdf, &b);
	if (!ret)
		ret = bad(bdf, &b);
	if (!ret)
		ret = entry_limit(bdf, &b);
	if (!ret)
		ret = adopt(bdf, &b);
	mreg_buf_free(b.a);
	munmap(b.low, LEN);
	T_CHECK(t_pins_balanced(&before), "pins left");
	if (!ret)
		printf("  pins balanced\n");
	return ret;
}
