/*
 * service.h: what the matcher service's PostgreSQL-side files share
 * (src/service/service_*.c). docs/matcher-service.md explains the design; the wire
 * protocol is src/proto/mcc_proto.h.
 */
#ifndef MCC_SERVICE_H
#define MCC_SERVICE_H

#include "postgres.h"

#include "access/transam.h"
#include "lib/stringinfo.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "storage/spin.h"
#include "utils/array.h"
#include "utils/rel.h"
#include "utils/snapshot.h"
#include "utils/timestamp.h"

#include "mcc_wire.h"

/* ---------------------------------------------------------------------
 * Configuration (src/service/service_guc.c)
 */
typedef enum mcc_fallback_mode
{
	MCC_FALLBACK_CPU,			/* backend scan, silently */
	MCC_FALLBACK_NOTICE,		/* backend scan with a NOTICE saying why */
	MCC_FALLBACK_ERROR			/* ERROR saying why */
} mcc_fallback_mode;

extern bool mcc_service_enabled;	/* mcc.service */
extern bool mcc_refine_in_engine;	/* mcc.refine_in_engine */
extern int	mcc_fallback;		/* mcc.fallback */
extern int	mcc_cache_memory_limit; /* mcc.cache_memory_limit, MB, 0 = none */
extern int	mcc_request_timeout;	/* mcc.request_timeout, ms, 0 = none */
extern int	mcc_worker_threads; /* mcc.worker_threads, 0 = one per CPU */
extern int	mcc_max_delta_rows; /* mcc.max_delta_rows */
extern int	mcc_max_galleries;	/* mcc.max_galleries */
extern int	mcc_image_worker_threads;	/* mcc.image_worker_threads, 0 = half the workers */
extern int	mcc_image_queue_limit;	/* mcc.image_queue_limit, 0 = 4 per image thread */
extern int	mcc_load_workers;	/* mcc.load_workers */
extern bool mcc_cache_snapshots;	/* mcc.cache_snapshots */
extern int	mcc_progress_interval;	/* mcc.progress_interval, ms, -1 = no NOTICEs */
extern int	mcc_change_log_prune_interval;	/* mcc.change_log_prune_interval, s, 0 = off */
extern int	mcc_change_log_retention;	/* mcc.change_log_retention, s */

/*
 * mcc.fallback's word when the service cannot serve fn (why): an ERROR, a
 * NOTICE "fn instead: why", or nothing; false (do it in the backend) unless
 * it raises. identify() and the dedup's rescoring use it.
 */
extern bool mcc_service_fallback(const char *fn, const char *instead, const char *why);

/*
 * The role whose members (and superusers) may have galleries cached by the
 * matcher service and run image jobs in the matcher engine. The extension
 * creates it (sql/mcc--0.1.0--0.2.0.sql); while it does not exist, only
 * superusers may.
 */
#define MCC_SERVICE_ROLE	"mcc_service_user"

/* May role roleid use the matcher service's memory and threads? */
extern bool mcc_role_may_use_service(Oid roleid);

/* Called once from _PG_init (src/module/mcc.c); service_init.c. */
extern void mcc_service_init(void);

/* The parameters (service_guc.c): a session's, and the server's (preload only). */
extern void mcc_service_define_session_gucs(void);
extern void mcc_service_define_server_gucs(void);

/*
 * Set while identify_batch() runs its per-probe backend scans through
 * identify(): those calls go straight to the backend scan.
 */
extern bool mcc_service_bypass;

/* ---------------------------------------------------------------------
 * Shared memory (src/service/service_shmem.c)
 */
typedef enum mcc_service_state
{
	MCC_SVC_ABSENT = 0,			/* no supervisor has run yet */
	MCC_SVC_STARTING,			/* engine launched, not ready yet */
	MCC_SVC_READY,				/* engine accepts connections */
	MCC_SVC_BACKOFF				/* engine exited; restart pending */
} mcc_service_state;

/*
 * One gallery the service has been asked about. Generations of a gallery
 * are consecutive (every DELTA and RELOAD takes the next one); a slot that is
 * (re)created starts above every generation handed out before, with a reload
 * due, so that an old cache in the engine can never pass for current.
 */
typedef struct mcc_svc_gallery
{
	/* identity: changed only with the table lock and this slot's lock held */
	Oid			db_oid;			/* InvalidOid: free */
	Oid			rel_oid;
	uint32		epoch;			/* bumped when the slot is reused */
	/* the rest: this slot's lock */
	uint64		generation;		/* last generation handed out */
	uint64		reload_gen;		/* a cache must be loaded at >= this */
	uint64		loaded_gen;		/* generation of the last completed load */
	uint64		loaded_incarnation; /* engine that holds that load */
	uint64		loaded_signature;
	int			profile_id;		/* profile of the loaded cache */
	TimestampTz retry_load_after;	/* after a failed load (memory limit) */
	TimestampTz last_settle;	/* last settle exchange started */
	pg_atomic_uint64 last_used; /* TimestampTz of the last identify() or preload */
	int32		priority;		/* mcc_galleries.priority: who may evict whom */
	uint64		searchable;		/* the engine's entries at the last search (an estimate) */
	/* the load in progress (load_pid 0: none), for mcc_gallery_status */
	int			load_pid;
	TimestampTz load_started;
	uint64		load_rows;		/* rows sent to the engine so far */
	uint64		load_rows_expected; /* the planner's estimate (0: none) */
	uint64		load_blocks;	/* heap blocks read so far */
	uint64		load_blocks_total;
	/*
	 * Hot standby (src/service/service_standby.c): the cache was loaded during
	 * recovery and is fed from the change log, whose entries up to
	 * log_applied it has (see docs/matcher-service.md, "Hot standbys").
	 */
	bool		log_fed;
	uint64		log_applied;
} mcc_svc_gallery;

#define MCC_LOG_DBS	64			/* databases with a change log pruned automatically */

typedef struct mcc_svc_shared
{
	slock_t		mutex;			/* protects the fields up to slots */
	pg_atomic_uint32 state;		/* mcc_service_state */
	uint64		launch;			/* engine launches so far (connections check it) */
	uint64		incarnation;	/* the engine's own, from its ready line */
	pid_t		supervisor_pid;
	pid_t		engine_pid;
	int			restarts;		/* engine starts after the first */
	TimestampTz ready_since;
	char		socket_path[MAXPGPATH];
	uint64		gen_high;		/* highest generation ever handed out (table lock) */
	/* databases whose change log the supervisor prunes (src/service/service_prune.c) */
	int			n_log_dbs;
	Oid			log_dbs[MCC_LOG_DBS];
	int			n_slots;
	LWLockPadded *locks;		/* [0]: slot table; [1 + i]: slot i */
	mcc_svc_gallery slots[FLEXIBLE_ARRAY_MEMBER];
} mcc_svc_shared;

/* NULL unless mcc is in shared_preload_libraries. */
extern mcc_svc_shared *mcc_svc;

extern void mcc_shmem_install_hooks(void);

/* The slot table's lock and slot i's lock. */
#define MCC_TABLE_LOCK()	(&mcc_svc->locks[0].lock)
#define MCC_SLOT_LOCK(i)	(&mcc_svc->locks[1 + (i)].lock)

/* Current state and the number of the engine's launch. */
extern mcc_service_state mcc_service_state_now(uint64 *launch);

/*
 * Slot of (MyDatabaseId, relid), -1 if none. *epoch receives the slot's
 * epoch for mcc_slot_lock().
 */
extern int	mcc_slot_find(Oid relid, uint32 *epoch);

/* A slot taken from another gallery to make room (db InvalidOid: none). */
typedef struct mcc_slot_victim
{
	Oid			db;
	Oid			rel;
} mcc_slot_victim;

/*
 * The slot of (MyDatabaseId, relid), made if there is none (a new slot
 * needs a load), with the gallery's priority and its use noted. When the
 * table is full, the slot of the gallery with the lowest priority at or
 * below `priority`, least recently used first and not being loaded, is
 * freed for it (*victim says which: the caller evicts its cache). -1 if no
 * slot can be had.
 */
extern int	mcc_slot_acquire(Oid relid, int32 priority, uint32 *epoch,
							 mcc_slot_victim *victim);

/*
 * Lock slot i in mode if it still belongs to (MyDatabaseId, relid) with the
 * given epoch; false (nothing locked) if it was reused meanwhile.
 */
extern bool mcc_slot_lock(int i, Oid relid, uint32 epoch, LWLockMode mode);

/* Free the slot of relid in database db (eviction, drop). */
extern void mcc_slot_free(Oid db, Oid relid);

/* ---------------------------------------------------------------------
 * The connection to the engine (src/service/service_client.c)
 */

/*
 * A cursor over a received payload: the shared decoder's (mcc_wire.h); the
 * mcc_get_* wrappers below raise ERROR where it reads past the end.
 */
typedef mcc_wire_rd mcc_reader;

/* A reply frame. */
typedef struct mcc_reply
{
	uint16		type;
	mcc_reader	body;
	/* for MCC_MSG_ERROR */
	uint32		err_code;
	uint32		err_status;
	char	   *err_message;
} mcc_reply;

/* Outcome of connecting. */
typedef enum mcc_conn_result
{
	MCC_CONN_OK,
	MCC_CONN_NOT_READY,			/* not preloaded, or engine not ready */
	MCC_CONN_FAILED				/* ready but not reachable */
} mcc_conn_result;

/* Connect (and HELLO) unless connected; never raises on engine trouble. */
extern mcc_conn_result mcc_conn_ensure(char **why);
/* The same with HELLO's wait bounded by hello_ms (0: interrupts only). */
extern mcc_conn_result mcc_conn_ensure_within(char **why, int hello_ms);

/* Incarnation of the connected engine (0 if not connected). */
extern uint64 mcc_conn_incarnation(void);

/* HELLO_OK's MCC_HELLO_* flags of the connected engine (0 if not connected). */
extern uint32 mcc_conn_engine_flags(void);

/* Close the connection (an exchange was left half done, or the engine went). */
extern void mcc_conn_close(void);

/* A fresh request id. */
extern uint64 mcc_conn_next_id(void);

/* Start a frame in buf (the header is filled in by mcc_conn_send). */
extern void mcc_frame_begin(StringInfo buf);

/*
 * Send a frame built with mcc_frame_begin; waits interruptibly. An ERROR
 * (interrupt, engine gone) closes the connection first.
 */
extern void mcc_conn_send(StringInfo frame, uint16 type, uint64 request_id);

/*
 * Send with frame flags, without waiting on interrupts (under an LWLock);
 * false after closing the connection if the engine did not take it within
 * timeout_ms.
 */
extern bool mcc_conn_send_nowait(StringInfo frame, uint16 type, uint16 flags,
								 uint64 request_id, int timeout_ms);

/* Best-effort CANCEL of request_id; never raises, never blocks. */
extern void mcc_conn_cancel(uint64 request_id);

/*
 * Requests sent ahead (service_ahead.c): mcc_conn_send_ahead sends a frame
 * whose reply is kept when it arrives; mcc_conn_send_or_take sends a frame,
 * or takes the request sent ahead with the same frame; either way the
 * request id to await.
 */
extern uint64 mcc_conn_send_ahead(StringInfo frame, uint16 type);
extern uint64 mcc_conn_send_or_take(StringInfo frame, uint16 type);

/*
 * A set of requests sent ahead (service_ahead.c): begun by the caller that
 * sends them (serve()'s sending-ahead mode), ended by it, also on error
 * (the requests nobody took are cancelled). The rest is for
 * service_client.c: remember a request, take the one of a frame, keep a
 * reply that arrived early and hand it over, forget all when the
 * connection closes.
 */
extern void mcc_ahead_begin(void);
extern bool mcc_ahead_active(void);
extern void mcc_ahead_end(void);
extern void mcc_ahead_add(uint64 id, uint16 type, const char *payload, uint32 len);
extern bool mcc_ahead_take(uint16 type, const char *payload, uint32 len, uint64 *id);
extern bool mcc_ahead_keep(uint64 id, uint16 type, const char *body, uint32 len);
extern bool mcc_ahead_reply(uint64 id, uint16 *type, char **body, uint32 *len);
extern void mcc_ahead_forget(void);

/*
 * Wait for the reply to request_id. Interrupts (cancel, statement_timeout)
 * send CANCEL and propagate. Returns false on mcc.request_timeout (after
 * sending CANCEL); raises ERROR if the engine terminates.
 */
extern bool mcc_conn_wait_reply(uint64 request_id, mcc_reply *reply);

/*
 * The same, waiting at most timeout_ms (status requests: a stopped engine
 * must not hold a monitoring query for mcc.request_timeout).
 */
extern bool mcc_conn_wait_reply_ms(uint64 request_id, mcc_reply *reply, int timeout_ms);

/* The same for a request of `units` units of work (mcc.request_timeout each). */
extern bool mcc_conn_wait_reply_units(uint64 request_id, mcc_reply *reply, int units);

/*
 * The same without mcc.request_timeout (image jobs compute, they do not
 * wait for data): only interrupts end the wait, statement_timeout among them.
 */
extern void mcc_conn_wait_reply_unbounded(uint64 request_id, mcc_reply *reply);

/*
 * Payload writers: the shared encoder's fields (mcc_wire.h) appended to s;
 * the scalar ones defined from MCC_WIRE_SCALARS in service_client.c.
 */
extern void mcc_put_u32(StringInfo s, uint32 v);
extern void mcc_put_u64(StringInfo s, uint64 v);
extern void mcc_put_i64(StringInfo s, int64 v);
extern void mcc_put_f32(StringInfo s, float v);
extern void mcc_put_f64(StringInfo s, double v);
extern void mcc_put_bytes(StringInfo s, const void *p, uint32 len);
extern void mcc_put_gallery(StringInfo s, const mcc_gallery_id *g);

/* Payload readers. */
extern uint32 mcc_get_u32(mcc_reader *r);
extern uint64 mcc_get_u64(mcc_reader *r);
extern int64 mcc_get_i64(mcc_reader *r);
extern float mcc_get_f32(mcc_reader *r);
extern double mcc_get_f64(mcc_reader *r);
extern const char *mcc_get_raw(mcc_reader *r, size_t n);
extern void mcc_get_gallery(mcc_reader *r, mcc_gallery_id *g);

/* n raw bytes of a payload; a shorter one raises a protocol violation with detail. */
extern const char *mcc_reader_take(mcc_reader *r, size_t n, const char *detail);

/* Raise a protocol violation with detail if r was read past its end. */
extern void mcc_reader_check(const mcc_reader *r, const char *detail);

/*
 * An array's uint32 count, into *n, and palloc'd room (one element at least)
 * for that many elements of elem bytes, whose records take `each` bytes of
 * the payload: raises first unless that many are left, so that a bad count
 * never allocates.
 */
extern void *mcc_get_records(mcc_reader *r, size_t each, size_t elem, uint32 *n);

/* A uint32 count, into *n, and that many uint64s (mcc_get_records). */
extern uint64 *mcc_get_u64_array(mcc_reader *r, uint32 *n);

/* Raise the engine's ERROR reply as an ERROR. */
extern void mcc_raise_engine_error(const mcc_reply *reply) pg_attribute_noreturn();

/* ---------------------------------------------------------------------
 * Registrations and gallery facts (src/service/service_catalog.c)
 */

/* A registered gallery as mcc_galleries records it. */
typedef struct mcc_registration
{
	Oid			relid;
	char	   *id_column;
	char	   *template_column;
	int32		priority;		/* 0 where mcc_galleries has no such column (0.1.0) */
	bool		change_log;		/* writes logged for hot standbys (mcc_galleries.change_log) */
} mcc_registration;

/* OID of table mcc_galleries (InvalidOid if the extension is absent). */
extern Oid	mcc_galleries_relid(void);

/* The registration of relid, or false. */
extern bool mcc_registration_get(Oid relid, mcc_registration *reg);

/* Registered galleries that relid is or descends from (list of palloc'd mcc_registration). */
extern List *mcc_registrations_covering(Oid relid);

/* OID of function name() in the extension's schema, InvalidOid if absent. */
extern Oid	mcc_extension_function(const char *name);

/*
 * The relations of a gallery: the gallery itself and every partition or
 * inheritance child, locked with AccessShareLock.
 */
extern List *mcc_gallery_relations(Oid relid);

/*
 * The signature of a gallery: its relations' relfilenodes and the key and
 * template columns. A change of any means that a cache is stale.
 */
extern uint64 mcc_gallery_signature(List *relids, AttrNumber key_att,
									AttrNumber tpl_att);

/*
 * NULL if every relation of the gallery has the four change triggers
 * enabled ALWAYS; otherwise why not.
 */
extern char *mcc_gallery_triggers_missing(List *relids);

/* Raise unless the current user owns relid. */
extern void mcc_check_owner(Oid relid);

/* Owner of relation relid. */
extern Oid	mcc_rel_owner(Oid relid);

/*
 * NULL if the owner of gallery relid may have it cached (see
 * MCC_SERVICE_ROLE); otherwise why not.
 */
extern char *mcc_gallery_owner_problem(Oid relid);

/* Attribute number of column name in relation relid (InvalidAttrNumber if none). */
extern AttrNumber mcc_column_attnum(Oid relid, const char *name);

/* A key column's value as int64 (smallint, integer, bigint or a domain). */
extern int64 mcc_key_int64(Datum d, Oid typid);

/* Full 64-bit xid of a recent 32-bit one (0 for frozen, bootstrap, invalid). */
extern uint64 mcc_full_xid(TransactionId xid);

/* Drop the engine's cache of relid and free its slot (src/service/service_register.c). */
extern void mcc_service_evict(Oid relid);

/* Drop the engine's caches of (db, relid), whose slot is gone already. */
extern void mcc_service_evict_engine(Oid db, Oid relid);

/* ---------------------------------------------------------------------
 * Change capture (src/service/service_triggers.c)
 */
extern void mcc_triggers_init(void);

/* True if the current transaction changed the gallery (its triggers fired). */
extern bool mcc_xact_changed_gallery(Oid relid);

/* ---------------------------------------------------------------------
 * Loading (src/service/service_load.c)
 */
struct mcc_gallery;
typedef enum mcc_load_result
{
	MCC_LOAD_OK,
	MCC_LOAD_SKIPPED,			/* someone else loaded it meanwhile */
	MCC_LOAD_MIXED,				/* rows of another profile, or NULL keys */
	MCC_LOAD_MEMORY,			/* the engine's memory limit */
	MCC_LOAD_KEPT,				/* a refresh did not fit beside the current cache, which stays */
	MCC_LOAD_UNAVAILABLE		/* the engine could not be reached */
} mcc_load_result;

/* mcc_gallery_load's options */
#define MCC_LOADOPT_FORCE		0x01	/* a full load even if the cache is current */
#define MCC_LOADOPT_PROGRESS	0x02	/* NOTICEs of progress for an interactive caller */

/* What a load needs to know about the gallery. */
typedef struct mcc_gallery_ref
{
	Oid			relid;
	List	   *relids;			/* the gallery and its descendants */
	char	   *key_name;
	char	   *tpl_name;
	AttrNumber	key_att;		/* in the gallery itself */
	AttrNumber	tpl_att;
	mcc_gallery_id id;			/* db, rel, signature */
	int32		priority;		/* the registration's */
	int			slot;
	uint32		epoch;
} mcc_gallery_ref;

/*
 * Bring the engine's cache of the gallery to a full load with profile
 * profile_id (0: the profile of the gallery's first template), unless a
 * current one exists and opts lacks MCC_LOADOPT_FORCE. *entries gets the
 * engine's entry count; *why the reason of a failure.
 */
extern mcc_load_result mcc_gallery_load(mcc_gallery_ref *g, int profile_id,
										int opts, uint64 *entries, char **why);

/*
 * Estimates of a load in progress from its rows sent, the planner's
 * estimate, heap blocks read and in all, and seconds elapsed: total rows,
 * rows per second, seconds left (each -1 when unknown).
 */
extern void mcc_load_estimate(uint64 rows, uint64 rows_expected, uint64 blocks,
							  uint64 blocks_total, double elapsed, double *total,
							  double *rate, double *left);

/* Fill ref for gallery g: its relations (locked), columns and signature. */
extern void mcc_gallery_ref_init(mcc_gallery_ref *ref, const struct mcc_gallery *g);

/* Find or create ref's slot; false if none can be had. */
extern bool mcc_gallery_ref_slot(mcc_gallery_ref *ref);

/*
 * Does the slot say that a load is needed for this signature and profile
 * (profile_id 0: any)?
 */
extern bool mcc_slot_needs_load(const mcc_gallery_ref *g, int profile_id);

/*
 * The slot's current generation (0 if the slot went away) and, searchable
 * not NULL, the engine's searchable entries as the last search saw them (0
 * if unknown).
 */
extern uint64 mcc_slot_generation(const mcc_gallery_ref *g, uint64 *searchable);

/* Note in the slot that the cache must be reloaded (engine said so). */
extern void mcc_slot_mark_reload(const mcc_gallery_ref *g);

/*
 * Mark a reload at the slot's next generation, so that the load claims a
 * generation above all the current cache applied (a cache that is still
 * there but must not serve: a prune on a standby, a promotion).
 */
extern void mcc_slot_force_reload(const mcc_gallery_ref *g);

/*
 * The service's own heavyweight locks on a gallery: advisory lock tags
 * (field 4 tells them from pg_advisory_lock's 1 and 2), which a hot standby
 * allows in any mode, unlike locks on database objects.
 */
#define MCC_LOCK_LOAD		0x6d63	/* loads and standby catch-up of a gallery */
#define MCC_LOCK_LOG		0x6d64	/* appending to a gallery's change log */
extern void mcc_gallery_lock(Oid relid, uint16 which);
extern void mcc_gallery_unlock(Oid relid, uint16 which);

/*
 * Detoast a value whose TOAST rows VACUUM may remove meanwhile: NULL if they
 * are gone (no snapshot can see the version any more).
 */
extern struct varlena *mcc_guarded_detoast(struct varlena *v);

/* ---------------------------------------------------------------------
 * Change capture's row versions and DELTA frames (src/service/service_triggers.c)
 */

/* One captured row version. */
typedef struct mcc_delta_op
{
	Oid			gallery;
	bool		insert;			/* else delete */
	int64		key;
	uint64		hash;
	uint64		xid;			/* (sub)transaction that wrote the version */
	struct varlena *tpl;		/* inserts: the stored template */
} mcc_delta_op;

/* DELTA frames of changes (list of mcc_delta_op *), one or more per xid. */
extern List *mcc_delta_frames(const mcc_gallery_id *id, List *changes);

/*
 * Under the slot lock: take the slot's next generation and send frames at
 * it (a RELOAD frame if reload); a failure marks the slot for reload.
 */
extern void mcc_send_frames(mcc_svc_gallery *s, List *frames, bool reload, bool conn_ok);

/* ---------------------------------------------------------------------
 * The change log that feeds hot standbys (src/service/service_changelog.c)
 */

/* OID of relation name in the extension's schema (InvalidOid if absent). */
extern Oid	mcc_extension_relation(const char *name);

/*
 * Append one statement's changes of gallery (lists of mcc_delta_op *) to
 * the change log, or a reload mark when reload or when there are more than
 * mcc.max_delta_rows of them. xid: the writing (sub)transaction.
 */
extern void mcc_changelog_append(Oid gallery, uint64 xid, List *dels, List *ins, bool reload);

/*
 * The start point of a gallery's change log just turned on: a reload entry,
 * in the current transaction, which must hold the gallery against writers.
 */
extern void mcc_changelog_start(Oid gallery);

/* The highest position of gallery's log present in the heap (0: none). */
extern uint64 mcc_changelog_head(Oid log, Oid gallery);

/*
 * The log entries of gallery in (after, upto], in order, as mcc_delta_op
 * (palloc'd); *reload if one of them is a reload mark.
 */
extern List *mcc_changelog_read(Oid log, Oid gallery, uint64 after, uint64 upto, bool *reload);

/* The position up to which the gallery's log was pruned (0: never). */
extern uint64 mcc_changelog_pruned(Oid gallery);

/* ---------------------------------------------------------------------
 * Automatic pruning of the change log (src/service/service_prune.c)
 */

/* Remember that database db has a change log for the supervisor to prune. */
extern void mcc_prune_note_database(Oid db);

/*
 * In the supervisor's loop: start the pruning workers that are due (on a
 * primary, every mcc.change_log_prune_interval); returns the milliseconds
 * until the next is due.
 */
extern long mcc_prune_tick(void);

/* ---------------------------------------------------------------------
 * Hot standbys (src/service/service_standby.c)
 */
typedef enum mcc_catchup_result
{
	MCC_CATCHUP_OK,				/* the engine has every change the snapshot sees */
	MCC_CATCHUP_RELOAD,			/* the slot is marked: load again */
	MCC_CATCHUP_FAILED			/* cannot serve (why says why) */
} mcc_catchup_result;

/*
 * On a hot standby: NULL if the gallery's change log is on, else why the
 * engine cannot serve it there (logged once per backend and gallery).
 */
extern char *mcc_standby_log_problem(Oid relid, const char *relname);

/*
 * On a hot standby, after the caller's snapshot was taken: send the engine
 * every change log entry it lacks, so that the slot's generation covers
 * every change the snapshot can see.
 */
extern mcc_catchup_result mcc_standby_catch_up(mcc_gallery_ref *g, char **why);

/* ---------------------------------------------------------------------
 * Service-side identification (src/service/service_identify.c)
 */

/*
 * identify() through the service. Returns true with the result set
 * materialized in fcinfo, false to let the caller scan in the backend (after
 * a NOTICE or instead of an ERROR, per mcc.fallback).
 */
extern bool mcc_service_identify(FunctionCallInfo fcinfo, const struct mcc_gallery *g,
								 const struct varlena *probe, int32 k, float4 min_score,
								 int method);

struct mcc_list_answer;			/* shortlist.h */

/*
 * identify_shortlist() through the service (src/identify/shortlist.h): the
 * engine's shortlist of `shortlist` rows, rescored from its cache, the rows
 * to return kept in *out. False as mcc_service_identify.
 */
extern bool mcc_service_identify_list(const struct mcc_gallery *g, const struct varlena *probe,
									  int32 k, int method, int64 shortlist, int64 from,
									  struct mcc_list_answer *out);

/*
 * mcc_gallery_rows() through the service: the rows with a template the
 * statement sees, counted by the engine from its cache (no table scan),
 * into *n. False as mcc_service_identify (then count the table).
 */
extern bool mcc_service_gallery_rows(const struct mcc_gallery *g, int64 *n);

/*
 * The probes of an mcc_template[] argument, detoasted and validated; a NULL
 * one is an error (22004) naming function fn (src/service/service_batch.c).
 */
extern struct varlena **mcc_probes_arg(ArrayType *arr, const char *fn, int *n);

/*
 * The requests of mcc_service_identify_list() and mcc_service_gallery_rows()
 * sent ahead (service_ahead.c, inside mcc_ahead_begin() .. mcc_ahead_end()):
 * the same calls made later take their replies, so that several galleries'
 * requests are in the engine at once.
 */
extern void mcc_service_identify_list_ahead(const struct mcc_gallery *g,
											const struct varlena *probe, int32 k, int method,
											int64 shortlist);
extern void mcc_service_gallery_rows_ahead(const struct mcc_gallery *g);

/* ---------------------------------------------------------------------
 * Refinement through the service (src/service/service_refine.c)
 */

/* A group of RESULT's visibility count (mcc_proto.h). */
typedef struct mcc_count_group
{
	uint64		insert_xid;
	uint64		delete_xid;
	uint32		flags;			/* MCC_COUNT_F_* */
	uint32		entries;
} mcc_count_group;

/*
 * The engine's searchable entries that snapshot sees: the certain ones and
 * those of every group whose xids make a row version visible to it.
 */
extern uint64 mcc_count_visible(uint64 certain, const mcc_count_group *groups,
								uint32 n_groups, Snapshot snapshot);

/* A tuple version as a refining search reports it (mcc_proto.h's rhit). */
typedef struct mcc_version
{
	uint64		insert_xid;
	uint64		delete_xid;		/* 0: none */
	uint32		flags;			/* MCC_COUNT_F_*, MCC_CAND_F_CERTAIN */
} mcc_version;

/*
 * visible[i]: does snapshot see version v[i]? Judged as mcc_count_visible
 * judges a group: by its xids, with no table access.
 */
extern void mcc_versions_visible(const mcc_version *v, int n, Snapshot snapshot,
								 bool *visible);

struct mcc_refined;				/* refine.h */

/* A candidate of a refining search (mcc_proto.h's rhit). */
typedef struct mcc_rhit
{
	float		score;			/* LSS */
	int64		key;
	uint64		hash;
	float		refined;		/* the method's score, from the engine's cache */
	mcc_version v;
} mcc_rhit;

typedef enum mcc_pick_result
{
	MCC_PICK_DONE,				/* the shortlist is complete */
	MCC_PICK_MORE,				/* too few visible candidates; the engine has more */
	MCC_PICK_DISAGREE			/* the versions contradict the snapshot (why set) */
} mcc_pick_result;

/*
 * One probe's shortlist from a refining search's candidates c[0 .. n) (LSS
 * order; more: the engine holds others): the first `want` that snapshot
 * sees, into out[] (refined score, key), out_lss[] (their LSS, unless
 * NULL) and out_hash[], *n_out of them.
 * n_rows is the number of rows the statement sees, or -1 if not counted
 * (then n' = min(n, want) and fewer than want visible rows are all of
 * them). Disagreement: a key seen twice, fewer visible candidates than the
 * statement's rows although the engine returned every entry, or too few
 * for n' with nothing more to come.
 */
extern mcc_pick_result mcc_pick_refined(const mcc_rhit *c, int n, bool more, int64 want,
										int64 n_rows, Snapshot snapshot,
										struct mcc_refined *out, float *out_lss,
										uint64 *out_hash, int64 *n_out, const char **why);

/* Rows of the gallery with a template that the statement sees (count(*)). */
extern int64 mcc_count_rows(const struct mcc_gallery *g);

/* One probe's shortlist for REFINE: n templates, n scores back. */
typedef struct mcc_refine_job
{
	const struct varlena *probe;
	int			n;
	struct varlena **tpl;
	float	   *score;			/* filled by mcc_service_refine */
} mcc_refine_job;

/*
 * Have the engine rescore every job's templates against its probe with
 * method, in frames of bounded size. False (why set) if the engine did not
 * answer within mcc.request_timeout; its errors raise.
 */
extern bool mcc_service_refine(mcc_refine_job *jobs, int n_jobs, int method, char **why);

#endif							/* MCC_SERVICE_H */
