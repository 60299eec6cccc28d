/*
 * mcc_topk.h: the k best (score, id) pairs of a scan.
 *
 * Order: higher score first, ties broken by smaller id. This is the order
 * identify() returns, on every path (backend scan, matcher service, GPU).
 * The caller owns the storage and may grow it with mcc_topk_rebind().
 */
#ifndef MCC_TOPK_H
#define MCC_TOPK_H

#include <stdbool.h>
#include <stdint.h>

typedef struct mcc_hit
{
	float		score;
	int64_t		id;
} mcc_hit;

typedef struct mcc_topk
{
	int64_t		k;				/* how many to keep */
	int64_t		n;				/* how many held */
	int64_t		cap;			/* storage size, <= k */
	mcc_hit    *h;				/* a min-heap on (score, -id) while filling */
} mcc_topk;

/* true if a ranks before b. */
static inline bool
mcc_hit_better(float sa, int64_t ia, float sb, int64_t ib)
{
	return sa > sb || (sa == sb && ia < ib);
}

/*
 * The same for a gallery's rows, whose key is the id: rows of equal score
 * and key (tuple versions of one key) rank by template hash, so that a
 * shortlist never depends on the order its rows came in. The engine's hits
 * (eng_hits.h) and the backend's shortlist (identify_refine.c) both rank so.
 */
static inline bool
mcc_row_better(float sa, int64_t ka, uint64_t ha, float sb, int64_t kb, uint64_t hb)
{
	if (sa != sb || ka != kb)
		return mcc_hit_better(sa, ka, sb, kb);
	return ha < hb;
}

void		mcc_topk_init(mcc_topk *t, int64_t k, mcc_hit *storage, int64_t cap);

/* true if the heap is full to cap but cap < k: grow and rebind first. */
bool		mcc_topk_needs_room(const mcc_topk *t);

/* Point at larger storage that already holds a copy of the first n hits. */
void		mcc_topk_rebind(mcc_topk *t, mcc_hit *storage, int64_t cap);

/* Offer a hit; keeps it if it is among the k best so far. */
void		mcc_topk_push(mcc_topk *t, float score, int64_t id);

/*
 * The worst score held if the heap holds k hits, else -infinity. A hit equal
 * to the floor may still enter (smaller id), so prune with score < floor.
 */
float		mcc_topk_floor(const mcc_topk *t);

/* Sort the held hits best first (ends the heap: push no more). */
void		mcc_topk_sort(mcc_topk *t);

#endif							/* MCC_TOPK_H */
