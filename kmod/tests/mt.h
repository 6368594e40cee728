/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mt: helpers shared by the mreg.ko guest tests (kmod/tests/t_*.c).
 * Each test is one file with its own main() and exits 0 pass, 1 fail,
 * 77 skip; a skip always prints why.
 */
#ifndef MREG_KMOD_TEST_H
#define MREG_KMOD_TEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uapi/mreg.h"

#define MT_PAGE 4096UL
#define MT_2M (2UL << 20)

void mt_skip(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void mt_fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* Fail the test with file:line when @cond is false. */
#define MT_CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: check failed: %s: ",	\
				__FILE__, __LINE__, #cond);		\
			mt_fail(__VA_ARGS__);				\
		}							\
	} while (0)

/* Expect ioctl-style return @ret (0 or -errno) to equal @want.  @ret is
 * evaluated once: it is usually the call under test. */
#define MT_EXPECT_ERR(ret, want, what)					\
	do {								\
		long mt_got_ = (ret), mt_want_ = (want);		\
									\
		MT_CHECK(mt_got_ == mt_want_,				\
			 "%s: got %ld (%s), want %ld", what, mt_got_,	\
			 mt_got_ ? strerror((int)-mt_got_) : "ok",	\
			 mt_want_);					\
	} while (0)

/* Device: loads /mreg/ko/mreg.ko when /dev/mreg is missing; skips when
 * it cannot. */
int mt_open(void);
/* Give /dev/mreg to group @gid, mode 0660, as kmod/60-mreg.rules gives it
 * to group mreg: how a non-root test process gets to open it. */
void mt_grant_group(unsigned int gid);
int mt_ioctl(int fd, unsigned long req, void *arg);
int mt_pin(int fd, uint64_t addr, uint64_t len, uint32_t flags, int memfd,
	   struct mreg_pin *out);
int mt_unpin(int fd, uint32_t handle);
int mt_read(int fd, uint32_t handle, uint64_t off, uint64_t len, void *dst);
/* Returns the extents of @handle in a malloc()ed array, or NULL + *n=0. */
struct mreg_extent *mt_query(int fd, uint32_t handle, uint64_t *n);
int mt_info(int fd, struct mreg_info *info);
/* MREG_CAP_MEMFD: memfd pins and the memfd bench (6.11 and later). */
int mt_memfd_pins(int fd);
/* Skip, saying why, where there are none. */
void mt_require_memfd(int fd);

/* Memory. */
void *mt_map(size_t len, size_t align);
void mt_fill(void *p, size_t len, uint32_t seed);
size_t mt_check_fill(const void *p, size_t len, uint32_t seed);
uint32_t mt_page_word(uint32_t seed, size_t page);

/* THP knobs: set only size @kb to "always" (0: none), restored at exit.
 * Skips when the kernel lacks the knob. */
void mt_thp_only(unsigned int kb);
void mt_shmem_thp_only(unsigned int kb);

/* /proc/self/pagemap and /proc/kpageflags (root). */
int mt_have_pagemap(void);
uint64_t mt_pfn(const void *va);
void mt_pagemap_reopen(void);
/* Census of the folios mapping [va, va+len), verified by kpageflags. */
void mt_folio_census(const void *va, size_t len, uint64_t hist[32],
		     uint64_t *nfolios);
void mt_print_hist(const char *what, const uint64_t hist[32]);

/* FOLL_PIN counters of /proc/vmstat. */
void mt_pins(uint64_t *acquired, uint64_t *released);
/* Wait up to 5 s until every pin acquired since (@a0, @r0) is released. */
int mt_pins_balanced(uint64_t a0, uint64_t r0);

int mt_is_root(void);
unsigned long mt_env_ulong(const char *name, unsigned long dflt);

#endif
