// SPDX-License-Identifier: MIT
/*
 * The cache's interval tree (src/itree.c) against a brute-force list:
 * random inserts and removes of overlapping and repeated ranges, and after
 * each step the covering and overlapping queries of random ranges must
 * find a node iff the list has one, and every node they report must
 * qualify; the AVL and max-end invariants are checked on the whole tree.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../src/itree.h"
#include "tcommon.h"

#define N     400
#define STEPS 20000

static struct mreg_itree_node nodes[N];
static bool in_tree[N];
static uint64_t seed = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

/* Height and max end, checked bottom up; -1 on a broken invariant. */
static int check(const struct mreg_itree_node *n, uint64_t *max_end)
{
	uint64_t ml = 0, mr = 0, m;
	int hl, hr;

	if (!n) {
		*max_end = 0;
		return 0;
	}
	hl = check(n->left, &ml);
	hr = check(n->right, &mr);
	if (hl < 0 || hr < 0 || hl - hr > 1 || hr - hl > 1 ||
	    n->height != 1 + (hl > hr ? hl : hr))
		return -1;
	if ((n->left && n->left->start > n->start) ||
	    (n->right && n->right->start < n->start))
		return -1;
	m = n->end;
	m = ml > m ? ml : m;
	m = mr > m ? mr : m;
	if (n->max_end != m)
		return -1;
	*max_end = m;
	return n->height;
}

struct q {
	uint64_t a, b;
	bool cover;
	int bad, seen;
};

static bool visit(struct mreg_itree_node *n, void *arg)
{
	struct q *q = arg;
	bool ok = q->cover ? n->start <= q->a && n->end >= q->b
			   : n->start < q->b && n->end > q->a;

	q->bad += !ok;
	q->seen++;
	return false; /* visit them all */
}

static int query(struct mreg_itree *t, bool cover)
{
	struct q q = {.cover = cover};
	int i, want = 0;

	q.a = rnd() % 1000;
	q.b = q.a + 1 + rnd() % 60;
	for (i = 0; i < N; i++)
		if (in_tree[i] &&
		    (cover ? nodes[i].start <= q.a && nodes[i].end >= q.b
			   : nodes[i].start < q.b && nodes[i].end > q.a))
			want++;
	if (cover)
		mreg_itree_find_covering(t, q.a, q.b, visit, &q);
	else
		mreg_itree_find_overlapping(t, q.a, q.b, visit, &q);
	T_CHECK(!q.bad && q.seen == want,
		"%s [%llu, %llu): visited %d (%d wrong), want %d",
		cover ? "covering" : "overlapping", (unsigned long long)q.a,
		(unsigned long long)q.b, q.seen, q.bad, want);
	return T_PASS;
}

int main(void)
{
	struct mreg_itree t = {0};
	uint64_t m;
	int step, i, ret;

	t_init("test_itree");
	for (step = 0; step < STEPS; step++) {
		i = (int)(rnd() % N);
		if (in_tree[i]) {
			mreg_itree_remove(&t, &nodes[i]);
			in_tree[i] = false;
		} else {
			nodes[i].start = rnd() % 1000;
			nodes[i].end = nodes[i].start + 1 + rnd() % 100;
			mreg_itree_insert(&t, &nodes[i]);
			in_tree[i] = true;
		}
		T_CHECK(check(t.root, &m) >= 0, "invariant broken at step %d",
			step);
		ret = query(&t, true);
		if (!ret)
			ret = query(&t, false);
		if (ret)
			return ret;
	}
	printf("  %d random inserts/removes, AVL and max-end invariants, "
	       "covering and overlapping queries match brute force\n",
	       STEPS);
	return T_PASS;
}
