// SPDX-License-Identifier: GPL-2.0
/*
 * The security model of include/uapi/mreg.h, one case per finding of the
 * review in issue 28; each case failed on the module before it:
 *
 * - exec laundering: an unprivileged user with an 8 MiB RLIMIT_MEMLOCK
 *   pins 8 MiB, execs itself keeping the fd, and tries again: the second
 *   generation gets ENOMEM, the fd it inherited gets EPERM, and the pins
 *   held never exceed the limit;
 * - fork laundering: the child can neither pin through its parent's fd
 *   (EPERM) nor through its own (ENOMEM: the user is charged);
 * - a file passed over a unix socket, and one inherited by a child that
 *   called setuid(): every call but close fails with EPERM, poll() gives
 *   EPOLLERR, and the owner's pin is intact;
 * - physical addresses follow the opener's credentials, not the caller's;
 * - watches are capped per user across files, and a one-page munmap()
 *   under the cap costs one notifier call per watch;
 * - oversized @size (E2BIG) and @extent_size (EINVAL), WATCH_INFO's
 *   unknown counters come back zero, BENCH needs CAP_SYS_ADMIN;
 * - read() with RWF_NOWAIT never blocks on a blocking fd.
 *
 * Runs as root, and as uid/gid 65534 where the case is about an
 * unprivileged user, with /dev/mreg given to gid 65534 as the shipped
 * udev rule gives it to group mreg.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mt.h"

#define NOBODY 65534
#define LIMIT (8UL << 20)
#define LIMIT_PAGES (LIMIT / MT_PAGE)
#define GENERATIONS 8
#define USER_WATCHES 64
#define WATCH_FILES 4
#define TASK_TOP 0x7ffffffff000UL
#define PARAM "/sys/module/mreg/parameters/max_watches_per_user"

static void become_nobody(void)
{
	struct rlimit rl = {LIMIT, LIMIT};

	if (setrlimit(RLIMIT_MEMLOCK, &rl))
		mt_fail("setrlimit: %s", strerror(errno));
	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
		mt_fail("drop to %u: %s", NOBODY, strerror(errno));
}

/* Tell the parent the pins are held, and hold them until killed. */
static int hold(int wfd)
{
	if (write(wfd, "h", 1) != 1)
		mt_fail("report: %s", strerror(errno));
	for (;;)
		pause();
}

static uint64_t pins_held(uint64_t a0, uint64_t r0)
{
	uint64_t a, r;

	mt_pins(&a, &r);
	return (a - a0) - (r - r0);
}

/*
 * Run @fn as uid 65534 in a child. If it reports holding its pins, check
 * they are within RLIMIT_MEMLOCK and kill it; else it must exit 0. Either
 * way nothing stays pinned.
 */
static void run_nobody(const char *what, int (*fn)(int wfd))
{
	uint64_t a0, r0, held = 0;
	int p[2], status;
	char c = 0;
	pid_t pid;

	mt_pins(&a0, &r0);
	MT_CHECK(!pipe(p), "pipe");
	pid = fork();
	MT_CHECK(pid >= 0, "fork");
	if (!pid) {
		close(p[0]);
		become_nobody();
		status = fn(p[1]);
		fflush(stdout);
		_exit(status);
	}
	close(p[1]);
	if (read(p[0], &c, 1) == 1) {
		held = pins_held(a0, r0);
		kill(pid, SIGKILL);
	}
	close(p[0]);
	waitpid(pid, &status, 0);
	if (c == 'h')
		MT_CHECK(WIFSIGNALED(status), "%s: status 0x%x", what, status);
	else
		MT_CHECK(WIFEXITED(status) && !WEXITSTATUS(status),
			 "%s: unprivileged child failed (status 0x%x)", what,
			 status);
	MT_CHECK(held <= LIMIT_PAGES,
		 "%s: %llu pages pinned, RLIMIT_MEMLOCK is %lu", what,
		 (unsigned long long)held, LIMIT_PAGES);
	MT_CHECK(mt_pins_balanced(a0, r0), "%s: pins left after the child",
		 what);
	printf("ok %s: at most %llu of %lu pages pinned\n", what,
	       (unsigned long long)held, LIMIT_PAGES);
}

static char *filled(size_t len, uint32_t seed)
{
	char *p = mt_map(len, MT_PAGE);

	mt_fill(p, len, seed);
	return p;
}

static int is_mreg_fd(int fd)
{
	struct stat dev, st;

	return !stat("/dev/mreg", &dev) && !fstat(fd, &st) &&
	       S_ISCHR(st.st_mode) && st.st_rdev == dev.st_rdev;
}

/* Every entry point a non-owner may try on @fd, @handle one of its pins. */
static void expect_foreign(int fd, uint32_t handle, const char *who)
{
	struct mreg_watch w = {.size = sizeof(w), .addr = 0, .length = MT_PAGE};
	struct mreg_info info = {.size = sizeof(info)};
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	uint64_t n = 0;
	char byte;

	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_INFO, &info), -EPERM, who);
	MT_EXPECT_ERR(mt_read(fd, handle, 0, 1, &byte), -EPERM, who);
	MT_CHECK(!mt_query(fd, handle, &n), "%s: QUERY worked", who);
	MT_EXPECT_ERR(mt_unpin(fd, handle), -EPERM, who);
	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)&byte & ~(MT_PAGE - 1), MT_PAGE, 0,
			     0, NULL), -EPERM, who);
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_WATCH, &w), -EPERM, who);
	MT_CHECK(mmap(NULL, MT_PAGE, PROT_READ, MAP_SHARED, fd, 0) ==
			 MAP_FAILED && errno == EPERM,
		 "%s: mmap of the generations", who);
	MT_CHECK(read(fd, &info, sizeof(info)) < 0 && errno == EPERM,
		 "%s: read of events", who);
	MT_CHECK(poll(&pfd, 1, 0) == 1 && pfd.revents & POLLERR,
		 "%s: poll revents 0x%x", who, pfd.revents);
}

/* ---- exec laundering ---------------------------------------------- */

static int info_err(int fd)
{
	struct mreg_info info = {.size = sizeof(info)};

	return mt_ioctl(fd, MREG_IOC_INFO, &info);
}

static int exec_generation(int gen, int wfd)
{
	char *buf = filled(LIMIT, gen);
	char arg_gen[16], arg_fd[16];
	int fd, old, ret;

	fd = open("/dev/mreg", O_RDWR); /* no O_CLOEXEC: the attack */
	MT_CHECK(fd >= 0, "open /dev/mreg as %u: %s", NOBODY, strerror(errno));
	ret = mt_pin(fd, (uintptr_t)buf, LIMIT, 0, 0, NULL);
	if (gen)
		MT_EXPECT_ERR(ret, -ENOMEM, "PIN after exec, limit already held");
	else
		MT_EXPECT_ERR(ret, 0, "PIN up to RLIMIT_MEMLOCK");
	for (old = 3; old < 64; old++)
		if (old != wfd && old != fd && is_mreg_fd(old))
			MT_EXPECT_ERR(info_err(old), -EPERM,
				      "INFO on a file from before exec");
	if (gen == GENERATIONS - 1)
		return hold(wfd);
	snprintf(arg_gen, sizeof(arg_gen), "%d", gen + 1);
	snprintf(arg_fd, sizeof(arg_fd), "%d", wfd);
	execl("/proc/self/exe", "kmod-security", "--exec-gen", arg_gen, arg_fd,
	      (char *)NULL);
	mt_fail("exec: %s", strerror(errno));
}

static int exec_first(int wfd)
{
	return exec_generation(0, wfd);
}

/* ---- fork laundering ---------------------------------------------- */

static int fork_child(int fd, char *buf)
{
	int own = open("/dev/mreg", O_RDWR | O_CLOEXEC);

	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)buf, LIMIT, 0, 0, NULL), -EPERM,
		      "child PIN through its parent's file");
	MT_CHECK(own >= 0, "child open: %s", strerror(errno));
	MT_EXPECT_ERR(mt_pin(own, (uintptr_t)buf, MT_PAGE, 0, 0, NULL), -ENOMEM,
		      "child PIN through its own file, parent at the limit");
	close(own);
	return 0;
}

static int fork_parent(int wfd)
{
	char *buf = filled(LIMIT, 11);
	int fd = open("/dev/mreg", O_RDWR), status;
	struct mreg_info info = {.size = sizeof(info)};
	pid_t pid;

	MT_CHECK(fd >= 0, "open: %s", strerror(errno));
	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)buf, LIMIT, 0, 0, NULL), 0, "PIN");
	pid = fork();
	MT_CHECK(pid >= 0, "fork");
	if (!pid)
		_exit(fork_child(fd, buf));
	waitpid(pid, &status, 0);
	MT_CHECK(WIFEXITED(status) && !WEXITSTATUS(status),
		 "forked child failed (status 0x%x)", status);
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_INFO, &info), 0, "INFO");
	MT_CHECK(info.user_locked_pages >= LIMIT_PAGES,
		 "user charged %llu pages",
		 (unsigned long long)info.user_locked_pages);
	return hold(wfd);
}

/* ---- fd passing and fork + setuid ---------------------------------- */

static void send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {0}, byte = 'f';
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	MT_CHECK(sendmsg(sock, &msg, 0) == 1, "sendmsg: %s", strerror(errno));
}

static int recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {0}, byte;
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *c;
	int fd;

	MT_CHECK(recvmsg(sock, &msg, 0) == 1, "recvmsg: %s", strerror(errno));
	c = CMSG_FIRSTHDR(&msg);
	MT_CHECK(c && c->cmsg_type == SCM_RIGHTS, "no fd received");
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

static void expect_owner_intact(int fd, uint32_t handle, uint32_t seed,
				size_t len)
{
	char *copy = malloc(len);

	MT_CHECK(copy, "malloc");
	MT_EXPECT_ERR(mt_read(fd, handle, 0, len, copy), 0, "owner's READ");
	MT_CHECK(mt_check_fill(copy, len, seed) == len / MT_PAGE,
		 "owner's pin changed");
	free(copy);
	MT_EXPECT_ERR(mt_unpin(fd, handle), 0, "owner's UNPIN");
}

static void test_fd_passing(void)
{
	int sv[2], fd, got, status;
	char *buf = filled(16 * MT_PAGE, 21);
	struct mreg_pin p;
	uint32_t handle;
	pid_t pid;

	MT_CHECK(!socketpair(AF_UNIX, SOCK_STREAM, 0, sv), "socketpair");
	pid = fork();
	MT_CHECK(pid >= 0, "fork");
	if (!pid) {
		close(sv[0]);
		got = recv_fd(sv[1]);
		MT_CHECK(read(sv[1], &handle, sizeof(handle)) == sizeof(handle),
			 "handle");
		expect_foreign(got, handle, "fd passed over a unix socket");
		MT_CHECK(!close(got), "close of a passed fd");
		_exit(0);
	}
	close(sv[1]);
	fd = mt_open();
	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)buf, 16 * MT_PAGE, 0, 0, &p), 0,
		      "PIN");
	send_fd(sv[0], fd);
	MT_CHECK(write(sv[0], &p.out_handle, sizeof(p.out_handle)) ==
			 sizeof(p.out_handle), "send handle");
	waitpid(pid, &status, 0);
	MT_CHECK(WIFEXITED(status) && !WEXITSTATUS(status),
		 "receiver failed (status 0x%x)", status);
	expect_owner_intact(fd, p.out_handle, 21, 16 * MT_PAGE);
	close(fd);
	close(sv[0]);
	printf("ok fd passed over a unix socket: EPERM everywhere, close works\n");
}

static void test_fork_setuid(void)
{
	char *buf = filled(16 * MT_PAGE, 22);
	int fd = mt_open(), status;
	struct mreg_pin p;
	pid_t pid;

	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)buf, 16 * MT_PAGE, 0, 0, &p), 0,
		      "PIN");
	pid = fork();
	MT_CHECK(pid >= 0, "fork");
	if (!pid) {
		become_nobody();
		expect_foreign(fd, p.out_handle, "child after setuid");
		_exit(0);
	}
	waitpid(pid, &status, 0);
	MT_CHECK(WIFEXITED(status) && !WEXITSTATUS(status),
		 "setuid child failed (status 0x%x)", status);
	expect_owner_intact(fd, p.out_handle, 22, 16 * MT_PAGE);
	close(fd);
	printf("ok fork + setuid: the child gets EPERM, the parent's pin is intact\n");
}

/* ---- physical addresses: the opener's credentials ------------------ */

static int phys_of_first(int fd, char *buf)
{
	struct mreg_extent *e;
	struct mreg_pin p;
	uint64_t n;
	int phys;

	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)buf, MT_PAGE, 0, 0, &p), 0, "PIN");
	e = mt_query(fd, p.out_handle, &n);
	MT_CHECK(e && n == 1, "QUERY");
	phys = e[0].phys != 0;
	free(e);
	MT_EXPECT_ERR(mt_unpin(fd, p.out_handle), 0, "UNPIN");
	return phys;
}

static int phys_child(void)
{
	char *buf = filled(MT_PAGE, 23);
	int root_fd = mt_open(), fd;

	become_nobody();
	MT_CHECK(phys_of_first(root_fd, buf),
		 "root opened the file: phys hidden after the opener dropped root");
	fd = open("/dev/mreg", O_RDWR | O_CLOEXEC);
	MT_CHECK(fd >= 0, "open as %u: %s", NOBODY, strerror(errno));
	MT_CHECK(!phys_of_first(fd, buf), "phys shown to a non-root opener");
	return 0;
}

static void test_phys_opener(void)
{
	int status;
	pid_t pid = fork();

	MT_CHECK(pid >= 0, "fork");
	if (!pid)
		_exit(phys_child());
	waitpid(pid, &status, 0);
	MT_CHECK(WIFEXITED(status) && !WEXITSTATUS(status),
		 "phys child failed (status 0x%x)", status);
	printf("ok physical addresses follow the opener's credentials\n");
}

/* ---- the watch flood ----------------------------------------------- */

static uint64_t unmap_events(const int *fds)
{
	struct mreg_watch_info info;
	uint64_t sum = 0;
	int i;

	for (i = 0; i < WATCH_FILES; i++) {
		memset(&info, 0, sizeof(info));
		info.size = sizeof(info);
		MT_EXPECT_ERR(mt_ioctl(fds[i], MREG_IOC_WATCH_INFO, &info), 0,
			      "WATCH_INFO");
		sum += info.events[MREG_WATCH_UNMAP];
	}
	return sum;
}

/* Whole-address-space watches from several files, until the user cap. */
static unsigned int flood(const int *fds)
{
	struct mreg_watch w;
	unsigned int n = 0;
	int i, ret;

	for (i = 0; i < WATCH_FILES; i++) {
		do {
			w = (struct mreg_watch){.size = sizeof(w),
						.addr = MT_PAGE,
						.length = TASK_TOP - MT_PAGE};
			ret = mt_ioctl(fds[i], MREG_IOC_WATCH, &w);
			n += !ret;
		} while (!ret && n <= USER_WATCHES);
		MT_EXPECT_ERR(ret, -ENOSPC, "WATCH over the per-user cap");
	}
	return n;
}

static int flood_child(int wfd)
{
	int fds[WATCH_FILES], i;
	struct timespec t0, t1;
	char *buf = filled(16 * MT_PAGE, 24);
	uint64_t before, calls;
	unsigned int n;

	(void)wfd;
	for (i = 0; i < WATCH_FILES; i++) {
		fds[i] = open("/dev/mreg", O_RDWR | O_CLOEXEC);
		MT_CHECK(fds[i] >= 0, "open: %s", strerror(errno));
	}
	n = flood(fds);
	MT_CHECK(n == USER_WATCHES, "%u watches over %d files, cap %d", n,
		 WATCH_FILES, USER_WATCHES);
	before = unmap_events(fds);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	MT_CHECK(!munmap(buf + 8 * MT_PAGE, MT_PAGE), "munmap");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	calls = unmap_events(fds) - before;
	MT_CHECK(calls == n, "one-page munmap made %llu notifier calls, %u watches",
		 (unsigned long long)calls, n);
	printf("    %u whole-space watches: one-page munmap made %llu notifier "
	       "calls in %ld us (guest clock, not asserted)\n", n,
	       (unsigned long long)calls,
	       (long)((t1.tv_sec - t0.tv_sec) * 1000000 +
		      (t1.tv_nsec - t0.tv_nsec) / 1000));
	for (i = 0; i < WATCH_FILES; i++)
		close(fds[i]);
	return 0;
}

static void param_write(const char *val)
{
	int fd = open(PARAM, O_WRONLY);

	MT_CHECK(fd >= 0, "open %s: %s", PARAM, strerror(errno));
	MT_CHECK(write(fd, val, strlen(val)) == (ssize_t)strlen(val),
		 "write %s to %s: %s", val, PARAM, strerror(errno));
	close(fd);
}

static void test_watch_flood(void)
{
	char old[32] = {0}, cap[16];
	int fd = open(PARAM, O_RDONLY);

	MT_CHECK(fd >= 0, "%s: %s", PARAM, strerror(errno));
	MT_CHECK(read(fd, old, sizeof(old) - 1) > 0, "read %s", PARAM);
	close(fd);
	snprintf(cap, sizeof(cap), "%d", USER_WATCHES);
	param_write(cap);
	run_nobody("watch flood", flood_child);
	param_write(old);
}

/* ---- WATCH killed while an invalidation queues it ------------------ */

#define KILL_ROUNDS 300

static char *kill_region;
static int kill_fd;

/* Zap the watched page, until the process is killed. */
static void *zap_loop(void *arg)
{
	(void)arg;
	for (;;) {
		kill_region[0] = 1;
		madvise(kill_region, MT_PAGE, MADV_DONTNEED);
	}
	return NULL;
}

/*
 * One thread zaps a page that the other watches and unwatches, so each
 * new watch is queued by an invalidation while WATCH reads its generation,
 * where the SIGKILL lands.  A second watch, on a page nothing touches, is
 * queued only by exit's invalidation: onto the list a freed watch would
 * still be on (the use-after-free found in review, list_add corruption).
 */
static void watch_kill_child(void)
{
	struct mreg_watch w = {.size = sizeof(w), .length = MT_PAGE};
	struct mreg_unwatch u;
	pthread_t th;

	kill_fd = open("/dev/mreg", O_RDWR | O_CLOEXEC);
	MT_CHECK(kill_fd >= 0, "open: %s", strerror(errno));
	kill_region = mmap(NULL, MT_PAGE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	w.addr = (uintptr_t)mmap(NULL, MT_PAGE, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	MT_CHECK(kill_region != MAP_FAILED && w.addr != (uintptr_t)MAP_FAILED,
		 "mmap");
	MT_EXPECT_ERR(mt_ioctl(kill_fd, MREG_IOC_WATCH, &w), 0, "WATCH");
	MT_CHECK(!pthread_create(&th, NULL, zap_loop, NULL), "thread");
	for (;;) {
		w = (struct mreg_watch){.size = sizeof(w),
					.addr = (uintptr_t)kill_region,
					.length = MT_PAGE};
		if (mt_ioctl(kill_fd, MREG_IOC_WATCH, &w))
			continue;
		u = (struct mreg_unwatch){.size = sizeof(u), .id = w.out_id};
		mt_ioctl(kill_fd, MREG_IOC_UNWATCH, &u);
	}
}

static int watch_kill_rounds(int wfd)
{
	struct timespec d;
	int i, status;
	pid_t pid;

	(void)wfd;
	for (i = 0; i < KILL_ROUNDS; i++) {
		pid = fork();
		MT_CHECK(pid >= 0, "fork");
		if (!pid)
			watch_kill_child();
		d = (struct timespec){0, (1 + (i * 7) % 20) * 1000000L};
		nanosleep(&d, NULL);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		MT_CHECK(WIFSIGNALED(status), "round %d: child exited 0x%x", i,
			 status);
	}
	printf("    %d processes killed while WATCH raced invalidations "
	       "(the harness checks dmesg)\n", KILL_ROUNDS);
	return 0;
}

static void test_watch_kill(void)
{
	run_nobody("WATCH killed mid-call", watch_kill_rounds);
}

/* ---- whole folios charged; the generation array charged ----------- */

#define THPS 5

#define SMALL_PAGES 300

static uint64_t locked_now(int fd)
{
	struct mreg_info info = {.size = sizeof(info)};

	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_INFO, &info), 0, "INFO");
	MT_CHECK(info.user_locked_pages == info.file_pinned_pages,
		 "locked_vm %llu, file %llu",
		 (unsigned long long)info.user_locked_pages,
		 (unsigned long long)info.file_pinned_pages);
	return info.user_locked_pages;
}

static void pin_thp_page(int fd, char *thp, struct mreg_pin *p)
{
	struct mreg_extent *e;
	uint64_t n;

	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)thp, MT_PAGE, 0, 0, p), 0,
		      "PIN one page of a THP");
	e = mt_query(fd, p->out_handle, &n);
	MT_CHECK(e && n == 1 && e[0].order == 9,
		 "the page is not in a 2 MiB folio (order %u)",
		 e ? e[0].order : 0);
	free(e);
}

/*
 * One 4 KiB page of a 2 MiB THP holds the THP: 512 pages charged, the
 * first before pinning, 511 once the folio is known.  Both charges can
 * fail: the first refuses to pin, the second unpins.
 */
static int thp_partial_child(int wfd)
{
	char *thp[THPS], *small = filled(SMALL_PAGES * MT_PAGE, 30);
	int fd = open("/dev/mreg", O_RDWR | O_CLOEXEC), i;
	struct mreg_pin p, ps;

	(void)wfd;
	MT_CHECK(fd >= 0, "open: %s", strerror(errno));
	for (i = 0; i < THPS; i++) {
		thp[i] = mt_map(MT_2M, MT_2M);
		mt_fill(thp[i], MT_2M, 29 + i);
	}
	for (i = 0; i < 3; i++)
		pin_thp_page(fd, thp[i], &p);
	MT_CHECK(locked_now(fd) == 3 * 512, "3 THP pages: %llu charged",
		 (unsigned long long)locked_now(fd));
	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)small, SMALL_PAGES * MT_PAGE, 0, 0,
			     &ps), 0, "PIN 300 small pages");
	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)thp[3], MT_PAGE, 0, 0, NULL),
		      -ENOMEM, "a THP page whose folio goes over the limit");
	MT_CHECK(locked_now(fd) == 3 * 512 + SMALL_PAGES,
		 "the refused THP pin left %llu charged",
		 (unsigned long long)locked_now(fd));
	MT_EXPECT_ERR(mt_unpin(fd, ps.out_handle), 0, "UNPIN");
	pin_thp_page(fd, thp[3], &p);
	MT_CHECK(locked_now(fd) == LIMIT_PAGES, "4 THP pages: %llu charged",
		 (unsigned long long)locked_now(fd));
	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)thp[4], MT_PAGE, 0, 0, NULL),
		      -ENOMEM, "one page of a fifth THP, at the limit");
	for (i = 0; i < THPS; i++)
		munmap(thp[i], MT_2M);
	close(fd);
	return 0;
}

static void test_thp_partial(void)
{
	mt_thp_only(2048);
	run_nobody("one page of each THP charged whole", thp_partial_child);
}

/* Each file's generation array (32 pages) is charged to locked_vm. */
static int gens_child(int wfd)
{
	unsigned int files = 0, gens_pages = 0;
	struct mreg_watch_info wi = {.size = sizeof(wi)};
	int fd;
	void *m;

	(void)wfd;
	for (;;) {
		fd = open("/dev/mreg", O_RDWR | O_CLOEXEC);
		MT_CHECK(fd >= 0, "open %u: %s", files, strerror(errno));
		if (!gens_pages) {
			MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_WATCH_INFO, &wi), 0,
				      "WATCH_INFO");
			gens_pages = ((wi.max_watches + 1) * 8 + MT_PAGE - 1) /
				     MT_PAGE;
		}
		m = mmap(NULL, MT_PAGE, PROT_READ, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED)
			break;
		files++;
		MT_CHECK(files <= LIMIT_PAGES, "no limit on generation arrays");
	}
	MT_CHECK(errno == ENOMEM, "mmap %u: %s", files, strerror(errno));
	MT_CHECK(files == LIMIT_PAGES / gens_pages,
		 "%u arrays of %u pages mapped, RLIMIT_MEMLOCK %lu pages",
		 files, gens_pages, LIMIT_PAGES);
	printf("    %u generation arrays of %u pages, then ENOMEM\n", files,
	       gens_pages);
	return 0;
}

static void test_gens_memlock(void)
{
	run_nobody("generation arrays charged to RLIMIT_MEMLOCK", gens_child);
}

/* ---- hugetlb holes: other users' reservations --------------------- */

static long meminfo(const char *key)
{
	char line[128];
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			v = atol(line + strlen(key));
	if (f)
		fclose(f);
	return v;
}

static int write_long(const char *path, long v)
{
	FILE *f = fopen(path, "w");
	int ok = f && fprintf(f, "%ld\n", v) > 0;

	return f && !fclose(f) && ok;
}

/* PIN of a hole of a hugetlb memfd: refused, so nobody's reservation goes. */
static int hugetlb_hole_child(int wfd)
{
	int mfd = memfd_create("mreg-hole", MFD_CLOEXEC | MFD_HUGETLB);
	int fd = open("/dev/mreg", O_RDWR | O_CLOEXEC);

	(void)wfd;
	MT_CHECK(mfd >= 0 && fd >= 0, "memfd or open: %s", strerror(errno));
	MT_CHECK(!ftruncate(mfd, MT_2M), "ftruncate: %s", strerror(errno));
	MT_EXPECT_ERR(mt_pin(fd, 0, MT_PAGE, MREG_PIN_FLAG_MEMFD, mfd, NULL),
		      -EOPNOTSUPP, "PIN of a hole of a hugetlb memfd");
	return 0;
}

static void test_hugetlb_hole(void)
{
	long old = meminfo("HugePages_Total:");
	char *reserved;

	if (old < 0 || !write_long("/proc/sys/vm/nr_hugepages", 2) ||
	    meminfo("HugePages_Free:") < 2) {
		printf("note: no 2 huge pages to reserve, hugetlb-hole not run\n");
		write_long("/proc/sys/vm/nr_hugepages", old < 0 ? 0 : old);
		return;
	}
	/* Root reserves both huge pages, as another user's job would. */
	reserved = mmap(NULL, 2 * MT_2M, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	MT_CHECK(reserved != MAP_FAILED, "MAP_HUGETLB: %s", strerror(errno));
	MT_CHECK(meminfo("HugePages_Rsvd:") == 2, "Rsvd %ld",
		 meminfo("HugePages_Rsvd:"));
	run_nobody("a hole of a hugetlb memfd", hugetlb_hole_child);
	MT_CHECK(meminfo("HugePages_Rsvd:") == 2 &&
			 meminfo("HugePages_Free:") == 2,
		 "the reservation went: Rsvd %ld Free %ld",
		 meminfo("HugePages_Rsvd:"), meminfo("HugePages_Free:"));
	memset(reserved, 1, 2 * MT_2M); /* SIGBUS if it was stolen */
	munmap(reserved, 2 * MT_2M);
	write_long("/proc/sys/vm/nr_hugepages", old);
	printf("ok a hugetlb memfd's hole cannot take others' reserved huge pages\n");
}

/* ---- memfd pins: stale folios, other users' files ------------------- */

#define SHM_DIR "/tmp/mreg-shm"
#define MARK 0x5a

/* Leave MARK in freed pages, as another user's data would be left. */
static void dirty_free_memory(void)
{
	size_t len = 256UL << 20;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	MT_CHECK(p != MAP_FAILED, "mmap");
	memset(p, MARK, len);
	munmap(p, len);
}

/* fallocate()d, never written: READ through the pin must see zeros. */
static int stale_child(int wfd)
{
	int mfd = memfd_create("mreg-stale", MFD_CLOEXEC);
	int fd = open("/dev/mreg", O_RDWR | O_CLOEXEC);
	char *copy = malloc(MT_2M);
	struct mreg_pin p;
	size_t i, dirty = 0;

	(void)wfd;
	MT_CHECK(mfd >= 0 && fd >= 0 && copy, "memfd, open or malloc");
	MT_CHECK(!ftruncate(mfd, MT_2M) && !fallocate(mfd, 0, 0, MT_2M),
		 "fallocate: %s", strerror(errno));
	MT_EXPECT_ERR(mt_pin(fd, 0, MT_2M, MREG_PIN_FLAG_MEMFD, mfd, &p), 0,
		      "PIN of a fallocated memfd");
	MT_EXPECT_ERR(mt_read(fd, p.out_handle, 0, MT_2M, copy), 0, "READ");
	for (i = 0; i < MT_2M; i++)
		dirty += copy[i] != 0;
	MT_CHECK(!dirty, "READ of a fallocated memfd showed %zu stale bytes",
		 dirty);
	return 0;
}

/* Memfd pins need memfd_pin_folios() (6.11): say so and leave the case. */
static int no_memfd_pins(const char *what)
{
	int fd = mt_open(), have = mt_memfd_pins(fd);

	close(fd);
	if (!have)
		printf("not run: %s: no MREG_CAP_MEMFD (memfd_pin_folios(), "
		       "Linux 6.11)\n",
		       what);
	return !have;
}

static void test_fallocate_stale(void)
{
	FILE *f = fopen("/proc/cmdline", "r");
	char cmdline[1024] = "";

	if (no_memfd_pins("fallocate-stale")) {
		if (f)
			fclose(f);
		return;
	}
	if (f) {
		if (!fgets(cmdline, sizeof(cmdline), f))
			cmdline[0] = 0;
		fclose(f);
	}
	if (!strstr(cmdline, "init_on_alloc=0"))
		printf("note: booted without init_on_alloc=0: stale pages "
		       "would be zeroed anyway\n");
	dirty_free_memory();
	run_nobody("a fallocated memfd reads as zeros", stale_child);
}

/* Another user's tmpfs file, readable by all, open read-only. */
static int foreign_file_child(int wfd)
{
	int fd = open("/dev/mreg", O_RDWR | O_CLOEXEC);
	int theirs = open(SHM_DIR "/root-file", O_RDONLY | O_CLOEXEC);
	int mine = open(SHM_DIR "/own-file", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	int mine_ro;

	(void)wfd;
	MT_CHECK(fd >= 0 && theirs >= 0 && mine >= 0, "open: %s",
		 strerror(errno));
	MT_EXPECT_ERR(mt_pin(fd, 0, MT_PAGE,
			     MREG_PIN_FLAG_MEMFD | MREG_PIN_FLAG_READONLY,
			     theirs, NULL),
		      -EACCES, "read-only pin of another user's tmpfs file");
	MT_CHECK(!ftruncate(mine, MT_PAGE), "ftruncate");
	mine_ro = open(SHM_DIR "/own-file", O_RDONLY | O_CLOEXEC);
	MT_EXPECT_ERR(mt_pin(fd, 0, MT_PAGE,
			     MREG_PIN_FLAG_MEMFD | MREG_PIN_FLAG_READONLY,
			     mine_ro, NULL), 0,
		      "read-only pin of one's own file open read-only");
	return 0;
}

static void test_foreign_file(void)
{
	int f;

	if (no_memfd_pins("foreign-file"))
		return;
	mkdir(SHM_DIR, 0777);
	MT_CHECK(!mount("tmpfs", SHM_DIR, "tmpfs", 0, "mode=1777"),
		 "mount tmpfs: %s", strerror(errno));
	f = open(SHM_DIR "/root-file", O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	MT_CHECK(f >= 0 && !ftruncate(f, MT_PAGE) && write(f, "root", 4) == 4,
		 "root's file: %s", strerror(errno));
	close(f);
	run_nobody("another user's tmpfs file", foreign_file_child);
	umount2(SHM_DIR, MNT_DETACH);
}

/* ---- page cache that writeback tracks ------------------------------- */

#define EXT2_DIR "/tmp/mreg-ext2"
#define EXT2_IMG "/tmp/mreg-ext2.img"

/*
 * A writable long-term pin of a MAP_SHARED ext2 file page would let a
 * device dirty it behind the filesystem's back (GUP refuses it from 6.5,
 * mreg.ko on older kernels): EFAULT, and nothing pinned. A read-only pin
 * of it, and a writable one of a MAP_PRIVATE mapping (COW: anonymous),
 * are fine.
 */
static void test_file_writeback(void)
{
	uint64_t a0, r0;
	struct mreg_pin p;
	char *shared, *priv;
	int fd = mt_open(), f;

	mkdir(EXT2_DIR, 0755);
	/* ext4 asks the crypto API for crc32c, an alias busybox's
	 * modprobe does not resolve: load it by name (6.x, then 7.x). */
	if (system("modprobe loop; modprobe ext4; modprobe crc32c_generic "
		   "2>/dev/null || modprobe crc32c_cryptoapi 2>/dev/null; "
		   "dd if=/dev/zero of=" EXT2_IMG " bs=1M count=4 2>/dev/null "
		   "|| { echo 'ext2 setup: dd failed'; exit 1; }; "
		   "mke2fs -q -F " EXT2_IMG " >/dev/null"
		   " || { echo 'ext2 setup: mke2fs failed'; exit 1; }; "
		   /* The guest's /dev is not devtmpfs: make the node. */
		   "[ -b /dev/loop7 ] || mknod /dev/loop7 b 7 7; "
		   "losetup /dev/loop7 " EXT2_IMG
		   " || { echo 'ext2 setup: losetup failed'; exit 1; }; "
		   "mkdir -p " EXT2_DIR "; "
		   "mount -t ext2 /dev/loop7 " EXT2_DIR " 2>/dev/null || "
		   "mount -t ext4 /dev/loop7 " EXT2_DIR
		   " || { echo 'ext2 setup: mount failed'; "
		   "losetup -d /dev/loop7; exit 1; }"))
		mt_skip("no ext2 on a loop device in this guest (loop, ext4, "
			"mke2fs)");
	f = open(EXT2_DIR "/file", O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	MT_CHECK(f >= 0 && !ftruncate(f, 4 * MT_PAGE), "ext2 file: %s",
		 strerror(errno));
	shared = mmap(NULL, 4 * MT_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, f,
		      0);
	priv = mmap(NULL, 4 * MT_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, f,
		    0);
	MT_CHECK(shared != MAP_FAILED && priv != MAP_FAILED, "mmap: %s",
		 strerror(errno));
	memset(shared, 1, 4 * MT_PAGE);
	mt_pins(&a0, &r0);
	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)shared, 4 * MT_PAGE, 0, 0, &p),
		      -EFAULT, "writable pin of a MAP_SHARED ext2 file");
	MT_CHECK(mt_pins_balanced(a0, r0), "the refused pin left pins");
	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)shared, 4 * MT_PAGE,
			     MREG_PIN_FLAG_READONLY, 0, &p),
		      0, "read-only pin of it");
	mt_unpin(fd, p.out_handle);
	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)priv, 4 * MT_PAGE, 0, 0, &p), 0,
		      "writable pin of a MAP_PRIVATE mapping of it");
	mt_unpin(fd, p.out_handle);
	munmap(shared, 4 * MT_PAGE);
	munmap(priv, 4 * MT_PAGE);
	close(f);
	close(fd);
	umount2(EXT2_DIR, 0);
	if (system("losetup -d /dev/loop7"))
		printf("note: losetup -d /dev/loop7 failed\n");
	unlink(EXT2_IMG);
	MT_CHECK(mt_pins_balanced(a0, r0), "pins left");
	printf("ok: writable pins of ext2 page cache refused (EFAULT), "
	       "read-only and private ones taken\n");
}

/* ---- bounds -------------------------------------------------------- */

static void test_sizes(void)
{
	static unsigned char big[2 * 4096] __attribute__((aligned(8)));
	struct mreg_watch_info wi = {.size = sizeof(wi)};
	struct mreg_query q = {.size = sizeof(q)};
	char *buf = filled(MT_PAGE, 25);
	struct mreg_extent e[2];
	struct mreg_pin p;
	int fd = mt_open();
	uint32_t size;
	unsigned int i;

	size = MREG_MAX_STRUCT_SIZE;
	memcpy(big, &size, sizeof(size));
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_INFO, big), 0,
		      "INFO with @size MREG_MAX_STRUCT_SIZE, zero tail");
	size = sizeof(big);
	memset(big, 0, sizeof(big));
	memcpy(big, &size, sizeof(size));
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_INFO, big), -E2BIG,
		      "INFO with @size 8192, zero tail");
	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)buf, MT_PAGE, 0, 0, &p), 0, "PIN");
	q.handle = p.out_handle;
	q.extents = (uintptr_t)e;
	q.nr_extents = 1;
	q.extent_size = MREG_EXTENT_MAX_SIZE + 8;
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_QUERY, &q), -EINVAL,
		      "QUERY with @extent_size above MREG_EXTENT_MAX_SIZE");
	q.extent_size = sizeof(e[0]);
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_QUERY, &q), 0, "QUERY");
	MT_EXPECT_ERR(mt_unpin(fd, p.out_handle), 0, "UNPIN");
	for (i = 0; i < 16; i++)
		wi.events[i] = 0xa5a5a5a5a5a5a5a5ULL;
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_WATCH_INFO, &wi), 0, "WATCH_INFO");
	for (i = MREG_WATCH_NR_KINDS; i < 16; i++)
		MT_CHECK(!wi.events[i], "WATCH_INFO echoed events[%u]", i);
	close(fd);
	printf("ok E2BIG above MREG_MAX_STRUCT_SIZE, EINVAL above "
	       "MREG_EXTENT_MAX_SIZE, WATCH_INFO's unknown counters zero\n");
}

static int bench_child(int wfd)
{
	char *buf = filled(16 * MT_PAGE, 26);
	struct mreg_bench b = {
		.size = sizeof(b), .method = MREG_BENCH_PUP_FAST,
		.addr = (uintptr_t)buf, .length = 16 * MT_PAGE,
	};
	int fd = open("/dev/mreg", O_RDWR | O_CLOEXEC);

	(void)wfd;
	MT_CHECK(fd >= 0, "open: %s", strerror(errno));
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_BENCH, &b), -EPERM,
		      "BENCH without CAP_SYS_ADMIN");
	close(fd);
	return 0;
}

/* ---- RWF_NOWAIT on a blocking fd ------------------------------------ */

static void test_nowait_read(void)
{
	struct mreg_watch_event ev[4];
	struct iovec iov = {.iov_base = ev, .iov_len = sizeof(ev)};
	char *buf = filled(4 * MT_PAGE, 27);
	struct mreg_watch w = {.size = sizeof(w), .addr = (uintptr_t)buf,
			       .length = 4 * MT_PAGE, .user_data = 0x5ec};
	int fd = mt_open();
	ssize_t n;

	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_WATCH, &w), 0, "WATCH");
	n = preadv2(fd, &iov, 1, -1, RWF_NOWAIT);
	MT_CHECK(n < 0 && errno == EAGAIN,
		 "RWF_NOWAIT read with nothing queued: %zd (%s)", n,
		 strerror(errno));
	MT_CHECK(!munmap(buf, 4 * MT_PAGE), "munmap");
	n = preadv2(fd, &iov, 1, -1, RWF_NOWAIT);
	MT_CHECK(n == sizeof(ev[0]) && ev[0].id == w.out_id &&
			 ev[0].user_data == 0x5ec,
		 "RWF_NOWAIT read of one event: %zd (%s)", n,
		 n < 0 ? strerror(errno) : "");
	close(fd);
	printf("ok read with RWF_NOWAIT: EAGAIN, never blocks, then the event\n");
}

static void test_bench(void)
{
	run_nobody("BENCH as non-root", bench_child);
}

static void test_exec_laundering(void)
{
	run_nobody("exec laundering", exec_first);
}

static void test_fork_laundering(void)
{
	run_nobody("fork laundering", fork_parent);
}

static const struct {
	const char *name;
	void (*fn)(void);
} cases[] = {
	{"sizes", test_sizes},
	{"nowait", test_nowait_read},
	{"fd-passing", test_fd_passing},
	{"fork-setuid", test_fork_setuid},
	{"phys", test_phys_opener},
	{"bench", test_bench},
	{"exec", test_exec_laundering},
	{"fork", test_fork_laundering},
	{"watch-flood", test_watch_flood},
	{"watch-kill", test_watch_kill},
	{"thp-partial", test_thp_partial},
	{"gens-memlock", test_gens_memlock},
	{"hugetlb-hole", test_hugetlb_hole},
	{"fallocate-stale", test_fallocate_stale},
	{"foreign-file", test_foreign_file},
	{"file-writeback", test_file_writeback},
};

/* kmod-security [case...]: the cases named, or all of them. */
int main(int argc, char **argv)
{
	unsigned int i;
	int a, ran = 0;

	if (argc == 4 && !strcmp(argv[1], "--exec-gen"))
		return exec_generation(atoi(argv[2]), atoi(argv[3]));
	/* Line by line: a forked child must not print its parent's lines. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	close(mt_open());
	if (!mt_is_root())
		mt_skip("needs root to give the device to a group and setuid");
	mt_grant_group(NOBODY);
	/* Exact charges: no THP but where a case asks for it. */
	mt_thp_only(0);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (a = 1; a < argc && strcmp(argv[a], cases[i].name); a++)
			;
		if (argc > 1 && a == argc)
			continue;
		cases[i].fn();
		ran++;
	}
	MT_CHECK(ran, "no case named");
	printf("PASS security\n");
	return 0;
}
