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
 *
 * What the loop drives has a header per unit: connections (eng_conn.h),
 * requests (eng_handlers.h), galleries (eng_gallery.h) with their passes
 * (eng_pass.h), RESULTs (eng_result.h), compactions (eng_compact.h), loads
 * (eng_load.h) and snapshots (eng_snapshot.h), REFINE (eng_refine.h) and
 * image jobs (eng_image.h).
 */
#ifndef ENG_SERVER_H
#define ENG_SERVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "eng_cache.h"
#include "eng_gpu.h"
#include "eng_image.h"
#include "eng_pool.h"
#include "eng_refine.h"

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
	int			load_prefault;	/* threads faulting in a load's cache ahead of its rows
								 * (eng_prefault.h): 0: threads / 4, 1 to 4; < 0: none */
} eng_config;

struct eng_gallery;
struct eng_conn;

/*
 * The stages of a refining search from its SEARCH read to its RESULT
 * written, one after the other (eng_pass.c times them, eng_server_destroy
 * logs them per reply), and two parts of ENG_RS_PASS run beside each other.
 */
typedef enum eng_rstage
{
	ENG_RS_QUEUED,				/* SEARCH read until its pass went to the pool */
	ENG_RS_PASS_QUEUED,			/* the pass in the pool's queue */
	ENG_RS_PASS,				/* its first part taken until its last ended */
	ENG_RS_PASS_BACK,			/* ... until the main thread took it back */
	ENG_RS_WAITED,				/* finished, waiting for the previous rescoring */
	ENG_RS_HANDOVER,			/* shortlists cut, the rescoring set up and queued */
	ENG_RS_RESCORE_QUEUED,		/* the rescoring in the pool's queue */
	ENG_RS_RESCORE,				/* its first part taken until its last ended */
	ENG_RS_RESCORE_BACK,		/* ... until the main thread took it back */
	ENG_RS_REPLY,				/* replies written (this one's and those before it) */
	ENG_RS_GPU,					/* of ENG_RS_PASS: the GPU part */
	ENG_RS_COUNT,				/* of ENG_RS_PASS: the visibility counts, beside it */
	ENG_RSTAGES
} eng_rstage;

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
	struct eng_gallery **gal;
	uint32_t	n_gal;
	uint32_t	cap_gal;
	struct eng_conn **conns;
	uint32_t	n_conns;
	uint32_t	cap_conns;
	uint64_t	next_conn_id;
	uint32_t	jobs;			/* batches, rescorings, compactions, refinements,
								 * snapshots and image stages in the pools
								 * (eng_server_submit counts them in,
								 * eng_server_step out) */
	eng_refine *refines;		/* refinements in the pool */
	int			listen_fd;
	eng_image_job *images;		/* image and point jobs not yet replied (eng_image.h) */
	uint32_t	n_images;		/* of them (at most cfg.image_queue) */
	struct eng_img_gpu *img_gpu;	/* their GPU contexts; NULL: the CPU only */
	eng_image_stats img_stats;
	/* the main thread's time in the loop's turns, and within them waiting for the load pool */
	int64_t		busy_usec;
	int64_t		load_wait_usec;
	/* loading connections' receivers (eng_load_rx.h) -> main thread: frames ready; -1: none */
	int			rx_wake[2];
	/*
	 * refining searches: where their time goes beside the GPU path's own
	 * totals (logged when the server stops)
	 */
	uint64_t	refined;		/* replies to refining searches */
	int64_t		cut_usec;		/* shortlists cut at their certain entries */
	int64_t		rescore_usec;	/* rescorings, from their start to their pass's end */
	int64_t		refined_reply_usec;	/* their RESULT frames written */
	int64_t		refined_usec;	/* from their SEARCH read to their RESULT written */
	int64_t		refined_stage_usec[ENG_RSTAGES];	/* the same, stage by stage */
} eng_server;

bool		eng_server_init(eng_server *s, const eng_config *cfg);
void		eng_server_destroy(eng_server *s);

/*
 * Log the totals the engine logs at its stop (refining searches by stage,
 * the GPU path's), so far; on SIGUSR1, so that a benchmark can read one of
 * its phases apart (the totals are cumulative: the next log less this one).
 */
void		eng_server_log_totals(const eng_server *s);
int64_t		eng_now_usec(void);	/* monotonic */
int64_t		eng_wall_usec(void);	/* realtime */

/*
 * Queue a job of the server's (one of the tags eng_server_step hands back)
 * on pool, counting it in s->jobs until it comes back done.
 */
void		eng_server_submit(eng_server *s, eng_pool *pool, eng_job *job);

/* Handle finished jobs and bring every gallery forward (no blocking). */
void		eng_server_step(eng_server *s);

/* Wait up to timeout_ms for a job to finish, then step; for tests. */
void		eng_server_pump(eng_server *s, int timeout_ms);

/* Run the poll loop on the listener until *stop or parent_fd's EOF. */
int			eng_server_run(eng_server *s, int parent_fd, int signal_fd);

/* Send ERROR to every pending request (shutting down). */
void		eng_server_fail_all(eng_server *s, const char *why);

#endif							/* ENG_SERVER_H */
