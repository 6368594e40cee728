// SPDX-License-Identifier: MIT
/*
 * uring-bad-register: an io_uring buffer registration that the kernel
 * refuses with EFAULT (its memory is unmapped before the call), for
 * mreg-trace's test of failures counted by errno. Exit 0 when the
 * registration failed with EFAULT, 1 otherwise.
 */
#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

int main(void)
{
	struct io_uring ring;
	struct iovec iov;
	void *p;
	int ret;

	ret = io_uring_queue_init(4, &ring, 0);
	if (ret) {
		fprintf(stderr, "uring-bad-register: io_uring_queue_init: %s\n",
			strerror(-ret));
		return 1;
	}
	p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || munmap(p, 1 << 20))
		return 1;
	iov = (struct iovec){.iov_base = p, .iov_len = 1 << 20};
	ret = io_uring_register_buffers(&ring, &iov, 1);
	io_uring_queue_exit(&ring);
	printf("uring-bad-register: %s\n", ret ? strerror(-ret) : "accepted");
	return ret == -EFAULT ? 0 : 1;
}
