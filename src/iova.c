// SPDX-License-Identifier: MIT
/*
 * IOVA allocation for VFIO type1, which leaves the choice to userspace.
 * Free space is kept as sorted ranges, merged with their neighbours on
 * free, so map/unmap churn does not fragment it. Allocations keep the
 * buffer's offset within a huge page, so the IOMMU can use huge pages.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iova.h"

static int grow(struct mreg_iova *a)
{
	struct mreg_iova_range *more;
	int cap = a->cap ? a->cap * 2 : 16;

	more = realloc(a->free, (size_t)cap * sizeof(*more));
	if (!more)
		return -ENOMEM;
	a->free = more;
	a->cap = cap;
	return 0;
}

static int insert_at(struct mreg_iova *a, int i, uint64_t start, uint64_t last)
{
	if (a->nr == a->cap && grow(a))
		return -ENOMEM;
	memmove(&a->free[i + 1], &a->free[i],
		(size_t)(a->nr - i) * sizeof(a->free[0]));
	a->free[i] = (struct mreg_iova_range){start, last};
	a->nr++;
	return 0;
}

static void remove_at(struct mreg_iova *a, int i)
{
	memmove(&a->free[i], &a->free[i + 1],
		(size_t)(a->nr - i - 1) * sizeof(a->free[0]));
	a->nr--;
}

int mreg_iova_init(struct mreg_iova *a, const struct mreg_iova_range *valid,
		   int nr)
{
	int i, ret = 0;

	memset(a, 0, sizeof(*a));
	for (i = 0; i < nr && !ret; i++)
		ret = mreg_iova_free(a, valid[i].start,
				     valid[i].last - valid[i].start + 1);
	return ret;
}

void mreg_iova_fini(struct mreg_iova *a)
{
	free(a->free);
	memset(a, 0, sizeof(*a));
}

/* Carve [iova, iova+len) out of free range @i. */
static int take(struct mreg_iova *a, int i, uint64_t iova, uint64_t len)
{
	struct mreg_iova_range r = a->free[i];
	uint64_t last = iova + len - 1;

	if (iova == r.start && last == r.last) {
		remove_at(a, i);
		return 0;
	}
	if (iova == r.start) {
		a->free[i].start = last + 1;
		return 0;
	}
	/* Room for the tail first, so a failure changes nothing. */
	if (last != r.last && a->nr == a->cap && grow(a))
		return -ENOMEM;
	a->free[i].last = iova - 1;
	return last == r.last ? 0 : insert_at(a, i + 1, last + 1, r.last);
}

int mreg_iova_alloc(struct mreg_iova *a, uint64_t len, uint64_t align,
		    uint64_t phase, uint64_t *iova)
{
	uint64_t at;
	int i;

	if (!len || !align || (align & (align - 1)))
		return -EINVAL;
	phase &= align - 1;
	for (i = 0; i < a->nr; i++) {
		at = ((a->free[i].start - phase + align - 1) & ~(align - 1)) +
		     phase;
		if (at < a->free[i].start)
			at += align;
		if (at + len - 1 < at || at + len - 1 > a->free[i].last)
			continue;
		*iova = at;
		return take(a, i, at, len);
	}
	return -ENOSPC;
}

int mreg_iova_reserve(struct mreg_iova *a, uint64_t iova, uint64_t len)
{
	uint64_t last = iova + len - 1;
	int i;

	if (!len || last < iova)
		return -EINVAL;
	for (i = 0; i < a->nr && a->free[i].last < iova; i++)
		;
	if (i == a->nr || a->free[i].start > iova || a->free[i].last < last)
		return -EBUSY;
	return take(a, i, iova, len);
}

int mreg_iova_free(struct mreg_iova *a, uint64_t iova, uint64_t len)
{
	uint64_t last = iova + len - 1;
	int i;

	for (i = 0; i < a->nr && a->free[i].last < iova; i++)
		;
	if (i < a->nr && a->free[i].start <= last)
		return -EEXIST; /* overlaps free space: a double free */
	if (i > 0 && a->free[i - 1].last + 1 == iova) {
		a->free[i - 1].last = last;
		if (i < a->nr && a->free[i].start == last + 1) {
			a->free[i - 1].last = a->free[i].last;
			remove_at(a, i);
		}
		return 0;
	}
	if (i < a->nr && a->free[i].start == last + 1) {
		a->free[i].start = iova;
		return 0;
	}
	return insert_at(a, i, iova, last);
}
