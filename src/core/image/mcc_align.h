/*
 * mcc_align.h: aligning a probe's minutiae onto a candidate's (for
 * consolidation and for showing a match) with the chamfer alignment of
 * mcc_chamfer.h.
 *
 * The candidate's minutia positions are the reference set, the probe's the
 * observed set; the fit maps probe pixels to candidate pixels, truncated at
 * max_distance so that minutiae without a mate (partial overlap, missed and
 * spurious minutiae) do not pull it. Chamfer alignment converges only from
 * a nearby start, and two impressions of a finger may differ by any
 * rotation and a large shift, so without an initial transform the fit is
 * run from several starts that cover every pose:
 *   - with directions (the default): the strongest peaks of a generalized
 *     Hough transform over (rotation, translation): every pair (probe i,
 *     candidate j) votes for the rotation that turns theta_i into theta_j
 *     and the translation that then takes s p_i onto q_j (bins of 360/32
 *     degrees, mindtct's own angle step, and 16 pixels; a peak is the sum
 *     over its 3 x 3 x 3 neighbourhood, starts are the mean pose of the
 *     votes there), at s = 1 for a euclidean fit, else at
 *     MCC_ALIGN_HOUGH_SCALES scales spread geometrically over
 *     [min_scale, max_scale]; the fit that mates the most minutiae (one
 *     probe minutia to one candidate minutia, within max_distance and
 *     MCC_ALIGN_MATE_ANGLE of direction) wins, ties by the lower f;
 *   - without directions: the global pose search of chamfer alignment
 *     (mcc_chamfer_search.h) on the positions, the lowest f winning.
 * Each Hough start is a euclidean (or similarity) transform; the hierarchy
 * then runs up to the requested type. Directions serve only the starts
 * and the choice; the fit uses positions. With an initial transform
 * (init_type >= 0) there is one fit, from it, trusted as close.
 *
 * Frames (mcc_minutiae.h): pixels, origin top-left, y down. Parameters use
 * mcc_chamfer.h's layouts in that frame, so a euclidean theta > 0 turns
 * clockwise as seen on screen (x' = x cos - y sin, y' = x sin + y cos).
 * A mapped minutia's direction is its direction vector pushed through the
 * transform's Jacobian at its position.
 */
#ifndef MCC_ALIGN_H
#define MCC_ALIGN_H

#include "mcc_chamfer.h"
#include "mcc_error.h"
#include "mcc_minutiae.h"

#define MCC_ALIGN_DEFAULT_MAX_DISTANCE	15.0	/* pixels: about 1.5 ridge periods at 500 dpi */
#define MCC_ALIGN_DEFAULT_RESOLUTION	1.0		/* pixels */
#define MCC_ALIGN_HOUGH_ANGLES			32
#define MCC_ALIGN_HOUGH_CELL			16.0	/* pixels */
#define MCC_ALIGN_DEFAULT_STARTS		5
#define MCC_ALIGN_MAX_STARTS			32
#define MCC_ALIGN_HOUGH_SCALES			5		/* scales of the Hough starts (not euclidean) */
#define MCC_ALIGN_MATE_ANGLE			0.5235987755982988	/* pi / 6: directions of mates */

/* Options; mcc_align_opts_init() sets the defaults. */
typedef struct mcc_align_opts
{
	int			transform;		/* mcc_xform, default euclidean */
	int			use_directions;	/* 1 (default): Hough starts; 0: the position search */
	double		max_distance;	/* truncation, pixels (default 15) */
	double		resolution;		/* distance transform spacing, pixels (default 1) */
	int			starts;			/* Hough peaks tried per scale (default 5, at most 32) */
	double		min_scale;		/* scales the starts cover (similarity and more general */
	double		max_scale;		/* fits): default 0.8, 1.25 */
	int			init_type;		/* -1 (default): the starts above; else the mcc_xform of */
	double		init[9];		/* init, the one start (3 x 3, pixels, row-major) */
	int			threads;		/* passed to the CPU evaluator (default 1) */
	size_t		max_cells;		/* distance transform limit; 0 = default */
	volatile int *cancel;
	int			(*poll) (void *arg);
	void	   *poll_arg;

	/*
	 * The chamfer fit of one start (NULL, the default: mcc_chamfer_align_ref
	 * on the CPU). The matcher engine passes one that fits on a GPU
	 * (kernels/mcc_chamfer_gpu.h); it must answer as mcc_chamfer_align_ref.
	 */
	mcc_status	(*fit) (void *arg, const mcc_chamfer_ref *ref, const double *obs, size_t n,
						const mcc_chamfer_opts *opts, mcc_chamfer_result *res,
						mcc_error *err);
	void	   *fit_arg;
} mcc_align_opts;

/* The chosen alignment. */
typedef struct mcc_align_result
{
	mcc_chamfer_result fit;		/* parameters, matrix, residual (pixels) etc. */
	int			n_probe;		/* probe minutiae, the rows of mapped */
	double		mapped[MCC_MAX_MINUTIAE][3];	/* x, y, theta in the candidate's frame */
	int			paired;			/* mapped probe minutiae within max_distance of a
								 * candidate minutia */
	int			start;			/* which start won (0 = the strongest peak) */
	int			starts_tried;
	int			mated;			/* with directions: mates of the chosen fit (see above) */
	int			iterations;		/* LM iterations over all starts */
} mcc_align_result;

/* Set the defaults. */
void		mcc_align_opts_init(mcc_align_opts *opts);

/*
 * Prepare a candidate for many alignments: its positions' distance
 * transform (opts: resolution, max_cells, cancel). Free the result with
 * mcc_chamfer_ref_free.
 */
mcc_status	mcc_align_prepare(const mcc_minutiae *cand, const mcc_align_opts *opts,
							  mcc_chamfer_ref *ref, mcc_error *err);

/* Align probe onto a candidate prepared as ref (cand must be the same minutiae). */
mcc_status	mcc_align_minutiae_ref(const mcc_minutiae *probe, const mcc_minutiae *cand,
								   const mcc_chamfer_ref *ref, const mcc_align_opts *opts,
								   mcc_align_result *res, mcc_error *err);

/* Align probe onto cand (prepare + align). opts NULL: defaults. */
mcc_status	mcc_align_minutiae(const mcc_minutiae *probe, const mcc_minutiae *cand,
							   const mcc_align_opts *opts, mcc_align_result *res, mcc_error *err);

#endif							/* MCC_ALIGN_H */
