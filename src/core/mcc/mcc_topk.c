/*
 * mcc_topk.c: the k best hits of a scan, as a binary heap (mcc_heap.h) whose
 * root is the worst hit held (lowest score; among equal scores, the largest
 * id).
 */
#include "mcc_topk.h"

#include <math.h>

/* true if hit a ranks before hit b (mcc_topk.h's order). */
static inline bool
hit_better(const mcc_hit *a, const mcc_hit *b)
{
	return mcc_hit_better(a->score, a->id, b->score, b->id);
}

#define MCC_HEAP_PREFIX hits
#define MCC_HEAP_TYPE mcc_hit
#define MCC_HEAP_BETTER(a, b) hit_better(a, b)
#include "mcc_heap.h"

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
	t->n = hits_offer(t->h, t->n, t->cap, &x);
}

/* The score a hit must reach to enter a full top-k. */
float
mcc_topk_floor(const mcc_topk *t)
{
	if (t->k == 0 || t->n < t->k)
		return -INFINITY;
	return t->h[0].score;
}

/* Best first: a heap sort (mcc_heap.h). */
void
mcc_topk_sort(mcc_topk *t)
{
	hits_heap_sort(t->h, t->n);
}
