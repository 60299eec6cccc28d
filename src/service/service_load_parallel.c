/*
 * service_load_parallel.c: a full load read by several PostgreSQL parallel
 * workers (issue 19: one reader bounded the load at 2.1-2.6 backend
 * CPU-seconds per million rows).
 *
 * The loading backend (the leader) computes what a serial load computes
 * (horizon, generation, our snapshot's xmin, flags, profile) and starts
 * parallel workers (mcc.load_workers), as a parallel CREATE INDEX does. They
 * share its transaction (so TransactionIdIsCurrentTransactionId answers as
 * in the leader) and its snapshot (which pins the TOAST data of every
 * version a load keeps, except the "risky" ones). Each worker takes blocks
 * of every heap of the gallery from a shared parallel scan (SnapshotAny),
 * judges each tuple with the serial load's rules (mcc_load_tuple_xids),
 * encodes the rows exactly as the serial load does into LOAD_ROWS frames
 * and sends them to the engine on its own connection, joined to the
 * leader's load: the leader opens the load (LOAD_BEGIN with MCC_LOAD_JOIN
 * and a secret token drawn for it, which only the load's DSM holds) and
 * ends it (LOAD_END, once every worker's part is in); each worker joins
 * with that token (LOAD_JOIN) and ends its part (LOAD_JOIN_END, whose
 * answer counts the rows the engine took). A part that ends unfinished (a
 * worker's connection closed, its ERROR) fails the whole load in the
 * engine. Before, every frame passed through the leader's one connection
 * (a shm_mq per worker, the leader forwarding). The engine's load does not
 * depend on the order of rows, so the cache equals the serial load's. The
 * workers' first row sets the profile of all (an atomic in the DSM), as
 * the serial load's first row does; the engine takes it from that row.
 *
 * Risky rows stored out of line (a version deleted before our snapshot's
 * xmin, or inserted by another transaction still running: VACUUM may remove
 * their TOAST data meanwhile) need mcc_guarded_detoast, whose
 * subtransaction a parallel worker cannot start. Workers send their tuple
 * ids and raw xmins instead; once the workers are done and parallel mode
 * is left, the leader reads each again by its tid and judges it anew with
 * the same rules, as a load judges a tuple it reads later in its scan. A
 * line pointer that no longer holds that tuple (another xmin, unused,
 * dead, redirected, a truncated page) means that VACUUM removed it, which
 * it does only to versions dead to every snapshot.
 *
 * Failures: an ERROR in a worker reaches the leader as PostgreSQL's parallel
 * machinery propagates it, and the leader's error abandons the load (the
 * engine connection is closed: nothing half-loaded is served); a row that
 * makes the gallery unloadable (null key, another profile) comes back as a
 * message and fails the load as the serial path does. Galleries whose heaps
 * are smaller than min_parallel_table_scan_size, loads inside parallel mode
 * and calls without an active snapshot load serially, and so does every
 * load when no worker can be started.
 *
 * How many: mcc.load_workers, by default one per 4 CPUs (at most 8, none
 * below 8 CPUs).
 */
#include "mcc_pg.h"
#include "service.h"
#include "service_load.h"

#include "access/heapam.h"
#include "access/parallel.h"
#include "access/relation.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "miscadmin.h"
#include "optimizer/paths.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shm_mq.h"
#include "storage/shm_toc.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"

#include <sys/resource.h>
#include <unistd.h>

/* shm_toc keys of a load's DSM */
#define LOAD_KEY_SHARED		UINT64CONST(0x4D43434C4F414401)
#define LOAD_KEY_ORDER		UINT64CONST(0x4D43434C4F414402)
#define LOAD_KEY_SCANS		UINT64CONST(0x4D43434C4F414403)
#define LOAD_KEY_QUEUES		UINT64CONST(0x4D43434C4F414404)

#define LOAD_QUEUE_BYTES	(64 * 1024)	/* each worker's shm_mq: counts and messages */

/* message kinds, worker to leader (a uint32 first) */
#define LOAD_MSG_ROWS		1	/* u32: rows the worker sent to the engine (progress) */
#define LOAD_MSG_DEFERRED	2	/* load_deferred[] */
#define LOAD_MSG_FAILED		3	/* u32 mcc_load_result, then why (text) */
#define LOAD_MSG_CPU		4	/* double[3]: CPU-s of start-up, of reading; page faults */
#define LOAD_MSG_VISIBLE	5	/* uint64: rows with a template our snapshot sees */

/* one heap of the gallery, as the workers read it */
typedef struct load_shared_rel
{
	Oid			relid;
	AttrNumber	key_att;
	AttrNumber	tpl_att;
	Size		scan_off;		/* its ParallelTableScanDesc in LOAD_KEY_SCANS */
} load_shared_rel;

/* what the leader computed once, for every worker */
typedef struct load_shared
{
	TransactionId horizon;
	TransactionId pin_xmin;
	uint32		flags;
	bool		count_visible;	/* count what the active snapshot (ours) sees */
	int			profile_id;		/* 0: the first row's (profile below) */
	pg_atomic_uint32 profile;	/* the profile the workers' first row set (0: none yet) */
	uint64		next_xid;
	/* what a worker's LOAD_JOIN names */
	mcc_gallery_id gallery;
	uint64		gen;
	uint64		token[2];
	uint64		incarnation;	/* the engine's the leader talks to */
	/* set (and cv broadcast) once the engine opened the load to LOAD_JOIN */
	pg_atomic_uint32 open;
	ConditionVariable cv;
	int			n_order;		/* OIDs in LOAD_KEY_ORDER */
	int			n_rels;
	load_shared_rel rels[FLEXIBLE_ARRAY_MEMBER];
} load_shared;

/* the leader's side of a parallel load */
typedef struct load_leader
{
	ParallelContext *pcxt;
	load_shared *sh;
	char	   *scans;
	shm_mq_handle **mqh;
	double		cpu[3];			/* the workers' CPU-s (start-up, reading), page faults */
} load_leader;

/*
 * How many workers a load of st's gallery gets: 0 (serial) when
 * mcc.load_workers is 0, the heaps are small, or parallel mode is not
 * possible here.
 */
int
mcc_load_parallel_workers(const load_state *st)
{
	int			n = mcc_load_workers;

	if (n < 0)
	{
		/*
		 * One per 4 CPUs, at most 8: on a machine of 2 shared cores the
		 * workers made loads slower (docs/benchmarks.md, "Several readers")
		 */
		long		cpus = sysconf(_SC_NPROCESSORS_ONLN);

		n = cpus >= 8 ? (int) Min(cpus / 4, 8) : 0;
	}
	if (n <= 0 || st->snapshot || IsInParallelMode() || !ActiveSnapshotSet() ||
		!IsUnderPostmaster)
		return 0;
	if (st->prog.blocks_total < (uint64) Max(min_parallel_table_scan_size, 1))
		return 0;
	return n;
}

/* The gallery's heaps, checked as the serial load checks them; false with st->why. */
static bool
heaps_of(load_state *st, List **heaps)
{
	ListCell   *lc;

	*heaps = NIL;
	foreach(lc, st->g->relids)
	{
		Oid			relid = lfirst_oid(lc);
		Relation	rel = relation_open(relid, NoLock);
		bool		ok = true;

		if (rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
		{
			ok = mcc_load_relation_usable(st, rel, mcc_column_attnum(relid, st->g->key_name),
										  mcc_column_attnum(relid, st->g->tpl_name));
			if (ok)
				*heaps = lappend_oid(*heaps, relid);
		}
		relation_close(rel, NoLock);
		if (!ok)
			return false;
	}
	return true;
}

/* Lay out and fill the load's DSM: shared state, relation order, scans, queues. */
static void
leader_setup(load_state *st, load_leader *ld, List *heaps)
{
	ParallelContext *pcxt = ld->pcxt;
	int			n = list_length(heaps);
	Size		sh_bytes = add_size(offsetof(load_shared, rels), mul_size(n, sizeof(load_shared_rel)));
	Size		scan_bytes = 0;
	Size		order_bytes = mul_size(Max(st->n_rel_order, 1), sizeof(Oid));
	Size		queue_bytes = mul_size(pcxt->nworkers, LOAD_QUEUE_BYTES);
	Size	   *scan_size = palloc(sizeof(Size) * Max(n, 1));
	ListCell   *lc;
	int			i = 0;
	Oid		   *order;

	foreach(lc, heaps)
	{
		Relation	rel = relation_open(lfirst_oid(lc), NoLock);

		scan_size[i] = MAXALIGN(table_parallelscan_estimate(rel, SnapshotAny));
		scan_bytes = add_size(scan_bytes, scan_size[i++]);
		relation_close(rel, NoLock);
	}
	shm_toc_estimate_chunk(&pcxt->estimator, sh_bytes);
	shm_toc_estimate_chunk(&pcxt->estimator, order_bytes);
	shm_toc_estimate_chunk(&pcxt->estimator, Max(scan_bytes, 1));
	shm_toc_estimate_chunk(&pcxt->estimator, queue_bytes);
	shm_toc_estimate_keys(&pcxt->estimator, 4);
	InitializeParallelDSM(pcxt);
	if (pcxt->nworkers == 0)
		return;					/* no dynamic shared memory: the caller goes serial */

	ld->sh = shm_toc_allocate(pcxt->toc, sh_bytes);
	ld->sh->horizon = st->horizon;
	ld->sh->pin_xmin = st->pin_xmin;
	ld->sh->flags = st->flags;
	ld->sh->count_visible = st->count_visible;
	ld->sh->profile_id = st->profile_id;
	pg_atomic_init_u32(&ld->sh->profile, (uint32) st->profile_id);
	ld->sh->next_xid = st->next_xid;
	ld->sh->gallery = st->g->id;
	ld->sh->gen = st->gen;
	ld->sh->token[0] = st->token[0];
	ld->sh->token[1] = st->token[1];
	ld->sh->incarnation = mcc_conn_incarnation();
	pg_atomic_init_u32(&ld->sh->open, 0);
	ConditionVariableInit(&ld->sh->cv);
	ld->sh->n_order = st->n_rel_order;
	ld->sh->n_rels = n;
	order = shm_toc_allocate(pcxt->toc, order_bytes);
	memcpy(order, st->rel_order, sizeof(Oid) * st->n_rel_order);
	ld->scans = shm_toc_allocate(pcxt->toc, Max(scan_bytes, 1));
	i = 0;
	scan_bytes = 0;
	foreach(lc, heaps)
	{
		Oid			relid = lfirst_oid(lc);
		Relation	rel = relation_open(relid, NoLock);
		load_shared_rel *r = &ld->sh->rels[i];

		r->relid = relid;
		r->key_att = mcc_column_attnum(relid, st->g->key_name);
		r->tpl_att = mcc_column_attnum(relid, st->g->tpl_name);
		r->scan_off = scan_bytes;
		table_parallelscan_initialize(rel, (ParallelTableScanDesc) (ld->scans + scan_bytes),
									  SnapshotAny);
		scan_bytes += scan_size[i++];
		relation_close(rel, NoLock);
	}
	shm_toc_insert(pcxt->toc, LOAD_KEY_SHARED, ld->sh);
	shm_toc_insert(pcxt->toc, LOAD_KEY_ORDER, order);
	shm_toc_insert(pcxt->toc, LOAD_KEY_SCANS, ld->scans);

	/* one queue per worker, the leader receiving */
	{
		char	   *queues = shm_toc_allocate(pcxt->toc, queue_bytes);

		ld->mqh = palloc0(sizeof(shm_mq_handle *) * pcxt->nworkers);
		for (i = 0; i < pcxt->nworkers; i++)
		{
			shm_mq	   *mq = shm_mq_create(queues + (Size) i * LOAD_QUEUE_BYTES,
										   LOAD_QUEUE_BYTES);

			shm_mq_set_receiver(mq, MyProc);
			ld->mqh[i] = shm_mq_attach(mq, pcxt->seg, NULL);
		}
		shm_toc_insert(pcxt->toc, LOAD_KEY_QUEUES, queues);
	}
	pfree(scan_size);
}

/* Heap blocks the workers have taken so far, for the load's progress. */
static uint64
blocks_taken(const load_leader *ld)
{
	uint64		d = 0;

	for (int i = 0; i < ld->sh->n_rels; i++)
	{
		ParallelBlockTableScanDesc p =
			(ParallelBlockTableScanDesc) (ld->scans + ld->sh->rels[i].scan_off);

		d += Min(pg_atomic_read_u64(&p->phs_nallocated), (uint64) p->phs_nblocks);
	}
	return d;
}

/* A worker's message; false (with st->why) when the load cannot proceed. */
static bool
leader_message(load_state *st, load_leader *ld, const char *data, Size len)
{
	uint32		kind;
	uint32		n_rows;

	if (len < sizeof(uint32))
		elog(ERROR, "mcc: short message from a parallel load worker");
	memcpy(&kind, data, sizeof(uint32));
	data += sizeof(uint32);
	len -= sizeof(uint32);
	switch (kind)
	{
		case LOAD_MSG_ROWS:
			if (len < sizeof(uint32))
				elog(ERROR, "mcc: short rows message from a parallel load worker");
			memcpy(&n_rows, data, sizeof(uint32));
			st->rows_sent += n_rows;
			st->prog.blocks_before = blocks_taken(ld);
			mcc_load_progress_report(st);
			return true;
		case LOAD_MSG_DEFERRED:
			appendBinaryStringInfo(&st->deferred, data, len);
			return true;
		case LOAD_MSG_CPU:
			if (len >= sizeof(ld->cpu))
			{
				double		c[3];

				memcpy(c, data, sizeof(c));
				for (int i = 0; i < 3; i++)
					ld->cpu[i] += c[i];
			}
			return true;
		case LOAD_MSG_VISIBLE:
			if (len < sizeof(uint64))
				elog(ERROR, "mcc: short count message from a parallel load worker");
			{
				uint64		v;

				memcpy(&v, data, sizeof(uint64));
				st->visible += v;
			}
			return true;
		case LOAD_MSG_FAILED:
			if (len < sizeof(uint32))
				elog(ERROR, "mcc: short failure message from a parallel load worker");
			memcpy(&st->result, data, sizeof(uint32));
			st->why = pnstrdup(data + sizeof(uint32), len - sizeof(uint32));
			return false;
	}
	elog(ERROR, "mcc: message of unknown kind %u from a parallel load worker", kind);
	return false;
}

/* Take the workers' messages until every queue is done; false (st->why) on a failure. */
static bool
leader_receive(load_state *st, load_leader *ld)
{
	int			n = ld->pcxt->nworkers_launched;
	bool	   *done = palloc0(sizeof(bool) * Max(n, 1));
	int			live = n;
	bool		ok = true;

	while (ok && live > 0)
	{
		bool		got = false;

		for (int i = 0; ok && i < n; i++)
		{
			Size		len;
			void	   *data;
			shm_mq_result res;

			if (done[i])
				continue;
			res = shm_mq_receive(ld->mqh[i], &len, &data, true);
			if (res == SHM_MQ_WOULD_BLOCK)
				continue;
			if (res == SHM_MQ_DETACHED)
			{
				/* finished, failed (its ERROR comes through the parallel machinery) or gone */
				done[i] = true;
				live--;
				continue;
			}
			got = true;
			ok = leader_message(st, ld, data, len);
		}
		if (!got && ok && live > 0)
		{
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_EXIT_ON_PM_DEATH, -1, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
		}
		CHECK_FOR_INTERRUPTS();
	}
	pfree(done);
	return ok;
}

/* The engine's reply of type `type` to st's request; an ERROR for any other, or none in time. */
static void
await_reply(load_state *st, uint16 type, mcc_reply *reply, const char *what)
{
	if (!mcc_conn_wait_reply(st->request_id, reply))
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("matcher engine did not %s within mcc.request_timeout", what)));
	if (reply->type != type)
		mcc_raise_engine_error(reply);
}

/*
 * Open the load to the workers' connections: LOAD_BEGIN with MCC_LOAD_JOIN
 * and the token, and its OK, after which a LOAD_JOIN finds the load (the
 * workers' connections are others: without the OK their LOAD_JOIN could
 * reach the engine first). The profile may still be unknown (0): the first
 * row's, which a worker finds.
 */
static void
begin_joinable(load_state *st)
{
	mcc_reply	reply;

	st->flags |= MCC_LOAD_JOIN;
	mcc_load_send_begin(st);
	await_reply(st, MCC_MSG_OK, &reply, "open the load");
}

/*
 * Read the gallery's heaps with nworkers parallel workers, each sending its
 * rows on its own engine connection joined to this load; their deferred rows are left in st->deferred (mcc_load_deferred).
 * False with st->why when the load cannot proceed. *serial: no worker
 * could be started; nothing was read and the caller loads serially.
 */
bool
mcc_load_parallel(load_state *st, int nworkers, bool *serial)
{
	load_leader ld;
	List	   *heaps;
	bool		ok;

	*serial = false;
	initStringInfo(&st->deferred);
	if (!heaps_of(st, &heaps))
		return false;
	memset(&ld, 0, sizeof(ld));
	/* the secret a worker's connection shows to join the load: in the DSM only */
	if (!pg_strong_random(st->token, sizeof(st->token)))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("mcc: could not generate a random load token")));
	EnterParallelMode();
	ld.pcxt = CreateParallelContext("mcc", "mcc_load_worker_main", nworkers);
	leader_setup(st, &ld, heaps);
	if (ld.pcxt->nworkers > 0)
		LaunchParallelWorkers(ld.pcxt);
	if (ld.pcxt->nworkers_launched > 0)
	{
		/* the workers read meanwhile; they join once the engine opened the load */
		begin_joinable(st);
		pg_atomic_write_u32(&ld.sh->open, 1);
		ConditionVariableBroadcast(&ld.sh->cv);
	}
	if (ld.pcxt->nworkers_launched == 0)
	{
		DestroyParallelContext(ld.pcxt);
		ExitParallelMode();
		*serial = true;
		return true;
	}
	for (int i = 0; i < ld.pcxt->nworkers_launched; i++)
		shm_mq_set_handle(ld.mqh[i], ld.pcxt->worker[i].bgwhandle);
	ok = leader_receive(st, &ld);
	/* a worker's ERROR is raised here, if not already */
	if (ok)
		WaitForParallelWorkersToFinish(ld.pcxt);
	/* the profile the workers' rows set, which the leader's own rows must have */
	if (st->profile_id == 0)
		st->profile_id = (int) pg_atomic_read_u32(&ld.sh->profile);
	st->prog.blocks_before = ok ? st->prog.blocks_total : blocks_taken(&ld);
	elog(DEBUG1, "mcc: gallery %u read by %d parallel workers: " UINT64_FORMAT
		 " rows, " UINT64_FORMAT " left to the leader; workers' CPU: %.3f s start-up, %.3f s reading, %.0f page faults",
		 st->g->relid, ld.pcxt->nworkers_launched, st->rows_sent,
		 (uint64) (st->deferred.len / sizeof(load_deferred)), ld.cpu[0], ld.cpu[1], ld.cpu[2]);
	DestroyParallelContext(ld.pcxt);
	ExitParallelMode();
	return ok;
}

static int
deferred_cmp(const void *a, const void *b)
{
	uint64		x = ((const load_deferred *) a)->tid;
	uint64		y = ((const load_deferred *) b)->tid;

	return x < y ? -1 : x > y;
}

/*
 * Add the rows the workers left to the leader (out of parallel mode: the
 * guarded detoast may start its subtransaction), each read again by its
 * tid and judged anew; a line pointer that holds another tuple now (another
 * xmin) is one VACUUM emptied. False with st->why if unloadable.
 */
bool
mcc_load_deferred(load_state *st)
{
	load_deferred *d = (load_deferred *) st->deferred.data;
	size_t		n = st->deferred.len / sizeof(load_deferred);
	uint64	   *tids;
	TransactionId *xmins;
	bool		ok;

	if (n == 0)
		return true;
	qsort(d, n, sizeof(load_deferred), deferred_cmp);	/* relation, then page order */
	tids = palloc(sizeof(uint64) * n);
	xmins = palloc(sizeof(TransactionId) * n);
	for (size_t i = 0; i < n; i++)
	{
		tids[i] = d[i].tid;
		xmins[i] = d[i].xmin;
	}
	ok = mcc_load_fetch_tids(st, tids, xmins, n);
	pfree(tids);
	pfree(xmins);
	return ok;
}

/* Send one message to the leader; an ERROR if it is gone. */
static void
worker_send(load_state *st, uint32 kind, const char *a, Size a_len, const char *b, Size b_len)
{
	shm_mq_iovec iov[3];
	shm_mq_result res;

	iov[0].data = (const char *) &kind;
	iov[0].len = sizeof(uint32);
	iov[1].data = a;
	iov[1].len = a_len;
	iov[2].data = b;
	iov[2].len = b_len;
	res = shm_mq_sendv(st->mq, iov, 3, false, true);
	if (res != SHM_MQ_SUCCESS)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("mcc: the leader of a parallel gallery load is gone")));
}

/* A worker sent a LOAD_ROWS frame to the engine (mcc_load_rows_flush): its rows, for the progress. */
void
mcc_load_worker_sent(load_state *st)
{
	worker_send(st, LOAD_MSG_ROWS, (const char *) &st->n_rows, sizeof(uint32), "", 0);
}

/*
 * Before a worker's first frame: wait until the leader has opened the load
 * to joins, connect to the engine the leader talks to and join the load
 * (LOAD_JOIN with its token); the rows then go as this request's. A worker
 * connects as any backend does (the engine's socket, HELLO), but waits for
 * HELLO's answer up to mcc.request_timeout, not the 2 s after which a
 * query falls back: the engine's main thread may be busy with the load's
 * frames (seen at 100 M rows). A worker that found no row never connects.
 */
void
mcc_load_worker_join(load_state *st)
{
	const load_shared *sh = st->shared;
	StringInfoData f;
	char	   *why;

	if (st->joined)
		return;
	ConditionVariablePrepareToSleep(&st->shared->cv);
	while (pg_atomic_read_u32(&st->shared->open) == 0)
		ConditionVariableSleep(&st->shared->cv, PG_WAIT_EXTENSION);
	ConditionVariableCancelSleep();

	if (mcc_conn_ensure_within(&why, mcc_request_timeout) != MCC_CONN_OK)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("mcc: a parallel load worker could not reach the matcher engine: %s", why)));
	if (mcc_conn_incarnation() != sh->incarnation)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("matcher engine terminated"),
				 errdetail("The matcher engine restarted during a parallel gallery load.")));
	st->request_id = mcc_conn_next_id();
	mcc_frame_begin(&f);
	mcc_put_gallery(&f, &sh->gallery);
	mcc_put_u64(&f, sh->gen);
	mcc_put_u64(&f, sh->token[0]);
	mcc_put_u64(&f, sh->token[1]);
	mcc_conn_send(&f, MCC_MSG_LOAD_JOIN, st->request_id);
	pfree(f.data);
	st->joined = true;
}

/*
 * End this worker's part (LOAD_JOIN_END) and check that the engine took
 * every row sent, unless the load failed meanwhile; an ERROR if not (the
 * load fails in the leader then). The load's own failures (a bad row,
 * memory) come at the leader's LOAD_END, as in a serial load.
 */
static void
worker_part_end(load_state *st)
{
	StringInfoData f;
	mcc_reply	reply;
	uint64		took;

	if (!st->joined)
		return;					/* no row: never joined */
	mcc_frame_begin(&f);
	mcc_conn_send(&f, MCC_MSG_LOAD_JOIN_END, st->request_id);
	pfree(f.data);
	await_reply(st, MCC_MSG_LOAD_JOINED, &reply, "take a parallel load worker's rows");
	took = mcc_get_u64(&reply.body);
	/* a load that failed meanwhile (a bad row, memory) drops rows: the leader's LOAD_END says why */
	if (mcc_get_u32(&reply.body) == 0 && took != st->rows_sent)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("mcc: the matcher engine took " UINT64_FORMAT " of a parallel load worker's "
						UINT64_FORMAT " rows", took, st->rows_sent)));
}

/*
 * CPU seconds (user and system) this process has used; *faults: its page
 * faults (a new process faults in every page of shared buffers it touches).
 */
static double
own_cpu(double *faults)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	*faults = (double) (ru.ru_minflt + ru.ru_majflt);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
		(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* A parallel worker of a gallery load (CreateParallelContext's entry point). */
void
mcc_load_worker_main(dsm_segment *seg, shm_toc *toc)
{
	load_shared *sh = shm_toc_lookup(toc, LOAD_KEY_SHARED, false);
	char	   *scans = shm_toc_lookup(toc, LOAD_KEY_SCANS, false);
	char	   *queues = shm_toc_lookup(toc, LOAD_KEY_QUEUES, false);
	shm_mq	   *mq = (shm_mq *) (queues + (Size) ParallelWorkerNumber * LOAD_QUEUE_BYTES);
	load_state	st;
	bool		ok = true;
	double		faults0;
	double		cpu[3] = {own_cpu(&faults0), 0, 0};

	memset(&st, 0, sizeof(st));
	shm_mq_set_sender(mq, MyProc);
	st.mq = shm_mq_attach(mq, seg, NULL);
	st.horizon = sh->horizon;
	st.pin_xmin = sh->pin_xmin;
	st.flags = sh->flags;
	/* the leader's active snapshot, which the parallel machinery restored */
	st.count_visible = sh->count_visible;
	st.count_snap = sh->count_visible ? GetActiveSnapshot() : NULL;
	st.profile_id = sh->profile_id;
	st.shared_profile = &sh->profile;
	st.shared = sh;
	st.next_xid = sh->next_xid;
	st.rel_order = shm_toc_lookup(toc, LOAD_KEY_ORDER, false);
	st.n_rel_order = sh->n_order;
	st.begun = true;			/* the leader sent LOAD_BEGIN */
	st.cxt = CurrentMemoryContext;
	initStringInfo(&st.deferred);
	mcc_load_rows_frame_begin(&st);
	for (int i = 0; ok && i < sh->n_rels; i++)
	{
		load_shared_rel *r = &sh->rels[i];
		Relation	rel = table_open(r->relid, AccessShareLock);
		TableScanDesc scan = table_beginscan_parallel(rel,
													  (ParallelTableScanDesc) (scans + r->scan_off));

		ok = mcc_load_scan(&st, rel, scan, r->key_att, r->tpl_att);
		table_endscan(scan);
		table_close(rel, AccessShareLock);
	}
	if (ok)
	{
		mcc_load_rows_flush(&st);
		worker_part_end(&st);
		if (st.deferred.len > 0)
			worker_send(&st, LOAD_MSG_DEFERRED, st.deferred.data, st.deferred.len, "", 0);
		if (st.count_visible)
			worker_send(&st, LOAD_MSG_VISIBLE, (const char *) &st.visible, sizeof(uint64), "", 0);
		cpu[1] = own_cpu(&cpu[2]) - cpu[0];
		cpu[2] -= faults0;
		worker_send(&st, LOAD_MSG_CPU, (const char *) cpu, sizeof(cpu), "", 0);
	}
	else
	{
		uint32		result = (uint32) st.result;

		worker_send(&st, LOAD_MSG_FAILED, (const char *) &result, sizeof(uint32),
					st.why, strlen(st.why));
	}
	shm_mq_detach(st.mq);
}
