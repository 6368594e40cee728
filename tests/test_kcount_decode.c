// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Host test of kcount's translation-time decoding (kcount-decode.h) on
 * known encodings, so a miscount shows up here and not as a plausible
 * number in a benchmark table. Exit 0 pass, 1 fail.
 */
#include <stdio.h>

#include "kcount-decode.h"

struct rmw_case {
	const char *what;
	uint8_t bytes[8];
	size_t len;
	bool locked;
};

static const struct rmw_case rmw_cases[] = {
	{"lock xadd %eax,(%rdi)", {0xf0, 0x0f, 0xc1, 0x07}, 4, true},
	{"lock cmpxchg %rdx,(%rdi)", {0xf0, 0x48, 0x0f, 0xb1, 0x17}, 5, true},
	{"lock incw (%rdi), 66 first", {0x66, 0xf0, 0xff, 0x07}, 4, true},
	{"lock orb $1,%gs:(%rax)", {0x65, 0xf0, 0x80, 0x08, 0x01}, 5, true},
	{"xchg %rax,(%rdi)", {0x48, 0x87, 0x07}, 3, true},
	{"xchg %al,(%rdi)", {0x86, 0x07}, 2, true},
	{"xchg %ecx,%eax", {0x87, 0xc8}, 2, false},
	{"ds incq (%rdi): a patched-out lock",
	 {0x3e, 0x48, 0xff, 0x07},
	 4,
	 false},
	{"mov %rax,(%rdi)", {0x48, 0x89, 0x07}, 3, false},
	{"rep movsl", {0xf3, 0xa5}, 2, false},
	{"cs nopw 0x0(%rax,%rax,1)",
	 {0x2e, 0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00},
	 8,
	 false},
	{"truncated xchg", {0x87}, 1, false},
};

struct mark_case {
	const char *what;
	uint8_t bytes[8];
	size_t len;
	int mark;
};

static const struct mark_case mark_cases[] = {
	{"begin mark", {0x0f, 0x1f, 0x80, 0x01, 0x00, 0x52, 0x4d}, 7, 1},
	{"cell mark", {0x0f, 0x1f, 0x80, 0x03, 0x00, 0x52, 0x4d}, 7, 3},
	{"plain nopl 0x0(%rax)", {0x0f, 0x1f, 0x80, 0, 0, 0, 0}, 7, -1},
	{"SIB form", {0x0f, 0x1f, 0x84, 0x00, 0x01, 0x00, 0x52, 0x4d}, 8, -1},
};

static int check_rmw(void)
{
	size_t i;
	int bad = 0;

	for (i = 0; i < sizeof(rmw_cases) / sizeof(rmw_cases[0]); i++) {
		const struct rmw_case *c = &rmw_cases[i];

		if (kcount_is_locked_rmw(c->bytes, c->len) == c->locked)
			continue;
		printf("FAIL: %s: locked should be %d\n", c->what, c->locked);
		bad = 1;
	}
	return bad;
}

static int check_marks(void)
{
	size_t i;
	int bad = 0;

	for (i = 0; i < sizeof(mark_cases) / sizeof(mark_cases[0]); i++) {
		const struct mark_case *c = &mark_cases[i];
		int got = kcount_mark(c->bytes, c->len);

		if (got == c->mark)
			continue;
		printf("FAIL: %s: mark %d, expected %d\n", c->what, got,
		       c->mark);
		bad = 1;
	}
	return bad;
}

static int check_kernel_half(void)
{
	if (kcount_is_kernel(0xffffffff81000000ULL) &&
	    kcount_is_kernel(0xffff800000000000ULL) &&
	    kcount_is_kernel(0xff11000000000000ULL) &&
	    !kcount_is_kernel(0x00007fffffffe000ULL) &&
	    !kcount_is_kernel(0x0000000000401000ULL))
		return 0;
	printf("FAIL: kernel-half test\n");
	return 1;
}

int main(void)
{
	int bad = check_rmw() | check_marks() | check_kernel_half();

	if (!bad)
		printf("PASS: kcount decoder\n");
	return bad;
}
