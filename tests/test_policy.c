// SPDX-License-Identifier: MIT
/*
 * The allocator writes sysfs only when asked (MREG_BUF_SET_POLICY), and
 * then narrows the THP policy (or tops up the hugetlb pool) only while a
 * buffer faults in: afterwards every sysfs file reads as before, whether
 * the allocation worked or failed halfway, and even when the process was
 * killed halfway, once the next run has taken the lock.
 *
 *   test_policy [crash]    crash: only the kill, record and lock cases
 *
 * MREG_POLICY_KILL_MB (default 512) sizes the buffers that are killed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tcommon.h"

#define THP	 "/sys/kernel/mm/transparent_hugepage"
#define HUGETLB	 "/sys/kernel/mm/hugepages"
#define SNAP_MAX 16384

#define POLICY_FILES 96

/* A policy file's whole contents, newline included. */
struct pfile {
	char path[160];
	char raw[128];
};

struct policy {
	int nr;
	struct pfile f[POLICY_FILES];
};

static void add_file(struct policy *p, const char *path)
{
	struct pfile *f = &p->f[p->nr];
	FILE *fp;
	size_t n;

	if (p->nr == POLICY_FILES || !(fp = fopen(path, "re")))
		return;
	n = fread(f->raw, 1, sizeof(f->raw) - 1, fp);
	fclose(fp);
	f->raw[n] = '\0';
	snprintf(f->path, sizeof(f->path), "%s", path);
	p->nr++;
}

/* Every entry of @dir matching @prefix, with @files[] below it. */
static void add_dir(struct policy *p, const char *dir, const char *prefix,
		    const char *const *files, int nr)
{
	struct dirent *de;
	char path[512];
	DIR *d = opendir(dir);
	int i;

	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, prefix, strlen(prefix)))
			continue;
		for (i = 0; i < nr; i++) {
			snprintf(path, sizeof(path), "%s/%s/%s", dir,
				 de->d_name, files[i]);
			add_file(p, path);
		}
	}
	if (d)
		closedir(d);
}

/* Every policy file the allocator may touch, THP and hugetlb. */
static void policy_read(struct policy *p)
{
	static const char *const thp[] = {"enabled", "shmem_enabled"};
	static const char *const hugetlb[] = {"nr_hugepages"};

	p->nr = 0;
	add_file(p, THP "/enabled");
	add_file(p, THP "/shmem_enabled");
	add_dir(p, THP, "hugepages-", thp, 2);
	add_dir(p, HUGETLB, "hugepages-", hugetlb, 1);
}

static void snapshot(char *snap)
{
	static struct policy p;
	size_t used = 0;
	int i;

	policy_read(&p);
	snap[0] = '\0';
	for (i = 0; i < p.nr && used < SNAP_MAX; i++)
		used += (size_t)snprintf(snap + used, SNAP_MAX - used, "%s=%s",
					 p.f[i].path, p.f[i].raw);
}

static const struct pfile *find(const struct policy *p, const char *path)
{
	int i;

	for (i = 0; i < p->nr; i++)
		if (!strcmp(p->f[i].path, path))
			return &p->f[i];
	return NULL;
}

/* Print every file of @now that does not read as in @was; return how
 * many. */
static int policy_diff(const struct policy *was, const struct policy *now)
{
	const struct pfile *cur;
	int i, nr = 0;

	for (i = 0; i < was->nr; i++) {
		cur = find(now, was->f[i].path);
		if (cur && !strcmp(was->f[i].raw, cur->raw))
			continue;
		printf("  %s: %.*s -> %.*s\n", was->f[i].path,
		       (int)strcspn(was->f[i].raw, "\n"), was->f[i].raw,
		       cur ? (int)strcspn(cur->raw, "\n") : 4,
		       cur ? cur->raw : "gone");
		nr++;
	}
	return nr + (was->nr != now->nr);
}

/* The test's own restore, without the library (which may be the one
 * under test): the bracketed choice, or the number.  Return: how many
 * files it had to write. */
static int put_back(const struct policy *p)
{
	static struct policy now;
	const struct pfile *cur;
	char val[128];
	int i, nr = 0;
	FILE *fp;

	policy_read(&now);
	for (i = 0; i < p->nr; i++) {
		const char *raw = p->f[i].raw, *open = strchr(raw, '[');

		cur = find(&now, p->f[i].path);
		if (cur && !strcmp(raw, cur->raw))
			continue;
		snprintf(val, sizeof(val), "%.*s",
			 open ? (int)strcspn(open + 1, "]")
			      : (int)strcspn(raw, "\n"),
			 open ? open + 1 : raw);
		fp = fopen(p->f[i].path, "we");
		if (fp) {
			fputs(val, fp);
			fclose(fp);
		}
		nr++;
	}
	return nr;
}

static int alloc_every_case(void)
{
	struct t_folio cases[32];
	struct mreg_buf *buf;
	uint32_t backing;
	int n, i;

	for (backing = MREG_BACKING_ANON; backing <= MREG_BACKING_SHMEM;
	     backing++) {
		n = t_folio_cases(cases, 32, backing);
		for (i = 0; i < n; i++) {
			int ret = t_buf(&cases[i], 4u << 20, &buf);

			if (ret == -EOPNOTSUPP) {
				printf("  %s backing %u: not offered by this "
				       "kernel: %s\n",
				       cases[i].name, backing,
				       mreg_last_error());
				continue;
			}
			T_CHECK(!ret, "%s: %s", cases[i].name,
				mreg_last_error());
			mreg_buf_free(buf);
		}
	}
	return T_PASS;
}

/*
 * The small size the narrowing cases use: 64 kB mTHP, or before mTHP
 * (6.8) 4 kB, which narrows the one top-level knob to never.
 */
static uint64_t small_folio(void)
{
	return access(THP "/hugepages-64kB/enabled", F_OK) ? 4096 : 65536;
}

/* In a child whose address space is nearly full, mmap fails mid-alloc. */
static int alloc_fails_halfway(uint32_t backing, uint64_t folio)
{
	struct t_folio c = {.size = folio, .backing = backing};
	struct rlimit as = {64u << 20, 64u << 20};
	struct mreg_buf *buf;
	int status, ret;
	pid_t pid;

	if (T_SANITIZED) {
		printf("backing %u: RLIMIT_AS case not run under a sanitizer\n",
		       backing);
		return T_PASS;
	}
	pid = fork();
	if (!pid) {
		setrlimit(RLIMIT_AS, &as);
		ret = t_buf(&c, 1ull << 30, &buf);
		_exit(ret == -ENOMEM ? 0 : 1);
	}
	T_CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork");
	T_CHECK(WIFEXITED(status) && !WEXITSTATUS(status),
		"backing %u: 1 GiB under RLIMIT_AS did not fail with ENOMEM",
		backing);
	return T_PASS;
}

/*
 * Without MREG_BUF_SET_POLICY nothing in sysfs is written, whatever is
 * asked: a 64 kB buffer under a policy that offers no 64 kB folios fails
 * with -EAGAIN and a message naming the knob that decided.
 */
static int default_leaves_sysfs(void)
{
	static char before[SNAP_MAX], after[SNAP_MAX];
	struct mreg_buf_attr attr = {
		.size = sizeof(attr), .length = 4u << 20, .folio_size = 65536};
	struct mreg_thp_policy *saved;
	struct mreg_buf *buf;
	int ret;

	const char *knob = "hugepages-64kB/enabled is [never]";

	if (access(THP "/hugepages-64kB/enabled", F_OK)) {
		/* Before mTHP: the PMD size, under the top-level knob. */
		attr.folio_size = t_pmd_size();
		knob = "transparent_hugepage/enabled is [never]";
	}
	T_CHECK(!mreg_thp_policy_save(&saved), "%s", mreg_last_error());
	T_CHECK(!mreg_thp_select_anon(4096, MREG_THP_NEVER), "%s",
		mreg_last_error());
	snapshot(before);
	ret = mreg_buf_alloc(&attr, &buf);
	snapshot(after);
	T_CHECK(!mreg_thp_policy_restore(saved), "%s", mreg_last_error());
	T_CHECK(ret == -EAGAIN,
		"%" PRIu64 " kB with every size at never: got %d",
		attr.folio_size >> 10, ret);
	T_CHECK(strstr(mreg_last_error(), knob),
		"the message does not name the knob: %s", mreg_last_error());
	T_CHECK(!strcmp(before, after), "the default allocation wrote sysfs");
	printf("default allocation: sysfs untouched, -EAGAIN names the knob\n");
	return T_PASS;
}

/* Bad arguments change nothing: no record left, no size turned off. */
static int bad_arguments(void)
{
	static char before[SNAP_MAX], after[SNAP_MAX];
	int ret;

	snapshot(before);
	ret = mreg_thp_policy_save(NULL);
	T_CHECK(ret == -EINVAL && strstr(mreg_last_error(), "out"),
		"save(NULL): %d %s", ret, mreg_last_error());
	T_CHECK(access("/run/mreg/policy.saved", F_OK),
		"save(NULL) left a record behind");
	ret = mreg_thp_select_anon(12345, MREG_THP_MADVISE);
	T_CHECK(ret == -EINVAL && strstr(mreg_last_error(), "12345"),
		"select_anon(12345): %d %s", ret, mreg_last_error());
	snapshot(after);
	T_CHECK(!strcmp(before, after), "a bad argument changed the policy");
	printf("bad arguments: -EINVAL naming them, policy untouched\n");
	return T_PASS;
}

#define RACE_ALLOCS 10

/* Alternate 64 kB and PMD-sized buffers, each of which must verify. */
static void *alloc_alternately(void *arg)
{
	uint64_t sizes[2] = {small_folio(), t_pmd_size()};
	unsigned int i, first = *(const unsigned int *)arg;

	for (i = 0; i < RACE_ALLOCS; i++) {
		struct t_folio c = {.size = sizes[(i + first) % 2],
				    .backing = MREG_BACKING_ANON};
		struct mreg_buf *buf;

		if (t_buf(&c, 4u << 20, &buf)) {
			fprintf(stderr, "test_policy: %s\n", mreg_last_error());
			return arg;
		}
		mreg_buf_free(buf);
	}
	return NULL;
}

static int race_in_process(void)
{
	static const unsigned int first[2] = {0, 1};
	pthread_t t[2];
	void *failed[2];
	int i;

	for (i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, alloc_alternately,
			       (void *)&first[i]);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], &failed[i]);
	return failed[0] || failed[1];
}

/*
 * The policy is global: allocations narrowing it at once, from threads
 * and from processes, must each see only their own (they once got false
 * -EAGAIN and left a knob at madvise).  MREG_BUF_SET_POLICY serialises
 * them with a mutex and an flock().
 */
static int concurrent_allocs(void)
{
	int status, i, bad = 0;
	pid_t pid[2];

	if (access(THP "/hugepages-64kB/enabled", F_OK) || !t_pmd_size()) {
		printf("no 64 kB mTHP or no PMD THP: concurrency case not "
		       "run\n");
		return T_PASS;
	}
	for (i = 0; i < 2; i++) {
		pid[i] = fork();
		if (!pid[i])
			_exit(race_in_process());
	}
	for (i = 0; i < 2; i++)
		bad |= waitpid(pid[i], &status, 0) != pid[i] ||
		       !WIFEXITED(status) || WEXITSTATUS(status);
	T_CHECK(!bad, "a concurrent allocation did not get its folios");
	printf("2 processes x 2 threads x %d allocations of 64 kB and 2 MB "
	       "folios at once: every one verified\n",
	       RACE_ALLOCS);
	return T_PASS;
}

/*
 * A process killed while the policy is narrowed (SIGKILL, the OOM
 * killer) cannot restore it.  The library saves the files' contents in
 * /run/mreg before narrowing, and whoever takes the lock next puts them
 * back: without that, the next run saves the narrowed policy as its
 * baseline and the change is permanent.
 */
#define RECORD "/run/mreg/policy.saved"

enum child_report { DONE = 'd', FAILED = 'e' };

static uint64_t kill_len(void)
{
	const char *mb = getenv("MREG_POLICY_KILL_MB");

	return (uint64_t)(mb && *mb ? strtoull(mb, NULL, 0) : 512) << 20;
}

static int64_t read_num(const char *path)
{
	long long v = -1;
	FILE *f = fopen(path, "re");

	if (f && fscanf(f, "%lld", &v) != 1)
		v = -1;
	if (f)
		fclose(f);
	return v;
}

static void size_path(char *buf, size_t len, const struct t_folio *c,
		      const char *file)
{
	snprintf(buf, len, "%s/hugepages-%" PRIu64 "kB/%s",
		 c->backing == MREG_BACKING_HUGETLB ? HUGETLB : THP,
		 c->size >> 10, file);
}

/* Folios of @c's size faulted in, machine-wide: the mTHP size's counter,
 * or the hugetlb pages in use. */
static int64_t faulted(const struct t_folio *c)
{
	char nr[192], free_pages[192];

	if (c->backing != MREG_BACKING_HUGETLB) {
		size_path(nr, sizeof(nr), c, "stats/anon_fault_alloc");
		return read_num(nr);
	}
	size_path(nr, sizeof(nr), c, "nr_hugepages");
	size_path(free_pages, sizeof(free_pages), c, "free_hugepages");
	return read_num(nr) - read_num(free_pages);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Allocate with MREG_BUF_SET_POLICY; killed before it reports, we hope. */
static void populating_child(const struct t_folio *c, uint64_t len, int fd)
{
	struct mreg_buf *buf;
	char what = t_buf(c, len, &buf) ? FAILED : DONE;

	if (write(fd, &what, 1) != 1)
		_exit(4);
	pause();
	_exit(0);
}

/*
 * SIGKILL the child a quarter of the way into its populate: its policy
 * is narrowed from before the first folio faults in until after the
 * last, so the kill lands inside that window unless the child reports
 * first.  Return: the child's report, 0 if it had none.
 */
static char kill_mid_populate(const struct t_folio *c, uint64_t len,
			      int *status)
{
	int64_t start = faulted(c), want = (int64_t)(len / c->size / 4);
	uint64_t end = now_ms() + 300000;
	char report = 0;
	int fds[2];
	pid_t pid;

	if (pipe(fds))
		return FAILED;
	pid = fork();
	if (!pid) {
		close(fds[0]);
		populating_child(c, len, fds[1]);
	}
	close(fds[1]);
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	while (pid > 0 && now_ms() < end && read(fds[0], &report, 1) != 1 &&
	       faulted(c) - start < want)
		usleep(200);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, status, 0);
	}
	if (!report && read(fds[0], &report, 1) != 1)
		report = 0;
	close(fds[0]);
	return pid > 0 ? report : FAILED;
}

static void next_run_log(void *ctx, int level, const char *msg)
{
	printf("  next run, mreg[%d]: %s\n", level, msg);
	if (level == MREG_LOG_WARN && strstr(msg, "left the policy narrowed"))
		*(int *)ctx = 1;
}

/* A fresh process allocating as the killed one did, small.  Return: 0
 * if it worked and warned that it put a dead owner's policy back. */
static int next_run(const struct t_folio *c)
{
	struct mreg_buf *buf;
	int status, warned = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (!pid) {
		mreg_set_log(next_run_log, &warned);
		if (t_buf(c, 2 * c->size > (4u << 20) ? 2 * c->size : 4u << 20,
			  &buf))
			_exit(1);
		mreg_buf_free(buf);
		_exit(warned ? 0 : 2);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* The policy must differ once narrowed, or a kill proves nothing. */
static int make_baseline(const struct t_folio *c, uint64_t len)
{
	char path[192];
	FILE *f;

	if (c->backing == MREG_BACKING_HUGETLB) {
		size_path(path, sizeof(path), c, "free_hugepages");
		return read_num(path) >= (int64_t)(len / c->size) ? -1 : 0;
	}
	/* Narrowing writes madvise to the size's knob: start from never. */
	size_path(path, sizeof(path), c, "enabled");
	f = fopen(path, "we");
	if (!f)
		return -1;
	fputs("never", f);
	return fclose(f) ? -1 : 0;
}

static int kill_then_next_run(const struct t_folio *c, uint64_t len)
{
	static struct policy before, killed, after;
	int status = 0, next;
	char report;

	policy_read(&before);
	report = kill_mid_populate(c, len, &status);
	T_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && !report,
		"%s: the child was not killed mid-populate (report %c, status "
		"0x%x): raise MREG_POLICY_KILL_MB",
		c->name, report ? report : '-', status);
	policy_read(&killed);
	printf("%s: SIGKILL a quarter into a %" PRIu64 " MB populate left:\n",
	       c->name, len >> 20);
	T_CHECK(policy_diff(&before, &killed),
		"%s: the policy was not narrowed at the kill", c->name);
	next = next_run(c);
	policy_read(&after);
	printf("%s: after the next run, files that differ from before:\n",
	       c->name);
	T_CHECK(!policy_diff(&before, &after),
		"%s: the next run did not put the policy back byte for byte",
		c->name);
	T_CHECK(!next, "%s: the next run %s", c->name,
		next == 2 ? "did not warn that it restored the policy"
			  : "failed");
	T_CHECK(access(RECORD, F_OK) && errno == ENOENT,
		"%s: %s is still there", c->name, RECORD);
	printf("%s: the next run restored every policy file byte for byte\n",
	       c->name);
	return T_PASS;
}

static int killed_while_narrowed(const struct t_folio *c)
{
	static struct policy orig;
	uint64_t len = kill_len();
	char path[192];
	int ret, fixed;

	size_path(path, sizeof(path), c,
		  c->backing == MREG_BACKING_HUGETLB ? "nr_hugepages"
						     : "enabled");
	if (access(path, F_OK) || faulted(c) < 0) {
		printf("%s: no such size or no counter: kill case not run\n",
		       c->name);
		return T_PASS;
	}
	policy_read(&orig);
	if (make_baseline(c, len)) {
		printf("%s: the policy would not change: kill case not run\n",
		       c->name);
		put_back(&orig);
		return T_PASS;
	}
	ret = kill_then_next_run(c, len);
	/* Whatever the library did, leave the machine as we found it. */
	fixed = put_back(&orig);
	if (fixed)
		printf("%s: the test put %d files back itself\n", c->name,
		       fixed);
	return ret;
}

static int kill_cases(void)
{
	const struct t_folio cases[] = {
		{.size = small_folio(),
		 .backing = MREG_BACKING_ANON,
		 .name = "small"},
		{.size = t_pmd_size(),
		 .backing = MREG_BACKING_HUGETLB,
		 .name = "hugetlb"},
	};
	size_t i;
	int ret = T_PASS;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]) && !ret; i++)
		ret = killed_while_narrowed(&cases[i]);
	return ret;
}

/*
 * The record is written before anything is narrowed: when it cannot be,
 * the allocation and the exported save fail naming it, sysfs untouched,
 * and the lock is free again afterwards.
 */
static int record_write_fails(void)
{
	static char before[SNAP_MAX], after[SNAP_MAX];
	struct t_folio c = {.size = small_folio(),
			    .backing = MREG_BACKING_ANON};
	struct mreg_thp_policy *saved = NULL;
	char msg[512], msg2[512];
	struct mreg_buf *buf;
	int ret, ret2;

	if (access(THP "/hugepages-64kB/enabled", F_OK)) {
		printf("no 64 kB mTHP: record failure case not run\n");
		return T_PASS;
	}
	mkdir("/run/mreg", 0700);
	/* A directory where the temporary record goes: unlink and open
	 * fail with EISDIR. */
	T_CHECK(!mkdir(RECORD ".tmp", 0700), "mkdir %s.tmp: %s", RECORD,
		strerror(errno));
	snapshot(before);
	ret = t_buf(&c, 4u << 20, &buf);
	snprintf(msg, sizeof(msg), "%s", mreg_last_error());
	ret2 = mreg_thp_policy_save(&saved);
	snprintf(msg2, sizeof(msg2), "%s", mreg_last_error());
	snapshot(after);
	rmdir(RECORD ".tmp");
	if (!ret)
		mreg_buf_free(buf);
	if (!ret2)
		mreg_thp_policy_restore(saved);
	T_CHECK(ret == -EISDIR && strstr(msg, RECORD),
		"SET_POLICY with an unwritable record: %d, %s", ret, msg);
	T_CHECK(ret2 == -EISDIR && strstr(msg2, RECORD),
		"mreg_thp_policy_save() with an unwritable record: %d, %s",
		ret2, msg2);
	T_CHECK(!strcmp(before, after), "sysfs changed though the record "
					"could not be written");
	T_CHECK(!t_buf(&c, 4u << 20, &buf), "afterwards: %s",
		mreg_last_error());
	mreg_buf_free(buf);
	printf("unwritable record: -EISDIR naming %s, sysfs untouched\n",
	       RECORD);
	return T_PASS;
}

/* The thread holding a snapshot's lock may take it again: a SET_POLICY
 * allocation between its own save and restore does not deadlock. */
static int nested_in_snapshot(void)
{
	struct t_folio c = {.size = small_folio(),
			    .backing = MREG_BACKING_ANON};
	struct mreg_thp_policy *saved;
	struct mreg_buf *buf;
	int ret;

	T_CHECK(!mreg_thp_policy_save(&saved), "%s", mreg_last_error());
	ret = t_buf(&c, 4u << 20, &buf);
	T_CHECK(!mreg_thp_policy_restore(saved), "%s", mreg_last_error());
	T_CHECK(!ret, "SET_POLICY inside a snapshot: %s", mreg_last_error());
	mreg_buf_free(buf);
	T_CHECK(access(RECORD, F_OK), "%s is still there", RECORD);
	printf("a SET_POLICY allocation inside a snapshot of the same thread "
	       "works\n");
	return T_PASS;
}

/*
 * The exported calls take the lock too: a snapshot holds it until it is
 * restored, and mreg_thp_select_anon() in another process waits.
 */
static int exported_calls_lock(void)
{
	static struct policy orig, during;
	struct mreg_thp_policy *saved;
	enum mreg_thp_mode mode;
	int status, waited, changed;
	pid_t pid;

	if (access(THP "/hugepages-64kB/enabled", F_OK)) {
		printf("no 64 kB mTHP: exported lock case not run\n");
		return T_PASS;
	}
	policy_read(&orig);
	mode = strstr(find(&orig, THP "/hugepages-64kB/enabled")->raw,
		      "[never]")
		       ? MREG_THP_MADVISE
		       : MREG_THP_NEVER;
	T_CHECK(!mreg_thp_policy_save(&saved), "%s", mreg_last_error());
	fflush(stdout);
	pid = fork();
	if (!pid)
		_exit(mreg_thp_select_anon(65536, mode) ? 1 : 0);
	usleep(300000);
	waited = pid > 0 && !waitpid(pid, &status, WNOHANG);
	policy_read(&during);
	changed = policy_diff(&orig, &during);
	mreg_thp_policy_restore(saved);
	if (pid > 0)
		waitpid(pid, &status, 0);
	put_back(&orig);
	T_CHECK(waited && !changed,
		"mreg_thp_select_anon() in another process did not wait for "
		"a saved snapshot's lock");
	T_CHECK(WIFEXITED(status) && !WEXITSTATUS(status),
		"mreg_thp_select_anon() failed once the lock was free");
	printf("mreg_thp_select_anon() waited for mreg_thp_policy_save()'s "
	       "lock in another process\n");
	return nested_in_snapshot();
}

static char logged[2048];

static void log_capture(void *ctx, int level, const char *msg)
{
	size_t used = strlen(logged);

	(void)ctx;
	fprintf(stderr, "test_policy: mreg[%d]: %s\n", level, msg);
	snprintf(logged + used, sizeof(logged) - used, "%s\n", msg);
}

static unsigned long long start_time(pid_t pid)
{
	unsigned long long start = 0;
	char path[64], text[1024], *p;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	text[fread(text, 1, sizeof(text) - 1, f)] = '\0';
	fclose(f);
	p = strrchr(text, ')');
	for (i = 2; p && i < 22; i++)
		p = strchr(p + 1, ' ');
	if (p)
		sscanf(p + 1, "%llu", &start);
	return start;
}

static int write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

/* A record as the library writes it (docs/thp-policy.md), for one file. */
static int forge_record(pid_t owner, const struct pfile *f)
{
	char text[512];

	mkdir("/run/mreg", 0700);
	snprintf(text, sizeof(text),
		 "mreg-policy-record 1\nowner %d %llu\nfile %s %zu\n%s\nend\n",
		 (int)owner, start_time(owner), f->path, strlen(f->raw),
		 f->raw);
	return write_text(RECORD, text);
}

/*
 * A record whose owner is alive cannot exist while we hold the lock,
 * unless that owner's restore failed or it runs in another pid
 * namespace: holding the lock proves nobody is changing the policy, so
 * it is put back all the same.  A record mreg did not write is refused,
 * naming it, and nothing is written.
 */
static int stale_records(void)
{
	static struct policy orig, now;
	static char before[SNAP_MAX], after[SNAP_MAX];
	const char *knob = THP "/hugepages-64kB/enabled";
	struct mreg_thp_policy *saved;
	int status, ret, left;
	const struct pfile *f;
	pid_t pid;

	if (access(knob, F_OK)) {
		printf("no 64 kB mTHP: stale record case not run\n");
		return T_PASS;
	}
	policy_read(&orig);
	f = find(&orig, knob);
	pid = fork();
	if (!pid) {
		pause();
		_exit(0);
	}
	T_CHECK(pid > 0 && !forge_record(pid, f), "cannot forge %s", RECORD);
	/* What the live owner narrowed: the opposite of what it saved. */
	write_text(knob, strstr(f->raw, "[never]") ? "madvise" : "never");
	logged[0] = '\0';
	mreg_set_log(log_capture, NULL);
	ret = mreg_thp_policy_save(&saved);
	policy_read(&now);
	if (!ret)
		mreg_thp_policy_restore(saved);
	t_init("test_policy");
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	left = !access(RECORD, F_OK);
	unlink(RECORD);
	put_back(&orig);
	T_CHECK(!ret, "save with a live owner's record: %s", mreg_last_error());
	T_CHECK(!policy_diff(&orig, &now),
		"a live owner's record was not put back byte for byte");
	T_CHECK(strstr(logged, "alive but not holding the lock"),
		"no warning that the owner is alive:\n%s", logged);
	T_CHECK(!left, "%s is still there", RECORD);

	snapshot(before);
	T_CHECK(!write_text(RECORD, "not a record\n"), "write %s", RECORD);
	ret = mreg_thp_policy_save(&saved);
	snapshot(after);
	unlink(RECORD);
	if (!ret)
		mreg_thp_policy_restore(saved);
	T_CHECK(ret == -EINVAL && strstr(mreg_last_error(), RECORD),
		"a corrupt record: %d, %s", ret, mreg_last_error());
	T_CHECK(!strcmp(before, after), "sysfs changed by a corrupt record");
	printf("a live owner's record is put back with a warning; a corrupt "
	       "one is refused, naming it\n");
	return T_PASS;
}

/* What the policy record and the lock promise (also `test_policy crash`). */
static int crash_cases(void)
{
	int ret = kill_cases();

	if (!ret)
		ret = record_write_fails();
	if (!ret)
		ret = exported_calls_lock();
	if (!ret)
		ret = stale_records();
	return ret;
}

int main(int argc, char **argv)
{
	static char before[SNAP_MAX], after[SNAP_MAX];
	bool crash_only = argc > 1 && !strcmp(argv[1], "crash");
	int ret;

	t_init("test_policy");
	if (geteuid())
		return t_skip("changing the THP policy needs root");
	snapshot(before);
	ret = crash_only ? T_PASS : default_leaves_sysfs();
	if (!ret && !crash_only)
		ret = bad_arguments();
	if (!ret && !crash_only)
		ret = alloc_every_case();
	if (!ret && !crash_only)
		ret = alloc_fails_halfway(MREG_BACKING_ANON, small_folio());
	if (!ret && !crash_only)
		ret = alloc_fails_halfway(MREG_BACKING_HUGETLB, t_pmd_size());
	if (!ret && !crash_only)
		ret = concurrent_allocs();
	if (!ret)
		ret = crash_cases();
	if (ret)
		return ret;
	snapshot(after);
	T_CHECK(!strcmp(before, after), "policy changed:\n%s\nvs\n%s", before,
		after);
	printf("policy restored after %s\n", "success and failure paths");
	return T_PASS;
}
