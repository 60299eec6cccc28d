/*
 * service_prune.c: automatic pruning of the change log that feeds hot
 * standbys (src/service/service_changelog.c).
 *
 * The log lives in each database that has the extension, and the supervisor
 * has no database connection. So a backend that appends to a database's log
 * notes the database in shared memory (mcc_prune_note_database), and the
 * supervisor, on a primary, every mcc.change_log_prune_interval seconds,
 * starts one short-lived background worker per noted database
 * ("mcc change log pruner") unless the last one there still runs. The
 * worker connects to the database and runs mcc_change_log_prune(NULL) as
 * the owner of table mcc_change_log (the extension's owner): what an entry
 * needs to be removed (older than mcc.change_log_retention, replayed by
 * every physical replication slot's standby, not a gallery's last) is
 * decided there, in SQL, and a manual call decides the same way. Removing
 * an entry is never wrong: a standby that still lacked it finds the pruned
 * mark and reloads its cache; the rules only spare standbys that reload.
 *
 * A worker takes its database's note and puts it back while entries are
 * left that a later pass may remove; so a dropped database, or a log that
 * holds only each gallery's last entry, costs nothing until the next logged
 * write notes it again. Notes are lost at a restart: a database is pruned
 * again from its next logged write on (until then its log does not grow
 * either). At most
 * MCC_LOG_DBS databases are pruned automatically; beyond that a WARNING says
 * which database's log needs a scheduled mcc_change_log_prune().
 */
#include "mcc_pg.h"
#include "service.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"

PGDLLEXPORT void mcc_prune_main(Datum arg);

/* ---------------------------------------------------------------------
 * Backends: note the database.
 */

void
mcc_prune_note_database(Oid db)
{
	static bool warned = false;
	bool		noted = false;
	int			i;

	if (mcc_svc == NULL)
		return;
	SpinLockAcquire(&mcc_svc->mutex);
	for (i = 0; i < mcc_svc->n_log_dbs && !noted; i++)
		noted = mcc_svc->log_dbs[i] == db;
	if (!noted && mcc_svc->n_log_dbs < MCC_LOG_DBS)
	{
		mcc_svc->log_dbs[mcc_svc->n_log_dbs++] = db;
		noted = true;
	}
	SpinLockRelease(&mcc_svc->mutex);
	if (!noted && !warned)
	{
		warned = true;
		ereport(WARNING,
				(errmsg("the change log of database %u is not pruned automatically", db),
				 errdetail("The matcher service prunes the change logs of at most %d databases.",
						   MCC_LOG_DBS),
				 errhint("Schedule SELECT mcc_change_log_prune(); in this database.")));
	}
}

/* Forget database db (the worker notes it again if its log may need pruning later). */
static void
forget_database(Oid db)
{
	int			i;

	SpinLockAcquire(&mcc_svc->mutex);
	for (i = 0; i < mcc_svc->n_log_dbs; i++)
		if (mcc_svc->log_dbs[i] == db)
		{
			mcc_svc->log_dbs[i] = mcc_svc->log_dbs[--mcc_svc->n_log_dbs];
			break;
		}
	SpinLockRelease(&mcc_svc->mutex);
}

/* ---------------------------------------------------------------------
 * The supervisor: start the workers that are due.
 */

/* The last worker started per database, in the supervisor. */
typedef struct pruner
{
	Oid			db;
	BackgroundWorkerHandle *handle;
} pruner;

static pruner pruners[MCC_LOG_DBS];
static TimestampTz next_due = 0;

/* Is the last worker started for db still running? */
static bool
pruner_running(Oid db)
{
	int			i;
	pid_t		pid;

	for (i = 0; i < MCC_LOG_DBS; i++)
		if (pruners[i].db == db && pruners[i].handle != NULL)
		{
			if (GetBackgroundWorkerPid(pruners[i].handle, &pid) != BGWH_STOPPED)
				return true;
			pfree(pruners[i].handle);
			pruners[i].handle = NULL;
			pruners[i].db = InvalidOid;
		}
	return false;
}

/* Start a worker for db; false if no background worker slot was free. */
static bool
start_pruner(Oid db)
{
	BackgroundWorker bgw;
	BackgroundWorkerHandle *handle;
	int			i;

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "mcc");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "mcc_prune_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "mcc change log pruner for database %u", db);
	snprintf(bgw.bgw_type, BGW_MAXLEN, "mcc change log pruner");
	bgw.bgw_main_arg = ObjectIdGetDatum(db);
	bgw.bgw_notify_pid = MyProcPid;
	if (!RegisterDynamicBackgroundWorker(&bgw, &handle))
		return false;
	for (i = 0; i < MCC_LOG_DBS; i++)
		if (pruners[i].handle == NULL)
		{
			pruners[i].db = db;
			pruners[i].handle = handle;
			return true;
		}
	pfree(handle);				/* cannot happen: one per noted database */
	return true;
}

long
mcc_prune_tick(void)
{
	TimestampTz now = GetCurrentTimestamp();
	Oid			dbs[MCC_LOG_DBS];
	int			n;
	int			i;

	if (mcc_change_log_prune_interval <= 0 || RecoveryInProgress())
		return 1000;			/* a standby prunes nothing: its log is the primary's */
	if (now < next_due)
		return (long) Min((next_due - now) / 1000, 1000);
	next_due = TimestampTzPlusMilliseconds(now, (int64) mcc_change_log_prune_interval * 1000);
	SpinLockAcquire(&mcc_svc->mutex);
	n = mcc_svc->n_log_dbs;
	memcpy(dbs, mcc_svc->log_dbs, n * sizeof(Oid));
	SpinLockRelease(&mcc_svc->mutex);
	for (i = 0; i < n; i++)
		if (!pruner_running(dbs[i]) && !start_pruner(dbs[i]))
		{
			ereport(LOG,
					(errmsg("mcc: no background worker slot to prune the change log of database %u",
							dbs[i]),
					 errhint("Raise max_worker_processes.")));
			break;				/* again at the next interval */
		}
	return 1000;
}

/* ---------------------------------------------------------------------
 * The worker.
 */

/*
 * Run mcc_change_log_prune(NULL) as the log's owner; the entries removed,
 * -1 without the extension. *more: whether entries are left that a later
 * pass may remove (a gallery with more than its last entry).
 */
static int64
prune_as_owner(bool *more)
{
	Oid			log = mcc_extension_relation("mcc_change_log");
	Oid			save_user;
	int			save_sec;
	int64		removed;
	bool		isnull;
	int			rc;

	if (!OidIsValid(log))
		return -1;
	GetUserIdAndSecContext(&save_user, &save_sec);
	SetUserIdAndSecContext(mcc_rel_owner(log), save_sec | SECURITY_LOCAL_USERID_CHANGE);
	rc = SPI_execute(psprintf("SELECT %s.mcc_change_log_prune(NULL)",
							  quote_identifier(get_namespace_name(get_rel_namespace(log)))),
					 false, 1);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "mcc_change_log_prune() failed: %s", SPI_result_code_string(rc));
	removed = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (isnull)
		removed = 0;
	rc = SPI_execute(psprintf("SELECT EXISTS (SELECT FROM %s.mcc_change_log GROUP BY gallery HAVING count(*) > 1)",
							  quote_identifier(get_namespace_name(get_rel_namespace(log)))),
					 true, 1);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read the change log: %s", SPI_result_code_string(rc));
	*more = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SetUserIdAndSecContext(save_user, save_sec);
	return removed;
}

void
mcc_prune_main(Datum arg)
{
	Oid			db = DatumGetObjectId(arg);
	int64		removed;
	bool		more = false;

	BackgroundWorkerUnblockSignals();
	/*
	 * Noted again below while the log has more to prune: a database that
	 * was dropped (the connection fails) or whose log holds only each
	 * gallery's last entry is left alone until its next logged write.
	 */
	forget_database(db);
	/* no user named: a background worker then runs as the bootstrap superuser */
	BackgroundWorkerInitializeConnectionByOid(db, InvalidOid, 0);
	pgstat_report_appname("mcc change log pruner");
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "mcc_change_log_prune()");
	removed = prune_as_owner(&more);
	PopActiveSnapshot();
	SPI_finish();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
	if (more)
		mcc_prune_note_database(db);
	if (removed >= 0)
		ereport(DEBUG1,
				(errmsg("mcc: change log pruning in database %u removed " INT64_FORMAT " entries",
						db, removed)));
	proc_exit(0);
}
