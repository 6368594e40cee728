/* SPDX-License-Identifier: MIT */
/*
 * Cell marks for the kcount TCG plugin (bench/tcg-plugin/kcount.c).
 *
 * A mark is the 7-byte multi-byte NOP "nopl disp32(%rax)" (0F 1F 80 disp32)
 * whose disp32 is KCOUNT_MARK_TAG << 16 | mark number. It does nothing on
 * any CPU, with or without the plugin, and touches no memory; the plugin
 * recognises its bytes when qemu translates it and, each time it executes,
 * writes the running kernel counts. Compilers never emit this displacement
 * on their own, so a stray match would need a deliberate one.
 */
#ifndef MREG_KCOUNT_MARK_H
#define MREG_KCOUNT_MARK_H

#define KCOUNT_MARK_TAG	  0x4d52 /* "MR" */
#define KCOUNT_MARK_BEGIN 1	 /* right before a timed call */
#define KCOUNT_MARK_END	  2	 /* right after it */
#define KCOUNT_MARK_CELL  3	 /* a cell's timed calls are done */

/*
 * %c0 prints the constant bare, so it becomes the displacement; the
 * assembler picks mod=10 (disp32) since the value exceeds a disp8.
 */
#if defined(__x86_64__)
#define KCOUNT_MARK(n)                                      \
	__asm__ volatile("nopl %c0(%%rax)"                  \
			 :                                  \
			 : "i"(KCOUNT_MARK_TAG << 16 | (n)) \
			 : "memory")
#else
/* The plugin decodes x86-64 only (kcount.c): elsewhere a mark is nothing. */
#define KCOUNT_MARK(n) ((void)(n))
#endif

#endif /* MREG_KCOUNT_MARK_H */
