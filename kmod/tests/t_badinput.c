// SPDX-License-Identifier: GPL-2.0
/*
 * Bad input is refused with the documented errno and leaves nothing
 * pinned: overflow, unaligned, unmapped, PROT_NONE, VM_IO/VM_PFNMAP,
 * absurd counts, unknown handle, double UNPIN, bad memfds, out-of-range
 * READ, a too-small QUERY array.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mt.h"

static int fd;

static void expect_pin(uint64_t addr, uint64_t len, uint32_t flags, int memfd,
		       int want, const char *what)
{
	uint64_t a0, r0;

	mt_pins(&a0, &r0);
	MT_EXPECT_ERR(mt_pin(fd, addr, len, flags, memfd, NULL), want, what);
	MT_CHECK(mt_pins_balanced(a0, r0), "%s left pins", what);
}

static void test_ranges(void)
{
	char *buf = mt_map(8 * MT_PAGE, MT_PAGE);
	char *hole = buf + 4 * MT_PAGE;
	uint64_t b = (uintptr_t)buf;

	munmap(hole, 4 * MT_PAGE);
	expect_pin(b, 0, 0, 0, -EINVAL, "zero length");
	expect_pin(b + 1, MT_PAGE, 0, 0, -EINVAL, "unaligned addr");
	expect_pin(b, MT_PAGE + 1, 0, 0, -EINVAL, "unaligned length");
	expect_pin(b, -MT_PAGE, 0, 0, -EINVAL, "addr + length overflows");
	expect_pin(-2 * MT_PAGE, 4 * MT_PAGE, 0, 0, -EINVAL, "wraps");
	expect_pin(b, 1ULL << 50, 0, 0, -ENOMEM, "absurd length");
	expect_pin((uintptr_t)hole, 4 * MT_PAGE, 0, 0, -EFAULT, "unmapped");
	expect_pin(b, 8 * MT_PAGE, 0, 0, -EFAULT, "partly unmapped");
	expect_pin(0xffff888000000000ULL, MT_PAGE, 0, 0, -EFAULT,
		   "kernel address");
	MT_CHECK(!mprotect(buf, 4 * MT_PAGE, PROT_NONE), "mprotect");
	expect_pin(b, 4 * MT_PAGE, 0, 0, -EFAULT, "PROT_NONE");
	MT_CHECK(!mprotect(buf, 4 * MT_PAGE, PROT_READ), "mprotect");
	expect_pin(b, 4 * MT_PAGE, 0, 0, -EFAULT, "write pin of PROT_READ");
	munmap(buf, 4 * MT_PAGE);
}

/* A PCI BAR resource file or /dev/mem gives a VM_IO | VM_PFNMAP vma. */
static void *map_pfnmap(const char **what)
{
	static char path[300];
	struct dirent *d;
	DIR *dir = opendir("/sys/bus/pci/devices");
	void *p;
	int f;

	while (dir && (d = readdir(dir))) {
		snprintf(path, sizeof(path),
			 "/sys/bus/pci/devices/%s/resource0", d->d_name);
		f = open(path, O_RDWR);
		if (f < 0)
			continue;
		p = mmap(NULL, MT_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
		close(f);
		if (p != MAP_FAILED) {
			closedir(dir);
			*what = path;
			return p;
		}
	}
	if (dir)
		closedir(dir);
	f = open("/dev/mem", O_RDWR);
	p = f < 0 ? MAP_FAILED : mmap(NULL, MT_PAGE, PROT_READ | PROT_WRITE,
				      MAP_SHARED, f, 0);
	if (f >= 0)
		close(f);
	*what = "/dev/mem";
	return p == MAP_FAILED ? NULL : p;
}

static void test_pfnmap(void)
{
	const char *what;
	void *p = map_pfnmap(&what);

	if (!p) {
		printf("note: no mappable PCI BAR or /dev/mem, VM_PFNMAP case not run\n");
		return;
	}
	expect_pin((uintptr_t)p, MT_PAGE, 0, 0, -EFAULT, "VM_IO/VM_PFNMAP");
	printf("VM_PFNMAP (%s) refused with EFAULT\n", what);
	munmap(p, MT_PAGE);
}

static void test_memfd(void)
{
	int mfd = memfd_create("mreg-bad", MFD_CLOEXEC);
	int devnull = open("/dev/null", O_RDONLY);

	MT_CHECK(mfd >= 0 && !ftruncate(mfd, 4 * MT_PAGE), "memfd");
	if (!mt_memfd_pins(fd)) {
		/* Refused before the fd is even looked at. */
		expect_pin(0, MT_PAGE, MREG_PIN_FLAG_MEMFD, mfd, -EOPNOTSUPP,
			   "memfd without MREG_CAP_MEMFD");
		expect_pin(0, MT_PAGE, MREG_PIN_FLAG_MEMFD, 999, -EOPNOTSUPP,
			   "bad fd without MREG_CAP_MEMFD");
		printf("no MREG_CAP_MEMFD (memfd_pin_folios: 6.11): memfd "
		       "pins refused with EOPNOTSUPP\n");
		close(devnull);
		close(mfd);
		return;
	}
	expect_pin(0, MT_PAGE, MREG_PIN_FLAG_MEMFD, 999, -EBADF, "bad fd");
	expect_pin(0, MT_PAGE, MREG_PIN_FLAG_MEMFD, devnull, -EINVAL,
		   "not a memfd");
	expect_pin(0, 8 * MT_PAGE, MREG_PIN_FLAG_MEMFD, mfd, -EINVAL,
		   "past end of memfd");
	expect_pin(1ULL << 62, MT_PAGE, MREG_PIN_FLAG_MEMFD, mfd, -EINVAL,
		   "huge memfd offset");
	expect_pin(MT_PAGE / 2, MT_PAGE, MREG_PIN_FLAG_MEMFD, mfd, -EINVAL,
		   "unaligned memfd offset");
	close(devnull);
	close(mfd);
}

static void test_handles(void)
{
	char *buf = mt_map(4 * MT_PAGE, MT_PAGE), small[16];
	struct mreg_query q = { .size = sizeof(q),
				.extent_size = sizeof(struct mreg_extent) };
	struct mreg_pin p;

	mt_fill(buf, 4 * MT_PAGE, 5);
	MT_EXPECT_ERR(mt_unpin(fd, 12345), -ENOENT, "unknown handle");
	MT_EXPECT_ERR(mt_unpin(fd, 0), -ENOENT, "handle 0");
	MT_EXPECT_ERR(mt_read(fd, 77, 0, 1, small), -ENOENT, "READ unknown");
	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)buf, 4 * MT_PAGE, 0, 0, &p), 0, "PIN");
	MT_EXPECT_ERR(mt_read(fd, p.out_handle, 4 * MT_PAGE - 8, 16, small),
		      -EINVAL, "READ past end");
	MT_EXPECT_ERR(mt_read(fd, p.out_handle, -8ULL, 16, small), -EINVAL,
		      "READ offset overflow");
	MT_EXPECT_ERR(mt_read(fd, p.out_handle, 0, 16, (void *)8), -EFAULT,
		      "READ to bad pointer");
	q.handle = p.out_handle;
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_QUERY, &q), -EMSGSIZE, "QUERY 0");
	MT_CHECK(q.nr_extents == p.out_nr_extents, "needed %llu",
		 (unsigned long long)q.nr_extents);
	q.nr_extents = 1ULL << 62;
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_QUERY, &q), -EINVAL,
		      "QUERY count overflow");
	q.nr_extents = 1;
	q.extent_size = 8;
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_QUERY, &q), -EINVAL,
		      "QUERY extent_size 8");
	q.extent_size = sizeof(struct mreg_extent);
	q.nr_extents = 64;
	q.extents = 8;
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_QUERY, &q), -EFAULT,
		      "QUERY bad pointer");
	MT_EXPECT_ERR(mt_unpin(fd, p.out_handle), 0, "UNPIN");
	MT_EXPECT_ERR(mt_unpin(fd, p.out_handle), -ENOENT, "double UNPIN");
	munmap(buf, 4 * MT_PAGE);
}

static void test_bench(void)
{
	char *buf = mt_map(4 * MT_PAGE, MT_PAGE);
	struct mreg_bench b = { .size = sizeof(b),
				.method = MREG_BENCH_PUP_FAST,
				.addr = (uintptr_t)buf, .length = 1ULL << 50 };

	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_BENCH, &b), -EINVAL,
		      "BENCH above per-file cap");
	b.length = 8 * MT_PAGE;
	munmap(buf + 4 * MT_PAGE, 4 * MT_PAGE);
	mt_fill(buf, 4 * MT_PAGE, 1);
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_BENCH, &b), 0, "BENCH short range");
	MT_CHECK(b.nr_pages == 4, "BENCH got %llu pages of 4 mapped",
		 (unsigned long long)b.nr_pages);
	b.addr += 4 * MT_PAGE;
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_BENCH, &b), -EFAULT,
		      "BENCH unmapped");
	b.method = MREG_BENCH_MEMFD_PIN_FOLIOS;
	b.addr = 0;
	b.memfd = 999;
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_BENCH, &b),
		      mt_memfd_pins(fd) ? -EBADF : -EOPNOTSUPP,
		      "BENCH bad memfd");
	munmap(buf, 4 * MT_PAGE);
}

int main(void)
{
	fd = mt_open();
	test_ranges();
	test_pfnmap();
	test_memfd();
	test_handles();
	test_bench();
	close(fd);
	printf("PASS badinput\n");
	return 0;
}
