// SPDX-License-Identifier: MIT
/*
 * The stale-hit catalogue (tcatalog.c) against UCX's registration cache,
 * as an application meets it: UCP, RMA put from memory the application
 * never registered, over rc_verbs on soft-RoCE. UCP registers the source
 * through the ib memory domain's rcache, which learns of changes through
 * UCM's hooks on mmap/munmap/mremap/madvise/shmat/shmdt/brk (and their
 * glibc internals) and, where loaded, UCM's other event sources.
 *
 * The guest wrapper sets UCX_TLS=rc_verbs,ud_verbs (no shared-memory or
 * self transport for a loopback endpoint) and UCX_ZCOPY_THRESH=0 so that
 * every put takes the zero-copy path, the one that uses the rcache;
 * everything else is UCX's default. Prints the catalogue, then the cost
 * of ucp_mem_map()+ucp_mem_unmap() (t_costs()). Exit 0 when the catalogue ran:
 * stale hits are UCX's result to report, not this test's failure; 77 without an
 * RDMA device.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucp/api/ucp.h>

#include "tcatalog.h"
#include "tcommon.h"

struct ucx {
	ucp_context_h ctx;
	ucp_worker_h worker;
	ucp_ep_h ep;
	ucp_mem_h remote_memh;
	ucp_rkey_h rkey;
	void *remote;
};

static int wait_req(struct ucx *u, void *req)
{
	ucs_status_t st;

	if (!UCS_PTR_IS_PTR(req))
		return UCS_PTR_STATUS(req) == UCS_OK ? T_PASS : T_FAIL;
	do {
		ucp_worker_progress(u->worker);
		st = ucp_request_check_status(req);
	} while (st == UCS_INPROGRESS);
	ucp_request_free(req);
	return st == UCS_OK ? T_PASS : T_FAIL;
}

static int ucx_send(void *impl, void *p, size_t len, void *out)
{
	struct ucx *u = impl;
	ucp_request_param_t rp = {0};

	memset(u->remote, 0, len);
	T_CHECK(!wait_req(u, ucp_put_nbx(u->ep, p, len, (uintptr_t)u->remote,
					 u->rkey, &rp)),
		"ucp_put_nbx");
	T_CHECK(!wait_req(u, ucp_ep_flush_nbx(u->ep, &rp)), "flush");
	memcpy(out, u->remote, len);
	return T_PASS;
}

static int ucx_remote(struct ucx *u)
{
	ucp_mem_map_params_t mp = {
		.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH |
			      UCP_MEM_MAP_PARAM_FIELD_FLAGS,
		.length = T_CACHE_MAXLEN,
		.flags = UCP_MEM_MAP_ALLOCATE,
	};
	ucp_mem_attr_t attr = {.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS};
	void *rkey_buf;
	size_t rkey_len;

	T_CHECK(ucp_mem_map(u->ctx, &mp, &u->remote_memh) == UCS_OK,
		"ucp_mem_map remote");
	T_CHECK(ucp_mem_query(u->remote_memh, &attr) == UCS_OK, "mem_query");
	u->remote = attr.address;
	T_CHECK(ucp_rkey_pack(u->ctx, u->remote_memh, &rkey_buf, &rkey_len) ==
			UCS_OK,
		"rkey_pack");
	T_CHECK(ucp_ep_rkey_unpack(u->ep, rkey_buf, &u->rkey) == UCS_OK,
		"rkey_unpack");
	ucp_rkey_buffer_release(rkey_buf);
	return T_PASS;
}

static int ucx_open(struct ucx *u)
{
	ucp_params_t p = {.field_mask = UCP_PARAM_FIELD_FEATURES,
			  .features = UCP_FEATURE_RMA};
	ucp_worker_params_t wp = {.field_mask =
					  UCP_WORKER_PARAM_FIELD_THREAD_MODE,
				  .thread_mode = UCS_THREAD_MODE_SINGLE};
	ucp_ep_params_t ep = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS};
	ucp_address_t *addr;
	ucp_config_t *cfg;
	size_t addr_len;

	T_CHECK(ucp_config_read(NULL, NULL, &cfg) == UCS_OK, "config");
	T_CHECK(ucp_init(&p, cfg, &u->ctx) == UCS_OK, "ucp_init");
	ucp_config_release(cfg);
	T_CHECK(ucp_worker_create(u->ctx, &wp, &u->worker) == UCS_OK, "worker");
	T_CHECK(ucp_worker_get_address(u->worker, &addr, &addr_len) == UCS_OK,
		"worker address");
	ep.address = addr;
	T_CHECK(ucp_ep_create(u->worker, &ep, &u->ep) == UCS_OK, "ep to self");
	ucp_worker_release_address(u->worker, addr);
	return ucx_remote(u);
}

static int ucx_touch(void *impl, void *p, size_t len)
{
	struct ucx *u = impl;
	ucp_mem_map_params_t mp = {
		.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
			      UCP_MEM_MAP_PARAM_FIELD_LENGTH,
		.address = p,
		.length = len,
	};
	ucp_mem_h memh;

	if (ucp_mem_map(u->ctx, &mp, &memh) != UCS_OK)
		return T_FAIL;
	return ucp_mem_unmap(u->ctx, memh) == UCS_OK ? T_PASS : T_FAIL;
}

int main(int argc, char **argv)
{
	struct ucx u = {0};
	struct t_cache x = {.name = "ucx", .send = ucx_send, .impl = &u};
	int ret;

	t_init("test_cache_ucx");
	x.verbose = argc > 1 && !strcmp(argv[1], "-v");
	if (!mreg_backend_supported(MREG_BACKEND_VERBS))
		return t_skip("no RDMA device (load rdma_rxe and add one)");
	t_catalog_init();
	ret = ucx_open(&u);
	if (ret)
		return ret;
	x.scratch = malloc(T_CACHE_MAXLEN);
	t_catalog_run(&x, ucx_touch);
	ucp_rkey_destroy(u.rkey);
	ucp_mem_unmap(u.ctx, u.remote_memh);
	wait_req(&u, ucp_ep_close_nbx(u.ep, &(ucp_request_param_t){0}));
	ucp_worker_destroy(u.worker);
	ucp_cleanup(u.ctx);
	free(x.scratch);
	return T_PASS;
}
