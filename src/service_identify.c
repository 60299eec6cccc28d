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
 * the statement sees (src/service_refine.c), and the engine rescores them
 * (REFINE) from the templates the re-check read; the top k by the refined
 * score are the answer, as on the backend path.
 *
 * Whenever the service cannot answer, mcc.fallback decides between a silent
 * backend scan, one with a NOTICE, and an ERROR. Two cases always fall back
 * silently because the backend scan is what defines the answer there: the
 * transaction itself changed the gallery (its own changes reach the engine
 * only at commit), and the gallery holds rows the cache cannot take (other
 * profiles, NULL keys), for which the backend scan raises the proper error.
 */
#include "mcc_pg.h"
#include "service.h"
#include "gallery.h"

#include "access/detoast.h"
#include "access/relation.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/predicate.h"
#include "storage/procarray.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"

#include <math.h>

#include "mcc_hash.h"
#include "refine.h"

#define MAX_ATTEMPTS		3		/* loads per call before giving up */
#define SETTLE_INTERVAL_MS	250		/* between settle exchanges of a gallery */
#define KPRIME_GROWTH		4
#define BATCH_MAX_PROBES	256		/* probes per SEARCH of identify_batch() */
#define BATCH_MAX_BYTES		(16 * 1024 * 1024)	/* ... and their bytes */
#define BATCH_MAX_CANDIDATES 16384	/* ... and their first k' (refining) */
#define REFINE_UNIT			256		/* candidates per mcc.request_timeout, beyond one per probe */

bool		mcc_service_bypass = false;

PG_FUNCTION_INFO_V1(mcc_identify_batch);

/* One candidate of the engine. */
typedef struct candidate
{
	float		score;
	int64		key;
	uint64		hash;
} candidate;

/* The engine's answer for one probe, then the visible hits. */
typedef struct probe_answer
{
	candidate  *cand;			/* a plain search's */
	int			n_cand;
	mcc_rhit   *rc;				/* a refining search's */
	int			n_rc;
	bool		more;
	candidate  *hits;			/* visible, best first, at most k (or n') */
	struct varlena **hit_tpl;	/* refining: the hits' templates */
	int			n_hits;
} probe_answer;

/* One identify() or identify_batch() call. */
typedef struct serve_req
{
	const mcc_gallery *g;
	struct varlena **probes;	/* detoasted */
	int			n_probes;
	int			profile_id;
	int32		k;
	float4		min_score;
	mcc_method	method;			/* MCC_LSS: no refinement */
	int64		want;			/* visible candidates to keep: k, or n' */
	mcc_gallery_ref ref;
	probe_answer *ans;
	uint32		n_unsettled;
	uint64		searchable;		/* the engine's, from the last RESULT */
	uint32		count_state;	/* MCC_COUNT_* of the last RESULT */
	uint64		count_certain;
	mcc_count_group *count_groups;
	uint32		count_n_groups;
	int64		count_rows;		/* n from the count, -1 if none was made */
	bool		in_engine;		/* the engine refined the hits */
	MemoryContext cxt;			/* what serving allocates; the caller deletes it */
} serve_req;

typedef enum search_outcome
{
	SEARCH_DONE,
	SEARCH_RELOAD,				/* the engine needs a (re)load first */
	SEARCH_FALLBACK,			/* per mcc.fallback, with why */
	SEARCH_SILENT,				/* backend scan without a word */
	SEARCH_RECHECKED			/* refine the candidates the backend re-checks */
} search_outcome;

/* Apply mcc.fallback; returns false (scan in the backend) unless it raises. */
static bool
fallback(const char *why)
{
	if (mcc_fallback == MCC_FALLBACK_ERROR)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("matcher service cannot serve identify(): %s", why),
				 errhint("Set mcc.fallback to \"cpu\" or \"notice\" to scan in the backend instead.")));
	if (mcc_fallback == MCC_FALLBACK_NOTICE)
		ereport(NOTICE,
				(errmsg("identify() scans the gallery in the backend: %s", why)));
	return false;
}

/* NULL if the gallery is registered for the columns identify() uses. */
static char *
registration_problem(const mcc_gallery *g)
{
	mcc_registration reg;

	if (g->relkind != RELKIND_RELATION && g->relkind != RELKIND_PARTITIONED_TABLE)
		return psprintf("\"%s\" is not a table", g->relname);
	if (!mcc_registration_get(g->relid, &reg))
		return psprintf("gallery \"%s\" is not registered with mcc_gallery_register()",
						g->relname);
	if (strcmp(reg.id_column, g->key_name) != 0 || strcmp(reg.template_column, g->tpl_name) != 0)
		return psprintf("gallery \"%s\" is registered for columns \"%s\" and \"%s\", not \"%s\" and \"%s\"",
						g->relname, reg.id_column, reg.template_column,
						g->key_name, g->tpl_name);
	return NULL;
}

/* Does a valid unique index on exactly the key column exist? */
static bool
key_is_unique(Oid relid, AttrNumber key_att)
{
	Relation	rel = relation_open(relid, NoLock);
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	bool		unique = false;

	foreach(lc, indexes)
	{
		HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
		Form_pg_index ix;

		if (!HeapTupleIsValid(tup))
			continue;
		ix = (Form_pg_index) GETSTRUCT(tup);
		if (ix->indisunique && ix->indnkeyatts == 1 && ix->indkey.values[0] == key_att &&
			heap_attisnull(tup, Anum_pg_index_indpred, NULL) &&
			heap_attisnull(tup, Anum_pg_index_indexprs, NULL))
			unique = true;
		ReleaseSysCache(tup);
	}
	list_free(indexes);
	relation_close(rel, NoLock);
	return unique;
}

/* Was any of the relations created or given new storage in this transaction? */
static bool
rewritten_in_xact(List *relids)
{
	ListCell   *lc;
	bool		found = false;

	foreach(lc, relids)
	{
		Relation	rel = relation_open(lfirst_oid(lc), NoLock);

		if (rel->rd_createSubid != InvalidSubTransactionId ||
			rel->rd_firstRelfilenodeSubid != InvalidSubTransactionId)
			found = true;
		relation_close(rel, NoLock);
	}
	return found;
}

/* Serializable transactions: the search reads the whole gallery. */
static void
predicate_lock_gallery(List *relids)
{
	ListCell   *lc;

	if (!IsolationIsSerializable())
		return;
	foreach(lc, relids)
	{
		Relation	rel = relation_open(lfirst_oid(lc), NoLock);

		PredicateLockRelation(rel, GetActiveSnapshot());
		relation_close(rel, NoLock);
	}
}

/*
 * The slot's current generation (0 if the slot went away), and the engine's
 * searchable entries as the last search saw them (0 if unknown).
 */
static uint64
current_generation(const mcc_gallery_ref *ref, uint64 *searchable)
{
	uint64		gen;

	if (!mcc_slot_lock(ref->slot, ref->relid, ref->epoch, LW_SHARED))
		return 0;
	gen = mcc_svc->slots[ref->slot].generation;
	*searchable = mcc_svc->slots[ref->slot].searchable;
	LWLockRelease(MCC_SLOT_LOCK(ref->slot));
	return gen;
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
 * Send SEARCH and wait; false on mcc.request_timeout. count_xmin: 0, or ask
 * for the visibility count at this snapshot xmin when more than count_above
 * entries are searchable. in_engine: a refining search (the engine rescores
 * its shortlist; kprime is then the slack of mcc_proto.h).
 */
static bool
send_search(serve_req *r, uint64 gen, uint32 kprime, uint64 count_xmin,
			uint64 count_above, bool in_engine, mcc_reply *reply)
{
	StringInfoData f;
	uint64		id = mcc_conn_next_id();
	int			i;

	mcc_frame_begin(&f);
	mcc_put_gallery(&f, &r->ref.id);
	mcc_put_u64(&f, gen);
	mcc_put_u32(&f, kprime);
	/* refining: every LSS score may refine to one above min_score */
	mcc_put_f32(&f, r->method == MCC_LSS ? r->min_score : 0.0f);
	mcc_put_u64(&f, count_xmin);
	mcc_put_u64(&f, count_above);
	mcc_put_u32(&f, in_engine ? (uint32) r->method : (uint32) MCC_LSS);
	mcc_put_u32(&f, in_engine ? (uint32) r->k : 0);
	mcc_put_f64(&f, in_engine ? mcc_refine_fraction : 0.0);
	mcc_put_u32(&f, in_engine ? (uint32) mcc_refine_min : 0);
	mcc_put_u32(&f, (uint32) r->n_probes);
	for (i = 0; i < r->n_probes; i++)
		mcc_put_bytes(&f, r->probes[i], VARSIZE(r->probes[i]));
	mcc_conn_send(&f, MCC_MSG_SEARCH, id);
	pfree(f.data);
	/* mcc.request_timeout per probe; refining, also per REFINE_UNIT candidates */
	return mcc_conn_wait_reply_units(id, reply, in_engine ?
									 (int) Min((int64) r->n_probes +
											   (int64) r->n_probes * (r->want + kprime) / REFINE_UNIT,
											   INT_MAX / 2) :
									 r->n_probes);
}

/* Parse RESULT's visibility count into r. */
static void
parse_count(serve_req *r, mcc_reader *b)
{
	uint32		n;
	uint32		i;

	r->count_state = mcc_get_u32(b);
	r->count_certain = mcc_get_u64(b);
	n = mcc_get_u32(b);
	if ((size_t) (b->end - b->p) / 24 < n)
		(void) mcc_get_raw(b, (size_t) n * 24);	/* raises: too short */
	r->count_groups = palloc(Max(n, 1) * sizeof(mcc_count_group));
	r->count_n_groups = n;
	for (i = 0; i < n; i++)
	{
		r->count_groups[i].insert_xid = mcc_get_u64(b);
		r->count_groups[i].delete_xid = mcc_get_u64(b);
		r->count_groups[i].flags = mcc_get_u32(b);
		r->count_groups[i].entries = mcc_get_u32(b);
	}
}

/* Parse a probe's rhits (a refining search) into a. */
static void
parse_rhits(probe_answer *a, mcc_reader *b)
{
	uint32		n = mcc_get_u32(b);
	uint32		j;

	if ((size_t) (b->end - b->p) / 40 < n)
		(void) mcc_get_raw(b, (size_t) n * 40);	/* raises: too short */
	a->rc = palloc(Max(n, 1) * sizeof(mcc_rhit));
	a->n_rc = (int) n;
	for (j = 0; j < n; j++)
	{
		a->rc[j].score = mcc_get_f32(b);
		a->rc[j].key = mcc_get_i64(b);
		a->rc[j].hash = mcc_get_u64(b);
		a->rc[j].refined = mcc_get_f32(b);
		a->rc[j].v.insert_xid = mcc_get_u64(b);
		a->rc[j].v.delete_xid = mcc_get_u64(b);
		a->rc[j].v.flags = mcc_get_u32(b);
	}
}

/* Parse a RESULT into r->ans (in_engine: of a refining search). */
static void
parse_result(serve_req *r, mcc_reply *reply, bool in_engine)
{
	mcc_reader *b = &reply->body;
	int			i;

	(void) mcc_get_u64(b);		/* applied generation */
	r->n_unsettled = mcc_get_u32(b);
	r->searchable = mcc_get_u64(b);
	parse_count(r, b);
	if (mcc_get_u32(b) != (uint32) r->n_probes)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("malformed reply from the matcher engine"),
				 errdetail("The result has another number of probes than the request.")));
	for (i = 0; i < r->n_probes; i++)
	{
		probe_answer *a = &r->ans[i];
		uint32		n;
		uint32		j;

		a->more = mcc_get_u32(b) != 0;
		if (in_engine)
		{
			parse_rhits(a, b);
			continue;
		}
		n = mcc_get_u32(b);
		if ((size_t) (b->end - b->p) / 20 < n)
			(void) mcc_get_raw(b, (size_t) n * 20);	/* raises: too short */
		a->cand = palloc(Max(n, 1) * sizeof(candidate));
		a->n_cand = (int) n;
		for (j = 0; j < n; j++)
		{
			a->cand[j].score = mcc_get_f32(b);
			a->cand[j].key = mcc_get_i64(b);
			a->cand[j].hash = mcc_get_u64(b);
		}
	}
}

/* A visible row of the re-check. */
typedef struct visible_row
{
	int64		key;
	uint64		hash;
	struct varlena *tpl;		/* refining: the row's template */
} visible_row;

/* Prepared re-check statements, by query text (kept for the session). */
typedef struct recheck_plan
{
	char	   *sql;
	SPIPlanPtr	plan;
} recheck_plan;

static List *recheck_plans = NIL;

/* The prepared re-check for the gallery. */
static SPIPlanPtr
recheck_plan_for(const mcc_gallery *g)
{
	char	   *sql = psprintf("SELECT %s::pg_catalog.int8, %s FROM %s WHERE %s OPERATOR(pg_catalog.=) ANY ($1)",
							   quote_identifier(g->key_name), quote_identifier(g->tpl_name),
							   g->qualname, quote_identifier(g->key_name));
	Oid			argtype = INT8ARRAYOID;
	ListCell   *lc;
	recheck_plan *p;
	SPIPlanPtr	plan;
	MemoryContext old;

	foreach(lc, recheck_plans)
	{
		p = lfirst(lc);
		if (strcmp(p->sql, sql) == 0)
			return p->plan;
	}
	plan = SPI_prepare(sql, 1, &argtype);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for \"%s\": %s", sql, SPI_result_code_string(SPI_result));
	SPI_keepplan(plan);
	old = MemoryContextSwitchTo(TopMemoryContext);
	p = palloc(sizeof(recheck_plan));
	p->sql = pstrdup(sql);
	p->plan = plan;
	recheck_plans = lappend(recheck_plans, p);
	MemoryContextSwitchTo(old);
	return plan;
}

/* The candidate keys of all probes (repeats allowed) as an int8[] datum. */
static Datum
candidate_keys(serve_req *r, int *n_keys)
{
	int			total = 0;
	int			n = 0;
	int			i;
	int			j;
	Datum	   *keys;

	for (i = 0; i < r->n_probes; i++)
		total += r->ans[i].n_cand;
	keys = palloc(Max(total, 1) * sizeof(Datum));
	for (i = 0; i < r->n_probes; i++)
		for (j = 0; j < r->ans[i].n_cand; j++)
			keys[n++] = Int64GetDatum(r->ans[i].cand[j].key);
	*n_keys = n;
	return PointerGetDatum(construct_array(keys, n, INT8OID, sizeof(int64),
										   FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

/*
 * Which candidate keys the caller can see, with their template hashes (and
 * with keep_tpl their templates), by one indexed query under the caller's
 * snapshot. False if some key has several visible rows (no longer unique):
 * the backend scan must answer.
 */
static bool
recheck(serve_req *r, HTAB *visible, bool keep_tpl)
{
	int			n_keys;
	Datum		arr = candidate_keys(r, &n_keys);
	bool		unique = true;
	uint64		row;
	int			rc;
	MemoryContext outer = CurrentMemoryContext;

	if (n_keys == 0)
		return true;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	rc = SPI_execute_plan(recheck_plan_for(r->g), &arr, NULL, true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "visibility re-check failed: %s", SPI_result_code_string(rc));
	for (row = 0; row < SPI_processed; row++)
	{
		HeapTuple	tup = SPI_tuptable->vals[row];
		bool		isnull;
		int64		key = DatumGetInt64(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));
		Datum		tpl = SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &isnull);
		struct varlena *t;
		visible_row *v;
		bool		found;

		if (isnull)
			continue;
		t = detoast_attr((struct varlena *) DatumGetPointer(tpl));
		v = hash_search(visible, &key, HASH_ENTER, &found);
		if (found)
			unique = false;
		v->hash = mcc_template_hash((const uint8_t *) t, VARSIZE(t));
		v->tpl = NULL;
		if (keep_tpl)
		{
			/* kept for REFINE, outside SPI's memory */
			v->tpl = MemoryContextAlloc(outer, VARSIZE(t));
			memcpy(v->tpl, t, VARSIZE(t));
		}
	}
	SPI_finish();
	return unique;
}

/* Keep each probe's first `want` visible candidates; true if some probe needs more. */
static bool
filter_visible(serve_req *r, HTAB *visible)
{
	bool		need_more = false;
	int			i;

	for (i = 0; i < r->n_probes; i++)
	{
		probe_answer *a = &r->ans[i];
		HASHCTL		ctl;
		HTAB	   *emitted;
		int			j;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(int64);
		ctl.entrysize = sizeof(int64);
		ctl.hcxt = CurrentMemoryContext;
		emitted = hash_create("mcc emitted keys", Max(a->n_cand, 16), &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		a->hits = palloc(Max(Min(a->n_cand, r->want), 1) * sizeof(candidate));
		a->hit_tpl = palloc(Max(Min(a->n_cand, r->want), 1) * sizeof(struct varlena *));
		a->n_hits = 0;
		for (j = 0; j < a->n_cand && a->n_hits < r->want; j++)
		{
			candidate  *c = &a->cand[j];
			visible_row *v = hash_search(visible, &c->key, HASH_FIND, NULL);
			bool		dup;

			if (v == NULL || v->hash != c->hash)
				continue;		/* a version the caller cannot see */
			hash_search(emitted, &c->key, HASH_ENTER, &dup);
			if (!dup)
			{
				a->hit_tpl[a->n_hits] = v->tpl;
				a->hits[a->n_hits++] = *c;
			}
		}
		hash_destroy(emitted);
		if (a->n_hits < r->want && a->more)
			need_more = true;
	}
	return need_more;
}

/* State of the xids the engine holds, per the commit log. */
static void
xid_states(uint64 *xids, uint32 n, StringInfo out, uint32 *n_out)
{
	uint64		next = U64FromFullTransactionId(ReadNextFullTransactionId());
	uint32		i;

	*n_out = 0;
	/* as pg_xact_status() does: the commit log must not be truncated meanwhile */
	LWLockAcquire(XactTruncationLock, LW_SHARED);
	for (i = 0; i < n; i++)
	{
		TransactionId xid = (TransactionId) xids[i];
		uint32		state;

		if (xids[i] == 0 || xids[i] >= next || next - xids[i] >= (UINT64CONST(1) << 31) ||
			TransactionIdPrecedes(xid, ShmemVariableCache->oldestClogXid))
			continue;			/* unknowable: leave as is */
		if (TransactionIdIsInProgress(xid))
			state = MCC_XID_IN_PROGRESS;
		else if (TransactionIdDidCommit(xid))
			state = MCC_XID_COMMITTED;
		else
			state = MCC_XID_ABORTED;
		if (state == MCC_XID_IN_PROGRESS)
			continue;
		mcc_put_u64(out, xids[i]);
		mcc_put_u32(out, state);
		(*n_out)++;
	}
	LWLockRelease(XactTruncationLock);
}

/* Claim the gallery's next settle exchange (one backend at a time, spaced). */
static bool
claim_settle(const mcc_gallery_ref *ref)
{
	mcc_svc_gallery *s = &mcc_svc->slots[ref->slot];
	TimestampTz now = GetCurrentTimestamp();
	bool		due;

	if (!mcc_slot_lock(ref->slot, ref->relid, ref->epoch, LW_EXCLUSIVE))
		return false;
	due = TimestampDifferenceExceeds(s->last_settle, now, SETTLE_INTERVAL_MS);
	if (due)
		s->last_settle = now;
	LWLockRelease(MCC_SLOT_LOCK(ref->slot));
	return due;
}

/*
 * One settle round: ask the engine which xids its entries still carry, and
 * tell it which committed and which aborted, with the horizon below which
 * committed deletions are invisible to every snapshot (those entries are
 * purged). Returns the number of xids the engine listed.
 */
static uint32
settle_round(serve_req *r)
{
	StringInfoData f;
	StringInfoData states;
	mcc_reply	reply;
	uint64		id = mcc_conn_next_id();
	uint64	   *xids;
	uint32		n;
	uint32		i;
	uint32		n_states;
	uint64		horizon;
	Relation	rel;

	mcc_frame_begin(&f);
	mcc_put_gallery(&f, &r->ref.id);
	mcc_conn_send(&f, MCC_MSG_XIDS, id);
	if (!mcc_conn_wait_reply(id, &reply) || reply.type != MCC_MSG_XID_LIST)
		return 0;
	/* the horizon before the states: a purge needs both to hold */
	rel = relation_open(r->ref.relid, NoLock);
	horizon = mcc_full_xid(GetOldestNonRemovableTransactionId(rel));
	relation_close(rel, NoLock);
	n = mcc_get_u32(&reply.body);
	if ((size_t) (reply.body.end - reply.body.p) / 8 < n)
		(void) mcc_get_raw(&reply.body, (size_t) n * 8);
	xids = palloc(Max(n, 1) * sizeof(uint64));
	for (i = 0; i < n; i++)
		xids[i] = mcc_get_u64(&reply.body);
	initStringInfo(&states);
	xid_states(xids, n, &states, &n_states);

	id = mcc_conn_next_id();
	resetStringInfo(&f);
	appendStringInfoSpaces(&f, sizeof(mcc_frame_hdr));
	mcc_put_gallery(&f, &r->ref.id);
	mcc_put_u64(&f, horizon);
	mcc_put_u32(&f, n_states);
	appendBinaryStringInfo(&f, states.data, states.len);
	mcc_conn_send(&f, MCC_MSG_SETTLE, id);
	(void) mcc_conn_wait_reply(id, &reply);
	return n_states > 0 ? n : 0;
}

/* Settle the gallery's entries if due (a full XID_LIST asks for another round). */
static void
settle(serve_req *r)
{
	int			round;

	if (r->n_unsettled == 0 || !claim_settle(&r->ref))
		return;
	for (round = 0; round < 4; round++)
		if (settle_round(r) < MCC_PROTO_MAX_XIDS)
			break;
}

/*
 * What a SEARCH's ERROR reply means: reload, or fall back (why set); other
 * errors raise.
 */
static search_outcome
search_error(const mcc_reply *reply, char **why)
{
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
 * Refining: n' from the first RESULT. Its count is absent when the engine
 * holds no more than mcc_refine_flat_limit() entries: every statement then
 * sees at most that many rows, so n' is min(n, max(mcc.refine_min, k)), and
 * keeping that many visible candidates (all, if fewer) is exactly n'.
 */
static void
set_shortlist_size(serve_req *r)
{
	int64		n;

	switch (r->count_state)
	{
		case MCC_COUNT_DONE:
			n = (int64) mcc_count_visible(r->count_certain, r->count_groups,
										  r->count_n_groups, GetActiveSnapshot());
			break;
		case MCC_COUNT_OVERFLOW:
			n = mcc_count_rows(r->g);	/* too many recent versions to judge */
			break;
		default:
			r->want = Max((int64) mcc_refine_min, (int64) r->k);
			r->count_rows = -1;
			return;
	}
	r->want = mcc_refine_shortlist(n, r->k);
	r->count_rows = n;
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
	uint64		gen = current_generation(&r->ref, &known);
	uint64		kprime;
	uint64		count_xmin = 0;
	uint64		count_above = 0;

	if (gen == 0)
		return SEARCH_RELOAD;
	r->want = r->k;
	if (r->method != MCC_LSS)
	{
		int64		flat = Max((int64) mcc_refine_min, (int64) r->k);
		int64		limit = mcc_refine_flat_limit(r->k);

		/* n' as the last search's entries suggest, until the count says (none: flat) */
		r->want = mcc_refine_shortlist(Max((int64) Min(known, (uint64) PG_INT64_MAX), flat), r->k);
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
		if (reply.type == MCC_MSG_ERROR)
			return search_error(&reply, why);
		if (reply.type != MCC_MSG_RESULT)
			mcc_raise_engine_error(&reply);
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
		need_more = filter_visible(r, visible);
		hash_destroy(visible);
		if (!need_more || kprime >= PG_UINT32_MAX)
			break;
		kprime = Max(kprime * KPRIME_GROWTH, (uint64) r->want * 2 + 8);
	}
	note_searchable(&r->ref, known, r->searchable);
	settle(r);
	return SEARCH_DONE;
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
	if (!mcc_service_refine(jobs, r->n_probes, r->method, why))
		return false;
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
	if (!recheck(r, visible, false))
		return false;
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
	int64		n_kept;
	int64		i;
	int64		j;
	mcc_pick_result pr;

	pr = mcc_pick_refined(a->rc, a->n_rc, a->more, r->want, n_rows, GetActiveSnapshot(),
						  kept, kept_hash, &n_kept, why);
	if (pr != MCC_PICK_DONE)
		return pr;
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
	uint64		gen = current_generation(&r->ref, &known);
	int64		flat = Max((int64) mcc_refine_min, (int64) r->k);
	int64		limit = mcc_refine_flat_limit(r->k);
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
	r->want = mcc_refine_shortlist(Max((int64) Min(known, (uint64) PG_INT64_MAX), flat), r->k);
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
		if (reply.type == MCC_MSG_ERROR)
			return search_error(&reply, why);
		if (reply.type != MCC_MSG_RESULT)
			mcc_raise_engine_error(&reply);
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
					refined += r->ans[i].n_rc;
					break;
				case MCC_PICK_MORE:
					need_more = true;
					break;
				case MCC_PICK_DISAGREE:
					break;
			}
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
	note_searchable(&r->ref, known, r->searchable);
	settle(r);
	return SEARCH_DONE;
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
	if (!key_is_unique(g->relid, g->key_att))
		return psprintf("column \"%s\" of \"%s\" has no unique index", g->key_name, g->relname);
	if (mcc_xact_changed_gallery(g->relid) || rewritten_in_xact(r->ref.relids))
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

/* The probes' common profile, or -1 if they differ. */
static int
probes_profile(struct varlena **probes, int n)
{
	int			profile = ((uint8 *) probes[0])[5];
	int			i;

	for (i = 1; i < n; i++)
		if (((uint8 *) probes[i])[5] != profile)
			return -1;
	return profile;
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
	if (mcc_svc == NULL)
		return fallback("mcc is not in shared_preload_libraries");
	if ((why = registration_problem(r->g)) != NULL)
		return fallback(why);
	if (check_enable_rls(r->g->relid, InvalidOid, false) == RLS_ENABLED)
		return fallback("row-level security is active for the gallery");
	if ((r->profile_id = probes_profile(r->probes, r->n_probes)) < 0)
		return false;			/* the backend compares each probe on its own */
	if ((why = prepare_ref(r, &silent)) != NULL)
		return silent ? false : fallback(why);
	predicate_lock_gallery(r->ref.relids);
	r->ans = palloc0(r->n_probes * sizeof(probe_answer));

	for (attempt = 0; attempt < MAX_ATTEMPTS; attempt++)
	{
		if (mcc_conn_ensure(&why) != MCC_CONN_OK)
			return fallback(why);
		if (!ensure_loaded(r, &silent, &why))
			return silent ? false : fallback(why);
		if (RecoveryInProgress())
		{
			/* a hot standby: the change log brings what triggers bring elsewhere */
			mcc_catchup_result c = mcc_standby_catch_up(&r->ref, &why);

			if (c == MCC_CATCHUP_FAILED)
				return fallback(why);
			if (c == MCC_CATCHUP_RELOAD)
				continue;
		}
		outcome = r->method != MCC_LSS && mcc_refine_in_engine ?
			search_refined(r, &why) : SEARCH_RECHECKED;
		if (outcome == SEARCH_RECHECKED)
			outcome = search_visible(r, &why);
		switch (outcome)
		{
			case SEARCH_DONE:
				if (r->method != MCC_LSS && !r->in_engine && !refine_hits(r, &why))
					return fallback(why);
				return true;
			case SEARCH_SILENT:
				return false;
			case SEARCH_FALLBACK:
				return fallback(why);
			case SEARCH_RELOAD:
				mcc_slot_mark_reload(&r->ref);
				break;
			case SEARCH_RECHECKED:
				break;			/* search_visible never says it */
		}
	}
	return fallback("the matcher engine asked for reloads repeatedly");
}

/*
 * Serve r through the service. True with r->ans filled; false to scan in
 * the backend (mcc.fallback has had its say). What it allocates is in
 * r->cxt, which the caller deletes when done with r->ans.
 */
static bool
serve(serve_req *r)
{
	MemoryContext old;
	bool		ok;

	r->cxt = AllocSetContextCreate(CurrentMemoryContext, "mcc service request",
								   ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(r->cxt);
	ok = serve_in(r);
	MemoryContextSwitchTo(old);
	return ok;
}

/* Detoasted probe, validated. */
static struct varlena *
checked_probe(Datum d)
{
	struct varlena *t = (struct varlena *) PG_DETOAST_DATUM(d);
	mcc_template_view v;

	mcc_pg_open(t, &v);
	return t;
}

/* identify() through the service (called from src/identify.c). */
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

	memset(&r, 0, sizeof(r));
	r.g = g;
	r.probes = &p;
	r.n_probes = 1;
	r.k = k;
	r.min_score = min_score;
	r.method = (mcc_method) method;
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

/* Append one probe's hits to the batch result. */
static void
put_hits(ReturnSetInfo *rsinfo, int probe_no, const candidate *hits, int n)
{
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	int			i;

	for (i = 0; i < n; i++)
	{
		values[0] = Int32GetDatum(probe_no);
		values[1] = Int64GetDatum(hits[i].key);
		values[2] = Float4GetDatum(hits[i].score);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/*
 * Probes without the service: identify() per probe through SPI, with the
 * service bypassed (mcc.fallback has already spoken for them); first_no is
 * the probe number of probes[0].
 */
static void
batch_in_backend(FunctionCallInfo fcinfo, Oid tpltype, struct varlena **probes, int n,
				 int first_no)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			types[7] = {REGCLASSOID, tpltype, INT4OID, FLOAT4OID, NAMEOID, NAMEOID, TEXTOID};
	Datum		args[7];
	char		nulls[8] = "       ";
	char	   *sql;
	int			i;

	/* identify()'s arguments are identify_batch()'s, in the same order */
	sql = psprintf("SELECT id, score FROM %s.identify($1, $2, $3, $4, $5, $6, $7)",
				   quote_identifier(get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid))));
	args[0] = PG_GETARG_DATUM(0);
	args[2] = PG_GETARG_DATUM(2);
	args[3] = PG_GETARG_DATUM(3);
	for (i = 4; i < 7; i++)
	{
		args[i] = PG_ARGISNULL(i) ? (Datum) 0 : PG_GETARG_DATUM(i);
		nulls[i] = PG_ARGISNULL(i) ? 'n' : ' ';
	}
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	PG_TRY();
	{
		mcc_service_bypass = true;
		for (i = 0; i < n; i++)
		{
			uint64		row;

			args[1] = PointerGetDatum(probes[i]);
			if (SPI_execute_with_args(sql, 7, types, args, nulls, true, 0) != SPI_OK_SELECT)
				elog(ERROR, "identify() failed for probe %d", i + 1);
			for (row = 0; row < SPI_processed; row++)
			{
				HeapTuple	tup = SPI_tuptable->vals[row];
				bool		isnull;
				candidate	c;

				c.key = DatumGetInt64(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));
				c.score = DatumGetFloat4(SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &isnull));
				put_hits(rsinfo, first_no + i, &c, 1);
			}
			SPI_freetuptable(SPI_tuptable);
		}
	}
	PG_FINALLY();
	{
		mcc_service_bypass = false;
	}
	PG_END_TRY();
	SPI_finish();
}

/* Raise 22004 for a NULL argument of identify_batch(). */
static void
batch_null(const char *name)
{
	ereport(ERROR,
			(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
			 errmsg("%s of identify_batch() must not be null", name)));
}

/* The probes of the array, detoasted and validated. */
static struct varlena **
batch_probes(ArrayType *arr, int *n)
{
	Datum	   *elems;
	bool	   *nulls;
	struct varlena **probes;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	int			i;

	get_typlenbyvalalign(ARR_ELEMTYPE(arr), &typlen, &typbyval, &typalign);
	deconstruct_array(arr, ARR_ELEMTYPE(arr), typlen, typbyval, typalign, &elems, &nulls, n);
	probes = palloc(Max(*n, 1) * sizeof(struct varlena *));
	for (i = 0; i < *n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("probe %d of identify_batch() is null", i + 1)));
		probes[i] = checked_probe(elems[i]);
	}
	return probes;
}

/*
 * End of the chunk of probes that starts at first: one SEARCH's worth, with
 * at most max_probes probes.
 */
static int
chunk_end(struct varlena **probes, int first, int n, int max_probes)
{
	size_t		bytes = 0;
	int			i;

	for (i = first; i < n && i - first < max_probes; i++)
	{
		bytes += VARSIZE(probes[i]);
		if (i > first && bytes > BATCH_MAX_BYTES)
			break;
	}
	return i;
}

/*
 * identify_batch(gallery regclass, probes mcc_template[], k int, min_score
 * real, id_column name, template_column name, refine text)
 * RETURNS TABLE(probe_no int, id bigint, score real)
 *
 * The probes go to the engine in batches of up to BATCH_MAX_PROBES: one
 * pass over the gallery serves a batch. When refining, a batch is smaller,
 * so that the templates its re-check keeps for REFINE stay near
 * BATCH_MAX_CANDIDATES. probe_no is the 1-based position in the array.
 */
Datum
mcc_identify_batch(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	serve_req	r;
	mcc_gallery gallery;
	ArrayType  *arr;
	int			first;
	int			end;
	int			max_probes = BATCH_MAX_PROBES;
	int			i;

	if (PG_ARGISNULL(0))
		batch_null("gallery");
	if (PG_ARGISNULL(1))
		batch_null("probes");
	if (PG_ARGISNULL(2))
		batch_null("k");
	if (PG_ARGISNULL(3))
		batch_null("min_score");
	memset(&r, 0, sizeof(r));
	r.k = PG_GETARG_INT32(2);
	r.min_score = PG_GETARG_FLOAT4(3);
	if (r.k <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be greater than zero"),
				 errdetail("k is %d.", r.k)));
	if (isnan(r.min_score) || r.min_score < 0.0f || r.min_score > 1.0f)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("min_score must be between 0 and 1"),
				 errdetail("Scores lie in [0, 1]; min_score is %g.", r.min_score)));
	r.method = mcc_refine_arg(PG_GETARG_DATUM(6), PG_ARGISNULL(6), "identify_batch()");
	if (r.method != MCC_LSS)
		max_probes = (int) Max(1, Min((int64) BATCH_MAX_PROBES, BATCH_MAX_CANDIDATES /
									  (2 * Max((int64) mcc_refine_min, (int64) r.k) + 8)));
	arr = PG_GETARG_ARRAYTYPE_P(1);
	r.probes = batch_probes(arr, &r.n_probes);
	mcc_gallery_resolve(PG_GETARG_OID(0),
						PG_ARGISNULL(4) ? NULL : NameStr(*PG_GETARG_NAME(4)),
						PG_ARGISNULL(5) ? NULL : NameStr(*PG_GETARG_NAME(5)),
						&gallery);
	r.g = &gallery;

	InitMaterializedSRF(fcinfo, 0);
	for (first = 0; first < r.n_probes; first = end)
	{
		serve_req	c = r;

		end = chunk_end(r.probes, first, r.n_probes, max_probes);
		c.probes = r.probes + first;
		c.n_probes = end - first;
		if (!serve(&c))
		{
			MemoryContextDelete(c.cxt);
			batch_in_backend(fcinfo, ARR_ELEMTYPE(arr), c.probes, c.n_probes, first + 1);
			continue;
		}
		for (i = 0; i < c.n_probes; i++)
			put_hits(rsinfo, first + i + 1, c.ans[i].hits, c.ans[i].n_hits);
		MemoryContextDelete(c.cxt);
	}
	return (Datum) 0;
}
