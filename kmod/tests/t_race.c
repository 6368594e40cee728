// SPDX-License-Identifier: GPL-2.0
/*
 * Races: two threads pin, read back and unpin random pieces of a region
 * while another thread replaces (mmap MAP_FIXED), mprotects,
 * MADV_DONTNEEDs and forks over it, then refills what it changed.
 *
 * What a READ may return depends on whether it overlapped a change of the
 * page it copies.  Each page has a sequence count that the mutator makes
 * odd for the time it changes and refills the page, and a generation
 * (count / 2) that the refill writes into the page's pattern:
 *
 * - no change overlapped PIN..READ (the count was even and did not move):
 *   the pinned page is the mapped one and holds exactly the pattern of
 *   the current generation;
 * - a change overlapped: the pinned page may be the old page, a fresh
 *   zero page the PIN faulted in before the refill, or the new one, and
 *   READ (a copy_to_user() of pages the process can still store to) is
 *   not atomic against those stores.  Every byte must then come from 0 or
 *   from the pattern of one of the generations the READ overlapped.
 *
 * Any other byte is data the process never wrote there: a foreign or
 * stale page.  Patterns are a 32-bit mix of (page, generation), so pages
 * do not share bytes the way neighbouring counters do.  The harness fails
 * the test on any kernel splat or pin leak.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mt.h"

#define NPAGES 1024UL
#define LEN (NPAGES * MT_PAGE)
#define LAST_WORD (MT_PAGE / 4 - 1)

/* Seeds apart, so no pinner walks the mutator's ranges in lockstep. */
#define MUTATOR_SEED 1u
static const unsigned int pinner_seed[2] = { 0x9e3779b9u, 0x7f4a7c15u };

static char *region;
static int mfd;
static atomic_int stop;
static atomic_uint seq[NPAGES];
static atomic_ulong pins_ok, pins_failed, mutations, strict_pages,
	overlapped_pages;

static unsigned int rnd(unsigned int *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

/* murmur3's finalizer: a bijection whose output bytes all depend on
 * every input bit. */
static uint32_t pattern(size_t page, unsigned int gen)
{
	uint32_t h = (uint32_t)page * 0x10001u ^ gen * 0x9e3779b9u;

	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

/* Is every byte of @got that of 0 or of some generation in [g0, g1]? */
static int bytewise_mix(uint32_t got, size_t page, unsigned int g0,
			unsigned int g1, int inverted)
{
	int b;

	for (b = 0; b < 4; b++) {
		unsigned int byte = (got >> (8 * b)) & 0xff, g;
		int ok = byte == 0;

		for (g = g0; !ok && g <= g1; g++) {
			uint32_t w = pattern(page, g);

			ok = byte == (((inverted ? ~w : w) >> (8 * b)) & 0xff);
		}
		if (!ok)
			return 0;
	}
	return 1;
}

static void check_page(const uint32_t *w, size_t page, unsigned int s0,
		       unsigned int s1)
{
	unsigned int g0 = s0 / 2, g1 = (s1 + 1) / 2;

	/* Only the first and last words are ever written: a page with data
	 * in between is not one of the process's. */
	MT_CHECK(!w[1] && !w[LAST_WORD / 2] && !w[LAST_WORD - 1],
		 "page %zu: middle words 0x%08x 0x%08x 0x%08x, want 0", page,
		 w[1], w[LAST_WORD / 2], w[LAST_WORD - 1]);
	if (s0 == s1 && !(s0 & 1)) {
		strict_pages++;
		MT_CHECK(w[0] == pattern(page, g0) &&
				 w[LAST_WORD] == ~pattern(page, g0),
			 "page %zu gen %u untouched: words 0x%08x 0x%08x, want "
			 "0x%08x 0x%08x",
			 page, g0, w[0], w[LAST_WORD], pattern(page, g0),
			 ~pattern(page, g0));
		return;
	}
	overlapped_pages++;
	MT_CHECK(bytewise_mix(w[0], page, g0, g1, 0) &&
			 bytewise_mix(w[LAST_WORD], page, g0, g1, 1),
		 "page %zu gens %u..%u: words 0x%08x 0x%08x are not bytes of 0 "
		 "or of those generations",
		 page, g0, g1, w[0], w[LAST_WORD]);
}

static void snapshot(unsigned int *out, size_t first, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		out[i] = atomic_load_explicit(&seq[first + i],
					      memory_order_acquire);
}

/* Whether any of @n pages was being changed at some time in between. */
static int changed(const unsigned int *s0, const unsigned int *s1, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s0[i] != s1[i] || (s0[i] & 1))
			return 1;
	return 0;
}

static void pin_once(unsigned int *s, char *copy, unsigned int *s0,
		     unsigned int *s1)
{
	size_t first = rnd(s) % NPAGES, n = 1 + rnd(s) % (NPAGES - first), i;
	uint32_t flags = rnd(s) % 4 ? 0 : MREG_PIN_FLAG_READONLY;
	struct mreg_pin p;
	int ret;

	snapshot(s0, first, n);
	atomic_thread_fence(memory_order_seq_cst);
	ret = mt_pin(mfd, (uintptr_t)region + first * MT_PAGE, n * MT_PAGE,
		     flags, 0, &p);
	if (ret) {
		/* Only a writable pin of a range mprotect()ed read-only
		 * right then may fail: nothing here ever unmaps it. */
		MT_CHECK(ret == -EFAULT && !flags, "PIN%s: %s",
			 flags ? " read-only" : "", strerror(-ret));
		atomic_thread_fence(memory_order_seq_cst);
		snapshot(s1, first, n);
		MT_CHECK(changed(s0, s1, n), "PIN of pages %zu..+%zu failed with "
			 "no change of them under way", first, n);
		pins_failed++;
		return;
	}
	ret = mt_read(mfd, p.out_handle, 0, n * MT_PAGE, copy);
	MT_EXPECT_ERR(ret, 0, "READ");
	atomic_thread_fence(memory_order_seq_cst);
	snapshot(s1, first, n);
	for (i = 0; i < n; i++)
		check_page((const uint32_t *)(copy + i * MT_PAGE), first + i,
			   s0[i], s1[i]);
	ret = mt_unpin(mfd, p.out_handle);
	MT_EXPECT_ERR(ret, 0, "UNPIN");
	pins_ok++;
}

static void *pinner(void *arg)
{
	unsigned int s = *(const unsigned int *)arg;
	char *copy = malloc(LEN);
	unsigned int *s0 = calloc(NPAGES, sizeof(*s0));
	unsigned int *s1 = calloc(NPAGES, sizeof(*s1));

	MT_CHECK(copy && s0 && s1, "malloc");
	while (!stop)
		pin_once(&s, copy, s0, s1);
	free(s1);
	free(s0);
	free(copy);
	return NULL;
}

/* Called with the pages' counts odd: write the next generation. */
static void refill(size_t first, size_t n)
{
	size_t i;

	for (i = first; i < first + n; i++) {
		uint32_t *w = (uint32_t *)(region + i * MT_PAGE);
		uint32_t v = pattern(i, (atomic_load(&seq[i]) + 1) / 2);

		w[0] = v;
		w[LAST_WORD] = ~v;
	}
}

static void begin_change(size_t first, size_t n)
{
	size_t i;

	for (i = first; i < first + n; i++)
		atomic_fetch_add(&seq[i], 1);
	atomic_thread_fence(memory_order_seq_cst);
}

static void end_change(size_t first, size_t n)
{
	size_t i;

	for (i = first; i < first + n; i++)
		atomic_fetch_add_explicit(&seq[i], 1, memory_order_release);
}

/* THP where the kernel allows it (the guests' policy is madvise), so
 * that PMD mappings are split and collapsed under the pins too. */
static void want_thp(void *p, size_t len)
{
	madvise(p, len, MADV_HUGEPAGE);
}

/* The child writes one page so that fork's COW is really broken. */
static void fork_once(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		*(volatile char *)region = 1;
		_exit(0);
	}
	MT_CHECK(pid > 0, "fork: %s", strerror(errno));
	waitpid(pid, NULL, 0);
}

static void mutate_once(unsigned int *s)
{
	size_t first = rnd(s) % NPAGES, n = 1 + rnd(s) % (NPAGES - first);
	char *p = region + first * MT_PAGE;
	unsigned int what = rnd(s) % 4;

	if (what == 3) {
		/* fork write-protects every page: all of them change. */
		first = 0;
		n = NPAGES;
	}
	begin_change(first, n);
	switch (what) {
	case 0:
		/* One step: no window where another mapping could land. */
		MT_CHECK(mmap(p, n * MT_PAGE, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
			      0) == p,
			 "mmap MAP_FIXED: %s", strerror(errno));
		want_thp(p, n * MT_PAGE);
		break;
	case 1:
		MT_CHECK(!mprotect(p, n * MT_PAGE, PROT_READ), "mprotect");
		usleep(100);
		MT_CHECK(!mprotect(p, n * MT_PAGE, PROT_READ | PROT_WRITE),
			 "mprotect");
		break;
	case 2:
		MT_CHECK(!madvise(p, n * MT_PAGE, MADV_DONTNEED), "madvise");
		break;
	default:
		fork_once();
	}
	refill(first, n);
	end_change(first, n);
	mutations++;
}

int main(void)
{
	unsigned long secs = mt_env_ulong("MREG_RACE_SECONDS", 20);
	unsigned int s = MUTATOR_SEED;
	pthread_t t[2];
	time_t end;

	mfd = mt_open();
	region = mt_map(LEN, MT_2M);
	want_thp(region, LEN);
	begin_change(0, NPAGES);
	refill(0, NPAGES);
	end_change(0, NPAGES);
	pthread_create(&t[0], NULL, pinner, (void *)&pinner_seed[0]);
	pthread_create(&t[1], NULL, pinner, (void *)&pinner_seed[1]);
	end = time(NULL) + secs;
	while (time(NULL) < end)
		mutate_once(&s);
	stop = 1;
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	close(mfd);
	printf("%lus: %lu pins ok, %lu failed, %lu mutations; pages checked "
	       "%lu strictly, %lu overlapping a change\n",
	       secs, (unsigned long)pins_ok, (unsigned long)pins_failed,
	       (unsigned long)mutations, (unsigned long)strict_pages,
	       (unsigned long)overlapped_pages);
	MT_CHECK(pins_ok > 0, "no pin succeeded");
	MT_CHECK(strict_pages > 0, "no page was checked strictly");
	printf("PASS race\n");
	return 0;
}
