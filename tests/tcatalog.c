// SPDX-License-Identifier: MIT
/*
 * The stale-hit catalogue (tcatalog.h): every way a process changes the
 * memory behind a cached registration, each followed by a transfer
 * through the cache under test and a check of the bytes its peer got.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
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
#include <time.h>
#include <unistd.h>

#include "tcatalog.h"
#include "tcommon.h"

#define PG     4096ul
#define LEN    (16 * PG)
#define MAXLEN T_CACHE_MAXLEN

/* Every 8 bytes of a page carry @tag and the page's index. */
void t_catalog_init(void)
{
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void t_costs(const char *name, int (*touch)(void *impl, void *p, size_t len),
	     void *impl)
{
	const size_t len = 64u << 10, hits = 2000, misses = 50;
	char *p = mmap(NULL, len * (misses + 1), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct mallinfo2 m0, m1;
	uint64_t t0, hit_ns, miss_ns;
	size_t i;
	int bad = 0;

	if (p == MAP_FAILED)
		return;
	memset(p, 1, len * (misses + 1));
	bad |= touch(impl, p, len);
	t0 = now_ns();
	for (i = 0; i < hits; i++)
		bad |= touch(impl, p, len);
	hit_ns = (now_ns() - t0) / hits;
	m0 = mallinfo2();
	t0 = now_ns();
	for (i = 1; i <= misses; i++)
		bad |= touch(impl, p + i * len, len);
	miss_ns = (now_ns() - t0) / misses;
	m1 = mallinfo2();
	printf("cost %s hit_ns=%llu miss_ns=%llu heap_per_entry=%lld%s\n", name,
	       (unsigned long long)hit_ns, (unsigned long long)miss_ns,
	       (long long)((m1.uordblks + m1.hblkhd) -
			   (m0.uordblks + m0.hblkhd)) /
		       (long long)misses,
	       bad ? " (some touches failed)" : "");
	munmap(p, len * (misses + 1));
}

void t_fill(void *p, size_t len, uint32_t tag)
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

/* Through the cache, then the check: T_FRESH if the peer got @tag
 * everywhere. */
static enum t_verdict transfer(struct t_cache *x, void *p, size_t len,
			       uint32_t tag)
{
	uint32_t got;
	int ret;

	ret = x->send(x->impl, p, len, x->scratch);
	if (ret == T_UNSUPPORTED)
		x->unsupported = true;
	if (ret != T_PASS)
		return T_ERROR;
	got = other_tag(x->scratch, len, tag);
	if (got == tag)
		return T_FRESH;
	if (x->verbose)
		printf("    peer got tag %u, memory holds %u\n", got, tag);
	return T_STALE;
}

static void *map_at(void *addr, size_t len)
{
	return mmap(addr, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | (addr ? MAP_FIXED : 0), -1,
		    0);
}

/* Each case: cache the range holding tag 1, change the memory so that
 * it holds tag 2, and return the verdict of the transfer after. */

static enum t_verdict case_munmap(struct t_cache *x)
{
	char *p = map_at(NULL, LEN);
	enum t_verdict v;

	t_fill(p, LEN, 1);
	if (transfer(x, p, LEN, 1) != T_FRESH)
		return T_ERROR;
	munmap(p, LEN);
	if (map_at(p, LEN) != p)
		return T_ERROR;
	t_fill(p, LEN, 2);
	v = transfer(x, p, LEN, 2);
	munmap(p, LEN);
	return v;
}

static enum t_verdict case_map_fixed(struct t_cache *x)
{
	char *p = map_at(NULL, LEN);
	enum t_verdict v;

	t_fill(p, LEN, 1);
	if (transfer(x, p, LEN, 1) != T_FRESH || map_at(p, LEN) != p)
		return T_ERROR;
	t_fill(p, LEN, 2);
	v = transfer(x, p, LEN, 2);
	munmap(p, LEN);
	return v;
}

static enum t_verdict case_mremap(struct t_cache *x)
{
	char *p = map_at(NULL, 2 * LEN), *q = p + LEN;
	enum t_verdict v;

	void *moved;

	t_fill(p, LEN, 1);
	if (transfer(x, p, LEN, 1) != T_FRESH)
		return T_ERROR;
	moved = mremap(p, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED, q);
	if (moved != q) {
		/* UCX 1.13's mremap hook drops the new address of
		 * MREMAP_FIXED: the application's own call fails. */
		printf("    mremap(MREMAP_FIXED) returned %p (%s), not %p\n",
		       moved, moved == MAP_FAILED ? strerror(errno) : "moved",
		       (void *)q);
		munmap(p, 2 * LEN);
		return T_ERROR;
	}
	if (map_at(p, LEN) != p)
		return T_ERROR;
	t_fill(p, LEN, 2);
	v = transfer(x, p, LEN, 2);
	munmap(p, 2 * LEN);
	return v;
}

static enum t_verdict case_dontneed(struct t_cache *x)
{
	char *p = map_at(NULL, LEN);
	enum t_verdict v;

	t_fill(p, LEN, 1);
	if (transfer(x, p, LEN, 1) != T_FRESH || madvise(p, LEN, MADV_DONTNEED))
		return T_ERROR;
	t_fill(p, LEN, 2);
	v = transfer(x, p, LEN, 2);
	munmap(p, LEN);
	return v;
}

static enum t_verdict case_shmat_remap(struct t_cache *x)
{
	int id = shmget(IPC_PRIVATE, LEN, IPC_CREAT | 0600);
	char *p = map_at(NULL, LEN);
	enum t_verdict v = T_ERROR;

	if (id < 0)
		return T_ERROR;
	t_fill(p, LEN, 1);
	if (transfer(x, p, LEN, 1) == T_FRESH && shmat(id, p, SHM_REMAP) == p) {
		t_fill(p, LEN, 2);
		v = transfer(x, p, LEN, 2);
		shmdt(p);
	}
	shmctl(id, IPC_RMID, NULL);
	return v;
}

static enum t_verdict case_shmdt(struct t_cache *x)
{
	int a = shmget(IPC_PRIVATE, LEN, IPC_CREAT | 0600);
	int b = shmget(IPC_PRIVATE, LEN, IPC_CREAT | 0600);
	enum t_verdict v = T_ERROR;
	char *p;

	p = a < 0 || b < 0 ? (void *)-1 : shmat(a, NULL, 0);
	if (p != (void *)-1) {
		t_fill(p, LEN, 1);
		if (transfer(x, p, LEN, 1) == T_FRESH && !shmdt(p) &&
		    shmat(b, p, 0) == p) {
			t_fill(p, LEN, 2);
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
static enum t_verdict case_brk(struct t_cache *x)
{
	char *top = sbrk(0), *p;
	enum t_verdict v;

	p = (char *)(((uintptr_t)top + PG - 1) & ~(PG - 1));
	if (sbrk((intptr_t)(p + LEN - top)) == (void *)-1)
		return T_ERROR;
	t_fill(p, LEN, 1);
	if (transfer(x, p, LEN, 1) != T_FRESH)
		return T_ERROR;
	if (sbrk(-(intptr_t)(p + LEN - top)) == (void *)-1 ||
	    sbrk((intptr_t)(p + LEN - top)) == (void *)-1)
		return T_ERROR;
	t_fill(p, LEN, 2);
	v = transfer(x, p, LEN, 2);
	sbrk(-(intptr_t)(p + LEN - top));
	return v;
}

/* Above M_MMAP_THRESHOLD a block is its own mapping: free() unmaps it
 * inside libc, malloc() maps the hole again. */
static enum t_verdict case_free_malloc(struct t_cache *x)
{
	size_t n = MAXLEN;
	char *p = malloc(n), *q;
	enum t_verdict v;

	if (!p)
		return T_ERROR;
	t_fill(p, n, 1);
	if (transfer(x, p, n, 1) != T_FRESH)
		return T_ERROR;
	free(p);
	q = malloc(n);
	if (q != p) {
		printf("    malloc did not reuse the address: case void\n");
		free(q);
		return T_VOID;
	}
	t_fill(q, n, 2);
	v = transfer(x, q, n, 2);
	free(q);
	return v;
}

/* Unmapped behind libc's back, and mapped again without MAP_FIXED (the
 * hole is the hint): a hook on mmap(MAP_FIXED) would see the second. */
static enum t_verdict case_raw_munmap(struct t_cache *x)
{
	char *p = map_at(NULL, LEN);
	enum t_verdict v;

	t_fill(p, LEN, 1);
	if (transfer(x, p, LEN, 1) != T_FRESH || syscall(SYS_munmap, p, LEN))
		return T_ERROR;
	if (mmap(p, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0) != p) {
		printf("    the hole was not reused: case void\n");
		return T_VOID;
	}
	t_fill(p, LEN, 2);
	v = transfer(x, p, LEN, 2);
	munmap(p, LEN);
	return v;
}

static enum t_verdict case_partial_munmap(struct t_cache *x)
{
	char *p = map_at(NULL, LEN);
	enum t_verdict v;

	t_fill(p, LEN, 1);
	if (transfer(x, p, LEN, 1) != T_FRESH)
		return T_ERROR;
	munmap(p + 3 * PG, PG);
	if (map_at(p + 3 * PG, PG) != p + 3 * PG)
		return T_ERROR;
	t_fill(p, LEN, 2);
	v = transfer(x, p, LEN, 2);
	munmap(p, LEN);
	return v;
}

/* A hole punched in a memfd mapped shared: new pages, same VMA. */
static enum t_verdict case_memfd_punch(struct t_cache *x)
{
	int fd = memfd_create("punch", MFD_CLOEXEC);
	enum t_verdict v = T_ERROR;
	char *p;

	if (fd < 0 || ftruncate(fd, LEN))
		return T_ERROR;
	p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p != MAP_FAILED) {
		t_fill(p, LEN, 1);
		if (transfer(x, p, LEN, 1) == T_FRESH &&
		    !fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       0, LEN)) {
			t_fill(p, LEN, 2);
			v = transfer(x, p, LEN, 2);
		}
		munmap(p, LEN);
	}
	close(fd);
	return v;
}

static int64_t invalidated(struct t_cache *x)
{
	return x->invalidations ? x->invalidations(x->impl) : -1;
}

/* Writes in parent and child after fork: the parent's registration is
 * still its memory (pinned pages are copied for the child), and nothing
 * is invalidated for it. */
static enum t_verdict case_fork(struct t_cache *x)
{
	char *p = map_at(NULL, LEN);
	enum t_verdict v;
	int64_t before;
	int st;
	pid_t pid;

	t_fill(p, LEN, 1);
	if (transfer(x, p, LEN, 1) != T_FRESH)
		return T_ERROR;
	before = invalidated(x);
	pid = fork();
	if (pid == 0) {
		t_fill(p, LEN, 3);
		_exit(0);
	}
	t_fill(p, LEN, 2);
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return T_ERROR;
	v = transfer(x, p, LEN, 2);
	if (v == T_FRESH && before >= 0 && invalidated(x) != before) {
		printf("    fork invalidated the parent's entry needlessly\n");
		x->false_invalidations++;
	}
	munmap(p, LEN);
	return v;
}

/*
 * A PMD-mapped THP split into PTEs by an mprotect() round trip on one
 * page: the same pages stay mapped, so a drop of the entry is a false
 * invalidation (mreg.ko sees the split's CLEAR; it is counted, not
 * hidden). Void where no THP could be had.
 */
static enum t_verdict case_thp_split(struct t_cache *x)
{
	size_t pmd = 2ul << 20;
	char *raw = map_at(NULL, 2 * pmd), *p;
	enum t_verdict v;
	struct mreg_folio_hist h = {.size = sizeof(h)};
	int64_t before;

	p = (char *)(((uintptr_t)raw + pmd - 1) & ~(pmd - 1));
	madvise(p, pmd, MADV_HUGEPAGE);
	t_fill(p, pmd, 1);
	if (mreg_verify_range(p, pmd, &h) || h.pmd_mapped_bytes < pmd) {
		printf("    no PMD-mapped THP here: case void\n");
		munmap(raw, 2 * pmd);
		return T_VOID;
	}
	if (transfer(x, p, pmd, 1) != T_FRESH)
		return T_ERROR;
	before = invalidated(x);
	mprotect(p, PG, PROT_READ);
	mprotect(p, PG, PROT_READ | PROT_WRITE);
	v = transfer(x, p, pmd, 1);
	if (v == T_FRESH && before >= 0 && invalidated(x) != before) {
		printf("    the split invalidated the entry (same pages)\n");
		x->false_invalidations++;
	}
	munmap(raw, 2 * pmd);
	return v;
}

struct race {
	struct t_cache *x;
	char *p;
	atomic_uint seq; /* the tag the mapping at p holds, once published */
	atomic_bool stop;
	atomic_uint stale, errors, rounds, busy;
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
		t_fill(r->p, LEN, tag);
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
static enum t_verdict case_race(struct t_cache *x)
{
	struct race r = {.x = x, .p = map_at(NULL, LEN)};
	pthread_t th;
	uint32_t s1, got;
	int ret;

	t_fill(r.p, LEN, 1);
	atomic_store(&r.seq, 1);
	pthread_create(&th, NULL, race_remapper, &r);
	while (!atomic_load(&r.stop)) {
		s1 = atomic_load(&r.seq);
		ret = x->send(x->impl, r.p, LEN, x->scratch);
		if (ret == T_BUSY) {
			atomic_fetch_add(&r.busy, 1);
			continue;
		}
		if (ret != T_PASS) {
			atomic_fetch_add(&r.errors, 1);
			break;
		}
		got = (uint32_t)(((uint64_t *)x->scratch)[0] >> 32);
		if (got && got < s1)
			atomic_fetch_add(&r.stale, 1);
		atomic_fetch_add(&r.rounds, 1);
	}
	pthread_join(th, NULL);
	munmap(r.p, LEN);
	if (x->verbose)
		printf("    %u transfers, %u stale, %u gave up (memory kept "
		       "changing)\n",
		       atomic_load(&r.rounds), atomic_load(&r.stale),
		       atomic_load(&r.busy));
	if (atomic_load(&r.errors))
		return T_ERROR;
	return atomic_load(&r.stale) ? T_STALE : T_FRESH;
}

const struct t_case t_cases[] = {
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
	{"thp_split", case_thp_split, false},
	{"race", case_race, false},
};

const char *const t_verdict_name[] = {"fresh", "STALE", "error", "void"};
const size_t t_nr_cases = sizeof(t_cases) / sizeof(t_cases[0]);

void t_catalog_run(struct t_cache *x,
		   int (*touch)(void *impl, void *p, size_t len))
{
	size_t i;

	for (i = 0; i < t_nr_cases; i++)
		printf("  %-10s %-15s %s\n", x->name, t_cases[i].name,
		       t_verdict_name[t_cases[i].fn(x)]);
	t_costs(x->name, touch, x->impl);
}
