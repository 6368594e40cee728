// SPDX-License-Identifier: MIT
/* Terminal table, JSON and CSV from the same cells. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "bench.h"

static const char *const backing_names[] = {"anon", "shmem", "memfd",
					    "hugetlb"};

void format_size(char *buf, size_t len, uint64_t bytes)
{
	if (bytes >= (1ull << 30) && !(bytes % (1ull << 30)))
		snprintf(buf, len, "%" PRIu64 "G", bytes >> 30);
	else if (bytes >= (1ull << 20))
		snprintf(buf, len, "%" PRIu64 "M", bytes >> 20);
	else
		snprintf(buf, len, "%" PRIu64 "K", bytes >> 10);
}

static bool is_fio(const struct cell *c)
{
	return c->path->kind == PATH_FIO;
}

static const char *unit(const struct cell *c)
{
	return is_fio(c) ? "GB/s" : "ms";
}

static void print_value(const struct cell *c)
{
	char v[32];

	if (!c->nr)
		snprintf(v, sizeof(v), "-");
	else if (c->reg.median >= 100)
		snprintf(v, sizeof(v), "%.0f", c->reg.median);
	else
		snprintf(v, sizeof(v), "%.*f", c->reg.median >= 10 ? 1 : 3,
			 c->reg.median);
	printf(" %11s%s", v, c->nr && !c->verified ? "*" : " ");
}

static void table_header(const struct bench_opts *o)
{
	int f;

	printf("%-18s %-6s %-4s", "path", "size", "unit");
	for (f = 0; f < o->nr_folios; f++)
		printf(" %11s ", o->folios[f].name);
	printf("\n");
}

/* Cells are laid out [size][folio][path]. */
static const struct cell *at(const struct bench_opts *o,
			     const struct cell *cells, int s, int f, int p)
{
	return &cells[(s * o->nr_folios + f) * o->nr_paths + p];
}

static void table_values(const struct bench_opts *o, const struct cell *cells)
{
	char size[16];
	int s, f, p;

	for (p = 0; p < o->nr_paths; p++)
		for (s = 0; s < o->nr_sizes; s++) {
			const struct cell *first = at(o, cells, s, 0, p);

			format_size(size, sizeof(size), first->size);
			printf("%-18s %-6s %-4s", first->path->name, size,
			       unit(first));
			for (f = 0; f < o->nr_folios; f++)
				print_value(at(o, cells, s, f, p));
			printf("\n");
		}
}

static void table_hists(const struct bench_opts *o, const struct cell *cells,
			int nr)
{
	char size[16], hist[256], verify[32];
	int i;

	printf("\nverified folio histogram per cell (* = not the folios asked "
	       "for), and what verifying it cost per GB:\n");
	for (i = 0; i < nr; i++) {
		const struct cell *c = &cells[i];

		format_size(size, sizeof(size), c->size);
		mreg_folio_hist_format(&c->hist, hist, sizeof(hist));
		verify[0] = '\0';
		if (c->verify_ms_per_gb > 0)
			snprintf(verify, sizeof(verify), "  verify %.1f ms/GB",
				 c->verify_ms_per_gb);
		/* A cell with numbers and a note: its layout changed. */
		printf("  %-18s %-5s %-7s %s%s%s%s\n", c->path->name, size,
		       c->folio->name, c->nr || !c->note[0] ? hist : "",
		       !c->note[0] ? ""
		       : c->nr	   ? " * "
				   : "n/a: ",
		       c->note, verify);
	}
	(void)o;
}

void report_table(const struct bench_opts *o, const struct cell *cells, int nr)
{
	struct utsname u;

	uname(&u);
	printf("\nmreg-bench: kernel %s, %s backing; register ms: median of "
	       "%d after %d warm-up; fio read GB/s: median of %d runs\n\n",
	       u.release, backing_names[o->backing], o->reps, o->warmup,
	       o->reps < 3 ? o->reps : 3);
	table_header(o);
	table_values(o, cells);
	table_hists(o, cells, nr);
}

static void json_stats(FILE *f, const char *name, const struct stats *s)
{
	fprintf(f,
		"\"%s\": {\"median\": %.6f, \"min\": %.6f, \"max\": %.6f, "
		"\"p90\": %.6f}",
		name, s->median, s->min, s->max, s->p90);
}

static void json_hist(FILE *f, const struct mreg_folio_hist *h)
{
	static const char *const methods[] = {"none", "exact", "estimate"};
	int order, first = 1;

	fprintf(f, "\"hist\": {\"method\": \"%s\", \"folios\": {",
		methods[h->method % 3]);
	for (order = 0; order < MREG_HIST_ORDERS; order++) {
		if (!h->folios[order])
			continue;
		fprintf(f, "%s\"%" PRIu64 "\": %" PRIu64, first ? "" : ", ",
			(uint64_t)h->page_size << order, h->folios[order]);
		first = 0;
	}
	fprintf(f,
		"}, \"pmd_mapped_bytes\": %" PRIu64
		", \"unbacked_bytes\": %" PRIu64 "}",
		h->pmd_mapped_bytes, h->unbacked_bytes);
}

/* Notes come from library messages: keep quotes and backslashes out. */
static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++)
		fputc(*s == '"' || *s == '\\' ? '\'' : *s, f);
	fputc('"', f);
}

/* Only a histogram measured page by page is a verification; fio's
 * fault-counter estimates never are. */
static bool verified_exactly(const struct cell *c)
{
	return c->verified && c->hist.method == MREG_VERIFY_EXACT;
}

/* Only the counters that moved: most cells have none. */
static void json_background(FILE *f, const struct background *b)
{
	int i, first = 1;

	fprintf(f, "\"background\": {");
	for (i = 0; i < BG_NR; i++) {
		if (!b->v[i])
			continue;
		fprintf(f, "%s\"%s\": %" PRIu64, first ? "" : ", ",
			background_names[i], b->v[i]);
		first = 0;
	}
	fprintf(f, "}");
}

static void json_cell(FILE *f, const struct cell *c)
{
	fprintf(f,
		"    {\"path\": \"%s\", \"folio\": \"%s\", \"folio_size\": "
		"%" PRIu64 ", \"size\": %" PRIu64 ", \"unit\": \"%s\", "
		"\"threads\": %u, \"samples\": %d, \"verified\": %s, ",
		c->path->name, c->folio->name, c->folio->size, c->size, unit(c),
		c->path->threads ? c->path->threads : 1, c->nr,
		verified_exactly(c) ? "true" : "false");
	json_stats(f, "value", &c->reg);
	fprintf(f, ", ");
	json_stats(f, "dereg_ms", &c->dereg);
	fprintf(f, ", ");
	json_hist(f, &c->hist);
	fprintf(f, ", ");
	json_background(f, &c->bg);
	fprintf(f,
		", \"pfn_runs\": %" PRIu64 ", \"verify_ms_per_gb\": %.3f, "
		"\"note\": ",
		c->pfn_runs, c->verify_ms_per_gb);
	json_string(f, c->note);
	fprintf(f, "}");
}

int report_json(const char *path, const struct bench_opts *o,
		const struct cell *cells, int nr)
{
	FILE *f = fopen(path, "we");
	struct utsname u;
	int i;

	if (!f)
		return -1;
	uname(&u);
	fprintf(f,
		"{\n  \"kernel\": \"%s\", \"machine\": \"%s\", "
		"\"time\": %lld, \"backing\": \"%s\", \"reps\": %d, "
		"\"warmup\": %d,\n  \"cells\": [\n",
		u.release, u.machine, (long long)time(NULL),
		backing_names[o->backing], o->reps, o->warmup);
	for (i = 0; i < nr; i++) {
		json_cell(f, &cells[i]);
		fprintf(f, "%s\n", i + 1 < nr ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
	return fclose(f);
}

int report_csv(const char *path, const struct cell *cells, int nr)
{
	FILE *f = fopen(path, "we");
	char hist[256];
	int i;

	if (!f)
		return -1;
	fprintf(f, "path,folio,size,unit,samples,median,min,max,p90,"
		   "dereg_median_ms,verified,hist,note,verify_ms_per_gb\n");
	for (i = 0; i < nr; i++) {
		const struct cell *c = &cells[i];

		mreg_folio_hist_format(&c->hist, hist, sizeof(hist));
		fprintf(f,
			"%s,%s,%" PRIu64 ",%s,%d,%.6f,%.6f,%.6f,%.6f,%.6f,"
			"%d,\"%s\",\"%s\",%.3f\n",
			c->path->name, c->folio->name, c->size, unit(c), c->nr,
			c->reg.median, c->reg.min, c->reg.max, c->reg.p90,
			c->dereg.median, verified_exactly(c), hist, c->note,
			c->verify_ms_per_gb);
	}
	return fclose(f);
}
