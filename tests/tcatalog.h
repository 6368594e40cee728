/* SPDX-License-Identifier: MIT */
/*
 * The stale-hit catalogue, shared by mreg's cache test and the runs of
 * the same cases against UCX's and libfabric's caches: each case caches a
 * range holding tag 1, changes the memory so that it holds tag 2 (munmap
 * and a new mapping, MAP_FIXED, mremap, MADV_DONTNEED, shmat, brk, ...),
 * sends again and reports whether the peer got tag 2 (fresh) or the old
 * pages' bytes (stale).
 */
#ifndef MREG_TCATALOG_H
#define MREG_TCATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define T_BUSY 2
/* send(): the backend refused this kind of memory on this kernel
 * (EOPNOTSUPP: io_uring before 6.3 and SysV shm, say). */
#define T_UNSUPPORTED 3

/* The largest transfer: free_malloc's block, above the mmap threshold. */
#define T_CACHE_MAXLEN (8ul << 20)

/* T_VOID: the case could not set up its change here (ASan's allocator
 * never hands a freed block's address straight back), so it says
 * nothing either way. */
enum t_verdict { T_FRESH, T_STALE, T_ERROR, T_VOID };

/* A cache under test and the transport behind it. */
struct t_cache {
	const char *name;
	/*
	 * Move [@p, @p+@len) to the peer through the cache (look up or
	 * register, transfer, release) and copy what the peer received to
	 * @out. Return: T_PASS, T_FAIL, or T_BUSY when the cache gave up
	 * because the memory kept changing while it registered (mreg's
	 * -EAGAIN), which only the race case can provoke.
	 */
	int (*send)(void *impl, void *p, size_t len, void *out);
	/* Optional: entries the cache dropped as changed so far (fork's
	 * "no needless invalidation"), or NULL. */
	int64_t (*invalidations)(void *impl);
	void *impl;
	char *scratch; /* T_CACHE_MAXLEN bytes */
	bool verbose;
	/* Entries dropped by cases that change no memory (fork, a THP
	 * split), counted where invalidations() exists. */
	unsigned int false_invalidations;
	/* Set when a send of the current case gave T_UNSUPPORTED: the
	 * case then says nothing (T_VOID), and why is printed. */
	bool unsupported;
};

struct t_case {
	const char *name;
	enum t_verdict (*fn)(struct t_cache *x);
	/* No kernel event reaches the userfaultfd monitor here: documented
	 * blind spot of mreg's UFFD monitor (mreg_cache_open(3)). */
	bool uffd_blind;
};

extern const struct t_case t_cases[];
extern const size_t t_nr_cases;
extern const char *const t_verdict_name[];

/*
 * Once per process, before the cases: a fixed mmap threshold, as glibc
 * would raise it to the size of the first mapped block freed and
 * free_malloc's second malloc() would come from the heap instead of the
 * hole the first left.
 */
void t_catalog_init(void);

/*
 * The cost line of the README's table, the same for every cache: @touch
 * looks up or registers [p, p+len) and releases it (mreg_cache_get+put,
 * ucp_mem_map+unmap, fi_mr_reg+fi_close). Prints "cost NAME hit_ns=
 * miss_ns= heap_per_entry=": the mean of 2000 touches of one cached 64 kB
 * range, of 50 touches each of a range new to the cache, and the malloc
 * heap those 50 new entries kept (user space only; kernel memory, the
 * registrations' own and mreg.ko's watches, is not in it).
 */
void t_costs(const char *name, int (*touch)(void *impl, void *p, size_t len),
	     void *impl);

/*
 * An anchor's whole run: every case, one line each, then t_costs() with
 * @touch. The anchors' stale hits are their result, not a failure.
 */
void t_catalog_run(struct t_cache *x,
		   int (*touch)(void *impl, void *p, size_t len));

/* Every 8 bytes carry @tag and the page index. */
void t_fill(void *p, size_t len, uint32_t tag);

#endif
