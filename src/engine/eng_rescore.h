/*
 * eng_rescore.h: refinement inside a search: the second stage of
 * identification (paper 000 Sec. 5.4) on the shortlists of a pass, from the
 * cache's own copy of the templates (mcc_proto.h, a refining SEARCH).
 *
 * After a pass, the probes of its refining searches each have their LSS
 * shortlist: entries of the pinned cache. A rescore job scores every
 * (probe, entry) pair with the probe's method, mcc_match_candidate on the
 * template eng_cache_template rebuilds byte for byte, so every score is the
 * one the backend's mcc_score(probe, row's template, method) gives for the
 * tuple version the entry is. All the pass's probes go in one job (the
 * batching of the pass carries over), cut into parts of at most
 * ENG_RESCORE_PART pairs of one probe, run by the pool's threads, each with
 * its own mcc_match_work and template buffer in its scratch.
 *
 * eng_refine_candidates() is the one place that decides where a job runs:
 * when the cache's mirror is on a GPU, the probes whose method the device
 * runs go there first (eng_gpu_refine: one part, every pair of those probes
 * in one library call per method, scores bit-identical to the CPU's), then
 * the others (lsa...) on the CPU threads; else everything on the CPU
 * threads. A GPU stage that fails is run again on the CPU threads, so the
 * client never sees the difference (eng_rescore_next).
 */
#ifndef ENG_RESCORE_H
#define ENG_RESCORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eng_cache.h"
#include "eng_gpu.h"
#include "eng_pool.h"
#include "mcc_error.h"
#include "mcc_match.h"
#include "mcc_template.h"

#define ENG_JOB_RESCORE	5		/* eng_job.tag (1: passes, eng_pass.h; 2: compactions, eng_compact.h; 3: images; 4: REFINE) */
#define ENG_RESCORE_PART 8		/* pairs per part, at most */

/* One probe of a job and its pairs (pairs[first .. first + n)). */
typedef struct eng_rescore_probe
{
	mcc_template_view probe;	/* points into the request's copy of the blob */
	mcc_method	method;
	atomic_int *cancel;			/* the request's flag: skip the probe when set */
	bool		on_gpu;			/* rescored by the job's GPU stage */
	uint32_t	first;
	uint32_t	n;
} eng_rescore_probe;

/* One pair: a cache entry to score against its probe, and its score. */
typedef struct eng_rescore_pair
{
	uint32_t	entry;
	float		score;
} eng_rescore_pair;

typedef struct eng_rescore
{
	eng_job		job;			/* first: the pool hands this pointer back */
	const eng_cache *cache;		/* pinned by the owner until the job is back */
	void	   *owner;			/* the caller's */
	uint32_t	n_probes;
	eng_rescore_probe *probes;
	uint32_t	n_pairs;
	uint32_t	cap_pairs;
	eng_rescore_pair *pairs;
	uint32_t   *part_first;		/* per part: its first pair (then n_pairs; a part
								 * ends at its probe's end or ENG_RESCORE_PART
								 * pairs on, never at the next part) ... */
	uint32_t   *part_probe;		/* ... and its probe (parts never span probes) */
	eng_job_error fail;			/* the first failure (memory, a bad template) */
	eng_gpu    *gpu;			/* non-NULL: the job runs on the GPU */
	eng_gpu_outcome gpu_outcome;	/* how the GPU job ended */
	mcc_error	gpu_err;		/* why it did not answer */
	int64_t		started_usec;	/* eng_now_usec() when it was set up */
} eng_rescore;

/* Scratch bytes a pool thread needs for rescoring. */
size_t		eng_rescore_scratch_bytes(void);

/* A job over cache c for n_probes probes (NULL if no memory). */
eng_rescore *eng_rescore_new(const eng_cache *c, uint32_t n_probes);

/*
 * Probe i of the job: the probe's template blob (kept by the caller until
 * the job is freed), the method, the entries to score (copied) and the flag
 * that cancels it. Probes are set in order, each once. False if no memory
 * or the probe is not a valid template of the cache's profile.
 */
bool		eng_rescore_set(eng_rescore *rs, uint32_t i, const uint8_t *tpl, uint32_t len,
							mcc_method method, const uint32_t *entries, uint32_t n,
							atomic_int *cancel);

/* Probe i's scores (in the order its entries were given) and their number. */
const eng_rescore_pair *eng_rescore_pairs(const eng_rescore *rs, uint32_t i, uint32_t *n);

/*
 * Run the job: the dispatch between the devices that can rescore (the GPU
 * of the cache's mirror, or the CPU threads; s->cfg.gpu_refine_off keeps
 * every job on the CPU). The job is queued on the pool (s->jobs counts it)
 * and comes back through eng_server_step with tag ENG_JOB_RESCORE; a job
 * without pairs is queued too (it finishes at once).
 */
struct eng_server;
void		eng_refine_candidates(struct eng_server *s, eng_rescore *rs);

/* Did the job's GPU stage end without answering (gpu_outcome says why)? */
bool		eng_rescore_gpu_failed(const eng_rescore *rs);

/*
 * The job came back: after its GPU stage, queue what is left for the CPU
 * threads (every probe if the stage failed, else those the GPU does not
 * run) and return true; false when the job is complete.
 */
bool		eng_rescore_next(struct eng_server *s, eng_rescore *rs);

/* Run every part on the calling thread (tests). */
void		eng_rescore_run_here(eng_rescore *rs);

void		eng_rescore_free(eng_rescore *rs);

#endif							/* ENG_RESCORE_H */
