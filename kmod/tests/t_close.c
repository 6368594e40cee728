// SPDX-License-Identifier: GPL-2.0
/*
 * Pins still held are released when the file is closed and when the
 * process exits: FOLL_PIN counters in /proc/vmstat and mm->pinned_vm
 * (RLIMIT_MEMLOCK accounting) come back to where they were.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mt.h"

#define LEN (4UL << 20)

static uint64_t mm_pinned(void)
{
	struct mreg_info info;
	int fd = mt_open();

	MT_EXPECT_ERR(mt_info(fd, &info), 0, "INFO");
	close(fd);
	return info.mm_pinned_pages;
}

/* Three live pins of different kinds on one file. */
static void pin_three(int fd)
{
	char *anon = mt_map(LEN, MT_2M);
	int mfd = memfd_create("mreg-close", MFD_CLOEXEC);
	struct mreg_pin p;

	mt_fill(anon, LEN, 1);
	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)anon, LEN / 2, 0, 0, &p), 0, "PIN");
	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)anon + LEN / 2, LEN / 2,
			     MREG_PIN_FLAG_READONLY, 0, &p), 0, "PIN ro");
	MT_CHECK(mfd >= 0 && !ftruncate(mfd, LEN), "memfd");
	if (mt_memfd_pins(fd))
		MT_EXPECT_ERR(mt_pin(fd, 0, LEN, MREG_PIN_FLAG_MEMFD, mfd, &p),
			      0, "PIN memfd");
	else /* before 6.11: the third pin is anonymous too */
		MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)anon, LEN, 0, 0, &p), 0,
			      "PIN (no MREG_CAP_MEMFD)");
	close(mfd);
	munmap(anon, LEN);
}

static void test_close(void)
{
	uint64_t a0, r0, a1, r1, before = mm_pinned();
	int fd = mt_open();

	mt_pins(&a0, &r0);
	pin_three(fd);
	mt_pins(&a1, &r1);
	MT_CHECK(a1 - a0 > r1 - r0, "pins did not show in /proc/vmstat");
	MT_CHECK(mm_pinned() == before + 2 * LEN / MT_PAGE,
		 "pinned_vm %llu, want %llu", (unsigned long long)mm_pinned(),
		 (unsigned long long)(before + 2 * LEN / MT_PAGE));
	close(fd);
	MT_CHECK(mt_pins_balanced(a0, r0), "pins leaked after close");
	MT_CHECK(mm_pinned() == before, "pinned_vm not uncharged at close");
	printf("close with 3 pins held: balanced\n");
}

static void test_exit(void)
{
	uint64_t a0, r0;
	int status;
	pid_t pid;

	mt_pins(&a0, &r0);
	pid = fork();
	if (pid == 0) {
		pin_three(mt_open());
		_exit(0);
	}
	MT_CHECK(pid > 0, "fork");
	waitpid(pid, &status, 0);
	MT_CHECK(WIFEXITED(status) && !WEXITSTATUS(status), "child failed");
	MT_CHECK(mt_pins_balanced(a0, r0), "pins leaked after process exit");
	printf("exit with 3 pins held: balanced\n");
}

/*
 * The file outlives its owner's copy of the fd: a child holding it (it
 * cannot use it, EPERM) keeps the pins until its own close.
 */
static void test_inherited(void)
{
	int fd = mt_open(), status, go[2];
	uint64_t a0, r0, a1, r1;
	pid_t pid;
	char c;

	mt_pins(&a0, &r0);
	pin_three(fd);
	MT_CHECK(!pipe(go), "pipe");
	pid = fork();
	if (pid == 0) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		_exit(close(fd) ? 3 : 0);
	}
	MT_CHECK(pid > 0, "fork");
	close(go[0]);
	close(fd);
	mt_pins(&a1, &r1);
	MT_CHECK(a1 - a0 > r1 - r0, "pins released while a child holds the file");
	MT_CHECK(write(go[1], "c", 1) == 1, "pipe");
	waitpid(pid, &status, 0);
	MT_CHECK(WIFEXITED(status) && !WEXITSTATUS(status), "child failed");
	MT_CHECK(mt_pins_balanced(a0, r0), "pins leaked after last close");
	printf("pins released at the last close, by a child: balanced\n");
}

int main(void)
{
	close(mt_open());
	test_close();
	test_exit();
	test_inherited();
	printf("PASS close\n");
	return 0;
}
