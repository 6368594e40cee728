// SPDX-License-Identifier: GPL-2.0
/*
 * Accounting: as non-root (setuid(65534), which drops CAP_IPC_LOCK) pins
 * are charged to the opener's user (locked_vm) against RLIMIT_MEMLOCK,
 * and to mm->pinned_vm; going over the limit is ENOMEM with nothing
 * pinned.  BENCH (CAP_SYS_ADMIN) is charged the same way while it runs,
 * as root without CAP_IPC_LOCK.  Root with CAP_IPC_LOCK may go over.
 * The per-file cap holds for everyone.  (Laundering through exec and fork
 * is kmod-security's.)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mt.h"

#define LIMIT (1UL << 20)
#define LIMIT_PAGES (LIMIT / MT_PAGE)

static void over_limit(int fd, char *buf, uint64_t held)
{
	struct mreg_info info;
	uint64_t a0, r0;

	mt_pins(&a0, &r0);
	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)buf + LIMIT / 2, LIMIT, 0, 0, NULL),
		      -ENOMEM, "PIN above RLIMIT_MEMLOCK");
	MT_CHECK(mt_pins_balanced(a0, r0), "failed PIN left pins");
	mt_info(fd, &info);
	MT_CHECK(info.mm_pinned_pages == held, "pinned_vm %llu, want %llu",
		 (unsigned long long)info.mm_pinned_pages,
		 (unsigned long long)held);
	MT_CHECK(info.user_locked_pages == held, "locked_vm %llu, want %llu",
		 (unsigned long long)info.user_locked_pages,
		 (unsigned long long)held);
}

/* BENCH pins long-term for the call: charged like a PIN while it runs. */
static int bench(int fd, char *buf, uint64_t len)
{
	struct mreg_bench b = {
		.size = sizeof(b), .method = MREG_BENCH_PUP_FAST,
		.flags = MREG_BENCH_FLAG_WRITE | MREG_BENCH_FLAG_LONGTERM,
		.addr = (uintptr_t)buf, .length = len,
	};

	return mt_ioctl(fd, MREG_IOC_BENCH, &b);
}

static void bench_charged(int fd, char *buf)
{
	struct mreg_info info;

	mt_info(fd, &info);
	MT_CHECK(!(info.caps & MREG_CAP_IPC_LOCK), "CAP_IPC_LOCK not dropped");
	MT_EXPECT_ERR(bench(fd, buf, LIMIT / 2), 0, "BENCH up to the limit");
	MT_EXPECT_ERR(bench(fd, buf, LIMIT / 2 + MT_PAGE), -ENOMEM,
		      "BENCH one page over the limit");
	mt_info(fd, &info);
	MT_CHECK(info.mm_pinned_pages == LIMIT_PAGES / 2 &&
			 info.user_locked_pages == LIMIT_PAGES / 2,
		 "BENCH left pinned_vm at %llu, locked_vm at %llu",
		 (unsigned long long)info.mm_pinned_pages,
		 (unsigned long long)info.user_locked_pages);
}

/* Root keeping CAP_SYS_ADMIN for BENCH, without CAP_IPC_LOCK. */
static void drop_ipc_lock(void)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];

	MT_CHECK(!syscall(SYS_capget, &hdr, data), "capget");
	data[CAP_TO_INDEX(CAP_IPC_LOCK)].effective &= ~CAP_TO_MASK(CAP_IPC_LOCK);
	data[CAP_TO_INDEX(CAP_IPC_LOCK)].permitted &= ~CAP_TO_MASK(CAP_IPC_LOCK);
	MT_CHECK(!syscall(SYS_capset, &hdr, data), "capset: %s",
		 strerror(errno));
}

static int bench_as_root(void)
{
	char *buf = mt_map(2 * LIMIT, MT_PAGE);
	struct mreg_pin p;
	int fd;

	drop_ipc_lock();
	fd = mt_open();
	mt_fill(buf, 2 * LIMIT, 6);
	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)buf, LIMIT / 2, 0, 0, &p), 0,
		      "PIN half the limit");
	bench_charged(fd, buf + LIMIT / 2);
	close(fd);
	printf("root without CAP_IPC_LOCK: BENCH charged while it runs\n");
	return 0;
}

static int unprivileged(void)
{
	char *buf = mt_map(2 * LIMIT, MT_PAGE);
	struct mreg_info info;
	struct mreg_pin p;
	int fd;

	if (setgid(65534) || setuid(65534))
		mt_fail("setuid: %s", strerror(errno));
	fd = mt_open();
	mt_info(fd, &info);
	MT_CHECK(!(info.caps & (MREG_CAP_IPC_LOCK | MREG_CAP_PHYS)),
		 "caps 0x%x after setuid", info.caps);
	MT_CHECK(info.memlock_limit_pages == LIMIT_PAGES, "limit %llu",
		 (unsigned long long)info.memlock_limit_pages);
	mt_fill(buf, 2 * LIMIT, 3);
	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)buf, LIMIT / 2, 0, 0, &p), 0,
		      "PIN within limit");
	over_limit(fd, buf, LIMIT_PAGES / 2);
	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)buf + LIMIT / 2, LIMIT / 2, 0, 0,
			     NULL), 0, "PIN up to the limit");
	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)buf + LIMIT, MT_PAGE, 0, 0, NULL),
		      -ENOMEM, "one page over");
	MT_EXPECT_ERR(mt_unpin(fd, p.out_handle), 0, "UNPIN");
	mt_info(fd, &info);
	MT_CHECK(info.mm_pinned_pages == LIMIT_PAGES / 2 &&
			 info.user_locked_pages == LIMIT_PAGES / 2,
		 "uncharge");
	close(fd);
	printf("non-root: RLIMIT_MEMLOCK enforced on PIN, ENOMEM leaves nothing pinned\n");
	return 0;
}

static void in_child(int (*fn)(void), const char *what)
{
	struct rlimit rl = { LIMIT, LIMIT };
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		if (setrlimit(RLIMIT_MEMLOCK, &rl))
			mt_fail("setrlimit: %s", strerror(errno));
		exit(fn());
	}
	MT_CHECK(pid > 0, "fork");
	waitpid(pid, &status, 0);
	MT_CHECK(WIFEXITED(status) && !WEXITSTATUS(status),
		 "%s child failed (status 0x%x)", what, status);
}

static void test_ipc_lock(void)
{
	struct rlimit rl = { LIMIT, LIMIT }, old;
	char *buf = mt_map(4 * LIMIT, MT_PAGE);
	struct mreg_pin p;
	int fd = mt_open();

	getrlimit(RLIMIT_MEMLOCK, &old);
	MT_CHECK(!setrlimit(RLIMIT_MEMLOCK, &rl), "setrlimit");
	mt_fill(buf, 4 * LIMIT, 4);
	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)buf, 4 * LIMIT, 0, 0, &p), 0,
		      "CAP_IPC_LOCK over RLIMIT_MEMLOCK");
	MT_EXPECT_ERR(mt_unpin(fd, p.out_handle), 0, "UNPIN");
	setrlimit(RLIMIT_MEMLOCK, &old);
	close(fd);
	munmap(buf, 4 * LIMIT);
	printf("CAP_IPC_LOCK: RLIMIT_MEMLOCK bypassed\n");
}

static void test_file_cap(void)
{
	struct mreg_set_limit sl = { .size = sizeof(sl), .max_pages = 64 };
	char *buf = mt_map(LIMIT, MT_PAGE);
	struct mreg_pin p;
	int fd = mt_open();

	mt_fill(buf, LIMIT, 5);
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_SET_LIMIT, &sl), 0, "SET_LIMIT");
	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)buf, 32 * MT_PAGE, 0, 0, &p), 0,
		      "PIN under cap");
	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)buf, 33 * MT_PAGE, 0, 0, NULL),
		      -ENOMEM, "PIN over per-file cap");
	sl.max_pages = 16;
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_SET_LIMIT, &sl), -EINVAL,
		      "SET_LIMIT below pinned");
	MT_EXPECT_ERR(mt_unpin(fd, p.out_handle), 0, "UNPIN");
	close(fd);
	munmap(buf, LIMIT);
	printf("per-file cap enforced\n");
}

int main(void)
{
	close(mt_open());
	if (!mt_is_root())
		mt_skip("needs root to setrlimit and setuid");
	mt_grant_group(65534);
	/* Exact charges: no THP, whose pins are charged whole. */
	mt_thp_only(0);
	in_child(unprivileged, "unprivileged");
	in_child(bench_as_root, "root without CAP_IPC_LOCK");
	test_ipc_lock();
	test_file_cap();
	printf("PASS memlock\n");
	return 0;
}
