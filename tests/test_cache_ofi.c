// SPDX-License-Identifier: MIT
/*
 * The stale-hit catalogue (tcatalog.c) against libfabric's MR cache, as
 * an application meets it: the verbs;ofi_rxm RDM provider over soft-RoCE,
 * fi_mr_reg() of the source before each fi_write() and fi_close() after,
 * which the verbs domain serves from its MR cache (util_mr_cache.c). The
 * cache learns of changes from the monitor FI_MR_CACHE_MONITOR names
 * (memhooks: libfabric's own hooks on the memory calls; uffd: a
 * userfaultfd; disabled: no cache), which the guest wrapper runs in turn.
 *
 * Prints the catalogue, then the cost of fi_mr_reg()+fi_close()
 * (t_costs()). Exit 0 when the
 * catalogue ran: stale hits are libfabric's result to report, not this
 * test's failure; 77 without an RDMA device or the provider.
 */
#define _GNU_SOURCE
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tcatalog.h"
#include "tcommon.h"

struct ofi {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct fid_mr *remote_mr;
	fi_addr_t self;
	void *remote;
	uint64_t rkey;
};

static int wait_cq(struct ofi *o)
{
	struct fi_cq_entry e;
	struct fi_cq_err_entry err = {0};
	ssize_t n;

	do {
		n = fi_cq_read(o->cq, &e, 1);
	} while (n == -FI_EAGAIN);
	if (n == -FI_EAVAIL) {
		fi_cq_readerr(o->cq, &err, 0);
		fprintf(stderr, "cq error: %s\n", fi_strerror(err.err));
		return T_FAIL;
	}
	return n == 1 ? T_PASS : T_FAIL;
}

static int ofi_send(void *impl, void *p, size_t len, void *out)
{
	struct ofi *o = impl;
	struct fid_mr *mr;
	ssize_t ret;
	int ok;

	memset(o->remote, 0, len);
	ret = fi_mr_reg(o->domain, p, len, FI_WRITE, 0, 0, 0, &mr, NULL);
	T_CHECK(!ret, "fi_mr_reg: %s", fi_strerror((int)-ret));
	do {
		ret = fi_write(o->ep, p, len, fi_mr_desc(mr), o->self,
			       (uintptr_t)o->remote, o->rkey, NULL);
		if (ret == -FI_EAGAIN)
			fi_cq_read(o->cq, NULL, 0);
	} while (ret == -FI_EAGAIN);
	ok = !ret && wait_cq(o) == T_PASS;
	fi_close(&mr->fid);
	T_CHECK(ok, "fi_write: %s", fi_strerror((int)-ret));
	memcpy(out, o->remote, len);
	return T_PASS;
}

static struct fi_info *ofi_hints(void)
{
	struct fi_info *h = fi_allocinfo();

	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_RMA;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->fabric_attr->prov_name = strdup("verbs;ofi_rxm");
	/* Small queues: rxe's CQs are smaller than rxm's defaults ask. */
	h->tx_attr->size = 64;
	h->rx_attr->size = 64;
	return h;
}

static int ofi_open(struct ofi *o)
{
	struct fi_info *hints = ofi_hints();
	struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_CONTEXT};
	struct fi_av_attr ava = {.type = FI_AV_TABLE};
	char name[256];
	size_t nl = sizeof(name);
	int ret;

	/* A source address, or the provider resolves the host name, which
	 * a guest without DNS cannot (EAI_AGAIN). */
	const char *node = getenv("MREG_OFI_NODE");

	ret = fi_getinfo(FI_VERSION(1, 17), node, NULL, node ? FI_SOURCE : 0,
			 hints, &o->info);
	fi_freeinfo(hints);
	if (ret)
		return t_skip("fi_getinfo(verbs;ofi_rxm, node %s): %s",
			      node ? node : "none", fi_strerror(-ret));
	T_CHECK(!fi_fabric(o->info->fabric_attr, &o->fabric, NULL), "fabric");
	T_CHECK(!fi_domain(o->fabric, o->info, &o->domain, NULL), "domain");
	T_CHECK(!fi_cq_open(o->domain, &cqa, &o->cq, NULL), "cq");
	T_CHECK(!fi_av_open(o->domain, &ava, &o->av, NULL), "av");
	T_CHECK(!fi_endpoint(o->domain, o->info, &o->ep, NULL), "endpoint");
	T_CHECK(!fi_ep_bind(o->ep, &o->av->fid, 0), "bind av");
	T_CHECK(!fi_ep_bind(o->ep, &o->cq->fid, FI_TRANSMIT | FI_RECV),
		"bind cq");
	ret = fi_enable(o->ep);
	T_CHECK(!ret, "fi_enable: %s", fi_strerror(-ret));
	T_CHECK(!fi_getname(&o->ep->fid, name, &nl), "getname");
	T_CHECK(fi_av_insert(o->av, name, 1, &o->self, 0, NULL) == 1,
		"av_insert self");
	o->remote = mmap(NULL, T_CACHE_MAXLEN, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_CHECK(o->remote != MAP_FAILED, "mmap remote");
	T_CHECK(!fi_mr_reg(o->domain, o->remote, T_CACHE_MAXLEN,
			   FI_REMOTE_WRITE, 0, 0, 0, &o->remote_mr, NULL),
		"fi_mr_reg remote");
	o->rkey = fi_mr_key(o->remote_mr);
	return T_PASS;
}

static int ofi_touch(void *impl, void *p, size_t len)
{
	struct ofi *o = impl;
	struct fid_mr *mr;

	if (fi_mr_reg(o->domain, p, len, FI_WRITE, 0, 0, 0, &mr, NULL))
		return T_FAIL;
	return fi_close(&mr->fid) ? T_FAIL : T_PASS;
}

int main(int argc, char **argv)
{
	const char *mon = getenv("FI_MR_CACHE_MONITOR");
	struct ofi o = {0};
	struct t_cache x = {.send = ofi_send, .impl = &o};
	char name[32];
	int ret;

	t_init("test_cache_ofi");
	x.verbose = argc > 1 && !strcmp(argv[1], "-v");
	snprintf(name, sizeof(name), "ofi/%s", mon ? mon : "default");
	x.name = name;
	if (!mreg_backend_supported(MREG_BACKEND_VERBS))
		return t_skip("no RDMA device (load rdma_rxe and add one)");
	t_catalog_init();
	ret = ofi_open(&o);
	if (ret)
		return ret;
	x.scratch = malloc(T_CACHE_MAXLEN);
	t_catalog_run(&x, ofi_touch);
	fi_close(&o.remote_mr->fid);
	fi_close(&o.ep->fid);
	fi_close(&o.av->fid);
	fi_close(&o.cq->fid);
	fi_close(&o.domain->fid);
	fi_close(&o.fabric->fid);
	fi_freeinfo(o.info);
	free(x.scratch);
	return T_PASS;
}
