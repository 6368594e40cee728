// SPDX-License-Identifier: MIT
/*
 * ibv_reg_mr through mreg on a real device (soft-RoCE in the guest): for
 * every folio size, an RDMA WRITE and an RDMA READ between two registered
 * buffers over a loopback RC QP land byte for byte, and every pin comes
 * back. Bad input: an unmapped range, zero length, bad access flags.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "tcommon.h"

#define LEN (8u << 20)
#define ACCESS_ALL                                           \
	(MREG_ACCESS_LOCAL_WRITE | MREG_ACCESS_REMOTE_READ | \
	 MREG_ACCESS_REMOTE_WRITE)

struct loop_qp {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
};

/* A RoCE v2 GID of an IPv4 address: routable on lo, unlike GID 0. */
static int roce_v2_gid(struct ibv_context *ctx, union ibv_gid *gid)
{
	struct ibv_gid_entry e;
	int i;

	for (i = 0; i < 16; i++) {
		if (ibv_query_gid_ex(ctx, 1, (uint32_t)i, &e, 0))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
		    e.gid.raw[10] == 0xff && e.gid.raw[11] == 0xff) {
			*gid = e.gid;
			return i;
		}
	}
	return -ENOENT;
}

static int qp_modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	return ibv_modify_qp(qp, a, mask);
}

/* Walk the QP to RTS, connected to itself. */
static int qp_connect_self(struct loop_qp *l, struct ibv_context *ctx)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT,
				.port_num = 1,
				.qp_access_flags = IBV_ACCESS_REMOTE_READ |
						   IBV_ACCESS_REMOTE_WRITE};
	int idx = roce_v2_gid(ctx, &a.ah_attr.grh.dgid);

	T_CHECK(idx >= 0, "no RoCE v2 IPv4 GID on the device");
	T_CHECK(!qp_modify(l->qp, &a,
			   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS),
		"QP to INIT");
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTR,
				 .path_mtu = IBV_MTU_1024,
				 .dest_qp_num = l->qp->qp_num,
				 .max_dest_rd_atomic = 1,
				 .min_rnr_timer = 12,
				 .ah_attr = {.is_global = 1,
					     .port_num = 1,
					     .grh = {.dgid = a.ah_attr.grh.dgid,
						     .sgid_index = (uint8_t)idx,
						     .hop_limit = 64}}};
	T_CHECK(!qp_modify(l->qp, &a,
			   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				   IBV_QP_MAX_DEST_RD_ATOMIC |
				   IBV_QP_MIN_RNR_TIMER),
		"QP to RTR");
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS,
				 .timeout = 14,
				 .retry_cnt = 7,
				 .rnr_retry = 7,
				 .max_rd_atomic = 1};
	T_CHECK(!qp_modify(l->qp, &a,
			   IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				   IBV_QP_MAX_QP_RD_ATOMIC),
		"QP to RTS");
	return T_PASS;
}

static int loop_qp_create(struct loop_qp *l, struct ibv_pd *pd)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 4,
			.max_recv_wr = 1,
			.max_send_sge = 1,
			.max_recv_sge = 1},
	};

	l->cq = ibv_create_cq(pd->context, 8, NULL, NULL, 0);
	T_CHECK(l->cq, "ibv_create_cq");
	init.send_cq = init.recv_cq = l->cq;
	l->qp = ibv_create_qp(pd, &init);
	T_CHECK(l->qp, "ibv_create_qp");
	return qp_connect_self(l, pd->context);
}

static void loop_qp_destroy(struct loop_qp *l)
{
	if (l->qp)
		ibv_destroy_qp(l->qp);
	if (l->cq)
		ibv_destroy_cq(l->cq);
}

/* One RDMA op from @local to @remote, waited for. */
static int rdma_op(struct loop_qp *l, enum ibv_wr_opcode op,
		   const struct mreg_region_info *local,
		   const struct mreg_region_info *remote)
{
	struct ibv_sge sge = {
		.addr = local->addr, .length = LEN, .lkey = local->lkey};
	struct ibv_send_wr wr = {
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = {.remote_addr = remote->addr, .rkey = remote->rkey}};
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	int n;

	T_CHECK(!ibv_post_send(l->qp, &wr, &bad), "ibv_post_send");
	while (!(n = ibv_poll_cq(l->cq, 1, &wc)))
		;
	T_CHECK(n == 1 && wc.status == IBV_WC_SUCCESS, "completion: %s",
		n == 1 ? ibv_wc_status_str(wc.status) : "poll failed");
	return T_PASS;
}

static void fill(struct mreg_buf *buf, unsigned int seed)
{
	uint32_t *p = mreg_buf_addr(buf);
	size_t i;

	for (i = 0; i < LEN / 4; i++)
		p[i] = (uint32_t)i * 2654435761u + seed;
}

static int write_and_read(struct mreg_domain *d, struct mreg_buf *a,
			  struct mreg_buf *b)
{
	struct mreg_region_info ia = {.size = sizeof(ia)};
	struct mreg_region_info ib = {.size = sizeof(ib)};
	struct mreg_region *ra, *rb;
	struct loop_qp l = {0};
	int ret;

	T_CHECK(!mreg_region_register(d, mreg_buf_addr(a), LEN, &ra), "%s",
		mreg_last_error());
	T_CHECK(!mreg_region_register(d, mreg_buf_addr(b), LEN, &rb), "%s",
		mreg_last_error());
	mreg_region_query(ra, &ia);
	mreg_region_query(rb, &ib);
	fill(a, 1);
	fill(b, 2);
	ret = loop_qp_create(&l, mreg_domain_native(d));
	if (!ret)
		ret = rdma_op(&l, IBV_WR_RDMA_WRITE, &ia, &ib);
	T_CHECK(ret || !memcmp(mreg_buf_addr(a), mreg_buf_addr(b), LEN),
		"RDMA WRITE: destination differs from source");
	if (!ret) {
		fill(b, 3);
		ret = rdma_op(&l, IBV_WR_RDMA_READ, &ia, &ib);
	}
	T_CHECK(ret || !memcmp(mreg_buf_addr(a), mreg_buf_addr(b), LEN),
		"RDMA READ: local buffer differs from remote");
	loop_qp_destroy(&l);
	mreg_region_deregister(ra, NULL);
	mreg_region_deregister(rb, NULL);
	return ret;
}

static int run_case(const struct t_folio *c)
{
	struct mreg_domain_attr attr = {.backend = MREG_BACKEND_VERBS,
					.comp_mask = MREG_DOMAIN_ATTR_ACCESS,
					.access = ACCESS_ALL};
	struct mreg_buf *a, *b;
	struct mreg_domain *d;
	struct t_pins before;
	int ret;

	T_CHECK(!t_buf(c, LEN, &a) && !t_buf(c, LEN, &b), "%s: %s", c->name,
		mreg_last_error());
	T_CHECK(!t_pins_read(&before), "vmstat");
	T_CHECK(!mreg_domain_open(&attr, &d), "%s", mreg_last_error());
	ret = write_and_read(d, a, b);
	T_CHECK(!mreg_domain_close(d), "%s", mreg_last_error());
	T_CHECK(t_pins_balanced(&before), "%s: pins leaked", c->name);
	if (!ret)
		printf("  %-10s RDMA WRITE + READ of %u MB ok, pins balanced\n",
		       c->name, LEN >> 20);
	mreg_buf_free(a);
	mreg_buf_free(b);
	return ret;
}

static int bad_access(void)
{
	struct mreg_domain_attr attr = {.backend = MREG_BACKEND_VERBS,
					.comp_mask = MREG_DOMAIN_ATTR_ACCESS,
					.access = MREG_ACCESS_REMOTE_WRITE};
	struct mreg_region *r = NULL;
	struct mreg_domain *d;
	void *p = mmap(NULL, 1u << 20, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	int ret;

	T_CHECK(p != MAP_FAILED, "mmap");
	/* Remote write without local write is refused by the verbs spec. */
	T_CHECK(!mreg_domain_open(&attr, &d), "%s", mreg_last_error());
	ret = mreg_region_register(d, p, 1u << 20, &r);
	T_CHECK(ret == -EINVAL && !r, "REMOTE_WRITE alone: %d", ret);
	T_CHECK(strstr(mreg_last_error(), "access"), "message: %s",
		mreg_last_error());
	T_CHECK(!mreg_domain_close(d), "%s", mreg_last_error());
	attr.access = ACCESS_ALL;
	T_CHECK(!mreg_domain_open(&attr, &d), "%s", mreg_last_error());
	T_CHECK(mreg_region_register(d, p, 0, &r) == -EINVAL, "zero length");
	munmap(p, 1u << 20);
	T_CHECK(mreg_region_register(d, p, 1u << 20, &r) == -EFAULT,
		"unmapped range: %s", mreg_last_error());
	T_CHECK(!mreg_domain_close(d), "%s", mreg_last_error());
	printf("  bad input: access flags, zero length, unmapped refused\n");
	return T_PASS;
}

int main(void)
{
	int ret;

	t_init("test_verbs");
	if (!mreg_backend_supported(MREG_BACKEND_VERBS))
		return t_skip("no RDMA device (load rdma_rxe and add rxe0)");
	ret = t_each_anon_folio(run_case);
	return ret ? ret : bad_access();
}
