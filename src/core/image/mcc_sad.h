/*
 * mcc_sad.h: locate a pattern image in a target image by the Sum of
 * Absolute Differences (paper 002, Eq. 1).
 *
 * For a W x H target T and a w x h pattern P (w <= W, h <= H), the SAD
 * of the shift (x, y), 0 <= x <= W - w, 0 <= y <= H - h, is
 *
 *     SAD(x, y) = sum over 0 <= r < h, 0 <= c < w of |T[y + r][x + c] - P[r][c]|
 *
 * an exact integer (at most 255 * w * h < 2^34). The map is the
 * (H - h + 1) x (W - w + 1) matrix of every SAD, row y first; the best k
 * hits are the k smallest SADs, ties broken by smaller y, then smaller x.
 *
 * Kernels (all exact, so every kernel and thread count gives the same map
 * and hits; test_sad checks it):
 *   reference   paper 002's Algorithms 1-2 as written, one position at a
 *               time, 64-bit sums;
 *   sse2, avx2, avx512
 *               PSADBW on 16, 32 or 64 bytes of a row at a time: a block of
 *               bx x by positions keeps one vector accumulator each, the
 *               pattern row vector is loaded once per block step and the
 *               target rows come from a zero-padded copy. The pattern is
 *               padded with zeros to whole vectors; what the padding adds
 *               (the target pixels under it) is subtracted exactly from
 *               per-row strip sums.
 * The fastest usable one is chosen at run time (no -march=native).
 *
 * Work is split into bands of rows of the map. A plan holds the padded
 * copies; mcc_sad_plan_band() computes one band and may run in any number
 * of threads at once (the matcher engine can feed bands to its own pool).
 * mcc_sad_start() runs a plan on its own pthreads (signals blocked in
 * them) with a cancel flag checked between bands, so a PostgreSQL backend
 * can wait, poll for interrupts and stop the work before raising an error.
 */
#ifndef MCC_SAD_H
#define MCC_SAD_H

#include <stdint.h>

#include "mcc_error.h"
#include "mcc_image.h"

#define MCC_SAD_MAX_K		100000	/* hits per call; the map gives all */
#define MCC_SAD_MAX_THREADS	256

typedef enum mcc_sad_kernel
{
	MCC_SAD_AUTO = 0,			/* the fastest usable */
	MCC_SAD_REFERENCE,
	MCC_SAD_SSE2,
	MCC_SAD_AVX2,
	MCC_SAD_AVX512,
	MCC_SAD_KERNELS				/* count */
} mcc_sad_kernel;

/* One shift and its SAD. */
typedef struct mcc_sad_hit
{
	uint64_t	sad;
	uint32_t	x;
	uint32_t	y;
} mcc_sad_hit;

/* Kernel name ("reference", "sse2", "avx2", "avx512"); NULL if unknown. */
const char *mcc_sad_kernel_name(int kernel);

/* Kernel by name, or -1. */
int			mcc_sad_kernel_by_name(const char *name);

/* Whether this CPU can run the kernel. */
int			mcc_sad_kernel_usable(int kernel);

/* The kernel MCC_SAD_AUTO stands for on this CPU. */
int			mcc_sad_kernel_auto(void);

/*
 * Check that the pattern fits in the target (MCC_ERR_VALUE otherwise) and
 * give the map's size: nx = W - w + 1 columns, ny = H - h + 1 rows.
 */
mcc_status	mcc_sad_positions(const mcc_image *target, const mcc_image *pattern,
							  uint32_t *nx, uint32_t *ny, mcc_error *err);

/* SAD of one shift, straight from Eq. 1 (paper 002's Algorithm 1). */
uint64_t	mcc_sad_at(const mcc_image *target, const mcc_image *pattern, uint32_t x,
					   uint32_t y);

/* Order of hits: smaller SAD, then smaller y, then smaller x. */
int			mcc_sad_hit_cmp(const mcc_sad_hit *a, const mcc_sad_hit *b);

/* ------------------------------------------------------------------ */
/* plans: one target, one pattern, one kernel; bands of map rows       */

typedef struct mcc_sad_plan mcc_sad_plan;

/*
 * Prepare a search (padded copies of the images, strip sums). The images
 * must outlive the plan (the reference kernel reads them directly).
 */
mcc_status	mcc_sad_plan_create(const mcc_image *target, const mcc_image *pattern, int kernel,
								mcc_sad_plan **plan, mcc_error *err);

void		mcc_sad_plan_free(mcc_sad_plan *plan);

/* Number of bands, the kernel in use, and the map's size. */
uint32_t	mcc_sad_plan_bands(const mcc_sad_plan *plan);
int			mcc_sad_plan_kernel(const mcc_sad_plan *plan);
void		mcc_sad_plan_size(const mcc_sad_plan *plan, uint32_t *nx, uint32_t *ny);

/* Bytes of scratch memory a thread needs for mcc_sad_plan_band(). */
size_t		mcc_sad_plan_scratch(const mcc_sad_plan *plan);

/* The k best hits seen so far (a bounded max-heap on mcc_sad_hit_cmp). */
typedef struct mcc_sad_topk
{
	mcc_sad_hit *hits;			/* room for k */
	uint32_t	k;
	uint32_t	n;
} mcc_sad_topk;

/* Offer a hit to a top-k set. */
void		mcc_sad_topk_offer(mcc_sad_topk *t, const mcc_sad_hit *h);

/* Sort a top-k set's hits best first (it is no longer a heap after). */
void		mcc_sad_topk_sort(mcc_sad_topk *t);

/*
 * Compute band b: its rows of the map go to map (nx x ny, may be NULL) and
 * its hits are offered to topk (may be NULL). scratch has
 * mcc_sad_plan_scratch() bytes, 64-byte aligned, private to the caller.
 */
void		mcc_sad_plan_band(const mcc_sad_plan *plan, uint32_t band, void *scratch,
							  uint64_t *map, mcc_sad_topk *topk);

/* ------------------------------------------------------------------ */
/* jobs: a plan run by worker threads                                  */

typedef struct mcc_sad_request
{
	const mcc_image *target;
	const mcc_image *pattern;
	uint64_t   *map;			/* nx * ny SADs out, or NULL */
	uint32_t	k;				/* best hits wanted, 0..MCC_SAD_MAX_K */
	int			threads;		/* worker threads, 1..MCC_SAD_MAX_THREADS */
	int			kernel;			/* mcc_sad_kernel */
} mcc_sad_request;

typedef struct mcc_sad_job mcc_sad_job;

/*
 * Start req on req->threads new threads (the caller's thread only waits).
 * Everything is allocated here; the threads never allocate. The images and
 * the map must stay valid until mcc_sad_finish() or mcc_sad_abort().
 */
mcc_status	mcc_sad_start(const mcc_sad_request *req, mcc_sad_job **job, mcc_error *err);

/* Wait up to timeout_ms (< 0: forever) for the job; 1 if it is done. */
int			mcc_sad_wait(mcc_sad_job *job, int timeout_ms);

/* Fraction of the bands done, 0..1 (for progress reports). */
double		mcc_sad_progress(const mcc_sad_job *job);

/*
 * Wait for the job, copy its best min(k, nx * ny) hits best first into
 * hits (room for req->k) and their number into *n_hits, and free it.
 */
mcc_status	mcc_sad_finish(mcc_sad_job *job, mcc_sad_hit *hits, uint32_t *n_hits,
						   mcc_error *err);

/*
 * Stop a job: raise its cancel flag (threads stop after their current
 * band), join the threads and free it. The map is left part-filled.
 */
void		mcc_sad_abort(mcc_sad_job *job);

/*
 * Run req to the end: in the caller's thread when req->threads is 1, else
 * as a job. hits and n_hits as in mcc_sad_finish().
 */
mcc_status	mcc_sad_run(const mcc_sad_request *req, mcc_sad_hit *hits, uint32_t *n_hits,
						mcc_error *err);

#endif							/* MCC_SAD_H */
