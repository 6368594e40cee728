// SPDX-License-Identifier: MIT
/*
 * mreg.ko (/dev/mreg): a long-term pin per region, owned by the open file,
 * and its folio-coalesced extents, as a userspace driver wants them.
 */
#include <errno.h>
#include <stdbool.h>
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
	bool adopted; /* the caller's /dev/mreg file: never closed */
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
		return mreg_fail(-errno, "kmod: %s: MREG_IOC_INFO: %s%s", path,
				 strerror(errno), mreg_kmod_hint(-errno));
	if (info.abi_version != MREG_ABI_VERSION)
		return mreg_fail(-EPROTO, "kmod: %s speaks ABI %u, mreg %u",
				 path, info.abi_version, MREG_ABI_VERSION);
	return 0;
}

static int open_own(struct kmod_domain *k, const char *path)
{
	int err;

	k->fd = open(path, O_RDWR | O_CLOEXEC);
	if (k->fd < 0) {
		err = errno;
		return mreg_fail(-err, "kmod: open %s: %s (%s)", path,
				 strerror(err), mreg_kmod_open_hint(err));
	}
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
		return mreg_fail(-ENOMEM, "kmod: out of memory");
	k->fd = -1;
	if (!mreg_adopted(attr)) {
		ret = open_own(k, path);
	} else if (attr->fd < 0) {
		ret = mreg_fail(-EBADF, "kmod: adopt needs fd (/dev/mreg)");
	} else {
		k->fd = attr->fd;
		k->adopted = true;
		ret = 0;
	}
	if (!ret)
		ret = check_abi(k->fd,
				mreg_adopted(attr) ? "the adopted fd" : path);
	if (ret) {
		if (!k->adopted && k->fd >= 0)
			close(k->fd);
		free(k);
		return ret;
	}
	d->priv = k;
	d->native = &k->fd;
	return 0;
}

/* An adopted file stays open: the caller's pins on it are its own. */
static void kmod_domain_close(struct mreg_domain *d)
{
	struct kmod_domain *k = d->priv;

	if (!k->adopted)
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

	if (!(r->access & (MREG_ACCESS_LOCAL_WRITE | MREG_ACCESS_REMOTE_WRITE)))
		pin.flags |= MREG_PIN_FLAG_READONLY;
	t0 = mreg_now_ns();
	ret = ioctl(k->fd, MREG_IOC_PIN, &pin) ? -errno : 0;
	r->info.reg_ns = mreg_now_ns() - t0;
	if (ret)
		return mreg_fail(ret, "kmod: PIN addr 0x%llx len %llu: %s%s%s",
				 (unsigned long long)r->info.addr,
				 (unsigned long long)r->info.length,
				 strerror(-ret),
				 ret == -EFAULT ? mreg_reg_hint(ret) : "",
				 mreg_kmod_hint(ret));
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
		return mreg_fail(ret, "kmod: UNPIN handle %u: %s%s",
				 unpin.handle, strerror(-ret),
				 mreg_kmod_hint(ret));
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
		return mreg_fail(ret, "kmod: QUERY handle %u: %s%s",
				 r->info.index, strerror(-ret),
				 mreg_kmod_hint(ret));
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
