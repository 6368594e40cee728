// SPDX-License-Identifier: MIT
/*
 * mreg-bench: folio size x registration path x buffer size. Each cell
 * allocates (and verifies) its buffer once, then times register and
 * deregister over warm-up + N repetitions; fio cells read O_DIRECT with
 * their I/O buffer in the chosen folio size.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define DEFAULT_FOLIOS "4k,64k,1m,2m-pte,2m-pmd"

/* What parse_args() returns besides 0 and -errno: print and exit 0. */
enum { ARGS_HELP = 1, ARGS_VERSION = 2 };

/* --help asked for it (stdout, exit 0); a bad option gets it on stderr. */
static void usage(FILE *out)
{
	fprintf(out,
		"usage: mreg-bench [options]\n"
		"  -f, --folios LIST   folio sizes (default " DEFAULT_FOLIOS
		")\n"
		"  -s, --sizes LIST    buffer sizes (default 256m,1g)\n"
		"  -p, --paths LIST    io_uring,verbs,vfio,iommufd,kmod,dpdk "
		"(each\n"
		"                      may name a device: vfio@0000:00:03.0),\n"
		"                      dpdk-heap@BDF (DPDK's own heap path, "
		"not\n"
		"                      mreg's: the anchor for dpdk); a "
		"backend path\n"
		"                      ending in /tN registers on N threads "
		"(verbs@rxe0/t2),\n"
		"                      fio-psync,fio-io_uring[:BS],\n"
		"                      kbench-METHOD[:PAGES_PER_CALL] with "
		"METHOD\n"
		"                      gup_fast, pup_fast, pup, pup_longterm,\n"
		"                      pup_remote, memfd (mreg.ko; default "
		"io_uring)\n"
		"  -r, --reps N        timed repetitions (default 15)\n"
		"  -w, --warmup N      untimed repetitions first (default 2)\n"
		"  -b, --backing NAME  anon|shmem|memfd|hugetlb (default "
		"anon)\n"
		"  -t, --fio-target P  block device or file for fio cells\n"
		"  -R, --fio-runtime S seconds per fio cell (default 3)\n"
		"  -o, --out DIR       write results.json and results.csv\n"
		"  -q, --quiet         no progress line\n"
		"  -h, --help          this text\n"
		"  -V, --version       the mreg version\n");
}

/* MREG_VERSION is the project's version, from CMake. */
static int print_info(int what)
{
	if (what == ARGS_HELP)
		usage(stdout);
	else
		printf("mreg-bench %s\n", MREG_VERSION);
	return 0;
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	uint64_t v = strtoull(s, &end, 10);

	switch (*end) {
	case 'k':
	case 'K':
		v <<= 10;
		end++;
		break;
	case 'm':
	case 'M':
		v <<= 20;
		end++;
		break;
	case 'g':
	case 'G':
		v <<= 30;
		end++;
		break;
	default:
		break;
	}
	*out = v;
	return v && (!*end || *end == '-' || *end == ':') ? 0 : -EINVAL;
}

static int parse_folio(const char *tok, struct folio_spec *f)
{
	snprintf(f->name, sizeof(f->name), "%s", tok);
	if (parse_size(tok, &f->size))
		return -EINVAL;
	f->level = strstr(tok, "-pte")	 ? MREG_MAP_PTE
		   : strstr(tok, "-pmd") ? MREG_MAP_PMD
					 : MREG_MAP_DEFAULT;
	return 0;
}

static int parse_path_base(const char *tok, struct path_spec *p)
{
	const char *colon = strchr(tok, ':');
	char *at;

	snprintf(p->name, sizeof(p->name), "%s", tok);
	at = strchr(p->name, '@');
	if (at) { /* path@device: the name keeps only the path */
		snprintf(p->device, sizeof(p->device), "%s", at + 1);
		*at = '\0';
	}

	if (!strcmp(p->name, "dpdk-heap")) { /* DPDK's own, on a device */
		p->kind = PATH_HEAP;
		return p->device[0] ? 0 : -EINVAL;
	}
	if (at)
		return (p->backend = mreg_backend_parse(p->name)) < 0 ? -EINVAL
								      : 0;
	if (!strncmp(tok, "kbench-", 7))
		return kbench_parse(tok, p);
	if (!strncmp(tok, "fio-", 4)) {
		p->kind = PATH_FIO;
		snprintf(p->engine, sizeof(p->engine), "%.*s",
			 (int)(colon ? colon - tok - 4 : (long)strlen(tok) - 4),
			 tok + 4);
		p->block = 1u << 20;
		return colon ? parse_size(colon + 1, &p->block) : 0;
	}
	p->backend = mreg_backend_parse(tok);
	return p->backend < 0 ? -EINVAL : 0;
}

/*
 * "verbs@rxe0/t2": registered on 2 threads (MREG_REGION_ATTR_THREADS).
 * The name keeps the suffix, so each thread count is a row of its own.
 */
static int parse_path(const char *tok, struct path_spec *p)
{
	char base[sizeof(p->name)], *t, *end;
	size_t len;

	snprintf(base, sizeof(base), "%s", tok);
	t = strstr(base, "/t");
	if (t) {
		p->threads = (uint32_t)strtoul(t + 2, &end, 10);
		if (*end || !p->threads || p->threads > MREG_REGION_THREADS_MAX)
			return -EINVAL;
		*t = '\0';
	}
	if (parse_path_base(base, p))
		return -EINVAL;
	if (p->threads && p->kind != PATH_REGISTER)
		return -EINVAL;
	len = strlen(p->name);
	if (p->threads > 1)
		snprintf(p->name + len, sizeof(p->name) - len, "/t%u",
			 p->threads);
	return 0;
}

/* Split @list on commas and feed each token to the right parser. */
static int parse_list(const char *list, int kind, struct bench_opts *o)
{
	char *copy = strdup(list), *save = NULL, *tok;
	int ret = 0;

	for (tok = strtok_r(copy, ",", &save); tok && !ret;
	     tok = strtok_r(NULL, ",", &save)) {
		if (kind == 'f' && o->nr_folios < MAX_FOLIOS)
			ret = parse_folio(tok, &o->folios[o->nr_folios++]);
		else if (kind == 's' && o->nr_sizes < MAX_SIZES)
			ret = parse_size(tok, &o->sizes[o->nr_sizes++]);
		else if (kind == 'p' && o->nr_paths < MAX_PATHS)
			ret = parse_path(tok, &o->paths[o->nr_paths++]);
		else
			ret = -E2BIG;
		if (ret)
			fprintf(stderr, "mreg-bench: bad %s '%s'\n",
				kind == 'f'   ? "folio"
				: kind == 's' ? "size"
					      : "path",
				tok);
	}
	free(copy);
	return ret;
}

static int parse_backing(const char *name)
{
	const char *names[] = {"anon", "shmem", "memfd", "hugetlb"};
	int i;

	for (i = 0; i < 4; i++)
		if (!strcmp(name, names[i]))
			return i;
	return -EINVAL;
}

static const struct option long_opts[] = {
	{"folios", required_argument, NULL, 'f'},
	{"sizes", required_argument, NULL, 's'},
	{"paths", required_argument, NULL, 'p'},
	{"reps", required_argument, NULL, 'r'},
	{"warmup", required_argument, NULL, 'w'},
	{"backing", required_argument, NULL, 'b'},
	{"fio-target", required_argument, NULL, 't'},
	{"fio-runtime", required_argument, NULL, 'R'},
	{"out", required_argument, NULL, 'o'},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{0},
};

static int parse_opt(int c, struct bench_opts *o)
{
	int backing;

	switch (c) {
	case 'f':
	case 's':
	case 'p':
		return parse_list(optarg, c, o);
	case 'r':
		o->reps = atoi(optarg);
		break;
	case 'w':
		o->warmup = atoi(optarg);
		break;
	case 't':
		o->fio_target = optarg;
		break;
	case 'R':
		o->fio_runtime = atoi(optarg);
		break;
	case 'o':
		o->out_dir = optarg;
		break;
	case 'q':
		o->quiet = true;
		break;
	case 'b':
		backing = parse_backing(optarg);
		if (backing < 0)
			return backing;
		o->backing = (uint32_t)backing;
		break;
	case 'h':
		return ARGS_HELP;
	case 'V':
		return ARGS_VERSION;
	default:
		return -EINVAL;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct bench_opts *o)
{
	int c, ret;

	*o = (struct bench_opts){.reps = 15, .warmup = 2, .fio_runtime = 3};
	while ((c = getopt_long(argc, argv, "f:s:p:r:w:b:t:R:o:qhV", long_opts,
				NULL)) != -1) {
		ret = parse_opt(c, o);
		if (ret)
			return ret > 0 ? ret : -EINVAL;
	}
	if (o->reps < 1 || o->reps > MAX_REPS || o->warmup < 0)
		return -EINVAL;
	if (!o->nr_folios)
		parse_list(DEFAULT_FOLIOS, 'f', o);
	if (!o->nr_sizes)
		parse_list("256m,1g", 's', o);
	if (!o->nr_paths)
		parse_list("io_uring", 'p', o);
	return 0;
}

static void progress(const struct bench_opts *o, int done, int total,
		     const struct cell *c)
{
	char size[16];

	bool tty = isatty(STDERR_FILENO);

	if (o->quiet)
		return;
	format_size(size, sizeof(size), c->size);
	/* A terminal gets one line rewritten; a log gets one line per cell. */
	fprintf(stderr, "%s[%d/%d] %s %s %s%s", tty ? "\r\033[K" : "", done,
		total, c->path->name, c->folio->name, size,
		tty && done < total ? "" : "\n");
}

/* Time warm-up + reps register/deregister pairs of the whole buffer. */
static void reg_cell_run(const struct bench_opts *o, struct cell *c,
			 struct mreg_buf *buf)
{
	struct mreg_domain_attr attr = {
		.backend = (uint32_t)c->path->backend,
		.comp_mask = c->path->device[0] ? MREG_DOMAIN_ATTR_DEVICE : 0,
		.device = c->path->device,
	};
	struct mreg_region_attr ra = {
		.size = sizeof(ra),
		.comp_mask = c->path->threads ? MREG_REGION_ATTR_THREADS : 0,
		.addr = mreg_buf_addr(buf),
		.length = mreg_buf_length(buf),
		.threads = c->path->threads,
	};
	static double reg[MAX_REPS], dereg[MAX_REPS];
	struct mreg_region_info info = {.size = sizeof(info)};
	struct mreg_domain *d;
	struct mreg_region *r;
	uint64_t dereg_ns;
	int i;

	if (mreg_domain_open(&attr, &d)) {
		snprintf(c->note, sizeof(c->note), "%s", mreg_last_error());
		return;
	}
	for (i = 0; i < o->warmup + o->reps; i++) {
		if (mreg_region_register_attr(d, &ra, &r)) {
			snprintf(c->note, sizeof(c->note), "%s",
				 mreg_last_error());
			break;
		}
		mreg_region_query(r, &info);
		mreg_region_deregister(r, &dereg_ns);
		if (i < o->warmup)
			continue;
		reg[c->nr] = (double)info.reg_ns / 1e6;
		dereg[c->nr++] = (double)dereg_ns / 1e6;
	}
	mreg_domain_close(d);
	stats_compute(reg, c->nr, &c->reg);
	stats_compute(dereg, c->nr, &c->dereg);
}

static struct mreg_buf *alloc_buf(const struct bench_opts *o,
				  const struct folio_spec *f, uint64_t size,
				  char *note, size_t note_len)
{
	struct mreg_buf_attr attr = {
		.size = sizeof(attr),
		/* The bench is about folio sizes: as root it asks mreg to
		 * narrow the THP policy while each buffer faults in. */
		.flags = MREG_BUF_ALLOW_FALLBACK |
			 (geteuid() ? 0 : MREG_BUF_SET_POLICY),
		.length = size,
		.folio_size = f->size,
		.backing = o->backing,
		.map_level = f->level,
	};
	struct mreg_buf *buf;

	if (mreg_buf_alloc(&attr, &buf)) {
		snprintf(note, note_len, "%s", mreg_last_error());
		return NULL;
	}
	return buf;
}

static bool has_reg_paths(const struct bench_opts *o)
{
	int p;

	for (p = 0; p < o->nr_paths; p++)
		if (o->paths[p].kind != PATH_FIO)
			return true;
	return false;
}

static bool same_hist(const struct mreg_folio_hist *a,
		      const struct mreg_folio_hist *b)
{
	return !memcmp(a->folios, b->folios, sizeof(a->folios)) &&
	       !memcmp(a->bytes, b->bytes, sizeof(a->bytes)) &&
	       a->pmd_mapped_bytes == b->pmd_mapped_bytes &&
	       a->unbacked_bytes == b->unbacked_bytes;
}

/*
 * A cell is reported as verified only if the buffer still has the
 * histogram it was verified with once the repetitions are over: a folio
 * that was split, collapsed or migrated meanwhile would make the cell
 * time another layout than the one it names.
 */
static void recheck_hist(struct cell *c, const struct mreg_buf *buf)
{
	struct mreg_folio_hist now = {.size = sizeof(now)};
	struct timespec t0, t1;
	char text[64];
	int ret;

	/* Timed: what verifying costs beside what registering does. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = mreg_verify_range(mreg_buf_addr(buf), mreg_buf_length(buf), &now);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (!ret)
		c->verify_ms_per_gb =
			((double)(t1.tv_sec - t0.tv_sec) * 1e3 +
			 (double)(t1.tv_nsec - t0.tv_nsec) / 1e6) *
			(double)(1ull << 30) / (double)mreg_buf_length(buf);
	if (ret || !c->verified || c->hist.method != MREG_VERIFY_EXACT)
		return;
	if (same_hist(&c->hist, &now))
		return;
	c->verified = false;
	c->hist = now;
	mreg_folio_hist_format(&now, text, sizeof(text));
	snprintf(c->note, sizeof(c->note), "layout changed: %.60s", text);
}

/* All paths of one (size, folio) pair share one verified buffer. */
static void run_pair(const struct bench_opts *o, struct cell *cells, int *done,
		     int total)
{
	struct mreg_buf *buf = NULL;
	char note[96] = "";
	int p;

	if (has_reg_paths(o))
		buf = alloc_buf(o, cells[0].folio, cells[0].size, note,
				sizeof(note));
	for (p = 0; p < o->nr_paths; p++) {
		struct cell *c = &cells[p];

		progress(o, ++*done, total, c);
		if (c->path->kind == PATH_FIO) {
			fio_cell_run(o, c);
			continue;
		}
		if (!buf) {
			snprintf(c->note, sizeof(c->note), "%s", note);
			continue;
		}
		c->hist = *mreg_buf_hist(buf);
		c->verified = mreg_buf_verified(buf);
		c->pfn_runs =
			pfn_runs(mreg_buf_addr(buf), mreg_buf_length(buf));
		background_snapshot(&c->bg);
		if (c->path->kind == PATH_KBENCH)
			kbench_cell_run(o, c, buf);
		else if (c->path->kind == PATH_HEAP)
			dpdk_heap_cell_run(o, c, buf);
		else
			reg_cell_run(o, c, buf);
		background_delta(&c->bg);
		recheck_hist(c, buf);
	}
	mreg_buf_free(buf);
}

static int write_outputs(const struct bench_opts *o, const struct cell *cells,
			 int nr)
{
	char path[512];
	int ret;

	report_table(o, cells, nr);
	if (!o->out_dir)
		return 0;
	mkdir(o->out_dir, 0755);
	snprintf(path, sizeof(path), "%s/results.json", o->out_dir);
	ret = report_json(path, o, cells, nr);
	snprintf(path, sizeof(path), "%s/results.csv", o->out_dir);
	if (!ret)
		ret = report_csv(path, cells, nr);
	if (!ret)
		printf("\nwrote %s/results.{json,csv}\n", o->out_dir);
	return ret;
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	struct cell *cells;
	int s, f, p, nr, done = 0, ret;

	ret = parse_args(argc, argv, &o);
	if (ret > 0)
		return print_info(ret);
	if (ret) {
		usage(stderr);
		return 2;
	}
	/* Before any cell: DPDK's heap path needs an EAL that mreg's own
	 * dpdk domains would otherwise start without its memory events. */
	dpdk_heap_prepare(&o);
	nr = o.nr_sizes * o.nr_folios * o.nr_paths;
	cells = calloc((size_t)nr, sizeof(*cells));
	if (!cells)
		return 1;
	for (s = 0; s < o.nr_sizes; s++)
		for (f = 0; f < o.nr_folios; f++) {
			struct cell *pair =
				&cells[(s * o.nr_folios + f) * o.nr_paths];

			for (p = 0; p < o.nr_paths; p++)
				pair[p] = (struct cell){.path = &o.paths[p],
							.folio = &o.folios[f],
							.size = o.sizes[s]};
			run_pair(&o, pair, &done, nr);
		}
	ret = write_outputs(&o, cells, nr);
	free(cells);
	return ret ? 1 : 0;
}
