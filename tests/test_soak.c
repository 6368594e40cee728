// SPDX-License-Identifier: MIT
/*
 * Soak: every path registering and deregistering at once, from several
 * processes and threads, for MREG_SOAK_SECONDS (default 20; 600 in the
 * full kernel test).  One process per path; io_uring, verbs and mreg.ko
 * run two threads each, every thread on its own domain, with buffers of
 * random length and folio-backed or not.  VFIO, iommufd and DPDK share
 * the one device, which only one container or IOAS can hold, so a single
 * process alternates between them.  At the end every process reports its
 * counts, no call may have failed, and the FOLL_PIN counters are balanced.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tcommon.h"
#include "tpaths.h"

#define MAX_LEN (8u << 20)
#define THREADS 2

struct worker {
	const struct t_path *paths; /* one, or the device paths in turn */
	int npaths;
	unsigned int seed;
	time_t end;
	uint64_t regs, bytes, reopens;
	int failed;
	char why[256];
};

static unsigned int rnd(unsigned int *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

static int fail(struct worker *w, const char *what, const struct t_path *p)
{
	snprintf(w->why, sizeof(w->why), "%s: %s: %s", p->name, what,
		 mreg_last_error());
	w->failed = 1;
	return -1;
}

/* Register a random piece of @buf once, touching it so that it is
 * really mapped, then deregister it. */
static int one_registration(struct worker *w, const struct t_path *p,
			    struct mreg_domain *d, char *buf)
{
	size_t len = (1 + rnd(&w->seed) % (MAX_LEN / 65536)) * 65536;
	size_t off = (rnd(&w->seed) % ((MAX_LEN - len) / 4096 + 1)) * 4096;
	struct mreg_region *r;

	buf[off] = (char)w->regs;
	if (mreg_region_register(d, buf + off, len, &r))
		return fail(w, "register", p);
	if (mreg_region_deregister(r, NULL))
		return fail(w, "deregister", p);
	w->regs++;
	w->bytes += len;
	return 0;
}

/* A domain per round of about a second, so opening and closing soak too. */
static void *work(void *arg)
{
	struct worker *w = arg;
	char *buf = t_map(MAX_LEN, 1);
	int round = 0;

	if (!buf) {
		snprintf(w->why, sizeof(w->why), "mmap: %s", strerror(errno));
		w->failed = 1;
		return NULL;
	}
	madvise(buf, MAX_LEN,
		rnd(&w->seed) % 2 ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	while (!w->failed && time(NULL) < w->end) {
		const struct t_path *p = &w->paths[round++ % w->npaths];
		struct mreg_domain *d;
		time_t until;

		if (t_path_open(p, &d)) {
			fail(w, "domain open", p);
			break;
		}
		w->reopens++;
		/* The round starts once the domain is open: opening a VFIO
		 * device takes seconds on a debug kernel under TCG. */
		until = time(NULL) + 1;
		do
			one_registration(w, p, d, buf);
		while (!w->failed && time(NULL) < until);
		if (mreg_domain_close(d))
			fail(w, "domain close", p);
	}
	munmap(buf, MAX_LEN);
	return NULL;
}

/* One process: @nthreads workers, then a line of totals; exit 1 on any
 * failure. */
static void soak_process(const struct t_path *paths, int npaths, int nthreads,
			 time_t end, unsigned int seed)
{
	struct worker w[THREADS] = {0};
	pthread_t t[THREADS];
	uint64_t regs = 0, bytes = 0, opens = 0;
	long pin_kb = t_status_kb("VmPin"), lock_kb = t_status_kb("VmLck");
	char names[64] = "";
	int i, failed = 0;

	for (i = 0; i < npaths; i++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names),
			 "%s%s", i ? "+" : "", paths[i].name);
	for (i = 0; i < nthreads; i++) {
		w[i] = (struct worker){.paths = paths,
				       .npaths = npaths,
				       .seed = seed * 31 + (unsigned int)i,
				       .end = end};
		if (pthread_create(&t[i], NULL, work, &w[i])) {
			fprintf(stderr, "test_soak: pthread_create failed\n");
			_exit(1);
		}
	}
	for (i = 0; i < nthreads; i++) {
		pthread_join(t[i], NULL);
		regs += w[i].regs;
		bytes += w[i].bytes;
		opens += w[i].reopens;
		if (w[i].failed) {
			fprintf(stderr, "test_soak: %s\n", w[i].why);
			failed = 1;
		}
	}
	/* Every domain is closed: this process's charges are back. */
	if (t_status_kb("VmPin") != pin_kb || t_status_kb("VmLck") != lock_kb) {
		fprintf(stderr,
			"test_soak: VmPin %ld -> %ld kB, VmLck %ld -> "
			"%ld kB\n",
			pin_kb, t_status_kb("VmPin"), lock_kb,
			t_status_kb("VmLck"));
		failed = 1;
	}
	if (!regs)
		fprintf(stderr,
			"test_soak: %s: no registration in %d "
			"thread(s)\n",
			names, nthreads);
	printf("  %-16s %d thread(s): %" PRIu64 " registrations, %" PRIu64
	       " MB, %" PRIu64 " domains opened\n",
	       names, nthreads, regs, bytes >> 20, opens);
	_exit(failed || !regs);
}

static pid_t spawn(const struct t_path *paths, int npaths, int nthreads,
		   time_t end, unsigned int seed)
{
	pid_t pid = fork();

	if (!pid)
		soak_process(paths, npaths, nthreads, end, seed);
	return pid;
}

static int is_device_path(const struct t_path *p)
{
	return p->backend == MREG_BACKEND_VFIO ||
	       p->backend == MREG_BACKEND_IOMMUFD ||
	       p->backend == MREG_BACKEND_DPDK;
}

int main(void)
{
	const char *env = getenv("MREG_SOAK_SECONDS");
	long secs = env && *env ? atol(env) : 20;
	struct t_path paths[T_MAX_PATHS], dev[3];
	pid_t pids[T_MAX_PATHS];
	struct t_pins before;
	int n, i, ndev = 0, nproc = 0, status, ret = T_PASS;
	time_t end;

	t_init("test_soak");
	if (geteuid())
		return t_skip("the FOLL_PIN counters need root");
	n = t_paths(paths, T_MAX_PATHS);
	if (!n)
		return t_skip("no registration path here");
	t_pins_read(&before);
	end = time(NULL) + secs;
	printf("  %ld s, %d paths\n", secs, n);
	for (i = 0; i < n; i++) {
		if (is_device_path(&paths[i])) {
			dev[ndev++] = paths[i];
			continue;
		}
		pids[nproc++] = spawn(&paths[i], 1, THREADS, end, (unsigned)i);
	}
	if (ndev)
		pids[nproc++] = spawn(dev, ndev, 1, end, 99);
	/* Reap every child before judging, so that none outlives us. */
	for (i = 0; i < nproc; i++)
		if (pids[i] <= 0 || waitpid(pids[i], &status, 0) != pids[i] ||
		    !WIFEXITED(status) || WEXITSTATUS(status))
			ret = T_FAIL;
	T_CHECK(!ret, "a soak process failed (see above)");
	T_CHECK(t_pins_balanced(&before), "pins left after the soak");
	printf("PASS soak: every process balanced\n");
	return T_PASS;
}
