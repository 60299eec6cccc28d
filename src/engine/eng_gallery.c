/*
 * eng_gallery.c: galleries: which cache serves each one, the deltas and
 * settles it applies between passes, the searches waiting for it, the
 * passes (batches) and compactions running on it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eng_gallery.h"
#include "eng_load.h"
#include "eng_log.h"
#include "eng_server.h"
#include "eng_snapfile.h"
#include "eng_snapshot.h"
#include "mcc_hash.h"

#define JOB_BATCH		1
#define JOB_COMPACTION	2

static void gallery_fail_waiting(eng_server *s, eng_gallery *g, mcc_proto_error code,
								 const char *msg);

/* Log-friendly name of a gallery. */
const char *
eng_gallery_name(const eng_gallery *g)
{
	static char buf[64];

	snprintf(buf, sizeof(buf), "%u/%u/%016llx", g->id.db_oid, g->id.rel_oid,
			 (unsigned long long) g->id.signature);
	return buf;
}

static bool
same_id(const mcc_gallery_id *a, const mcc_gallery_id *b)
{
	return a->db_oid == b->db_oid && a->rel_oid == b->rel_oid &&
		a->signature == b->signature;
}

/* A gallery that holds nothing but perhaps buffered deltas. */
static bool
is_shell(const eng_gallery *g)
{
	return g->cache == NULL && g->loads == NULL && g->waiting == NULL &&
		g->running == NULL && g->compacting == NULL && g->settles == NULL &&
		g->snapshotting == NULL && g->snap_reading == NULL &&
		atomic_load(&g->snap_writing) == 0;
}

/* Free a shell gallery (see is_shell). */
static void
gallery_free(eng_server *s, uint32_t i)
{
	eng_gallery *g = s->gal[i];

	eng_genq_free(&g->q);
	eng_snap_free(g->snap);
	free(g);
	s->gal[i] = s->gal[--s->n_gal];
}

/* Keep the number of shells bounded: free the least recently used one. */
static void
trim_shells(eng_server *s)
{
	uint32_t	shells = 0;
	uint32_t	lru = UINT32_MAX;

	for (uint32_t i = 0; i < s->n_gal; i++)
		if (is_shell(s->gal[i]))
		{
			shells++;
			if (lru == UINT32_MAX || s->gal[i]->last_used < s->gal[lru]->last_used)
				lru = i;
		}
	if (shells >= ENG_MAX_SHELLS && lru != UINT32_MAX)
		gallery_free(s, lru);
}

eng_gallery *
eng_gallery_get(eng_server *s, const mcc_gallery_id *id, bool create)
{
	eng_gallery *g;

	for (uint32_t i = 0; i < s->n_gal; i++)
		if (same_id(&s->gal[i]->id, id))
		{
			s->gal[i]->last_used = eng_now_usec();
			return s->gal[i];
		}
	if (!create)
		return NULL;
	trim_shells(s);
	if (s->n_gal == s->cap_gal)
	{
		uint32_t	cap = s->cap_gal ? s->cap_gal * 2 : 16;
		eng_gallery **p = realloc(s->gal, cap * sizeof(*p));

		if (p == NULL)
			return NULL;
		s->gal = p;
		s->cap_gal = cap;
	}
	g = calloc(1, sizeof(*g));
	if (g == NULL)
		return NULL;
	g->id = *id;
	g->waiting_tail = &g->waiting;
	g->settles_tail = &g->settles;
	g->last_used = eng_now_usec();
	s->gal[s->n_gal++] = g;
	return g;
}

void
eng_request_free(eng_request *r)
{
	if (r == NULL)
		return;
	for (uint32_t i = 0; i < r->n_probes; i++)
	{
		free(r->probes[i]);
		if (r->tpls)
			free(r->tpls[i]);
	}
	free(r->probes);
	free(r->tpls);
	free(r->tpl_lens);
	free(r);
}

void
eng_settle_free(eng_settle *st)
{
	if (st == NULL)
		return;
	free(st->xids);
	free(st->states);
	free(st);
}

/* A reader is done with cache c; free it if it was replaced meanwhile. */
static void
unpin(eng_gallery *g, eng_cache *c)
{
	c->pins--;
	if (c->pins == 0 && c != g->cache)
		eng_cache_free(c);
}

void
eng_gallery_unpin(eng_gallery *g, eng_cache *c)
{
	unpin(g, c);
}

/* Detach the current cache (freed now, or by its last reader). */
static void
detach_cache(eng_gallery *g)
{
	eng_cache  *c = g->cache;

	g->cache = NULL;
	if (c != NULL && c->pins == 0)
		eng_cache_free(c);
}

void
eng_gallery_drop_cache(eng_server *s, eng_gallery *g, const char *why)
{
	if (g->cache != NULL)
		eng_log(ENG_LOG_INFO, "gallery %s: cache dropped: %s", eng_gallery_name(g), why);
	detach_cache(g);
	gallery_fail_waiting(s, g, MCC_PERR_NOT_LOADED, why);
}

/* Reply an error to every waiting request and forget them. */
static void
gallery_fail_waiting(eng_server *s, eng_gallery *g, mcc_proto_error code,
					 const char *msg)
{
	while (g->waiting)
	{
		eng_request *r = g->waiting;
		eng_conn   *c;

		g->waiting = r->next;
		c = atomic_load(&r->cancelled) ? NULL : eng_conn_by_id(s, r->conn_id);
		if (c)
			eng_reply_error(c, r->request_id, code, 0, "%s", msg);
		eng_request_free(r);
	}
	g->waiting_tail = &g->waiting;
}

/*
 * Apply one generation: the inserts of all its parts, then the deletes of
 * all its parts. Its parts (one per subtransaction xid, or one xid cut into
 * several frames) may delete a version another part inserts, and nothing is
 * netted (src/service_triggers.c): inserting first lets every delete find
 * its version (see eng_cache_delete).
 */
static mcc_status
apply_gen(eng_cache *c, const eng_gen *r, mcc_error *err)
{
	mcc_status	st = MCC_OK;

	for (const eng_part *p = r->parts; p && st == MCC_OK; p = p->next)
	{
		st = eng_cache_reserve(c, p->n_ins, p->n_cyl, p->n_side, err);
		for (uint32_t i = 0; i < p->n_ins && st == MCC_OK; i++)
		{
			mcc_template_view v;
			bool		added;

			st = mcc_template_open(p->ins[i].tpl, p->ins[i].len, &v, err);
			if (st == MCC_OK)
				st = eng_cache_insert(c, p->ins[i].key, p->xid, &v, &added, err);
		}
	}
	for (const eng_part *p = r->parts; p && st == MCC_OK; p = p->next)
		for (uint32_t i = 0; i < p->n_del; i++)
			eng_cache_delete(c, p->del[i].key, p->del[i].hash, p->xid);
	return st;
}

/* Lowest generation a load in progress started from, or UINT64_MAX. */
static uint64_t
min_load_gen(const eng_gallery *g)
{
	uint64_t	m = UINT64_MAX;

	for (const eng_load *l = g->loads; l; l = l->next)
		if (l->gen < m)
			m = l->gen;
	return m;
}

/* Forget the records nobody needs any more and keep the rest bounded. */
void
eng_gallery_trim_queue(eng_gallery *g)
{
	uint64_t	keep_above = 0;
	uint64_t	lm = min_load_gen(g);
	uint64_t	dropped;

	if (g->cache != NULL)
		keep_above = g->cache->applied_gen;
	if (lm < keep_above || (g->cache == NULL && lm != UINT64_MAX))
		keep_above = lm;
	eng_genq_trim(&g->q, keep_above);
	dropped = eng_genq_bound(&g->q, ENG_GENQ_MAX_N, ENG_GENQ_MAX_BYTES);
	if (dropped && g->cache != NULL && dropped > g->cache->applied_gen &&
		(g->cache->reload_at == 0 || g->cache->reload_at > g->cache->applied_gen + 1))
	{
		eng_log(ENG_LOG_WARNING, "gallery %s: too many deltas pending; reload needed",
				eng_gallery_name(g));
		g->cache->reload_at = g->cache->applied_gen + 1;
	}
}

/* Apply the queued generations that come next, in order (cache not pinned). */
void
eng_gallery_apply_pending(eng_server *s, eng_gallery *g)
{
	eng_cache  *c = g->cache;
	mcc_error	err;

	mcc_error_clear(&err);
	while (c->reload_at == 0)
	{
		eng_gen    *r = eng_genq_find(&g->q, c->applied_gen + 1);

		if (r == NULL || !r->complete)
			break;
		if (r->reload)
		{
			c->reload_at = r->gen;
			eng_log(ENG_LOG_INFO, "gallery %s: reload needed at generation %llu",
					eng_gallery_name(g), (unsigned long long) r->gen);
			break;
		}
		if (apply_gen(c, r, &err) != MCC_OK)
		{
			char		why[400];

			snprintf(why, sizeof(why), "delta of generation %llu not applied: %s",
					 (unsigned long long) r->gen, err.message);
			eng_log(ENG_LOG_WARNING, "gallery %s: %s", eng_gallery_name(g), why);
			eng_gallery_drop_cache(s, g, why);
			return;
		}
		c->applied_gen = r->gen;
	}
}

/* Apply the deferred SETTLEs (cache not pinned, or absent) and reply OK. */
static void
apply_settles(eng_server *s, eng_gallery *g)
{
	while (g->settles)
	{
		eng_settle *st = g->settles;
		eng_conn   *conn;

		g->settles = st->next;
		if (g->cache != NULL)
		{
			uint32_t	purged = eng_cache_settle(g->cache, st->horizon, st->xids,
												  st->states, st->n);

			if (purged)
				eng_log(ENG_LOG_DEBUG, "gallery %s: %u entries purged", eng_gallery_name(g), purged);
			eng_snapshot_due(s, g, ENG_SNAP_SETTLE_DELAY_USEC);
		}
		conn = eng_conn_by_id(s, st->conn_id);
		if (conn)
			eng_reply_ok(conn, st->request_id);
		eng_settle_free(st);
	}
	g->settles_tail = &g->settles;
}

/* Compact away the tombstones in a thread. */
static void
compaction_run(eng_job *job, uint32_t part, void *scratch)
{
	eng_compaction *cj = (eng_compaction *) job;

	cj->result = eng_cache_compacted(cj->from, &cj->err);
}

/* Start a compaction if the cache has enough tombstones and nothing reads it. */
static void
maybe_compact(eng_server *s, eng_gallery *g)
{
	eng_cache  *c = g->cache;
	eng_compaction *cj;
	uint64_t	bytes;

	if (c == NULL || c->pins != 0 || g->compacting || !eng_cache_wants_compaction(c))
		return;
	bytes = eng_cache_compacted_bytes(c);
	if (!eng_budget_charge(&s->budget, bytes))
		return;					/* retried after the next change */
	cj = calloc(1, sizeof(*cj));
	if (cj == NULL)
	{
		eng_budget_release(&s->budget, bytes);
		return;
	}
	cj->job.run = compaction_run;
	cj->job.tag = JOB_COMPACTION;
	cj->job.n_parts = 1;
	cj->gallery = g;
	cj->from = c;
	cj->charged = bytes;
	c->pins++;
	g->compacting = cj;
	s->jobs++;
	eng_log(ENG_LOG_DEBUG, "gallery %s: compacting %u tombstones of %u entries",
			eng_gallery_name(g), c->n_purged, c->soa.n_tpl);
	eng_pool_submit(s->pool, &cj->job);
}

/* A finished compaction: swap it in if the cache it copied is still current. */
static void
compaction_done(eng_server *s, eng_compaction *cj)
{
	eng_gallery *g = cj->gallery;
	eng_cache  *from = cj->from;

	g->compacting = NULL;
	if (cj->result != NULL && g->cache == from)
	{
		eng_cache_adopt(cj->result, &s->budget, cj->charged);
		eng_log(ENG_LOG_DEBUG, "gallery %s: compacted to %u entries", eng_gallery_name(g),
				cj->result->soa.n_tpl);
		g->cache = cj->result;
	}
	else
	{
		if (cj->result == NULL)
			eng_log(ENG_LOG_WARNING, "gallery %s: compaction failed: %s", eng_gallery_name(g),
					cj->err.message);
		eng_cache_free(cj->result);
		eng_budget_release(&s->budget, cj->charged);
	}
	unpin(g, from);
	free(cj);
}

/*
 * The candidates a search keeps per probe from cache c: k, or for a
 * refining search s + k with *s = n' for the cache's searchable entries
 * (mcc_proto.h); at most the searchable entries.
 */
static uint64_t
keep_per_probe(const eng_request *r, const eng_cache *c, uint64_t *s)
{
	uint64_t	searchable = eng_cache_searchable(c);
	uint64_t	n = r->k;

	*s = 0;
	if (r->refine != MCC_LSS)
	{
		*s = (uint64_t) mcc_refine_count((int64_t) searchable, r->fraction,
										 (int64_t) r->refine_min, (int64_t) r->final_k);
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

/* Reply an empty RESULT (a SEARCH without probes only waits for its generation). */
static void
reply_empty(eng_server *s, const eng_request *r, const eng_cache *c)
{
	eng_conn   *conn = eng_conn_by_id(s, r->conn_id);
	size_t		f;

	if (conn == NULL)
		return;
	f = eng_frame_begin(&conn->out, MCC_MSG_RESULT, r->request_id);
	eng_buf_u64(&conn->out, c->applied_gen);
	eng_buf_u32(&conn->out, c->n_unsettled);
	eng_buf_u64(&conn->out, eng_cache_searchable(c));
	eng_buf_u32(&conn->out, MCC_COUNT_NONE);
	eng_buf_u64(&conn->out, 0);
	eng_buf_u32(&conn->out, 0);
	eng_buf_u32(&conn->out, 0);
	eng_frame_end(&conn->out, f);
}

/*
 * Sort the waiting requests: answer those that cannot be served, and return
 * (unlinked, in arrival order) up to max_batch that are ready now.
 */
static eng_request *
collect_ready(eng_server *s, eng_gallery *g)
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
			else if (r->n_probes == 0)
			{
				reply_empty(s, r, c);
				code = -1;
			}
			else if (g->running == NULL && n_ready < s->cfg.max_batch)
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
	b->job.tag = JOB_BATCH;
	b->owner = g;
	g->running = b;
	g->running_reqs = ready;
	g->running_cache = g->cache;
	g->cache->pins++;
	s->jobs++;
	eng_pool_submit(s->pool, &b->job);
}

/* Start one pass over the cache for the ready requests. */
static void
start_batch(eng_server *s, eng_gallery *g, eng_request *ready)
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
		if (r->count_xmin != 0 && eng_cache_searchable(g->cache) > r->count_above)
			r->count_index = eng_batch_add_count(b, r->count_xmin);
	}
	maybe_gpu(s, g->cache, b);
	g->passes++;
	run_pass(s, g, b, ready);
}

/* Start a pass that only brings the cache's GPU mirror up to date. */
static void
start_gpu_sync(eng_server *s, eng_gallery *g)
{
	eng_batch  *b = eng_batch_new(g->cache, 0, eng_pool_threads(s->pool));

	if (b == NULL)
		return;
	maybe_gpu(s, g->cache, b);
	if (b->gpu == NULL)
	{
		eng_batch_free(b);
		return;
	}
	g->gpu_syncs++;
	run_pass(s, g, b, NULL);
}

/* RESULT's count for request r (mcc_proto.h). */
static void
put_count(eng_buf *o, const eng_batch *b, const eng_request *r)
{
	bool		asked = r->count_xmin != 0 &&
		eng_cache_searchable(b->cache) > r->count_above;
	const eng_count *ct;

	if (!asked || r->count_index < 0 || b->counts[r->count_index].state != MCC_COUNT_DONE)
	{
		/* not asked for; or more groups than allowed, or no memory for them */
		eng_buf_u32(o, asked ? MCC_COUNT_OVERFLOW : MCC_COUNT_NONE);
		eng_buf_u64(o, 0);
		eng_buf_u32(o, 0);
		return;
	}
	ct = &b->counts[r->count_index];
	eng_buf_u32(o, MCC_COUNT_DONE);
	eng_buf_u64(o, ct->certain);
	eng_buf_u32(o, ct->n_groups);
	for (uint32_t i = 0; i < ct->n_groups; i++)
	{
		eng_buf_u64(o, ct->groups[i].insert_xid);
		eng_buf_u64(o, ct->groups[i].delete_xid);
		eng_buf_u32(o, ct->groups[i].flags);
		eng_buf_u32(o, ct->groups[i].entries);
	}
}

/*
 * Hits whose cache entries a loop over a shortlist asks for ahead: the
 * entries of thousands of hits lie at random in a gallery-sized array.
 */
#define HIT_AHEAD 8

/* A refining search's hit j of slot sl: its refined score and visibility. */
static void
put_rhit_tail(eng_buf *o, const eng_cache *c, const eng_request *r, float refined,
			  uint32_t entry)
{
	const eng_entry *e = &c->entries[entry];
	uint32_t	flags = 0;

	if (e->flags & ENG_E_INS_SETTLED)
		flags |= MCC_COUNT_F_INS_COMMITTED;
	if (e->delete_xid != 0 && (e->flags & ENG_E_DEL_COMMITTED))
		flags |= MCC_COUNT_F_DEL_COMMITTED;
	if (r->count_xmin != 0 && eng_entry_certain(e, r->count_xmin))
		flags |= MCC_CAND_F_CERTAIN;
	eng_buf_f32(o, refined);
	eng_buf_u64(o, e->insert_xid);
	eng_buf_u64(o, e->delete_xid);
	eng_buf_u32(o, flags);
}

/* Is refined pair a (hit ha) better than b (hit hb): score desc, key asc. */
static bool
better_refined(const eng_rescore_pair *a, const eng_hit *ha, const eng_rescore_pair *b,
			   const eng_hit *hb)
{
	if (a->score != b->score)
		return a->score > b->score;
	return ha->key < hb->key;
}

/*
 * A TOP reply for one probe of a refining search (mcc_proto.h), if the
 * request welcomes it and it holds: the n rescored hits are exactly the
 * shortlist s and more hits follow. refine_cut stops at the s-th certain
 * hit, so n == s with hits beyond it means all n are certain. Writes the
 * best min(final_k, n) by refined score; false (nothing written) otherwise.
 */
static bool
put_top(eng_buf *o, const eng_cache *c, const eng_request *r, const eng_slot *sl,
		const eng_rescore_pair *rp, uint32_t n)
{
	uint32_t	t = r->final_k < n ? r->final_k : n;
	uint32_t   *best;
	uint32_t	nb = 0;

	if (!r->top || r->count_xmin == 0 || n == 0 || n != r->shortlist ||
		sl->hits.n <= n || t >= n)
		return false;
	if ((best = malloc(sizeof(uint32_t) * t)) == NULL)
		return false;			/* the whole shortlist instead */
	/* the t best by insertion: t is a final k, small next to n */
	for (uint32_t j = 0; j < n; j++)
	{
		uint32_t	at;

		if (nb == t && !better_refined(&rp[j], &sl->hits.h[j], &rp[best[t - 1]],
									   &sl->hits.h[best[t - 1]]))
			continue;
		at = nb < t ? nb++ : t - 1;
		while (at > 0 && better_refined(&rp[j], &sl->hits.h[j], &rp[best[at - 1]],
										&sl->hits.h[best[at - 1]]))
		{
			best[at] = best[at - 1];
			at--;
		}
		best[at] = j;
	}
	eng_buf_u32(o, MCC_RESULT_MORE | MCC_RESULT_TOP);
	eng_buf_u32(o, n);
	eng_buf_u32(o, t);
	for (uint32_t i = 0; i < t; i++)
	{
		const eng_hit *h = &sl->hits.h[best[i]];

		eng_buf_f32(o, h->score);
		eng_buf_i64(o, h->key);
		eng_buf_u64(o, h->hash);
		put_rhit_tail(o, c, r, rp[best[i]].score, rp[best[i]].entry);
	}
	free(best);
	return true;
}

/*
 * Write the RESULT of a request whose pass (and, refining, whose rescoring
 * rs) has finished.
 */
static void
reply_result(eng_server *s, const eng_batch *b, const eng_rescore *rs,
			 const eng_request *r)
{
	eng_conn   *conn = eng_conn_by_id(s, r->conn_id);
	bool		refining = r->refine != MCC_LSS;
	eng_buf    *o;
	size_t		f;

	if (conn == NULL)
		return;
	for (uint32_t i = 0; i < r->n_probes; i++)
		if (b->slots[r->first_slot + i].hits.failed)
		{
			eng_reply_error(conn, r->request_id, MCC_PERR_INTERNAL, MCC_ERR_MEMORY,
							"out of memory");
			return;
		}
	if (refining && (rs == NULL || rs->failed))
	{
		mcc_error	err;

		if (rs == NULL)
			mcc_error_set(&err, MCC_ERR_MEMORY, "out of memory");
		eng_reply_error_by_id(s, r->conn_id, r->request_id,
							  rs == NULL || rs->err.status == MCC_ERR_MEMORY ?
							  MCC_PERR_INTERNAL : MCC_PERR_DATA,
							  rs == NULL ? &err : &rs->err);
		return;
	}
	o = &conn->out;
	f = eng_frame_begin(o, MCC_MSG_RESULT, r->request_id);
	eng_buf_u64(o, b->cache->applied_gen);
	eng_buf_u32(o, b->cache->n_unsettled);
	eng_buf_u64(o, eng_cache_searchable(b->cache));
	put_count(o, b, r);
	eng_buf_u32(o, r->n_probes);
	for (uint32_t i = 0; i < r->n_probes; i++)
	{
		const eng_slot *sl = &b->slots[r->first_slot + i];
		uint32_t	n = sl->hits.n;
		const eng_rescore_pair *rp = NULL;

		if (refining)
			rp = eng_rescore_pairs(rs, r->first_slot + i, &n);
		if (refining && put_top(o, b->cache, r, sl, rp, n))
			continue;
		eng_buf_u32(o, sl->n_ge > n ? MCC_RESULT_MORE : 0);
		eng_buf_u32(o, n);
		for (uint32_t j = 0; j < n; j++)
		{
			if (refining && j + HIT_AHEAD < n)
				__builtin_prefetch(&b->cache->entries[rp[j + HIT_AHEAD].entry]);
			eng_buf_f32(o, sl->hits.h[j].score);
			eng_buf_i64(o, sl->hits.h[j].key);
			eng_buf_u64(o, sl->hits.h[j].hash);
			if (refining)
				put_rhit_tail(o, b->cache, r, rp[j].score, rp[j].entry);
		}
	}
	eng_frame_end(o, f);
}

/*
 * The hits of a refining probe to rescore and return: the shortest prefix
 * holding r->shortlist entries certain for its count_xmin, or all. Every
 * visible row among the statement's first n' by LSS lies in it: n' is at
 * most r->shortlist, and certain entries are visible.
 */
static uint32_t
refine_cut(const eng_cache *c, const eng_slot *sl, const eng_request *r)
{
	uint64_t	certain = 0;

	for (uint32_t j = 0; j < sl->hits.n; j++)
	{
		if (j + HIT_AHEAD < sl->hits.n)
			__builtin_prefetch(&c->entries[sl->hits.h[j + HIT_AHEAD].entry]);
		if (eng_entry_certain(&c->entries[sl->hits.h[j].entry], r->count_xmin) &&
			++certain >= r->shortlist)
			return j + 1;
	}
	return sl->hits.n;
}

/*
 * After a pass whose requests include live refining searches: their
 * shortlists as one rescoring job over the still pinned cache. False if
 * there is none (or no memory: the requests are then answered with an
 * error by reply_result).
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
			uint32_t	n = refine_cut(b->cache, sl, r);

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
	g->rescoring = rs;
	eng_refine_candidates(s, rs);
	return true;
}

/*
 * A GPU job (what: "search" for a pass, "refinement" for a rescoring) that
 * did not answer: say why and stop using the GPU as far as the failure
 * requires. The caller runs the job again on the CPU threads.
 */
static void
gpu_give_up(eng_server *s, eng_gallery *g, eng_gpu_outcome outcome, const mcc_error *err,
			const char *what)
{
	eng_cache  *c = g->running_cache;
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
	gpu_give_up(s, g, b->gpu_outcome, &b->gpu_err, "search");
	eng_batch_to_cpu(b);
	for (uint32_t i = 0; i < b->n_slots; i++)
		if (b->slots[i].cancel == NULL || !atomic_load(b->slots[i].cancel))
			live = true;
	if (!live)
		return false;
	s->jobs++;
	eng_pool_submit(s->pool, &b->job);
	return true;
}

/* The end of pass b (and of its rescoring rs): reply, unpin, free. */
static void
pass_end(eng_server *s, eng_gallery *g, eng_batch *b, eng_rescore *rs)
{
	while (g->running_reqs)
	{
		eng_request *r = g->running_reqs;

		g->running_reqs = r->next;
		if (!atomic_load(&r->cancelled))
		{
			reply_result(s, b, rs, r);
			g->searches++;
		}
		eng_request_free(r);
	}
	g->running = NULL;
	g->rescoring = NULL;
	unpin(g, g->running_cache);
	g->running_cache = NULL;
	eng_batch_free(b);
	eng_rescore_free(rs);
}

/*
 * A finished pass: reply to the requests still wanting it, unless refining
 * searches need their rescoring first (the pass goes on running, its cache
 * pinned, until that comes back).
 */
static void
batch_done(eng_server *s, eng_batch *b)
{
	eng_gallery *g = b->owner;

	if (b->gpu != NULL && b->gpu_outcome != ENG_GPU_DONE && gpu_fallback(s, g, b))
		return;
	eng_batch_finish(b);
	if (start_rescore(s, g, b))
		return;
	pass_end(s, g, b, NULL);
}

void
eng_gallery_job_done(eng_server *s, eng_job *job)
{
	eng_gallery *g;

	s->jobs--;
	if (job->tag == JOB_BATCH)
	{
		g = ((eng_batch *) job)->owner;
		batch_done(s, (eng_batch *) job);
	}
	else if (job->tag == ENG_JOB_RESCORE)
	{
		eng_rescore *rs = (eng_rescore *) job;
		eng_batch  *b = rs->owner;

		g = b->owner;
		/* a failed GPU stage: the same shortlists on the CPU threads, the same scores */
		if (eng_rescore_gpu_failed(rs))
			gpu_give_up(s, g, rs->gpu_outcome, &rs->gpu_err, "refinement");
		if (!eng_rescore_next(s, rs))
			pass_end(s, g, b, rs);
	}
	else
	{
		g = ((eng_compaction *) job)->gallery;
		compaction_done(s, (eng_compaction *) job);
	}
	eng_gallery_advance(s, g);
}

void
eng_gallery_advance(eng_server *s, eng_gallery *g)
{
	eng_request *ready;

	if (g->cache != NULL && g->cache->pins == 0)
		eng_gallery_apply_pending(s, g);
	if (g->cache == NULL || g->cache->pins == 0)
		apply_settles(s, g);
	eng_gallery_trim_queue(g);
	maybe_compact(s, g);
	ready = collect_ready(s, g);
	if (ready)
		start_batch(s, g, ready);
	else if (g->running == NULL && g->compacting == NULL && g->cache != NULL &&
			 eng_gpu_stale(s->gpu, g->cache))
		start_gpu_sync(s, g);	/* upload after a load, appends after deltas */
}

/*
 * Queue a search. Nothing starts here: eng_server_step runs after every
 * client's input was read, so that the searches that arrived together form
 * one pass.
 */
void
eng_gallery_submit(eng_server *s, eng_gallery *g, eng_request *r)
{
	r->next = NULL;
	*g->waiting_tail = r;
	g->waiting_tail = &r->next;
}

/* Queue a SETTLE; applied by the next eng_gallery_advance with no reader. */
void
eng_gallery_settle(eng_server *s, eng_gallery *g, eng_settle *st)
{
	st->next = NULL;
	*g->settles_tail = st;
	g->settles_tail = &st->next;
}

void
eng_gallery_conn_closed(eng_server *s, uint64_t conn_id)
{
	for (uint32_t i = 0; i < s->n_gal; i++)
	{
		eng_gallery *g = s->gal[i];
		bool		had_parts = false;

		for (eng_request *r = g->waiting; r; r = r->next)
			if (r->conn_id == conn_id)
				atomic_store(&r->cancelled, 1);
		for (eng_request *r = g->running_reqs; r; r = r->next)
			if (r->conn_id == conn_id)
				atomic_store(&r->cancelled, 1);
		for (eng_settle *st = g->settles; st; st = st->next)
			if (st->conn_id == conn_id)
				st->conn_id = 0;
		for (eng_gen *r = g->q.head; r; r = r->next)
			if (!r->complete && r->conn_id == conn_id)
				had_parts = true;
		if (had_parts)
		{
			eng_log(ENG_LOG_WARNING, "gallery %s: a delta was cut off by its connection's end",
					eng_gallery_name(g));
			eng_genq_conn_closed(&g->q, conn_id);
		}
	}
}

bool
eng_gallery_cancel(eng_server *s, uint64_t conn_id, uint64_t request_id)
{
	bool		found = false;

	for (uint32_t i = 0; i < s->n_gal; i++)
	{
		eng_gallery *g = s->gal[i];

		for (eng_request *r = g->waiting; r; r = r->next)
			if (r->conn_id == conn_id && r->request_id == request_id)
			{
				atomic_store(&r->cancelled, 1);
				found = true;
			}
		for (eng_request *r = g->running_reqs; r; r = r->next)
			if (r->conn_id == conn_id && r->request_id == request_id)
			{
				atomic_store(&r->cancelled, 1);
				found = true;
			}
	}
	return found;
}

/* Does gallery id a match the EVICT pattern p (0 fields match any)? */
static bool
evict_match(const mcc_gallery_id *a, const mcc_gallery_id *p)
{
	if (p->db_oid == 0)
		return true;
	if (p->db_oid != a->db_oid)
		return false;
	if (p->rel_oid == 0)
		return true;
	if (p->rel_oid != a->rel_oid)
		return false;
	return p->signature == 0 || p->signature == a->signature;
}

void
eng_gallery_evict(eng_server *s, const mcc_gallery_id *id)
{
	for (uint32_t i = 0; i < s->n_gal; i++)
	{
		eng_gallery *g = s->gal[i];

		if (!evict_match(&g->id, id))
			continue;
		if (g->cache)
			eng_log(ENG_LOG_INFO, "gallery %s evicted", eng_gallery_name(g));
		eng_gallery_drop_cache(s, g, "gallery was evicted");
		/* a load in progress would need the deltas dropped here */
		for (eng_load *l = g->loads; l; l = l->next)
		{
			mcc_error	err;

			mcc_error_set(&err, MCC_ERR_VALUE, "gallery was evicted during the load");
			eng_load_fail(l, MCC_PERR_NOT_LOADED, &err);
		}
		eng_genq_free(&g->q);
		apply_settles(s, g);
	}
}

void
eng_gallery_set_priority(eng_server *s, const mcc_gallery_id *id, int32_t priority)
{
	for (uint32_t i = 0; i < s->n_gal; i++)
		if (s->gal[i]->id.db_oid == id->db_oid && s->gal[i]->id.rel_oid == id->rel_oid &&
			(id->signature == 0 || id->signature == s->gal[i]->id.signature))
			s->gal[i]->priority = priority;
}

int64_t
eng_gallery_next_deadline(eng_server *s)
{
	int64_t		d = INT64_MAX;

	for (uint32_t i = 0; i < s->n_gal; i++)
		for (eng_request *r = s->gal[i]->waiting; r; r = r->next)
			if (r->deadline < d)
				d = r->deadline;
	return d;
}

void
eng_gallery_free_all(eng_server *s)
{
	for (uint32_t i = 0; i < s->n_gal; i++)
	{
		eng_gallery *g = s->gal[i];

		/* the pool is stopped: jobs that did not come back are freed here */
		if (g->running)
		{
			while (g->running_reqs)
			{
				eng_request *r = g->running_reqs;

				g->running_reqs = r->next;
				eng_request_free(r);
			}
			eng_batch_free(g->running);
			eng_rescore_free(g->rescoring);
			if (g->running_cache != g->cache)
				eng_cache_free(g->running_cache);
		}
		if (g->compacting)
		{
			if (g->compacting->from != g->cache && g->compacting->from != g->running_cache)
				eng_cache_free(g->compacting->from);
			eng_cache_free(g->compacting->result);
			free(g->compacting);
		}
		eng_snapshot_forget(g);
		eng_cache_free(g->cache);
		g->cache = NULL;
		while (g->waiting)
		{
			eng_request *r = g->waiting;

			g->waiting = r->next;
			eng_request_free(r);
		}
		while (g->settles)
		{
			eng_settle *st = g->settles;

			g->settles = st->next;
			eng_settle_free(st);
		}
		while (g->loads)
			eng_load_free(NULL, g->loads);
		eng_genq_free(&g->q);
		free(g);
	}
	free(s->gal);
	s->gal = NULL;
	s->n_gal = s->cap_gal = 0;
}
