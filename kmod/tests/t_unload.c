// SPDX-License-Identifier: GPL-2.0
/*
 * Unload and death with pins outstanding:
 * - rmmod is refused (EWOULDBLOCK: the open files hold the module) while a file holding pins is open, and while
 *   one holding none is; once the last file is closed it succeeds, every
 *   pin is released and the module loads and pins again;
 * - a process SIGKILLed in the middle of a 1 GiB PIN (MREG_KILL_MB)
 *   leaves nothing pinned or charged, and the module unloads after it;
 * - a process killed while holding pins releases them at exit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mt.h"

#define PIN_LEN (4UL << 20)

static int unload(void)
{
	return syscall(SYS_delete_module, "mreg", O_NONBLOCK) ? -errno : 0;
}

static void *map_filled(size_t len)
{
	char *p = mt_map(len, MT_2M);

	mt_fill(p, len, 7);
	return p;
}

/* Without the udev rule (none runs in the guest) the node is root's. */
static void expect_root_only(void)
{
	struct stat st;

	MT_CHECK(!stat("/dev/mreg", &st), "stat /dev/mreg: %s", strerror(errno));
	MT_CHECK((st.st_mode & 07777) == 0600 && !st.st_uid && !st.st_gid,
		 "/dev/mreg is %o %u:%u, want 0600 root:root",
		 st.st_mode & 07777, st.st_uid, st.st_gid);
}

static void refused_while_open(void)
{
	int fd = mt_open(), idle = mt_open();
	char *p = map_filled(PIN_LEN);
	uint64_t a0, r0;

	mt_pins(&a0, &r0);
	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)p, PIN_LEN, 0, 0, NULL), 0, "PIN");
	MT_EXPECT_ERR(unload(), -EWOULDBLOCK, "rmmod with pins held");
	close(fd);
	MT_EXPECT_ERR(unload(), -EWOULDBLOCK, "rmmod with an idle file open");
	close(idle);
	MT_CHECK(mt_pins_balanced(a0, r0), "close did not release the pins");
	MT_EXPECT_ERR(unload(), 0, "rmmod once every file is closed");
	MT_CHECK(access("/dev/mreg", F_OK), "/dev/mreg still there");
	fd = mt_open();
	expect_root_only();
	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)p, PIN_LEN, 0, 0, NULL), 0,
		      "PIN after reload");
	close(fd);
	MT_CHECK(mt_pins_balanced(a0, r0), "pins left after reload");
	munmap(p, PIN_LEN);
	printf("ok rmmod refused while files are open, works after close\n");
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The child opens the device, says so, then pins @len of unpopulated
 * memory (or, @hold, pins a filled range and waits to be killed). */
static void child(size_t len, int hold, int tell)
{
	int fd = mt_open();
	char *p = hold ? map_filled(len) : mt_map(len, MT_2M);
	int ret;

	if (write(tell, "r", 1) != 1)
		_exit(3);
	ret = mt_pin(fd, (uintptr_t)p, len, 0, 0, NULL);
	if (write(tell, ret ? "e" : "d", 1) != 1)
		_exit(3);
	pause();
	_exit(0);
}

static void kill_child(size_t len, int hold)
{
	uint64_t a0, r0, a = 0, r, want = len / MT_PAGE / 4, end;
	char c = 0;
	int pipefd[2], status;
	pid_t pid;

	mt_pins(&a0, &r0);
	MT_CHECK(!pipe(pipefd), "pipe");
	pid = fork();
	MT_CHECK(pid >= 0, "fork");
	if (!pid)
		child(len, hold, pipefd[1]);
	MT_CHECK(read(pipefd[0], &c, 1) == 1 && c == 'r', "child did not start");
	if (hold)
		MT_CHECK(read(pipefd[0], &c, 1) == 1 && c == 'd', "child's PIN");
	fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
	for (end = now_ms() + 300000; !hold && now_ms() < end; usleep(2000)) {
		if (read(pipefd[0], &c, 1) == 1)
			break;
		mt_pins(&a, &r);
		if (a - a0 >= want)
			break;
	}
	kill(pid, SIGKILL);
	MT_CHECK(waitpid(pid, &status, 0) == pid && WIFSIGNALED(status),
		 "child not killed");
	if (!hold && c != 'd' && c != 'e' && read(pipefd[0], &c, 1) != 1)
		c = 0;
	close(pipefd[0]);
	close(pipefd[1]);
	MT_CHECK(hold || !c, "the %zu MB PIN ended (%c) before a quarter was "
		 "pinned: nothing was killed mid-way", len >> 20, c);
	MT_CHECK(hold || a - a0 >= want, "a quarter of the PIN never got "
		 "pinned in 300 s");
	MT_CHECK(mt_pins_balanced(a0, r0), "pins left by the killed child");
	MT_EXPECT_ERR(unload(), 0, "rmmod after the child died");
	printf("ok SIGKILL %s: pins released, module unloads\n",
	       hold ? "holding a pin" : "in the middle of a 1 GiB PIN");
}

int main(void)
{
	/* At most the module's default per-file cap, 1 GiB. */
	size_t len = mt_env_ulong("MREG_KILL_MB", 1024) << 20;

	if (len > (1UL << 30))
		len = 1UL << 30;
	if (!mt_is_root())
		mt_skip("rmmod and the pin counters need root");
	/* Every reload comes from there: without it, do not unload. */
	if (access("/mreg/ko/mreg.ko", R_OK))
		mt_skip("no /mreg/ko/mreg.ko to load the module again from");
	close(mt_open());
	refused_while_open();
	kill_child(len, 0);
	kill_child(PIN_LEN, 1);
	close(mt_open());
	printf("PASS unload\n");
	return 0;
}
