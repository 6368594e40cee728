/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mreg.ko internals shared by mreg_main.c, mreg_file.c, mreg_bench.c,
 * mreg_pin.c, mreg_account.c and mreg_watch.c.
 */
#ifndef _MREG_PRIV_H
#define _MREG_PRIV_H

#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/mm_types.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/refcount.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/uio.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include "mreg_compat.h"
#include "uapi/mreg.h"

struct user_struct;

/**
 * struct mreg_user - what one user holds through every open of /dev/mreg
 * @node: entry in the module's table of users, keyed by @uid
 * @uid: the user
 * @refs: one per open file of the user
 * @nr_watches: watches of all of the user's files, against
 *              mreg_max_watches_per_user
 *
 * Pinned pages are charged to the user's &user_struct.locked_vm, which
 * io_uring and iommufd charge too; watches have no such counter, so the
 * module keeps its own.
 */
struct mreg_user {
	struct hlist_node node;
	kuid_t uid;
	refcount_t refs;
	atomic_t nr_watches;
};

/**
 * struct mreg_watch_set - the watches of one open of /dev/mreg
 * @gens_lock: allocation of @gen_pages (taken under mmap_lock by mmap())
 * @ev_lock: generation bumps, @pending and each watch's queued state
 * @mm: the mm watched, the file's owner (&mreg_file.mm), fixed at open
 * @user: the opener, charged for each watch
 * @memlock_user: the opener's user_struct, charged for @gen_pages
 * @gens_charged: pages of @gen_pages charged to @memlock_user's locked_vm
 * @gen_pages: the generation array, __u64 per slot, slot 0 the event count
 * @nr_gen_pages: entries in @gen_pages
 * @max_watches: slots usable (ids 1..@max_watches)
 * @watches: id -> struct mreg_watch_obj; NULL (reserved) while inserting
 * @nr_watches: watches published
 * @pending: watches with a queued event, in order of invalidation
 * @wq: readers and pollers of events
 * @nr_invalidated: generation bumps (under @ev_lock)
 * @events: notifier calls per enum mreg_watch_kind
 */
struct mreg_watch_set {
	struct mutex gens_lock;	/* allocation of @gen_pages */
	spinlock_t ev_lock;	/* bumps, @pending, queued states */
	struct mm_struct *mm;
	struct mreg_user *user;
	struct user_struct *memlock_user;
	unsigned long gens_charged;
	struct page **gen_pages;
	unsigned int nr_gen_pages;
	u32 max_watches;
	struct xarray watches;
	atomic_t nr_watches;
	struct list_head pending;
	wait_queue_head_t wq;
	u64 nr_invalidated;
	atomic64_t events[MREG_WATCH_NR_KINDS];
};

/**
 * struct mreg_file - state of one open of /dev/mreg
 * @pins: handle -> struct mreg_pin_obj, handles start at 1
 * @next_handle: allocation cursor for xa_alloc_cyclic()
 * @lock: serialises the per-file cap check of a charge with SET_LIMIT
 * @pinned_pages: pages pinned through this file
 * @max_pages: cap on @pinned_pages
 * @mm: the owner: the opener's mm, mmgrab()ed; every ioctl, read(),
 *      poll() and mmap() from another mm fails, only close works there
 * @user: the opener's user (get_uid()), charged for pinned pages
 * @owner: the opener's entry in the module's table of users
 * @phys: the opener may see physical addresses (CAP_SYS_ADMIN at open,
 *        as /proc/pid/pagemap decides from its opener's credentials)
 * @watch: the file's watches (mreg_watch.c)
 *
 * A handle is reserved in @pins with XA_ZERO_ENTRY while PIN copies its
 * reply out, and only then published; lookups see a reserved handle as
 * absent.  Pins are kept alive under QUERY and READ by their refcount,
 * not by a lock, so a slow copy to userspace blocks no other ioctl.
 */
struct mreg_file {
	struct xarray pins;
	u32 next_handle;
	struct mutex lock;	/* cap check of a charge vs SET_LIMIT */
	atomic64_t pinned_pages;
	u64 max_pages;
	struct mm_struct *mm;
	struct user_struct *user;
	struct mreg_user *owner;
	bool phys;
	struct mreg_watch_set watch;
};

/**
 * struct mreg_ucmd - one ioctl being executed
 * @mf: the open file
 * @ubuffer: the user's struct
 * @user_size: its @size field
 * @cmd: the kernel copy of the struct
 */
struct mreg_ucmd {
	struct mreg_file *mf;
	void __user *ubuffer;
	u32 user_size;
	void *cmd;
};

/**
 * struct mreg_pin_obj - one long-lived pin
 * @pages: every pinned page of the range, in order
 * @folios: for memfd pins, the folios memfd_pin_folios() pinned, else NULL
 * @nr_pages: entries in @pages
 * @nr_folios: entries in @folios
 * @nr_extents: extents QUERY reports
 * @nr_charged: pages charged to the file and to its owner's
 *              mm->pinned_vm: every page of every folio the pin holds,
 *              as a pinned folio stays whole however little of it is
 *              in the range
 * @user_charged: @nr_charged is charged to the opener's locked_vm too
 *                (the caller had no CAP_IPC_LOCK at the first charge)
 * @users: one for the handle in &mreg_file.pins, one per QUERY or READ
 *         using the pin; the last mreg_pin_put() unpins and frees it
 * @writable: pinned with FOLL_WRITE, so pages are dirtied on unpin
 */
struct mreg_pin_obj {
	struct page **pages;
	struct folio **folios;
	unsigned long nr_pages;
	unsigned long nr_folios;
	unsigned long nr_extents;
	unsigned long nr_charged;
	refcount_t users;
	bool user_charged;
	bool writable;
};

extern unsigned long mreg_max_pin_pages_per_file;
extern unsigned int mreg_max_watches_per_file;
extern unsigned int mreg_max_watches_per_user;

/* mreg_file.c */
extern const struct file_operations mreg_fops;

int mreg_ucmd_respond(struct mreg_ucmd *ucmd, size_t cmd_len);

/* mreg_bench.c */
int mreg_bench(struct mreg_file *mf, struct mreg_bench *cmd);

/* mreg_pin.c */
int mreg_pin(struct mreg_ucmd *ucmd);
int mreg_query(struct mreg_file *mf, struct mreg_query *cmd);
int mreg_unpin(struct mreg_file *mf, struct mreg_unpin *cmd);
int mreg_read(struct mreg_file *mf, struct mreg_read *cmd);
void mreg_pin_release_all(struct mreg_file *mf);
int mreg_check_range(u64 addr, u64 length);
int mreg_memfd_check(struct file *file, bool write);

/* mreg_watch.c */
void mreg_watch_set_init(struct mreg_watch_set *ws, struct mm_struct *mm,
			 struct mreg_user *user, struct user_struct *memlock_user);
void mreg_watch_set_release(struct mreg_watch_set *ws);
int mreg_watch(struct mreg_ucmd *ucmd);
int mreg_unwatch_id(struct mreg_watch_set *ws, u32 id);
int mreg_watch_info(struct mreg_ucmd *ucmd);
int mreg_watch_mmap(struct mreg_watch_set *ws, struct vm_area_struct *vma);
ssize_t mreg_watch_read(struct mreg_watch_set *ws, struct iov_iter *to,
			bool nonblock);
__poll_t mreg_watch_poll(struct mreg_watch_set *ws, struct file *filp,
			 poll_table *wait);

/* mreg_account.c */
int mreg_account_open(struct mreg_file *mf);
void mreg_account_release(struct mreg_file *mf);
int mreg_account_watch(struct mreg_user *user);
int mreg_account_memlock(struct user_struct *user, unsigned long npages);
void mreg_account_unmemlock(struct user_struct *user, unsigned long npages);
void mreg_account_unwatch(struct mreg_user *user);
int mreg_account_charge(struct mreg_file *mf, struct mreg_pin_obj *pin,
			unsigned long npages);
void mreg_account_uncharge(struct mreg_file *mf, struct mreg_pin_obj *pin);
int mreg_account_set_limit(struct mreg_file *mf, u64 max_pages);
void mreg_account_info(struct mreg_file *mf, struct mreg_info *info);

#endif /* _MREG_PRIV_H */
