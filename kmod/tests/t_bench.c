// SPDX-License-Identifier: GPL-2.0
/*
 * MREG_IOC_BENCH for every method, read and write, with 1, 123, 512 and
 * all pages per call: every page of the range is got, the folio census
 * is the one kpageflags gives (when root), and nothing stays pinned.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mt.h"

#define LEN (4UL << 20)

struct variant {
	uint32_t method;
	uint32_t flags;
	const char *name;
};

static const struct variant variants[] = {
	{ MREG_BENCH_GUP_FAST, 0, "get_user_pages_fast" },
	{ MREG_BENCH_PUP_FAST, 0, "pin_user_pages_fast" },
	{ MREG_BENCH_PUP_FAST, MREG_BENCH_FLAG_LONGTERM, "pin_user_pages_fast+LT" },
	{ MREG_BENCH_PUP, 0, "pin_user_pages" },
	{ MREG_BENCH_PUP, MREG_BENCH_FLAG_LONGTERM, "pin_user_pages+LT" },
	{ MREG_BENCH_PUP_REMOTE, 0, "pin_user_pages_remote" },
	{ MREG_BENCH_MEMFD_PIN_FOLIOS, 0, "memfd_pin_folios" },
};

static void one(int fd, const struct variant *v, uint32_t rw, uint32_t ppc,
		char *buf, int mfd, const uint64_t *hist, uint64_t nfolios)
{
	struct mreg_bench b = { .size = sizeof(b), .method = v->method,
				.flags = v->flags | rw, .pages_per_call = ppc,
				.length = LEN };
	uint64_t a0, r0;

	if (v->method == MREG_BENCH_MEMFD_PIN_FOLIOS)
		b.memfd = mfd;
	else
		b.addr = (uintptr_t)buf;
	mt_pins(&a0, &r0);
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_BENCH, &b), 0, v->name);
	MT_CHECK(mt_pins_balanced(a0, r0), "%s left pins", v->name);
	MT_CHECK(b.nr_pages == LEN / MT_PAGE, "%s ppc %u: %llu pages", v->name,
		 ppc, (unsigned long long)b.nr_pages);
	if (hist && v->method != MREG_BENCH_MEMFD_PIN_FOLIOS) {
		MT_CHECK(b.nr_folios == nfolios, "%s: %llu folios, want %llu",
			 v->name, (unsigned long long)b.nr_folios,
			 (unsigned long long)nfolios);
		MT_CHECK(!memcmp(b.order_hist, hist, 32 * 8), "%s: histogram",
			 v->name);
	}
	printf("%-24s %s ppc %4u: get %8llu ns put %8llu ns, %llu folios\n",
	       v->name, rw ? "write" : "read ", ppc,
	       (unsigned long long)b.get_ns, (unsigned long long)b.put_ns,
	       (unsigned long long)b.nr_folios);
}

int main(void)
{
	static const uint32_t ppcs[] = { 1, 123, 512, 0 };
	char *buf = mt_map(LEN, MT_2M);
	int fd = mt_open(), mfd = memfd_create("mreg-bench", MFD_CLOEXEC);
	uint64_t hist[32], nfolios = 0, *h = NULL;
	size_t v, p;
	uint32_t rw;

	MT_CHECK(mfd >= 0 && !ftruncate(mfd, LEN), "memfd");
	mt_fill(buf, LEN, 1);
	if (mt_have_pagemap()) {
		mt_folio_census(buf, LEN, hist, &nfolios);
		h = hist;
	}
	for (v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
		if (variants[v].method == MREG_BENCH_MEMFD_PIN_FOLIOS &&
		    !mt_memfd_pins(fd)) {
			printf("%-24s not run: no MREG_CAP_MEMFD (6.11)\n",
			       variants[v].name);
			continue;
		}
		for (rw = 0; rw <= MREG_BENCH_FLAG_WRITE; rw++)
			for (p = 0; p < 4; p++)
				one(fd, &variants[v], rw, ppcs[p], buf, mfd, h,
				    nfolios);
	}
	close(fd);
	printf("PASS bench\n");
	return 0;
}
