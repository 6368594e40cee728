/* SPDX-License-Identifier: MIT */
/*
 * PAGEMAP_SCAN (Linux 6.7) from <linux/fs.h>, for build hosts whose uapi
 * headers predate it. The running kernel decides at run time (-ENOTTY).
 */
#ifndef MREG_PAGEMAP_COMPAT_H
#define MREG_PAGEMAP_COMPAT_H

#include <linux/fs.h>
#include <linux/kernel-page-flags.h>
#include <linux/types.h>

#ifndef PAGEMAP_SCAN
#define PAGE_IS_PRESENT (1 << 3)
#define PAGE_IS_HUGE	(1 << 6)

struct page_region {
	__u64 start;
	__u64 end;
	__u64 categories;
};

struct pm_scan_arg {
	__u64 size;
	__u64 flags;
	__u64 start;
	__u64 end;
	__u64 walk_end;
	__u64 vec;
	__u64 vec_len;
	__u64 max_pages;
	__u64 category_inverted;
	__u64 category_mask;
	__u64 category_anyof_mask;
	__u64 return_mask;
};

#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#endif

/* /proc/pid/pagemap entry, Documentation/admin-guide/mm/pagemap.rst */
#define PM_PFN_MASK ((1ull << 55) - 1)
#define PM_PRESENT  (1ull << 63)

#endif
