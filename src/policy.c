// SPDX-License-Identifier: MIT
/*
 * The THP and hugetlb policy is one per machine.  Whoever changes it
 * through mreg takes a lock shared by every process using mreg, and before
 * narrowing anything writes the files' original contents to a record in
 * /run/mreg.  A process killed while the policy is narrowed (SIGKILL, the
 * OOM killer) restores nothing, and the next run would otherwise save the
 * narrowed policy as its baseline and keep it for good: so whoever takes
 * the lock next finds the record and puts every file back first.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define RECORD_TMP    MREG_POLICY_RECORD ".tmp"
#define RECORD_MAGIC  "mreg-policy-record 1"
#define RECORD_MAX    96
#define RECORD_TEXT   (RECORD_MAX * 320 + 128)
#define HUGETLB_SYSFS "/sys/kernel/mm/hugepages"

struct policy_record {
	pid_t pid;
	unsigned long long start; /* the owner's start time, against reuse */
	int nr;
	struct mreg_policy_file files[RECORD_MAX];
};

/*
 * Threads of this process wait on policy_cond while another one holds
 * the lock; the mutex guards @held only, never a wait for the flock, so
 * fork() is never held up for long.  The holding thread may take the
 * lock again (a SET_POLICY allocation between a caller's own save and
 * restore), and any thread may release it: a snapshot may be restored
 * elsewhere.
 */
static pthread_mutex_t policy_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t policy_cond = PTHREAD_COND_INITIALIZER;
static pthread_once_t policy_atfork_once = PTHREAD_ONCE_INIT;
static struct {
	unsigned int depth; /* 0: this process does not hold it */
	pthread_t thread;
	int fd;		  /* flock()ed MREG_POLICY_LOCK */
	bool recorded;	  /* MREG_POLICY_RECORD is ours */
	bool keep_record; /* a restore failed: the next run retries it */
} held = {.fd = -1};
/* What our record holds; only the holder touches it. */
static struct policy_record rec;

/* A fork() while another thread holds the mutex would leave the child a
 * mutex nobody unlocks: fork waits for it, both sides release it. */
static void policy_prepare(void)
{
	pthread_mutex_lock(&policy_mutex);
}

static void policy_parent(void)
{
	pthread_mutex_unlock(&policy_mutex);
}

/* The child does not hold the parent's lock: closing its copy of the
 * descriptor leaves the flock to the parent, whose descriptor keeps it.
 * Waiters on the condition variable stayed in the parent. */
static void policy_child(void)
{
	if (held.fd >= 0)
		close(held.fd);
	memset(&held, 0, sizeof(held));
	held.fd = -1;
	rec.nr = 0;
	policy_cond = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
	pthread_mutex_unlock(&policy_mutex);
}

static void policy_atfork(void)
{
	pthread_atfork(policy_prepare, policy_parent, policy_child);
}

/* Open the lock file only if it is root's regular file in root's 0700
 * directory, never through a symlink: a lock or a record where anyone may
 * write could be held, forged or replaced by an unprivileged user. */
static int open_lock_file(void)
{
	struct stat st;
	int fd;

	if (mkdir(MREG_POLICY_DIR, 0700) && errno != EEXIST)
		return -errno;
	if (lstat(MREG_POLICY_DIR, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid || (st.st_mode & 077))
		return -EPERM;
	fd = open(MREG_POLICY_LOCK, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
		  0600);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* On failure the caller's release() closes held.fd. */
static int flock_machine(void)
{
	int fd, ret;

	/* Opened under the mutex, so that a fork() finds it in held.fd and
	 * the child closes its copy: a copy left open would keep the flock
	 * held after we die. */
	pthread_mutex_lock(&policy_mutex);
	fd = open_lock_file();
	held.fd = fd < 0 ? -1 : fd;
	pthread_mutex_unlock(&policy_mutex);
	if (fd < 0)
		return mreg_fail(
			fd, "policy: lock %s (a root-only 0700 %s): %s",
			MREG_POLICY_LOCK, MREG_POLICY_DIR, strerror(-fd));
	while (flock(fd, LOCK_EX)) {
		if (errno == EINTR)
			continue;
		ret = -errno;
		return mreg_fail(ret, "policy: flock %s: %s", MREG_POLICY_LOCK,
				 strerror(-ret));
	}
	return 0;
}

/* Field 22 of /proc/<pid>/stat, 0 if there is no such process. */
/*
 * Start time of @pid (field 22 of /proc/pid/stat), or 0 when it is gone
 * or a zombie: killed but not yet reaped is dead for the policy's sake.
 */
static unsigned long long proc_start(pid_t pid)
{
	unsigned long long start = 0;
	char path[64], text[1024], *p;
	int fd, i;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	text[n] = '\0';
	/* The command name may hold spaces and parentheses: skip past it. */
	p = strrchr(text, ')');
	if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
		return 0;
	for (i = 2; p && i < 22; i++)
		p = strchr(p + 1, ' ');
	if (p)
		sscanf(p + 1, "%llu", &start);
	return start;
}

/* Release the process lock; @policy_mutex is held. */
static void release_locked(void)
{
	if (held.fd >= 0)
		close(held.fd); /* drops the flock */
	held.fd = -1;
	held.depth = 0;
	held.recorded = false;
	held.keep_record = false;
	rec.nr = 0;
	pthread_cond_broadcast(&policy_cond);
}

static void release(void)
{
	pthread_mutex_lock(&policy_mutex);
	release_locked();
	pthread_mutex_unlock(&policy_mutex);
}

/* The file's whole contents, newline included. */
static int read_raw(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len);
	close(fd);
	if (n < 0)
		return -errno;
	if ((size_t)n == len)
		return -E2BIG;
	buf[n] = '\0';
	return 0;
}

int mreg_policy_file_read(struct mreg_policy_file *f, const char *path)
{
	if ((size_t)snprintf(f->path, sizeof(f->path), "%s", path) >=
	    sizeof(f->path))
		return -ENAMETOOLONG;
	return read_raw(path, f->raw, sizeof(f->raw));
}

int mreg_policy_file_value(const struct mreg_policy_file *f, char *val,
			   size_t len)
{
	const char *start = strchr(f->raw, '['), *end;

	/* "always [madvise] never" writes back as its choice, a number as
	 * itself: either way the file then reads as it did, byte for byte. */
	if (start) {
		end = strchr(++start, ']');
		if (!end)
			return -EINVAL;
	} else {
		start = f->raw;
		end = start + strcspn(start, "\n");
	}
	if (end == start || (size_t)(end - start) >= len)
		return -EINVAL;
	memcpy(val, start, (size_t)(end - start));
	val[end - start] = '\0';
	return 0;
}

int mreg_policy_file_put(const struct mreg_policy_file *f)
{
	char now[sizeof(f->raw)], val[sizeof(f->raw)];
	int ret;

	if (!read_raw(f->path, now, sizeof(now)) && !strcmp(now, f->raw))
		return 0;
	ret = mreg_policy_file_value(f, val, sizeof(val));
	if (!ret)
		ret = mreg_sysfs_write(f->path, val);
	return ret ? ret : 1;
}

/* Only the files mreg changes, so a forged record cannot steer us at
 * another sysfs file. */
static bool record_path_ok(const char *path)
{
	const char *base = strrchr(path, '/');

	if (strncmp(path, THP_SYSFS "/", sizeof(THP_SYSFS)) &&
	    strncmp(path, HUGETLB_SYSFS "/", sizeof(HUGETLB_SYSFS)))
		return false;
	if (strstr(path, "/..") || !base)
		return false;
	return !strcmp(base, "/enabled") || !strcmp(base, "/shmem_enabled") ||
	       !strcmp(base, "/nr_hugepages");
}

static int record_format(const struct policy_record *r, char *text, size_t len)
{
	size_t used;
	int i;

	used = (size_t)snprintf(text, len, RECORD_MAGIC "\nowner %d %llu\n",
				(int)r->pid, r->start);
	for (i = 0; i < r->nr && used < len; i++)
		used += (size_t)snprintf(text + used, len - used,
					 "file %s %zu\n%s\n", r->files[i].path,
					 strlen(r->files[i].raw),
					 r->files[i].raw);
	if (used < len)
		used += (size_t)snprintf(text + used, len - used, "end\n");
	return used < len ? (int)used : -E2BIG;
}

/* Cut the next line out of [*p, end). */
static char *next_line(char **p, char *end)
{
	char *line = *p, *nl = memchr(line, '\n', (size_t)(end - line));

	if (!nl)
		return NULL;
	*nl = '\0';
	*p = nl + 1;
	return line;
}

static int record_parse_file(char *line, char **p, char *end,
			     struct mreg_policy_file *f)
{
	size_t rawlen;
	int used = 0;

	if (sscanf(line, "file %159s %zu%n", f->path, &rawlen, &used) != 2 ||
	    line[used] || !record_path_ok(f->path) ||
	    rawlen >= sizeof(f->raw) || rawlen >= (size_t)(end - *p) ||
	    (*p)[rawlen] != '\n')
		return -EINVAL;
	memcpy(f->raw, *p, rawlen);
	f->raw[rawlen] = '\0';
	*p += rawlen + 1;
	return 0;
}

static int record_parse(char *text, size_t len, struct policy_record *r)
{
	char *p = text, *end = text + len, *line;
	int pid, used = 0;

	line = next_line(&p, end);
	if (!line || strcmp(line, RECORD_MAGIC))
		return -EINVAL;
	line = next_line(&p, end);
	if (!line ||
	    sscanf(line, "owner %d %llu%n", &pid, &r->start, &used) != 2 ||
	    line[used])
		return -EINVAL;
	r->pid = pid;
	for (r->nr = 0; (line = next_line(&p, end)); r->nr++) {
		if (!strcmp(line, "end"))
			return p == end ? 0 : -EINVAL;
		if (r->nr == RECORD_MAX ||
		    record_parse_file(line, &p, end, &r->files[r->nr]))
			return -EINVAL;
	}
	return -EINVAL; /* no "end": not a record we wrote */
}

static int write_all(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len) {
		n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int sync_dir(void)
{
	int fd = open(MREG_POLICY_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd))
		ret = -errno;
	close(fd);
	return ret;
}

/* Write @text to the temporary file and fsync it. */
static int write_tmp(const char *text, size_t len)
{
	int fd, ret;

	if (unlink(RECORD_TMP) && errno != ENOENT)
		return -errno;
	fd = open(RECORD_TMP,
		  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	ret = write_all(fd, text, len);
	if (!ret && fsync(fd))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	return ret;
}

/*
 * Replace the record atomically: a reader sees the old one or the new
 * one, never half of one, even if we die while writing.
 */
static int record_store(const struct policy_record *r)
{
	char *text = malloc(RECORD_TEXT);
	const char *what = RECORD_TMP;
	int len, ret;

	if (!text)
		return -ENOMEM;
	len = record_format(r, text, RECORD_TEXT);
	ret = len < 0 ? len : write_tmp(text, (size_t)len);
	free(text);
	if (!ret && rename(RECORD_TMP, MREG_POLICY_RECORD)) {
		ret = -errno;
		what = MREG_POLICY_RECORD;
	}
	if (ret) {
		unlink(RECORD_TMP);
		return mreg_fail(ret,
				 "policy: cannot save the policy to %s (%s: "
				 "%s); left unchanged",
				 MREG_POLICY_RECORD, what, strerror(-ret));
	}
	/* Only a /run on disk needs it: the record is in place already. */
	ret = sync_dir();
	if (ret)
		mreg_log(MREG_LOG_WARN, "policy: fsync %s: %s", MREG_POLICY_DIR,
			 strerror(-ret));
	return 0;
}

static bool record_has(const struct policy_record *r, const char *path)
{
	int i;

	for (i = 0; i < r->nr; i++)
		if (!strcmp(r->files[i].path, path))
			return true;
	return false;
}

int mreg_policy_record(const struct mreg_policy_file *files, int nr)
{
	struct policy_record *next;
	int i, ret = 0, added = 0;

	next = malloc(sizeof(*next));
	if (!next)
		return -ENOMEM;
	*next = rec;
	/* A file already saved keeps its first, original contents: a nested
	 * holder's snapshot sees the outer one's narrowed policy. */
	for (i = 0; i < nr && !ret; i++) {
		if (record_has(next, files[i].path))
			continue;
		if (next->nr == RECORD_MAX)
			ret = mreg_fail(-E2BIG,
					"policy: more than %d files "
					"to save",
					RECORD_MAX);
		else
			next->files[next->nr++] = files[i];
		added++;
	}
	if (!ret && added)
		ret = record_store(next);
	if (!ret && added) {
		rec = *next;
		pthread_mutex_lock(&policy_mutex);
		held.recorded = true;
		pthread_mutex_unlock(&policy_mutex);
	}
	free(next);
	return ret;
}

static const char *owner_state(const struct policy_record *r)
{
	unsigned long long start = proc_start(r->pid);

	if (!start || start != r->start)
		return "dead";
	if (r->pid == getpid())
		return "this process, whose restore failed";
	/* We hold the lock, so it is not changing the policy: its restore
	 * failed, or it runs in another pid namespace. */
	return "alive but not holding the lock";
}

/* Put one saved file back; log what changed. */
static int recover_file(const struct mreg_policy_file *f, const char *owner,
			int pid)
{
	struct mreg_policy_file now;
	char was[64] = "?", val[64] = "?";
	int ret;

	if (!mreg_policy_file_read(&now, f->path))
		mreg_policy_file_value(&now, was, sizeof(was));
	mreg_policy_file_value(f, val, sizeof(val));
	ret = mreg_policy_file_put(f);
	if (ret == -ENOENT) { /* a size this kernel no longer has */
		mreg_log(MREG_LOG_WARN, "policy: %s is gone: not restored",
			 f->path);
		return 0;
	}
	if (ret < 0)
		return mreg_fail(ret,
				 "policy: cannot put %s back to %s as saved in "
				 "%s by pid %d (%s): %s",
				 f->path, val, MREG_POLICY_RECORD, pid, owner,
				 strerror(-ret));
	if (ret)
		mreg_log(MREG_LOG_WARN,
			 "policy: %s: %s -> %s, as saved in %s by pid %d (%s)",
			 f->path, was, val, MREG_POLICY_RECORD, pid, owner);
	if (ret &&
	    (mreg_policy_file_read(&now, f->path) || strcmp(now.raw, f->raw)))
		mreg_log(MREG_LOG_WARN, "policy: %s does not read as saved",
			 f->path);
	return ret;
}

static int recover_record(struct policy_record *r)
{
	const char *owner = owner_state(r);
	int i, ret, changed = 0;

	for (i = 0; i < r->nr; i++) {
		ret = recover_file(&r->files[i], owner, (int)r->pid);
		if (ret < 0)
			return ret; /* the record stays for the next try */
		changed += ret;
	}
	if (changed)
		mreg_log(MREG_LOG_WARN,
			 "policy: pid %d (%s) left the policy narrowed: "
			 "restored %d of the %d files saved in %s",
			 (int)r->pid, owner, changed, r->nr,
			 MREG_POLICY_RECORD);
	else /* killed after its restore, before removing the record */
		mreg_log(MREG_LOG_INFO,
			 "policy: pid %d (%s) left %s, but every file already "
			 "read as saved",
			 (int)r->pid, owner, MREG_POLICY_RECORD);
	if (unlink(MREG_POLICY_RECORD))
		return mreg_fail(-errno, "policy: remove %s: %s",
				 MREG_POLICY_RECORD, strerror(errno));
	return 0;
}

static int read_record(char *text, size_t len, size_t *got)
{
	ssize_t n;
	int fd;

	fd = open(MREG_POLICY_RECORD, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, text, len);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return (int)n;
	if ((size_t)n == len)
		return -E2BIG;
	*got = (size_t)n;
	return 0;
}

/* With the lock newly taken: a record left behind is put back first. */
static int recover_stale(void)
{
	struct policy_record *r = malloc(sizeof(*r));
	char *text = malloc(RECORD_TEXT);
	size_t len = 0;
	int ret = -ENOMEM;

	if (r && text)
		ret = read_record(text, RECORD_TEXT, &len);
	if (ret == -ENOENT)
		ret = 0;
	else if (!ret && record_parse(text, len, r))
		ret = mreg_fail(-EINVAL,
				"policy: %s is not a record mreg wrote: check "
				"the THP and hugetlb policy, then remove it",
				MREG_POLICY_RECORD);
	else if (!ret)
		ret = recover_record(r);
	else
		ret = mreg_fail(ret, "policy: read %s: %s", MREG_POLICY_RECORD,
				strerror(-ret));
	free(text);
	free(r);
	return ret;
}

int mreg_policy_lock(void)
{
	pthread_t self = pthread_self();
	int ret;

	pthread_once(&policy_atfork_once, policy_atfork);
	pthread_mutex_lock(&policy_mutex);
	if (held.depth && pthread_equal(held.thread, self)) {
		held.depth++;
		pthread_mutex_unlock(&policy_mutex);
		return 0;
	}
	while (held.depth)
		pthread_cond_wait(&policy_cond, &policy_mutex);
	held.depth = 1;
	held.thread = self;
	pthread_mutex_unlock(&policy_mutex);

	ret = flock_machine();
	if (!ret)
		ret = recover_stale();
	if (ret) {
		release();
		return ret;
	}
	rec.pid = getpid();
	rec.start = proc_start(rec.pid);
	rec.nr = 0;
	return 0;
}

/* With the policy back, the record has done its job; the error of
 * removing it, if any. */
static int record_remove(void)
{
	if (unlink(MREG_POLICY_RECORD) && errno != ENOENT)
		return -errno;
	sync_dir();
	return 0;
}

void mreg_policy_unlock(bool restored)
{
	bool kept = false;
	int err = 0;

	pthread_mutex_lock(&policy_mutex);
	if (!held.depth) { /* not held: a caller's double restore */
		pthread_mutex_unlock(&policy_mutex);
		return;
	}
	if (!restored)
		held.keep_record = true;
	if (--held.depth) {
		pthread_mutex_unlock(&policy_mutex);
		return;
	}
	/* Removed before the flock goes, so that no later holder takes a
	 * record of ours for a dead owner's. */
	kept = held.recorded && held.keep_record;
	if (held.recorded && !kept)
		err = record_remove();
	release_locked();
	pthread_mutex_unlock(&policy_mutex);
	/* The log hook is the caller's code: never call it under our mutex. */
	if (kept)
		mreg_log(MREG_LOG_WARN,
			 "policy: not every file could be put back: %s "
			 "stays, for the next run to retry",
			 MREG_POLICY_RECORD);
	if (err)
		mreg_log(MREG_LOG_WARN, "policy: remove %s: %s",
			 MREG_POLICY_RECORD, strerror(-err));
}
