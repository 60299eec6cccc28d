/*
 * service_standby.c: keeping a hot standby's cache current from the change
 * log (src/service/service_changelog.c).
 *
 * On a hot standby no trigger fires and no generation is bumped by writers.
 * A backend's identify() there, after its snapshot was taken, reads the
 * highest log position present in the heap (head). Every change its
 * snapshot sees was replayed before the snapshot was taken, and its log
 * entry (written by the same (sub)transaction before it committed) with it,
 * so head covers them; entries enter the WAL in position order, so every
 * entry up to head is present too (or was removed: aborted, or pruned, which
 * mcc_change_log_pruned tells). If the slot has applied less than head, the
 * backend sends the engine the entries above what it applied, as DELTA
 * frames at the slot's next generations (one generation per run of entries
 * of one xid, in log order), exactly as the primary's writers would have:
 * the engine holds tuple versions and the backend judges them at its
 * snapshot, so entries of transactions still running or aborted are as
 * harmless as a prepared transaction's on the primary. The slot's
 * generation read afterwards then covers every change the snapshot sees.
 *
 * A load during recovery claims the head it read after the horizon, like
 * the generation on the primary: entries above it belong to transactions
 * whose commit was not yet replayed when the horizon was read (their xids
 * are known running, so at or above it), and the engine absorbs what the
 * load saw of them. Catch-up and loads of a gallery are serialized by the
 * load lock.
 *
 * Promotion: a cache fed from the log (slot log_fed) is reloaded by the
 * first identify() after recovery ended (mcc_slot_needs_load); from then on
 * the triggers feed it as on any primary.
 *
 * The change log is opt-in per gallery (mcc_galleries.change_log). A
 * standby does not serve a gallery whose log it sees off: writes on the
 * primary are not logged then, so no cache could be proved current; the
 * search falls back per mcc.fallback, and the server log says why once per
 * backend and gallery. The setting is read from the latest registration
 * replayed, after the statement's snapshot was taken and before the log's
 * head: if it is on, every write the snapshot sees was either logged or
 * made while the log was off, and then the entry that turned it on again
 * (mcc_changelog_start) lies at or below that head and forces a reload from
 * the standby's tables, which hold the write.
 */
#include "mcc_pg.h"
#include "service.h"

#include "access/xlog.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

/* Galleries this backend has logged as searched without a change log. */
static List *logged_no_log = NIL;

char *
mcc_standby_log_problem(Oid relid, const char *relname)
{
	mcc_registration reg;
	MemoryContext old;

	if (mcc_registration_get(relid, &reg) && reg.change_log)
	{
		if (list_member_oid(logged_no_log, relid))
		{
			old = MemoryContextSwitchTo(TopMemoryContext);
			logged_no_log = list_delete_oid(logged_no_log, relid);
			MemoryContextSwitchTo(old);
		}
		return NULL;
	}
	if (!list_member_oid(logged_no_log, relid))
	{
		ereport(LOG,
				(errmsg("mcc: gallery \"%s\" is searched on a hot standby but its change log is off; "
						"the matcher engine cannot keep its cache current here, identify() follows mcc.fallback",
						relname),
				 errhint("On the primary: SELECT mcc_gallery_set_change_log('%s', true);",
						 quote_identifier(relname))));
		old = MemoryContextSwitchTo(TopMemoryContext);
		logged_no_log = lappend_oid(logged_no_log, relid);
		MemoryContextSwitchTo(old);
	}
	return psprintf("gallery \"%s\" has no change log to keep a hot standby's cache current "
					"(on the primary: SELECT mcc_gallery_set_change_log('%s', true))",
					relname, quote_identifier(relname));
}

/* The slot's log_applied; false if the slot went away. */
static bool
slot_log_applied(const mcc_gallery_ref *g, uint64 *applied)
{
	if (!mcc_slot_lock(g->slot, g->relid, g->epoch, LW_SHARED))
		return false;
	*applied = mcc_svc->slots[g->slot].log_applied;
	LWLockRelease(MCC_SLOT_LOCK(g->slot));
	return true;
}

/* The ops of ops that follow the first one and share its xid, removed from *ops. */
static List *
take_run(List **ops)
{
	uint64		xid = ((mcc_delta_op *) linitial(*ops))->xid;
	List	   *run = NIL;

	while (*ops != NIL && ((mcc_delta_op *) linitial(*ops))->xid == xid)
	{
		run = lappend(run, linitial(*ops));
		*ops = list_delete_first(*ops);
	}
	return run;
}

/*
 * Send ops at the slot's next generations, one per run of one xid, and
 * record head as applied. Under the slot lock, as a writer's commit on the
 * primary sends its deltas.
 */
static bool
send_ops(mcc_gallery_ref *g, List *ops, uint64 head, bool conn_ok)
{
	List	   *runs = NIL;
	ListCell   *lc;
	mcc_svc_gallery *s = &mcc_svc->slots[g->slot];

	while (ops != NIL)
		runs = lappend(runs, mcc_delta_frames(&g->id, take_run(&ops)));
	if (!mcc_slot_lock(g->slot, g->relid, g->epoch, LW_EXCLUSIVE))
		return false;
	foreach(lc, runs)
		mcc_send_frames(s, lfirst(lc), false, conn_ok);
	s->log_applied = head;
	LWLockRelease(MCC_SLOT_LOCK(g->slot));
	return true;
}

/* The catch-up, with the load lock held. */
static mcc_catchup_result
catch_up_locked(mcc_gallery_ref *g, Oid log, uint64 head, char **why)
{
	uint64		applied;
	uint64		pruned;
	List	   *ops;
	bool		reload;
	bool		conn_ok;

	if (mcc_slot_needs_load(g, 0) || !slot_log_applied(g, &applied))
		return MCC_CATCHUP_RELOAD;
	if (head <= applied)
		return MCC_CATCHUP_OK;	/* another backend caught up meanwhile */
	ops = mcc_changelog_read(log, g->relid, applied, head, &reload);
	pruned = mcc_changelog_pruned(g->relid);
	/*
	 * Still in recovery after head was read: every entry up to head was
	 * replayed, none is a promoted server's own (those also go out as
	 * deltas, and would be applied twice).
	 */
	if (reload || pruned > applied || list_length(ops) > mcc_max_delta_rows ||
		!RecoveryInProgress())
	{
		mcc_slot_force_reload(g);
		return MCC_CATCHUP_RELOAD;
	}
	conn_ok = mcc_conn_ensure(why) == MCC_CONN_OK;
	if (!send_ops(g, ops, head, conn_ok))
		return MCC_CATCHUP_RELOAD;
	if (!conn_ok)
		return MCC_CATCHUP_FAILED;
	elog(DEBUG1, "mcc: gallery %u caught up with its change log from " UINT64_FORMAT
		 " to " UINT64_FORMAT " (%d entries)", g->relid, applied, head, list_length(ops));
	return MCC_CATCHUP_OK;
}

mcc_catchup_result
mcc_standby_catch_up(mcc_gallery_ref *g, char **why)
{
	Oid			log = mcc_extension_relation("mcc_change_log");
	uint64		head;
	uint64		applied;
	mcc_catchup_result res;

	if (!OidIsValid(log))
	{
		*why = pstrdup("the extension has no change log to feed a standby (ALTER EXTENSION mcc UPDATE on the primary)");
		return MCC_CATCHUP_FAILED;
	}
	head = mcc_changelog_head(log, g->relid);
	if (!slot_log_applied(g, &applied))
		return MCC_CATCHUP_RELOAD;
	if (head <= applied)
		return MCC_CATCHUP_OK;
	mcc_gallery_lock(g->relid, MCC_LOCK_LOAD);
	res = catch_up_locked(g, log, head, why);
	mcc_gallery_unlock(g->relid, MCC_LOCK_LOAD);
	return res;
}
