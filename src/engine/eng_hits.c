/*
 * eng_hits.c: a bounded binary heap of hits, worst at the root
 * (src/core/common/mcc_heap.h).
 */
#include "eng_hits.h"

#include <stdlib.h>
#include <string.h>

void
eng_hits_init(eng_hits *t, uint32_t k)
{
	memset(t, 0, sizeof(*t));
	t->k = k;
}

void
eng_hits_free(eng_hits *t)
{
	free(t->h);
	t->h = NULL;
	t->n = t->cap = 0;
}

#define MCC_HEAP_PREFIX hits
#define MCC_HEAP_TYPE eng_hit
#define MCC_HEAP_BETTER(a, b) eng_hit_better(a, b)
#include "mcc_heap.h"

void
eng_hits_push(eng_hits *t, const eng_hit *hit)
{
	if (t->k == 0)
		return;
	if (t->n < t->k)
	{
		if (t->n == t->cap)
		{
			uint32_t	cap = t->cap ? t->cap * 2 : 16;
			eng_hit    *h;

			if (cap > t->k || cap < t->cap)
				cap = t->k;
			h = realloc(t->h, (size_t) cap * sizeof(eng_hit));
			if (h == NULL)
			{
				t->failed = true;
				return;
			}
			t->h = h;
			t->cap = cap;
		}
	}
	t->n = (uint32_t) hits_offer(t->h, t->n, t->k, hit);
}

void
eng_hits_sort(eng_hits *t)
{
	if (t->n > 1)
		qsort(t->h, t->n, sizeof(eng_hit), hits_cmp);
}
