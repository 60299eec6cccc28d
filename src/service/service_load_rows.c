/*
 * service_load_rows.c: reading a gallery's rows into LOAD_ROWS frames, the
 * part of a load that the serial load, the parallel workers
 * (service_load_parallel.c) and the snapshot check (service_load_check.c)
 * share: the frames themselves, which tuple versions a load keeps and with
 * which xids (the rules at the top of service_load.c), the guarded detoast
 * of versions VACUUM may remove meanwhile, a relation's scan, and the
 * fetch of tuples by tid.
 */
#include "mcc_pg.h"
#include "service.h"
#include "service_load.h"
#include "gallery.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/tableam.h"
#include "access/detoast.h"
#include "access/xact.h"
#include "access/transam.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "storage/procarray.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

/* Send LOAD_BEGIN (once the profile is known). */
void
mcc_load_send_begin(load_state *st)
{
	StringInfoData f;

	/* a joinable load may leave it to the first row, which its workers find */
	if (st->profile_id == 0 && !(st->flags & MCC_LOAD_JOIN))
		st->profile_id = MCC_PROFILE_DEFAULT;
	mcc_frame_begin(&f);
	mcc_put_gallery(&f, &st->g->id);
	mcc_put_u64(&f, st->gen);
	mcc_put_u32(&f, (uint32) st->profile_id);
	mcc_put_u64(&f, st->prog.rows_expected);
	mcc_put_u32(&f, (uint32) st->g->priority);
	mcc_put_u32(&f, st->flags);
	if (st->flags & MCC_LOAD_IDS)
	{
		mcc_put_u64(&f, st->scan_lsn);
		mcc_put_u64(&f, st->next_xid);
	}
	if (st->flags & MCC_LOAD_JOIN)
	{
		mcc_put_u64(&f, st->token[0]);
		mcc_put_u64(&f, st->token[1]);
	}
	mcc_conn_send(&f, MCC_MSG_LOAD_BEGIN, st->request_id);
	pfree(f.data);
	st->begun = true;
}

/* Start a LOAD_ROWS frame. */
void
mcc_load_rows_frame_begin(load_state *st)
{
	MemoryContext old = MemoryContextSwitchTo(st->cxt);

	mcc_frame_begin(&st->frame);
	MemoryContextSwitchTo(old);
	mcc_put_u32(&st->frame, 0);	/* row count, patched when sent */
	st->n_rows = 0;
}

/* Send the LOAD_ROWS frame if it has rows (a parallel worker's on its own connection). */
void
mcc_load_rows_flush(load_state *st)
{
	if (st->n_rows == 0)
		return;
	memcpy(st->frame.data + sizeof(mcc_frame_hdr), &st->n_rows, sizeof(uint32));
	/* a worker's frames go on its own connection, joined to the leader's load */
	if (st->mq != NULL)
		mcc_load_worker_join(st);
	mcc_conn_send(&st->frame, MCC_MSG_LOAD_ROWS, st->request_id);
	if (st->mq != NULL)
		mcc_load_worker_sent(st);
	st->rows_sent += st->n_rows;
	/* the next frame reuses the buffer, grown to a frame's size once */
	st->frame.len = sizeof(mcc_frame_hdr) + sizeof(uint32);
	st->n_rows = 0;
	if (st->mq == NULL)
		mcc_load_progress_report(st);	/* a parallel worker's leader reports */
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
bool
mcc_load_tuple_xids(HeapTuple tuple, Buffer buf, TransactionId horizon, TransactionId pin_xmin,
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
struct varlena *
mcc_guarded_detoast(struct varlena *v)
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

/* A tuple's gallery-wide id (mcc_proto.h's load_ids): ordinal, block, offset. */
uint64
mcc_load_tuple_tid(const load_state *st, HeapTuple tuple)
{
	return st->cur_ordinal |
		((uint64) ItemPointerGetBlockNumberNoCheck(&tuple->t_self) << 16) |
		ItemPointerGetOffsetNumberNoCheck(&tuple->t_self);
}

/*
 * A tuple's xmin as load_ids carries it: the full xid, or MCC_XMIN_FROZEN
 * with the raw xmin when the tuple is frozen (its epoch is then unknown: a
 * frozen xmin may be older than 2^31 xids).
 */
uint64
mcc_load_tuple_xmin_id(const load_state *st, HeapTupleHeader h)
{
	TransactionId raw = HeapTupleHeaderGetRawXmin(h);
	TransactionId next = XidFromFullTransactionId(FullTransactionIdFromU64(st->next_xid));

	if (HeapTupleHeaderXminFrozen(h) || !TransactionIdIsNormal(raw))
		return MCC_XMIN_FROZEN | raw;
	/* not frozen: within 2^31 of the next xid (relfrozenxid holds it there) */
	return st->next_xid - (uint64) (int64) (int32) (next - raw);
}

/* Append one row to the LOAD_ROWS frame; false (with st->why) if unloadable. */
bool
mcc_load_add_row(load_state *st, Relation rel, HeapTuple tuple, AttrNumber key_att,
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
	if (risky && VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(tpl)) && st->mq != NULL)
	{
		/* a parallel worker cannot run the subtransaction: the leader reads it */
		load_deferred d = {mcc_load_tuple_tid(st, tuple), HeapTupleHeaderGetRawXmin(tuple->t_data)};

		appendBinaryStringInfo(&st->deferred, (const char *) &d, sizeof(d));
		return true;
	}
	if (risky && VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(tpl)))
	{
		t = mcc_guarded_detoast((struct varlena *) DatumGetPointer(tpl));
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
	{
		st->profile_id = ((uint8 *) t)[5];
		/* a worker: the first row of any worker sets the profile of all */
		if (st->shared_profile != NULL)
		{
			uint32		expected = 0;

			if (!pg_atomic_compare_exchange_u32(st->shared_profile, &expected,
												(uint32) st->profile_id))
				st->profile_id = (int) expected;
		}
	}
	if (VARSIZE(t) < MCC_TEMPLATE_HDRSZ || ((uint8 *) t)[5] != st->profile_id)
	{
		st->result = MCC_LOAD_MIXED;
		st->why = psprintf("relation \"%s\" has templates of another profile than the probe",
						   RelationGetRelationName(rel));
		return false;
	}
	if (!st->begun)
		mcc_load_send_begin(st);
	mcc_put_i64(&st->frame, mcc_key_int64(key, TupleDescAttr(desc, key_att - 1)->atttypid));
	mcc_put_u64(&st->frame, ins);
	mcc_put_u64(&st->frame, del);
	mcc_put_bytes(&st->frame, t, VARSIZE(t));
	if (st->flags & MCC_LOAD_IDS)
	{
		mcc_put_u64(&st->frame, mcc_load_tuple_tid(st, tuple));
		mcc_put_u64(&st->frame, mcc_load_tuple_xmin_id(st, tuple->t_data));
	}
	st->n_rows++;
	if ((Pointer) t != DatumGetPointer(tpl))
		pfree(t);
	if (st->frame.len >= LOAD_FRAME_BYTES)
		mcc_load_rows_flush(st);
	return true;
}

/* Can rel be loaded (a heap with the gallery's columns)? false with st->why if not. */
bool
mcc_load_relation_usable(load_state *st, Relation rel, AttrNumber key_att, AttrNumber tpl_att)
{
	if (rel->rd_rel->relkind == RELKIND_RELATION &&
		rel->rd_tableam == GetHeapamTableAmRoutine() &&
		key_att != InvalidAttrNumber && tpl_att != InvalidAttrNumber)
		return true;
	st->result = MCC_LOAD_MIXED;
	st->why = psprintf("relation \"%s\" is not a heap table with the gallery's columns",
					   RelationGetRelationName(rel));
	return false;
}

/*
 * Judge a tuple of buf (share-locked by the caller, unlocked here) with the
 * load's rules and add its row if a load keeps it; false (with st->why) if
 * unloadable. The pin keeps the tuple's data in place without the lock.
 */
static bool
keep_tuple(load_state *st, Relation rel, HeapTuple tuple, Buffer buf, AttrNumber key_att,
		   AttrNumber tpl_att, MemoryContext row_cxt)
{
	uint64		ins;
	uint64		del;
	bool		risky;
	bool		keep;
	bool		ok;
	MemoryContext old;

	keep = mcc_load_tuple_xids(tuple, buf, st->horizon, st->pin_xmin, &ins, &del, &risky);
	/* what SELECT count(*) ... WHERE template IS NOT NULL would count */
	if (st->count_visible && !heap_attisnull(tuple, tpl_att, RelationGetDescr(rel)) &&
		HeapTupleSatisfiesVisibility(tuple, st->count_snap, buf))
		st->visible++;
	LockBuffer(buf, BUFFER_LOCK_UNLOCK);
	if (!keep)
		return true;
	old = MemoryContextSwitchTo(row_cxt);
	ok = mcc_load_add_row(st, rel, tuple, key_att, tpl_att, ins, del, risky);
	MemoryContextSwitchTo(old);
	MemoryContextReset(row_cxt);
	return ok;
}

/*
 * Add every tuple of scan (SnapshotAny, or a parallel worker's share of
 * one) that a load keeps; false (with st->why) if the relation cannot be
 * loaded. The scan stays open.
 */
bool
mcc_load_scan(load_state *st, Relation rel, TableScanDesc scan, AttrNumber key_att,
			  AttrNumber tpl_att)
{
	MemoryContext row_cxt;
	HeapTuple	tuple;
	bool		ok = true;

	st->cur_ordinal = mcc_load_relation_ordinal(st, RelationGetRelid(rel));
	row_cxt = AllocSetContextCreate(CurrentMemoryContext, "mcc load row", ALLOCSET_DEFAULT_SIZES);
	while (ok && (tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Buffer		buf = ((HeapScanDesc) scan)->rs_cbuf;

		CHECK_FOR_INTERRUPTS();
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		ok = keep_tuple(st, rel, tuple, buf, key_att, tpl_att, row_cxt);
	}
	MemoryContextDelete(row_cxt);
	return ok;
}

/* Stream one heap relation; false (with st->why) if it cannot be loaded. */
bool
mcc_load_relation(load_state *st, Oid relid)
{
	Relation	rel = relation_open(relid, NoLock);
	AttrNumber	key_att = mcc_column_attnum(relid, st->g->key_name);
	AttrNumber	tpl_att = mcc_column_attnum(relid, st->g->tpl_name);
	TableScanDesc scan;
	bool		ok;

	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
	{
		relation_close(rel, NoLock);
		return true;			/* no storage; its partitions follow */
	}
	if (!mcc_load_relation_usable(st, rel, key_att, tpl_att))
	{
		relation_close(rel, NoLock);
		return false;
	}
	scan = table_beginscan(rel, SnapshotAny, 0, NULL);
	st->prog.scan = (HeapScanDesc) scan;
	ok = mcc_load_scan(st, rel, scan, key_att, tpl_att);
	st->prog.blocks_before += ((HeapScanDesc) scan)->rs_nblocks;
	st->prog.scan = NULL;
	table_endscan(scan);
	relation_close(rel, NoLock);
	return ok;
}

/*
 * Read tuples again by their ids (mcc_load_tuple_tid, in scan order) and add
 * those a load keeps, judged now with the load's rules; false (with
 * st->why) if unloadable. xmins (or NULL): the raw xmin each tuple had
 * when its id was taken. A tuple gone meanwhile (its page truncated away,
 * its line pointer unused, dead or redirected, or, with xmins, holding
 * another tuple) was removed by VACUUM, which removes only versions dead
 * to every snapshot; a new tuple in its place is one the load had not met
 * (its writer's delta comes above the load's generation), read as a load
 * reads any tuple it meets or, with xmins, left to that delta.
 */
bool
mcc_load_fetch_tids(load_state *st, const uint64 *tids, const TransactionId *xmins, size_t n)
{
	MemoryContext row_cxt = AllocSetContextCreate(CurrentMemoryContext, "mcc load row",
												  ALLOCSET_DEFAULT_SIZES);
	Relation	rel = NULL;
	int			cur = -1;
	AttrNumber	key_att = InvalidAttrNumber;
	AttrNumber	tpl_att = InvalidAttrNumber;
	BlockNumber nblocks = 0;
	bool		ok = true;
	bool		counting = st->count_visible;

	/* these were met (and counted) in the scan, or are a snapshot check's */
	st->count_visible = false;
	for (size_t i = 0; ok && i < n; i++)
	{
		int			ordinal = (int) (tids[i] >> 48);
		BlockNumber blk = (BlockNumber) ((tids[i] >> 16) & 0xFFFFFFFF);
		OffsetNumber off = (OffsetNumber) (tids[i] & 0xFFFF);
		Buffer		buf;
		Page		page;
		HeapTupleData tup;

		CHECK_FOR_INTERRUPTS();
		if (ordinal >= st->n_rel_order)
			elog(ERROR, "mcc: tuple id " UINT64_FORMAT " of no relation of the gallery", tids[i]);
		if (ordinal != cur)
		{
			if (rel != NULL)
				relation_close(rel, NoLock);
			rel = relation_open(st->rel_order[ordinal], NoLock);
			key_att = mcc_column_attnum(RelationGetRelid(rel), st->g->key_name);
			tpl_att = mcc_column_attnum(RelationGetRelid(rel), st->g->tpl_name);
			nblocks = RelationGetNumberOfBlocks(rel);
			st->cur_ordinal = (uint64) ordinal << 48;
			cur = ordinal;
		}
		if (blk >= nblocks)
		{
			st->vanished++;
			continue;
		}
		buf = ReadBuffer(rel, blk);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (off < FirstOffsetNumber || off > PageGetMaxOffsetNumber(page) ||
			!mcc_pg_page_tuple(page, blk, off, RelationGetRelid(rel), &tup) ||
			(xmins != NULL && HeapTupleHeaderGetRawXmin(tup.t_data) != xmins[i]))
		{
			UnlockReleaseBuffer(buf);
			st->vanished++;
			continue;
		}
		ok = keep_tuple(st, rel, &tup, buf, key_att, tpl_att, row_cxt);
		ReleaseBuffer(buf);
	}
	if (rel != NULL)
		relation_close(rel, NoLock);
	MemoryContextDelete(row_cxt);
	st->count_visible = counting;
	return ok;
}
