/* SPDX-License-Identifier: MIT */
#ifndef MREG_BENCH_H
#define MREG_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mreg/mreg.h>

#define MAX_FOLIOS 16
#define MAX_SIZES  8
#define MAX_PATHS  16
#define MAX_REPS   1000

/* One folio column: 4k, 64k, 2m-pte, 2m-pmd, ... */
struct folio_spec {
	char name[16];
	uint64_t size;
	uint32_t level; /* enum mreg_map_level */
};

enum path_kind {
	PATH_REGISTER, /* mreg_region_register() on a backend */
	PATH_FIO,      /* fio O_DIRECT reads */
	PATH_KBENCH,   /* mreg.ko's MREG_IOC_BENCH: one GUP method */
	PATH_HEAP,     /* DPDK's own rte_malloc_heap_memory_add(), not mreg */
};

/* One row kind: a registration backend, an fio job or a GUP method. */
struct path_spec {
	char name[32];
	enum path_kind kind;
	int backend;	   /* PATH_REGISTER: enum mreg_backend */
	uint32_t method;   /* PATH_KBENCH: enum mreg_bench_method */
	uint32_t kflags;   /* PATH_KBENCH: enum mreg_bench_flags */
	uint32_t per_call; /* PATH_KBENCH: pages per call, 0 = all */
	char engine[16];   /* fio: psync, io_uring */
	char device[64];   /* "verbs@rxe0", "vfio@0000:00:03.0" */
	uint64_t block;	   /* fio: bs */
	uint32_t threads;  /* PATH_REGISTER: MREG_REGION_ATTR_THREADS, 0 = 1 */
};

struct stats {
	double median, min, max, p90;
};

/* background.c: the kernel's background memory work during a cell */
enum background_counter {
	BG_COMPACT_STALL,
	BG_COMPACT_WAKE,
	BG_COMPACT_MIGRATE,
	BG_COMPACT_DAEMON_MIGRATE,
	BG_PGMIGRATE,
	BG_THP_COLLAPSE,
	BG_THP_SPLIT,
	BG_KSWAPD_SCAN,
	BG_OTHER_TICKS, /* not vmstat: /proc/stat, less this process */
	BG_NR
};

struct background {
	uint64_t v[BG_NR];
};

extern const char *const background_names[BG_NR];
void background_snapshot(struct background *b);
void background_delta(struct background *b);
uint64_t pfn_runs(const void *addr, size_t len);

struct cell {
	const struct path_spec *path;
	const struct folio_spec *folio;
	uint64_t size;
	int nr;		    /* samples */
	struct stats reg;   /* registration ms, or fio GB/s */
	struct stats dereg; /* deregistration ms */
	struct mreg_folio_hist hist;
	bool verified;
	struct background bg;	 /* what else the kernel did meanwhile */
	uint64_t pfn_runs;	 /* physically contiguous runs, 0 = unknown */
	double verify_ms_per_gb; /* mreg_verify_range() of the buffer, 0 = not
				    run */
	char note[96];		 /* why a cell has no numbers */
};

struct bench_opts {
	struct folio_spec folios[MAX_FOLIOS];
	int nr_folios;
	uint64_t sizes[MAX_SIZES];
	int nr_sizes;
	struct path_spec paths[MAX_PATHS];
	int nr_paths;
	int reps, warmup;
	uint32_t backing;
	const char *out_dir;
	const char *fio_target;
	int fio_runtime;
	bool quiet;
};

/* stats.c */
void stats_compute(double *samples, int nr, struct stats *out);

/* kbench_cell.c */
int kbench_parse(const char *tok, struct path_spec *p);
void kbench_cell_run(const struct bench_opts *o, struct cell *c,
		     struct mreg_buf *buf);

/* dpdk_heap_cell.c: DPDK's heap path, the anchor for mreg's dpdk backend */
void dpdk_heap_prepare(const struct bench_opts *o);
void dpdk_heap_cell_run(const struct bench_opts *o, struct cell *c,
			const struct mreg_buf *buf);

/* vfio_info.c: a type1 container's free DMA entries and IOVA ranges */
int vfio_dma_avail(int container, uint32_t *avail);
bool vfio_iova_fits(int container, uint64_t iova, uint64_t len);

/* fio_cell.c */
void fio_cell_run(const struct bench_opts *o, struct cell *c);

/* report.c */
void report_table(const struct bench_opts *o, const struct cell *cells, int nr);
int report_json(const char *path, const struct bench_opts *o,
		const struct cell *cells, int nr);
int report_csv(const char *path, const struct cell *cells, int nr);
void format_size(char *buf, size_t len, uint64_t bytes);

#endif
