// SPDX-License-Identifier: GPL-2.0
/*
 * Watches: one mmu_interval_notifier per range a registration cache holds,
 * a generation array userspace maps read-only, and an event queue read
 * through the file (include/uapi/mreg.h, "Watches").
 *
 * The notifier may run where it cannot sleep (the OOM reaper), and two
 * invalidations of one range can run at once on two CPUs, so the bump of
 * a generation and the queueing of its event are under a spinlock. The
 * notifier runs in the context that changes the mapping, before the page
 * tables change: when the change is a system call, the bump is program-
 * ordered before its return, so the thread that made it, and any thread
 * that synchronises with that one afterwards, sees it.
 *
 * WATCH reads the generation it returns with mmu_interval_read_begin()
 * and read_retry(): an invalidation already running when the notifier
 * was inserted does not call it, and read_begin() waits for it to end,
 * so the caller's registration, made after WATCH returns, pins what is
 * mapped once it is done.
 *
 * Locks: mmap() runs under mmap_lock and takes gens_lock; WATCH takes
 * gens_lock, then drops it before mmu_interval_notifier_insert(), which
 * may take mmap_lock. ev_lock nests inside nothing and is taken from the
 * notifier.
 */
#include <linux/capability.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/poll.h>
#include <linux/sched/mm.h>
#include <linux/sched/user.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "mreg_priv.h"

#define MREG_GENS_PER_PAGE	(PAGE_SIZE / sizeof(u64))
/* Events copied out per pass of read(), from an on-stack buffer. */
#define MREG_READ_BATCH		16

/**
 * struct mreg_watch_obj - one watch
 * @mni: the notifier over the range
 * @ws: the file's watch set
 * @ev_node: entry in &mreg_watch_set.pending while an event is queued
 * @user_data: the caller's, echoed in each event
 * @id: slot in the generation array
 * @kind: enum mreg_watch_kind of the first event queued since last read
 * @queued: @ev_node is on the list (under &mreg_watch_set.ev_lock)
 */
struct mreg_watch_obj {
	struct mmu_interval_notifier mni;
	struct mreg_watch_set *ws;
	struct list_head ev_node;
	u64 user_data;
	u32 id;
	u32 kind;
	bool queued;
};

static u64 *mreg_gen_slot(struct mreg_watch_set *ws, u32 id)
{
	return (u64 *)page_address(ws->gen_pages[id / MREG_GENS_PER_PAGE]) +
	       id % MREG_GENS_PER_PAGE;
}

static void mreg_gen_bump(struct mreg_watch_set *ws, u32 id)
{
	u64 *slot = mreg_gen_slot(ws, id);

	WRITE_ONCE(*slot, *slot + 1);
}

/* The ABI's kind; an event this module does not know invalidates. */
static enum mreg_watch_kind mreg_event_kind(enum mmu_notifier_event event)
{
	switch (event) {
	case MMU_NOTIFY_UNMAP:
		return MREG_WATCH_UNMAP;
	case MMU_NOTIFY_PROTECTION_VMA:
		return MREG_WATCH_PROTECTION_VMA;
	case MMU_NOTIFY_PROTECTION_PAGE:
		return MREG_WATCH_PROTECTION_PAGE;
	case MMU_NOTIFY_SOFT_DIRTY:
		return MREG_WATCH_SOFT_DIRTY;
	case MMU_NOTIFY_RELEASE:
		return MREG_WATCH_RELEASE;
	case MMU_NOTIFY_MIGRATE:
		return MREG_WATCH_MIGRATE;
	case MMU_NOTIFY_EXCLUSIVE:
		return MREG_WATCH_EXCLUSIVE;
	default:
		return MREG_WATCH_CLEAR;
	}
}

/* The kinds that cannot change which pages a range maps. */
static bool mreg_kind_ignored(enum mreg_watch_kind kind)
{
	return kind == MREG_WATCH_PROTECTION_VMA ||
	       kind == MREG_WATCH_PROTECTION_PAGE ||
	       kind == MREG_WATCH_SOFT_DIRTY;
}

/* Under ev_lock. gens[0] counts queued events, requeued ones too. */
static void mreg_event_queue(struct mreg_watch_set *ws,
			     struct mreg_watch_obj *w, u32 kind, bool head)
{
	w->queued = true;
	w->kind = kind;
	if (head)
		list_add(&w->ev_node, &ws->pending);
	else
		list_add_tail(&w->ev_node, &ws->pending);
	mreg_gen_bump(ws, 0);
}

static bool mreg_watch_invalidate(struct mmu_interval_notifier *mni,
				  const struct mmu_notifier_range *range,
				  unsigned long cur_seq)
{
	struct mreg_watch_obj *w = container_of(mni, struct mreg_watch_obj, mni);
	struct mreg_watch_set *ws = w->ws;
	enum mreg_watch_kind kind = mreg_event_kind(range->event);
	bool queued = false;

	atomic64_inc(&ws->events[kind]);
	if (mreg_kind_ignored(kind))
		return true;
	spin_lock(&ws->ev_lock);
	mmu_interval_set_seq(mni, cur_seq);
	mreg_gen_bump(ws, w->id);
	ws->nr_invalidated++;
	if (!w->queued) {
		mreg_event_queue(ws, w, kind, false);
		queued = true;
	}
	spin_unlock(&ws->ev_lock);
	if (queued)
		wake_up_interruptible_poll(&ws->wq, EPOLLIN | EPOLLRDNORM);
	return true;
}

static const struct mmu_interval_notifier_ops mreg_watch_ops = {
	.invalidate = mreg_watch_invalidate,
};

/*
 * @mm is the file's owner, kept alive by the file: every watch call,
 * read() and mmap() comes from it (mreg_file.c refuses other mms), so the
 * owner's watches and events cannot be taken by a forked child or a
 * process the fd was passed to.
 */
void mreg_watch_set_init(struct mreg_watch_set *ws, struct mm_struct *mm,
			 struct mreg_user *user, struct user_struct *memlock_user)
{
	struct mreg_watch_info *info = NULL;

	/* The kinds must fit the counters of the ABI. */
	BUILD_BUG_ON(ARRAY_SIZE(info->events) < MREG_WATCH_NR_KINDS);
	ws->mm = mm;
	ws->user = user;
	ws->memlock_user = memlock_user;
	mutex_init(&ws->gens_lock);
	spin_lock_init(&ws->ev_lock);
	INIT_LIST_HEAD(&ws->pending);
	init_waitqueue_head(&ws->wq);
	xa_init_flags(&ws->watches, XA_FLAGS_ALLOC1);
}

static void mreg_gens_uncharge(struct mreg_watch_set *ws)
{
	mreg_account_unmemlock(ws->memlock_user, ws->gens_charged);
	ws->gens_charged = 0;
}

/*
 * The generation array, sized by the module parameter at first use.  Its
 * pages are mapped to userspace and cannot be reclaimed, 32 (128 KiB) by
 * default and a file each: they are charged to the opener's locked_vm as
 * pins are, or any user could hold RAM with open files alone.
 */
static int mreg_gens_alloc(struct mreg_watch_set *ws)
{
	u32 max = READ_ONCE(mreg_max_watches_per_file);
	unsigned int i, n = DIV_ROUND_UP(max + 1, MREG_GENS_PER_PAGE);

	lockdep_assert_held(&ws->gens_lock);
	if (ws->gen_pages)
		return 0;
	if (!ns_capable_noaudit(&init_user_ns, CAP_IPC_LOCK)) {
		if (mreg_account_memlock(ws->memlock_user, n))
			return -ENOMEM;
		ws->gens_charged = n;
	}
	ws->gen_pages = kcalloc(n, sizeof(*ws->gen_pages), GFP_KERNEL_ACCOUNT);
	if (!ws->gen_pages)
		goto fail_uncharge;
	for (i = 0; i < n; i++) {
		ws->gen_pages[i] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
		if (!ws->gen_pages[i])
			goto fail;
	}
	ws->nr_gen_pages = n;
	ws->max_watches = n * MREG_GENS_PER_PAGE - 1;
	ws->max_watches = min(ws->max_watches, max);
	return 0;
fail:
	while (i--)
		__free_page(ws->gen_pages[i]);
	kfree(ws->gen_pages);
	ws->gen_pages = NULL;
fail_uncharge:
	mreg_gens_uncharge(ws);
	return -ENOMEM;
}

static void mreg_watch_free(struct mreg_watch_set *ws, struct mreg_watch_obj *w)
{
	mmu_interval_notifier_remove(&w->mni);
	spin_lock(&ws->ev_lock);
	if (w->queued)
		list_del(&w->ev_node);
	spin_unlock(&ws->ev_lock);
	mreg_account_unwatch(ws->user);
	kfree(w);
}

/*
 * Invalidations of the range can follow each other for as long as the
 * process keeps remapping it: a retry loop stops on a fatal signal.
 */
static int mreg_watch_generation(struct mreg_watch_set *ws,
				 struct mreg_watch_obj *w, u64 *gen)
{
	unsigned long seq;
	bool retry;

	do {
		if (fatal_signal_pending(current))
			return -EINTR;
		cond_resched();
		seq = mmu_interval_read_begin(&w->mni);
		spin_lock(&ws->ev_lock);
		retry = mmu_interval_read_retry(&w->mni, seq);
		*gen = READ_ONCE(*mreg_gen_slot(ws, w->id));
		spin_unlock(&ws->ev_lock);
	} while (retry);
	return 0;
}

static int mreg_gens_get(struct mreg_watch_set *ws)
{
	int ret;

	mutex_lock(&ws->gens_lock);
	ret = mreg_gens_alloc(ws);
	mutex_unlock(&ws->gens_lock);
	return ret;
}

/*
 * The id stays reserved (a NULL entry, which lookups see as absent) until
 * the reply reached userspace: a handle the caller never got cannot be
 * removed or requeued by anyone.
 */
static int mreg_watch_insert(struct mreg_watch_set *ws, struct mreg_watch *cmd,
			     struct mreg_watch_obj *w, unsigned long start,
			     unsigned long end)
{
	u32 id;
	int ret;

	ret = xa_alloc(&ws->watches, &id, NULL, XA_LIMIT(1, ws->max_watches),
		       GFP_KERNEL_ACCOUNT);
	if (ret)
		return ret == -EBUSY ? -ENOSPC : ret;
	w->ws = ws;
	w->id = id;
	w->user_data = cmd->user_data;
	ret = mmu_interval_notifier_insert(&w->mni, ws->mm, start,
					   end - start, &mreg_watch_ops);
	if (ret) {
		xa_erase(&ws->watches, id);
		return ret;
	}
	cmd->out_id = id;
	return 0;
}

static void mreg_watch_publish(struct mreg_watch_set *ws,
			       struct mreg_watch_obj *w)
{
	atomic_inc(&ws->nr_watches);
	/* A reserved entry holds its slot: the store allocates nothing. */
	WARN_ON_ONCE(xa_err(xa_store(&ws->watches, w->id, w, GFP_KERNEL)));
}

int mreg_watch(struct mreg_ucmd *ucmd)
{
	struct mreg_watch_set *ws = &ucmd->mf->watch;
	struct mreg_watch *cmd = ucmd->cmd;
	unsigned long addr, end;
	struct mreg_watch_obj *w;
	int ret;

	if (cmd->flags || cmd->__reserved || !cmd->length)
		return -EINVAL;
	/* GUP untags too: an MR over a tagged pointer (arm64 TBI) must work. */
	addr = untagged_addr(cmd->addr);
	if (check_add_overflow(addr, cmd->length, &end) || end > TASK_SIZE)
		return -EINVAL;
	/* The user's cap first: a refused WATCH allocates nothing. */
	ret = mreg_account_watch(ws->user);
	if (ret)
		return ret;
	ret = mreg_gens_get(ws);
	if (ret)
		goto err_unaccount;
	ret = -ENOMEM;
	w = kzalloc(sizeof(*w), GFP_KERNEL_ACCOUNT);
	if (!w)
		goto err_unaccount;
	ret = mreg_watch_insert(ws, cmd, w, addr & PAGE_MASK, PAGE_ALIGN(end));
	if (ret) {
		kfree(w);
		goto err_unaccount;
	}
	/*
	 * The notifier is live from here: an invalidation may have queued
	 * the watch, so every failure goes through mreg_watch_free(), which
	 * unqueues it under ev_lock before freeing it.
	 */
	ret = mreg_watch_generation(ws, w, &cmd->out_generation) ?:
	      mreg_ucmd_respond(ucmd, sizeof(*cmd));
	if (ret) {
		mreg_watch_free(ws, w);
		xa_erase(&ws->watches, cmd->out_id);
		return ret;
	}
	mreg_watch_publish(ws, w);
	return 0;

err_unaccount:
	mreg_account_unwatch(ws->user);
	return ret;
}

/*
 * The id stays reserved until the notifier is gone: a WATCH cannot reuse
 * it while an invalidation of the old range may still bump and queue.
 */
int mreg_unwatch_id(struct mreg_watch_set *ws, u32 id)
{
	struct mreg_watch_obj *w;

	w = xa_load(&ws->watches, id);
	if (!w || xa_cmpxchg(&ws->watches, id, w, XA_ZERO_ENTRY, 0) != w)
		return -ENOENT;
	atomic_dec(&ws->nr_watches);
	mreg_watch_free(ws, w);
	xa_erase(&ws->watches, id);
	return 0;
}

int mreg_watch_info(struct mreg_ucmd *ucmd)
{
	struct mreg_watch_set *ws = &ucmd->mf->watch;
	struct mreg_watch_info *info = ucmd->cmd;
	unsigned int i;

	if (info->flags)
		return -EINVAL;
	/* Outputs only: a newer caller's events[] must not come back. */
	memset(info->events, 0, sizeof(info->events));
	mutex_lock(&ws->gens_lock);
	info->max_watches = ws->gen_pages ? ws->max_watches :
			    READ_ONCE(mreg_max_watches_per_file);
	mutex_unlock(&ws->gens_lock);
	info->nr_watches = atomic_read(&ws->nr_watches);
	spin_lock(&ws->ev_lock);
	info->nr_invalidated = ws->nr_invalidated;
	spin_unlock(&ws->ev_lock);
	for (i = 0; i < MREG_WATCH_NR_KINDS; i++)
		info->events[i] = atomic64_read(&ws->events[i]);
	return mreg_ucmd_respond(ucmd, sizeof(*info));
}

void mreg_watch_set_release(struct mreg_watch_set *ws)
{
	struct mreg_watch_obj *w;
	unsigned long id;
	unsigned int i;

	/* Up to a million notifiers to remove: reschedule between them. */
	xa_for_each(&ws->watches, id, w) {
		mreg_watch_free(ws, w);
		cond_resched();
	}
	xa_destroy(&ws->watches);
	for (i = 0; i < ws->nr_gen_pages; i++)
		__free_page(ws->gen_pages[i]);
	kfree(ws->gen_pages);
	mreg_gens_uncharge(ws);
	mutex_destroy(&ws->gens_lock);
}

/*
 * Read-only, shared, at offset 0; never writable or executable, not even
 * by mprotect(). Inherited over fork (the child sees the parent's
 * generations, of the parent's memory).
 */
int mreg_watch_mmap(struct mreg_watch_set *ws, struct vm_area_struct *vma)
{
	unsigned long pages = vma_pages(vma);
	int ret;

	if (vma->vm_pgoff || (vma->vm_flags & (VM_WRITE | VM_EXEC)))
		return -EINVAL;
	/* VM_MAYSHARE: an O_RDONLY fd's MAP_SHARED has no VM_SHARED. */
	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	mutex_lock(&ws->gens_lock);
	ret = mreg_gens_alloc(ws);
	if (!ret && pages > ws->nr_gen_pages)
		ret = -EINVAL;
	if (!ret) {
		/* VM_IO: kernel pages, not memory GUP may pin or splice. */
		mreg_vm_flags_mod(vma, VM_DONTEXPAND | VM_DONTDUMP | VM_IO,
				  VM_MAYWRITE | VM_MAYEXEC);
		ret = vm_insert_pages(vma, vma->vm_start, ws->gen_pages,
				      &pages);
	}
	mutex_unlock(&ws->gens_lock);
	return ret;
}

static unsigned int mreg_events_take(struct mreg_watch_set *ws,
				     struct mreg_watch_event *ev,
				     unsigned int max)
{
	struct mreg_watch_obj *w;
	unsigned int n = 0;

	spin_lock(&ws->ev_lock);
	while (n < max && !list_empty(&ws->pending)) {
		w = list_first_entry(&ws->pending, struct mreg_watch_obj,
				     ev_node);
		list_del(&w->ev_node);
		w->queued = false;
		ev[n].id = w->id;
		ev[n].kind = w->kind;
		ev[n].generation = READ_ONCE(*mreg_gen_slot(ws, w->id));
		ev[n].user_data = w->user_data;
		n++;
	}
	spin_unlock(&ws->ev_lock);
	return n;
}

/* Records that could not be copied out go back, for the next read. */
static void mreg_events_requeue(struct mreg_watch_set *ws,
				const struct mreg_watch_event *ev,
				unsigned int n)
{
	struct mreg_watch_obj *w;

	/*
	 * Under ev_lock a watch found in the array cannot be freed: UNWATCH
	 * erases it first, then takes ev_lock to unqueue it.
	 */
	spin_lock(&ws->ev_lock);
	while (n--) {
		w = xa_load(&ws->watches, ev[n].id);
		if (w && !w->queued)
			mreg_event_queue(ws, w, ev[n].kind, true);
	}
	spin_unlock(&ws->ev_lock);
}

/* Whole records only: the part of one cut short goes back too. */
ssize_t mreg_watch_read(struct mreg_watch_set *ws, struct iov_iter *to,
			bool nonblock)
{
	struct mreg_watch_event ev[MREG_READ_BATCH];
	size_t max = iov_iter_count(to) / sizeof(ev[0]), done = 0;
	size_t copied;
	unsigned int n;
	int ret;

	if (!max)
		return -EINVAL;
	while (done < max) {
		/* A huge buffer and a busy producer: stay preemptible. */
		if (done && fatal_signal_pending(current))
			break;
		cond_resched();
		n = mreg_events_take(ws, ev, min_t(size_t, max - done,
						   MREG_READ_BATCH));
		if (!n) {
			if (done)
				break;
			if (nonblock)
				return -EAGAIN;
			ret = wait_event_interruptible(ws->wq,
						       !list_empty(&ws->pending));
			if (ret)
				return ret;
			continue;
		}
		copied = copy_to_iter(ev, n * sizeof(ev[0]), to) / sizeof(ev[0]);
		done += copied;
		if (copied < n) {
			mreg_events_requeue(ws, ev + copied, n - copied);
			return done ? done * sizeof(ev[0]) : -EFAULT;
		}
	}
	return done * sizeof(ev[0]);
}

__poll_t mreg_watch_poll(struct mreg_watch_set *ws, struct file *filp,
			 poll_table *wait)
{
	__poll_t mask = 0;

	poll_wait(filp, &ws->wq, wait);
	spin_lock(&ws->ev_lock);
	if (!list_empty(&ws->pending))
		mask = EPOLLIN | EPOLLRDNORM;
	spin_unlock(&ws->ev_lock);
	return mask;
}
