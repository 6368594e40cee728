// SPDX-License-Identifier: MIT
/*
 * Allocate 64 MB in 64 kB folios (or a size given on the command line),
 * show which folios back it, and register it as io_uring fixed buffers.
 *
 *   register_io_uring [folio_kB [length_MB]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mreg/mreg.h>

static void print_log(void *ctx, int level, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "mreg[%d]: %s\n", level, msg);
}

int main(int argc, char **argv)
{
	struct mreg_buf_attr attr = {
		.size = sizeof(attr),
		.flags = MREG_BUF_ALLOW_FALLBACK,
		.length = (argc > 2 ? strtoull(argv[2], NULL, 0) : 64) << 20,
		.folio_size = (argc > 1 ? strtoull(argv[1], NULL, 0) : 64)
			      << 10,
	};
	struct mreg_domain_attr dattr = {.backend = MREG_BACKEND_IO_URING};
	struct mreg_region *region;
	struct mreg_domain *domain;
	struct mreg_buf *buf;
	uint64_t dereg_ns;
	char hist[256];
	int ret;

	mreg_set_log(print_log, NULL);
	ret = mreg_buf_alloc(&attr, &buf);
	if (ret)
		return 1;
	mreg_folio_hist_format(mreg_buf_hist(buf), hist, sizeof(hist));
	printf("buffer %zu MB, folios %s%s\n", mreg_buf_length(buf) >> 20, hist,
	       mreg_buf_verified(buf) ? "" : " (NOT what was asked for)");
	ret = mreg_domain_open(&dattr, &domain);
	if (!ret)
		ret = mreg_region_register(domain, mreg_buf_addr(buf),
					   mreg_buf_length(buf), &region);
	if (!ret) {
		struct mreg_region_info info;

		mreg_region_query(region, &info);
		mreg_region_deregister(region, &dereg_ns);
		printf("io_uring register %.3f ms, unregister %.3f ms\n",
		       (double)info.reg_ns / 1e6, (double)dereg_ns / 1e6);
	}
	mreg_domain_close(domain);
	mreg_buf_free(buf);
	return ret ? 1 : 0;
}
