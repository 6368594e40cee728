// SPDX-License-Identifier: GPL-2.0
/*
 * fork() after a write pin: the parent keeps the pinned page (it is copied
 * for the child at fork, as for any page that may be DMA-pinned), so
 * read-back shows what the parent wrote, never what the child wrote.  The
 * child cannot use the inherited file at all (EPERM): a file belongs to
 * the mm that opened it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mt.h"

#define LEN (256UL << 10)

static void expect_readback(int fd, uint32_t h, uint32_t seed,
			    const char *when)
{
	char *copy = malloc(LEN);

	MT_CHECK(copy, "malloc");
	MT_EXPECT_ERR(mt_read(fd, h, 0, LEN, copy), 0, "READ");
	MT_CHECK(mt_check_fill(copy, LEN, seed) == LEN / MT_PAGE,
		 "%s: read-back is not seed %u at page %zu", when, seed,
		 mt_check_fill(copy, LEN, seed));
	free(copy);
}

/* The child writes its own data; the parent's file is not its own. */
static int child(int fd, uint32_t h, char *buf, uint64_t parent_pfn)
{
	char byte;

	mt_pagemap_reopen();
	mt_fill(buf, LEN, 2);
	MT_EXPECT_ERR(mt_read(fd, h, 0, 1, &byte), -EPERM,
		      "child READ through the parent's file");
	MT_EXPECT_ERR(mt_unpin(fd, h), -EPERM,
		      "child UNPIN through the parent's file");
	if (parent_pfn && mt_pfn(buf) == parent_pfn)
		mt_fail("child maps the parent's pinned page");
	return 0;
}

int main(void)
{
	char *buf = mt_map(LEN, MT_PAGE);
	int fd = mt_open(), status;
	uint64_t pfn = 0;
	struct mreg_pin p;
	pid_t pid;

	if (mt_is_root())
		mt_thp_only(0);
	mt_fill(buf, LEN, 1);
	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)buf, LEN, 0, 0, &p), 0, "PIN");
	if (mt_have_pagemap())
		pfn = mt_pfn(buf);
	pid = fork();
	if (pid == 0)
		_exit(child(fd, p.out_handle, buf, pfn));
	MT_CHECK(pid > 0, "fork");
	waitpid(pid, &status, 0);
	MT_CHECK(WIFEXITED(status) && !WEXITSTATUS(status), "child failed");
	MT_CHECK(mt_check_fill(buf, LEN, 1) == LEN / MT_PAGE,
		 "parent memory changed by the child");
	if (pfn)
		MT_CHECK(mt_pfn(buf) == pfn, "parent lost its pinned page");
	expect_readback(fd, p.out_handle, 1, "parent after child");
	mt_fill(buf, LEN, 3);
	expect_readback(fd, p.out_handle, 3, "parent after its write");
	MT_EXPECT_ERR(mt_unpin(fd, p.out_handle), 0, "UNPIN");
	close(fd);
	printf("PASS fork\n");
	return 0;
}
