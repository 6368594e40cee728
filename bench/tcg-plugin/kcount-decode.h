/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Instruction-byte tests for kcount.c, decided once per instruction at
 * translation time. Header-only so tests/test_kcount_decode.c checks the
 * very code the plugin runs.
 */
#ifndef MREG_KCOUNT_DECODE_H
#define MREG_KCOUNT_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kcount-mark.h"

/*
 * The kernel half of the x86-64 address space: bit 63 set. This is the same
 * test as vaddr >= 0xffff800000000000 for canonical 4-level addresses and
 * still right with 5-level paging (kernel half from 0xff00000000000000).
 */
static inline bool kcount_is_kernel(uint64_t vaddr)
{
	return vaddr >> 63;
}

static inline bool kcount_legacy_prefix(uint8_t b)
{
	switch (b) {
	case 0xf0: /* lock */
	case 0xf2: /* repne */
	case 0xf3: /* rep */
	case 0x2e: /* cs */
	case 0x36: /* ss */
	case 0x3e: /* ds */
	case 0x26: /* es */
	case 0x64: /* fs */
	case 0x65: /* gs */
	case 0x66: /* operand size */
	case 0x67: /* address size */
		return true;
	default:
		return false;
	}
}

/*
 * A locked read-modify-write: LOCK (F0) among the legacy prefixes, or XCHG
 * with a memory operand (86/87, ModRM mod != 3), which the CPU locks without
 * a prefix. REX (40-4F) may sit between the prefixes and the opcode; the
 * kernel is 64-bit code, where those bytes are always REX. A LOCK that the
 * kernel's SMP alternatives patched out (a uniprocessor boot) is a DS
 * prefix by then and correctly not counted.
 */
static inline bool kcount_is_locked_rmw(const uint8_t *b, size_t len)
{
	size_t i = 0;

	for (; i < len && kcount_legacy_prefix(b[i]); i++) {
		if (b[i] == 0xf0)
			return true;
	}
	if (i < len && (b[i] & 0xf0) == 0x40)
		i++;
	if (i + 1 >= len || (b[i] != 0x86 && b[i] != 0x87))
		return false;
	return (b[i + 1] >> 6) != 3;
}

/* The mark number of a kcount mark (kcount-mark.h), or -1. */
static inline int kcount_mark(const uint8_t *b, size_t len)
{
	uint32_t disp;

	if (len != 7 || b[0] != 0x0f || b[1] != 0x1f || b[2] != 0x80)
		return -1;
	disp = (uint32_t)b[3] | (uint32_t)b[4] << 8 | (uint32_t)b[5] << 16 |
	       (uint32_t)b[6] << 24;
	if (disp >> 16 != KCOUNT_MARK_TAG)
		return -1;
	return (int)(disp & 0xffff);
}

#endif /* MREG_KCOUNT_DECODE_H */
