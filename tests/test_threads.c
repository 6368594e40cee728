// SPDX-License-Identifier: MIT
/*
 * Threads registering on one domain at once: 4 threads x 10000
 * (MREG_THREAD_ITERS) register/deregister pairs on every path the system
 * offers, each thread with its own buffer.  While a region is live, no
 * other live region of the domain may share its io_uring slots, its
 * verbs keys or its IOVA range; on io_uring each registration also moves
 * data: a READ_FIXED through the region's own index must land in the
 * thread's own buffer.  At the end the domain closes (no region left
 * counted) and every pin is released.
 *
 *   test_threads [PATH]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <liburing.h>

#include "tcommon.h"
#include "tedu.h"
#include "tpaths.h"
#ifdef MREG_TEST_VERBS
#include "tverbs.h"
#endif

#define THREADS 4
#define BUF_LEN (64u << 10)
/* edu runs each DMA from a 100 ms timer: check every DMA_EVERYth pair. */
#define DMA_EVERY 1000
#define DMA_LEN	  T_EDU_DMA_MAX
#define HALF	  (BUF_LEN / 2)

struct live {
	pthread_mutex_t lock;
	struct mreg_region_info info[THREADS];
	int used[THREADS];
};

struct shared {
	const struct t_path *path;
	struct mreg_domain *domain;
	struct live live;
	pthread_mutex_t ring_lock; /* liburing's SQ and CQ are single-user */
	int file;		   /* THREADS * BUF_LEN of pattern */
	unsigned long iters;
	struct t_edu edu; /* VFIO: the device, when it is an edu */
	bool have_edu;
	pthread_mutex_t edu_lock; /* one DMA engine for every thread */
	uint64_t dmas;
};

struct worker {
	struct shared *s;
	int id;
	char *buf;
	unsigned long n;
#ifdef MREG_TEST_VERBS
	struct loop_qp qp; /* verbs: this thread's own QP on the PD */
#endif
	char why[256];
};

static int overlaps(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

/* Two live regions of one domain must not share what names them. */
static int clashes(const struct mreg_region_info *a,
		   const struct mreg_region_info *b, enum mreg_backend be)
{
	switch (be) {
	case MREG_BACKEND_IO_URING:
		return overlaps(a->index, a->nr_slices, b->index, b->nr_slices);
	case MREG_BACKEND_VERBS:
		return a->lkey == b->lkey || a->rkey == b->rkey;
	case MREG_BACKEND_VFIO:
	case MREG_BACKEND_IOMMUFD:
	case MREG_BACKEND_DPDK:
		return overlaps(a->iova, a->length, b->iova, b->length);
	default:
		return 0;
	}
}

static int go_live(struct worker *w, const struct mreg_region_info *info)
{
	struct live *l = &w->s->live;
	int i, clash = -1;

	pthread_mutex_lock(&l->lock);
	for (i = 0; i < THREADS && clash < 0; i++)
		if (l->used[i] &&
		    clashes(&l->info[i], info, w->s->path->backend))
			clash = i;
	l->info[w->id] = *info;
	l->used[w->id] = 1;
	pthread_mutex_unlock(&l->lock);
	if (clash < 0)
		return 0;
	snprintf(w->why, sizeof(w->why),
		 "thread %d's region (index %u, lkey 0x%x, iova 0x%" PRIx64
		 ") clashes with thread %d's",
		 w->id, info->index, info->lkey, info->iova, clash);
	return -1;
}

static void go_dead(struct worker *w)
{
	pthread_mutex_lock(&w->s->live.lock);
	w->s->live.used[w->id] = 0;
	pthread_mutex_unlock(&w->s->live.lock);
}

/* READ_FIXED this thread's part of the file through @index. */
static int read_fixed(struct worker *w, uint32_t index)
{
	struct io_uring *ring = mreg_domain_native(w->s->domain);
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	int res = -EIO;

	memset(w->buf, 0xee, BUF_LEN);
	pthread_mutex_lock(&w->s->ring_lock);
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_read_fixed(sqe, w->s->file, w->buf, BUF_LEN,
				 (uint64_t)w->id * BUF_LEN, (int)index);
	io_uring_submit(ring);
	if (!io_uring_wait_cqe(ring, &cqe)) {
		res = cqe->res;
		io_uring_cqe_seen(ring, cqe);
	}
	pthread_mutex_unlock(&w->s->ring_lock);
	if (res == (int)BUF_LEN && w->buf[0] == (char)(w->id + 1) &&
	    w->buf[BUF_LEN - 1] == (char)(w->id + 1))
		return 0;
	snprintf(w->why, sizeof(w->why),
		 "thread %d: READ_FIXED through index %u: res %d, bytes "
		 "0x%02x..0x%02x",
		 w->id, index, res, (unsigned char)w->buf[0],
		 (unsigned char)w->buf[BUF_LEN - 1]);
	return -1;
}

static void stamp(struct worker *w, size_t off, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		w->buf[off + i] = (char)(w->id * 61 + w->n * 7 + i);
}

static int same_halves(struct worker *w, size_t len, const char *how)
{
	if (!memcmp(w->buf, w->buf + HALF, len))
		return 0;
	snprintf(w->why, sizeof(w->why),
		 "thread %d pair %lu: %s did not land in the thread's own "
		 "buffer",
		 w->id, w->n, how);
	return -1;
}

#ifdef MREG_TEST_VERBS
/* An RDMA WRITE from the first half of the region to its second half,
 * through the region's own lkey and rkey. */
static int rdma_write(struct worker *w, const struct mreg_region_info *info)
{
	stamp(w, 0, 4096);
	memset(w->buf + HALF, 0, 4096);
	if (loop_rdma(&w->qp, IBV_WR_RDMA_WRITE, info->addr, info->lkey,
		      info->addr + HALF, info->rkey, 4096)) {
		snprintf(w->why, sizeof(w->why), "thread %d: RDMA WRITE",
			 w->id);
		return -1;
	}
	return same_halves(w, 4096, "RDMA WRITE");
}
#endif

/* edu copies the first half into itself and back into the second half,
 * through the region's IOVA. */
static int device_dma(struct worker *w, const struct mreg_region_info *info)
{
	struct shared *s = w->s;
	int ret;

	stamp(w, 0, DMA_LEN);
	memset(w->buf + HALF, 0, DMA_LEN);
	pthread_mutex_lock(&s->edu_lock);
	ret = t_edu_dma(&s->edu, info->iova, DMA_LEN, 1);
	if (!ret)
		ret = t_edu_dma(&s->edu, info->iova + HALF, DMA_LEN, 0);
	s->dmas += !ret;
	pthread_mutex_unlock(&s->edu_lock);
	if (ret) {
		snprintf(w->why, sizeof(w->why),
			 "thread %d: edu DMA at iova 0x%llx: %s", w->id,
			 (unsigned long long)info->iova, strerror(-ret));
		return -1;
	}
	return same_halves(w, DMA_LEN, "edu DMA");
}

/* Move data through the live region by its backend's own data path. */
static int data_path(struct worker *w, const struct mreg_region_info *info)
{
	switch (w->s->path->backend) {
	case MREG_BACKEND_IO_URING:
		return read_fixed(w, info->index);
#ifdef MREG_TEST_VERBS
	case MREG_BACKEND_VERBS:
		return rdma_write(w, info);
#endif
	case MREG_BACKEND_VFIO:
		return w->s->have_edu && !(w->n % DMA_EVERY)
			       ? device_dma(w, info)
			       : 0;
	default:
		return 0;
	}
}

static int one_pair(struct worker *w)
{
	struct mreg_region_info info = {.size = sizeof(info)};
	struct mreg_region *r;
	int ret;

	if (mreg_region_register(w->s->domain, w->buf, BUF_LEN, &r)) {
		snprintf(w->why, sizeof(w->why), "thread %d: register: %s",
			 w->id, mreg_last_error());
		return -1;
	}
	mreg_region_query(r, &info);
	ret = go_live(w, &info);
	if (!ret)
		ret = data_path(w, &info);
	go_dead(w);
	if (mreg_region_deregister(r, NULL) && !ret) {
		snprintf(w->why, sizeof(w->why), "thread %d: deregister: %s",
			 w->id, mreg_last_error());
		ret = -1;
	}
	return ret;
}

static void *work(void *arg)
{
	struct worker *w = arg;

#ifdef MREG_TEST_VERBS
	if (w->s->path->backend == MREG_BACKEND_VERBS &&
	    loop_qp_create(&w->qp, mreg_domain_native(w->s->domain))) {
		snprintf(w->why, sizeof(w->why), "thread %d: no QP", w->id);
		return w;
	}
#endif
	for (w->n = 0; w->n < w->s->iters; w->n++)
		if (one_pair(w))
			break;
#ifdef MREG_TEST_VERBS
	loop_qp_destroy(&w->qp);
#endif
	return w->n < w->s->iters ? w : NULL;
}

static int pattern_file(void)
{
	char path[] = "/tmp/mreg-threads-XXXXXX", chunk[BUF_LEN];
	int fd = mkstemp(path), i;

	if (fd < 0)
		return -1;
	unlink(path);
	for (i = 0; i < THREADS; i++) {
		memset(chunk, i + 1, sizeof(chunk));
		if (write(fd, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk)) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

/*
 * VFIO on an edu: the test opens the device and its container itself and
 * hands the container to mreg, so that edu's DMA can check registrations.
 * Verbs: a PD that takes remote writes, for the RDMA WRITEs.
 */
static int open_domain(struct shared *s)
{
	struct mreg_domain_attr attr = {.backend = MREG_BACKEND_VERBS,
					.comp_mask = MREG_DOMAIN_ATTR_ACCESS,
					.access = MREG_ACCESS_LOCAL_WRITE |
						  MREG_ACCESS_REMOTE_WRITE};

	if (s->path->backend == MREG_BACKEND_VERBS)
		return mreg_domain_open(&attr, &s->domain);
	if (s->path->backend != MREG_BACKEND_VFIO ||
	    t_edu_open_type1(s->path->device, &s->edu))
		return t_path_open(s->path, &s->domain);
	s->have_edu = true;
	attr = (struct mreg_domain_attr){.backend = MREG_BACKEND_VFIO,
					 .comp_mask = MREG_DOMAIN_ATTR_ADOPT,
					 .fd = s->edu.container};
	return mreg_domain_open(&attr, &s->domain);
}

static const char *checked_by(const struct shared *s)
{
	switch (s->path->backend) {
	case MREG_BACKEND_IO_URING:
		return ", every READ_FIXED in its own buffer";
#ifdef MREG_TEST_VERBS
	case MREG_BACKEND_VERBS:
		return ", every RDMA WRITE through its own keys";
#endif
	case MREG_BACKEND_VFIO:
		return s->have_edu ? ", edu DMA through every 1000th IOVA" : "";
	default:
		return "";
	}
}

static int run_path(const struct t_path *p, unsigned long iters)
{
	struct shared s = {.path = p, .iters = iters};
	struct worker w[THREADS];
	pthread_t t[THREADS];
	struct t_pins before;
	void *failed;
	int i, ret = T_PASS;

	pthread_mutex_init(&s.live.lock, NULL);
	pthread_mutex_init(&s.ring_lock, NULL);
	s.file = pattern_file();
	T_CHECK(s.file >= 0, "pattern file: %s", strerror(errno));
	pthread_mutex_init(&s.edu_lock, NULL);
	T_CHECK(!open_domain(&s), "%s: %s", p->name, mreg_last_error());
	t_pins_read(&before);
	for (i = 0; i < THREADS; i++) {
		w[i] = (struct worker){.s = &s, .id = i};
		w[i].buf = t_map(BUF_LEN, 1);
		T_CHECK(w[i].buf, "mmap: %s", strerror(errno));
		pthread_create(&t[i], NULL, work, &w[i]);
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(t[i], &failed);
		if (failed) {
			fprintf(stderr, "test_threads: %s: %s\n", p->name,
				w[i].why);
			ret = T_FAIL;
		}
	}
	T_CHECK(!ret, "%s: a thread failed", p->name);
	T_CHECK(!mreg_domain_close(s.domain), "%s: close: %s", p->name,
		mreg_last_error());
	T_CHECK(t_pins_balanced(&before), "%s: pins left", p->name);
	for (i = 0; i < THREADS; i++)
		munmap(w[i].buf, BUF_LEN);
	close(s.file);
	if (s.have_edu)
		t_edu_close(&s.edu);
	printf("  %-8s %d threads x %lu register/deregister on one domain: "
	       "no clash%s, pins balanced\n",
	       p->name, THREADS, iters, checked_by(&s));
	return T_PASS;
}

int main(int argc, char **argv)
{
	const char *env = getenv("MREG_THREAD_ITERS");
	unsigned long iters = env && *env ? strtoul(env, NULL, 0) : 10000;
	struct t_path paths[T_MAX_PATHS];
	int n, i, ret = T_PASS;

	t_init("test_threads");
	n = t_paths_only(paths, t_paths(paths, T_MAX_PATHS),
			 argc > 1 ? argv[1] : NULL);
	if (!n)
		return t_skip("no registration path here");
	for (i = 0; i < n && !ret; i++) {
		if (paths[i].backend == MREG_BACKEND_IO_URING &&
		    !t_uring_sparse()) {
			printf("  io_uring: one region per domain without "
			       "sparse "
			       "buffer tables (Linux 5.19): not run\n");
			continue;
		}
		ret = run_path(&paths[i], iters);
	}
	return ret;
}
