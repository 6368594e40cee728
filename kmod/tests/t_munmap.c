// SPDX-License-Identifier: GPL-2.0
/*
 * munmap while pinned: the pinned pages stay valid and readable through
 * READ until UNPIN, a new mapping at the same address does not change
 * them, and UNPIN then releases every pin and the memlock charge.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mt.h"

#define LEN (4UL << 20)

static void expect_readback(int fd, uint32_t h, uint32_t seed)
{
	char *copy = mt_map(LEN, MT_PAGE);

	MT_EXPECT_ERR(mt_read(fd, h, 0, LEN, copy), 0, "READ");
	MT_CHECK(mt_check_fill(copy, LEN, seed) == LEN / MT_PAGE,
		 "read-back not seed %u at page %zu", seed,
		 mt_check_fill(copy, LEN, seed));
	munmap(copy, LEN);
}

static void run(int fd, unsigned int kb)
{
	uint64_t a0, r0;
	struct mreg_info info;
	struct mreg_pin p;
	char *buf, *again;

	mt_thp_only(kb);
	mt_pins(&a0, &r0);
	buf = mt_map(LEN, MT_2M);
	mt_fill(buf, LEN, 7);
	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)buf, LEN, 0, 0, &p), 0, "PIN");
	MT_CHECK(!munmap(buf, LEN), "munmap");
	expect_readback(fd, p.out_handle, 7);
	again = mmap(buf, LEN, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	MT_CHECK(again == buf, "remap");
	mt_fill(again, LEN, 8);
	expect_readback(fd, p.out_handle, 7);
	mt_info(fd, &info);
	MT_CHECK(info.file_pinned_pages == LEN / MT_PAGE, "file pinned %llu",
		 (unsigned long long)info.file_pinned_pages);
	MT_EXPECT_ERR(mt_unpin(fd, p.out_handle), 0, "UNPIN");
	MT_CHECK(mt_pins_balanced(a0, r0), "pins leaked");
	mt_info(fd, &info);
	MT_CHECK(info.file_pinned_pages == 0, "file still charged");
	munmap(again, LEN);
	printf("THP %ukB: pin survived munmap and remap, balanced\n", kb);
}

int main(void)
{
	int fd = mt_open();

	run(fd, 0);
	if (mt_is_root())
		run(fd, 2048);
	close(fd);
	printf("PASS munmap\n");
	return 0;
}
