// SPDX-License-Identifier: MIT
/*
 * The VFIO IOVA allocator: allocations stay inside the valid ranges, keep
 * the buffer's offset within a 2 MB page, never overlap, and freed space
 * merges back so churn leaves no fragments.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "../src/iova.h"
#include "tcommon.h"

#define MB (1ull << 20)

static int check_alloc_free(void)
{
	const struct mreg_iova_range valid[] = {{2 * MB, 64 * MB - 1},
						{128 * MB, 256 * MB - 1}};
	struct mreg_iova a;
	uint64_t x, y, z;

	T_CHECK(!mreg_iova_init(&a, valid, 2), "init");
	T_CHECK(a.nr == 2, "two free ranges, got %d", a.nr);
	T_CHECK(!mreg_iova_alloc(&a, 4 * MB, 2 * MB, 0x5000, &x), "alloc x");
	T_CHECK(x % (2 * MB) == 0x5000 && x >= 2 * MB, "x 0x%" PRIx64, x);
	T_CHECK(!mreg_iova_alloc(&a, 4 * MB, 2 * MB, 0, &y), "alloc y");
	T_CHECK(y >= x + 4 * MB, "y 0x%" PRIx64 " overlaps x", y);
	T_CHECK(!mreg_iova_alloc(&a, 100 * MB, 4096, 0, &z), "alloc z");
	T_CHECK(z == 128 * MB, "z only fits the second range: 0x%" PRIx64, z);
	T_CHECK(mreg_iova_alloc(&a, 200 * MB, 4096, 0, &z) == -ENOSPC,
		"nothing that large is free");
	T_CHECK(mreg_iova_free(&a, x, 4 * MB) == 0, "free x");
	T_CHECK(mreg_iova_free(&a, x, 4 * MB) == -EEXIST, "double free");
	T_CHECK(!mreg_iova_free(&a, y, 4 * MB), "free y");
	T_CHECK(!mreg_iova_free(&a, 128 * MB, 100 * MB), "free z");
	T_CHECK(a.nr == 2 && a.free[0].start == 2 * MB &&
			a.free[0].last == 64 * MB - 1,
		"free space did not merge back: %d ranges", a.nr);
	mreg_iova_fini(&a);
	return T_PASS;
}

/* A caller-chosen IOVA: taken only when all of it is free. */
static int check_reserve(void)
{
	const struct mreg_iova_range valid[] = {{2 * MB, 64 * MB - 1}};
	struct mreg_iova a;
	uint64_t x;

	T_CHECK(!mreg_iova_init(&a, valid, 1), "init");
	T_CHECK(!mreg_iova_reserve(&a, 8 * MB, 2 * MB), "reserve 8M+2M");
	T_CHECK(mreg_iova_reserve(&a, 9 * MB, 2 * MB) == -EBUSY,
		"overlapping reservation accepted");
	T_CHECK(mreg_iova_reserve(&a, MB, 2 * MB) == -EBUSY,
		"reservation outside the valid ranges accepted");
	T_CHECK(!mreg_iova_alloc(&a, 6 * MB, 2 * MB, 0, &x) && x == 2 * MB,
		"alloc below the reservation: 0x%" PRIx64, x);
	T_CHECK(!mreg_iova_alloc(&a, 2 * MB, 2 * MB, 0, &x) && x == 10 * MB,
		"alloc skips the reservation: 0x%" PRIx64, x);
	T_CHECK(!mreg_iova_free(&a, 8 * MB, 2 * MB), "free the reservation");
	mreg_iova_fini(&a);
	return T_PASS;
}

int main(void)
{
	t_init("test_iova");
	return check_alloc_free() || check_reserve();
}
