// SPDX-License-Identifier: GPL-2.0
/*
 * Accounting of long-lived pins and of watches.
 *
 * A pin lives in the open file, which outlives the mm that made it (exec,
 * or a child holding the fd), so charging mm->pinned_vm alone would let a
 * process pin its RLIMIT_MEMLOCK, exec itself, and pin as much again with
 * a fresh mm.  Pins are therefore charged as io_uring and iommufd charge
 * theirs (IOPT_PAGES_ACCOUNT_USER): to the opener's user_struct->locked_vm
 * against RLIMIT_MEMLOCK, unless the caller has CAP_IPC_LOCK.  The file
 * holds a reference on that user_struct until it is released, so the
 * charge is returned to the user it was taken from, whoever closes it.
 * Each pin is also added to the owner's mm->pinned_vm, for visibility in
 * /proc/pid/status (VmPin), and to the open file, against its cap.
 *
 * A pin is charged for every page of the folios it holds, as io_uring
 * charges whole compound pages: a pinned folio can be neither split nor
 * freed, so one pinned 4 KiB page of a 2 MiB THP holds 2 MiB even after
 * the rest is unmapped.  The range is charged before pinning, the rest of
 * its folios once they are known.
 *
 * Every charge is taken before pinning, so that an over-limit request
 * fails with ENOMEM having pinned nothing.
 *
 * Watches are capped per user, across every file of the user: one watch
 * costs a notifier call on each invalidation of its range, in reclaim,
 * compaction and truncation too, so opening more files must not buy more.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/hashtable.h>
#include <linux/overflow.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/user.h>
#include <linux/slab.h>

#include "mreg_priv.h"

static DEFINE_HASHTABLE(mreg_users, 6);
static DEFINE_SPINLOCK(mreg_users_lock);

static struct mreg_user *mreg_user_find(kuid_t uid)
{
	struct mreg_user *u;

	lockdep_assert_held(&mreg_users_lock);
	hash_for_each_possible(mreg_users, u, node, __kuid_val(uid))
		if (uid_eq(u->uid, uid))
			return u;
	return NULL;
}

/* The entry of @uid, created on first use; one reference per open file. */
static struct mreg_user *mreg_user_get(kuid_t uid)
{
	struct mreg_user *u, *new;

	new = kzalloc(sizeof(*new), GFP_KERNEL);
	if (!new)
		return NULL;
	new->uid = uid;
	refcount_set(&new->refs, 1);
	spin_lock(&mreg_users_lock);
	u = mreg_user_find(uid);
	if (u)
		refcount_inc(&u->refs);
	else
		hash_add(mreg_users, &new->node, __kuid_val(uid));
	spin_unlock(&mreg_users_lock);
	if (!u)
		return new;
	kfree(new);
	return u;
}

static void mreg_user_put(struct mreg_user *u)
{
	if (!refcount_dec_and_lock(&u->refs, &mreg_users_lock))
		return;
	hash_del(&u->node);
	spin_unlock(&mreg_users_lock);
	WARN_ON_ONCE(atomic_read(&u->nr_watches));
	kfree(u);
}

/**
 * mreg_account_open() - bind a new file to its opener
 * @mf: the file being opened, by current
 *
 * Return: 0, -EPERM for a caller without an mm, -ENOMEM.
 */
int mreg_account_open(struct mreg_file *mf)
{
	if (!current->mm)
		return -EPERM;
	mf->owner = mreg_user_get(current_uid());
	if (!mf->owner)
		return -ENOMEM;
	mf->user = get_uid(current_user());
	mmgrab(current->mm);
	mf->mm = current->mm;
	/* A probe, decided once from the opener's credentials: no audit. */
	mf->phys = ns_capable_noaudit(&init_user_ns, CAP_SYS_ADMIN);
	return 0;
}

/**
 * mreg_account_release() - undo mreg_account_open()
 * @mf: the file, with nothing charged any more
 */
void mreg_account_release(struct mreg_file *mf)
{
	WARN_ON_ONCE(atomic64_read(&mf->pinned_pages));
	mmdrop(mf->mm);
	free_uid(mf->user);
	mreg_user_put(mf->owner);
}

/**
 * mreg_account_watch() - charge one watch to its user
 * @user: the file's owner
 *
 * Return: 0, or -ENOSPC when the user holds max_watches_per_user.
 */
int mreg_account_watch(struct mreg_user *user)
{
	unsigned int max = READ_ONCE(mreg_max_watches_per_user);
	int cur = atomic_read(&user->nr_watches);

	do {
		if (cur >= max)
			return -ENOSPC;
	} while (!atomic_try_cmpxchg(&user->nr_watches, &cur, cur + 1));
	return 0;
}

/**
 * mreg_account_unwatch() - undo mreg_account_watch()
 * @user: the file's owner
 */
void mreg_account_unwatch(struct mreg_user *user)
{
	atomic_dec(&user->nr_watches);
}

/*
 * Under mf->lock, as SET_LIMIT checks the pages pinned now under it: a
 * charge never lands between its check and its store of a lower cap.
 */
static int mreg_account_file(struct mreg_file *mf, unsigned long npages)
{
	int ret = 0;

	mutex_lock(&mf->lock);
	if (npages > mf->max_pages - atomic64_read(&mf->pinned_pages))
		ret = -ENOMEM;
	else
		atomic64_add(npages, &mf->pinned_pages);
	mutex_unlock(&mf->lock);
	return ret;
}

/* As io_uring's __io_account_mem(): never above the limit, even racing. */
int mreg_account_memlock(struct user_struct *user, unsigned long npages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	unsigned long cur = atomic_long_read(&user->locked_vm), new;

	do {
		if (check_add_overflow(cur, npages, &new) || new > limit)
			return -ENOMEM;
	} while (!atomic_long_try_cmpxchg(&user->locked_vm, &cur, new));
	return 0;
}

/* Undo mreg_account_memlock(). */
void mreg_account_unmemlock(struct user_struct *user, unsigned long npages)
{
	atomic_long_sub(npages, &user->locked_vm);
}

/**
 * mreg_account_charge() - charge pages to a pin
 * @mf: the open file, owned by current->mm
 * @pin: the pin
 * @npages: pages to add to its charge: its range before pinning, then the
 *          rest of the folios the pin holds
 *
 * Whether the user is charged is decided at the first charge and kept, so
 * that a pin is returned as it was taken whatever the caller's
 * capabilities become.
 *
 * Return: 0, or -ENOMEM when the file cap or RLIMIT_MEMLOCK is exceeded;
 * then nothing of @npages is charged.
 */
int mreg_account_charge(struct mreg_file *mf, struct mreg_pin_obj *pin,
			unsigned long npages)
{
	int ret;

	if (WARN_ON_ONCE(current->mm != mf->mm))
		return -EINVAL;
	/* As io_uring: a probe, no audit record for every unprivileged pin. */
	if (!pin->nr_charged)
		pin->user_charged = !ns_capable_noaudit(&init_user_ns,
							CAP_IPC_LOCK);
	ret = mreg_account_file(mf, npages);
	if (ret)
		return ret;
	if (pin->user_charged) {
		ret = mreg_account_memlock(mf->user, npages);
		if (ret) {
			atomic64_sub(npages, &mf->pinned_pages);
			return ret;
		}
	}
	atomic64_add(npages, &mf->mm->pinned_vm);
	pin->nr_charged += npages;
	return 0;
}

/**
 * mreg_account_uncharge() - undo mreg_account_charge()
 * @mf: the open file
 * @pin: a pin, charged or not
 *
 * May run from any task: at close, the last holder of the file.
 */
void mreg_account_uncharge(struct mreg_file *mf, struct mreg_pin_obj *pin)
{
	if (!pin->nr_charged)
		return;
	atomic64_sub(pin->nr_charged, &mf->mm->pinned_vm);
	if (pin->user_charged)
		mreg_account_unmemlock(mf->user, pin->nr_charged);
	atomic64_sub(pin->nr_charged, &mf->pinned_pages);
	pin->nr_charged = 0;
	pin->user_charged = false;
}

/**
 * mreg_account_set_limit() - change the per-file cap
 * @mf: the open file
 * @max_pages: new cap, at most the module parameter
 *
 * Return: 0, or -EINVAL when @max_pages is above the module parameter or
 * below what the file holds pinned now (charges are serialised with this
 * by mf->lock).
 */
int mreg_account_set_limit(struct mreg_file *mf, u64 max_pages)
{
	int ret = 0;

	mutex_lock(&mf->lock);
	if (max_pages > READ_ONCE(mreg_max_pin_pages_per_file) ||
	    max_pages < atomic64_read(&mf->pinned_pages))
		ret = -EINVAL;
	else
		WRITE_ONCE(mf->max_pages, max_pages);
	mutex_unlock(&mf->lock);
	return ret;
}

/**
 * mreg_account_info() - fill the accounting part of MREG_IOC_INFO
 * @mf: the open file, owned by current->mm
 * @info: the reply
 */
void mreg_account_info(struct mreg_file *mf, struct mreg_info *info)
{
	info->abi_version = MREG_ABI_VERSION;
	info->page_size = PAGE_SIZE;
	info->caps = MREG_CAN_PIN_MEMFD ? MREG_CAP_MEMFD : 0;
	if (mf->phys)
		info->caps |= MREG_CAP_PHYS;
	/* A probe, not a privileged operation: leave no audit record. */
	if (ns_capable_noaudit(&init_user_ns, CAP_IPC_LOCK))
		info->caps |= MREG_CAP_IPC_LOCK;
	info->file_max_pages = READ_ONCE(mf->max_pages);
	info->file_pinned_pages = atomic64_read(&mf->pinned_pages);
	info->memlock_limit_pages = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	info->mm_pinned_pages = atomic64_read(&mf->mm->pinned_vm);
	info->user_locked_pages = atomic_long_read(&mf->user->locked_vm);
}
