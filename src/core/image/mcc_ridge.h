/*
 * mcc_ridge.h: the restoration of ridge continuity of paper 003's
 * "overall" fingerprint verification (Sec. 8.1): thinning with its
 * clean-up phases (8.1.1) and the reconstruction of interrupted ridges by
 * predominant slopes (8.1.2), on a binarized print (mcc_dp2d_enhance's
 * output: 0 ridge, 255 valley or background).
 *
 * The paper names the phases without their details; ours, in order:
 *   1. filling (8.1.1, "white points in the ridges"): valley components,
 *      4-connected, that touch no border and hold at most fill_max pixels
 *      become ridge;
 *   2. thinning to a one-pixel-wide skeleton (mcc_thin.h, Rosenfeld's
 *      parallel thinning: the paper's "pre-processing");
 *   3. isolated points removal and removal of not-connected pixels:
 *      8-connected skeleton components of fewer than min_component pixels
 *      go;
 *   4. end line correction: spurs (a line end at most spur pixels from a
 *      junction) are cut, down to the junction;
 *   5. ridge reconstruction (8.1.2, "discontinuities connection"): the
 *      skeleton is cut into runs (chains of pixels between line ends and
 *      junctions); a run's slope is the direction of its chord, quantized
 *      into the paper's 13 bands of 15 degrees; every 4 x 4 sub-block gets
 *      R_l(k), the runs of length l and band k that pass through it, and
 *      from them L(k) = sum l^2 R_l(k) / sum R_l(k) (long runs) and
 *      N(k) = sum R_l(k)^2 / sum R_l(k) (many short runs) (Eqs. 9-10),
 *      each normalized to [0, 1] over all sub-blocks; P(k) = max(0, L(k) -
 *      alpha N(k)), normalized within the sub-block, P(14) = min_k N(k)
 *      (Eqs. 11-12), and the label argmax P (Eq. 13; 14: no predominant
 *      slope, 0: no run). Then every line end in a sub-block labelled 1..13
 *      is joined to the nearest line end of another run within gap pixels
 *      whose sub-block is labelled 1..13 and not of the opposite slope
 *      (labels more than 45 degrees apart), when the gap runs along both
 *      ends (within 45 degrees of each end's outward direction); each end
 *      is joined at most once, nearest pairs first.
 * Everything is integer decisions on the image: the output is a function
 * of the input bytes alone.
 */
#ifndef MCC_RIDGE_H
#define MCC_RIDGE_H

#include <stdint.h>

#include "mcc_error.h"

/* Parameters, in pixels of the image processed. */
typedef struct mcc_ridge_opts
{
	int			fill_max;		/* largest hole filled (pixels) */
	int			min_component;	/* smaller skeleton components are removed */
	int			spur;			/* longest spur cut */
	int			gap;			/* longest gap joined (pixels, Chebyshev) */
	double		alpha;			/* Eq. 11's weight of N(k) */
} mcc_ridge_opts;

/*
 * Defaults for a working image with ridges period pixels apart: joins of
 * up to 2/3 of a period; fill_max 0, min_component 1 and spur 0 turn
 * phases 1, 3 and 4 off (measured worse on FVC2002).
 */
void		mcc_ridge_opts_default(mcc_ridge_opts *o, double period);

/* What the restoration did. */
typedef struct mcc_ridge_stats
{
	int			filled;			/* hole pixels filled */
	int			removed;		/* skeleton pixels of small components removed */
	int			cut;			/* spur pixels cut */
	int			runs;			/* runs of the skeleton */
	int			joined;			/* gaps joined */
} mcc_ridge_stats;

/*
 * Restore the w x h binarized print bin (stride w; 0 ridge, anything else
 * valley) into out (w x h, stride w): 1 on the restored skeleton, 0
 * elsewhere. stats may be NULL. MCC_ERR_VALUE for an empty image,
 * MCC_ERR_MEMORY.
 */
mcc_status	mcc_ridge_restore(const uint8_t *bin, uint32_t w, uint32_t h, const mcc_ridge_opts *o,
							  uint8_t *out, mcc_ridge_stats *stats, mcc_error *err);

#endif							/* MCC_RIDGE_H */
