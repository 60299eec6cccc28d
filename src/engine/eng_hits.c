/*
 * eng_hits.c: a bounded binary heap of hits, worst at the root.
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

/* Restore the heap below position i (the root is the worst hit). */
static void
sift_down(eng_hit *h, uint32_t n, uint32_t i)
{
	eng_hit		x = h[i];

	for (;;)
	{
		uint32_t	c = 2 * i + 1;

		if (c >= n)
			break;
		/* follow the worse child */
		if (c + 1 < n && eng_hit_better(&h[c], &h[c + 1]))
			c++;
		if (!eng_hit_better(&x, &h[c]))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
}

/* Move position i up while it is worse than its parent. */
static void
sift_up(eng_hit *h, uint32_t i)
{
	eng_hit		x = h[i];

	while (i > 0)
	{
		uint32_t	p = (i - 1) / 2;

		if (!eng_hit_better(&h[p], &x))
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = x;
}

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
		t->h[t->n] = *hit;
		sift_up(t->h, t->n);
		t->n++;
		return;
	}
	if (eng_hit_better(hit, &t->h[0]))
	{
		t->h[0] = *hit;
		sift_down(t->h, t->n, 0);
	}
}

/* qsort comparator: best first */
static int
cmp_hit(const void *a, const void *b)
{
	const eng_hit *x = a;
	const eng_hit *y = b;

	if (eng_hit_better(x, y))
		return -1;
	return eng_hit_better(y, x) ? 1 : 0;
}

void
eng_hits_sort(eng_hits *t)
{
	if (t->n > 1)
		qsort(t->h, t->n, sizeof(eng_hit), cmp_hit);
}
