/* SPDX-License-Identifier: MIT */
#ifndef MREG_PIECES_H
#define MREG_PIECES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mreg_region;
struct mreg_region_extent;

/* Cut @r into pieces of at most @piece bytes; one piece leaves it whole. */
int mreg_pieces_layout(struct mreg_region *r, uint64_t piece);
/* Register every piece on up to @threads threads; all or none. */
int mreg_pieces_register(struct mreg_region *r, uint32_t threads);
/* Deregister the pieces still registered; *@ns gets their kernel time. */
int mreg_pieces_deregister(struct mreg_region *r, uint64_t *ns);
void mreg_pieces_free(struct mreg_region *r);
/* Whether any piece of @r still holds its pin. */
bool mreg_pieces_left(const struct mreg_region *r);
int mreg_pieces_extents(const struct mreg_region *r,
			struct mreg_region_extent *ext, size_t *nr);

#endif
