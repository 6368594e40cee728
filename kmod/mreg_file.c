// SPDX-License-Identifier: GPL-2.0
/*
 * File operations of /dev/mreg and the ioctl dispatch table.
 *
 * Each ioctl takes one size-prefixed struct (include/uapi/mreg.h).  As in
 * iommufd, the table gives the struct size and the minimum size (the end
 * of its first version), copy_struct_from_user() makes old and new
 * binaries work.  Only the ioctls with outputs copy the struct back, for
 * the size userspace gave, from their handler (mreg_ucmd_respond()): PIN
 * must know the reply reached userspace before it publishes the handle,
 * and UNPIN or SET_LIMIT must not fail with EFAULT after doing the work.
 *
 * A file belongs to the mm that opened it (struct mreg_file): its pins
 * are of that mm's memory and charged to that opener, so every entry
 * point but close refuses another mm with EPERM, and the file stays
 * useless, though charged, in a forked child or after exec.
 */
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/nospec.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/uio.h>

#include "mreg_priv.h"

union mreg_ucmd_buffer {
	struct mreg_info info;
	struct mreg_set_limit set_limit;
	struct mreg_bench bench;
	struct mreg_pin pin;
	struct mreg_query query;
	struct mreg_unpin unpin;
	struct mreg_read read;
	struct mreg_watch watch;
	struct mreg_unwatch unwatch;
	struct mreg_watch_info watch_info;
};

/**
 * struct mreg_ioctl_op - one entry of the dispatch table
 * @size: sizeof the command struct known to this module
 * @min_size: size of the first ABI version of the struct
 * @ioctl_num: full ioctl number, to refuse foreign types on the same nr
 * @execute: the handler; it copies its outputs back itself
 */
struct mreg_ioctl_op {
	unsigned int size;
	unsigned int min_size;
	unsigned int ioctl_num;
	int (*execute)(struct mreg_ucmd *ucmd);
};

/**
 * mreg_ucmd_respond() - copy an ioctl's outputs back to userspace
 * @ucmd: the ioctl
 * @cmd_len: sizeof the struct known to this module
 *
 * Return: 0, or -EFAULT.
 */
int mreg_ucmd_respond(struct mreg_ucmd *ucmd, size_t cmd_len)
{
	if (copy_to_user(ucmd->ubuffer, ucmd->cmd,
			 min_t(size_t, ucmd->user_size, cmd_len)))
		return -EFAULT;
	return 0;
}

static int mreg_ioc_info(struct mreg_ucmd *ucmd)
{
	struct mreg_info *info = ucmd->cmd;

	if (info->flags || info->__reserved)
		return -EINVAL;
	mreg_account_info(ucmd->mf, info);
	return mreg_ucmd_respond(ucmd, sizeof(*info));
}

static int mreg_ioc_set_limit(struct mreg_ucmd *ucmd)
{
	struct mreg_set_limit *sl = ucmd->cmd;

	if (sl->flags)
		return -EINVAL;
	return mreg_account_set_limit(ucmd->mf, sl->max_pages);
}

/* As mm/gup_test.c, which lives in debugfs: for the administrator. */
static int mreg_ioc_bench(struct mreg_ucmd *ucmd)
{
	int ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	ret = mreg_bench(ucmd->mf, ucmd->cmd);

	return ret ? ret : mreg_ucmd_respond(ucmd, sizeof(struct mreg_bench));
}

static int mreg_ioc_pin(struct mreg_ucmd *ucmd)
{
	return mreg_pin(ucmd);
}

/* EMSGSIZE is answered too: it carries the number of extents needed. */
static int mreg_ioc_query(struct mreg_ucmd *ucmd)
{
	int ret = mreg_query(ucmd->mf, ucmd->cmd);

	if (ret && ret != -EMSGSIZE)
		return ret;
	return mreg_ucmd_respond(ucmd, sizeof(struct mreg_query)) ?: ret;
}

static int mreg_ioc_unpin(struct mreg_ucmd *ucmd)
{
	return mreg_unpin(ucmd->mf, ucmd->cmd);
}

static int mreg_ioc_read(struct mreg_ucmd *ucmd)
{
	return mreg_read(ucmd->mf, ucmd->cmd);
}

static int mreg_ioc_watch(struct mreg_ucmd *ucmd)
{
	return mreg_watch(ucmd);
}

static int mreg_ioc_unwatch(struct mreg_ucmd *ucmd)
{
	struct mreg_unwatch *uw = ucmd->cmd;

	if (uw->flags || uw->__reserved)
		return -EINVAL;
	return mreg_unwatch_id(&ucmd->mf->watch, uw->id);
}

static int mreg_ioc_watch_info(struct mreg_ucmd *ucmd)
{
	return mreg_watch_info(ucmd);
}

/* In MREG_CMD_* order; mreg_fops_ioctl() checks ioctl_num. */
#define MREG_IOCTL_OP(_ioctl, _fn, _struct, _last)			\
	{								\
		.size = sizeof(_struct) +				\
			BUILD_BUG_ON_ZERO(sizeof(union mreg_ucmd_buffer) < \
					  sizeof(_struct)),		\
		.min_size = offsetofend(_struct, _last),		\
		.ioctl_num = _ioctl,					\
		.execute = _fn,						\
	}

static const struct mreg_ioctl_op mreg_ioctl_ops[] = {
	MREG_IOCTL_OP(MREG_IOC_INFO, mreg_ioc_info, struct mreg_info,
		      mm_pinned_pages),
	MREG_IOCTL_OP(MREG_IOC_SET_LIMIT, mreg_ioc_set_limit,
		      struct mreg_set_limit, max_pages),
	MREG_IOCTL_OP(MREG_IOC_BENCH, mreg_ioc_bench, struct mreg_bench,
		      order_hist),
	MREG_IOCTL_OP(MREG_IOC_PIN, mreg_ioc_pin, struct mreg_pin,
		      out_nr_folios),
	MREG_IOCTL_OP(MREG_IOC_QUERY, mreg_ioc_query, struct mreg_query,
		      __reserved2),
	MREG_IOCTL_OP(MREG_IOC_UNPIN, mreg_ioc_unpin, struct mreg_unpin,
		      __reserved),
	MREG_IOCTL_OP(MREG_IOC_READ, mreg_ioc_read, struct mreg_read, dst),
	MREG_IOCTL_OP(MREG_IOC_WATCH, mreg_ioc_watch, struct mreg_watch,
		      out_generation),
	MREG_IOCTL_OP(MREG_IOC_UNWATCH, mreg_ioc_unwatch, struct mreg_unwatch,
		      __reserved),
	MREG_IOCTL_OP(MREG_IOC_WATCH_INFO, mreg_ioc_watch_info,
		      struct mreg_watch_info, events),
};

/* Every entry point but close: only the owner's threads. */
static bool mreg_is_owner(struct mreg_file *mf)
{
	return current->mm == mf->mm;
}

static long mreg_fops_ioctl(struct file *filp, unsigned int cmd,
			    unsigned long arg)
{
	void __user *ubuf = (void __user *)arg;
	const struct mreg_ioctl_op *op;
	union mreg_ucmd_buffer buf;
	unsigned int nr = _IOC_NR(cmd);
	struct mreg_ucmd ucmd = {
		.mf = filp->private_data,
		.ubuffer = ubuf,
		.cmd = &buf,
	};
	int ret;

	if (nr < MREG_CMD_BASE || nr - MREG_CMD_BASE >= ARRAY_SIZE(mreg_ioctl_ops))
		return -ENOTTY;
	op = &mreg_ioctl_ops[array_index_nospec(nr - MREG_CMD_BASE,
						ARRAY_SIZE(mreg_ioctl_ops))];
	if (op->ioctl_num != cmd)
		return -ENOTTY;
	if (!mreg_is_owner(ucmd.mf))
		return -EPERM;
	if (get_user(ucmd.user_size, (u32 __user *)ubuf))
		return -EFAULT;
	if (ucmd.user_size < op->min_size)
		return -EINVAL;
	/* copy_struct_from_user() checks a tail for zeros, without a break. */
	if (ucmd.user_size > MREG_MAX_STRUCT_SIZE)
		return -E2BIG;
	ret = copy_struct_from_user(&buf, op->size, ubuf, ucmd.user_size);
	if (ret)
		return ret;
	return op->execute(&ucmd);
}

static int mreg_fops_open(struct inode *inode, struct file *filp)
{
	struct mreg_file *mf;

	int ret;

	mf = kzalloc(sizeof(*mf), GFP_KERNEL_ACCOUNT);
	if (!mf)
		return -ENOMEM;
	ret = mreg_account_open(mf);
	if (ret) {
		kfree(mf);
		return ret;
	}
	xa_init_flags(&mf->pins, XA_FLAGS_ALLOC1);
	mutex_init(&mf->lock);
	atomic64_set(&mf->pinned_pages, 0);
	mf->max_pages = READ_ONCE(mreg_max_pin_pages_per_file);
	mreg_watch_set_init(&mf->watch, mf->mm, mf->owner, mf->user);
	filp->private_data = mf;
	/* read() honours RWF_NOWAIT, for readers sharing a blocking fd. */
	filp->f_mode |= FMODE_NOWAIT;
	return stream_open(inode, filp);
}

static int mreg_fops_release(struct inode *inode, struct file *filp)
{
	struct mreg_file *mf = filp->private_data;

	mreg_watch_set_release(&mf->watch);
	mreg_pin_release_all(mf);
	xa_destroy(&mf->pins);
	mutex_destroy(&mf->lock);
	mreg_account_release(mf);
	kfree(mf);
	return 0;
}

/* Events of the file's watches: struct mreg_watch_event records. */
static ssize_t mreg_fops_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	struct mreg_file *mf = iocb->ki_filp->private_data;
	bool nonblock = iocb->ki_filp->f_flags & O_NONBLOCK ||
			iocb->ki_flags & IOCB_NOWAIT;

	if (!mreg_is_owner(mf))
		return -EPERM;
	return mreg_watch_read(&mf->watch, to, nonblock);
}

/* Another mm has no events here: it learns it at once, not never. */
static __poll_t mreg_fops_poll(struct file *filp, poll_table *wait)
{
	struct mreg_file *mf = filp->private_data;

	if (!mreg_is_owner(mf))
		return EPOLLERR;
	return mreg_watch_poll(&mf->watch, filp, wait);
}

/* The generation array of the file's watches, read-only. */
static int mreg_fops_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct mreg_file *mf = filp->private_data;

	if (!mreg_is_owner(mf))
		return -EPERM;
	return mreg_watch_mmap(&mf->watch, vma);
}

const struct file_operations mreg_fops = {
	.owner = THIS_MODULE,
	.open = mreg_fops_open,
	.release = mreg_fops_release,
	.read_iter = mreg_fops_read_iter,
	.poll = mreg_fops_poll,
	.mmap = mreg_fops_mmap,
	.unlocked_ioctl = mreg_fops_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};
