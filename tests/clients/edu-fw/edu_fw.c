// SPDX-License-Identifier: MIT
/*
 * edu-fw: the whole guest of a VM that QEMU starts with qemu's edu device
 * passed through by vfio-pci. Run as its BIOS (-bios edu-fw.bin), it is
 * the driver: it finds edu on PCI bus 0, gives it a BAR and bus
 * mastering, writes a pattern into RAM, has edu's DMA engine copy it
 * RAM -> device -> elsewhere in RAM, and compares. The CPU reaches RAM
 * through QEMU's own mapping of it; edu's DMA goes through the IOMMU
 * mapping that QEMU installed with VFIO_IOMMU_MAP_DMA or IOMMU_IOAS_MAP
 * over the pages it pinned: equal bytes mean the pinned pages are the
 * VM's RAM.
 *
 * It reports on the serial port ("edu-fw: N of M transfers matched") and
 * ends QEMU through isa-debug-exit at port 0xf4: QEMU exits 33 when every
 * transfer matched, 35 when one did not, 37 when edu misbehaved.
 *
 * 32-bit protected mode, paging off (start.S): addresses are physical.
 * Nothing writable outside the stack, which lies in low RAM.
 */
#include <stdint.h>

#define COM1		0x3f8
#define DEBUG_EXIT	0xf4
#define EXIT_MATCHED	0x10 /* QEMU exits (v << 1) | 1 */
#define EXIT_DIFFERED	0x11
#define EXIT_NO_EDU	0x12
#define PCI_ADDR	0xcf8
#define PCI_DATA	0xcfc
#define EDU_VENDOR_DEV	0x11e81234u
#define EDU_ID		0x010000edu
#define BAR0		0xe0000000u /* q35's 32-bit hole, clear of ECAM */
#define EDU_BUF		0x40000u
#define DMA_LEN		4095u /* what qemu 7.2's edu moves at most */
#define DMA_SPAN	(256u << 20) /* edu masks DMA addresses to 28 bits */
#define POLL_LIMIT	100000000u

static inline void outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline void outl(uint16_t port, uint32_t v)
{
	__asm__ volatile("outl %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint32_t inl(uint16_t port)
{
	uint32_t v;

	__asm__ volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline uint32_t mmio_read(uint32_t addr)
{
	return *(volatile uint32_t *)addr;
}

static inline void mmio_write(uint32_t addr, uint32_t v)
{
	*(volatile uint32_t *)addr = v;
}

static void puts_serial(const char *s)
{
	while (*s)
		outb(COM1, (uint8_t)*s++);
}

static void put_dec(uint32_t v)
{
	char buf[12];
	int i = 11;

	buf[i] = '\0';
	do
		buf[--i] = (char)('0' + v % 10);
	while (v /= 10);
	puts_serial(buf + i);
}

static void put_hex(uint32_t v)
{
	int shift;

	puts_serial("0x");
	for (shift = 28; shift >= 0; shift -= 4)
		outb(COM1, (uint8_t)"0123456789abcdef"[(v >> shift) & 0xf]);
}

static __attribute__((noreturn)) void finish(uint32_t code)
{
	outl(DEBUG_EXIT, code);
	for (;;)
		__asm__ volatile("hlt");
}

static uint32_t cfg_read(uint32_t slot, uint32_t reg)
{
	outl(PCI_ADDR, 0x80000000u | slot << 11 | reg);
	return inl(PCI_DATA);
}

static void cfg_write(uint32_t slot, uint32_t reg, uint32_t v)
{
	outl(PCI_ADDR, 0x80000000u | slot << 11 | reg);
	outl(PCI_DATA, v);
}

static int edu_find(void)
{
	uint32_t slot;

	for (slot = 0; slot < 32; slot++)
		if (cfg_read(slot, 0) == EDU_VENDOR_DEV)
			return (int)slot;
	return -1;
}

/* BAR0, memory decoding, bus mastering; then edu must answer. */
static int edu_setup(uint32_t slot)
{
	cfg_write(slot, 0x10, BAR0);
	cfg_write(slot, 0x04, (cfg_read(slot, 0x04) & 0xffff) | 0x6);
	if (mmio_read(BAR0) != EDU_ID)
		return -1;
	mmio_write(BAR0 + 4, 0x12345678u);
	return mmio_read(BAR0 + 4) == ~0x12345678u ? 0 : -1;
}

static int edu_dma(uint32_t src, uint32_t dst, uint32_t to_ram)
{
	uint32_t n;

	mmio_write(BAR0 + 0x80, src);
	mmio_write(BAR0 + 0x84, 0);
	mmio_write(BAR0 + 0x88, dst);
	mmio_write(BAR0 + 0x8c, 0);
	mmio_write(BAR0 + 0x90, DMA_LEN);
	mmio_write(BAR0 + 0x94, 0);
	mmio_write(BAR0 + 0x98, 1 | (to_ram ? 2 : 0));
	for (n = 0; n < POLL_LIMIT; n++)
		if (!(mmio_read(BAR0 + 0x98) & 1))
			return 0;
	return -1;
}

static uint8_t pattern(uint32_t a, uint32_t i)
{
	return (uint8_t)((a >> 12) ^ (i * 131 + 7));
}

/* RAM @a -> edu -> RAM @b; then @b must hold what @a held. */
static int transfer(uint32_t a, uint32_t b)
{
	volatile uint8_t *src = (volatile uint8_t *)a;
	volatile uint8_t *dst = (volatile uint8_t *)b;
	uint32_t i;

	for (i = 0; i < DMA_LEN; i++) {
		src[i] = pattern(a, i);
		dst[i] = 0;
	}
	if (edu_dma(a, EDU_BUF, 0) || edu_dma(EDU_BUF, b, 1))
		return -1;
	for (i = 0; i < DMA_LEN; i++)
		if (dst[i] != pattern(a, i))
			return 1;
	return 0;
}

void edu_fw_main(void)
{
	/* Page, 64 kB and 2 MB folio boundaries crossed on purpose; the
	 * destinations lie half the span away, in other folios. */
	static const uint32_t where[] = {
		1u << 20,	       (2u << 20) - 2048,	(7u << 16) - 100,
		(64u << 20) + 12345,   (128u << 20) - 1,	DMA_SPAN - DMA_LEN - 1,
	};
	uint32_t i, ok = 0, n = sizeof(where) / sizeof(where[0]), a, b;
	int slot, ret;

	slot = edu_find();
	if (slot < 0 || edu_setup((uint32_t)slot)) {
		puts_serial("edu-fw: no working edu on bus 0\n");
		finish(EXIT_NO_EDU);
	}
	for (i = 0; i < n; i++) {
		a = where[i];
		b = (a + DMA_SPAN / 2) % (DMA_SPAN - DMA_LEN);
		ret = transfer(a, b);
		if (ret < 0) {
			puts_serial("edu-fw: edu's DMA never finished\n");
			finish(EXIT_NO_EDU);
		}
		if (ret) {
			puts_serial("edu-fw: ");
			put_hex(a);
			puts_serial(" -> edu -> ");
			put_hex(b);
			puts_serial(": the bytes differ\n");
		}
		ok += !ret;
	}
	puts_serial("edu-fw: ");
	put_dec(ok);
	puts_serial(" of ");
	put_dec(n);
	puts_serial(" transfers RAM -> edu -> RAM matched\n");
	finish(ok == n ? EXIT_MATCHED : EXIT_DIFFERED);
}
