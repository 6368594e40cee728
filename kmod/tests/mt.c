// SPDX-License-Identifier: GPL-2.0
/* Helpers shared by the mreg.ko guest tests; see mt.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mt.h"

#define MT_KO "/mreg/ko/mreg.ko"
#define MT_THP "/sys/kernel/mm/transparent_hugepage"
#define KPF_COMPOUND_HEAD 15
#define KPF_COMPOUND_TAIL 16
#define MT_MAX_KNOBS 32

void mt_skip(const char *fmt, ...)
{
	va_list ap;

	printf("SKIP: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(77);
}

void mt_fail(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "FAIL: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

static void mt_load_module(void)
{
	int fd = open(MT_KO, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		mt_skip("no /dev/mreg and no %s", MT_KO);
	if (syscall(SYS_finit_module, fd, "", 0) && errno != EEXIST)
		mt_skip("cannot load %s: %s", MT_KO, strerror(errno));
	close(fd);
}

int mt_open(void)
{
	int fd = open("/dev/mreg", O_RDWR | O_CLOEXEC);

	if (fd >= 0)
		return fd;
	mt_load_module();
	fd = open("/dev/mreg", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		mt_fail("open /dev/mreg after loading: %s", strerror(errno));
	return fd;
}

void mt_grant_group(unsigned int gid)
{
	close(mt_open());
	if (chown("/dev/mreg", 0, gid) || chmod("/dev/mreg", 0660))
		mt_fail("give /dev/mreg to group %u: %s", gid, strerror(errno));
}

int mt_ioctl(int fd, unsigned long req, void *arg)
{
	return ioctl(fd, req, arg) ? -errno : 0;
}

int mt_pin(int fd, uint64_t addr, uint64_t len, uint32_t flags, int memfd,
	   struct mreg_pin *out)
{
	struct mreg_pin p = {
		.size = sizeof(p), .flags = flags, .memfd = memfd,
		.addr = addr, .length = len,
	};
	int ret = mt_ioctl(fd, MREG_IOC_PIN, &p);

	if (out)
		*out = p;
	return ret;
}

int mt_unpin(int fd, uint32_t handle)
{
	struct mreg_unpin u = { .size = sizeof(u), .handle = handle };

	return mt_ioctl(fd, MREG_IOC_UNPIN, &u);
}

int mt_read(int fd, uint32_t handle, uint64_t off, uint64_t len, void *dst)
{
	struct mreg_read r = {
		.size = sizeof(r), .handle = handle, .offset = off,
		.length = len, .dst = (uintptr_t)dst,
	};

	return mt_ioctl(fd, MREG_IOC_READ, &r);
}

struct mreg_extent *mt_query(int fd, uint32_t handle, uint64_t *n)
{
	struct mreg_query q = {
		.size = sizeof(q), .handle = handle,
		.extent_size = sizeof(struct mreg_extent),
	};
	struct mreg_extent *e;
	int ret = mt_ioctl(fd, MREG_IOC_QUERY, &q);

	*n = 0;
	if (ret != -EMSGSIZE)
		return NULL;
	e = calloc(q.nr_extents, sizeof(*e));
	if (!e)
		mt_fail("calloc %llu extents", (unsigned long long)q.nr_extents);
	q.extents = (uintptr_t)e;
	if (mt_ioctl(fd, MREG_IOC_QUERY, &q)) {
		free(e);
		return NULL;
	}
	*n = q.nr_extents;
	return e;
}

int mt_info(int fd, struct mreg_info *info)
{
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	return mt_ioctl(fd, MREG_IOC_INFO, info);
}

int mt_memfd_pins(int fd)
{
	struct mreg_info info;

	return !mt_info(fd, &info) && (info.caps & MREG_CAP_MEMFD);
}

void mt_require_memfd(int fd)
{
	if (!mt_memfd_pins(fd))
		mt_skip("memfd pins need memfd_pin_folios() (Linux 6.11): "
			"MREG_CAP_MEMFD is clear");
}

void *mt_map(size_t len, size_t align)
{
	size_t span = len + align;
	char *p = mmap(NULL, span, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *a;

	if (p == MAP_FAILED)
		mt_fail("mmap %zu: %s", span, strerror(errno));
	a = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
	if (a > p)
		munmap(p, a - p);
	if (a + len < p + span)
		munmap(a + len, p + span - (a + len));
	return a;
}

uint32_t mt_page_word(uint32_t seed, size_t page)
{
	return seed * 2654435761u ^ (uint32_t)(page + 1);
}

/* One word per page pattern: enough to tell pages apart, cheap on TCG. */
void mt_fill(void *p, size_t len, uint32_t seed)
{
	size_t i;

	for (i = 0; i < len / MT_PAGE; i++) {
		uint32_t *w = (uint32_t *)((char *)p + i * MT_PAGE);

		w[0] = mt_page_word(seed, i);
		w[MT_PAGE / 4 - 1] = ~w[0];
	}
}

/* Returns the index of the first bad page, or len / MT_PAGE. */
size_t mt_check_fill(const void *p, size_t len, uint32_t seed)
{
	size_t i;

	for (i = 0; i < len / MT_PAGE; i++) {
		const uint32_t *w = (const uint32_t *)((const char *)p +
						       i * MT_PAGE);

		if (w[0] != mt_page_word(seed, i) || w[MT_PAGE / 4 - 1] != ~w[0])
			break;
	}
	return i;
}

struct mt_knob {
	char path[160];
	char value[32];
};

static struct mt_knob mt_knobs[MT_MAX_KNOBS];
static int mt_nknobs;

static void mt_restore_knobs(void)
{
	int fd;

	while (mt_nknobs > 0) {
		struct mt_knob *k = &mt_knobs[--mt_nknobs];

		fd = open(k->path, O_WRONLY);
		if (fd >= 0) {
			if (write(fd, k->value, strlen(k->value)) < 0)
				perror(k->path);
			close(fd);
		}
	}
}

/* Current choice of a sysfs "a [b] c" knob. */
static int mt_knob_get(const char *path, char *val, size_t n)
{
	char buf[256], *l, *r;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	l = strchr(buf, '[');
	r = l ? strchr(l, ']') : NULL;
	if (!r)
		return -1;
	*r = 0;
	snprintf(val, n, "%s", l + 1);
	return 0;
}

/* Only the first value seen is kept: that is the one to restore. */
static int mt_knob_saved(const char *path)
{
	int i;

	for (i = 0; i < mt_nknobs; i++)
		if (!strcmp(mt_knobs[i].path, path))
			return 1;
	return 0;
}

static void mt_knob_set(const char *path, const char *val)
{
	struct mt_knob *k;
	int fd;

	if (!mt_knob_saved(path)) {
		if (mt_nknobs == MT_MAX_KNOBS)
			mt_fail("too many knobs");
		k = &mt_knobs[mt_nknobs];
		if (mt_knob_get(path, k->value, sizeof(k->value)))
			mt_skip("no THP knob %s", path);
		snprintf(k->path, sizeof(k->path), "%s", path);
		if (!mt_nknobs++)
			atexit(mt_restore_knobs);
	}
	fd = open(path, O_WRONLY);
	if (fd < 0 || write(fd, val, strlen(val)) < 0)
		mt_skip("cannot set %s to %s: %s", path, val, strerror(errno));
	close(fd);
}

static void mt_knobs_only(const char *file, const char *top, unsigned int kb)
{
	static const unsigned int sizes[] = { 16, 32, 64, 128, 256, 512,
					      1024, 2048 };
	char path[160];
	size_t i;

	if (!mt_is_root())
		mt_skip("THP knobs need root");
	snprintf(path, sizeof(path), MT_THP "/%s", top);
	mt_knob_set(path, kb == 2048 ? "always" : "never");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(path, sizeof(path), MT_THP "/hugepages-%ukB/%s",
			 sizes[i], file);
		if (access(path, F_OK))
			continue;
		mt_knob_set(path, sizes[i] == kb ? "always" : "never");
	}
	if (kb && kb != 2048) {
		snprintf(path, sizeof(path), MT_THP "/hugepages-%ukB/%s", kb,
			 file);
		if (access(path, F_OK))
			mt_skip("kernel has no %s", path);
	}
}

void mt_thp_only(unsigned int kb)
{
	mt_knobs_only("enabled", "enabled", kb);
}

void mt_shmem_thp_only(unsigned int kb)
{
	mt_knobs_only("shmem_enabled", "shmem_enabled", kb);
}

static int mt_pagemap_fd = -1;
static int mt_kpf_fd = -1;

int mt_have_pagemap(void)
{
	if (mt_pagemap_fd < 0)
		mt_pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (mt_kpf_fd < 0)
		mt_kpf_fd = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
	return mt_is_root() && mt_pagemap_fd >= 0 && mt_kpf_fd >= 0;
}

/* After fork(): the inherited fd still shows the parent's pagemap. */
void mt_pagemap_reopen(void)
{
	if (mt_pagemap_fd >= 0)
		close(mt_pagemap_fd);
	mt_pagemap_fd = -1;
}

uint64_t mt_pfn(const void *va)
{
	uint64_t e;
	off_t off = (uintptr_t)va / MT_PAGE * 8;

	if (!mt_have_pagemap())
		mt_skip("pagemap/kpageflags need root");
	if (pread(mt_pagemap_fd, &e, 8, off) != 8)
		mt_fail("pagemap read: %s", strerror(errno));
	if (!(e >> 63))
		return 0;
	return e & ((1ULL << 55) - 1);
}

static uint64_t mt_kpf(uint64_t pfn)
{
	uint64_t f;

	if (pread(mt_kpf_fd, &f, 8, pfn * 8) != 8)
		mt_fail("kpageflags read pfn %llu: %s",
			(unsigned long long)pfn, strerror(errno));
	return f;
}

static int mt_is_tail(uint64_t pfn)
{
	return (mt_kpf(pfn) >> KPF_COMPOUND_TAIL) & 1;
}

/* Order of the folio whose head is @head, from the run of tail pfns. */
static unsigned int mt_folio_order(uint64_t head)
{
	uint64_t n = 1;
	unsigned int order = 0;

	if (!((mt_kpf(head) >> KPF_COMPOUND_HEAD) & 1))
		return 0;
	while (n < (1ULL << 18) && mt_is_tail(head + n))
		n++;
	while ((1ULL << order) < n)
		order++;
	if ((1ULL << order) != n)
		mt_fail("folio at pfn %llu has %llu pages, not a power of 2",
			(unsigned long long)head, (unsigned long long)n);
	return order;
}

static uint64_t mt_folio_head(uint64_t pfn)
{
	while (mt_is_tail(pfn))
		pfn--;
	return pfn;
}

void mt_folio_census(const void *va, size_t len, uint64_t hist[32],
		     uint64_t *nfolios)
{
	uint64_t pfn, prev = 0, head, end = 0;
	unsigned int order;
	size_t i;

	memset(hist, 0, 32 * sizeof(hist[0]));
	*nfolios = 0;
	for (i = 0; i < len / MT_PAGE; i++, prev = pfn) {
		pfn = mt_pfn((const char *)va + i * MT_PAGE);
		if (!pfn)
			mt_fail("page %zu of the range is not present", i);
		/* Same folio only if physically next and before its end. */
		if (i && pfn == prev + 1 && pfn < end)
			continue;
		head = mt_folio_head(pfn);
		order = mt_folio_order(head);
		hist[order]++;
		end = head + (1ULL << order);
		(*nfolios)++;
	}
}

void mt_print_hist(const char *what, const uint64_t hist[32])
{
	int o;

	printf("%s:", what);
	for (o = 0; o < 32; o++)
		if (hist[o])
			printf(" order%d=%llu", o, (unsigned long long)hist[o]);
	printf("\n");
}

void mt_pins(uint64_t *acquired, uint64_t *released)
{
	char name[64];
	unsigned long long v;
	FILE *f;
	int fd = open("/proc/sys/vm/stat_refresh", O_WRONLY);

	if (fd >= 0) {
		if (write(fd, "1", 1) < 0)
			errno = 0;
		close(fd);
	}
	*acquired = *released = 0;
	f = fopen("/proc/vmstat", "r");
	if (!f)
		mt_fail("/proc/vmstat: %s", strerror(errno));
	while (fscanf(f, "%63s %llu", name, &v) == 2) {
		if (!strcmp(name, "nr_foll_pin_acquired"))
			*acquired = v;
		else if (!strcmp(name, "nr_foll_pin_released"))
			*released = v;
	}
	fclose(f);
}

/*
 * Pins taken in the window must all be released: acquired - a0 may not
 * exceed released - r0.  More releases than acquires are someone else's:
 * the harness tees test output into a 9p file, and netfs pins the pages
 * of those writes and unpins them from a worker, so a pin taken before
 * the window can be dropped inside it.
 */
int mt_pins_balanced(uint64_t a0, uint64_t r0)
{
	uint64_t a, r;
	int i;

	for (i = 0; i < 50; i++) {
		mt_pins(&a, &r);
		if (a - a0 <= r - r0)
			return 1;
		usleep(100000);
	}
	fprintf(stderr, "pins: acquired +%llu released +%llu\n",
		(unsigned long long)(a - a0), (unsigned long long)(r - r0));
	return 0;
}

int mt_is_root(void)
{
	return geteuid() == 0;
}

unsigned long mt_env_ulong(const char *name, unsigned long dflt)
{
	const char *v = getenv(name);

	return v && *v ? strtoul(v, NULL, 0) : dflt;
}
