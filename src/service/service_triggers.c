/*
 * service_triggers.c: change capture for registered galleries.
 *
 * mcc_gallery_register() puts four statement-level AFTER triggers on the
 * gallery and on every partition (INSERT, UPDATE and DELETE with transition
 * tables, and TRUNCATE), all running mcc_gallery_trigger(). In the writing
 * backend they only collect, per gallery, the row versions the statement
 * inserted (key, template) and deleted (key, template hash), each tagged with
 * the (sub)transaction id that wrote it, so that they match the xmin and
 * xmax a heap scan would report. Collected changes follow the subtransaction
 * tree: a subtransaction's list joins its parent's when it commits and is
 * dropped when it aborts.
 *
 * At XACT_EVENT_PRE_COMMIT (and PRE_PREPARE), before the commit can become
 * visible to any snapshot, under the gallery's slot lock, the commit takes
 * the gallery's next generation and writes its delta frames (one per
 * (sub)transaction id) to the engine. Every version the transaction wrote
 * is sent, nothing is netted: a load that ran while the transaction was open
 * may have seen any intermediate state of its rows (an old version already
 * deleted but not its successor, a row inserted but not yet deleted again),
 * and only the delta brings those entries to the committed state. An UPDATE
 * that keeps key and template, or a row deleted and inserted again
 * unchanged, is therefore sent as a delete and an insert too. So a
 * backend that reads the generation after taking its snapshot knows a
 * generation that covers every commit its snapshot sees. A TRUNCATE, more
 * than mcc.max_delta_rows changed rows, a row that cannot be represented, or
 * an engine that cannot be reached instead takes a generation and marks the
 * gallery "reload needed" at it.
 *
 * Nothing is collected for a gallery that has no slot in shared memory: no
 * cache of it exists, and any later load scans the heap after these rows
 * were written.
 *
 * When the gallery's change log is on (mcc_galleries.change_log, off by
 * default), every statement's changes also go to the change log that feeds
 * hot standbys (src/service/service_changelog.c), whether or not this server caches
 * the gallery: a standby's engine learns them from there. The setting is
 * read per statement from the latest committed registration; turning it on
 * waits for the gallery's writers (src/service/service_changelog.c), so a writer
 * either finished before or sees it on.
 */
#include "mcc_pg.h"
#include "service.h"

#include "access/detoast.h"
#include "access/xact.h"
#include "catalog/pg_inherits.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/tuplestore.h"

#include "mcc_hash.h"

#define DELTA_FRAME_BYTES	(8 * 1024 * 1024)	/* split deltas above this */
#define SEND_TIMEOUT_MS		5000

PG_FUNCTION_INFO_V1(mcc_gallery_trigger);

/* One captured row version (service.h). */
typedef mcc_delta_op delta_op;

/* A gallery the current transaction changed. */
typedef struct xact_gallery
{
	Oid			gallery;
	bool		reload;			/* send RELOAD instead of deltas */
	int64		n_ops;			/* ops collected, all levels */
} xact_gallery;

/* State of the current transaction, in TopTransactionContext. */
static List *xact_galleries = NIL;
static List **level_ops = NULL; /* level_ops[nest level]: delta_op * */
static int	n_levels = 0;

/* Forget the transaction's changes (its memory goes with it). */
static void
reset_xact_state(void)
{
	xact_galleries = NIL;
	level_ops = NULL;
	n_levels = 0;
}

/* The transaction's record of gallery (created on first use). */
static xact_gallery *
get_xact_gallery(Oid gallery)
{
	ListCell   *lc;
	xact_gallery *g;
	MemoryContext old;

	foreach(lc, xact_galleries)
	{
		g = lfirst(lc);
		if (g->gallery == gallery)
			return g;
	}
	old = MemoryContextSwitchTo(TopTransactionContext);
	g = palloc0(sizeof(xact_gallery));
	g->gallery = gallery;
	xact_galleries = lappend(xact_galleries, g);
	MemoryContextSwitchTo(old);
	return g;
}

/* True if the current transaction fired a trigger of gallery relid. */
bool
mcc_xact_changed_gallery(Oid relid)
{
	ListCell   *lc;

	foreach(lc, xact_galleries)
		if (((xact_gallery *) lfirst(lc))->gallery == relid)
			return true;
	return false;
}

/* Append op at the current nesting level. */
static void
push_op(delta_op *op)
{
	int			level = GetCurrentTransactionNestLevel();
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

	if (level >= n_levels)
	{
		int			n = Max(level + 1, n_levels * 2);

		level_ops = level_ops == NULL ? palloc0(n * sizeof(List *)) :
			repalloc(level_ops, n * sizeof(List *));
		memset(level_ops + n_levels, 0, (n - n_levels) * sizeof(List *));
		n_levels = n;
	}
	level_ops[level] = lappend(level_ops[level], op);
	MemoryContextSwitchTo(old);
}

/* Column positions of a registration in the trigger's relation. */
typedef struct capture_cols
{
	AttrNumber	key;
	AttrNumber	tpl;
	Oid			keytype;
} capture_cols;

/* The template of a row as a 4-byte-header varlena (maybe the datum itself). */
static struct varlena *
row_template(Datum d)
{
	return detoast_attr((struct varlena *) DatumGetPointer(d));
}

/*
 * Read one transition table into ops (inserts with templates copied into
 * cxt). Returns false if a row cannot be represented (NULL key), in which
 * case the gallery must be reloaded.
 */
static bool
read_transition(Tuplestorestate *ts, TupleDesc desc, const capture_cols *cols,
				bool insert, Oid gallery, uint64 xid, MemoryContext cxt, List **ops)
{
	TupleTableSlot *slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	MemoryContext row_cxt = AllocSetContextCreate(CurrentMemoryContext, "mcc capture row",
												  ALLOCSET_SMALL_SIZES);
	int			ptr = tuplestore_alloc_read_pointer(ts, EXEC_FLAG_REWIND);
	bool		ok = true;

	tuplestore_select_read_pointer(ts, ptr);
	tuplestore_rescan(ts);
	while (ok && tuplestore_gettupleslot(ts, true, false, slot))
	{
		bool		key_null;
		bool		tpl_null;
		Datum		key = slot_getattr(slot, cols->key, &key_null);
		Datum		tpl = slot_getattr(slot, cols->tpl, &tpl_null);
		MemoryContext old;
		struct varlena *t;
		delta_op   *op;

		if (tpl_null)
			continue;			/* rows without a template are not in the gallery */
		if (key_null)
		{
			ok = false;
			break;
		}
		old = MemoryContextSwitchTo(row_cxt);
		t = row_template(tpl);
		MemoryContextSwitchTo(cxt);
		op = palloc0(sizeof(delta_op));
		op->gallery = gallery;
		op->insert = insert;
		op->key = mcc_key_int64(key, cols->keytype);
		op->hash = mcc_template_hash((const uint8_t *) t, VARSIZE(t));
		op->xid = xid;
		if (insert)
		{
			op->tpl = palloc(VARSIZE(t));
			memcpy(op->tpl, t, VARSIZE(t));
		}
		*ops = lappend(*ops, op);
		MemoryContextSwitchTo(old);
		MemoryContextReset(row_cxt);
	}
	ExecDropSingleTupleTableSlot(slot);
	MemoryContextDelete(row_cxt);
	return ok;
}

/*
 * Capture one statement's changes for registered gallery reg: for the
 * engine's cache on this server (when it has one) and for the change log
 * that feeds hot standbys (when the gallery's is on).
 */
static void
capture(TriggerData *td, const mcc_registration *reg)
{
	xact_gallery *g = get_xact_gallery(reg->relid);
	Relation	rel = td->tg_relation;
	TupleDesc	desc = RelationGetDescr(rel);
	/* the change log: only for galleries whose registration turned it on */
	bool		log = reg->change_log && OidIsValid(mcc_extension_relation("mcc_change_log"));
	bool		keep;
	capture_cols cols;
	MemoryContext cxt;
	List	   *dels = NIL;
	List	   *ins = NIL;
	uint32		epoch;
	uint64		xid = U64FromFullTransactionId(GetCurrentFullTransactionIdIfAny());
	ListCell   *lc;

	/* deltas for this server's engine: only while a cache may exist */
	keep = mcc_svc != NULL && !g->reload && mcc_slot_find(reg->relid, &epoch) >= 0;
	if (TRIGGER_FIRED_BY_TRUNCATE(td->tg_event))
	{
		if (mcc_svc != NULL)
			g->reload = true;
		if (log)
			mcc_changelog_append(reg->relid, xid, NIL, NIL, true);
		return;
	}
	if (!keep && !log)
		return;					/* no cache: a later load sees these rows */
	if ((td->tg_oldtable == NULL || tuplestore_tuple_count(td->tg_oldtable) == 0) &&
		(td->tg_newtable == NULL || tuplestore_tuple_count(td->tg_newtable) == 0))
		return;					/* the statement changed no row */
	cols.key = mcc_column_attnum(RelationGetRelid(rel), reg->id_column);
	cols.tpl = mcc_column_attnum(RelationGetRelid(rel), reg->template_column);
	if (cols.key == InvalidAttrNumber || cols.tpl == InvalidAttrNumber || xid == 0)
	{
		/* renamed columns: the registration needs renewing */
		if (keep)
			g->reload = true;
		if (log)
			mcc_changelog_append(reg->relid, xid, NIL, NIL, true);
		return;
	}
	cols.keytype = TupleDescAttr(desc, cols.key - 1)->atttypid;
	/* kept changes live until commit; the log's only until appended */
	cxt = keep ? TopTransactionContext :
		AllocSetContextCreate(CurrentMemoryContext, "mcc change log", ALLOCSET_DEFAULT_SIZES);
	if ((td->tg_oldtable != NULL &&
		 !read_transition(td->tg_oldtable, desc, &cols, false, reg->relid, xid, cxt, &dels)) ||
		(td->tg_newtable != NULL &&
		 !read_transition(td->tg_newtable, desc, &cols, true, reg->relid, xid, cxt, &ins)))
	{
		if (keep)
			g->reload = true;
		if (log)
			mcc_changelog_append(reg->relid, xid, NIL, NIL, true);
		return;
	}
	if (log)
		mcc_changelog_append(reg->relid, xid, dels, ins, false);
	if (!keep)
	{
		MemoryContextDelete(cxt);
		return;
	}
	g->n_ops += list_length(dels) + list_length(ins);
	if (g->n_ops > mcc_max_delta_rows)
	{
		g->reload = true;
		return;
	}
	foreach(lc, dels)
		push_op(lfirst(lc));
	foreach(lc, ins)
		push_op(lfirst(lc));
}

/* The trigger function of every registered gallery and partition. */
Datum
mcc_gallery_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	List	   *regs;
	ListCell   *lc;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_AFTER(td->tg_event) ||
		!TRIGGER_FIRED_FOR_STATEMENT(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("mcc_gallery_trigger() must run as an AFTER ... FOR EACH STATEMENT trigger")));
	regs = mcc_registrations_covering(RelationGetRelid(td->tg_relation));
	foreach(lc, regs)
		capture(td, lfirst(lc));
	return PointerGetDatum(NULL);
}

/* ---------------------------------------------------------------------
 * Pre-commit: send the changes.
 */

/*
 * The changes of gallery, every row version in the order written. Not
 * netted (see the file comment): a version the transaction both inserted
 * and deleted, or a delete and re-insert of the same key and template, may
 * be in the cache in an intermediate state since a load during the
 * transaction, and the engine needs both halves to settle it.
 */
static List *
gallery_changes(Oid gallery)
{
	ListCell   *lc;
	List	   *out = NIL;
	List	   *ops = (level_ops != NULL && n_levels > 1) ? level_ops[1] : NIL;

	foreach(lc, ops)
	{
		delta_op   *op = lfirst(lc);

		if (op->gallery == gallery)
			out = lappend(out, op);
	}
	return out;
}

/* The gallery's id (db, rel, signature), computed without taking locks. */
static bool
gallery_id(Oid gallery, mcc_gallery_id *id)
{
	mcc_registration reg;
	List	   *relids;
	AttrNumber	key_att;
	AttrNumber	tpl_att;

	if (!mcc_registration_get(gallery, &reg))
		return false;
	key_att = mcc_column_attnum(gallery, reg.id_column);
	tpl_att = mcc_column_attnum(gallery, reg.template_column);
	if (key_att == InvalidAttrNumber || tpl_att == InvalidAttrNumber)
		return false;
	/* no locks at commit: a stale signature only costs a reload */
	relids = find_all_inheritors(gallery, NoLock, NULL);
	id->db_oid = MyDatabaseId;
	id->rel_oid = gallery;
	id->signature = mcc_gallery_signature(relids, key_att, tpl_att);
	return true;
}

/* Offset of the generation in a DELTA or RELOAD frame. */
#define GEN_OFFSET	((int) sizeof(mcc_frame_hdr) + 16)

/* Start a DELTA frame for xid; the generation is patched in at send time. */
static StringInfo
delta_frame_begin(const mcc_gallery_id *id, uint64 xid)
{
	StringInfo	f = palloc(sizeof(StringInfoData));

	mcc_frame_begin(f);
	mcc_put_gallery(f, id);
	mcc_put_u64(f, 0);			/* generation */
	mcc_put_u64(f, xid);
	return f;
}

/* Finish a DELTA frame: counts, then inserts and deletes. */
static StringInfo
delta_frame(const mcc_gallery_id *id, uint64 xid, List *ins, List *dels)
{
	StringInfo	f = delta_frame_begin(id, xid);
	ListCell   *lc;

	mcc_put_u32(f, list_length(ins));
	mcc_put_u32(f, list_length(dels));
	foreach(lc, ins)
	{
		delta_op   *op = lfirst(lc);

		mcc_put_i64(f, op->key);
		mcc_put_bytes(f, op->tpl, VARSIZE(op->tpl));
	}
	foreach(lc, dels)
	{
		delta_op   *op = lfirst(lc);

		mcc_put_i64(f, op->key);
		mcc_put_u64(f, op->hash);
	}
	return f;
}

/*
 * DELTA frames for the changes: one or more per xid (frames are cut at
 * DELTA_FRAME_BYTES), in the order the xids first appear.
 */
List *
mcc_delta_frames(const mcc_gallery_id *id, List *changes)
{
	List	   *frames = NIL;

	while (changes != NIL)
	{
		uint64		xid = ((delta_op *) linitial(changes))->xid;
		List	   *ins = NIL;
		List	   *dels = NIL;
		List	   *rest = NIL;
		size_t		bytes = 0;
		ListCell   *lc;

		foreach(lc, changes)
		{
			delta_op   *op = lfirst(lc);
			size_t		size = op->insert ? 12 + VARSIZE(op->tpl) : 16;

			if (op->xid != xid || (bytes > 0 && bytes + size > DELTA_FRAME_BYTES))
				rest = lappend(rest, op);
			else
			{
				bytes += size;
				if (op->insert)
					ins = lappend(ins, op);
				else
					dels = lappend(dels, op);
			}
		}
		frames = lappend(frames, delta_frame(id, xid, ins, dels));
		changes = rest;
	}
	return frames;
}

/* A RELOAD frame (generation patched in at send time). */
static StringInfo
reload_frame(const mcc_gallery_id *id)
{
	StringInfo	f = palloc(sizeof(StringInfoData));

	mcc_frame_begin(f);
	mcc_put_gallery(f, id);
	mcc_put_u64(f, 0);
	return f;
}

/*
 * Under the slot lock: the commit takes the gallery's next generation and
 * sends its frames back to back, all but the last flagged MCC_FRAME_MORE.
 * If a frame cannot be sent, the connection is closed (the engine turns the
 * unfinished generation into a reload) and the slot marks the gallery for
 * reload at that generation.
 */
void
mcc_send_frames(mcc_svc_gallery *s, List *frames, bool reload, bool conn_ok)
{
	uint64		gen = ++s->generation;
	ListCell   *lc;

	if (reload || frames == NIL || !conn_ok)
		s->reload_gen = gen;
	if (frames == NIL || !conn_ok)
		return;
	foreach(lc, frames)
	{
		StringInfo	f = lfirst(lc);
		uint16		flags = lnext(frames, lc) != NULL ? MCC_FRAME_MORE : 0;

		memcpy(f->data + GEN_OFFSET, &gen, sizeof(gen));
		if (!mcc_conn_send_nowait(f, reload ? MCC_MSG_RELOAD : MCC_MSG_DELTA, flags,
								  mcc_conn_next_id(), SEND_TIMEOUT_MS))
		{
			s->reload_gen = gen;
			return;
		}
	}
}

/* Send one gallery's changes. */
static void
publish_gallery(xact_gallery *g)
{
	mcc_gallery_id id;
	List	   *changes = NIL;
	List	   *frames;
	bool		reload = g->reload;
	bool		conn_ok;
	uint32		epoch;
	int			slot;
	char	   *why;

	if (!reload)
	{
		changes = gallery_changes(g->gallery);
		if (changes == NIL)
			return;
	}
	slot = mcc_slot_find(g->gallery, &epoch);
	if (slot < 0)
		return;
	if (!gallery_id(g->gallery, &id))
	{
		reload = true;
		memset(&id, 0, sizeof(id));
		id.db_oid = MyDatabaseId;
		id.rel_oid = g->gallery;
	}
	frames = reload ? list_make1(reload_frame(&id)) : mcc_delta_frames(&id, changes);
	conn_ok = mcc_conn_ensure(&why) == MCC_CONN_OK;
	if (!mcc_slot_lock(slot, g->gallery, epoch, LW_EXCLUSIVE))
		return;					/* the slot was freed: no cache to maintain */
	mcc_send_frames(&mcc_svc->slots[slot], frames, reload, conn_ok);
	LWLockRelease(MCC_SLOT_LOCK(slot));
}

/* Pre-commit: publish every changed gallery. */
static void
publish_all(void)
{
	ListCell   *lc;

	if (mcc_svc == NULL)
		return;
	foreach(lc, xact_galleries)
		publish_gallery(lfirst(lc));
}

/* Transaction callback. */
static void
mcc_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			if (xact_galleries != NIL)
				publish_all();
			reset_xact_state();
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
			reset_xact_state();
			break;
		default:
			break;
	}
}

/* Subtransaction callback: move or drop the subtransaction's changes. */
static void
mcc_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					 SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();

	if (level_ops == NULL || level >= n_levels || level < 2)
		return;
	if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

		level_ops[level - 1] = list_concat(level_ops[level - 1], level_ops[level]);
		MemoryContextSwitchTo(old);
		level_ops[level] = NIL;
	}
	else if (event == SUBXACT_EVENT_ABORT_SUB)
		level_ops[level] = NIL;
}

/* Register the callbacks (every process that loads the module). */
void
mcc_triggers_init(void)
{
	RegisterXactCallback(mcc_xact_callback, NULL);
	RegisterSubXactCallback(mcc_subxact_callback, NULL);
}
