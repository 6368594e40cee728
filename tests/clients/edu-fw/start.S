/* SPDX-License-Identifier: MIT */
/*
 * The reset vector of edu-fw: from real mode to 32-bit protected mode with
 * flat segments, a stack in low RAM, then edu_fw_main(). QEMU maps the
 * 64 kB image at the top of the 4 GB space; after reset CS's base is
 * 0xffff0000, where the linker puts start16: real-mode offsets are
 * offsets from start16.
 */

	.section .note.GNU-stack, "", @progbits

	.section .text.start16, "ax"
	.globl	start16
	.code16
start16:
	cli
	cld
	lgdtl	%cs:(gdt_desc - start16)
	movl	%cr0, %eax
	orl	$1, %eax
	movl	%eax, %cr0
	ljmpl	$0x08, $start32

	.code32
start32:
	movw	$0x10, %ax
	movw	%ax, %ds
	movw	%ax, %es
	movw	%ax, %ss
	movw	%ax, %fs
	movw	%ax, %gs
	movl	$0x80000, %esp
	call	edu_fw_main
1:	hlt
	jmp	1b

	.balign 8
gdt:
	.quad	0
	.quad	0x00cf9b000000ffff	/* 0x08: code, flat 4 GB */
	.quad	0x00cf93000000ffff	/* 0x10: data, flat 4 GB */
gdt_desc:
	.word	gdt_desc - gdt - 1
	.long	gdt

	.section .reset, "ax"
	.code16
reset:
	jmp	start16
	.balign 16, 0xf4
