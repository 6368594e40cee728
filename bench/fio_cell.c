// SPDX-License-Identifier: MIT
/*
 * O_DIRECT read cells driven by fio. fio owns its I/O buffer, so the folio
 * size is chosen by narrowing the THP policy to that one size ("always")
 * for the run; the histogram is the per-size fault counters' delta, an
 * estimate that counts every anonymous fault of that size system-wide
 * during the run, fio's buffer among them.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define FIO_DEPTH_ASYNC	    16
#define TERSE_READ_BW_FIELD 6 /* terse v3: read bandwidth, KiB/s */

static const char *const pmd_pte_note =
	"a PTE-mapped 2M folio needs a split inside fio's address space";

static double parse_terse_gbps(const char *line)
{
	const char *p = line;
	int field;

	for (field = 0; field < TERSE_READ_BW_FIELD && p; field++) {
		p = strchr(p, ';');
		if (p)
			p++;
	}
	return p ? strtod(p, NULL) * 1024.0 / 1e9 : -1;
}

static double run_fio_once(const struct bench_opts *o, const struct cell *c,
			   char *err, size_t err_len)
{
	const struct path_spec *p = c->path;
	char cmd[1024], line[4096];
	double gbps = -1;
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "fio --name=mreg --filename=%s --direct=1 --rw=randread "
		 "--bs=%" PRIu64 " --ioengine=%s --iodepth=%d --runtime=%d "
		 "--time_based --size=%" PRIu64 " --norandommap "
		 "--randrepeat=0 --iomem=mmap --iomem_align=%" PRIu64
		 " --output-format=terse --terse-version=3 2>&1",
		 o->fio_target, p->block, p->engine,
		 strcmp(p->engine, "psync") ? FIO_DEPTH_ASYNC : 1,
		 o->fio_runtime, c->size, c->folio->size);
	f = popen(cmd, "r");
	if (!f) {
		snprintf(err, err_len, "cannot run fio");
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "3;", 2))
			gbps = parse_terse_gbps(line);
		else
			snprintf(err, err_len, "fio: %.*s",
				 (int)strcspn(line, "\n"), line);
	}
	if (pclose(f) && gbps < 0 && !err[0])
		snprintf(err, err_len, "fio failed");
	return gbps;
}

static const char *cannot_run(const struct bench_opts *o, const struct cell *c)
{
	if (!o->fio_target)
		return "no --fio-target given";
	if (geteuid())
		return "choosing fio's folio size needs root (sysfs policy)";
	if (c->folio->size > c->path->block)
		return "the fio block is smaller than the folio";
	if (c->folio->level == MREG_MAP_PTE)
		return pmd_pte_note;
	return NULL;
}

static uint64_t read_alloc_stat(uint64_t folio_size)
{
	unsigned long long v = 0;
	char path[160];
	FILE *f;

	snprintf(path, sizeof(path),
		 "/sys/kernel/mm/transparent_hugepage/hugepages-%" PRIu64
		 "kB/stats/anon_fault_alloc",
		 folio_size >> 10);
	f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

static void estimate_hist(struct cell *c, uint64_t before)
{
	struct mreg_folio_hist *h = &c->hist;
	uint64_t now = read_alloc_stat(c->folio->size);
	unsigned int order;

	memset(h, 0, sizeof(*h));
	h->method = MREG_VERIFY_ESTIMATE;
	h->page_size = (uint32_t)sysconf(_SC_PAGESIZE);
	order = (unsigned int)__builtin_ctzll(c->folio->size / h->page_size);
	now = now < before ? before : now;
	if (!order) /* every THP size was off: fio's buffer is in 4 kB pages */
		now = before + c->path->block / h->page_size;
	h->folios[order] = now - before;
	h->bytes[order] = (now - before) * c->folio->size;
	c->verified = now > before;
}

static void run_reps(const struct bench_opts *o, struct cell *c)
{
	static double gbps[MAX_REPS];
	int i, reps = o->reps < 3 ? o->reps : 3;
	double v;

	/* Each fio run is seconds long: three runs give a median. */
	for (i = 0; i < reps; i++) {
		v = run_fio_once(o, c, c->note, sizeof(c->note));
		if (v < 0)
			return;
		gbps[c->nr++] = v;
	}
	c->note[0] = '\0';
	stats_compute(gbps, c->nr, &c->reg);
}

void fio_cell_run(const struct bench_opts *o, struct cell *c)
{
	const char *why = cannot_run(o, c);
	struct mreg_thp_policy *saved;
	uint64_t before;

	if (why) {
		snprintf(c->note, sizeof(c->note), "%s", why);
		return;
	}
	if (mreg_thp_policy_save(&saved)) {
		snprintf(c->note, sizeof(c->note), "%s", mreg_last_error());
		return;
	}
	before = read_alloc_stat(c->folio->size);
	if (!mreg_thp_select_anon(c->folio->size, MREG_THP_ALWAYS))
		run_reps(o, c);
	else
		snprintf(c->note, sizeof(c->note), "%s", mreg_last_error());
	estimate_hist(c, before);
	mreg_thp_policy_restore(saved);
}
