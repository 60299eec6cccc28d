/*
 * eng_pass.h: the passes over a gallery's cache (eng_pass.c). A gallery
 * runs at most one pass's search at a time: the searches ready when it
 * starts form its batch (one scan of the pinned cache for all their
 * probes), those that arrive meanwhile wait for the next one. A pass with
 * refining searches goes on, its cache still pinned, with a rescoring of
 * their shortlists; the next pass may search meanwhile (one pass in each
 * stage: the host work of one beside the device work of the other), unless
 * a delta, a SETTLE or a compaction waits for the cache to have no reader.
 * Each request's answer is the same either way: a pass reads only its own
 * pinned cache.
 */
#ifndef ENG_PASS_H
#define ENG_PASS_H

#include "eng_gallery.h"
#include "eng_server.h"

#define ENG_JOB_BATCH		1	/* eng_job.tag (1-6: see eng_rescore.h) */

/*
 * A pass sent while its cache's GPU mirror is being built (the full upload
 * and the refinement data, eng_pass_start_gpu_build) runs on the CPU
 * threads, unless it is so large that they would take far longer than the
 * whole build: then it waits for the build and runs on the GPU. Estimated
 * from the probes, the searchable rows and the pool's threads: the CPU
 * threads' LSS at ENG_BUILD_CPU_NS_PER_MATCH per match and thread (1.5 M
 * matches/s per core, docs/benchmarks.md "CPU scan"), the build at
 * ENG_BUILD_NS_PER_ROW (1,000,000 rows on an H100: upload 0.40 s, the
 * refinement data 1.2 s). A request waits when it has more than one probe
 * and the CPU estimate is at least ENG_BUILD_WAIT_FACTOR times the build's
 * and at least ENG_BUILD_WAIT_MIN_NS: with 16 threads, from about 154
 * probes on a gallery of 100,000 rows or more (a dedup batch of 256 waits,
 * identify() never does). Pure: unit-tested alone (test_engine_search).
 */
#define ENG_BUILD_CPU_NS_PER_MATCH	667.0
#define ENG_BUILD_NS_PER_ROW		1600.0
#define ENG_BUILD_WAIT_FACTOR		4.0
#define ENG_BUILD_WAIT_MIN_NS		1e9

bool		eng_pass_waits_for_build(uint32_t probes, uint64_t rows, uint32_t threads);

/*
 * Sort the waiting requests: answer those that cannot be served, and return
 * (unlinked, in arrival order) up to max_batch that are ready now.
 */
eng_request *eng_pass_collect_ready(eng_server *s, eng_gallery *g);

/* Start one pass over the cache for the ready requests. */
void		eng_pass_start(eng_server *s, eng_gallery *g, eng_request *ready);

/* Start a pass that only brings the cache's GPU mirror up to date. */
void		eng_pass_start_gpu_sync(eng_server *s, eng_gallery *g);

/*
 * Start the full upload of the cache's GPU mirror (and its refinement data)
 * as a job beside the passes: g->gpu_building until it comes back, the
 * cache pinned; the passes started meanwhile search on the CPU threads
 * (eng_gpu_wants says no while the mirror builds).
 */
void		eng_pass_start_gpu_build(eng_server *s, eng_gallery *g);

/*
 * Start the full upload of c, the cache a snapshot-checked load took, as a
 * job while the check runs (g->gpu_prebuild, c pinned): its rows' device
 * tombstones are held back until the job is over (the check revives them
 * meanwhile), and the load's WANT waits for it, so that no row is appended
 * to c while the job reads it (docs/matcher-service.md, "Cache snapshots").
 */
void		eng_pass_start_gpu_prebuild(eng_server *s, eng_gallery *g, eng_cache *c);

/*
 * A finished pass: reply to the requests still wanting it, unless refining
 * searches need their rescoring first (the pass moves to the rescoring
 * stage, its cache pinned, until that comes back; it first waits for the
 * previous pass's rescoring to end).
 */
void		eng_pass_batch_done(eng_server *s, eng_batch *b);

/*
 * A finished stage of a pass's rescoring: the next stage, or the end of the
 * pass. Returns the pass's gallery.
 */
eng_gallery *eng_pass_rescore_done(eng_server *s, eng_rescore *rs);

#endif							/* ENG_PASS_H */
