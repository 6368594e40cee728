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
#include "tverbs.h"

#define LEN (8u << 20)
#define ACCESS_ALL                                           \
	(MREG_ACCESS_LOCAL_WRITE | MREG_ACCESS_REMOTE_READ | \
	 MREG_ACCESS_REMOTE_WRITE)

/* One RDMA op of LEN bytes from @local to @remote. */
static int rdma_op(struct loop_qp *l, enum ibv_wr_opcode op,
		   const struct mreg_region_info *local,
		   const struct mreg_region_info *remote)
{
	return loop_rdma(l, op, local->addr, local->lkey, remote->addr,
			 remote->rkey, LEN);
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
