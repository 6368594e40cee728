// SPDX-License-Identifier: GPL-2.0
/*
 * Random ioctls, bounded: MREG_FUZZ_COUNT calls (default 20000; use
 * >= 100000 for a soak) with random sizes, flags, handles, ranges and
 * memfds, and watches on the same ranges, their events read and their
 * generation array mapped at random sizes.  Output pointers only ever
 * point at a scratch buffer or at addresses that fault, so the kernel
 * cannot scribble on the fuzzer.  The harness fails the test on any
 * WARN/BUG/Oops or pin leak; the test itself checks that closing the
 * file brings pinned_vm back.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mt.h"

#define REGION (2UL << 20)
#define SCRATCH (64UL << 10)

static char *region, *scratch;
static int memfd;
static uint32_t handles[64];
static uint64_t seed = 88172645463325252ULL;

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
	return rnd() % 8 ? handles[rnd() % 64] : (uint32_t)rnd();
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
		buf->query.extent_size = rnd() % 4 ? 32 : rnd() % 128;
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
		handles[rnd() % 64] = p->out_handle;
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
		    errno != EAGAIN && errno != EINVAL && errno != EFAULT)
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

static void mutate_region(void)
{
	size_t off = (rnd() % 512) * MT_PAGE;

	if (rnd() % 2)
		madvise(region + off, MT_PAGE, MADV_DONTNEED);
	else
		mprotect(region + off, MT_PAGE,
			 rnd() % 2 ? PROT_READ : PROT_READ | PROT_WRITE);
}

int main(void)
{
	unsigned long count = mt_env_ulong("MREG_FUZZ_COUNT", 20000), i, ok = 0;
	struct mreg_info info;
	uint64_t before;
	int fd = mt_open(), ret;
	void *buf = mt_map(SCRATCH, MT_PAGE);

	seed ^= mt_env_ulong("MREG_FUZZ_SEED", 0);
	region = mt_map(REGION, MT_2M);
	scratch = mt_map(SCRATCH, MT_PAGE);
	memfd = memfd_create("mreg-fuzz", MFD_CLOEXEC);
	MT_CHECK(memfd >= 0 && !ftruncate(memfd, REGION), "memfd");
	mt_fill(region, REGION, 9);
	mt_info(fd, &info);
	before = info.mm_pinned_pages;
	for (i = 0; i < count; i++) {
		unsigned long req = fill_cmd(buf);

		ret = mt_ioctl(fd, req, buf);
		remember(req, &((union fuzz_cmd *)buf)->pin, ret);
		ok += !ret;
		if (i % 256 == 0)
			mutate_region();
		if (i % 64 == 0)
			poke_file(fd);
	}
	close(fd);
	fd = mt_open();
	mt_info(fd, &info);
	MT_CHECK(info.mm_pinned_pages == before, "pinned_vm %llu after close, was %llu",
		 (unsigned long long)info.mm_pinned_pages,
		 (unsigned long long)before);
	printf("%lu random ioctls, %lu succeeded\n", count, ok);
	printf("PASS fuzz\n");
	return 0;
}
