// SPDX-License-Identifier: MIT
/*
 * io_uring fixed buffers over every folio size: registration pins the
 * whole range (nr_foll_pin_acquired moves by at least its pages), a
 * READ_FIXED lands in the registered memory byte for byte, and after
 * deregistration every pin is released.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <liburing.h>

#include "tcommon.h"

#define BUF_LEN (32u << 20)
#define CHUNK	(1u << 20)

static int make_pattern_file(void)
{
	char path[] = "/tmp/mreg-io_uring-XXXXXX";
	static char chunk[CHUNK];
	unsigned int i;
	int fd;

	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	unlink(path);
	for (i = 0; i < CHUNK; i++)
		chunk[i] = (char)(i * 7 + 3);
	if (write(fd, chunk, CHUNK) != CHUNK) {
		close(fd);
		return -EIO;
	}
	return fd;
}

static int check_io(struct mreg_domain *d, struct mreg_region *r, int fd,
		    char *base)
{
	static char want[CHUNK];
	struct mreg_region_info info = {.size = sizeof(info)};
	size_t off;
	int res;

	T_CHECK(!mreg_region_query(r, &info), "query");
	T_CHECK(pread(fd, want, CHUNK, 0) == CHUNK, "pread pattern");
	for (off = 0; off < BUF_LEN; off += BUF_LEN / 4 + CHUNK) {
		memset(base + off, 0, CHUNK);
		res = t_read_fixed(mreg_domain_native(d), fd, base + off, CHUNK,
				   (int)info.index);
		T_CHECK(res == CHUNK, "READ_FIXED at %zu: %d", off, res);
		T_CHECK(!memcmp(base + off, want, CHUNK),
			"data mismatch at offset %zu", off);
	}
	return T_PASS;
}

static int run_case(const struct t_folio *c, int fd)
{
	struct mreg_domain_attr attr = {.backend = MREG_BACKEND_IO_URING};
	struct t_pins before, pinned;
	struct mreg_region *r;
	struct mreg_domain *d;
	struct mreg_buf *buf;
	int ret;

	T_CHECK(!t_buf(c, BUF_LEN, &buf), "%s: %s", c->name, mreg_last_error());
	T_CHECK(!mreg_domain_open(&attr, &d), "%s", mreg_last_error());
	T_CHECK(!t_pins_read(&before), "no nr_foll_pin_* in /proc/vmstat");
	T_CHECK(!mreg_region_register(d, mreg_buf_addr(buf), BUF_LEN, &r),
		"%s: %s", c->name, mreg_last_error());
	t_pins_read(&pinned);
	T_CHECK(pinned.acquired - before.acquired >= BUF_LEN / 4096,
		"%s: only %" PRIu64 " pages pinned", c->name,
		pinned.acquired - before.acquired);
	ret = check_io(d, r, fd, mreg_buf_addr(buf));
	T_CHECK(!mreg_region_deregister(r, NULL), "%s", mreg_last_error());
	T_CHECK(!mreg_domain_close(d), "%s", mreg_last_error());
	T_CHECK(t_pins_balanced(&before), "%s: pins leaked", c->name);
	printf("  %-10s registered, READ_FIXED ok, pins balanced\n", c->name);
	mreg_buf_free(buf);
	return ret;
}

int main(void)
{
	struct t_folio cases[32];
	int n, i, fd, ret = T_PASS;

	t_init("test_io_uring");
	if (!mreg_backend_supported(MREG_BACKEND_IO_URING))
		return t_skip("io_uring is not available (io_uring_disabled?)");
	if (geteuid())
		return t_skip(
			"folio sizes are chosen through sysfs: needs root");
	fd = make_pattern_file();
	T_CHECK(fd >= 0, "pattern file: %s", strerror(-fd));
	n = t_folio_cases(cases, 32, MREG_BACKING_ANON);
	for (i = 0; i < n && !ret; i++)
		ret = run_case(&cases[i], fd);
	close(fd);
	return ret;
}
