// SPDX-License-Identifier: GPL-2.0
/*
 * ABI rules of include/uapi/mreg.h: size-prefixed structs, unknown flags
 * and non-zero reserved fields give EINVAL, a longer struct is accepted
 * only with a zero tail (E2BIG), unknown ioctls give ENOTTY.
 */
#include <errno.h>
#include <unistd.h>

#include "mt.h"

static void test_info(int fd)
{
	struct mreg_info info;

	MT_EXPECT_ERR(mt_info(fd, &info), 0, "INFO");
	MT_CHECK(info.abi_version == MREG_ABI_VERSION, "abi %u", info.abi_version);
	MT_CHECK(info.page_size == MT_PAGE, "page_size %u", info.page_size);
	MT_CHECK(info.file_max_pages > 0, "no per-file cap");
	MT_CHECK(info.file_pinned_pages == 0, "pinned at open");
	printf("abi %u caps 0x%x cap %llu pages, memlock %llu pages\n",
	       info.abi_version, info.caps,
	       (unsigned long long)info.file_max_pages,
	       (unsigned long long)info.memlock_limit_pages);
	info.flags = 1;
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_INFO, &info), -EINVAL, "INFO flags");
	info.flags = 0;
	info.__reserved = 1;
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_INFO, &info), -EINVAL,
		      "INFO reserved");
}

/* A struct from a newer binary: longer, accepted only with a zero tail. */
static void test_sizes(int fd)
{
	struct {
		struct mreg_info info;
		uint64_t future[4];
	} big = { .info.size = sizeof(big) };
	uint32_t tiny = 4;

	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_INFO, &big), 0, "INFO zero tail");
	MT_CHECK(big.info.abi_version == MREG_ABI_VERSION, "no reply");
	big.future[3] = 1;
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_INFO, &big), -E2BIG,
		      "INFO non-zero tail");
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_INFO, &tiny), -EINVAL,
		      "INFO size 4");
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_INFO, (void *)8), -EFAULT,
		      "INFO bad pointer");
}

static void test_unknown_ioctls(int fd)
{
	struct mreg_info info = { .size = sizeof(info) };

	MT_EXPECT_ERR(mt_ioctl(fd, _IO(MREG_TYPE, MREG_CMD_BASE + 40), &info),
		      -ENOTTY, "unknown nr");
	MT_EXPECT_ERR(mt_ioctl(fd, _IO(MREG_TYPE, 1), &info), -ENOTTY, "low nr");
	MT_EXPECT_ERR(mt_ioctl(fd, _IOR(MREG_TYPE, MREG_CMD_INFO,
					 struct mreg_info), &info),
		      -ENOTTY, "INFO with size bits");
	MT_EXPECT_ERR(mt_ioctl(fd, _IO(MREG_TYPE + 1, MREG_CMD_INFO), &info),
		      -ENOTTY, "foreign type");
}

static void test_flags_reserved(int fd)
{
	struct mreg_pin pin = { .size = sizeof(pin), .flags = 1u << 31 };
	struct mreg_unpin un = { .size = sizeof(un), .handle = 1, .flags = 2 };
	struct mreg_query q = { .size = sizeof(q), .__reserved2 = 1,
				.extent_size = sizeof(struct mreg_extent) };
	struct mreg_read rd = { .size = sizeof(rd), .flags = 1 };
	struct mreg_bench b = { .size = sizeof(b), .flags = 1u << 7 };
	struct mreg_set_limit sl = { .size = sizeof(sl), .flags = 1 };
	void *buf = mt_map(MT_PAGE, MT_PAGE);

	pin.addr = (uintptr_t)buf;
	pin.length = MT_PAGE;
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_PIN, &pin), -EINVAL, "PIN flags");
	pin.flags = 0;
	pin.__reserved = 1;
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_PIN, &pin), -EINVAL, "PIN reserved");
	pin.__reserved = 0;
	pin.memfd = 3;
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_PIN, &pin), -EINVAL,
		      "PIN memfd without flag");
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_UNPIN, &un), -EINVAL, "UNPIN flags");
	un.flags = 0;
	un.__reserved = 1;
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_UNPIN, &un), -EINVAL,
		      "UNPIN reserved");
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_QUERY, &q), -EINVAL, "QUERY reserved");
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_READ, &rd), -EINVAL, "READ flags");
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_BENCH, &b), -EINVAL, "BENCH flags");
	b.flags = 0;
	b.method = MREG_BENCH_NR_METHODS;
	b.addr = (uintptr_t)buf;
	b.length = MT_PAGE;
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_BENCH, &b), -EINVAL, "BENCH method");
	b.method = MREG_BENCH_GUP_FAST;
	b.flags = MREG_BENCH_FLAG_LONGTERM;
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_BENCH, &b), -EINVAL,
		      "BENCH gup_fast longterm");
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_SET_LIMIT, &sl), -EINVAL,
		      "SET_LIMIT flags");
}

static void test_set_limit(int fd)
{
	struct mreg_set_limit sl = { .size = sizeof(sl) };
	struct mreg_info info;

	mt_info(fd, &info);
	sl.max_pages = info.file_max_pages + 1;
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_SET_LIMIT, &sl), -EINVAL,
		      "SET_LIMIT above module cap");
	sl.max_pages = 16;
	MT_EXPECT_ERR(mt_ioctl(fd, MREG_IOC_SET_LIMIT, &sl), 0, "SET_LIMIT 16");
	mt_info(fd, &info);
	MT_CHECK(info.file_max_pages == 16, "cap %llu",
		 (unsigned long long)info.file_max_pages);
}

int main(void)
{
	int fd = mt_open();

	test_info(fd);
	test_sizes(fd);
	test_unknown_ioctls(fd);
	test_flags_reserved(fd);
	test_set_limit(fd);
	close(fd);
	printf("PASS abi\n");
	return 0;
}
