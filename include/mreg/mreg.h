/* SPDX-License-Identifier: MIT */
/*
 * mreg: buffers backed by verified large folios, and timed DMA registration.
 *
 * Conventions (liburing/libibverbs style):
 *  - Every call returns 0 or a negative errno; objects come back through an
 *    out-parameter. errno is never used to report errors.
 *  - Messages for people go through mreg_set_log(); the last one of the
 *    calling thread is also kept for mreg_last_error().
 *  - Attribute structs start with their own size (or carry a comp_mask), so
 *    old binaries keep working when fields are appended; unknown flags or
 *    mask bits give -EINVAL.  Output structs start with the size the
 *    caller sets.
 *  - Threads: every function may be called from several threads at once,
 *    on the same or different objects, unless its comment says otherwise
 *    (mreg_set_log()).  A domain serialises its own shared state (slot
 *    table, IOVA allocator, region count) with one lock, never held
 *    across the registering kernel call.  Deregistering or closing an
 *    object another thread still uses is the caller's bug, as with
 *    ibv_dereg_mr().
 *  - Ownership: mreg closes only what it opened; an object handed in
 *    with MREG_DOMAIN_ATTR_ADOPT stays the caller's.  mreg(7) has the
 *    whole contract.
 */
#ifndef MREG_MREG_H
#define MREG_MREG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Logging */

enum mreg_log_level {
	MREG_LOG_ERR = 3,
	MREG_LOG_WARN = 4,
	MREG_LOG_INFO = 6,
	MREG_LOG_DEBUG = 7,
};

typedef void (*mreg_log_fn)(void *ctx, int level, const char *msg);

/*
 * Route library messages to @fn (NULL: drop them).  Not thread-safe: set
 * it before other threads use mreg.  @fn itself may be called from
 * several threads at once, mreg's own among them (MREG_REGION_ATTR_THREADS).
 */
void mreg_set_log(mreg_log_fn fn, void *ctx);
/* The last error message of the calling thread ("" if none). */
const char *mreg_last_error(void);

/* Folio verification */

/* Orders 0..MREG_HIST_ORDERS-1: enough for 1 GiB hugetlb with 4 kB pages. */
#define MREG_HIST_ORDERS 20

enum mreg_verify_method {
	MREG_VERIFY_NONE = 0,
	/* pagemap + kpageflags, page by page (needs CAP_SYS_ADMIN). */
	MREG_VERIFY_EXACT = 1,
	/* Deltas of the per-size THP fault/alloc counters: an estimate. */
	MREG_VERIFY_ESTIMATE = 2,
};

/*
 * Output structs begin with their size, which the caller sets to
 * sizeof(): the library fills what it knows up to that size and zeroes
 * the rest, so either side can be the newer one.
 */
struct mreg_folio_hist {
	uint32_t size;	    /* in: sizeof(struct mreg_folio_hist) */
	uint32_t method;    /* enum mreg_verify_method */
	uint32_t page_size; /* base page size in bytes */
	uint32_t reserved;
	/* Folios of each order that back (part of) the range. */
	uint64_t folios[MREG_HIST_ORDERS];
	/* Bytes of the range that sit in a folio of each order. */
	uint64_t bytes[MREG_HIST_ORDERS];
	/* Bytes mapped by PMD (AnonHugePages/ShmemPmdMapped in smaps). */
	uint64_t pmd_mapped_bytes;
	/* Bytes with no page present. */
	uint64_t unbacked_bytes;
};

/*
 * Verify which folios back [addr, addr+len) of the calling process.
 * Exact when pagemap PFNs and /proc/kpageflags are readable, else -EPERM.
 * @hist->size must be set (-EINVAL below the first version's size).
 * Return: 0 or -errno.
 */
int mreg_verify_range(const void *addr, size_t len,
		      struct mreg_folio_hist *hist);
/*
 * The same for [addr, addr+len) of process @pid (0: the caller), read
 * from /proc/<pid>/pagemap: the folios of a buffer that another program
 * owns (a VM's RAM in QEMU, fio's I/O buffers). Needs what reading its
 * pagemap and /proc/kpageflags need (ptrace access, CAP_SYS_ADMIN for
 * PFNs, root for kpageflags), else -EPERM; -ESRCH when @pid is gone or
 * exits during the walk. Since MREG_0.5.
 */
int mreg_verify_pid_range(pid_t pid, uint64_t addr, size_t len,
			  struct mreg_folio_hist *hist);
/*
 * Render @hist into @buf as one line, largest folios first, e.g.
 * "2M:128 pmd-mapped:256M (exact)" or "64K:4096 (exact)".  Like snprintf:
 * at most @buflen bytes including the NUL; buflen 0 (buf may be NULL)
 * writes nothing.  Return: the length of the whole text, without the NUL.
 */
int mreg_folio_hist_format(const struct mreg_folio_hist *hist, char *buf,
			   size_t buflen);

/* THP policy (sysfs), used by the allocator and by callers such as bench */

/* Anonymous mTHP/THP sizes the running kernel offers, ascending. */
int mreg_thp_sizes(uint64_t *sizes, int max);

struct mreg_thp_policy;
/*
 * Snapshot every hugepages-<size>/{enabled,shmem_enabled} and the globals.
 * As root, take the policy lock (the one MREG_BUF_SET_POLICY takes), held
 * until the snapshot is restored, and save it in /run/mreg, whence the next
 * run puts it back if this process is killed first.
 */
int mreg_thp_policy_save(struct mreg_thp_policy **out);
/* Write the snapshot back, release its lock and free it.
 * Return: 0 or the first error. */
int mreg_thp_policy_restore(struct mreg_thp_policy *policy);

enum mreg_thp_mode {
	MREG_THP_NEVER = 0,
	MREG_THP_MADVISE = 1,
	MREG_THP_ALWAYS = 2,
};

/*
 * Make @folio_size the only anonymous THP size the kernel may allocate
 * (in @mode); folio_size 4096 turns every size off. Needs root; takes the
 * policy lock (again, in the thread holding a snapshot).
 */
int mreg_thp_select_anon(uint64_t folio_size, enum mreg_thp_mode mode);

/* Buffers */

enum mreg_backing {
	MREG_BACKING_ANON = 0,	  /* private anonymous memory */
	MREG_BACKING_SHMEM = 1,	  /* shared anonymous (shmem), any mTHP size */
	MREG_BACKING_MEMFD = 2,	  /* memfd, mapped shared: 4 kB or PMD size */
	MREG_BACKING_HUGETLB = 3, /* hugetlb pages of folio_size */
};

enum mreg_map_level {
	MREG_MAP_DEFAULT = 0, /* PMD for PMD-sized folios, else PTE */
	MREG_MAP_PTE = 1,     /* mapped by PTEs, also a PMD-sized folio */
	MREG_MAP_PMD = 2,
};

enum mreg_buf_flags {
	/* Hand out a buffer even when the folios are not the ones asked for. */
	MREG_BUF_ALLOW_FALLBACK = 1u << 0,
	/* The default, kept for source compatibility: sysfs is left alone. */
	MREG_BUF_KEEP_POLICY = 1u << 1,
	/*
	 * Root only: narrow the system-wide THP policy to folio_size (or top
	 * up the hugetlb pool) while the buffer faults in, and put it back
	 * before returning, on every path.  Serialised across threads and
	 * processes (/run/mreg/policy.lock, root's), so concurrent
	 * MREG_BUF_SET_POLICY allocations never see each other's policy;
	 * an allocation without the flag takes no lock and may fault in
	 * under one.  Without it mreg writes nothing to sysfs and gets
	 * what the system's policy gives.  What is narrowed is saved to
	 * /run/mreg/policy.saved first: if the process is killed, the next
	 * one to take the lock puts it back.  The lock and the record are
	 * per /run: containers sharing the host's sysfs with their own /run
	 * must not use the flag at the same time.
	 */
	MREG_BUF_SET_POLICY = 1u << 2,
};

struct mreg_buf_attr {
	uint32_t size;	     /* sizeof(struct mreg_buf_attr) */
	uint32_t flags;	     /* enum mreg_buf_flags */
	uint64_t length;     /* bytes; rounded up to folio_size */
	uint64_t folio_size; /* 4096, an offered mTHP size, or PMD size */
	uint32_t backing;    /* enum mreg_backing */
	uint32_t map_level;  /* enum mreg_map_level */
};

struct mreg_buf;

/*
 * Allocate, populate and verify a buffer. Unless MREG_BUF_ALLOW_FALLBACK,
 * a buffer not fully backed by the requested folios is freed and -EAGAIN
 * returned, with the histogram and the sysfs setting that stood in the
 * way in the message.  Above the base page size the buffer is
 * MADV_HUGEPAGE while it faults in, so a size's THP knob at madvise is
 * enough (unless a larger size is on: the kernel takes the largest that
 * fits an aligned range).  Below PMD size it is then marked
 * MADV_NOHUGEPAGE, so khugepaged cannot collapse it into PMD-sized
 * folios behind the caller's back: it keeps its layout while it lives
 * (reclaim, migration or a split of its own can still change it;
 * mreg_verify_range() measures it again).
 * Return: 0 or -errno.
 */
int mreg_buf_alloc(const struct mreg_buf_attr *attr, struct mreg_buf **out);
void mreg_buf_free(struct mreg_buf *buf);
void *mreg_buf_addr(const struct mreg_buf *buf);
size_t mreg_buf_length(const struct mreg_buf *buf);
/* memfd backing only: the file descriptor, else -1. */
int mreg_buf_fd(const struct mreg_buf *buf);
/* The histogram measured when the buffer was allocated. */
const struct mreg_folio_hist *mreg_buf_hist(const struct mreg_buf *buf);
/* 1 when every byte sits in a folio of the requested size and mapping. */
int mreg_buf_verified(const struct mreg_buf *buf);

/* Registration: a domain (ring, PD, container, IOAS, ...) and its regions */

enum mreg_backend {
	MREG_BACKEND_IO_URING = 1,
	MREG_BACKEND_VERBS = 2,
	MREG_BACKEND_VFIO = 3,
	MREG_BACKEND_IOMMUFD = 4,
	MREG_BACKEND_KMOD = 5,
	MREG_BACKEND_DPDK = 6,
};

/*
 * What mreg_domain_native() gives for a dpdk domain: the container for
 * rte_vfio_container_dma_map() and the device fd (BARs, interrupts) of the
 * device mreg set up, -1 when the domain adopted the application's.
 */
struct mreg_dpdk_native {
	int container_fd;
	int device_fd;
};

/* Built into this library and usable on this system: 1, else 0. */
int mreg_backend_supported(enum mreg_backend backend);
const char *mreg_backend_name(enum mreg_backend backend);
/* Parse "io_uring", "verbs", ...: the backend, or -EINVAL. */
int mreg_backend_parse(const char *name);

enum mreg_domain_attr_mask {
	MREG_DOMAIN_ATTR_DEVICE = 1u << 0,
	MREG_DOMAIN_ATTR_MAX_REGIONS = 1u << 1,
	MREG_DOMAIN_ATTR_ACCESS = 1u << 2,
	/* Register into the caller's own object (native, fd, ioas_id). */
	MREG_DOMAIN_ATTR_ADOPT = 1u << 3,
	/* io_uring: the first slot of the buffer table mreg may use. */
	MREG_DOMAIN_ATTR_SLOT_BASE = 1u << 4,
};

enum mreg_access {
	MREG_ACCESS_LOCAL_WRITE = 1u << 0,
	MREG_ACCESS_REMOTE_READ = 1u << 1,
	MREG_ACCESS_REMOTE_WRITE = 1u << 2,
};

/*
 * A domain either opens its own kernel object (a ring, a PD on the first
 * or named RDMA device, a VFIO container with the device's group, an
 * IOAS with the device attached, a /dev/mreg file) and closes it in
 * mreg_domain_close(), or, with MREG_DOMAIN_ATTR_ADOPT, registers into
 * one the caller opened, which mreg never closes and which must outlive
 * the domain:
 *
 *   io_uring  native: struct io_uring *.  mreg uses slots slot_base ..
 *             slot_base + max_regions - 1 of the ring's buffer table.
 *             A table the caller registered stays, and so do its other
 *             slots, which mreg never touches; mreg cannot learn its
 *             size, so slot_base + max_regions must not exceed it (else
 *             a registration past its end fails with -EINVAL).  A ring
 *             without a table gets a sparse one of slot_base +
 *             max_regions slots, and mreg unregisters that whole table
 *             at close, with whatever the caller put in its other slots.
 *             Domains on one ring need disjoint slots: mreg refuses an
 *             overlap among its own domains in the process (-EBUSY) but
 *             cannot see anyone else's.  mreg only calls
 *             io_uring_register(2) on the ring, never its SQ or CQ.
 *   verbs     native: struct ibv_pd *; MRs are registered on it.
 *   vfio      fd: a type1 container with its group attached and the IOMMU
 *             type set; IOVAs come from its VFIO_IOMMU_GET_INFO ranges.
 *   iommufd   fd: /dev/iommu, ioas_id: an IOAS with a device attached.
 *   kmod      fd: an open /dev/mreg.
 *   dpdk      fd: a VFIO container of the application's EAL, as DPDK
 *             names it (RTE_VFIO_DEFAULT_CONTAINER_FD, -1, for the
 *             default one), its device set up; rte_eal_init() has run.
 *
 * Without ADOPT a dpdk domain needs device (a PCI address bound to
 * vfio-pci): mreg creates a DPDK VFIO container, binds the device's group
 * to it, sets the device up and releases both at close.  If the EAL is
 * not running mreg starts it first, once per process, for a library
 * user: --no-pci --no-huge -m 8 --no-shconf --no-telemetry
 * --iova-mode=va --log-level=error, lcore 0 on the calling thread's CPUs
 * (whose affinity is kept).  It creates DPDK's runtime directory
 * (/var/run/dpdk/rte as root) and leaves no file in it.  That EAL stays
 * for the life of the process, as an EAL cannot be started twice (nor
 * again after a failed start: the error stays), with its interrupt
 * thread, and loads the PMDs DPDK's packages installed as any DPDK
 * program does; an application that wants its own EAL starts it before
 * the first dpdk domain, with the same librte_eal.so.23 (an EAL linked
 * statically or of another version is invisible to mreg).  DPDK's
 * external memory is per process: a range can be in one dpdk domain at a
 * time (-EEXIST), and DPDK has 128 memseg lists per process and 256 user
 * maps per container, one of each per region or piece; VFIO's
 * dma_entry_limit counts the mappings too.
 *
 * comp_mask says which fields are valid, so the struct can grow; a
 * slot_base or native set without its bit (SLOT_BASE, ADOPT) is -EINVAL.
 */
struct mreg_domain_attr {
	uint32_t backend;   /* enum mreg_backend */
	uint32_t comp_mask; /* enum mreg_domain_attr_mask: valid fields */
	/* DEVICE: verbs: RDMA device name; vfio: PCI address or /dev/vfio/N;
	 * iommufd and dpdk: PCI address bound to vfio-pci. */
	const char *device;
	uint32_t max_regions; /* io_uring: buffer table slots (default 64) */
	uint32_t access;      /* enum mreg_access (default LOCAL_WRITE) */
	void *native;	      /* ADOPT: io_uring and verbs */
	int fd;		      /* ADOPT: vfio, iommufd, kmod, dpdk (-1 is
			       * DPDK's default container: set it, 0 is not) */
	uint32_t ioas_id;     /* ADOPT: iommufd */
	uint32_t slot_base;   /* SLOT_BASE: io_uring (default 0) */
};

struct mreg_domain;
struct mreg_region;

int mreg_domain_open(const struct mreg_domain_attr *attr,
		     struct mreg_domain **out);
/* Return: -EBUSY while regions are registered. */
int mreg_domain_close(struct mreg_domain *domain);
/*
 * The backend's own handle: struct io_uring *, struct ibv_pd *, int *
 * (the VFIO container, iommufd or /dev/mreg fd), struct mreg_dpdk_native *.
 */
void *mreg_domain_native(struct mreg_domain *domain);

/*
 * Register the range [addr, addr+len): any bytes for verbs, whole pages
 * (page-aligned addr and len) for the other backends, see struct
 * mreg_region_attr.  The backend's kernel call alone is timed (dpdk: its
 * rte_extmem_register() and DMA map; with THREADS the wall time).  On
 * failure nothing stays registered or pinned (a piece that cannot even be
 * undone stays with the domain, which retries at close).
 * Return: 0 or -errno, with a message naming the bad argument.
 */
int mreg_region_register(struct mreg_domain *domain, void *addr, size_t len,
			 struct mreg_region **out);
enum mreg_region_attr_mask {
	/* Access of this region instead of the domain's (verbs: the MR's
	 * access flags; VFIO, iommufd and kmod: the device may write only
	 * with LOCAL_WRITE or REMOTE_WRITE; io_uring: unused; dpdk: DPDK
	 * maps read and write whatever is asked). */
	MREG_REGION_ATTR_ACCESS = 1u << 0,
	/* VFIO/iommufd/dpdk: map at iova, which must be free.  dpdk: DPDK
	 * is told that IOVA, but an EAL running IOVA as VA takes VA for
	 * IOVA in rte_mem_virt2iova(), so only IOVA = VA serves DPDK's own
	 * drivers; another IOVA is for a device the caller drives. */
	MREG_REGION_ATTR_IOVA = 1u << 1,
	/* VFIO/iommufd: map at the region's own address (IOVA = VA), which
	 * is what dpdk does by default. */
	MREG_REGION_ATTR_IOVA_VA = 1u << 2,
	/* io_uring: the first buffer index, which must be free. */
	MREG_REGION_ATTR_SLOT = 1u << 3,
	/* Pieces of at most piece_size bytes, see below. */
	MREG_REGION_ATTR_PIECE_SIZE = 1u << 4,
	/* Register the pieces on this many threads at once, see below. */
	MREG_REGION_ATTR_THREADS = 1u << 5,
};

/*
 * What to register and how.  @addr and @length are byte-granular for
 * verbs (the MR covers exactly those bytes); every other backend pins
 * whole pages and takes only page-aligned ranges (-EINVAL otherwise, the
 * message saying so), as its kernel interface does.
 *
 * Pieces: a region larger than one kernel object may cover is split,
 * transparently, into pieces, each its own MR, mapping or fixed buffer,
 * cut at multiples of the piece size in the address space; their keys,
 * IOVAs and indexes come from mreg_region_pieces().  Without
 * PIECE_SIZE the backend's limit applies: verbs on soft-RoCE (rxe)
 * 256 MiB, since rxe in 6.12 keeps 16 bytes per 4 kB page of an MR in one
 * kmalloc, which cannot exceed 4 MiB (1 GiB of MR) and is an order-10
 * allocation at that size; io_uring splits at 1 GiB, the kernel's limit
 * per buffer, by itself; the others need no split.  PIECE_SIZE (a
 * multiple of the page size) replaces that limit: larger on a kernel
 * without rxe's, smaller to spread the work.  A split VFIO, iommufd or
 * dpdk region has an IOVA per piece (contiguous only with a fixed
 * IOVA); SLOT cannot be combined with a split.
 *
 * THREADS (1..MREG_REGION_THREADS_MAX): the pieces are registered on
 * that many threads at once, the caller's among them; mreg starts the
 * others and joins them before returning (a region of one piece is
 * registered on the caller's thread; an io_uring ring made with
 * IORING_SETUP_SINGLE_ISSUER refuses other threads: -EEXIST).  Without
 * PIECE_SIZE the region is cut into one piece per thread (rounded up to 2 MiB,
 * within the backend's limit).  reg_ns is then the wall time of the whole
 * registration, thread start-up included.  Whether it is faster depends
 * on where the kernel serialises (README: "Registration at scale"):
 * measured on two CPUs, verbs, iommufd and kmod gain 1.1-1.8x; VFIO
 * (the container's iommu->lock), io_uring (uring_lock) and dpdk (DPDK's
 * own spinlock around the map) serialise and lose, which is why mreg
 * registers on the caller's thread unless asked.
 */
#define MREG_REGION_THREADS_MAX 256

struct mreg_region_attr {
	uint32_t size;	    /* sizeof(struct mreg_region_attr) */
	uint32_t comp_mask; /* enum mreg_region_attr_mask: valid fields */
	void *addr;
	uint64_t length;
	uint32_t access; /* ACCESS: enum mreg_access */
	uint32_t slot;	 /* SLOT: io_uring buffer index */
	uint64_t iova;	 /* IOVA: device address */
	uint64_t reserved;
	/* Since MREG_0.3: */
	uint64_t piece_size; /* PIECE_SIZE: bytes, a multiple of the page */
	uint32_t threads;    /* THREADS: 1..MREG_REGION_THREADS_MAX */
	uint32_t reserved2;
};

int mreg_region_register_attr(struct mreg_domain *domain,
			      const struct mreg_region_attr *attr,
			      struct mreg_region **out);
/*
 * Deregister and free @region; *@ns gets the timed kernel call (or NULL).
 * A region in pieces whose deregistration fails midway keeps the pieces
 * not yet undone: call again.
 */
int mreg_region_deregister(struct mreg_region *region, uint64_t *ns);
/*
 * The backend's own handle of @region: struct ibv_mr * for verbs, NULL
 * for the others, whose handle is a number in mreg_region_info (io_uring
 * index, VFIO/iommufd/dpdk iova, mreg.ko handle in index).  A region in
 * pieces gives its first piece's (see mreg_region_pieces()).  Valid until
 * the region is deregistered.
 */
void *mreg_region_native(const struct mreg_region *region);

struct mreg_region_info {
	uint32_t size; /* in: sizeof(struct mreg_region_info) */
	uint32_t reserved;
	uint64_t addr;
	uint64_t length;
	/* iova, lkey, rkey and index of a region in pieces are its first
	 * piece's: see mreg_region_pieces() for the others. */
	uint64_t iova;	 /* VFIO/iommufd/dpdk: device address */
	uint64_t reg_ns; /* time of the registering kernel call(s) */
	uint32_t lkey;	 /* verbs */
	uint32_t rkey;	 /* verbs */
	uint32_t index;	 /* io_uring: first buffer index */
	/* Kernel objects used: the pieces of mreg_region_pieces() (io_uring
	 * fixed buffers, MRs, mappings); kmod: its folio extents. */
	uint32_t nr_slices;
};

/* @info->size must be set; see struct mreg_folio_hist for the rule. */
int mreg_region_query(const struct mreg_region *region,
		      struct mreg_region_info *info);

/* A physically contiguous piece of a registration, within one folio. */
struct mreg_region_extent {
	uint64_t offset; /* from the region's start */
	uint64_t length;
	uint64_t phys;	/* 0 unless the caller has CAP_SYS_ADMIN */
	uint32_t order; /* folio order holding the extent */
	uint32_t reserved;
};

/*
 * Folio-coalesced extents of @region (kmod backend): in, *@nr entries of
 * @ext; out, the number of extents. -EMSGSIZE with *@nr set when @ext is
 * too small; -EOPNOTSUPP for backends that do not report extents.
 */
int mreg_region_extents(const struct mreg_region *region,
			struct mreg_region_extent *ext, size_t *nr);

/* One kernel object of a registration: an MR, a mapping, a fixed buffer. */
struct mreg_region_piece {
	uint64_t offset; /* from the region's start */
	uint64_t length;
	uint64_t iova;	/* VFIO/iommufd/dpdk: device address of offset */
	uint32_t lkey;	/* verbs */
	uint32_t rkey;	/* verbs */
	uint32_t index; /* io_uring: buffer index; kmod: handle */
	uint32_t reserved;
	void *native; /* verbs: struct ibv_mr *, else NULL */
};

/*
 * The pieces of @region in address order (io_uring: one per fixed
 * buffer): in, *@nr entries of @pieces; out, the number of pieces.
 * -EMSGSIZE with *@nr set when @pieces is too small.  info.nr_slices of
 * mreg_region_query() is that number too, but for kmod (its extents).
 */
int mreg_region_pieces(const struct mreg_region *region,
		       struct mreg_region_piece *pieces, size_t *nr);

/*
 * Registration cache: many transfers from the same buffers register once.
 *
 * mreg_cache_get() returns a registered region of the cache's domain that
 * covers [addr, addr+len) (whole pages around it, and any current entries
 * the range overlaps: a miss registers their union, as UCX's rcache does)
 * and describes the memory mapped there *now*: an entry whose memory
 * changed since it was registered (munmap, mremap, mmap(MAP_FIXED),
 * shmat, MADV_DONTNEED, brk, a hole punched in its file, ...) is never
 * returned, however the change was made (libc, raw syscall, another
 * thread), with the KMOD monitor; UFFD's exceptions are below. Who tells
 * the cache is its monitor:
 *
 *  - KMOD: mreg.ko's watches (include/uapi/mreg.h): an mmu interval
 *    notifier per entry bumps a generation the cache reads from a
 *    read-only mapping, so a hit makes no system call. Exact for every
 *    change the kernel makes to the mapping; it also invalidates on some
 *    events that leave the same pages mapped (THP split, khugepaged, KSM
 *    or reclaim giving up on a pinned page), counted in the stats.
 *  - UFFD: without the module, userfaultfd's non-cooperative events
 *    (UNMAP, REMAP, REMOVE) on the cached ranges, read by a thread of the
 *    cache. Blind, as the kernel sends no event there, to
 *    shmat(SHM_REMAP) over a range and hole punches or truncation of a
 *    file mapped shared; and to one window: another thread mapping and
 *    filling an address while a munmap() of it is still in flight in a
 *    first thread. See mreg_cache_open(3) for the list and its costs.
 *  - AUTO: KMOD when /dev/mreg can be opened, else UFFD.
 *
 * A range the monitor cannot watch (UFFD: SysV shm, files other than
 * shmem and hugetlbfs) is registered for that get alone, deregistered at
 * its put, and counted as uncached.
 *
 * A region from the cache belongs to the cache: give it back with
 * mreg_cache_put(), exactly once per successful get (holders of one
 * entry share one region object, so an extra put cannot be told from
 * another holder's and drops its reference), never with
 * mreg_region_deregister() (-EBUSY). A region in pieces (io_uring: 1 GiB
 * per fixed buffer) must be used piece by piece, see
 * mreg_region_pieces(): a cached entry may be larger than what was asked.
 * Unreferenced entries stay registered, least recently used first out,
 * within max_entries and max_bytes, and leave early when the domain is
 * full (-ENOSPC from io_uring's table) and when their memory changes; the
 * pins of memory unmapped under an idle entry go at the cache's next
 * call. mreg_domain_close() refuses (-EBUSY) while a cache is open on
 * the domain.
 *
 * Threads: every call may be made from any thread at once, except
 * mreg_cache_close(), which must not race the others on its cache. A
 * process that forks must not use its parent's cache in the child (as
 * with the verbs objects it registers into).
 */
enum mreg_cache_monitor {
	MREG_CACHE_MONITOR_AUTO,
	MREG_CACHE_MONITOR_KMOD,
	MREG_CACHE_MONITOR_UFFD,
};

enum mreg_cache_attr_mask {
	/* Use the caller's open /dev/mreg (kmod_fd) for KMOD; never closed. */
	MREG_CACHE_ATTR_KMOD_FD = 1u << 0,
};

struct mreg_cache_attr {
	uint32_t size;	      /* sizeof(struct mreg_cache_attr) */
	uint32_t comp_mask;   /* enum mreg_cache_attr_mask */
	uint32_t monitor;     /* enum mreg_cache_monitor */
	uint32_t max_entries; /* idle entries kept (0: 256) */
	uint64_t max_bytes;   /* idle bytes kept registered (0: 1 GiB) */
	int kmod_fd;	      /* KMOD_FD */
	uint32_t reserved;
};

struct mreg_cache_stats {
	uint32_t size;	  /* in: sizeof(struct mreg_cache_stats) */
	uint32_t monitor; /* enum mreg_cache_monitor in use */
	uint64_t hits;
	uint64_t misses;
	uint64_t invalidated; /* entries dropped: their memory changed */
	uint64_t evicted;     /* idle entries dropped by the limits */
	uint64_t retries;     /* registrations redone: changed meanwhile */
	uint64_t entries;     /* registered now, held or idle */
	uint64_t bytes;	      /* bytes of those */
	uint64_t held;	      /* entries with a reference now */
	uint64_t uncached;    /* gets the monitor could not watch: the
			       * region was registered for this get alone */
	/* Monitor events on cached ranges per enum mreg_watch_kind of
	 * include/uapi/mreg.h (KMOD), the ignored kinds included; UFFD
	 * counts UNMAP (munmap, MAP_FIXED), CLEAR (MADV_DONTNEED/REMOVE)
	 * and, in slot 8, REMAP (mremap). */
	uint64_t events[16];
};

struct mreg_cache;

int mreg_cache_open(struct mreg_domain *domain,
		    const struct mreg_cache_attr *attr,
		    struct mreg_cache **out);
/* Return: -EBUSY while regions from the cache are held. */
int mreg_cache_close(struct mreg_cache *cache);
int mreg_cache_get(struct mreg_cache *cache, const void *addr, size_t len,
		   struct mreg_region **out);
int mreg_cache_put(struct mreg_cache *cache, struct mreg_region *region);
/* Deregister every idle entry now. */
int mreg_cache_flush(struct mreg_cache *cache);
/* @stats->size must be set; see struct mreg_folio_hist for the rule. */
int mreg_cache_stats(struct mreg_cache *cache, struct mreg_cache_stats *stats);

#ifdef __cplusplus
}
#endif

#endif
