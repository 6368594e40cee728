// SPDX-License-Identifier: MIT
/*
 * Every failure point of a registration, one at a time: the kernel's
 * fault injection (failslab and fail_page_alloc, driven per task through
 * /proc/thread-self/fail-nth) makes the Nth allocation of the calling
 * thread fail, for N = 1, 2, ... until a registration runs through
 * without reaching its Nth allocation.  At each step the registration
 * either fails with an errno and a message or succeeds and deregisters,
 * and afterwards: the FOLL_PIN counters balance, VmPin and VmLck (the
 * pinned_vm and locked_vm charges) are back where they were, and at the
 * end of each path kmemleak finds nothing.  The harness checks dmesg.
 *
 * Needs a kernel with CONFIG_FAULT_INJECTION, FAILSLAB, FAIL_PAGE_ALLOC
 * and FAULT_INJECTION_DEBUG_FS (kernel/config/debug.config); elsewhere it
 * skips and says why.
 *
 *   test_fault_inject [PATH]    one path (io_uring, verbs, vfio, ...)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tcommon.h"
#include "tpaths.h"

#define DEBUGFS	  "/sys/kernel/debug"
#define KMEMLEAK  DEBUGFS "/kmemleak"
#define LEN	  (1u << 20)
#define MAX_STEPS 20000

/*
 * Fail every kind of allocation a registration makes: the defaults leave
 * out sleeping (GFP_KERNEL) allocations and order-0 pages, which are most
 * of them.  Quiet, since a walk fails thousands of them on purpose.
 */
static int arm_fault_injection(void)
{
	static const char *const knobs[][2] = {
		{DEBUGFS "/failslab/ignore-gfp-wait", "N"},
		{DEBUGFS "/failslab/verbose", "0"},
		{DEBUGFS "/fail_page_alloc/ignore-gfp-wait", "N"},
		{DEBUGFS "/fail_page_alloc/ignore-gfp-highmem", "N"},
		{DEBUGFS "/fail_page_alloc/min-order", "0"},
		{DEBUGFS "/fail_page_alloc/verbose", "0"},
	};
	size_t i;
	int ret;

	for (i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		ret = t_write_file(knobs[i][0], knobs[i][1]);
		if (ret)
			return ret;
	}
	return 0;
}

static int fail_nth_fd(void)
{
	return open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
}

static void set_fail_nth(int fd, unsigned int n)
{
	char v[16];
	int len = snprintf(v, sizeof(v), "%u", n);

	if (pwrite(fd, v, (size_t)len, 0) != len) {
		perror("fail-nth");
		exit(T_FAIL);
	}
}

/* Whether the armed fault was reached: fail-nth reads 0 once it fired. */
static int fault_fired(int fd)
{
	char v[16] = "";

	if (pread(fd, v, sizeof(v) - 1, 0) <= 0)
		return 0;
	return atoi(v) == 0;
}

struct charges {
	struct t_pins pins;
	long pin_kb;
	long lock_kb;
};

static void charges_read(struct charges *c)
{
	t_pins_read(&c->pins);
	c->pin_kb = t_status_kb("VmPin");
	c->lock_kb = t_status_kb("VmLck");
}

struct walk {
	const char *name;
	int populated; /* 0: every step faults its memory in through GUP */
	unsigned int steps, failed, succeeded;
	int fired;
};

/* A run of misses, not one: nested and opportunistic allocations
 * (kmemleak's metadata, KASAN's stack depot, a new slab page) make
 * the count of allocation sites vary a little from call to call. */
#define MISSES_TO_END 3

/* What one step registers and releases: a plain registration, or a
 * get and put through a registration cache (whose miss also sets a
 * watch), flushed so that the next step misses again. */
struct step_ops {
	int (*reg)(void *ctx, struct mreg_domain *d, void *buf,
		   struct mreg_region **r);
	int (*unreg)(void *ctx, struct mreg_region *r);
	void *ctx;
};

static int plain_reg(void *ctx, struct mreg_domain *d, void *buf,
		     struct mreg_region **r)
{
	(void)ctx;
	return mreg_region_register(d, buf, LEN, r);
}

static int plain_unreg(void *ctx, struct mreg_region *r)
{
	(void)ctx;
	return mreg_region_deregister(r, NULL);
}

static int cache_reg(void *ctx, struct mreg_domain *d, void *buf,
		     struct mreg_region **r)
{
	(void)d;
	return mreg_cache_get(ctx, buf, LEN, r);
}

static int cache_unreg(void *ctx, struct mreg_region *r)
{
	return mreg_cache_put(ctx, r) ?: mreg_cache_flush(ctx);
}

/*
 * One registration with its @nth allocation failing.  It must fail with
 * an errno and a message, or succeed and deregister; either way nothing
 * stays pinned or charged.  w->fired tells whether the fault was reached.
 */
static int one_step(struct mreg_domain *d, void *buf, int fd, unsigned int nth,
		    struct walk *w, const struct step_ops *ops)
{
	struct charges before, after;
	struct mreg_region *r;
	int ret;

	if (!w->populated)
		T_CHECK(!madvise(buf, LEN, MADV_DONTNEED), "madvise");
	charges_read(&before);
	set_fail_nth(fd, nth);
	ret = ops->reg(ops->ctx, d, buf, &r);
	w->fired = fault_fired(fd);
	set_fail_nth(fd, 0);
	T_CHECK(w->fired || !ret, "%s: failed with no fault injected: %s",
		w->name, mreg_last_error());
	if (ret) {
		w->failed++;
		T_CHECK(ret < 0 && *mreg_last_error(),
			"%s: step %u returned %d with no message", w->name, nth,
			ret);
	} else {
		w->succeeded += w->fired;
		T_CHECK(!ops->unreg(ops->ctx, r), "%s: step %u: deregister: %s",
			w->name, nth, mreg_last_error());
	}
	charges_read(&after);
	T_CHECK(t_pins_balanced(&before.pins), "%s: step %u (%s): pins leaked",
		w->name, nth, ret ? strerror(-ret) : "registered");
	T_CHECK(after.pin_kb == before.pin_kb &&
			after.lock_kb == before.lock_kb,
		"%s: step %u: VmPin %ld -> %ld kB, VmLck %ld -> %ld kB",
		w->name, nth, before.pin_kb, after.pin_kb, before.lock_kb,
		after.lock_kb);
	return T_PASS;
}

/* N = 1, 2, ... until MISSES_TO_END registrations in a row never reach
 * their Nth allocation. */
static int walk(struct mreg_domain *d, void *buf, int fd, struct walk *w,
		const struct step_ops *ops)
{
	unsigned int nth, misses = 0;

	for (nth = 1; nth <= MAX_STEPS && misses < MISSES_TO_END; nth++) {
		if (one_step(d, buf, fd, nth, w, ops))
			return T_FAIL;
		misses = w->fired ? 0 : misses + 1;
		w->steps += w->fired;
	}
	T_CHECK(misses == MISSES_TO_END, "%s: no end after %u steps", w->name,
		MAX_STEPS);
	printf("  %-14s %-11s %4u failure points: %u registrations failed "
	       "cleanly, %u succeeded despite the fault\n",
	       w->name, w->populated ? "populated" : "faulting in", w->steps,
	       w->failed, w->succeeded);
	return T_PASS;
}

static int kmemleak_read(int print)
{
	char line[256];
	int leaks = 0;
	FILE *f = fopen(KMEMLEAK, "re");

	while (f && fgets(line, sizeof(line), f)) {
		if (print)
			fputs(line, stderr);
		leaks += !strncmp(line, "unreferenced object", 19);
	}
	if (f)
		fclose(f);
	return leaks;
}

/*
 * kmemleak reports an object once it has been unreferenced for 5 s, at
 * a scan.  "clear" only forgets what was reported already, so the
 * baseline is a scan followed by a clear: what is reported after that
 * leaked since.
 */
static void kmemleak_scan(void)
{
	sleep(6);
	t_write_file(KMEMLEAK, "scan");
	t_write_file(KMEMLEAK, "scan");
}

static int kmemleak_baseline(void)
{
	int old;

	if (access(KMEMLEAK, W_OK)) {
		printf("  no kmemleak in this kernel: leak scans not run\n");
		return 0;
	}
	kmemleak_scan();
	old = kmemleak_read(0);
	t_write_file(KMEMLEAK, "clear");
	printf("  kmemleak: %d objects reported before the walk, cleared\n",
	       old);
	return 1;
}

static int kmemleak_clean(const char *name)
{
	int leaks;

	kmemleak_scan();
	leaks = kmemleak_read(1);
	T_CHECK(!leaks, "%s: kmemleak: %d unreferenced objects", name, leaks);
	printf("  %-8s kmemleak: nothing leaked\n", name);
	return T_PASS;
}

/*
 * mreg.ko's QUERY of a held pin, failing its Nth allocation.  QUERY
 * allocates nothing in the kernel; the only allocation it can meet is
 * the fault-in of the caller's extent array under copy_to_user(), which
 * must come back as EFAULT and leave the pin and its extents as they
 * were.  The walk shows how many there are (usually none).
 */
static int walk_query(struct mreg_domain *d, void *buf, int fd)
{
	static struct mreg_region_extent ext[LEN / 4096];
	struct mreg_region *r;
	struct t_pins before;
	unsigned int nth, failed = 0, misses = 0;
	size_t nr, want;
	int ret, fired;

	T_CHECK(!mreg_region_register(d, buf, LEN, &r), "kmod: %s",
		mreg_last_error());
	want = LEN / 4096;
	T_CHECK(!mreg_region_extents(r, ext, &want), "kmod: QUERY: %s",
		mreg_last_error());
	t_pins_read(&before);
	for (nth = 1; nth <= MAX_STEPS && misses < MISSES_TO_END; nth++) {
		nr = LEN / 4096;
		set_fail_nth(fd, nth);
		ret = mreg_region_extents(r, ext, &nr);
		fired = fault_fired(fd);
		set_fail_nth(fd, 0);
		T_CHECK(fired || !ret, "kmod: QUERY failed with no fault: %s",
			mreg_last_error());
		T_CHECK(ret || nr == want,
			"kmod: QUERY step %u: %zu extents, "
			"want %zu",
			nth, nr, want);
		T_CHECK(!ret || (ret < 0 && *mreg_last_error()),
			"kmod: QUERY step %u: %d with no message", nth, ret);
		failed += ret != 0;
		misses = fired ? 0 : misses + 1;
	}
	T_CHECK(misses == MISSES_TO_END, "kmod: the QUERY walk did not end");
	T_CHECK(t_pins_balanced(&before), "kmod: QUERY changed the pins");
	T_CHECK(!mreg_region_deregister(r, NULL), "kmod: %s",
		mreg_last_error());
	printf("  %-8s QUERY: %u failure points (faults of the extent "
	       "array), %u QUERYs failed cleanly\n",
	       "kmod", nth - 1 - MISSES_TO_END, failed);
	return T_PASS;
}

/*
 * The same walk through a registration cache (monitor AUTO: mreg.ko's
 * watches where loaded): a miss's watch and registration, and the
 * cache's undoing of whichever of them failed.
 */
static int walk_cache(struct mreg_domain *d, void *buf, int fd,
		      const struct t_path *p)
{
	struct mreg_cache_attr a = {.size = sizeof(a)};
	struct mreg_cache_stats st = {.size = sizeof(st)};
	char name[32];
	struct walk w = {.name = name, .populated = 1};
	struct step_ops ops = {cache_reg, cache_unreg, NULL};
	struct mreg_cache *c;

	snprintf(name, sizeof(name), "%s+cache", p->name);
	T_CHECK(!mreg_cache_open(d, &a, &c), "%s: %s", name, mreg_last_error());
	ops.ctx = c;
	if (walk(d, buf, fd, &w, &ops))
		return T_FAIL;
	T_CHECK(!mreg_cache_stats(c, &st) && !st.entries && !st.held,
		"%s: %llu entries, %llu held after the walk", name,
		(unsigned long long)st.entries, (unsigned long long)st.held);
	T_CHECK(!mreg_cache_close(c), "%s: %s", name, mreg_last_error());
	return T_PASS;
}

/* Two walks per path: memory already mapped, and memory that the
 * registration itself must fault in (page tables, folios, the unwind of
 * a partial pin). */
static int walk_path(const struct t_path *p, int fd, int leakcheck)
{
	struct walk populated = {.name = p->name, .populated = 1};
	struct walk faulting = {.name = p->name};
	static const struct step_ops plain = {plain_reg, plain_unreg, NULL};
	struct mreg_domain *d;
	void *buf = t_map(LEN, 1);

	T_CHECK(buf, "mmap: %s", strerror(errno));
	T_CHECK(!t_path_open(p, &d), "%s: %s", p->name, mreg_last_error());
	if (walk(d, buf, fd, &populated, &plain) ||
	    walk(d, buf, fd, &faulting, &plain) || walk_cache(d, buf, fd, p))
		return T_FAIL;
	memset(buf, 1, LEN);
	if (p->backend == MREG_BACKEND_KMOD && walk_query(d, buf, fd))
		return T_FAIL;
	T_CHECK(!mreg_domain_close(d), "%s: %s", p->name, mreg_last_error());
	T_CHECK(!t_path_works(p), "%s: after the walk: %s", p->name,
		mreg_last_error());
	munmap(buf, LEN);
	return leakcheck ? kmemleak_clean(p->name) : T_PASS;
}

int main(int argc, char **argv)
{
	struct t_path paths[T_MAX_PATHS];
	int n, i, fd, leakcheck, ret = T_PASS;

	t_init("test_fault_inject");
	if (geteuid())
		return t_skip("fault injection and the pin counters need root");
	fd = fail_nth_fd();
	if (fd < 0)
		return t_skip(
			"no /proc/thread-self/fail-nth: the kernel has no "
			"CONFIG_FAULT_INJECTION (kernel/build.sh debug "
			"builds one)");
	if (arm_fault_injection())
		return t_skip("no %s/failslab or fail_page_alloc: the kernel "
			      "lacks FAILSLAB, FAIL_PAGE_ALLOC or "
			      "FAULT_INJECTION_DEBUG_FS",
			      DEBUGFS);
	n = t_paths_only(paths, t_paths(paths, T_MAX_PATHS),
			 argc > 1 ? argv[1] : NULL);
	if (!n)
		return t_skip("no registration path here");
	leakcheck = kmemleak_baseline();
	for (i = 0; i < n && !ret; i++)
		ret = walk_path(&paths[i], fd, leakcheck);
	close(fd);
	return ret;
}
