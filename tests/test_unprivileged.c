// SPDX-License-Identifier: MIT
/*
 * Without root the allocator can neither read PFNs nor change the THP
 * policy: the histogram must then be labelled an estimate, and a size the
 * current policy forbids must fail loudly (-EAGAIN), not pass silently.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tcommon.h"

/* An offered mTHP size whose anon policy is "never" right now. */
static uint64_t size_set_to_never(void)
{
	uint64_t sizes[32];
	char path[160], buf[128];
	FILE *f;
	int nr, i;

	nr = mreg_thp_sizes(sizes, 32);
	for (i = 0; i < nr; i++) {
		snprintf(
			path, sizeof(path),
			"/sys/kernel/mm/transparent_hugepage/hugepages-%" PRIu64
			"kB/enabled",
			sizes[i] >> 10);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) && strstr(buf, "[never]")) {
			fclose(f);
			return sizes[i];
		}
		fclose(f);
	}
	return 0;
}

static int as_nobody(uint64_t folio)
{
	struct t_folio c = {.size = folio, .backing = MREG_BACKING_ANON};
	struct mreg_buf_attr attr = {.size = sizeof(attr),
				     .flags = MREG_BUF_ALLOW_FALLBACK,
				     .length = 4u << 20,
				     .folio_size = folio};
	struct mreg_buf *buf;
	int ret;

	T_CHECK(!setgid(65534) && !setuid(65534), "drop to nobody");
	ret = t_buf(&c, 4u << 20, &buf);
	T_CHECK(ret == -EAGAIN, "policy 'never' yet alloc returned %d", ret);
	T_CHECK(strstr(mreg_last_error(), "estimate"),
		"message does not say the histogram is an estimate: %s",
		mreg_last_error());
	T_CHECK(!mreg_buf_alloc(&attr, &buf), "%s", mreg_last_error());
	T_CHECK(!mreg_buf_verified(buf) &&
			mreg_buf_hist(buf)->method == MREG_VERIFY_ESTIMATE,
		"fallback buffer must be unverified and estimated");
	printf("unprivileged: %s\n", mreg_last_error());
	mreg_buf_free(buf);
	return T_PASS;
}

int main(void)
{
	uint64_t folio;
	int status;
	pid_t pid;

	t_init("test_unprivileged");
	if (geteuid())
		return t_skip("needs root to become nobody");
	folio = size_set_to_never();
	if (!folio)
		return t_skip("no mTHP size is set to 'never' here");
	pid = fork();
	if (!pid)
		_exit(as_nobody(folio));
	T_CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork");
	T_CHECK(WIFEXITED(status) && !WEXITSTATUS(status),
		"unprivileged checks failed");
	return T_PASS;
}
