// SPDX-License-Identifier: MIT
/*
 * Regions in pieces.  A region larger than one kernel object may cover
 * (an rxe MR in 6.12, say), or one the caller wants registered on several
 * threads, becomes a parent whose pieces are ordinary regions: each goes
 * through the backend's reg() and dereg() on its own, so no backend knows
 * about splitting.  Pieces are cut at multiples of the piece size in the
 * address space, so that a piece never spans more pages than the size
 * allows, whatever the region's start.
 *
 * On several threads the pieces are handed out by an atomic counter; the
 * first failure stops the others, and every piece that did register is
 * deregistered before the call returns: nothing stays half registered.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pieces.h"

static uint64_t next_cut(uint64_t at, uint64_t piece)
{
	return (at / piece + 1) * piece;
}

static uint32_t count_pieces(uint64_t addr, uint64_t len, uint64_t piece)
{
	uint64_t end = addr + len, at, n = 0;

	for (at = addr; at < end && n <= UINT32_MAX; n++)
		at = next_cut(at, piece);
	return n > UINT32_MAX ? 0 : (uint32_t)n;
}

/* A piece starts as a copy of its parent's request, narrowed to its bytes. */
static void init_piece(struct mreg_region *p, const struct mreg_region *r,
		       uint64_t addr, uint64_t len)
{
	uint64_t offset = addr - r->info.addr;

	*p = (struct mreg_region){.domain = r->domain,
				  .comp_mask = r->comp_mask,
				  .access = r->access,
				  .want_iova = r->want_iova + offset};
	p->info.size = r->info.size;
	p->info.addr = addr;
	p->info.length = len;
}

int mreg_pieces_layout(struct mreg_region *r, uint64_t piece)
{
	uint64_t at = r->info.addr, end = r->info.addr + r->info.length, cut;
	uint32_t n = count_pieces(at, r->info.length, piece), i;

	if (!n)
		return mreg_fail(-E2BIG,
				 "register: piece_size %llu makes "
				 "too many pieces",
				 (unsigned long long)piece);
	if (n == 1)
		return 0;
	r->pieces = calloc(n, sizeof(*r->pieces));
	if (!r->pieces)
		return mreg_fail(-ENOMEM,
				 "register: out of memory for %u "
				 "pieces",
				 n);
	for (i = 0; i < n; i++, at = cut) {
		cut = next_cut(at, piece);
		init_piece(&r->pieces[i], r, at, (cut < end ? cut : end) - at);
	}
	r->nr_pieces = n;
	return 0;
}

/* Deregister the pieces that hold a pin, last first; the first error. */
static int undo_pieces(struct mreg_region *r, uint64_t *ns)
{
	const struct mreg_backend_ops *ops = r->domain->ops;
	uint64_t one;
	uint32_t i;
	int ret, first_err = 0;

	for (i = r->nr_pieces; i-- > 0;) {
		struct mreg_region *p = &r->pieces[i];

		if (!p->registered)
			continue;
		one = 0;
		ret = ops->dereg(r->domain, p, &one);
		*ns += one;
		if (ret && !first_err)
			first_err = ret;
		if (!ret)
			p->registered = false;
	}
	return first_err;
}

struct fanout {
	struct mreg_region *r;
	atomic_uint next;
	atomic_int err;
	uint32_t failed; /* the piece that failed first */
	char msg[512];	 /* its message, from the thread that saw it */
	pthread_mutex_t lock;
};

static void fanout_fail(struct fanout *f, uint32_t i, int err)
{
	pthread_mutex_lock(&f->lock);
	if (!atomic_load(&f->err)) {
		f->failed = i;
		snprintf(f->msg, sizeof(f->msg), "%s", mreg_last_error());
		atomic_store(&f->err, err);
	}
	pthread_mutex_unlock(&f->lock);
}

static void *fanout_worker(void *arg)
{
	struct fanout *f = arg;
	struct mreg_region *r = f->r;
	uint32_t i;
	int ret;

	while (!atomic_load(&f->err) &&
	       (i = atomic_fetch_add(&f->next, 1)) < r->nr_pieces) {
		ret = r->domain->ops->reg(r->domain, &r->pieces[i]);
		if (ret) {
			fanout_fail(f, i, ret);
			break;
		}
		r->pieces[i].registered = true;
	}
	return NULL;
}

/* Run @f on @threads threads, the caller's the last; join them all. */
static int fanout_run(struct fanout *f, uint32_t threads)
{
	pthread_t *tids = calloc(threads, sizeof(*tids));
	uint32_t started = 0, i;
	int ret = 0;

	if (!tids)
		return -ENOMEM;
	for (; started + 1 < threads; started++) {
		ret = -pthread_create(&tids[started], NULL, fanout_worker, f);
		if (ret)
			break;
	}
	/* Fewer threads than asked still finish the work. */
	fanout_worker(f);
	for (i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	free(tids);
	if (ret && started + 1 < threads)
		mreg_log(MREG_LOG_WARN,
			 "register: %u of %u threads started (%s)", started + 1,
			 threads, strerror(-ret));
	return 0;
}

static void sum_pieces(struct mreg_region *r)
{
	const struct mreg_region *first = &r->pieces[0];
	uint32_t i;

	r->info.iova = first->info.iova;
	r->info.lkey = first->info.lkey;
	r->info.rkey = first->info.rkey;
	r->info.index = first->info.index;
	r->native = first->native;
	r->info.nr_slices = 0;
	for (i = 0; i < r->nr_pieces; i++)
		r->info.nr_slices += r->pieces[i].info.nr_slices;
}

int mreg_pieces_register(struct mreg_region *r, uint32_t threads)
{
	struct fanout f = {.r = r};
	uint64_t t0 = mreg_now_ns(), unwind = 0;
	uint32_t i;
	int ret;

	if (threads > r->nr_pieces)
		threads = r->nr_pieces;
	pthread_mutex_init(&f.lock, NULL);
	ret = fanout_run(&f, threads ? threads : 1);
	pthread_mutex_destroy(&f.lock);
	if (ret)
		return mreg_fail(ret, "register: out of memory");
	if (atomic_load(&f.err)) {
		/* A piece that cannot be undone stays with the domain
		 * (region.c), which tries again at close. */
		if (undo_pieces(r, &unwind))
			mreg_log(MREG_LOG_ERR,
				 "register: some pieces of 0x%llx..+%llu "
				 "could not be undone; the domain keeps them "
				 "and retries at close",
				 (unsigned long long)r->info.addr,
				 (unsigned long long)r->info.length);
		return mreg_fail(
			atomic_load(&f.err),
			"register: piece %u of %u (addr 0x%llx): %s", f.failed,
			r->nr_pieces,
			(unsigned long long)r->pieces[f.failed].info.addr,
			f.msg);
	}
	if (threads > 1) {
		r->info.reg_ns = mreg_now_ns() - t0;
	} else {
		for (i = 0; i < r->nr_pieces; i++)
			r->info.reg_ns += r->pieces[i].info.reg_ns;
	}
	sum_pieces(r);
	return 0;
}

int mreg_pieces_deregister(struct mreg_region *r, uint64_t *ns)
{
	return undo_pieces(r, ns);
}

bool mreg_pieces_left(const struct mreg_region *r)
{
	uint32_t i;

	for (i = 0; i < r->nr_pieces; i++)
		if (r->pieces[i].registered)
			return true;
	return false;
}

void mreg_pieces_free(struct mreg_region *r)
{
	free(r->pieces);
	r->pieces = NULL;
	r->nr_pieces = 0;
}

/* io_uring splits a region at 1 GiB by itself: a piece per buffer. */
static uint32_t uring_buffers(const struct mreg_region *r)
{
	return r->domain->ops->type == MREG_BACKEND_IO_URING ? r->info.nr_slices
							     : 1;
}

static size_t emit(const struct mreg_region *p, uint64_t base,
		   struct mreg_region_piece *out, size_t room)
{
	uint32_t n = uring_buffers(p), i;
	uint64_t step = n > 1 ? MREG_URING_BUFFER_MAX : p->info.length;

	for (i = 0; i < n && i < room; i++) {
		uint64_t off = (uint64_t)i * step;

		out[i] = (struct mreg_region_piece){
			.offset = p->info.addr - base + off,
			.length = p->info.length - off < step
					  ? p->info.length - off
					  : step,
			.iova = p->info.iova ? p->info.iova + off : 0,
			.lkey = p->info.lkey,
			.rkey = p->info.rkey,
			.index = p->info.index + (n > 1 ? i : 0),
			.native = p->native};
	}
	return n;
}

MREG_EXPORT int mreg_region_pieces(const struct mreg_region *r,
				   struct mreg_region_piece *pieces, size_t *nr)
{
	size_t room, total = 0, n;
	uint32_t i;

	if (!r || !nr || (*nr && !pieces))
		return mreg_fail(-EINVAL, "pieces: region, nr and pieces are "
					  "required");
	room = *nr;
	if (!r->nr_pieces) {
		total = emit(r, r->info.addr, pieces, room);
	} else {
		for (i = 0; i < r->nr_pieces; i++) {
			n = emit(&r->pieces[i], r->info.addr, pieces + total,
				 total < room ? room - total : 0);
			total += n;
		}
	}
	*nr = total;
	return total > room ? -EMSGSIZE : 0;
}

/* Each piece's extents, their offsets from the region's start. */
int mreg_pieces_extents(const struct mreg_region *r,
			struct mreg_region_extent *ext, size_t *nr)
{
	size_t room = *nr, total = 0, n, j;
	uint32_t i;
	int ret;

	for (i = 0; i < r->nr_pieces; i++) {
		const struct mreg_region *p = &r->pieces[i];

		n = total < room ? room - total : 0;
		ret = r->domain->ops->extents(p, n ? ext + total : NULL, &n);
		if (ret && ret != -EMSGSIZE)
			return ret;
		for (j = 0; !ret && j < n; j++)
			ext[total + j].offset += p->info.addr - r->info.addr;
		total += n;
	}
	*nr = total;
	return total > room ? -EMSGSIZE : 0;
}
