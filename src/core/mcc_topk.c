/*
 * mcc_topk.c: the k best hits of a scan, as a binary min-heap whose root is
 * the worst hit held (lowest score; among equal scores, the largest id).
 */
#include "mcc_topk.h"

#include <math.h>

/* true if hit a is worse than hit b: the heap order. */
static inline bool
worse(const mcc_hit *a, const mcc_hit *b)
{
	return mcc_hit_better(b->score, b->id, a->score, a->id);
}

/* Restore the heap below position i. */
static void
sift_down(mcc_hit *h, int64_t n, int64_t i)
{
	mcc_hit		x = h[i];

	for (;;)
	{
		int64_t		c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && worse(&h[c + 1], &h[c]))
			c++;
		if (!worse(&h[c], &x))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
}

/* Restore the heap above position i. */
static void
sift_up(mcc_hit *h, int64_t i)
{
	mcc_hit		x = h[i];

	while (i > 0)
	{
		int64_t		parent = (i - 1) / 2;

		if (!worse(&x, &h[parent]))
			break;
		h[i] = h[parent];
		i = parent;
	}
	h[i] = x;
}

/* Start an empty top-k over caller storage of cap hits. */
void
mcc_topk_init(mcc_topk *t, int64_t k, mcc_hit *storage, int64_t cap)
{
	t->k = k > 0 ? k : 0;
	t->n = 0;
	t->cap = cap < t->k ? cap : t->k;
	if (t->cap < 0)
		t->cap = 0;
	t->h = storage;
}

/* Whether the caller must grow the storage before the next push. */
bool
mcc_topk_needs_room(const mcc_topk *t)
{
	return t->n == t->cap && t->cap < t->k;
}

/* Move to larger storage that already holds the n hits. */
void
mcc_topk_rebind(mcc_topk *t, mcc_hit *storage, int64_t cap)
{
	t->h = storage;
	t->cap = cap < t->k ? cap : t->k;
	if (t->cap < t->n)
		t->cap = t->n;			/* the caller copied n hits: never fewer */
}

/*
 * Offer a hit. While fewer than k are held it is added (if the storage has
 * no room left and the caller did not grow it, the heap acts as if k were
 * cap); once k are held it replaces the worst if it ranks before it.
 */
void
mcc_topk_push(mcc_topk *t, float score, int64_t id)
{
	mcc_hit		x;

	if (isnan(score))
		return;
	x.score = score;
	x.id = id;
	if (t->n < t->cap)
	{
		t->h[t->n] = x;
		sift_up(t->h, t->n);
		t->n++;
		return;
	}
	if (t->n == 0 || !worse(&t->h[0], &x))
		return;
	t->h[0] = x;
	sift_down(t->h, t->n, 0);
}

/* The score a hit must reach to enter a full top-k. */
float
mcc_topk_floor(const mcc_topk *t)
{
	if (t->k == 0 || t->n < t->k)
		return -INFINITY;
	return t->h[0].score;
}

/* Heap sort: moving the worst to the end each time leaves best first. */
void
mcc_topk_sort(mcc_topk *t)
{
	for (int64_t n = t->n; n > 1; n--)
	{
		mcc_hit		tmp = t->h[0];

		t->h[0] = t->h[n - 1];
		t->h[n - 1] = tmp;
		sift_down(t->h, n - 1, 0);
	}
}
