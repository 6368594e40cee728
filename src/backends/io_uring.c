// SPDX-License-Identifier: MIT
/*
 * io_uring fixed buffers. The domain is a ring with a sparse buffer table,
 * so regions come and go independently; a region takes one slot per 1 GiB,
 * the kernel's limit for one registered buffer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <liburing.h>

#include "../internal.h"

#define SLICE_MAX (1ull << 30)

struct uring_domain {
	struct io_uring ring;
	uint8_t *slot_used;
};

static int uring_supported(void)
{
	struct io_uring ring;

	if (io_uring_queue_init(1, &ring, 0))
		return 0;
	io_uring_queue_exit(&ring);
	return 1;
}

static int uring_domain_open(struct mreg_domain *d,
			     const struct mreg_domain_attr *attr)
{
	struct uring_domain *u;
	int ret;

	(void)attr;
	u = calloc(1, sizeof(*u));
	if (u)
		u->slot_used = calloc(d->max_regions, 1);
	if (!u || !u->slot_used) {
		free(u);
		return -ENOMEM;
	}
	ret = io_uring_queue_init(8, &u->ring, 0);
	if (ret)
		goto err_free;
	ret = io_uring_register_buffers_sparse(&u->ring, d->max_regions);
	if (ret)
		goto err_exit;
	d->priv = u;
	d->native = &u->ring;
	return 0;
err_exit:
	io_uring_queue_exit(&u->ring);
err_free:
	free(u->slot_used);
	free(u);
	return mreg_fail(ret, "io_uring: ring with %u buffer slots: %s",
			 d->max_regions, strerror(-ret));
}

static void uring_domain_close(struct mreg_domain *d)
{
	struct uring_domain *u = d->priv;

	io_uring_queue_exit(&u->ring);
	free(u->slot_used);
	free(u);
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

/* Claim @nr consecutive slots before any syscall, so that two threads
 * registering at once never install into the same slot. */
static int reserve_slots(struct mreg_domain *d, uint32_t nr)
{
	struct uring_domain *u = d->priv;
	int first;

	mreg_domain_lock(d);
	first = find_slots(d, nr);
	if (first >= 0)
		memset(u->slot_used + first, 1, nr);
	mreg_domain_unlock(d);
	return first;
}

static void release_slots(struct mreg_domain *d, uint32_t first, uint32_t nr)
{
	struct uring_domain *u = d->priv;

	mreg_domain_lock(d);
	memset(u->slot_used + first, 0, nr);
	mreg_domain_unlock(d);
}

/* Install @iov (or clear the slot with an empty one); time the syscall. */
static int update_slot(struct uring_domain *u, uint32_t slot,
		       const struct iovec *iov, uint64_t *ns)
{
	uint64_t t0 = mreg_now_ns();
	int ret;

	ret = io_uring_register_buffers_update_tag(&u->ring, slot, iov, NULL,
						   1);
	*ns += mreg_now_ns() - t0;
	return ret < 0 ? ret : 0;
}

static void clear_slots(struct uring_domain *u, uint32_t first, uint32_t nr,
			uint64_t *ns)
{
	struct iovec empty = {0};
	uint32_t i;

	for (i = 0; i < nr; i++)
		update_slot(u, first + i, &empty, ns);
}

static int uring_reg(struct mreg_domain *d, struct mreg_region *r)
{
	uint32_t nr = (uint32_t)((r->info.length + SLICE_MAX - 1) / SLICE_MAX);
	struct uring_domain *u = d->priv;
	uint64_t off = 0, unwind_ns = 0;
	uint32_t done;
	int first, ret = 0;

	first = reserve_slots(d, nr);
	if (first < 0)
		return mreg_fail(first,
				 "io_uring: no %u free buffer slots "
				 "(max_regions %u)",
				 nr, d->max_regions);
	for (done = 0; done < nr; done++, off += SLICE_MAX) {
		struct iovec iov = {
			.iov_base = (void *)(uintptr_t)(r->info.addr + off),
			.iov_len = r->info.length - off < SLICE_MAX
					   ? r->info.length - off
					   : SLICE_MAX,
		};

		ret = update_slot(u, (uint32_t)first + done, &iov,
				  &r->info.reg_ns);
		if (ret)
			break;
	}
	if (ret) {
		/* Never leave half a region pinned. */
		clear_slots(u, (uint32_t)first, done, &unwind_ns);
		release_slots(d, (uint32_t)first, nr);
		return mreg_fail(ret,
				 "io_uring: register addr 0x%llx len "
				 "%llu: %s%s",
				 (unsigned long long)r->info.addr,
				 (unsigned long long)r->info.length,
				 strerror(-ret), mreg_reg_hint(ret));
	}
	r->info.index = (uint32_t)first;
	r->info.nr_slices = nr;
	return 0;
}

/* The slots are free again only once the kernel has dropped the buffers. */
static int uring_dereg(struct mreg_domain *d, struct mreg_region *r,
		       uint64_t *ns)
{
	clear_slots(d->priv, r->info.index, r->info.nr_slices, ns);
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
