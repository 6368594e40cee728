// SPDX-License-Identifier: MIT
/*
 * A process that dies in the middle of a registration leaves nothing
 * behind, on every path:
 *
 * - SIGKILL while the kernel is pinning a large range (1 GiB by default,
 *   MREG_KILL_MB): the parent watches nr_foll_pin_acquired climb, kills
 *   the child a quarter of the way in, and checks that every pin taken is
 *   released once the child is gone;
 * - a registration that must fault its memory in inside a memory cgroup
 *   too small for it: the cgroup's OOM killer or an -ENOMEM ends it, and
 *   again nothing stays pinned or charged.
 *
 * After each, a fresh registration on the same path works.  The harness
 * adds the dmesg check (no WARN, BUG, KASAN, lockdep).
 *
 *   test_kill [PATH]    one path (io_uring, verbs, vfio, iommufd, kmod)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tcommon.h"
#include "tpaths.h"

#define CG_ROOT	 "/sys/fs/cgroup"
#define CG_LIMIT (64ull << 20)
#define CG_BUF	 (256ull << 20)

enum child_report { READY = 'r', DONE = 'd', FAILED = 'e' };

static size_t kill_len(void)
{
	const char *mb = getenv("MREG_KILL_MB");

	return (size_t)(mb && *mb ? strtoull(mb, NULL, 0) : 1024) << 20;
}

static void tell(int fd, char what)
{
	if (write(fd, &what, 1) != 1)
		_exit(4);
}

/* The child: open the path, map @len unpopulated, register it.  It dies
 * by SIGKILL; if the registration ends first it reports and waits. */
static void registering_child(const struct t_path *p, size_t len, int fd)
{
	struct mreg_domain *d;
	struct mreg_region *r;
	void *buf = t_map(len, 0);

	if (!buf || t_path_open(p, &d))
		_exit(3);
	tell(fd, READY);
	tell(fd, mreg_region_register(d, buf, len, &r) ? FAILED : DONE);
	pause();
	_exit(0);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Wait until @want pins more than @before were taken, or the child
 * reported, or 300 s: the registration is then under way (or over). */
static void wait_for_pins(const struct t_pins *before, uint64_t want, int fd,
			  char *report)
{
	uint64_t end = now_ms() + 300000;
	struct t_pins now;

	fcntl(fd, F_SETFL, O_NONBLOCK);
	while (now_ms() < end) {
		if (read(fd, report, 1) == 1)
			return;
		if (!t_pins_read(&now) &&
		    now.acquired - before->acquired >= want)
			return;
		usleep(2000);
	}
}

static int kill_mid_registration(const struct t_path *p)
{
	size_t len = kill_len(), pages = len / 4096;
	char report = 0, ready = 0;
	struct t_pins before, at_kill;
	int fds[2], status;
	pid_t pid;

	T_CHECK(!pipe(fds), "pipe: %s", strerror(errno));
	T_CHECK(!t_pins_read(&before), "no FOLL_PIN counters in /proc/vmstat");
	pid = fork();
	T_CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (!pid) {
		close(fds[0]);
		registering_child(p, len, fds[1]);
	}
	close(fds[1]);
	T_CHECK(read(fds[0], &ready, 1) == 1 && ready == READY,
		"%s: the child could not open the path", p->name);
	wait_for_pins(&before, pages / 4, fds[0], &report);
	t_pins_read(&at_kill);
	kill(pid, SIGKILL);
	T_CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	if (!report && read(fds[0], &report, 1) != 1)
		report = 0;
	close(fds[0]);
	T_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		"%s: the child was not killed (status 0x%x)", p->name, status);
	printf("  %s: SIGKILL with %" PRIu64 " of %zu pages pinned, %s\n",
	       p->name, at_kill.acquired - before.acquired, pages,
	       report == DONE	  ? "after the registration ended"
	       : report == FAILED ? "after the registration failed"
				  : "mid-registration");
	T_CHECK(t_pins_balanced(&before), "%s: pins left after SIGKILL",
		p->name);
	T_CHECK(!report,
		"%s: a %zu MB registration ended before a quarter "
		"of it was pinned; nothing was killed mid-way",
		p->name, len >> 20);
	T_CHECK(at_kill.acquired - before.acquired >= pages / 4,
		"%s: a quarter of %zu pages never got pinned in 300 s", p->name,
		pages);
	return T_PASS;
}

static long long read_key(const char *path, const char *key)
{
	char line[128];
	long long v = -1;
	size_t n = strlen(key);
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ' ')
			v = atoll(line + n + 1);
	fclose(f);
	return v;
}

/* cgroup v2 with the memory controller enabled for the root's children
 * (the guest wrapper mounts it; a test does not remount the host's). */
static int cgroup_ready(void)
{
	if (access(CG_ROOT "/cgroup.subtree_control", W_OK))
		return -ENOENT;
	return t_write_file(CG_ROOT "/cgroup.subtree_control", "+memory");
}

static void cgroup_child(const struct t_path *p, const char *cg)
{
	char procs[256], self[32];
	struct mreg_domain *d;
	struct mreg_region *r;
	void *buf;

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
	snprintf(self, sizeof(self), "%d", getpid());
	if (t_write_file(procs, self))
		_exit(3);
	buf = t_map(CG_BUF, 0);
	if (!buf || t_path_open(p, &d))
		_exit(3);
	_exit(mreg_region_register(d, buf, CG_BUF, &r) ? 2 : 5);
}

static int oom_mid_registration(const struct t_path *p)
{
	char cg[128], path[192], val[32];
	struct t_pins before;
	long long ooms;
	int status, ret;
	pid_t pid;

	ret = cgroup_ready();
	if (ret) {
		printf("  %s: no writable cgroup v2 at %s (%s): OOM case not "
		       "run\n",
		       p->name, CG_ROOT, strerror(-ret));
		return T_PASS;
	}
	snprintf(cg, sizeof(cg), CG_ROOT "/mreg-kill-%d", getpid());
	T_CHECK(!mkdir(cg, 0755), "mkdir %s: %s", cg, strerror(errno));
	snprintf(path, sizeof(path), "%s/memory.max", cg);
	snprintf(val, sizeof(val), "%llu", CG_LIMIT);
	T_CHECK(!t_write_file(path, val), "memory.max");
	snprintf(path, sizeof(path), "%s/memory.swap.max", cg);
	t_write_file(path, "0");
	t_pins_read(&before);
	pid = fork();
	T_CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (!pid)
		cgroup_child(p, cg);
	T_CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	snprintf(path, sizeof(path), "%s/memory.events", cg);
	ooms = read_key(path, "oom_kill");
	T_CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 5),
		"%s: registered %llu MB in a %llu MB cgroup", p->name,
		CG_BUF >> 20, CG_LIMIT >> 20);
	T_CHECK(WIFSIGNALED(status) ||
			(WIFEXITED(status) && WEXITSTATUS(status) == 2),
		"%s: the cgroup child could not start (status 0x%x)", p->name,
		status);
	printf("  %s: %llu MB registration in a %llu MB cgroup: %s, "
	       "%lld OOM kills\n",
	       p->name, CG_BUF >> 20, CG_LIMIT >> 20,
	       WIFSIGNALED(status) ? "killed" : "failed", ooms);
	T_CHECK(t_pins_balanced(&before), "%s: pins left after the OOM",
		p->name);
	snprintf(path, sizeof(path), "%s/memory.stat", cg);
	T_CHECK(read_key(path, "anon") < (1 << 20),
		"%s: %lld bytes of anon memory still charged to the cgroup",
		p->name, read_key(path, "anon"));
	T_CHECK(!rmdir(cg), "rmdir %s: %s", cg, strerror(errno));
	return T_PASS;
}

static int run_path(const struct t_path *p)
{
	int ret = kill_mid_registration(p);

	if (!ret)
		ret = oom_mid_registration(p);
	if (!ret)
		T_CHECK(!t_path_works(p),
			"%s: the next registration failed: %s", p->name,
			mreg_last_error());
	return ret;
}

int main(int argc, char **argv)
{
	struct t_path paths[T_MAX_PATHS];
	int n, i, ret = T_PASS;

	t_init("test_kill");
	if (geteuid())
		return t_skip("the FOLL_PIN counters and cgroups need root");
	n = t_paths_only(paths, t_paths(paths, T_MAX_PATHS),
			 argc > 1 ? argv[1] : NULL);
	if (!n)
		return t_skip("no registration path here");
	for (i = 0; i < n && !ret; i++)
		ret = run_path(&paths[i]);
	return ret;
}
