// SPDX-License-Identifier: GPL-2.0
/*
 * Handles are allocated cyclically, so the next one is easy to guess.
 * One thread pins and unpins in a loop; two others hammer the handle the
 * next PIN will get, with UNPIN and with READ/QUERY, so they hit it while
 * PIN is still filling its reply.  PIN must never hand out a handle that
 * was freed under it: every call returns 0 or ENOENT, nothing crashes,
 * and after close the FOLL_PIN counters and mm->pinned_vm are back where
 * they were (the harness also fails the test on any kernel splat).
 * Last, a PIN whose reply cannot be copied out (the struct is read-only)
 * fails with EFAULT and leaves nothing pinned or charged.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "mt.h"

#define NPAGES 64UL
#define LEN (NPAGES * MT_PAGE)

static int mfd, memfd, have_memfd;
static char *region;
static atomic_uint next_handle;
static atomic_int stop;
static atomic_ulong pins, lost_to_racer, racer_unpins, racer_reads;

static uint64_t mm_pinned(void)
{
	struct mreg_info info;

	MT_EXPECT_ERR(mt_info(mfd, &info), 0, "INFO");
	return info.mm_pinned_pages;
}

/* The racer may have unpinned the handle first: ENOENT is fine then. */
static void use_and_unpin(uint32_t h)
{
	char page[MT_PAGE];
	int ret;

	ret = mt_read(mfd, h, 0, MT_PAGE, page);
	MT_CHECK(ret == 0 || ret == -ENOENT, "READ: %s", strerror(-ret));
	ret = mt_unpin(mfd, h);
	MT_CHECK(ret == 0 || ret == -ENOENT, "UNPIN: %s", strerror(-ret));
	if (ret)
		lost_to_racer++;
}

static void pin_once(unsigned int i)
{
	struct mreg_pin p;
	int ret;

	if (i % 4 == 3 && have_memfd)
		ret = mt_pin(mfd, 0, LEN, MREG_PIN_FLAG_MEMFD, memfd, &p);
	else
		ret = mt_pin(mfd, (uintptr_t)region, LEN,
			     i & 1 ? MREG_PIN_FLAG_READONLY : 0, 0, &p);
	MT_EXPECT_ERR(ret, 0, "PIN");
	MT_CHECK(p.out_handle && p.out_nr_pages == NPAGES,
		 "PIN reply: handle %u, %llu pages", p.out_handle,
		 (unsigned long long)p.out_nr_pages);
	next_handle = p.out_handle + 1;
	pins++;
	use_and_unpin(p.out_handle);
}

static void *unpinner(void *arg)
{
	(void)arg;
	while (!stop)
		if (!mt_unpin(mfd, next_handle))
			racer_unpins++;
	return NULL;
}

static void *reader(void *arg)
{
	struct mreg_extent e[NPAGES];
	struct mreg_query q = { .size = sizeof(q),
				.extent_size = sizeof(e[0]) };
	char page[MT_PAGE];
	int ret;

	(void)arg;
	while (!stop) {
		q.handle = next_handle;
		q.nr_extents = NPAGES;
		q.extents = (uintptr_t)e;
		ret = mt_ioctl(mfd, MREG_IOC_QUERY, &q);
		MT_CHECK(ret == 0 || ret == -ENOENT, "QUERY: %s",
			 strerror(-ret));
		ret = mt_read(mfd, next_handle, 0, MT_PAGE, page);
		MT_CHECK(ret == 0 || ret == -ENOENT, "READ: %s",
			 strerror(-ret));
		if (!ret)
			racer_reads++;
	}
	return NULL;
}

static void test_race(void)
{
	unsigned long secs = mt_env_ulong("MREG_RACE_SECONDS", 10);
	uint64_t a0, r0, before;
	unsigned int i = 0;
	pthread_t t[2];
	time_t end;

	mfd = mt_open();
	have_memfd = mt_memfd_pins(mfd);
	before = mm_pinned();
	mt_pins(&a0, &r0);
	pthread_create(&t[0], NULL, unpinner, NULL);
	pthread_create(&t[1], NULL, reader, NULL);
	end = time(NULL) + secs;
	while (time(NULL) < end)
		pin_once(i++);
	stop = 1;
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	MT_CHECK(mm_pinned() == before, "pinned_vm %llu, want %llu",
		 (unsigned long long)mm_pinned(), (unsigned long long)before);
	close(mfd);
	MT_CHECK(mt_pins_balanced(a0, r0), "pins leaked");
	printf("%lus: %lu pins, %lu unpinned by the racer (%lu lost), %lu racer reads\n",
	       secs, (unsigned long)pins, (unsigned long)racer_unpins,
	       (unsigned long)lost_to_racer, (unsigned long)racer_reads);
	MT_CHECK(racer_unpins == lost_to_racer,
		 "racer unpinned %lu handles, pinner lost %lu",
		 (unsigned long)racer_unpins, (unsigned long)lost_to_racer);
}

/* The reply cannot reach userspace: the pin must not outlive the call. */
static void test_reply_efault(void)
{
	struct mreg_pin *p = mt_map(MT_PAGE, MT_PAGE);
	uint64_t a0, r0, before;

	mfd = mt_open();
	before = mm_pinned();
	mt_pins(&a0, &r0);
	*p = (struct mreg_pin){ .size = sizeof(*p),
				.addr = (uintptr_t)region, .length = LEN };
	MT_CHECK(!mprotect(p, MT_PAGE, PROT_READ), "mprotect");
	MT_EXPECT_ERR(mt_ioctl(mfd, MREG_IOC_PIN, p), -EFAULT,
		      "PIN into a read-only struct");
	MT_CHECK(mm_pinned() == before, "pinned_vm %llu after EFAULT, want %llu",
		 (unsigned long long)mm_pinned(), (unsigned long long)before);
	MT_CHECK(mt_pins_balanced(a0, r0), "EFAULT reply left a pin");
	/* The handle was reserved then released: the next PIN works. */
	p = mt_map(MT_PAGE, MT_PAGE);
	MT_EXPECT_ERR(mt_pin(mfd, (uintptr_t)region, LEN, 0, 0, p), 0, "PIN");
	MT_EXPECT_ERR(mt_unpin(mfd, p->out_handle), 0, "UNPIN");
	close(mfd);
	MT_CHECK(mt_pins_balanced(a0, r0), "pins leaked");
	printf("PIN with an unwritable reply: EFAULT, nothing pinned\n");
}

int main(void)
{
	region = mt_map(LEN, MT_2M);
	mt_fill(region, LEN, 3);
	memfd = memfd_create("mreg-unpinrace", MFD_CLOEXEC);
	MT_CHECK(memfd >= 0 && !ftruncate(memfd, LEN), "memfd");
	test_race();
	test_reply_efault();
	printf("PASS unpinrace\n");
	return 0;
}
