/*
 * service_identify.c: identify() and identify_batch() through the matcher
 * service.
 *
 * For a registered gallery the backend checks what only PostgreSQL can
 * (privileges were checked by mcc_gallery_resolve; row-level security, the
 * change triggers, changes of its own transaction), reads the gallery's
 * generation G after its snapshot was taken, has the engine's cache loaded
 * if it is not current, and sends SEARCH(G, k'). The engine answers the best
 * k' candidates (key, template hash, score) over every tuple version it
 * holds. One indexed query under the caller's snapshot then says which
 * (key, hash) pairs the caller can see; the first k visible candidates are
 * exactly the top k over the rows the statement can see, because every such
 * row is in the cache and any visible row outside the k' candidates ranks
 * below all of them. If fewer than k survive and the engine holds more, the
 * search is repeated with a larger k'.
 *
 * With a refinement the same search (min_score 0: it applies to the refined
 * score) keeps n' visible candidates instead of k, n' from the count of rows
 * the statement sees (src/service/service_refine.c), and the engine rescores them
 * (REFINE) from the templates the re-check read; the top k by the refined
 * score are the answer, as on the backend path.
 *
 * Whenever the service cannot answer, mcc.fallback decides between a silent
 * backend scan, one with a NOTICE, and an ERROR. Two cases always fall back
 * silently because the backend scan is what defines the answer there: the
 * transaction itself changed the gallery (its own changes reach the engine
 * only at commit), and the gallery holds rows the cache cannot take (other
 * profiles, NULL keys), for which the backend scan raises the proper error.
 *
 * The pieces: the SEARCH request and its RESULT are in
 * service_search_msg.c, the re-check of the candidates' visibility in
 * service_recheck.c, settling the engine's transaction ids in
 * service_settle.c, identify_batch() in service_batch.c; the request they
 * share is in service_identify.h.
 */
#include "mcc_pg.h"
#include "service.h"
#include "service_identify.h"
#include "service_recheck.h"
#include "service_search_msg.h"
#include "service_settle.h"
#include "service_gallery_checks.h"
#include "gallery.h"

#include "access/detoast.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/procarray.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"

#include <math.h>

#include "mcc_hash.h"
#include "refine.h"

#define MAX_ATTEMPTS		3		/* loads per call before giving up */
#define KPRIME_GROWTH		4

bool		mcc_service_bypass = false;

typedef enum search_outcome
{
	SEARCH_DONE,
	SEARCH_RELOAD,				/* the engine needs a (re)load first */
	SEARCH_FALLBACK,			/* per mcc.fallback, with why */
	SEARCH_SILENT,				/* backend scan without a word */
	SEARCH_RECHECKED			/* refine the candidates the backend re-checks */
} search_outcome;

bool
mcc_service_fallback(const char *fn, const char *instead, const char *why)
{
	if (mcc_fallback == MCC_FALLBACK_ERROR)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("matcher service cannot serve %s: %s", fn, why),
				 errhint("Set mcc.fallback to \"cpu\" or \"notice\" to scan in the backend instead.")));
	if (mcc_fallback == MCC_FALLBACK_NOTICE)
		ereport(NOTICE,
				(errmsg("%s %s: %s", fn, instead, why)));
	return false;
}

/* Apply mcc.fallback to identify(); returns false (scan in the backend) unless it raises. */
static bool
fallback(const char *why)
{
	return mcc_service_fallback("identify()", "scans the gallery in the backend", why);
}

/* Keep the slot's estimate of the searchable entries (when it moved by 1/8). */
static void
note_searchable(const mcc_gallery_ref *ref, uint64 known, uint64 now)
{
	uint64		diff = known > now ? known - now : now - known;

	if (diff <= now / 8 || !mcc_slot_lock(ref->slot, ref->relid, ref->epoch, LW_EXCLUSIVE))
		return;
	mcc_svc->slots[ref->slot].searchable = now;
	LWLockRelease(MCC_SLOT_LOCK(ref->slot));
}

/*
 * The end of a search the engine answered: the slot's estimate of the
 * searchable entries kept (known: what it said before), the engine's
 * settlement of the reply (service_settle.c), both timed.
 */
static search_outcome
search_done(serve_req *r, uint64 known)
{
	note_searchable(&r->ref, known, r->searchable);
	serve_timing_lap(&r->tm, SERVE_T_OTHER);
	settle(r);
	serve_timing_lap(&r->tm, SERVE_T_SETTLE);
	return SEARCH_DONE;
}

/*
 * What a SEARCH's reply other than RESULT means: an ERROR to reload, or to
 * fall back (why set); other errors and other replies raise.
 */
static search_outcome
search_error(const mcc_reply *reply, char **why)
{
	if (reply->type != MCC_MSG_ERROR)
		mcc_raise_engine_error(reply);
	if (reply->err_code == MCC_PERR_NOT_LOADED || reply->err_code == MCC_PERR_GENERATION)
		return SEARCH_RELOAD;
	if (reply->err_code == MCC_PERR_MEMORY)
	{
		*why = psprintf("the matcher engine is out of cache memory: %s", reply->err_message);
		return SEARCH_FALLBACK;
	}
	mcc_raise_engine_error(reply);
}

/*
 * n' for a statement that sees n rows, the n' of a statement that sees too
 * few rows for a count to matter, and the most rows for which it does not
 * (mcc_refine_flat_limit): from the settings, or identify_shortlist()'s
 * fixed length, which never depends on n beyond being capped by it.
 */
static int64
req_shortlist(const serve_req *r, int64 n)
{
	return r->fixed_short > 0 ? Min(n, r->fixed_short) : mcc_refine_shortlist(n, r->k);
}

static int64
req_flat(const serve_req *r)
{
	return r->fixed_short > 0 ? r->fixed_short : Max((int64) mcc_refine_min, (int64) r->k);
}

static int64
req_flat_limit(const serve_req *r)
{
	return r->fixed_short > 0 ? PG_INT64_MAX : mcc_refine_flat_limit(r->k);
}

/*
 * n, the rows with a template the statement sees, from a RESULT that
 * carries the visibility count it asked for: its certain entries and the
 * groups the snapshot sees; the table counted when the engine had too many
 * recent versions to group (MCC_COUNT_OVERFLOW).
 */
static int64
statement_rows(const serve_req *r)
{
	if (r->count_state == MCC_COUNT_DONE)
		return (int64) mcc_count_visible(r->count_certain, r->count_groups,
										 r->count_n_groups, GetActiveSnapshot());
	return mcc_count_rows(r->g);
}

/*
 * Refining: n' from the first RESULT. Its count is absent when the engine
 * holds no more than mcc_refine_flat_limit() entries: every statement then
 * sees at most that many rows, so n' is min(n, max(mcc.refine_min, k)), and
 * keeping that many visible candidates (all, if fewer) is exactly n'.
 */
static void
set_shortlist_size(serve_req *r)
{
	int64		n;

	if (r->count_state != MCC_COUNT_DONE && r->count_state != MCC_COUNT_OVERFLOW)
	{
		r->want = req_flat(r);
		r->count_rows = -1;
		return;
	}
	n = statement_rows(r);
	r->want = req_shortlist(r, n);
	r->count_rows = n;
	serve_timing_lap(&r->tm, SERVE_T_COUNT);
	ereport(DEBUG1,
			(errmsg_internal("identify(): the statement sees %lld rows of the matcher engine's %llu entries; refining %lld",
							 (long long) n, (unsigned long long) r->searchable,
							 (long long) r->want)));
}

/* SEARCH with growing k' until every probe has `want` visible hits or no more. */
static search_outcome
search_visible(serve_req *r, char **why)
{
	uint64		known = 0;
	uint64		gen = mcc_slot_generation(&r->ref, &known);
	uint64		kprime;
	uint64		count_xmin = 0;
	uint64		count_above = 0;

	if (gen == 0)
		return SEARCH_RELOAD;
	r->want = r->k;
	if (r->method != MCC_LSS)
	{
		int64		flat = req_flat(r);
		int64		limit = req_flat_limit(r);

		/* n' as the last search's entries suggest, until the count says (none: flat) */
		r->want = req_shortlist(r, Max((int64) Min(known, (uint64) PG_INT64_MAX), flat));
		if (limit < PG_INT64_MAX)
		{
			count_xmin = mcc_full_xid(GetActiveSnapshot()->xmin);
			count_above = (uint64) limit;
		}
	}
	kprime = (uint64) r->want * 2 + 8;
	for (;;)
	{
		mcc_reply	reply;
		HASHCTL		ctl;
		HTAB	   *visible;
		bool		need_more;

		if (!send_search(r, gen, (uint32) Min(kprime, PG_UINT32_MAX), count_xmin,
						 count_above, false, &reply))
		{
			*why = pstrdup("the matcher engine did not answer within mcc.request_timeout");
			return SEARCH_FALLBACK;
		}
		if (reply.type != MCC_MSG_RESULT)
			return search_error(&reply, why);
		parse_result(r, &reply, false);
		if (count_xmin != 0)
		{
			set_shortlist_size(r);
			count_xmin = 0;		/* the count holds for the statement */
		}

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(int64);
		ctl.entrysize = sizeof(visible_row);
		ctl.hcxt = CurrentMemoryContext;
		visible = hash_create("mcc visible rows", 256, &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		if (!recheck(r, visible, r->method != MCC_LSS))
			return SEARCH_SILENT;
		serve_timing_lap(&r->tm, SERVE_T_RECHECK);
		need_more = filter_visible(r, visible);
		hash_destroy(visible);
		serve_timing_lap(&r->tm, SERVE_T_PICK);
		if (!need_more || kprime >= PG_UINT32_MAX)
			break;
		kprime = Max(kprime * KPRIME_GROWTH, (uint64) r->want * 2 + 8);
	}
	return search_done(r, known);
}

/*
 * A count alone (no probe: mcc_gallery_rows()): a SEARCH without probes
 * that asks for the visibility count whatever the cache holds (protocol 8),
 * judged as a refining search's n is; r->count_rows gets it. An empty
 * cache sends no count: nothing to see.
 */
static search_outcome
search_count(serve_req *r, char **why)
{
	uint64		known = 0;
	uint64		gen = mcc_slot_generation(&r->ref, &known);
	mcc_reply	reply;

	if (gen == 0)
		return SEARCH_RELOAD;
	if (!send_search(r, gen, 0, mcc_full_xid(GetActiveSnapshot()->xmin), 0, false, &reply))
	{
		*why = pstrdup("the matcher engine did not answer within mcc.request_timeout");
		return SEARCH_FALLBACK;
	}
	if (reply.type != MCC_MSG_RESULT)
		return search_error(&reply, why);
	parse_result(r, &reply, false);
	r->count_rows = r->count_state == MCC_COUNT_NONE && r->searchable == 0 ? 0 : statement_rows(r);
	ereport(DEBUG1,
			(errmsg_internal("mcc_gallery_rows(): the statement sees %lld rows of the matcher engine's %llu entries",
							 (long long) r->count_rows, (unsigned long long) r->searchable)));
	return search_done(r, known);
}

/*
 * Refining: the engine rescores each probe's n' visible candidates from the
 * templates the re-check read; each probe's hits become the top k by the
 * refined score among those at or above min_score. False (why set) if the
 * engine did not answer in time.
 */
static bool
refine_hits(serve_req *r, char **why)
{
	mcc_refine_job *jobs = palloc(r->n_probes * sizeof(mcc_refine_job));
	int			i;
	int			j;

	for (i = 0; i < r->n_probes; i++)
	{
		jobs[i].probe = r->probes[i];
		jobs[i].n = r->ans[i].n_hits;
		jobs[i].tpl = r->ans[i].hit_tpl;
		jobs[i].score = palloc(Max(jobs[i].n, 1) * sizeof(float));
	}
	serve_timing_lap(&r->tm, SERVE_T_OTHER);
	if (!mcc_service_refine(jobs, r->n_probes, r->method, why))
		return false;
	serve_timing_lap(&r->tm, SERVE_T_REFINE);
	if (r->list != NULL)
	{
		keep_list(r, &r->ans[0], jobs[0].score);
		return true;
	}
	for (i = 0; i < r->n_probes; i++)
	{
		probe_answer *a = &r->ans[i];
		mcc_refined *ranked = palloc(Max(a->n_hits, 1) * sizeof(mcc_refined));

		for (j = 0; j < a->n_hits; j++)
		{
			ranked[j].score = jobs[i].score[j];
			ranked[j].key = a->hits[j].key;
		}
		a->n_hits = (int) mcc_refine_rank(ranked, a->n_hits, r->k, r->min_score);
		for (j = 0; j < a->n_hits; j++)
		{
			a->hits[j].score = ranked[j].score;
			a->hits[j].key = ranked[j].key;
		}
	}
	return true;
}

/*
 * Refining in the engine: its final hits, re-checked under the caller's
 * snapshot by the indexed query as any search's candidates are (a safety
 * net: the versions' xids already said they are visible). False if one is
 * not visible with its template hash.
 */
static bool
final_hits_visible(serve_req *r, uint64 **hashes)
{
	HASHCTL		ctl;
	HTAB	   *visible;
	bool		ok = true;
	int			i;
	int			j;

	for (i = 0; i < r->n_probes; i++)
	{
		r->ans[i].cand = r->ans[i].hits;
		r->ans[i].n_cand = r->ans[i].n_hits;
	}
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(int64);
	ctl.entrysize = sizeof(visible_row);
	ctl.hcxt = CurrentMemoryContext;
	visible = hash_create("mcc visible rows", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	serve_timing_lap(&r->tm, SERVE_T_OTHER);
	if (!recheck(r, visible, false))
		return false;
	serve_timing_lap(&r->tm, SERVE_T_RECHECK);
	for (i = 0; i < r->n_probes && ok; i++)
		for (j = 0; j < r->ans[i].n_hits && ok; j++)
		{
			visible_row *v = hash_search(visible, &r->ans[i].hits[j].key, HASH_FIND, NULL);

			ok = v != NULL && v->hash == hashes[i][j];
		}
	hash_destroy(visible);
	return ok;
}

/*
 * A TOP answer (mcc_proto.h): the engine's shortlist of top_total entries,
 * every one certain (visible to this snapshot), of which it sent the best
 * by refined score. When n' is that shortlist, the statement's shortlist is
 * exactly it and the sent candidates are the head of its ranking; another
 * n' asks again for whole shortlists (MCC_PICK_MORE).
 */
static mcc_pick_result
pick_top(serve_req *r, const probe_answer *a, mcc_refined *out, uint64 *out_hash, int64 *n_out,
		 const char **why)
{
	int			i;

	*n_out = 0;
	if (r->want != a->top_total || a->n_rc > r->want)
	{
		r->no_top = true;
		return MCC_PICK_MORE;
	}
	for (i = 0; i < a->n_rc; i++)
	{
		if (!(a->rc[i].v.flags & MCC_CAND_F_CERTAIN))
		{
			*why = "a candidate of a complete shortlist is not certain";
			return MCC_PICK_DISAGREE;
		}
		out[*n_out].score = a->rc[i].refined;
		out[*n_out].key = a->rc[i].key;
		out_hash[(*n_out)++] = a->rc[i].hash;
	}
	return MCC_PICK_DONE;
}

/*
 * Refining in the engine, for one probe: its shortlist (the first n'
 * visible candidates by LSS), ranked by the refined score into a->hits with
 * their hashes in *hashes. What mcc_pick_refined says.
 */
static mcc_pick_result
pick_and_rank(serve_req *r, probe_answer *a, uint64 **hashes, const char **why)
{
	int64		n_rows = r->count_rows;
	int64		cap = Max(Min((int64) a->n_rc, r->want), 1);
	mcc_refined *kept = palloc(cap * sizeof(mcc_refined));
	uint64	   *kept_hash = palloc(cap * sizeof(uint64));
	float	   *kept_lss = palloc(cap * sizeof(float));
	int64		n_kept;
	int64		i;
	int64		j;
	mcc_pick_result pr;

	if (a->top)
		pr = pick_top(r, a, kept, kept_hash, &n_kept, why);
	else
		pr = mcc_pick_refined(a->rc, a->n_rc, a->more, r->want, n_rows, GetActiveSnapshot(),
							  kept, kept_lss, kept_hash, &n_kept, why);
	if (pr != MCC_PICK_DONE)
		return pr;
	if (r->list != NULL)
		return pick_list(r, a, kept, kept_lss, kept_hash, n_kept, hashes);
	/* keys are unique among the kept: find each ranked hit's hash by its key */
	{
		mcc_refined *ranked = palloc(Max(n_kept, 1) * sizeof(mcc_refined));

		memcpy(ranked, kept, n_kept * sizeof(mcc_refined));
		a->n_hits = (int) mcc_refine_rank(ranked, n_kept, r->k, r->min_score);
		a->hits = palloc(Max(a->n_hits, 1) * sizeof(candidate));
		*hashes = palloc(Max(a->n_hits, 1) * sizeof(uint64));
		for (i = 0; i < a->n_hits; i++)
		{
			a->hits[i].score = ranked[i].score;
			a->hits[i].key = ranked[i].key;
			for (j = 0; j < n_kept && kept[j].key != ranked[i].key; j++)
				;
			(*hashes)[i] = kept_hash[j];
			a->hits[i].hash = kept_hash[j];
		}
	}
	a->hit_tpl = NULL;
	return MCC_PICK_DONE;
}

/*
 * identify() with a refinement, refined in the engine (docs/matcher-service.md,
 * "Refinement in the engine"): one SEARCH returns each probe's shortlist
 * rescored from the engine's cache with every candidate's xids; the backend
 * judges the xids against its snapshot (no table access), keeps the first n'
 * visible candidates and ranks them, then re-checks only the final hits.
 * SEARCH_RECHECKED when the answer must come from the re-checked path
 * instead (the engine cannot return the shortlist in one frame, or the
 * versions disagree with the snapshot or the re-check).
 */
static search_outcome
search_refined(serve_req *r, char **why)
{
	uint64		known = 0;
	uint64		gen = mcc_slot_generation(&r->ref, &known);
	int64		flat = req_flat(r);
	int64		limit = req_flat_limit(r);
	uint64		count_xmin = mcc_full_xid(GetActiveSnapshot()->xmin);
	uint64		count_above = limit < PG_INT64_MAX ? (uint64) limit : PG_UINT64_MAX;
	uint64		slack;
	bool		counted = false;
	int64		refined = 0;
	uint64	  **hashes = palloc(r->n_probes * sizeof(uint64 *));
	const char *disagree = NULL;
	int			i;

	if (gen == 0)
		return SEARCH_RELOAD;
	/* n' as the last search's entries suggest: the slack is a share of it */
	r->want = req_shortlist(r, Max((int64) Min(known, (uint64) PG_INT64_MAX), flat));
	slack = (uint64) r->want / 2 + 16;
	for (;;)
	{
		mcc_reply	reply;
		bool		need_more = false;

		if (!send_search(r, gen, (uint32) Min(slack, PG_UINT32_MAX), count_xmin, count_above,
						 true, &reply))
		{
			*why = pstrdup("the matcher engine did not answer within mcc.request_timeout");
			return SEARCH_FALLBACK;
		}
		if (reply.type == MCC_MSG_ERROR && reply.err_code == MCC_PERR_TOO_LARGE)
		{
			ereport(DEBUG1,
					(errmsg_internal("identify(): the shortlists of %d probes do not fit one reply of the matcher engine; refining the re-checked shortlists",
									 r->n_probes)));
			return SEARCH_RECHECKED;
		}
		if (reply.type != MCC_MSG_RESULT)
			return search_error(&reply, why);
		parse_result(r, &reply, true);
		if (!counted)
		{
			/* n' (or, count_rows -1, a flat n'): the count holds for the statement */
			set_shortlist_size(r);
			counted = true;
			count_above = PG_UINT64_MAX;
		}
		for (i = 0; i < r->n_probes && disagree == NULL; i++)
			switch (pick_and_rank(r, &r->ans[i], &hashes[i], &disagree))
			{
				case MCC_PICK_DONE:
					refined += r->ans[i].top ? r->ans[i].top_total : r->ans[i].n_rc;
					break;
				case MCC_PICK_MORE:
					need_more = true;
					break;
				case MCC_PICK_DISAGREE:
					break;
			}
		serve_timing_lap(&r->tm, SERVE_T_PICK);
		if (disagree != NULL || !need_more)
			break;
		if (slack >= PG_UINT32_MAX)
		{
			disagree = "too many versions the statement cannot see";
			break;
		}
		slack = slack * KPRIME_GROWTH + (uint64) r->want;
		refined = 0;
	}
	if (disagree == NULL && !final_hits_visible(r, hashes))
		disagree = "a final hit is not visible to the statement";
	if (disagree != NULL)
	{
		/* never expected: the re-checked path answers, and the log says why */
		ereport(LOG,
				(errmsg("identify(): the matcher engine's refinement disagrees with the snapshot: %s; refining the re-checked shortlist instead",
						disagree)));
		return SEARCH_RECHECKED;
	}
	ereport(DEBUG1,
			(errmsg_internal("identify(): refined in the matcher engine: %d probes, %lld candidates, shortlists of %lld",
							 r->n_probes, (long long) refined, (long long) r->want)));
	r->in_engine = true;
	return search_done(r, known);
}

/* Load the cache if the slot says so; false (see silent and why) if it cannot be. */
static bool
ensure_loaded(serve_req *r, bool *silent, char **why)
{
	uint64		entries;

	*silent = false;
	if (!mcc_slot_needs_load(&r->ref, r->profile_id))
		return true;
	switch (mcc_gallery_load(&r->ref, r->profile_id, 0, &entries, why))
	{
		case MCC_LOAD_OK:
		case MCC_LOAD_SKIPPED:
		case MCC_LOAD_KEPT:
			return true;
		case MCC_LOAD_MIXED:
			*silent = true;
			return false;
		case MCC_LOAD_MEMORY:
		case MCC_LOAD_UNAVAILABLE:
			break;
	}
	return false;
}

/* Was a load of this gallery refused for memory a moment ago? */
static bool
load_refused_recently(const mcc_gallery_ref *ref)
{
	bool		refused;

	if (!mcc_slot_lock(ref->slot, ref->relid, ref->epoch, LW_SHARED))
		return false;
	refused = mcc_svc->slots[ref->slot].retry_load_after > GetCurrentTimestamp();
	LWLockRelease(MCC_SLOT_LOCK(ref->slot));
	return refused;
}

/* Fill r->ref: relations, signature, slot. NULL, or why the service cannot be used. */
static char *
prepare_ref(serve_req *r, bool *silent)
{
	const mcc_gallery *g = r->g;
	char	   *why;

	*silent = false;
	if ((why = mcc_gallery_owner_problem(g->relid)) != NULL)
		return why;
	mcc_gallery_ref_init(&r->ref, g);
	if ((why = mcc_gallery_triggers_missing(r->ref.relids)) != NULL)
		return psprintf("%s; run mcc_gallery_register() again", why);
	if (!mcc_key_is_unique(g->relid, g->key_att))
		return psprintf("column \"%s\" of \"%s\" has no unique index", g->key_name, g->relname);
	if (mcc_xact_changed_gallery(g->relid) || mcc_rewritten_in_xact(r->ref.relids))
	{
		*silent = true;
		return pstrdup("changed in this transaction");
	}
	if (!mcc_gallery_ref_slot(&r->ref))
		return psprintf("the matcher service already tracks mcc.max_galleries (%d) galleries of higher priority or being loaded",
						mcc_max_galleries);
	if (load_refused_recently(&r->ref))
		return pstrdup("a recent load of the gallery exceeded mcc.cache_memory_limit");
	return NULL;
}

/* The probes' common profile, or -1 if they differ (0, any, for a count alone). */
static int
probes_profile(struct varlena **probes, int n)
{
	int			profile = n > 0 ? ((uint8 *) probes[0])[5] : 0;
	int			i;

	for (i = 1; i < n; i++)
		if (((uint8 *) probes[i])[5] != profile)
			return -1;
	return profile;
}

/*
 * mcc.fallback's word, unless r only sends ahead (the call it prepares
 * says it, once).
 */
static bool
req_fallback(const serve_req *r, const char *why)
{
	return r->ahead ? false : fallback(why);
}

/* serve(), in r->cxt. */
static bool
serve_in(serve_req *r)
{
	char	   *why;
	bool		silent;
	int			attempt;
	search_outcome outcome;

	if (mcc_service_bypass || !mcc_service_enabled)
		return false;
	if ((why = mcc_service_gallery_problem(r->g)) != NULL)
		return req_fallback(r, why);
	if ((r->profile_id = probes_profile(r->probes, r->n_probes)) < 0)
		return false;			/* the backend compares each probe on its own */
	if ((why = prepare_ref(r, &silent)) != NULL)
		return silent ? false : req_fallback(r, why);
	mcc_predicate_lock_gallery(r->ref.relids);
	r->ans = palloc0(r->n_probes * sizeof(probe_answer));
	serve_timing_lap(&r->tm, SERVE_T_CHECKS);

	for (attempt = 0; attempt < MAX_ATTEMPTS; attempt++)
	{
		if (mcc_conn_ensure(&why) != MCC_CONN_OK)
			return req_fallback(r, why);
		/* sending ahead: nothing but the search (loads and catching up are the call's) */
		if (r->ahead && (RecoveryInProgress() || mcc_slot_needs_load(&r->ref, r->profile_id)))
			return false;
		if (!ensure_loaded(r, &silent, &why))
			return silent ? false : req_fallback(r, why);
		if (RecoveryInProgress())
		{
			/* a hot standby: the change log brings what triggers bring elsewhere */
			mcc_catchup_result c = mcc_standby_catch_up(&r->ref, &why);

			if (c == MCC_CATCHUP_FAILED)
				return req_fallback(r, why);
			if (c == MCC_CATCHUP_RELOAD)
				continue;
		}
		serve_timing_lap(&r->tm, SERVE_T_CONNECT);
		if (r->n_probes == 0)
			outcome = search_count(r, &why);
		else
			outcome = r->method != MCC_LSS && mcc_refine_in_engine ?
				search_refined(r, &why) : SEARCH_RECHECKED;
		if (outcome == SEARCH_RECHECKED)
			outcome = search_visible(r, &why);
		if (r->ahead)
			return false;		/* its first SEARCH is sent: the call takes its reply */
		switch (outcome)
		{
			case SEARCH_DONE:
				if (r->method != MCC_LSS && !r->in_engine && !refine_hits(r, &why))
					return req_fallback(r, why);
				return true;
			case SEARCH_SILENT:
				return false;
			case SEARCH_FALLBACK:
				return req_fallback(r, why);
			case SEARCH_RELOAD:
				mcc_slot_mark_reload(&r->ref);
				break;
			case SEARCH_RECHECKED:
				break;			/* search_visible never says it */
		}
	}
	return req_fallback(r, "the matcher engine asked for reloads repeatedly");
}

/*
 * Serve r through the service. True with r->ans filled; false to scan in
 * the backend (mcc.fallback has had its say). What it allocates is in
 * r->cxt, which the caller deletes when done with r->ans.
 */
bool
serve(serve_req *r)
{
	MemoryContext old;
	bool		ok;
	bool		asked = !mcc_service_bypass && mcc_service_enabled;

	serve_timing_start(&r->tm);
	r->cxt = AllocSetContextCreate(CurrentMemoryContext, "mcc service request",
								   ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(r->cxt);
	ok = serve_in(r);
	MemoryContextSwitchTo(old);
	/* a call that never asked for the service (mcc.service off) has nothing to say */
	if (asked)
		serve_timing_log(&r->tm, r->g->relname, list_length(r->ref.relids), ok);
	return ok;
}

/* Detoasted probe, validated. */
struct varlena *
checked_probe(Datum d)
{
	struct varlena *t = (struct varlena *) PG_DETOAST_DATUM(d);
	mcc_template_view v;

	mcc_pg_open(t, &v);
	return t;
}

void
serve_req_one(serve_req *r, const mcc_gallery *g, struct varlena **probe, int32 k, int method)
{
	memset(r, 0, sizeof(*r));
	r->g = g;
	r->probes = probe;
	r->n_probes = 1;
	r->k = k;
	r->method = (mcc_method) method;
}

/* identify() through the service (called from src/identify/identify.c). */
bool
mcc_service_identify(FunctionCallInfo fcinfo, const mcc_gallery *g,
					 const struct varlena *probe, int32 k, float4 min_score,
					 int method)
{
	serve_req	r;
	struct varlena *p = (struct varlena *) probe;
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	int			i;

	serve_req_one(&r, g, &p, k, method);
	r.min_score = min_score;
	if (!serve(&r))
	{
		MemoryContextDelete(r.cxt);
		return false;
	}
	InitMaterializedSRF(fcinfo, 0);
	for (i = 0; i < r.ans[0].n_hits; i++)
	{
		values[0] = Int64GetDatum(r.ans[0].hits[i].key);
		values[1] = Float4GetDatum(r.ans[0].hits[i].score);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	MemoryContextDelete(r.cxt);
	return true;
}
