// SPDX-License-Identifier: MIT
/*
 * THP policy in sysfs: read it, narrow it to one folio size while a buffer
 * faults in, and put every file back the way it was.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define POLICY_MAX_FILES 64

struct mreg_thp_policy {
	int nr;
	bool locked; /* holds the policy lock (policy.c) until restored */
	struct mreg_policy_file files[POLICY_MAX_FILES];
};

int mreg_sysfs_read(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

int mreg_sysfs_write(const char *path, const char *val)
{
	size_t len = strlen(val);
	ssize_t n;
	int fd;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, val, len);
	close(fd);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

int mreg_sysfs_read_choice(const char *path, char *buf, size_t len)
{
	char raw[256], *open_br, *close_br;
	int ret;

	ret = mreg_sysfs_read(path, raw, sizeof(raw));
	if (ret)
		return ret;
	open_br = strchr(raw, '[');
	close_br = open_br ? strchr(open_br, ']') : NULL;
	if (!close_br || (size_t)(close_br - open_br) > len)
		return -EINVAL;
	*close_br = '\0';
	snprintf(buf, len, "%s", open_br + 1);
	return 0;
}

int mreg_sysfs_read_u64(const char *path, uint64_t *val)
{
	char buf[64];
	int ret;

	ret = mreg_sysfs_read(path, buf, sizeof(buf));
	if (ret)
		return ret;
	*val = strtoull(buf, NULL, 0);
	return 0;
}

uint64_t mreg_pmd_size(void)
{
	uint64_t size;

	if (mreg_sysfs_read_u64(THP_SYSFS "/hpage_pmd_size", &size))
		return 2ull << 20;
	return size;
}

static void size_dir(char *buf, size_t len, uint64_t folio_size)
{
	snprintf(buf, len, THP_SYSFS "/hugepages-%" PRIu64 "kB",
		 folio_size >> 10);
}

/* Before mTHP, /proc/vmstat counts PMD-sized THP allocations. */
static int vmstat_read(const char *name, uint64_t *val)
{
	char line[128];
	size_t n = strlen(name);
	FILE *f = fopen("/proc/vmstat", "re");
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, n) && line[n] == ' ') {
			*val = strtoull(line + n + 1, NULL, 10);
			ret = 0;
			break;
		}
	fclose(f);
	return ret;
}

int mreg_thp_stat(const char *name, uint64_t folio_size, uint64_t *val)
{
	char dir[96], path[160];

	if (!mreg_thp_per_size() && folio_size == mreg_pmd_size()) {
		if (!strcmp(name, "anon_fault_alloc"))
			return vmstat_read("thp_fault_alloc", val);
		if (!strcmp(name, "shmem_alloc"))
			return vmstat_read("thp_file_alloc", val);
		return -ENOENT;
	}
	size_dir(dir, sizeof(dir), folio_size);
	snprintf(path, sizeof(path), "%s/stats/%s", dir, name);
	return mreg_sysfs_read_u64(path, val);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Every hugepages-<size>kB directory, with or without an anon control. */
/* Sizes are a power of two from 8 kB up, so 64 slots hold every one the
 * kernel can offer; the smallest @max are returned, not the first found. */
#define THP_MAX_SIZES 64

/*
 * Multi-size THP (Linux 6.8) adds a hugepages-<size>kB directory per size.
 * Before it, the PMD size is the only one, under the top-level controls.
 */
bool mreg_thp_per_size(void)
{
	char path[160];

	snprintf(path, sizeof(path), THP_SYSFS "/hugepages-%" PRIu64 "kB",
		 mreg_pmd_size() >> 10);
	return !access(path, F_OK);
}

static int thp_dir_sizes(uint64_t *sizes, int max, bool anon_only)
{
	uint64_t all[THP_MAX_SIZES];
	struct dirent *de;
	char path[320];
	int nr = 0;
	DIR *dir;

	dir = opendir(THP_SYSFS);
	if (!dir)
		return -errno;
	while ((de = readdir(dir)) && nr < THP_MAX_SIZES) {
		unsigned long long kb;

		if (sscanf(de->d_name, "hugepages-%llukB", &kb) != 1)
			continue;
		snprintf(path, sizeof(path), THP_SYSFS "/%s/enabled",
			 de->d_name);
		if (anon_only && access(path, F_OK))
			continue;
		all[nr++] = (uint64_t)kb << 10;
	}
	closedir(dir);
	if (!nr && !access(THP_SYSFS "/enabled", F_OK))
		all[nr++] = mreg_pmd_size();
	qsort(all, (size_t)nr, sizeof(*all), cmp_u64);
	if (nr > max)
		nr = max;
	memcpy(sizes, all, (size_t)nr * sizeof(*sizes));
	return nr;
}

MREG_EXPORT int mreg_thp_sizes(uint64_t *sizes, int max)
{
	return thp_dir_sizes(sizes, max, true);
}

static int policy_add(struct mreg_thp_policy *p, const char *path)
{
	struct mreg_policy_file *f;
	char choice[32];
	int ret;

	if (access(path, F_OK))
		return 0;
	if (p->nr == POLICY_MAX_FILES)
		return -E2BIG;
	f = &p->files[p->nr];
	ret = mreg_policy_file_read(f, path);
	if (!ret && (!strchr(f->raw, '[') ||
		     mreg_policy_file_value(f, choice, sizeof(choice))))
		ret = -EINVAL;
	if (ret)
		return ret;
	p->nr++;
	return 0;
}

static int policy_add_sizes(struct mreg_thp_policy *p)
{
	uint64_t sizes[32];
	char dir[96], path[160];
	int nr, i, ret = 0;

	nr = thp_dir_sizes(sizes, 32, false);
	for (i = 0; i < nr && !ret; i++) {
		size_dir(dir, sizeof(dir), sizes[i]);
		snprintf(path, sizeof(path), "%s/enabled", dir);
		ret = policy_add(p, path);
		snprintf(path, sizeof(path), "%s/shmem_enabled", dir);
		if (!ret)
			ret = policy_add(p, path);
	}
	return nr < 0 ? nr : ret;
}

static int policy_read(struct mreg_thp_policy *p)
{
	int ret;

	ret = policy_add(p, THP_SYSFS "/enabled");
	if (!ret)
		ret = policy_add(p, THP_SYSFS "/shmem_enabled");
	if (!ret)
		ret = policy_add_sizes(p);
	if (ret)
		return mreg_fail(ret, "thp policy: cannot read %s: %s",
				 THP_SYSFS, strerror(-ret));
	return 0;
}

/*
 * Only root can write the policy, and only root can open the lock: a
 * snapshot taken without root is for reading, and takes no lock.
 */
MREG_EXPORT int mreg_thp_policy_save(struct mreg_thp_policy **out)
{
	struct mreg_thp_policy *p;
	int ret = 0;

	/* Before the lock: a NULL @out must not leave a record behind. */
	if (!out)
		return mreg_fail(-EINVAL, "thp policy: save: out is NULL");
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	if (!geteuid()) {
		ret = mreg_policy_lock();
		p->locked = !ret;
	}
	if (!ret)
		ret = policy_read(p);
	if (!ret && p->locked)
		ret = mreg_policy_record(p->files, p->nr);
	if (ret) {
		if (p->locked)
			mreg_policy_unlock(true);
		free(p);
		return ret;
	}
	*out = p;
	return 0;
}

MREG_EXPORT int mreg_thp_policy_restore(struct mreg_thp_policy *p)
{
	int i, ret, first = 0;
	char val[32];

	if (!p)
		return 0;
	for (i = 0; i < p->nr; i++) {
		ret = mreg_policy_file_put(&p->files[i]);
		if (ret >= 0 || first)
			continue;
		if (mreg_policy_file_value(&p->files[i], val, sizeof(val)))
			snprintf(val, sizeof(val), "?");
		first = mreg_fail(ret, "thp policy: restore %s=%s: %s",
				  p->files[i].path, val, strerror(-ret));
	}
	if (p->locked)
		mreg_policy_unlock(!first);
	free(p);
	return first;
}

static const char *const mode_names[] = {
	[MREG_THP_NEVER] = "never",
	[MREG_THP_MADVISE] = "madvise",
	[MREG_THP_ALWAYS] = "always",
};

/* Write @on to the @file control of @folio_size and "never" to the rest. */
static int select_one(const char *file, uint64_t folio_size, const char *on)
{
	uint64_t sizes[32];
	char dir[96], path[160];
	int nr, i, ret;

	if (!mreg_thp_per_size()) {
		snprintf(path, sizeof(path), THP_SYSFS "/%s", file);
		ret = mreg_sysfs_write(
			path, folio_size == mreg_pmd_size() ? on : "never");
		return ret ? mreg_fail(ret, "thp policy: write %s: %s", path,
				       strerror(-ret))
			   : 0;
	}
	nr = thp_dir_sizes(sizes, 32, false);
	if (nr < 0)
		return nr;
	for (i = 0; i < nr; i++) {
		size_dir(dir, sizeof(dir), sizes[i]);
		snprintf(path, sizeof(path), "%s/%s", dir, file);
		if (access(path, F_OK))
			continue;
		ret = mreg_sysfs_write(path,
				       sizes[i] == folio_size ? on : "never");
		if (ret)
			return mreg_fail(ret, "thp policy: write %s: %s", path,
					 strerror(-ret));
	}
	return 0;
}

/* 4096 (every size off) or a size with its hugepages-<size>kB directory. */
static bool size_selectable(uint64_t folio_size)
{
	uint64_t sizes[32];
	int nr, i;

	if (folio_size == 4096)
		return true;
	nr = thp_dir_sizes(sizes, 32, false);
	for (i = 0; i < nr; i++)
		if (sizes[i] == folio_size)
			return true;
	return false;
}

MREG_EXPORT int mreg_thp_select_anon(uint64_t folio_size,
				     enum mreg_thp_mode mode)
{
	int ret;

	if (mode > MREG_THP_ALWAYS)
		return mreg_fail(-EINVAL, "thp policy: bad mode %d", mode);
	/* A typo would turn every size off, machine-wide: refuse it. */
	if (!size_selectable(folio_size))
		return mreg_fail(-EINVAL,
				 "thp policy: folio_size %" PRIu64 " is not a "
				 "THP size this kernel offers (nor 4096: none)",
				 folio_size);
	if (geteuid())
		return mreg_fail(-EPERM, "thp policy: selecting a folio size "
					 "writes sysfs: needs root");
	ret = mreg_policy_lock();
	if (ret)
		return ret;
	ret = select_one("enabled", folio_size, mode_names[mode]);
	mreg_policy_unlock(true);
	return ret;
}

int mreg_thp_select_shmem(uint64_t folio_size)
{
	int ret;

	/* The global knob governs memfd; the per-size ones shared anon. */
	ret = mreg_sysfs_write(THP_SYSFS "/shmem_enabled",
			       folio_size == mreg_pmd_size() ? "advise"
							     : "never");
	if (ret)
		return mreg_fail(ret, "thp policy: write shmem_enabled: %s",
				 strerror(-ret));
	return select_one("shmem_enabled", folio_size, "advise");
}
