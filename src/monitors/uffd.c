// SPDX-License-Identifier: MIT
/*
 * UFFD monitor: the fallback where mreg.ko cannot be loaded. Cached ranges
 * are registered with a userfaultfd of the cache's own, in write-protect
 * mode that is never armed (no fault is ever delivered), for its
 * non-cooperative events: UNMAP (munmap, mmap(MAP_FIXED) over the range,
 * brk shrink, mremap shrink), REMAP (mremap) and REMOVE (MADV_DONTNEED,
 * MADV_REMOVE). The kernel sends them whoever unmaps, libc or a raw
 * syscall, which is what the user-space hooks of UCX and libfabric miss.
 *
 * Why not hooks, or pagemap? Hooks see only calls through the symbols
 * they patch (a raw syscall, a munmap inside libc, shmat over the range
 * go unseen); pagemap shows no PFNs without CAP_SYS_ADMIN, so a cache
 * could not compare pages at all.
 *
 * What it cannot see, as the kernel sends no event: shmat(SHM_REMAP)
 * over a range (ipc/shm.c maps without the userfaultfd unmap list), a
 * hole punched in, or truncation of, a file or memfd mapped shared, and
 * page replacement that keeps the VMA. And one window: the kernel queues
 * UNMAP only after munmap() has dropped the mmap lock, so while one
 * thread's munmap() is between the two, another thread can map the same
 * address, fill it and get the old entry. mreg_cache_open(3) lists them.
 *
 * The kernel holds the unmapping thread until the event is read; it
 * returns as soon as read() has dequeued it, possibly before this thread
 * bumped the generation. So the thread raises @inflight before reading,
 * and lookups wait for it to fall back (mreg_uffd_sync()): a lookup after
 * the unmapping call returned then sees the bump. The thread takes no
 * lock a cache user can hold across a system call, and allocates nothing,
 * so it never waits on an unmapping thread itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/types.h>

#include "../internal.h"
#include "../itree.h"
#include "../monitor.h"
#include "uapi/mreg.h"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

#define UFFD_MAX_WATCHES 16383u
#define UFFD_EV_REMAP	 8 /* stats slot for REMAP, beyond the kmod kinds */

struct uffd_watch {
	struct mreg_itree_node node;
	uint32_t id;
	bool queued;
	uint32_t qprev, qnext; /* the event queue; watches[0] is its head */
};

struct uffd_monitor {
	int uffd;
	int stopfd; /* eventfd: the thread ends when it is readable */
	pthread_t thread;
	bool thread_started;
	uint64_t features; /* what UFFDIO_API granted */
	/* The watches, free ids and the event queue; never held across a
	 * system call or an allocation: the thread takes it. */
	pthread_mutex_t lock;
	/* Orders UFFDIO_REGISTER of a new watch against UFFDIO_UNREGISTER of
	 * an overlapping old one, so that an unregister cannot strip a range
	 * registered after its overlap check. Taken before @lock; never by
	 * the thread. */
	pthread_mutex_t reg_lock;
	struct mreg_itree tree;
	struct uffd_watch *watches; /* [UFFD_MAX_WATCHES + 1] */
	uint32_t *free_ids, nr_free;
	uint64_t *gens;	   /* [UFFD_MAX_WATCHES + 1] */
	uint32_t inflight; /* events being read and applied */
	uint64_t counts[16];
};

static void bump(uint64_t *slot)
{
	/* Pairs with mreg_monitor_gen()'s acquire load. */
	__atomic_store_n(slot, *slot + 1, __ATOMIC_RELEASE);
}

static void queue_add(struct uffd_monitor *u, struct uffd_watch *w)
{
	struct uffd_watch *head = &u->watches[0];

	w->queued = true;
	w->qnext = 0;
	w->qprev = head->qprev;
	u->watches[head->qprev].qnext = w->id;
	head->qprev = w->id;
}

static void queue_del(struct uffd_monitor *u, struct uffd_watch *w)
{
	u->watches[w->qprev].qnext = w->qnext;
	u->watches[w->qnext].qprev = w->qprev;
	w->queued = false;
}

struct inval_ctx {
	struct uffd_monitor *u;
	int hits;
};

/* Under u->lock, from the thread. */
static bool inval_one(struct mreg_itree_node *n, void *arg)
{
	struct uffd_watch *w = (struct uffd_watch *)n;
	struct inval_ctx *ctx = arg;
	struct uffd_monitor *u = ctx->u;

	bump(&u->gens[w->id]);
	if (!w->queued)
		queue_add(u, w);
	ctx->hits++;
	return false;
}

static void invalidate(struct uffd_monitor *u, uint64_t start, uint64_t end,
		       int kind)
{
	struct inval_ctx ctx = {.u = u};

	pthread_mutex_lock(&u->lock);
	u->counts[kind]++;
	mreg_itree_find_overlapping(&u->tree, start, end, inval_one, &ctx);
	if (ctx.hits)
		bump(&u->gens[0]);
	pthread_mutex_unlock(&u->lock);
}

static void handle(struct uffd_monitor *u, const struct uffd_msg *m)
{
	switch (m->event) {
	case UFFD_EVENT_UNMAP:
		invalidate(u, m->arg.remove.start, m->arg.remove.end,
			   MREG_WATCH_UNMAP);
		break;
	case UFFD_EVENT_REMOVE:
		invalidate(u, m->arg.remove.start, m->arg.remove.end,
			   MREG_WATCH_CLEAR);
		break;
	case UFFD_EVENT_REMAP:
		invalidate(u, m->arg.remap.from,
			   m->arg.remap.from + m->arg.remap.len, UFFD_EV_REMAP);
		break;
	default:
		/* No fault can come: write protection is never armed. */
		break;
	}
}

static void read_events(struct uffd_monitor *u)
{
	struct uffd_msg msgs[16];
	ssize_t n;
	int i;

	/* Before read(): the unmapping thread resumes once it returns. */
	__atomic_add_fetch(&u->inflight, 1, __ATOMIC_SEQ_CST);
	n = read(u->uffd, msgs, sizeof(msgs));
	for (i = 0; i < n / (ssize_t)sizeof(msgs[0]); i++)
		handle(u, &msgs[i]);
	__atomic_sub_fetch(&u->inflight, 1, __ATOMIC_RELEASE);
}

static void *uffd_thread(void *arg)
{
	struct uffd_monitor *u = arg;
	struct pollfd p[2] = {{.fd = u->uffd, .events = POLLIN},
			      {.fd = u->stopfd, .events = POLLIN}};

	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		if (p[0].revents & POLLIN)
			read_events(u);
		else if (p[0].revents & (POLLERR | POLLHUP))
			break;
	}
	return NULL;
}

static int uffd_create(struct uffd_monitor *u)
{
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = UFFD_FEATURE_EVENT_UNMAP |
			    UFFD_FEATURE_EVENT_REMAP |
			    UFFD_FEATURE_EVENT_REMOVE,
	};

	/* User-mode only: allowed unprivileged whatever
	 * vm.unprivileged_userfaultfd says; no kernel fault comes anyway.
	 * Before Linux 5.11 there is no such flag: then that sysctl, or
	 * CAP_SYS_PTRACE, decides. */
	u->uffd = (int)syscall(SYS_userfaultfd,
			       O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (u->uffd < 0 && errno == EINVAL)
		u->uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (u->uffd < 0)
		return mreg_fail(-errno,
				 "cache: uffd monitor: userfaultfd(): %s%s",
				 strerror(errno),
				 errno == EPERM ? " (before Linux 5.11, "
						  "unprivileged use needs "
						  "vm.unprivileged_userfaultfd"
						  "=1 or CAP_SYS_PTRACE)"
						: "");
	if (ioctl(u->uffd, UFFDIO_API, &api))
		return mreg_fail(-errno,
				 "cache: uffd monitor: UFFDIO_API (events "
				 "UNMAP, REMAP, REMOVE): %s",
				 strerror(errno));
	u->features = api.features;
	u->stopfd = eventfd(0, EFD_CLOEXEC);
	if (u->stopfd < 0)
		return mreg_fail(-errno, "cache: uffd monitor: eventfd: %s",
				 strerror(errno));
	return 0;
}

static int uffd_alloc(struct uffd_monitor *u, struct mreg_monitor *m)
{
	uint32_t i, n = UFFD_MAX_WATCHES + 1;

	u->watches = calloc(n, sizeof(*u->watches));
	u->free_ids = calloc(n, sizeof(*u->free_ids));
	u->gens = calloc(n, sizeof(*u->gens));
	if (!u->watches || !u->free_ids || !u->gens)
		return mreg_fail(-ENOMEM, "cache: out of memory");
	for (i = 0; i < UFFD_MAX_WATCHES; i++)
		u->free_ids[i] = UFFD_MAX_WATCHES - i; /* 1 comes out first */
	u->nr_free = UFFD_MAX_WATCHES;
	m->gens = u->gens;
	m->max_watches = UFFD_MAX_WATCHES;
	return 0;
}

static void uffd_close(struct mreg_monitor *m)
{
	struct uffd_monitor *u = m->priv;
	uint64_t one = 1;

	if (!u)
		return;
	if (u->thread_started) {
		if (write(u->stopfd, &one, sizeof(one)) != sizeof(one))
			mreg_log(MREG_LOG_WARN, "cache: uffd monitor: stop: %s",
				 strerror(errno));
		pthread_join(u->thread, NULL);
	}
	/* Closing the uffd unregisters every range it still has. */
	if (u->uffd >= 0)
		close(u->uffd);
	if (u->stopfd >= 0)
		close(u->stopfd);
	pthread_mutex_destroy(&u->lock);
	pthread_mutex_destroy(&u->reg_lock);
	free(u->watches);
	free(u->free_ids);
	free(u->gens);
	free(u);
	m->priv = NULL;
}

/* With every signal blocked: the application's handlers are not ours to
 * run, and a stop signal must not stop the thread that unmaps wait on. */
static int start_thread(struct uffd_monitor *u)
{
	sigset_t all, old;
	int ret;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&u->thread, NULL, uffd_thread, u);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		return mreg_fail(-ret, "cache: uffd monitor: thread: %s",
				 strerror(ret));
	u->thread_started = true;
	return 0;
}

static int uffd_open(struct mreg_monitor *m, const struct mreg_cache_attr *a)
{
	struct uffd_monitor *u = calloc(1, sizeof(*u));
	int ret;

	(void)a;
	if (!u)
		return mreg_fail(-ENOMEM, "cache: out of memory");
	u->uffd = u->stopfd = -1;
	pthread_mutex_init(&u->lock, NULL);
	pthread_mutex_init(&u->reg_lock, NULL);
	m->priv = u;
	ret = uffd_create(u);
	if (!ret)
		ret = uffd_alloc(u, m);
	if (!ret)
		ret = start_thread(u);
	if (ret)
		uffd_close(m);
	return ret;
}

/*
 * -EOPNOTSUPP for a range uffd cannot watch (SysV shm, a file other than
 * shmem or hugetlbfs, VM_IO, another userfaultfd's): the cache registers
 * it uncached.
 */
static int uffd_register(struct uffd_monitor *u, uint64_t start, uint64_t len)
{
	struct uffdio_register reg = {
		.range = {.start = start, .len = len},
		.mode = UFFDIO_REGISTER_MODE_WP,
	};

	if (!ioctl(u->uffd, UFFDIO_REGISTER, &reg))
		return 0;
	if (errno != EINVAL && errno != EBUSY)
		return mreg_fail(-errno,
				 "cache: uffd monitor: UFFDIO_REGISTER 0x%llx "
				 "len %llu: %s",
				 (unsigned long long)start,
				 (unsigned long long)len, strerror(errno));
	mreg_log(MREG_LOG_INFO,
		 "cache: uffd monitor cannot watch 0x%llx len %llu (%s): "
		 "registered uncached",
		 (unsigned long long)start, (unsigned long long)len,
		 errno == EBUSY ? "another userfaultfd has it"
				: "SysV shm, a file other than shmem or "
				  "hugetlbfs, VM_IO, or shmem and hugetlbfs "
				  "before Linux 5.19's write-protect mode");
	return -EOPNOTSUPP;
}

static void unwatch_locked(struct uffd_monitor *u, uint32_t id);

static int uffd_watch(struct mreg_monitor *m, uint64_t start, uint64_t len,
		      uint32_t *id, uint64_t *gen)
{
	struct uffd_monitor *u = m->priv;
	struct uffd_watch *w;
	int ret;

	pthread_mutex_lock(&u->reg_lock);
	pthread_mutex_lock(&u->lock);
	if (!u->nr_free) {
		pthread_mutex_unlock(&u->lock);
		pthread_mutex_unlock(&u->reg_lock);
		return mreg_fail(-ENOSPC,
				 "cache: uffd monitor: %u watches in use",
				 UFFD_MAX_WATCHES);
	}
	*id = u->free_ids[--u->nr_free];
	w = &u->watches[*id];
	w->id = *id;
	w->queued = false;
	w->node.start = start;
	w->node.end = start + len;
	mreg_itree_insert(&u->tree, &w->node);
	*gen = u->gens[*id];
	pthread_mutex_unlock(&u->lock);
	/* After the insert: an event from here on bumps the generation. */
	ret = uffd_register(u, start, len);
	if (ret)
		unwatch_locked(u, *id);
	pthread_mutex_unlock(&u->reg_lock);
	return ret;
}

struct overlap_ctx {
	uint32_t self;
	bool found;
};

static bool other_overlaps(struct mreg_itree_node *n, void *arg)
{
	struct overlap_ctx *ctx = arg;

	if (((struct uffd_watch *)n)->id == ctx->self)
		return false;
	ctx->found = true;
	return true;
}

/* Under reg_lock. The range stays registered while another watch
 * overlaps it. */
static void unwatch_locked(struct uffd_monitor *u, uint32_t id)
{
	struct uffd_watch *w = &u->watches[id];
	struct overlap_ctx ctx = {.self = id};
	struct uffdio_range r;

	pthread_mutex_lock(&u->lock);
	mreg_itree_find_overlapping(&u->tree, w->node.start, w->node.end,
				    other_overlaps, &ctx);
	r.start = w->node.start;
	r.len = w->node.end - w->node.start;
	mreg_itree_remove(&u->tree, &w->node);
	if (w->queued)
		queue_del(u, w);
	w->id = 0;
	u->free_ids[u->nr_free++] = id;
	pthread_mutex_unlock(&u->lock);
	/* Errors are expected: the range is usually unmapped by now. */
	if (!ctx.found)
		ioctl(u->uffd, UFFDIO_UNREGISTER, &r);
}

static void uffd_unwatch(struct mreg_monitor *m, uint32_t id)
{
	struct uffd_monitor *u = m->priv;

	pthread_mutex_lock(&u->reg_lock);
	unwatch_locked(u, id);
	pthread_mutex_unlock(&u->reg_lock);
}

static int uffd_events(struct mreg_monitor *m, uint32_t *ids, int max)
{
	struct uffd_monitor *u = m->priv;
	uint32_t id;
	int n = 0;

	pthread_mutex_lock(&u->lock);
	while (n < max && (id = u->watches[0].qnext)) {
		queue_del(u, &u->watches[id]);
		ids[n++] = id;
	}
	pthread_mutex_unlock(&u->lock);
	return n;
}

static void uffd_counts(struct mreg_monitor *m, uint64_t *events)
{
	struct uffd_monitor *u = m->priv;

	pthread_mutex_lock(&u->lock);
	memcpy(events, u->counts, sizeof(u->counts));
	pthread_mutex_unlock(&u->lock);
}

static void uffd_sync(struct mreg_monitor *m)
{
	struct uffd_monitor *u = m->priv;

	while (__atomic_load_n(&u->inflight, __ATOMIC_ACQUIRE))
		sched_yield();
}

const struct mreg_monitor_ops mreg_monitor_uffd_ops = {
	.type = MREG_CACHE_MONITOR_UFFD,
	.name = "uffd",
	.open = uffd_open,
	.close = uffd_close,
	.watch = uffd_watch,
	.unwatch = uffd_unwatch,
	.events = uffd_events,
	.counts = uffd_counts,
	.sync = uffd_sync,
};
