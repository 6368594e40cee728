// SPDX-License-Identifier: MIT
/*
 * What this kernel gives mreg, found by doing it: each folio size
 * allocated and verified, each backend registering a 2 MB buffer, each
 * cache monitor watching one. Prints one "feature<TAB>answer" line per
 * feature: "yes", a qualified yes, or "no: " and the reason mreg gave.
 *
 * Not a pass/fail test of its own (the other tests are): the guest suite
 * stores its output per kernel, `make test-kernels` turns the four into
 * the README's support table, and tests/vm/tests/mreg-support fails when
 * this kernel's answers differ from the committed table.
 *
 *   test_support          (as root; MREG_VFIO_DEVICE for vfio/iommufd/dpdk)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../include/uapi/mreg.h"
#include "../src/pagemap_compat.h"
#include "tcommon.h"
#include "tvfio.h"

#define LEN (4ull << 20)

static void answer(const char *feature, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void answer(const char *feature, const char *fmt, ...)
{
	char text[512], *p;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	for (p = text; *p; p++) /* one line, no tabs */
		if (*p == '\t' || *p == '\n')
			*p = ' ';
	printf("%s\t%s\n", feature, text);
}

/* The library's reason, without addresses that change from run to run. */
static const char *reason(void)
{
	static char text[256];
	const char *e = mreg_last_error();
	char *hex;

	snprintf(text, sizeof(text), "%s", e);
	while ((hex = strstr(text, "0x")))
		memmove(hex, hex + strcspn(hex, " )"),
			strlen(hex + strcspn(hex, " )")) + 1);
	return text;
}

static void probe_verify(void)
{
	struct pm_scan_arg arg = {.size = sizeof(arg)};
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || access("/proc/kpageflags", R_OK))
		answer("verification", "no: needs root (pagemap PFNs, "
				       "kpageflags)");
	else if (ioctl(fd, PAGEMAP_SCAN, &arg) < 0 &&
		 (errno == ENOTTY || errno == EINVAL))
		answer("verification", "exact, PMD mappings from smaps (no "
				       "PAGEMAP_SCAN: Linux 6.7)");
	else
		answer("verification", "exact, PMD mappings from "
				       "PAGEMAP_SCAN");
	if (fd >= 0)
		close(fd);
}

/* One folio case: "yes" if it comes back verified. */
static void probe_folio(const char *feature, uint64_t size, uint32_t backing,
			uint32_t level)
{
	struct t_folio c = {.size = size, .backing = backing, .level = level};
	struct mreg_buf *buf;
	int ret;

	ret = t_buf(&c, LEN, &buf);
	if (ret) {
		answer(feature, "no: %s", reason());
		return;
	}
	answer(feature, "yes");
	mreg_buf_free(buf);
}

/* mTHP: the sizes between 4 kB and the PMD size that verify. */
static void probe_mthp(void)
{
	uint64_t sizes[32], pmd = t_pmd_size();
	char list[256] = "";
	struct mreg_buf *buf;
	size_t used = 0;
	int nr, i;

	nr = mreg_thp_sizes(sizes, 32);
	for (i = 0; i < nr; i++) {
		struct t_folio c = {.size = sizes[i]};

		if (sizes[i] == pmd || t_buf(&c, LEN, &buf))
			continue;
		mreg_buf_free(buf);
		used += (size_t)snprintf(list + used, sizeof(list) - used,
					 "%s%" PRIu64 "k", used ? " " : "",
					 sizes[i] >> 10);
	}
	if (used)
		answer("folio mTHP", "yes: %s", list);
	else
		answer("folio mTHP", "no: no hugepages-<size>kB in sysfs "
				     "(multi-size THP: Linux 6.8)");
}

static int open_domain(enum mreg_backend backend, struct mreg_domain **d)
{
	struct mreg_domain_attr a = {.backend = backend};
	static char bdf[64];

	if (backend == MREG_BACKEND_VFIO || backend == MREG_BACKEND_IOMMUFD ||
	    backend == MREG_BACKEND_DPDK) {
		if (t_vfio_device(bdf, sizeof(bdf)))
			return 1; /* no device to open it with */
		a.comp_mask = MREG_DOMAIN_ATTR_DEVICE;
		a.device = bdf;
	}
	return mreg_domain_open(&a, d);
}

/* io_uring: two regions in one domain need sparse tables (5.19). */
static const char *uring_mode(struct mreg_domain *d, struct mreg_buf *buf)
{
	struct mreg_region *r2;
	char *p = mreg_buf_addr(buf);
	uint64_t ns;

	if (mreg_region_register(d, p + LEN / 2, LEN / 2, &r2))
		return ", one region per domain (no sparse buffer tables: "
		       "Linux 5.19)";
	mreg_region_deregister(r2, &ns);
	return ", sparse buffer table";
}

/* No /dev/mreg, and the harness said why (MREG_KMOD_WHY): say that. */
static bool no_module(const char *feature)
{
	const char *why = getenv("MREG_KMOD_WHY");

	if (!access("/dev/mreg", F_OK) || !why || !*why)
		return false;
	answer(feature, "no: %s", why);
	return true;
}

static void probe_backend(const char *feature, enum mreg_backend backend,
			  struct mreg_buf *buf)
{
	struct mreg_region *r;
	struct mreg_domain *d;
	const char *more = "";
	uint64_t ns;
	int ret;

	if (backend == MREG_BACKEND_KMOD && no_module(feature))
		return;
	ret = open_domain(backend, &d);
	if (ret == 1) {
		answer(feature, "no: no device bound to vfio-pci");
		return;
	}
	if (ret) {
		answer(feature, "no: %s", reason());
		return;
	}
	ret = mreg_region_register(d, mreg_buf_addr(buf), LEN / 2, &r);
	if (ret) {
		answer(feature, "no: %s", reason());
	} else {
		if (backend == MREG_BACKEND_IO_URING)
			more = uring_mode(d, buf);
		answer(feature, "yes%s", more);
		mreg_region_deregister(r, &ns);
	}
	mreg_domain_close(d);
}

static void probe_kmod_caps(void)
{
	struct mreg_info info = {.size = sizeof(info)};
	int fd;

	if (no_module("mreg.ko"))
		return;
	fd = open("/dev/mreg", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		answer("mreg.ko", "no: /dev/mreg: %s", strerror(errno));
		return;
	}
	if (ioctl(fd, MREG_IOC_INFO, &info))
		answer("mreg.ko", "no: MREG_IOC_INFO: %s", strerror(errno));
	else
		answer("mreg.ko", "yes%s",
		       info.caps & MREG_CAP_MEMFD
			       ? ", memfd pins"
			       : ", no memfd pins (memfd_pin_folios: Linux "
				 "6.11)");
	close(fd);
}

/* A cache over io_uring with @mon: does it cache @buf, or pass it through? */
static void probe_cache(const char *feature, enum mreg_cache_monitor mon,
			struct mreg_buf *buf)
{
	struct mreg_cache_attr ca = {.size = sizeof(ca), .monitor = mon};
	struct mreg_cache_stats st = {.size = sizeof(st)};
	struct mreg_domain_attr da = {.backend = MREG_BACKEND_IO_URING};
	struct mreg_domain *d;
	struct mreg_cache *c;
	struct mreg_region *r;
	int ret;

	if (mon == MREG_CACHE_MONITOR_KMOD && no_module(feature))
		return;
	if (mreg_domain_open(&da, &d)) {
		answer(feature, "no: %s", reason());
		return;
	}
	ret = mreg_cache_open(d, &ca, &c);
	if (ret) {
		answer(feature, "no: %s", reason());
		mreg_domain_close(d);
		return;
	}
	ret = mreg_cache_get(c, mreg_buf_addr(buf), LEN, &r);
	if (!ret)
		mreg_cache_put(c, r);
	mreg_cache_stats(c, &st);
	if (ret)
		answer(feature, "no: %s", reason());
	else
		answer(feature, st.uncached ? "uncached (the monitor cannot "
					      "watch it here)"
					    : "yes");
	mreg_cache_close(c);
	mreg_domain_close(d);
}

static void probe_registration(void)
{
	struct t_folio anon = {.size = t_pmd_size(), .level = MREG_MAP_PMD};
	struct t_folio shm = {.size = t_pmd_size(),
			      .backing = MREG_BACKING_MEMFD,
			      .level = MREG_MAP_PMD};
	struct mreg_buf *buf, *shared = NULL;

	if (t_buf(&anon, LEN, &buf)) {
		anon.size = 4096;
		anon.level = MREG_MAP_DEFAULT;
		if (t_buf(&anon, LEN, &buf))
			return;
	}
	probe_backend("io_uring", MREG_BACKEND_IO_URING, buf);
	probe_backend("verbs", MREG_BACKEND_VERBS, buf);
	probe_backend("vfio type1", MREG_BACKEND_VFIO, buf);
	probe_backend("iommufd", MREG_BACKEND_IOMMUFD, buf);
	probe_backend("dpdk", MREG_BACKEND_DPDK, buf);
	probe_backend("kmod", MREG_BACKEND_KMOD, buf);
	probe_kmod_caps();
	probe_cache("cache uffd, anonymous", MREG_CACHE_MONITOR_UFFD, buf);
	if (!t_buf(&shm, LEN, &shared))
		probe_cache("cache uffd, memfd", MREG_CACHE_MONITOR_UFFD,
			    shared);
	probe_cache("cache kmod", MREG_CACHE_MONITOR_KMOD, buf);
	mreg_buf_free(shared);
	mreg_buf_free(buf);
}

int main(void)
{
	uint64_t pmd = t_pmd_size();

	t_init("test_support");
	mreg_set_log(NULL, NULL);
	if (geteuid())
		return t_skip("the probes choose folio sizes: needs root");
	probe_verify();
	probe_folio("folio 4k", 4096, MREG_BACKING_ANON, MREG_MAP_DEFAULT);
	probe_folio("folio 2M PMD-mapped", pmd, MREG_BACKING_ANON,
		    MREG_MAP_PMD);
	probe_folio("folio 2M PTE-mapped", pmd, MREG_BACKING_ANON,
		    MREG_MAP_PTE);
	probe_mthp();
	probe_folio("shmem 2M PMD-mapped", pmd, MREG_BACKING_SHMEM,
		    MREG_MAP_PMD);
	probe_folio("shmem 2M PTE-mapped", pmd, MREG_BACKING_SHMEM,
		    MREG_MAP_PTE);
	probe_folio("memfd 2M", pmd, MREG_BACKING_MEMFD, MREG_MAP_PMD);
	probe_folio("hugetlb 2M", pmd, MREG_BACKING_HUGETLB, MREG_MAP_PMD);
	probe_registration();
	return T_PASS;
}
