/*
 * eng_pass.c: the passes over a gallery's cache (eng_pass.h): which waiting
 * searches are ready, one batch for all of them on the pool's threads or the
 * GPU, the rescoring of refining searches' shortlists, the fall back to the
 * CPU when the GPU does not answer, and the replies at the end.
 */
#include "eng_pass.h"

#include <stdio.h>
#include <stdlib.h>

#include "eng_cache_count.h"
#include "eng_conn.h"
#include "eng_gallery.h"
#include "eng_log.h"
#include "eng_result.h"
#include "eng_snapshot.h"
#include "mcc_job.h"

/*
 * The candidates a search keeps per probe from cache c: k, or for a
 * refining search s + k with *s = n' for the cache's searchable entries
 * (mcc_proto.h); at most the searchable entries. A refining search's k is
 * room for entries its statement may not see (refine_cut stops at the
 * s-th certain one): when the count memo bounds the uncertain entries by
 * u < k, s + u + 1 hold s certain ones and one more, the same cut. At 100 M
 * templates the backend's room is n' / 2 (200,000 candidates of each
 * partition ordered, copied and merged for nothing) where u is often 0.
 */
static uint64_t
keep_per_probe(const eng_request *r, const eng_cache *c, uint64_t *s)
{
	uint64_t	searchable = eng_cache_searchable(c);
	uint64_t	n = r->k;
	uint64_t	u;

	*s = 0;
	if (r->refine != MCC_LSS)
	{
		*s = (uint64_t) mcc_refine_count((int64_t) searchable, r->fraction,
										 (int64_t) r->refine_min, (int64_t) r->final_k);
		if (r->count_xmin != 0 && eng_cache_uncertain_bound(c, &u) && u < n)
			n = u + 1;
		n += *s;
	}
	return n < searchable ? n : searchable;
}

/* Bytes of the RESULT a request would get from cache c, at most. */
static uint64_t
result_bytes(const eng_request *r, const eng_cache *c)
{
	uint64_t	s;
	uint64_t	n = keep_per_probe(r, c, &s);
	uint64_t	hit = r->refine != MCC_LSS ? 40 : 20;
	/* a visibility count may add up to MCC_PROTO_MAX_GROUPS groups of 24 bytes */
	uint64_t	count = r->count_xmin != 0 ? (uint64_t) MCC_PROTO_MAX_GROUPS * 24 : 0;

	return 44 + count + (uint64_t) r->n_probes * (8 + n * hit);
}

/*
 * Have the generations up to `need` all arrived (so that only a pass or a
 * compaction still reading the cache delays them)? The delta timeout is for
 * deltas that do not come, not for those waiting to be applied.
 */
static bool
queue_covers(const eng_gallery *g, const eng_cache *c, uint64_t need)
{
	uint64_t	next = c->applied_gen + 1;

	for (const eng_gen *r = g->q.head; r && next <= need; r = r->next)
	{
		if (r->gen < next)
			continue;
		if (r->gen > next || !r->complete)
			return false;
		next++;
	}
	return next > need;
}

/* Do all probes of a request have the cache's profile? */
static bool
probes_match(const eng_request *r, const eng_cache *c)
{
	for (uint32_t i = 0; i < r->n_probes; i++)
		if (mcc_probe_profile(r->probes[i]) != c->profile)
			return false;
	return true;
}

/*
 * Does cache c wait for no reader (pins == 0) to change: a delta or a
 * SETTLE to apply, a compaction to start? Then no pass starts beside a
 * rescoring, so that the cache's readers drain and the change is applied
 * between passes as without the overlap.
 */
static bool
waits_for_quiet(const eng_gallery *g, const eng_cache *c)
{
	const eng_gen *r;

	if (g->settles != NULL)
		return true;
	if (c->reload_at == 0 && (r = eng_genq_find(&g->q, c->applied_gen + 1)) != NULL &&
		r->complete)
		return true;
	return g->compacting == NULL && eng_cache_wants_compaction(c);
}

/*
 * May a pass start now? One searches at a time; it may run while the
 * previous pass's shortlists are rescored (the host work of one beside the
 * device work of the other), unless the cache waits for quiet.
 */
static bool
pass_may_start(const eng_gallery *g, const eng_cache *c)
{
	return g->running == NULL && (g->rescoring == NULL || !waits_for_quiet(g, c));
}

bool
eng_pass_waits_for_build(uint32_t probes, uint64_t rows, uint32_t threads)
{
	double		cpu_ns = (double) probes * (double) rows * ENG_BUILD_CPU_NS_PER_MATCH /
		(threads > 0 ? threads : 1);
	double		build_ns = (double) rows * ENG_BUILD_NS_PER_ROW;

	return probes > 1 && cpu_ns >= ENG_BUILD_WAIT_MIN_NS &&
		cpu_ns >= ENG_BUILD_WAIT_FACTOR * build_ns;
}

/*
 * Does request r wait for the GPU mirror of cache c that is being built
 * (eng_pass_waits_for_build), rather than search c on the CPU threads now?
 * Only while that build runs: a CPU-only engine never builds one.
 */
static bool
held_for_build(eng_server *s, const eng_gallery *g, const eng_cache *c, eng_request *r)
{
	if (g->gpu_building == NULL || g->gpu_building->cache != c || r->k > ENG_GPU_MAX_K ||
		!eng_pass_waits_for_build(r->n_probes, eng_cache_searchable(c), eng_pool_threads(s->pool)))
		return false;
	if (!r->held_for_build)
		eng_log(ENG_LOG_DEBUG, "gallery %s: a search of %u probes waits for the GPU upload "
				"of %llu entries", eng_gallery_name(g), r->n_probes,
				(unsigned long long) eng_cache_searchable(c));
	r->held_for_build = true;
	return true;
}

/*
 * Sort the waiting requests: answer those that cannot be served, and return
 * (unlinked, in arrival order) up to max_batch that are ready now.
 */
eng_request *
eng_pass_collect_ready(eng_server *s, eng_gallery *g)
{
	eng_request **pp = &g->waiting;
	eng_request *ready = NULL;
	eng_request **rt = &ready;
	uint32_t	n_ready = 0;
	int64_t		now = eng_now_usec();
	eng_cache  *c = g->cache;

	while (*pp)
	{
		eng_request *r = *pp;
		eng_conn   *conn = eng_conn_by_id(s, r->conn_id);
		int			code = 0;
		const char *msg = NULL;
		char		buf[160];

		if (atomic_load(&r->cancelled) || conn == NULL)
			code = -1;
		else if (c == NULL)
		{
			code = MCC_PERR_NOT_LOADED;
			msg = "gallery is not loaded";
		}
		else if (c->reload_at != 0 && r->need_gen >= c->reload_at)
		{
			code = MCC_PERR_NOT_LOADED;
			snprintf(buf, sizeof(buf), "gallery needs a reload at generation %llu",
					 (unsigned long long) c->reload_at);
			msg = buf;
		}
		else if (c->applied_gen >= r->need_gen)
		{
			r->deadline = INT64_MAX;	/* ready: only waits for the pass */
			if (!probes_match(r, c))
			{
				code = MCC_PERR_DATA;
				snprintf(buf, sizeof(buf),
						 "probe profile differs from the gallery's profile \"%s\"",
						 c->profile->name);
				msg = buf;
			}
			else if (result_bytes(r, c) > MCC_PROTO_MAX_FRAME)
			{
				code = r->refine != MCC_LSS ? MCC_PERR_TOO_LARGE : MCC_PERR_DATA;
				msg = "result too large: ask for fewer candidates or probes";
			}
			else if (r->n_probes == 0 && !eng_count_asked(r, c))
			{
				eng_result_reply_empty(s, r, c);
				code = -1;
			}
			else if (n_ready < s->cfg.max_batch && pass_may_start(g, c) &&
					 !held_for_build(s, g, c, r))
			{
				*pp = r->next;
				r->next = NULL;
				*rt = r;
				rt = &r->next;
				n_ready++;
				continue;
			}
		}
		else if (r->deadline != INT64_MAX && queue_covers(g, c, r->need_gen))
			r->deadline = INT64_MAX;	/* all arrived: waits for the pass only */
		else if (now >= r->deadline)
		{
			code = MCC_PERR_GENERATION;
			snprintf(buf, sizeof(buf),
					 "generation %llu did not arrive in time (the cache has %llu)",
					 (unsigned long long) r->need_gen,
					 (unsigned long long) c->applied_gen);
			msg = buf;
		}
		if (code == 0)
		{
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		if (code > 0 && conn)
		{
			eng_reply_error(conn, r->request_id, code,
							code == MCC_PERR_DATA ? MCC_ERR_VALUE : 0, "%s", msg);
		}
		eng_request_free(r);
	}
	/* the tail pointer may have moved with unlinking */
	g->waiting_tail = &g->waiting;
	while (*g->waiting_tail)
		g->waiting_tail = &(*g->waiting_tail)->next;
	return ready;
}

/* Send the pass to the GPU if its cache has a mirror there (or may get one). */
static void
maybe_gpu(eng_server *s, eng_cache *c, eng_batch *b)
{
	/*
	 * a pass without probes too (counts alone, or gpu_sync_batch's): its
	 * GPU part brings the mirror up to date, its counts run beside it
	 */
	if (!eng_gpu_wants(s->gpu, c))
		return;
	for (uint32_t i = 0; i < b->n_slots; i++)
		if (b->slots[i].tpl == NULL || b->slots[i].k > ENG_GPU_MAX_K)
			return;
	if (eng_gpu_attach(s->gpu, c))
		eng_batch_use_gpu(b, s->gpu);
}

/* Pin the cache and hand pass b (for the requests `ready`) to the pool. */
static void
run_pass(eng_server *s, eng_gallery *g, eng_batch *b, eng_request *ready)
{
	b->job.tag = ENG_JOB_BATCH;
	b->owner = g;
	g->running = b;
	g->running_reqs = ready;
	g->running_cache = g->cache;
	g->cache->pins++;
	eng_server_submit(s, s->pool, &b->job);
}

/* Start one pass over the cache for the ready requests. */
void
eng_pass_start(eng_server *s, eng_gallery *g, eng_request *ready)
{
	uint32_t	n_slots = 0;
	uint32_t	slot = 0;
	eng_batch  *b;

	for (eng_request *r = ready; r; r = r->next)
		n_slots += r->n_probes;
	b = eng_batch_new(g->cache, n_slots, eng_pool_threads(s->pool));
	if (b == NULL)
	{
		while (ready)
		{
			eng_request *r = ready;
			eng_conn   *conn = eng_conn_by_id(s, r->conn_id);

			ready = r->next;
			if (conn)
				eng_reply_error(conn, r->request_id, MCC_PERR_INTERNAL, MCC_ERR_MEMORY,
								"out of memory");
			eng_request_free(r);
		}
		return;
	}
	for (eng_request *r = ready; r; r = r->next)
	{
		uint64_t	keep = keep_per_probe(r, g->cache, &r->shortlist);

		r->first_slot = slot;
		for (uint32_t i = 0; i < r->n_probes; i++)
		{
			if (r->tpls)
				eng_batch_set_template(b, slot, r->tpls[i], r->tpl_lens[i]);
			eng_batch_set(b, slot++, r->probes[i], (uint32_t) keep, r->min_score,
						  &r->cancelled);
		}
		r->count_index = -1;
		if (eng_count_asked(r, g->cache))
			r->count_index = eng_batch_add_count(b, r->count_xmin);
	}
	/* a copy not on the device yet is uploaded by its own job: not in this pass's way */
	if (!eng_gpu_needs_upload(s->gpu, g->cache))
		maybe_gpu(s, g->cache, b);
	g->passes++;
	run_pass(s, g, b, ready);
}

/*
 * A GPU job with no search over the cache: its mirror brought up to date,
 * then its refinement data (so that the first refining search finds it
 * there). NULL if the cache does not go to the GPU or memory is short.
 */
static eng_batch *
gpu_sync_batch(eng_server *s, eng_gallery *g, eng_cache *c)
{
	eng_batch  *b = eng_batch_new(c, 0, eng_pool_threads(s->pool));

	if (b == NULL)
		return NULL;
	maybe_gpu(s, c, b);
	if (b->gpu == NULL)
	{
		eng_batch_free(b);
		return NULL;
	}
	b->gpu_refdata = !s->cfg.gpu_refine_off;
	g->gpu_syncs++;
	return b;
}

/* Start a pass that only brings the cache's GPU mirror up to date. */
void
eng_pass_start_gpu_sync(eng_server *s, eng_gallery *g)
{
	eng_batch  *b = gpu_sync_batch(s, g, g->cache);

	if (b != NULL)
		run_pass(s, g, b, NULL);
}

void
eng_pass_start_gpu_build(eng_server *s, eng_gallery *g)
{
	eng_batch  *b = gpu_sync_batch(s, g, g->cache);

	if (b == NULL)
		return;
	b->job.tag = ENG_JOB_BATCH;
	b->owner = g;
	g->gpu_building = b;
	g->cache->pins++;
	eng_gpu_set_building(g->cache, true);
	eng_server_submit(s, s->pool, &b->job);
}

void
eng_pass_start_gpu_prebuild(eng_server *s, eng_gallery *g, eng_cache *c)
{
	eng_batch  *b;

	/* its rows are all tombstones until revived: eng_gpu_wants would say no */
	if (g->gpu_prebuild != NULL || !eng_gpu_wants_rows(s->gpu, c) || !eng_gpu_attach(s->gpu, c) ||
		(b = eng_batch_new(c, 0, eng_pool_threads(s->pool))) == NULL)
		return;
	eng_batch_use_gpu(b, s->gpu);
	b->gpu_refdata = !s->cfg.gpu_refine_off;
	b->job.tag = ENG_JOB_BATCH;
	b->owner = g;
	g->gpu_prebuild = b;
	c->pins++;
	eng_gpu_set_building(c, true);
	eng_gpu_hold_removals(c, true);
	eng_server_submit(s, s->pool, &b->job);
}

/*
 * The end of the GPU copy built during a snapshot check: the tombstones
 * may go up at the next sync (after the check: the cache is served by
 * then, or dropped), a WANT held for it goes out, and a cache its load
 * dropped meanwhile is freed. A failed copy is only logged: the cache,
 * once served, gets a full upload as after any load.
 */
static void
gpu_prebuild_done(eng_server *s, eng_gallery *g, eng_batch *b)
{
	eng_cache  *c = (eng_cache *) b->cache;

	g->gpu_prebuild = NULL;
	eng_gpu_set_building(c, false);
	eng_gpu_hold_removals(c, false);
	if (b->gpu_outcome != ENG_GPU_DONE)
		eng_log(ENG_LOG_WARNING, "gallery %s: GPU copy during the snapshot check failed, "
				"uploaded after it instead: %s", eng_gallery_name(g),
				b->gpu_err.message[0] ? b->gpu_err.message : "unknown error");
	eng_batch_free(b);
	c->pins--;
	if (c->orphaned)
		eng_cache_free(c);
	eng_snapshot_prebuilt(s, g);
}

/* One thread's share of refine_cut's count: certain entries among hits [j0, j1). */
typedef struct cut_share
{
	const eng_cache *c;
	const eng_hit *h;
	uint64_t	xmin;
	uint32_t	j0;
	uint32_t	j1;
	uint64_t	certain;
} cut_share;

/* Is hit j's entry certain for xmin (its entry asked for a few hits ahead)? */
static inline bool
hit_certain(const eng_cache *c, const eng_hit *h, uint32_t j, uint32_t end, uint64_t xmin)
{
	if (j + ENG_HIT_AHEAD < end)
		__builtin_prefetch(&c->entries[h[j + ENG_HIT_AHEAD].entry]);
	return eng_entry_certain(&c->entries[h[j].entry], xmin);
}

static void *
cut_share_run(void *arg)
{
	cut_share  *t = arg;

	for (uint32_t j = t->j0; j < t->j1; j++)
		t->certain += hit_certain(t->c, t->h, j, t->j1, t->xmin);
	return NULL;
}

/*
 * The hits of a refining probe to rescore and return: the shortest prefix
 * holding r->shortlist entries certain for its count_xmin, or all. Every
 * visible row among the statement's first n' by LSS lies in it: n' is at
 * most r->shortlist, and certain entries are visible. A shortlist of
 * hundreds of thousands (100 M templates) reads as many entries at random:
 * the shares' counts on threads first find the share where the prefix
 * ends, and only that share is read again, up to the end.
 */
static uint32_t
refine_cut(const eng_cache *c, const eng_slot *sl, const eng_request *r)
{
	cut_share	sh[MCC_JOB_LIST_SHARES_MAX];
	uint32_t	n = sl->hits.n;
	int			nsh = mcc_job_list_shares(n);
	uint64_t	certain = 0;
	uint32_t	from = 0;

	if (nsh > 1)
	{
		for (int t = 0; t < nsh; t++)
			sh[t] = (cut_share) {c, sl->hits.h, r->count_xmin,
				(uint32_t) ((uint64_t) n * t / nsh), (uint32_t) ((uint64_t) n * (t + 1) / nsh), 0};
		mcc_job_run_each(nsh, cut_share_run, sh, sizeof(cut_share));
		for (int t = 0; t < nsh; t++)
		{
			if (certain + sh[t].certain >= r->shortlist)
				break;
			certain += sh[t].certain;
			from = sh[t].j1;
		}
	}
	for (uint32_t j = from; j < n; j++)
		if (hit_certain(c, sl->hits.h, j, n, r->count_xmin) && ++certain >= r->shortlist)
			return j + 1;
	return n;
}

/* g's search stage holds no pass any more: the next one may start. */
static void
search_stage_free(eng_gallery *g)
{
	g->running = NULL;
	g->running_reqs = NULL;
	g->running_cache = NULL;
	g->running_done = false;
}

/*
 * After a pass whose requests include live refining searches: their
 * shortlists as one rescoring job over the still pinned cache, the pass
 * moved from the search stage (g->running) to the rescoring stage
 * (g->rescored). False if there is none (or no memory: the requests are
 * then answered with an error by eng_result_reply).
 */
static bool
start_rescore(eng_server *s, eng_gallery *g, eng_batch *b)
{
	eng_rescore *rs = NULL;
	uint32_t   *entries = NULL;
	uint32_t	cap = 0;
	bool		ok = true;

	for (eng_request *r = g->running_reqs; r; r = r->next)
	{
		if (r->refine == MCC_LSS || atomic_load(&r->cancelled))
			continue;
		if (rs == NULL && (rs = eng_rescore_new(b->cache, b->n_slots)) == NULL)
			return false;
		for (uint32_t i = 0; i < r->n_probes && ok; i++)
		{
			const eng_slot *sl = &b->slots[r->first_slot + i];
			int64_t		t0 = eng_now_usec();
			uint32_t	n = refine_cut(b->cache, sl, r);

			s->cut_usec += eng_now_usec() - t0;

			if (n > cap)
			{
				uint32_t   *e = realloc(entries, (size_t) n * sizeof(uint32_t));

				if (e == NULL)
				{
					ok = false;
					break;
				}
				entries = e;
				cap = n;
			}
			for (uint32_t j = 0; j < n; j++)
				entries[j] = sl->hits.h[j].entry;
			ok = eng_rescore_set(rs, r->first_slot + i, r->tpls[i], r->tpl_lens[i],
								 r->refine, entries, n, &r->cancelled);
		}
	}
	free(entries);
	if (rs == NULL)
		return false;
	if (!ok)
	{
		eng_rescore_free(rs);
		return false;
	}
	rs->owner = b;
	rs->started_usec = eng_now_usec();
	/* the pass leaves the search stage: the next one may start beside it */
	g->rescoring = rs;
	g->rescored = b;
	g->rescored_reqs = g->running_reqs;
	g->rescored_cache = g->running_cache;
	search_stage_free(g);
	eng_refine_candidates(s, rs);
	return true;
}

/*
 * A GPU job (what: "search" for a pass, "refinement" for a rescoring) that
 * did not answer: say why and stop using the GPU as far as the failure
 * requires. The caller runs the job again on the CPU threads.
 */
static void
gpu_give_up(eng_server *s, eng_gallery *g, eng_cache *c, eng_gpu_outcome outcome,
			const mcc_error *err, const char *what)
{
	const char *why = err->message[0] ? err->message : "unknown error";

	switch (outcome)
	{
		case ENG_GPU_RETRY_CPU:
			/* a CUDA error is the GPU's; a probe the kernels refuse is the client's */
			eng_log(err->status == MCC_ERR_INTERNAL ? ENG_LOG_WARNING : ENG_LOG_INFO,
					"gallery %s: GPU %s failed, this %s runs on the CPU: %s%s%s",
					eng_gallery_name(g), what, what, why, err->detail[0] ? ": " : "", err->detail);
			break;
		case ENG_GPU_CACHE_CPU:
			eng_log(ENG_LOG_WARNING,
					"gallery %s: GPU not used for this cache, searching on the CPU: %s%s%s",
					eng_gallery_name(g), why, err->detail[0] ? ": " : "", err->detail);
			eng_gpu_disable_cache(s->gpu, c);
			break;
		case ENG_GPU_PROCESS_CPU:
			if (eng_gpu_disable_all(s->gpu))
				eng_log(ENG_LOG_WARNING,
						"GPU disabled for the rest of the process, searching on the CPU: %s", why);
			/* every context closes now; a pass in flight elsewhere waits for it */
			for (uint32_t i = 0; i < s->n_gal; i++)
			{
				if (s->gal[i]->cache)
					eng_gpu_disable_cache(s->gpu, s->gal[i]->cache);
				if (s->gal[i]->running_cache)
					eng_gpu_disable_cache(s->gpu, s->gal[i]->running_cache);
				if (s->gal[i]->rescored_cache)
					eng_gpu_disable_cache(s->gpu, s->gal[i]->rescored_cache);
			}
			break;
		case ENG_GPU_DONE:
			break;
	}
}

/*
 * A GPU pass that did not answer: give up on the GPU as far as needed and
 * make the batch a CPU pass. true: it was resubmitted.
 */
static bool
gpu_fallback(eng_server *s, eng_gallery *g, eng_batch *b)
{
	bool		live = false;

	if (b->gpu_outcome == ENG_GPU_DONE)
		return false;
	gpu_give_up(s, g, g->running_cache, b->gpu_outcome, &b->gpu_err, "search");
	eng_batch_to_cpu(b);
	for (uint32_t i = 0; i < b->n_slots; i++)
		if (b->slots[i].cancel == NULL || !atomic_load(b->slots[i].cancel))
			live = true;
	if (!live)
		return false;
	eng_server_submit(s, s->pool, &b->job);
	return true;
}

/*
 * Add the stages of refining request r, answered by pass b and rescoring rs
 * (NULL if none) from `end` (the pass's end on the main thread) until its
 * reply was written at `now`, to the server's totals (eng_rstage). A pass
 * run again on the CPU after the GPU gave up, or a rescoring finished on the
 * CPU after its GPU stage, is timed from its last submission; the earlier
 * one then counts in no stage, only in the whole.
 */
static void
time_refined(eng_server *s, const eng_batch *b, const eng_rescore *rs, const eng_request *r,
			 int64_t end, int64_t now)
{
	int64_t    *st = s->refined_stage_usec;

	st[ENG_RS_QUEUED] += b->job.submitted_usec - r->arrived;
	st[ENG_RS_PASS_QUEUED] += b->job.first_usec - b->job.submitted_usec;
	st[ENG_RS_PASS] += b->job.done_usec - b->job.first_usec;
	st[ENG_RS_PASS_BACK] += b->back_usec - b->job.done_usec;
	st[ENG_RS_WAITED] += b->after_usec - b->back_usec;
	st[ENG_RS_HANDOVER] += (rs != NULL ? rs->started_usec : end) - b->after_usec;
	if (rs != NULL)
	{
		st[ENG_RS_RESCORE_QUEUED] += rs->job.first_usec - rs->job.submitted_usec;
		st[ENG_RS_RESCORE] += rs->job.done_usec - rs->job.first_usec;
		st[ENG_RS_RESCORE_BACK] += end - rs->job.done_usec;
	}
	st[ENG_RS_REPLY] += now - end;
	st[ENG_RS_GPU] += b->gpu != NULL ? b->gpu_usec : 0;
	if (r->count_index >= 0 && (uint32_t) r->count_index < b->n_counts)
		st[ENG_RS_COUNT] += b->counts[r->count_index].usec;
}

/*
 * The end of pass b (and of its rescoring rs): reply to its requests reqs,
 * unpin its cache c, free.
 */
static void
pass_end(eng_server *s, eng_gallery *g, eng_batch *b, eng_rescore *rs, eng_request *reqs,
		 eng_cache *c)
{
	int64_t		end = eng_now_usec();

	if (rs != NULL)
		s->rescore_usec += end - rs->started_usec;
	while (reqs)
	{
		eng_request *r = reqs;

		reqs = r->next;
		if (!atomic_load(&r->cancelled))
		{
			int64_t		t0 = eng_now_usec();

			eng_result_reply(s, b, rs, r);
			g->searches++;
			if (r->refine != MCC_LSS)
			{
				int64_t		now = eng_now_usec();

				s->refined++;
				s->refined_reply_usec += now - t0;
				s->refined_usec += now - r->arrived;
				time_refined(s, b, rs, r, end, now);
			}
		}
		eng_request_free(r);
	}
	eng_gallery_unpin(g, c);
	eng_batch_free(b);
	eng_rescore_free(rs);
}

/*
 * The search stage of g's running pass is over (and no rescoring is in
 * flight): its rescoring, or its end.
 */
static void
after_search(eng_server *s, eng_gallery *g)
{
	eng_batch  *b = g->running;
	eng_request *reqs = g->running_reqs;
	eng_cache  *c = g->running_cache;

	b->after_usec = eng_now_usec();
	if (start_rescore(s, g, b))
		return;
	search_stage_free(g);
	pass_end(s, g, b, NULL, reqs, c);
}

/*
 * The end of a background upload (eng_pass_start_gpu_build): the mirror
 * serves the next passes, or, if it failed, the next pass tries again in
 * line (a CUDA error) or the cache stays on the CPU threads.
 */
static void
gpu_build_done(eng_server *s, eng_gallery *g, eng_batch *b)
{
	eng_cache  *c = (eng_cache *) b->cache;

	g->gpu_building = NULL;
	eng_gpu_set_building(c, false);
	if (b->gpu_outcome == ENG_GPU_RETRY_CPU)
		eng_log(ENG_LOG_WARNING, "gallery %s: GPU upload failed, searching on the CPU until "
				"the next search uploads it again: %s", eng_gallery_name(g),
				b->gpu_err.message[0] ? b->gpu_err.message : "unknown error");
	else if (b->gpu_outcome != ENG_GPU_DONE)
		gpu_give_up(s, g, c, b->gpu_outcome, &b->gpu_err, "upload");
	eng_gallery_unpin(g, c);
	eng_batch_free(b);
}

/*
 * A finished pass: reply to the requests still wanting it, unless refining
 * searches need their rescoring first (the pass then moves to the rescoring
 * stage, its cache pinned, until that comes back). While the previous pass
 * is still being rescored, this one waits for it (running_done).
 */
void
eng_pass_batch_done(eng_server *s, eng_batch *b)
{
	eng_gallery *g = b->owner;

	b->back_usec = eng_now_usec();
	if (b == g->gpu_building)
	{
		gpu_build_done(s, g, b);
		return;
	}
	if (b == g->gpu_prebuild)
	{
		gpu_prebuild_done(s, g, b);
		return;
	}
	if (b->gpu != NULL && b->gpu_outcome != ENG_GPU_DONE && gpu_fallback(s, g, b))
		return;
	eng_batch_finish(b);
	if (g->rescoring != NULL)
	{
		g->running_done = true;
		return;
	}
	after_search(s, g);
}

eng_gallery *
eng_pass_rescore_done(eng_server *s, eng_rescore *rs)
{
	eng_batch  *b = rs->owner;
	eng_gallery *g = b->owner;
	eng_request *reqs = g->rescored_reqs;
	eng_cache  *c = g->rescored_cache;

	/* a failed GPU stage: the same shortlists on the CPU threads, the same scores */
	if (eng_rescore_gpu_failed(rs))
		gpu_give_up(s, g, c, rs->gpu_outcome, &rs->gpu_err, "refinement");
	if (eng_rescore_next(s, rs))
		return g;
	g->rescoring = NULL;
	g->rescored = NULL;
	g->rescored_reqs = NULL;
	g->rescored_cache = NULL;
	pass_end(s, g, b, rs, reqs, c);
	/* the pass that searched meanwhile */
	if (g->running != NULL && g->running_done)
		after_search(s, g);
	return g;
}
