/*
 * eng_server.h: the engine's state and its single-threaded event loop.
 *
 * The main thread owns everything here: connections, galleries, loads and
 * requests. It reads frames from every client, keeps the caches current,
 * groups the searches that are pending together for a gallery into one
 * batch for the pool's threads, and writes replies. Threads only run batches
 * and compactions (eng_scan.h, eng_pool.h).
 *
 * A cache is changed only when no batch or compaction reads it. A gallery
 * runs at most one batch at a time; searches that arrive meanwhile wait and
 * form the next batch, after the deltas that arrived meanwhile are applied.
 */
#ifndef ENG_SERVER_H
#define ENG_SERVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "eng_cache.h"
#include "eng_delta.h"
#include "eng_gpu.h"
#include "eng_image.h"
#include "eng_pool.h"
#include "eng_refine.h"
#include "eng_rescore.h"
#include "eng_scan.h"
#include "eng_wire.h"
#include "mcc_lss.h"
#include "mcc_proto.h"

typedef struct eng_config
{
	int			threads;
	uint64_t	memory_limit;	/* bytes, 0: none */
	int			delta_timeout_ms;	/* how long a SEARCH waits for deltas */
	uint32_t	max_batch;		/* requests per pass; 1: no batching */
	eng_gpu_mode gpu;			/* zero: off (eng_main's default is auto) */
	uint64_t	gpu_memory_limit;	/* device bytes per device, 0: what is free */
	int			gpu_partitions; /* 0: one per device (tests: more) */
	bool		gpu_refine_off; /* rescore shortlists on the CPU threads even with a GPU */
	int			image_threads;	/* image jobs' own threads; 0: half of threads, at least 1 */
	uint32_t	image_queue;	/* image jobs admitted at once; 0: 4 per image thread */
	const char *snapshot_dir;	/* cache snapshots: NULL, off (eng_snapshot.h) */
	uint64_t	system_id;		/* the cluster's, recorded in snapshots */
} eng_config;

struct eng_gallery;
struct eng_conn;

/* A SEARCH from its arrival to its reply. */
typedef struct eng_request
{
	struct eng_request *next;	/* gallery's waiting list, or its batch */
	uint64_t	conn_id;
	uint64_t	request_id;
	uint64_t	need_gen;
	uint32_t	k;
	float		min_score;
	uint64_t	count_xmin;		/* 0, or a visibility count at this xmin ... */
	uint64_t	count_above;	/* ... if more entries are searchable than this */
	int			count_index;	/* in its batch's counts, or -1 */
	/* a refining search (refine != MCC_LSS): SEARCH's refine fields */
	mcc_method	refine;
	uint32_t	final_k;
	double		fraction;
	uint32_t	refine_min;
	bool		top;			/* MCC_REFINE_F_TOP: the best final_k may do */
	uint64_t	shortlist;		/* s of mcc_proto.h: n' for the pass's searchable entries */
	uint32_t	n_probes;
	mcc_probe **probes;
	uint8_t   **tpls;			/* the probes' template blobs (GPU path, refining) */
	uint32_t   *tpl_lens;
	int64_t		deadline;		/* monotonic usec: give up waiting for deltas */
	atomic_int	cancelled;		/* CANCEL or the connection closed */
	uint32_t	first_slot;		/* in its batch */
} eng_request;

/* A full load a connection is streaming. */
typedef struct eng_load
{
	struct eng_load *next;		/* gallery's loads */
	struct eng_gallery *gallery;
	uint64_t	conn_id;
	uint64_t	request_id;
	uint64_t	gen;
	const mcc_profile *profile;
	eng_cache  *build;			/* built aside; NULL after a failure */
	int			perr;			/* 0, or the mcc_proto_error to reply at LOAD_END */
	mcc_error	err;
	uint64_t	rows;
	uint64_t	expected;		/* LOAD_BEGIN's estimate of the rows (0: none) */
	int64_t		t_start;
	uint32_t	flags;			/* MCC_LOAD_* */
	uint64_t	scan_lsn;		/* MCC_LOAD_IDS: LOAD_BEGIN's */
	uint64_t	next_xid;
	struct eng_snap *snap;		/* MCC_LOAD_SNAPSHOT: the snapshot checked, until WANT */
	uint64_t   *want;			/* tids the snapshot did not prove */
	uint32_t	n_want;
	uint32_t	cap_want;
	uint64_t	from_snap;		/* rows taken from the snapshot */
	uint64_t	snap_rows;		/* rows the snapshot had */
} eng_load;

/* A SETTLE waiting for its cache to be free of readers. */
typedef struct eng_settle
{
	struct eng_settle *next;
	uint64_t	conn_id;
	uint64_t	request_id;
	uint64_t	horizon;
	uint32_t	n;
	uint64_t   *xids;			/* sorted */
	uint32_t   *states;
} eng_settle;

/* A compaction running in a thread. */
typedef struct eng_compaction
{
	eng_job		job;			/* first */
	struct eng_gallery *gallery;
	eng_cache  *from;			/* pinned */
	eng_cache  *result;
	uint64_t	charged;
	mcc_error	err;
} eng_compaction;

typedef struct eng_gallery
{
	mcc_gallery_id id;
	eng_cache  *cache;			/* current, or NULL: not loaded */
	eng_genq	q;				/* deltas and reload marks not yet dropped */
	eng_request *waiting;		/* FIFO */
	eng_request **waiting_tail;
	eng_batch  *running;		/* the pass in progress, or NULL */
	eng_request *running_reqs;
	eng_cache  *running_cache;	/* what `running` reads (pinned) */
	eng_rescore *rescoring;		/* the pass's second stage (refining searches), or NULL */
	eng_compaction *compacting;
	eng_load   *loads;
	eng_settle *settles;		/* FIFO of deferred SETTLEs */
	eng_settle **settles_tail;
	int32_t		priority;		/* LOAD_BEGIN's or PRIORITY's: who may evict whom */
	uint64_t	searches;		/* requests answered */
	uint64_t	passes;			/* batches started */
	uint64_t	gpu_syncs;		/* passes that only brought the GPU mirror up to date */
	int64_t		loaded_at;		/* realtime usec */
	double		load_seconds;
	int64_t		last_used;		/* monotonic usec */
	/* cache snapshots (eng_snapshot.h) */
	uint64_t	scan_lsn;		/* of the load that made the cache (0: unknown) */
	struct eng_snap *snap;		/* read for a load to check (SNAPSHOT), or NULL */
	bool		snap_dirty;		/* the cache changed since its last snapshot */
	int64_t		snap_due;		/* monotonic usec: write then */
	struct eng_snap_job *snapshotting;	/* encoding in the pool, or NULL */
	struct eng_snap_read *snap_reading; /* its file read in the pool, or NULL */
	atomic_int	snap_writing;	/* a writer thread has its file open */
} eng_gallery;

typedef struct eng_conn
{
	uint64_t	id;
	int			fd;				/* -1: fed in-process (tests, fuzzing) */
	eng_buf		in;
	size_t		in_pos;			/* first unprocessed byte */
	eng_buf		out;
	size_t		out_pos;		/* first unsent byte */
	bool		closing;		/* close once out is sent */
	bool		dead;			/* close now */
	eng_load   *load;
	uint32_t	pid;
} eng_conn;

typedef struct eng_server
{
	eng_config	cfg;
	eng_budget	budget;
	eng_pool   *pool;			/* searches, compactions, refinements */
	eng_pool   *img_pool;		/* image and point jobs only (eng_image.h) */
	eng_pool   *load_pool;		/* a frame's load rows only (eng_load.h); NULL: one thread */
	uint64_t	evictions;		/* caches dropped to make room for a load */
	eng_gpu    *gpu;			/* NULL: CPU threads only */
	uint64_t	incarnation;
	eng_gallery **gal;
	uint32_t	n_gal;
	uint32_t	cap_gal;
	eng_conn  **conns;
	uint32_t	n_conns;
	uint32_t	cap_conns;
	uint64_t	next_conn_id;
	uint32_t	jobs;			/* batches, rescorings, compactions, refinements and image stages in the pools */
	eng_refine *refines;		/* refinements in the pool */
	int			listen_fd;
	eng_image_job *images;		/* image and point jobs not yet replied (eng_image.h) */
	uint32_t	n_images;		/* of them (at most cfg.image_queue) */
	struct eng_img_gpu *img_gpu;	/* their GPU contexts; NULL: the CPU only */
	eng_image_stats img_stats;
} eng_server;

/* limits on data kept for generations the cache cannot apply yet */
#define ENG_GENQ_MAX_N		4096
#define ENG_GENQ_MAX_BYTES	((size_t) 256 << 20)
#define ENG_MAX_SHELLS		1024	/* galleries known only by their deltas */
#define ENG_MAX_XIDS		MCC_PROTO_MAX_XIDS
#define ENG_OUT_MAX			((size_t) 512 << 20)	/* unread replies: close */

/* --- eng_server.c --- */
bool		eng_server_init(eng_server *s, const eng_config *cfg);
void		eng_server_destroy(eng_server *s);
int64_t		eng_now_usec(void);	/* monotonic */
int64_t		eng_wall_usec(void);	/* realtime */

/* Handle finished jobs and bring every gallery forward (no blocking). */
void		eng_server_step(eng_server *s);

/* Wait up to timeout_ms for a job to finish, then step; for tests. */
void		eng_server_pump(eng_server *s, int timeout_ms);

/* Run the poll loop on the listener until *stop or parent_fd's EOF. */
int			eng_server_run(eng_server *s, int parent_fd, int signal_fd);

/* Send ERROR to every pending request (shutting down). */
void		eng_server_fail_all(eng_server *s, const char *why);

/* --- eng_conn.c --- */
eng_conn   *eng_conn_add(eng_server *s, int fd);
eng_conn   *eng_conn_by_id(eng_server *s, uint64_t id);
void		eng_conn_close(eng_server *s, eng_conn *c);

/* Append bytes received and handle the complete frames among them. */
void		eng_conn_input(eng_server *s, eng_conn *c, const void *data, size_t len);

/* Read what the socket has (false: closed). */
bool		eng_conn_read(eng_server *s, eng_conn *c);

/* Send what is queued (false: the peer is gone). */
bool		eng_conn_flush(eng_conn *c);

void		eng_reply_error(eng_conn *c, uint64_t request_id, mcc_proto_error code,
							int status, const char *fmt,...)
			__attribute__((format(printf, 5, 6)));
void		eng_reply_error_by_id(eng_server *s, uint64_t conn_id, uint64_t request_id,
								  mcc_proto_error code, const mcc_error *err);
void		eng_reply_ok(eng_conn *c, uint64_t request_id);

/* --- eng_handlers.c --- */
/* Handle one frame; false: malformed (the connection is closed). */
bool		eng_handle_frame(eng_server *s, eng_conn *c, const mcc_frame_hdr *h,
							 const uint8_t *payload);

/* --- eng_refine.c --- */
/* Queue a parsed REFINE for connection c (replies at once if it is empty). */
void		eng_refine_submit(eng_server *s, eng_conn *c, uint64_t request_id,
							  eng_refine *r);

/* A finished REFINE job: reply unless cancelled, free it. */
void		eng_refine_done(eng_server *s, eng_job *job);
bool		eng_refine_cancel(eng_server *s, uint64_t conn_id, uint64_t request_id);
void		eng_refine_conn_closed(eng_server *s, uint64_t conn_id);
void		eng_refine_fail_all(eng_server *s, const char *why);

/* Free the refinements the stopped pool did not hand back. */
void		eng_refine_free_all(eng_server *s);

/* --- eng_gallery.c --- */
eng_gallery *eng_gallery_get(eng_server *s, const mcc_gallery_id *id, bool create);
void		eng_gallery_drop_cache(eng_server *s, eng_gallery *g, const char *why);
void		eng_gallery_advance(eng_server *s, eng_gallery *g);
void		eng_gallery_submit(eng_server *s, eng_gallery *g, eng_request *r);
void		eng_gallery_settle(eng_server *s, eng_gallery *g, eng_settle *st);
void		eng_gallery_job_done(eng_server *s, eng_job *job);
void		eng_gallery_conn_closed(eng_server *s, uint64_t conn_id);
bool		eng_gallery_cancel(eng_server *s, uint64_t conn_id, uint64_t request_id);
void		eng_gallery_evict(eng_server *s, const mcc_gallery_id *id);
void		eng_gallery_set_priority(eng_server *s, const mcc_gallery_id *id, int32_t priority);
void		eng_gallery_free_all(eng_server *s);
/* A reader (a snapshot's encoding) is done with cache c. */
void		eng_gallery_unpin(eng_gallery *g, eng_cache *c);
int64_t		eng_gallery_next_deadline(eng_server *s);
void		eng_request_free(eng_request *r);
void		eng_settle_free(eng_settle *st);

/* loads */
eng_load   *eng_load_begin(eng_server *s, eng_conn *c, uint64_t request_id,
						   const mcc_gallery_id *id, uint64_t gen,
						   uint32_t profile_id, uint64_t expected_rows,
						   int32_t priority, uint32_t flags);
void		eng_load_row(eng_server *s, eng_load *l, int64_t key, uint64_t insert_xid,
						 uint64_t delete_xid, const uint8_t *tpl, uint32_t len,
						 uint64_t tid, uint64_t xmin, bool checked);
void		eng_load_end(eng_server *s, eng_conn *c);
void		eng_load_abort(eng_server *s, eng_conn *c);

#endif							/* ENG_SERVER_H */
