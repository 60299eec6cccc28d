/*
 * eng_gpu_int.h: what the units of the engine's GPU path share beyond
 * eng_gpu.h (built with MCC_ENGINE_GPU only): the GPU state, a cache's
 * mirror on the devices, and the mirror's upkeep (eng_gpu_mirror.c) that
 * passes (eng_gpu_search.c) and rescorings (eng_gpu_refine.c) start from.
 * Every library call is made with eng_gpu.lock held; a search or a
 * rescoring releases it while it waits for its kernels (the library's wait
 * hook), so that the other stage's host work runs meanwhile. A mirror's
 * busy count says how many such calls are on its context; whatever changes
 * or frees the context's device data waits for none to be (eng_gpu_quiesce).
 */
#ifndef ENG_GPU_INT_H
#define ENG_GPU_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "eng_cache.h"
#include "eng_gpu.h"
#include "mcc_gpu.h"

#define GPU_HITS_MAX		(1u << 22)	/* hits of one library call */
#define GPU_MAX_FAILURES	3	/* passes handed back in a row: CPU for the cache */
#define GPU_K_LIMIT			(1u << 20)	/* mcc_gpu_search's largest k */
#define GPU_GEOM_CHUNK		65536	/* templates whose refinement data is staged at once */

struct eng_gpu
{
	pthread_mutex_t lock;		/* held around every library call but its device wait */
	pthread_cond_t idle;		/* a mirror's busy count fell (with lock) */
	int			ndev;
	mcc_gpu_devinfo dev[MCC_GPU_MAX_DEVICES];
	int			nparts;
	int			parts[MCC_GPU_MAX_DEVICES];	/* device of each partition */
	uint64_t	mem_limit;		/* per device, all mirrors; 0: what is free */
	uint64_t	dev_used[MCC_GPU_MAX_DEVICES];	/* by all mirrors, per ordinal */
	atomic_bool broken;			/* a sticky error: the CPU from now on */
	bool		broken_logged;	/* main thread */
	char		name[128];		/* for STATUS (cut to 31 bytes there) */
	int			build_threads;	/* threads that rebuild refinement data (the CPU pass's) */
	mcc_gpu_code inject;		/* test: fail the next pass with this code */
	mcc_gpu_code inject_refine; /* test: fail the next rescoring job with it */
	eng_gpu_stats stats;
};

struct eng_gpu_mirror
{
	eng_gpu    *owner;
	mcc_gpu    *ctx;			/* NULL: nothing on the device */
	uint32_t	given;			/* templates the context holds */
	uint32_t	purges_sent;	/* entries of the cache's purge log applied */
	uint64_t	dev_bytes[MCC_GPU_MAX_DEVICES];	/* per ordinal */
	int			failures;		/* passes handed back in a row */
	int			busy;			/* searches and rescorings on ctx now (lock held) */
	atomic_bool failed;			/* this cache stays on the CPU */
	uint32_t	ref_given;		/* templates whose refinement data the context holds */
	int			ref_failures;	/* rescoring jobs handed back in a row */
	atomic_bool ref_failed;		/* this cache's rescoring stays on the CPU */
	atomic_bool on_device;		/* for STATUS (read without the lock) */
	atomic_bool building;		/* a job beside the passes uploads it (set by the main thread) */
	atomic_uint_fast64_t bytes;
	/*
	 * The copy of a snapshot being checked (eng_gpu_hold_removals): its
	 * restored rows are tombstones that the check revives meanwhile, so no
	 * tombstone goes to the device until the check is over (removals_held,
	 * set by the main thread before and after the job); removals_due: the
	 * purged entries' tombstones are still to be sent (lock held).
	 */
	bool		removals_held;
	bool		removals_due;
};

/* Monotonic seconds, for the log. */
double		eng_gpu_now_s(void);

/*
 * Run a search or a rescoring on m's context (lock held): busy while the
 * library call, which releases the lock during its device wait, is on it.
 */
void		eng_gpu_busy(eng_gpu *g, eng_gpu_mirror *m, bool on);

/*
 * Wait until no search or rescoring is on m's context (lock held; released
 * while waiting): before the context's device data changes or is freed.
 */
void		eng_gpu_quiesce(eng_gpu *g, eng_gpu_mirror *m);

/* Close m's context and forget its device memory (lock held). */
void		eng_gpu_close_ctx(eng_gpu *g, eng_gpu_mirror *m);

/* Record what m's context holds on each device (lock held). */
void		eng_gpu_update_bytes(eng_gpu *g, eng_gpu_mirror *m);

/* Open a context for cache c over every partition (lock held). */
mcc_gpu_code eng_gpu_open_ctx(eng_gpu *g, const eng_cache *c, mcc_gpu **out, mcc_error *err);

/* Tombstone every purged entry of c in ctx (after a full upload). */
mcc_gpu_code eng_gpu_remove_purged(eng_gpu *g, mcc_gpu *ctx, const eng_cache *c, mcc_error *err);

/*
 * Bring m up to date with c (lock held): a full upload for a new context,
 * else appends, then tombstones. On failure the caller closes the context.
 */
mcc_gpu_code eng_gpu_sync_mirror(eng_gpu *g, eng_gpu_mirror *m, const eng_cache *c,
								 mcc_error *err);

/*
 * Why the GPU or mirror m cannot take a job now (lock held), err saying so;
 * ENG_GPU_DONE if it can. refining: a rescoring (its refinement must be on).
 */
eng_gpu_outcome eng_gpu_job_blocked(eng_gpu *g, const eng_gpu_mirror *m, bool refining,
									mcc_error *err);

/*
 * Bring m up to date with c before a job (lock held); on failure (*rc) the
 * context is closed unless the error is sticky, and the outcome says what
 * the failure means.
 */
eng_gpu_outcome eng_gpu_sync_for_job(eng_gpu *g, eng_gpu_mirror *m, const eng_cache *c,
									 mcc_gpu_code *rc, mcc_error *err);

/*
 * Send the refinement data of templates [m->ref_given, m->given) to m's
 * context (lock held; eng_gpu_refdata.c): their geometry rebuilt from c on
 * up to build_threads threads, sent in gallery order. m->ref_given says how
 * far it got.
 */
mcc_gpu_code eng_gpu_attach_refinement(eng_gpu *g, eng_gpu_mirror *m, const eng_cache *c,
									   mcc_error *err);

/* A failure a test injected for the next job (lock held), consumed; MCC_GPU_OK if none. */
mcc_gpu_code eng_gpu_take_injected(mcc_gpu_code *slot, const char *what, mcc_error *err);

/* What a library failure means for the engine (syncing: of the mirror's upkeep). */
eng_gpu_outcome eng_gpu_outcome_of(mcc_gpu_code rc, bool syncing);

#endif							/* ENG_GPU_INT_H */
