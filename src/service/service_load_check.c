/*
 * service_load_check.c: a load that checks the engine's cache snapshot
 * (docs/matcher-service.md, "Cache snapshots"): LOAD_BEGIN with
 * MCC_LOAD_SNAPSHOT, every kept tuple's header (LOAD_HEADS, nothing
 * detoasted), then only the tuples the engine wants as load rows, then
 * LOAD_END. The tuples are read and kept by the same rules as a full load
 * (src/service/service_load.c), whose state and row helpers it shares.
 */
#include "mcc_pg.h"
#include "service.h"
#include "service_load.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/tableam.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "utils/memutils.h"
#include "utils/rel.h"

/* Start a LOAD_HEADS frame (its count patched when sent). */
static void
heads_frame_begin(load_state *st, StringInfo f)
{
	MemoryContext old = MemoryContextSwitchTo(st->cxt);

	mcc_frame_begin(f);
	MemoryContextSwitchTo(old);
	mcc_put_u32(f, 0);
}

static void
heads_flush(load_state *st, StringInfo f, uint32 *n)
{
	if (*n == 0)
		return;
	memcpy(f->data + sizeof(mcc_frame_hdr), n, sizeof(uint32));
	mcc_conn_send(f, MCC_MSG_LOAD_HEADS, st->request_id);
	pfree(f->data);
	heads_frame_begin(st, f);
	*n = 0;
	mcc_load_progress_report(st);
}

/*
 * The headers of the tuples on the page of buf (share-locked) that a load
 * keeps, appended to f: tuple id, xmin, the page's LSN, the xids a load row
 * carries.
 */
static void
heads_page(load_state *st, Relation rel, Buffer buf, AttrNumber tpl_att, bool wal,
		   StringInfo f, uint32 *n)
{
	Page		page = BufferGetPage(buf);
	BlockNumber blk = BufferGetBlockNumber(buf);
	OffsetNumber maxoff = PageGetMaxOffsetNumber(page);
	/* pages of a relation without WAL keep no LSN: never "unchanged since" */
	uint64		lsn = wal ? (uint64) BufferGetLSNAtomic(buf) : PG_UINT64_MAX;
	TupleDesc	desc = RelationGetDescr(rel);

	for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off++)
	{
		HeapTupleData tup;
		uint64		ins;
		uint64		del;
		bool		risky;

		if (!mcc_pg_page_tuple(page, blk, off, RelationGetRelid(rel), &tup))
			continue;
		if (!mcc_load_tuple_xids(&tup, buf, st->horizon, st->pin_xmin, &ins, &del, &risky) ||
			heap_attisnull(&tup, tpl_att, desc))
			continue;
		mcc_put_u64(f, mcc_load_tuple_tid(st, &tup));
		mcc_put_u64(f, mcc_load_tuple_xmin_id(st, tup.t_data));
		mcc_put_u64(f, lsn);
		mcc_put_u64(f, ins);
		mcc_put_u64(f, del);
		(*n)++;
		st->heads++;
	}
}

/*
 * Send the tuple headers of one heap relation for a snapshot check: what a
 * load row carries but the key and template (nothing detoasted), with the
 * page's LSN. A page at a time (one buffer lock per page, not two per
 * tuple as heap_getnext with SnapshotAny takes), in block order. False
 * (with st->why) if it cannot be loaded.
 */
static bool
heads_relation(load_state *st, Oid relid, StringInfo f, uint32 *n)
{
	Relation	rel = relation_open(relid, NoLock);
	AttrNumber	tpl_att = mcc_column_attnum(relid, st->g->tpl_name);
	TableScanDesc scan;
	HeapScanDesc hscan;
	bool		wal;

	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
	{
		relation_close(rel, NoLock);
		return true;
	}
	if (rel->rd_rel->relkind != RELKIND_RELATION ||
		rel->rd_tableam != GetHeapamTableAmRoutine() || tpl_att == InvalidAttrNumber)
	{
		st->result = MCC_LOAD_MIXED;
		st->why = psprintf("relation \"%s\" is not a heap table with the gallery's columns",
						   RelationGetRelationName(rel));
		relation_close(rel, NoLock);
		return false;
	}
	wal = RelationNeedsWAL(rel);
	st->cur_ordinal = mcc_load_relation_ordinal(st, relid);
	/* the scan for its buffer strategy, pruning and progress; no synchronized start */
	scan = table_beginscan_strat(rel, SnapshotAny, 0, NULL, true, false);
	hscan = (HeapScanDesc) scan;
	st->prog.scan = hscan;
	for (BlockNumber blk = 0; blk < hscan->rs_nblocks; blk++)
	{
		CHECK_FOR_INTERRUPTS();
		heapgetpage(scan, blk);
		LockBuffer(hscan->rs_cbuf, BUFFER_LOCK_SHARE);
		heads_page(st, rel, hscan->rs_cbuf, tpl_att, wal, f, n);
		LockBuffer(hscan->rs_cbuf, BUFFER_LOCK_UNLOCK);
		/* sent with no buffer locked */
		if (f->len >= LOAD_FRAME_BYTES)
			heads_flush(st, f, n);
	}
	st->prog.blocks_before += hscan->rs_nblocks;
	st->prog.scan = NULL;
	table_endscan(scan);
	relation_close(rel, NoLock);
	return true;
}

/*
 * A load that checks the engine's snapshot: LOAD_BEGIN, every tuple's
 * header, then the tuples the engine wants as rows, then LOAD_END. *full
 * is set (and nothing more sent) when the engine has no usable snapshot
 * any more or wants too many tuples to say: the caller loads in full.
 */
bool
mcc_load_stream_snapshot(load_state *st, mcc_reply *reply, bool *full)
{
	StringInfoData heads;
	uint32		n = 0;
	uint32		n_want;
	uint64	   *tids;
	ListCell   *lc;

	*full = false;
	mcc_load_send_begin(st);
	heads_frame_begin(st, &heads);
	foreach(lc, st->g->relids)
		if (!heads_relation(st, lfirst_oid(lc), &heads, &n))
			return false;
	heads_flush(st, &heads, &n);
	if (!mcc_load_send_wait(st, MCC_MSG_LOAD_HEADS_END, "check the cache snapshot", reply))
		return false;
	if (reply->type == MCC_MSG_ERROR &&
		(reply->err_code == MCC_PERR_NOT_LOADED || reply->err_code == MCC_PERR_TOO_LARGE))
	{
		elog(DEBUG1, "mcc: gallery %u: cache snapshot not used: %s", st->g->relid,
			 reply->err_message);
		*full = true;
		return true;
	}
	if (reply->type != MCC_MSG_WANT)
		return true;			/* the load's answer (an error) */
	tids = mcc_get_u64_array(&reply->body, &n_want);
	st->wanted = n_want;
	mcc_load_rows_frame_begin(st);
	if (!mcc_load_fetch_tids(st, tids, NULL, n_want))
		return false;
	pfree(tids);
	return mcc_load_finish(st, reply);
}

/*
 * Has the engine a snapshot of this gallery that a load can check (it
 * reads and checks the file now)? Its profile goes to *profile_id.
 */
bool
mcc_load_engine_has_snapshot(const mcc_gallery_ref *g, int *profile_id)
{
	StringInfoData f;
	uint64		id = mcc_conn_next_id();
	mcc_reply	reply;

	mcc_frame_begin(&f);
	mcc_put_gallery(&f, &g->id);
	mcc_put_u32(&f, (uint32) *profile_id);
	mcc_conn_send(&f, MCC_MSG_SNAPSHOT, id);
	pfree(f.data);
	if (!mcc_conn_wait_reply(id, &reply) || reply.type != MCC_MSG_SNAPSHOT_INFO ||
		mcc_get_u32(&reply.body) == 0)
		return false;
	*profile_id = (int) mcc_get_u32(&reply.body);
	return true;
}
