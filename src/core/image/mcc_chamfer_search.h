/*
 * mcc_chamfer_search.h: the global pose search that gives 2D chamfer
 * alignment its start when no initial transform is known (docs/alignment.md,
 * "Global search").
 *
 * Chamfer alignment (paper 004) is local: Levenberg-Marquardt converges to
 * the nearest minimum, about 12 degrees of rotation around the answer for
 * a road-like set. The search finds that neighbourhood over every rotation,
 * a range of scales and every translation that puts the observed set over
 * the reference's bounding box, coarse to fine:
 *
 *  - The reference becomes a pyramid of band-pass density images: its
 *    points splatted on a grid and filtered by a difference of Gaussians
 *    (sigma b and 2b, zero mean), b = 0.4, 0.2, 0.1, 0.05 of the
 *    reference's RMS radius, one grid per level with cells of b / 2.
 *    Coarse levels see where the reference's mass lies, fine levels its
 *    curves; the zero mean keeps a pose from scoring by piling points on
 *    the densest part.
 *  - A pose (theta, sigma = ln s, t) maps a fixed sample of at most 128
 *    observed points (drawn once by a seeded generator); its raw score is
 *    the sum of the level's values under them (mcc_chamfer_score.h:
 *    integers, the same on every device). The score compared is the raw
 *    score divided by the sample's own band-pass energy at scale s, the
 *    sum over pairs of the same difference of Gaussians at s (p_i - p_j):
 *    a normalized cross-correlation, which a shrunken pose cannot inflate.
 *  - Level 0 scores a full grid: rotations and scales a step apart such
 *    that the farthest sample points (90th percentile of the radii) move
 *    by b, translations b apart over the reference's bounding box. The
 *    best poses, at least a step apart, are kept; each following level
 *    scores the 3^4 (3^3 without scale) neighbours of every kept pose at
 *    half the previous steps on its finer image, and keeps the best again.
 *    Poses live on an integer lattice of the finest steps, so that
 *    duplicates are found exactly.
 *  - A part: a coarse level compares the mass distributions of the two
 *    sets, which places the observed set only when it is the whole
 *    reference; a part of it is a blob at that blur. A whole set has an RMS
 *    radius of at least 1 / max_scale reference radii, so a sample below
 *    that is a part (partial overlap), and a second pass runs from the
 *    coarsest level whose blur is at most 0.2 of the sample's radius (its
 *    full grid is the cost: about 15 times the poses), keeping
 *    MCC_CHAMFER_SEARCH_KEEP_PART poses per level; its starts follow the
 *    first pass's.
 *  - The best poses of the last level are the starts: the caller fits each
 *    by LM and keeps the one with the lowest truncated f among the fits
 *    whose scale stayed within the range (a fit can shrink the set onto
 *    one road, where f is lower than at the true pose).
 *
 * The batch of poses of a level is the unit of parallel work: the CPU
 * scorer shares it among threads; a GPU scorer (kernels/impl/mcc_chamfer.cu)
 * scores a batch in one launch. Scores are integers, so the search, and
 * therefore the starts, are the same bits on every device and thread count.
 */
#ifndef MCC_CHAMFER_SEARCH_H
#define MCC_CHAMFER_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "mcc_chamfer_score.h"
#include "mcc_error.h"

#define MCC_CHAMFER_SEARCH_LEVELS		4
#define MCC_CHAMFER_SEARCH_B0			0.4		/* blur of level 0, reference RMS radii */
#define MCC_CHAMFER_SEARCH_SAMPLE		128		/* observed points scored per pose */
#define MCC_CHAMFER_SEARCH_KEEP			24		/* poses kept per level */
#define MCC_CHAMFER_SEARCH_KEEP_PART	128		/* the same in the finer pass of a part */
#define MCC_CHAMFER_SEARCH_STARTS		12		/* poses returned as LM starts, at most */
#define MCC_CHAMFER_SEARCH_STARTS_WHOLE	4		/* of which from the pass from level 0 */
#define MCC_CHAMFER_SEARCH_MAX_POSES	(1 << 18)	/* level-0 grid bound */
#define MCC_CHAMFER_SEARCH_MAX_THREADS	256
#define MCC_CHAMFER_DEFAULT_MIN_SCALE	0.8
#define MCC_CHAMFER_DEFAULT_MAX_SCALE	1.25

/* One level of the reference's pyramid: a band-pass density image. */
typedef struct mcc_chamfer_slevel
{
	mcc_chamfer_sgeom geom;
	double		blur;			/* b, normalized units */
	int32_t    *v;				/* nx * ny values, row-major (malloc'd) */
} mcc_chamfer_slevel;

/* The reference's pyramid (normalized frame of mcc_chamfer_ref). */
typedef struct mcc_chamfer_pyramid
{
	int			levels;
	mcc_chamfer_slevel level[MCC_CHAMFER_SEARCH_LEVELS];
	double		box_lo[2];		/* the reference's bounding box, clamped */
	double		box_hi[2];
	uint64_t	id;				/* distinct per build: lets a GPU scorer cache uploads */
} mcc_chamfer_pyramid;

/*
 * A scorer: out[i] = sum over the n sample points pts (x0 y0 x1 ...) of
 * mcc_chamfer_score_point(level, poses[i]), for i < n_poses. Returns MCC_OK
 * or an error (a cancel is MCC_ERR_INTERNAL "alignment canceled").
 */
typedef mcc_status (*mcc_chamfer_score_fn) (void *ctx, const mcc_chamfer_pyramid *pyr,
											int level, const double *pts, int n,
											const mcc_chamfer_spose *poses, int n_poses,
											int64_t *out, mcc_error *err);

/* A search start, in the normalized frames: x' = e^sigma R(theta) x + t. */
typedef struct mcc_chamfer_start
{
	double		theta;
	double		sigma;
	double		t[2];
	double		score;			/* the last level's normalized score */
} mcc_chamfer_start;

/* What a search is given. */
typedef struct mcc_chamfer_search_opts
{
	double		min_scale;		/* 0 < min_scale <= max_scale; equal: no scale search */
	double		max_scale;
	int			threads;		/* CPU scorer threads (1: the calling thread) */
	volatile int *cancel;
	int			(*poll) (void *arg);	/* called between batches on the calling thread */
	void	   *poll_arg;
	mcc_chamfer_score_fn score; /* NULL: the CPU scorer */
	void	   *score_ctx;
} mcc_chamfer_search_opts;

/* Statistics of a search. */
typedef struct mcc_chamfer_search_stats
{
	long		poses;			/* poses scored, all levels */
	int			level0;			/* of which on the level-0 grid */
} mcc_chamfer_search_stats;

/*
 * Build the pyramid of n normalized 2D reference points (mcc_chamfer_ref's
 * pts). Free with mcc_chamfer_pyramid_free.
 */
mcc_status	mcc_chamfer_pyramid_build(const double *pts, size_t n, mcc_chamfer_pyramid *pyr,
									  mcc_error *err);

void		mcc_chamfer_pyramid_free(mcc_chamfer_pyramid *pyr);

/*
 * The sample the search scores: min(n, MCC_CHAMFER_SEARCH_SAMPLE) distinct
 * points of the n normalized observed points, chosen by a fixed seed,
 * copied in index order into out (room for 2 * MCC_CHAMFER_SEARCH_SAMPLE);
 * returns their count.
 */
int			mcc_chamfer_search_sample(const double *pts, size_t n, double *out);

/*
 * Search: fills starts[0 .. *n_starts) (at most MCC_CHAMFER_SEARCH_STARTS),
 * best first. sample: the points of mcc_chamfer_search_sample.
 */
mcc_status	mcc_chamfer_search(const mcc_chamfer_pyramid *pyr, const double *sample, int n_sample,
							   const mcc_chamfer_search_opts *opts, mcc_chamfer_start *starts,
							   int *n_starts, mcc_chamfer_search_stats *stats, mcc_error *err);

/* The CPU scorer's context: threads (1: the calling thread alone) and a cancel flag. */
typedef struct mcc_chamfer_score_cpu_ctx
{
	int			threads;
	volatile int *cancel;
} mcc_chamfer_score_cpu_ctx;

/* The CPU scorer (ctx: a mcc_chamfer_score_cpu_ctx, or NULL for one thread). */
mcc_status	mcc_chamfer_score_cpu(void *ctx, const mcc_chamfer_pyramid *pyr, int level,
								  const double *pts, int n, const mcc_chamfer_spose *poses,
								  int n_poses, int64_t *out, mcc_error *err);

/* The matrix of a pose (theta, sigma, t). */
void		mcc_chamfer_spose_set(mcc_chamfer_spose *P, double theta, double sigma,
								  double tx, double ty);

#endif							/* MCC_CHAMFER_SEARCH_H */
