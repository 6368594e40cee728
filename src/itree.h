/* SPDX-License-Identifier: MIT */
/*
 * An interval tree of half-open ranges [start, end): an AVL tree ordered
 * by start, each node augmented with the largest end in its subtree, so
 * that the ranges covering [a, b) are found in O(log n + k). Ranges may
 * overlap and repeat. The caller embeds struct mreg_itree_node and does
 * the locking.
 */
#ifndef MREG_ITREE_H
#define MREG_ITREE_H

#include <stdbool.h>
#include <stdint.h>

struct mreg_itree_node {
	uint64_t start, end;
	uint64_t max_end; /* the largest end in this subtree */
	struct mreg_itree_node *left, *right;
	int height;
};

struct mreg_itree {
	struct mreg_itree_node *root;
	uint64_t count;
};

void mreg_itree_insert(struct mreg_itree *t, struct mreg_itree_node *n);
void mreg_itree_remove(struct mreg_itree *t, struct mreg_itree_node *n);

/*
 * Call @fn on each node with start <= @a and end >= @b, in no set order,
 * until it returns true; return that node, or NULL.
 */
struct mreg_itree_node *
mreg_itree_find_covering(const struct mreg_itree *t, uint64_t a, uint64_t b,
			 bool (*fn)(struct mreg_itree_node *n, void *ctx),
			 void *ctx);

/*
 * Call @fn on each node overlapping [@a, @b) until it returns true; the
 * callback must not change the tree. Returns that node, or NULL.
 */
struct mreg_itree_node *
mreg_itree_find_overlapping(const struct mreg_itree *t, uint64_t a, uint64_t b,
			    bool (*fn)(struct mreg_itree_node *n, void *ctx),
			    void *ctx);

#endif /* MREG_ITREE_H */
