/* SPDX-License-Identifier: MIT */
/*
 * A loopback RC QP on a RoCE device (soft-RoCE in the guest), connected
 * to itself over a RoCE v2 IPv4 GID, and one RDMA op waited for: what the
 * verbs tests need to move bytes through registered MRs.
 */
#ifndef MREG_TVERBS_H
#define MREG_TVERBS_H

#include <stddef.h>

#include <infiniband/verbs.h>

struct loop_qp {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
};

/* Return: 0 (T_PASS) or T_FAIL, with the reason printed. */
int loop_qp_create(struct loop_qp *l, struct ibv_pd *pd);
void loop_qp_destroy(struct loop_qp *l);
/* @len bytes from @laddr (@lkey) to or from @raddr (@rkey), waited for. */
int loop_rdma(struct loop_qp *l, enum ibv_wr_opcode op, uint64_t laddr,
	      uint32_t lkey, uint64_t raddr, uint32_t rkey, size_t len);

#endif
