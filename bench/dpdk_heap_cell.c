// SPDX-License-Identifier: MIT
/*
 * dpdk-heap@BDF: DPDK's own way to make external memory DMA-able, timed
 * beside mreg's dpdk backend as its anchor.  This row is DPDK's heap path,
 * not mreg's: rte_malloc_heap_create(), then rte_malloc_heap_memory_add(
 * heap, va, len, iovas, n_pages, page_sz) with the device in DPDK's
 * default VFIO container (rte_vfio_setup_device(), no group bind), whose
 * mem event callback maps the memory; rte_malloc_heap_memory_remove() and
 * rte_malloc_heap_destroy() undo it.  memory_add alone is the timed
 * registration, memory_remove the deregistration.
 *
 * What that costs in DPDK 22.11 (v22.11 and the 22.11.11 Debian ships):
 *  - rte_malloc_heap_memory_add() (rte_malloc.c) calls
 *    malloc_heap_create_external_seg() (malloc_heap.c), which fills an
 *    rte_fbarray with one struct rte_memseg per page, then
 *    malloc_heap_add_external_memory(), which memset()s the whole area to
 *    zero, makes it one free malloc element and raises
 *    eal_memalloc_mem_event_notify(RTE_MEM_EVENT_ALLOC).
 *  - vfio_mem_event_callback() (eal_vfio.c) maps EAL memory in IOVA-as-VA
 *    mode page by page too, and external memory by walking its memsegs:
 *    vfio_dma_mem_map() -> vfio_type1_dma_mem_map() once per memseg, so
 *    one VFIO_IOMMU_MAP_DMA per page of page_sz.  A failed map is logged
 *    and dropped: memory_add returns 0 all the same.
 *  - rte_malloc_heap_memory_remove(): malloc_heap_remove_external_memory()
 *    -> destroy_elem() raises RTE_MEM_EVENT_FREE, one UNMAP_DMA per page,
 *    then malloc_heap_destroy_external_seg() frees the fbarray.
 *  - rte_vfio_setup_device() registers that callback for the default
 *    container's first group, rte_vfio_release_device() drops it with the
 *    last, and rte_mem_event_callback_register() refuses (ENOTSUP) in an
 *    EAL with legacy memory, which --no-huge implies (eal_common_options.c,
 *    OPT_NO_HUGE_NUM).  mreg starts its EAL with --no-huge: there,
 *    memory_add memsets the area and maps nothing.  So when a dpdk-heap
 *    path is asked for and hugepages are free, mreg-bench starts the EAL
 *    itself before any cell, with mreg's flags but --in-memory (hugepages
 *    on demand, dynamic memory) for --no-huge -m 8; mreg's dpdk domains
 *    then use that EAL, as they would an application's.
 *  - Every page is a vfio_dma entry of its own: vfio_iommu_type1's
 *    dma_entry_limit (65535) stops 4 kB pages just short of 256 MB.
 *
 * As DPDK does not say when a page went unmapped, every call is checked
 * against the default container's dma_avail: memory_add must take one
 * entry per page and memory_remove give them all back, or the cell has no
 * numbers.  DPDK is told the page size mreg's backend tells it, and the
 * IOVAs are VA as there, so the two rows differ in how they map, not in
 * what DPDK knows.  librte_eal is dlopened, as libmreg does, so
 * mreg-bench runs without DPDK installed.
 *
 * What weighs on the ratio (stock 6.12 guest, icount clock, 256 MB):
 * icount counts glibc's rep stosb once per byte, so the memset is 271 ms
 * of every heap row, all but 7 of its 278 ms at 2 MB PMD-mapped, far more
 * than it weighs on hardware.  Past the memset DPDK's cost follows its
 * number of maps: 10x mreg's whole registration at 4 kB pages, 1.8x at 64
 * kB, 1.1x at 1 MB and up.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_malloc.h>
#include <rte_memory.h>
#include <rte_vfio.h>

#include "bench.h"

#define EAL_SONAME  "librte_eal.so.23"
#define EAL_VERSION "DPDK_23"
#define PCI_SYSFS   "/sys/bus/pci/devices"
#define HUGEPAGES   "/sys/kernel/mm/hugepages"
#define HEAP_NAME   "mreg-bench"

#define HEAP_FUNCS(X)                        \
	X(rte_eal_init)                      \
	X(rte_eal_iova_mode)                 \
	X(rte_mem_event_callback_register)   \
	X(rte_mem_event_callback_unregister) \
	X(rte_vfio_is_enabled)               \
	X(rte_vfio_setup_device)             \
	X(rte_vfio_release_device)           \
	X(rte_malloc_heap_create)            \
	X(rte_malloc_heap_destroy)           \
	X(rte_malloc_heap_memory_add)        \
	X(rte_malloc_heap_memory_remove)

#define HEAP_FUNC_PTR(fn) __typeof__(fn) *fn;
static struct {
	HEAP_FUNCS(HEAP_FUNC_PTR)
	int *errno_p; /* the main thread's rte_errno: every cell runs there */
	void *lib;
	bool tried, loaded;
	char error[256];
} rte;

static char eal_error[96]; /* why mreg-bench's own EAL did not start */

static void *rte_sym(const char *name)
{
	void *sym = dlvsym(rte.lib, name, EAL_VERSION);

	if (!sym)
		snprintf(rte.error, sizeof(rte.error), "dlvsym(%s@%s): %s",
			 name, EAL_VERSION, dlerror());
	return sym;
}

#define HEAP_FUNC_LOAD(fn) \
	ok = ok && (rte.fn = (__typeof__(rte.fn))rte_sym(#fn));

/* The library mreg's backend dlopens too: the same handle if it did. */
static bool heap_load(void)
{
	bool ok = true;

	if (rte.tried)
		return rte.loaded;
	rte.tried = true;
	rte.lib = dlopen(EAL_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!rte.lib) {
		snprintf(rte.error, sizeof(rte.error), "dlopen: %s", dlerror());
		return false;
	}
	HEAP_FUNCS(HEAP_FUNC_LOAD)
	ok = ok && (rte.errno_p = rte_sym("per_lcore__rte_errno"));
	rte.loaded = ok;
	return ok;
}

static int rte_err(void)
{
	return *rte.errno_p ? *rte.errno_p : EIO;
}

static bool eal_running(void)
{
	return rte.rte_eal_iova_mode() != RTE_IOVA_DC;
}

/* The clock libmreg times reg_ns with (mreg_now_ns()). */
static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool wants_heap(const struct bench_opts *o)
{
	int p;

	for (p = 0; p < o->nr_paths; p++)
		if (o->paths[p].kind == PATH_HEAP)
			return true;
	return false;
}

/* Free pages of any hugepage size: what --in-memory allocates from. */
static bool hugepages_free(void)
{
	DIR *d = opendir(HUGEPAGES);
	struct dirent *e;
	char path[512];
	long nr = 0;
	FILE *f;

	while (d && (e = readdir(d)) && !nr) {
		snprintf(path, sizeof(path), HUGEPAGES "/%s/free_hugepages",
			 e->d_name);
		f = fopen(path, "re");
		if (f && fscanf(f, "%ld", &nr) != 1)
			nr = 0;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return nr > 0;
}

/* "--lcores=0@(0,1)": lcore 0 on the CPUs this thread may run on. */
static void lcores_arg(char *buf, size_t len, const cpu_set_t *cpus)
{
	size_t n = (size_t)snprintf(buf, len, "--lcores=0@(");
	int cpu;

	for (cpu = 0; cpu < CPU_SETSIZE && n + 8 < len; cpu++)
		if (CPU_ISSET(cpu, cpus))
			n += (size_t)snprintf(buf + n, len - n, "%d,", cpu);
	if (buf[n - 1] == ',')
		n--;
	snprintf(buf + n, len - n, ")");
}

/*
 * mreg's EAL flags (eal_init() in src/backends/dpdk.c) but for memory:
 * --in-memory is dynamic memory, whose VFIO mem event callback maps heap
 * memory, where --no-huge -m 8 would be legacy memory, which has none.
 * rte_eal_init() pins this thread to lcore 0: its affinity is put back.
 */
static void eal_start(void)
{
	char lcores[1024];
	char *argv[] = {"mreg-bench",	  "--no-pci",
			"--in-memory",	  "--no-telemetry",
			"--iova-mode=va", "--log-level=error",
			lcores,		  NULL};
	int argc = (int)(sizeof(argv) / sizeof(argv[0])) - 1;
	cpu_set_t cpus;

	if (sched_getaffinity(0, sizeof(cpus), &cpus)) {
		snprintf(eal_error, sizeof(eal_error), "sched_getaffinity: %s",
			 strerror(errno));
		return;
	}
	lcores_arg(lcores, sizeof(lcores), &cpus);
	*rte.errno_p = 0;
	if (rte.rte_eal_init(argc, argv) < 0)
		snprintf(eal_error, sizeof(eal_error),
			 "rte_eal_init(--in-memory --iova-mode=va): %s",
			 strerror(rte_err()));
	sched_setaffinity(0, sizeof(cpus), &cpus);
}

void dpdk_heap_prepare(const struct bench_opts *o)
{
	if (!wants_heap(o) || !heap_load() || eal_running())
		return;
	/* Without hugepages the cells run in mreg's EAL and say what
	 * DPDK's heap path does there. */
	if (hugepages_free())
		eal_start();
}

__attribute__((format(printf, 2, 3))) static int heap_fail(struct cell *c,
							   const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->note, sizeof(c->note), fmt, ap);
	va_end(ap);
	return -1;
}

/* An mreg dpdk domain opened and closed starts mreg's own EAL. */
static int eal_via_mreg(struct cell *c)
{
	struct mreg_domain_attr attr = {
		.backend = MREG_BACKEND_DPDK,
		.comp_mask = MREG_DOMAIN_ATTR_DEVICE,
		.device = c->path->device,
	};
	struct mreg_domain *d;

	if (mreg_domain_open(&attr, &d))
		return heap_fail(c, "%s", mreg_last_error());
	mreg_domain_close(d);
	return 0;
}

static int heap_eal(struct cell *c)
{
	if (!heap_load())
		return heap_fail(c, "no %s: %.60s", EAL_SONAME, rte.error);
	if (eal_error[0])
		return heap_fail(c, "%s", eal_error);
	if (!eal_running() && eal_via_mreg(c))
		return -1;
	if (!rte.rte_vfio_is_enabled("vfio"))
		return heap_fail(c, "the EAL runs without VFIO");
	return 0;
}

static void noop_event(enum rte_mem_event type, const void *addr, size_t len,
		       void *arg)
{
	(void)type, (void)addr, (void)len, (void)arg;
}

/* Legacy memory has no mem event callbacks, so nothing maps the heap. */
static bool eal_legacy_memory(void)
{
	if (rte.rte_mem_event_callback_register("mreg-bench-probe", noop_event,
						NULL))
		return rte_err() == ENOTSUP;
	rte.rte_mem_event_callback_unregister("mreg-bench-probe", NULL);
	return false;
}

/*
 * DPDK keeps its default container's fd to itself (rte_vfio_get_
 * container_fd() opens a new one in v22.11): it is the process's one
 * /dev/vfio/vfio with an IOMMU set, while the device is in it and every
 * mreg domain is closed.  -1: none, or more than one.
 */
static int default_container_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	char link[300], target[32];
	int found = -1, many = 0;
	struct dirent *e;
	uint32_t avail;
	ssize_t n;

	while (d && (e = readdir(d))) {
		snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		if (strcmp(target, "/dev/vfio/vfio") ||
		    vfio_dma_avail(atoi(e->d_name), &avail))
			continue;
		many += found >= 0;
		found = atoi(e->d_name);
	}
	if (d)
		closedir(d);
	return many ? -1 : found;
}

struct heap_run {
	void *va;
	size_t len;
	uint64_t page;
	unsigned int n;
	rte_iova_t *iovas;
	int device_fd, container_fd;
	bool legacy, heap;
};

/*
 * The page size DPDK is told, by the rule of mreg's dpdk backend
 * (extmem_page_size()): the smallest folio of the verified histogram, cut
 * until it divides the start and length; else the base page.
 */
static uint64_t heap_page_size(const struct cell *c, uintptr_t va, size_t len)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), size = page;
	int order;

	if (c->hist.method != MREG_VERIFY_EXACT || c->hist.unbacked_bytes)
		return page;
	for (order = 0; order < MREG_HIST_ORDERS; order++)
		if (c->hist.bytes[order]) {
			size = page << order;
			break;
		}
	while (size > page && ((va | len) & (size - 1)))
		size >>= 1;
	return size;
}

/*
 * IOVA = VA page by page, as DPDK's IOVA-as-VA mode and mreg's dpdk
 * backend have it.  A user VA has 47 bits, which an IOMMU of 39 (qemu's
 * intel-iommu by default) cannot reach: DPDK would log a failed map per
 * page, so the cell stops first.
 */
static int heap_iovas(struct heap_run *h, struct cell *c)
{
	uintptr_t va = (uintptr_t)h->va;
	unsigned int i;

	if (!vfio_iova_fits(h->container_fd, va, h->len))
		return heap_fail(c,
				 "IOVA = VA 0x%llx is beyond the IOMMU's "
				 "ranges (needs 48 bits)",
				 (unsigned long long)va);
	h->page = heap_page_size(c, va, h->len);
	h->n = (unsigned int)(h->len / h->page);
	h->iovas = malloc(h->n * sizeof(*h->iovas));
	if (!h->iovas)
		return heap_fail(c, "out of memory");
	for (i = 0; i < h->n; i++)
		h->iovas[i] = va + (uint64_t)i * h->page;
	return 0;
}

/* The device into DPDK's default container: no group bind. */
static int heap_device(struct heap_run *h, struct cell *c)
{
	struct vfio_device_info info = {.argsz = sizeof(info)};
	int ret;

	ret = rte.rte_vfio_setup_device(PCI_SYSFS, c->path->device,
					&h->device_fd, &info);
	if (ret)
		return heap_fail(c, "rte_vfio_setup_device(%s): %s",
				 c->path->device,
				 ret == 1 ? "not on vfio-pci"
					  : "failed (in another container?)");
	h->container_fd = default_container_fd();
	if (h->container_fd < 0)
		return heap_fail(c, "cannot tell DPDK's default container");
	return 0;
}

static int heap_open(struct heap_run *h, struct cell *c,
		     const struct mreg_buf *buf)
{
	h->va = mreg_buf_addr(buf);
	h->len = mreg_buf_length(buf);
	h->device_fd = -1;
	if (heap_eal(c) || heap_device(h, c) || heap_iovas(h, c))
		return -1;
	h->legacy = eal_legacy_memory();
	if (rte.rte_malloc_heap_create(HEAP_NAME))
		return heap_fail(c, "rte_malloc_heap_create: %s",
				 strerror(rte_err()));
	h->heap = true;
	return 0;
}

static void heap_close(struct heap_run *h, const struct cell *c)
{
	if (h->heap)
		rte.rte_malloc_heap_destroy(HEAP_NAME);
	/* mreg's dpdk domain needs the device for its own container. */
	if (h->device_fd >= 0)
		rte.rte_vfio_release_device(PCI_SYSFS, c->path->device,
					    h->device_fd);
	free(h->iovas);
}

/* Entries the default container lost, or -1 if it cannot say. */
static int64_t dma_used(const struct heap_run *h, uint32_t before)
{
	uint32_t now;

	return vfio_dma_avail(h->container_fd, &now) ? -1
						     : (int64_t)before - now;
}

static int heap_check(const struct heap_run *h, struct cell *c, int64_t mapped,
		      int64_t left)
{
	if (mapped == h->n && !left)
		return 0;
	if (mapped != h->n)
		return heap_fail(c, "DPDK mapped %lld of %u pages%s",
				 (long long)mapped, h->n,
				 h->legacy ? ": legacy-memory EAL (--no-huge) "
					     "has no mem event callback"
					   : "");
	return heap_fail(c, "memory_remove left %lld DMA maps",
			 (long long)left);
}

/* One memory_add, checked, and one memory_remove: reg, dereg in ms. */
static int heap_once(const struct heap_run *h, struct cell *c, double *reg,
		     double *dereg)
{
	uint64_t t0, t1, t2, t3;
	int64_t mapped, left;
	uint32_t before;

	if (vfio_dma_avail(h->container_fd, &before))
		return heap_fail(c, "VFIO_IOMMU_GET_INFO: no dma_avail");
	if (before < h->n)
		return heap_fail(c,
				 "%u pages need as many DMA maps, %u left "
				 "(vfio_iommu_type1 dma_entry_limit)",
				 h->n, before);
	t0 = now_ns();
	if (rte.rte_malloc_heap_memory_add(HEAP_NAME, h->va, h->len, h->iovas,
					   h->n, h->page))
		return heap_fail(c, "rte_malloc_heap_memory_add: %s",
				 strerror(rte_err()));
	t1 = now_ns();
	mapped = dma_used(h, before);
	t2 = now_ns();
	if (rte.rte_malloc_heap_memory_remove(HEAP_NAME, h->va, h->len))
		return heap_fail(c, "rte_malloc_heap_memory_remove: %s",
				 strerror(rte_err()));
	t3 = now_ns();
	left = dma_used(h, before);
	*reg = (double)(t1 - t0) / 1e6;
	*dereg = (double)(t3 - t2) / 1e6;
	return heap_check(h, c, mapped, left);
}

void dpdk_heap_cell_run(const struct bench_opts *o, struct cell *c,
			const struct mreg_buf *buf)
{
	static double reg[MAX_REPS], dereg[MAX_REPS];
	struct heap_run h = {0};
	double r = 0, d = 0;
	int i;

	if (!heap_open(&h, c, buf))
		for (i = 0; i < o->warmup + o->reps; i++) {
			if (heap_once(&h, c, &r, &d))
				break;
			if (i < o->warmup)
				continue;
			reg[c->nr] = r;
			dereg[c->nr++] = d;
		}
	heap_close(&h, c);
	stats_compute(reg, c->nr, &c->reg);
	stats_compute(dereg, c->nr, &c->dereg);
}
