/*
 * mcc_heap.h: a bounded binary heap for "the k best so far", for any
 * element type and any order: its root is the worst element held, so a
 * new element either is refused at a glance or replaces the root.
 *
 * The one implementation of the top-k heaps of mcc (mcc_topk.c: the scan's
 * hits; src/engine/eng_hits.c: the engine's hits with their entries;
 * src/identify/identify_refine.c: the backend's refinement shortlist). Like
 * PostgreSQL's lib/sort_template.h it is a template: define
 *
 *   MCC_HEAP_PREFIX         the functions' prefix, e.g. hits
 *   MCC_HEAP_TYPE           the element type
 *   MCC_HEAP_BETTER(a, b)   true if *a ranks before *b (a, b: pointers)
 *
 * then include this file, which defines (static, specialized for the type
 * and the order, so as fast as code written for each):
 *
 *   int64_t PREFIX_offer(TYPE *h, int64_t n, int64_t k, const TYPE *x)
 *                                                   keep x if among the k
 *                                                   best; returns the new n
 *   void PREFIX_sift_up(TYPE *h, int64_t i)         h[i] just added
 *   void PREFIX_sift_down(TYPE *h, int64_t n, int64_t i)
 *                                                   h[i] just replaced
 *   void PREFIX_heap_sort(TYPE *h, int64_t n)       best first; ends the heap
 *   int  PREFIX_cmp(const void *a, const void *b)   qsort order, best first
 *
 * and undefines the three macros, so it may be included again for another
 * type. MCC_HEAP_BETTER must be a strict order (no element ranks before
 * itself); a total one makes every result independent of the order in
 * which elements were offered.
 *
 * (src/core/mcc/mcc_match.c keeps its own heap of the largest uint64 keys, a
 * branch-free variant whose speed the refinement depends on.)
 */
#include <stdint.h>

#if !defined(MCC_HEAP_PREFIX) || !defined(MCC_HEAP_TYPE) || !defined(MCC_HEAP_BETTER)
#error "define MCC_HEAP_PREFIX, MCC_HEAP_TYPE and MCC_HEAP_BETTER before including mcc_heap.h"
#endif

#define MCC_HEAP_CAT_(a, b) a##_##b
#define MCC_HEAP_CAT(a, b) MCC_HEAP_CAT_(a, b)
#define MCC_HEAP_FN(name) MCC_HEAP_CAT(MCC_HEAP_PREFIX, name)

/* Move h[i] up while it ranks before its parent (the root is the worst). */
static inline void
MCC_HEAP_FN(sift_up) (MCC_HEAP_TYPE *h, int64_t i)
{
	MCC_HEAP_TYPE x = h[i];

	while (i > 0)
	{
		int64_t		p = (i - 1) / 2;

		if (!MCC_HEAP_BETTER(&h[p], &x))
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = x;
}

/* Restore the heap h[0..n) below position i. */
static inline void
MCC_HEAP_FN(sift_down) (MCC_HEAP_TYPE *h, int64_t n, int64_t i)
{
	MCC_HEAP_TYPE x = h[i];

	for (;;)
	{
		int64_t		c = 2 * i + 1;

		if (c >= n)
			break;
		/* follow the worse child */
		if (c + 1 < n && MCC_HEAP_BETTER(&h[c], &h[c + 1]))
			c++;
		if (!MCC_HEAP_BETTER(&x, &h[c]))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
}

/*
 * Offer x to the heap h[0..n) of at most k elements (h has room for k):
 * added while fewer than k are held, else it replaces the worst if it
 * ranks before it. Returns the new count.
 */
static inline int64_t
MCC_HEAP_FN(offer) (MCC_HEAP_TYPE *h, int64_t n, int64_t k, const MCC_HEAP_TYPE *x)
{
	if (n < k)
	{
		h[n] = *x;
		MCC_HEAP_FN(sift_up) (h, n);
		return n + 1;
	}
	if (n > 0 && MCC_HEAP_BETTER(x, &h[0]))
	{
		h[0] = *x;
		MCC_HEAP_FN(sift_down) (h, n, 0);
	}
	return n;
}

/* Heap sort: moving the worst to the end each time leaves h best first. */
static inline void
MCC_HEAP_FN(heap_sort) (MCC_HEAP_TYPE *h, int64_t n)
{
	for (; n > 1; n--)
	{
		MCC_HEAP_TYPE tmp = h[0];

		h[0] = h[n - 1];
		h[n - 1] = tmp;
		MCC_HEAP_FN(sift_down) (h, n - 1, 0);
	}
}

/* qsort comparator: best first. */
static inline int
MCC_HEAP_FN(cmp) (const void *a, const void *b)
{
	const MCC_HEAP_TYPE *x = a;
	const MCC_HEAP_TYPE *y = b;

	if (MCC_HEAP_BETTER(x, y))
		return -1;
	return MCC_HEAP_BETTER(y, x) ? 1 : 0;
}

#undef MCC_HEAP_FN
#undef MCC_HEAP_CAT
#undef MCC_HEAP_CAT_
#undef MCC_HEAP_PREFIX
#undef MCC_HEAP_TYPE
#undef MCC_HEAP_BETTER
