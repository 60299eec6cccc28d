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
 * Loads of one gallery are serialized with a heavyweight lock on the object
 * (mcc_galleries, gallery): waiting for it is interruptible and its holder's
 * crash releases it. Any error between LOAD_BEGIN and the engine's answer
 * closes the connection, which makes the engine abandon the load.
 */
#include "mcc_pg.h"
#include "service.h"
#include "gallery.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/tableam.h"
#include "access/detoast.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/procarray.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#define LOAD_FRAME_BYTES	(1024 * 1024)	/* LOAD_ROWS frames of about this size */
#define LOAD_RETRY_MS		10000	/* after a load over the memory limit */

/* A load in progress. */
typedef struct load_state
{
	mcc_gallery_ref *g;
	int			profile_id;		/* 0: take the first row's */
	uint64		request_id;
	uint64		gen;			/* generation the load claims */
	bool		begun;			/* LOAD_BEGIN sent */
	MemoryContext cxt;			/* for the frames (rows use a context reset per row) */
	TransactionId horizon;
	StringInfoData frame;		/* LOAD_ROWS being filled */
	uint32		n_rows;			/* rows in frame */
	uint64		rows_sent;
	mcc_load_result result;		/* set with why when the load cannot proceed */
	char	   *why;
	TransactionId pin_xmin;		/* our snapshot's xmin: what no vacuum can remove */
	uint64		guarded;		/* versions read in a subtransaction */
	uint64		vanished;		/* versions whose TOAST vacuum removed meanwhile */
} load_state;

static uint64 expected_rows(List *relids);

/* Relations, columns and signature of gallery g. */
void
mcc_gallery_ref_init(mcc_gallery_ref *ref, const mcc_gallery *g)
{
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
	ref->slot = -1;
}

/* Find or make the gallery's slot; false if none is free. */
bool
mcc_gallery_ref_slot(mcc_gallery_ref *ref)
{
	ref->slot = mcc_slot_find(ref->relid, true, &ref->epoch);
	return ref->slot >= 0;
}

/* Does the slot say that a load is needed? */
bool
mcc_slot_needs_load(const mcc_gallery_ref *g, int profile_id)
{
	mcc_svc_gallery *s = &mcc_svc->slots[g->slot];
	bool		need;

	if (!mcc_slot_lock(g->slot, g->relid, g->epoch, LW_SHARED))
		return true;
	need = s->loaded_gen == 0 || s->reload_gen > s->loaded_gen ||
		s->loaded_incarnation != mcc_conn_incarnation() ||
		s->loaded_signature != g->id.signature || s->profile_id != profile_id;
	LWLockRelease(MCC_SLOT_LOCK(g->slot));
	return need;
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

/* Send LOAD_BEGIN (once the profile is known). */
static void
send_begin(load_state *st)
{
	StringInfoData f;

	if (st->profile_id == 0)
		st->profile_id = MCC_PROFILE_DEFAULT;
	mcc_frame_begin(&f);
	mcc_put_gallery(&f, &st->g->id);
	mcc_put_u64(&f, st->gen);
	mcc_put_u32(&f, (uint32) st->profile_id);
	mcc_put_u64(&f, expected_rows(st->g->relids));
	mcc_conn_send(&f, MCC_MSG_LOAD_BEGIN, st->request_id);
	pfree(f.data);
	st->begun = true;
}

/* Start a LOAD_ROWS frame. */
static void
rows_frame_begin(load_state *st)
{
	MemoryContext old = MemoryContextSwitchTo(st->cxt);

	mcc_frame_begin(&st->frame);
	MemoryContextSwitchTo(old);
	mcc_put_u32(&st->frame, 0);	/* row count, patched when sent */
	st->n_rows = 0;
}

/* Send the LOAD_ROWS frame if it has rows. */
static void
rows_flush(load_state *st)
{
	if (st->n_rows == 0)
		return;
	memcpy(st->frame.data + sizeof(mcc_frame_hdr), &st->n_rows, sizeof(uint32));
	mcc_conn_send(&st->frame, MCC_MSG_LOAD_ROWS, st->request_id);
	st->rows_sent += st->n_rows;
	pfree(st->frame.data);
	rows_frame_begin(st);
}

/*
 * The xids a load row carries for a tuple, from HeapTupleSatisfiesVacuum;
 * false for a tuple no snapshot can see. The buffer is share-locked.
 *
 * *risky says that VACUUM may remove the tuple's TOAST data before we read
 * it: a version deleted before our own snapshot's xmin (only older
 * snapshots of other backends keep it, and they may end), or one inserted
 * by another transaction still running (it may abort). Our snapshot pins
 * every other version we keep.
 */
static bool
tuple_xids(HeapTuple tuple, Buffer buf, TransactionId horizon, TransactionId pin_xmin,
		   uint64 *ins, uint64 *del, bool *risky)
{
	HeapTupleHeader h = tuple->t_data;
	TransactionId xmin = HeapTupleHeaderGetXmin(h);
	TransactionId xmax;

	*ins = 0;
	*del = 0;
	*risky = false;
	switch (HeapTupleSatisfiesVacuum(tuple, horizon, buf))
	{
		case HEAPTUPLE_DEAD:
			return false;
		case HEAPTUPLE_LIVE:
			break;
		case HEAPTUPLE_RECENTLY_DEAD:
			xmax = HeapTupleHeaderGetUpdateXid(h);
			*del = mcc_full_xid(xmax);
			*risky = !TransactionIdIsValid(pin_xmin) || TransactionIdPrecedes(xmax, pin_xmin);
			break;
		case HEAPTUPLE_DELETE_IN_PROGRESS:
			*del = mcc_full_xid(HeapTupleHeaderGetUpdateXid(h));
			break;
		case HEAPTUPLE_INSERT_IN_PROGRESS:
			*ins = mcc_full_xid(xmin);
			*risky = !TransactionIdIsCurrentTransactionId(xmin);
			if (!(h->t_infomask & HEAP_XMAX_INVALID) &&
				!HEAP_XMAX_IS_LOCKED_ONLY(h->t_infomask))
				*del = mcc_full_xid(HeapTupleHeaderGetUpdateXid(h));
			return true;
	}
	/* the inserter committed: settled if before every snapshot's horizon */
	if (TransactionIdIsNormal(xmin) && !TransactionIdPrecedes(xmin, horizon))
		*ins = mcc_full_xid(xmin);
	return true;
}

/*
 * Detoast a value whose TOAST rows VACUUM may remove meanwhile, in a
 * subtransaction: NULL if they are gone ("missing chunk", data_corrupted),
 * which means that no snapshot can see the version any more. Other errors
 * propagate.
 */
static struct varlena *
guarded_detoast(struct varlena *v)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	struct varlena *volatile t = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		t = detoast_attr(v);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *e;

		MemoryContextSwitchTo(cxt);
		e = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		if (e->sqlerrcode != ERRCODE_DATA_CORRUPTED)
			ReThrowError(e);
		t = NULL;
	}
	PG_END_TRY();
	return t;
}

/* Append one row to the LOAD_ROWS frame; false (with st->why) if unloadable. */
static bool
add_row(load_state *st, Relation rel, HeapTuple tuple, AttrNumber key_att,
		AttrNumber tpl_att, uint64 ins, uint64 del, bool risky)
{
	TupleDesc	desc = RelationGetDescr(rel);
	bool		isnull;
	Datum		key;
	Datum		tpl = mcc_pg_tuple_attr(tuple, desc, tpl_att, &isnull);
	struct varlena *t;

	if (isnull)
		return true;			/* no template, not part of the gallery */
	key = mcc_pg_tuple_attr(tuple, desc, key_att, &isnull);
	if (isnull)
	{
		st->result = MCC_LOAD_MIXED;
		st->why = psprintf("relation \"%s\" has a row with a null key",
						   RelationGetRelationName(rel));
		return false;
	}
	if (risky && VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(tpl)))
	{
		t = guarded_detoast((struct varlena *) DatumGetPointer(tpl));
		st->guarded++;
		if (t == NULL)
		{
			st->vanished++;
			return true;		/* dead to every snapshot by now */
		}
	}
	else
		t = detoast_attr((struct varlena *) DatumGetPointer(tpl));
	if (st->profile_id == 0 && VARSIZE(t) >= MCC_TEMPLATE_HDRSZ)
		st->profile_id = ((uint8 *) t)[5];
	if (VARSIZE(t) < MCC_TEMPLATE_HDRSZ || ((uint8 *) t)[5] != st->profile_id)
	{
		st->result = MCC_LOAD_MIXED;
		st->why = psprintf("relation \"%s\" has templates of another profile than the probe",
						   RelationGetRelationName(rel));
		return false;
	}
	if (!st->begun)
		send_begin(st);
	mcc_put_i64(&st->frame, mcc_key_int64(key, TupleDescAttr(desc, key_att - 1)->atttypid));
	mcc_put_u64(&st->frame, ins);
	mcc_put_u64(&st->frame, del);
	mcc_put_bytes(&st->frame, t, VARSIZE(t));
	st->n_rows++;
	if ((Pointer) t != DatumGetPointer(tpl))
		pfree(t);
	if (st->frame.len >= LOAD_FRAME_BYTES)
		rows_flush(st);
	return true;
}

/* Stream one heap relation; false (with st->why) if it cannot be loaded. */
static bool
load_relation(load_state *st, Oid relid)
{
	Relation	rel = relation_open(relid, NoLock);
	AttrNumber	key_att = mcc_column_attnum(relid, st->g->key_name);
	AttrNumber	tpl_att = mcc_column_attnum(relid, st->g->tpl_name);
	MemoryContext row_cxt;
	TableScanDesc scan;
	HeapTuple	tuple;
	bool		ok = true;

	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
	{
		relation_close(rel, NoLock);
		return true;			/* no storage; its partitions follow */
	}
	if (rel->rd_rel->relkind != RELKIND_RELATION ||
		rel->rd_tableam != GetHeapamTableAmRoutine() ||
		key_att == InvalidAttrNumber || tpl_att == InvalidAttrNumber)
	{
		st->result = MCC_LOAD_MIXED;
		st->why = psprintf("relation \"%s\" is not a heap table with the gallery's columns",
						   RelationGetRelationName(rel));
		relation_close(rel, NoLock);
		return false;
	}
	row_cxt = AllocSetContextCreate(CurrentMemoryContext, "mcc load row", ALLOCSET_DEFAULT_SIZES);
	scan = table_beginscan(rel, SnapshotAny, 0, NULL);
	while (ok && (tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Buffer		buf = ((HeapScanDesc) scan)->rs_cbuf;
		uint64		ins;
		uint64		del;
		bool		keep;
		bool		risky;
		MemoryContext old;

		CHECK_FOR_INTERRUPTS();
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		keep = tuple_xids(tuple, buf, st->horizon, st->pin_xmin, &ins, &del, &risky);
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		if (!keep)
			continue;
		/* the pin keeps the tuple's data in place without the lock */
		old = MemoryContextSwitchTo(row_cxt);
		ok = add_row(st, rel, tuple, key_att, tpl_att, ins, del, risky);
		MemoryContextSwitchTo(old);
		MemoryContextReset(row_cxt);
	}
	table_endscan(scan);
	MemoryContextDelete(row_cxt);
	relation_close(rel, NoLock);
	return ok;
}

/* Rows the planner expects in the gallery (a hint for the engine). */
static uint64
expected_rows(List *relids)
{
	double		total = 0;
	ListCell   *lc;

	foreach(lc, relids)
	{
		Relation	rel = relation_open(lfirst_oid(lc), NoLock);

		if (rel->rd_rel->reltuples > 0)
			total += rel->rd_rel->reltuples;
		relation_close(rel, NoLock);
	}
	return (uint64) total;
}

/* The generation to claim for a load: the slot's current one. */
static uint64
slot_generation(const mcc_gallery_ref *g)
{
	uint64		gen;

	if (!mcc_slot_lock(g->slot, g->relid, g->epoch, LW_SHARED))
		return 0;
	gen = mcc_svc->slots[g->slot].generation;
	LWLockRelease(MCC_SLOT_LOCK(g->slot));
	return gen;
}

/* Record a completed load in the slot. */
static void
slot_loaded(const mcc_gallery_ref *g, uint64 gen, int profile_id)
{
	mcc_svc_gallery *s = &mcc_svc->slots[g->slot];

	if (!mcc_slot_lock(g->slot, g->relid, g->epoch, LW_EXCLUSIVE))
		return;
	s->loaded_gen = gen;
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

/* Send LOAD_BEGIN, every row, LOAD_END; the engine's answer in *reply. */
static bool
stream_load(load_state *st, mcc_reply *reply)
{
	StringInfoData f;
	ListCell   *lc;

	rows_frame_begin(st);
	foreach(lc, st->g->relids)
		if (!load_relation(st, lfirst_oid(lc)))
			return false;
	if (!st->begun)
		send_begin(st);			/* an empty gallery */
	rows_flush(st);

	mcc_frame_begin(&f);
	mcc_conn_send(&f, MCC_MSG_LOAD_END, st->request_id);
	pfree(f.data);
	if (!mcc_conn_wait_reply(st->request_id, reply))
	{
		st->result = MCC_LOAD_UNAVAILABLE;
		st->why = pstrdup("the matcher engine did not finish the load within mcc.request_timeout");
		return false;
	}
	return true;
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

/* The load itself, with the load lock held. */
static mcc_load_result
load_locked(mcc_gallery_ref *g, int profile_id, uint64 *entries, char **why)
{
	load_state	st;
	mcc_reply	reply;
	Relation	rel;

	if (mcc_conn_ensure(why) != MCC_CONN_OK)
		return MCC_LOAD_UNAVAILABLE;
	memset(&st, 0, sizeof(st));
	st.g = g;
	st.profile_id = profile_id;
	st.request_id = mcc_conn_next_id();
	st.cxt = CurrentMemoryContext;
	st.pin_xmin = ActiveSnapshotSet() ? GetActiveSnapshot()->xmin : InvalidTransactionId;
	/* horizon first, then the generation: see the file comment */
	rel = relation_open(g->relid, NoLock);
	st.horizon = GetOldestNonRemovableTransactionId(rel);
	relation_close(rel, NoLock);
	st.gen = slot_generation(g);
	if (st.gen == 0)
	{
		*why = pstrdup("the gallery's slot was freed during the load");
		return MCC_LOAD_UNAVAILABLE;
	}
	if (!stream_load_guarded(&st, &reply))
	{
		*why = st.why;
		return st.result;
	}
	if (reply.type == MCC_MSG_ERROR && reply.err_code == MCC_PERR_MEMORY)
	{
		slot_load_refused(g);
		*why = psprintf("the gallery does not fit in mcc.cache_memory_limit: %s",
						reply.err_message);
		return MCC_LOAD_MEMORY;
	}
	if (reply.type != MCC_MSG_LOADED)
		mcc_raise_engine_error(&reply);
	*entries = mcc_get_u64(&reply.body);
	slot_loaded(g, st.gen, st.profile_id);
	elog(DEBUG1, "mcc: loaded gallery %u at generation " UINT64_FORMAT ": " UINT64_FORMAT
		 " rows sent, " UINT64_FORMAT " read in a subtransaction, " UINT64_FORMAT " vanished",
		 g->relid, st.gen, st.rows_sent, st.guarded, st.vanished);
	return MCC_LOAD_OK;
}

/* Load the gallery unless (without force) a current cache exists. */
mcc_load_result
mcc_gallery_load(mcc_gallery_ref *g, int profile_id, bool force,
				 uint64 *entries, char **why)
{
	Oid			lock_class = mcc_galleries_relid();
	mcc_load_result res;

	*entries = 0;
	*why = NULL;
	LockDatabaseObject(lock_class, g->relid, 0, ExclusiveLock);
	if (!force && !mcc_slot_needs_load(g, profile_id))
		res = MCC_LOAD_SKIPPED;
	else
		res = load_locked(g, profile_id, entries, why);
	UnlockDatabaseObject(lock_class, g->relid, 0, ExclusiveLock);
	return res;
}
