// SPDX-License-Identifier: MIT
/*
 * RDMA memory regions through libibverbs: the domain is a protection
 * domain on a chosen device (first one by default); each region is one
 * ibv_reg_mr(), timed alone.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "../internal.h"

struct verbs_domain {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
};

static int verbs_supported(void)
{
	struct ibv_device **list;
	int nr = 0;

	list = ibv_get_device_list(&nr);
	if (list)
		ibv_free_device_list(list);
	return nr > 0;
}

static struct ibv_context *open_named(const char *name)
{
	struct ibv_context *ctx = NULL;
	struct ibv_device **list;
	int nr = 0, i;

	list = ibv_get_device_list(&nr);
	for (i = 0; list && i < nr && !ctx; i++)
		if (!name || !strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

static int verbs_domain_open(struct mreg_domain *d,
			     const struct mreg_domain_attr *attr)
{
	const char *name =
		attr->comp_mask & MREG_DOMAIN_ATTR_DEVICE ? attr->device : NULL;
	struct verbs_domain *v = calloc(1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	v->ctx = open_named(name);
	if (!v->ctx) {
		free(v);
		return mreg_fail(-ENODEV, "verbs: no RDMA device %s",
				 name ? name : "(none found)");
	}
	v->pd = ibv_alloc_pd(v->ctx);
	if (!v->pd) {
		ibv_close_device(v->ctx);
		free(v);
		return mreg_fail(-ENOMEM, "verbs: ibv_alloc_pd failed");
	}
	d->priv = v;
	d->native = v->pd;
	return 0;
}

static void verbs_domain_close(struct mreg_domain *d)
{
	struct verbs_domain *v = d->priv;

	ibv_dealloc_pd(v->pd);
	ibv_close_device(v->ctx);
	free(v);
}

static int ibv_access(uint32_t access)
{
	int flags = 0;

	if (access & MREG_ACCESS_LOCAL_WRITE)
		flags |= IBV_ACCESS_LOCAL_WRITE;
	if (access & MREG_ACCESS_REMOTE_READ)
		flags |= IBV_ACCESS_REMOTE_READ;
	if (access & MREG_ACCESS_REMOTE_WRITE)
		flags |= IBV_ACCESS_REMOTE_WRITE;
	return flags;
}

static int verbs_reg(struct mreg_domain *d, struct mreg_region *r)
{
	struct verbs_domain *v = d->priv;
	struct ibv_mr *mr;
	uint64_t t0;
	int err;

	errno = 0;
	t0 = mreg_now_ns();
	mr = ibv_reg_mr(v->pd, (void *)(uintptr_t)r->info.addr, r->info.length,
			ibv_access(d->access));
	r->info.reg_ns = mreg_now_ns() - t0;
	if (!mr) {
		err = errno ? -errno : -EINVAL;
		return mreg_fail(err,
				 "verbs: ibv_reg_mr addr 0x%llx len %llu "
				 "access 0x%x: %s%s",
				 (unsigned long long)r->info.addr,
				 (unsigned long long)r->info.length, d->access,
				 strerror(-err), mreg_reg_hint(err));
	}
	r->priv = mr;
	r->info.lkey = mr->lkey;
	r->info.rkey = mr->rkey;
	r->info.nr_slices = 1;
	return 0;
}

static int verbs_dereg(struct mreg_domain *d, struct mreg_region *r,
		       uint64_t *ns)
{
	uint64_t t0 = mreg_now_ns();
	int ret;

	(void)d;
	ret = ibv_dereg_mr(r->priv);
	*ns = mreg_now_ns() - t0;
	if (ret)
		return mreg_fail(-ret, "verbs: ibv_dereg_mr: %s",
				 strerror(ret));
	return 0;
}

const struct mreg_backend_ops mreg_verbs_ops = {
	.type = MREG_BACKEND_VERBS,
	.name = "verbs",
	.supported = verbs_supported,
	.domain_open = verbs_domain_open,
	.domain_close = verbs_domain_close,
	.reg = verbs_reg,
	.dereg = verbs_dereg,
};
