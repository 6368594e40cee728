// SPDX-License-Identifier: MIT
/*
 * The allocator writes sysfs only when asked (MREG_BUF_SET_POLICY), and
 * then narrows the THP policy (or tops up the hugetlb pool) only while a
 * buffer faults in: afterwards every sysfs file reads as before, whether
 * the allocation worked or failed halfway.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tcommon.h"

#define THP	 "/sys/kernel/mm/transparent_hugepage"
#define SNAP_MAX 16384

static void append_file(char *snap, size_t *used, const char *path)
{
	char buf[256];
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	*used += (size_t)snprintf(snap + *used, SNAP_MAX - *used, "%s=%s", path,
				  buf);
}

/* Every policy file the allocator may touch, as one string. */
static void snapshot(char *snap)
{
	const char *files[] = {"enabled", "shmem_enabled"};
	struct dirent *de;
	char path[512];
	size_t used = 0;
	DIR *dir;
	int i;

	snap[0] = '\0';
	append_file(snap, &used, THP "/enabled");
	append_file(snap, &used, THP "/shmem_enabled");
	append_file(snap, &used,
		    "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages");
	dir = opendir(THP);
	while (dir && (de = readdir(dir))) {
		if (strncmp(de->d_name, "hugepages-", 10))
			continue;
		for (i = 0; i < 2; i++) {
			snprintf(path, sizeof(path), THP "/%s/%s", de->d_name,
				 files[i]);
			append_file(snap, &used, path);
		}
	}
	if (dir)
		closedir(dir);
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
			T_CHECK(!t_buf(&cases[i], 4u << 20, &buf), "%s: %s",
				cases[i].name, mreg_last_error());
			mreg_buf_free(buf);
		}
	}
	return T_PASS;
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

	if (access(THP "/hugepages-64kB/enabled", F_OK)) {
		printf("no 64 kB mTHP: default-policy case not run\n");
		return T_PASS;
	}
	T_CHECK(!mreg_thp_policy_save(&saved), "%s", mreg_last_error());
	T_CHECK(!mreg_thp_select_anon(4096, MREG_THP_NEVER), "%s",
		mreg_last_error());
	snapshot(before);
	ret = mreg_buf_alloc(&attr, &buf);
	snapshot(after);
	T_CHECK(!mreg_thp_policy_restore(saved), "%s", mreg_last_error());
	T_CHECK(ret == -EAGAIN, "64 kB with every size at never: got %d", ret);
	T_CHECK(strstr(mreg_last_error(), "hugepages-64kB/enabled is [never]"),
		"the message does not name the knob: %s", mreg_last_error());
	T_CHECK(!strcmp(before, after), "the default allocation wrote sysfs");
	printf("default allocation: sysfs untouched, -EAGAIN names the knob\n");
	return T_PASS;
}

#define RACE_ALLOCS 10

/* Alternate 64 kB and PMD-sized buffers, each of which must verify. */
static void *alloc_alternately(void *arg)
{
	uint64_t sizes[2] = {65536, t_pmd_size()};
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

int main(void)
{
	static char before[SNAP_MAX], after[SNAP_MAX];
	int ret;

	t_init("test_policy");
	if (geteuid())
		return t_skip("changing the THP policy needs root");
	snapshot(before);
	ret = default_leaves_sysfs();
	if (!ret)
		ret = alloc_every_case();
	if (!ret)
		ret = alloc_fails_halfway(MREG_BACKING_ANON, 65536);
	if (!ret)
		ret = alloc_fails_halfway(MREG_BACKING_HUGETLB, t_pmd_size());
	if (!ret)
		ret = concurrent_allocs();
	if (ret)
		return ret;
	snapshot(after);
	T_CHECK(!strcmp(before, after), "policy changed:\n%s\nvs\n%s", before,
		after);
	printf("policy restored after %s\n", "success and failure paths");
	return T_PASS;
}
