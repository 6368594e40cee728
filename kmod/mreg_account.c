// SPDX-License-Identifier: GPL-2.0
/*
 * Accounting of long-lived pins.
 *
 * Pins are charged twice: to the open file, against its cap, and, as
 * ib_umem_get() does, to mm->pinned_vm against RLIMIT_MEMLOCK unless the
 * caller has CAP_IPC_LOCK.  The charge is taken before pinning so that an
 * over-limit request fails with ENOMEM having pinned nothing.
 */
#include <linux/capability.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>

#include "mreg_priv.h"

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

static int mreg_account_mm(struct mm_struct *mm, unsigned long npages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	u64 total = atomic64_add_return(npages, &mm->pinned_vm);

	if (total > limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &mm->pinned_vm);
		return -ENOMEM;
	}
	return 0;
}

/**
 * mreg_account_charge() - charge a pin before its pages are pinned
 * @mf: the open file
 * @pin: the pin, with @pin->nr_pages set
 *
 * On success @pin->mm holds a grab on current->mm, dropped by
 * mreg_account_uncharge(), which may run from another task at close.
 *
 * Return: 0, or -ENOMEM when the file cap or RLIMIT_MEMLOCK is exceeded.
 */
int mreg_account_charge(struct mreg_file *mf, struct mreg_pin_obj *pin)
{
	struct mm_struct *mm = current->mm;
	int ret;

	if (WARN_ON_ONCE(!mm || pin->mm))
		return -EINVAL;
	ret = mreg_account_file(mf, pin->nr_pages);
	if (ret)
		return ret;
	ret = mreg_account_mm(mm, pin->nr_pages);
	if (ret)
		goto err_file;
	mmgrab(mm);
	pin->mm = mm;
	return 0;

err_file:
	atomic64_sub(pin->nr_pages, &mf->pinned_pages);
	return ret;
}

/**
 * mreg_account_uncharge() - undo mreg_account_charge()
 * @mf: the open file
 * @pin: a charged pin
 */
void mreg_account_uncharge(struct mreg_file *mf, struct mreg_pin_obj *pin)
{
	if (!pin->mm)
		return;
	atomic64_sub(pin->nr_pages, &pin->mm->pinned_vm);
	atomic64_sub(pin->nr_pages, &mf->pinned_pages);
	mmdrop(pin->mm);
	pin->mm = NULL;
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
 * @mf: the open file
 * @info: the reply
 */
void mreg_account_info(struct mreg_file *mf, struct mreg_info *info)
{
	struct mm_struct *mm = current->mm;

	info->abi_version = MREG_ABI_VERSION;
	info->page_size = PAGE_SIZE;
	info->caps = MREG_CAP_MEMFD;
	/* A probe, not a privileged operation: leave no audit record. */
	if (ns_capable_noaudit(&init_user_ns, CAP_SYS_ADMIN))
		info->caps |= MREG_CAP_PHYS;
	if (ns_capable_noaudit(&init_user_ns, CAP_IPC_LOCK))
		info->caps |= MREG_CAP_IPC_LOCK;
	info->file_max_pages = READ_ONCE(mf->max_pages);
	info->file_pinned_pages = atomic64_read(&mf->pinned_pages);
	info->memlock_limit_pages = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	info->mm_pinned_pages = mm ? atomic64_read(&mm->pinned_vm) : 0;
}
