// SPDX-License-Identifier: GPL-2.0
/*
 * The folio census mreg reports (PIN out_nr_folios, QUERY orders, BENCH
 * histogram) equals the one /proc/kpageflags gives for the same range,
 * for anonymous 4 kB, 64 kB mTHP and 2 MB THP, shmem memfds and, when
 * hugepages can be reserved, a hugetlb memfd.  The folio sizes are
 * verified through kpageflags, not assumed from the THP settings.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mt.h"

#define LEN (8UL << 20)

static unsigned int order_of_kb(unsigned int kb)
{
	unsigned int o = 0;

	while ((4u << o) < kb)
		o++;
	return o;
}

static void hist_from_extents(const struct mreg_extent *e, uint64_t n,
			      uint64_t hist[32])
{
	uint64_t i;

	memset(hist, 0, 32 * sizeof(hist[0]));
	for (i = 0; i < n; i++)
		hist[e[i].order]++;
}

static void expect_hist(const char *what, const uint64_t *got,
			const uint64_t *want)
{
	if (!memcmp(got, want, 32 * sizeof(got[0])))
		return;
	mt_print_hist("kpageflags", want);
	mt_print_hist(what, got);
	mt_fail("%s folio histogram differs from kpageflags", what);
}

static void check_bench(int fd, const void *buf, int memfd,
			const uint64_t *want, uint64_t nfolios)
{
	struct mreg_bench b = {
		.size = sizeof(b), .flags = MREG_BENCH_FLAG_WRITE,
		.length = LEN,
	};

	if (memfd >= 0) {
		b.method = MREG_BENCH_MEMFD_PIN_FOLIOS;
		b.memfd = memfd;
	} else {
		b.method = MREG_BENCH_PUP_FAST;
		b.addr = (uintptr_t)buf;
	}
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_BENCH, &b), 0, "BENCH");
	MT_CHECK(b.nr_pages == LEN / MT_PAGE, "bench pinned %llu pages",
		 (unsigned long long)b.nr_pages);
	MT_CHECK(b.nr_folios == nfolios, "bench counted %llu folios, want %llu",
		 (unsigned long long)b.nr_folios, (unsigned long long)nfolios);
	expect_hist("BENCH", (const uint64_t *)b.order_hist, want);
}

/* Pin the range the way the library would and compare every census. */
static void check_range(int fd, const char *what, const void *buf,
			int memfd, unsigned int want_order)
{
	uint64_t kpf[32], got[32], nfolios, n;
	struct mreg_extent *e;
	struct mreg_pin pin;
	uint32_t flags = memfd >= 0 ? MREG_PIN_FLAG_MEMFD : 0;
	uint64_t addr = memfd >= 0 ? 0 : (uintptr_t)buf;

	mt_folio_census(buf, LEN, kpf, &nfolios);
	mt_print_hist(what, kpf);
	/*
	 * Anonymous memory must get the size asked for.  shmem files (memfd)
	 * get mTHP only from 6.13 on (6.12 limits it to anonymous shmem), so
	 * there the census is still compared but the size is only reported.
	 */
	if (!kpf[want_order] && memfd < 0)
		mt_skip("%s: the kernel gave no order-%u folios", what,
			want_order);
	if (!kpf[want_order])
		printf("note: %s: this kernel gave no order-%u folios\n", what,
		       want_order);
	MT_EXPECT_ERR(mt_pin(fd, addr, LEN, flags, memfd >= 0 ? memfd : 0,
			     &pin), 0, "PIN");
	MT_CHECK(pin.out_nr_folios == nfolios, "%s: PIN counted %llu folios, kpageflags %llu",
		 what, (unsigned long long)pin.out_nr_folios,
		 (unsigned long long)nfolios);
	e = mt_query(fd, pin.out_handle, &n);
	MT_CHECK(e, "QUERY");
	hist_from_extents(e, n, got);
	expect_hist("QUERY", got, kpf);
	MT_EXPECT_ERR(mt_unpin(fd, pin.out_handle), 0, "UNPIN");
	check_bench(fd, buf, memfd, kpf, nfolios);
	printf("%s: %llu folios, PIN/QUERY/BENCH agree with kpageflags\n",
	       what, (unsigned long long)nfolios);
	free(e);
}

static void anon_case(int fd, unsigned int kb)
{
	char what[64];
	char *buf;

	mt_thp_only(kb == 4 ? 0 : kb);
	buf = mt_map(LEN, MT_2M);
	mt_fill(buf, LEN, kb);
	snprintf(what, sizeof(what), "anon %ukB", kb);
	check_range(fd, what, buf, -1, order_of_kb(kb));
	munmap(buf, LEN);
}

static void memfd_case(int fd, const char *what, int mfd, unsigned int order)
{
	char *buf;

	if (ftruncate(mfd, LEN))
		mt_fail("ftruncate: %s", strerror(errno));
	buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	MT_CHECK(buf != MAP_FAILED, "mmap memfd: %s", strerror(errno));
	mt_fill(buf, LEN, order);
	check_range(fd, what, buf, mfd, order);
	munmap(buf, LEN);
	close(mfd);
}

static void shmem_case(int fd, unsigned int kb)
{
	char what[64];

	mt_shmem_thp_only(kb == 4 ? 0 : kb);
	snprintf(what, sizeof(what), "shmem memfd %ukB", kb);
	memfd_case(fd, what, memfd_create("mreg-t", MFD_CLOEXEC),
		   order_of_kb(kb));
}

static int set_nr_hugepages(long n)
{
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", "w");
	int ok;

	if (!f)
		return 0;
	ok = fprintf(f, "%ld\n", n) > 0;
	return !fclose(f) && ok;
}

/*
 * A hugetlb memfd is pinned through its mapping: the module refuses it as
 * a memfd (EOPNOTSUPP), whose holes memfd_pin_folios() would fill from
 * other users' reserved huge pages.
 */
static void hugetlb_memfd_case(int fd, int mfd)
{
	struct mreg_bench b = {
		.size = sizeof(b), .method = MREG_BENCH_MEMFD_PIN_FOLIOS,
		.memfd = mfd, .length = LEN,
	};
	char *buf;

	MT_CHECK(!ftruncate(mfd, LEN), "ftruncate: %s", strerror(errno));
	buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	MT_CHECK(buf != MAP_FAILED, "mmap memfd: %s", strerror(errno));
	mt_fill(buf, LEN, 9);
	MT_EXPECT_ERR(mt_pin(fd, 0, LEN, MREG_PIN_FLAG_MEMFD, mfd, NULL),
		      -EOPNOTSUPP, "PIN of a hugetlb memfd as a memfd");
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_BENCH, &b), -EOPNOTSUPP,
		      "BENCH memfd_pin_folios of a hugetlb memfd");
	check_range(fd, "hugetlb memfd 2048kB, by its mapping", buf, -1, 9);
	munmap(buf, LEN);
	close(mfd);
}

static void hugetlb_case(int fd)
{
	int mfd;

	if (!set_nr_hugepages(LEN / MT_2M)) {
		printf("note: no hugetlb pages, hugetlb memfd case not run\n");
		return;
	}
	mfd = memfd_create("mreg-t-huge", MFD_CLOEXEC | MFD_HUGETLB);
	if (mfd < 0)
		printf("note: MFD_HUGETLB: %s, case not run\n", strerror(errno));
	else
		hugetlb_memfd_case(fd, mfd);
	set_nr_hugepages(0);
}

int main(void)
{
	static const unsigned int sizes[] = { 4, 64, 2048 };
	int fd = mt_open();
	size_t i;

	if (!mt_have_pagemap())
		mt_skip("needs root for pagemap and kpageflags");
	for (i = 0; i < 3; i++)
		anon_case(fd, sizes[i]);
	for (i = 0; i < 3; i++)
		shmem_case(fd, sizes[i]);
	hugetlb_case(fd);
	close(fd);
	printf("PASS folios\n");
	return 0;
}
