/*
 * service_load.h: what the full load of a gallery (src/service/service_load.c) and
 * the load that checks the engine's cache snapshot (src/service/service_load_check.c)
 * share: a load's state and the helpers that read a tuple into a load row.
 */
#ifndef SERVICE_LOAD_H
#define SERVICE_LOAD_H

#include "service.h"

#include "access/heapam.h"
#include "access/htup.h"
#include "access/relscan.h"
#include "port/atomics.h"
#include "storage/dsm.h"
#include "storage/shm_toc.h"
#include "storage/buf.h"
#include "utils/rel.h"

#define LOAD_FRAME_BYTES	(1024 * 1024)	/* LOAD_ROWS frames of about this size */

/* progress of a load as its slot and NOTICEs report it */
typedef struct load_progress
{
	bool		notices;		/* MCC_LOADOPT_PROGRESS for an interactive caller */
	TimestampTz started;
	TimestampTz last_notice;
	bool		noticed;		/* a NOTICE went out */
	uint64		rows_expected;	/* the planner's estimate (0: none) */
	uint64		blocks_total;
	uint64		blocks_before;	/* of the relations scanned before the current one */
	HeapScanDesc scan;			/* the current relation's, or NULL */
} load_progress;

/* A load in progress. */
typedef struct load_state
{
	mcc_gallery_ref *g;
	int			profile_id;		/* 0: take the first row's */
	uint64		request_id;
	uint64		gen;			/* generation the load claims */
	bool		begun;			/* LOAD_BEGIN sent */
	MemoryContext cxt;			/* for the frames (rows use a context reset per row) */
	TransactionId horizon;
	bool		in_recovery;	/* a hot standby's load */
	uint64		log_head;		/* then: the change log position it claims */
	StringInfoData frame;		/* LOAD_ROWS being filled */
	uint32		n_rows;			/* rows in frame */
	uint64		rows_sent;
	mcc_load_result result;		/* set with why when the load cannot proceed */
	char	   *why;
	TransactionId pin_xmin;		/* our snapshot's xmin: what no vacuum can remove */
	uint64		guarded;		/* versions read in a subtransaction */
	uint64		vanished;		/* versions whose TOAST vacuum removed meanwhile */
	uint32		flags;			/* LOAD_BEGIN's MCC_LOAD_* */
	load_progress prog;
	/* tuple identities (MCC_LOAD_IDS) and cache snapshots */
	uint64		scan_lsn;		/* WAL insert position before the scan */
	uint64		next_xid;		/* next full xid before the scan */
	Oid		   *rel_order;		/* the gallery's relations by OID: tid ordinals */
	int			n_rel_order;
	uint64		cur_ordinal;	/* of the relation being read, << 48 */
	bool		snapshot;		/* check the engine's snapshot (heads first) */
	uint64		heads;			/* heads sent */
	uint64		wanted;			/* tuples the engine asked for */
	/*
	 * While count_visible: rows with a template that count_snap (the
	 * caller's snapshot) sees, counted as the scan meets them, so that
	 * mcc_gallery_preload need not scan the gallery again for its answer
	 */
	bool		count_visible;
	Snapshot	count_snap;
	uint64		visible;
	/* a parallel load (src/service/service_load_parallel.c) */
	uint64		token[2];		/* MCC_LOAD_JOIN: the secret the workers' LOAD_JOIN repeats */
	struct shm_mq_handle *mq;	/* a worker's: its counts and messages go to the leader */
	pg_atomic_uint32 *shared_profile;	/* a worker's: the profile every worker's rows have */
	struct load_shared *shared; /* a worker's: what the leader shares */
	bool		joined;			/* a worker's: its connection joined the load */
	StringInfoData deferred;	/* risky rows left to the leader: load_deferred */
} load_state;

/*
 * A row a parallel worker left to the leader (it needs the guarded detoast,
 * whose subtransaction a parallel worker cannot run): its tuple id as
 * mcc_load_tuple_tid gives it and its raw xmin, which tells whether the
 * line pointer still holds that tuple when the leader reads it again.
 */
typedef struct load_deferred
{
	uint64		tid;
	TransactionId xmin;
} load_deferred;

/*
 * The rows with a template that the caller's snapshot sees in gallery
 * relid, as the full load this command just made counted them; false when
 * none did (another snapshot, a gallery of several relations, row-level
 * security, a load from the cache snapshot): then count them. One answer
 * per load. mcc_load_visible_forget drops it first.
 */
extern bool mcc_load_visible_rows(Oid relid, uint64 *rows);
extern void mcc_load_visible_forget(void);

/* service_load_rows.c */
extern void mcc_load_send_begin(load_state *st);
extern void mcc_load_rows_frame_begin(load_state *st);
extern void mcc_load_rows_flush(load_state *st);
extern bool mcc_load_tuple_xids(HeapTuple tuple, Buffer buf, TransactionId horizon,
								TransactionId pin_xmin, uint64 *ins, uint64 *del, bool *risky);
extern uint64 mcc_load_tuple_tid(const load_state *st, HeapTuple tuple);
extern uint64 mcc_load_tuple_xmin_id(const load_state *st, HeapTupleHeader h);
extern bool mcc_load_add_row(load_state *st, Relation rel, HeapTuple tuple, AttrNumber key_att,
							 AttrNumber tpl_att, uint64 ins, uint64 del, bool risky);
extern bool mcc_load_fetch_tids(load_state *st, const uint64 *tids, const TransactionId *xmins,
								size_t n);
extern bool mcc_load_relation_usable(load_state *st, Relation rel, AttrNumber key_att,
									 AttrNumber tpl_att);
extern bool mcc_load_relation(load_state *st, Oid relid);
extern bool mcc_load_scan(load_state *st, Relation rel, TableScanDesc scan, AttrNumber key_att,
						  AttrNumber tpl_att);

/* service_load.c */
extern uint64 mcc_load_relation_ordinal(const load_state *st, Oid relid);
extern bool mcc_load_finish(load_state *st, mcc_reply *reply);

/*
 * Send st's request a message of this type with no payload and wait for
 * the engine's answer; false, with st unavailable and why saying that the
 * engine did not `what` in time, when none came within mcc.request_timeout.
 */
extern bool mcc_load_send_wait(load_state *st, uint16 type, const char *what,
							   mcc_reply *reply);

/* service_load_progress.c */
extern void mcc_load_progress_report(load_state *st);
extern void mcc_load_slot_progress(const load_state *st, bool done);
extern void mcc_load_forget_own(int code, Datum arg);

/* service_load_parallel.c */
extern int	mcc_load_parallel_workers(const load_state *st);
extern bool mcc_load_parallel(load_state *st, int nworkers, bool *serial);
extern bool mcc_load_deferred(load_state *st);
extern void mcc_load_worker_join(load_state *st);
extern void mcc_load_worker_sent(load_state *st);
extern PGDLLEXPORT void mcc_load_worker_main(dsm_segment *seg, shm_toc *toc);

/* service_load_check.c */
extern bool mcc_load_engine_has_snapshot(const mcc_gallery_ref *g, int *profile_id);
extern bool mcc_load_stream_snapshot(load_state *st, mcc_reply *reply, bool *full);

#endif							/* SERVICE_LOAD_H */
