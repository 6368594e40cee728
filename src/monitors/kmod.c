// SPDX-License-Identifier: MIT
/*
 * KMOD monitor: mreg.ko's watches. One watch (an mmu interval notifier)
 * per cached range; the generation array is the module's, mapped
 * read-only, so checking an entry is one load.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <linux/types.h>

#include "../internal.h"
#include "../monitor.h"
#include "uapi/mreg.h"

struct kmod_monitor {
	int fd;
	bool adopted; /* the caller's /dev/mreg: never closed */
	size_t map_len;
	void *map;
	bool no_rwf_nowait; /* module without RWF_NOWAIT: poll, then read */
};

static int kmod_open_fd(struct kmod_monitor *k, const struct mreg_cache_attr *a)
{
	int err;

	if (a->comp_mask & MREG_CACHE_ATTR_KMOD_FD) {
		if (a->kmod_fd < 0)
			return mreg_fail(-EBADF,
					 "cache: kmod_fd %d is not a file",
					 a->kmod_fd);
		k->fd = a->kmod_fd;
		k->adopted = true;
		return 0;
	}
	k->fd = open("/dev/mreg", O_RDWR | O_CLOEXEC);
	if (k->fd < 0) {
		err = errno;
		return mreg_fail(-err,
				 "cache: kmod monitor: open /dev/mreg: %s (%s)",
				 strerror(err), mreg_kmod_open_hint(err));
	}
	return 0;
}

static int kmod_map(struct kmod_monitor *k, struct mreg_monitor *m)
{
	struct mreg_watch_info info = {.size = sizeof(info)};
	struct mreg_info mi = {.size = sizeof(mi)};
	long page = sysconf(_SC_PAGESIZE);

	if (ioctl(k->fd, MREG_IOC_INFO, &mi))
		return mreg_fail(-errno,
				 "cache: kmod fd %d: MREG_IOC_INFO: %s%s",
				 k->fd, strerror(errno),
				 errno == ENOTTY ? " (not /dev/mreg)"
						 : mreg_kmod_hint(-errno));
	if (ioctl(k->fd, MREG_IOC_WATCH_INFO, &info))
		return mreg_fail(
			errno == ENOTTY ? -EOPNOTSUPP : -errno,
			"cache: kmod monitor: MREG_IOC_WATCH_INFO: %s%s",
			strerror(errno),
			errno == ENOTTY
				? " (mreg.ko without watches: update it)"
				: "");
	k->map_len = ((size_t)info.max_watches + 1) * sizeof(uint64_t);
	k->map_len = (k->map_len + (size_t)page - 1) & ~((size_t)page - 1);
	k->map = mmap(NULL, k->map_len, PROT_READ, MAP_SHARED, k->fd, 0);
	if (k->map == MAP_FAILED)
		return mreg_fail(
			-errno, "cache: kmod monitor: mmap of %zu bytes: %s%s",
			k->map_len, strerror(errno), mreg_kmod_hint(-errno));
	m->gens = k->map;
	m->max_watches = info.max_watches;
	return 0;
}

static void kmod_close(struct mreg_monitor *m)
{
	struct kmod_monitor *k = m->priv;

	if (!k)
		return;
	if (k->map && k->map != MAP_FAILED)
		munmap(k->map, k->map_len);
	if (!k->adopted && k->fd >= 0)
		close(k->fd);
	free(k);
	m->priv = NULL;
}

static int kmod_open(struct mreg_monitor *m, const struct mreg_cache_attr *a)
{
	struct kmod_monitor *k = calloc(1, sizeof(*k));
	int ret;

	if (!k)
		return mreg_fail(-ENOMEM, "cache: out of memory");
	k->fd = -1;
	m->priv = k;
	ret = kmod_open_fd(k, a);
	if (!ret)
		ret = kmod_map(k, m);
	if (ret)
		kmod_close(m);
	return ret;
}

static int kmod_watch(struct mreg_monitor *m, uint64_t start, uint64_t len,
		      uint32_t *id, uint64_t *gen)
{
	struct kmod_monitor *k = m->priv;
	struct mreg_watch w = {.size = sizeof(w), .addr = start, .length = len};

	if (ioctl(k->fd, MREG_IOC_WATCH, &w))
		return mreg_fail(-errno, "cache: WATCH 0x%llx len %llu: %s%s",
				 (unsigned long long)start,
				 (unsigned long long)len, strerror(errno),
				 mreg_kmod_hint(-errno));
	*id = w.out_id;
	*gen = w.out_generation;
	return 0;
}

static void kmod_unwatch(struct mreg_monitor *m, uint32_t id)
{
	struct kmod_monitor *k = m->priv;
	struct mreg_unwatch u = {.size = sizeof(u), .id = id};

	if (ioctl(k->fd, MREG_IOC_UNWATCH, &u))
		mreg_log(MREG_LOG_WARN, "cache: UNWATCH %u: %s", id,
			 strerror(errno));
}

/*
 * The fd may be the caller's: its O_NONBLOCK is not ours to set, and
 * another reader may take the event between a poll() and a read().  So
 * read with RWF_NOWAIT, which mreg.ko honours whatever the fd's flags; a
 * module from before RWF_NOWAIT (EOPNOTSUPP) is polled first, as then.
 */
static ssize_t kmod_read_nowait(struct kmod_monitor *k, void *buf, size_t len)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct pollfd p = {.fd = k->fd, .events = POLLIN};
	ssize_t n;

	if (!k->no_rwf_nowait) {
		n = preadv2(k->fd, &iov, 1, -1, RWF_NOWAIT);
		if (n >= 0 || errno != EOPNOTSUPP)
			return n;
		k->no_rwf_nowait = true;
	}
	if (poll(&p, 1, 0) <= 0 || !(p.revents & POLLIN)) {
		errno = EAGAIN;
		return -1;
	}
	return read(k->fd, buf, len);
}

static int kmod_events(struct mreg_monitor *m, uint32_t *ids, int max)
{
	struct kmod_monitor *k = m->priv;
	struct mreg_watch_event ev[64];
	ssize_t n;
	int i;

	if (max > 64)
		max = 64;
	n = kmod_read_nowait(k, ev, (size_t)max * sizeof(ev[0]));
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	for (i = 0; i < n / (ssize_t)sizeof(ev[0]); i++)
		ids[i] = ev[i].id;
	return i;
}

static void kmod_counts(struct mreg_monitor *m, uint64_t *events)
{
	struct kmod_monitor *k = m->priv;
	struct mreg_watch_info info = {.size = sizeof(info)};

	if (!ioctl(k->fd, MREG_IOC_WATCH_INFO, &info))
		memcpy(events, info.events, sizeof(info.events));
}

const struct mreg_monitor_ops mreg_monitor_kmod_ops = {
	.type = MREG_CACHE_MONITOR_KMOD,
	.name = "kmod",
	.open = kmod_open,
	.close = kmod_close,
	.watch = kmod_watch,
	.unwatch = kmod_unwatch,
	.events = kmod_events,
	.counts = kmod_counts,
};
