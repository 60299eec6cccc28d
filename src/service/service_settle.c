/*
 * service_settle.c: settling the transaction ids of the engine's entries
 * (service_settle.h).
 *
 * The engine keeps, with each tuple version, the xids that made and
 * removed it until it learns their fate. Now and then (one backend at a
 * time, every SETTLE_INTERVAL_MS per gallery) a backend asks which xids are
 * still open (XIDS), reads their states from the commit log and tells the
 * engine (SETTLE), with the horizon below which committed deletions are
 * invisible to every snapshot, so that the engine can purge them.
 */
#include "postgres.h"

#include "service_settle.h"

#include "access/relation.h"
#include "access/transam.h"
#include "access/xact.h"
#include "storage/procarray.h"
#include "utils/timestamp.h"

#define SETTLE_INTERVAL_MS	250		/* between settle exchanges of a gallery */

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
	xids = mcc_get_u64_array(&reply.body, &n);
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
void
settle(serve_req *r)
{
	int			round;

	if (r->n_unsettled == 0 || !claim_settle(&r->ref))
		return;
	for (round = 0; round < 4; round++)
		if (settle_round(r) < MCC_PROTO_MAX_XIDS)
			break;
}
