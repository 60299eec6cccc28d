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

/* Are h[0..n) best first? (A heap's root is its worst: this fails at once.) */
static bool
in_order(const eng_hit *h, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++)
		if (!eng_hit_better(&h[i - 1], &h[i]))
			return false;
	return true;
}

void
eng_hits_sort(eng_hits *t)
{
	if (t->n > 1 && !in_order(t->h, t->n))
		qsort(t->h, t->n, sizeof(eng_hit), hits_cmp);
}

eng_hit *
eng_hits_fill_begin(eng_hits *t, uint32_t n)
{
	uint64_t	need = (uint64_t) t->n + n;

	if (need > t->cap || t->h == NULL)
	{
		eng_hit    *h;

		if (need > UINT32_MAX ||
			(h = realloc(t->h, (size_t) (need ? need : 1) * sizeof(eng_hit))) == NULL)
		{
			t->failed = true;
			return NULL;
		}
		t->h = h;
		t->cap = (uint32_t) need;
	}
	return t->h + t->n;
}

void
eng_hits_fill_end(eng_hits *t, uint32_t added)
{
	uint32_t	n = t->n + added;

	/* out of order only around ties of (score, key) or after held hits */
	if (n > 1 && !in_order(t->h, n))
		qsort(t->h, n, sizeof(eng_hit), hits_cmp);
	t->n = n < t->k ? n : t->k;
}
