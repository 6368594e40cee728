// SPDX-License-Identifier: MIT
/*
 * Registration cache (mreg.h, "Registration cache").
 *
 * Entries live in an interval tree keyed by their page-aligned range. An
 * entry is current while its watch's generation equals the one read when
 * the watch was set, before the registration pinned anything: a change
 * of the mapping after that bumps it, so a hit checks one load. Events
 * only reclaim stale entries early; correctness does not wait for them.
 *
 * One mutex guards the tree, the LRU list of idle entries and the
 * counters. It is not held across a registering or deregistering call:
 * misses register unlocked and then check their watch again, and entries
 * leaving the cache are collected on a list destroyed after unlocking.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "itree.h"
#include "monitor.h"

#define CACHE_DEFAULT_ENTRIES 256u
#define CACHE_DEFAULT_BYTES   (1ull << 30)
/* A registration redone this often while its memory kept changing
 * gives up with -EAGAIN. */
#define CACHE_RETRIES	    4
#define CACHE_STATS_SIZE_V1 208u
#define CACHE_ATTR_SIZE_V1  32u

_Static_assert(sizeof(struct mreg_cache_stats) >= CACHE_STATS_SIZE_V1,
	       "struct mreg_cache_stats shrank");

struct mreg_cache_entry {
	struct mreg_itree_node node;
	struct mreg_region *region;
	struct mreg_cache *cache;
	uint32_t id;  /* the monitor's watch; 0: uncached, never linked */
	uint64_t gen; /* its generation when set */
	uint32_t refs;
	bool linked; /* in the tree: hits may find it */
	/* The LRU list while linked and idle; the reap list once leaving. */
	struct mreg_cache_entry *prev, *next;
};

struct mreg_cache {
	struct mreg_domain *domain;
	struct mreg_monitor mon;
	pthread_mutex_t lock;
	struct mreg_itree tree;
	struct mreg_cache_entry **by_id; /* watch id -> entry */
	struct mreg_cache_entry lru;	 /* sentinel: oldest at lru.next */
	uint64_t seen_events;		 /* gens[0] when last drained */
	uint64_t max_bytes, idle_bytes;
	uint32_t max_entries, idle;
	uint64_t page;
	struct mreg_cache_stats st;
};

static void lru_del(struct mreg_cache_entry *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	e->prev = e->next = NULL;
}

static void lru_add_tail(struct mreg_cache *c, struct mreg_cache_entry *e)
{
	e->prev = c->lru.prev;
	e->next = &c->lru;
	c->lru.prev->next = e;
	c->lru.prev = e;
}

static uint64_t entry_len(const struct mreg_cache_entry *e)
{
	return e->node.end - e->node.start;
}

static bool entry_current(const struct mreg_cache *c,
			  const struct mreg_cache_entry *e)
{
	return e->id && mreg_monitor_gen(&c->mon, e->id) == e->gen;
}

static void idle_del(struct mreg_cache *c, struct mreg_cache_entry *e)
{
	lru_del(e);
	c->idle--;
	c->idle_bytes -= entry_len(e);
}

/*
 * Take @e out of the tree, for good: it is destroyed now if idle (onto
 * @reap), else by the mreg_cache_put() that drops its last reference.
 */
static void entry_unlink(struct mreg_cache *c, struct mreg_cache_entry *e,
			 struct mreg_cache_entry **reap)
{
	if (!e->linked)
		return;
	mreg_itree_remove(&c->tree, &e->node);
	e->linked = false;
	if (e->refs)
		return;
	idle_del(c, e);
	e->next = *reap;
	*reap = e;
}

/* Under the lock: the registration and watch are undone after it. */
static void entry_forget(struct mreg_cache *c, struct mreg_cache_entry *e)
{
	if (e->id)
		c->by_id[e->id] = NULL;
	c->st.entries--;
	c->st.bytes -= entry_len(e);
}

static void entry_destroy(struct mreg_cache *c, struct mreg_cache_entry *e)
{
	int ret;

	e->region->cached = NULL;
	ret = mreg_region_release(e->region, NULL);
	if (ret)
		mreg_log(MREG_LOG_WARN,
			 "cache: deregistering 0x%llx len %llu failed (%d): it "
			 "stays registered",
			 (unsigned long long)e->node.start,
			 (unsigned long long)entry_len(e), ret);
	if (e->id)
		c->mon.ops->unwatch(&c->mon, e->id);
	free(e);
}

static void reap(struct mreg_cache *c, struct mreg_cache_entry *list)
{
	struct mreg_cache_entry *next;

	for (; list; list = next) {
		next = list->next;
		entry_destroy(c, list);
	}
}

static void reap_locked_list(struct mreg_cache *c,
			     struct mreg_cache_entry *list)
{
	struct mreg_cache_entry *e;

	for (e = list; e; e = e->next)
		entry_forget(c, e);
}

/* Idle entries beyond the limits, oldest first. */
static void evict_over_limits(struct mreg_cache *c,
			      struct mreg_cache_entry **reap_list)
{
	struct mreg_cache_entry *e;

	while (c->idle > c->max_entries || c->idle_bytes > c->max_bytes) {
		e = c->lru.next;
		c->st.evicted++;
		entry_unlink(c, e, reap_list);
	}
}

/* Stale entries the monitor reported: dropped before a lookup trips on
 * them, so their pins go early. */
static void drain_events(struct mreg_cache *c,
			 struct mreg_cache_entry **reap_list)
{
	uint64_t seq = mreg_monitor_gen(&c->mon, 0);
	struct mreg_cache_entry *e;
	uint32_t ids[64];
	int n, i;

	if (seq == c->seen_events)
		return;
	c->seen_events = seq;
	do {
		n = c->mon.ops->events(&c->mon, ids, 64);
		for (i = 0; i < n; i++) {
			if (!ids[i] || ids[i] > c->mon.max_watches)
				continue;
			e = c->by_id[ids[i]];
			if (e && e->linked && !entry_current(c, e)) {
				c->st.invalidated++;
				entry_unlink(c, e, reap_list);
			}
		}
	} while (n == 64);
}

struct lookup {
	struct mreg_cache *c;
	struct mreg_cache_entry *stale[8];
	int nr_stale;
};

static bool lookup_current(struct mreg_itree_node *n, void *ctx)
{
	struct mreg_cache_entry *e = (struct mreg_cache_entry *)n;
	struct lookup *l = ctx;

	if (entry_current(l->c, e))
		return true;
	if (l->nr_stale < 8)
		l->stale[l->nr_stale++] = e;
	return false;
}

/* Under the lock: a current entry covering [a, b), referenced, or NULL. */
static struct mreg_cache_entry *cache_hit(struct mreg_cache *c, uint64_t a,
					  uint64_t b,
					  struct mreg_cache_entry **reap_list)
{
	struct lookup l = {.c = c};
	struct mreg_cache_entry *e;
	struct mreg_itree_node *n;
	int i;

	n = mreg_itree_find_covering(&c->tree, a, b, lookup_current, &l);
	for (i = 0; i < l.nr_stale; i++) {
		c->st.invalidated++;
		entry_unlink(c, l.stale[i], reap_list);
	}
	if (!n)
		return NULL;
	e = (struct mreg_cache_entry *)n;
	if (!e->refs++) {
		idle_del(c, e);
		c->st.held++;
	}
	c->st.hits++;
	return e;
}

/*
 * Watch, then register, then check the watch: a change of the memory
 * before the watch was set is in what the registration pinned, one after
 * it bumps the generation.
 */
static int entry_create(struct mreg_cache *c, uint64_t a, uint64_t b,
			struct mreg_cache_entry **out)
{
	struct mreg_cache_entry *e = calloc(1, sizeof(*e));
	int ret;

	if (!e)
		return mreg_fail(-ENOMEM, "cache: out of memory");
	e->cache = c;
	e->node.start = a;
	e->node.end = b;
	ret = c->mon.ops->watch(&c->mon, a, b - a, &e->id, &e->gen);
	if (ret == -EOPNOTSUPP)
		e->id = 0;
	else if (ret)
		goto fail;
	if (e->id > c->mon.max_watches) {
		ret = mreg_fail(-EPROTO, "cache: watch id %u beyond %u", e->id,
				c->mon.max_watches);
		goto fail_unwatch;
	}
	ret = mreg_region_register(c->domain, (void *)(uintptr_t)a, b - a,
				   &e->region);
	if (ret)
		goto fail_unwatch;
	*out = e;
	return 0;
fail_unwatch:
	if (e->id)
		c->mon.ops->unwatch(&c->mon, e->id);
fail:
	free(e);
	return ret;
}

/* Under the lock: the new entry, held once, joins the tree (an uncached
 * one does not: its put destroys it). */
static void entry_publish(struct mreg_cache *c, struct mreg_cache_entry *e)
{
	e->region->cached = e;
	e->refs = 1;
	if (e->id) {
		e->linked = true;
		mreg_itree_insert(&c->tree, &e->node);
		c->by_id[e->id] = e;
	} else {
		c->st.uncached++;
	}
	c->st.entries++;
	c->st.bytes += entry_len(e);
	c->st.held++;
	c->st.misses++;
}

/* One idle entry out, for room in the domain: false if none is idle. */
static bool evict_oldest_idle(struct mreg_cache *c)
{
	struct mreg_cache_entry *reap_list = NULL;
	bool any;

	pthread_mutex_lock(&c->lock);
	any = c->lru.next != &c->lru;
	if (any) {
		c->st.evicted++;
		entry_unlink(c, c->lru.next, &reap_list);
	}
	reap_locked_list(c, reap_list);
	pthread_mutex_unlock(&c->lock);
	reap(c, reap_list);
	return any;
}

struct merge {
	struct mreg_cache *c;
	uint64_t a, b;
	struct mreg_cache_entry *idle[16];
	int nr_idle;
};

static bool merge_one(struct mreg_itree_node *n, void *ctx)
{
	struct mreg_cache_entry *e = (struct mreg_cache_entry *)n;
	struct merge *m = ctx;

	if (!entry_current(m->c, e))
		return false;
	if (e->node.start < m->a)
		m->a = e->node.start;
	if (e->node.end > m->b)
		m->b = e->node.end;
	if (!e->refs && m->nr_idle < 16)
		m->idle[m->nr_idle++] = e;
	return false;
}

/*
 * A miss registers the union of the range and the current entries it
 * overlaps, as UCX's rcache merges: slices of one buffer converge on one
 * entry over the buffer, and later slices hit. Every part of the union
 * is mapped (each is covered by the range or by a current entry), and
 * the idle entries it subsumes leave.
 */
static void merge_range(struct mreg_cache *c, uint64_t *a, uint64_t *b)
{
	struct merge m = {.c = c, .a = *a, .b = *b};
	struct mreg_cache_entry *reap_list = NULL;
	int i;

	pthread_mutex_lock(&c->lock);
	mreg_itree_find_overlapping(&c->tree, *a, *b, merge_one, &m);
	for (i = 0; i < m.nr_idle; i++)
		entry_unlink(c, m.idle[i], &reap_list);
	reap_locked_list(c, reap_list);
	pthread_mutex_unlock(&c->lock);
	reap(c, reap_list);
	*a = m.a;
	*b = m.b;
}

static int cache_miss(struct mreg_cache *c, uint64_t a, uint64_t b,
		      struct mreg_cache_entry **out)
{
	struct mreg_cache_entry *e = NULL, *reap_list = NULL;
	int ret, tries;

	merge_range(c, &a, &b);
	for (tries = 0; tries < CACHE_RETRIES; tries++) {
		ret = entry_create(c, a, b, &e);
		/* The domain is full (io_uring's table): idle entries go,
		 * oldest first, before the caller hears of it. */
		while (ret == -ENOSPC && evict_oldest_idle(c))
			ret = entry_create(c, a, b, &e);
		if (ret)
			return ret;
		pthread_mutex_lock(&c->lock);
		if (!e->id || entry_current(c, e)) {
			entry_publish(c, e);
			drain_events(c, &reap_list);
			reap_locked_list(c, reap_list);
			pthread_mutex_unlock(&c->lock);
			reap(c, reap_list);
			*out = e;
			return 0;
		}
		c->st.retries++;
		pthread_mutex_unlock(&c->lock);
		entry_destroy(c, e);
	}
	return mreg_fail(-EAGAIN,
			 "cache: get 0x%llx len %llu: the memory changed "
			 "during each of %d registrations",
			 (unsigned long long)a, (unsigned long long)(b - a),
			 CACHE_RETRIES);
}

MREG_EXPORT int mreg_cache_get(struct mreg_cache *c, const void *addr,
			       size_t len, struct mreg_region **out)
{
	struct mreg_cache_entry *e = NULL, *reap_list = NULL;
	uint64_t a, b;
	int ret;

	if (!c || !out)
		return mreg_fail(-EINVAL, "cache get: %s is NULL",
				 !c ? "cache" : "out");
	if (!len || (uintptr_t)addr + len < (uintptr_t)addr)
		return mreg_fail(-EINVAL, "cache get: len %zu at %p: %s", len,
				 addr, !len ? "empty" : "wraps around");
	a = (uintptr_t)addr & ~(c->page - 1);
	b = ((uintptr_t)addr + len + c->page - 1) & ~(c->page - 1);
	if (c->mon.ops->sync)
		c->mon.ops->sync(&c->mon);
	pthread_mutex_lock(&c->lock);
	drain_events(c, &reap_list);
	e = cache_hit(c, a, b, &reap_list);
	reap_locked_list(c, reap_list);
	pthread_mutex_unlock(&c->lock);
	reap(c, reap_list);
	if (!e) {
		ret = cache_miss(c, a, b, &e);
		if (ret)
			return ret;
	}
	*out = e->region;
	return 0;
}

MREG_EXPORT int mreg_cache_put(struct mreg_cache *c, struct mreg_region *r)
{
	struct mreg_cache_entry *e, *reap_list = NULL;

	if (!c || !r)
		return mreg_fail(-EINVAL, "cache put: %s is NULL",
				 !c ? "cache" : "region");
	pthread_mutex_lock(&c->lock);
	e = r->cached;
	if (!e || e->cache != c || !e->refs) {
		pthread_mutex_unlock(&c->lock);
		return mreg_fail(
			-EINVAL,
			"cache put: region 0x%llx is not held from this cache",
			(unsigned long long)r->info.addr);
	}
	if (!--e->refs) {
		c->st.held--;
		if (e->linked && entry_current(c, e)) {
			lru_add_tail(c, e);
			c->idle++;
			c->idle_bytes += entry_len(e);
			evict_over_limits(c, &reap_list);
		} else {
			if (e->linked) {
				c->st.invalidated++;
				mreg_itree_remove(&c->tree, &e->node);
				e->linked = false;
			}
			e->next = reap_list;
			reap_list = e;
		}
	}
	reap_locked_list(c, reap_list);
	pthread_mutex_unlock(&c->lock);
	reap(c, reap_list);
	return 0;
}

MREG_EXPORT int mreg_cache_flush(struct mreg_cache *c)
{
	struct mreg_cache_entry *reap_list = NULL;

	if (!c)
		return mreg_fail(-EINVAL, "cache flush: cache is NULL");
	pthread_mutex_lock(&c->lock);
	while (c->lru.next != &c->lru)
		entry_unlink(c, c->lru.next, &reap_list);
	reap_locked_list(c, reap_list);
	pthread_mutex_unlock(&c->lock);
	reap(c, reap_list);
	return 0;
}

MREG_EXPORT int mreg_cache_stats(struct mreg_cache *c,
				 struct mreg_cache_stats *st)
{
	struct mreg_cache_stats now;

	if (!c || !st)
		return mreg_fail(-EINVAL, "cache stats: %s is NULL",
				 !c ? "cache" : "stats");
	if (st->size < CACHE_STATS_SIZE_V1 || st->size > MREG_OUT_SIZE_MAX)
		return mreg_fail(-EINVAL, "cache stats: size %u (need >= %u)",
				 st->size, CACHE_STATS_SIZE_V1);
	struct mreg_cache_entry *reap_list = NULL;

	if (c->mon.ops->sync)
		c->mon.ops->sync(&c->mon);
	pthread_mutex_lock(&c->lock);
	drain_events(c, &reap_list);
	reap_locked_list(c, reap_list);
	now = c->st;
	pthread_mutex_unlock(&c->lock);
	reap(c, reap_list);
	if (c->mon.ops->counts)
		c->mon.ops->counts(&c->mon, now.events);
	now.size = st->size;
	mreg_copy_out(st, &now, sizeof(now));
	return 0;
}

static const struct mreg_monitor_ops *monitor_ops(uint32_t monitor)
{
	switch (monitor) {
	case MREG_CACHE_MONITOR_KMOD:
		return &mreg_monitor_kmod_ops;
	case MREG_CACHE_MONITOR_UFFD:
		return &mreg_monitor_uffd_ops;
	default:
		return NULL;
	}
}

/* AUTO: the module where it can be opened (or was given), else uffd. */
static int monitor_open(struct mreg_cache *c, const struct mreg_cache_attr *a)
{
	uint32_t want = a->monitor;
	int ret;

	if (want == MREG_CACHE_MONITOR_AUTO)
		want = (a->comp_mask & MREG_CACHE_ATTR_KMOD_FD) ||
				       !access("/dev/mreg", R_OK | W_OK)
			       ? MREG_CACHE_MONITOR_KMOD
			       : MREG_CACHE_MONITOR_UFFD;
	c->mon.ops = monitor_ops(want);
	if (!c->mon.ops)
		return mreg_fail(-EINVAL, "cache open: monitor %u unknown",
				 a->monitor);
	ret = c->mon.ops->open(&c->mon, a);
	if (ret)
		return ret;
	c->st.monitor = want;
	c->by_id = calloc((size_t)c->mon.max_watches + 1, sizeof(*c->by_id));
	if (!c->by_id) {
		c->mon.ops->close(&c->mon);
		return mreg_fail(-ENOMEM, "cache: out of memory");
	}
	c->seen_events = mreg_monitor_gen(&c->mon, 0);
	return 0;
}

static int check_attr(const struct mreg_domain *d,
		      const struct mreg_cache_attr *a)
{
	if (!d)
		return mreg_fail(-EINVAL, "cache open: domain is NULL");
	if (!a)
		return mreg_fail(-EINVAL, "cache open: attr is NULL");
	if (a->size < CACHE_ATTR_SIZE_V1 || a->size > MREG_OUT_SIZE_MAX)
		return mreg_fail(-EINVAL,
				 "cache open: attr size %u (need >= %u)",
				 a->size, CACHE_ATTR_SIZE_V1);
	if (a->comp_mask & ~MREG_CACHE_ATTR_KMOD_FD)
		return mreg_fail(-EINVAL, "cache open: comp_mask 0x%x unknown",
				 a->comp_mask);
	if (a->monitor > MREG_CACHE_MONITOR_UFFD)
		return mreg_fail(-EINVAL, "cache open: monitor %u unknown",
				 a->monitor);
	if ((a->comp_mask & MREG_CACHE_ATTR_KMOD_FD) &&
	    a->monitor == MREG_CACHE_MONITOR_UFFD)
		return mreg_fail(-EINVAL,
				 "cache open: kmod_fd given with monitor UFFD");
	if (a->reserved)
		return mreg_fail(-EINVAL, "cache open: reserved is %u, not 0",
				 a->reserved);
	return 0;
}

MREG_EXPORT int mreg_cache_open(struct mreg_domain *d,
				const struct mreg_cache_attr *attr,
				struct mreg_cache **out)
{
	struct mreg_cache_attr a = {0};
	struct mreg_cache *c;
	int ret;

	ret = check_attr(d, attr);
	if (ret)
		return ret;
	if (!out)
		return mreg_fail(-EINVAL, "cache open: out is NULL");
	memcpy(&a, attr, attr->size < sizeof(a) ? attr->size : sizeof(a));
	c = calloc(1, sizeof(*c));
	if (!c)
		return mreg_fail(-ENOMEM, "cache: out of memory");
	c->domain = d;
	c->page = (uint64_t)sysconf(_SC_PAGESIZE);
	c->max_entries = a.max_entries ? a.max_entries : CACHE_DEFAULT_ENTRIES;
	c->max_bytes = a.max_bytes ? a.max_bytes : CACHE_DEFAULT_BYTES;
	c->lru.next = c->lru.prev = &c->lru;
	c->st.size = sizeof(c->st);
	pthread_mutex_init(&c->lock, NULL);
	ret = monitor_open(c, &a);
	if (ret) {
		pthread_mutex_destroy(&c->lock);
		free(c);
		return ret;
	}
	mreg_domain_lock(d);
	d->nr_caches++;
	mreg_domain_unlock(d);
	*out = c;
	return 0;
}

MREG_EXPORT int mreg_cache_close(struct mreg_cache *c)
{
	int ret;

	if (!c)
		return 0;
	pthread_mutex_lock(&c->lock);
	ret = c->st.held ? -EBUSY : 0;
	pthread_mutex_unlock(&c->lock);
	if (ret)
		return mreg_fail(ret, "cache close: %llu regions still held",
				 (unsigned long long)c->st.held);
	/* Stale entries left the tree and the LRU when their last put ran. */
	mreg_cache_flush(c);
	c->mon.ops->close(&c->mon);
	mreg_domain_lock(c->domain);
	c->domain->nr_caches--;
	mreg_domain_unlock(c->domain);
	free(c->by_id);
	pthread_mutex_destroy(&c->lock);
	free(c);
	return 0;
}
