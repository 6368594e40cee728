// SPDX-License-Identifier: MIT
/*
 * RDMA memory regions through libibverbs: the domain is a protection
 * domain on a chosen device (first one by default); each region is one
 * ibv_reg_mr(), timed alone.
 *
 * libibverbs is dlopened on first use, as rdma-core loads its providers,
 * so a program that never asks for verbs runs where it is not installed.
 * Only its headers are needed at build time.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "../internal.h"

#define IBVERBS_SONAME "libibverbs.so.1"

/*
 * Every libibverbs function this file calls, with the symbol version a
 * link against rdma-core 44 binds.  Pinning it with dlvsym() keeps the
 * ABI these headers describe: plain dlsym() would take whatever version
 * a newer library makes the default.
 */
#define VERBS_FUNCS(X)                     \
	X(get_device_list, "IBVERBS_1.1")  \
	X(free_device_list, "IBVERBS_1.1") \
	X(get_device_name, "IBVERBS_1.1")  \
	X(open_device, "IBVERBS_1.1")      \
	X(close_device, "IBVERBS_1.1")     \
	X(query_device, "IBVERBS_1.1")     \
	X(alloc_pd, "IBVERBS_1.1")         \
	X(dealloc_pd, "IBVERBS_1.1")       \
	X(reg_mr_iova2, "IBVERBS_1.8")     \
	X(dereg_mr, "IBVERBS_1.1")

/* Typed from the header's prototypes, so each call is still checked. */
#define VERBS_FUNC_PTR(fn, ver) __typeof__(ibv_##fn) *fn;
static struct {
	VERBS_FUNCS(VERBS_FUNC_PTR)
} ibv;

static pthread_once_t verbs_once = PTHREAD_ONCE_INIT;
static bool verbs_loaded;
/* dlerror() is per thread and read once: keep it for later callers. */
static char verbs_dl_error[256];

static void *verbs_sym(void *lib, const char *name, const char *ver)
{
	void *sym = dlvsym(lib, name, ver);

	if (!sym)
		snprintf(verbs_dl_error, sizeof(verbs_dl_error),
			 "dlvsym(%s@%s): %s", name, ver, dlerror());
	return sym;
}

/* Stops at the first missing symbol, whose error is the one kept. */
#define VERBS_FUNC_LOAD(fn, ver) \
	ok = ok &&               \
	     (ibv.fn = (__typeof__(ibv.fn))verbs_sym(lib, "ibv_" #fn, ver));

static bool verbs_resolve(void *lib)
{
	bool ok = true;

	VERBS_FUNCS(VERBS_FUNC_LOAD)
	return ok;
}

/*
 * The library stays loaded for the life of the process: verbs objects an
 * application got through mreg_domain_native() may outlive every domain.
 */
static void verbs_load(void)
{
	void *lib = dlopen(IBVERBS_SONAME, RTLD_NOW | RTLD_LOCAL);

	if (!lib) {
		snprintf(verbs_dl_error, sizeof(verbs_dl_error), "dlopen: %s",
			 dlerror());
		return;
	}
	verbs_loaded = verbs_resolve(lib);
	if (!verbs_loaded)
		dlclose(lib);
}

/* True once libibverbs is loaded; thread-safe, and tried only once. */
static bool verbs_ready(void)
{
	pthread_once(&verbs_once, verbs_load);
	return verbs_loaded;
}

/* Soft-RoCE's vendor_id (RXE_VENDOR_ID in the kernel's rxe_param.h). */
#define RXE_VENDOR_ID 0xffffff
/*
 * rxe in 6.12 keeps a 16-byte entry per 4 kB page of an MR in one
 * kcalloc (rxe_mr.c, __alloc_mr_page_info()): 1 GiB needs an order-10
 * allocation, the largest kmalloc can do, and more fails with -ENOMEM and
 * a WARN.  Pieces of 256 MiB need order 8, which compaction can still
 * give on a long-running system.
 */
#define RXE_PIECE_MAX (256ull << 20)

struct verbs_domain {
	struct ibv_context *ctx; /* NULL when the PD is the caller's */
	struct ibv_pd *pd;
	bool adopted;
	uint64_t piece_max; /* 0: the device takes any size */
};

static int verbs_supported(void)
{
	struct ibv_device **list;
	int nr = 0;

	if (!verbs_ready()) {
		mreg_log(MREG_LOG_DEBUG, "verbs: no %s: %s", IBVERBS_SONAME,
			 verbs_dl_error);
		return 0;
	}
	list = ibv.get_device_list(&nr);
	if (list)
		ibv.free_device_list(list);
	return nr > 0;
}

static struct ibv_context *open_named(const char *name)
{
	struct ibv_context *ctx = NULL;
	struct ibv_device **list;
	int nr = 0, i;

	list = ibv.get_device_list(&nr);
	for (i = 0; list && i < nr && !ctx; i++)
		if (!name || !strcmp(ibv.get_device_name(list[i]), name))
			ctx = ibv.open_device(list[i]);
	if (list)
		ibv.free_device_list(list);
	return ctx;
}

/* The caller's PD: mreg registers MRs on it and never deallocates it. */
static int adopt_pd(struct verbs_domain *v, const struct mreg_domain_attr *attr)
{
	if (!attr->native)
		return mreg_fail(-EINVAL,
				 "verbs: adopt needs native (struct ibv_pd *)");
	v->pd = attr->native;
	v->adopted = true;
	return 0;
}

static int open_pd(struct verbs_domain *v, const char *name)
{
	v->ctx = open_named(name);
	if (!v->ctx)
		return mreg_fail(-ENODEV, "verbs: no RDMA device %s",
				 name ? name : "(none found)");
	v->pd = ibv.alloc_pd(v->ctx);
	if (!v->pd) {
		ibv.close_device(v->ctx);
		return mreg_fail(-ENOMEM, "verbs: ibv_alloc_pd failed");
	}
	return 0;
}

/* A device that cannot take an MR as large as max_mr_size says. */
static uint64_t device_piece_max(struct ibv_context *ctx)
{
	struct ibv_device_attr attr;

	if (ibv.query_device(ctx, &attr))
		return 0;
	return attr.vendor_id == RXE_VENDOR_ID ? RXE_PIECE_MAX : 0;
}

static int verbs_domain_open(struct mreg_domain *d,
			     const struct mreg_domain_attr *attr)
{
	const char *name =
		attr->comp_mask & MREG_DOMAIN_ATTR_DEVICE ? attr->device : NULL;
	struct verbs_domain *v;
	int ret;

	if (!verbs_ready())
		return mreg_fail(-EOPNOTSUPP, "verbs: cannot load %s: %s",
				 IBVERBS_SONAME, verbs_dl_error);
	v = calloc(1, sizeof(*v));
	if (!v)
		return mreg_fail(-ENOMEM, "verbs: out of memory");
	ret = mreg_adopted(attr) ? adopt_pd(v, attr) : open_pd(v, name);
	if (ret) {
		free(v);
		return ret;
	}
	v->piece_max = device_piece_max(v->pd->context);
	d->priv = v;
	d->native = v->pd;
	return 0;
}

static void verbs_domain_close(struct mreg_domain *d)
{
	struct verbs_domain *v = d->priv;

	if (!v->adopted) {
		ibv.dealloc_pd(v->pd);
		ibv.close_device(v->ctx);
	}
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

/*
 * ibv_reg_mr() is a macro in <infiniband/verbs.h>: when the access flags
 * are not a compile-time constant it calls ibv_reg_mr_iova2() with iova =
 * addr.  That is the symbol libmreg bound when it still linked
 * libibverbs, so calling it keeps the behaviour (ibv_reg_mr@IBVERBS_1.1
 * is only a jump to the same call).
 */
static struct ibv_mr *verbs_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
				   int access)
{
	return ibv.reg_mr_iova2(pd, addr, length, (uintptr_t)addr,
				(unsigned int)access);
}

static int verbs_reg(struct mreg_domain *d, struct mreg_region *r)
{
	struct verbs_domain *v = d->priv;
	struct ibv_mr *mr;
	uint64_t t0;
	int err;

	errno = 0;
	t0 = mreg_now_ns();
	mr = verbs_reg_mr(v->pd, (void *)(uintptr_t)r->info.addr,
			  r->info.length, ibv_access(r->access));
	r->info.reg_ns = mreg_now_ns() - t0;
	if (!mr) {
		err = errno ? -errno : -EINVAL;
		return mreg_fail(err,
				 "verbs: ibv_reg_mr addr 0x%llx len %llu "
				 "access 0x%x: %s%s",
				 (unsigned long long)r->info.addr,
				 (unsigned long long)r->info.length, r->access,
				 strerror(-err), mreg_reg_hint(err));
	}
	r->priv = mr;
	r->native = mr;
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
	ret = ibv.dereg_mr(r->priv);
	*ns = mreg_now_ns() - t0;
	if (ret)
		return mreg_fail(-ret, "verbs: ibv_dereg_mr: %s",
				 strerror(ret));
	return 0;
}

static uint64_t verbs_piece_max(const struct mreg_domain *d)
{
	const struct verbs_domain *v = d->priv;

	return v->piece_max;
}

const struct mreg_backend_ops mreg_verbs_ops = {
	.type = MREG_BACKEND_VERBS,
	.name = "verbs",
	.supported = verbs_supported,
	.domain_open = verbs_domain_open,
	.domain_close = verbs_domain_close,
	.reg = verbs_reg,
	.dereg = verbs_dereg,
	.piece_max = verbs_piece_max,
};
