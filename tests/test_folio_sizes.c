// SPDX-License-Identifier: MIT
/*
 * Every folio size the kernel offers, on every backing, comes back verified:
 * the histogram says each byte sits in a folio of that size, mapped at the
 * asked-for level, and writing the buffer does not change that.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tcommon.h"

static int check_hist(const struct t_folio *c, struct mreg_buf *buf)
{
	const struct mreg_folio_hist *h = mreg_buf_hist(buf);
	unsigned int order = (unsigned int)__builtin_ctzll(c->size / 4096);
	uint64_t len = mreg_buf_length(buf);
	char text[256];

	mreg_folio_hist_format(h, text, sizeof(text));
	printf("  %-10s backing %u: %s\n", c->name, c->backing, text);
	T_CHECK(mreg_buf_verified(buf), "%s not verified: %s", c->name, text);
	T_CHECK(h->method == MREG_VERIFY_EXACT, "%s: method %u", c->name,
		h->method);
	T_CHECK(h->bytes[order] == len,
		"%s: %" PRIu64 " of %" PRIu64 " bytes in order-%u folios",
		c->name, h->bytes[order], len, order);
	T_CHECK(h->folios[order] == len / c->size, "%s: %" PRIu64 " folios",
		c->name, h->folios[order]);
	T_CHECK(h->pmd_mapped_bytes == (c->level == MREG_MAP_PMD ? len : 0),
		"%s: %" PRIu64 " bytes PMD-mapped", c->name,
		h->pmd_mapped_bytes);
	return T_PASS;
}

/* Writing every page must not move the buffer off its folios. */
static int check_after_write(const struct t_folio *c, struct mreg_buf *buf)
{
	struct mreg_folio_hist again = {.size = sizeof(again)};
	char *p = mreg_buf_addr(buf);

	memset(p, 0x5a, mreg_buf_length(buf));
	T_CHECK(!mreg_verify_range(p, mreg_buf_length(buf), &again),
		"%s: re-verify: %s", c->name, mreg_last_error());
	T_CHECK(!memcmp(&again, mreg_buf_hist(buf), sizeof(again)),
		"%s: histogram changed after writing", c->name);
	return T_PASS;
}

static int run_case(const struct t_folio *c)
{
	uint64_t len = c->size * 4 > (8u << 20) ? c->size * 4 : 8u << 20;
	struct mreg_buf *buf;
	int ret;

	ret = t_buf(c, len, &buf);
	if (ret == -EOPNOTSUPP) {
		printf("  %-10s backing %u: not offered by this kernel: %s\n",
		       c->name, c->backing, mreg_last_error());
		return T_PASS;
	}
	T_CHECK(!ret, "%s backing %u: %s", c->name, c->backing,
		mreg_last_error());
	ret = check_hist(c, buf);
	if (!ret)
		ret = check_after_write(c, buf);
	mreg_buf_free(buf);
	return ret;
}

/* memfd's folio size has one knob (shmem_enabled): 4 kB or PMD size. */
static bool memfd_case(const struct t_folio *c)
{
	return c->size == 4096 || c->size == t_pmd_size();
}

static int run_backing(uint32_t backing)
{
	struct t_folio cases[32];
	int n, i, ret;

	n = t_folio_cases(cases, 32, backing);
	for (i = 0; i < n; i++) {
		if (backing == MREG_BACKING_MEMFD && !memfd_case(&cases[i]))
			continue;
		ret = run_case(&cases[i]);
		if (ret)
			return ret;
	}
	return T_PASS;
}

static int run_hugetlb(void)
{
	struct t_folio c = {.size = t_pmd_size(),
			    .backing = MREG_BACKING_HUGETLB,
			    .level = MREG_MAP_PMD};

	snprintf(c.name, sizeof(c.name), "hugetlb-%" PRIu64 "k", c.size >> 10);
	if (access("/sys/kernel/mm/hugepages", F_OK))
		return t_skip("hugetlb: kernel without hugetlbfs");
	return run_case(&c);
}

int main(void)
{
	uint32_t backing;
	int ret;

	t_init("test_folio_sizes");
	if (geteuid())
		return t_skip("exact verification and the THP policy need "
			      "root");
	for (backing = MREG_BACKING_ANON; backing <= MREG_BACKING_MEMFD;
	     backing++) {
		ret = run_backing(backing);
		if (ret)
			return ret;
	}
	ret = run_hugetlb();
	return ret == T_SKIP ? T_PASS : ret;
}
