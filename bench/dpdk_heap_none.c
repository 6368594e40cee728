// SPDX-License-Identifier: MIT
/* dpdk-heap cells in a mreg-bench built without DPDK's headers. */
#include <stdio.h>

#include "bench.h"

void dpdk_heap_prepare(const struct bench_opts *o)
{
	(void)o;
}

void dpdk_heap_cell_run(const struct bench_opts *o, struct cell *c,
			const struct mreg_buf *buf)
{
	(void)o, (void)buf;
	snprintf(c->note, sizeof(c->note),
		 "built without DPDK's headers (scripts/dpdk-dev.sh)");
}
