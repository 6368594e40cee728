/* SPDX-License-Identifier: MIT */
/*
 * What a registration cache's monitor provides (src/cache.c), one file per
 * monitor in src/monitors/. Both monitors present the same model: an
 * array of 64-bit generations, gens[id] per watch, gens[0] bumped when an
 * event is queued, and the ids of invalidated watches from events().
 */
#ifndef MREG_MONITOR_H
#define MREG_MONITOR_H

#include <stdbool.h>
#include <stdint.h>

#include "mreg/mreg.h"

struct mreg_monitor;

struct mreg_monitor_ops {
	enum mreg_cache_monitor type;
	const char *name;
	int (*open)(struct mreg_monitor *m, const struct mreg_cache_attr *attr);
	void (*close)(struct mreg_monitor *m);
	/* Watch [start, start+len): *@id and its generation now.
	 * -EOPNOTSUPP: this monitor cannot watch the range (the cache
	 * registers it uncached), without an error logged. */
	int (*watch)(struct mreg_monitor *m, uint64_t start, uint64_t len,
		     uint32_t *id, uint64_t *gen);
	void (*unwatch)(struct mreg_monitor *m, uint32_t id);
	/* Up to @max ids invalidated since the last call; 0 when none. */
	int (*events)(struct mreg_monitor *m, uint32_t *ids, int max);
	/* Counts per kind into @events[16]. */
	void (*counts)(struct mreg_monitor *m, uint64_t *events);
	/* Optional: wait until events already taken from the kernel are
	 * applied to the generations (a lookup calls it first). */
	void (*sync)(struct mreg_monitor *m);
};

struct mreg_monitor {
	const struct mreg_monitor_ops *ops;
	const uint64_t *gens;
	uint32_t max_watches;
	void *priv;
};

static inline uint64_t mreg_monitor_gen(const struct mreg_monitor *m,
					uint32_t id)
{
	/* Pairs with the store-release of the bump (module or uffd thread). */
	return __atomic_load_n(&m->gens[id], __ATOMIC_ACQUIRE);
}

extern const struct mreg_monitor_ops mreg_monitor_kmod_ops;
extern const struct mreg_monitor_ops mreg_monitor_uffd_ops;

#endif /* MREG_MONITOR_H */
