// SPDX-License-Identifier: GPL-2.0
/*
 * Accounting: as non-root (setuid(65534), which drops CAP_IPC_LOCK) pins
 * are charged to mm->pinned_vm against RLIMIT_MEMLOCK, and going over it
 * is ENOMEM with nothing pinned; BENCH is charged the same way while it
 * runs.  Root with CAP_IPC_LOCK may go over.
 * The per-file cap holds for everyone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>
#include <sys/resource.h>
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

	MT_EXPECT_ERR(bench(fd, buf, LIMIT / 2), 0, "BENCH up to the limit");
	MT_EXPECT_ERR(bench(fd, buf, LIMIT / 2 + MT_PAGE), -ENOMEM,
		      "BENCH one page over the limit");
	mt_info(fd, &info);
	MT_CHECK(info.mm_pinned_pages == LIMIT_PAGES / 2,
		 "BENCH left pinned_vm at %llu",
		 (unsigned long long)info.mm_pinned_pages);
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
	MT_CHECK(info.mm_pinned_pages == LIMIT_PAGES / 2, "uncharge");
	bench_charged(fd, buf + LIMIT);
	close(fd);
	printf("non-root: RLIMIT_MEMLOCK enforced on PIN and BENCH, ENOMEM leaves nothing pinned\n");
	return 0;
}

static void test_unprivileged(void)
{
	struct rlimit rl = { LIMIT, LIMIT };
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		if (setrlimit(RLIMIT_MEMLOCK, &rl))
			mt_fail("setrlimit: %s", strerror(errno));
		exit(unprivileged());
	}
	MT_CHECK(pid > 0, "fork");
	waitpid(pid, &status, 0);
	MT_CHECK(WIFEXITED(status) && !WEXITSTATUS(status),
		 "unprivileged child failed (status 0x%x)", status);
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
	test_unprivileged();
	test_ipc_lock();
	test_file_cap();
	printf("PASS memlock\n");
	return 0;
}
