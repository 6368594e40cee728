// SPDX-License-Identifier: MIT
/*
 * Real I/O into registered memory: a buffer in 64 kB folios, registered
 * as io_uring fixed buffers, filled from a file by READ_FIXED through the
 * region's buffer index and compared with what was written.
 *
 *   register_io_uring [length_MB]     (default 8)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <liburing.h>
#include <mreg/mreg.h>

#define CHUNK (1u << 20) /* one READ_FIXED; divides a 1 GiB slot */
#define SLOT  (1ull << 30)

static void print_log(void *ctx, int level, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "mreg[%d]: %s\n", level, msg);
}

/*
 * 64 kB folios if the kernel offers them, else base pages. Whether the
 * kernel hands out 64 kB folios is up to the THP policy in sysfs, which
 * is the administrator's (mreg changes it only when asked, as root):
 * ALLOW_FALLBACK takes the buffer whatever it got, and we say what that
 * was.
 */
static int alloc_buf(size_t length, struct mreg_buf **buf)
{
	struct mreg_buf_attr attr = {
		.size = sizeof(attr),
		/* As root, ask mreg to narrow the policy while it faults in. */
		.flags = MREG_BUF_ALLOW_FALLBACK |
			 (geteuid() ? 0 : MREG_BUF_SET_POLICY),
		.length = length,
		.folio_size = 64 << 10,
	};
	char hist[256];
	int ret;

	ret = mreg_buf_alloc(&attr, buf);
	if (ret == -EOPNOTSUPP) {
		printf("note: this kernel has no 64 kB mTHP; using base "
		       "pages\n");
		attr.folio_size = (uint64_t)sysconf(_SC_PAGESIZE);
		ret = mreg_buf_alloc(&attr, buf);
	}
	if (ret)
		return ret;
	mreg_folio_hist_format(mreg_buf_hist(*buf), hist, sizeof(hist));
	printf("buffer %zu MB, folios %s\n", mreg_buf_length(*buf) >> 20, hist);
	if (!mreg_buf_verified(*buf))
		printf("note: not all %llu kB folios (see "
		       "/sys/kernel/mm/transparent_hugepage)\n",
		       (unsigned long long)attr.folio_size >> 10);
	return 0;
}

/* An unlinked file of @len bytes of @pattern (never 0, not periodic in
 * CHUNK, so a misplaced chunk shows). Return: the fd or -errno. */
static int pattern_file(char *pattern, size_t len)
{
	char path[] = "/tmp/mreg-example-XXXXXX";
	size_t i;
	ssize_t n;
	int fd;

	for (i = 0; i < len; i++)
		pattern[i] = (char)(i % 251 + 1);
	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	unlink(path);
	for (i = 0; i < len; i += (size_t)n) {
		n = pwrite(fd, pattern + i, len - i, (off_t)i);
		if (n <= 0) {
			close(fd);
			return n ? -errno : -EIO;
		}
	}
	return fd;
}

/* One READ_FIXED of @len bytes at file offset @off into @addr. */
static int read_one(struct io_uring *ring, int fd, void *addr, unsigned len,
		    uint64_t off, int index)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct io_uring_cqe *cqe;
	int ret;

	io_uring_prep_read_fixed(sqe, fd, addr, len, off, index);
	ret = io_uring_submit(ring);
	if (ret < 0)
		return ret;
	ret = io_uring_wait_cqe(ring, &cqe);
	if (ret)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return ret ? ret : -EIO; /* 0: the file is shorter than the buffer */
}

/*
 * Read @fd into the whole region. A region over 1 GiB has nr_slices slots
 * from info.index on: byte @off is in slot index + off / 1 GiB, and one
 * fixed-buffer I/O must stay within its slot.
 */
static int read_fixed(struct io_uring *ring,
		      const struct mreg_region_info *info, int fd)
{
	uint64_t off = 0, left;
	int ret;

	while (off < info->length) {
		left = info->length - off;
		ret = read_one(ring, fd, (char *)(uintptr_t)info->addr + off,
			       left < CHUNK ? (unsigned)left : CHUNK, off,
			       (int)(info->index + off / SLOT));
		if (ret < 0)
			return ret;
		off += (uint64_t)ret;
	}
	return 0;
}

/* Register @buf, fill it from @fd by READ_FIXED, compare, deregister. */
static int register_and_read(struct mreg_domain *domain, struct mreg_buf *buf,
			     const char *pattern, int fd)
{
	struct mreg_region_info info = {.size = sizeof(info)};
	struct mreg_region *region;
	uint64_t dereg_ns = 0;
	int ret, dereg;

	ret = mreg_region_register(domain, mreg_buf_addr(buf),
				   mreg_buf_length(buf), &region);
	if (ret)
		return ret;
	mreg_region_query(region, &info);
	ret = read_fixed(mreg_domain_native(domain), &info, fd);
	if (!ret && memcmp(pattern, mreg_buf_addr(buf), info.length))
		ret = -EILSEQ;
	dereg = mreg_region_deregister(region, &dereg_ns);
	printf("io_uring register %.3f ms (slot %u, %u slots), unregister "
	       "%.3f ms\n",
	       (double)info.reg_ns / 1e6, info.index, info.nr_slices,
	       (double)dereg_ns / 1e6);
	return ret ? ret : dereg;
}

int main(int argc, char **argv)
{
	struct mreg_domain_attr dattr = {.backend = MREG_BACKEND_IO_URING};
	size_t len = (argc > 1 ? strtoull(argv[1], NULL, 0) : 8) << 20;
	struct mreg_domain *domain;
	struct mreg_buf *buf;
	char *pattern = NULL;
	int fd = -1, ret;

	mreg_set_log(print_log, NULL);
	ret = alloc_buf(len, &buf);
	if (ret)
		goto out;
	len = mreg_buf_length(buf);
	pattern = malloc(len);
	fd = pattern ? pattern_file(pattern, len) : -ENOMEM;
	if (fd < 0) {
		ret = fd;
		goto out_buf;
	}
	/* The domain is closed only once it was opened: no NULL, no garbage. */
	ret = mreg_domain_open(&dattr, &domain);
	if (ret)
		goto out_file;
	ret = register_and_read(domain, buf, pattern, fd);
	mreg_domain_close(domain); /* -EBUSY only if deregistering failed */
out_file:
	close(fd);
out_buf:
	free(pattern);
	mreg_buf_free(buf);
out:
	if (ret)
		fprintf(stderr, "register_io_uring: %s\n", strerror(-ret));
	else
		printf("READ_FIXED of %zu bytes matches the file\n", len);
	return ret ? 1 : 0;
}
