/* SPDX-License-Identifier: MIT */
#ifndef MREG_IOVA_H
#define MREG_IOVA_H

#include <stdint.h>

/* Free IOVA space as sorted, non-adjacent [start, last] ranges. */
struct mreg_iova_range {
	uint64_t start;
	uint64_t last;
};

struct mreg_iova {
	struct mreg_iova_range *free;
	int nr;
	int cap;
};

int mreg_iova_init(struct mreg_iova *a, const struct mreg_iova_range *valid,
		   int nr);
void mreg_iova_fini(struct mreg_iova *a);
/* Lowest free @len bytes at an address == @phase mod @align. */
int mreg_iova_alloc(struct mreg_iova *a, uint64_t len, uint64_t align,
		    uint64_t phase, uint64_t *iova);
/* Take exactly [iova, iova+len): -EBUSY unless all of it is free. */
int mreg_iova_reserve(struct mreg_iova *a, uint64_t iova, uint64_t len);
/* Return a range; it merges with free neighbours. */
int mreg_iova_free(struct mreg_iova *a, uint64_t iova, uint64_t len);

#endif
