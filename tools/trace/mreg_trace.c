// SPDX-License-Identifier: MIT
/*
 * mreg-trace: what every process pays to register memory for DMA, on the
 * running kernel, without touching the programs: calls, bytes, pages
 * pinned, the folio orders of those pages, a log2 latency histogram and
 * the failures by errno, per process and per path (GUP, verbs, VFIO,
 * iommufd, io_uring). BPF fentry/fexit programs (mreg_trace.bpf.c),
 * loaded through a libbpf skeleton with CO-RE against the kernel's BTF.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <dirent.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "mreg_trace.h"
#include "mreg_trace.skel.h"

#ifndef MREG_VERSION_STRING
#define MREG_VERSION_STRING "unknown"
#endif

enum output { OUT_TABLE, OUT_JSON, OUT_CSV };

struct path_info {
	const char *name;
	const char *group;
	const char *funcs[2]; /* the kernel function, by version */
};

/* Order matches enum mreg_trace_path. */
static const struct path_info paths[PATH_NR] = {
	{"pup_fast", "gup", {"pin_user_pages_fast"}},
	{"gup_fast", "gup", {"get_user_pages_fast"}},
	{"pup_remote", "gup", {"pin_user_pages_remote"}},
	{"gup_longterm", "gup", {"__gup_longterm_locked"}},
	{"verbs_reg_mr", "verbs", {"ib_uverbs_reg_mr"}},
	{"verbs_umem", "verbs", {"ib_umem_get", "__ib_umem_get_va"}},
	{"vfio_map", "vfio", {"vfio_dma_do_map"}},
	{"vfio_unmap", "vfio", {"vfio_dma_do_unmap"}},
	{"iommufd_map", "iommufd", {"iommufd_ioas_map"}},
	{"iopt_map", "iommufd", {"iopt_map_user_pages"}},
	{"uring_register", "io_uring", {"io_sqe_buffers_register"}},
	{"uring_update", "io_uring", {"__io_sqe_buffers_update"}},
};

struct opts {
	double interval;
	double duration;
	pid_t pid;
	const char *comm;
	uint64_t min_bytes;
	bool want[PATH_NR];
	bool path_given;
	enum output out;
	bool verbose;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: mreg-trace [-i SECONDS] [-d SECONDS] [-p PID] [-c "
		   "COMM]\n"
		   "                  [--path LIST] [--min-bytes N] [-o "
		   "table|json|csv]\n"
		   "Paths (or groups gup, verbs, vfio, iommufd, io_uring):");
	for (int i = 0; i < PATH_NR; i++)
		fprintf(f, " %s", paths[i].name);
	fprintf(f, "\nSee mreg-trace(8).\n");
}

static int die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "mreg-trace: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static void select_paths(struct opts *o, char *list)
{
	char *tok, *save = NULL;
	bool hit;

	o->path_given = true;
	for (tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		hit = false;
		for (int i = 0; i < PATH_NR; i++)
			if (!strcmp(tok, paths[i].name) ||
			    !strcmp(tok, paths[i].group))
				o->want[i] = hit = true;
		if (!hit) {
			usage(stderr);
			die("--path: unknown path '%s'", tok);
		}
	}
}

static double parse_seconds(const char *arg, const char *opt)
{
	char *end;
	double v = strtod(arg, &end);

	if (*end || v <= 0)
		die("%s: '%s' is not a positive number of seconds", opt, arg);
	return v;
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option longs[] = {
		{"interval", required_argument, NULL, 'i'},
		{"duration", required_argument, NULL, 'd'},
		{"pid", required_argument, NULL, 'p'},
		{"comm", required_argument, NULL, 'c'},
		{"path", required_argument, NULL, 'P'},
		{"min-bytes", required_argument, NULL, 'm'},
		{"output", required_argument, NULL, 'o'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0},
	};
	char *end;
	int c;

	for (int i = 0; i < PATH_NR; i++)
		o->want[i] = true;
	while ((c = getopt_long(argc, argv, "i:d:p:c:o:vhV", longs, NULL)) !=
	       -1) {
		switch (c) {
		case 'i':
			o->interval = parse_seconds(optarg, "-i");
			break;
		case 'd':
			o->duration = parse_seconds(optarg, "-d");
			break;
		case 'p':
			o->pid = (pid_t)strtol(optarg, &end, 10);
			if (*end || o->pid <= 0)
				die("--pid: '%s' is not a process id", optarg);
			break;
		case 'c':
			if (strlen(optarg) >= MREG_TRACE_COMM_LEN)
				die("--comm: '%s' is longer than a comm (%d)",
				    optarg, MREG_TRACE_COMM_LEN - 1);
			o->comm = optarg;
			break;
		case 'P':
			for (int i = 0; i < PATH_NR; i++)
				o->want[i] = false;
			select_paths(o, optarg);
			break;
		case 'm':
			errno = 0;
			o->min_bytes = strtoull(optarg, &end, 0);
			if (errno || *end)
				die("--min-bytes: '%s' is not a byte count",
				    optarg);
			break;
		case 'o':
			if (!strcmp(optarg, "table"))
				o->out = OUT_TABLE;
			else if (!strcmp(optarg, "json"))
				o->out = OUT_JSON;
			else if (!strcmp(optarg, "csv"))
				o->out = OUT_CSV;
			else
				die("-o: '%s' is not table, json or csv",
				    optarg);
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'V':
			printf("mreg-trace %s\n", MREG_VERSION_STRING);
			exit(0);
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc) {
		usage(stderr);
		die("unexpected argument '%s'", argv[optind]);
	}
}

/* ---- which functions this kernel lets us attach to --------------------- */

static struct btf *vmlinux_btf;

/* Loaded modules' BTF, read once: the search below runs for each path. */
static struct module_btf {
	struct btf *btf;
} * modules;
static size_t nr_modules;

static void load_module_btfs(void)
{
	struct dirent *d;
	char path[300];
	struct btf *b;
	DIR *dir;

	dir = opendir("/sys/kernel/btf");
	if (!dir)
		return;
	while ((d = readdir(dir))) {
		if (d->d_name[0] == '.' || !strcmp(d->d_name, "vmlinux"))
			continue;
		snprintf(path, sizeof(path), "/sys/kernel/btf/%s", d->d_name);
		b = btf__parse_split(path, vmlinux_btf);
		if (!b)
			continue;
		modules = realloc(modules, (nr_modules + 1) * sizeof(*modules));
		if (!modules)
			die("out of memory");
		modules[nr_modules++].btf = b;
	}
	closedir(dir);
}

/* Is @func in the kernel's BTF or a loaded module's? */
static bool btf_has_func(const char *func)
{
	if (btf__find_by_name_kind(vmlinux_btf, func, BTF_KIND_FUNC) > 0)
		return true;
	for (size_t i = 0; i < nr_modules; i++)
		if (btf__find_by_name_kind(modules[i].btf, func,
					   BTF_KIND_FUNC) > 0)
			return true;
	return false;
}

struct prog_pair {
	struct bpf_program *in, *out;
};

static struct prog_pair progs_of(struct mreg_trace_bpf *s, int path)
{
	struct bpf_program *p[PATH_NR][2] = {
		{s->progs.pup_fast_in, s->progs.pup_fast_out},
		{s->progs.gup_fast_in, s->progs.gup_fast_out},
		{s->progs.pup_remote_in, s->progs.pup_remote_out},
		{s->progs.gup_longterm_in, s->progs.gup_longterm_out},
		{s->progs.verbs_reg_mr_in, s->progs.verbs_reg_mr_out},
		{s->progs.verbs_umem_in, s->progs.verbs_umem_out},
		{s->progs.vfio_map_in, s->progs.vfio_map_out},
		{s->progs.vfio_unmap_in, s->progs.vfio_unmap_out},
		{s->progs.iommufd_map_in, s->progs.iommufd_map_out},
		{s->progs.iopt_map_in, s->progs.iopt_map_out},
		{s->progs.uring_register_in, s->progs.uring_register_out},
		{s->progs.uring_update_in, s->progs.uring_update_out},
	};

	return (struct prog_pair){p[path][0], p[path][1]};
}

/* Point each wanted path at the function this kernel has, or leave it
 * out saying why. Returns the number of paths attached. */
static int choose_programs(struct mreg_trace_bpf *s, const struct opts *o,
			   bool *active)
{
	int n = 0;

	for (int i = 0; i < PATH_NR; i++) {
		struct prog_pair pp = progs_of(s, i);
		const char *func = NULL;

		active[i] = false;
		for (int v = 0; o->want[i] && v < 2 && paths[i].funcs[v]; v++)
			if (btf_has_func(paths[i].funcs[v])) {
				func = paths[i].funcs[v];
				break;
			}
		if (!func) {
			bpf_program__set_autoload(pp.in, false);
			bpf_program__set_autoload(pp.out, false);
			if (o->want[i] && (o->path_given || o->verbose))
				fprintf(stderr,
					"mreg-trace: path %s: %s is not in "
					"this "
					"kernel's BTF (its module not loaded, "
					"or the function inlined): not "
					"traced\n",
					paths[i].name, paths[i].funcs[0]);
			continue;
		}
		if (strcmp(func, paths[i].funcs[0])) {
			bpf_program__set_attach_target(pp.in, 0, func);
			bpf_program__set_attach_target(pp.out, 0, func);
		}
		active[i] = true;
		n++;
	}
	/* VFIO's map and unmap inlined into its ioctl: trace the ioctl. */
	bool vfio_inlined =
		(o->want[PATH_VFIO_MAP] && !active[PATH_VFIO_MAP]) ||
		(o->want[PATH_VFIO_UNMAP] && !active[PATH_VFIO_UNMAP]);
	if (vfio_inlined && !active[PATH_VFIO_MAP] &&
	    !active[PATH_VFIO_UNMAP] &&
	    btf_has_func("vfio_iommu_type1_ioctl")) {
		for (int i = PATH_VFIO_MAP; i <= PATH_VFIO_UNMAP; i++)
			if (o->want[i]) {
				active[i] = true;
				n++;
				if (o->verbose)
					fprintf(stderr,
						"mreg-trace: path %s: through "
						"vfio_iommu_type1_ioctl()\n",
						paths[i].name);
			}
	} else {
		bpf_program__set_autoload(s->progs.vfio_ioctl_in, false);
		bpf_program__set_autoload(s->progs.vfio_ioctl_out, false);
	}
	/* io_uring's update inlined into io_register_rsrc_update(). */
	if (o->want[PATH_URING_UPDATE] && !active[PATH_URING_UPDATE] &&
	    btf_has_func("io_register_rsrc_update")) {
		active[PATH_URING_UPDATE] = true;
		n++;
	} else {
		bpf_program__set_autoload(s->progs.uring_rsrc_update_in, false);
		bpf_program__set_autoload(s->progs.uring_rsrc_update_out, false);
	}
	/* io_uring's per-buffer byte source follows its paths. */
	if (!(active[PATH_URING_REGISTER] || active[PATH_URING_UPDATE]) ||
	    !btf_has_func("io_sqe_buffer_register"))
		bpf_program__set_autoload(s->progs.uring_buffer_in, false);
	return n;
}

/* ---- output -------------------------------------------------------------- */

struct row {
	struct mreg_trace_key key;
	struct mreg_trace_stat st;
};

static int cmp_rows(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->key.tgid != y->key.tgid)
		return x->key.tgid < y->key.tgid ? -1 : 1;
	return (int)x->key.path - (int)y->key.path;
}

static size_t collect(int map_fd, struct row **rows)
{
	struct mreg_trace_key key, next, *prev = NULL;
	size_t n = 0, cap = 0;

	*rows = NULL;
	while (!bpf_map_get_next_key(map_fd, prev, &next)) {
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			*rows = realloc(*rows, cap * sizeof(**rows));
			if (!*rows)
				die("out of memory");
		}
		if (!bpf_map_lookup_elem(map_fd, &next, &(*rows)[n].st)) {
			(*rows)[n].key = next;
			n++;
		}
		key = next;
		prev = &key;
	}
	qsort(*rows, n, sizeof(**rows), cmp_rows);
	return n;
}

static const char *size_name(unsigned int order, char *buf, size_t len)
{
	__u64 bytes = 4096ull << order;

	if (bytes >= 1ull << 30)
		snprintf(buf, len, "%lluG", bytes >> 30);
	else if (bytes >= 1ull << 20)
		snprintf(buf, len, "%lluM", bytes >> 20);
	else
		snprintf(buf, len, "%lluK", bytes >> 10);
	return buf;
}

/* "64K:16384 4K:2": pages per folio size, largest first. */
static void folio_text(const struct mreg_trace_stat *st, char *buf, size_t len)
{
	size_t used = 0;
	char sz[16];

	buf[0] = '\0';
	for (int o = MREG_TRACE_ORDERS - 1; o >= 0 && used < len; o--)
		if (st->order_pages[o])
			used += (size_t)snprintf(
				buf + used, len - used, "%s%s:%llu",
				used ? " " : "",
				size_name((unsigned int)o, sz, sizeof(sz)),
				st->order_pages[o]);
	if (!used)
		snprintf(buf, len, "-");
}

static void errors_text(int fd, const struct mreg_trace_key *k, char *buf,
			size_t len, bool json)
{
	struct mreg_trace_err_key key, next, *prev = NULL;
	size_t used = 0;
	__u64 count;

	buf[0] = '\0';
	while (!bpf_map_get_next_key(fd, prev, &next) && used < len) {
		if (next.tgid == k->tgid && next.path == k->path &&
		    !bpf_map_lookup_elem(fd, &next, &count))
			used += (size_t)snprintf(
				buf + used, len - used,
				json ? "%s\"%s\": %llu" : "%s%s:%llu",
				used ? (json ? ", " : " ") : "",
				strerrorname_np(next.err)
					? strerrorname_np(next.err)
					: "E?",
				count);
		key = next;
		prev = &key;
	}
}

static double avg_us(const struct mreg_trace_stat *st)
{
	return st->calls ? (double)st->ns / (double)st->calls / 1000.0 : 0;
}

static void print_table(const struct row *r, size_t n, int err_fd)
{
	char folios[256], errs[256];

	printf("%-7s %-15s %-14s %8s %14s %12s %6s %12s  %s\n", "PID", "COMM",
	       "PATH", "CALLS", "BYTES", "PAGES", "ERRS", "AVG_US", "FOLIOS");
	for (size_t i = 0; i < n; i++) {
		const struct mreg_trace_stat *st = &r[i].st;

		folio_text(st, folios, sizeof(folios));
		printf("%-7u %-15.15s %-14s %8llu %14llu"
		       " %12llu %6llu %12.1f  %s\n",
		       r[i].key.tgid, st->comm, paths[r[i].key.path].name,
		       st->calls, st->bytes, st->pages, st->errors, avg_us(st),
		       folios);
		if (st->errors) {
			errors_text(err_fd, &r[i].key, errs, sizeof(errs),
				    false);
			printf("%46s errors: %s\n", "", errs);
		}
	}
}

static void print_lat_json(const struct mreg_trace_stat *st)
{
	bool first = true;

	printf("\"latency_log2_ns\": {");
	for (int s = 0; s < MREG_TRACE_LAT_SLOTS; s++)
		if (st->lat[s]) {
			printf("%s\"%d\": %llu", first ? "" : ", ", s,
			       st->lat[s]);
			first = false;
		}
	printf("}");
}

static void print_json(const struct row *r, size_t n, int err_fd)
{
	char errs[512], sz[16];
	bool first;

	printf("[");
	for (size_t i = 0; i < n; i++) {
		const struct mreg_trace_stat *st = &r[i].st;

		printf("%s\n  {\"pid\": %u, \"comm\": \"%s\", \"path\": "
		       "\"%s\", "
		       "\"calls\": %llu, \"bytes\": %llu"
		       ", \"pages\": %llu, \"errors\": %llu"
		       ", \"ns\": %llu, \"folio_pages\": {",
		       i ? "," : "", r[i].key.tgid, st->comm,
		       paths[r[i].key.path].name, st->calls, st->bytes,
		       st->pages, st->errors, st->ns);
		first = true;
		for (int o = 0; o < MREG_TRACE_ORDERS; o++)
			if (st->order_pages[o]) {
				printf("%s\"%s\": %llu", first ? "" : ", ",
				       size_name((unsigned int)o, sz,
						 sizeof(sz)),
				       st->order_pages[o]);
				first = false;
			}
		printf("}, ");
		print_lat_json(st);
		errors_text(err_fd, &r[i].key, errs, sizeof(errs), true);
		printf(", \"errnos\": {%s}}", errs);
	}
	printf("\n]\n");
}

static void print_csv(const struct row *r, size_t n, int err_fd)
{
	char folios[256], errs[256];

	printf("pid,comm,path,calls,bytes,pages,errors,ns,folio_pages,"
	       "errnos\n");
	for (size_t i = 0; i < n; i++) {
		const struct mreg_trace_stat *st = &r[i].st;

		folio_text(st, folios, sizeof(folios));
		errors_text(err_fd, &r[i].key, errs, sizeof(errs), false);
		printf("%u,%s,%s,%llu,%llu,%llu,%llu"
		       ",%llu,%s,%s\n",
		       r[i].key.tgid, st->comm, paths[r[i].key.path].name,
		       st->calls, st->bytes, st->pages, st->errors, st->ns,
		       folios, errs);
	}
}

static void report(struct mreg_trace_bpf *s, enum output out)
{
	struct row *rows;
	size_t n = collect(bpf_map__fd(s->maps.stats), &rows);
	int err_fd = bpf_map__fd(s->maps.errors);

	if (out == OUT_JSON)
		print_json(rows, n, err_fd);
	else if (out == OUT_CSV)
		print_csv(rows, n, err_fd);
	else
		print_table(rows, n, err_fd);
	fflush(stdout);
	free(rows);
}

/* ---- setup ----------------------------------------------------------------
 */

static int quiet_libbpf(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static void check_prerequisites(void)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK))
		die("this kernel has no BTF (/sys/kernel/btf/vmlinux: %s): "
		    "mreg-trace needs CONFIG_DEBUG_INFO_BTF",
		    strerror(errno));
	vmlinux_btf = btf__load_vmlinux_btf();
	if (!vmlinux_btf)
		die("cannot read the kernel's BTF: %s", strerror(errno));
	load_module_btfs();
}

static struct mreg_trace_bpf *load(const struct opts *o)
{
	struct mreg_trace_bpf *s;
	bool active[PATH_NR];
	int err;

	s = mreg_trace_bpf__open();
	if (!s)
		die("cannot open the BPF object: %s", strerror(errno));
	s->rodata->filter_tgid = (uint32_t)o->pid;
	s->rodata->min_bytes = o->min_bytes;
	if (o->comm)
		strncpy((char *)s->rodata->filter_comm, o->comm,
			MREG_TRACE_COMM_LEN - 1);
	if (!choose_programs(s, o, active))
		die("none of the paths asked for can be traced on this kernel");
	err = mreg_trace_bpf__load(s);
	if (err) {
		if ((err == -EPERM || errno == EPERM) && geteuid())
			die("loading BPF programs was refused (%s): mreg-trace "
			    "needs root, or CAP_BPF and CAP_PERFMON",
			    strerror(-err));
		if (err == -EPERM || errno == EPERM)
			die("the kernel refused BPF tracing programs even to "
			    "root (%s): lockdown, or a sandbox without BPF "
			    "tracing",
			    strerror(-err));
		die("loading the BPF programs failed: %s", strerror(-err));
	}
	err = mreg_trace_bpf__attach(s);
	if (err)
		die("attaching failed: %s (a kernel without fentry "
		    "trampolines?)",
		    strerror(-err));
	if (o->verbose)
		for (int i = 0; i < PATH_NR; i++)
			if (active[i])
				fprintf(stderr, "mreg-trace: tracing %s\n",
					paths[i].name);
	return s;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct opts o = {0};
	struct mreg_trace_bpf *s;
	double start, next;

	parse(argc, argv, &o);
	libbpf_set_print(quiet_libbpf);
	check_prerequisites();
	s = load(&o);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	fprintf(stderr, "mreg-trace: ready\n");
	start = now();
	next = o.interval ? start + o.interval : 0;
	while (!stop && !(o.duration && now() - start >= o.duration)) {
		usleep(20000);
		if (next && now() >= next) {
			report(s, OUT_TABLE);
			printf("\n");
			next += o.interval;
		}
	}
	report(s, o.out);
	mreg_trace_bpf__destroy(s);
	for (size_t i = 0; i < nr_modules; i++)
		btf__free(modules[i].btf);
	free(modules);
	btf__free(vmlinux_btf);
	return 0;
}
