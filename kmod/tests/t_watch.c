// SPDX-License-Identifier: GPL-2.0
/*
 * MREG_IOC_WATCH / UNWATCH / WATCH_INFO, the generation array and the
 * event file: what invalidates (munmap, MAP_FIXED, mremap, MADV_DONTNEED,
 * a hole punched in a shared memfd, partial munmap) and what does not
 * (mprotect, fork with a pinned range, a neighbour's munmap), events
 * coalesced per watch, read/poll/O_NONBLOCK, the read-only mapping, slot
 * reuse without generations going back, EPERM in a forked child, ENOSPC
 * at the cap, bad input.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mt.h"

#define LEN (16 * MT_PAGE)

static int fd;
static const volatile uint64_t *gens;
static size_t map_len;
static uint64_t udata[64]; /* id -> the user_data of its current watch */
static int racing;

static uint32_t watch(void *addr, uint64_t len, uint64_t *gen)
{
	struct mreg_watch w = { .size = sizeof(w), .addr = (uintptr_t)addr,
				.length = len };
	static uint64_t serial;

	w.user_data = ++serial;
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_WATCH, &w), 0, "WATCH");
	MT_CHECK(w.out_id < 64, "id %u", w.out_id);
	udata[w.out_id] = w.user_data;
	MT_CHECK(w.out_id >= 1, "id %u", w.out_id);
	*gen = w.out_generation;
	/* watch_race's zapper may bump it right away. */
	MT_CHECK(racing || gens[w.out_id] == *gen, "gens[%u] %llu, WATCH said %llu",
		 w.out_id, (unsigned long long)gens[w.out_id],
		 (unsigned long long)*gen);
	return w.out_id;
}

static int unwatch(uint32_t id)
{
	struct mreg_unwatch u = { .size = sizeof(u), .id = id };

	return mt_ioctl(fd, MREG_IOC_UNWATCH, &u);
}

static void info(struct mreg_watch_info *wi)
{
	memset(wi, 0, sizeof(*wi));
	wi->size = sizeof(*wi);
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_WATCH_INFO, wi), 0, "WATCH_INFO");
}

static uint32_t last_kind;

/* Events queued now, without blocking: their ids into @ids. */
static int drain(uint32_t *ids, int max)
{
	struct mreg_watch_event ev[64];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;
	int i;

	if (poll(&p, 1, 0) != 1)
		return 0;
	n = read(fd, ev, sizeof(ev));
	MT_CHECK(n > 0 && n % sizeof(ev[0]) == 0, "read: %zd (%s)", n,
		 strerror(errno));
	for (i = 0; i < n / (ssize_t)sizeof(ev[0]) && i < max; i++) {
		ids[i] = ev[i].id;
		MT_CHECK(ev[i].id < 64 && ev[i].user_data == udata[ev[i].id],
			 "event of %u carries user_data %llu", ev[i].id,
			 (unsigned long long)ev[i].user_data);
		last_kind = ev[i].kind;
	}
	return i;
}

static void *anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	MT_CHECK(p != MAP_FAILED, "mmap");
	memset(p, 1, len);
	return p;
}

/* One change of the memory under a watch: invalidated or not, and one
 * event for the watch exactly when invalidated. */
static void expect(const char *what, uint32_t id, uint64_t gen, int changed,
		   uint64_t seq0, int kind)
{
	uint32_t ids[64];
	int n = drain(ids, 64);

	if (changed) {
		MT_CHECK(gens[0] == seq0 + 1, "%s: gens[0] %llu, want %llu", what,
			 (unsigned long long)gens[0],
			 (unsigned long long)seq0 + 1);
		MT_CHECK(kind < 0 || last_kind == (uint32_t)kind,
			 "%s: kind %u, want %d", what, last_kind, kind);
		MT_CHECK(gens[id] > gen, "%s: gens[%u] still %llu", what, id,
			 (unsigned long long)gen);
		MT_CHECK(n == 1 && ids[0] == id,
			 "%s: %d events (first id %u), want one for %u", what,
			 n, n ? ids[0] : 0, id);
	} else {
		MT_CHECK(gens[0] == seq0, "%s: gens[0] moved", what);
		MT_CHECK(gens[id] == gen, "%s: gens[%u] moved to %llu", what,
			 id, (unsigned long long)gens[id]);
		MT_CHECK(n == 0, "%s: %d events for an unchanged range", what,
			 n);
	}
	printf("  %-28s %s\n", what, changed ? "invalidated" : "unchanged");
}

typedef void (*change_fn)(char *p);

static void ch_munmap(char *p) { munmap(p, LEN); }
static void ch_fixed(char *p)
{
	MT_CHECK(mmap(p, LEN, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == p,
		 "MAP_FIXED");
}
static void ch_mremap(char *p)
{
	void *q = mmap(NULL, LEN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	MT_CHECK(mremap(p, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED, q) == q,
		 "mremap");
	munmap(q, LEN);
}
static void ch_dontneed(char *p) { madvise(p, LEN, MADV_DONTNEED); }
static void ch_partial(char *p) { munmap(p + 5 * MT_PAGE, MT_PAGE); }
static void ch_mprotect(char *p)
{
	mprotect(p, LEN, PROT_READ);
	mprotect(p, LEN, PROT_READ | PROT_WRITE);
}
static void ch_neighbour(char *p) { munmap(p + LEN, MT_PAGE); }

static void one(const char *what, change_fn fn, int changed, int kind)
{
	char *p = anon(LEN + MT_PAGE);
	uint64_t gen, seq0;
	uint32_t id = watch(p, LEN, &gen);

	seq0 = gens[0];
	fn(p);
	expect(what, id, gen, changed, seq0, kind);
	MT_EXPECT_ERR(unwatch(id), 0, "UNWATCH");
	munmap(p, LEN + MT_PAGE);
}

static void memfd_punch(void)
{
	int mfd = memfd_create("watch", MFD_CLOEXEC);
	uint64_t gen, seq0;
	uint32_t id;
	char *p;

	MT_CHECK(mfd >= 0 && !ftruncate(mfd, LEN), "memfd");
	p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	MT_CHECK(p != MAP_FAILED, "mmap memfd");
	memset(p, 1, LEN);
	id = watch(p, LEN, &gen);
	seq0 = gens[0];
	MT_CHECK(!fallocate(mfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
			    MT_PAGE), "punch");
	expect("hole punched in shared memfd", id, gen, 1, seq0,
	       MREG_WATCH_CLEAR);
	unwatch(id);
	munmap(p, LEN);
	close(mfd);
}

/* A pinned range: fork copies the pinned pages for the child and leaves
 * the parent's mapped, so the parent's watch stays current; the child
 * may not use the parent's file. */
static void fork_pinned(void)
{
	char *p = anon(LEN);
	struct mreg_pin pin;
	uint64_t gen, seq0;
	uint32_t id;
	int st;
	pid_t pid;

	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)p, LEN, 0, 0, &pin), 0, "PIN");
	id = watch(p, LEN, &gen);
	pid = fork();
	MT_CHECK(pid >= 0, "fork");
	if (!pid) {
		struct mreg_watch w = { .size = sizeof(w),
					.addr = (uintptr_t)p, .length = LEN };
		struct mreg_watch_event ev;

		memset(p, 3, LEN);
		if (!ioctl(fd, MREG_IOC_WATCH, &w) || errno != EPERM)
			_exit(1);
		if (unwatch(id) != -EPERM)
			_exit(2);
		if (read(fd, &ev, sizeof(ev)) >= 0 || errno != EPERM)
			_exit(3);
		if (mmap(NULL, MT_PAGE, PROT_READ, MAP_SHARED, fd, 0) !=
		    MAP_FAILED || errno != EPERM)
			_exit(4);
		_exit(0);
	}
	seq0 = gens[0];
	memset(p, 2, LEN);
	MT_CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		 !WEXITSTATUS(st),
		 "child: WATCH/UNWATCH/read/mmap on the parent's file not EPERM (step %d)",
		 WEXITSTATUS(st));
	expect("fork, writes in both", id, gen, 0, seq0, -1);
	unwatch(id);
	mt_unpin(fd, pin.out_handle);
	munmap(p, LEN);
}

/* Two changes before a read: one event, the generation moved twice. */
static void coalesced(void)
{
	char *p = anon(LEN);
	struct mreg_watch_event ev[4];
	uint64_t gen;
	uint32_t id = watch(p, LEN, &gen);
	int fl = fcntl(fd, F_GETFL);

	madvise(p, MT_PAGE, MADV_DONTNEED);
	madvise(p + MT_PAGE, MT_PAGE, MADV_DONTNEED);
	MT_CHECK(read(fd, ev, sizeof(ev)) == sizeof(ev[0]), "one record");
	MT_CHECK(ev[0].id == id && ev[0].kind == MREG_WATCH_CLEAR &&
		 ev[0].generation == gen + 2,
		 "record id %u kind %u gen %llu", ev[0].id, ev[0].kind,
		 (unsigned long long)ev[0].generation);
	MT_CHECK(read(fd, ev, 1) < 0 && errno == EINVAL, "short buffer");
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	MT_CHECK(read(fd, ev, sizeof(ev)) < 0 && errno == EAGAIN, "EAGAIN");
	fcntl(fd, F_SETFL, fl);
	unwatch(id);
	munmap(p, LEN);
	printf("  %-28s one record, generation +2\n", "two changes, one read");
}

static void reuse(void)
{
	char *p = anon(LEN);
	uint64_t g1, g2;
	uint32_t a = watch(p, LEN, &g1), b;

	munmap(p, LEN);
	drain((uint32_t[64]){ 0 }, 64);
	MT_EXPECT_ERR(unwatch(a), 0, "UNWATCH");
	MT_EXPECT_ERR(unwatch(a), -ENOENT, "UNWATCH twice");
	p = anon(LEN);
	b = watch(p, LEN, &g2);
	MT_CHECK(b == a, "slot %u not reused (got %u)", a, b);
	MT_CHECK(g2 > g1, "slot %u reused with generation %llu <= %llu", b,
		 (unsigned long long)g2, (unsigned long long)g1);
	unwatch(b);
	munmap(p, LEN);
}

struct zapper {
	char *p;
	volatile int stop;
};

static void *zap_loop(void *arg)
{
	struct zapper *z = arg;

	while (!z->stop) {
		madvise(z->p, MT_PAGE, MADV_DONTNEED);
		z->p[0] = 1;
	}
	return NULL;
}

/*
 * WATCH racing an invalidation already under way: whenever gens[id] has
 * not moved since WATCH, the page pinned after WATCH must be the page
 * mapped now. A WATCH that took its generation while a zap was running
 * (and so missed it) would show a pinned page that is no longer mapped.
 */
static void watch_race(void)
{
	struct zapper z = { .p = anon(MT_PAGE) };
	unsigned long i, n = mt_env_ulong("MREG_WATCH_RACE", 3000), checked = 0;
	struct mreg_extent *e;
	struct mreg_pin pin;
	uint64_t gen, ne, mapped;
	pthread_t th;
	uint32_t id;

	if (!mt_is_root()) {
		printf("  watch race: skipped (PFNs need root)\n");
		return;
	}
	racing = 1;
	pthread_create(&th, NULL, zap_loop, &z);
	for (i = 0; i < n; i++) {
		id = watch(z.p, MT_PAGE, &gen);
		if (mt_pin(fd, (uintptr_t)z.p, MT_PAGE, 0, 0, &pin) == 0) {
			e = mt_query(fd, pin.out_handle, &ne);
			mapped = mt_pfn(z.p);
			if (e && ne == 1 && gens[id] == gen) {
				MT_CHECK(e[0].phys >> 12 == mapped,
					 "round %lu: pinned pfn %#llx, mapped %#llx, generation unchanged",
					 i, (unsigned long long)(e[0].phys >> 12),
					 (unsigned long long)mapped);
				checked++;
			}
			free(e);
			mt_unpin(fd, pin.out_handle);
		}
		unwatch(id);
		drain((uint32_t[64]){ 0 }, 64);
	}
	z.stop = 1;
	pthread_join(th, NULL);
	racing = 0;
	munmap(z.p, MT_PAGE);
	printf("  %-28s %lu rounds, %lu with the generation unchanged: pinned == mapped\n",
	       "WATCH racing MADV_DONTNEED", n, checked);
}

static void mapping_rules(void)
{
	void *w;

	w = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	MT_CHECK(w == MAP_FAILED, "writable mapping of the generations");
	MT_CHECK(mprotect((void *)gens, map_len, PROT_READ | PROT_WRITE) &&
		 errno == EACCES, "mprotect to writable: %s", strerror(errno));
	w = mmap(NULL, map_len + MT_PAGE, PROT_READ, MAP_SHARED, fd, 0);
	MT_CHECK(w == MAP_FAILED, "mapping beyond the array");
	w = mmap(NULL, MT_PAGE, PROT_READ, MAP_SHARED, fd, MT_PAGE);
	MT_CHECK(w == MAP_FAILED, "mapping at an offset");
}

static void bad_input(void)
{
	char *p = anon(MT_PAGE);
	struct mreg_watch w = { .size = sizeof(w), .addr = (uintptr_t)p,
				.length = 0 };

	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_WATCH, &w), -EINVAL, "length 0");
	w.length = MT_PAGE;
	w.flags = 1;
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_WATCH, &w), -EINVAL, "flags");
	w.flags = 0;
	w.addr = -MT_PAGE;
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_WATCH, &w), -EINVAL, "wraps");
	w.addr = 0xffff888000000000ULL;
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_WATCH, &w), -EINVAL, "kernel");
	MT_EXPECT_ERR(unwatch(0), -ENOENT, "UNWATCH 0");
	MT_EXPECT_ERR(unwatch(1u << 30), -ENOENT, "UNWATCH beyond");
	munmap(p, MT_PAGE);
}

/* max_watches_per_file is read when a file's array is made. */
static void cap(void)
{
	const char *param = "/sys/module/mreg/parameters/max_watches_per_file";
	struct mreg_watch w = { .size = sizeof(w) };
	char old[32] = "16383";
	FILE *f = fopen(param, "r");
	int small, i, ret = 0;
	char *p;

	if (!f || !mt_is_root()) {
		printf("  cap: skipped (no %s or not root)\n", param);
		return;
	}
	MT_CHECK(fgets(old, sizeof(old), f), "read %s", param);
	fclose(f);
	f = fopen(param, "w");
	fputs("3", f);
	fclose(f);
	small = mt_open();
	p = anon(MT_PAGE);
	w.addr = (uintptr_t)p;
	w.length = MT_PAGE;
	for (i = 0; i < 4 && !ret; i++)
		ret = mt_ioctl(small, MREG_IOC_WATCH, &w);
	f = fopen(param, "w");
	fputs(old, f);
	fclose(f);
	MT_CHECK(i == 4 && ret == -ENOSPC, "watch %d: %d, want ENOSPC at 4", i,
		 ret);
	close(small);
	munmap(p, MT_PAGE);
	printf("  %-28s ENOSPC after 3\n", "cap of 3 watches");
}

int main(void)
{
	struct mreg_watch_info wi;
	long page = sysconf(_SC_PAGESIZE);

	fd = mt_open();
	info(&wi);
	MT_CHECK(wi.max_watches > 0 && wi.nr_watches == 0, "info %u %u",
		 wi.max_watches, wi.nr_watches);
	map_len = ((wi.max_watches + 1) * 8 + page - 1) & ~(page - 1);
	gens = mmap(NULL, map_len, PROT_READ, MAP_SHARED, fd, 0);
	MT_CHECK(gens != MAP_FAILED, "mmap generations: %s", strerror(errno));
	one("munmap", ch_munmap, 1, MREG_WATCH_UNMAP);
	one("mmap(MAP_FIXED) over", ch_fixed, 1, MREG_WATCH_UNMAP);
	one("mremap away", ch_mremap, 1, MREG_WATCH_UNMAP);
	one("MADV_DONTNEED", ch_dontneed, 1, MREG_WATCH_CLEAR);
	one("partial munmap", ch_partial, 1, MREG_WATCH_UNMAP);
	one("mprotect round trip", ch_mprotect, 0, -1);
	one("munmap of a neighbour", ch_neighbour, 0, -1);
	memfd_punch();
	fork_pinned();
	coalesced();
	reuse();
	watch_race();
	mapping_rules();
	bad_input();
	cap();
	info(&wi);
	MT_CHECK(wi.nr_watches == 0, "%u watches left", wi.nr_watches);
	MT_CHECK(wi.events[MREG_WATCH_PROTECTION_VMA] > 0,
		 "mprotect not counted as PROTECTION_VMA");
	printf("  events: unmap %llu clear %llu prot_vma %llu prot_page %llu, %llu invalidations\n",
	       (unsigned long long)wi.events[MREG_WATCH_UNMAP],
	       (unsigned long long)wi.events[MREG_WATCH_CLEAR],
	       (unsigned long long)wi.events[MREG_WATCH_PROTECTION_VMA],
	       (unsigned long long)wi.events[MREG_WATCH_PROTECTION_PAGE],
	       (unsigned long long)wi.nr_invalidated);
	close(fd);
	printf("PASS kmod-watch\n");
	return 0;
}
