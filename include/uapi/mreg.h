/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * mreg: /dev/mreg ioctl ABI, shared by kmod/ (mreg.ko) and the mreg library.
 *
 * Conventions, as in include/uapi/linux/iommufd.h:
 *  - Every ioctl takes one struct whose first __u32 is @size, the number of
 *    bytes userspace knows about (set it to sizeof(struct)).  The kernel
 *    reads it with copy_struct_from_user(): a shorter struct from an old
 *    binary gets zeros in the new fields, a longer struct from a new binary
 *    is accepted when its unknown tail is zero (else E2BIG).
 *  - The second __u32 is @flags.  Unknown flag bits give EINVAL.
 *  - Fields named __reserved must be zero, else EINVAL.
 *  - User pointers are passed as __aligned_u64; there are no pointers,
 *    longs or size_t, so 32-bit and 64-bit layouts are identical.
 *  - Output fields are written back for the first @size bytes only, and
 *    only by the ioctls that have outputs (INFO, BENCH, PIN, QUERY, WATCH,
 *    WATCH_INFO).
 *    UNPIN, SET_LIMIT and READ never write the struct back, so they do
 *    not fail with EFAULT after having done their work.
 *  - The module is built for 64-bit kernels >= 6.12 only.
 *
 * Errors common to every ioctl: EFAULT (bad argument pointer), EINVAL
 * (@size smaller than the first version of the struct, unknown flags,
 * non-zero reserved fields), E2BIG (non-zero bytes beyond what this module
 * knows, or @size above MREG_MAX_STRUCT_SIZE), ENOTTY (unknown ioctl
 * number), EPERM (the file belongs to another process, see below), EINTR
 * (fatal signal while pinning, reading, querying or watching).
 *
 * Security model:
 *  - Who may open: the module creates /dev/mreg mode 0600 (root); the udev
 *    rule shipped with it (60-mreg.rules) gives it to group "mreg", 0660.
 *  - A file belongs to the process (mm) that opened it.  Its pins are of
 *    that process's memory and only its threads may use the file: every
 *    ioctl, read(2) and mmap(2) from another mm fails with EPERM, and
 *    poll(2) reports EPOLLERR.  Nothing crosses fork, exec or fd passing
 *    but the ability to close: a forked child, the image after exec and a
 *    process the fd was passed to cannot read, query, unpin or watch.
 *    Open the device after fork, and with O_CLOEXEC.
 *  - Pinned pages are charged to the opener's user (user_struct locked_vm,
 *    shared with io_uring and iommufd) against the caller's
 *    RLIMIT_MEMLOCK, unless the caller has CAP_IPC_LOCK, and to the
 *    owner's mm->pinned_vm for visibility (VmPin).  A pin is charged for
 *    the whole folios it holds, as io_uring charges them: one pinned page
 *    of a 2 MiB THP holds, and costs, 2 MiB.  The charge stays with the
 *    user until the pin goes, whoever closes the file: exec or fork cannot
 *    launder it.  Each file's generation array (128 KiB by default, see
 *    Watches) is charged to locked_vm the same way.
 *  - Physical addresses (QUERY) are shown when the opener had
 *    CAP_SYS_ADMIN at open, as /proc/pid/pagemap decides.
 *  - MREG_IOC_BENCH needs CAP_SYS_ADMIN, as mm/gup_test.c (debugfs) does.
 *  - Watches are capped per file (max_watches_per_file) and per user
 *    across all files (max_watches_per_user).
 */
#ifndef _UAPI_MREG_H
#define _UAPI_MREG_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define MREG_TYPE	0xB7
#define MREG_CMD_BASE	0x80
#define MREG_ABI_VERSION	1
/*
 * Largest @size of an ioctl struct, E2BIG above: the kernel scans the tail
 * it does not know for zeros, and no struct will need more.
 */
#define MREG_MAX_STRUCT_SIZE	4096
/* Largest QUERY @extent_size; EINVAL above. */
#define MREG_EXTENT_MAX_SIZE	256

enum {
	MREG_CMD_INFO = MREG_CMD_BASE,
	MREG_CMD_SET_LIMIT,
	MREG_CMD_BENCH,
	MREG_CMD_PIN,
	MREG_CMD_QUERY,
	MREG_CMD_UNPIN,
	MREG_CMD_READ,
	MREG_CMD_WATCH,
	MREG_CMD_UNWATCH,
	MREG_CMD_WATCH_INFO,
};

/**
 * enum mreg_info_caps - what this module and caller may use
 * @MREG_CAP_PHYS: QUERY reports physical addresses (the opener had
 *                 CAP_SYS_ADMIN at open); without it mreg_extent.phys is 0.
 * @MREG_CAP_IPC_LOCK: the caller has CAP_IPC_LOCK, so RLIMIT_MEMLOCK is not
 *                     enforced (the per-file cap still is).
 * @MREG_CAP_MEMFD: MREG_PIN_FLAG_MEMFD and MREG_BENCH_MEMFD_PIN_FOLIOS are
 *                  available (memfd_pin_folios(), kernel >= 6.11); without
 *                  it both fail with EOPNOTSUPP.
 */
enum mreg_info_caps {
	MREG_CAP_PHYS = 1 << 0,
	MREG_CAP_IPC_LOCK = 1 << 1,
	MREG_CAP_MEMFD = 1 << 2,
};

/**
 * struct mreg_info - ioctl(MREG_IOC_INFO)
 * @size: sizeof(struct mreg_info)
 * @flags: must be 0
 * @abi_version: out, MREG_ABI_VERSION of the module
 * @page_size: out, PAGE_SIZE of the kernel
 * @caps: out, bitmask of enum mreg_info_caps for this caller (probed
 *        without audit records)
 * @__reserved: must be 0
 * @file_max_pages: out, cap on pages pinned through this open file
 * @file_pinned_pages: out, pages charged to this open file now: the
 *                     whole folios its pins hold
 * @memlock_limit_pages: out, RLIMIT_MEMLOCK of the caller in pages
 * @mm_pinned_pages: out, mm->pinned_vm of the caller in pages
 * @user_locked_pages: out, pages charged to the opener's user against
 *                     RLIMIT_MEMLOCK, by every mreg file, io_uring ring
 *                     and iommufd of that user (user_struct locked_vm)
 *
 * Describes the module and the accounting state seen by this file.
 * @caps' MREG_CAP_PHYS is the opener's; MREG_CAP_IPC_LOCK the caller's.
 */
struct mreg_info {
	__u32 size;
	__u32 flags;
	__u32 abi_version;
	__u32 page_size;
	__u32 caps;
	__u32 __reserved;
	__aligned_u64 file_max_pages;
	__aligned_u64 file_pinned_pages;
	__aligned_u64 memlock_limit_pages;
	__aligned_u64 mm_pinned_pages;
	__aligned_u64 user_locked_pages;
};

#define MREG_IOC_INFO _IO(MREG_TYPE, MREG_CMD_INFO)

/**
 * struct mreg_set_limit - ioctl(MREG_IOC_SET_LIMIT)
 * @size: sizeof(struct mreg_set_limit)
 * @flags: must be 0
 * @max_pages: new cap on the pages pinned through this open file
 *
 * Lowers (or raises up to the module parameter max_pin_pages_per_file) the
 * per-file cap.  A process can so bound what a library may pin.
 *
 * Checked under the same lock as the per-file cap check of PIN and BENCH,
 * so a concurrent PIN either counts in "pinned now" or sees the new cap.
 *
 * Errors: EINVAL if @max_pages is above the module parameter or below the
 * pages this file holds pinned now.
 */
struct mreg_set_limit {
	__u32 size;
	__u32 flags;
	__aligned_u64 max_pages;
};

#define MREG_IOC_SET_LIMIT _IO(MREG_TYPE, MREG_CMD_SET_LIMIT)

/**
 * enum mreg_bench_method - the GUP call that MREG_IOC_BENCH times
 * @MREG_BENCH_GUP_FAST: get_user_pages_fast(), put with put_page()
 * @MREG_BENCH_PUP_FAST: pin_user_pages_fast()
 * @MREG_BENCH_PUP: pin_user_pages() (slow path) under mmap_read_lock
 * @MREG_BENCH_PUP_REMOTE: pin_user_pages_remote() on current->mm under
 *                         mmap_read_lock
 * @MREG_BENCH_MEMFD_PIN_FOLIOS: memfd_pin_folios() on @memfd from
 *                               @memfd_offset; put with unpin_folios()
 * @MREG_BENCH_NR_METHODS: number of methods
 */
enum mreg_bench_method {
	MREG_BENCH_GUP_FAST,
	MREG_BENCH_PUP_FAST,
	MREG_BENCH_PUP,
	MREG_BENCH_PUP_REMOTE,
	MREG_BENCH_MEMFD_PIN_FOLIOS,
	MREG_BENCH_NR_METHODS,
};

/**
 * enum mreg_bench_flags - flags of struct mreg_bench
 * @MREG_BENCH_FLAG_WRITE: FOLL_WRITE (else a read-only get/pin)
 * @MREG_BENCH_FLAG_LONGTERM: FOLL_LONGTERM; only for the pin_user_pages*
 *                            methods (EINVAL with GUP_FAST; implied by
 *                            memfd_pin_folios)
 */
enum mreg_bench_flags {
	MREG_BENCH_FLAG_WRITE = 1 << 0,
	MREG_BENCH_FLAG_LONGTERM = 1 << 1,
};

#define MREG_BENCH_NR_ORDERS 32

/**
 * struct mreg_bench - ioctl(MREG_IOC_BENCH), the mm/gup_test.c equivalent
 * @size: sizeof(struct mreg_bench)
 * @flags: enum mreg_bench_flags
 * @method: enum mreg_bench_method
 * @pages_per_call: pages asked per GUP call (folios per call for
 *                  memfd_pin_folios); 0 means all in one call
 * @memfd: for MREG_BENCH_MEMFD_PIN_FOLIOS, a shmem memfd (hugetlbfs:
 *         EOPNOTSUPP, see struct mreg_pin),
 *         else must be 0
 * @__reserved: must be 0
 * @addr: user address, page aligned (ignored for memfd_pin_folios: 0)
 * @length: bytes, page aligned, > 0, at most the per-file cap
 * @memfd_offset: for MREG_BENCH_MEMFD_PIN_FOLIOS, page-aligned file offset
 * @get_ns: out, time of the get/pin loop in ns (ktime_get)
 * @put_ns: out, time of the put/unpin in ns
 * @nr_pages: out, pages actually got/pinned (memfd: pages covered)
 * @nr_folios: out, distinct folios among them
 * @order_hist: out, @order_hist[o] counts the distinct folios of order o
 *
 * Pins the range once, as gup_test does, then releases it; nothing stays
 * pinned.  The folio census is taken between get and put, outside both
 * timings.  Needs CAP_SYS_ADMIN (EPERM), as gup_test does.  Because the
 * pins may be long-term, the call is charged like a PIN while it runs:
 * @length pages to the per-file cap and to the opener's locked_vm against
 * RLIMIT_MEMLOCK (unless the caller has CAP_IPC_LOCK), uncharged on
 * return.
 *
 * For memfd_pin_folios the memfd must be open for reading, and for
 * writing too with MREG_BENCH_FLAG_WRITE (see struct mreg_pin about
 * seals).
 *
 * Errors: EINVAL (bad method, flags, alignment, overflow, @length 0 or
 * above the per-file cap, not a memfd), EBADF (@memfd not open), EACCES
 * (@memfd open without the access), ENOMEM (RLIMIT_MEMLOCK or per-file
 * cap exceeded with the pins of this file and mm, or no memory), EFAULT
 * (a GUP call pinned nothing: unmapped, PROT_NONE for the access,
 * VM_IO/VM_PFNMAP), and any error returned by the first GUP call.  A
 * later short call, or a fatal signal, ends the loop and @nr_pages says
 * how far it got.
 */
struct mreg_bench {
	__u32 size;
	__u32 flags;
	__u32 method;
	__u32 pages_per_call;
	__s32 memfd;
	__u32 __reserved;
	__aligned_u64 addr;
	__aligned_u64 length;
	__aligned_u64 memfd_offset;
	__aligned_u64 get_ns;
	__aligned_u64 put_ns;
	__aligned_u64 nr_pages;
	__aligned_u64 nr_folios;
	__aligned_u64 order_hist[MREG_BENCH_NR_ORDERS];
};

#define MREG_IOC_BENCH _IO(MREG_TYPE, MREG_CMD_BENCH)

/**
 * enum mreg_pin_flags - flags of struct mreg_pin
 * @MREG_PIN_FLAG_MEMFD: pin file pages of @memfd from @addr (a file offset)
 *                       with memfd_pin_folios(), one pin per folio
 * @MREG_PIN_FLAG_READONLY: pin without FOLL_WRITE; for a memfd, allows
 *                          an O_RDONLY file
 */
enum mreg_pin_flags {
	MREG_PIN_FLAG_MEMFD = 1 << 0,
	MREG_PIN_FLAG_READONLY = 1 << 1,
};

/**
 * struct mreg_pin - ioctl(MREG_IOC_PIN)
 * @size: sizeof(struct mreg_pin)
 * @flags: enum mreg_pin_flags
 * @memfd: with MREG_PIN_FLAG_MEMFD a shmem memfd, else 0; a hugetlbfs
 *         one is refused (EOPNOTSUPP): memfd_pin_folios() fills its holes
 *         from the huge pages other users reserved.  Pin hugetlb memory
 *         through its mapping.
 * @__reserved: must be 0
 * @addr: user virtual address, or with MREG_PIN_FLAG_MEMFD the file offset;
 *        page aligned
 * @length: bytes, page aligned, > 0
 * @out_handle: out, non-zero handle, valid for this open file
 * @out_nr_extents: out, number of extents QUERY returns for the pin
 * @out_nr_pages: out, pages pinned (@length / page_size)
 * @out_nr_folios: out, folios in the pin: for memfd the folios pinned, else
 *                 the changes of folio along the range plus one
 *
 * Pins the range long-term and keeps it pinned until MREG_IOC_UNPIN, close
 * of the last reference to the file, or process exit.  Anonymous and file
 * mappings are pinned with pin_user_pages_fast(FOLL_WRITE | FOLL_LONGTERM)
 * in large batches; memfds with memfd_pin_folios().  The whole folios the
 * pin holds are charged to the opener's user against RLIMIT_MEMLOCK unless
 * the caller has CAP_IPC_LOCK, and always to the owner's mm->pinned_vm
 * and to the per-file cap (see "Security model").  On unpin, pages of a
 * writable pin are marked dirty (memfd folios too).
 *
 * The handle becomes valid only once the reply has been copied out: if
 * it cannot be (EFAULT), nothing stays pinned and the handle is unused.
 *
 * A memfd must be open for reading, and for writing too unless
 * MREG_PIN_FLAG_READONLY.  Its seals are not checked: the kernel does not
 * export them to modules, so a writable pin of an F_SEAL_WRITE or
 * F_SEAL_FUTURE_WRITE memfd opened O_RDWR is not refused; owners of
 * sealed memfds must not hand out O_RDWR descriptors to untrusted code.
 *
 * Errors: EINVAL (unaligned, zero or overflowing range, bad flags, memfd
 * not shmem, range past end of memfd), EBADF (@memfd not open),
 * EACCES (@memfd open without the access the pin needs, or another
 * user's file open read-only), ENOMEM (RLIMIT_MEMLOCK or per-file cap
 * exceeded, or no memory; nothing stays pinned), EFAULT (part of the
 * range is unmapped, PROT_NONE, VM_IO or VM_PFNMAP; a writable pin of a
 * shared file mapping whose filesystem tracks dirty pages (not shmem,
 * hugetlbfs); the reply could not be written; nothing stays pinned),
 * EOPNOTSUPP (the range maps fsdax files, which cannot be pinned
 * long-term; a hugetlbfs memfd), EOVERFLOW (a page of the range is
 * pinned so many times already that its refcount is past half its
 * range), EAGAIN (a memfd folio being cleared was replaced meanwhile),
 * ENOSPC (handle space exhausted), EINTR.
 *
 * A memfd folio that fallocate() left uninitialised is cleared before it
 * is pinned, as read() would see it: READ never shows stale memory.
 */
struct mreg_pin {
	__u32 size;
	__u32 flags;
	__s32 memfd;
	__u32 __reserved;
	__aligned_u64 addr;
	__aligned_u64 length;
	__u32 out_handle;
	__u32 out_nr_extents;
	__aligned_u64 out_nr_pages;
	__aligned_u64 out_nr_folios;
};

#define MREG_IOC_PIN _IO(MREG_TYPE, MREG_CMD_PIN)

/**
 * struct mreg_extent - one folio-coalesced piece of a pin
 * @offset: byte offset of the extent within the pinned range
 * @length: bytes; the extent lies within one folio and is physically
 *          contiguous
 * @phys: physical address of the first byte, or 0 without MREG_CAP_PHYS
 * @order: folio_order() of the folio holding the extent
 * @__reserved: 0
 */
struct mreg_extent {
	__aligned_u64 offset;
	__aligned_u64 length;
	__aligned_u64 phys;
	__u32 order;
	__u32 __reserved;
};

/**
 * struct mreg_query - ioctl(MREG_IOC_QUERY)
 * @size: sizeof(struct mreg_query)
 * @flags: must be 0
 * @handle: handle from MREG_IOC_PIN
 * @__reserved: must be 0
 * @extents: user pointer to an array of struct mreg_extent
 * @nr_extents: in, entries in @extents; out, extents of the pin
 * @extent_size: sizeof(struct mreg_extent) as userspace knows it (>= 32);
 *               the kernel writes @extent_size bytes per entry: its own
 *               struct, then zeros for the bytes it does not know
 * @__reserved2: must be 0
 *
 * Fills @extents in increasing @offset order.  Consecutive pages are in
 * one extent while they are in the same folio and physically consecutive.
 * An UNPIN racing with QUERY removes the handle at once; the pages stay
 * pinned until QUERY returns.
 *
 * Errors: ENOENT (unknown handle), EMSGSIZE (@nr_extents too small: it is
 * set to the number needed, and nothing else is written), EINVAL
 * (@extent_size < 32 or > MREG_EXTENT_MAX_SIZE), EFAULT (@extents not writable), EINTR.
 */
struct mreg_query {
	__u32 size;
	__u32 flags;
	__u32 handle;
	__u32 __reserved;
	__aligned_u64 extents;
	__aligned_u64 nr_extents;
	__u32 extent_size;
	__u32 __reserved2;
};

#define MREG_IOC_QUERY _IO(MREG_TYPE, MREG_CMD_QUERY)

/**
 * struct mreg_unpin - ioctl(MREG_IOC_UNPIN)
 * @size: sizeof(struct mreg_unpin)
 * @flags: must be 0
 * @handle: handle from MREG_IOC_PIN
 * @__reserved: must be 0
 *
 * Releases the pin and its RLIMIT_MEMLOCK charge.  The handle is not
 * reused until the handle space wraps.  The handle is gone on return; if
 * a QUERY or READ of it is still running, the pages are unpinned and
 * uncharged when that call returns.  A handle that a concurrent PIN has
 * not returned yet is unknown (ENOENT).
 *
 * Errors: ENOENT (unknown or already unpinned handle).
 */
struct mreg_unpin {
	__u32 size;
	__u32 flags;
	__u32 handle;
	__u32 __reserved;
};

#define MREG_IOC_UNPIN _IO(MREG_TYPE, MREG_CMD_UNPIN)

/**
 * struct mreg_read - ioctl(MREG_IOC_READ)
 * @size: sizeof(struct mreg_read)
 * @flags: must be 0
 * @handle: handle from MREG_IOC_PIN
 * @__reserved: must be 0
 * @offset: byte offset within the pinned range
 * @length: bytes to copy
 * @dst: user pointer receiving the bytes
 *
 * Copies bytes out through the pinned pages (kmap_local_page()), that is
 * what a device doing DMA to the pinned pages sees, whatever the process
 * has mapped at the address since.  @length 0 is valid and copies
 * nothing (the handle and @offset are still checked).  The copy holds a
 * reference on the pin, no lock: a slow @dst blocks no other ioctl.
 *
 * The copy is of the pages as they are at copy time, not a snapshot:
 * pinned pages that are still mapped writable can be stored to while
 * READ runs (it may sleep in a fault on @dst), so a word written
 * concurrently can come out with some bytes from before the store and
 * some from after, as with a DMA read or a memcpy() beside a writer.
 *
 * Errors: ENOENT (unknown handle), EINVAL (@offset + @length beyond the
 * pin or overflowing), EFAULT (@dst not writable), EINTR.
 */
struct mreg_read {
	__u32 size;
	__u32 flags;
	__u32 handle;
	__u32 __reserved;
	__aligned_u64 offset;
	__aligned_u64 length;
	__aligned_u64 dst;
};

#define MREG_IOC_READ _IO(MREG_TYPE, MREG_CMD_READ)

/*
 * Watches: exact invalidation for registration caches.
 *
 * A watch is an mmu_interval_notifier over a range of the caller's memory.
 * Each watch has a slot in a generation array that userspace maps
 * read-only with mmap(PROT_READ, MAP_SHARED) of /dev/mreg at offset 0:
 * __u64 gens[1 + max_watches], gens[id] for watch @id, gens[0] bumped
 * whenever an event is queued.  When the kernel changes what the range
 * maps (munmap, mremap, MAP_FIXED or shmat over it, MADV_DONTNEED, a
 * hole punched in its file, page replacement, migration, exit), the
 * module bumps gens[id] in the context making the change, before the page
 * tables change, and queues one struct mreg_watch_event (coalesced per
 * watch until read) for read(2) and poll(2) on the file.  When the change
 * is a system call, the bump is so ordered before its return: the thread
 * that made it, and any thread that synchronises with that thread
 * afterwards, sees it with a plain load, no system call.  The slots are
 * 64-bit: a 32-bit process must load them with one 64-bit atomic load.
 *
 * Events that cannot change the pages a range maps are ignored and only
 * counted: protection changes (mprotect, fork's write-protection for COW,
 * NUMA hinting, uffd-wp) and soft-dirty clearing; a page replaced later
 * raises its own CLEAR. Some CLEAR events leave the same pages mapped
 * (a THP split, khugepaged or KSM giving up on a pinned page, reclaim
 * failing to unmap one): they invalidate all the same, as the module
 * cannot know, and are counted by kind in MREG_IOC_WATCH_INFO.
 *
 * A file watches the mm that opened it; every call from another mm (a
 * forked child, a process the fd was passed to) fails with EPERM.  The
 * mapping itself is inherited over fork: a child sees its parent's
 * generations (counters only, which the parent's memory already told it),
 * and cannot map the array anew.  The mapping is VM_IO: it cannot be
 * pinned or spliced.  Slots are reused after UNWATCH, their generations never
 * go back, and @user_data tells an event of the old watch from one of the
 * new.  Watches are kernel memory charged to the caller's memory cgroup,
 * capped per file by the module parameter max_watches_per_file and per
 * user, across all the user's files, by max_watches_per_user.
 */

/**
 * enum mreg_watch_kind - what changed a watched range: the kernel's
 * classification of the invalidation (enum mmu_notifier_event), for
 * statistics and diagnosis only.  It is advisory: the kernel's own
 * labels change between versions (a kind this module does not know is
 * reported as CLEAR), so a cache must treat every event as an
 * invalidation and never decide by kind.
 * @MREG_WATCH_UNMAP: munmap(), mremap(), mmap(MAP_FIXED) over the range
 * @MREG_WATCH_CLEAR: page table entries cleared (MADV_DONTNEED, truncation
 *                    or hole punch, reclaim, migration, COW, KSM, THP split)
 * @MREG_WATCH_PROTECTION_VMA: mprotect() and NUMA hinting (ignored)
 * @MREG_WATCH_PROTECTION_PAGE: write-protection of pages, e.g. by fork
 *                              (ignored)
 * @MREG_WATCH_SOFT_DIRTY: soft-dirty clearing (ignored)
 * @MREG_WATCH_RELEASE: the mm is exiting
 * @MREG_WATCH_MIGRATE: migrate_vma_*() (device memory)
 * @MREG_WATCH_EXCLUSIVE: device-exclusive access
 * @MREG_WATCH_NR_KINDS: number of kinds; struct mreg_watch_info has room
 *                       for 16
 */
enum mreg_watch_kind {
	MREG_WATCH_UNMAP,
	MREG_WATCH_CLEAR,
	MREG_WATCH_PROTECTION_VMA,
	MREG_WATCH_PROTECTION_PAGE,
	MREG_WATCH_SOFT_DIRTY,
	MREG_WATCH_RELEASE,
	MREG_WATCH_MIGRATE,
	MREG_WATCH_EXCLUSIVE,
	MREG_WATCH_NR_KINDS,
};

/**
 * struct mreg_watch - ioctl(MREG_IOC_WATCH)
 * @size: sizeof(struct mreg_watch)
 * @flags: must be 0
 * @addr: start of the range, any byte address (a tagged pointer is
 *        untagged, as GUP does)
 * @length: bytes, > 0; the watch covers every page the range touches
 * @user_data: the caller's, echoed in each event of this watch
 * @out_id: out, the watch's slot in the generation array (>= 1)
 * @__reserved: must be 0
 * @out_generation: out, gens[@out_id] once no invalidation of the range
 *                  is running (WATCH waits for one that is): a
 *                  registration made after WATCH returned is current as
 *                  long as gens[@out_id] still equals it
 *
 * Errors: EINVAL (zero or overflowing range, beyond the user address
 * space), EPERM (the file watches another process's memory: inherited
 * over fork or passed over a socket), ENOSPC (max_watches_per_file
 * watches exist on this file, or max_watches_per_user on all the user's
 * files), EINTR, ENOMEM (no memory, or the file's first WATCH or mmap()
 * would take the generation array above RLIMIT_MEMLOCK).
 */
struct mreg_watch {
	__u32 size;
	__u32 flags;
	__aligned_u64 addr;
	__aligned_u64 length;
	__aligned_u64 user_data;
	__u32 out_id;
	__u32 __reserved;
	__aligned_u64 out_generation;
};

#define MREG_IOC_WATCH _IO(MREG_TYPE, MREG_CMD_WATCH)

/**
 * struct mreg_unwatch - ioctl(MREG_IOC_UNWATCH)
 * @size: sizeof(struct mreg_unwatch)
 * @flags: must be 0
 * @id: a watch's @out_id
 * @__reserved: must be 0
 *
 * Removes the watch once no invalidation of it is running, and drops its
 * queued event. The slot may be reused by the next WATCH.
 *
 * Errors: ENOENT (no such watch), EPERM (another mm's file).
 */
struct mreg_unwatch {
	__u32 size;
	__u32 flags;
	__u32 id;
	__u32 __reserved;
};

#define MREG_IOC_UNWATCH _IO(MREG_TYPE, MREG_CMD_UNWATCH)

/**
 * struct mreg_watch_info - ioctl(MREG_IOC_WATCH_INFO)
 * @size: sizeof(struct mreg_watch_info)
 * @flags: must be 0
 * @max_watches: out, slots of this file: the array mapped is
 *               (1 + @max_watches) * 8 bytes, rounded up to pages
 * @nr_watches: out, watches of this file now
 * @nr_invalidated: out, generation bumps so far
 * @events: out, per enum mreg_watch_kind, notifier calls on a watched
 *          range so far, the ignored kinds included
 *
 * The array is allocated on the first WATCH or mmap(); its size is fixed
 * from then on.
 */
struct mreg_watch_info {
	__u32 size;
	__u32 flags;
	__u32 max_watches;
	__u32 nr_watches;
	__aligned_u64 nr_invalidated;
	__aligned_u64 events[16];
};

#define MREG_IOC_WATCH_INFO _IO(MREG_TYPE, MREG_CMD_WATCH_INFO)

/**
 * struct mreg_watch_event - one record of read(2) on /dev/mreg
 * @id: the watch invalidated
 * @kind: enum mreg_watch_kind of the first event since the last read
 * @generation: gens[@id] when the record was read
 * @user_data: the watch's, from MREG_IOC_WATCH
 *
 * read(2) returns whole records, at least one: it blocks until one is
 * queued, or fails with EAGAIN under O_NONBLOCK or with preadv2()'s
 * RWF_NOWAIT (for a reader that shares a blocking fd); EINVAL if the buffer
 * holds less than one record; EPERM from another mm. poll(2) gives
 * EPOLLIN while one is queued.
 */
struct mreg_watch_event {
	__u32 id;
	__u32 kind;
	__aligned_u64 generation;
	__aligned_u64 user_data;
};

#endif /* _UAPI_MREG_H */
