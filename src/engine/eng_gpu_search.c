/*
 * eng_gpu_search.c: a pass's LSS search on the GPU (eng_gpu_pass): the
 * probes grouped by the k' they ask for, the library's hits turned into the
 * slots' results exactly as the CPU scan would give them, and what a
 * failure means.
 */
#include "eng_gpu.h"

#include <stdlib.h>
#include <string.h>

#include "eng_scan.h"
#include "mcc_cmp.h"
#include "mcc_job.h"

#ifdef MCC_ENGINE_GPU

#include "eng_gpu_int.h"

/* A live slot of a pass and the k' it asks the library for. */
typedef struct gpu_want
{
	uint32_t	kk;
	uint32_t	slot;
} gpu_want;

/* Do two library hits have equal (score, key)? */
static inline bool
same_cut(const mcc_gpu_hit *a, const mcc_gpu_hit *b)
{
	return a->score == b->score && a->id == b->id;
}

/* Hits whose cache entries a fill asks for ahead of the one it reads. */
#define FILL_AHEAD 8

/*
 * One thread's share of a slot's fill: hits [i0, i1) checked against the
 * cache, those reaching min_score written from out[o] on. A refining
 * search of a 100 M gallery fills hundreds of thousands of hits, each
 * reading its cache entry at random: on several threads, the hits in the
 * order one loop writes them.
 */
typedef struct fill_share
{
	const eng_cache *c;
	const mcc_gpu_hit *use;
	eng_hit    *out;
	float		min_score;
	size_t		i0;
	size_t		i1;
	size_t		o;				/* where its first written hit goes */
	size_t		written;
	bool		stale;			/* a hit the cache does not hold */
} fill_share;

/* Does the cache hold the library's hit u (its entry, live, the same key)? */
static inline bool
hit_held(const eng_cache *c, const mcc_gpu_hit *u)
{
	return u->index < c->soa.n_tpl && !(c->entries[u->index].flags & ENG_E_PURGED) &&
		c->entries[u->index].key == u->id;
}

static void *
fill_share_run(void *arg)
{
	fill_share *f = arg;
	const eng_cache *c = f->c;
	const mcc_gpu_hit *use = f->use;

	for (size_t i = f->i0; i < f->i1; i++)
	{
		const eng_entry *e;
		eng_hit    *h;

		/* entries are read at random: keep a few misses in flight */
		if (i + FILL_AHEAD < f->i1 && use[i + FILL_AHEAD].index < c->soa.n_tpl)
			__builtin_prefetch(&c->entries[use[i + FILL_AHEAD].index]);
		if (!hit_held(c, &use[i]))
		{
			f->stale = true;
			return NULL;
		}
		if (!(use[i].score >= f->min_score))
			continue;
		e = &c->entries[use[i].index];
		h = &f->out[f->o + f->written++];
		h->score = use[i].score;
		h->key = e->key;
		h->hash = e->hash;
		h->entry = use[i].index;
	}
	return NULL;
}

/*
 * Write the hits of use[0..n) that reach min_score to out, in order, on
 * up to MCC_JOB_LIST_SHARES_MAX threads; false if one of them is not in the cache.
 * *written: how many.
 */
static bool
fill_hits(const eng_cache *c, const mcc_gpu_hit *use, size_t n, float min_score, eng_hit *out,
		  uint64_t *written)
{
	fill_share	sh[MCC_JOB_LIST_SHARES_MAX];
	size_t		nsh = (size_t) mcc_job_list_shares(n);
	size_t		o = 0;
	bool		held = true;

	memset(sh, 0, sizeof(sh));
	for (size_t t = 0; t < nsh; t++)
	{
		sh[t].c = c;
		sh[t].use = use;
		sh[t].out = out;
		sh[t].min_score = min_score;
		sh[t].i0 = n * t / nsh;
		sh[t].i1 = n * (t + 1) / nsh;
		/* where the share's hits go: the hits before it that are written */
		sh[t].o = o;
		if (nsh > 1)
			for (size_t i = sh[t].i0; i < sh[t].i1; i++)
				o += use[i].score >= min_score;
	}
	mcc_job_run_each((int) nsh, fill_share_run, sh, sizeof(fill_share));
	*written = 0;
	for (size_t t = 0; t < nsh; t++)
	{
		held = held && !sh[t].stale;
		*written += sh[t].written;
	}
	return held;
}

/*
 * Turn the library's k' best of one probe at or above its min_score
 * (hits[0..n), k' = kk) into the slot's result. hits are ordered by
 * (score desc, key asc) but versions of one key with equal scores come in
 * any order, and only some of them may fit in k': when the k-th and the k'-th hit are such a group, ask again
 * with a larger k' until the group is whole (or every template came back).
 */
static mcc_gpu_code
fill_slot(eng_gpu *g, mcc_gpu *ctx, const eng_cache *c, eng_slot *sl,
		  const mcc_template_view *v, const mcc_gpu_hit *hits, int n, uint32_t kk,
		  mcc_error *err)
{
	const mcc_gpu_hit *use = hits;
	mcc_gpu_hit *own = NULL;
	eng_hit    *out;
	uint32_t	k = sl->k;
	uint64_t	ge = 0;
	mcc_gpu_code rc = MCC_GPU_OK;

	while ((uint32_t) n == kk && k > 0 && same_cut(&use[k - 1], &use[kk - 1]) &&
		   use[k - 1].score >= sl->min_score)
	{
		mcc_gpu_hit *more;

		if (kk >= GPU_K_LIMIT)
		{
			free(own);
			mcc_error_set(err, MCC_ERR_LIMIT, "more tied versions of one key than a GPU search returns");
			return MCC_GPU_INVALID; /* this request on the CPU */
		}
		kk = kk > GPU_K_LIMIT / 2 ? GPU_K_LIMIT : 2 * kk;
		more = realloc(own, (size_t) kk * sizeof(mcc_gpu_hit));
		if (more == NULL)
		{
			free(own);
			mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
			return MCC_GPU_OOM;
		}
		own = more;
		if ((rc = mcc_gpu_search_min(ctx, v, 1, (int) kk, &sl->min_score, own, &n, err)) != MCC_GPU_OK)
		{
			free(own);
			return rc;
		}
		use = own;
		g->stats.requeries++;
	}
	/*
	 * the hits come ranked: straight into the slot's storage, no heap (the
	 * same k best in the same order, eng_hits.h)
	 */
	if ((out = eng_hits_fill_begin(&sl->hits, (uint32_t) n)) == NULL)
	{
		free(own);
		return MCC_GPU_OK;		/* hits.failed: the request's reply says out of memory */
	}
	if (!fill_hits(c, use, (size_t) n, sl->min_score, out, &ge))
	{
		free(own);
		mcc_error_set(err, MCC_ERR_INTERNAL, "the GPU copy of the gallery differs from the cache");
		return MCC_GPU_CUDA;	/* reloaded by the next pass */
	}
	eng_hits_fill_end(&sl->hits, (uint32_t) ge);
	sl->n_ge = ge;
	free(own);
	return MCC_GPU_OK;
}

/* qsort: by k', then slot (probes asking for the same k' go together) */
static int
cmp_want(const void *a, const void *b)
{
	const gpu_want *x = a;
	const gpu_want *y = b;

	return MCC_CMP_THEN(MCC_CMP(x->kk, y->kk), x->slot, y->slot);
}

/*
 * Search every live probe of b on m's context (lock held, released by the
 * library while it waits for the device; m busy meanwhile).
 */
static mcc_gpu_code
search(eng_gpu *g, eng_gpu_mirror *m, eng_batch *b, mcc_error *err)
{
	gpu_want   *w = malloc(sizeof(gpu_want) * (b->n_slots ? b->n_slots : 1));
	mcc_template_view *v = malloc(sizeof(mcc_template_view) * (b->n_slots ? b->n_slots : 1));
	int		   *nhits = malloc(sizeof(int) * (b->n_slots ? b->n_slots : 1));
	float	   *floors = malloc(sizeof(float) * (b->n_slots ? b->n_slots : 1));
	mcc_gpu_hit *hits = NULL;
	size_t		cap = 0;
	uint32_t	n = 0;
	mcc_gpu_code rc = MCC_GPU_OK;
	double		t0;
	double		t1;

	if (w == NULL || v == NULL || nhits == NULL || floors == NULL)
	{
		mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
		rc = MCC_GPU_OOM;
		goto out;
	}
	for (uint32_t i = 0; i < b->n_slots; i++)
		if (b->slots[i].cancel == NULL || !atomic_load(b->slots[i].cancel))
		{
			w[n].kk = b->slots[i].k + 1;
			w[n].slot = i;
			n++;
		}
	qsort(w, n, sizeof(gpu_want), cmp_want);
	for (uint32_t i = 0; i < n && rc == MCC_GPU_OK;)
	{
		uint32_t	kk = w[i].kk;
		uint32_t	j = i + 1;
		size_t		need;

		/* a run of equal k', its hits bounded */
		while (j < n && w[j].kk == kk && (uint64_t) (j - i + 1) * kk <= GPU_HITS_MAX)
			j++;
		need = (size_t) (j - i) * kk;
		if (need > cap)
		{
			mcc_gpu_hit *nh = realloc(hits, need * sizeof(mcc_gpu_hit));

			if (nh == NULL)
			{
				mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
				rc = MCC_GPU_OOM;
				break;
			}
			hits = nh;
			cap = need;
		}
		for (uint32_t q = i; q < j && rc == MCC_GPU_OK; q++)
		{
			const eng_slot *sl = &b->slots[w[q].slot];

			if (mcc_template_open(sl->tpl, sl->tpl_len, &v[q - i], err) != MCC_OK)
				rc = MCC_GPU_INVALID;
			floors[q - i] = sl->min_score;
		}
		t0 = eng_gpu_now_s();
		if (rc == MCC_GPU_OK)
			rc = mcc_gpu_search_min(m->ctx, v, (int) (j - i), (int) kk, floors, hits, nhits, err);
		t1 = eng_gpu_now_s();
		if (rc == MCC_GPU_OK)
		{
			mcc_gpu_timing tm;

			mcc_gpu_last_timing(m->ctx, &tm);
			g->stats.lib_ms[ENG_GPU_T_MATCH] += tm.match_ms;
			g->stats.lib_ms[ENG_GPU_T_SELECT] += tm.select_ms;
			g->stats.lib_ms[ENG_GPU_T_D2H] += tm.d2h_ms;
			g->stats.lib_ms[ENG_GPU_T_MERGE] += tm.merge_ms;
			g->stats.lib_ms[ENG_GPU_T_TIES] += tm.ties_ms;
			g->stats.lib_ms[ENG_GPU_T_SETTLE] += tm.settle_ms;
			g->stats.lib_ms[ENG_GPU_T_PREP] += tm.prep_ms;
			g->stats.lib_ms[ENG_GPU_T_H2D] += tm.h2d_ms;
			g->stats.lib_ms[ENG_GPU_T_WAIT] += tm.wait_ms;
			g->stats.lib_ms[ENG_GPU_T_SELECT_MAX] += tm.select_max_ms;
			g->stats.lib_ms[ENG_GPU_T_PART_MAX] += tm.part_max_ms;
			g->stats.reselects += (uint64_t) tm.reselects;
			if (tm.tie_run_max > g->stats.tie_run_max)
				g->stats.tie_run_max = tm.tie_run_max;
		}
		for (uint32_t q = i; q < j && rc == MCC_GPU_OK; q++)
			rc = fill_slot(g, m->ctx, b->cache, &b->slots[w[q].slot], &v[q - i],
						   hits + (size_t) (q - i) * kk, nhits[q - i], kk, err);
		g->stats.search_lib_s += t1 - t0;
		g->stats.search_fill_s += eng_gpu_now_s() - t1;
		i = j;
	}
out:
	free(w);
	free(v);
	free(nhits);
	free(floors);
	free(hits);
	return rc;
}

eng_gpu_outcome
eng_gpu_pass(eng_gpu *g, eng_batch *b, mcc_error *err)
{
	const eng_cache *c = b->cache;
	eng_gpu_mirror *m = c->gpu;
	eng_gpu_outcome out;
	mcc_gpu_code rc;
	double		t_in = eng_gpu_now_s();

	pthread_mutex_lock(&g->lock);
	if ((out = eng_gpu_job_blocked(g, m, false, err)) != ENG_GPU_DONE)
	{
		pthread_mutex_unlock(&g->lock);
		return out;
	}
	if ((rc = eng_gpu_take_injected(&g->inject, "", err)) != MCC_GPU_OK)
	{
		out = eng_gpu_outcome_of(rc, false);
		goto failed;
	}
	if ((out = eng_gpu_sync_for_job(g, m, c, &rc, err)) != ENG_GPU_DONE)
		goto failed;
	eng_gpu_busy(g, m, true);
	rc = search(g, m, b, err);
	eng_gpu_busy(g, m, false);
	if (rc != MCC_GPU_OK)
	{
		out = eng_gpu_outcome_of(rc, false);
		/* the next pass starts from a full upload rather than trust the copy */
		if (rc == MCC_GPU_CUDA)
			eng_gpu_close_ctx(g, m);
		goto failed;
	}
	eng_gpu_update_bytes(g, m);
	m->failures = 0;
	if (b->n_slots > 0)
		g->stats.passes++;
	g->stats.search_s += eng_gpu_now_s() - t_in;
	pthread_mutex_unlock(&g->lock);
	return ENG_GPU_DONE;

failed:
	if (out == ENG_GPU_PROCESS_CPU)
		atomic_store(&g->broken, true);
	/* CUDA errors that keep coming (not a client's bad probe): give up on it */
	if (rc == MCC_GPU_CUDA && ++m->failures >= GPU_MAX_FAILURES)
		out = ENG_GPU_CACHE_CPU;
	g->stats.fallbacks++;
	pthread_mutex_unlock(&g->lock);
	return out;
}

#else							/* !MCC_ENGINE_GPU */

eng_gpu_outcome
eng_gpu_pass(eng_gpu *g, eng_batch *b, mcc_error *err)
{
	mcc_error_set(err, MCC_ERR_INTERNAL, "built without GPU support");
	return ENG_GPU_PROCESS_CPU;
}

#endif							/* MCC_ENGINE_GPU */
