/*
 * mcc_dp2d_verify.h: fingerprint verification by elastic matching (paper
 * 003, Sec. 8, "simplified verification algorithm"): enhance both raw
 * prints with Gabor filters, binarize them with a global threshold, warp
 * the probe onto the reference with mcc_dp2d.h, count the pixels where
 * they differ; the probe is verified when the count is at most a
 * threshold.
 *
 * Enhancement (mcc_dp2d_enhance(), docs/elastic-matching.md), at the raw
 * image's resolution; steps 1-4 are mcc_enhance.h's, shared with minutiae
 * extraction:
 *   1. segmentation: the standard deviation of every block x block tile,
 *      smoothed over 3 x 3 tiles; foreground where it is above
 *      max(MCC_ENH_MIN_STD, 0.25 x the largest), then one 3 x 3 majority
 *      pass over the tiles;
 *   2. local normalization: (I - mean) / standard deviation over a window
 *      of block + 1 pixels;
 *   3. orientation: Sobel gradients, the doubled-angle average of
 *      (gx^2 - gy^2, 2 gx gy) over a window of block + 1 pixels, twice;
 *   4. even-symmetric Gabor filtering (Hong, Wan and Jain 1998; the
 *      family paper 003 cites as [40]) across the ridges: one of 16
 *      orientations, a fixed ridge period and a circular Gaussian envelope,
 *      kernels of zero mean, 3 sigma in radius;
 *   5. the square of `crop` pixels (or the shorter side) centred on the
 *      foreground's centroid is resampled to side x side by exact area
 *      averaging, of the filter response and of the foreground mask;
 *   6. binarization with the global threshold 0 (the response has zero
 *      mean): ridge (response < 0) = 0, valley = 255; background (under
 *      half foreground) = 255.
 * The paper's "overall" algorithm (thinning and ridge reconstruction,
 * Sec. 8.1) is not implemented.
 *
 * Floating point is used only here (doubles, no contraction); the DP on
 * the binary images is exact integer arithmetic on every CPU and GPU.
 */
#ifndef MCC_DP2D_VERIFY_H
#define MCC_DP2D_VERIFY_H

#include <stdint.h>

#include "mcc_dp2d.h"
#include "mcc_error.h"
#include "mcc_image.h"

#define MCC_DP2D_PREP_MAX_SIDE	2048	/* raw prints: each side at most (~50 B/pixel) */
#define MCC_DP2D_PREP_MIN_SIDE	16		/* raw prints: each side at least */

/* Parameters of the enhancement. */
typedef struct mcc_dp2d_prep
{
	uint32_t	side;			/* working image side, 8..MCC_DP2D_MAX_SIDE (128) */
	uint32_t	crop;			/* raw pixels cut around the print, >= 16 (256) */
	uint32_t	block;			/* segmentation tile and window, 4..64 (16) */
	double		period;			/* ridge period in raw pixels, 3..30 (9) */
	double		sigma;			/* Gabor envelope in raw pixels, 1..16 (4) */
} mcc_dp2d_prep;

/* The default parameters (above, in brackets). */
void		mcc_dp2d_prep_default(mcc_dp2d_prep *p);

/* Check parameters: MCC_ERR_VALUE naming the one out of range. */
mcc_status	mcc_dp2d_prep_check(const mcc_dp2d_prep *p, mcc_error *err);

/*
 * Enhance and binarize a raw print into out (p->side x p->side bytes,
 * stride p->side): 0 ridge, 255 valley or background. MCC_ERR_VALUE for a
 * raw side below MCC_DP2D_PREP_MIN_SIDE, MCC_ERR_LIMIT above
 * MCC_DP2D_PREP_MAX_SIDE, MCC_ERR_MEMORY.
 */
mcc_status	mcc_dp2d_enhance(const mcc_image *raw, const mcc_dp2d_prep *p, uint8_t *out,
							 mcc_error *err);

/* The outcome of one verification. */
typedef struct mcc_dp2d_verdict
{
	uint64_t	differences;	/* pixels where reference and warped probe differ */
	double		distance;		/* the DP distance of the binary images (Eq. 8) */
} mcc_dp2d_verdict;

/*
 * The common first steps of both algorithms: enhance the two raw prints
 * with p into work (2 side^2 bytes: the reference, then the probe) and warp
 * the probe onto the reference (kernel, threads as in mcc_dp2d_request).
 * out gets the DP's outputs, the warped probe too where out->warped is set
 * (the caller clears out first).
 */
mcc_status	mcc_dp2d_enhance_warp(const mcc_image *reference, const mcc_image *probe,
								  const mcc_dp2d_prep *p, int kernel, int threads,
								  uint8_t *work, mcc_dp2d_out *out, mcc_error *err);

/*
 * Sec. 8 on two raw prints: enhance both, warp the probe onto the
 * reference (kernel, threads as in mcc_dp2d_request), count. Verified when
 * v->differences <= threshold (the paper's examples: 20,500 accepted and
 * 32,200 refused under 27,000 on its own images).
 */
mcc_status	mcc_dp2d_verify(const mcc_image *reference, const mcc_image *probe,
							const mcc_dp2d_prep *p, int kernel, int threads,
							mcc_dp2d_verdict *v, mcc_error *err);

#endif							/* MCC_DP2D_VERIFY_H */
