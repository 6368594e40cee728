// SPDX-License-Identifier: MIT
/*
 * The stale-hit catalogue for mreg's registration cache: every way a
 * process can change the memory behind a cached registration, each
 * followed by a transfer through the cache and a check of the bytes the
 * device took from the registration.
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
#include <fcntl.h>
#include <liburing.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tcommon.h"
#ifdef MREG_TEST_VERBS
#include "tverbs.h"
#endif

#define PG     4096ul
#define NPAGES 16ul
#define LEN    (NPAGES * PG)
/* The largest transfer: free_malloc's block, above the mmap threshold. */
#define MAXLEN (8ul << 20)

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

/* Every 8 bytes of a page carry @tag and the page's index. */
static void fill(void *p, size_t len, uint32_t tag)
{
	uint64_t *w = p;
	size_t i;

	for (i = 0; i < len / 8; i++)
		w[i] = (uint64_t)tag << 32 | (i * 8 / PG);
}

/* The tag of the first word that is not @tag, or @tag. */
static uint32_t other_tag(const void *p, size_t len, uint32_t tag)
{
	const uint64_t *w = p;
	size_t i;

	for (i = 0; i < len / 8; i++)
		if ((uint32_t)(w[i] >> 32) != tag)
			return (uint32_t)(w[i] >> 32);
	return tag;
}

struct ctx {
	struct transport *t;
	struct mreg_cache *c;
	const char *monitor;
	char *scratch;
	bool verbose;
};

enum verdict { FRESH, STALE, ERROR };

/* get, send, put: FRESH if the device read @tag everywhere. */
static enum verdict transfer(struct ctx *x, void *p, size_t len, uint32_t tag)
{
	struct mreg_region *r;
	enum verdict v = ERROR;
	uint32_t got;

	if (mreg_cache_get(x->c, p, len, &r)) {
		fprintf(stderr, "  get: %s\n", mreg_last_error());
		return ERROR;
	}
	if (x->t->send(x->t, r, p, len, x->scratch) == T_PASS) {
		got = other_tag(x->scratch, len, tag);
		v = got == tag ? FRESH : STALE;
		if (v == STALE && x->verbose)
			printf("    device read tag %u, memory holds %u\n", got,
			       tag);
	}
	if (mreg_cache_put(x->c, r))
		return ERROR;
	return v;
}

static void *map_at(void *addr, size_t len)
{
	return mmap(addr, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | (addr ? MAP_FIXED : 0), -1,
		    0);
}

/* Each case: cache the range holding tag 1, change the memory so that
 * it holds tag 2, and return the verdict of the transfer after. */

static enum verdict case_munmap(struct ctx *x)
{
	char *p = map_at(NULL, LEN);
	enum verdict v;

	fill(p, LEN, 1);
	if (transfer(x, p, LEN, 1) != FRESH)
		return ERROR;
	munmap(p, LEN);
	if (map_at(p, LEN) != p)
		return ERROR;
	fill(p, LEN, 2);
	v = transfer(x, p, LEN, 2);
	munmap(p, LEN);
	return v;
}

static enum verdict case_map_fixed(struct ctx *x)
{
	char *p = map_at(NULL, LEN);
	enum verdict v;

	fill(p, LEN, 1);
	if (transfer(x, p, LEN, 1) != FRESH || map_at(p, LEN) != p)
		return ERROR;
	fill(p, LEN, 2);
	v = transfer(x, p, LEN, 2);
	munmap(p, LEN);
	return v;
}

static enum verdict case_mremap(struct ctx *x)
{
	char *p = map_at(NULL, 2 * LEN), *q = p + LEN;
	enum verdict v;

	fill(p, LEN, 1);
	if (transfer(x, p, LEN, 1) != FRESH)
		return ERROR;
	if (mremap(p, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED, q) != q ||
	    map_at(p, LEN) != p)
		return ERROR;
	fill(p, LEN, 2);
	v = transfer(x, p, LEN, 2);
	munmap(p, 2 * LEN);
	return v;
}

static enum verdict case_dontneed(struct ctx *x)
{
	char *p = map_at(NULL, LEN);
	enum verdict v;

	fill(p, LEN, 1);
	if (transfer(x, p, LEN, 1) != FRESH || madvise(p, LEN, MADV_DONTNEED))
		return ERROR;
	fill(p, LEN, 2);
	v = transfer(x, p, LEN, 2);
	munmap(p, LEN);
	return v;
}

static enum verdict case_shmat_remap(struct ctx *x)
{
	int id = shmget(IPC_PRIVATE, LEN, IPC_CREAT | 0600);
	char *p = map_at(NULL, LEN);
	enum verdict v = ERROR;

	if (id < 0)
		return ERROR;
	fill(p, LEN, 1);
	if (transfer(x, p, LEN, 1) == FRESH && shmat(id, p, SHM_REMAP) == p) {
		fill(p, LEN, 2);
		v = transfer(x, p, LEN, 2);
		shmdt(p);
	}
	shmctl(id, IPC_RMID, NULL);
	return v;
}

static enum verdict case_shmdt(struct ctx *x)
{
	int a = shmget(IPC_PRIVATE, LEN, IPC_CREAT | 0600);
	int b = shmget(IPC_PRIVATE, LEN, IPC_CREAT | 0600);
	enum verdict v = ERROR;
	char *p;

	p = a < 0 || b < 0 ? (void *)-1 : shmat(a, NULL, 0);
	if (p != (void *)-1) {
		fill(p, LEN, 1);
		if (transfer(x, p, LEN, 1) == FRESH && !shmdt(p) &&
		    shmat(b, p, 0) == p) {
			fill(p, LEN, 2);
			v = transfer(x, p, LEN, 2);
			shmdt(p);
		}
	}
	shmctl(a, IPC_RMID, NULL);
	shmctl(b, IPC_RMID, NULL);
	return v;
}

/* The heap's top, moved by brk(2) itself: glibc's malloc copes with a
 * foreign brk, and the pages come back zeroed after the shrink. */
static enum verdict case_brk(struct ctx *x)
{
	char *top = sbrk(0), *p;
	enum verdict v;

	p = (char *)(((uintptr_t)top + PG - 1) & ~(PG - 1));
	if (sbrk((intptr_t)(p + LEN - top)) == (void *)-1)
		return ERROR;
	fill(p, LEN, 1);
	if (transfer(x, p, LEN, 1) != FRESH)
		return ERROR;
	if (sbrk(-(intptr_t)(p + LEN - top)) == (void *)-1 ||
	    sbrk((intptr_t)(p + LEN - top)) == (void *)-1)
		return ERROR;
	fill(p, LEN, 2);
	v = transfer(x, p, LEN, 2);
	sbrk(-(intptr_t)(p + LEN - top));
	return v;
}

/* Above M_MMAP_THRESHOLD a block is its own mapping: free() unmaps it
 * inside libc, malloc() maps the hole again. */
static enum verdict case_free_malloc(struct ctx *x)
{
	size_t n = MAXLEN;
	char *p = malloc(n), *q;
	enum verdict v;

	if (!p)
		return ERROR;
	fill(p, n, 1);
	if (transfer(x, p, n, 1) != FRESH)
		return ERROR;
	free(p);
	q = malloc(n);
	if (q != p) {
		printf("    malloc did not reuse the address: case void\n");
		free(q);
		return ERROR;
	}
	fill(q, n, 2);
	v = transfer(x, q, n, 2);
	free(q);
	return v;
}

static enum verdict case_raw_munmap(struct ctx *x)
{
	char *p = map_at(NULL, LEN);
	enum verdict v;

	fill(p, LEN, 1);
	if (transfer(x, p, LEN, 1) != FRESH || syscall(SYS_munmap, p, LEN) ||
	    map_at(p, LEN) != p)
		return ERROR;
	fill(p, LEN, 2);
	v = transfer(x, p, LEN, 2);
	munmap(p, LEN);
	return v;
}

static enum verdict case_partial_munmap(struct ctx *x)
{
	char *p = map_at(NULL, LEN);
	enum verdict v;

	fill(p, LEN, 1);
	if (transfer(x, p, LEN, 1) != FRESH)
		return ERROR;
	munmap(p + 3 * PG, PG);
	if (map_at(p + 3 * PG, PG) != p + 3 * PG)
		return ERROR;
	fill(p, LEN, 2);
	v = transfer(x, p, LEN, 2);
	munmap(p, LEN);
	return v;
}

/* A hole punched in a memfd mapped shared: new pages, same VMA. */
static enum verdict case_memfd_punch(struct ctx *x)
{
	int fd = memfd_create("punch", MFD_CLOEXEC);
	enum verdict v = ERROR;
	char *p;

	if (fd < 0 || ftruncate(fd, LEN))
		return ERROR;
	p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p != MAP_FAILED) {
		fill(p, LEN, 1);
		if (transfer(x, p, LEN, 1) == FRESH &&
		    !fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       0, LEN)) {
			fill(p, LEN, 2);
			v = transfer(x, p, LEN, 2);
		}
		munmap(p, LEN);
	}
	close(fd);
	return v;
}

static uint64_t invalidated(struct ctx *x)
{
	struct mreg_cache_stats st = {.size = sizeof(st)};

	mreg_cache_stats(x->c, &st);
	return st.invalidated;
}

/* Writes in parent and child after fork: the parent's registration is
 * still its memory (pinned pages are copied for the child), and nothing
 * is invalidated for it. */
static enum verdict case_fork(struct ctx *x)
{
	char *p = map_at(NULL, LEN);
	enum verdict v;
	uint64_t before;
	int st;
	pid_t pid;

	fill(p, LEN, 1);
	if (transfer(x, p, LEN, 1) != FRESH)
		return ERROR;
	before = invalidated(x);
	pid = fork();
	if (pid == 0) {
		fill(p, LEN, 3);
		_exit(0);
	}
	fill(p, LEN, 2);
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return ERROR;
	v = transfer(x, p, LEN, 2);
	if (v == FRESH && invalidated(x) != before) {
		printf("    fork invalidated the parent's entry needlessly\n");
		v = STALE;
	}
	munmap(p, LEN);
	return v;
}

struct race {
	struct ctx *x;
	char *p;
	atomic_uint seq; /* the tag the mapping at p holds, once published */
	atomic_bool stop;
	atomic_uint stale, errors, rounds;
};

/* Replace the mapping again and again, each with the next tag. */
static void *race_remapper(void *arg)
{
	struct race *r = arg;
	uint32_t tag;

	for (tag = 2; tag < 200; tag++) {
		if (map_at(r->p, LEN) != r->p) {
			atomic_fetch_add(&r->errors, 1);
			break;
		}
		fill(r->p, LEN, tag);
		atomic_store(&r->seq, tag);
		/* Half the rounds leave time for hits, half race misses. */
		if (tag < 100)
			usleep(1000);
	}
	atomic_store(&r->stop, true);
	return NULL;
}

/* A transfer must carry a tag at least as new as the one published
 * before its get(): anything older came from a stale hit. Tag 0 is a
 * mapping the remapper has not filled yet: new pages, not stale ones. */
static enum verdict case_race(struct ctx *x)
{
	struct race r = {.x = x, .p = map_at(NULL, LEN)};
	struct mreg_region *reg;
	pthread_t th;
	uint32_t s1, got;

	fill(r.p, LEN, 1);
	atomic_store(&r.seq, 1);
	pthread_create(&th, NULL, race_remapper, &r);
	while (!atomic_load(&r.stop)) {
		s1 = atomic_load(&r.seq);
		if (mreg_cache_get(x->c, r.p, LEN, &reg)) {
			atomic_fetch_add(&r.errors, 1);
			break;
		}
		if (x->t->send(x->t, reg, r.p, LEN, x->scratch) != T_PASS)
			atomic_fetch_add(&r.errors, 1);
		got = (uint32_t)(((uint64_t *)x->scratch)[0] >> 32);
		if (got && got < s1)
			atomic_fetch_add(&r.stale, 1);
		mreg_cache_put(x->c, reg);
		atomic_fetch_add(&r.rounds, 1);
	}
	pthread_join(th, NULL);
	munmap(r.p, LEN);
	if (x->verbose)
		printf("    %u transfers, %u stale\n", atomic_load(&r.rounds),
		       atomic_load(&r.stale));
	if (atomic_load(&r.errors))
		return ERROR;
	return atomic_load(&r.stale) ? STALE : FRESH;
}

struct tcase {
	const char *name;
	enum verdict (*fn)(struct ctx *x);
	bool uffd_blind; /* documented blind spot of the UFFD monitor */
};

static const struct tcase cases[] = {
	{"munmap", case_munmap, false},
	{"map_fixed", case_map_fixed, false},
	{"mremap", case_mremap, false},
	{"dontneed", case_dontneed, false},
	{"shmat_remap", case_shmat_remap, true},
	{"shmdt", case_shmdt, false},
	{"brk", case_brk, false},
	{"free_malloc", case_free_malloc, false},
	{"raw_munmap", case_raw_munmap, false},
	{"partial_munmap", case_partial_munmap, false},
	{"memfd_punch", case_memfd_punch, true},
	{"fork", case_fork, false},
	{"race", case_race, false},
};

static const char *const verdict_name[] = {"fresh", "STALE", "error"};

static int run_cases(struct ctx *x, enum mreg_cache_monitor mon,
		     const char *only)
{
	struct t_pins pins;
	size_t i;
	int bad = 0;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct tcase *c = &cases[i];
		bool expect_stale =
			mon == MREG_CACHE_MONITOR_UFFD && c->uffd_blind;
		enum verdict v;

		if (only && strcmp(only, c->name))
			continue;
		t_pins_read(&pins);
		v = c->fn(x);
		mreg_cache_flush(x->c);
		if (!t_pins_balanced(&pins)) {
			printf("  %-8s %-8s %-15s pins unbalanced\n",
			       x->monitor, x->t->name, c->name);
			bad = 1;
		}
		printf("  %-8s %-8s %-15s %s%s\n", x->monitor, x->t->name,
		       c->name, verdict_name[v],
		       expect_stale ? " (documented blind spot)" : "");
		if (v == ERROR || (v == STALE) != expect_stale)
			bad = 1;
	}
	return bad ? T_FAIL : T_PASS;
}

static int run(const char *tname, enum mreg_cache_monitor mon, const char *only,
	       bool verbose)
{
	struct mreg_cache_attr a = {.size = sizeof(a), .monitor = mon};
	struct transport t;
	struct ctx x = {.t = &t, .verbose = verbose};
	int ret;

	x.monitor = mon == MREG_CACHE_MONITOR_KMOD ? "kmod" : "uffd";
	ret = transport_open(&t, tname);
	if (ret) {
		transport_close(&t);
		return ret;
	}
	x.scratch = malloc(MAXLEN);
	T_CHECK(x.scratch, "malloc");
	if (mreg_cache_open(t.d, &a, &x.c)) {
		fprintf(stderr, "cache open (%s): %s\n", x.monitor,
			mreg_last_error());
		transport_close(&t);
		free(x.scratch);
		return T_FAIL;
	}
	ret = run_cases(&x, mon, only);
	T_CHECK(!mreg_cache_close(x.c), "cache close: %s", mreg_last_error());
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
	/* A fixed threshold: glibc would raise it to the size of the first
	 * mapped block freed, and free_malloc's second malloc would come
	 * from the heap instead of the hole the first left. */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
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
