/*
 * identify_refine.c: the LSS shortlist of identify()'s backend scan and its
 * rescoring (src/identify/identify_refine.h).
 *
 * The shortlist copies the templates of the rows it keeps as they are
 * scanned, so the refinement rescores exactly the rows the scan saw, under
 * its snapshot, without reading the gallery again; a view may repeat a key,
 * and the template hash then orders rows of equal score and key, so the
 * shortlist never depends on the order in which rows arrive.
 */
#include "mcc_pg.h"
#include "identify_refine.h"

#include "miscadmin.h"
#include "utils/memutils.h"

#include "mcc_hash.h"
#include "mcc_topk.h"

#define SHORTLIST_FIRST 64		/* first storage, in rows */

void
mcc_shortlist_init(mcc_shortlist *sl, int64 cap, MemoryContext cxt)
{
	memset(sl, 0, sizeof(*sl));
	sl->cap = cap;
	sl->cxt = cxt;
	sl->alloc = Min(cap, (int64) SHORTLIST_FIRST);
	sl->h = MemoryContextAllocHuge(cxt, Max(sl->alloc, 1) * sizeof(mcc_short_hit));
}

/* true if a ranks before b (the engine's order of rows, mcc_topk.h). */
static inline bool
better(const mcc_short_hit *a, const mcc_short_hit *b)
{
	return mcc_row_better(a->score, a->key, a->hash, b->score, b->key, b->hash);
}

#define MCC_HEAP_PREFIX shortlist
#define MCC_HEAP_TYPE mcc_short_hit
#define MCC_HEAP_BETTER(a, b) better(a, b)
#include "mcc_heap.h"

/* A copy of a template in the shortlist's context. */
static struct varlena *
copy_template(const mcc_shortlist *sl, const struct varlena *tpl)
{
	struct varlena *c = MemoryContextAlloc(sl->cxt, VARSIZE(tpl));

	memcpy(c, tpl, VARSIZE(tpl));
	return c;
}

void
mcc_shortlist_push(mcc_shortlist *sl, float score, int64 key, const struct varlena *tpl)
{
	mcc_short_hit hit;

	if (!mcc_shortlist_may_enter(sl, score))
		return;
	hit.score = score;
	hit.key = key;
	hit.hash = mcc_template_hash((const uint8_t *) tpl, VARSIZE(tpl));
	hit.tpl = NULL;
	if (sl->n < sl->cap)
	{
		if (sl->n == sl->alloc)
		{
			int64		alloc = Min(sl->cap, 2 * sl->alloc);

			sl->h = repalloc_huge(sl->h, alloc * sizeof(mcc_short_hit));
			sl->alloc = alloc;
		}
		hit.tpl = copy_template(sl, tpl);
		sl->h[sl->n] = hit;
		shortlist_sift_up(sl->h, sl->n);
		sl->n++;
		return;
	}
	if (!better(&hit, &sl->h[0]))
		return;
	pfree(sl->h[0].tpl);
	hit.tpl = copy_template(sl, tpl);
	sl->h[0] = hit;
	shortlist_sift_down(sl->h, sl->n, 0);
}

void
mcc_shortlist_sort(mcc_shortlist *sl)
{
	if (sl->n > 1)
		qsort(sl->h, sl->n, sizeof(mcc_short_hit), shortlist_cmp);
}

void
mcc_shortlist_free(mcc_shortlist *sl)
{
	int64		i;

	for (i = 0; i < sl->n; i++)
		pfree(sl->h[i].tpl);
	if (sl->h)
		pfree(sl->h);
	sl->h = NULL;
	sl->n = sl->alloc = 0;
}

void
mcc_shortlist_refine(const mcc_shortlist *sl, int64 n, const struct varlena *probe,
					 mcc_method method, mcc_refined *out)
{
	mcc_match_work *w = palloc(mcc_match_work_size());
	mcc_template_view pv;
	int64		i;

	Assert(n <= sl->n);
	mcc_match_work_init(w);
	mcc_pg_open(probe, &pv);
	mcc_match_set_probe(w, &pv);
	for (i = 0; i < n; i++)
	{
		mcc_template_view cv;
		mcc_error	err;

		CHECK_FOR_INTERRUPTS();
		mcc_pg_open(sl->h[i].tpl, &cv);
		if (mcc_match_candidate(w, &cv, method, NULL, &out[i].score, &err) != MCC_OK)
			mcc_pg_raise(&err);
		out[i].key = sl->h[i].key;
	}
	pfree(w);
}
