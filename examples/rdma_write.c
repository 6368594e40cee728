// SPDX-License-Identifier: MIT
/*
 * mreg memory on the application's own verbs objects: it opens the first
 * RDMA device and a PD, hands the PD to mreg (MREG_DOMAIN_ATTR_ADOPT),
 * registers two buffers in 64 kB folios on it, and moves one into the
 * other with an RDMA WRITE between two RC QPs connected to each other
 * over RoCE v2 (soft-RoCE on lo will do). mreg never closes the PD: it is
 * the application's again once the domain is closed.
 *
 *   rdma_write      exit 0 ok, 1 failed, 77 no RDMA device
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <mreg/mreg.h>

#define LEN  (1u << 20)
#define PORT 1

struct side {
	struct mreg_buf *buf;
	struct mreg_region *region;
	struct mreg_region_info info;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
};

static void print_log(void *ctx, int level, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "mreg[%d]: %s\n", level, msg);
}

/*
 * 64 kB folios as far as the THP policy gives them (ALLOW_FALLBACK takes
 * what it gets); as root, mreg may narrow the policy while it faults in.
 */
static int alloc_buf(struct mreg_buf **buf)
{
	struct mreg_buf_attr attr = {
		.size = sizeof(attr),
		.flags = MREG_BUF_ALLOW_FALLBACK,
		.length = LEN,
		.folio_size = 64 << 10,
	};
	char hist[256];
	int ret;

	if (geteuid() == 0)
		attr.flags |= MREG_BUF_SET_POLICY;
	ret = mreg_buf_alloc(&attr, buf);
	if (ret)
		return ret;
	mreg_folio_hist_format(mreg_buf_hist(*buf), hist, sizeof(hist));
	printf("buffer %u kB, folios %s\n", LEN >> 10, hist);
	return 0;
}

/* Remote write needs local write too: the verbs spec says so. */
static int register_buf(struct mreg_domain *domain, struct side *s)
{
	struct mreg_region_attr attr = {
		.size = sizeof(attr),
		.comp_mask = MREG_REGION_ATTR_ACCESS,
		.addr = mreg_buf_addr(s->buf),
		.length = LEN,
		.access = MREG_ACCESS_LOCAL_WRITE | MREG_ACCESS_REMOTE_WRITE,
	};
	int ret = mreg_region_register_attr(domain, &attr, &s->region);

	s->info.size = sizeof(s->info);
	return ret ? ret : mreg_region_query(s->region, &s->info);
}

/* A RoCE v2 GID of an IPv4 address (::ffff:a.b.c.d): routable on lo. */
static int roce_v2_gid(struct ibv_context *ctx, union ibv_gid *gid)
{
	struct ibv_gid_entry e;
	uint32_t i;

	for (i = 0; i < 16; i++) {
		if (ibv_query_gid_ex(ctx, PORT, i, &e, 0))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
		    e.gid.raw[10] == 0xff && e.gid.raw[11] == 0xff) {
			*gid = e.gid;
			return (int)i;
		}
	}
	return -ENOENT;
}

static int qp_create(struct ibv_pd *pd, struct side *s)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 1,
			.max_recv_wr = 1,
			.max_send_sge = 1,
			.max_recv_sge = 1},
	};

	s->cq = ibv_create_cq(pd->context, 1, NULL, NULL, 0);
	if (!s->cq)
		return -errno;
	init.send_cq = init.recv_cq = s->cq;
	s->qp = ibv_create_qp(pd, &init);
	return s->qp ? 0 : -errno;
}

/* INIT, RTR towards @dest_qpn at @gid, RTS: what rdma_cm would do. */
static int qp_connect(struct ibv_qp *qp, uint32_t dest_qpn,
		      const union ibv_gid *gid, int gid_index)
{
	struct ibv_qp_attr init = {
		.qp_state = IBV_QPS_INIT,
		.port_num = PORT,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	struct ibv_qp_attr rtr = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = dest_qpn,
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 12,
		.ah_attr = {.is_global = 1,
			    .port_num = PORT,
			    .grh = {.dgid = *gid,
				    .sgid_index = (uint8_t)gid_index,
				    .hop_limit = 64}},
	};
	struct ibv_qp_attr rts = {
		.qp_state = IBV_QPS_RTS,
		.timeout = 14,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.max_rd_atomic = 1,
	};

	/* ibv_modify_qp() returns an errno, not -1. */
	int ret = ibv_modify_qp(qp, &init,
				IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					IBV_QP_ACCESS_FLAGS);

	if (!ret)
		ret = ibv_modify_qp(qp, &rtr,
				    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					    IBV_QP_MAX_DEST_RD_ATOMIC |
					    IBV_QP_MIN_RNR_TIMER);
	if (!ret)
		ret = ibv_modify_qp(qp, &rts,
				    IBV_QP_STATE | IBV_QP_TIMEOUT |
					    IBV_QP_RETRY_CNT |
					    IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					    IBV_QP_MAX_QP_RD_ATOMIC);
	return -ret;
}

/* Two QPs, each the other's peer: a connection without a network. */
static int connect_pair(struct ibv_pd *pd, struct side *a, struct side *b)
{
	union ibv_gid gid;
	int idx = roce_v2_gid(pd->context, &gid), ret;

	if (idx < 0) {
		fprintf(stderr, "rdma_write: no RoCE v2 IPv4 GID on port %d\n",
			PORT);
		return idx;
	}
	ret = qp_create(pd, a);
	if (!ret)
		ret = qp_create(pd, b);
	if (!ret)
		ret = qp_connect(a->qp, b->qp->qp_num, &gid, idx);
	if (!ret)
		ret = qp_connect(b->qp, a->qp->qp_num, &gid, idx);
	return ret;
}

/* A's whole buffer into B's, by A's lkey and B's rkey and address. */
static int rdma_write(struct side *a, const struct side *b)
{
	struct ibv_sge sge = {
		.addr = a->info.addr, .length = LEN, .lkey = a->info.lkey};
	struct ibv_send_wr wr = {
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = {.remote_addr = b->info.addr, .rkey = b->info.rkey},
	};
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	int n;

	n = ibv_post_send(a->qp, &wr, &bad); /* an errno, like modify_qp */
	if (n)
		return -n;
	while (!(n = ibv_poll_cq(a->cq, 1, &wc)))
		;
	if (n < 0)
		return -EIO;
	if (wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "rdma_write: completion: %s\n",
			ibv_wc_status_str(wc.status));
		return -EIO;
	}
	return 0;
}

/* Register both buffers on the adopted PD, write A into B, compare. */
static int write_through_mreg(struct ibv_pd *pd, struct side *a, struct side *b)
{
	struct mreg_domain_attr dattr = {
		.backend = MREG_BACKEND_VERBS,
		.comp_mask = MREG_DOMAIN_ATTR_ADOPT,
		.native = pd,
	};
	struct mreg_domain *domain;
	int ret;

	ret = mreg_domain_open(&dattr, &domain);
	if (ret)
		return ret;
	ret = register_buf(domain, a);
	if (!ret)
		ret = register_buf(domain, b);
	if (!ret)
		ret = connect_pair(pd, a, b);
	if (!ret) {
		memset(mreg_buf_addr(a->buf), 0x5a, LEN);
		memset(mreg_buf_addr(b->buf), 0, LEN);
		ret = rdma_write(a, b);
	}
	if (!ret && memcmp(mreg_buf_addr(a->buf), mreg_buf_addr(b->buf), LEN)) {
		fprintf(stderr,
			"rdma_write: B differs from A after the WRITE\n");
		ret = -EIO;
	}
	if (!ret)
		printf("RDMA WRITE of %u kB from lkey 0x%x to rkey 0x%x "
		       "matches\n",
		       LEN >> 10, a->info.lkey, b->info.rkey);
	if (b->region)
		mreg_region_deregister(b->region, NULL);
	if (a->region)
		mreg_region_deregister(a->region, NULL);
	mreg_domain_close(domain); /* -EBUSY only if deregistering failed */
	return ret;
}

/* After the domain: the PD still takes MRs, and holds none of mreg's. */
static int pd_still_mine(struct ibv_pd *pd, struct side *a)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, mreg_buf_addr(a->buf), LEN,
				       IBV_ACCESS_LOCAL_WRITE);

	if (!mr || ibv_dereg_mr(mr))
		return -EIO;
	printf("the PD is still the application's: ibv_reg_mr on it works\n");
	return 0;
}

static void destroy_side(struct side *s)
{
	if (s->qp)
		ibv_destroy_qp(s->qp);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	mreg_buf_free(s->buf);
}

static struct ibv_context *open_first_device(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (list && n > 0) {
		ctx = ibv_open_device(list[0]);
		printf("device %s\n", ibv_get_device_name(list[0]));
	}
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

int main(void)
{
	struct side a = {0}, b = {0};
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	int ret;

	mreg_set_log(print_log, NULL);
	ctx = open_first_device();
	if (!ctx) {
		printf("rdma_write: no RDMA device (try: rdma link add rxe0 "
		       "type rxe netdev lo)\n");
		return 77;
	}
	pd = ibv_alloc_pd(ctx);
	ret = pd ? 0 : -errno;
	if (!ret)
		ret = alloc_buf(&a.buf);
	if (!ret)
		ret = alloc_buf(&b.buf);
	if (!ret)
		ret = write_through_mreg(pd, &a, &b);
	if (!ret)
		ret = pd_still_mine(pd, &a);
	destroy_side(&a);
	destroy_side(&b);
	if (pd && ibv_dealloc_pd(pd) && !ret)
		ret = -EBUSY; /* something still on the PD */
	ibv_close_device(ctx);
	if (ret)
		fprintf(stderr, "rdma_write: %s\n", strerror(-ret));
	return ret ? 1 : 0;
}
