// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * kcount: a QEMU 7.2 TCG plugin counting what the guest KERNEL executes:
 * instructions, locked read-modify-write instructions (atomics) and memory
 * accesses (every load and store those instructions make). The icount
 * clock charges an atomic like an add; this count is what it cannot show.
 *
 *   qemu-system-x86_64 -icount shift=0,sleep=off \
 *       -plugin kcount.so,out=PATH,rr=on ...
 *
 * out=PATH  file for the mark lines (default: qemu's log, -d plugin)
 * rr=on     the caller vouches that TCG runs all vCPUs on one thread
 *           (-icount, or -accel tcg,thread=single); required with -smp > 1
 * sites=PATH at exit, every kernel address of a locked RMW instruction
 *           with its execution count ("site=ADDR n=N"), to check what the
 *           atomics column counts against System.map (boot with nokaslr)
 * prof=PATH a profile of each timed call: at every mark 2, each kernel
 *           instruction address executed since the mark 1 before it, with
 *           its count ("call=C site=ADDR n=N", "a" after a locked one), to
 *           find where a cell's counts go (kernel/tools/kprof.py sums them
 *           per function from System.map; boot with nokaslr)
 * split=ADDR a kernel address (hex; up to 16, one split= each) that divides
 *           a call: each time one runs between a mark 1 and its mark 2, a
 *           line "split vcpu=V ..." with the running totals, so the host can
 *           count the part of a call that the guest timed (kbench: the
 *           returns from gup_test's ktime_get() calls around its pin and its
 *           unpin; boot with nokaslr)
 *
 * Whether an instruction counts is decided when qemu translates it: kernel
 * half addresses only (kcount-decode.h). The guest brackets each timed call
 * with marks (kcount-mark.h), which may run in user space; at each one a
 * line "mark=N vcpu=V insns=I atomics=A mem=M" with the running totals goes
 * to the output, and the host takes differences.
 *
 * It is a count, not a cycle model: an atomic, a cache miss, a TLB miss or
 * a page walk cost nothing extra here; contention, memory ordering fences
 * (mfence and friends) and the MMU's own page-table reads are not counted;
 * a REP string instruction counts once per iteration, as qemu executes it.
 * All vCPUs add to one set of counters, as all of them advance the icount
 * clock: kernel work of the other vCPU during a cell is in its count.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu-plugin-abi.h"
#include "kcount-decode.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

/*
 * Plain counters bumped by inline adds. The adds are not atomic and 7.2
 * has no per-vCPU inline form, so this is exact only when one thread runs
 * every vCPU: hence rr=on, checked at install.
 */
static uint64_t n_insns, n_atomics, n_mem;
static FILE *out;

/*
 * sites=: one counter per locked instruction address, in a fixed table so
 * the inline adds' pointers stay valid; an address seen again (the same
 * code translated anew) gets its old counter.
 */
#define SITES_ORDER 16
#define SITES_MAX (1u << SITES_ORDER)
struct site {
	uint64_t vaddr;
	uint64_t n;
};
static struct site *sites;
static uint64_t sites_lost;
static const char *sites_path;

/*
 * prof=: a counter per kernel instruction address, and a copy taken at each
 * mark 1 so that mark 2 can print what the call between them executed.
 */
#define PROF_ORDER 21
#define PROF_MAX (1u << PROF_ORDER)
struct prof_site {
	uint64_t vaddr;
	uint64_t n;
	uint64_t base;
	int atomic;
};
static struct prof_site *prof;
static uint64_t prof_lost, prof_calls;
static FILE *prof_out;
static const char *prof_path;

/* split=: the addresses, and whether a call (mark 1 .. mark 2) is running. */
#define SPLITS_MAX 16
static uint64_t split_addrs[SPLITS_MAX];
static unsigned int n_splits;
static int in_call;

static void emit(const char *line)
{
	if (!out) {
		qemu_plugin_outs(line);
		return;
	}
	fputs(line, out);
	/* The host may read the file while qemu still runs. */
	fflush(out);
}

static void prof_mark(unsigned int mark)
{
	uint32_t i;

	if (mark == 1) {
		for (i = 0; i < PROF_MAX; i++)
			prof[i].base = prof[i].n;
		return;
	}
	if (mark != 2)
		return;
	prof_calls++;
	for (i = 0; i < PROF_MAX; i++) {
		if (prof[i].n == prof[i].base)
			continue;
		fprintf(prof_out, "call=%" PRIu64 " site=%" PRIx64 " n=%" PRIu64
			"%s\n", prof_calls, prof[i].vaddr,
			prof[i].n - prof[i].base, prof[i].atomic ? " a" : "");
	}
	fflush(prof_out);
}

static void emit_totals(const char *what, unsigned int vcpu)
{
	char line[160];

	snprintf(line, sizeof(line),
		 "%s vcpu=%u insns=%" PRIu64 " atomics=%" PRIu64 " mem=%" PRIu64
		 "\n",
		 what, vcpu, n_insns, n_atomics, n_mem);
	emit(line);
}

static void mark_exec(unsigned int vcpu, void *udata)
{
	unsigned int mark = (unsigned int)(uintptr_t)udata;
	char what[16];

	if (prof)
		prof_mark(mark);
	if (mark == 1 || mark == 2)
		in_call = mark == 1;
	snprintf(what, sizeof(what), "mark=%u", mark);
	emit_totals(what, vcpu);
}

/* Outside a call a split address may run often: say nothing then. */
static void split_exec(unsigned int vcpu, void *udata)
{
	(void)udata;
	if (in_call)
		emit_totals("split", vcpu);
}

/*
 * The slot of @vaddr in an open-addressing table of 1 << @order entries of
 * @stride bytes, each starting with its address (0: free), or -1 when the
 * table is full. A new address takes the first free slot from its hash.
 */
static int64_t table_slot(void *table, size_t stride, unsigned int order,
			  uint64_t vaddr)
{
	uint64_t h = (vaddr * 0x9e3779b97f4a7c15ULL) >> (64 - order);
	uint32_t i, slot, size = 1u << order;
	uint64_t *key;

	for (i = 0; i < size; i++) {
		slot = (uint32_t)(h + i) & (size - 1);
		key = (uint64_t *)((char *)table + (size_t)slot * stride);
		if (*key == vaddr || !*key) {
			*key = vaddr;
			return slot;
		}
	}
	return -1;
}

static uint64_t *site_counter(uint64_t vaddr)
{
	int64_t slot = table_slot(sites, sizeof(*sites), SITES_ORDER, vaddr);

	return slot < 0 ? &sites_lost : &sites[slot].n;
}

static struct prof_site *prof_site(uint64_t vaddr)
{
	int64_t slot = table_slot(prof, sizeof(*prof), PROF_ORDER, vaddr);

	return slot < 0 ? NULL : &prof[slot];
}

static void count_prof(struct qemu_plugin_insn *insn, int atomic)
{
	struct prof_site *site = prof_site(qemu_plugin_insn_vaddr(insn));

	if (!site) {
		qemu_plugin_register_vcpu_insn_exec_inline(
			insn, QEMU_PLUGIN_INLINE_ADD_U64, &prof_lost, 1);
		return;
	}
	site->atomic = atomic;
	qemu_plugin_register_vcpu_insn_exec_inline(
		insn, QEMU_PLUGIN_INLINE_ADD_U64, &site->n, 1);
}

static void count_atomic(struct qemu_plugin_insn *insn)
{
	qemu_plugin_register_vcpu_insn_exec_inline(
		insn, QEMU_PLUGIN_INLINE_ADD_U64, &n_atomics, 1);
	if (sites)
		qemu_plugin_register_vcpu_insn_exec_inline(
			insn, QEMU_PLUGIN_INLINE_ADD_U64,
			site_counter(qemu_plugin_insn_vaddr(insn)), 1);
}

static void count_kernel_insn(struct qemu_plugin_insn *insn, const uint8_t *b,
			      size_t len)
{
	int atomic = kcount_is_locked_rmw(b, len);

	qemu_plugin_register_vcpu_insn_exec_inline(
		insn, QEMU_PLUGIN_INLINE_ADD_U64, &n_insns, 1);
	if (atomic)
		count_atomic(insn);
	if (prof)
		count_prof(insn, atomic);
	qemu_plugin_register_vcpu_mem_inline(insn, QEMU_PLUGIN_MEM_RW,
					     QEMU_PLUGIN_INLINE_ADD_U64, &n_mem,
					     1);
}

static int is_split(uint64_t vaddr)
{
	unsigned int i;

	for (i = 0; i < n_splits; i++)
		if (split_addrs[i] == vaddr)
			return 1;
	return 0;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb), len;
	struct qemu_plugin_insn *insn;
	const uint8_t *b;
	int mark;

	(void)id;
	for (i = 0; i < n; i++) {
		insn = qemu_plugin_tb_get_insn(tb, i);
		b = qemu_plugin_insn_data(insn);
		len = qemu_plugin_insn_size(insn);
		mark = kcount_mark(b, len);
		if (mark >= 0)
			qemu_plugin_register_vcpu_insn_exec_cb(
				insn, mark_exec, QEMU_PLUGIN_CB_NO_REGS,
				(void *)(uintptr_t)mark);
		if (is_split(qemu_plugin_insn_vaddr(insn)))
			qemu_plugin_register_vcpu_insn_exec_cb(
				insn, split_exec, QEMU_PLUGIN_CB_NO_REGS, NULL);
		if (kcount_is_kernel(qemu_plugin_insn_vaddr(insn)))
			count_kernel_insn(insn, b, len);
	}
}

static void write_sites(void)
{
	FILE *f = fopen(sites_path, "w");
	uint32_t i;

	if (!f) {
		perror(sites_path);
		return;
	}
	for (i = 0; i < SITES_MAX; i++) {
		if (sites[i].n)
			fprintf(f, "site=%" PRIx64 " n=%" PRIu64 "\n",
				sites[i].vaddr, sites[i].n);
	}
	fprintf(f, "lost n=%" PRIu64 "\n", sites_lost);
	fclose(f);
}

static void at_exit(qemu_plugin_id_t id, void *udata)
{
	char line[160];

	(void)id;
	(void)udata;
	snprintf(line, sizeof(line),
		 "exit insns=%" PRIu64 " atomics=%" PRIu64 " mem=%" PRIu64 "\n",
		 n_insns, n_atomics, n_mem);
	emit(line);
	if (out)
		fclose(out);
	out = NULL;
	if (sites)
		write_sites();
	if (prof_out) {
		fprintf(prof_out, "lost n=%" PRIu64 "\n", prof_lost);
		fclose(prof_out);
		prof_out = NULL;
	}
}

static int parse_split(const char *hex)
{
	uint64_t vaddr;
	char *end;

	if (n_splits == SPLITS_MAX) {
		fprintf(stderr, "kcount: more than %d split= arguments\n",
			SPLITS_MAX);
		return -1;
	}
	vaddr = strtoull(hex, &end, 16);
	if (!*hex || *end || !kcount_is_kernel(vaddr)) {
		fprintf(stderr,
			"kcount: split=%s: not a kernel address in hex\n", hex);
		return -1;
	}
	split_addrs[n_splits++] = vaddr;
	return 0;
}

static int parse_args(int argc, char **argv, const char **path, int *rr)
{
	int i;

	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4)) {
			*path = argv[i] + 4;
		} else if (!strncmp(argv[i], "sites=", 6)) {
			sites_path = argv[i] + 6;
		} else if (!strncmp(argv[i], "prof=", 5)) {
			prof_path = argv[i] + 5;
		} else if (!strncmp(argv[i], "split=", 6)) {
			if (parse_split(argv[i] + 6))
				return -1;
		} else if (!strcmp(argv[i], "rr=on")) {
			*rr = 1;
		} else {
			fprintf(stderr, "kcount: unknown argument %s\n",
				argv[i]);
			return -1;
		}
	}
	return 0;
}

/* Multi-threaded TCG would race on the plain counters: refuse it. */
static int check_threads(const qemu_info_t *info, int rr)
{
	if (!info->system_emulation || info->system.max_vcpus <= 1 || rr)
		return 0;
	fprintf(stderr,
		"kcount: %d vCPUs: pass rr=on, and run qemu with -icount or "
		"-accel tcg,thread=single, or the counts race\n",
		info->system.max_vcpus);
	return -1;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info, int argc,
					   char **argv)
{
	const char *path = NULL;
	int rr = 0;

	if (strcmp(info->target_name, "x86_64")) {
		fprintf(stderr, "kcount: x86_64 guests only, not %s\n",
			info->target_name);
		return -1;
	}
	if (parse_args(argc, argv, &path, &rr) || check_threads(info, rr))
		return -1;
	if (path && !(out = fopen(path, "w"))) {
		perror(path);
		return -1;
	}
	if (sites_path && !(sites = calloc(SITES_MAX, sizeof(*sites)))) {
		perror("kcount: sites");
		return -1;
	}
	if (prof_path && (!(prof = calloc(PROF_MAX, sizeof(*prof))) ||
			  !(prof_out = fopen(prof_path, "w")))) {
		perror("kcount: prof");
		return -1;
	}
	for (unsigned int i = 0; i < n_splits; i++) {
		char line[48];

		/* Tells the host to look for split lines. */
		snprintf(line, sizeof(line), "split_at=%" PRIx64 "\n",
			 split_addrs[i]);
		emit(line);
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
