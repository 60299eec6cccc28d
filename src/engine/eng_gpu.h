/*
 * eng_gpu.h: the engine's GPU path (kernels/mcc_gpu.h) behind a small
 * interface that exists in every build.
 *
 * Built with MCC_ENGINE_GPU (nvcc present: the top Makefile links
 * build/libmccgpu.a and cudart_static into build/mcc_engine), eng_gpu.c
 * drives the GPU library; without it the same functions report "built
 * without GPU support" and the engine searches on its CPU threads only.
 *
 * One eng_gpu per process holds the devices and a lock: every call into the
 * GPU library is made under it (a library context is used by one thread at
 * a time, and a sticky error must stop every context at once). Each cache of
 * profile gpu2015 gets a mirror: a library context over all devices (the
 * gallery partitioned across them) holding the cache's templates. The
 * mirror follows the cache lazily, inside GPU passes run by the pool's
 * threads while the cache is pinned: a full upload the first time (and for
 * every new cache: after a load or a compaction), then appends of the
 * templates added since, then tombstones for the entries purged since (the
 * cache's purge log).
 *
 * A GPU pass searches every live probe of a batch with the engine's
 * semantics (eng_scan.h): k best by (score desc, key asc, hash asc), `more`,
 * min_score. The library returns the k' best by (score desc, id asc) with id
 * = key among those at or above the slot's min_score (a floor of the
 * device's selection, mcc_gpu_search_min); asking for k' = k + 1 decides
 * `more`, and when the (k+1)-th result ties the k-th on (score, key)
 * (versions of one key with equal scores) the probe is asked again with a larger k' until the tie group is complete, so
 * results are identical to the CPU path's.
 *
 * Failures never reach a client: the pass reports what to do and the
 * caller (eng_pass.c) runs the same batch on the CPU threads.
 */
#ifndef ENG_GPU_H
#define ENG_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mcc_error.h"

struct eng_cache;
struct eng_batch;
struct eng_rescore;

typedef enum eng_gpu_mode
{
	ENG_GPU_OFF = 0,			/* never touch CUDA */
	ENG_GPU_AUTO,				/* every visible GPU if the probe succeeds */
	ENG_GPU_ON					/* the same, but no GPU is an error-level line */
} eng_gpu_mode;

/* What the caller does after a GPU pass. */
typedef enum eng_gpu_outcome
{
	ENG_GPU_DONE = 0,			/* the slots hold the results */
	ENG_GPU_RETRY_CPU,			/* this batch on the CPU (a CUDA error, a bad probe) */
	ENG_GPU_CACHE_CPU,			/* this cache on the CPU from now on (memory, bad data) */
	ENG_GPU_PROCESS_CPU			/* the GPU is gone for the process (sticky error) */
} eng_gpu_outcome;

typedef struct eng_gpu eng_gpu;
typedef struct eng_gpu_mirror eng_gpu_mirror;

/* Largest k a GPU pass serves (the library's k' = k + 1 is at most 2^20). */
#define ENG_GPU_MAX_K	((1u << 20) - 1)

/* eng_gpu_stats.lib_ms: mcc_gpu_timing and mcc_gpu_refine_timing summed */
enum
{
	ENG_GPU_T_MATCH, ENG_GPU_T_SELECT, ENG_GPU_T_D2H, ENG_GPU_T_MERGE,
	ENG_GPU_T_RPREP, ENG_GPU_T_RH2D, ENG_GPU_T_RKERNEL, ENG_GPU_T_RD2H,
	ENG_GPU_T_TIES,				/* of MERGE: runs of equal scores ordered by id */
	ENG_GPU_T_SETTLE,			/* long lists ordered on the devices and copied */
	ENG_GPU_T_PREP,				/* the probes' image on the host */
	ENG_GPU_T_H2D,				/* its upload (partition 0) */
	ENG_GPU_T_WAIT,				/* host: until every partition's pass is collected */
	ENG_GPU_T_SELECT_MAX,		/* the slowest partition's selection */
	ENG_GPU_T_PART_MAX,			/* the slowest partition's pass */
	ENG_GPU_T_N
};

/* Counters for the log, STATUS and tests. */
typedef struct eng_gpu_stats
{
	uint64_t	passes;			/* GPU passes that answered their batch */
	uint64_t	fallbacks;		/* passes handed back to the CPU */
	uint64_t	uploads;		/* full uploads */
	uint64_t	appends;		/* incremental appends */
	uint64_t	removes;		/* tombstones sent */
	uint64_t	requeries;		/* probes asked again for a tie at the cut */
	uint64_t	refines;		/* rescoring jobs answered on the GPU */
	uint64_t	refine_pairs;	/* (probe, candidate) pairs they scored */
	uint64_t	refine_fallbacks;	/* rescoring jobs handed back to the CPU */
	uint64_t	refine_attached;	/* templates whose refinement data went up */
	/* wall time, seconds, of the GPU stages (benchmarks find the slow one) */
	double		search_s;		/* eng_gpu_pass: sync, library search, hits to slots */
	double		search_lib_s;	/* of which mcc_gpu_search calls */
	double		search_fill_s;	/* of which hits into the slots (ties asked again) */
	double		refine_s;		/* eng_gpu_refine: attach, pairs, library, scores back */
	double		refine_lib_s;	/* of which mcc_gpu_refine calls */
	double		upload_s;		/* full uploads of the LSS gallery */
	double		refine_attach_s;	/* refinement data rebuilt and sent */
	double		lib_ms[ENG_GPU_T_N];	/* the libraries' own stage times (ENG_GPU_T_*), ms */
	int			tie_run_max;	/* longest run of equal LSS scores a merge ordered */
	uint64_t	reselects;		/* partitions' selections run again for ties past their room */
} eng_gpu_stats;

/* Does this binary contain the GPU path? */
bool		eng_gpu_built(void);

/*
 * Probe the devices and set up the process's GPU state. NULL when mode is
 * off, nothing usable is found, or the binary has no GPU path, with one log
 * line saying which in plain words and that the search runs on cpu_threads
 * CPU threads (a machine without an NVIDIA driver or device is an ordinary
 * case, not a CUDA failure: CUDA's own message goes to the debug level).
 * partitions > 0 splits every gallery into that many partitions over the
 * devices round-robin (tests: several on one GPU); 0 gives one per device.
 * mem_limit: device bytes all mirrors together may take per device (0: what
 * is free).
 */
eng_gpu    *eng_gpu_start(eng_gpu_mode mode, uint64_t mem_limit, int partitions,
						  int cpu_threads);

/* Close every context (the pool is stopped: nothing runs a pass). */
void		eng_gpu_stop(eng_gpu *g);

/* Is the GPU still usable (no sticky error)? */
bool		eng_gpu_usable(const eng_gpu *g);

/* Would a pass over cache c go to the GPU (profile, state of its mirror)? */
bool		eng_gpu_wants(const eng_gpu *g, const struct eng_cache *c);

/*
 * The same whether or not c has searchable rows yet: a restored cache
 * whose rows are all tombstones until its check revives them.
 */
bool		eng_gpu_wants_rows(const eng_gpu *g, const struct eng_cache *c);

/*
 * Does c's mirror lag behind c (a pass would upload, append or remove)?
 * false after a failed pass: the next search retries, not an idle sync.
 */
bool		eng_gpu_stale(const eng_gpu *g, const struct eng_cache *c);

/*
 * Does c's mirror need a full upload (no copy on the device yet: after a
 * load, a restore, a compaction, a CUDA error)? Main thread, while no pass
 * runs on c; false after a failed pass, as eng_gpu_stale.
 */
bool		eng_gpu_needs_upload(const eng_gpu *g, const struct eng_cache *c);

/*
 * Mark c's mirror as being built by a job beside the passes (main thread):
 * meanwhile eng_gpu_wants and eng_gpu_refine_wants say no, so searches and
 * rescoring run on the CPU threads instead of waiting for the lock, and
 * STATUS says "cpu".
 */
void		eng_gpu_set_building(struct eng_cache *c, bool on);

/*
 * Hold back (on) the tombstones of c's purged entries while its mirror is
 * built during a snapshot check, which revives restored rows meanwhile;
 * off once the check's job is over: the next sync sends them (every purged
 * entry then), and until it has, c counts as stale. Main thread, while no
 * job syncs c's mirror.
 */
void		eng_gpu_hold_removals(struct eng_cache *c, bool on);

/* Give c a mirror (no device work yet; main thread). false: no memory. */
bool		eng_gpu_attach(eng_gpu *g, struct eng_cache *c);

/*
 * Run batch b (over its pinned cache) on the GPU: bring the mirror up to
 * date, then search every probe not cancelled. Called by a pool thread.
 * On anything but ENG_GPU_DONE, err says why and the slots are to be reset.
 */
eng_gpu_outcome eng_gpu_pass(eng_gpu *g, struct eng_batch *b, mcc_error *err);

/*
 * After a pass that did not answer (main thread): close c's context and
 * keep c on the CPU (ENG_GPU_CACHE_CPU, and for every cache after
 * ENG_GPU_PROCESS_CPU). Waits for a pass in flight on another cache.
 */
void		eng_gpu_disable_cache(eng_gpu *g, struct eng_cache *c);

/* Stop using the GPU in this process; true the first time (log it once). */
bool		eng_gpu_disable_all(eng_gpu *g);

/*
 * Refinement on the GPU (kernels/mcc_gpu_refine.h): the rescoring job of a
 * pass (eng_rescore.h) scores its (probe, cache entry) pairs on c's mirror,
 * where entry k is gallery template k. The mirror holds, next to the LSS
 * gallery, each template's refinement data (minutiae in the order of
 * mcc_match.c's sides, from the templates eng_cache_template rebuilds): sent
 * by the gallery's GPU sync right after a full upload
 * (eng_gpu_prepare_refinement), else by the first rescoring job on the
 * device; for the templates appended since by each later job. Scores are
 * mcc_match_candidate's bit for bit, so the CPU threads and the GPU give
 * the same answer.
 *
 * eng_gpu_refine_wants (main thread): would rescoring on cache c go to the
 * GPU? c has a mirror on the device that a pass has used and refinement of
 * c has not failed for good. eng_gpu_refine_method: does the device run
 * this method (the Hungarian methods and consolidation stay on the CPU)?
 */
bool		eng_gpu_refine_wants(const eng_gpu *g, const struct eng_cache *c);
bool		eng_gpu_refine_method(int method);

/*
 * Run rescoring job rs (cache pinned) on the GPU: bring the mirror and its
 * refinement data up to date, then score the pairs of every live probe
 * marked on_gpu, one library call per method. Called by a pool thread. ENG_GPU_DONE: every
 * live pair has its score. ENG_GPU_RETRY_CPU: this job on the CPU threads
 * (a CUDA error; if refinement of the cache cannot work, memory or data, it
 * stays on the CPU from now on, and err says so); ENG_GPU_CACHE_CPU and
 * ENG_GPU_PROCESS_CPU as for a pass.
 */
eng_gpu_outcome eng_gpu_refine(eng_gpu *g, struct eng_rescore *rs, mcc_error *err);

/*
 * Send the refinement data c's mirror lacks, right after a sync (a pool
 * thread, cache pinned), so that the first refining search after a load or
 * a restart finds it on the device. A failure is logged: the CPU threads
 * rescore c from then on when the device cannot hold or take the data, and
 * the next rescoring job tries again after a CUDA error.
 */
void		eng_gpu_prepare_refinement(eng_gpu *g, const struct eng_cache *c);

/* Release a cache's mirror (eng_cache_free). */
void		eng_gpu_mirror_free(eng_gpu_mirror *m);

/* Device name ("cpu" without a mirror) and device bytes of c, for STATUS. */
void		eng_gpu_describe(const eng_gpu *g, const struct eng_cache *c,
							 char *device, size_t len, uint64_t *bytes);

/* Process-wide counters. */
void		eng_gpu_get_stats(const eng_gpu *g, eng_gpu_stats *st);

/* Log the process-wide counters (nothing if the GPU path did no work). */
void		eng_gpu_log_totals(const eng_gpu *g);

/*
 * The devices in use: *n of them (at most max), their CUDA ordinals and
 * names (image jobs open their own contexts on them: eng_image.h).
 */
void		eng_gpu_devices(const eng_gpu *g, int max, int *n, int *ordinals,
							char (*names)[64]);

/* --- test entries -------------------------------------------------------- */

/*
 * Every score of probe blob tpl against c's mirror (brought up to date
 * first): scores[i] for entry i, -1 for tombstones. fresh: a new context
 * with a full upload of c instead (the reload that the mirror must equal).
 */
bool		eng_gpu_test_scores(eng_gpu *g, struct eng_cache *c, const uint8_t *tpl,
								uint32_t len, bool fresh, float *scores, mcc_error *err);

/* Make the next match kernel on c's mirror fault (a sticky error). */
bool		eng_gpu_test_fault(eng_gpu *g, struct eng_cache *c);

/* Failures a test can make the next pass report. */
typedef enum eng_gpu_fault
{
	ENG_GPU_FAULT_CUDA = 1,		/* a CUDA error (the context stays usable) */
	ENG_GPU_FAULT_PROBE,		/* a probe the kernels refuse */
	ENG_GPU_FAULT_OOM			/* out of device memory */
} eng_gpu_fault;

/* Make the next pass fail as the library would with that failure. */
void		eng_gpu_test_inject(eng_gpu *g, eng_gpu_fault fault);

/*
 * The same for the next rescoring job on the GPU (ENG_GPU_FAULT_PROBE: the
 * library refuses the job's data, so refinement of that cache stays on the
 * CPU from then on).
 */
void		eng_gpu_test_inject_refine(eng_gpu *g, eng_gpu_fault fault);

#endif							/* ENG_GPU_H */
