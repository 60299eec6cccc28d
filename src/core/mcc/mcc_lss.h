/*
 * mcc_lss.h: Local Similarity Sort, the one scoring arithmetic of mcc.
 *
 * Every path that scores templates (1:1 on the CPU, the CPU gallery scan, the
 * GPU kernels) uses exactly these integer steps, so that scores are
 * bit-identical everywhere (paper 000, Fig. 3):
 *
 *   sqrt_fx[p]  = round(sqrt(p) * 2^12)                 (LUT_sqrt)
 *   eta         = sqrt_fx[popcount(v)]                 per cylinder (norm)
 *   den         = eta_i + eta_j        (with masks: sqrt_fx[pc(A)] + sqrt_fx[pc(B)])
 *   rcp(den)    = floor(w * 2^32 / den)                 (0 if den = 0)
 *   d           = (sqrt_fx[popcount(v_i xor v_j)] * rcp(den)) >> 32
 *   vote        = bucket d, only if the angles pass the gate
 *                 |int8(q_i - q_j)| <= delta_theta and den > 0 and d < w
 *                 (with masks also popcount(mask_i and mask_j) >= min_me_cells)
 *   n_p         = LUT_p[min(n_A, n_B)]                  (paper 000 eq. 2)
 *   sum         = the n_p smallest votes, each missing vote counting w
 *   score       = (float)(n_p * w - sum) / (float)(n_p * w)
 *
 * A vote with d = w equals a missing one, so it is dropped. Templates with no
 * cylinder score 0. rcp is exact integer division on the host and is
 * tabulated for the GPU; the final division is IEEE single precision,
 * correctly rounded on both.
 *
 * mcc_lss_float() is the plain floating-point LSS of paper 000 Fig. 2 (sort
 * the local similarities, average the top n_p), kept as the test reference.
 */
#ifndef MCC_LSS_H
#define MCC_LSS_H

#include <stddef.h>
#include <stdint.h>

#include "mcc_error.h"
#include "mcc_hd.h"
#include "mcc_profile.h"
#include "mcc_template.h"

#define MCC_SQRT_SHIFT	12

/* Fill the static tables; idempotent, call once before any scoring. */
void		mcc_lss_init(void);

/* LUT_sqrt value for a popcount (0..MCC_MAX_BITS). */
uint32_t	mcc_lss_sqrt_fx(int popcount);

/* LUT_p value for min(n_A, n_B) (0..MCC_MAX_CYL) under profile p. */
int			mcc_lss_np(const mcc_profile *p, int min_cyl);

/* floor(w * 2^32 / den), or 0 for den = 0. */
static inline uint32_t
mcc_lss_rcp(uint32_t den)
{
	return den ? (uint32_t) (((uint64_t) MCC_W << 32) / den) : 0;
}

/* Quantized local distance from the fixed-point numerator and rcp(den). */
static inline uint32_t
mcc_lss_dist(uint32_t sqrt_xor, uint32_t rcp)
{
	return (uint32_t) (((uint64_t) sqrt_xor * rcp) >> 32);
}

/* The angular gate on byte angles (the GPU refinement kernel's too). */
MCC_HD int
mcc_lss_gate(int qa, int qb, int delta_theta)
{
	int			d = (int8_t) (uint8_t) (qa - qb);

	return (d < 0 ? -d : d) <= delta_theta;
}

/*
 * The score from the sum of the n_p lowest votes (missing votes counted as
 * w): the last step of mcc_lss_finish(), of the SIMD scan kernels and of the
 * GPU's Step-2, which must round alike. np > 0.
 */
MCC_HD float
mcc_lss_from_sum(int np, uint32_t sum)
{
	return (float) ((uint32_t) np * MCC_W - sum) / (float) ((uint32_t) np * MCC_W);
}

/*
 * Paper 000 Fig. 3 lines 11-18: the score from w buckets of votes and n_p.
 * Here so that the GPU refinement kernel's LSS (kernels/impl/
 * mcc_refine_body.h) runs the same code.
 */
MCC_HD float
mcc_lss_finish(const uint32_t *buckets, int np)
{
	uint32_t	sum = 0;
	uint32_t	t = (uint32_t) np;

	if (np <= 0)
		return 0.0f;
	for (int i = 0; i < MCC_W && t > 0; i++)
	{
		uint32_t	take = buckets[i] < t ? buckets[i] : t;

		sum += take * (uint32_t) i;
		t -= take;
	}
	sum += t * MCC_W;
	return mcc_lss_from_sum(np, sum);
}

/*
 * A probe prepared for matching: its cylinders copied to aligned storage, its
 * LUT_theta (for every byte angle, the probe cylinders that pass the gate)
 * and per-cylinder tables. Opaque; allocate mcc_probe_size() bytes (about
 * 730 kB; any malloc or palloc alignment works, 64-byte alignment is best).
 */
typedef struct mcc_probe mcc_probe;

size_t		mcc_probe_size(void);
void		mcc_probe_init(mcc_probe *q, const mcc_template_view *t);
const mcc_profile *mcc_probe_profile(const mcc_probe *q);
int			mcc_probe_cylinders(const mcc_probe *q);

/* LSS of a prepared probe against one template of the same profile. */
float		mcc_lss_score(const mcc_probe *q, const mcc_template_view *t);

/*
 * 1:1 LSS of two templates. Fails with MCC_ERR_VALUE if their profiles
 * differ. Symmetric: score(a, b) == score(b, a).
 */
mcc_status	mcc_lss_pair(const mcc_template_view *a, const mcc_template_view *b,
						 float *score, mcc_error *err);

/* Floating-point reference (paper 000 Fig. 2), for tests. */
double		mcc_lss_float(const mcc_template_view *a, const mcc_template_view *b);

#endif							/* MCC_LSS_H */
