/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What mreg.ko uses that older kernels name differently or lack, so that
 * DKMS builds it against every kernel from 6.1 up.  An out-of-tree module
 * only has LINUX_VERSION_CODE to go by; each feature missing at build time
 * is reported in MREG_IOC_INFO's caps and refused with EOPNOTSUPP.
 */
#ifndef MREG_COMPAT_H
#define MREG_COMPAT_H

#include <linux/mm.h>
#include <linux/version.h>

#if KERNEL_VERSION(6, 1, 0) > LINUX_VERSION_CODE
#error "mreg.ko needs Linux 6.1 or later (folios, mmu interval notifiers)"
#endif

/* memfd_pin_folios(), unpin_folios(): Linux 6.11. */
#if KERNEL_VERSION(6, 11, 0) <= LINUX_VERSION_CODE
#define MREG_HAVE_MEMFD_PIN 1
#else
#define MREG_HAVE_MEMFD_PIN 0
/* Never called: mreg_memfd_check() refuses every memfd first. */
static inline long memfd_pin_folios(struct file *memfd, loff_t start,
				    loff_t end, struct folio **folios,
				    unsigned int max_folios, pgoff_t *offset)
{
	return -EOPNOTSUPP;
}

static inline void unpin_folios(struct folio **folios, unsigned long nr)
{
	WARN_ON_ONCE(nr);
}

static inline struct folio *shmem_read_folio(struct address_space *mapping,
					     pgoff_t index)
{
	return ERR_PTR(-EOPNOTSUPP);
}
#endif

/* The vmas argument went in 6.5. */
#if KERNEL_VERSION(6, 5, 0) <= LINUX_VERSION_CODE
#define mreg_pin_user_pages(start, nr, flags, pages) \
	pin_user_pages(start, nr, flags, pages)
#define mreg_pin_user_pages_remote(mm, start, nr, flags, pages) \
	pin_user_pages_remote(mm, start, nr, flags, pages, NULL)
#else
#define mreg_pin_user_pages(start, nr, flags, pages) \
	pin_user_pages(start, nr, flags, pages, NULL)
#define mreg_pin_user_pages_remote(mm, start, nr, flags, pages) \
	pin_user_pages_remote(mm, start, nr, flags, pages, NULL, NULL)
#endif

/*
 * vm_flags became read-only behind accessors in 6.3, idmaps replaced
 * user namespaces on mounts in 6.3.
 */
#if KERNEL_VERSION(6, 3, 0) > LINUX_VERSION_CODE
static inline void vm_flags_mod(struct vm_area_struct *vma, vm_flags_t set,
				vm_flags_t clear)
{
	vma->vm_flags = (vma->vm_flags | set) & ~clear;
}

#define file_mnt_idmap(file) file_mnt_user_ns(file)
#endif

#endif
