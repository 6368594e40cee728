// SPDX-License-Identifier: GPL-2.0
/*
 * memfd_pin_folios() checks neither the open mode of the file nor its
 * seals, so mreg.ko checks the mode as mmap() would: a memfd (or tmpfs
 * file) opened O_WRONLY cannot be pinned at all, one opened O_RDONLY only
 * with MREG_PIN_FLAG_READONLY; the same for MREG_IOC_BENCH, where
 * MREG_BENCH_FLAG_WRITE needs a writable file.  Refusals are EACCES and
 * leave nothing pinned.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "mt.h"

#define LEN (16 * MT_PAGE)
#define TMPFS_MAGIC 0x01021994

static int fd;

static int reopen(int f, int mode)
{
	char path[64];
	int r;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", f);
	r = open(path, mode | O_CLOEXEC);
	MT_CHECK(r >= 0, "reopen %s: %s", path, strerror(errno));
	return r;
}

static int bench(int f, uint32_t flags)
{
	struct mreg_bench b = {
		.size = sizeof(b), .flags = flags, .memfd = f, .length = LEN,
		.method = MREG_BENCH_MEMFD_PIN_FOLIOS,
	};

	return mt_ioctl(fd, MREG_IOC_BENCH, &b);
}

/* A read-only pin of an O_RDONLY file reads what was written. */
static void check_ro_pin(int rfd)
{
	static char buf[LEN];
	struct mreg_pin p;

	MT_EXPECT_ERR(mt_pin(fd, 0, LEN, MREG_PIN_FLAG_MEMFD |
			     MREG_PIN_FLAG_READONLY, rfd, &p), 0,
		      "read-only PIN of O_RDONLY");
	MT_EXPECT_ERR(mt_read(fd, p.out_handle, 0, LEN, buf), 0, "READ");
	MT_CHECK(mt_check_fill(buf, LEN, 9) == LEN / MT_PAGE, "READ mismatch");
	MT_EXPECT_ERR(mt_unpin(fd, p.out_handle), 0, "UNPIN");
}

static void check_modes(const char *what, int rw)
{
	int rfd = reopen(rw, O_RDONLY), wfd = reopen(rw, O_WRONLY);
	uint32_t ro = MREG_PIN_FLAG_MEMFD | MREG_PIN_FLAG_READONLY;
	struct mreg_pin p;

	MT_EXPECT_ERR(mt_pin(fd, 0, LEN, ro, wfd, NULL), -EACCES,
		      "read-only PIN of O_WRONLY");
	MT_EXPECT_ERR(mt_pin(fd, 0, LEN, MREG_PIN_FLAG_MEMFD, wfd, NULL),
		      -EACCES, "writable PIN of O_WRONLY");
	MT_EXPECT_ERR(mt_pin(fd, 0, LEN, MREG_PIN_FLAG_MEMFD, rfd, NULL),
		      -EACCES, "writable PIN of O_RDONLY");
	check_ro_pin(rfd);
	MT_EXPECT_ERR(mt_pin(fd, 0, LEN, MREG_PIN_FLAG_MEMFD, rw, &p), 0,
		      "writable PIN of O_RDWR");
	MT_EXPECT_ERR(mt_unpin(fd, p.out_handle), 0, "UNPIN");
	MT_EXPECT_ERR(bench(wfd, 0), -EACCES, "BENCH of O_WRONLY");
	MT_EXPECT_ERR(bench(rfd, MREG_BENCH_FLAG_WRITE), -EACCES,
		      "write BENCH of O_RDONLY");
	MT_EXPECT_ERR(bench(rfd, 0), 0, "read BENCH of O_RDONLY");
	MT_EXPECT_ERR(bench(rw, MREG_BENCH_FLAG_WRITE), 0,
		      "write BENCH of O_RDWR");
	close(rfd);
	close(wfd);
	printf("%s: O_WRONLY refused, O_RDONLY read-only only\n", what);
}

static int filled(int f)
{
	char *p;

	MT_CHECK(f >= 0 && !ftruncate(f, LEN), "create: %s", strerror(errno));
	p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
	MT_CHECK(p != MAP_FAILED, "mmap");
	mt_fill(p, LEN, 9);
	munmap(p, LEN);
	return f;
}

/* A tmpfs file, when /dev/shm is tmpfs: the check is not memfd-only. */
static void check_tmpfs(void)
{
	char path[] = "/dev/shm/mreg-modeXXXXXX";
	struct statfs st;
	int f;

	if (statfs("/dev/shm", &st) || st.f_type != TMPFS_MAGIC) {
		printf("tmpfs: /dev/shm is not tmpfs, memfd case only\n");
		return;
	}
	f = filled(mkstemp(path));
	unlink(path);
	check_modes("tmpfs file", f);
	close(f);
}

int main(void)
{
	uint64_t a0, r0;
	int m;

	fd = mt_open();
	mt_require_memfd(fd);
	mt_pins(&a0, &r0);
	m = filled(memfd_create("mreg-mode", MFD_CLOEXEC));
	check_modes("memfd", m);
	close(m);
	check_tmpfs();
	close(fd);
	MT_CHECK(mt_pins_balanced(a0, r0), "pins leaked");
	printf("PASS memfdmode\n");
	return 0;
}
