// SPDX-License-Identifier: MIT
/*
 * uring-update: the cost of IORING_REGISTER_BUFFERS_UPDATE of one slot in
 * a full registered-buffer table, on buffers whose folios are verified.
 *
 *   uring-update [-n slots] [-m updates] [-s slot_size] [-f folio_size]
 *
 * Fills a table of N slots (default 1024) with buffers of S bytes (default
 * 64k) from one mreg buffer of folio size F (default 64k), then times M
 * (default 1000) io_uring_register_buffers_update_tag() calls that each
 * replace slot k % N by the same offset of a second buffer, so every update
 * registers folios no slot holds and releases the ones it replaces. This is
 * the case a per-ring accounting set must not make slower than stock's scan.
 * Both buffers are verified before and after; the JSON line says whether
 * their histograms held ("verified") and gives them.
 * Written with the kernel patch review (issue 11); run by bench/guest/bench.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <liburing.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <time.h>

#include <mreg/mreg.h>

struct opts {
	unsigned long slots, updates, slot_size, folio_size;
};

static unsigned long parse_size(const char *arg, const char *name)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 0);
	if (*end == 'k' || *end == 'K')
		v <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		v <<= 20, end++;
	if (errno || end == arg || *end || !v) {
		fprintf(stderr, "uring-update: bad %s '%s'\n", name, arg);
		exit(2);
	}
	return v;
}

static void parse(int argc, char **argv, struct opts *o)
{
	int c;

	*o = (struct opts){1024, 1000, 64 << 10, 64 << 10};
	while ((c = getopt(argc, argv, "n:m:s:f:")) != -1) {
		switch (c) {
		case 'n':
			o->slots = parse_size(optarg, "-n slots");
			break;
		case 'm':
			o->updates = parse_size(optarg, "-m updates");
			break;
		case 's':
			o->slot_size = parse_size(optarg, "-s slot_size");
			break;
		case 'f':
			o->folio_size = parse_size(optarg, "-f folio_size");
			break;
		default:
			fprintf(stderr,
				"usage: uring-update [-n slots] [-m updates] "
				"[-s slot_size] [-f folio_size]\n");
			exit(2);
		}
	}
	if (o->slots > 16384 || o->slot_size % 4096) {
		fprintf(stderr, "uring-update: -n at most 16384 (io_uring's "
				"table), -s a multiple of 4096\n");
		exit(2);
	}
}

static struct mreg_buf *verified_buf(const struct opts *o)
{
	struct mreg_buf_attr a = {.size = sizeof(a),
				  .flags = MREG_BUF_ALLOW_FALLBACK |
					   MREG_BUF_SET_POLICY,
				  .length = o->slots * o->slot_size,
				  .folio_size = o->folio_size};
	struct mreg_buf *b;
	int ret = mreg_buf_alloc(&a, &b);

	if (ret) {
		fprintf(stderr, "uring-update: buffer: %s\n",
			mreg_last_error());
		exit(1);
	}
	return b;
}

/* Still the folios it was allocated with? @text gets the histogram. */
static int still_verified(struct mreg_buf *b, char *text, size_t len)
{
	struct mreg_folio_hist now = {.size = sizeof(now)};

	if (mreg_verify_range(mreg_buf_addr(b), mreg_buf_length(b), &now))
		return 0;
	mreg_folio_hist_format(&now, text, len);
	return mreg_buf_verified(b) &&
	       !memcmp(now.bytes, mreg_buf_hist(b)->bytes, sizeof(now.bytes)) &&
	       now.pmd_mapped_bytes == mreg_buf_hist(b)->pmd_mapped_bytes;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void raise_memlock(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur != rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_MEMLOCK, &rl);
	}
}

int main(int argc, char **argv)
{
	char hist[2][256];
	struct mreg_buf *buf[2];
	struct io_uring ring;
	struct iovec *iov;
	struct opts o;
	double t0, t1;
	unsigned long k;
	int ret, ok;

	parse(argc, argv, &o);
	raise_memlock();
	buf[0] = verified_buf(&o);
	buf[1] = verified_buf(&o);
	iov = calloc(o.slots, sizeof(*iov));
	if (!iov || io_uring_queue_init(8, &ring, 0)) {
		fprintf(stderr, "uring-update: io_uring_queue_init failed\n");
		return 1;
	}
	for (k = 0; k < o.slots; k++)
		iov[k] = (struct iovec){(char *)mreg_buf_addr(buf[0]) +
						k * o.slot_size,
					o.slot_size};
	ret = io_uring_register_buffers(&ring, iov, (unsigned int)o.slots);
	if (ret) {
		fprintf(stderr, "uring-update: register %lu buffers: %s\n",
			o.slots, strerror(-ret));
		return 1;
	}
	t0 = now_ns();
	for (k = 0; k < o.updates; k++) {
		unsigned long slot = k % o.slots;
		struct iovec one = {
			(char *)mreg_buf_addr(buf[(k / o.slots + 1) & 1]) +
				slot * o.slot_size,
			o.slot_size};
		__u64 tag = 0;

		ret = io_uring_register_buffers_update_tag(
			&ring, (unsigned int)slot, &one, &tag, 1);
		if (ret != 1) {
			fprintf(stderr,
				"uring-update: update %lu (slot %lu): %s\n", k,
				slot, strerror(ret < 0 ? -ret : EIO));
			return 1;
		}
	}
	t1 = now_ns();
	io_uring_unregister_buffers(&ring);
	io_uring_queue_exit(&ring);
	ok = still_verified(buf[0], hist[0], sizeof(hist[0]));
	ok &= still_verified(buf[1], hist[1], sizeof(hist[1]));
	printf("{\"cell\":\"uring-update\",\"slots\":%lu,\"updates\":%lu,"
	       "\"slot_size\":%lu,\"folio_size\":%lu,\"ns_per_update\":%.0f,"
	       "\"verified\":%s,\"hist\":[\"%s\",\"%s\"]}\n",
	       o.slots, o.updates, o.slot_size, o.folio_size,
	       (t1 - t0) / (double)o.updates, ok ? "true" : "false", hist[0],
	       hist[1]);
	mreg_buf_free(buf[0]);
	mreg_buf_free(buf[1]);
	free(iov);
	return 0;
}
