/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What mreg.ko uses that older kernels name differently or lack, so that
 * DKMS builds it against every kernel from 6.1 up.  Kbuild probes the
 * headers themselves (MREG_HAVE_*), never the version number: a
 * distribution kernel may carry a backport.  Kernel names are never
 * redefined; each wrapper is mreg_-prefixed.  A feature the headers lack
 * is reported in MREG_IOC_INFO's caps and refused with EOPNOTSUPP.
 */
#ifndef MREG_COMPAT_H
#define MREG_COMPAT_H

#include <linux/fs.h>
#include <linux/memfd.h>
#include <linux/mm.h>
#include <linux/shmem_fs.h>

/* memfd_pin_folios(), unpin_folios(): Linux 6.11. */
#ifdef MREG_HAVE_MEMFD_PIN
#define MREG_CAN_PIN_MEMFD true

static inline long mreg_memfd_pin_folios(struct file *memfd, loff_t start,
					 loff_t end, struct folio **folios,
					 unsigned int max, pgoff_t *offset)
{
	return memfd_pin_folios(memfd, start, end, folios, max, offset);
}

static inline void mreg_unpin_folio_array(struct folio **folios,
					  unsigned long nr)
{
	unpin_folios(folios, nr);
}

static inline struct folio *mreg_shmem_read_folio(struct address_space *m,
						  pgoff_t index)
{
	return shmem_read_folio(m, index);
}
#else
#define MREG_CAN_PIN_MEMFD false

/* Never reached: mreg_pin_check() and the bench refuse memfds first. */
static inline long mreg_memfd_pin_folios(struct file *memfd, loff_t start,
					 loff_t end, struct folio **folios,
					 unsigned int max, pgoff_t *offset)
{
	return -EOPNOTSUPP;
}

static inline void mreg_unpin_folio_array(struct folio **folios,
					  unsigned long nr)
{
	WARN_ON_ONCE(nr);
}

static inline struct folio *mreg_shmem_read_folio(struct address_space *m,
						  pgoff_t index)
{
	return ERR_PTR(-EOPNOTSUPP);
}
#endif

/* pin_user_pages() and pin_user_pages_remote() lost their vmas in 6.5. */
#ifdef MREG_PUP_HAS_VMAS
#define mreg_pin_user_pages(start, nr, flags, pages) \
	pin_user_pages(start, nr, flags, pages, NULL)
#define mreg_pin_user_pages_remote(mm, start, nr, flags, pages) \
	pin_user_pages_remote(mm, start, nr, flags, pages, NULL, NULL)
#else
#define mreg_pin_user_pages(start, nr, flags, pages) \
	pin_user_pages(start, nr, flags, pages)
#define mreg_pin_user_pages_remote(mm, start, nr, flags, pages) \
	pin_user_pages_remote(mm, start, nr, flags, pages, NULL)
#endif

/* vm_flags went behind accessors in 6.3; ->mmap holds the write lock. */
static inline void mreg_vm_flags_mod(struct vm_area_struct *vma,
				     vm_flags_t set, vm_flags_t clear)
{
#ifdef MREG_HAVE_VM_FLAGS_MOD
	vm_flags_mod(vma, set, clear);
#else
	mmap_assert_write_locked(vma->vm_mm);
	vma->vm_flags = (vma->vm_flags | set) & ~clear;
#endif
}

/* Mounts carry an idmap from 6.3, a user namespace before. */
static inline bool mreg_file_owner_or_capable(struct file *file)
{
#ifdef MREG_HAVE_MNT_IDMAP
	return inode_owner_or_capable(file_mnt_idmap(file), file_inode(file));
#else
	return inode_owner_or_capable(file_mnt_user_ns(file), file_inode(file));
#endif
}

#endif
