/*
 * eng_scan.h: one pass over a cache for a batch of probes.
 *
 * The gallery is cut into chunks that fit in a core's cache; a thread takes
 * a chunk and scores every probe of the batch against it (mcc_soa_scan, the
 * one LSS arithmetic) before the next chunk, so a chunk is read from memory
 * once per batch, not once per probe. Tombstones are scored but dropped.
 * Each probe keeps its k best (eng_hits) and counts the entries at or above
 * its min_score, which gives RESULT's `more`.
 */
#ifndef ENG_SCAN_H
#define ENG_SCAN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "eng_cache.h"
#include "eng_cache_count.h"
#include "eng_gpu.h"
#include "eng_hits.h"
#include "eng_pool.h"
#include "mcc_lss.h"

#define ENG_CHUNK_MAX	4096	/* templates per chunk, at most */
#define ENG_SCRATCH_BYTES (ENG_CHUNK_MAX * (sizeof(float) + sizeof(eng_hit)))

typedef struct eng_slot
{
	const mcc_probe *probe;
	const uint8_t *tpl;			/* the probe's template blob (GPU path) */
	uint32_t	tpl_len;
	float		min_score;
	uint32_t	k;
	atomic_int *cancel;			/* the owner's flag: skip the probe when set */
	pthread_mutex_t lock;		/* guards hits and n_ge */
	eng_hits	hits;
	uint64_t	n_ge;			/* searchable entries scoring >= min_score */
} eng_slot;

/*
 * A visibility count a request of the batch asked for (RESULT's `count`):
 * one more part of the pass, run by any thread, over the pinned cache.
 */
typedef struct eng_count
{
	uint64_t	xmin;
	uint32_t	state;			/* mcc_count_state */
	uint64_t	certain;
	eng_count_group *groups;	/* malloc'ed */
	uint32_t	n_groups;
	int64_t		usec;			/* its part's time (beside the search) */
} eng_count;

typedef struct eng_batch
{
	eng_job		job;			/* first: the pool hands this pointer back */
	const eng_cache *cache;		/* pinned by the caller for the whole pass */
	uint32_t	chunk;			/* templates per part */
	uint32_t	n_scan_parts;	/* the parts that scan; then one per count */
	uint32_t	n_slots;
	eng_slot   *slots;
	uint32_t	n_counts;
	eng_count  *counts;
	void	   *owner;			/* the caller's */
	int			threads;		/* of the pool (CPU chunking) */
	eng_gpu    *gpu;			/* non-NULL: the pass runs on the GPU */
	eng_gpu_outcome gpu_outcome;	/* how the GPU pass ended */
	mcc_error	gpu_err;		/* why it did not answer */
	bool		gpu_refdata;	/* a mirror's sync: its refinement data too */
	/* the owner's timers (eng_pool_now_usec): the GPU part's time, ... */
	int64_t		gpu_usec;
	int64_t		back_usec;		/* ... when the main thread took the pass back ... */
	int64_t		after_usec;		/* ... and when its search stage ended there */
} eng_batch;

/* Templates per chunk for this cache and thread count. */
uint32_t	eng_scan_chunk(const eng_cache *c, int threads);

/* A batch over cache c with room for n_slots probes (NULL if no memory). */
eng_batch  *eng_batch_new(const eng_cache *c, uint32_t n_slots, int threads);

/* Set slot i; k is capped at the cache's searchable entries. */
void		eng_batch_set(eng_batch *b, uint32_t i, const mcc_probe *probe,
						  uint32_t k, float min_score, atomic_int *cancel);

/*
 * Ask the pass for a visibility count at this snapshot xmin (a part of its
 * own after the scan's parts); returns its index in b->counts, or -1 if
 * there is no memory (the count is then reported MCC_COUNT_OVERFLOW).
 */
int			eng_batch_add_count(eng_batch *b, uint64_t xmin);

/* Give slot i its probe's template blob (needed by the GPU path). */
void		eng_batch_set_template(eng_batch *b, uint32_t i, const uint8_t *tpl,
								   uint32_t len);

/* Run the pass as one job on the GPU (eng_gpu_pass) instead of in chunks. */
void		eng_batch_use_gpu(eng_batch *b, eng_gpu *gpu);

/*
 * After a GPU pass that did not answer: empty every slot and make the batch
 * a CPU pass again (to be submitted anew).
 */
void		eng_batch_to_cpu(eng_batch *b);

/* After the pass: sort every slot's hits best first. */
void		eng_batch_finish(eng_batch *b);

void		eng_batch_free(eng_batch *b);

/*
 * Run a batch to its end on the calling thread alone (tests, and the
 * reference that batching must equal).
 */
void		eng_batch_run_here(eng_batch *b);

#endif							/* ENG_SCAN_H */
