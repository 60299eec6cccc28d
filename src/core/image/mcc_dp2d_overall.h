/*
 * mcc_dp2d_overall.h: paper 003's "overall" fingerprint verification
 * (Sec. 8.1-8.2): the simplified algorithm of mcc_dp2d_verify.h (Gabor
 * enhancement, binarization, the probe warped onto the reference by 2D-DP)
 * plus thinning and the restoration of ridge continuity of the reference
 * and of the warped probe (mcc_ridge.h), then the same rule: the probe is
 * verified when the two restored images differ in at most a threshold of
 * pixels.
 *
 * The warp is the simplified algorithm's, on the same binary images, so
 * both algorithms share it (and the GPU's 2D-DP serves both: its warped
 * images are the CPU's bits); only the count differs. The reference's
 * restoration does not depend on the probe, so a 1:N caller restores it
 * once.
 */
#ifndef MCC_DP2D_OVERALL_H
#define MCC_DP2D_OVERALL_H

#include <stddef.h>
#include <stdint.h>

#include "mcc_dp2d_verify.h"
#include "mcc_ridge.h"

#define MCC_DP2D_OVERALL_SIDE	160		/* working side (docs/elastic-matching.md says why) */

/* The overall algorithm's enhancement: the defaults with side MCC_DP2D_OVERALL_SIDE. */
void		mcc_dp2d_overall_prep(mcc_dp2d_prep *p);

/* The ridge options for a working image made with p (its ridge period in working pixels). */
void		mcc_dp2d_overall_opts(const mcc_dp2d_prep *p, mcc_ridge_opts *o);

/*
 * Thin and restore one binarized working image (p->side x p->side, 0
 * ridge) into skel (1 on the restored skeleton, 0 elsewhere).
 */
mcc_status	mcc_dp2d_overall_restore(const uint8_t *bin, const mcc_dp2d_prep *p, uint8_t *skel,
									 mcc_error *err);

/* Pixels where two restored images (0/1) of n pixels differ. */
uint64_t	mcc_dp2d_overall_differences(const uint8_t *a, const uint8_t *b, size_t n);

/*
 * The overall algorithm on two raw prints: enhance both, warp the probe
 * onto the reference (kernel, threads as in mcc_dp2d_request), restore
 * the reference and the warped probe, count. v->differences is the
 * overall count, v->distance the DP distance of the binary images (as in
 * mcc_dp2d_verify); verified when v->differences <= threshold.
 */
mcc_status	mcc_dp2d_verify_overall(const mcc_image *reference, const mcc_image *probe,
									const mcc_dp2d_prep *p, int kernel, int threads,
									mcc_dp2d_verdict *v, mcc_error *err);

#endif							/* MCC_DP2D_OVERALL_H */
