/*
 * test_topk.c: the k best hits against a full sort, with ties, growth by
 * rebind and the floor.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "testgen.h"
#include "mcc_topk.h"

/* Full-sort order: higher score first, then smaller id. */
static int
cmp_hit(const void *pa, const void *pb)
{
	const mcc_hit *a = pa;
	const mcc_hit *b = pb;

	if (a->score != b->score)
		return a->score > b->score ? -1 : 1;
	return (a->id > b->id) - (a->id < b->id);
}

/*
 * Push n random hits (scores from a small set so ties are common, ids
 * shuffled) with k and an initial capacity; grow by doubling when asked.
 * 1 if the sorted result equals the first k of a full sort.
 */
static int
one_run(tg_rng *r, int n, int64_t k, int64_t cap0, int levels, int *grew)
{
	mcc_hit    *all = malloc(sizeof(mcc_hit) * (n ? n : 1));
	mcc_hit    *st = malloc(sizeof(mcc_hit) * (cap0 ? cap0 : 1));
	mcc_topk	t;
	int			ok = 1;
	int64_t		want = k < n ? k : n;

	*grew = 0;
	for (int i = 0; i < n; i++)
	{
		all[i].score = (float) tg_int(r, 0, levels) / levels;
		all[i].id = i * 7 % (n + 3) + (i % 3) * 100000;	/* distinct, not in push order */
	}
	mcc_topk_init(&t, k, st, cap0);
	for (int i = 0; i < n; i++)
	{
		float		floor_before = mcc_topk_floor(&t);

		if (mcc_topk_needs_room(&t))
		{
			int64_t		cap = t.cap * 2 + 1;
			mcc_hit    *bigger = malloc(sizeof(mcc_hit) * cap);

			memcpy(bigger, t.h, sizeof(mcc_hit) * t.n);
			free(st);
			st = bigger;
			mcc_topk_rebind(&t, st, cap);
			(*grew)++;
		}
		mcc_topk_push(&t, all[i].score, all[i].id);
		/* the floor never drops once the heap is full */
		if (t.n == k && floor_before != -INFINITY && mcc_topk_floor(&t) < floor_before)
			ok = 0;
	}
	qsort(all, n, sizeof(mcc_hit), cmp_hit);
	mcc_topk_sort(&t);
	if (t.n != want)
		ok = 0;
	for (int64_t i = 0; ok && i < want; i++)
		ok = t.h[i].score == all[i].score && t.h[i].id == all[i].id;
	free(all);
	free(st);
	return ok;
}

/* Random runs against a full sort, then the corner cases. */
int
main(void)
{
	tg_rng		r = {123};
	int			ok = 0;
	int			grew_total = 0;
	int			runs = 0;
	mcc_topk	t;
	mcc_hit		h[4];

	for (int i = 0; i < 300; i++)
	{
		int			n = tg_int(&r, 0, 2000);
		int64_t		k = tg_int(&r, 0, 3) == 0 ? tg_int(&r, 1, 5) : tg_int(&r, 1, 300);
		int			grew;

		ok += one_run(&r, n, k, k, tg_int(&r, 1, 50), &grew);
		runs++;
	}
	UNIT_CHECK(ok == runs, "top-k equals the head of a full sort, ties by id (%d of %d runs)", ok, runs);

	ok = 0;
	for (int i = 0; i < 100; i++)
	{
		int			grew;

		ok += one_run(&r, 3000, tg_int(&r, 50, 1000), tg_int(&r, 0, 4), 20, &grew);
		grew_total += grew;
	}
	UNIT_CHECK(ok == 100 && grew_total > 100, "growth by rebind from a tiny store (%d rebinds)", grew_total);

	/* the k = n, k > n and k = 0 corners */
	UNIT_CHECK(one_run(&r, 50, 50, 50, 5, &ok) && one_run(&r, 50, 80, 80, 5, &ok),
			   "k equal to and above the number of hits");
	mcc_topk_init(&t, 0, h, 4);
	mcc_topk_push(&t, 1.0f, 1);
	UNIT_CHECK(t.n == 0 && mcc_topk_floor(&t) == -INFINITY, "k = 0 keeps nothing");

	/* floor and tie semantics on a small case */
	mcc_topk_init(&t, 2, h, 2);
	mcc_topk_push(&t, 0.5f, 10);
	UNIT_CHECK(mcc_topk_floor(&t) == -INFINITY, "floor is -infinity until k hits are held");
	mcc_topk_push(&t, 0.5f, 20);
	mcc_topk_push(&t, 0.5f, 15);		/* equal score, smaller id than 20: enters */
	mcc_topk_push(&t, 0.5f, 30);		/* equal score, larger id: stays out */
	mcc_topk_push(&t, NAN, 1);			/* NaN never enters */
	UNIT_CHECK(mcc_topk_floor(&t) == 0.5f, "floor is the worst score held");
	mcc_topk_sort(&t);
	UNIT_CHECK(t.n == 2 && t.h[0].id == 10 && t.h[1].id == 15, "equal scores: smaller ids win");

	/* storage left too small by the caller: behaves as k = cap, no overflow */
	mcc_topk_init(&t, 10, h, 2);
	for (int i = 0; i < 10; i++)
		mcc_topk_push(&t, (float) i, i);
	mcc_topk_sort(&t);
	UNIT_CHECK(t.n == 2 && t.h[0].id == 9 && t.h[1].id == 8, "without rebind it keeps the cap best");
	return unit_done();
}
