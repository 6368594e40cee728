// SPDX-License-Identifier: MIT
/*
 * Registering into the application's own objects: its io_uring ring (with
 * its own buffer table, or none), its verbs PD, its /dev/mreg file.  mreg
 * uses only the slots it was given, hands back the native handle of each
 * region, closes nothing it did not open, and leaves every object working
 * after the domain is closed.  Also the per-region attributes: a chosen
 * io_uring slot, verbs access flags and byte-granular ranges, and the
 * refusals of attributes a backend does not take.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <liburing.h>
#ifdef MREG_TEST_VERBS
#include <infiniband/verbs.h>
#endif

#include "tcommon.h"
#include "tpaths.h"

#define LEN   (64u << 10)
#define SLOTS 16
#define BASE  8

static int pattern_file(void)
{
	char path[] = "/tmp/mreg-adopt-XXXXXX", chunk[LEN];
	int fd = mkstemp(path);

	if (fd < 0)
		return -1;
	unlink(path);
	memset(chunk, 0x5a, sizeof(chunk));
	if (write(fd, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* READ_FIXED the file into @buf through @index: the result. */
static int read_fixed(struct io_uring *ring, int fd, char *buf, int index)
{
	int res;

	memset(buf, 0, LEN);
	res = t_read_fixed(ring, fd, buf, LEN, index);
	return res == (int)LEN && buf[LEN - 1] != 0x5a ? -EIO : res;
}

static int adopt_ring(struct io_uring *ring, uint32_t base, uint32_t n,
		      struct mreg_domain **d)
{
	struct mreg_domain_attr attr = {
		.backend = MREG_BACKEND_IO_URING,
		.comp_mask = MREG_DOMAIN_ATTR_ADOPT |
			     MREG_DOMAIN_ATTR_SLOT_BASE |
			     MREG_DOMAIN_ATTR_MAX_REGIONS,
		.native = ring,
		.slot_base = base,
		.max_regions = n,
	};

	return mreg_domain_open(&attr, d);
}

/* The application's ring and table; mreg gets slots 8..15 of it. */
static int uring_with_table(int file, char *mine, char *app)
{
	struct iovec own = {.iov_base = app, .iov_len = LEN};
	struct mreg_region_info info = {.size = sizeof(info)};
	struct mreg_domain *d;
	struct mreg_region *r;
	struct io_uring ring;

	if (!t_uring_sparse()) {
		printf("  io_uring: the application's own table needs sparse "
		       "buffer tables (Linux 5.19): case not run\n");
		return T_PASS;
	}
	T_CHECK(!io_uring_queue_init(8, &ring, 0), "ring");
	T_CHECK(!io_uring_register_buffers_sparse(&ring, SLOTS), "table");
	T_CHECK(io_uring_register_buffers_update_tag(&ring, 0, &own, NULL, 1) ==
			1,
		"the application's buffer 0");
	T_CHECK(!adopt_ring(&ring, BASE, SLOTS - BASE, &d), "%s",
		mreg_last_error());
	T_CHECK(mreg_domain_native(d) == &ring, "native is not the app's ring");
	T_CHECK(!mreg_region_register(d, mine, LEN, &r), "%s",
		mreg_last_error());
	mreg_region_query(r, &info);
	T_CHECK(info.index == BASE, "mreg used slot %u, not %u", info.index,
		BASE);
	T_CHECK(read_fixed(&ring, file, mine, (int)info.index) == (int)LEN,
		"READ_FIXED through mreg's slot");
	T_CHECK(read_fixed(&ring, file, app, 0) == (int)LEN,
		"READ_FIXED through the application's slot 0");
	T_CHECK(!mreg_region_deregister(r, NULL), "%s", mreg_last_error());
	T_CHECK(!mreg_domain_close(d), "%s", mreg_last_error());
	T_CHECK(read_fixed(&ring, file, app, 0) == (int)LEN,
		"the application's buffer 0 died with the domain");
	T_CHECK(read_fixed(&ring, file, mine, BASE) < 0,
		"mreg's slot still holds a buffer after deregistration");
	io_uring_queue_exit(&ring);
	printf("  io_uring: slots %u.. of the application's table; its "
	       "buffer 0 and the ring still work\n",
	       BASE);
	return T_PASS;
}

/* A ring without a table: mreg adds one and takes it away at close. */
static int uring_without_table(char *mine)
{
	struct iovec own = {.iov_base = mine, .iov_len = LEN};
	struct mreg_domain *d;
	struct mreg_region *r;
	struct io_uring ring;

	T_CHECK(!io_uring_queue_init(8, &ring, 0), "ring");
	T_CHECK(!adopt_ring(&ring, 0, 4, &d), "%s", mreg_last_error());
	T_CHECK(!mreg_region_register(d, mine, LEN, &r), "%s",
		mreg_last_error());
	T_CHECK(!mreg_region_deregister(r, NULL), "%s", mreg_last_error());
	T_CHECK(!mreg_domain_close(d), "%s", mreg_last_error());
	T_CHECK(!io_uring_register_buffers(&ring, &own, 1),
		"mreg's table outlived the domain");
	io_uring_queue_exit(&ring);
	printf("  io_uring: on a ring without a table mreg added one and "
	       "removed it at close\n");
	return T_PASS;
}

static int register_slot(struct mreg_domain *d, char *buf, uint32_t slot,
			 struct mreg_region **r)
{
	struct mreg_region_attr a = {.size = sizeof(a),
				     .comp_mask = MREG_REGION_ATTR_SLOT,
				     .addr = buf,
				     .length = LEN,
				     .slot = slot};

	return mreg_region_register_attr(d, &a, r);
}

static int uring_fixed_slot(int file, char *buf)
{
	struct mreg_region_info info = {.size = sizeof(info)};
	struct mreg_region *r, *r2;
	struct mreg_domain *d, *d2;
	struct io_uring ring;

	if (!t_uring_sparse()) {
		printf("  io_uring: chosen slots need sparse buffer tables "
		       "(Linux 5.19): case not run\n");
		return T_PASS;
	}
	T_CHECK(!io_uring_queue_init(8, &ring, 0), "ring");
	T_CHECK(!adopt_ring(&ring, BASE, 8, &d), "%s", mreg_last_error());
	T_CHECK(!register_slot(d, buf, 13, &r), "%s", mreg_last_error());
	mreg_region_query(r, &info);
	T_CHECK(info.index == 13, "slot %u, not 13", info.index);
	T_CHECK(read_fixed(&ring, file, buf, 13) == (int)LEN, "READ_FIXED 13");
	T_CHECK(register_slot(d, buf, 13, &r2) == -EBUSY, "slot 13 twice");
	T_CHECK(register_slot(d, buf, 16, &r2) == -EINVAL,
		"slot past the "
		"domain's range accepted");
	T_CHECK(register_slot(d, buf, 7, &r2) == -EINVAL, "slot below "
							  "slot_base accepted");
	T_CHECK(adopt_ring(&ring, 12, 4, &d2) == -EBUSY &&
			strstr(mreg_last_error(), "another mreg domain"),
		"a second domain on slots 12-15 of the same ring: %s",
		mreg_last_error());
	T_CHECK(adopt_ring(&ring, 16, 4, &d2) == -EINVAL &&
			strstr(mreg_last_error(), "has 16 slots"),
		"a second domain past the table mreg added: %s",
		mreg_last_error());
	T_CHECK(!mreg_region_deregister(r, NULL), "%s", mreg_last_error());
	/* The table the first domain added outlives it for the second. */
	T_CHECK(!adopt_ring(&ring, 0, 4, &d2),
		"a second domain on free slots "
		"0-3: %s",
		mreg_last_error());
	T_CHECK(!register_slot(d2, buf, 2, &r2), "%s", mreg_last_error());
	T_CHECK(!mreg_domain_close(d), "%s", mreg_last_error());
	T_CHECK(read_fixed(&ring, file, buf, 2) == (int)LEN,
		"closing the domain that added the table took the other "
		"domain's buffer with it");
	T_CHECK(!mreg_region_deregister(r2, NULL), "%s", mreg_last_error());
	T_CHECK(!mreg_domain_close(d2), "%s", mreg_last_error());
	T_CHECK(!io_uring_register_buffers_sparse(&ring, 4),
		"the last domain to close left mreg's table behind");
	io_uring_queue_exit(&ring);
	printf("  io_uring: a chosen slot is used, and refused when taken or "
	       "outside the domain; two domains share the table mreg added\n");
	return T_PASS;
}

/* Attributes a backend does not take are refused, naming them. */
static int bad_attrs(char *buf)
{
	struct mreg_domain_attr da = {.backend = MREG_BACKEND_IO_URING};
	struct mreg_region_attr a = {
		.size = sizeof(a), .addr = buf, .length = LEN};
	struct mreg_domain *d, *d2;
	struct mreg_region *r;

	T_CHECK(!mreg_domain_open(&da, &d), "%s", mreg_last_error());
	a.comp_mask = MREG_REGION_ATTR_IOVA;
	T_CHECK(mreg_region_register_attr(d, &a, &r) == -EINVAL &&
			strstr(mreg_last_error(), "IOVA"),
		"IOVA on io_uring: %s", mreg_last_error());
	a.comp_mask = 1u << 30;
	T_CHECK(mreg_region_register_attr(d, &a, &r) == -EINVAL &&
			strstr(mreg_last_error(), "comp_mask"),
		"unknown comp_mask: %s", mreg_last_error());
	a.comp_mask = 0;
	a.reserved = 1;
	T_CHECK(mreg_region_register_attr(d, &a, &r) == -EINVAL &&
			strstr(mreg_last_error(), "reserved"),
		"reserved: %s", mreg_last_error());
	a.reserved = 0;
	a.addr = buf + 1;
	T_CHECK(mreg_region_register_attr(d, &a, &r) == -EINVAL &&
			strstr(mreg_last_error(), "whole pages"),
		"unaligned on io_uring: %s", mreg_last_error());
	da.comp_mask = 0;
	da.slot_base = 8;
	T_CHECK(mreg_domain_open(&da, &d2) == -EINVAL &&
			strstr(mreg_last_error(), "MREG_DOMAIN_ATTR_SLOT_BASE"),
		"slot_base without its bit: %s", mreg_last_error());
	da.slot_base = 0;
	da.comp_mask = MREG_DOMAIN_ATTR_ADOPT;
	T_CHECK(mreg_domain_close(d) == 0, "close");
	T_CHECK(mreg_domain_open(&da, &d) == -EINVAL &&
			strstr(mreg_last_error(), "native"),
		"adopt without a ring: %s", mreg_last_error());
	printf("  attributes a backend does not take are refused by name\n");
	return T_PASS;
}

static int kmod_adopt(char *buf)
{
	struct mreg_domain_attr attr = {.backend = MREG_BACKEND_KMOD,
					.comp_mask = MREG_DOMAIN_ATTR_ADOPT};
	struct mreg_domain *d;
	struct mreg_region *r;

	if (!mreg_backend_supported(MREG_BACKEND_KMOD)) {
		printf("  kmod: no /dev/mreg here: not run\n");
		return T_PASS;
	}
	attr.fd = open("/dev/mreg", O_RDWR | O_CLOEXEC);
	T_CHECK(attr.fd >= 0, "open /dev/mreg");
	T_CHECK(!mreg_domain_open(&attr, &d), "%s", mreg_last_error());
	T_CHECK(!mreg_region_register(d, buf, LEN, &r), "%s",
		mreg_last_error());
	T_CHECK(!mreg_region_deregister(r, NULL), "%s", mreg_last_error());
	T_CHECK(!mreg_domain_close(d), "%s", mreg_last_error());
	T_CHECK(fcntl(attr.fd, F_GETFD) >= 0, "mreg closed the application's "
					      "/dev/mreg");
	T_CHECK(!mreg_domain_open(&attr, &d) && !mreg_domain_close(d),
		"the file no longer works: %s", mreg_last_error());
	close(attr.fd);
	printf("  kmod: pinned through the application's /dev/mreg fd, which "
	       "stays open\n");
	return T_PASS;
}

#ifdef MREG_TEST_VERBS
static int verbs_adopt_pd(struct ibv_pd *pd, char *buf)
{
	struct mreg_domain_attr attr = {.backend = MREG_BACKEND_VERBS,
					.comp_mask = MREG_DOMAIN_ATTR_ADOPT,
					.native = pd};
	struct mreg_region_attr a = {.size = sizeof(a),
				     .comp_mask = MREG_REGION_ATTR_ACCESS,
				     .addr = buf + 100,
				     .length = 1000,
				     .access = MREG_ACCESS_LOCAL_WRITE |
					       MREG_ACCESS_REMOTE_WRITE};
	struct mreg_region_info info = {.size = sizeof(info)};
	struct mreg_domain *d;
	struct mreg_region *r;
	struct ibv_mr *mr;

	T_CHECK(!mreg_domain_open(&attr, &d), "%s", mreg_last_error());
	T_CHECK(!mreg_region_register_attr(d, &a, &r), "%s", mreg_last_error());
	mr = mreg_region_native(r);
	mreg_region_query(r, &info);
	T_CHECK(mr && mr->pd == pd && mr->lkey == info.lkey &&
			mr->rkey == info.rkey,
		"the native MR is not the region's on the application's PD");
	T_CHECK(mr->addr == buf + 100 && mr->length == 1000,
		"the MR covers %p+%zu, not the bytes asked for", mr->addr,
		mr->length);
	T_CHECK(!mreg_region_deregister(r, NULL), "%s", mreg_last_error());
	T_CHECK(!mreg_domain_close(d), "%s", mreg_last_error());
	mr = ibv_reg_mr(pd, buf, LEN, IBV_ACCESS_LOCAL_WRITE);
	T_CHECK(mr, "the application's PD no longer works");
	ibv_dereg_mr(mr);
	printf("  verbs: a byte-granular MR with its own access on the "
	       "application's PD; the PD stays usable\n");
	return T_PASS;
}

static int verbs_adopt(char *buf)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	int n = 0, ret;

	if (!mreg_backend_supported(MREG_BACKEND_VERBS)) {
		printf("  verbs: no RDMA device here: not run\n");
		return T_PASS;
	}
	list = ibv_get_device_list(&n);
	T_CHECK(list && n > 0, "no device");
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	T_CHECK(ctx, "ibv_open_device");
	pd = ibv_alloc_pd(ctx);
	T_CHECK(pd, "ibv_alloc_pd");
	ret = verbs_adopt_pd(pd, buf);
	T_CHECK(!ibv_dealloc_pd(pd), "mreg left an MR on the application's PD");
	ibv_close_device(ctx);
	return ret;
}
#else
static int verbs_adopt(char *buf)
{
	(void)buf;
	printf("  verbs: built without libibverbs: not run\n");
	return T_PASS;
}
#endif

int main(void)
{
	char *mine = t_map(LEN, 1), *app = t_map(LEN, 1);
	int file = pattern_file(), ret;

	t_init("test_adopt");
	T_CHECK(mine && app && file >= 0, "setup: %s", strerror(errno));
	ret = uring_with_table(file, mine, app);
	if (!ret)
		ret = uring_without_table(mine);
	if (!ret)
		ret = uring_fixed_slot(file, mine);
	if (!ret)
		ret = bad_attrs(mine);
	if (!ret)
		ret = kmod_adopt(mine);
	if (!ret)
		ret = verbs_adopt(mine);
	return ret;
}
