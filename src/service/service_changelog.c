/*
 * service_changelog.c: the change log that feeds hot standbys' caches.
 *
 * Triggers do not fire on a hot standby, so its engine cannot learn changes
 * the way the primary's does. On the primary the change triggers
 * (src/service/service_triggers.c) therefore also append every row version a
 * statement wrote to a gallery whose change log is on (mcc_galleries.
 * change_log, off by default: a write cost only where standbys serve the
 * gallery) to table mcc_change_log, in the writing (sub)transaction:
 * an entry is committed, aborted or in progress exactly when the change it
 * describes is, and it reaches a standby by WAL like any row.
 *
 * Positions (column gen) come from a sequence, taken and written under a
 * per-gallery lock (MCC_LOCK_LOG) held only while the statement's entries
 * are inserted. So a gallery's entries enter the WAL in position order, and
 * on a standby the entries present in the heap at any moment (committed or
 * not) are every position up to the highest present, except entries VACUUM
 * removed: aborted ones, which no snapshot needs, and pruned ones, which
 * mcc_change_log_pruned records. The standby's side is
 * src/service/service_standby.c; docs/matcher-service.md, "Hot standbys", gives the
 * argument. Turning the log on writes a reload entry (mcc_changelog_start)
 * that makes standbys load afresh; pruning is src/service/service_prune.c's.
 */
#include "mcc_pg.h"
#include "service.h"

#include "access/detoast.h"
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

/* Columns of mcc_change_log (sql/mcc--0.1.0--0.2.0.sql). */
#define Anum_log_gallery	1
#define Anum_log_gen		2
#define Anum_log_xid		3
#define Anum_log_op			4
#define Anum_log_key		5
#define Anum_log_hash		6
#define Anum_log_template	7
#define LOG_NATTS			8

/* Columns of mcc_change_log_pruned. */
#define Anum_pruned_gallery	1
#define Anum_pruned_upto	2

#define LOG_OP_INSERT	'i'
#define LOG_OP_DELETE	'd'
#define LOG_OP_RELOAD	'r'

/* The INSERT of one entry, prepared once per session for one log table. */
static SPIPlanPtr insert_plan = NULL;
static Oid	insert_plan_log = InvalidOid;

/* OID of relation name in the extension's schema. */
Oid
mcc_extension_relation(const char *name)
{
	Oid			nsp;

	if (!OidIsValid(mcc_galleries_relid()))
		return InvalidOid;
	nsp = get_rel_namespace(mcc_galleries_relid());
	return get_relname_relid(name, nsp);
}

/* The prepared INSERT (SPI connected). */
static SPIPlanPtr
prepare_insert(Oid log)
{
	Oid			types[6] = {OIDOID, INT8OID, CHAROID, INT8OID, INT8OID, BYTEAOID};
	const char *nsp = quote_identifier(get_namespace_name(get_rel_namespace(log)));
	char	   *sql;
	SPIPlanPtr	plan;

	if (insert_plan != NULL && insert_plan_log == log)
		return insert_plan;
	if (insert_plan != NULL)
		SPI_freeplan(insert_plan);
	insert_plan = NULL;
	sql = psprintf("INSERT INTO %s.mcc_change_log (gallery, gen, xid, op, key, hash, template) "
				   "VALUES ($1, pg_catalog.nextval('%s.mcc_change_log_gen'), $2, $3, $4, $5, $6)",
				   nsp, nsp);
	plan = SPI_prepare(sql, 6, types);
	if (plan == NULL)
		elog(ERROR, "could not prepare the change log insert: %s",
			 SPI_result_code_string(SPI_result));
	SPI_keepplan(plan);
	insert_plan = plan;
	insert_plan_log = log;
	return plan;
}

/* Insert one entry. */
static void
insert_entry(SPIPlanPtr plan, Oid gallery, uint64 xid, char op, const mcc_delta_op *d)
{
	Datum		v[6];
	char		nulls[6] = {' ', ' ', ' ', 'n', 'n', 'n'};
	int			rc;

	v[0] = ObjectIdGetDatum(gallery);
	v[1] = Int64GetDatum((int64) xid);
	v[2] = CharGetDatum(op);
	if (d != NULL)
	{
		v[3] = Int64GetDatum(d->key);
		v[4] = Int64GetDatum((int64) d->hash);
		nulls[3] = nulls[4] = ' ';
		if (d->insert)
		{
			v[5] = PointerGetDatum(d->tpl);
			nulls[5] = ' ';
		}
	}
	rc = SPI_execute_plan(plan, v, nulls, false, 0);
	if (rc != SPI_OK_INSERT)
		elog(ERROR, "could not append to the change log: %s", SPI_result_code_string(rc));
}

/* The entries, with the log's owner's rights (writers need no grant on it). */
static void
append_as_owner(Oid log, Oid gallery, uint64 xid, List *dels, List *ins, bool reload)
{
	Oid			save_user;
	int			save_sec;
	ListCell   *lc;

	GetUserIdAndSecContext(&save_user, &save_sec);
	SetUserIdAndSecContext(mcc_rel_owner(log),
						   save_sec | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
	PG_TRY();
	{
		SPIPlanPtr	plan;

		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		plan = prepare_insert(log);
		if (reload)
			insert_entry(plan, gallery, xid, LOG_OP_RELOAD, NULL);
		else
		{
			foreach(lc, dels)
				insert_entry(plan, gallery, xid, LOG_OP_DELETE, lfirst(lc));
			foreach(lc, ins)
				insert_entry(plan, gallery, xid, LOG_OP_INSERT, lfirst(lc));
		}
		SPI_finish();
	}
	PG_FINALLY();
	{
		SetUserIdAndSecContext(save_user, save_sec);
	}
	PG_END_TRY();
}

void
mcc_changelog_append(Oid gallery, uint64 xid, List *dels, List *ins, bool reload)
{
	Oid			log = mcc_extension_relation("mcc_change_log");

	if (!OidIsValid(log))
		return;
	mcc_prune_note_database(MyDatabaseId);	/* the supervisor prunes it from now on */
	if (list_length(dels) + list_length(ins) > mcc_max_delta_rows)
		reload = true;			/* a standby reloads rather than replaying them */
	if (!reload && dels == NIL && ins == NIL)
		return;
	/*
	 * Positions enter the WAL in order: the lock covers taking them and
	 * inserting the rows; it is released at once (not held to commit).
	 */
	mcc_gallery_lock(gallery, MCC_LOCK_LOG);
	append_as_owner(log, gallery, xid, dels, ins, reload);
	mcc_gallery_unlock(gallery, MCC_LOCK_LOG);
}

/*
 * The start point of a gallery's log that was just turned on: a reload
 * entry in the current transaction (which holds the gallery against
 * writers). A standby that sees the log on sees this entry too, and loads
 * afresh whatever cache it had from before.
 */
void
mcc_changelog_start(Oid gallery)
{
	uint64		xid = U64FromFullTransactionId(GetCurrentFullTransactionId());

	if (!OidIsValid(mcc_extension_relation("mcc_change_log")))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the extension has no change log table"),
				 errhint("Run ALTER EXTENSION mcc UPDATE.")));
	mcc_changelog_append(gallery, xid, NIL, NIL, true);
}

/* ---------------------------------------------------------------------
 * Reading, on a standby: every entry present in the heap (SnapshotAny),
 * committed, in progress or aborted, through the index on (gallery, gen).
 */

/* Start an ordered scan of gallery's entries above `after`. */
static SysScanDesc
log_scan(Relation rel, Relation idx, Oid gallery, uint64 after, ScanKeyData *keys)
{
	ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(gallery));
	ScanKeyInit(&keys[1], 2, BTGreaterStrategyNumber, F_INT8GT, Int64GetDatum((int64) after));
	return systable_beginscan_ordered(rel, idx, SnapshotAny, 2, keys);
}

/* Open the log and its primary key index. */
static void
log_open(Oid log, Relation *rel, Relation *idx)
{
	Oid			pk;

	*rel = table_open(log, AccessShareLock);
	pk = RelationGetPrimaryKeyIndex(*rel);
	if (!OidIsValid(pk))
		elog(ERROR, "table mcc_change_log has no primary key");
	*idx = index_open(pk, AccessShareLock);
}

static void
log_close(Relation rel, Relation idx)
{
	index_close(idx, AccessShareLock);
	table_close(rel, AccessShareLock);
}

uint64
mcc_changelog_head(Oid log, Oid gallery)
{
	Relation	rel;
	Relation	idx;
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple	tup;
	uint64		head = 0;

	log_open(log, &rel, &idx);
	scan = log_scan(rel, idx, gallery, 0, keys);
	tup = systable_getnext_ordered(scan, BackwardScanDirection);
	if (tup != NULL)
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, Anum_log_gen, RelationGetDescr(rel), &isnull);

		head = isnull ? 0 : (uint64) DatumGetInt64(d);
	}
	systable_endscan_ordered(scan);
	log_close(rel, idx);
	return head;
}

/* One entry as a change; NULL if it needs nothing (its template vanished). */
static mcc_delta_op *
entry_op(HeapTuple tup, TupleDesc desc, Oid gallery, char op)
{
	Datum		v[LOG_NATTS];
	bool		n[LOG_NATTS];
	mcc_delta_op *d = palloc0(sizeof(mcc_delta_op));

	heap_deform_tuple(tup, desc, v, n);
	if (n[Anum_log_key - 1] || n[Anum_log_hash - 1] || n[Anum_log_xid - 1])
		elog(ERROR, "malformed change log entry of gallery %u", gallery);
	d->gallery = gallery;
	d->insert = op == LOG_OP_INSERT;
	d->key = DatumGetInt64(v[Anum_log_key - 1]);
	d->hash = (uint64) DatumGetInt64(v[Anum_log_hash - 1]);
	d->xid = (uint64) DatumGetInt64(v[Anum_log_xid - 1]);
	if (d->insert)
	{
		struct varlena *t;

		if (n[Anum_log_template - 1])
			elog(ERROR, "malformed change log entry of gallery %u", gallery);
		t = (struct varlena *) DatumGetPointer(v[Anum_log_template - 1]);
		/* TOAST rows of an aborted or pruned entry may be gone already */
		t = VARATT_IS_EXTERNAL_ONDISK(t) ? mcc_guarded_detoast(t) : detoast_attr(t);
		if (t == NULL)
			return NULL;
		d->tpl = t;
	}
	return d;
}

List *
mcc_changelog_read(Oid log, Oid gallery, uint64 after, uint64 upto, bool *reload)
{
	Relation	rel;
	Relation	idx;
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *ops = NIL;

	*reload = false;
	log_open(log, &rel, &idx);
	scan = log_scan(rel, idx, gallery, after, keys);
	while ((tup = systable_getnext_ordered(scan, ForwardScanDirection)) != NULL)
	{
		bool		isnull;
		int64		gen = DatumGetInt64(heap_getattr(tup, Anum_log_gen, RelationGetDescr(rel), &isnull));
		char		op = DatumGetChar(heap_getattr(tup, Anum_log_op, RelationGetDescr(rel), &isnull));
		mcc_delta_op *d;

		if ((uint64) gen > upto)
			break;
		if (op == LOG_OP_RELOAD)
		{
			*reload = true;
			break;
		}
		if (op != LOG_OP_INSERT && op != LOG_OP_DELETE)
			elog(ERROR, "malformed change log entry of gallery %u", gallery);
		if ((d = entry_op(tup, RelationGetDescr(rel), gallery, op)) != NULL)
			ops = lappend(ops, d);
	}
	systable_endscan_ordered(scan);
	log_close(rel, idx);
	return ops;
}

uint64
mcc_changelog_pruned(Oid gallery)
{
	Oid			relid = mcc_extension_relation("mcc_change_log_pruned");
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Snapshot	snap;
	uint64		upto = 0;

	if (!OidIsValid(relid))
		return PG_UINT64_MAX;	/* cannot tell: assume the worst */
	/*
	 * The latest snapshot, taken after the entries were read: a prune that
	 * removed any of them committed before VACUUM removed them.
	 */
	snap = RegisterSnapshot(GetLatestSnapshot());
	rel = table_open(relid, AccessShareLock);
	ScanKeyInit(&key, Anum_pruned_gallery, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(gallery));
	scan = systable_beginscan(rel, InvalidOid, false, snap, 1, &key);
	while ((tup = systable_getnext(scan)) != NULL)
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, Anum_pruned_upto, RelationGetDescr(rel), &isnull);

		if (!isnull)
			upto = Max(upto, (uint64) DatumGetInt64(d));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	UnregisterSnapshot(snap);
	return upto;
}
