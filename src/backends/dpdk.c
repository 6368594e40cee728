// SPDX-License-Identifier: MIT
/*
 * DPDK external memory (DPDK 22.11): a region is rte_extmem_register()ed,
 * so DPDK knows its pages and their IOVAs and its mempools and drivers may
 * use it, then mapped for the device with one rte_vfio_container_dma_map(),
 * which is a single VFIO_IOMMU_MAP_DMA.  IOVA = VA unless the caller picks
 * one.  The page size DPDK is told is the buffer's verified folio size, so
 * DPDK keeps one memseg per folio instead of one per 4 kB page.
 *
 * The domain is a DPDK VFIO container with a device in it.  mreg creates
 * one (rte_vfio_container_create(), the device's group bound to it, the
 * device set up), initialising the EAL first if the application has not:
 * no PCI scan, no hugepages, no shared files, no telemetry, IOVA as VA,
 * main lcore on the caller's CPUs.  With MREG_DOMAIN_ATTR_ADOPT it maps
 * into a container of the application's own EAL instead.
 * rte_dev_dma_map() is not used: it needs a device that a DPDK driver
 * probed, and a device such as qemu's edu has none.
 *
 * librte_eal is dlopened on first use, like libibverbs, so libmreg runs
 * where DPDK is not installed; only DPDK's headers are used to build.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_memory.h>
#include <rte_vfio.h>

#include "../internal.h"
#include "../iova.h"
#include "../vfio_dev.h"

#define EAL_SONAME  "librte_eal.so.23"
#define EAL_VERSION "DPDK_23"
#define PCI_SYSFS   "/sys/bus/pci/devices"
/* DPDK 22.11's per-container table of user maps (VFIO_MAX_USER_MEM_MAPS). */
#define USER_MAPS_MAX 256

#define DPDK_FUNCS(X)                    \
	X(rte_eal_init)                  \
	X(rte_eal_iova_mode)             \
	X(rte_extmem_register)           \
	X(rte_extmem_unregister)         \
	X(rte_vfio_is_enabled)           \
	X(rte_vfio_get_group_num)        \
	X(rte_vfio_container_create)     \
	X(rte_vfio_container_destroy)    \
	X(rte_vfio_container_group_bind) \
	X(rte_vfio_setup_device)         \
	X(rte_vfio_release_device)       \
	X(rte_vfio_container_dma_map)    \
	X(rte_vfio_container_dma_unmap)

#define DPDK_FUNC_PTR(fn) __typeof__(fn) *fn;
static struct {
	DPDK_FUNCS(DPDK_FUNC_PTR)
	void *lib;
} rte;

static pthread_once_t dpdk_once = PTHREAD_ONCE_INIT;
static bool dpdk_loaded;
static char dpdk_dl_error[256];

static pthread_once_t eal_once = PTHREAD_ONCE_INIT;
static int eal_err; /* 0 once the EAL is up, else why not */
static char eal_error[256];

#define DPDK_FUNC_LOAD(fn) \
	ok = ok && (rte.fn = (__typeof__(rte.fn))dpdk_sym(#fn));

static void *dpdk_sym(const char *name)
{
	void *sym = dlvsym(rte.lib, name, EAL_VERSION);

	if (!sym)
		snprintf(dpdk_dl_error, sizeof(dpdk_dl_error),
			 "dlvsym(%s@%s): %s", name, EAL_VERSION, dlerror());
	return sym;
}

/* librte_eal stays loaded: an EAL, once initialised, cannot be again. */
static void dpdk_load(void)
{
	bool ok = true;

	rte.lib = dlopen(EAL_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!rte.lib) {
		snprintf(dpdk_dl_error, sizeof(dpdk_dl_error), "dlopen: %s",
			 dlerror());
		return;
	}
	DPDK_FUNCS(DPDK_FUNC_LOAD)
	dpdk_loaded = ok;
}

static bool dpdk_ready(void)
{
	pthread_once(&dpdk_once, dpdk_load);
	return dpdk_loaded;
}

/* rte_errno is a thread-local of librte_eal: its address is per thread. */
static int rte_errno_now(void)
{
	int *p = dlvsym(rte.lib, "per_lcore__rte_errno", EAL_VERSION);

	return p ? *p : 0;
}

static void rte_errno_clear(void)
{
	int *p = dlvsym(rte.lib, "per_lcore__rte_errno", EAL_VERSION);

	if (p)
		*p = 0;
}

static bool eal_running(void)
{
	return rte.rte_eal_iova_mode() != RTE_IOVA_DC;
}

/*
 * "--lcores=0@(0-1,3)": lcore 0 on the CPUs the calling thread may run
 * on, as ranges, so that any CPU count fits the buffer.
 */
static void lcores_arg(char *buf, size_t len, const cpu_set_t *cpus)
{
	size_t n = (size_t)snprintf(buf, len, "--lcores=0@(");
	int cpu, last;

	for (cpu = 0; cpu < CPU_SETSIZE && n + 16 < len; cpu++) {
		if (!CPU_ISSET(cpu, cpus))
			continue;
		for (last = cpu;
		     last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, cpus);
		     last++)
			;
		n += (size_t)(last > cpu
				      ? snprintf(buf + n, len - n, "%d-%d,",
						 cpu, last)
				      : snprintf(buf + n, len - n, "%d,", cpu));
		cpu = last;
	}
	if (buf[n - 1] == ',')
		n--;
	snprintf(buf + n, len - n, ")");
}

/*
 * An EAL for a library user: no PCI scan, 8 MB of ordinary memory instead
 * of hugepages (which also means no --in-memory: DPDK 22.11 refuses the
 * two together), no shared config files, no telemetry socket, only errors
 * logged.  rte_eal_init() pins the calling thread to lcore 0's CPUs,
 * which are this thread's own; its affinity is put back anyway.
 */
static void eal_init(void)
{
	char lcores[1024];
	char *argv[] = {"mreg",
			"--no-pci",
			"--no-huge",
			"-m",
			"8",
			"--no-shconf",
			"--no-telemetry",
			"--iova-mode=va",
			"--log-level=error",
			lcores,
			NULL};
	int argc = (int)(sizeof(argv) / sizeof(argv[0])) - 1;
	cpu_set_t cpus;

	if (eal_running())
		return;
	if (sched_getaffinity(0, sizeof(cpus), &cpus)) {
		eal_err = -errno;
		snprintf(eal_error, sizeof(eal_error), "sched_getaffinity: %s",
			 strerror(errno));
		return;
	}
	lcores_arg(lcores, sizeof(lcores), &cpus);
	rte_errno_clear();
	if (rte.rte_eal_init(argc, argv) < 0) {
		eal_err = rte_errno_now() ? -rte_errno_now() : -EIO;
		snprintf(eal_error, sizeof(eal_error),
			 "rte_eal_init(--no-huge --no-shconf --iova-mode=va): "
			 "%s",
			 strerror(-eal_err));
	}
	sched_setaffinity(0, sizeof(cpus), &cpus);
}

static int dpdk_supported(void)
{
	if (!dpdk_ready()) {
		mreg_log(MREG_LOG_DEBUG, "dpdk: no %s: %s", EAL_SONAME,
			 dpdk_dl_error);
		return 0;
	}
	return !access("/dev/vfio/vfio", R_OK | W_OK);
}

struct dpdk_domain {
	struct mreg_dpdk_native native;
	char device[64];
	bool adopted; /* container and device are the application's */
	struct mreg_iova iova;
};

static int setup_device(struct dpdk_domain *p, const char *bdf)
{
	struct vfio_device_info info = {.argsz = sizeof(info)};
	int group, ret;

	if (strlen(bdf) >= sizeof(p->device))
		return mreg_fail(-EINVAL, "dpdk: device name %s is too long",
				 bdf);
	snprintf(p->device, sizeof(p->device), "%s", bdf);
	ret = rte.rte_vfio_get_group_num(PCI_SYSFS, bdf, &group);
	if (ret <= 0)
		return mreg_fail(
			-ENODEV,
			"dpdk: device %s has no IOMMU group (not a PCI "
			"address, or no IOMMU)",
			bdf);
	if (rte.rte_vfio_container_group_bind(p->native.container_fd, group) <
	    0)
		return mreg_fail(-EBUSY,
				 "dpdk: cannot bind %s's group %d to a new "
				 "container (is it in use?)",
				 bdf, group);
	ret = rte.rte_vfio_setup_device(PCI_SYSFS, bdf, &p->native.device_fd,
					&info);
	if (ret == 1)
		return mreg_fail(-ENODEV, "dpdk: %s is not bound to vfio-pci",
				 bdf);
	if (ret)
		return mreg_fail(errno ? -errno : -EIO,
				 "dpdk: rte_vfio_setup_device(%s) failed "
				 "(group not viable, or the device busy?)",
				 bdf);
	return 0;
}

static int open_own(struct dpdk_domain *p, const struct mreg_domain_attr *attr)
{
	int ret;

	if (!(attr->comp_mask & MREG_DOMAIN_ATTR_DEVICE) || !attr->device)
		return mreg_fail(-EINVAL, "dpdk: device (a PCI address bound "
					  "to vfio-pci) is required");
	pthread_once(&eal_once, eal_init);
	if (eal_err)
		return mreg_fail(eal_err, "dpdk: %s", eal_error);
	if (!rte.rte_vfio_is_enabled("vfio"))
		return mreg_fail(-ENODEV, "dpdk: the EAL runs without VFIO "
					  "(vfio module not loaded when it "
					  "started?)");
	p->native.container_fd = rte.rte_vfio_container_create();
	if (p->native.container_fd < 0)
		return mreg_fail(-EMFILE, "dpdk: rte_vfio_container_create "
					  "failed (RTE_MAX_VFIO_CONTAINERS?)");
	ret = setup_device(p, attr->device);
	return ret ? ret
		   : mreg_vfio_iova_init(p->native.container_fd, &p->iova);
}

/*
 * The application's container: DPDK's default one
 * (RTE_VFIO_DEFAULT_CONTAINER_FD), whose real fd DPDK does not give out,
 * or one it created, whose IOVA ranges the kernel tells.
 */
static int adopt(struct dpdk_domain *p, const struct mreg_domain_attr *attr)
{
	struct mreg_iova_range all = {.start = MREG_VFIO_HUGE_ALIGN,
				      .last = UINT64_MAX};

	if (!eal_running())
		return mreg_fail(-EINVAL,
				 "dpdk: adopt needs the application's "
				 "EAL, and rte_eal_init() has not run");
	p->adopted = true;
	p->native.container_fd = attr->fd;
	p->native.device_fd = -1;
	if (attr->fd == RTE_VFIO_DEFAULT_CONTAINER_FD)
		return mreg_iova_init(&p->iova, &all, 1);
	return mreg_vfio_iova_init(attr->fd, &p->iova);
}

static void close_own(struct dpdk_domain *p)
{
	if (p->native.device_fd >= 0)
		rte.rte_vfio_release_device(PCI_SYSFS, p->device,
					    p->native.device_fd);
	if (p->native.container_fd >= 0)
		rte.rte_vfio_container_destroy(p->native.container_fd);
}

static int dpdk_domain_open(struct mreg_domain *d,
			    const struct mreg_domain_attr *attr)
{
	struct dpdk_domain *p;
	int ret;

	if (!dpdk_ready())
		return mreg_fail(-EOPNOTSUPP, "dpdk: cannot load %s: %s",
				 EAL_SONAME, dpdk_dl_error);
	p = calloc(1, sizeof(*p));
	if (!p)
		return mreg_fail(-ENOMEM, "dpdk: out of memory");
	p->native.container_fd = p->native.device_fd = -1;
	ret = mreg_adopted(attr) ? adopt(p, attr) : open_own(p, attr);
	if (ret) {
		if (!p->adopted)
			close_own(p);
		mreg_iova_fini(&p->iova);
		free(p);
		return ret;
	}
	d->priv = p;
	d->native = &p->native;
	return 0;
}

static void dpdk_domain_close(struct mreg_domain *d)
{
	struct dpdk_domain *p = d->priv;

	if (!p->adopted)
		close_own(p);
	mreg_iova_fini(&p->iova);
	free(p);
}

/*
 * The page size DPDK is told: the smallest folio backing the range, if
 * every byte of it is backed and verified, cut down until it divides the
 * range's start and length; else the base page.  Any of them is right,
 * since the IOVAs are linear: a larger one is only fewer memsegs.
 */
static uint64_t extmem_page_size(const struct mreg_region *r)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), size = page;
	struct mreg_folio_hist hist = {.size = sizeof(hist)};
	int order;

	if (mreg_verify_folios((void *)(uintptr_t)r->info.addr, r->info.length,
			       &hist) ||
	    hist.unbacked_bytes)
		return page;
	for (order = 0; order < MREG_HIST_ORDERS; order++)
		if (hist.bytes[order]) {
			size = page << order;
			break;
		}
	while (size > page && ((r->info.addr | r->info.length) & (size - 1)))
		size >>= 1;
	return size;
}

static int extmem_failed(const struct mreg_region *r, int err)
{
	const char *why = "";

	if (err == -EEXIST)
		why = " (the range overlaps memory DPDK already knows: EAL "
		      "memory or another extmem registration)";
	else if (err == -ENOSPC)
		why = " (no free memseg list: DPDK has RTE_MAX_MEMSEG_LISTS, "
		      "128, for the EAL and every external area)";
	return mreg_fail(err,
			 "dpdk: rte_extmem_register addr 0x%llx len %llu: "
			 "%s%s",
			 (unsigned long long)r->info.addr,
			 (unsigned long long)r->info.length, strerror(-err),
			 why);
}

/* What rte_extmem_register() is told: the page size, each page's IOVA. */
struct extmem_pages {
	uint64_t page_sz;
	unsigned int n;
	rte_iova_t *iovas;
};

/* Outside the timed call: verifying the folios reads pagemap. */
static int extmem_prepare(const struct mreg_region *r, uint64_t iova,
			  struct extmem_pages *pg)
{
	uint64_t n, i;

	pg->page_sz = extmem_page_size(r);
	n = r->info.length / pg->page_sz;
	if (n > UINT32_MAX)
		return mreg_fail(-E2BIG,
				 "dpdk: %llu pages is more than "
				 "rte_extmem_register takes",
				 (unsigned long long)n);
	pg->n = (unsigned int)n;
	pg->iovas = malloc(n * sizeof(*pg->iovas));
	if (!pg->iovas)
		return mreg_fail(-ENOMEM, "dpdk: out of memory");
	for (i = 0; i < n; i++)
		pg->iovas[i] = iova + i * pg->page_sz;
	return 0;
}

static int extmem_register(const struct mreg_region *r,
			   const struct extmem_pages *pg)
{
	rte_errno_clear();
	if (rte.rte_extmem_register((void *)(uintptr_t)r->info.addr,
				    r->info.length, pg->iovas, pg->n,
				    pg->page_sz))
		return extmem_failed(r,
				     rte_errno_now() ? -rte_errno_now() : -EIO);
	return 0;
}

/*
 * One rte_vfio_container_dma_map(), its error told apart by where DPDK
 * left it: errno is the ioctl's (DPDK's type1 mapping asks for read and
 * write whatever the region's access), rte_errno alone says its user map
 * table is full.  DPDK 22.11 takes the kernel's -EEXIST as success, so
 * errno is the only sign of it.
 */
static int dma_map(struct dpdk_domain *p, const struct mreg_region *r,
		   uint64_t iova)
{
	unsigned long long len = r->info.length;
	uint32_t avail = 0;
	int ret, err;

	errno = 0;
	rte_errno_clear();
	ret = rte.rte_vfio_container_dma_map(p->native.container_fd,
					     r->info.addr, iova, len);
	err = errno;
	if (!ret && err != EEXIST)
		return 0;
	if (!ret)
		return mreg_fail(-EEXIST,
				 "dpdk: iova 0x%llx..+%llu was already mapped "
				 "in the container (DPDK 22.11 took it as "
				 "success and keeps a user map for it)",
				 (unsigned long long)iova, len);
	if (!err && rte_errno_now() == ENOMEM)
		return mreg_fail(-ENOSPC,
				 "dpdk: the container's %d user DMA maps are "
				 "used up (DPDK's VFIO_MAX_USER_MEM_MAPS)",
				 USER_MAPS_MAX);
	if (err == ENOSPC &&
	    !mreg_vfio_dma_avail(p->native.container_fd, &avail))
		return mreg_fail(-ENOSPC,
				 "dpdk: MAP_DMA: dma_entry_limit reached "
				 "(%u mappings left); raise vfio_iommu_type1 "
				 "dma_entry_limit or map larger regions",
				 avail);
	err = err ? err : EIO;
	return mreg_fail(-err,
			 "dpdk: rte_vfio_container_dma_map iova 0x%llx len "
			 "%llu: %s%s",
			 (unsigned long long)iova, len, strerror(err),
			 mreg_reg_hint(-err));
}

static int free_iova(struct mreg_domain *d, uint64_t iova, uint64_t len)
{
	struct dpdk_domain *p = d->priv;
	int ret;

	mreg_domain_lock(d);
	ret = mreg_iova_free(&p->iova, iova, len);
	mreg_domain_unlock(d);
	return ret;
}

/* IOVA = VA unless the caller picked one. */
static int dpdk_iova(struct mreg_domain *d, struct mreg_region *r,
		     uint64_t *iova)
{
	struct dpdk_domain *p = d->priv;
	bool va = !(r->comp_mask & MREG_REGION_ATTR_IOVA);
	int ret;

	if (va) {
		r->comp_mask |= MREG_REGION_ATTR_IOVA_VA;
		r->want_iova = r->info.addr;
	}
	ret = mreg_region_iova(d, &p->iova, r, MREG_VFIO_HUGE_ALIGN, iova);
	if (ret && va)
		return mreg_fail(ret,
				 "dpdk: IOVA = VA 0x%llx is taken by another "
				 "region of the domain, or beyond the IOMMU "
				 "(user space needs 47 bits: a 48-bit IOMMU); "
				 "else pass MREG_REGION_ATTR_IOVA",
				 (unsigned long long)r->info.addr);
	return ret;
}

/* Times rte_extmem_register() and the DMA map, DPDK's registration. */
static int dpdk_reg(struct mreg_domain *d, struct mreg_region *r)
{
	struct dpdk_domain *p = d->priv;
	struct extmem_pages pg = {0};
	uint64_t t0, iova;
	int ret;

	ret = dpdk_iova(d, r, &iova);
	if (ret)
		return ret;
	ret = extmem_prepare(r, iova, &pg);
	if (!ret) {
		t0 = mreg_now_ns();
		ret = extmem_register(r, &pg);
		if (!ret) {
			ret = dma_map(p, r, iova);
			if (ret)
				rte.rte_extmem_unregister(
					(void *)(uintptr_t)r->info.addr,
					r->info.length);
		}
		r->info.reg_ns = mreg_now_ns() - t0;
	}
	free(pg.iovas);
	if (ret) {
		free_iova(d, iova, r->info.length);
		return ret;
	}
	r->info.iova = iova;
	r->info.nr_slices = 1;
	return 0;
}

static int dpdk_dereg(struct mreg_domain *d, struct mreg_region *r,
		      uint64_t *ns)
{
	struct dpdk_domain *p = d->priv;
	void *addr = (void *)(uintptr_t)r->info.addr;
	uint64_t t0 = mreg_now_ns();
	int ret;

	errno = 0;
	ret = rte.rte_vfio_container_dma_unmap(p->native.container_fd,
					       r->info.addr, r->info.iova,
					       r->info.length);
	if (ret) {
		*ns = mreg_now_ns() - t0;
		return mreg_fail(errno ? -errno : -EIO,
				 "dpdk: rte_vfio_container_dma_unmap iova "
				 "0x%llx: %s",
				 (unsigned long long)r->info.iova,
				 strerror(errno ? errno : EIO));
	}
	ret = rte.rte_extmem_unregister(addr, r->info.length);
	*ns = mreg_now_ns() - t0;
	/* The device can no longer reach it: the region is gone either way. */
	if (ret)
		mreg_log(MREG_LOG_WARN,
			 "dpdk: rte_extmem_unregister addr %p failed (in use "
			 "by a DPDK heap?)",
			 addr);
	if (free_iova(d, r->info.iova, r->info.length))
		mreg_log(MREG_LOG_WARN, "dpdk: iova 0x%llx..+%llu not returned",
			 (unsigned long long)r->info.iova,
			 (unsigned long long)r->info.length);
	return 0;
}

const struct mreg_backend_ops mreg_dpdk_ops = {
	.type = MREG_BACKEND_DPDK,
	.name = "dpdk",
	.supported = dpdk_supported,
	.domain_open = dpdk_domain_open,
	.domain_close = dpdk_domain_close,
	.reg = dpdk_reg,
	.dereg = dpdk_dereg,
};
