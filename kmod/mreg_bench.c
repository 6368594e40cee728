// SPDX-License-Identifier: GPL-2.0
/*
 * MREG_IOC_BENCH: the measurement of mm/gup_test.c, for kernels built
 * without CONFIG_GUP_TEST, plus a census of the folios that were pinned.
 *
 * The range is got or pinned once with the chosen method, pages_per_call
 * pages at a time, and released; get and put are timed separately.  The
 * census (distinct folios, histogram by folio_order()) is taken in
 * between, outside both timings.
 *
 * Like gup_test, which lives in debugfs, it is for the administrator
 * (CAP_SYS_ADMIN, checked in mreg_file.c).  The pages are held only for
 * the call, but they are pinned long-term (memfd_pin_folios() always is)
 * and up to the per-file cap at a time, so the call is charged like a
 * pin, to the file cap and RLIMIT_MEMLOCK, for its duration.
 *
 * Every loop over the pages is as long as the per-file cap, which may be
 * all of RAM: each has a reschedule point.
 */
#include <linux/file.h>
#include <linux/ktime.h>
/* mm.h first: 7.3's memfd.h uses vma_flags_t without including it. */
#include <linux/mm.h>
#include <linux/memfd.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/sort.h>

#include "mreg_priv.h"

#define MREG_BENCH_FLAGS (MREG_BENCH_FLAG_WRITE | MREG_BENCH_FLAG_LONGTERM)
/* Sized by userspace: charged to its memcg, and no splat when too big. */
#define MREG_BENCH_GFP	(GFP_KERNEL_ACCOUNT | __GFP_NOWARN)

/**
 * struct mreg_bench_run - state of one benchmark run
 * @cmd: the user command
 * @pages: pages got or pinned, page methods only
 * @folios: folios pinned, memfd only
 * @census: scratch array for the folio census
 * @nr_pages: pages in the range
 * @nr_got: pages got or pinned (page methods), folios pinned (memfd)
 * @per_call: pages or folios asked per call
 * @gup_flags: FOLL_* flags for the page methods
 */
struct mreg_bench_run {
	struct mreg_bench *cmd;
	struct page **pages;
	struct folio **folios;
	struct folio **census;
	unsigned long nr_pages;
	unsigned long nr_got;
	unsigned long per_call;
	unsigned int gup_flags;
};

static long mreg_bench_call(struct mreg_bench_run *r, unsigned long addr,
			    unsigned long n, struct page **pages)
{
	switch (r->cmd->method) {
	case MREG_BENCH_GUP_FAST:
		return get_user_pages_fast(addr, n, r->gup_flags, pages);
	case MREG_BENCH_PUP_FAST:
		return pin_user_pages_fast(addr, n, r->gup_flags, pages);
	case MREG_BENCH_PUP:
		return mreg_pin_user_pages(addr, n, r->gup_flags, pages);
	case MREG_BENCH_PUP_REMOTE:
		return mreg_pin_user_pages_remote(current->mm, addr, n,
						  r->gup_flags, pages);
	}
	return -EINVAL;
}

static bool mreg_bench_locked(struct mreg_bench_run *r)
{
	return r->cmd->method == MREG_BENCH_PUP ||
	       r->cmd->method == MREG_BENCH_PUP_REMOTE;
}

static long mreg_bench_get_pages(struct mreg_bench_run *r)
{
	unsigned long addr = r->cmd->addr;
	long n = 0;

	if (mreg_bench_locked(r) && mmap_read_lock_killable(current->mm))
		return -EINTR;
	while (r->nr_got < r->nr_pages) {
		n = min(r->per_call, r->nr_pages - r->nr_got);
		n = mreg_bench_call(r, addr + (r->nr_got << PAGE_SHIFT), n,
				    r->pages + r->nr_got);
		if (n <= 0)
			break;
		r->nr_got += n;
		if (fatal_signal_pending(current))
			break;
		if (!mreg_bench_locked(r))
			cond_resched();
	}
	if (mreg_bench_locked(r))
		mmap_read_unlock(current->mm);
	return r->nr_got ? 0 : (n ? n : -EFAULT);
}

static u64 mreg_bench_covered(struct mreg_bench_run *r, unsigned long first,
			      long n, pgoff_t first_off)
{
	u64 bytes = folio_size(r->folios[first]) - first_off;
	long i;

	for (i = 1; i < n; i++)
		bytes += folio_size(r->folios[first + i]);
	return bytes;
}

static long mreg_bench_memfd_loop(struct mreg_bench_run *r, struct file *file)
{
	loff_t start = r->cmd->memfd_offset;
	loff_t end = start + r->cmd->length - 1;
	pgoff_t first_off;
	long n = 0;

	while (start <= end && r->nr_got < r->nr_pages) {
		n = min(r->per_call, r->nr_pages - r->nr_got);
		n = mreg_memfd_pin_folios(file, start, end,
					  r->folios + r->nr_got,
					  min_t(unsigned long, n, UINT_MAX),
					  &first_off);
		if (n <= 0)
			break;
		start += mreg_bench_covered(r, r->nr_got, n, first_off);
		r->nr_got += n;
		if (fatal_signal_pending(current))
			break;
		cond_resched();
	}
	return r->nr_got ? 0 : (n ? n : -EFAULT);
}

static long mreg_bench_get_memfd(struct mreg_bench_run *r)
{
	struct file *file;
	long ret;

	file = fget(r->cmd->memfd);
	if (!file)
		return -EBADF;
	ret = mreg_memfd_check(file, r->cmd->flags & MREG_BENCH_FLAG_WRITE);
	if (!ret)
		ret = mreg_bench_memfd_loop(r, file);
	fput(file);
	return ret;
}

/* Iterations between two reschedule points in the O(pages) loops. */
#define MREG_BENCH_RESCHED_MASK	4095UL

static void mreg_bench_resched(unsigned long i)
{
	if (!(i & MREG_BENCH_RESCHED_MASK))
		cond_resched();
}

static void mreg_bench_put(struct mreg_bench_run *r)
{
	unsigned long i, n;

	switch (r->cmd->method) {
	case MREG_BENCH_GUP_FAST:
		for (i = 0; i < r->nr_got; i++) {
			put_page(r->pages[i]);
			mreg_bench_resched(i);
		}
		break;
	case MREG_BENCH_MEMFD_PIN_FOLIOS:
		for (i = 0; i < r->nr_got; i += n) {
			n = min(r->nr_got - i, MREG_BENCH_RESCHED_MASK + 1);
			mreg_unpin_folio_array(r->folios + i, n);
			cond_resched();
		}
		break;
	default:
		for (i = 0; i < r->nr_got; i += n) {
			n = min(r->nr_got - i, MREG_BENCH_RESCHED_MASK + 1);
			unpin_user_pages(r->pages + i, n);
			cond_resched();
		}
	}
}

static int mreg_cmp_ptr(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a;
	unsigned long y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

/* Count distinct folios among @folios[0..@n) and histogram their orders. */
static void mreg_bench_histogram(struct mreg_bench *cmd,
				 struct folio **folios, unsigned long n)
{
	unsigned long i;
	unsigned int order;

	sort(folios, n, sizeof(*folios), mreg_cmp_ptr, NULL);
	for (i = 0; i < n; i++) {
		mreg_bench_resched(i);
		if (i && folios[i] == folios[i - 1])
			continue;
		order = min(folio_order(folios[i]), MREG_BENCH_NR_ORDERS - 1);
		cmd->order_hist[order]++;
		cmd->nr_folios++;
	}
}

static void mreg_bench_census(struct mreg_bench_run *r)
{
	struct mreg_bench *cmd = r->cmd;
	unsigned long i, n = 0;
	struct folio *folio;

	if (cmd->method == MREG_BENCH_MEMFD_PIN_FOLIOS) {
		for (i = 0; i < r->nr_got; i++) {
			cmd->nr_pages += folio_nr_pages(r->folios[i]);
			mreg_bench_resched(i);
		}
		cmd->nr_pages = min_t(u64, cmd->nr_pages, r->nr_pages);
		memcpy(r->census, r->folios, r->nr_got * sizeof(folio));
		mreg_bench_histogram(cmd, r->census, r->nr_got);
		return;
	}
	cmd->nr_pages = r->nr_got;
	for (i = 0; i < r->nr_got; i++) {
		mreg_bench_resched(i);
		folio = page_folio(r->pages[i]);
		if (!n || r->census[n - 1] != folio)
			r->census[n++] = folio;
	}
	mreg_bench_histogram(cmd, r->census, n);
}

static int mreg_bench_check(struct mreg_file *mf, struct mreg_bench *cmd)
{
	bool memfd = cmd->method == MREG_BENCH_MEMFD_PIN_FOLIOS;

	if (cmd->flags & ~MREG_BENCH_FLAGS || cmd->__reserved ||
	    cmd->method >= MREG_BENCH_NR_METHODS)
		return -EINVAL;
	if (cmd->method == MREG_BENCH_GUP_FAST &&
	    cmd->flags & MREG_BENCH_FLAG_LONGTERM)
		return -EINVAL;
	if (memfd ? cmd->addr : (cmd->memfd || cmd->memfd_offset))
		return -EINVAL;
	if (memfd && cmd->memfd_offset > LLONG_MAX - cmd->length)
		return -EINVAL;
	if (mreg_check_range(memfd ? cmd->memfd_offset : cmd->addr,
			     cmd->length))
		return -EINVAL;
	if (cmd->length >> PAGE_SHIFT > READ_ONCE(mf->max_pages))
		return -EINVAL;
	if (memfd && !MREG_CAN_PIN_MEMFD)
		return -EOPNOTSUPP;
	return 0;
}

static void mreg_bench_init(struct mreg_bench_run *r, struct mreg_bench *cmd)
{
	memset(r, 0, sizeof(*r));
	r->cmd = cmd;
	r->nr_pages = cmd->length >> PAGE_SHIFT;
	r->per_call = cmd->pages_per_call ? cmd->pages_per_call : r->nr_pages;
	r->per_call = min_t(unsigned long, r->per_call, INT_MAX);
	if (cmd->flags & MREG_BENCH_FLAG_WRITE)
		r->gup_flags |= FOLL_WRITE;
	if (cmd->flags & MREG_BENCH_FLAG_LONGTERM)
		r->gup_flags |= FOLL_LONGTERM;
	cmd->get_ns = 0;
	cmd->put_ns = 0;
	cmd->nr_pages = 0;
	cmd->nr_folios = 0;
	memset(cmd->order_hist, 0, sizeof(cmd->order_hist));
}

static void mreg_bench_free(struct mreg_bench_run *r)
{
	kvfree(r->census);
	kvfree(r->folios);
	kvfree(r->pages);
}

static int mreg_bench_alloc(struct mreg_bench_run *r)
{
	bool memfd = r->cmd->method == MREG_BENCH_MEMFD_PIN_FOLIOS;

	/* Not zeroed: entries are written before they are read. */
	r->census = kvmalloc_array(r->nr_pages, sizeof(*r->census),
				   MREG_BENCH_GFP);
	if (memfd)
		r->folios = kvmalloc_array(r->nr_pages, sizeof(*r->folios),
					   MREG_BENCH_GFP);
	else
		r->pages = kvmalloc_array(r->nr_pages, sizeof(*r->pages),
					  MREG_BENCH_GFP);
	if (!r->census || (memfd ? !r->folios : !r->pages)) {
		mreg_bench_free(r);
		return -ENOMEM;
	}
	return 0;
}

/**
 * mreg_bench() - MREG_IOC_BENCH
 * @mf: the open file, whose cap bounds @cmd->length
 * @cmd: the command, outputs filled on success
 *
 * Return: 0 or -errno; nothing stays pinned or charged either way.
 */
int mreg_bench(struct mreg_file *mf, struct mreg_bench *cmd)
{
	struct mreg_pin_obj acct = {};
	struct mreg_bench_run r;
	u64 t0;
	long ret;

	ret = mreg_bench_check(mf, cmd);
	if (ret)
		return ret;
	mreg_bench_init(&r, cmd);
	acct.nr_pages = r.nr_pages;
	ret = mreg_account_charge(mf, &acct, acct.nr_pages);
	if (ret)
		return ret;
	ret = mreg_bench_alloc(&r);
	if (ret)
		goto out_uncharge;
	t0 = ktime_get_ns();
	if (cmd->method == MREG_BENCH_MEMFD_PIN_FOLIOS)
		ret = mreg_bench_get_memfd(&r);
	else
		ret = mreg_bench_get_pages(&r);
	cmd->get_ns = ktime_get_ns() - t0;
	if (ret)
		goto out_free;
	mreg_bench_census(&r);
	t0 = ktime_get_ns();
	mreg_bench_put(&r);
	cmd->put_ns = ktime_get_ns() - t0;
out_free:
	mreg_bench_free(&r);
out_uncharge:
	mreg_account_uncharge(mf, &acct);
	return ret;
}
