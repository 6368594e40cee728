// SPDX-License-Identifier: MIT
/*
 * AVL interval tree (see itree.h). Recursive: the height of an AVL tree
 * of 2^64 nodes is below 93, so the stack depth is bounded.
 */
#include "itree.h"

#include <stddef.h>

static int height(const struct mreg_itree_node *n)
{
	return n ? n->height : 0;
}

static uint64_t max_end(const struct mreg_itree_node *n)
{
	return n ? n->max_end : 0;
}

static void update(struct mreg_itree_node *n)
{
	int hl = height(n->left), hr = height(n->right);
	uint64_t m = n->end;

	n->height = 1 + (hl > hr ? hl : hr);
	if (max_end(n->left) > m)
		m = max_end(n->left);
	if (max_end(n->right) > m)
		m = max_end(n->right);
	n->max_end = m;
}

static struct mreg_itree_node *rotate_right(struct mreg_itree_node *n)
{
	struct mreg_itree_node *l = n->left;

	n->left = l->right;
	l->right = n;
	update(n);
	update(l);
	return l;
}

static struct mreg_itree_node *rotate_left(struct mreg_itree_node *n)
{
	struct mreg_itree_node *r = n->right;

	n->right = r->left;
	r->left = n;
	update(n);
	update(r);
	return r;
}

static struct mreg_itree_node *rebalance(struct mreg_itree_node *n)
{
	int bal;

	update(n);
	bal = height(n->left) - height(n->right);
	if (bal > 1) {
		if (height(n->left->left) < height(n->left->right))
			n->left = rotate_left(n->left);
		return rotate_right(n);
	}
	if (bal < -1) {
		if (height(n->right->right) < height(n->right->left))
			n->right = rotate_right(n->right);
		return rotate_left(n);
	}
	return n;
}

/* Ties in start go by address, so every node has one place. */
static bool before(const struct mreg_itree_node *a,
		   const struct mreg_itree_node *b)
{
	return a->start < b->start || (a->start == b->start && a < b);
}

static struct mreg_itree_node *insert(struct mreg_itree_node *root,
				      struct mreg_itree_node *n)
{
	if (!root)
		return n;
	if (before(n, root))
		root->left = insert(root->left, n);
	else
		root->right = insert(root->right, n);
	return rebalance(root);
}

void mreg_itree_insert(struct mreg_itree *t, struct mreg_itree_node *n)
{
	n->left = n->right = NULL;
	n->height = 1;
	n->max_end = n->end;
	t->root = insert(t->root, n);
	t->count++;
}

static struct mreg_itree_node *remove_min(struct mreg_itree_node *root,
					  struct mreg_itree_node **min)
{
	if (!root->left) {
		*min = root;
		return root->right;
	}
	root->left = remove_min(root->left, min);
	return rebalance(root);
}

static struct mreg_itree_node *remove_node(struct mreg_itree_node *root,
					   struct mreg_itree_node *n)
{
	struct mreg_itree_node *min;

	if (!root)
		return NULL;
	if (root == n) {
		if (!n->right)
			return n->left;
		n->right = remove_min(n->right, &min);
		min->left = n->left;
		min->right = n->right;
		return rebalance(min);
	}
	if (before(n, root))
		root->left = remove_node(root->left, n);
	else
		root->right = remove_node(root->right, n);
	return rebalance(root);
}

void mreg_itree_remove(struct mreg_itree *t, struct mreg_itree_node *n)
{
	t->root = remove_node(t->root, n);
	t->count--;
}

/* Nodes with start < @hi and end >= @min_end (prunes on both). */
static struct mreg_itree_node *
walk(struct mreg_itree_node *n, uint64_t hi, uint64_t min_end,
     bool (*match)(const struct mreg_itree_node *n, uint64_t a, uint64_t b),
     uint64_t a, uint64_t b, bool (*fn)(struct mreg_itree_node *, void *),
     void *ctx)
{
	struct mreg_itree_node *hit;

	if (!n || n->max_end < min_end)
		return NULL;
	hit = walk(n->left, hi, min_end, match, a, b, fn, ctx);
	if (hit)
		return hit;
	if (n->start >= hi)
		return NULL;
	if (match(n, a, b) && fn(n, ctx))
		return n;
	return walk(n->right, hi, min_end, match, a, b, fn, ctx);
}

static bool covers(const struct mreg_itree_node *n, uint64_t a, uint64_t b)
{
	return n->start <= a && n->end >= b;
}

static bool overlaps(const struct mreg_itree_node *n, uint64_t a, uint64_t b)
{
	return n->start < b && n->end > a;
}

struct mreg_itree_node *
mreg_itree_find_covering(const struct mreg_itree *t, uint64_t a, uint64_t b,
			 bool (*fn)(struct mreg_itree_node *n, void *ctx),
			 void *ctx)
{
	return walk(t->root, a + 1, b, covers, a, b, fn, ctx);
}

struct mreg_itree_node *
mreg_itree_find_overlapping(const struct mreg_itree *t, uint64_t a, uint64_t b,
			    bool (*fn)(struct mreg_itree_node *n, void *ctx),
			    void *ctx)
{
	return walk(t->root, b, a + 1, overlaps, a, b, fn, ctx);
}
