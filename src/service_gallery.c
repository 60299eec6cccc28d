/*
 * service_gallery.c: mcc_gallery_preload(), mcc_gallery_evict(), the
 * mcc_gallery_status view's function and mcc_service_status().
 */
#include "mcc_pg.h"
#include "service.h"
#include "gallery.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(mcc_gallery_preload);
PG_FUNCTION_INFO_V1(mcc_gallery_evict);
PG_FUNCTION_INFO_V1(mcc_gallery_status);
PG_FUNCTION_INFO_V1(mcc_service_status);

/* Microseconds between the Unix and the PostgreSQL epochs. */
#define UNIX_TO_PG_USEC \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * USECS_PER_SEC)

/* Raise that the service cannot do what was asked. */
static void
unavailable(const char *what, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("cannot %s: %s", what, why)));
}

/*
 * mcc_gallery_preload(gallery regclass) RETURNS bigint
 *
 * Loads the registered gallery into the engine's cache now (a full reload
 * even if a current cache exists) and returns the entries it holds.
 */
Datum
mcc_gallery_preload(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	mcc_registration reg;
	mcc_gallery g;
	mcc_gallery_ref ref;
	uint64		entries;
	char	   *why;

	if (!mcc_registration_get(relid, &reg))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("relation \"%s\" is not a registered gallery", get_rel_name(relid)),
				 errhint("Register it with mcc_gallery_register().")));
	mcc_gallery_resolve(relid, reg.id_column, reg.template_column, &g);
	if (mcc_svc == NULL)
		unavailable("preload", "mcc is not in shared_preload_libraries");
	mcc_gallery_ref_init(&ref, &g);
	if ((why = mcc_gallery_triggers_missing(ref.relids)) != NULL)
		unavailable("preload", why);
	if (!mcc_gallery_ref_slot(&ref))
		unavailable("preload", "the matcher service already tracks mcc.max_galleries galleries");
	if (mcc_conn_ensure(&why) != MCC_CONN_OK)
		unavailable("preload", why);
	switch (mcc_gallery_load(&ref, 0, true, &entries, &why))
	{
		case MCC_LOAD_OK:
		case MCC_LOAD_SKIPPED:
			break;
		case MCC_LOAD_MEMORY:
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("cannot preload: %s", why),
					 errhint("Raise mcc.cache_memory_limit or evict other galleries.")));
			break;
		case MCC_LOAD_MIXED:
		case MCC_LOAD_UNAVAILABLE:
			unavailable("preload", why);
	}
	PG_RETURN_INT64((int64) entries);
}

/*
 * mcc_gallery_evict(gallery regclass) RETURNS boolean
 *
 * Drops the engine's cache of the gallery (the owner's decision); true if
 * the service was tracking it. The next identify() reloads it.
 */
Datum
mcc_gallery_evict(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	uint32		epoch;
	bool		tracked;

	mcc_check_owner(relid);
	if (mcc_svc == NULL)
		PG_RETURN_BOOL(false);
	tracked = mcc_slot_find(relid, false, &epoch) >= 0;
	mcc_service_evict(relid);
	PG_RETURN_BOOL(tracked);
}

/* One gallery as the engine's STATUS reports it. */
typedef struct engine_gallery
{
	mcc_gallery_id id;
	uint32		profile_id;
	uint64		generation;
	uint64		entries;
	uint64		searchable;
	uint64		cylinders;
	uint64		host_bytes;
	uint64		device_bytes;
	int64		loaded_at_usec;
	double		load_seconds;
	uint64		searches;
	char		device[33];
} engine_gallery;

/* The engine's STATUS, or NIL when it cannot be asked. */
static List *
engine_status(void)
{
	StringInfoData f;
	mcc_reply	reply;
	uint64		id;
	uint32		n;
	uint32		i;
	List	   *out = NIL;
	char	   *why;

	if (mcc_conn_ensure(&why) != MCC_CONN_OK)
		return NIL;
	id = mcc_conn_next_id();
	mcc_frame_begin(&f);
	mcc_conn_send(&f, MCC_MSG_STATUS, id);
	if (!mcc_conn_wait_reply(id, &reply) || reply.type != MCC_MSG_STATUS_REPLY)
		return NIL;
	n = mcc_get_u32(&reply.body);
	for (i = 0; i < n; i++)
	{
		engine_gallery *e = palloc0(sizeof(engine_gallery));

		mcc_get_gallery(&reply.body, &e->id);
		e->profile_id = mcc_get_u32(&reply.body);
		e->generation = mcc_get_u64(&reply.body);
		e->entries = mcc_get_u64(&reply.body);
		e->searchable = mcc_get_u64(&reply.body);
		e->cylinders = mcc_get_u64(&reply.body);
		e->host_bytes = mcc_get_u64(&reply.body);
		e->device_bytes = mcc_get_u64(&reply.body);
		e->loaded_at_usec = mcc_get_i64(&reply.body);
		e->load_seconds = mcc_get_f64(&reply.body);
		e->searches = mcc_get_u64(&reply.body);
		memcpy(e->device, mcc_get_raw(&reply.body, 32), 32);
		e->device[32] = '\0';
		out = lappend(out, e);
	}
	return out;
}

/* The engine's entry for relid in this database, or NULL. */
static engine_gallery *
find_engine_gallery(List *status, Oid relid)
{
	ListCell   *lc;

	foreach(lc, status)
	{
		engine_gallery *e = lfirst(lc);

		if (e->id.db_oid == MyDatabaseId && e->id.rel_oid == relid)
			return e;
	}
	return NULL;
}

/* A copy of the gallery's slot; false if it has none. */
static bool
slot_copy(Oid relid, mcc_svc_gallery *out)
{
	uint32		epoch;
	int			i = mcc_svc != NULL ? mcc_slot_find(relid, false, &epoch) : -1;

	if (i < 0 || !mcc_slot_lock(i, relid, epoch, LW_SHARED))
		return false;
	*out = mcc_svc->slots[i];
	LWLockRelease(MCC_SLOT_LOCK(i));
	return true;
}

#define STATUS_COLS 17

/* One row of mcc_gallery_status. */
static void
status_row(ReturnSetInfo *rsinfo, Oid relid, Datum id_column, Datum tpl_column,
		   List *status, bool service)
{
	Datum		v[STATUS_COLS];
	bool		n[STATUS_COLS];
	mcc_svc_gallery s;
	bool		has_slot = slot_copy(relid, &s);
	engine_gallery *e = find_engine_gallery(status, relid);
	const mcc_profile *p = e != NULL ? mcc_profile_by_id((int) e->profile_id) : NULL;
	const char *state;
	int			i;

	if (!has_slot)
		memset(&s, 0, sizeof(s));
	for (i = 0; i < STATUS_COLS; i++)
		n[i] = true;
	if (!service)
		state = "no service";
	else if (!has_slot || e == NULL || s.loaded_gen == 0)
		state = "not cached";
	else if (s.reload_gen > s.loaded_gen)
		state = "stale";
	else
		state = "cached";
	v[0] = ObjectIdGetDatum(relid);
	v[1] = id_column;
	v[2] = tpl_column;
	v[3] = CStringGetTextDatum(state);
	n[0] = n[1] = n[2] = n[3] = false;
	if (has_slot)
	{
		v[4] = Int64GetDatum((int64) s.generation);
		v[5] = Int64GetDatum((int64) s.loaded_gen);
		n[4] = n[5] = false;
	}
	if (e != NULL)
	{
		v[6] = p != NULL ? CStringGetTextDatum(p->name) : (Datum) 0;
		n[6] = p == NULL;
		v[7] = Int64GetDatum((int64) e->entries);
		v[8] = Int64GetDatum((int64) e->searchable);
		v[9] = Int64GetDatum((int64) e->cylinders);
		v[10] = Int64GetDatum((int64) e->host_bytes);
		v[11] = Int64GetDatum((int64) e->device_bytes);
		v[12] = CStringGetTextDatum(e->device);
		v[13] = TimestampTzGetDatum((TimestampTz) (e->loaded_at_usec - UNIX_TO_PG_USEC));
		v[14] = Float8GetDatum(e->load_seconds);
		v[15] = Float8GetDatum(e->load_seconds > 0 ? (double) e->entries / e->load_seconds : 0);
		v[16] = Int64GetDatum((int64) e->searches);
		for (i = 7; i < STATUS_COLS; i++)
			n[i] = false;
		n[13] = e->loaded_at_usec == 0;
	}
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, n);
}

/*
 * mcc_gallery_status() RETURNS SETOF record: one row per registered gallery
 * of the current database with what the service knows of it.
 */
Datum
mcc_gallery_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			galleries = mcc_galleries_relid();
	List	   *status;
	uint64		row;

	InitMaterializedSRF(fcinfo, 0);
	if (!OidIsValid(galleries))
		return (Datum) 0;
	status = engine_status();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute(psprintf("SELECT gallery::pg_catalog.oid, id_column, template_column FROM %s.mcc_galleries ORDER BY 1",
							 quote_identifier(get_namespace_name(get_rel_namespace(galleries)))),
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read mcc_galleries");
	for (row = 0; row < SPI_processed; row++)
	{
		HeapTuple	tup = SPI_tuptable->vals[row];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;

		status_row(rsinfo, DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull)),
				   SPI_getbinval(tup, desc, 2, &isnull), SPI_getbinval(tup, desc, 3, &isnull),
				   status, mcc_service_state_now(NULL) == MCC_SVC_READY);
	}
	SPI_finish();
	return (Datum) 0;
}

/* Name of a service state. */
static const char *
state_name(mcc_service_state st)
{
	switch (st)
	{
		case MCC_SVC_ABSENT:
			return "stopped";
		case MCC_SVC_STARTING:
			return "starting";
		case MCC_SVC_READY:
			return "ready";
		case MCC_SVC_BACKOFF:
			return "restarting";
	}
	return "unknown";
}

/*
 * mcc_service_status() RETURNS TABLE(state text, supervisor_pid int,
 * engine_pid int, incarnation bigint, restarts int, ready_since timestamptz,
 * socket text)
 */
Datum
mcc_service_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		v[7];
	bool		n[7] = {false, true, true, true, true, true, true};
	mcc_svc_shared copy;

	InitMaterializedSRF(fcinfo, 0);
	if (mcc_svc == NULL)
	{
		v[0] = CStringGetTextDatum("not preloaded");
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, n);
		return (Datum) 0;
	}
	SpinLockAcquire(&mcc_svc->mutex);
	memcpy(&copy, mcc_svc, offsetof(mcc_svc_shared, slots));
	SpinLockRelease(&mcc_svc->mutex);
	v[0] = CStringGetTextDatum(state_name((mcc_service_state) pg_atomic_read_u32(&copy.state)));
	v[1] = Int32GetDatum(copy.supervisor_pid);
	v[2] = Int32GetDatum(copy.engine_pid);
	v[3] = Int64GetDatum((int64) copy.incarnation);
	v[4] = Int32GetDatum(copy.restarts);
	v[5] = TimestampTzGetDatum(copy.ready_since);
	v[6] = CStringGetTextDatum(copy.socket_path);
	n[1] = copy.supervisor_pid == 0;
	n[2] = copy.engine_pid == 0;
	n[3] = copy.incarnation == 0;
	n[4] = false;
	n[5] = copy.ready_since == 0;
	n[6] = false;
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, n);
	return (Datum) 0;
}
