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
	/* 7.x: ib_umem_get_desc(), the exported entry (choose_fallbacks());
	 * __ib_umem_get_va() has an out-of-line copy that callers skip. */
	{"verbs_umem", "verbs", {"ib_umem_get"}},
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
	bool kprobes; /* --kprobes: kprobes even where fentry would do */
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
		   "                  [--kprobes] [-v]\n"
		   "Paths (or groups gup, verbs, vfio, iommufd, io_uring):");
	for (int i = 0; i < PATH_NR; i++)
		fprintf(f, " %s", paths[i].name);
	fprintf(f, "\nSee mreg-trace(8).\n");
}

/* The message on stderr, then exit: 1 for what the kernel refuses or
 * lacks, 2 for a bad argument (as for usage). */
static __attribute__((noreturn)) void vfail(int status, const char *fmt,
					    va_list ap)
{
	fprintf(stderr, "mreg-trace: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	exit(status);
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(1, fmt, ap);
}

static void bad_arg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void bad_arg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(2, fmt, ap);
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
			bad_arg("--path: unknown path '%s'", tok);
		}
	}
}

static double parse_seconds(const char *arg, const char *opt)
{
	char *end;
	double v = strtod(arg, &end);

	if (*end || v <= 0)
		bad_arg("%s: '%s' is not a positive number of seconds", opt,
			arg);
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
		{"kprobes", no_argument, NULL, 'K'},
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
				bad_arg("--pid: '%s' is not a process id",
					optarg);
			break;
		case 'c':
			if (strlen(optarg) >= MREG_TRACE_COMM_LEN)
				bad_arg("--comm: '%s' is longer than a comm "
					"(%d)",
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
				bad_arg("--min-bytes: '%s' is not a byte count",
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
				bad_arg("-o: '%s' is not table, json or csv",
					optarg);
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'K':
			o->kprobes = true;
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
		bad_arg("unexpected argument '%s'", argv[optind]);
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
			bad_arg("out of memory");
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

/* Kernel functions by name in /proc/kallsyms, read once: where a path
 * cannot take fentry, a kprobe needs only the symbol. */
static const char *const ksym_wanted[] = {
	"pin_user_pages_fast",	   "get_user_pages_fast",
	"pin_user_pages_remote",   "__gup_longterm_locked",
	"ib_uverbs_reg_mr",	   "ib_umem_get",
	"vfio_dma_do_map",	   "vfio_dma_do_unmap",
	"iommufd_ioas_map",	   "iopt_map_user_pages",
	"io_sqe_buffers_register", "__io_sqe_buffers_update",
	"vfio_iommu_type1_ioctl",  "io_register_rsrc_update",
	"io_sqe_buffer_register",  "ib_umem_get_desc",
};
#define NR_KSYM (sizeof(ksym_wanted) / sizeof(ksym_wanted[0]))
static bool ksym_found[NR_KSYM];

/* One pass, cheap per line: 150k lines take seconds under emulation
 * with sscanf(). Lines are "ADDR TYPE NAME[\t[module]]". */
static void read_kallsyms(void)
{
	static bool done;
	char line[512], *type, *name, *end;
	FILE *f;

	if (done)
		return;
	done = true;
	f = fopen("/proc/kallsyms", "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		type = strchr(line, ' ');
		if (!type || (type[1] != 't' && type[1] != 'T') ||
		    type[2] != ' ')
			continue;
		name = type + 3;
		end = name + strcspn(name, "\t\n");
		*end = '\0';
		for (size_t i = 0; i < NR_KSYM; i++)
			if (name[0] == ksym_wanted[i][0] &&
			    !strcmp(name, ksym_wanted[i]))
				ksym_found[i] = true;
	}
	fclose(f);
}

static bool ksym_has(const char *func)
{
	read_kallsyms();
	for (size_t i = 0; i < NR_KSYM; i++)
		if (!strcmp(func, ksym_wanted[i]))
			return ksym_found[i];
	return false;
}

struct prog_pair {
	struct bpf_program *in, *out;
};

static struct prog_pair fentry_of(struct mreg_trace_bpf *s, int path)
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

static struct prog_pair kprobe_of(struct mreg_trace_bpf *s, int path)
{
	struct bpf_program *p[PATH_NR][2] = {
		{s->progs.k_pup_fast_in, s->progs.k_pup_fast_out},
		{s->progs.k_gup_fast_in, s->progs.k_gup_fast_out},
		{s->progs.k_pup_remote_in, s->progs.k_pup_remote_out},
		{s->progs.k_gup_longterm_in, s->progs.k_gup_longterm_out},
		{s->progs.k_verbs_reg_mr_in, s->progs.k_verbs_reg_mr_out},
		{s->progs.k_verbs_umem_in, s->progs.k_verbs_umem_out},
		{s->progs.k_vfio_map_in, s->progs.k_vfio_map_out},
		{s->progs.k_vfio_unmap_in, s->progs.k_vfio_unmap_out},
		{s->progs.k_iommufd_map_in, s->progs.k_iommufd_map_out},
		{s->progs.k_iopt_map_in, s->progs.k_iopt_map_out},
		{s->progs.k_uring_register_in, s->progs.k_uring_register_out},
		{s->progs.k_uring_update_in, s->progs.k_uring_update_out},
	};

	return (struct prog_pair){p[path][0], p[path][1]};
}

/* Kprobe pairs to attach by hand after load: their function can differ
 * from the one in their section name). */
static struct kattach {
	struct prog_pair pp;
	const char *func;
	bool has_out;
} kattach[PATH_NR + 4];
static size_t nr_kattach;
static struct bpf_link *klinks[128];
static size_t nr_klinks;

static void set_pair(struct prog_pair pp, bool on)
{
	if (pp.in)
		bpf_program__set_autoload(pp.in, on);
	if (pp.out)
		bpf_program__set_autoload(pp.out, on);
}

/*
 * One pair of programs for @func: fentry/fexit where its BTF is there
 * (and --kprobes is not given), else a kprobe pair where kallsyms has it.
 * Returns "fentry", "kprobe" or NULL.
 */
static const char *pick(const struct opts *o, struct prog_pair fe,
			struct prog_pair kp, const char *func, bool fe_target)
{
	if (!o->kprobes && btf_has_func(func)) {
		set_pair(kp, false);
		if (fe_target) {
			bpf_program__set_attach_target(fe.in, 0, func);
			if (fe.out)
				bpf_program__set_attach_target(fe.out, 0, func);
		}
		return "fentry";
	}
	set_pair(fe, false);
	if (!ksym_has(func)) {
		set_pair(kp, false);
		return NULL;
	}
	bpf_program__set_autoattach(kp.in, false);
	if (kp.out)
		bpf_program__set_autoattach(kp.out, false);
	kattach[nr_kattach++] =
		(struct kattach){.pp = kp, .func = func, .has_out = kp.out};
	return "kprobe";
}

static void say(const struct opts *o, const char *path, const char *how,
		const char *func)
{
	if (o->verbose)
		fprintf(stderr, "mreg-trace: path %s: %s on %s()\n", path, how,
			func);
}

/*
 * Where VFIO's map/unmap or io_uring's update are inlined, the function
 * around them; and io_uring's per-buffer byte source.
 */
static int choose_fallbacks(struct mreg_trace_bpf *s, const struct opts *o,
			    bool *active)
{
	struct prog_pair vfe = {s->progs.vfio_ioctl_in,
				s->progs.vfio_ioctl_out};
	struct prog_pair vkp = {s->progs.k_vfio_ioctl_in,
				s->progs.k_vfio_ioctl_out};
	struct prog_pair ufe = {s->progs.uring_rsrc_update_in,
				s->progs.uring_rsrc_update_out};
	struct prog_pair ukp = {s->progs.k_uring_rsrc_update_in,
				s->progs.k_uring_rsrc_update_out};
	struct prog_pair dfe = {s->progs.verbs_umem_desc_in,
				s->progs.verbs_umem_desc_out};
	struct prog_pair dkp = {s->progs.k_verbs_umem_desc_in,
				s->progs.k_verbs_umem_desc_out};
	struct prog_pair bfe = {s->progs.uring_buffer_in, NULL};
	struct prog_pair bkp = {s->progs.k_uring_buffer_in, NULL};
	const char *how;
	int n = 0;

	if ((o->want[PATH_VFIO_MAP] || o->want[PATH_VFIO_UNMAP]) &&
	    !active[PATH_VFIO_MAP] && !active[PATH_VFIO_UNMAP] &&
	    (how = pick(o, vfe, vkp, "vfio_iommu_type1_ioctl", false))) {
		for (int i = PATH_VFIO_MAP; i <= PATH_VFIO_UNMAP; i++)
			if (o->want[i]) {
				active[i] = true;
				n++;
				say(o, paths[i].name, how,
				    "vfio_iommu_type1_ioctl");
			}
	} else {
		set_pair(vfe, false);
		set_pair(vkp, false);
	}
	if (o->want[PATH_VERBS_UMEM] && !active[PATH_VERBS_UMEM] &&
	    (how = pick(o, dfe, dkp, "ib_umem_get_desc", false))) {
		active[PATH_VERBS_UMEM] = true;
		n++;
		say(o, paths[PATH_VERBS_UMEM].name, how, "ib_umem_get_desc");
	} else {
		set_pair(dfe, false);
		set_pair(dkp, false);
	}
	if (o->want[PATH_URING_UPDATE] && !active[PATH_URING_UPDATE] &&
	    (how = pick(o, ufe, ukp, "io_register_rsrc_update", false))) {
		active[PATH_URING_UPDATE] = true;
		n++;
		say(o, paths[PATH_URING_UPDATE].name, how,
		    "io_register_rsrc_update");
	} else {
		set_pair(ufe, false);
		set_pair(ukp, false);
	}
	if (!(active[PATH_URING_REGISTER] || active[PATH_URING_UPDATE]) ||
	    !pick(o, bfe, bkp, "io_sqe_buffer_register", false)) {
		set_pair(bfe, false);
		set_pair(bkp, false);
	}
	return n;
}

/* Point each wanted path at the function this kernel has, or leave it
 * out saying why. Returns the number of paths attached. */
static int choose_programs(struct mreg_trace_bpf *s, const struct opts *o,
			   bool *active)
{
	const char *how = NULL, *func;
	int n = 0;

	for (int i = 0; i < PATH_NR; i++) {
		active[i] = false;
		how = NULL;
		func = paths[i].funcs[0];
		for (int v = 0;
		     o->want[i] && !how && v < 2 && paths[i].funcs[v]; v++) {
			func = paths[i].funcs[v];
			how = pick(o, fentry_of(s, i), kprobe_of(s, i), func,
				   v > 0);
		}
		if (!o->want[i]) {
			set_pair(fentry_of(s, i), false);
			set_pair(kprobe_of(s, i), false);
		}
		if (how) {
			active[i] = true;
			n++;
			say(o, paths[i].name, how, func);
		} else if (o->want[i] && (o->path_given || o->verbose) &&
			   i != PATH_VFIO_MAP && i != PATH_VFIO_UNMAP &&
			   i != PATH_URING_UPDATE && i != PATH_VERBS_UMEM) {
			fprintf(stderr,
				"mreg-trace: path %s: %s is neither in this "
				"kernel's BTF nor in kallsyms (its module not "
				"loaded, or the function inlined): not "
				"traced\n",
				paths[i].name, paths[i].funcs[0]);
		}
	}
	n += choose_fallbacks(s, o, active);
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

/* EFAULT, or E512 for what libc has no name for (the kernel's own
 * ERESTARTSYS and kin). */
static const char *errno_name(int err)
{
	static char buf[16];
	const char *name = strerrorname_np(err);

	if (name)
		return name;
	snprintf(buf, sizeof(buf), "E%d", err);
	return buf;
}

/* A comm for JSON or CSV: quotes, backslashes and controls escaped (a
 * process names itself). */
static const char *escaped(const char *comm, bool json)
{
	static char buf[8 * MREG_TRACE_COMM_LEN];
	size_t o = 0;

	for (const char *c = comm; *c && c < comm + MREG_TRACE_COMM_LEN; c++) {
		unsigned char ch = (unsigned char)*c;

		if (json && (ch == '"' || ch == '\\'))
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "\\%c",
					      ch);
		else if (ch < 0x20 || ch == 0x7f || (!json && ch == ','))
			o += (size_t)snprintf(buf + o, sizeof(buf) - o,
					      json ? "\\u%04x" : "%%%02x", ch);
		else
			buf[o++] = (char)ch;
	}
	buf[o] = '\0';
	return buf;
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
				errno_name(next.err), count);
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
		       i ? "," : "", r[i].key.tgid, escaped(st->comm, true),
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
		       r[i].key.tgid, escaped(st->comm, false),
		       paths[r[i].key.path].name, st->calls, st->bytes,
		       st->pages, st->errors, st->ns, folios, errs);
	}
}

static void report(struct mreg_trace_bpf *s, enum output out)
{
	struct row *rows;
	size_t n = collect(bpf_map__fd(s->maps.stats), &rows);
	int err_fd = bpf_map__fd(s->maps.errors);
	__u64 dropped = 0;
	__u32 zero = 0;

	if (out == OUT_JSON)
		print_json(rows, n, err_fd);
	else if (out == OUT_CSV)
		print_csv(rows, n, err_fd);
	else
		print_table(rows, n, err_fd);
	fflush(stdout);
	free(rows);
	if (!bpf_map_lookup_elem(bpf_map__fd(s->maps.dropped), &zero,
				 &dropped) &&
	    dropped)
		fprintf(stderr,
			"mreg-trace: %llu calls not recorded: the table of "
			"(process, path) is full\n",
			dropped);
}

/* The live table every -i seconds: on stdout, or on stderr when stdout
 * carries the JSON or CSV report at exit. */
static void interval_table(struct mreg_trace_bpf *s, enum output out)
{
	struct row *rows;
	size_t n;
	int saved = -1;

	if (out != OUT_TABLE) {
		fflush(stdout);
		saved = dup(STDOUT_FILENO);
		dup2(STDERR_FILENO, STDOUT_FILENO);
	}
	n = collect(bpf_map__fd(s->maps.stats), &rows);
	print_table(rows, n, bpf_map__fd(s->maps.errors));
	printf("\n");
	fflush(stdout);
	free(rows);
	if (saved >= 0) {
		dup2(saved, STDOUT_FILENO);
		close(saved);
	}
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

/*
 * Return programs before entry programs: a call already running when
 * its entry program attaches would otherwise be seen entering and never
 * leaving. The skeleton's own attach goes in section order.
 */
static void attach_returns_first(struct mreg_trace_bpf *s)
{
	struct bpf_program *prog;
	struct bpf_link *l;
	const char *sec;

	for (int pass = 0; pass < 2; pass++)
		bpf_object__for_each_program(prog, s->obj)
		{
			sec = bpf_program__section_name(prog);
			if (!bpf_program__autoload(prog) ||
			    !bpf_program__autoattach(prog) ||
			    (pass == 0) != !strncmp(sec, "fexit/", 6))
				continue;
			l = bpf_program__attach(prog);
			if (!l)
				die("attaching %s failed: %s (a kernel without "
				    "fentry trampolines? --kprobes uses "
				    "kprobes instead)",
				    sec, strerror(errno));
			klinks[nr_klinks++] = l;
		}
}

static void attach_kprobes(void)
{
	struct bpf_link *l;

	for (size_t i = 0; i < nr_kattach; i++) {
		const struct kattach *k = &kattach[i];

		l = bpf_program__attach_kprobe(k->pp.in, false, k->func);
		if (!l)
			die("kprobe on %s(): %s", k->func, strerror(errno));
		klinks[nr_klinks++] = l;
		if (!k->has_out)
			continue;
		l = bpf_program__attach_kprobe(k->pp.out, true, k->func);
		if (!l)
			die("kretprobe on %s(): %s", k->func, strerror(errno));
		klinks[nr_klinks++] = l;
	}
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
	s->rodata->want_paths = 0;
	for (int i = 0; i < PATH_NR; i++)
		if (o->want[i])
			s->rodata->want_paths |= 1u << i;
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
	attach_returns_first(s);
	attach_kprobes();
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
			interval_table(s, o.out);
			next += o.interval;
		}
	}
	report(s, o.out);
	for (size_t i = 0; i < nr_klinks; i++)
		bpf_link__destroy(klinks[i]);
	mreg_trace_bpf__destroy(s);
	for (size_t i = 0; i < nr_modules; i++)
		btf__free(modules[i].btf);
	free(modules);
	btf__free(vmlinux_btf);
	return 0;
}
