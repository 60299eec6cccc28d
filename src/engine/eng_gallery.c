/*
 * eng_gallery.c: galleries: which cache serves each one, the deltas and
 * settles it applies between passes, the searches waiting for it, and what
 * comes back from the pool for it. The passes are eng_pass.c's, their
 * RESULTs eng_result.c's, the compactions eng_compact.c's, full loads
 * eng_load.c's.
 *
 * The gallery cache
 * -----------------
 *
 * A search in the engine must answer for a snapshot it never sees: the
 * backend took it, and only the backend can decide what it sees. So the
 * cache does not try to be "the table now". It holds tuple versions (key,
 * template hash, inserting xid, deleting xid; eng_cache.h), a superset of
 * what any snapshot in the system can see, and promises one thing, the
 * visibility contract: once the cache has applied generation G, every row
 * visible to a snapshot that read G after it was taken is in the cache, and
 * ranks where its score puts it. The backend asks for more candidates than
 * it needs and re-checks them under its own snapshot; every visible row
 * outside the candidates ranks below them, so the survivors are exactly its
 * top k (docs/matcher-service.md, "identify() with the service"). Each rule
 * below exists to keep that promise without reading the heap again.
 *
 * Versions, not rows. A delete marks a version and the version stays
 * searchable: a snapshot older than the deleter still sees the row. It goes
 * only when SETTLE reports its deleter committed below the horizon (no
 * snapshot can see it any more); a version whose inserter aborted goes at
 * the SETTLE that reports the abort. Deleted and unsettled versions cost a
 * little speed and some memory; keeping only the newest would lose rows
 * that older snapshots see.
 *
 * Deltas. Every commit that changes a gallery with a cache slot bumps its
 * generation before it becomes visible and sends its changes, one or more
 * DELTA frames of one generation, not netted, so the engine can queue them
 * (eng_delta.h) and apply them strictly in generation order, inserts of all
 * its parts before their deletes (apply_gen). A load that ran while a
 * transaction was open may have seen any intermediate state of its rows;
 * entries a load brought carry flags that absorb the one delta insert or
 * delete they already reflect (eng_cache_insert, eng_cache_delete), which
 * is why nothing may be netted on the way. A generation that cannot be
 * described (a TRUNCATE, too many rows, a cut connection) arrives as a
 * reload mark: the cache stops at the generation before it (reload_at), and
 * searches that need more get NOT_LOADED so that the backend loads again.
 * The queue is bounded (ENG_GENQ_MAX_N, ENG_GENQ_MAX_BYTES); losing a
 * record the cache still needs sets the same mark, trading a reload for
 * bounded memory. Records are kept back as far as the oldest load in
 * progress needs: a load builds its cache aside from a scan at generation L
 * and applies the queued generations above L when it is swapped in
 * (eng_load.c).
 *
 * A SEARCH names the generation its snapshot needs and waits until the
 * cache has applied it. The wait is bounded by the delta timeout only while
 * some generation up to it has not arrived (queue_covers in eng_pass.c): a
 * delta that is here but not applied yet waits for a pass, not for the
 * network, and must not time out.
 *
 * Passes. The main thread changes a cache only when no thread reads it
 * (pins == 0), so no entry needs a lock. A gallery runs at most one pass's
 * search at a time, a batch of every search that is ready, scanning each
 * chunk of the cache once for all their probes; searches that arrive
 * meanwhile wait and form the next batch, after the deltas and SETTLEs that
 * arrived meanwhile are applied (eng_gallery_advance). A pass with refining
 * searches keeps the cache pinned through the rescoring of their
 * shortlists, so the entries it names stay what the pass saw; the next
 * pass may search during that rescoring unless a delta, a SETTLE or a
 * compaction waits for the cache to be free (eng_pass.h).
 *
 * SETTLE changes entries too (it settles, purges and undoes deletes), so it
 * is deferred like a delta and answered only once applied: its OK means the
 * states it carried are in the cache.
 *
 * Compaction. Purged entries become tombstones that the scan still scores
 * and drops; rebuilding the cache at every purge would cost a copy per
 * SETTLE. When tombstones are a quarter of the cache and at least 64
 * (eng_cache_wants_compaction) and nothing reads it, a thread copies the
 * live entries while passes go on reading the original, which the copy
 * pins: deltas and SETTLEs wait for it, searches do not. The copy replaces
 * the cache only if the cache is still the gallery's current one when it
 * returns (a load or an eviction may have replaced it); since nothing
 * changed the pinned original, the copy is equal to it but for the
 * tombstones.
 *
 * Cache replacement. A load, a compaction or a drop replaces g->cache while
 * passes may still read the old one: the old cache lives on, pinned, until
 * its last reader unpins it (eng_gallery_unpin), and each reader answers
 * from the cache it started with, whose applied_gen its RESULT reports.
 * Nothing waits for readers to drain.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eng_cache_settle.h"
#include "eng_compact.h"
#include "eng_conn.h"
#include "eng_gallery.h"
#include "eng_load.h"
#include "eng_log.h"
#include "eng_pass.h"
#include "eng_server.h"
#include "eng_snapfile.h"
#include "eng_snapshot.h"
#include "mcc_grow.h"
#include "mcc_hash.h"

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
		g->running == NULL && g->rescored == NULL && g->gpu_building == NULL &&
		g->gpu_prebuild == NULL && g->compacting == NULL && g->settles == NULL &&
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
	eng_gallery **p;

	for (uint32_t i = 0; i < s->n_gal; i++)
		if (same_id(&s->gal[i]->id, id))
		{
			s->gal[i]->last_used = eng_now_usec();
			return s->gal[i];
		}
	if (!create)
		return NULL;
	trim_shells(s);
	p = mcc_grow(s->gal, s->n_gal, &s->cap_gal, sizeof(*p), 16);
	if (p == NULL)
		return NULL;
	s->gal = p;
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
void
eng_gallery_unpin(eng_gallery *g, eng_cache *c)
{
	c->pins--;
	if (c->pins == 0 && c != g->cache)
		eng_cache_free(c);
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
 * netted (src/service/service_triggers.c): inserting first lets every delete find
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

void
eng_gallery_job_done(eng_server *s, eng_job *job)
{
	eng_gallery *g;

	if (job->tag == ENG_JOB_BATCH)
	{
		g = ((eng_batch *) job)->owner;
		eng_pass_batch_done(s, (eng_batch *) job);
	}
	else if (job->tag == ENG_JOB_RESCORE)
		g = eng_pass_rescore_done(s, (eng_rescore *) job);
	else
	{
		g = ((eng_compaction *) job)->gallery;
		eng_compaction_done(s, (eng_compaction *) job);
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
	eng_compaction_maybe_start(s, g);
	/* a full upload (a load, a restore) beside the passes, which meanwhile run on the CPU */
	if (g->gpu_building == NULL && g->compacting == NULL && g->cache != NULL &&
		(g->running == NULL || g->running_cache != g->cache) &&
		(g->rescored == NULL || g->rescored_cache != g->cache) &&
		eng_gpu_needs_upload(s->gpu, g->cache))
		eng_pass_start_gpu_build(s, g);
	ready = eng_pass_collect_ready(s, g);
	if (ready)
		eng_pass_start(s, g, ready);
	else if (g->running == NULL && g->rescored == NULL && g->gpu_building == NULL &&
			 g->compacting == NULL && g->cache != NULL && eng_gpu_stale(s->gpu, g->cache))
		eng_pass_start_gpu_sync(s, g);	/* appends after deltas */
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
		for (eng_request *r = g->rescored_reqs; r; r = r->next)
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
		for (eng_request *r = g->rescored_reqs; r; r = r->next)
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

/* Free a list of requests. */
static void
free_requests(eng_request *r)
{
	while (r)
	{
		eng_request *next = r->next;

		eng_request_free(r);
		r = next;
	}
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
			free_requests(g->running_reqs);
			eng_batch_free(g->running);
			if (g->running_cache != g->cache)
				eng_cache_free(g->running_cache);
		}
		if (g->rescored)
		{
			free_requests(g->rescored_reqs);
			eng_batch_free(g->rescored);
			eng_rescore_free(g->rescoring);
			if (g->rescored_cache != g->cache && g->rescored_cache != g->running_cache)
				eng_cache_free(g->rescored_cache);
		}
		if (g->gpu_building)
		{
			eng_cache  *bc = (eng_cache *) g->gpu_building->cache;

			eng_batch_free(g->gpu_building);
			if (bc != g->cache && bc != g->running_cache && bc != g->rescored_cache)
				eng_cache_free(bc);
		}
		if (g->gpu_prebuild)
		{
			/* the load's cache, freed with the load below, or an orphan */
			eng_cache  *pc = (eng_cache *) g->gpu_prebuild->cache;

			eng_batch_free(g->gpu_prebuild);
			g->gpu_prebuild = NULL;
			pc->pins--;
			if (pc->orphaned)
				eng_cache_free(pc);
		}
		if (g->compacting)
		{
			if (g->compacting->from != g->cache && g->compacting->from != g->running_cache &&
				g->compacting->from != g->rescored_cache &&
				(g->gpu_building == NULL || g->compacting->from != g->gpu_building->cache))
				eng_cache_free(g->compacting->from);
			eng_cache_free(g->compacting->result);
			free(g->compacting);
		}
		eng_snapshot_forget(g);
		eng_cache_free(g->cache);
		g->cache = NULL;
		free_requests(g->waiting);
		g->waiting = NULL;
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
