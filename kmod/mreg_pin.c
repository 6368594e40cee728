// SPDX-License-Identifier: GPL-2.0
/*
 * The pin service: MREG_IOC_PIN, QUERY, UNPIN and READ.
 *
 * A pin keeps every pinned page in order, whatever pinned it, so QUERY and
 * READ walk one array.  Anonymous and file mappings are pinned with
 * pin_user_pages_fast(FOLL_LONGTERM) in large batches; memfds with
 * memfd_pin_folios(), which takes one pin per folio, and the pages array
 * is then filled from the folios.
 *
 * Lifetime: a pin starts with one reference, owned by its handle.  PIN
 * reserves the handle, copies the reply out and only then publishes the
 * pin, so no other thread can reach a pin whose creator still uses it and
 * a reply that cannot be delivered leaves nothing pinned.  QUERY and READ
 * take a reference for the duration of their copy; UNPIN removes the
 * handle and drops its reference; the last reference unpins.
 */
#include <linux/backing-dev.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/hugetlb.h>
#include <linux/io.h>
/* mm.h first: 7.3's memfd.h uses vma_flags_t without including it. */
#include <linux/mm.h>
#include <linux/memfd.h>
#include <linux/nospec.h>
#include <linux/overflow.h>
#include <linux/sched/signal.h>
#include <linux/shmem_fs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "mreg_priv.h"

/* 256 MiB of 4 KiB pages per pin_user_pages_fast() call. */
#define MREG_PIN_BATCH		65536UL
#define MREG_PIN_FLAGS		(MREG_PIN_FLAG_MEMFD | MREG_PIN_FLAG_READONLY)
#define MREG_EXTENT_MIN_SIZE	sizeof(struct mreg_extent)
/* Pages unpinned between two reschedule points. */
#define MREG_UNPIN_BATCH	4096UL
/* Sized by userspace: charged to its memcg, and no splat when too big. */
#define MREG_PIN_GFP		(GFP_KERNEL_ACCOUNT | __GFP_NOWARN)

/**
 * mreg_check_range() - validate a user range or file range
 * @addr: start, user address or file offset
 * @length: bytes
 *
 * Return: 0, or -EINVAL when the range is empty, unaligned or wraps.
 */
int mreg_check_range(u64 addr, u64 length)
{
	u64 end;

	if (!length || !PAGE_ALIGNED(addr) || !PAGE_ALIGNED(length))
		return -EINVAL;
	if (check_add_overflow(addr, length, &end))
		return -EINVAL;
	return 0;
}

/*
 * End of the extent starting at page @i: the pages that follow it
 * physically inside its folio.  Only the first page's struct page is read;
 * the rest is pfn arithmetic, so a 2 MB folio costs one cache miss, not
 * 512.
 */
static unsigned long mreg_extent_end(struct mreg_pin_obj *pin,
				     unsigned long i)
{
	struct page *first = pin->pages[i];
	struct folio *folio = page_folio(first);
	unsigned long pfn = page_to_pfn(first);
	unsigned long left = folio_pfn(folio) + folio_nr_pages(folio) - pfn;
	unsigned long n = 1;

	left = min(left, pin->nr_pages - i);
	while (n < left && page_to_pfn(pin->pages[i + n]) == pfn + n)
		n++;
	return i + n;
}

/*
 * A folio whose refcount passed half its range refuses further pins: one
 * pin adds GUP_PIN_COUNTING_BIAS per page, and past INT_MAX GUP warns
 * (a panic with panic_on_warn) and stops pinning the page for everyone.
 * One more pin of the cap adds at most 2^28, so the count stays positive.
 */
static bool mreg_folio_crowded(struct folio *folio)
{
	return folio_ref_count(folio) > INT_MAX / 2;
}

/*
 * Count extents, and folios as the changes of folio between extents;
 * return the pages of those folios, whole: what the pin holds.  A folio
 * met twice (mapped twice in the range) is counted twice, which only
 * charges more.  *@crowded is set when a folio is too pinned already.
 */
static unsigned long mreg_count_extents(struct mreg_pin_obj *pin,
					unsigned long *nr_folios,
					bool *crowded)
{
	struct folio *prev = NULL, *folio;
	unsigned long i = 0, held = 0;

	pin->nr_extents = 0;
	*nr_folios = 0;
	*crowded = false;
	while (i < pin->nr_pages) {
		folio = page_folio(pin->pages[i]);
		if (folio != prev) {
			(*nr_folios)++;
			held += folio_nr_pages(folio);
			*crowded |= mreg_folio_crowded(folio);
		}
		prev = folio;
		i = mreg_extent_end(pin, i);
		pin->nr_extents++;
		cond_resched();
	}
	if (pin->folios) {
		*nr_folios = pin->nr_folios;
		for (held = 0, i = 0; i < pin->nr_folios; i++)
			held += folio_nr_pages(pin->folios[i]);
	}
	return max(held, pin->nr_pages);
}

/*
 * unpin_folios() does not dirty: a device may have written a clean shmem
 * folio, which reclaim would then drop.  So a writable memfd pin marks
 * each folio dirty, under the folio lock as set_page_dirty_lock() does,
 * before unpinning, like unpin_user_pages_dirty_lock() for page pins.
 */
static void mreg_unpin_folios(struct mreg_pin_obj *pin)
{
	unsigned long i;

	for (i = 0; pin->writable && i < pin->nr_folios; i++) {
		set_page_dirty_lock(folio_page(pin->folios[i], 0));
		cond_resched();
	}
	for (i = 0; i < pin->nr_folios; i += MREG_UNPIN_BATCH) {
		mreg_unpin_folio_array(pin->folios + i,
				       min(pin->nr_folios - i,
					   MREG_UNPIN_BATCH));
		cond_resched();
	}
}

/* In batches: a pin may hold every page of the machine. */
static void mreg_unpin_page_array(struct page **pages, unsigned long npages,
				  bool dirty)
{
	unsigned long done, n;

	for (done = 0; done < npages; done += n) {
		n = min(npages - done, MREG_UNPIN_BATCH);
		unpin_user_pages_dirty_lock(pages + done, n, dirty);
		cond_resched();
	}
}

static void mreg_unpin_pages(struct mreg_pin_obj *pin, unsigned long npages)
{
	if (pin->folios)
		mreg_unpin_folios(pin);
	else
		mreg_unpin_page_array(pin->pages, npages, pin->writable);
}

static void mreg_pin_free(struct mreg_pin_obj *pin)
{
	kvfree(pin->folios);
	kvfree(pin->pages);
	kfree(pin);
}

static void mreg_pin_destroy(struct mreg_file *mf, struct mreg_pin_obj *pin)
{
	mreg_unpin_pages(pin, pin->nr_pages);
	mreg_account_uncharge(mf, pin);
	mreg_pin_free(pin);
}

/* Drop a reference; the last one unpins, uncharges and frees. */
static void mreg_pin_put(struct mreg_file *mf, struct mreg_pin_obj *pin)
{
	if (refcount_dec_and_test(&pin->users))
		mreg_pin_destroy(mf, pin);
}

/*
 * Reference the published pin of @handle, or NULL.  A handle that PIN has
 * only reserved holds XA_ZERO_ENTRY, which xa_load() returns as NULL.
 */
static struct mreg_pin_obj *mreg_pin_get(struct mreg_file *mf, u32 handle)
{
	struct mreg_pin_obj *pin;

	xa_lock(&mf->pins);
	pin = xa_load(&mf->pins, handle);
	if (pin && !refcount_inc_not_zero(&pin->users))
		pin = NULL;
	xa_unlock(&mf->pins);
	return pin;
}

/*
 * Is @folio page cache that writeback tracks?  A device writing it through
 * a long-term pin dirties it behind the filesystem's back (writeback sees
 * a page it never made writable).  Since 6.5 GUP refuses such
 * FOLL_LONGTERM|FOLL_WRITE pins itself (vma_needs_dirty_tracking());
 * before, this does, on the pinned folios, so that no VMA can change
 * between check and pin.  Anonymous, shmem and hugetlb memory, page cache
 * without writeback (ramfs) and folios truncated meanwhile are fine.
 */
static bool mreg_folio_dirty_tracked(struct folio *folio)
{
	struct address_space *mapping;

	if (folio_test_anon(folio) || folio_test_hugetlb(folio))
		return false;
	mapping = folio_mapping(folio);
	return mapping && mapping_can_writeback(mapping);
}

static bool mreg_pages_dirty_tracked(struct page **pages, unsigned long nr)
{
	struct folio *folio, *prev = NULL;
	unsigned long i;

	for (i = 0; i < nr; i++) {
		folio = page_folio(pages[i]);
		if (folio != prev && mreg_folio_dirty_tracked(folio))
			return true;
		prev = folio;
		if (!(i & 4095))
			cond_resched();
	}
	return false;
}

/*
 * A read-only long-term pin must hold the page the process maps, now and
 * after its next write.  Recent GUP unshares the shared zero page of a
 * private mapping for such a pin (FAULT_FLAG_UNSHARE); 6.1's pins the
 * zero page itself, and the process's first write maps another page the
 * pin never sees (kmod-tornread's read-only pin of a zapped page).  So a
 * read-only pin that got the zero page is undone, each such page gets a
 * write fault where the mapping allows one (a private copy, no data
 * written), and the pin is taken again.  A read-only mapping keeps the
 * zero page, which is then what it maps for good.  Where GUP unshares
 * itself, this is one pass over the pinned pages, finding nothing.
 */
static bool mreg_pinned_zero_page(struct page **pages, unsigned long nr)
{
	unsigned long i;

	for (i = 0; i < nr; i++)
		if (is_zero_pfn(page_to_pfn(pages[i])))
			return true;
	return false;
}

static int mreg_unshare_zero_pages(struct page **pages, unsigned long nr,
				   unsigned long addr)
{
	struct mm_struct *mm = current->mm;
	unsigned long i;
	int ret = 0;

	mmap_read_lock(mm);
	for (i = 0; i < nr && !ret; i++) {
		if (!is_zero_pfn(page_to_pfn(pages[i])))
			continue;
		ret = fixup_user_fault(mm, addr + (i << PAGE_SHIFT),
				       FAULT_FLAG_WRITE, NULL);
		if (ret == -EFAULT)
			ret = 0; /* not writable: the zero page stays */
	}
	mmap_read_unlock(mm);
	return ret;
}

static long mreg_pin_range(struct mreg_pin_obj *pin, unsigned long addr,
			   unsigned int gup_flags, unsigned long *done)
{
	long n;

	*done = 0;
	while (*done < pin->nr_pages) {
		n = min(pin->nr_pages - *done, MREG_PIN_BATCH);
		n = pin_user_pages_fast(addr + (*done << PAGE_SHIFT), n,
					gup_flags, pin->pages + *done);
		if (n <= 0)
			return n ? n : -EFAULT;
		*done += n;
		if (fatal_signal_pending(current))
			return -EINTR;
		cond_resched();
	}
	return 0;
}

static int mreg_pin_user(struct mreg_pin_obj *pin, unsigned long addr)
{
	unsigned int gup_flags = FOLL_LONGTERM;
	unsigned long done;
	long n;

	if (pin->writable)
		gup_flags |= FOLL_WRITE;
	n = mreg_pin_range(pin, addr, gup_flags, &done);
	if (!n && !pin->writable && mreg_pinned_zero_page(pin->pages, done)) {
		n = mreg_unshare_zero_pages(pin->pages, done, addr);
		mreg_unpin_page_array(pin->pages, done, false);
		done = 0;
		if (!n)
			n = mreg_pin_range(pin, addr, gup_flags, &done);
	}
	if (!n && pin->writable && mreg_pages_dirty_tracked(pin->pages, done))
		n = -EFAULT;
	if (!n)
		return 0;
	/* Nobody could have written them through the pin: not dirtied. */
	mreg_unpin_page_array(pin->pages, done, false);
	return n;
}

/*
 * Fill pin->pages from the folios memfd_pin_folios() returned.  Returns
 * false if they do not cover the range, which memfd_pin_folios() does not
 * do today; the caller then unpins rather than trusting a short array.
 */
static bool mreg_pin_fill_pages(struct mreg_pin_obj *pin, pgoff_t first_off)
{
	unsigned long k = 0, f, p;
	struct folio *folio;

	for (f = 0; f < pin->nr_folios && k < pin->nr_pages; f++) {
		folio = pin->folios[f];
		p = f ? 0 : first_off >> PAGE_SHIFT;
		for (; p < folio_nr_pages(folio) && k < pin->nr_pages; p++)
			pin->pages[k++] = folio_page(folio, p);
	}
	return k == pin->nr_pages;
}

/*
 * memfd_pin_folios() takes folios as the page cache holds them, and a
 * shmem folio that fallocate() created is not uptodate: never cleared, it
 * holds what the page allocator left there (without init_on_alloc,
 * another user's data), which READ would show, while read() and faults
 * see zeros and would clear it later, over what a device wrote.  Each
 * such folio is cleared the way a read clears it; one replaced meanwhile
 * (truncated and refilled) fails the pin with EAGAIN.
 */
static int mreg_memfd_uptodate(struct mreg_pin_obj *pin, struct file *file)
{
	struct folio *folio, *got;
	unsigned long i;
	bool same;

	for (i = 0; i < pin->nr_folios; i++) {
		folio = pin->folios[i];
		if (folio_test_uptodate(folio))
			continue;
		got = mreg_shmem_read_folio(file->f_mapping, folio->index);
		if (IS_ERR(got))
			return PTR_ERR(got);
		same = got == folio;
		folio_put(got);
		if (!same)
			return -EAGAIN;
		cond_resched();
	}
	return 0;
}

static long mreg_pin_memfd_file(struct mreg_pin_obj *pin, struct file *file,
				loff_t start)
{
	loff_t end = start + ((loff_t)pin->nr_pages << PAGE_SHIFT) - 1;
	pgoff_t first_off = 0;
	long n;

	pin->folios = kvmalloc_array(pin->nr_pages, sizeof(*pin->folios),
				     MREG_PIN_GFP);
	if (!pin->folios)
		return -ENOMEM;
	n = mreg_memfd_pin_folios(file, start, end, pin->folios,
				  min_t(unsigned long, pin->nr_pages, UINT_MAX),
				  &first_off);
	if (n <= 0)
		return n ? n : -EFAULT;
	pin->nr_folios = n;
	n = mreg_pin_fill_pages(pin, first_off) ?
	    mreg_memfd_uptodate(pin, file) : -EFAULT;
	if (n)
		mreg_unpin_folio_array(pin->folios, pin->nr_folios);
	return n;
}

/**
 * mreg_memfd_check() - may @file be pinned for this access
 * @file: the file passed as a memfd
 * @write: the pin allows writing (a device may write the pages)
 *
 * memfd_pin_folios() checks neither the open mode nor the seals, so this
 * does what mmap() would: reading needs FMODE_READ, writing FMODE_WRITE
 * as well.  Seals (F_SEAL_WRITE, F_SEAL_FUTURE_WRITE) cannot be checked
 * from a module: memfd_file_seals_ptr() is not exported.
 *
 * hugetlbfs files are refused: memfd_pin_folios() fills a hole of one
 * with alloc_hugetlb_folio_reserve(), which takes any free huge page and
 * consumes a reservation it never made, so a caller pinning holes steals
 * the huge pages other users reserved (they get SIGBUS at their next
 * fault) and, with none reserved, underflows the count (a VM_BUG_ON on
 * DEBUG_VM kernels).  A hugetlb memfd is pinned through its mapping,
 * whose faults honour its reservation.
 *
 * A file open only for reading must be the caller's own (or the caller
 * CAP_FOWNER): a pin of another user's tmpfs file would keep that user's
 * folios, charged to that user's memory cgroup, unreclaimable and
 * unsplittable after truncation, and make its F_SEAL_WRITE fail.
 *
 * Return: 0, -EINVAL when @file is not shmem or hugetlbfs, -EOPNOTSUPP
 * for hugetlbfs, -EACCES when its open mode does not allow the access or
 * it is another user's file open read-only.
 */
int mreg_memfd_check(struct file *file, bool write)
{
	/*
	 * Before 6.11 also keeps is_file_hugepages(), whose symbols 6.1 does
	 * not export, out of the module.
	 */
	if (!MREG_CAN_PIN_MEMFD)
		return -EOPNOTSUPP;
	if (is_file_hugepages(file))
		return -EOPNOTSUPP;
	if (!shmem_file(file))
		return -EINVAL;
	if (!(file->f_mode & FMODE_READ))
		return -EACCES;
	if (write && !(file->f_mode & FMODE_WRITE))
		return -EACCES;
	if (!(file->f_mode & FMODE_WRITE) && !mreg_file_owner_or_capable(file))
		return -EACCES;
	return 0;
}

static int mreg_pin_memfd(struct mreg_pin_obj *pin, int fd, u64 offset)
{
	struct file *file;
	long ret;

	if (offset > LLONG_MAX - ((u64)pin->nr_pages << PAGE_SHIFT))
		return -EINVAL;
	file = fget(fd);
	if (!file)
		return -EBADF;
	ret = mreg_memfd_check(file, pin->writable);
	if (!ret)
		ret = mreg_pin_memfd_file(pin, file, offset);
	fput(file);
	if (ret) {
		kvfree(pin->folios);
		pin->folios = NULL;
	}
	return ret;
}

static int mreg_pin_check(struct mreg_pin *cmd)
{
	if (cmd->flags & ~MREG_PIN_FLAGS || cmd->__reserved)
		return -EINVAL;
	if (!(cmd->flags & MREG_PIN_FLAG_MEMFD) && cmd->memfd)
		return -EINVAL;
	/* Before anything is charged or allocated: no memfd_pin_folios(). */
	if ((cmd->flags & MREG_PIN_FLAG_MEMFD) && !MREG_CAN_PIN_MEMFD)
		return -EOPNOTSUPP;
	return mreg_check_range(cmd->addr, cmd->length);
}

static int mreg_pin_pages(struct mreg_pin_obj *pin, struct mreg_pin *cmd)
{
	/* Not zeroed: every entry is written before it is read. */
	pin->pages = kvmalloc_array(pin->nr_pages, sizeof(*pin->pages),
				    MREG_PIN_GFP);
	if (!pin->pages)
		return -ENOMEM;
	if (cmd->flags & MREG_PIN_FLAG_MEMFD)
		return mreg_pin_memfd(pin, cmd->memfd, cmd->addr);
	return mreg_pin_user(pin, cmd->addr);
}

/*
 * Publish @pin under a handle, the iommufd way: fill the reply, reserve
 * the handle, copy the reply out, and only then store the pin.  Until the
 * store nobody else can reach the pin, so a racing UNPIN of the handle
 * cannot free it under us; if the reply cannot be delivered the handle is
 * released and the caller destroys the pin, which nobody else has seen.
 */
static int mreg_pin_publish(struct mreg_ucmd *ucmd, struct mreg_pin_obj *pin,
			    unsigned long nr_folios)
{
	struct mreg_file *mf = ucmd->mf;
	struct mreg_pin *cmd = ucmd->cmd;
	u32 handle;
	void *old;
	int ret;

	cmd->out_nr_extents = min_t(unsigned long, pin->nr_extents, U32_MAX);
	cmd->out_nr_pages = pin->nr_pages;
	cmd->out_nr_folios = nr_folios;
	ret = xa_alloc_cyclic(&mf->pins, &handle, XA_ZERO_ENTRY, xa_limit_31b,
			      &mf->next_handle, GFP_KERNEL_ACCOUNT);
	if (ret < 0)
		return ret == -EBUSY ? -ENOSPC : ret;
	cmd->out_handle = handle;
	ret = mreg_ucmd_respond(ucmd, sizeof(*cmd));
	if (ret) {
		xa_erase(&mf->pins, handle);
		return ret;
	}
	refcount_set(&pin->users, 1);
	/* Replaces the reservation: allocates nothing, cannot fail. */
	old = xa_store(&mf->pins, handle, pin, GFP_KERNEL);
	WARN_ON_ONCE(old);
	return 0;
}

/**
 * mreg_pin() - MREG_IOC_PIN
 * @ucmd: the ioctl, a struct mreg_pin; the reply is copied out here
 *
 * Return: 0 or -errno; on error nothing stays pinned or charged.
 */
int mreg_pin(struct mreg_ucmd *ucmd)
{
	struct mreg_file *mf = ucmd->mf;
	struct mreg_pin *cmd = ucmd->cmd;
	unsigned long nr_folios, held;
	struct mreg_pin_obj *pin;
	bool crowded;
	int ret;

	ret = mreg_pin_check(cmd);
	if (ret)
		return ret;
	pin = kzalloc(sizeof(*pin), GFP_KERNEL_ACCOUNT);
	if (!pin)
		return -ENOMEM;
	pin->nr_pages = cmd->length >> PAGE_SHIFT;
	pin->writable = !(cmd->flags & MREG_PIN_FLAG_READONLY);
	ret = mreg_account_charge(mf, pin, pin->nr_pages);
	if (ret)
		goto err_free;
	ret = mreg_pin_pages(pin, cmd);
	if (ret)
		goto err_uncharge;
	held = mreg_count_extents(pin, &nr_folios, &crowded);
	ret = -EOVERFLOW;
	if (crowded)
		goto err_unpin;
	if (held > pin->nr_pages) {
		ret = mreg_account_charge(mf, pin, held - pin->nr_pages);
		if (ret)
			goto err_unpin;
	}
	ret = mreg_pin_publish(ucmd, pin, nr_folios);
	if (ret)
		goto err_unpin;
	return 0;

err_unpin:
	mreg_unpin_pages(pin, pin->nr_pages);
err_uncharge:
	mreg_account_uncharge(mf, pin);
err_free:
	mreg_pin_free(pin);
	return ret;
}

/**
 * mreg_unpin() - MREG_IOC_UNPIN
 * @mf: the open file
 * @cmd: the command
 *
 * The handle goes at once; the pages are unpinned by the last reference,
 * here or at the end of a QUERY or READ still using the pin.  A handle
 * that a PIN in flight has only reserved is unknown, and stays reserved.
 *
 * Return: 0, -EINVAL for bad flags, -ENOENT for an unknown handle.
 */
int mreg_unpin(struct mreg_file *mf, struct mreg_unpin *cmd)
{
	struct mreg_pin_obj *pin;

	if (cmd->flags || cmd->__reserved)
		return -EINVAL;
	xa_lock(&mf->pins);
	pin = xa_load(&mf->pins, cmd->handle);
	if (pin)
		__xa_erase(&mf->pins, cmd->handle);
	xa_unlock(&mf->pins);
	if (!pin)
		return -ENOENT;
	mreg_pin_put(mf, pin);
	return 0;
}

/**
 * mreg_pin_release_all() - drop every pin of a file being released
 * @mf: the open file, no longer reachable from userspace
 *
 * No ioctl runs any more, so every pin has only its handle's reference.
 */
void mreg_pin_release_all(struct mreg_file *mf)
{
	struct mreg_pin_obj *pin;
	unsigned long index;

	xa_for_each(&mf->pins, index, pin) {
		xa_erase(&mf->pins, index);
		mreg_pin_put(mf, pin);
		cond_resched();
	}
}

static int mreg_put_extent(struct mreg_query *cmd, unsigned long n,
			   struct mreg_pin_obj *pin, unsigned long first,
			   unsigned long end, bool phys)
{
	void __user *dst = u64_to_user_ptr(cmd->extents) + n * cmd->extent_size;
	struct mreg_extent e = {
		.offset = (u64)first << PAGE_SHIFT,
		.length = (u64)(end - first) << PAGE_SHIFT,
		.order = folio_order(page_folio(pin->pages[first])),
	};

	if (phys)
		e.phys = page_to_phys(pin->pages[first]);
	if (copy_to_user(dst, &e, min_t(size_t, sizeof(e), cmd->extent_size)))
		return -EFAULT;
	/* A newer, larger struct gets zeros where this module has no field. */
	if (cmd->extent_size > sizeof(e) &&
	    clear_user(dst + sizeof(e), cmd->extent_size - sizeof(e)))
		return -EFAULT;
	return 0;
}

static int mreg_query_pin(struct mreg_query *cmd, struct mreg_pin_obj *pin,
			  bool phys)
{
	unsigned long i = 0, n = 0, end;
	int ret;

	if (cmd->nr_extents < pin->nr_extents) {
		cmd->nr_extents = pin->nr_extents;
		return -EMSGSIZE;
	}
	while (i < pin->nr_pages) {
		end = mreg_extent_end(pin, i);
		ret = mreg_put_extent(cmd, n++, pin, i, end, phys);
		if (ret)
			return ret;
		i = end;
		if (fatal_signal_pending(current))
			return -EINTR;
		cond_resched();
	}
	cmd->nr_extents = n;
	return 0;
}

/**
 * mreg_query() - MREG_IOC_QUERY
 * @mf: the open file
 * @cmd: the command
 *
 * Return: 0, -EMSGSIZE with @cmd->nr_extents set to the count needed, or
 * -errno.
 */
int mreg_query(struct mreg_file *mf, struct mreg_query *cmd)
{
	struct mreg_pin_obj *pin;
	u64 bytes;
	int ret;

	if (cmd->flags || cmd->__reserved || cmd->__reserved2)
		return -EINVAL;
	if (cmd->extent_size < MREG_EXTENT_MIN_SIZE ||
	    cmd->extent_size > MREG_EXTENT_MAX_SIZE ||
	    check_mul_overflow(cmd->nr_extents, (u64)cmd->extent_size, &bytes))
		return -EINVAL;
	pin = mreg_pin_get(mf, cmd->handle);
	if (!pin)
		return -ENOENT;
	ret = mreg_query_pin(cmd, pin, mf->phys);
	mreg_pin_put(mf, pin);
	return ret;
}

static int mreg_read_pin(struct mreg_read *cmd, struct mreg_pin_obj *pin)
{
	char __user *dst = u64_to_user_ptr(cmd->dst);
	u64 off = cmd->offset, left = cmd->length;
	unsigned long rem, idx;
	size_t poff, chunk;
	void *kaddr;

	while (left) {
		poff = offset_in_page(off);
		chunk = min_t(u64, PAGE_SIZE - poff, left);
		/* In range (mreg_read() checked it), even under speculation. */
		idx = array_index_nospec(off >> PAGE_SHIFT, pin->nr_pages);
		kaddr = kmap_local_page(pin->pages[idx]);
		rem = copy_to_user(dst, kaddr + poff, chunk);
		kunmap_local(kaddr);
		if (rem)
			return -EFAULT;
		dst += chunk;
		off += chunk;
		left -= chunk;
		if (fatal_signal_pending(current))
			return -EINTR;
		cond_resched();
	}
	return 0;
}

/**
 * mreg_read() - MREG_IOC_READ
 * @mf: the open file
 * @cmd: the command
 *
 * Return: 0 or -errno.
 */
int mreg_read(struct mreg_file *mf, struct mreg_read *cmd)
{
	struct mreg_pin_obj *pin;
	u64 end;
	int ret;

	if (cmd->flags || cmd->__reserved)
		return -EINVAL;
	if (check_add_overflow(cmd->offset, cmd->length, &end))
		return -EINVAL;
	pin = mreg_pin_get(mf, cmd->handle);
	if (!pin)
		return -ENOENT;
	if (end > (u64)pin->nr_pages << PAGE_SHIFT)
		ret = -EINVAL;
	else
		ret = mreg_read_pin(cmd, pin);
	mreg_pin_put(mf, pin);
	return ret;
}
