// SPDX-License-Identifier: MIT
/*
 * io_uring fixed buffers. The domain is a ring with a sparse buffer table,
 * so regions come and go independently; a region takes one slot per 1 GiB,
 * the kernel's limit for one registered buffer.
 *
 * Sparse tables are Linux 5.19. Before, a table is registered whole with
 * IORING_REGISTER_BUFFERS and every slot must hold a buffer, so a domain
 * there holds one region at a time, its table being the region's slices.
 * Re-registering every region whenever one changes was the alternative:
 * rejected, since each registration would then pin the others again, and
 * its time would no longer be the region's own. There, registering and
 * unregistering a table quiesce the ring: they wait for its requests in
 * flight. (5.13 to 5.18 could take a table of empty slots and update
 * them; without such a kernel to test on, they are treated as before.)
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <liburing.h>

#include "../internal.h"

#define SLICE_MAX MREG_URING_BUFFER_MAX
/* IORING_MAX_REG_BUFFERS: no buffer table has more slots. */
#define MAX_SLOTS (1u << 14)

struct uring_domain {
	struct io_uring own; /* the ring mreg opened, unless adopted */
	struct io_uring *ring;
	bool own_ring;
	bool own_table;	      /* mreg registered the buffer table */
	uint32_t table_slots; /* its size, when own_table */
	bool whole_table;     /* no sparse tables: one region at a time */
	bool region_in;	      /* whole_table: the table holds a region */
	uint32_t slot_base;
	uint8_t *slot_used; /* max_regions slots from slot_base */
};

static int uring_supported(void)
{
	struct io_uring ring;

	if (io_uring_queue_init(1, &ring, 0))
		return 0;
	io_uring_queue_exit(&ring);
	return 1;
}

/*
 * IORING_REGISTER_BUFFERS2 with no buffers (5.19), tried on a ring of
 * our own, so that an EINVAL from the caller's ring is not taken for it.
 * Only an answer is kept: a ring that could not be set up (EMFILE,
 * ENOMEM) says nothing about the kernel, and is asked about again.
 */
static pthread_mutex_t sparse_lock = PTHREAD_MUTEX_INITIALIZER;
static int sparse_known = -1; /* -1 not asked yet, else 0 or 1 */

static bool mreg_uring_sparse_tables(void)
{
	struct io_uring ring;
	int known;

	pthread_mutex_lock(&sparse_lock);
	known = sparse_known;
	if (known < 0 && !io_uring_queue_init(1, &ring, 0)) {
		known = !io_uring_register_buffers_sparse(&ring, 1);
		io_uring_queue_exit(&ring);
		sparse_known = known;
	}
	pthread_mutex_unlock(&sparse_lock);
	return known == 1;
}

static int ring_open(struct uring_domain *u,
		     const struct mreg_domain_attr *attr)
{
	int ret;

	if (mreg_adopted(attr)) {
		if (!attr->native)
			return mreg_fail(-EINVAL, "io_uring: adopt needs "
						  "native (struct io_uring *)");
		u->ring = attr->native;
		return 0;
	}
	ret = io_uring_queue_init(8, &u->own, 0);
	if (ret)
		return mreg_fail(ret, "io_uring: ring: %s", strerror(-ret));
	u->ring = &u->own;
	u->own_ring = true;
	return 0;
}

/*
 * Domains sharing one adopted ring must not share slots: each would
 * install over the other's buffers.  mreg can see its own domains only,
 * so it keeps every adopted ring's claimed ranges here, process-wide.
 */
struct slot_claim {
	struct slot_claim *next;
	struct uring_domain *u;
	const struct io_uring *ring;
	uint32_t base, nr;
};

static pthread_mutex_t claims_lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot_claim *claims;

static int claim_range(const struct mreg_domain *d, struct uring_domain *u)
{
	struct slot_claim *c, *mine = calloc(1, sizeof(*mine));
	int ret = 0;

	if (!mine)
		return mreg_fail(-ENOMEM, "io_uring: out of memory");
	*mine = (struct slot_claim){.u = u,
				    .ring = u->ring,
				    .base = u->slot_base,
				    .nr = d->max_regions};
	pthread_mutex_lock(&claims_lock);
	for (c = claims; c && !ret; c = c->next)
		if (c->ring == u->ring && c->base < mine->base + mine->nr &&
		    mine->base < c->base + c->nr)
			ret = -EBUSY;
	if (!ret) {
		mine->next = claims;
		claims = mine;
	}
	pthread_mutex_unlock(&claims_lock);
	if (!ret)
		return 0;
	free(mine);
	return mreg_fail(ret,
			 "io_uring: slots %u-%u overlap another mreg domain's "
			 "on this ring",
			 u->slot_base, u->slot_base + d->max_regions - 1);
}

/* A table mreg added outlives the domain that added it while other
 * domains use the ring: the last one to close unregisters it. */
static void pass_table_on(struct uring_domain *u)
{
	struct slot_claim *c;

	for (c = claims; c && u->own_table; c = c->next)
		if (c->ring == u->ring && c->u != u) {
			c->u->own_table = true;
			c->u->table_slots = u->table_slots;
			u->own_table = false;
		}
}

static void unclaim_range(struct uring_domain *u)
{
	struct slot_claim **p, *c;

	pthread_mutex_lock(&claims_lock);
	pass_table_on(u);
	for (p = &claims; *p; p = &(*p)->next)
		if ((*p)->u == u) {
			c = *p;
			*p = c->next;
			free(c);
			break;
		}
	pthread_mutex_unlock(&claims_lock);
}

/* The size of a table another mreg domain added to @ring, or 0. */
static uint32_t mreg_table_slots(const struct uring_domain *u)
{
	struct slot_claim *c;
	uint32_t slots = 0;

	pthread_mutex_lock(&claims_lock);
	for (c = claims; c; c = c->next)
		if (c->ring == u->ring && c->u != u && c->u->own_table)
			slots = c->u->table_slots;
	pthread_mutex_unlock(&claims_lock);
	return slots;
}

/*
 * An adopted ring may already have a buffer table (io_uring allows one):
 * then mreg's slots are the caller's promise, and a slot past its end
 * fails at registration.  Without one, mreg adds a sparse table and
 * removes it at close; it never touches slots outside its range.
 */
static int table_open(struct mreg_domain *d, struct uring_domain *u)
{
	uint32_t slots = u->slot_base + d->max_regions;
	int ret = io_uring_register_buffers_sparse(u->ring, slots);

	if (ret == -EINVAL && !mreg_uring_sparse_tables()) {
		u->whole_table = true;
		if (!u->slot_base)
			return 0;
		return mreg_fail(-EOPNOTSUPP,
				 "io_uring: slot_base %u needs sparse buffer "
				 "tables (Linux 5.19)",
				 u->slot_base);
	}
	if (!ret) {
		u->own_table = true;
		u->table_slots = slots;
		return 0;
	}
	if (ret == -EBUSY && !u->own_ring) {
		uint32_t have = mreg_table_slots(u);

		if (!have || slots <= have)
			return 0;
		return mreg_fail(
			-EINVAL,
			"io_uring: the ring's table, added by another "
			"mreg domain, has %u slots, not %u: register "
			"one table large enough for every domain first",
			have, slots);
	}
	return mreg_fail(ret, "io_uring: buffer table of %u slots: %s%s", slots,
			 strerror(-ret),
			 u->own_ring ? ""
				     : " (is native an initialised struct "
				       "io_uring?)");
}

static void uring_free(struct uring_domain *u)
{
	if (u->own_table)
		io_uring_unregister_buffers(u->ring);
	if (u->own_ring)
		io_uring_queue_exit(&u->own);
	free(u->slot_used);
	free(u);
}

static int uring_domain_open(struct mreg_domain *d,
			     const struct mreg_domain_attr *attr)
{
	struct uring_domain *u;
	int ret;

	u = calloc(1, sizeof(*u));
	if (u)
		u->slot_used = calloc(d->max_regions, 1);
	if (!u || !u->slot_used) {
		free(u);
		return mreg_fail(-ENOMEM, "io_uring: out of memory");
	}
	u->slot_base = attr->comp_mask & MREG_DOMAIN_ATTR_SLOT_BASE
			       ? attr->slot_base
			       : 0;
	if ((uint64_t)u->slot_base + d->max_regions > MAX_SLOTS) {
		free(u->slot_used);
		free(u);
		return mreg_fail(-EINVAL,
				 "io_uring: slots %u + %u past the kernel's %u",
				 attr->slot_base, d->max_regions, MAX_SLOTS);
	}
	ret = ring_open(u, attr);
	if (!ret && !u->own_ring)
		ret = claim_range(d, u);
	if (!ret) {
		ret = table_open(d, u);
		if (ret && !u->own_ring)
			unclaim_range(u);
	}
	if (ret) {
		uring_free(u);
		return ret;
	}
	d->priv = u;
	d->native = u->ring;
	return 0;
}

static void uring_domain_close(struct mreg_domain *d)
{
	struct uring_domain *u = d->priv;

	if (!u->own_ring)
		unclaim_range(u);
	uring_free(u);
}

/* First run of @nr free slots, or -ENOSPC.  Called with the domain lock. */
static int find_slots(const struct mreg_domain *d, uint32_t nr)
{
	const struct uring_domain *u = d->priv;
	uint32_t start, run = 0;

	for (start = 0; start + run < d->max_regions;) {
		if (u->slot_used[start + run]) {
			start += run + 1;
			run = 0;
		} else if (++run == nr) {
			return (int)start;
		}
	}
	return -ENOSPC;
}

/* @first..+@nr relative to slot_base, if all free; else -EBUSY. */
static int claim_fixed(const struct mreg_domain *d, uint32_t first, uint32_t nr)
{
	const struct uring_domain *u = d->priv;
	uint32_t i;

	for (i = 0; i < nr; i++)
		if (u->slot_used[first + i])
			return -EBUSY;
	return (int)first;
}

/* Claim @nr consecutive slots before any syscall, so that two threads
 * registering at once never install into the same slot.  Returns the
 * first, relative to slot_base. */
static int reserve_slots(struct mreg_domain *d, const struct mreg_region *r,
			 uint32_t nr)
{
	struct uring_domain *u = d->priv;
	int first;

	mreg_domain_lock(d);
	first = r->comp_mask & MREG_REGION_ATTR_SLOT
			? claim_fixed(d, r->want_slot - u->slot_base, nr)
			: find_slots(d, nr);
	if (first >= 0)
		memset(u->slot_used + first, 1, nr);
	mreg_domain_unlock(d);
	return first;
}

static void release_slots(struct mreg_domain *d, uint32_t first, uint32_t nr)
{
	struct uring_domain *u = d->priv;

	mreg_domain_lock(d);
	memset(u->slot_used + first - u->slot_base, 0, nr);
	mreg_domain_unlock(d);
}

/* Install @iov (or clear the slot with an empty one); time the syscall. */
static int update_slot(struct uring_domain *u, uint32_t slot,
		       const struct iovec *iov, uint64_t *ns)
{
	uint64_t t0 = mreg_now_ns();
	int ret;

	ret = io_uring_register_buffers_update_tag(u->ring, slot, iov, NULL, 1);
	*ns += mreg_now_ns() - t0;
	return ret < 0 ? ret : 0;
}

/* Empty every slot, even past a failure; return the first error. */
static int clear_slots(struct uring_domain *u, uint32_t first, uint32_t nr,
		       uint64_t *ns)
{
	struct iovec empty = {0};
	uint32_t i;
	int ret, first_err = 0;

	for (i = 0; i < nr; i++) {
		ret = update_slot(u, first + i, &empty, ns);
		if (ret && !first_err)
			first_err = ret;
	}
	return first_err;
}

static int check_fixed_slot(const struct mreg_domain *d,
			    const struct mreg_region *r, uint32_t nr)
{
	const struct uring_domain *u = d->priv;

	if (!(r->comp_mask & MREG_REGION_ATTR_SLOT))
		return 0;
	if (r->want_slot < u->slot_base ||
	    r->want_slot - u->slot_base + (uint64_t)nr > d->max_regions)
		return mreg_fail(-EINVAL,
				 "io_uring: slots %u-%u are outside the "
				 "domain's slots %u-%u",
				 r->want_slot, r->want_slot + nr - 1,
				 u->slot_base,
				 u->slot_base + d->max_regions - 1);
	return 0;
}

/* Is the one region of a whole-table domain taken?  Claim it if not. */
static int claim_table(struct mreg_domain *d, struct uring_domain *u)
{
	bool busy;

	mreg_domain_lock(d);
	busy = u->region_in;
	u->region_in = true;
	mreg_domain_unlock(d);
	if (!busy)
		return 0;
	/* -ENOSPC, as for a full table: the cache then evicts idle entries. */
	return mreg_fail(-ENOSPC,
			 "io_uring: this kernel has no sparse buffer tables "
			 "(Linux 5.19): a domain holds one region at a time; "
			 "open a domain per region");
}

static void release_table(struct mreg_domain *d, struct uring_domain *u)
{
	mreg_domain_lock(d);
	u->region_in = false;
	mreg_domain_unlock(d);
}

/* Before 5.19: the region's slices are the whole table, slots 0 up. */
static int uring_reg_whole(struct mreg_domain *d, struct mreg_region *r,
			   uint32_t nr)
{
	struct uring_domain *u = d->priv;
	struct iovec iov[64];
	uint64_t t0, off = 0;
	uint32_t i;
	int ret;

	if (((r->comp_mask & MREG_REGION_ATTR_SLOT) && r->want_slot) ||
	    nr > sizeof(iov) / sizeof(iov[0]))
		return mreg_fail(-EOPNOTSUPP,
				 "io_uring: a region at slot %u or of more "
				 "than 64 GiB needs sparse buffer tables "
				 "(Linux 5.19)",
				 r->want_slot);
	ret = claim_table(d, u);
	if (ret)
		return ret;
	for (i = 0; i < nr; i++, off += SLICE_MAX)
		iov[i] = (struct iovec){
			.iov_base = (void *)(uintptr_t)(r->info.addr + off),
			.iov_len = r->info.length - off < SLICE_MAX
					   ? r->info.length - off
					   : SLICE_MAX,
		};
	t0 = mreg_now_ns();
	ret = io_uring_register_buffers(u->ring, iov, nr);
	r->info.reg_ns += mreg_now_ns() - t0;
	if (ret) {
		release_table(d, u);
		return mreg_fail(ret,
				 "io_uring: register addr 0x%llx len %llu: "
				 "%s%s",
				 (unsigned long long)r->info.addr,
				 (unsigned long long)r->info.length,
				 strerror(-ret),
				 ret == -EBUSY ? " (the ring has a buffer "
						 "table already)"
					       : mreg_reg_hint(ret));
	}
	r->info.index = 0;
	r->info.nr_slices = nr;
	return 0;
}

static int uring_reg(struct mreg_domain *d, struct mreg_region *r)
{
	uint64_t slices = (r->info.length + SLICE_MAX - 1) / SLICE_MAX;
	struct uring_domain *u = d->priv;
	uint64_t off = 0, unwind_ns = 0;
	uint32_t done, first, nr;
	int rel, ret;

	if (slices > d->max_regions)
		return mreg_fail(-ENOSPC,
				 "io_uring: %llu bytes need %llu slots of 1 "
				 "GiB, the domain has %u",
				 (unsigned long long)r->info.length,
				 (unsigned long long)slices, d->max_regions);
	nr = (uint32_t)slices;
	if (u->whole_table)
		return uring_reg_whole(d, r, nr);
	ret = check_fixed_slot(d, r, nr);
	if (ret)
		return ret;
	rel = reserve_slots(d, r, nr);
	if (rel == -EBUSY)
		return mreg_fail(rel, "io_uring: slot %u is taken",
				 r->want_slot);
	if (rel < 0)
		return mreg_fail(rel,
				 "io_uring: no %u free buffer slots "
				 "(max_regions %u)",
				 nr, d->max_regions);
	first = u->slot_base + (uint32_t)rel;
	for (done = 0; done < nr; done++, off += SLICE_MAX) {
		struct iovec iov = {
			.iov_base = (void *)(uintptr_t)(r->info.addr + off),
			.iov_len = r->info.length - off < SLICE_MAX
					   ? r->info.length - off
					   : SLICE_MAX,
		};

		ret = update_slot(u, first + done, &iov, &r->info.reg_ns);
		if (ret)
			break;
	}
	if (ret) {
		/* Never leave half a region pinned. */
		clear_slots(u, first, done, &unwind_ns);
		release_slots(d, first, nr);
		return mreg_fail(ret,
				 "io_uring: register addr 0x%llx len "
				 "%llu (buffer %u): %s%s",
				 (unsigned long long)r->info.addr,
				 (unsigned long long)r->info.length,
				 first + done, strerror(-ret),
				 ret == -EINVAL
					 ? " (past the ring's buffer table?)"
					 : mreg_reg_hint(ret));
	}
	r->info.index = first;
	r->info.nr_slices = nr;
	return 0;
}

/* The slots are free again only once the kernel has dropped the buffers. */
static int uring_dereg_whole(struct mreg_domain *d, uint64_t *ns)
{
	struct uring_domain *u = d->priv;
	uint64_t t0 = mreg_now_ns();
	int ret;

	ret = io_uring_unregister_buffers(u->ring);
	*ns += mreg_now_ns() - t0;
	if (ret)
		return mreg_fail(ret, "io_uring: unregister buffers: %s",
				 strerror(-ret));
	release_table(d, u);
	return 0;
}

static int uring_dereg(struct mreg_domain *d, struct mreg_region *r,
		       uint64_t *ns)
{
	struct uring_domain *u = d->priv;
	int ret;

	if (u->whole_table)
		return uring_dereg_whole(d, ns);
	ret = clear_slots(u, r->info.index, r->info.nr_slices, ns);

	/* A buffer the kernel still holds keeps its slots and its region:
	 * a SINGLE_ISSUER ring refuses other threads with -EEXIST. */
	if (ret)
		return mreg_fail(
			ret, "io_uring: unregister buffers %u-%u: %s%s",
			r->info.index, r->info.index + r->info.nr_slices - 1,
			strerror(-ret),
			ret == -EEXIST ? " (a SINGLE_ISSUER ring: call "
					 "from its submitter thread)"
				       : "");
	release_slots(d, r->info.index, r->info.nr_slices);
	return 0;
}

const struct mreg_backend_ops mreg_io_uring_ops = {
	.type = MREG_BACKEND_IO_URING,
	.name = "io_uring",
	.supported = uring_supported,
	.domain_open = uring_domain_open,
	.domain_close = uring_domain_close,
	.reg = uring_reg,
	.dereg = uring_dereg,
};
