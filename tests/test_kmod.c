// SPDX-License-Identifier: MIT
/*
 * The kmod backend over mreg.ko: a registration pins the range, its
 * extents tile it in order, each extent's folio order is the one the
 * allocator verified, and deregistration releases every pin.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tcommon.h"

#define LEN (16u << 20)

static int check_extents(const struct t_folio *c, struct mreg_region *r)
{
	unsigned int order = (unsigned int)__builtin_ctzll(c->size / 4096);
	struct mreg_region_extent *ext;
	size_t nr = 0, i;
	uint64_t next = 0;

	T_CHECK(mreg_region_extents(r, NULL, &nr) == -EMSGSIZE && nr,
		"%s: extent count: %s", c->name, mreg_last_error());
	ext = calloc(nr, sizeof(*ext));
	T_CHECK(ext && !mreg_region_extents(r, ext, &nr), "%s: %s", c->name,
		mreg_last_error());
	for (i = 0; i < nr; i++) {
		T_CHECK(ext[i].offset == next,
			"%s: extent %zu at %" PRIu64 ", expected %" PRIu64,
			c->name, i, ext[i].offset, next);
		T_CHECK(ext[i].order == order, "%s: extent %zu order %u",
			c->name, i, ext[i].order);
		T_CHECK(ext[i].length <= c->size, "%s: extent %zu spans folios",
			c->name, i);
		next += ext[i].length;
	}
	T_CHECK(next == LEN, "%s: extents cover %" PRIu64 " bytes", c->name,
		next);
	printf("  %-10s %zu extents, all order %u\n", c->name, nr, order);
	free(ext);
	return T_PASS;
}

static int run_case(const struct t_folio *c)
{
	struct mreg_domain_attr attr = {.backend = MREG_BACKEND_KMOD};
	struct t_pins before;
	struct mreg_region *r;
	struct mreg_domain *d;
	struct mreg_buf *buf;
	int ret;

	T_CHECK(!t_buf(c, LEN, &buf), "%s: %s", c->name, mreg_last_error());
	T_CHECK(!mreg_domain_open(&attr, &d), "%s", mreg_last_error());
	t_pins_read(&before);
	T_CHECK(!mreg_region_register(d, mreg_buf_addr(buf), LEN, &r), "%s: %s",
		c->name, mreg_last_error());
	ret = check_extents(c, r);
	T_CHECK(!mreg_region_deregister(r, NULL), "%s", mreg_last_error());
	T_CHECK(!mreg_domain_close(d), "%s", mreg_last_error());
	T_CHECK(t_pins_balanced(&before), "%s: pins leaked", c->name);
	mreg_buf_free(buf);
	return ret;
}

int main(void)
{
	t_init("test_kmod");
	if (!mreg_backend_supported(MREG_BACKEND_KMOD))
		return t_skip("no /dev/mreg (load kmod/mreg.ko)");
	return t_each_anon_folio(run_case);
}
