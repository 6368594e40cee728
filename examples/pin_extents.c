// SPDX-License-Identifier: MIT
/*
 * What a userspace driver does with mreg.ko: allocate a buffer in large
 * folios, pin it long-term through /dev/mreg, and get the physically
 * contiguous extents to program a device with (physical addresses need
 * CAP_SYS_ADMIN; they print as 0 otherwise).
 *
 *   pin_extents [folio_kB [length_MB]]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <mreg/mreg.h>

static void print_log(void *ctx, int level, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "mreg[%d]: %s\n", level, msg);
}

static int print_extents(struct mreg_region *region)
{
	struct mreg_region_extent *ext;
	size_t nr = 0, i;
	int ret;

	mreg_region_extents(region, NULL, &nr); /* -EMSGSIZE, nr = needed */
	ext = calloc(nr ? nr : 1, sizeof(*ext));
	if (!ext)
		return 1;
	ret = mreg_region_extents(region, ext, &nr);
	for (i = 0; !ret && i < nr; i++)
		printf("extent %4zu: offset 0x%08" PRIx64 " len %7" PRIu64
		       " KiB order %2u phys 0x%" PRIx64 "\n",
		       i, ext[i].offset, ext[i].length >> 10, ext[i].order,
		       ext[i].phys);
	free(ext);
	return ret ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct mreg_buf_attr attr = {
		.size = sizeof(attr),
		/* As root, mreg may narrow the THP policy to the asked size
		 * while the buffer faults in; otherwise the system's holds. */
		.flags = geteuid() ? 0 : MREG_BUF_SET_POLICY,
		.length = (argc > 2 ? strtoull(argv[2], NULL, 0) : 4) << 20,
		.folio_size = (argc > 1 ? strtoull(argv[1], NULL, 0) : 64)
			      << 10,
	};
	struct mreg_domain_attr dattr = {.backend = MREG_BACKEND_KMOD};
	struct mreg_domain *domain = NULL;
	struct mreg_region *region;
	struct mreg_buf *buf;
	int ret;

	mreg_set_log(print_log, NULL);
	if (mreg_buf_alloc(&attr, &buf))
		return 1;
	ret = mreg_domain_open(&dattr, &domain);
	if (!ret)
		ret = mreg_region_register(domain, mreg_buf_addr(buf),
					   mreg_buf_length(buf), &region);
	if (!ret) {
		ret = print_extents(region);
		mreg_region_deregister(region, NULL);
	}
	mreg_domain_close(domain);
	mreg_buf_free(buf);
	return ret ? 1 : 0;
}
