/* SPDX-License-Identifier: MIT */
/*
 * Shared by the host tests: exit codes 0 pass, 1 fail, 77 skip (with the
 * reason printed), pin-balance checks on /proc/vmstat, and the list of
 * folio sizes this kernel offers.
 */
#ifndef MREG_TCOMMON_H
#define MREG_TCOMMON_H

#include <stdbool.h>
#include <stdint.h>

#include <mreg/mreg.h>

/* ASan and TSan reserve terabytes of address space up front: tests that
 * squeeze RLIMIT_AS cannot run under them. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define T_SANITIZED 1
#else
#define T_SANITIZED 0
#endif

#define T_PASS 0
#define T_FAIL 1
#define T_SKIP 77

#define T_CHECK(cond, ...)                                                \
	do {                                                              \
		if (!(cond)) {                                            \
			t_report(__FILE__, __LINE__, #cond, __VA_ARGS__); \
			return T_FAIL;                                    \
		}                                                         \
	} while (0)

void t_report(const char *file, int line, const char *cond, const char *fmt,
	      ...) __attribute__((format(printf, 4, 5)));
int t_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Send library messages to stderr, prefixed with the test's name. */
void t_init(const char *name);

struct t_pins {
	uint64_t acquired;
	uint64_t released;
};

/* Flush per-CPU counters (stat_refresh), then read nr_foll_pin_*. */
int t_pins_read(struct t_pins *pins);
/*
 * 1 if no more pins are held than at @before. Other processes may be
 * mid-I/O, so an imbalance is re-read for a while before it counts.
 */
bool t_pins_balanced(const struct t_pins *before);

struct t_folio {
	uint64_t size;
	uint32_t backing;
	uint32_t level;
	char name[32];
};

uint64_t t_pmd_size(void);
/*
 * Run @fn on every anonymous folio case, stopping at the first failure.
 * Choosing folio sizes needs root: without it, a skip with the reason.
 */
int t_each_anon_folio(int (*fn)(const struct t_folio *c));
/* Allocate a verified buffer of case @c, @len bytes. Return: 0 or -errno. */
int t_buf(const struct t_folio *c, uint64_t len, struct mreg_buf **buf);
/*
 * Sparse io_uring buffer tables (5.19): without them an mreg io_uring
 * domain holds one region at a time, and the cases that need several
 * say so and are left out.
 */
bool t_uring_sparse(void);
struct io_uring;
/*
 * One IORING_OP_READ_FIXED of @len bytes from offset 0 of @fd into @dst
 * through fixed buffer @index, waited for.  Return: the CQE's result.
 */
int t_read_fixed(struct io_uring *ring, int fd, void *dst, unsigned int len,
		 int index);
/* 4 kB, every offered mTHP size, PMD size PMD- and PTE-mapped. */
int t_folio_cases(struct t_folio *cases, int max, uint32_t backing);

#endif
