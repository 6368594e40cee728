/* SPDX-License-Identifier: MIT */
#ifndef MREG_INTERNAL_H
#define MREG_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "mreg/mreg.h"

#define MREG_EXPORT	  __attribute__((visibility("default")))
#define MREG_PRINTF(a, b) __attribute__((format(printf, a, b)))

#define THP_SYSFS "/sys/kernel/mm/transparent_hugepage"

/* log.c */
void mreg_log(int level, const char *fmt, ...) MREG_PRINTF(2, 3);
/* Log @fmt as an error and return @err, so a failure is one line. */
int mreg_fail(int err, const char *fmt, ...) MREG_PRINTF(2, 3);

/* The sizes of the first versions of the output structs: fixed numbers,
 * so that a later, larger struct still takes callers built against
 * these. */
#define MREG_FOLIO_HIST_SIZE_V1	 352u
#define MREG_REGION_INFO_SIZE_V1 56u
/* A caller's size beyond this is not a sizeof() but garbage. */
#define MREG_OUT_SIZE_MAX 4096u

_Static_assert(sizeof(struct mreg_folio_hist) >= MREG_FOLIO_HIST_SIZE_V1,
	       "struct mreg_folio_hist shrank");
_Static_assert(sizeof(struct mreg_region_info) >= MREG_REGION_INFO_SIZE_V1,
	       "struct mreg_region_info shrank");

/*
 * Copy an output struct of @known bytes to @dst, whose first u32 is the
 * size the caller has (checked against the first version's and
 * MREG_OUT_SIZE_MAX by the caller): fill what both know, zero what only
 * the caller does, keep the caller's size.
 */
static inline void mreg_copy_out(void *dst, const void *src, size_t known)
{
	uint32_t size = *(const uint32_t *)dst;
	size_t n = size < known ? size : known;

	memcpy((char *)dst + 4, (const char *)src + 4, n - 4);
	if (size > known)
		memset((char *)dst + known, 0, size - known);
}

/* region.c: why a registering kernel call may have said @err. */
const char *mreg_reg_hint(int err);

/* sysfs.c */
int mreg_sysfs_read(const char *path, char *buf, size_t len);
int mreg_sysfs_write(const char *path, const char *val);
/* The bracketed choice of a "[always] madvise never" file. */
int mreg_sysfs_read_choice(const char *path, char *buf, size_t len);
int mreg_sysfs_read_u64(const char *path, uint64_t *val);
uint64_t mreg_pmd_size(void);
/* Per-size THP counter, e.g. ("anon_fault_alloc", 65536). */
bool mreg_thp_per_size(void);
int mreg_thp_stat(const char *name, uint64_t folio_size, uint64_t *val);
/* Same as mreg_thp_select_anon() for hugepages-<size>/shmem_enabled;
 * the caller holds the policy lock. */
int mreg_thp_select_shmem(uint64_t folio_size);

/*
 * policy.c: the lock every change of the THP or hugetlb policy takes, and
 * the record of the files' original contents that outlives a process
 * killed while the policy is narrowed.
 */
#define MREG_POLICY_DIR	   "/run/mreg"
#define MREG_POLICY_LOCK   MREG_POLICY_DIR "/policy.lock"
#define MREG_POLICY_RECORD MREG_POLICY_DIR "/policy.saved"

/* A policy file and its whole contents as read ("always [madvise]
 * never\n"), which is what putting it back must reproduce. */
struct mreg_policy_file {
	char path[160];
	char raw[128];
};

/* Read @path into @f. */
int mreg_policy_file_read(struct mreg_policy_file *f, const char *path);
/* What to write to get @f->raw back: the bracketed choice, or the number. */
int mreg_policy_file_value(const struct mreg_policy_file *f, char *val,
			   size_t len);
/* Write @f back unless it already reads so. Return: 1 written, 0 it
 * already did, or -errno. */
int mreg_policy_file_put(const struct mreg_policy_file *f);
/*
 * Take the machine-wide lock (a thread holding it may take it again);
 * the first to take it puts back what a dead holder's record saved.
 * Root only: the lock lives in root's 0700 MREG_POLICY_DIR.
 */
int mreg_policy_lock(void);
/* Release one hold; the last removes the record unless a restore under
 * the lock failed (@restored false), which leaves it for the next run. */
void mreg_policy_unlock(bool restored);
/* Before changing @files, with the lock held: add those not saved yet to
 * the record, atomically.  On failure nothing may be changed. */
int mreg_policy_record(const struct mreg_policy_file *files, int nr);

/* folio.c */
int mreg_verify_folios(const void *addr, size_t len,
		       struct mreg_folio_hist *hist);
int mreg_verify_estimate(const char *stat, const uint64_t *alloc_before,
			 uint64_t folio_size, size_t len,
			 struct mreg_folio_hist *hist);
bool mreg_hist_matches(const struct mreg_folio_hist *hist, uint64_t folio,
		       enum mreg_map_level level, uint64_t len);

static inline uint64_t mreg_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline unsigned int mreg_ilog2(uint64_t v)
{
	return 63u - (unsigned int)__builtin_clzll(v);
}

static inline bool mreg_is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* The most one io_uring fixed buffer may cover (the kernel's limit). */
#define MREG_URING_BUFFER_MAX (1ull << 30)

/* region.c: what each backend file provides, behind one ops table. */
struct mreg_backend_ops {
	enum mreg_backend type;
	const char *name;
	/* 1 if usable here (device present, library built in). */
	int (*supported)(void);
	int (*domain_open)(struct mreg_domain *domain,
			   const struct mreg_domain_attr *attr);
	void (*domain_close)(struct mreg_domain *domain);
	/* Register @region; time only the kernel call(s) in region->reg_ns. */
	int (*reg)(struct mreg_domain *domain, struct mreg_region *region);
	int (*dereg)(struct mreg_domain *domain, struct mreg_region *region,
		     uint64_t *ns);
	/* Optional: folio-coalesced extents of a registered region. */
	int (*extents)(const struct mreg_region *region,
		       struct mreg_region_extent *ext, size_t *nr);
	/* Optional: the most bytes one registration may cover in @domain
	 * (0: no limit); region.c splits larger regions into pieces. */
	uint64_t (*piece_max)(const struct mreg_domain *domain);
};

/*
 * Threads may register and deregister on one domain at once.  @lock
 * guards what they share: @nr_regions here and the backend's slot table
 * or IOVA allocator.  It is never held across a registering kernel call,
 * which the kernel serialises itself, so registrations of different
 * regions pin in parallel.
 */
struct mreg_domain {
	const struct mreg_backend_ops *ops;
	void *priv;   /* backend state */
	void *native; /* handle returned by mreg_domain_native() */
	uint32_t max_regions;
	uint32_t access;
	pthread_mutex_t lock;
	uint32_t nr_regions; /* registered or being registered */
	uint32_t nr_caches;  /* registration caches open on it (cache.c) */
	/* Failed registrations whose pieces could not all be undone: kept,
	 * counted in nr_regions, and tried again at close. */
	struct mreg_region *stuck;
};

static inline void mreg_domain_lock(struct mreg_domain *d)
{
	pthread_mutex_lock(&d->lock);
}

static inline void mreg_domain_unlock(struct mreg_domain *d)
{
	pthread_mutex_unlock(&d->lock);
}

struct mreg_region {
	struct mreg_domain *domain;
	struct mreg_region_info info;
	/* What the caller asked for (mreg_region_register_attr()). */
	uint32_t comp_mask; /* enum mreg_region_attr_mask */
	uint32_t access;    /* the region's, or the domain's */
	uint32_t want_slot;
	uint64_t want_iova;
	void *native; /* mreg_region_native() */
	void *priv;   /* backend state */
	/*
	 * A region split into pieces (region.c) is a parent the backends
	 * never see: each piece is a region of its own, registered by the
	 * backend's reg().  @registered says which ones hold their pin.
	 */
	uint32_t nr_pieces;
	struct mreg_region *pieces;
	bool registered;
	struct mreg_region *next_stuck; /* on domain->stuck */
	/* The cache entry owning the region (cache.c), else NULL. */
	struct mreg_cache_entry *cached;
};

/* region.c: mreg_region_deregister() without the check that no cache
 * owns the region. */
int mreg_region_release(struct mreg_region *region, uint64_t *ns);

/* Whether the domain registers into an object the caller owns. */
static inline bool mreg_adopted(const struct mreg_domain_attr *attr)
{
	return attr->comp_mask & MREG_DOMAIN_ATTR_ADOPT;
}

extern const struct mreg_backend_ops mreg_io_uring_ops;
extern const struct mreg_backend_ops mreg_verbs_ops;
extern const struct mreg_backend_ops mreg_vfio_ops;
extern const struct mreg_backend_ops mreg_iommufd_ops;
extern const struct mreg_backend_ops mreg_kmod_ops;
extern const struct mreg_backend_ops mreg_dpdk_ops;

/* iova.c users: a region's IOVA as asked for (fixed, = VA) or any. */
struct mreg_iova;
int mreg_region_iova(struct mreg_domain *d, struct mreg_iova *a,
		     const struct mreg_region *r, uint64_t align,
		     uint64_t *iova);

/* Why /dev/mreg could not be opened: not loaded, or not this user's. */
static inline const char *mreg_kmod_open_hint(int err)
{
	switch (err) {
	case EACCES:
		return "not this user's: with kmod/60-mreg.rules installed it "
		       "is group mreg's (adduser USER mreg, then log in "
		       "again), without it root's";
	case EPERM:
		return "refused by a device cgroup or security module";
	default:
		return "is mreg.ko loaded?";
	}
}

/* What an error of a /dev/mreg call means beyond its errno, or "". */
static inline const char *mreg_kmod_hint(int err)
{
	switch (err) {
	case -EPERM:
		return " (the /dev/mreg file was opened by another process: "
		       "after fork, exec or fd passing, open it again in this "
		       "process, with O_CLOEXEC)";
	case -ENOMEM:
		return " (above RLIMIT_MEMLOCK, which counts every pin of this "
		       "user: all its processes, io_uring rings and iommufds, "
		       "and files not yet closed; or above mreg.ko's per-file "
		       "cap, max_pin_pages_per_file)";
	default:
		return "";
	}
}

#endif
