// SPDX-License-Identifier: MIT
/*
 * mreg.ko (/dev/mreg): a long-term pin per region, owned by the open file,
 * and its folio-coalesced extents, as a userspace driver wants them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/types.h>

#include "../internal.h"
#include "uapi/mreg.h"

struct kmod_domain {
	int fd;
};

static int kmod_supported(void)
{
	return !access("/dev/mreg", R_OK | W_OK);
}

/* A module speaking another ABI would misread every struct we send. */
static int check_abi(int fd, const char *path)
{
	struct mreg_info info = {.size = sizeof(info)};

	if (ioctl(fd, MREG_IOC_INFO, &info))
		return mreg_fail(-errno, "kmod: %s: MREG_IOC_INFO: %s", path,
				 strerror(errno));
	if (info.abi_version != MREG_ABI_VERSION)
		return mreg_fail(-EPROTO, "kmod: %s speaks ABI %u, mreg %u",
				 path, info.abi_version, MREG_ABI_VERSION);
	return 0;
}

static int kmod_domain_open(struct mreg_domain *d,
			    const struct mreg_domain_attr *attr)
{
	const char *path =
		attr->comp_mask & MREG_DOMAIN_ATTR_DEVICE && attr->device
			? attr->device
			: "/dev/mreg";
	struct kmod_domain *k = calloc(1, sizeof(*k));
	int ret;

	if (!k)
		return -ENOMEM;
	k->fd = open(path, O_RDWR | O_CLOEXEC);
	if (k->fd < 0) {
		free(k);
		return mreg_fail(-errno,
				 "kmod: open %s: %s (is mreg.ko "
				 "loaded?)",
				 path, strerror(errno));
	}
	ret = check_abi(k->fd, path);
	if (ret) {
		close(k->fd);
		free(k);
		return ret;
	}
	d->priv = k;
	d->native = &k->fd;
	return 0;
}

static void kmod_domain_close(struct mreg_domain *d)
{
	struct kmod_domain *k = d->priv;

	close(k->fd);
	free(k);
}

static int kmod_reg(struct mreg_domain *d, struct mreg_region *r)
{
	struct kmod_domain *k = d->priv;
	struct mreg_pin pin = {
		.size = sizeof(pin),
		.addr = r->info.addr,
		.length = r->info.length,
	};
	uint64_t t0;
	int ret;

	if (!(d->access & (MREG_ACCESS_LOCAL_WRITE | MREG_ACCESS_REMOTE_WRITE)))
		pin.flags |= MREG_PIN_FLAG_READONLY;
	t0 = mreg_now_ns();
	ret = ioctl(k->fd, MREG_IOC_PIN, &pin) ? -errno : 0;
	r->info.reg_ns = mreg_now_ns() - t0;
	if (ret)
		return mreg_fail(ret, "kmod: PIN addr 0x%llx len %llu: %s%s",
				 (unsigned long long)r->info.addr,
				 (unsigned long long)r->info.length,
				 strerror(-ret), mreg_reg_hint(ret));
	r->info.index = pin.out_handle;
	r->info.nr_slices = pin.out_nr_extents;
	return 0;
}

static int kmod_dereg(struct mreg_domain *d, struct mreg_region *r,
		      uint64_t *ns)
{
	struct kmod_domain *k = d->priv;
	struct mreg_unpin unpin = {.size = sizeof(unpin),
				   .handle = r->info.index};
	uint64_t t0 = mreg_now_ns();
	int ret;

	ret = ioctl(k->fd, MREG_IOC_UNPIN, &unpin) ? -errno : 0;
	*ns = mreg_now_ns() - t0;
	if (ret)
		return mreg_fail(ret, "kmod: UNPIN handle %u: %s", unpin.handle,
				 strerror(-ret));
	return 0;
}

static int kmod_extents(const struct mreg_region *r,
			struct mreg_region_extent *ext, size_t *nr)
{
	const struct kmod_domain *k = r->domain->priv;
	struct mreg_extent *raw = calloc(*nr ? *nr : 1, sizeof(*raw));
	struct mreg_query q = {.size = sizeof(q),
			       .handle = r->info.index,
			       .extents = (uintptr_t)raw,
			       .nr_extents = *nr,
			       .extent_size = sizeof(*raw)};
	size_t i;
	int ret;

	if (!raw)
		return -ENOMEM;
	ret = ioctl(k->fd, MREG_IOC_QUERY, &q) ? -errno : 0;
	*nr = q.nr_extents;
	for (i = 0; !ret && i < q.nr_extents; i++)
		ext[i] = (struct mreg_region_extent){.offset = raw[i].offset,
						     .length = raw[i].length,
						     .phys = raw[i].phys,
						     .order = raw[i].order};
	free(raw);
	if (ret && ret != -EMSGSIZE)
		return mreg_fail(ret, "kmod: QUERY handle %u: %s",
				 r->info.index, strerror(-ret));
	return ret;
}

const struct mreg_backend_ops mreg_kmod_ops = {
	.type = MREG_BACKEND_KMOD,
	.name = "kmod",
	.supported = kmod_supported,
	.domain_open = kmod_domain_open,
	.domain_close = kmod_domain_close,
	.reg = kmod_reg,
	.dereg = kmod_dereg,
	.extents = kmod_extents,
};
