/*
 * service_gallery.c: mcc_gallery_preload(), mcc_gallery_evict(), the
 * mcc_gallery_status view's function and mcc_service_status().
 */
#include "mcc_pg.h"
#include "service.h"
#include "service_load.h"
#include "gallery.h"

#include "access/xlog.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/procarray.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(mcc_gallery_preload);
PG_FUNCTION_INFO_V1(mcc_gallery_evict);
PG_FUNCTION_INFO_V1(mcc_gallery_status);
PG_FUNCTION_INFO_V1(mcc_service_status);

/* The longest wait for the engine's figures in a status view. */
#define STATUS_TIMEOUT_MS	2000

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
 * Loads the registered gallery into the engine's cache now and returns the
 * rows (with a template) that the caller can see, under its privileges
 * and row-level security. The gallery's owner gets a full reload even if a
 * current cache exists; anyone else with SELECT only has a stale or
 * missing cache loaded, as identify() would: a reader cannot make the
 * service reload another's gallery at will. An interactive caller gets a
 * NOTICE of progress every mcc.progress_interval.
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
	int			opts = MCC_LOADOPT_PROGRESS;

	if (!mcc_registration_get(relid, &reg))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("relation \"%s\" is not a registered gallery", get_rel_name(relid)),
				 errhint("Register it with mcc_gallery_register().")));
	mcc_gallery_resolve(relid, reg.id_column, reg.template_column, &g);
	if (mcc_svc == NULL)
		unavailable("preload", "mcc is not in shared_preload_libraries");
	/* a standby would load a cache it cannot keep current (src/service/service_standby.c) */
	if (RecoveryInProgress() && (why = mcc_standby_log_problem(relid, get_rel_name(relid))) != NULL)
		unavailable("preload", why);
	if ((why = mcc_gallery_owner_problem(relid)) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot preload: %s", why),
				 errdetail("Only galleries of members of role \"%s\" take the matcher service's memory.",
						   MCC_SERVICE_ROLE),
				 errhint("A superuser may run: GRANT %s TO %s;", MCC_SERVICE_ROLE,
						 quote_identifier(GetUserNameFromId(mcc_rel_owner(relid), false)))));
	if (pg_class_ownercheck(relid, GetUserId()))
		opts |= MCC_LOADOPT_FORCE;
	mcc_gallery_ref_init(&ref, &g);
	if ((why = mcc_gallery_triggers_missing(ref.relids)) != NULL)
		unavailable("preload", why);
	if (!mcc_gallery_ref_slot(&ref))
		unavailable("preload", "the matcher service already tracks mcc.max_galleries galleries of higher priority or being loaded");
	if (mcc_conn_ensure(&why) != MCC_CONN_OK)
		unavailable("preload", why);
	mcc_load_visible_forget();
	switch (mcc_gallery_load(&ref, 0, opts, &entries, &why))
	{
		case MCC_LOAD_OK:
		case MCC_LOAD_SKIPPED:
			break;
		case MCC_LOAD_KEPT:
			ereport(NOTICE,
					(errmsg("gallery \"%s\" was not reloaded: %s", g.relname, why)));
			break;
		case MCC_LOAD_MEMORY:
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("cannot preload: %s", why),
					 errhint("Raise mcc.cache_memory_limit, evict other galleries, or raise the gallery's priority.")));
			break;
		case MCC_LOAD_MIXED:
		case MCC_LOAD_UNAVAILABLE:
			unavailable("preload", why);
	}
	/*
	 * What the caller may know: its own rows, not the cache's tuple
	 * versions; the load's scan counted them if it could
	 */
	if (mcc_load_visible_rows(relid, &entries))
		PG_RETURN_INT64((int64) entries);
	PG_RETURN_INT64(mcc_count_rows(&g));
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
	tracked = mcc_slot_find(relid, &epoch) >= 0;
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

/*
 * Ask the engine a question without a body (type) and wait for its answer
 * of type reply_type; false when it cannot be asked or does not answer in
 * STATUS_TIMEOUT_MS.
 */
static bool
ask_engine(uint16 type, uint16 reply_type, mcc_reply *reply)
{
	StringInfoData f;
	uint64		id;
	char	   *why;

	if (mcc_conn_ensure(&why) != MCC_CONN_OK)
		return false;
	id = mcc_conn_next_id();
	mcc_frame_begin(&f);
	mcc_conn_send(&f, type, id);
	return mcc_conn_wait_reply_ms(id, reply, STATUS_TIMEOUT_MS) && reply->type == reply_type;
}

/* The engine's STATUS, or NIL when it cannot be asked. */
static List *
engine_status(void)
{
	mcc_reply	reply;
	uint32		n;
	uint32		i;
	List	   *out = NIL;

	if (!ask_engine(MCC_MSG_STATUS, MCC_MSG_STATUS_REPLY, &reply))
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
	int			i = mcc_svc != NULL ? mcc_slot_find(relid, &epoch) : -1;

	if (i < 0 || !mcc_slot_lock(i, relid, epoch, LW_SHARED))
		return false;
	*out = mcc_svc->slots[i];
	LWLockRelease(MCC_SLOT_LOCK(i));
	return true;
}

#define STATUS_COLS 23		/* 17 in 0.1.0: a 0.1.0 definition takes the first ones */

/* May the caller read the gallery's key and template columns? */
static bool
may_read(Oid relid, Name key, Name tpl)
{
	Oid			user = GetUserId();
	AttrNumber	k = mcc_column_attnum(relid, NameStr(*key));
	AttrNumber	t = mcc_column_attnum(relid, NameStr(*tpl));

	if (pg_class_aclcheck(relid, user, ACL_SELECT) == ACLCHECK_OK)
		return true;
	return k != InvalidAttrNumber && t != InvalidAttrNumber &&
		pg_attribute_aclcheck(relid, k, user, ACL_SELECT) == ACLCHECK_OK &&
		pg_attribute_aclcheck(relid, t, user, ACL_SELECT) == ACLCHECK_OK;
}

/* The gallery's state for the view. */
static const char *
state_of(bool service, bool has_slot, const mcc_svc_gallery *s, const engine_gallery *e,
		 bool loading)
{
	if (!service)
		return "no service";
	if (loading)
		return "loading";
	if (e == NULL)
		return "not cached";
	/* the engine holds a copy the slot does not trust (or knows to be behind) */
	if (!has_slot || s->loaded_gen == 0 || s->reload_gen > s->loaded_gen)
		return "stale";
	return "cached";
}

/* The load in progress of slot copy s: columns 18..22 (v and n from index 18). */
static bool
put_load_progress(const mcc_svc_gallery *s, Datum *v, bool *n)
{
	double		elapsed;
	double		total;
	double		rate;
	double		left;

	if (s->load_pid == 0 || BackendPidGetProc(s->load_pid) == NULL)
		return false;
	elapsed = (double) (GetCurrentTimestamp() - s->load_started) / USECS_PER_SEC;
	mcc_load_estimate(s->load_rows, s->load_rows_expected, s->load_blocks,
					  s->load_blocks_total, elapsed, &total, &rate, &left);
	v[0] = Int32GetDatum(s->load_pid);
	v[1] = Int64GetDatum((int64) s->load_rows);
	v[2] = Int64GetDatum((int64) Max(total, 0));
	v[3] = Float8GetDatum(rate);
	v[4] = TimestampTzGetDatum(TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														   (int64) (left * 1000)));
	n[0] = n[1] = false;
	n[2] = total < 0;
	n[3] = rate < 0;
	n[4] = left < 0;
	return true;
}

/*
 * One row of mcc_gallery_status. restricted: the caller reads the gallery
 * under row-level security: its counts and generations would tell what
 * the policy hides, so only the registration and the state are shown.
 */
static void
status_row(ReturnSetInfo *rsinfo, Oid relid, Datum id_column, Datum tpl_column, int32 priority,
		   List *status, bool service, bool restricted)
{
	Datum		v[STATUS_COLS];
	bool		n[STATUS_COLS];
	mcc_svc_gallery s;
	bool		has_slot = slot_copy(relid, &s);
	engine_gallery *e = find_engine_gallery(status, relid);
	const mcc_profile *p = e != NULL ? mcc_profile_by_id((int) e->profile_id) : NULL;
	bool		loading;
	int			i;

	if (!has_slot)
		memset(&s, 0, sizeof(s));
	for (i = 0; i < STATUS_COLS; i++)
		n[i] = true;
	loading = service && has_slot && put_load_progress(&s, v + 18, n + 18);
	v[0] = ObjectIdGetDatum(relid);
	v[1] = id_column;
	v[2] = tpl_column;
	v[3] = CStringGetTextDatum(state_of(service, has_slot, &s, e, loading));
	v[17] = Int32GetDatum(priority);
	n[0] = n[1] = n[2] = n[3] = n[17] = false;
	if (restricted)
	{
		for (i = 19; i < STATUS_COLS; i++)
			n[i] = true;		/* which backend loads it, not how much */
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, n);
		return;
	}
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
		for (i = 7; i < 17; i++)
			n[i] = false;
		n[13] = e->loaded_at_usec == 0;
	}
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, n);
}

/*
 * mcc_gallery_status() RETURNS SETOF record: one row per registered gallery
 * of the current database whose key and template columns the caller may
 * read (every one for roles with the privileges of pg_read_all_stats), with
 * what the service knows of it.
 */
Datum
mcc_gallery_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			galleries = mcc_galleries_relid();
	bool		all = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);
	bool		service = mcc_service_state_now(NULL) == MCC_SVC_READY;
	List	   *status;
	uint64		row;

	InitMaterializedSRF(fcinfo, 0);
	if (!OidIsValid(galleries))
		return (Datum) 0;
	status = engine_status();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute(psprintf("SELECT gallery::pg_catalog.oid, id_column, template_column, %s FROM %s.mcc_galleries ORDER BY 1",
							 mcc_column_attnum(galleries, "priority") != InvalidAttrNumber ?
							 "priority" : "0",
							 quote_identifier(get_namespace_name(get_rel_namespace(galleries)))),
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read mcc_galleries");
	for (row = 0; row < SPI_processed; row++)
	{
		HeapTuple	tup = SPI_tuptable->vals[row];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		Oid			relid = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
		Datum		key = SPI_getbinval(tup, desc, 2, &isnull);
		Datum		tpl = SPI_getbinval(tup, desc, 3, &isnull);

		if (!all && !may_read(relid, DatumGetName(key), DatumGetName(tpl)))
			continue;
		status_row(rsinfo, relid, key, tpl, DatumGetInt32(SPI_getbinval(tup, desc, 4, &isnull)),
				   status, service,
				   !all && check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED);
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

/* The engine's ENGINE_STATUS into v[7..14] and n[7..14]; false if it cannot be asked. */
static bool
engine_wide_status(Datum *v, bool *n)
{
	mcc_reply	reply;
	uint64		parts;
	uint64		done;
	uint32		flags;

	if (!ask_engine(MCC_MSG_ENGINE_STATUS, MCC_MSG_ENGINE_STATUS_REPLY, &reply))
		return false;
	v[0] = Int64GetDatum((int64) mcc_get_u64(&reply.body));	/* cache_bytes */
	v[1] = Int64GetDatum((int64) mcc_get_u64(&reply.body));	/* cache_limit */
	v[2] = Int64GetDatum((int64) mcc_get_u64(&reply.body));	/* evictions */
	v[3] = Int32GetDatum((int32) mcc_get_u32(&reply.body));	/* image_threads */
	v[4] = Int32GetDatum((int32) mcc_get_u32(&reply.body));	/* image_queue */
	v[5] = Int32GetDatum((int32) mcc_get_u32(&reply.body));	/* image_jobs */
	parts = mcc_get_u64(&reply.body);
	done = mcc_get_u64(&reply.body);
	flags = mcc_get_u32(&reply.body);
	v[6] = Float8GetDatum(parts > 0 ? (double) done / parts : 0);
	v[7] = BoolGetDatum((flags & MCC_HELLO_GPU) != 0);
	for (int i = 0; i < 8; i++)
		n[i] = false;
	n[6] = parts == 0;
	return true;
}

#define SERVICE_COLS 15			/* 7 in 0.1.0: a 0.1.0 definition takes the first ones */

/*
 * mcc_service_status() RETURNS TABLE(state text, supervisor_pid int,
 * engine_pid int, incarnation bigint, restarts int, ready_since timestamptz,
 * socket text, cache_bytes bigint, cache_limit bigint, evictions bigint,
 * image_threads int, image_queue int, image_jobs int, image_progress
 * float8, image_gpu boolean)
 */
Datum
mcc_service_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		v[SERVICE_COLS];
	bool		n[SERVICE_COLS];
	mcc_svc_shared copy;
	mcc_service_state st;

	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < SERVICE_COLS; i++)
		n[i] = true;
	n[0] = false;
	if (mcc_svc == NULL)
	{
		v[0] = CStringGetTextDatum("not preloaded");
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, n);
		return (Datum) 0;
	}
	SpinLockAcquire(&mcc_svc->mutex);
	memcpy(&copy, mcc_svc, offsetof(mcc_svc_shared, slots));
	SpinLockRelease(&mcc_svc->mutex);
	st = (mcc_service_state) pg_atomic_read_u32(&copy.state);
	v[0] = CStringGetTextDatum(state_name(st));
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
	/* the engine's own figures only where the caller's columns ask for them */
	if (st == MCC_SVC_READY && rsinfo->setDesc->natts >= SERVICE_COLS)
		(void) engine_wide_status(v + 7, n + 7);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, n);
	return (Datum) 0;
}
