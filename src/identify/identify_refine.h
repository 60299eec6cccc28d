/*
 * identify_refine.h: the refinement stage of identify()'s backend scan
 * (src/identify/identify.c): the LSS shortlist kept during the scan, with a copy of
 * each shortlisted row's template, and its rescoring in the backend.
 *
 * The scan cannot know n, and so n', before it ends; it keeps the best
 * `cap` rows by LSS for a cap computed from the planner's row estimate. If
 * the n the scan counted asks for more than cap, identify() scans again
 * with cap = n' (the same snapshot gives the same rows).
 */
#ifndef MCC_IDENTIFY_REFINE_H
#define MCC_IDENTIFY_REFINE_H

#include "postgres.h"

#include "refine.h"

/* A row of the shortlist: its LSS score, key, template and the template's hash. */
typedef struct mcc_short_hit
{
	float		score;
	int64		key;
	uint64		hash;			/* orders rows of equal score and key (views) */
	struct varlena *tpl;		/* a copy, in the shortlist's context */
} mcc_short_hit;

/* The best cap rows by (LSS desc, key asc, hash asc): a heap, worst at the root. */
typedef struct mcc_shortlist
{
	int64		cap;
	int64		n;
	int64		alloc;			/* storage, grown up to cap as rows come */
	mcc_short_hit *h;
	MemoryContext cxt;			/* the copies and the storage */
} mcc_shortlist;

extern void mcc_shortlist_init(mcc_shortlist *sl, int64 cap, MemoryContext cxt);

/* True if a row with this score could enter (cheap pre-check). */
static inline bool
mcc_shortlist_may_enter(const mcc_shortlist *sl, float score)
{
	return sl->n < sl->cap || (sl->cap > 0 && score >= sl->h[0].score);
}

/* Offer a row; its template is copied if it enters. */
extern void mcc_shortlist_push(mcc_shortlist *sl, float score, int64 key,
							   const struct varlena *tpl);

/* Sort best first (ends the heap). */
extern void mcc_shortlist_sort(mcc_shortlist *sl);

/* Free the copies and the storage. */
extern void mcc_shortlist_free(mcc_shortlist *sl);

/*
 * Rescore the first n rows of a sorted shortlist against the probe with
 * method (one mcc_match work area for the call; interrupts are checked
 * between candidates); out receives n (score, key) pairs.
 */
extern void mcc_shortlist_refine(const mcc_shortlist *sl, int64 n,
								 const struct varlena *probe, mcc_method method,
								 mcc_refined *out);

#endif							/* MCC_IDENTIFY_REFINE_H */
