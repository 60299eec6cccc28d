/*
 * mcc_probe_int.h: the inside of mcc_probe and the scoring helpers shared by
 * mcc_lss.c and the gallery scan kernels (mcc_soa*.c). Private to src/core:
 * callers see mcc_probe as opaque (mcc_lss.h).
 *
 * What a prepared probe holds, and why:
 *   - its cylinders in angle order (ties by stored order), copied to aligned
 *     storage, AoS for the generic kernels (bits) and, for mask-less
 *     profiles, also word-major and doubled (soa[w][l] = word w of cylinder
 *     l mod n, for l < 2n) so a SIMD kernel loads 8 consecutive probe
 *     cylinders with one instruction;
 *   - LUT_theta: because the cylinders are in angle order, the probe
 *     cylinders that pass the angular gate for a gallery angle form one
 *     cyclic run, i.e. one contiguous run [start, start + count) of the
 *     doubled order;
 *   - rcp[pc * rcp_stride + l] = mcc_lss_rcp(eta of cylinder l mod n +
 *     LUT_sqrt[pc]) for every gallery popcount pc, so the inner loop has no
 *     division (mask-less profiles only: with masks the norms depend on the
 *     pair);
 *   - LUT_p for this probe's cylinder count: np[min(n_gallery, n)].
 */
#ifndef MCC_PROBE_INT_H
#define MCC_PROBE_INT_H

#include <stdint.h>

#include "mcc_lss.h"
#include "mcc_popcount.h"

#define MCC_PROBE_RCP_ROWS	256		/* gallery popcounts 0..255 (nbits <= 255) */
#define MCC_PROBE_DBL		(2 * MCC_MAX_CYL + 16)	/* doubled order plus SIMD over-read */
#define MCC_HIST_LEN		(MCC_W + 16)	/* buckets 0..w-1, w = dropped vote, padding */

struct mcc_probe
{
	const mcc_profile *profile;
	int			n;				/* cylinders */
	int			vwords;			/* value words per cylinder */
	int			cwords;			/* stored words per cylinder (with masks) */
	int			zero_pc;		/* some cylinder has popcount 0 */
	int			rcp_stride;		/* row length of rcp, >= 2n + 8, 0 if masks */
	uint16_t	lt_start[MCC_Z];
	uint16_t	lt_count[MCC_Z];
	uint8_t		np[MCC_MAX_CYL + 1];
	uint16_t	pc[MCC_PROBE_DBL];	/* popcount of cylinder l mod n */
	uint32_t	eta[MCC_PROBE_DBL];	/* LUT_sqrt[pc] */
	uint8_t		angle[MCC_MAX_CYL];
	/*
	 * No alignment attributes: callers may hand in 8-byte aligned memory
	 * (palloc), and kernels load with unaligned loads (64-byte aligned
	 * memory is still the fastest).
	 */
	uint64_t	bits[MCC_PROBE_DBL][2 * MCC_MAX_WORDS];
	uint64_t	soa[4][MCC_PROBE_DBL];
	uint32_t	rcp[MCC_PROBE_RCP_ROWS * MCC_PROBE_DBL];
};

/* LUT_sqrt, shared so that kernels index it directly. */
extern uint32_t mcc_lss_sqrt_tab[MCC_MAX_BITS + 1];

/*
 * Votes of one gallery cylinder (words g, popcount pc_g, byte angle a_g)
 * against every probe cylinder that passes the gate, into hist; portable
 * code, every profile. POPCOUNT is the popcount to use.
 */
#define MCC_VOTES_GENERIC(q, g, pc_g, a_g, hist, POPCOUNT) \
	do { \
		const mcc_probe *q_ = (q); \
		int			s_ = q_->lt_start[(a_g)]; \
		int			c_ = q_->lt_count[(a_g)]; \
		const mcc_profile *p_ = q_->profile; \
		if (!p_->masks) \
		{ \
			const uint32_t *rr_ = q_->rcp + (size_t) (pc_g) * q_->rcp_stride + s_; \
			int			drop0_ = (pc_g) == 0 && q_->zero_pc; \
			for (int l_ = 0; l_ < c_; l_++) \
			{ \
				const uint64_t *v_ = q_->bits[s_ + l_]; \
				int			x_ = 0; \
				uint32_t	d_; \
				uint32_t	r_; \
				for (int w_ = 0; w_ < q_->vwords; w_++) \
					x_ += POPCOUNT(v_[w_] ^ (g)[w_]); \
				/* no rcp rows for vectors of more than 255 bits: divide */ \
				r_ = q_->rcp_stride ? rr_[l_] : \
					mcc_lss_rcp(q_->eta[s_ + l_] + mcc_lss_sqrt_tab[(pc_g)]); \
				d_ = mcc_lss_dist(mcc_lss_sqrt_tab[x_], r_); \
				if (drop0_ && q_->pc[s_ + l_] == 0) \
					continue;	/* den = 0: no vote */ \
				(hist)[d_ < MCC_W ? d_ : MCC_W]++; \
			} \
		} \
		else \
		{ \
			int			vw_ = q_->vwords; \
			for (int l_ = 0; l_ < c_; l_++) \
			{ \
				const uint64_t *v_ = q_->bits[s_ + l_]; \
				int			pw_ = 0, pa_ = 0, pb_ = 0, px_ = 0; \
				uint32_t	den_; \
				uint32_t	d_; \
				for (int w_ = 0; w_ < vw_; w_++) \
				{ \
					uint64_t	m_ = v_[vw_ + w_] & (g)[vw_ + w_]; \
					uint64_t	a_ = v_[w_] & m_; \
					uint64_t	b_ = (g)[w_] & m_; \
					pw_ += POPCOUNT(m_); \
					pa_ += POPCOUNT(a_); \
					pb_ += POPCOUNT(b_); \
					px_ += POPCOUNT(a_ ^ b_); \
				} \
				if (pw_ < p_->min_me_cells) \
					continue; \
				den_ = mcc_lss_sqrt_tab[pa_] + mcc_lss_sqrt_tab[pb_]; \
				if (den_ == 0) \
					continue; \
				d_ = mcc_lss_dist(mcc_lss_sqrt_tab[px_], mcc_lss_rcp(den_)); \
				(hist)[d_ < MCC_W ? d_ : MCC_W]++; \
			} \
		} \
	} while (0)

#endif							/* MCC_PROBE_INT_H */
