// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdint.h>

#include "tcommon.h"
#include "tverbs.h"

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

int loop_qp_create(struct loop_qp *l, struct ibv_pd *pd)
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

void loop_qp_destroy(struct loop_qp *l)
{
	if (l->qp)
		ibv_destroy_qp(l->qp);
	if (l->cq)
		ibv_destroy_cq(l->cq);
}

/* One RDMA op, waited for by polling. */
int loop_rdma(struct loop_qp *l, enum ibv_wr_opcode op, uint64_t laddr,
	      uint32_t lkey, uint64_t raddr, uint32_t rkey, size_t len)
{
	struct ibv_sge sge = {
		.addr = laddr, .length = (uint32_t)len, .lkey = lkey};
	struct ibv_send_wr wr = {
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = {.remote_addr = raddr, .rkey = rkey}};
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
