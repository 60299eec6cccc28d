/*
 * eng_hits.h: the k best hits of one probe, in identify()'s order.
 *
 * Order: higher score first, then smaller key (mcc_topk.h's order); equal
 * (score, key) pairs, which only tuple versions of one key can produce, are
 * ordered by template hash and then entry, so that a result never depends
 * on how the scan was split into chunks and threads. mcc_topk keeps one id
 * per hit; the engine needs the key and the entry, hence this small heap.
 */
#ifndef ENG_HITS_H
#define ENG_HITS_H

#include <stdbool.h>
#include <stdint.h>

#include "mcc_topk.h"

typedef struct eng_hit
{
	float		score;
	int64_t		key;
	uint64_t	hash;
	uint32_t	entry;
} eng_hit;

typedef struct eng_hits
{
	uint32_t	k;				/* how many to keep */
	uint32_t	n;				/* how many held */
	uint32_t	cap;			/* storage, grown up to k as hits come */
	bool		failed;			/* storage could not grow */
	eng_hit    *h;				/* a heap with the worst hit at the root */
} eng_hits;

/* true if a ranks before b: mcc_row_better, then the smaller entry. */
static inline bool
eng_hit_better(const eng_hit *a, const eng_hit *b)
{
	if (a->score == b->score && a->key == b->key && a->hash == b->hash)
		return a->entry < b->entry;
	return mcc_row_better(a->score, a->key, a->hash, b->score, b->key, b->hash);
}

void		eng_hits_init(eng_hits *t, uint32_t k);
void		eng_hits_free(eng_hits *t);

/* true if a hit with this score could enter (a cheap pre-check). */
static inline bool
eng_hits_may_enter(const eng_hits *t, float score)
{
	return t->n < t->k || (t->k > 0 && score >= t->h[0].score);
}

/* Offer a hit; keeps it if it is among the k best so far. */
void		eng_hits_push(eng_hits *t, const eng_hit *hit);

/* Sort the held hits best first (ends the heap; nothing to do if already in order). */
void		eng_hits_sort(eng_hits *t);

/*
 * Hits that arrive ranked (a GPU search's: score desc, key asc, equal
 * (score, key) pairs in any order) go straight into storage instead of
 * through the heap: eng_hits_fill_begin returns room for n hits after the
 * held ones (NULL and t->failed if no memory), the caller writes `added`
 * of them, and eng_hits_fill_end keeps the k best of all held, sorted best
 * first: the hits, and their order, that pushing each and eng_hits_sort
 * give (the order is total), for the cost of one check of the order when
 * they came ranked. The heap is over after it: no push may follow.
 */
eng_hit    *eng_hits_fill_begin(eng_hits *t, uint32_t n);
void		eng_hits_fill_end(eng_hits *t, uint32_t added);

#endif							/* ENG_HITS_H */
