// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <liburing.h>

#include "tcommon.h"

static const char *test_name = "test";

static void log_stderr(void *ctx, int level, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "%s: mreg[%d]: %s\n", test_name, level, msg);
}

void t_init(const char *name)
{
	test_name = name;
	setvbuf(stdout, NULL, _IOLBF, 0);
	mreg_set_log(log_stderr, NULL);
}

void t_report(const char *file, int line, const char *cond, const char *fmt,
	      ...)
{
	va_list ap;

	fprintf(stderr, "%s: FAIL %s:%d: %s: ", test_name, file, line, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
}

int t_skip(const char *fmt, ...)
{
	va_list ap;

	printf("%s: SKIP: ", test_name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	return T_SKIP;
}

static void stat_refresh(void)
{
	int fd = open("/proc/sys/vm/stat_refresh", O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	if (write(fd, "1", 1) < 0)
		fprintf(stderr, "%s: stat_refresh: %s\n", test_name,
			strerror(errno));
	close(fd);
}

int t_pins_read(struct t_pins *pins)
{
	char line[128];
	FILE *f;
	int found = 0;

	stat_refresh();
	f = fopen("/proc/vmstat", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		found += sscanf(line, "nr_foll_pin_acquired %" SCNu64,
				&pins->acquired);
		found += sscanf(line, "nr_foll_pin_released %" SCNu64,
				&pins->released);
	}
	fclose(f);
	return found == 2 ? 0 : -ENOENT;
}

bool t_pins_balanced(const struct t_pins *before)
{
	struct t_pins now;
	int tries;

	for (tries = 0; tries < 200; tries++) {
		if (t_pins_read(&now))
			return false;
		/* Others (9p writes of our own output) may hold pins across
		 * @before: a leak is more pins held now than then. */
		if (now.acquired - before->acquired <=
		    now.released - before->released)
			return true;
		usleep(50000);
	}
	fprintf(stderr,
		"%s: pins: acquired +%" PRIu64 ", released +%" PRIu64 "\n",
		test_name, now.acquired - before->acquired,
		now.released - before->released);
	return false;
}

static int add_case(struct t_folio *c, uint64_t size, uint32_t backing,
		    uint32_t level)
{
	c->size = size;
	c->backing = backing;
	c->level = level;
	snprintf(c->name, sizeof(c->name), "%" PRIu64 "k%s", size >> 10,
		 level == MREG_MAP_PMD	 ? "-pmd"
		 : level == MREG_MAP_PTE ? "-pte"
					 : "");
	return 1;
}

uint64_t t_pmd_size(void)
{
	unsigned long long size = 0;
	FILE *f;

	f = fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "re");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &size) != 1)
		size = 0;
	fclose(f);
	return size;
}

int t_folio_cases(struct t_folio *cases, int max, uint32_t backing)
{
	uint64_t sizes[32], pmd = t_pmd_size();
	int nr, i, n = 0;

	nr = mreg_thp_sizes(sizes, 32);
	n += add_case(&cases[n], (uint64_t)sysconf(_SC_PAGESIZE), backing,
		      MREG_MAP_DEFAULT);
	for (i = 0; i < nr && n + 2 < max; i++)
		if (sizes[i] != pmd)
			n += add_case(&cases[n], sizes[i], backing,
				      MREG_MAP_DEFAULT);
	if (pmd) {
		n += add_case(&cases[n], pmd, backing, MREG_MAP_PMD);
		n += add_case(&cases[n], pmd, backing, MREG_MAP_PTE);
	}
	return n;
}

int t_buf(const struct t_folio *c, uint64_t len, struct mreg_buf **buf)
{
	struct mreg_buf_attr attr = {
		.size = sizeof(attr),
		/* The folio cases are chosen through sysfs: ask for it. */
		.flags = geteuid() ? 0 : MREG_BUF_SET_POLICY,
		.length = len,
		.folio_size = c->size,
		.backing = c->backing,
		.map_level = c->level,
	};

	return mreg_buf_alloc(&attr, buf);
}

int t_each_anon_folio(int (*fn)(const struct t_folio *c))
{
	struct t_folio cases[32];
	int n, i, ret = T_PASS;

	if (geteuid())
		return t_skip(
			"folio sizes are chosen through sysfs: needs root");
	n = t_folio_cases(cases, 32, MREG_BACKING_ANON);
	for (i = 0; i < n && !ret; i++)
		ret = fn(&cases[i]);
	return ret;
}

bool t_uring_sparse(void)
{
	struct io_uring ring;
	bool ok;

	if (io_uring_queue_init(1, &ring, 0))
		return false;
	ok = !io_uring_register_buffers_sparse(&ring, 1);
	io_uring_queue_exit(&ring);
	return ok;
}

int t_read_fixed(struct io_uring *ring, int fd, void *dst, unsigned int len,
		 int index)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct io_uring_cqe *cqe;
	int res;

	io_uring_prep_read_fixed(sqe, fd, dst, len, 0, index);
	io_uring_submit(ring);
	if (io_uring_wait_cqe(ring, &cqe))
		return -EIO;
	res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return res;
}
