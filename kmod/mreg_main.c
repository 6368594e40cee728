// SPDX-License-Identifier: GPL-2.0
/*
 * mreg.ko: pins user memory for userspace drivers, reports the pinned
 * folios as extents, and times the GUP calls the way mm/gup_test.c does on
 * kernels built without CONFIG_GUP_TEST.
 *
 * This file registers the misc device /dev/mreg.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/moduleparam.h>

#include "mreg_priv.h"

/*
 * The ABI passes addresses and lengths as u64 and the code keeps them in
 * unsigned long; Kbuild and dkms.conf refuse 32-bit kernels, this too.
 */
static_assert(sizeof(unsigned long) == sizeof(u64));

/* 1 GiB of 4 KiB pages: enough for the 256 MiB benches, small for a guest. */
unsigned long mreg_max_pin_pages_per_file = 1UL << 18;

/*
 * Bounded by the RAM of the machine: PIN and BENCH allocate arrays of
 * this many pointers, and no file can pin more than there is anyway.
 */
static int mreg_param_set_max(const char *val, const struct kernel_param *kp)
{
	unsigned long n;
	int ret;

	ret = kstrtoul(val, 0, &n);
	if (ret)
		return ret;
	if (!n || n > totalram_pages())
		return -EINVAL;
	WRITE_ONCE(mreg_max_pin_pages_per_file, n);
	return 0;
}

static const struct kernel_param_ops mreg_param_max_ops = {
	.set = mreg_param_set_max,
	.get = param_get_ulong,
};

module_param_cb(max_pin_pages_per_file, &mreg_param_max_ops,
		&mreg_max_pin_pages_per_file, 0644);
MODULE_PARM_DESC(max_pin_pages_per_file,
		 "Cap on pages pinned through one open file, 1..RAM pages (default 262144)");

/* A uint parameter in 1..@max; the setters below only name their bound. */
static int mreg_param_set_uint(const char *val, unsigned int *dst,
			       unsigned int max)
{
	unsigned int n;
	int ret;

	ret = kstrtouint(val, 0, &n);
	if (ret)
		return ret;
	if (!n || n > max)
		return -EINVAL;
	WRITE_ONCE(*dst, n);
	return 0;
}

/*
 * Watches per open file: each costs a slot of the generation array
 * (8 bytes, allocated whole at first use: 128 KiB by default) and ~100
 * bytes, all charged to the caller's memory cgroup.
 */
unsigned int mreg_max_watches_per_file = 16383;

static int mreg_param_set_max_watches(const char *val,
				      const struct kernel_param *kp)
{
	return mreg_param_set_uint(val, &mreg_max_watches_per_file,
				   (1U << 20) - 1);
}

static const struct kernel_param_ops mreg_param_max_watches_ops = {
	.set = mreg_param_set_max_watches,
	.get = param_get_uint,
};

module_param_cb(max_watches_per_file, &mreg_param_max_watches_ops,
		&mreg_max_watches_per_file, 0644);
MODULE_PARM_DESC(max_watches_per_file,
		 "Cap on watches of one open file, 1..1048575 (default 16383); read at its first WATCH or mmap");

/*
 * Watches of one user across all the user's files: each costs a notifier
 * call on every invalidation of its range, made by whoever invalidates:
 * kswapd, kcompactd, another task's compaction, under the folio and rmap
 * locks.  So the bound on that work must not grow with the number of
 * files a user opens; the default is one file's worth.
 */
unsigned int mreg_max_watches_per_user = 16384;

static int mreg_param_set_max_watches_user(const char *val,
					   const struct kernel_param *kp)
{
	return mreg_param_set_uint(val, &mreg_max_watches_per_user, 1U << 24);
}

static const struct kernel_param_ops mreg_param_max_watches_user_ops = {
	.set = mreg_param_set_max_watches_user,
	.get = param_get_uint,
};

module_param_cb(max_watches_per_user, &mreg_param_max_watches_user_ops,
		&mreg_max_watches_per_user, 0644);
MODULE_PARM_DESC(max_watches_per_user,
		 "Cap on the watches of one user across all files, 1..16777216 (default 16384)");

/*
 * Root only until udev applies the rule that ships with the module
 * (kmod/60-mreg.rules: group mreg, 0660), as /dev/vfio and /dev/kvm are
 * handed out: RLIMIT_MEMLOCK bounds what a member pins, the group bounds
 * who may pin long-term at all.
 */
static struct miscdevice mreg_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "mreg",
	.fops = &mreg_fops,
	.mode = 0600,
};

static int __init mreg_init(void)
{
	int ret;

	ret = misc_register(&mreg_misc);
	if (ret)
		pr_err("misc_register failed: %d\n", ret);
	return ret;
}

static void __exit mreg_exit(void)
{
	misc_deregister(&mreg_misc);
}

module_init(mreg_init);
module_exit(mreg_exit);

MODULE_DESCRIPTION("Pin service with folio extents, GUP benchmark and invalidation watches");
MODULE_AUTHOR("mreg developers");
MODULE_LICENSE("GPL");
MODULE_VERSION("1.0");
