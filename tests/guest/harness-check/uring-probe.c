// SPDX-License-Identifier: GPL-2.0
/* Needs liburing.so at run time: proves payload libs are resolved. */
#include <liburing.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	struct io_uring_probe *probe;
	struct io_uring ring;
	int ret = io_uring_queue_init(4, &ring, 0);

	if (ret) {
		printf("io_uring_queue_init: %s\n", strerror(-ret));
		return 1;
	}
	probe = io_uring_get_probe_ring(&ring);
	printf("io_uring ok, last op %d\n", probe ? probe->last_op : -1);
	io_uring_free_probe(probe);
	io_uring_queue_exit(&ring);
	return 0;
}
