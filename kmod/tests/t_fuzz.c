// SPDX-License-Identifier: GPL-2.0
/*
 * Structure-aware fuzzing of /dev/mreg, bounded: MREG_FUZZ_COUNT calls
 * (default 20000; >= 100000 for a soak) split over MREG_FUZZ_THREADS
 * threads (default 4) sharing MREG_FUZZ_FILES open files (default 3),
 * with random sizes, flags, handles, ranges and memfds, valid and
 * corrupted structs, and watches on the same ranges, their events read
 * and their generation array mapped at random sizes.  Meanwhile a chaos
 * thread munmaps, remaps (MAP_FIXED), mremaps, mprotects and zaps the
 * region, closes and reopens the files under the other threads, forks
 * children and execs images that must find every inherited file EPERM,
 * and SIGKILLs images that pin, watch and zap their own memory at a
 * random point of a call.
 *
 * Output pointers only ever point at a scratch buffer or at addresses
 * that fault, so the kernel cannot scribble on the fuzzer.  Every error
 * must be one the ABI documents.  The harness fails the test on any
 * WARN/BUG/Oops/KASAN/lockdep report or pin leak; the test itself checks
 * that closing the files brings pinned_vm and locked_vm back.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mt.h"

#define REGION (2UL << 20)
#define SCRATCH (64UL << 10)
#define MAX_FILES 8
#define MAX_THREADS 16

static char *region;
static int memfd;
static uint32_t handles[64];
static int files[MAX_FILES];
static unsigned int nr_files;
static unsigned long calls_ok, calls_done;
static volatile int stop;
/* What the chaos thread did: mutations, reopens, forks, execs. */
static unsigned long nr_mutations, nr_reopens, nr_forks, nr_execs, nr_kills;
/* The chaos thread's quota: the ioctl threads race it until it is met. */
static unsigned long exec_quota;
static volatile int quota_met;
static __thread uint64_t seed;
static __thread char *scratch;

static uint64_t rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

static uint64_t pick(const uint64_t *v, size_t n)
{
	return v[rnd() % n];
}

/* Mostly plausible values, sometimes hostile ones. */
static uint64_t rnd_addr(void)
{
	const uint64_t v[] = { (uintptr_t)region,
			       (uintptr_t)region + (rnd() % 512) * MT_PAGE,
			       (uintptr_t)region + rnd() % REGION, 0, 8,
			       -MT_PAGE, 0xffff888000000000ULL, rnd() };

	return pick(v, 8);
}

static uint64_t rnd_len(void)
{
	const uint64_t v[] = { MT_PAGE, (1 + rnd() % 512) * MT_PAGE,
			       rnd() % REGION, 0, REGION, 1ULL << 40, -MT_PAGE,
			       rnd() };

	return pick(v, 8);
}

static uint32_t rnd_flags(void)
{
	return rnd() % 4 ? rnd() % 4 : (uint32_t)rnd();
}

static uint64_t rnd_out_ptr(void)
{
	const uint64_t v[] = { (uintptr_t)scratch, 0, 8, 0xffff888000000000ULL };

	return pick(v, 4);
}

static uint32_t rnd_handle(void)
{
	return rnd() % 8 ? __atomic_load_n(&handles[rnd() % 64],
					   __ATOMIC_RELAXED) :
			   (uint32_t)rnd();
}

static uint32_t rnd_size(uint32_t size)
{
	const uint64_t v[] = { size, size, size, 0, 4, size - 8, size + 8,
			       SCRATCH };

	return pick(v, 8);
}

static void fill_pin(struct mreg_pin *p)
{
	p->flags = rnd_flags();
	p->memfd = rnd() % 3 ? memfd : (int)(rnd() % 8);
	p->addr = p->flags & MREG_PIN_FLAG_MEMFD ? (rnd() % 512) * MT_PAGE :
						   rnd_addr();
	p->length = rnd_len();
}

static void fill_bench(struct mreg_bench *b)
{
	b->flags = rnd_flags();
	b->method = rnd() % (MREG_BENCH_NR_METHODS + 1);
	b->pages_per_call = pick((const uint64_t[]){ 0, 1, 123, 512, rnd() }, 5);
	if (b->method == MREG_BENCH_MEMFD_PIN_FOLIOS) {
		b->memfd = memfd;
		b->memfd_offset = (rnd() % 512) * MT_PAGE;
	} else {
		b->addr = rnd_addr();
	}
	b->length = rnd() % 2 ? (1 + rnd() % 256) * MT_PAGE : rnd_len();
}

union fuzz_cmd {
	struct mreg_info info;
	struct mreg_pin pin;
	struct mreg_bench bench;
	struct mreg_query query;
	struct mreg_read read;
	struct mreg_unpin unpin;
	struct mreg_set_limit sl;
	struct mreg_watch watch;
	struct mreg_unwatch unwatch;
	struct mreg_watch_info watch_info;
	char raw[SCRATCH];
};

static const uint32_t sizes[] = {
	sizeof(struct mreg_info), sizeof(struct mreg_set_limit),
	sizeof(struct mreg_bench), sizeof(struct mreg_pin),
	sizeof(struct mreg_query), sizeof(struct mreg_unpin),
	sizeof(struct mreg_read), sizeof(struct mreg_watch),
	sizeof(struct mreg_unwatch), sizeof(struct mreg_watch_info), 64,
};

/* Build one random command in @buf; returns the ioctl number. */
static unsigned long fill_cmd(union fuzz_cmd *buf)
{
	unsigned int cmd = MREG_CMD_BASE + rnd() % 11;

	memset(buf, 0, sizeof(struct mreg_bench) + 64);
	switch (cmd) {
	case MREG_CMD_PIN:
		fill_pin(&buf->pin);
		break;
	case MREG_CMD_BENCH:
		fill_bench(&buf->bench);
		break;
	case MREG_CMD_QUERY:
		buf->query.handle = rnd_handle();
		buf->query.extents = rnd_out_ptr();
		buf->query.nr_extents = rnd() % 4 ? rnd() % 600 : rnd();
		buf->query.extent_size = rnd() % 4 ? 32 : rnd() % 512;
		break;
	case MREG_CMD_READ:
		buf->read.handle = rnd_handle();
		buf->read.offset = rnd() % 2 ? rnd() % REGION : rnd();
		buf->read.length = rnd() % SCRATCH;
		buf->read.dst = rnd_out_ptr();
		break;
	case MREG_CMD_UNPIN:
		buf->unpin.handle = rnd_handle();
		break;
	case MREG_CMD_SET_LIMIT:
		buf->sl.max_pages = rnd() % 2 ? rnd() % 100000 : rnd();
		break;
	case MREG_CMD_WATCH:
		buf->watch.flags = rnd_flags() & 1;
		buf->watch.addr = rnd_addr();
		buf->watch.length = rnd_len();
		break;
	case MREG_CMD_UNWATCH:
		buf->unwatch.id = rnd() % 4 ? rnd() % 64 : (uint32_t)rnd();
		break;
	}
	/* Corrupt a byte, but never the output pointers of QUERY/READ. */
	if (rnd() % 16 == 0 && cmd != MREG_CMD_QUERY && cmd != MREG_CMD_READ)
		buf->raw[rnd() % (sizeof(struct mreg_bench) + 64)] = rnd();
	buf->pin.size = rnd_size(sizes[cmd - MREG_CMD_BASE]);
	return _IO(rnd() % 32 ? MREG_TYPE : rnd() % 256, cmd);
}

static void remember(unsigned long req, const struct mreg_pin *p, int ret)
{
	if (req == MREG_IOC_PIN && !ret)
		__atomic_store_n(&handles[rnd() % 64], p->out_handle,
				 __ATOMIC_RELAXED);
}

/* The errors include/uapi/mreg.h documents; anything else is a bug. */
static int documented(int ret)
{
	switch (-ret) {
	case 0: case EINVAL: case E2BIG: case EFAULT: case ENOTTY: case ENOENT:
	case ENOMEM: case EMSGSIZE: case EBADF: case EACCES: case ENOSPC:
	case EINTR: case EPERM: case EOPNOTSUPP: case EOVERFLOW: case EAGAIN:
		return 1;
	}
	return 0;
}

/* The event file and the generation mapping, with hostile sizes too. */
static void poke_file(int fd)
{
	static const size_t lens[] = { 0, 1, 16, 17, 4096, SCRATCH };
	size_t len = lens[rnd() % 6], mlen = (1 + rnd() % 64) * MT_PAGE;
	void *m;

	if (rnd() % 2) {
		int fl = fcntl(fd, F_GETFL);

		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
		if (read(fd, rnd() % 8 ? scratch : (void *)8, len) < 0 &&
		    errno != EAGAIN && errno != EINVAL && errno != EFAULT &&
		    errno != EBADF)
			mt_fail("read: %s", strerror(errno));
		fcntl(fd, F_SETFL, fl);
		return;
	}
	m = mmap(NULL, mlen, rnd() % 4 ? PROT_READ : PROT_READ | PROT_WRITE,
		 rnd() % 4 ? MAP_SHARED : MAP_PRIVATE, fd,
		 rnd() % 4 ? 0 : (off_t)MT_PAGE);
	if (m != MAP_FAILED)
		munmap(m, mlen);
}

static int pick_file(void)
{
	return __atomic_load_n(&files[rnd() % nr_files], __ATOMIC_RELAXED);
}

static void *fuzz_thread(void *arg)
{
	unsigned long count = (unsigned long)arg, i;
	void *buf = mt_map(SCRATCH, MT_PAGE);
	int ret, fd;

	seed = 88172645463325252ULL ^ mt_env_ulong("MREG_FUZZ_SEED", 0) ^
	       ((uint64_t)(uintptr_t)buf << 7);
	scratch = mt_map(SCRATCH, MT_PAGE);
	for (i = 0; i < count || !quota_met; i++) {
		unsigned long req = fill_cmd(buf);

		fd = pick_file();
		ret = mt_ioctl(fd, req, buf);
		/* A file closed under us by the chaos thread: EBADF. */
		MT_CHECK(documented(ret), "ioctl 0x%lx: undocumented error %d (%s)",
			 req, ret, strerror(-ret));
		remember(req, &((union fuzz_cmd *)buf)->pin, ret);
		__atomic_add_fetch(&calls_ok, !ret, __ATOMIC_RELAXED);
		if (i % 64 == 0)
			poke_file(fd);
	}
	__atomic_add_fetch(&calls_done, i, __ATOMIC_RELAXED);
	return NULL;
}

static void mutate_region(void)
{
	size_t off = (rnd() % 512) * MT_PAGE;
	void *tmp;

	switch (rnd() % 5) {
	case 0:
		madvise(region + off, MT_PAGE, MADV_DONTNEED);
		break;
	case 1:
		mprotect(region + off, MT_PAGE,
			 rnd() % 2 ? PROT_READ : PROT_READ | PROT_WRITE);
		break;
	case 2: /* munmap, then a fresh page in the hole */
		munmap(region + off, MT_PAGE);
		/* fallthrough */
	case 3: /* replaced in place */
		mmap(region + off, MT_PAGE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		region[off] = 1;
		break;
	case 4: /* moved away by mremap, and the hole refilled */
		tmp = mmap(NULL, MT_PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			   -1, 0);
		if (tmp != MAP_FAILED &&
		    mremap(region + off, MT_PAGE, MT_PAGE,
			   MREMAP_MAYMOVE | MREMAP_FIXED, tmp) != MAP_FAILED)
			mmap(region + off, MT_PAGE, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		if (tmp != MAP_FAILED)
			munmap(tmp, MT_PAGE);
		break;
	}
}

/* Every call on an inherited file must be EPERM: it is not ours. */
static int foreign_calls(int fd)
{
	struct mreg_info info = {.size = sizeof(info)};
	struct mreg_unpin u = {.size = sizeof(u), .handle = 1};

	if (mt_ioctl(fd, MREG_IOC_INFO, &info) != -EPERM ||
	    mt_ioctl(fd, MREG_IOC_UNPIN, &u) != -EPERM)
		return 1;
	return 0;
}

static void fork_child(void)
{
	int status, fd = pick_file();
	pid_t pid = fork();

	if (pid == 0)
		_exit(foreign_calls(fd));
	MT_CHECK(pid > 0, "fork");
	waitpid(pid, &status, 0);
	/* EBADF if the chaos thread had closed it: not a failure either. */
	MT_CHECK(WIFEXITED(status), "forked child died (0x%x)", status);
}

/* An image exec'd with a file not marked O_CLOEXEC. */
static void exec_child(void)
{
	int fd = open("/dev/mreg", O_RDWR), status;
	char arg[16];
	pid_t pid;

	MT_CHECK(fd >= 0, "open: %s", strerror(errno));
	snprintf(arg, sizeof(arg), "%d", fd);
	pid = fork();
	if (pid == 0) {
		execl("/proc/self/exe", "kmod-fuzz", "--foreign", arg, NULL);
		_exit(127);
	}
	MT_CHECK(pid > 0, "fork");
	close(fd);
	waitpid(pid, &status, 0);
	MT_CHECK(WIFEXITED(status) && !WEXITSTATUS(status),
		 "exec'd image could use the file (status 0x%x)", status);
}

/*
 * A fresh image (exec'd: a forked child of a threaded process may not
 * start threads) that pins, watches and zaps its own memory from two
 * threads until it is killed, at a random point of some call.
 */
static void *victim_watcher(void *arg)
{
	int fd = *(int *)arg;
	struct mreg_unwatch u;
	struct mreg_watch w;
	struct mreg_pin p;

	for (;;) {
		w = (struct mreg_watch){.size = sizeof(w),
					.addr = (uintptr_t)region,
					.length = REGION};
		if (!mt_ioctl(fd, MREG_IOC_WATCH, &w)) {
			u = (struct mreg_unwatch){.size = sizeof(u),
						  .id = w.out_id};
			mt_ioctl(fd, MREG_IOC_UNWATCH, &u);
		}
		if (!mt_pin(fd, (uintptr_t)region, REGION, 0, 0, &p))
			mt_unpin(fd, p.out_handle);
	}
	return NULL;
}

static int victim(void)
{
	int fd = open("/dev/mreg", O_RDWR | O_CLOEXEC);
	struct mreg_watch w = {.size = sizeof(w), .length = REGION};
	pthread_t th;

	region = mt_map(REGION, MT_2M);
	mt_fill(region, REGION, 10);
	w.addr = (uintptr_t)region;
	if (fd < 0 || mt_ioctl(fd, MREG_IOC_WATCH, &w) ||
	    pthread_create(&th, NULL, victim_watcher, &fd))
		return 1;
	for (;;) {
		madvise(region, REGION, MADV_DONTNEED);
		region[0] = 1;
	}
}

static void killed_child(void)
{
	struct timespec d = {0, (long)(rnd() % 20000) * 1000};
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		execl("/proc/self/exe", "kmod-fuzz", "--victim", NULL);
		_exit(127);
	}
	MT_CHECK(pid > 0, "fork");
	nanosleep(&d, NULL);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	MT_CHECK(WIFSIGNALED(status), "victim exited 0x%x", status);
}

/* Close a file under the fuzzing threads and put a new one in its slot. */
static void reopen_file(void)
{
	unsigned int k = rnd() % nr_files;
	int old = files[k], fd = open("/dev/mreg", O_RDWR | O_CLOEXEC);

	MT_CHECK(fd >= 0, "open: %s", strerror(errno));
	__atomic_store_n(&files[k], fd, __ATOMIC_RELAXED);
	close(old);
}

/*
 * Runs until told to stop; the ioctl threads keep going until it has
 * exec'd its quota (one exec per 128 mutations, 32 reopens, 4 forks).
 */
static void *chaos_thread(void *arg)
{
	(void)arg;
	seed = 0x9e3779b97f4a7c15ULL ^ mt_env_ulong("MREG_FUZZ_SEED", 0);
	while (!stop) {
		if (nr_execs >= exec_quota)
			quota_met = 1;
		mutate_region();
		nr_mutations++;
		if (nr_mutations % 16 == 0) {
			reopen_file();
			nr_reopens++;
		}
		if (nr_mutations % 32 == 0) {
			fork_child();
			nr_forks++;
		}
		if (nr_mutations % 128 == 0) {
			exec_child();
			nr_execs++;
		}
		if (nr_mutations % 64 == 0) {
			killed_child();
			nr_kills++;
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long count = mt_env_ulong("MREG_FUZZ_COUNT", 20000);
	unsigned long nthreads = mt_env_ulong("MREG_FUZZ_THREADS", 4), i;
	pthread_t th[MAX_THREADS], chaos;
	struct mreg_info info;
	uint64_t before, locked;
	int fd;

	if (argc == 3 && !strcmp(argv[1], "--foreign"))
		return foreign_calls(atoi(argv[2]));
	if (argc == 2 && !strcmp(argv[1], "--victim"))
		return victim();
	nr_files = mt_env_ulong("MREG_FUZZ_FILES", 3);
	/* One exec per 2500 calls, at least 4: the races scale with the run. */
	exec_quota = count / 2500 > 4 ? count / 2500 : 4;
	MT_CHECK(nthreads >= 1 && nthreads <= MAX_THREADS && nr_files >= 1 &&
		 nr_files <= MAX_FILES, "MREG_FUZZ_THREADS 1..16, MREG_FUZZ_FILES 1..8");
	fd = mt_open();
	region = mt_map(REGION, MT_2M);
	memfd = memfd_create("mreg-fuzz", MFD_CLOEXEC);
	MT_CHECK(memfd >= 0 && !ftruncate(memfd, REGION), "memfd");
	mt_fill(region, REGION, 9);
	mt_info(fd, &info);
	before = info.mm_pinned_pages;
	locked = info.user_locked_pages;
	for (i = 0; i < nr_files; i++)
		files[i] = mt_open();
	MT_CHECK(!pthread_create(&chaos, NULL, chaos_thread, NULL), "thread");
	for (i = 0; i < nthreads; i++)
		MT_CHECK(!pthread_create(&th[i], NULL, fuzz_thread,
					 (void *)(count / nthreads)), "thread");
	for (i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	stop = 1;
	pthread_join(chaos, NULL);
	for (i = 0; i < nr_files; i++)
		close(files[i]);
	mt_info(fd, &info);
	MT_CHECK(info.mm_pinned_pages == before && info.user_locked_pages == locked,
		 "after close: pinned_vm %llu (was %llu), locked_vm %llu (was %llu)",
		 (unsigned long long)info.mm_pinned_pages,
		 (unsigned long long)before,
		 (unsigned long long)info.user_locked_pages,
		 (unsigned long long)locked);
	close(fd);
	printf("%lu random ioctls from %lu threads on %u files, %lu succeeded, seed %lu\n",
	       calls_done, nthreads, nr_files, calls_ok,
	       mt_env_ulong("MREG_FUZZ_SEED", 0));
	printf("raced by %lu region mutations, %lu files closed and reopened, "
	       "%lu forks, %lu execs, %lu processes killed mid-call\n",
	       nr_mutations, nr_reopens, nr_forks, nr_execs, nr_kills);
	printf("PASS fuzz\n");
	return 0;
}
