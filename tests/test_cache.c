// SPDX-License-Identifier: MIT
/*
 * The stale-hit catalogue (tcatalog.c) against mreg's registration
 * cache: every way a process can change the memory behind a cached
 * registration, each followed by a transfer through the cache and a
 * check of the bytes the device took from the registration.
 *
 * Transports: io_uring (IORING_OP_WRITE_FIXED from the cached fixed buffer
 * into a memfd: the kernel reads the buffer's pinned pages) everywhere;
 * verbs (RDMA WRITE from the cached MR to a peer MR over a loopback RC QP)
 * where an RDMA device exists (soft-RoCE in the guest). Monitors: UFFD
 * everywhere, KMOD where /dev/mreg exists.
 *
 * A stale hit shows as old bytes at the peer. Expected: none with KMOD;
 * with UFFD, stale exactly on its documented blind spots (shmat(SHM_REMAP),
 * shmdt, a hole punched in a shared memfd), which the test requires, so
 * the documentation cannot drift from the code.
 *
 *   test_cache [-m kmod|uffd] [-t io_uring|verbs] [-c CASE] [-v]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tcatalog.h"
#include "tcommon.h"
#ifdef MREG_TEST_VERBS
#include "tverbs.h"
#endif

#define MAXLEN T_CACHE_MAXLEN

struct transport {
	const char *name;
	enum mreg_backend backend;
	/* The bytes the device reads from @r at [@addr, @addr+@len). */
	int (*send)(struct transport *t, struct mreg_region *r, void *addr,
		    size_t len, void *out);
	struct mreg_domain *d;
	int memfd;
#ifdef MREG_TEST_VERBS
	struct loop_qp qp;
	struct ibv_mr *peer_mr;
	void *peer;
#endif
};

static int uring_send(struct transport *t, struct mreg_region *r, void *addr,
		      size_t len, void *out)
{
	struct io_uring *ring = mreg_domain_native(t->d);
	struct mreg_region_info info = {.size = sizeof(info)};
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int res;

	T_CHECK(!mreg_region_query(r, &info), "%s", mreg_last_error());
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_write_fixed(sqe, t->memfd, addr, (unsigned int)len, 0,
				  (int)info.index);
	io_uring_submit(ring);
	T_CHECK(!io_uring_wait_cqe(ring, &cqe), "wait cqe");
	res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	T_CHECK(res == (int)len, "WRITE_FIXED: %d", res);
	T_CHECK(pread(t->memfd, out, len, 0) == (ssize_t)len, "pread");
	return T_PASS;
}

#ifdef MREG_TEST_VERBS
static int verbs_send(struct transport *t, struct mreg_region *r, void *addr,
		      size_t len, void *out)
{
	struct ibv_mr *mr = mreg_region_native(r);

	T_CHECK(len <= MAXLEN, "transfer of %zu bytes", len);
	memset(t->peer, 0, len);
	T_CHECK(!loop_rdma(&t->qp, IBV_WR_RDMA_WRITE, (uintptr_t)addr, mr->lkey,
			   (uintptr_t)t->peer, t->peer_mr->rkey, len),
		"RDMA WRITE");
	memcpy(out, t->peer, len);
	return T_PASS;
}
#endif

static int transport_open(struct transport *t, const char *name)
{
	struct mreg_domain_attr a = {.backend = MREG_BACKEND_IO_URING};

	memset(t, 0, sizeof(*t));
	t->name = name;
	if (!strcmp(name, "io_uring")) {
		t->send = uring_send;
		t->memfd = memfd_create("test_cache", MFD_CLOEXEC);
		T_CHECK(t->memfd >= 0, "memfd_create");
		T_CHECK(!mreg_domain_open(&a, &t->d), "%s", mreg_last_error());
		return T_PASS;
	}
#ifdef MREG_TEST_VERBS
	a.backend = MREG_BACKEND_VERBS;
	t->send = verbs_send;
	T_CHECK(!mreg_domain_open(&a, &t->d), "%s", mreg_last_error());
	t->peer = mmap(NULL, MAXLEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_CHECK(t->peer != MAP_FAILED, "mmap peer");
	t->peer_mr =
		ibv_reg_mr(mreg_domain_native(t->d), t->peer, MAXLEN,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	T_CHECK(t->peer_mr, "ibv_reg_mr peer");
	return loop_qp_create(&t->qp, mreg_domain_native(t->d));
#else
	return T_FAIL;
#endif
}

static void transport_close(struct transport *t)
{
#ifdef MREG_TEST_VERBS
	if (t->peer_mr) {
		loop_qp_destroy(&t->qp);
		ibv_dereg_mr(t->peer_mr);
		munmap(t->peer, MAXLEN);
	}
#endif
	if (t->d && mreg_domain_close(t->d))
		fprintf(stderr, "domain close: %s\n", mreg_last_error());
	if (t->memfd > 0)
		close(t->memfd);
}

struct mreg_impl {
	struct transport *t;
	struct mreg_cache *c;
};

static int mreg_send(void *impl, void *p, size_t len, void *out)
{
	struct mreg_impl *m = impl;
	struct mreg_region *r;
	int ret;

	ret = mreg_cache_get(m->c, p, len, &r);
	if (ret == -EAGAIN)
		return T_BUSY;
	if (ret == -EOPNOTSUPP) {
		printf("    %s\n", mreg_last_error());
		return T_UNSUPPORTED;
	}
	if (ret) {
		fprintf(stderr, "  get: %s\n", mreg_last_error());
		return T_FAIL;
	}
	ret = m->t->send(m->t, r, p, len, out);
	if (mreg_cache_put(m->c, r))
		return T_FAIL;
	return ret;
}

static int mreg_touch(void *impl, void *p, size_t len)
{
	struct mreg_impl *m = impl;
	struct mreg_region *r;

	if (mreg_cache_get(m->c, p, len, &r))
		return T_FAIL;
	return mreg_cache_put(m->c, r) ? T_FAIL : T_PASS;
}

static int64_t mreg_invalidations(void *impl)
{
	struct mreg_impl *m = impl;
	struct mreg_cache_stats st = {.size = sizeof(st)};

	mreg_cache_stats(m->c, &st);
	return (int64_t)st.invalidated;
}

static int run_cases(struct t_cache *x, struct mreg_impl *m,
		     enum mreg_cache_monitor mon, const char *only)
{
	struct mreg_cache_stats st = {.size = sizeof(st)};
	struct t_pins pins;
	uint64_t uncached;
	size_t i;
	int bad = 0;

	for (i = 0; i < t_nr_cases; i++) {
		const struct t_case *c = &t_cases[i];
		bool expect_stale =
			mon == MREG_CACHE_MONITOR_UFFD && c->uffd_blind;
		enum t_verdict v;

		if (only && strcmp(only, c->name))
			continue;
		t_pins_read(&pins);
		x->unsupported = false;
		mreg_cache_stats(m->c, &st);
		uncached = st.uncached;
		v = c->fn(x);
		mreg_cache_stats(m->c, &st);
		/* A blind spot needs the range cached: where the monitor
		 * cannot watch it (memfd before 5.19), it is not. */
		if (expect_stale && v == T_FRESH && st.uncached > uncached) {
			printf("    not cached here: the monitor cannot watch "
			       "this memory on this kernel\n");
			expect_stale = false;
		}
		if (x->unsupported) {
			printf("    the backend refuses this memory on this "
			       "kernel: case void\n");
			v = T_VOID;
		}
		mreg_cache_flush(m->c);
		if (!t_pins_balanced(&pins)) {
			printf("  %-10s %-8s %-15s pins unbalanced\n", x->name,
			       m->t->name, c->name);
			bad = 1;
		}
		printf("  %-10s %-8s %-15s %s%s\n", x->name, m->t->name,
		       c->name, t_verdict_name[v],
		       expect_stale ? " (documented blind spot)" : "");
		if (v == T_ERROR ||
		    (v != T_VOID && (v == T_STALE) != expect_stale))
			bad = 1;
	}
	return bad ? T_FAIL : T_PASS;
}

static int run(const char *tname, enum mreg_cache_monitor mon, const char *only,
	       bool verbose)
{
	struct mreg_cache_attr a = {.size = sizeof(a), .monitor = mon};
	struct transport t;
	struct mreg_impl m = {.t = &t};
	struct t_cache x = {.send = mreg_send,
			    .invalidations = mreg_invalidations,
			    .impl = &m,
			    .verbose = verbose};
	int ret;

	x.name = mon == MREG_CACHE_MONITOR_KMOD ? "mreg/kmod" : "mreg/uffd";
	ret = transport_open(&t, tname);
	if (ret) {
		transport_close(&t);
		return ret;
	}
	x.scratch = malloc(T_CACHE_MAXLEN);
	T_CHECK(x.scratch, "malloc");
	if (mreg_cache_open(t.d, &a, &m.c)) {
		fprintf(stderr, "cache open (%s): %s\n", x.name,
			mreg_last_error());
		transport_close(&t);
		free(x.scratch);
		return T_FAIL;
	}
	ret = run_cases(&x, &m, mon, only);
	if (!only) {
		char name[48];

		snprintf(name, sizeof(name), "%s/%s", x.name, tname);
		t_costs(name, mreg_touch, &m);
		printf("false %s invalidations=%u\n", name,
		       x.false_invalidations);
	}
	T_CHECK(!mreg_cache_close(m.c), "cache close: %s", mreg_last_error());
	free(x.scratch);
	transport_close(&t);
	return ret;
}

int main(int argc, char **argv)
{
	const char *only = NULL, *mon_arg = NULL, *t_arg = NULL;
	bool verbose = false, any = false;
	int opt, ret = T_PASS, m, t;
	static const char *const transports[] = {"io_uring", "verbs"};

	t_init("test_cache");
	t_catalog_init();
	while ((opt = getopt(argc, argv, "m:t:c:v")) != -1) {
		switch (opt) {
		case 'm':
			mon_arg = optarg;
			break;
		case 't':
			t_arg = optarg;
			break;
		case 'c':
			only = optarg;
			break;
		case 'v':
			verbose = true;
			break;
		default:
			fprintf(stderr, "usage: test_cache [-m kmod|uffd] "
					"[-t io_uring|verbs] [-c CASE] [-v]\n");
			return T_FAIL;
		}
	}
	for (m = MREG_CACHE_MONITOR_KMOD; m <= MREG_CACHE_MONITOR_UFFD; m++) {
		const char *mn = m == MREG_CACHE_MONITOR_KMOD ? "kmod" : "uffd";

		if (mon_arg && strcmp(mon_arg, mn))
			continue;
		if (m == MREG_CACHE_MONITOR_KMOD &&
		    access("/dev/mreg", R_OK | W_OK)) {
			printf("  kmod monitor: skipped, no /dev/mreg (mreg.ko "
			       "not loaded)\n");
			continue;
		}
		for (t = 0; t < 2; t++) {
			if (t_arg && strcmp(t_arg, transports[t]))
				continue;
			if (t == 1 &&
			    !mreg_backend_supported(MREG_BACKEND_VERBS)) {
				printf("  verbs: skipped, no RDMA device\n");
				continue;
			}
#ifndef MREG_TEST_VERBS
			if (t == 1)
				continue;
#endif
			any = true;
			ret |= run(transports[t], (enum mreg_cache_monitor)m,
				   only, verbose);
		}
	}
	if (!any)
		return t_skip("no monitor and transport to run");
	return ret;
}
