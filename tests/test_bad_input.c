// SPDX-License-Identifier: MIT
/*
 * Bad input gets -errno and a message naming the argument, never a crash,
 * a leaked pin or a half-registered region: zero, overflowing and
 * unaligned ranges, unmapped, PROT_NONE and VM_IO memory, a hole in the
 * middle of a range, and a range above RLIMIT_MEMLOCK without CAP_IPC_LOCK.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tcommon.h"

#define PAGE 4096u

struct bad_case {
	const char *what;
	void *addr;
	size_t len;
	int err;
	const char *msg; /* the argument the message must name */
};

/*
 * @check_pins is false for unprivileged callers: they cannot flush the
 * per-CPU counters (stat_refresh is root-only), so their parent checks.
 */
static int expect_fail_pins(struct mreg_domain *d, const struct bad_case *c,
			    bool check_pins)
{
	struct mreg_region *r = NULL;
	struct t_pins before;
	int ret;

	t_pins_read(&before);
	ret = mreg_region_register(d, c->addr, c->len, &r);
	T_CHECK(ret == c->err, "%s: got %d (%s), want %d", c->what, ret,
		strerror(-ret), c->err);
	T_CHECK(!r, "%s: region handed out on failure", c->what);
	T_CHECK(strstr(mreg_last_error(), c->msg),
		"%s: message '%s' does "
		"not name '%s'",
		c->what, mreg_last_error(), c->msg);
	T_CHECK(!check_pins || t_pins_balanced(&before), "%s: pins leaked",
		c->what);
	printf("  %-26s -> %-10s \"%s\"\n", c->what, strerror(-ret),
	       mreg_last_error());
	return T_PASS;
}

static int expect_fail(struct mreg_domain *d, const struct bad_case *c)
{
	return expect_fail_pins(d, c, true);
}

static void *map(size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * Far below where the kernel puts new mappings (top-down from
 * mmap_base, 1 TiB and more above), and application memory under ASan
 * and TSan alike: a hole here stays a hole whatever the process maps
 * meanwhile (stdio buffers, a sanitizer's allocator).
 */
#define HOLE_AREA ((char *)0x7e9000000000ul)

/* @len bytes at HOLE_AREA + @off, or anywhere if that is taken. */
static void *map_far(size_t off, size_t len, int prot)
{
	void *p =
		mmap(HOLE_AREA + off, len, prot,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	return p == MAP_FAILED ? map(len, prot) : p;
}

/* msync() fails with ENOMEM on any page that is not mapped. */
static bool unmapped(void *addr, size_t len)
{
	size_t off;

	for (off = 0; off < len; off += PAGE)
		if (!msync((char *)addr + off, PAGE, MS_ASYNC) ||
		    errno != ENOMEM)
			return false;
	return true;
}

static int range_cases(struct mreg_domain *d)
{
	char *rw = map_far(0, 16 * PAGE, PROT_READ | PROT_WRITE);
	char *none = map_far(32 * PAGE, 4 * PAGE, PROT_NONE);
	char *gone = map_far(64 * PAGE, 4 * PAGE, PROT_READ | PROT_WRITE);
	int ret = T_PASS;
	size_t i;

	T_CHECK(rw && none && gone, "mmap");
	memset(rw, 1, 16 * PAGE);
	/*
	 * A hole stays one only while nothing else maps there, and the
	 * kernel puts a new mapping in the highest gap that fits: hence
	 * map_far(), and where it cannot, the warm-up below.  The
	 * first error message allocates the thread's log buffer (under
	 * TSan, its DTLS block is a fresh mmap), so make that happen before
	 * the holes exist, and check the holes are still holes after.
	 */
	T_CHECK(mreg_region_register(d, rw, 0, NULL) == -EINVAL, "warm-up");
	munmap(gone, 4 * PAGE);
	munmap(rw + 8 * PAGE, PAGE); /* a hole halfway through */
	const struct bad_case cases[] = {
		{"zero length", rw, 0, -EINVAL, "len"},
		{"overflowing length", rw, SIZE_MAX - 100, -EOVERFLOW, "len"},
		{"unaligned address", rw + 1, PAGE, -EINVAL, "addr"},
		{"unaligned length", rw, PAGE + 1, -EINVAL, "len"},
		{"unmapped range", gone, 4 * PAGE, -EFAULT, "addr"},
		{"PROT_NONE range", none, 4 * PAGE, -EFAULT, "addr"},
		{"hole inside the range", rw, 16 * PAGE, -EFAULT, "addr"},
	};
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]) && !ret; i++)
		ret = expect_fail(d, &cases[i]);
	T_CHECK(unmapped(gone, 4 * PAGE) && unmapped(rw + 8 * PAGE, PAGE),
		"another mapping landed in a hole during the test");
	munmap(rw, 16 * PAGE);
	munmap(none, 4 * PAGE);
	return ret;
}

/* /dev/mem maps are VM_IO | VM_PFNMAP: there is no struct page to pin. */
static int vm_io_case(struct mreg_domain *d)
{
	struct bad_case c = {"VM_IO|VM_PFNMAP (/dev/mem)", NULL, PAGE, -EFAULT,
			     "addr"};
	int fd = open("/dev/mem", O_RDONLY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return t_skip("VM_IO case: open /dev/mem: %s", strerror(errno));
	c.addr = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (c.addr == MAP_FAILED)
		return t_skip("VM_IO case: mmap /dev/mem: %s", strerror(errno));
	ret = expect_fail(d, &c);
	munmap(c.addr, PAGE);
	return ret;
}

static int attr_cases(void)
{
	struct mreg_domain_attr bad_mask = {.backend = MREG_BACKEND_IO_URING,
					    .comp_mask = 1u << 31};
	struct mreg_domain_attr bad_backend = {.backend = 99};
	struct mreg_buf_attr bad_flags = {.size = sizeof(bad_flags),
					  .flags = 1u << 30,
					  .length = PAGE,
					  .folio_size = PAGE};
	struct mreg_buf_attr zero = {.size = sizeof(zero), .folio_size = PAGE};
	struct mreg_domain *d;
	struct mreg_buf *buf;

	T_CHECK(mreg_domain_open(&bad_mask, &d) == -EINVAL &&
			strstr(mreg_last_error(), "comp_mask"),
		"unknown comp_mask: %s", mreg_last_error());
	T_CHECK(mreg_domain_open(&bad_backend, &d) == -EOPNOTSUPP,
		"unknown backend: %s", mreg_last_error());
	T_CHECK(mreg_buf_alloc(&bad_flags, &buf) == -EINVAL &&
			strstr(mreg_last_error(), "flags"),
		"unknown buf flags: %s", mreg_last_error());
	T_CHECK(mreg_buf_alloc(&zero, &buf) == -EINVAL &&
			strstr(mreg_last_error(), "length"),
		"zero buf length: %s", mreg_last_error());
	return T_PASS;
}

/* Output structs carry their size: too small is refused, larger is
 * zero-filled past what the library knows. */
static int output_size_cases(void)
{
	struct mreg_domain_attr attr = {.backend = MREG_BACKEND_IO_URING};
	struct {
		struct mreg_region_info info;
		uint64_t future;
	} big = {.info.size = sizeof(big), .future = ~0ull};
	struct {
		struct mreg_folio_hist hist;
		uint64_t future;
	} bigh = {.hist.size = sizeof(bigh), .future = ~0ull};
	struct mreg_region_info small = {.size = 8};
	struct mreg_folio_hist none = {0};
	char *p = map(PAGE, PROT_READ | PROT_WRITE);
	struct mreg_domain *d;
	struct mreg_region *r;

	T_CHECK(p, "mmap");
	p[0] = 1;
	T_CHECK(!mreg_domain_open(&attr, &d), "%s", mreg_last_error());
	T_CHECK(!mreg_region_register(d, p, PAGE, &r), "%s", mreg_last_error());
	T_CHECK(mreg_region_query(r, &small) == -EINVAL &&
			strstr(mreg_last_error(), "info->size"),
		"query with a short info: %s", mreg_last_error());
	T_CHECK(!mreg_region_query(r, &big.info) && !big.future &&
			big.info.size == sizeof(big) && big.info.length == PAGE,
		"query with a larger info: %s", mreg_last_error());
	T_CHECK(!mreg_region_deregister(r, NULL), "%s", mreg_last_error());
	T_CHECK(!mreg_domain_close(d), "%s", mreg_last_error());
	T_CHECK(mreg_verify_range(p, PAGE, &none) == -EINVAL &&
			strstr(mreg_last_error(), "hist->size"),
		"verify with size 0: %s", mreg_last_error());
	T_CHECK(mreg_verify_range(p, PAGE, &bigh.hist) != -EINVAL &&
			!bigh.future,
		"verify with a larger hist: %s", mreg_last_error());
	munmap(p, PAGE);
	printf("  %-26s -> refused or zero-filled\n", "output struct sizes");
	return T_PASS;
}

/* Unprivileged, over RLIMIT_MEMLOCK: -ENOMEM and nothing stays pinned. */
static int memlock_child(void)
{
	struct mreg_domain_attr attr = {.backend = MREG_BACKEND_IO_URING};
	struct rlimit lim = {1u << 20, 1u << 20};
	size_t len = 8u << 20;
	struct bad_case c = {"above RLIMIT_MEMLOCK", NULL, len, -ENOMEM, "len"};
	struct mreg_domain *d;

	T_CHECK(!setrlimit(RLIMIT_MEMLOCK, &lim), "setrlimit");
	T_CHECK(!geteuid() ? !setuid(65534) : 1, "drop root");
	c.addr = map(len, PROT_READ | PROT_WRITE);
	T_CHECK(c.addr, "mmap");
	memset(c.addr, 1, len);
	T_CHECK(!mreg_domain_open(&attr, &d), "%s", mreg_last_error());
	return expect_fail_pins(d, &c, false);
}

static int memlock_case(void)
{
	struct t_pins before;
	int status;
	pid_t pid;

	t_pins_read(&before);
	pid = fork();
	if (!pid)
		_exit(memlock_child());
	T_CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork");
	T_CHECK(WIFEXITED(status) && !WEXITSTATUS(status),
		"RLIMIT_MEMLOCK case failed in the child");
	T_CHECK(t_pins_balanced(&before), "above RLIMIT_MEMLOCK: pins leaked");
	return T_PASS;
}

int main(void)
{
	struct mreg_domain_attr attr = {.backend = MREG_BACKEND_IO_URING};
	struct mreg_domain *d;
	int ret;

	t_init("test_bad_input");
	if (!mreg_backend_supported(MREG_BACKEND_IO_URING))
		return t_skip("io_uring is not available");
	T_CHECK(!mreg_domain_open(&attr, &d), "%s", mreg_last_error());
	ret = range_cases(d);
	if (!ret)
		ret = vm_io_case(d);
	if (ret == T_SKIP)
		ret = T_PASS;
	T_CHECK(!mreg_domain_close(d), "a failed register left a region: %s",
		mreg_last_error());
	if (!ret)
		ret = attr_cases();
	if (!ret)
		ret = output_size_cases();
	if (!ret)
		ret = memlock_case();
	return ret;
}
