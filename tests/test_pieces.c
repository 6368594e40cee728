// SPDX-License-Identifier: MIT
/*
 * Regions in pieces: asked for (piece_size), on several threads, or
 * forced by the backend (rxe's MR ceiling).  The pieces must tile the
 * region in address order, cut at multiples of the piece size; bytes
 * must move through every piece with its own key or buffer index; a
 * failure in any piece must leave nothing registered; pins balance.
 *
 *  io_uring (host and guest): READ_FIXED into the first and last bytes
 *           of every piece, one thread and four; a registration that
 *           runs out of slots midway undoes the pieces it made.
 *  vfio, iommufd, dpdk (guest, edu): 4 MiB at a fixed IOVA in 1 MiB
 *           pieces on two threads; edu's DMA engine copies from each
 *           piece into the next through the IOVAs the pieces report.
 *  verbs    (guest, rxe): a region of MREG_PIECES_VERBS_GB GiB (default
 *           4, above rxe's 1 GiB ceiling in 6.12) with no piece_size,
 *           RDMA WRITE into and READ out of both ends of every piece; a
 *           byte-granular region starting one byte into a page; the big
 *           one again on two threads.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <liburing.h>

#include "tcommon.h"
#include "tedu.h"
#include "tpaths.h"
#include "tvfio.h"
#ifdef MREG_TEST_VERBS
#include "tverbs.h"
#endif

#define MIB	  ((uint64_t)1 << 20)
#define CHUNK	  4096u
#define URING_LEN (96 * MIB)

static int fill_file(size_t len, unsigned int seed)
{
	char path[] = "/tmp/mreg-pieces-XXXXXX";
	char *p = malloc(len);
	int fd = mkstemp(path);
	size_t i;

	if (fd < 0 || !p) {
		free(p);
		return -ENOMEM;
	}
	unlink(path);
	for (i = 0; i < len; i++)
		p[i] = (char)(i * 13 + seed);
	if (write(fd, p, len) != (ssize_t)len) {
		close(fd);
		fd = -EIO;
	}
	free(p);
	return fd;
}

static int get_pieces(const struct mreg_region *r,
		      struct mreg_region_piece **out, size_t *nr)
{
	*nr = 0;
	T_CHECK(mreg_region_pieces(r, NULL, nr) == -EMSGSIZE && *nr,
		"pieces: no count");
	*out = calloc(*nr, sizeof(**out));
	T_CHECK(*out && !mreg_region_pieces(r, *out, nr), "%s",
		mreg_last_error());
	return T_PASS;
}

/* In address order, no gap, cut where @piece says, nr_slices agrees. */
static int check_tiling(const struct mreg_region *r,
			const struct mreg_region_piece *p, size_t nr,
			uint64_t piece)
{
	struct mreg_region_info info = {.size = sizeof(info)};
	uint64_t at = 0;
	size_t i;

	mreg_region_query(r, &info);
	T_CHECK(info.nr_slices == nr, "nr_slices %u, %zu pieces",
		info.nr_slices, nr);
	for (i = 0; i < nr; i++) {
		uint64_t end = info.addr + p[i].offset + p[i].length;

		T_CHECK(p[i].offset == at,
			"piece %zu at +%" PRIu64 ", expected +%" PRIu64, i,
			p[i].offset, at);
		T_CHECK(i + 1 == nr || end % piece == 0,
			"piece %zu ends at 0x%" PRIx64
			", not a multiple of %" PRIu64,
			i, end, piece);
		T_CHECK(p[i].length <= piece, "piece %zu is %" PRIu64 " bytes",
			i, p[i].length);
		at += p[i].length;
	}
	T_CHECK(at == info.length, "pieces cover %" PRIu64 " of %" PRIu64, at,
		info.length);
	return T_PASS;
}

/* The file's first CHUNK bytes into both ends of each piece. */
static int uring_data(struct mreg_domain *d, char *base,
		      const struct mreg_region_piece *p, size_t nr, int fd)
{
	char want[CHUNK];
	size_t i, e;

	T_CHECK(pread(fd, want, CHUNK, 0) == CHUNK, "pread");
	for (i = 0; i < nr; i++)
		for (e = 0; e < 2; e++) {
			char *dst = base + p[i].offset +
				    (e ? p[i].length - CHUNK : 0);
			int res;

			memset(dst, 0, CHUNK);
			res = t_read_fixed(mreg_domain_native(d), fd, dst,
					   CHUNK, (int)p[i].index);
			T_CHECK(res == CHUNK, "READ_FIXED piece %zu: %d", i,
				res);
			T_CHECK(!memcmp(dst, want, CHUNK),
				"bytes of piece %zu (buffer %u) differ", i,
				p[i].index);
		}
	return T_PASS;
}

static int uring_split(struct mreg_domain *d, char *base, int fd,
		       uint32_t threads)
{
	struct mreg_region_attr a = {.size = sizeof(a),
				     .comp_mask = MREG_REGION_ATTR_PIECE_SIZE |
						  MREG_REGION_ATTR_THREADS,
				     .addr = base,
				     .length = URING_LEN,
				     .piece_size = 16 * MIB,
				     .threads = threads};
	struct mreg_region_piece *p = NULL;
	struct mreg_region *r;
	size_t nr;
	int ret;

	T_CHECK(!mreg_region_register_attr(d, &a, &r), "%s", mreg_last_error());
	ret = get_pieces(r, &p, &nr);
	if (!ret)
		ret = check_tiling(r, p, nr, a.piece_size);
	if (!ret)
		ret = uring_data(d, base, p, nr, fd);
	if (!ret)
		printf("  io_uring: %zu pieces of <= 16 MiB on %u thread(s), "
		       "READ_FIXED through each\n",
		       nr, threads);
	free(p);
	T_CHECK(!mreg_region_deregister(r, NULL), "%s", mreg_last_error());
	return ret;
}

/* A ring of four buffer slots, and a region of 6 or 7 pieces for it. */
static int open_four_slots(struct mreg_domain **d)
{
	struct mreg_domain_attr da = {.backend = MREG_BACKEND_IO_URING,
				      .comp_mask = MREG_DOMAIN_ATTR_MAX_REGIONS,
				      .max_regions = 4};

	return mreg_domain_open(&da, d);
}

static struct mreg_region_attr too_many_pieces(char *base)
{
	return (struct mreg_region_attr){
		.size = sizeof(struct mreg_region_attr),
		.comp_mask = MREG_REGION_ATTR_PIECE_SIZE,
		.addr = base,
		.length = URING_LEN,
		.piece_size = 16 * MIB};
}

/* 7 pieces into 4 slots: the fifth fails, the four made are undone. */
static int uring_undo(char *base)
{
	struct mreg_region_attr a = too_many_pieces(base);
	struct mreg_domain *d;
	struct mreg_region *r;
	int ret;

	T_CHECK(!open_four_slots(&d), "%s", mreg_last_error());
	ret = mreg_region_register_attr(d, &a, &r);
	T_CHECK(ret == -ENOSPC && strstr(mreg_last_error(), "piece"),
		"out of slots: %d %s", ret, mreg_last_error());
	printf("  io_uring: %s\n", mreg_last_error());
	a.length = 4 * 16 * MIB - ((uintptr_t)base % (16 * MIB));
	a.length -= a.length % 4096;
	T_CHECK(!mreg_region_register_attr(d, &a, &r),
		"the slots were not given back: %s", mreg_last_error());
	T_CHECK(!mreg_region_deregister(r, NULL), "%s", mreg_last_error());
	T_CHECK(!mreg_domain_close(d), "%s", mreg_last_error());
	return T_PASS;
}

/*
 * Fault injection by interposition: the test exports its own
 * io_uring_register_buffers_update_tag() (ENABLE_EXPORTS), which libmreg
 * binds to before liburing's, and fails the next @fail_clears updates
 * that empty a slot, i.e. deregistrations.
 */
static int fail_clears;

int io_uring_register_buffers_update_tag(struct io_uring *ring, unsigned off,
					 const struct iovec *iovecs,
					 const __u64 *tags, unsigned nr)
{
	static __typeof__(io_uring_register_buffers_update_tag) *real;

	if (!real)
		real = (__typeof__(real))dlsym(
			RTLD_NEXT, "io_uring_register_buffers_update_tag");
	if (fail_clears > 0 && iovecs && !iovecs[0].iov_base) {
		fail_clears--;
		return -EIO;
	}
	return real(ring, off, iovecs, tags, nr);
}

/*
 * A registration fails midway and one of its pieces then refuses to be
 * undone: the domain must keep it (close says -EBUSY while it still
 * refuses) and undo it at the next close, leaving no pin.
 */
static int uring_stuck(char *base)
{
	struct mreg_region_attr a = too_many_pieces(base);
	struct t_pins before;
	struct mreg_domain *d;
	struct mreg_region *r;
	int ret;

	t_pins_read(&before);
	T_CHECK(!open_four_slots(&d), "%s", mreg_last_error());
	fail_clears = 1; /* one piece of the unwind refuses */
	ret = mreg_region_register_attr(d, &a, &r);
	T_CHECK(ret == -ENOSPC, "out of slots: %d %s", ret, mreg_last_error());
	T_CHECK(!fail_clears, "no piece was undone");
	fail_clears = 1; /* and again at the first close */
	T_CHECK(mreg_domain_close(d) == -EBUSY,
		"close with a piece still refusing: %s", mreg_last_error());
	T_CHECK(!fail_clears, "the clears were not retried");
	T_CHECK(!mreg_domain_close(d), "second close: %s", mreg_last_error());
	T_CHECK(t_pins_balanced(&before), "the stuck piece kept its pins");
	printf("  io_uring: a piece that refused to be undone stayed with the "
	       "domain, was undone at close; pins balanced\n");
	return T_PASS;
}

static int bad_attrs(struct mreg_domain *d, char *base)
{
	struct mreg_region_attr a = {
		.size = sizeof(a), .addr = base, .length = URING_LEN};
	struct mreg_region *r;

	a.comp_mask = MREG_REGION_ATTR_PIECE_SIZE;
	a.piece_size = 4097;
	T_CHECK(mreg_region_register_attr(d, &a, &r) == -EINVAL &&
			strstr(mreg_last_error(), "piece_size"),
		"piece_size 4097: %s", mreg_last_error());
	a.comp_mask = MREG_REGION_ATTR_THREADS;
	a.threads = 0;
	T_CHECK(mreg_region_register_attr(d, &a, &r) == -EINVAL &&
			strstr(mreg_last_error(), "threads"),
		"threads 0: %s", mreg_last_error());
	a.comp_mask = MREG_REGION_ATTR_THREADS | MREG_REGION_ATTR_SLOT;
	a.threads = 2;
	T_CHECK(mreg_region_register_attr(d, &a, &r) == -EINVAL,
		"slot and threads: %s", mreg_last_error());
	a.size = (uint32_t)offsetof(struct mreg_region_attr, piece_size);
	a.comp_mask = MREG_REGION_ATTR_PIECE_SIZE;
	T_CHECK(mreg_region_register_attr(d, &a, &r) == -EINVAL &&
			strstr(mreg_last_error(), "attr size"),
		"old attr size with PIECE_SIZE: %s", mreg_last_error());
	printf("  bad: piece_size, threads, slot + threads, old attr size: "
	       "-EINVAL with the field named\n");
	return T_PASS;
}

static int run_uring(void)
{
	struct mreg_domain_attr da = {.backend = MREG_BACKEND_IO_URING};
	struct mreg_domain *d;
	int fd = fill_file(CHUNK, 5), ret;
	char *base = mmap(NULL, URING_LEN, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	T_CHECK(fd >= 0 && base != MAP_FAILED, "setup");
	if (!t_uring_sparse()) {
		printf("  io_uring: pieces are regions of one domain, which "
		       "holds one without sparse buffer tables (Linux "
		       "5.19): not run\n");
		munmap(base, URING_LEN);
		close(fd);
		return T_PASS;
	}
	T_CHECK(!mreg_domain_open(&da, &d), "%s", mreg_last_error());
	ret = uring_split(d, base, fd, 1);
	if (!ret)
		ret = uring_split(d, base, fd, 4);
	if (!ret)
		ret = bad_attrs(d, base);
	T_CHECK(!mreg_domain_close(d), "%s", mreg_last_error());
	if (!ret)
		ret = uring_undo(base);
	if (!ret)
		ret = uring_stuck(base);
	munmap(base, URING_LEN);
	close(fd);
	return ret;
}

#define EDU_LEN	 (4 * MIB)
#define EDU_IOVA ((uint64_t)0x400000)
#define EDU_DMA	 T_EDU_DMA_MAX

/* Piece i's first bytes through the device into piece i + 1's. */
static int edu_ring(struct t_edu *e, char *base,
		    const struct mreg_region_piece *p, size_t nr)
{
	size_t i, j;

	for (i = 0; i < nr; i++) {
		const struct mreg_region_piece *a = &p[i],
					       *b = &p[(i + 1) % nr];

		T_CHECK(a->iova == EDU_IOVA + a->offset,
			"piece %zu at iova 0x%" PRIx64 ", not 0x%" PRIx64, i,
			a->iova, EDU_IOVA + a->offset);
		for (j = 0; j < EDU_DMA; j++)
			base[a->offset + j] = (char)(j * 7 + i);
		memset(base + b->offset, 0, EDU_DMA);
		T_CHECK(!t_edu_dma(e, a->iova, EDU_DMA, 1) &&
				!t_edu_dma(e, b->iova, EDU_DMA, 0),
			"edu DMA");
		T_CHECK(!memcmp(base + a->offset, base + b->offset, EDU_DMA),
			"piece %zu -> %zu through the device differs", i,
			(i + 1) % nr);
	}
	return T_PASS;
}

static int edu_pieces(struct mreg_domain *d, struct t_edu *e, const char *what)
{
	struct mreg_region_attr a = {.size = sizeof(a),
				     .comp_mask = MREG_REGION_ATTR_IOVA |
						  MREG_REGION_ATTR_PIECE_SIZE |
						  MREG_REGION_ATTR_THREADS,
				     .length = EDU_LEN,
				     .iova = EDU_IOVA,
				     .piece_size = MIB,
				     .threads = 2};
	struct mreg_region_piece *p = NULL;
	struct mreg_region *r;
	char *base = mmap(NULL, EDU_LEN, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	size_t nr;
	int ret;

	T_CHECK(base != MAP_FAILED, "mmap");
	a.addr = base;
	T_CHECK(!mreg_region_register_attr(d, &a, &r), "%s: %s", what,
		mreg_last_error());
	ret = get_pieces(r, &p, &nr);
	if (!ret)
		ret = edu_ring(e, base, p, nr);
	if (!ret)
		printf("  %s: %zu pieces on 2 threads, edu DMA from each "
		       "into the next\n",
		       what, nr);
	free(p);
	T_CHECK(!mreg_region_deregister(r, NULL), "%s", mreg_last_error());
	munmap(base, EDU_LEN);
	return ret;
}

static int adopt_edu(struct t_edu *e, enum mreg_backend b, const char *what)
{
	struct mreg_domain_attr da = {
		.backend = b,
		.comp_mask = MREG_DOMAIN_ATTR_ADOPT,
		.fd = b == MREG_BACKEND_VFIO ? e->container : e->iommufd,
		.ioas_id = e->ioas_id};
	struct mreg_domain *d;
	int ret;

	T_CHECK(!mreg_domain_open(&da, &d), "%s: %s", what, mreg_last_error());
	ret = edu_pieces(d, e, what);
	T_CHECK(!mreg_domain_close(d), "%s", mreg_last_error());
	return ret;
}

static int dpdk_edu(const char *bdf)
{
	struct mreg_domain_attr da = {.backend = MREG_BACKEND_DPDK,
				      .comp_mask = MREG_DOMAIN_ATTR_DEVICE,
				      .device = bdf};
	struct mreg_dpdk_native *native;
	struct mreg_domain *d;
	struct t_edu e;
	int ret;

	T_CHECK(!mreg_domain_open(&da, &d), "dpdk: %s", mreg_last_error());
	native = mreg_domain_native(d);
	ret = t_edu_attach(native->device_fd, bdf, &e);
	if (!ret)
		ret = edu_pieces(d, &e, "dpdk");
	T_CHECK(!mreg_domain_close(d), "%s", mreg_last_error());
	return ret;
}

static int run_edu(void)
{
	struct t_edu e;
	char bdf[64];
	int ret;

	if (geteuid() || t_vfio_device(bdf, sizeof(bdf)) ||
	    t_edu_open_type1(bdf, &e)) {
		printf("  vfio, iommufd, dpdk: no edu on vfio-pci: not run\n");
		return T_PASS;
	}
	ret = adopt_edu(&e, MREG_BACKEND_VFIO, "vfio");
	t_edu_close(&e);
	if (!ret && !access("/dev/iommu", F_OK)) {
		T_CHECK(!t_edu_open_iommufd(bdf, &e), "iommufd: open %s", bdf);
		ret = adopt_edu(&e, MREG_BACKEND_IOMMUFD, "iommufd");
		t_edu_close(&e);
	}
	if (!ret && mreg_backend_supported(MREG_BACKEND_DPDK))
		ret = dpdk_edu(bdf);
	return ret;
}

#ifdef MREG_TEST_VERBS
#define VERBS_ACCESS                                         \
	(MREG_ACCESS_LOCAL_WRITE | MREG_ACCESS_REMOTE_READ | \
	 MREG_ACCESS_REMOTE_WRITE)
/* rxe's default piece: RXE_PIECE_MAX in verbs.c. */
#define RXE_PIECE (256 * MIB)

struct verbs_env {
	struct mreg_domain *d;
	struct loop_qp qp;
	char *src; /* CHUNK bytes, registered as @src_r */
	struct mreg_region *src_r;
	uint32_t src_lkey;
};

static void pattern(char *p, size_t len, uint64_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (char)((i + seed) * 2654435761u >> 13);
}

/* WRITE src into @dst through the piece's rkey; READ it back into src. */
static int rdma_both(struct verbs_env *v, const struct mreg_region_piece *p,
		     char *dst, uint64_t seed)
{
	char want[CHUNK];

	pattern(v->src, CHUNK, seed);
	memcpy(want, v->src, CHUNK);
	memset(dst, 0, CHUNK);
	T_CHECK(!loop_rdma(&v->qp, IBV_WR_RDMA_WRITE, (uintptr_t)v->src,
			   v->src_lkey, (uintptr_t)dst, p->rkey, CHUNK),
		"RDMA WRITE");
	T_CHECK(!memcmp(dst, want, CHUNK), "WRITE landed wrong at %p", dst);
	pattern(dst, CHUNK, seed + 1);
	memcpy(want, dst, CHUNK);
	T_CHECK(!loop_rdma(&v->qp, IBV_WR_RDMA_READ, (uintptr_t)v->src,
			   v->src_lkey, (uintptr_t)dst, p->rkey, CHUNK),
		"RDMA READ");
	T_CHECK(!memcmp(v->src, want, CHUNK), "READ brought wrong bytes");
	return T_PASS;
}

/* Both ends of every piece, each through its own MR. */
static int verbs_data(struct verbs_env *v, const struct mreg_region *r,
		      const struct mreg_region_piece *p, size_t nr)
{
	struct mreg_region_info info = {.size = sizeof(info)};
	size_t i;

	mreg_region_query(r, &info);
	for (i = 0; i < nr; i++) {
		char *start = (char *)(uintptr_t)info.addr + p[i].offset;

		T_CHECK(p[i].native && (!i || p[i].rkey != p[0].rkey),
			"piece %zu has no MR of its own", i);
		T_CHECK(!rdma_both(v, &p[i], start, i * 2), "piece %zu start",
			i);
		T_CHECK(!rdma_both(v, &p[i], start + p[i].length - CHUNK,
				   i * 2 + 1),
			"piece %zu end", i);
	}
	return T_PASS;
}

static int verbs_region(struct verbs_env *v, char *addr, uint64_t len,
			uint32_t threads, const char *what)
{
	struct mreg_region_attr a = {.size = sizeof(a),
				     .comp_mask = MREG_REGION_ATTR_THREADS,
				     .addr = addr,
				     .length = len,
				     .threads = threads};
	struct mreg_region_piece *p = NULL;
	struct mreg_region_info info = {.size = sizeof(info)};
	struct mreg_region *r;
	size_t nr;
	int ret;

	T_CHECK(!mreg_region_register_attr(v->d, &a, &r), "%s: %s", what,
		mreg_last_error());
	mreg_region_query(r, &info);
	ret = get_pieces(r, &p, &nr);
	if (!ret)
		ret = check_tiling(r, p, nr, RXE_PIECE);
	if (!ret)
		ret = verbs_data(v, r, p, nr);
	if (!ret)
		printf("  verbs: %s: %zu MRs of <= 256 MiB on %u thread(s), "
		       "%.0f ms, RDMA WRITE+READ at both ends of each\n",
		       what, nr, threads, (double)info.reg_ns / 1e6);
	free(p);
	T_CHECK(!mreg_region_deregister(r, NULL), "%s", mreg_last_error());
	return ret;
}

/*
 * One MR for the whole range (a kernel whose rxe has no 1 GiB ceiling:
 * kernel/build.sh test sets MREG_RXE_ONE_MR on its patched kernels), with
 * RDMA through it at both ends and at eight points between, each one
 * CHUNK straddling a page and, for large MR pages, an MR page boundary.
 */
static int verbs_one_mr(struct verbs_env *v, char *addr, uint64_t len,
			const char *what)
{
	struct mreg_region_attr a = {.size = sizeof(a),
				     .comp_mask = MREG_REGION_ATTR_PIECE_SIZE,
				     .addr = addr,
				     .length = len,
				     .piece_size = UINT64_C(1) << 50};
	struct mreg_region_info info = {.size = sizeof(info)};
	struct mreg_region_piece one;
	struct mreg_region *r;
	uint64_t at;
	int i, ret = T_PASS;

	T_CHECK(!mreg_region_register_attr(v->d, &a, &r), "%s: %s", what,
		mreg_last_error());
	mreg_region_query(r, &info);
	one = (struct mreg_region_piece){.rkey = info.rkey, .length = len};
	for (i = 0; i <= 9 && !ret; i++) {
		at = i == 9 ? len - CHUNK : len / 9 * i;
		if (i && i < 9) /* straddle a 2 MiB boundary of the address */
			at = (((uintptr_t)addr + at) &
			      ~(uint64_t)(2 * MIB - 1)) -
			     CHUNK / 2 - (uintptr_t)addr;
		ret = rdma_both(v, &one, addr + at, (uint64_t)i);
		if (ret)
			printf("  verbs: %s: at offset %" PRIu64 "\n", what,
			       at);
	}
	if (!ret)
		printf("  verbs: %s: one MR, %.0f ms, RDMA WRITE+READ at 10 "
		       "points\n",
		       what, (double)info.reg_ns / 1e6);
	T_CHECK(!mreg_region_deregister(r, NULL), "%s", mreg_last_error());
	return ret;
}

static int verbs_env_open(struct verbs_env *v)
{
	struct mreg_domain_attr da = {.backend = MREG_BACKEND_VERBS,
				      .comp_mask = MREG_DOMAIN_ATTR_ACCESS,
				      .access = VERBS_ACCESS};
	struct mreg_region_info info = {.size = sizeof(info)};

	T_CHECK(!mreg_domain_open(&da, &v->d), "%s", mreg_last_error());
	T_CHECK(!loop_qp_create(&v->qp, mreg_domain_native(v->d)), "QP");
	v->src = aligned_alloc(4096, CHUNK);
	T_CHECK(v->src && !mreg_region_register(v->d, v->src, CHUNK, &v->src_r),
		"%s", mreg_last_error());
	mreg_region_query(v->src_r, &info);
	v->src_lkey = info.lkey;
	return T_PASS;
}

static void verbs_env_close(struct verbs_env *v)
{
	mreg_region_deregister(v->src_r, NULL);
	loop_qp_destroy(&v->qp);
	mreg_domain_close(v->d);
	free(v->src);
}

static uint64_t verbs_gb(void)
{
	const char *env = getenv("MREG_PIECES_VERBS_GB");

	return env ? strtoull(env, NULL, 0) : 4;
}

static int run_verbs(void)
{
	uint64_t len = verbs_gb() << 30;
	struct mreg_buf_attr ba = {.size = sizeof(ba),
				   .flags = MREG_BUF_ALLOW_FALLBACK |
					    MREG_BUF_SET_POLICY,
				   .length = len,
				   .folio_size = t_pmd_size()};
	long avail = t_meminfo_kb("MemAvailable");
	struct verbs_env v = {0};
	struct mreg_buf *buf;
	char *base;
	int ret;

	if (!mreg_backend_supported(MREG_BACKEND_VERBS)) {
		printf("  verbs: no RDMA device: not run\n");
		return T_PASS;
	}
	if (avail >= 0 && (uint64_t)avail * 1024 < len + len / 4) {
		printf("  verbs: %ld MB available, %" PRIu64 " GiB needs more: "
		       "not run (the guest suite gives 6G)\n",
		       avail >> 10, len >> 30);
		return T_PASS;
	}
	T_CHECK(!mreg_buf_alloc(&ba, &buf), "%s", mreg_last_error());
	base = mreg_buf_addr(buf);
	ret = verbs_env_open(&v);
	if (!ret)
		ret = verbs_region(&v, base, len, 1, "the whole buffer");
	if (!ret)
		ret = verbs_region(&v, base + 1, 600 * MIB, 1,
				   "600 MiB from one byte into a page");
	if (!ret)
		ret = verbs_region(&v, base, len, 2, "the big one again");
	if (!ret && !getenv("MREG_RXE_ONE_MR"))
		printf("  verbs: one MR over 1 GiB: not run (rxe in 6.12 "
		       "cannot "
		       "take one; MREG_RXE_ONE_MR=1 on a kernel that can)\n");
	if (!ret && getenv("MREG_RXE_ONE_MR"))
		ret = verbs_one_mr(&v, base, len, "the whole buffer");
	if (!ret && getenv("MREG_RXE_ONE_MR"))
		ret = verbs_one_mr(&v, base + 3 * CHUNK + 1, 1536 * MIB + 12345,
				   "1.5 GiB from 3 pages and a byte in");
	verbs_env_close(&v);
	mreg_buf_free(buf);
	return ret;
}
#endif

int main(void)
{
	struct t_pins before;
	int ret;

	t_init("test_pieces");
	t_pins_read(&before);
	ret = run_uring();
	if (!ret)
		ret = run_edu();
#ifdef MREG_TEST_VERBS
	if (!ret)
		ret = run_verbs();
#endif
	T_CHECK(t_pins_balanced(&before), "pins left");
	if (!ret)
		printf("  pins balanced\n");
	return ret;
}
