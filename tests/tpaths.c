// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tcommon.h"
#include "tpaths.h"
#include "tvfio.h"

static const enum mreg_backend all_backends[T_MAX_PATHS] = {
	MREG_BACKEND_IO_URING, MREG_BACKEND_VERBS, MREG_BACKEND_VFIO,
	MREG_BACKEND_IOMMUFD,  MREG_BACKEND_KMOD,  MREG_BACKEND_DPDK,
};

static int needs_device(enum mreg_backend b)
{
	return b == MREG_BACKEND_VFIO || b == MREG_BACKEND_IOMMUFD ||
	       b == MREG_BACKEND_DPDK;
}

int t_paths(struct t_path *paths, int max)
{
	char bdf[64] = "";
	int have_dev = !t_vfio_device(bdf, sizeof(bdf)), n = 0, i;

	for (i = 0; i < T_MAX_PATHS && n < max; i++) {
		enum mreg_backend b = all_backends[i];
		const char *name = mreg_backend_name(b);

		if (!mreg_backend_supported(b)) {
			printf("  %s: not here (not built or no device node)\n",
			       name);
			continue;
		}
		if (needs_device(b) && !have_dev) {
			printf("  %s: not here (no device bound to vfio-pci)\n",
			       name);
			continue;
		}
		paths[n].backend = b;
		paths[n].name = name;
		snprintf(paths[n].device, sizeof(paths[n].device), "%s",
			 needs_device(b) ? bdf : "");
		n++;
	}
	return n;
}

int t_paths_only(struct t_path *paths, int n, const char *name)
{
	int i;

	if (!name || !*name)
		return n;
	for (i = 0; i < n; i++)
		if (!strcmp(paths[i].name, name)) {
			paths[0] = paths[i];
			return 1;
		}
	return 0;
}

int t_path_open(const struct t_path *p, struct mreg_domain **d)
{
	struct mreg_domain_attr attr = {.backend = p->backend};

	if (p->device[0]) {
		attr.comp_mask = MREG_DOMAIN_ATTR_DEVICE;
		attr.device = p->device;
	}
	return mreg_domain_open(&attr, d);
}

int t_path_works(const struct t_path *p)
{
	const size_t len = 2u << 20;
	struct mreg_domain *d;
	struct mreg_region *r;
	void *buf = t_map(len, 1);
	int ret;

	if (!buf)
		return -ENOMEM;
	ret = t_path_open(p, &d);
	if (!ret) {
		ret = mreg_region_register(d, buf, len, &r);
		if (!ret)
			ret = mreg_region_deregister(r, NULL);
		if (!ret)
			ret = mreg_domain_close(d);
		else
			mreg_domain_close(d);
	}
	munmap(buf, len);
	return ret;
}

static long file_field_kb(const char *path, const char *field)
{
	char line[128];
	size_t n = strlen(field);
	long kb = -1;
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ':') {
			sscanf(line + n + 1, "%ld", &kb);
			break;
		}
	fclose(f);
	return kb;
}

long t_status_kb(const char *field)
{
	return file_field_kb("/proc/self/status", field);
}

long t_meminfo_kb(const char *field)
{
	return file_field_kb("/proc/meminfo", field);
}

int t_write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

void *t_map(size_t len, int populate)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS |
			       (populate ? MAP_POPULATE : 0),
		       -1, 0);

	return p == MAP_FAILED ? NULL : p;
}
