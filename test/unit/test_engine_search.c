/*
 * test_engine_search.c: the engine's passes over a cache: every probe's
 * top-k' equals a brute-force mcc_lss_score search in identify()'s order
 * (score desc, key asc), with `more` right; tombstones are never returned;
 * a batch of probes on the pool's threads equals each probe alone on one
 * thread; a cancelled probe is skipped; the rule that holds a large pass
 * for its cache's GPU mirror being built (eng_pass_waits_for_build).
 */
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "engine_testlib.h"
#include "eng_cache.h"
#include "eng_hits.h"
#include "eng_pass.h"
#include "eng_pool.h"
#include "eng_scan.h"

static const mcc_profile *prof;

/* A prepared probe (aligned storage). */
static mcc_probe *
probe_of(const tl_tpl *t)
{
	mcc_template_view v;
	mcc_error	err;
	mcc_probe  *q = aligned_alloc(64, (mcc_probe_size() + 63) & ~(size_t) 63);

	mcc_template_open(t->b, t->n, &v, &err);
	mcc_probe_init(q, &v);
	return q;
}

/* Copy a slot's sorted hits into the reference's form. */
static void
slot_result(const eng_slot *s, tl_probe_result *r)
{
	memset(r, 0, sizeof(*r));
	r->n = s->hits.n;
	r->more = s->n_ge > s->hits.n;
	for (uint32_t i = 0; i < r->n && i < TL_MAX_HITS; i++)
	{
		r->score[i] = s->hits.h[i].score;
		r->key[i] = s->hits.h[i].key;
		r->hash[i] = s->hits.h[i].hash;
	}
}

/* Run a batch on the pool and wait for it. */
static void
run_on_pool(eng_pool *p, eng_batch *b)
{
	eng_job    *done = NULL;

	eng_pool_submit(p, &b->job);
	while (done == NULL)
	{
		eng_pool_wait(p, 1000);
		done = eng_pool_take_done(p);
	}
	eng_batch_finish(b);
}

/* The heap keeps the k best in identify()'s order whatever the arrival order. */
static void
test_hits(void)
{
	eng_hits	h;
	eng_hit		x;
	bool		ok = true;
	tg_rng		r = {5};

	eng_hits_init(&h, 50);
	for (int i = 0; i < 2000; i++)
	{
		x.score = (float) tg_int(&r, 0, 40) / 40.0f;	/* many ties */
		x.key = tg_int(&r, 0, 300);
		x.hash = (uint64_t) i;
		x.entry = (uint32_t) i;
		eng_hits_push(&h, &x);
	}
	eng_hits_sort(&h);
	UNIT_CHECK(h.n == 50, "heap holds k");
	for (uint32_t i = 1; i < h.n; i++)
		ok = ok && eng_hit_better(&h.h[i - 1], &h.h[i]);
	UNIT_CHECK(ok, "sorted by score desc, key asc");
	UNIT_CHECK(h.h[0].score == 1.0f, "best score first");
	eng_hits_free(&h);
	eng_hits_init(&h, 0);
	eng_hits_push(&h, &x);
	UNIT_CHECK(h.n == 0, "k = 0 keeps nothing");
	eng_hits_free(&h);
}

/* A list of hits by score desc, key asc, with (score, key) ties in any order. */
static uint32_t
ranked_hits(eng_hit *x, uint32_t n, tg_rng *r)
{
	float		score = 1.0f;
	int64_t		key = 0;

	for (uint32_t i = 0; i < n; i++)
	{
		int			step = tg_int(r, 0, 3);

		if (step == 1)
			key++;
		else if (step >= 2)
		{
			score -= 1.0f / 64.0f;
			key = tg_int(r, 0, 20);
		}
		x[i].score = score;
		x[i].key = key;
		/* versions of one key: hash and entry not in order */
		x[i].hash = (uint64_t) tg_int(r, 0, 3);
		x[i].entry = (uint32_t) (n - i);
	}
	return n;
}

/*
 * Hits written ranked (eng_hits_fill_begin/end, a GPU pass's path) give the
 * heap's k best in the heap's order: ranked input with ties out of order,
 * input in no order, after held hits, fewer than k, k = 0, nothing.
 */
static void
test_hits_fill(void)
{
	tg_rng		r = {9};
	eng_hit		x[300];
	uint32_t	ks[5] = {50, 299, 300, 1000, 0};

	for (int round = 0; round < 10; round++)
		for (int c = 0; c < 5; c++)
		{
			eng_hits	heap;
			eng_hits	fill;
			uint32_t	n = ranked_hits(x, round == 9 ? 0 : 300, &r);
			uint32_t	held = round >= 7 && n > 10 ? 10 : 0;
			eng_hit    *to;
			bool		same;

			if (round >= 5 && round < 7)	/* no order at all */
				for (uint32_t i = n; i > 1; i--)
				{
					uint32_t	j = (uint32_t) tg_int(&r, 0, (int) i - 1);
					eng_hit		t = x[i - 1];

					x[i - 1] = x[j];
					x[j] = t;
				}
			eng_hits_init(&heap, ks[c]);
			eng_hits_init(&fill, ks[c]);
			for (uint32_t i = 0; i < n; i++)
				eng_hits_push(&heap, &x[i]);
			eng_hits_sort(&heap);
			for (uint32_t i = 0; i < held; i++)	/* some pushed first */
				eng_hits_push(&fill, &x[n - 1 - i]);
			to = eng_hits_fill_begin(&fill, n - held);
			UNIT_CHECK(to != NULL, "fill: storage");
			if (to == NULL)
				return;
			memcpy(to, x, (size_t) (n - held) * sizeof(eng_hit));
			eng_hits_fill_end(&fill, n - held);
			same = heap.n == fill.n;
			for (uint32_t i = 0; same && i < heap.n; i++)
				same = heap.h[i].score == fill.h[i].score && heap.h[i].key == fill.h[i].key &&
					heap.h[i].hash == fill.h[i].hash && heap.h[i].entry == fill.h[i].entry;
			UNIT_CHECK(same, "fill: the heap's k best in its order (round %d, k %u, n %u)",
					   round, ks[c], n);
			eng_hits_free(&heap);
			eng_hits_free(&fill);
		}
}

/*
 * The build-wait rule alone (eng_pass.h): one probe never waits; a dedup
 * batch of 256 probes over 1,000,000 rows waits with 16 threads, not with
 * 128 (their CPU pass is shorter than four builds); a small gallery never
 * waits; the first waiting probe count at 1,000,000 rows and 16 threads is
 * 154 (4 x 1,600 ns x 16 / 667 ns), and from there on every larger count
 * waits.
 */
static void
test_build_wait(void)
{
	bool		monotone = true;
	uint32_t	first = 0;

	UNIT_CHECK(!eng_pass_waits_for_build(1, 100000000, 16) &&
			   !eng_pass_waits_for_build(1, 100000000, 1),
			   "build wait: a single probe never waits, however large the gallery");
	UNIT_CHECK(eng_pass_waits_for_build(256, 1000000, 16),
			   "build wait: 256 probes over 1,000,000 rows on 16 threads wait for the GPU");
	UNIT_CHECK(!eng_pass_waits_for_build(256, 1000000, 128),
			   "build wait: ... not on 128 threads (their pass is shorter than 4 builds)");
	UNIT_CHECK(!eng_pass_waits_for_build(256, 1000, 16) && !eng_pass_waits_for_build(256, 1000, 0),
			   "build wait: 256 probes over 1,000 rows never wait (under a second on the CPU)");
	for (uint32_t p = 1; p <= 1024; p++)
	{
		bool		w = eng_pass_waits_for_build(p, 1000000, 16);

		if (w && first == 0)
			first = p;
		if (first != 0 && !w)
			monotone = false;
	}
	UNIT_CHECK(first == 154 && monotone,
			   "build wait: from %u probes on (1,000,000 rows, 16 threads), every larger batch too",
			   first);
}

int
main(void)
{
	int			n = 400;
	int			np = 6;
	tl_tpl	   *t;
	tl_tpl	   *pr;
	tl_entry   *ref;
	eng_budget	bud = {0, 0};
	mcc_error	err;
	eng_cache  *c;
	eng_pool   *pool;
	mcc_probe **q;
	tl_probe_result *want = malloc(sizeof(tl_probe_result));
	tl_probe_result *got = malloc(sizeof(tl_probe_result));
	uint32_t	ks[6] = {10, 1, 50, 1000, 0, 25};
	float		mins[6] = {0.0f, 0.0f, 0.2f, 0.0f, 0.0f, 0.3f};
	eng_batch  *big;
	bool		ok;
	atomic_int	cancel_flag = 0;

	mcc_lss_init();
	prof = mcc_profile_by_id(MCC_PROFILE_DEFAULT);
	test_hits();
	test_hits_fill();

	/* gallery: n templates; keys with duplicates (versions) and equal templates */
	t = tl_templates(21, n, 12);
	pr = tl_templates(22, np, 0);
	/* probes: impressions-like ones taken from the gallery, and two unrelated */
	free(pr[0].b);
	free(pr[1].b);
	free(pr[5].b);
	pr[5] = (tl_tpl) {memcpy(malloc(t[6].n), t[6].b, t[6].n), t[6].n};
	pr[0] = (tl_tpl) {memcpy(malloc(t[0].n), t[0].b, t[0].n), t[0].n};
	pr[1] = (tl_tpl) {memcpy(malloc(t[3].n), t[3].b, t[3].n), t[3].n};
	ref = calloc((size_t) n, sizeof(tl_entry));
	c = eng_cache_new(prof, &bud, 0, 0, &err);
	for (int i = 0; i < n; i++)
	{
		mcc_template_view v;
		/* key: i / 2 makes pairs of versions; entry 7 repeats entry 0's template */
		const tl_tpl *tp = i == 7 ? &t[0] : &t[i];

		mcc_template_open(tp->b, tp->n, &v, &err);
		ref[i].key = i == 7 ? 1000 : i / 2;
		ref[i].t = tp;
		ref[i].live = i % 11 != 5;
		eng_cache_append(c, ref[i].key, mcc_template_hash(tp->b, tp->n), 3, 0, 0, &v, NULL, &err);
		if (!ref[i].live)
			eng_cache_purge(c, (uint32_t) i);
	}
	q = calloc((size_t) np, sizeof(mcc_probe *));
	for (int i = 0; i < np; i++)
		q[i] = probe_of(&pr[i]);

	/* each probe alone, on this thread, against the brute force */
	for (int i = 0; i < np; i++)
	{
		eng_batch  *b = eng_batch_new(c, 1, 1);

		eng_batch_set(b, 0, q[i], ks[i], mins[i], NULL);
		eng_batch_run_here(b);
		slot_result(&b->slots[0], got);
		tl_reference(&pr[i], ref, n, ks[i], mins[i], want);
		UNIT_CHECK(tl_same(got, want), "probe %d alone (k %u, min %.2f): %u hits, more %u, "
				   "equal to brute force", i, ks[i], mins[i], got->n, got->more);
		eng_batch_free(b);
	}
	tl_reference(&pr[0], ref, n, 10, 0.0f, want);
	UNIT_CHECK(want->key[0] == 0 && want->key[1] == 1000 && want->score[0] == want->score[1],
			   "a tie (same template, keys 0 and 1000) is ordered by key");
	tl_reference(&pr[0], ref, n, 1000, 0.0f, want);
	ok = true;
	for (uint32_t i = 0; i < want->n; i++)
		ok = ok && !(want->key[i] == 2 && want->hash[i] == mcc_template_hash(t[5].b, t[5].n));
	UNIT_CHECK(ok, "the reference leaves out the purged entry 5");

	/* all probes in one batch on the pool's threads */
	pool = eng_pool_start(3, ENG_SCRATCH_BYTES);
	big = eng_batch_new(c, (uint32_t) np, 3);
	for (int i = 0; i < np; i++)
		eng_batch_set(big, (uint32_t) i, q[i], ks[i], mins[i], NULL);
	UNIT_CHECK(big->job.n_parts > 3, "the pass is split into %u chunks", big->job.n_parts);
	run_on_pool(pool, big);
	ok = true;
	for (int i = 0; i < np; i++)
	{
		slot_result(&big->slots[i], got);
		tl_reference(&pr[i], ref, n, ks[i], mins[i], want);
		ok = ok && tl_same(got, want);
	}
	UNIT_CHECK(ok, "a batch of %d probes on 3 threads equals the single searches", np);
	eng_batch_free(big);

	/* a cancelled probe is skipped; the others are still served */
	big = eng_batch_new(c, 2, 3);
	eng_batch_set(big, 0, q[0], 10, 0.0f, &cancel_flag);
	eng_batch_set(big, 1, q[1], 10, 0.0f, NULL);
	atomic_store(&cancel_flag, 1);
	run_on_pool(pool, big);
	slot_result(&big->slots[1], got);
	tl_reference(&pr[1], ref, n, 10, 0.0f, want);
	UNIT_CHECK(big->slots[0].hits.n == 0 && big->slots[0].n_ge == 0 && tl_same(got, want),
			   "cancelled probe skipped, the other answered");
	eng_batch_free(big);

	/* a batch whose every probe is cancelled ends without scanning */
	big = eng_batch_new(c, 1, 3);
	eng_batch_set(big, 0, q[0], 10, 0.0f, &cancel_flag);
	run_on_pool(pool, big);
	UNIT_CHECK(big->slots[0].n_ge == 0, "an all-cancelled batch comes back done");
	eng_batch_free(big);

	/* an empty cache and k capped at the searchable entries */
	{
		eng_cache  *e = eng_cache_new(prof, &bud, 0, 0, &err);
		eng_batch  *b = eng_batch_new(e, 1, 2);

		eng_batch_set(b, 0, q[0], 10, 0.0f, NULL);
		UNIT_CHECK(b->job.n_parts == 0 && b->slots[0].k == 0, "empty cache: no parts, k 0");
		run_on_pool(pool, b);
		UNIT_CHECK(b->slots[0].hits.n == 0, "empty cache: no hits");
		eng_batch_free(b);
		eng_cache_free(e);
	}
	eng_pool_stop(pool);
	for (int i = 0; i < np; i++)
		free(q[i]);
	free(q);
	eng_cache_free(c);
	free(ref);
	free(want);
	free(got);
	tl_templates_free(t, n);
	tl_templates_free(pr, np);
	test_build_wait();
	return unit_done();
}
