/*
 * service_load.c: full load of a gallery into the engine's cache.
 *
 * The cache holds tuple versions, not rows (docs/matcher-service.md). A load
 * therefore scans every partition's heap with SnapshotAny and keeps each
 * tuple that HeapTupleSatisfiesVacuum does not call dead to everyone, with
 * its inserting xid and, when it is being or was recently deleted, its
 * deleting xid. Every snapshot in the system sees a subset of those
 * versions, so the caller's visibility re-check after a search picks exactly
 * its rows.
 *
 * Order matters: the horizon is read before the generation L the load
 * claims, and L before the scan starts. A transaction that commits a change
 * at a generation above L is then still running when the horizon is read
 * (or starts later), so its xids are at or above the horizon; versions
 * older than the horizon can be sent as "settled" (xid 0) without ever
 * colliding with a delta above L, which the engine applies on top.
 *
 * Loads of one gallery are serialized with a heavyweight lock (an advisory
 * tag of the service's own, MCC_LOCK_LOAD, which a hot standby allows):
 * waiting for it is interruptible and its holder's crash releases it. Any
 * error between LOAD_BEGIN and the engine's answer closes the connection,
 * which makes the engine abandon the load.
 *
 * Memory: a load that must replace the cache (it needs a reload) tells the
 * engine that the current copy may give way (MCC_LOAD_REPLACE), so that a
 * gallery never needs room for two copies to reload; a forced refresh of a
 * current cache keeps serving the current copy when the second does not
 * fit (MCC_LOAD_KEPT).
 *
 * Progress: the slot records the load's rows and heap blocks so far, for
 * mcc_gallery_status; an interactive mcc_gallery_preload() also gets a
 * NOTICE every mcc.progress_interval.
 *
 * A load that checks the engine's cache snapshot first is in
 * src/service/service_load_check.c, the parallel readers in
 * service_load_parallel.c, and the reading of rows into LOAD_ROWS frames
 * that they all share in service_load_rows.c; they share
 * src/service/service_load.h.
 */
#include "mcc_pg.h"
#include "service.h"
#include "service_load.h"
#include "gallery.h"
#include "mcc_match.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/tableam.h"
#include "access/detoast.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "access/transam.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "storage/procarray.h"
#include "tcop/tcopprot.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#define LOAD_RETRY_MS		10000	/* after a load over the memory limit */


/* Relations, columns and signature of gallery g. */
void
mcc_gallery_ref_init(mcc_gallery_ref *ref, const mcc_gallery *g)
{
	mcc_registration reg;

	memset(ref, 0, sizeof(*ref));
	ref->relid = g->relid;
	ref->relids = mcc_gallery_relations(g->relid);
	ref->key_name = g->key_name;
	ref->tpl_name = g->tpl_name;
	ref->key_att = g->key_att;
	ref->tpl_att = g->tpl_att;
	ref->id.db_oid = MyDatabaseId;
	ref->id.rel_oid = g->relid;
	ref->id.signature = mcc_gallery_signature(ref->relids, g->key_att, g->tpl_att);
	ref->priority = mcc_registration_get(g->relid, &reg) ? reg.priority : 0;
	ref->slot = -1;
}

/* Find or make the gallery's slot; false if none can be had. */
bool
mcc_gallery_ref_slot(mcc_gallery_ref *ref)
{
	mcc_slot_victim victim;

	ref->slot = mcc_slot_acquire(ref->relid, ref->priority, &ref->epoch, &victim);
	if (OidIsValid(victim.db))
	{
		/* its cache would hold memory nobody tracks */
		ereport(DEBUG1,
				(errmsg_internal("mcc: gallery %u of database %u gave its slot to gallery %u",
								 victim.rel, victim.db, ref->relid)));
		mcc_service_evict_engine(victim.db, victim.rel);
	}
	return ref->slot >= 0;
}

/* Does the slot say that a load is needed? */
bool
mcc_slot_needs_load(const mcc_gallery_ref *g, int profile_id)
{
	mcc_svc_gallery *s = &mcc_svc->slots[g->slot];
	bool		need;
	bool		stale_mode;

	if (!mcc_slot_lock(g->slot, g->relid, g->epoch, LW_SHARED))
		return true;
	need = s->loaded_gen == 0 || s->reload_gen > s->loaded_gen ||
		s->loaded_incarnation != mcc_conn_incarnation() ||
		s->loaded_signature != g->id.signature ||
		(profile_id != 0 && s->profile_id != profile_id);
	/* a cache fed from the change log serves only during recovery */
	stale_mode = !need && s->log_fed != RecoveryInProgress();
	LWLockRelease(MCC_SLOT_LOCK(g->slot));
	if (stale_mode)
		mcc_slot_force_reload(g);
	return need || stale_mode;
}

/*
 * A reload at a new generation: the load then claims a generation above
 * everything the current cache applied, so the engine does not keep the
 * current cache as newer ("superseded").
 */
void
mcc_slot_force_reload(const mcc_gallery_ref *g)
{
	mcc_svc_gallery *s = &mcc_svc->slots[g->slot];

	if (!mcc_slot_lock(g->slot, g->relid, g->epoch, LW_EXCLUSIVE))
		return;
	s->reload_gen = ++s->generation;
	LWLockRelease(MCC_SLOT_LOCK(g->slot));
}

/* Forget that the slot's cache is loaded (the engine lost or refused it). */
void
mcc_slot_mark_reload(const mcc_gallery_ref *g)
{
	if (!mcc_slot_lock(g->slot, g->relid, g->epoch, LW_EXCLUSIVE))
		return;
	mcc_svc->slots[g->slot].loaded_gen = 0;
	LWLockRelease(MCC_SLOT_LOCK(g->slot));
}

/* The gallery's relations by OID, whose positions make the tids' ordinals. */
static void
relation_order(load_state *st)
{
	ListCell   *lc;
	int			n = 0;

	st->rel_order = palloc(sizeof(Oid) * Max(list_length(st->g->relids), 1));
	foreach(lc, st->g->relids)
		st->rel_order[n++] = lfirst_oid(lc);
	qsort(st->rel_order, n, sizeof(Oid), oid_cmp);
	st->n_rel_order = n;
}

/* relid's ordinal, shifted into a tid's top 16 bits. */
uint64
mcc_load_relation_ordinal(const load_state *st, Oid relid)
{
	for (int i = 0; i < st->n_rel_order; i++)
		if (st->rel_order[i] == relid)
			return (uint64) i << 48;
	elog(ERROR, "relation %u is not part of the gallery", relid);
	return 0;
}

/*
 * What a load will read: the rows the planner expects in the gallery (a
 * hint for the engine, 0 when never analyzed) and its tables' heap blocks.
 */
static void
gallery_size(List *relids, uint64 *rows, uint64 *blocks)
{
	double		total = 0;
	ListCell   *lc;

	*blocks = 0;
	foreach(lc, relids)
	{
		Relation	rel = relation_open(lfirst_oid(lc), NoLock);

		/*
		 * Only tables with storage: ANALYZE gives a partitioned table the
		 * sum of its partitions' rows, which would count them twice.
		 */
		if (rel->rd_rel->relkind == RELKIND_RELATION)
		{
			if (rel->rd_rel->reltuples > 0)
				total += rel->rd_rel->reltuples;
			*blocks += RelationGetNumberOfBlocks(rel);
		}
		relation_close(rel, NoLock);
	}
	*rows = (uint64) total;
}

/* The slot's generation: what a load claims, and what identify() checks. */
uint64
mcc_slot_generation(const mcc_gallery_ref *g, uint64 *searchable)
{
	uint64		gen;

	if (!mcc_slot_lock(g->slot, g->relid, g->epoch, LW_SHARED))
		return 0;
	gen = mcc_svc->slots[g->slot].generation;
	if (searchable != NULL)
		*searchable = mcc_svc->slots[g->slot].searchable;
	LWLockRelease(MCC_SLOT_LOCK(g->slot));
	return gen;
}

/*
 * Record a completed load in the slot; log_head: the change log position it
 * claimed during recovery (src/service/service_standby.c), else 0.
 */
static void
slot_loaded(const mcc_gallery_ref *g, uint64 gen, int profile_id, bool in_recovery,
			uint64 log_head)
{
	mcc_svc_gallery *s = &mcc_svc->slots[g->slot];

	if (!mcc_slot_lock(g->slot, g->relid, g->epoch, LW_EXCLUSIVE))
		return;
	s->loaded_gen = gen;
	s->log_fed = in_recovery;
	s->log_applied = log_head;
	s->loaded_incarnation = mcc_conn_incarnation();
	s->loaded_signature = g->id.signature;
	s->profile_id = profile_id;
	s->retry_load_after = 0;
	LWLockRelease(MCC_SLOT_LOCK(g->slot));
}

/* Remember a load refused for memory, so that others do not retry at once. */
static void
slot_load_refused(const mcc_gallery_ref *g)
{
	if (!mcc_slot_lock(g->slot, g->relid, g->epoch, LW_EXCLUSIVE))
		return;
	mcc_svc->slots[g->slot].retry_load_after =
		TimestampTzPlusMilliseconds(GetCurrentTimestamp(), LOAD_RETRY_MS);
	mcc_svc->slots[g->slot].loaded_gen = 0;
	LWLockRelease(MCC_SLOT_LOCK(g->slot));
}

bool
mcc_load_send_wait(load_state *st, uint16 type, const char *what, mcc_reply *reply)
{
	StringInfoData f;

	mcc_frame_begin(&f);
	mcc_conn_send(&f, type, st->request_id);
	pfree(f.data);
	if (mcc_conn_wait_reply(st->request_id, reply))
		return true;
	st->result = MCC_LOAD_UNAVAILABLE;
	st->why = psprintf("the matcher engine did not %s within mcc.request_timeout", what);
	return false;
}

/* Send the last rows and LOAD_END; the engine's answer in *reply. */
bool
mcc_load_finish(load_state *st, mcc_reply *reply)
{
	if (!st->begun)
		mcc_load_send_begin(st);			/* an empty gallery */
	/* a joinable load that got no row: the engine takes the default too */
	if (st->profile_id == 0)
		st->profile_id = MCC_PROFILE_DEFAULT;
	mcc_load_rows_flush(st);
	return mcc_load_send_wait(st, MCC_MSG_LOAD_END, "finish the load", reply);
}

/* Send LOAD_BEGIN, every row, LOAD_END; the engine's answer in *reply. */
static bool
stream_load(load_state *st, mcc_reply *reply)
{
	ListCell   *lc;
	int			nworkers;

	if (st->snapshot)
	{
		bool		full;

		if (!mcc_load_stream_snapshot(st, reply, &full))
			return false;
		if (!full)
			return true;
		/* the engine dropped that load: start a full one */
		st->snapshot = false;
		st->flags &= ~MCC_LOAD_SNAPSHOT;
		st->begun = false;
		st->request_id = mcc_conn_next_id();
		st->prog.blocks_before = 0;
	}
	mcc_load_rows_frame_begin(st);
	nworkers = mcc_load_parallel_workers(st);
	if (nworkers > 0)
	{
		/* several readers; then the rows they left to us */
		bool		serial;

		if (!mcc_load_parallel(st, nworkers, &serial))
			return false;
		if (!serial)
			return mcc_load_deferred(st) && mcc_load_finish(st, reply);
	}
	foreach(lc, st->g->relids)
		if (!mcc_load_relation(st, lfirst_oid(lc)))
			return false;
	return mcc_load_finish(st, reply);
}

/* Run the load; any error in the middle abandons it by closing the connection. */
static bool
stream_load_guarded(load_state *st, mcc_reply *reply)
{
	volatile bool ok = false;

	PG_TRY();
	{
		ok = stream_load(st, reply);
	}
	PG_CATCH();
	{
		mcc_conn_close();
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (!ok)
		mcc_conn_close();
	return ok;
}

/*
 * Does the engine hold a cache of the gallery? A SEARCH without probes for
 * generation 0 answers at once: RESULT if it does, NOT_LOADED if not.
 */
static bool
engine_holds_cache(const mcc_gallery_ref *g)
{
	StringInfoData f;
	uint64		id = mcc_conn_next_id();
	mcc_reply	reply;

	mcc_frame_begin(&f);
	mcc_put_gallery(&f, &g->id);
	mcc_put_u64(&f, 0);			/* need_generation */
	mcc_put_u32(&f, 0);			/* k */
	mcc_put_f32(&f, 0);			/* min_score */
	mcc_put_u64(&f, 0);			/* count_xmin */
	mcc_put_u64(&f, 0);			/* count_above */
	mcc_put_u32(&f, (uint32) MCC_LSS);	/* refine: none (a plain search) */
	mcc_put_u32(&f, 0);			/* final_k */
	mcc_put_f64(&f, 0.0);		/* fraction */
	mcc_put_u32(&f, 0);			/* refine_min */
	mcc_put_u32(&f, 0);			/* n_probes */
	mcc_conn_send(&f, MCC_MSG_SEARCH, id);
	pfree(f.data);
	return mcc_conn_wait_reply(id, &reply) && reply.type == MCC_MSG_RESULT;
}

/* The last full load's count of the rows the caller's snapshot sees (mcc_load_visible_rows). */
static struct
{
	bool		valid;
	Oid			relid;
	Snapshot	snap;
	CommandId	curcid;
	uint64		rows;
} last_visible;

/*
 * May the load's scan count the rows the caller's snapshot sees, in place
 * of SELECT count(*) FROM g WHERE template IS NOT NULL? When that query
 * would read exactly the heaps the load scans, under that snapshot: one
 * plain table without children, or a partitioned table (the query reads
 * every partition's heap, checking the privileges and row-level security
 * of the table named only; the load's relations are the whole tree, the
 * table first), readable by the caller, with no row-level security
 * applying to it. At 100 M rows the query was a third of a preload.
 */
static bool
may_count_visible(const mcc_gallery_ref *g)
{
	Oid			relid = g->relid;
	char		kind = get_rel_relkind(relid);
	bool		heaps;

	if (kind == RELKIND_RELATION)
		heaps = list_length(g->relids) == 1 && !has_subclass(relid);
	else
		heaps = kind == RELKIND_PARTITIONED_TABLE;
	return heaps && ActiveSnapshotSet() && IsMVCCSnapshot(GetActiveSnapshot()) &&
		linitial_oid(g->relids) == relid &&
		pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) == ACLCHECK_OK &&
		check_enable_rls(relid, InvalidOid, true) != RLS_ENABLED;
}

void
mcc_load_visible_forget(void)
{
	last_visible.valid = false;
}

bool
mcc_load_visible_rows(Oid relid, uint64 *rows)
{
	bool		ok = last_visible.valid && last_visible.relid == relid &&
		ActiveSnapshotSet() && GetActiveSnapshot() == last_visible.snap &&
		last_visible.snap->curcid == last_visible.curcid;

	last_visible.valid = false;
	if (ok)
		*rows = last_visible.rows;
	return ok;
}

/* The load itself, with the load lock held; replace: the current cache may give way. */
static mcc_load_result
load_locked(mcc_gallery_ref *g, int profile_id, int opts, bool replace, uint64 *entries,
			char **why)
{
	static bool watching = false;
	load_state	st;
	mcc_reply	reply;
	Relation	rel;
	volatile bool ok = false;

	if (mcc_conn_ensure(why) != MCC_CONN_OK)
		return MCC_LOAD_UNAVAILABLE;
	memset(&st, 0, sizeof(st));
	st.g = g;
	st.profile_id = profile_id;
	st.request_id = mcc_conn_next_id();
	st.cxt = CurrentMemoryContext;
	st.flags = replace ? MCC_LOAD_REPLACE : 0;
	st.pin_xmin = ActiveSnapshotSet() ? GetActiveSnapshot()->xmin : InvalidTransactionId;
	relation_order(&st);
	/* tuple ids keep a relation's ordinal in 16 bits */
	if (mcc_cache_snapshots && st.n_rel_order <= 0xFFFF)
		st.flags |= MCC_LOAD_IDS;
	/* a cache that must be loaded anyway may come from the engine's snapshot */
	if (replace && (st.flags & MCC_LOAD_IDS) && mcc_load_engine_has_snapshot(g, &st.profile_id))
	{
		st.snapshot = true;
		st.flags |= MCC_LOAD_SNAPSHOT;
	}
	if (!st.snapshot && may_count_visible(g))
	{
		st.count_visible = true;
		st.count_snap = GetActiveSnapshot();
	}
	/* horizon first, then the generation: see the file comment */
	rel = relation_open(g->relid, NoLock);
	st.horizon = GetOldestNonRemovableTransactionId(rel);
	relation_close(rel, NoLock);
	st.gen = mcc_slot_generation(g, NULL);	/* the generation the load claims */
	if (st.gen == 0)
	{
		*why = pstrdup("the gallery's slot was freed during the load");
		return MCC_LOAD_UNAVAILABLE;
	}
	/*
	 * Before the scan: the WAL position that every later change of a page
	 * passes, and the next xid (a snapshot's proofs, docs/matcher-service.md)
	 */
	st.scan_lsn = RecoveryInProgress() ? 0 : (uint64) GetXLogInsertRecPtr();
	st.next_xid = U64FromFullTransactionId(ReadNextFullTransactionId());
	/* on a hot standby the change log's head plays the generation's part */
	st.in_recovery = RecoveryInProgress();
	if (st.in_recovery)
	{
		Oid			log = mcc_extension_relation("mcc_change_log");

		if (!OidIsValid(log))
		{
			*why = pstrdup("the extension has no change log to feed a standby (ALTER EXTENSION mcc UPDATE on the primary)");
			return MCC_LOAD_UNAVAILABLE;
		}
		st.log_head = mcc_changelog_head(log, g->relid);
	}
	st.prog.notices = (opts & MCC_LOADOPT_PROGRESS) && whereToSendOutput == DestRemote &&
		client_min_messages <= NOTICE;
	st.prog.started = st.prog.last_notice = GetCurrentTimestamp();
	gallery_size(g->relids, &st.prog.rows_expected, &st.prog.blocks_total);
	if (!watching)
	{
		before_shmem_exit(mcc_load_forget_own, 0);
		watching = true;
	}
	mcc_load_slot_progress(&st, false);
	PG_TRY();
	{
		ok = stream_load_guarded(&st, &reply);
	}
	PG_FINALLY();
	{
		mcc_load_slot_progress(&st, true);
	}
	PG_END_TRY();
	if (!ok)
	{
		*why = st.why;
		return st.result;
	}
	if (reply.type == MCC_MSG_ERROR && reply.err_code == MCC_PERR_MEMORY)
	{
		/* a refresh of a current cache that did not fit beside it: that one stays */
		if (!replace && engine_holds_cache(g))
		{
			*why = psprintf("a second copy does not fit in mcc.cache_memory_limit beside the current cache, which stays: %s",
							reply.err_message);
			return MCC_LOAD_KEPT;
		}
		slot_load_refused(g);
		*why = psprintf("the gallery does not fit in mcc.cache_memory_limit: %s",
						reply.err_message);
		return MCC_LOAD_MEMORY;
	}
	if (reply.type != MCC_MSG_LOADED)
		mcc_raise_engine_error(&reply);
	*entries = mcc_get_u64(&reply.body);
	slot_loaded(g, st.gen, st.profile_id, st.in_recovery, st.log_head);
	if (st.count_visible)
	{
		last_visible.valid = true;
		last_visible.relid = g->relid;
		last_visible.snap = st.count_snap;
		last_visible.curcid = st.count_snap->curcid;
		last_visible.rows = st.visible;
	}
	if (st.prog.noticed)
	{
		double		secs = (double) (GetCurrentTimestamp() - st.prog.started) / USECS_PER_SEC;

		ereport(NOTICE,
				(errmsg("gallery \"%s\": " UINT64_FORMAT " rows loaded in %.1f s (%.0f rows/s)",
						get_rel_name(g->relid), st.rows_sent, secs,
						secs > 0 ? st.rows_sent / secs : 0)));
	}
	elog(DEBUG1, "mcc: loaded gallery %u at generation " UINT64_FORMAT ": " UINT64_FORMAT
		 " rows sent, " UINT64_FORMAT " read in a subtransaction, " UINT64_FORMAT " vanished",
		 g->relid, st.gen, st.rows_sent, st.guarded, st.vanished);
	if (st.snapshot)
		ereport(LOG,
				(errmsg("mcc: gallery \"%s\" served from its cache snapshot: " UINT64_FORMAT
						" tuple headers checked, " UINT64_FORMAT " rows read from the table",
						get_rel_name(g->relid), st.heads, st.rows_sent)));
	return MCC_LOAD_OK;
}

/* The lock tag of one of the service's locks on gallery relid. */
static void
gallery_locktag(LOCKTAG *tag, Oid relid, uint16 which)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, relid, 0, which);
}

void
mcc_gallery_lock(Oid relid, uint16 which)
{
	LOCKTAG		tag;

	gallery_locktag(&tag, relid, which);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

void
mcc_gallery_unlock(Oid relid, uint16 which)
{
	LOCKTAG		tag;

	gallery_locktag(&tag, relid, which);
	LockRelease(&tag, ExclusiveLock, false);
}

/* Load the gallery unless (without MCC_LOADOPT_FORCE) a current cache exists. */
mcc_load_result
mcc_gallery_load(mcc_gallery_ref *g, int profile_id, int opts,
				 uint64 *entries, char **why)
{
	mcc_load_result res;
	bool		needed;

	*entries = 0;
	*why = NULL;
	mcc_gallery_lock(g->relid, MCC_LOCK_LOAD);
	needed = mcc_slot_needs_load(g, profile_id);
	if (!needed && !(opts & MCC_LOADOPT_FORCE))
		res = MCC_LOAD_SKIPPED;
	else
		res = load_locked(g, profile_id, opts, needed, entries, why);
	mcc_gallery_unlock(g->relid, MCC_LOCK_LOAD);
	return res;
}
