/*
 * service_register.c: mcc_gallery_register(), mcc_gallery_unregister() and
 * the sql_drop event trigger that forgets dropped galleries.
 *
 * A registration is a row of mcc_galleries (kept by pg_dump through
 * pg_extension_config_dump) plus the four change triggers of
 * service_triggers.c on the gallery and on each of its partitions. Only the
 * gallery's owner may register it, and only when both the caller and the
 * owner are members of MCC_SERVICE_ROLE (or superusers): registering is
 * what lets a gallery take a slot and cache memory of the shared service.
 * mcc_galleries is written as its owner (the extension's owner), so that
 * registering needs no privilege on it. Its priority column says which
 * caches give way first when memory or slots run short; only roles the DBA
 * grants EXECUTE on mcc_gallery_set_priority() may change it. Its
 * change_log column (mcc_gallery_set_change_log(), or register's
 * change_log argument) says whether writes are logged for hot standbys.
 */
#include "mcc_pg.h"
#include "service.h"
#include "service_gallery_checks.h"
#include "gallery.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/namespace.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/event_trigger.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"

PG_FUNCTION_INFO_V1(mcc_gallery_register);
PG_FUNCTION_INFO_V1(mcc_gallery_unregister);
PG_FUNCTION_INFO_V1(mcc_gallery_dropped);
PG_FUNCTION_INFO_V1(mcc_gallery_set_priority);
PG_FUNCTION_INFO_V1(mcc_gallery_set_change_log);

/* The change triggers: name, event clause. */
static const char *const trigger_defs[][2] = {
	{"mcc_gallery_ins", "AFTER INSERT ON %s REFERENCING NEW TABLE AS mcc_new"},
	{"mcc_gallery_upd", "AFTER UPDATE ON %s REFERENCING OLD TABLE AS mcc_old NEW TABLE AS mcc_new"},
	{"mcc_gallery_del", "AFTER DELETE ON %s REFERENCING OLD TABLE AS mcc_old"},
	{"mcc_gallery_trunc", "AFTER TRUNCATE ON %s"},
};

/* Schema-qualified, quoted name of a relation. */
static char *
qualified_name(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

/* Run a utility or DML statement through SPI (already connected). */
static void
spi_exec(const char *sql)
{
	int			rc = SPI_execute(sql, false, 0);

	if (rc < 0)
		elog(ERROR, "SPI_execute failed for \"%s\": %s", sql, SPI_result_code_string(rc));
}

/*
 * Run sql against mcc_galleries as the table's owner, with args $1.. of
 * the given types. Returns SPI_processed.
 */
static uint64
catalog_exec_nulls(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls)
{
	Oid			galleries = mcc_galleries_relid();
	Oid			save_userid;
	int			save_sec;
	uint64		processed;
	int			rc;

	if (!OidIsValid(galleries))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("table mcc_galleries of extension mcc does not exist")));
	GetUserIdAndSecContext(&save_userid, &save_sec);
	SetUserIdAndSecContext(mcc_rel_owner(galleries),
						   save_sec | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
	PG_TRY();
	{
		rc = SPI_execute_with_args(sql, nargs, types, values, nulls, false, 0);
		if (rc < 0)
			elog(ERROR, "SPI_execute failed for \"%s\": %s", sql, SPI_result_code_string(rc));
		processed = SPI_processed;
	}
	PG_FINALLY();
	{
		SetUserIdAndSecContext(save_userid, save_sec);
	}
	PG_END_TRY();
	return processed;
}

/* catalog_exec_nulls() without NULL arguments. */
static uint64
catalog_exec(const char *sql, int nargs, Oid *types, Datum *values)
{
	return catalog_exec_nulls(sql, nargs, types, values, NULL);
}

/* Refuse galleries the service cannot keep current. */
static void
check_registrable(const mcc_gallery *g, List *relids)
{
	Relation	rel = relation_open(g->relid, NoLock);
	ListCell   *lc;

	if (g->relkind != RELKIND_RELATION && g->relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", g->relname),
				 errdetail("Only tables and partitioned tables can be registered as galleries.")));
	if (rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("temporary table \"%s\" cannot be registered as a gallery", g->relname)));
	if (g->relkind == RELKIND_RELATION && list_length(relids) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table \"%s\" has inheritance children", g->relname),
				 errdetail("Keys are not unique across inheritance children; use declarative partitioning.")));
	if (!TupleDescAttr(RelationGetDescr(rel), g->key_att - 1)->attnotnull)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_COLUMN_DEFINITION),
				 errmsg("key column \"%s\" of \"%s\" must be NOT NULL", g->key_name, g->relname)));
	relation_close(rel, NoLock);
	foreach(lc, relids)
	{
		char		kind = get_rel_relkind(lfirst_oid(lc));

		if (kind != RELKIND_RELATION && kind != RELKIND_PARTITIONED_TABLE)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("partition \"%s\" of \"%s\" is not a table",
							get_rel_name(lfirst_oid(lc)), g->relname),
					 errdetail("The matcher service reads partitions' heaps directly.")));
	}
}

/* Raise unless a valid unique index covers exactly the key column. */
static void
check_unique_key(const mcc_gallery *g)
{
	if (!mcc_key_is_unique(g->relid, g->key_att))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("key column \"%s\" of \"%s\" has no unique index", g->key_name, g->relname),
				 errhint("Make it the primary key, or create a unique index on it alone.")));
}

/* Drop those of our triggers that exist on one relation. */
static void
drop_triggers(Oid relid)
{
	char	   *rel = qualified_name(relid);
	int			i;

	for (i = 0; i < lengthof(trigger_defs); i++)
		if (OidIsValid(get_trigger_oid(relid, trigger_defs[i][0], true)))
			spi_exec(psprintf("DROP TRIGGER %s ON %s", trigger_defs[i][0], rel));
}

/* (Re)create our triggers on one relation, firing in every replication role. */
static void
create_triggers(Oid relid, const char *func)
{
	char	   *rel = qualified_name(relid);
	int			i;

	drop_triggers(relid);
	for (i = 0; i < lengthof(trigger_defs); i++)
	{
		spi_exec(psprintf("CREATE TRIGGER %s %s FOR EACH STATEMENT EXECUTE FUNCTION %s()",
						  trigger_defs[i][0], psprintf(trigger_defs[i][1], rel), func));
		spi_exec(psprintf("ALTER TABLE ONLY %s ENABLE ALWAYS TRIGGER %s", rel, trigger_defs[i][0]));
	}
}

/* The extension's schema, quoted. */
static const char *
catalog_schema(void)
{
	return quote_identifier(get_namespace_name(get_rel_namespace(mcc_galleries_relid())));
}

/* Raise unless mcc_galleries has column (added by the 0.2.0 update). */
static void
require_column(const char *column)
{
	if (mcc_column_attnum(mcc_galleries_relid(), column) == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table mcc_galleries has no %s column", column),
				 errhint("Run ALTER EXTENSION mcc UPDATE.")));
}

/*
 * Record the registration (insert or update). change_log: 1 on, 0 off, -1
 * keep the current setting (off for a new registration). Returns whether
 * the gallery's change log is on afterwards.
 */
static bool
store_registration(const mcc_gallery *g, int change_log)
{
	Oid			types[4] = {OIDOID, NAMEOID, NAMEOID, BOOLOID};
	Datum		values[4];
	NameData	key;
	NameData	tpl;
	bool		isnull;

	namestrcpy(&key, g->key_name);
	namestrcpy(&tpl, g->tpl_name);
	values[0] = ObjectIdGetDatum(g->relid);
	values[1] = NameGetDatum(&key);
	values[2] = NameGetDatum(&tpl);
	if (mcc_column_attnum(mcc_galleries_relid(), "change_log") == InvalidAttrNumber)
	{
		/* 0.1.0's table: no change log */
		if (change_log == 1)
			require_column("change_log");
		catalog_exec(psprintf("INSERT INTO %s.mcc_galleries (gallery, id_column, template_column) "
							  "VALUES ($1::pg_catalog.oid::pg_catalog.regclass, $2, $3) "
							  "ON CONFLICT (gallery) DO UPDATE SET id_column = EXCLUDED.id_column, "
							  "template_column = EXCLUDED.template_column, registered_at = pg_catalog.now()",
							  catalog_schema()),
					 3, types, values);
		return false;
	}
	/* NULL $4 keeps the setting; a new row gets the column's default (off) */
	values[3] = BoolGetDatum(change_log == 1);
	catalog_exec_nulls(psprintf("INSERT INTO %s.mcc_galleries AS r (gallery, id_column, template_column, change_log) "
						  "VALUES ($1::pg_catalog.oid::pg_catalog.regclass, $2, $3, COALESCE($4, false)) "
						  "ON CONFLICT (gallery) DO UPDATE SET id_column = EXCLUDED.id_column, "
						  "template_column = EXCLUDED.template_column, registered_at = pg_catalog.now(), "
						  "change_log = COALESCE($4, r.change_log) "
						  "RETURNING r.change_log",
						  catalog_schema()),
				 4, types, values, change_log < 0 ? "   n" : NULL);
	return DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * Send the engine a request about a gallery (any signature) and wait for
 * its OK, if it can be reached; priority: PRIORITY's field, NULL for none.
 */
static void
engine_gallery_request(uint16 type, Oid db, Oid relid, const int32 *priority)
{
	char	   *why;

	if (mcc_svc != NULL && mcc_conn_ensure(&why) == MCC_CONN_OK)
	{
		StringInfoData f;
		mcc_gallery_id id = {db, relid, 0};
		uint64		req = mcc_conn_next_id();
		mcc_reply	reply;

		mcc_frame_begin(&f);
		mcc_put_gallery(&f, &id);
		if (priority != NULL)
			mcc_put_u32(&f, (uint32) *priority);
		mcc_conn_send(&f, type, req);
		(void) mcc_conn_wait_reply(req, &reply);
	}
}

/* Tell the engine to drop its caches of (db, relid). */
void
mcc_service_evict_engine(Oid db, Oid relid)
{
	engine_gallery_request(MCC_MSG_EVICT, db, relid, NULL);
}

/* Tell the engine to drop its cache of the gallery and forget the slot. */
static void
evict(Oid relid)
{
	mcc_slot_free(MyDatabaseId, relid);
	mcc_service_evict_engine(MyDatabaseId, relid);
}

/* Raise unless role roleid (what: "you", or the owner) may use the service. */
static void
check_service_member(Oid roleid, const char *relname, bool is_caller)
{
	if (mcc_role_may_use_service(roleid))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to register gallery \"%s\"", relname),
			 is_caller ?
			 errdetail("Only members of role \"%s\" may register galleries with the matcher service.",
					   MCC_SERVICE_ROLE) :
			 errdetail("The owner of the gallery, role \"%s\", is not a member of role \"%s\"; its cache would take the service's memory.",
					   GetUserNameFromId(roleid, false), MCC_SERVICE_ROLE),
			 errhint("A superuser may run: GRANT %s TO %s;", MCC_SERVICE_ROLE,
					 quote_identifier(GetUserNameFromId(roleid, false)))));
}

/* Exported for mcc_gallery_evict() (src/service/service_gallery.c). */
void
mcc_service_evict(Oid relid)
{
	evict(relid);
}

/*
 * mcc_gallery_register(gallery regclass, id_column name, template_column name,
 *						change_log boolean)
 *
 * Registers the gallery with the matcher service: records it and installs
 * the change triggers on it and its partitions. Running it again refreshes
 * both (after new partitions, renamed columns or disabled triggers).
 * change_log (absent in 0.1.0's declaration; NULL keeps the setting) turns
 * the change log for hot standbys on or off; with it on, the log gets a
 * reload entry as the standbys' start point (src/service/service_changelog.c).
 */
Datum
mcc_gallery_register(PG_FUNCTION_ARGS)
{
	Oid			relid;
	mcc_gallery g;
	List	   *relids;
	ListCell   *lc;
	char	   *func;
	int			change_log = -1;
	bool		log_on;

	mcc_pg_require_args(fcinfo, "mcc_gallery_register()", (const char *const[]) {"gallery"}, 1);
	relid = PG_GETARG_OID(0);
	mcc_check_owner(relid);
	check_service_member(GetUserId(), get_rel_name(relid), true);
	check_service_member(mcc_rel_owner(relid), get_rel_name(relid), false);
	mcc_gallery_resolve(relid,
						PG_ARGISNULL(1) ? NULL : NameStr(*PG_GETARG_NAME(1)),
						PG_ARGISNULL(2) ? NULL : NameStr(*PG_GETARG_NAME(2)),
						&g);
	relids = find_all_inheritors(relid, ShareRowExclusiveLock, NULL);
	check_registrable(&g, relids);
	check_unique_key(&g);
	func = psprintf("%s.mcc_gallery_trigger",
					quote_identifier(get_namespace_name(get_rel_namespace(mcc_galleries_relid()))));

	if (PG_NARGS() >= 4 && !PG_ARGISNULL(3))
		change_log = PG_GETARG_BOOL(3) ? 1 : 0;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	log_on = store_registration(&g, change_log);
	foreach(lc, relids)
		create_triggers(lfirst_oid(lc), func);
	SPI_finish();
	/* writers are locked out (ShareRowExclusiveLock): a clean start point */
	if (log_on)
		mcc_changelog_start(relid);
	/* a cache built under an older registration is not trusted */
	mcc_slot_free(MyDatabaseId, relid);
	PG_RETURN_VOID();
}

/* mcc_gallery_unregister(gallery regclass): triggers, record and cache go. */
Datum
mcc_gallery_unregister(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	Oid			types[1] = {OIDOID};
	Datum		values[1];
	List	   *relids;
	ListCell   *lc;
	uint64		n;

	mcc_check_owner(relid);
	relids = find_all_inheritors(relid, ShareRowExclusiveLock, NULL);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	foreach(lc, relids)
		drop_triggers(lfirst_oid(lc));
	values[0] = ObjectIdGetDatum(relid);
	n = catalog_exec(psprintf("DELETE FROM %s.mcc_galleries WHERE gallery = $1::pg_catalog.oid",
							  quote_identifier(get_namespace_name(get_rel_namespace(mcc_galleries_relid())))),
					 1, types, values);
	SPI_finish();
	evict(relid);
	PG_RETURN_BOOL(n > 0);
}

/*
 * Event trigger on sql_drop: forget registrations of dropped tables and
 * evict their caches. Partitions need nothing: their gallery's signature
 * changes and its cache reloads.
 */
Datum
mcc_gallery_dropped(PG_FUNCTION_ARGS)
{
	uint64		i;
	uint64		n;
	Oid		   *gone;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("mcc_gallery_dropped() must run as an event trigger")));
	if (!OidIsValid(mcc_galleries_relid()))
		PG_RETURN_NULL();		/* the extension itself is going */
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	n = catalog_exec(psprintf("DELETE FROM %s.mcc_galleries g "
							  "USING pg_catalog.pg_event_trigger_dropped_objects() d "
							  "WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass "
							  "AND d.objsubid = 0 AND g.gallery::pg_catalog.oid = d.objid "
							  "RETURNING g.gallery::pg_catalog.oid",
							  quote_identifier(get_namespace_name(get_rel_namespace(mcc_galleries_relid())))),
					 0, NULL, NULL);
	gone = SPI_palloc(Max(n, 1) * sizeof(Oid));
	for (i = 0; i < n; i++)
	{
		bool		isnull;

		gone[i] = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
												 SPI_tuptable->tupdesc, 1, &isnull));
	}
	SPI_finish();
	for (i = 0; i < n; i++)
		evict(gone[i]);
	PG_RETURN_NULL();
}

/* Set one column of relid's registration; raise if it is not registered. */
static void
set_registration_column(Oid relid, const char *column, Oid type, Datum value)
{
	Oid			types[2] = {OIDOID, type};
	Datum		values[2];
	uint64		n;

	require_column(column);
	values[0] = ObjectIdGetDatum(relid);
	values[1] = value;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	n = catalog_exec(psprintf("UPDATE %s.mcc_galleries SET %s = $2 WHERE gallery = $1::pg_catalog.oid",
							  catalog_schema(), quote_identifier(column)),
					 2, types, values);
	SPI_finish();
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("relation \"%s\" is not a registered gallery", get_rel_name(relid)),
				 errhint("Register it with mcc_gallery_register().")));
}

/*
 * mcc_gallery_set_priority(gallery regclass, priority integer) RETURNS void
 *
 * Records the gallery's priority and tells the service: when cache memory
 * or slots run short, a gallery may evict only galleries of lower priority,
 * or of equal priority used less recently. EXECUTE is revoked from PUBLIC:
 * the DBA decides who may grant priority.
 */
Datum
mcc_gallery_set_priority(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	int32		priority = PG_GETARG_INT32(1);
	uint32		epoch;
	int			slot;

	if (get_rel_relkind(relid) == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	set_registration_column(relid, "priority", INT4OID, Int32GetDatum(priority));
	if (mcc_svc == NULL)
		PG_RETURN_VOID();
	/* the slot and the engine follow at once (a rollback leaves them until the next use) */
	if ((slot = mcc_slot_find(relid, &epoch)) >= 0 &&
		mcc_slot_lock(slot, relid, epoch, LW_EXCLUSIVE))
	{
		mcc_svc->slots[slot].priority = priority;
		LWLockRelease(MCC_SLOT_LOCK(slot));
	}
	engine_gallery_request(MCC_MSG_PRIORITY, MyDatabaseId, relid, &priority);
	PG_RETURN_VOID();
}

/*
 * mcc_gallery_set_change_log(gallery regclass, enabled boolean) RETURNS void
 *
 * Turns the change log of a registered gallery on or off, on the primary,
 * as its owner. The gallery and its partitions are locked against writers
 * (ShareRowExclusiveLock, as registering does) until commit: a writer
 * either finished before, or reads the new setting when it gets its lock.
 * Turning it on appends a reload entry, in this transaction: a standby that
 * sees the log on also sees that entry and loads afresh from its own
 * tables, which hold every write made while the log was off. A standby that
 * sees it off does not serve the gallery from its engine
 * (src/service/service_standby.c).
 */
Datum
mcc_gallery_set_change_log(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	bool		enabled = PG_GETARG_BOOL(1);

	PreventCommandDuringRecovery("mcc_gallery_set_change_log()");
	mcc_check_owner(relid);
	require_column("change_log");
	(void) find_all_inheritors(relid, ShareRowExclusiveLock, NULL);
	set_registration_column(relid, "change_log", BOOLOID, BoolGetDatum(enabled));
	if (enabled)
		mcc_changelog_start(relid);
	PG_RETURN_VOID();
}
