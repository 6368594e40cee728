// SPDX-License-Identifier: GPL-2.0
/*
 * The pages mreg pins are the ones /proc/self/pagemap shows for the range,
 * extents tile the range, READ sees what the process wrote, and a file
 * opened without CAP_SYS_ADMIN gets phys == 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mt.h"

#define LEN (8UL << 20)

/* Extents must tile [0, LEN) in order, each page at the pagemap PFN. */
static void check_extents(const char *buf, const struct mreg_extent *e,
			  uint64_t n)
{
	uint64_t i, k, off = 0;

	for (i = 0; i < n; off += e[i].length, i++) {
		MT_CHECK(e[i].offset == off, "extent %llu at %llu, want %llu",
			 (unsigned long long)i,
			 (unsigned long long)e[i].offset,
			 (unsigned long long)off);
		MT_CHECK(e[i].length && e[i].length % MT_PAGE == 0,
			 "extent %llu length %llu", (unsigned long long)i,
			 (unsigned long long)e[i].length);
		MT_CHECK(e[i].length <= (MT_PAGE << e[i].order),
			 "extent longer than its folio");
		for (k = 0; k < e[i].length / MT_PAGE; k++)
			MT_CHECK(mt_pfn(buf + off + k * MT_PAGE) ==
				 e[i].phys / MT_PAGE + k,
				 "page %llu: pagemap pfn 0x%llx, pinned 0x%llx",
				 (unsigned long long)(off / MT_PAGE + k),
				 (unsigned long long)mt_pfn(buf + off + k * MT_PAGE),
				 (unsigned long long)(e[i].phys / MT_PAGE + k));
	}
	MT_CHECK(off == LEN, "extents cover %llu of %lu",
		 (unsigned long long)off, LEN);
}

static void check_readback(int fd, uint32_t handle, uint32_t seed)
{
	char *copy = mt_map(LEN, MT_PAGE);

	MT_EXPECT_ERR(mt_read(fd, handle, 0, LEN, copy), 0, "READ");
	MT_CHECK(mt_check_fill(copy, LEN, seed) == LEN / MT_PAGE,
		 "read-back differs at page %zu", mt_check_fill(copy, LEN, seed));
	munmap(copy, LEN);
}

/*
 * A child that dropped root cannot use the inherited file (EPERM); through
 * a file of its own, QUERY gives phys 0: the opener decides, as for
 * /proc/pid/pagemap.
 */
static int unprivileged_child(int fd, uint32_t handle, const char *buf)
{
	struct rlimit rl = {LEN, LEN};
	struct mreg_extent *e;
	struct mreg_pin p;
	uint64_t n, i;
	int own;

	if (setrlimit(RLIMIT_MEMLOCK, &rl) || setgid(65534) || setuid(65534))
		return 2;
	e = mt_query(fd, handle, &n);
	if (e || n)
		return 3;
	own = open("/dev/mreg", O_RDWR | O_CLOEXEC);
	if (own < 0 || mt_pin(own, (uintptr_t)buf, LEN, 0, 0, &p))
		return 5;
	e = mt_query(own, p.out_handle, &n);
	if (!e || !n)
		return 6;
	for (i = 0; i < n; i++)
		if (e[i].phys)
			return 4;
	return 0;
}

static void check_unprivileged(int fd, uint32_t handle, const char *buf)
{
	pid_t pid = fork();
	int status;

	if (pid == 0)
		_exit(unprivileged_child(fd, handle, buf));
	MT_CHECK(pid > 0, "fork");
	waitpid(pid, &status, 0);
	MT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		 "unprivileged QUERY failed or saw phys (status 0x%x)", status);
}

static void run(int fd, unsigned int thp_kb)
{
	struct mreg_extent *e;
	struct mreg_pin pin;
	uint64_t n;
	char *buf;

	mt_thp_only(thp_kb);
	buf = mt_map(LEN, MT_2M);
	mt_fill(buf, LEN, thp_kb);
	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)buf, LEN, 0, 0, &pin), 0, "PIN");
	e = mt_query(fd, pin.out_handle, &n);
	MT_CHECK(e && n == pin.out_nr_extents, "QUERY gave %llu extents, PIN %u",
		 (unsigned long long)n, pin.out_nr_extents);
	check_extents(buf, e, n);
	check_readback(fd, pin.out_handle, thp_kb);
	check_unprivileged(fd, pin.out_handle, buf);
	printf("THP %ukB: %llu extents, %llu folios, pfns match pagemap\n",
	       thp_kb, (unsigned long long)n,
	       (unsigned long long)pin.out_nr_folios);
	MT_EXPECT_ERR(mt_unpin(fd, pin.out_handle), 0, "UNPIN");
	free(e);
	munmap(buf, LEN);
}

int main(void)
{
	struct mreg_info info;
	int fd = mt_open();

	if (!mt_have_pagemap())
		mt_skip("needs root for pagemap PFNs and kpageflags");
	mt_info(fd, &info);
	MT_CHECK(info.caps & MREG_CAP_PHYS, "root without MREG_CAP_PHYS");
	mt_grant_group(65534);
	run(fd, 0);
	run(fd, 2048);
	close(fd);
	printf("PASS pagemap\n");
	return 0;
}
