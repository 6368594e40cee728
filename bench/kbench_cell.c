// SPDX-License-Identifier: MIT
/*
 * GUP benchmark cells through mreg.ko (MREG_IOC_BENCH, the gup_test
 * equivalent for kernels without CONFIG_GUP_TEST): pin the whole buffer
 * with one method and time get and put in the kernel. The module's census
 * of the folios it pinned must agree with the allocator's verified
 * histogram, or the cell says so.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/types.h>

#include "bench.h"
#include "uapi/mreg.h"

struct method_name {
	const char *name;
	uint32_t method;
	uint32_t flags;
};

static const struct method_name methods[] = {
	{"gup_fast", MREG_BENCH_GUP_FAST, 0},
	{"pup_fast", MREG_BENCH_PUP_FAST, 0},
	{"pup", MREG_BENCH_PUP, 0},
	{"pup_longterm", MREG_BENCH_PUP, MREG_BENCH_FLAG_LONGTERM},
	{"pup_remote", MREG_BENCH_PUP_REMOTE, 0},
	{"memfd", MREG_BENCH_MEMFD_PIN_FOLIOS, 0},
};

int kbench_parse(const char *tok, struct path_spec *p)
{
	const char *name = tok + strlen("kbench-");
	size_t len = strcspn(name, ":");
	size_t i;

	p->kind = PATH_KBENCH;
	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		if (strlen(methods[i].name) != len ||
		    strncmp(methods[i].name, name, len))
			continue;
		p->method = methods[i].method;
		p->kflags = methods[i].flags | MREG_BENCH_FLAG_WRITE;
		p->per_call = name[len] ? (uint32_t)atoi(name + len + 1) : 0;
		return 0;
	}
	return -EINVAL;
}

static int bench_once(int fd, const struct cell *c, struct mreg_buf *buf,
		      struct mreg_bench *b)
{
	bool memfd = c->path->method == MREG_BENCH_MEMFD_PIN_FOLIOS;

	*b = (struct mreg_bench){
		.size = sizeof(*b),
		.flags = c->path->kflags,
		.method = c->path->method,
		.pages_per_call = c->path->per_call,
		.memfd = memfd ? mreg_buf_fd(buf) : 0,
		.addr = memfd ? 0 : (uintptr_t)mreg_buf_addr(buf),
		.length = mreg_buf_length(buf),
	};
	return ioctl(fd, MREG_IOC_BENCH, b) ? -errno : 0;
}

/* The folios the kernel pinned against the ones the allocator verified. */
static void check_census(struct cell *c, const struct mreg_bench *b)
{
	int order;

	for (order = 0; order < MREG_HIST_ORDERS; order++)
		if (b->order_hist[order] != c->hist.folios[order]) {
			snprintf(c->note, sizeof(c->note),
				 "kernel pinned %" PRIu64 " order-%d folios, "
				 "verified %" PRIu64,
				 (uint64_t)b->order_hist[order], order,
				 c->hist.folios[order]);
			c->verified = false;
			return;
		}
}

static int open_mreg(struct cell *c)
{
	int fd = open("/dev/mreg", O_RDWR | O_CLOEXEC);

	/* BENCH is root's (CAP_SYS_ADMIN), whoever may open the device. */
	if (fd < 0)
		snprintf(c->note, sizeof(c->note), "/dev/mreg: %s%s",
			 strerror(errno),
			 errno == EACCES ? " (kbench cells need root)" : "");
	return fd;
}

static const char *bench_hint(int ret)
{
	switch (ret) {
	case -EPERM:
		return " (needs CAP_SYS_ADMIN)";
	case -EOPNOTSUPP: /* mreg.ko refuses hugetlb memfds as memfds */
		return " (a hugetlb memfd is pinned through its mapping)";
	default:
		return "";
	}
}

void kbench_cell_run(const struct bench_opts *o, struct cell *c,
		     struct mreg_buf *buf)
{
	static double get[MAX_REPS], put[MAX_REPS];
	struct mreg_bench b;
	int fd, i, ret;

	if (c->path->method == MREG_BENCH_MEMFD_PIN_FOLIOS &&
	    mreg_buf_fd(buf) < 0) {
		snprintf(c->note, sizeof(c->note), "needs --backing memfd");
		return;
	}
	fd = open_mreg(c);
	if (fd < 0)
		return;
	for (i = 0; i < o->warmup + o->reps; i++) {
		ret = bench_once(fd, c, buf, &b);
		if (ret) {
			snprintf(c->note, sizeof(c->note),
				 "MREG_IOC_BENCH: %s%s", strerror(-ret),
				 bench_hint(ret));
			break;
		}
		if (i < o->warmup)
			continue;
		get[c->nr] = (double)b.get_ns / 1e6;
		put[c->nr++] = (double)b.put_ns / 1e6;
	}
	close(fd);
	if (c->nr)
		check_census(c, &b);
	stats_compute(get, c->nr, &c->reg);
	stats_compute(put, c->nr, &c->dereg);
}
