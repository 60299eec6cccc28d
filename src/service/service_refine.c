/*
 * service_refine.c: the backend's part of refinement through the matcher
 * service (docs/matcher-engine.md, "Refinement"): judging the engine's
 * visibility count, and the versions a refining search returns, against the
 * statement's snapshot, and the REFINE exchange that has the engine's
 * threads rescore a shortlist the backend re-checked.
 *
 * The count. n' depends on n, the rows with a template the statement sees,
 * once the gallery is larger than mcc_refine_flat_limit(). The engine holds
 * tuple versions, not rows, so it cannot count them; it counts those that
 * every snapshot with the statement's xmin sees (inserted by a committed
 * transaction below it, not deleted) and groups the others by their
 * inserting and deleting xids. Each group is judged here as a heap tuple
 * with those xmin and xmax would be: the version is visible if its inserter
 * is neither in the snapshot nor uncommitted, and its deleter is not
 * likewise visible. The current transaction never changed the gallery (the
 * service is not used then), so no xid is ours and no command id matters.
 */
#include "mcc_pg.h"
#include "service.h"
#include "gallery.h"

#include "access/transam.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/snapmgr.h"

#include "mcc_match.h"
#include "refine.h"

#define REFINE_FRAME_BYTES	(16 * 1024 * 1024)	/* a REFINE frame's templates, about */
#define REFINE_UNIT			256		/* candidates per mcc.request_timeout, beyond one per probe */

/*
 * Does snapshot see the work of full xid fxid (an insert or a delete)?
 * known_committed: the engine settled it as committed. next: the next full
 * xid, read before the judging started.
 */
static bool
xid_seen(uint64 fxid, bool known_committed, Snapshot snapshot, uint64 next)
{
	TransactionId xid = (TransactionId) fxid;

	if (fxid < FirstNormalTransactionId)
		return true;			/* 0: settled before every snapshot; frozen */
	if (fxid >= next)
		return false;			/* not even assigned when the snapshot was taken */
	/*
	 * Older than the commit log can tell: such a tuple has long been frozen
	 * (committed) or removed (aborted; the engine drops those at a settle).
	 */
	if (next - fxid >= (UINT64CONST(1) << 31) ||
		TransactionIdPrecedes(xid, ShmemVariableCache->oldestClogXid))
		return true;
	if (XidInMVCCSnapshot(xid, snapshot))
		return false;			/* in progress for the snapshot */
	/* finished before the snapshot: the commit log is final */
	return known_committed || TransactionIdDidCommit(xid);
}

/*
 * Does snapshot see the tuple version inserted by insert_xid and deleted by
 * delete_xid (0: never), flags saying which of them the engine knows
 * committed? As a heap tuple with that xmin and xmax: its inserter seen and
 * its deleter not. The caller holds XactTruncationLock.
 */
static bool
version_seen(uint64 insert_xid, uint64 delete_xid, uint32 flags, Snapshot snapshot,
			 uint64 next)
{
	if (!xid_seen(insert_xid, (flags & MCC_COUNT_F_INS_COMMITTED) != 0, snapshot, next))
		return false;
	return delete_xid == 0 ||
		!xid_seen(delete_xid, (flags & MCC_COUNT_F_DEL_COMMITTED) != 0, snapshot, next);
}

uint64
mcc_count_visible(uint64 certain, const mcc_count_group *groups, uint32 n_groups,
				  Snapshot snapshot)
{
	uint64		next = U64FromFullTransactionId(ReadNextFullTransactionId());
	uint64		n = certain;
	uint32		i;

	/* as pg_xact_status() does: the commit log must not be truncated meanwhile */
	LWLockAcquire(XactTruncationLock, LW_SHARED);
	for (i = 0; i < n_groups; i++)
	{
		const mcc_count_group *g = &groups[i];

		if (version_seen(g->insert_xid, g->delete_xid, g->flags, snapshot, next))
			n += g->entries;
	}
	LWLockRelease(XactTruncationLock);
	return n;
}

void
mcc_versions_visible(const mcc_version *v, int n, Snapshot snapshot, bool *visible)
{
	uint64		next = U64FromFullTransactionId(ReadNextFullTransactionId());
	int			i;

	LWLockAcquire(XactTruncationLock, LW_SHARED);
	for (i = 0; i < n; i++)
		/* certain: inserted below the snapshot's xmin by a known commit, not deleted */
		visible[i] = (v[i].flags & MCC_CAND_F_CERTAIN) != 0 ||
			version_seen(v[i].insert_xid, v[i].delete_xid, v[i].flags, snapshot, next);
	LWLockRelease(XactTruncationLock);
}

int64
mcc_count_rows(const mcc_gallery *g)
{
	char	   *sql = psprintf("SELECT count(*) FROM %s WHERE %s IS NOT NULL",
							   g->qualname, quote_identifier(g->tpl_name));
	bool		isnull;
	int64		n;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute(sql, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "counting the rows of \"%s\" failed", g->relname);
	n = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	return n;
}

mcc_pick_result
mcc_pick_refined(const mcc_rhit *c, int n, bool more, int64 want, int64 n_rows,
				 Snapshot snapshot, mcc_refined *out, float *out_lss, uint64 *out_hash,
				 int64 *n_out, const char **why)
{
	mcc_version *v = palloc(Max(n, 1) * sizeof(mcc_version));
	bool	   *seen = palloc(Max(n, 1) * sizeof(bool));
	HASHCTL		ctl;
	HTAB	   *keys;
	int64		n_seen = 0;
	int			i;

	for (i = 0; i < n; i++)
		v[i] = c[i].v;
	mcc_versions_visible(v, n, snapshot, seen);
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(int64);
	ctl.entrysize = sizeof(int64);
	ctl.hcxt = CurrentMemoryContext;
	keys = hash_create("mcc refined keys", Max(n, 16), &ctl,
					   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	*n_out = 0;
	for (i = 0; i < n; i++)
	{
		bool		dup;

		if (!seen[i])
			continue;
		n_seen++;
		hash_search(keys, &c[i].key, HASH_ENTER, &dup);
		if (dup)
		{
			*why = "two versions of one key are visible";
			return MCC_PICK_DISAGREE;
		}
		if (*n_out < want)
		{
			out[*n_out].score = c[i].refined;
			out[*n_out].key = c[i].key;
			if (out_lss != NULL)
				out_lss[*n_out] = c[i].score;
			out_hash[(*n_out)++] = c[i].hash;
		}
	}
	hash_destroy(keys);
	pfree(v);
	pfree(seen);
	if (!more && n_rows >= 0 && n_seen != n_rows)
	{
		/* every searchable entry came back: the visible ones are the rows */
		*why = "the visible versions are not the rows the statement counted";
		return MCC_PICK_DISAGREE;
	}
	if (*n_out < want && more)
		return MCC_PICK_MORE;
	if (*n_out < want && n_rows >= 0)
	{
		*why = "fewer visible versions than the shortlist needs";
		return MCC_PICK_DISAGREE;
	}
	return MCC_PICK_DONE;
}

/* An item of a REFINE frame: candidates first .. first + n - 1 of a job. */
typedef struct frame_item
{
	int			job;
	int			first;
	int			n;
	int			n_at;			/* offset of the item's count in the frame */
} frame_item;

/* Read a REFINED reply into the jobs' scores. */
static void
read_refined(mcc_reply *reply, mcc_refine_job *jobs, const frame_item *items, int n_items)
{
	mcc_reader *b = &reply->body;
	int			i;
	int			j;

	if (reply->type != MCC_MSG_REFINED)
		mcc_raise_engine_error(reply);
	if (mcc_get_u32(b) != (uint32) n_items)
		mcc_pg_malformed_reply("The refinement has another number of items than the request.");
	for (i = 0; i < n_items; i++)
	{
		if (mcc_get_u32(b) != (uint32) items[i].n)
			mcc_pg_malformed_reply("A refined item has another number of scores than the request.");
		for (j = 0; j < items[i].n; j++)
			jobs[items[i].job].score[items[i].first + j] = mcc_get_f32(b);
	}
}

/* Send one REFINE frame and read its reply; false on mcc.request_timeout. */
static bool
exchange(StringInfo f, int n_items_at, mcc_refine_job *jobs, const frame_item *items,
		 int n_items)
{
	uint64		id = mcc_conn_next_id();
	uint32		n = (uint32) n_items;
	int64		candidates = 0;
	mcc_reply	reply;
	int			i;

	memcpy(f->data + n_items_at, &n, sizeof(n));
	for (i = 0; i < n_items; i++)
	{
		n = (uint32) items[i].n;
		memcpy(f->data + items[i].n_at, &n, sizeof(n));
		candidates += items[i].n;
	}
	ereport(DEBUG1,
			(errmsg_internal("identify(): REFINE of %d probes, %lld candidates",
							 n_items, (long long) candidates)));
	mcc_conn_send(f, MCC_MSG_REFINE, id);
	/* mcc.request_timeout per probe, as for SEARCH, and per REFINE_UNIT candidates */
	if (!mcc_conn_wait_reply_units(id, &reply,
								   (int) Min(n_items + candidates / REFINE_UNIT, INT_MAX / 2)))
		return false;
	read_refined(&reply, jobs, items, n_items);
	return true;
}

bool
mcc_service_refine(mcc_refine_job *jobs, int n_jobs, int method, char **why)
{
	StringInfoData f;
	int			cap = Max(n_jobs, 1);
	frame_item *items = palloc(cap * sizeof(frame_item));
	int			n_items = 0;
	int			n_items_at;
	int			j;
	int			c;

	/* an item per job, split where a frame passes REFINE_FRAME_BYTES */
	mcc_frame_begin(&f);
	mcc_put_u32(&f, (uint32) method);
	n_items_at = f.len;
	mcc_put_u32(&f, 0);
	for (j = 0; j < n_jobs; j++)
	{
		for (c = 0; c < jobs[j].n; c++)
		{
			const struct varlena *t = jobs[j].tpl[c];

			if (n_items > 0 && items[n_items - 1].n > 0 &&
				f.len + VARSIZE(t) > REFINE_FRAME_BYTES)
			{
				/* this frame is full: send it, go on in a new one */
				if (!exchange(&f, n_items_at, jobs, items, n_items))
				{
					*why = pstrdup("the matcher engine did not answer within mcc.request_timeout");
					return false;
				}
				resetStringInfo(&f);
				appendStringInfoSpaces(&f, sizeof(mcc_frame_hdr));
				mcc_put_u32(&f, (uint32) method);
				n_items_at = f.len;
				mcc_put_u32(&f, 0);
				n_items = 0;
			}
			if (n_items == 0 || items[n_items - 1].job != j)
			{
				if (n_items == cap)
				{
					cap *= 2;
					items = repalloc(items, cap * sizeof(frame_item));
				}
				items[n_items].job = j;
				items[n_items].first = c;
				items[n_items].n = 0;
				mcc_put_bytes(&f, jobs[j].probe, VARSIZE(jobs[j].probe));
				items[n_items].n_at = f.len;
				mcc_put_u32(&f, 0);
				n_items++;
			}
			mcc_put_bytes(&f, t, VARSIZE(t));
			items[n_items - 1].n++;
		}
	}
	if (n_items > 0 && !exchange(&f, n_items_at, jobs, items, n_items))
	{
		*why = pstrdup("the matcher engine did not answer within mcc.request_timeout");
		return false;
	}
	pfree(f.data);
	pfree(items);
	return true;
}
