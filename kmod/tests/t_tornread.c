// SPDX-License-Identifier: GPL-2.0
/*
 * READ is a copy of the pinned pages as they are at copy time, not a
 * snapshot: a store the process makes while READ runs can land between
 * two bytes of one word.  This makes that happen on purpose, every time:
 *
 * READ copies a pinned page to a destination whose second page is
 * missing and registered with userfaultfd, so the copy stops right after
 * byte 0 of the page's first word.  While READ sleeps in the fault, the
 * process stores a new pattern into the pinned page; then the fault is
 * resolved and READ goes on.  The copy must hold byte 0 from before the
 * store and everything after it from after, the pinned page must still
 * be the one the process maps, and a second READ returns the new pattern
 * whole.  With a freshly zapped page and page 410 of the old kmod-race
 * pattern this is exactly "page 410 word0 0xf519f600", the value that
 * quarantined kmod-race: a torn read, not a foreign page.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mt.h"

/* kmod-race's old pattern, mt_page_word(42, 410): byte 0 is 0x91. */
#define NEW_WORD 0xf519f691u
#define OLD_WORD 0x5a3c1e2du

struct reader {
	int fd;
	uint32_t handle;
	char *dst;
	int ret;
};

static void *do_read(void *arg)
{
	struct reader *r = arg;

	r->ret = mt_read(r->fd, r->handle, 0, MT_PAGE, r->dst);
	return NULL;
}

static void fill_words(void *page, uint32_t w)
{
	uint32_t *p = page;
	size_t i;

	for (i = 0; i < MT_PAGE / 4; i++)
		p[i] = w;
}

/* Kernel-mode faults too: no UFFD_USER_MODE_ONLY (needs root). */
static int uffd_open(void *missing)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)missing, .len = MT_PAGE },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	int fd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		mt_skip("userfaultfd: %s", strerror(errno));
	MT_CHECK(!ioctl(fd, UFFDIO_API, &api), "UFFDIO_API: %s",
		 strerror(errno));
	MT_CHECK(!ioctl(fd, UFFDIO_REGISTER, &reg), "UFFDIO_REGISTER: %s",
		 strerror(errno));
	return fd;
}

/* Wait for READ's fault on @missing; fail rather than hang. */
static void uffd_wait(int ufd, void *missing)
{
	struct pollfd pfd = { .fd = ufd, .events = POLLIN };
	struct uffd_msg msg;

	MT_CHECK(poll(&pfd, 1, 10000) == 1, "READ never faulted on the "
		 "userfaultfd page");
	MT_CHECK(read(ufd, &msg, sizeof(msg)) == sizeof(msg), "uffd read: %s",
		 strerror(errno));
	MT_CHECK(msg.event == UFFD_EVENT_PAGEFAULT &&
			 (msg.arg.pagefault.address & ~(MT_PAGE - 1)) ==
				 (uintptr_t)missing,
		 "unexpected uffd event %u at 0x%llx", msg.event,
		 (unsigned long long)msg.arg.pagefault.address);
}

static void uffd_resolve(int ufd, void *missing)
{
	struct uffdio_zeropage z = {
		.range = { .start = (uintptr_t)missing, .len = MT_PAGE },
	};

	MT_CHECK(!ioctl(ufd, UFFDIO_ZEROPAGE, &z), "UFFDIO_ZEROPAGE: %s",
		 strerror(errno));
}

static uint64_t pinned_pfn(int fd, uint32_t handle)
{
	uint64_t n, pfn;
	struct mreg_extent *e = mt_query(fd, handle, &n);

	MT_CHECK(e && n == 1, "QUERY: %llu extents", (unsigned long long)n);
	pfn = e[0].phys / MT_PAGE;
	free(e);
	return pfn;
}

/* One torn READ of @src, pinned with @flags; @zap starts from a page
 * MADV_DONTNEED just dropped, which the PIN itself faults in. */
static void torn_once(int fd, int zap, uint32_t flags)
{
	char *src = mt_map(MT_PAGE, MT_PAGE);
	char *dst = mt_map(2 * MT_PAGE, MT_PAGE), *again = malloc(MT_PAGE);
	uint32_t old = zap ? 0 : OLD_WORD, torn, want, *w;
	bool seen_new;
	char *c;
	struct reader r = { .fd = fd, .dst = dst + MT_PAGE - 1 };
	struct mreg_pin p;
	pthread_t t;
	int ufd;

	MT_CHECK(again, "malloc");
	fill_words(src, OLD_WORD);
	if (zap)
		MT_CHECK(!madvise(src, MT_PAGE, MADV_DONTNEED), "madvise");
	memset(dst, 0xee, MT_PAGE);
	MT_EXPECT_ERR(mt_pin(fd, (uintptr_t)src, MT_PAGE, flags, 0, &p), 0,
		      "PIN");
	r.handle = p.out_handle;
	ufd = uffd_open(dst + MT_PAGE);
	MT_CHECK(!pthread_create(&t, NULL, do_read, &r), "pthread_create");
	uffd_wait(ufd, dst + MT_PAGE);
	fill_words(src, NEW_WORD);
	uffd_resolve(ufd, dst + MT_PAGE);
	pthread_join(t, NULL);
	MT_EXPECT_ERR(r.ret, 0, "READ across the userfaultfd page");

	memcpy(&torn, dst + MT_PAGE - 1, 4);
	want = (old & 0xff) | (NEW_WORD & ~0xffu);
	printf("  %s, %s pin: word0 0x%08x (old 0x%08x, new 0x%08x)\n",
	       zap ? "zapped page" : "written page",
	       flags ? "read-only" : "read-write", torn, old, NEW_WORD);
	/*
	 * rep movsb (6.12's copy_to_user) resumes at the faulting byte and
	 * reads the source anew: byte 0 old, the rest new. 6.1's unrolled
	 * copy, where the CPU lacks ERMS (qemu's TCG), stores again what it
	 * had loaded before the fault, and goes on loading afterwards: a run
	 * of words from before the store, then words from after. Either is a
	 * copy; a foreign value, or an old word after a new one, is not.
	 */
	MT_CHECK(torn == want || torn == old,
		 "word0 0x%08x, want 0x%08x (byte 0 before the store, bytes "
		 "1..3 after) or 0x%08x (all before)",
		 torn, want, old);
	seen_new = torn == want;
	for (c = dst + MT_PAGE + 3; c < dst + 2 * MT_PAGE - 4; c += 4) {
		memcpy(&torn, c, 4);
		MT_CHECK(torn == NEW_WORD || (torn == old && !seen_new),
			 "byte %td of the copy is 0x%08x: neither the old "
			 "word before the new ones nor the new",
			 c - (dst + MT_PAGE - 1), torn);
		seen_new |= torn == NEW_WORD;
	}
	MT_CHECK(pinned_pfn(fd, p.out_handle) == mt_pfn(src),
		 "the pin no longer holds the page the process maps");
	MT_EXPECT_ERR(mt_read(fd, p.out_handle, 0, MT_PAGE, again), 0,
		      "second READ");
	for (w = (uint32_t *)again; (char *)w < again + MT_PAGE; w++)
		MT_CHECK(*w == NEW_WORD, "second READ: word %td is 0x%08x",
			 w - (uint32_t *)again, *w);
	MT_EXPECT_ERR(mt_unpin(fd, p.out_handle), 0, "UNPIN");
	close(ufd);
	free(again);
	munmap(dst, 2 * MT_PAGE);
	munmap(src, MT_PAGE);
}

int main(void)
{
	uint64_t a0, r0;
	int fd, zap;

	/* x86's copy_to_user() resumes at the faulting byte; a copy that
	 * retries whole stores would leave more old bytes. */
#ifndef __x86_64__
	mt_skip("the expected torn word is worked out for x86-64's copy");
#endif
	if (!mt_have_pagemap())
		mt_skip("pagemap and QUERY's phys need root");
	fd = mt_open();
	mt_pins(&a0, &r0);
	for (zap = 0; zap < 2; zap++) {
		torn_once(fd, zap, 0);
		torn_once(fd, zap, MREG_PIN_FLAG_READONLY);
	}
	close(fd);
	MT_CHECK(mt_pins_balanced(a0, r0), "pins left behind");
	printf("PASS tornread\n");
	return 0;
}
