/*
 * mcc_soa_int.h: the CPU scan kernels behind mcc_soa_scan(). Private to
 * src/core. Every kernel computes the arithmetic of mcc_lss.h exactly; they
 * differ only in how they count bits and how many lanes they use.
 */
#ifndef MCC_SOA_INT_H
#define MCC_SOA_INT_H

#include <string.h>

#include "mcc_cpu_kernel.h"
#include "mcc_probe_int.h"
#include "mcc_soa.h"

typedef void (*mcc_scan_fn) (const mcc_probe *q, const mcc_soa *g, uint32_t t0,
							 uint32_t t1, float *scores);

/* Portable C, software popcount; every profile. */
void		mcc_scan_generic(const mcc_probe *q, const mcc_soa *g, uint32_t t0,
							 uint32_t t1, float *scores);

/* The same loop compiled for the POPCNT instruction; every profile. */
void		mcc_scan_popcnt(const mcc_probe *q, const mcc_soa *g, uint32_t t0,
							uint32_t t1, float *scores);

/* AVX-512 VPOPCNTDQ, 8 probe cylinders per instruction; mask-less profiles of <= 4 words. */
void		mcc_scan_avx512(const mcc_probe *q, const mcc_soa *g, uint32_t t0,
							uint32_t t1, float *scores);

/* AVX2 (nibble-table popcount), 4 probe cylinders per vector; the same profiles. */
void		mcc_scan_avx2(const mcc_probe *q, const mcc_soa *g, uint32_t t0,
						  uint32_t t1, float *scores);

/*
 * The same kernels scoring one template in place, from its stored blob
 * (mcc_soa_score_view()).
 */
typedef float (*mcc_score_view_fn) (const mcc_probe *q, const mcc_template_view *t);

float		mcc_score_view_generic(const mcc_probe *q, const mcc_template_view *t);
float		mcc_score_view_popcnt(const mcc_probe *q, const mcc_template_view *t);
float		mcc_score_view_avx512(const mcc_probe *q, const mcc_template_view *t);
float		mcc_score_view_avx2(const mcc_probe *q, const mcc_template_view *t);

/* Whether the AVX2 / AVX-512 kernel can run here and computes LUT_sqrt exactly. */
int			mcc_avx2_ok(void);
int			mcc_avx512_ok(void);

/*
 * Whether the SIMD kernels' float square roots give LUT_sqrt exactly here
 * (every x <= 255, in round-to-nearest mode, whatever the caller's mode):
 * for x <= 255, round(sqrtf(x) * 4096) in IEEE single precision equals
 * round(sqrt(x) * 4096) (the closest sqrt(x) * 4096 comes to a tie is
 * 0.00196, more than the 0.00195 of float error). SSE square roots are
 * correctly rounded, so one SSE check covers the AVX2 and AVX-512 kernels.
 */
int			mcc_simd_sqrt_exact(void);

/*
 * The votes of a gallery cylinder (words gw, popcount pc, byte angle a) as
 * bytes (bucket numbers) at d, when den may be 0 for some pairs (it and some
 * probe cylinders have no bits): the generic loop checks each pair. Rare;
 * the SIMD kernels call it out of line so their hot loops keep their
 * registers. Returns the number of votes.
 */
int			mcc_votes_den0(const mcc_probe *q, const uint64_t *gw, int pc, int a,
						   uint8_t *d);

/*
 * Score template k of g with the generic vote loop and popcount POPCOUNT:
 * the body of the generic and popcnt kernels, and the fallback of the SIMD
 * ones for cases they do not vectorize.
 */
#define MCC_SCORE_TEMPLATE_GENERIC(q, g, k, POPCOUNT, out) \
	do { \
		uint32_t	hist_[MCC_HIST_LEN] = {0}; \
		uint32_t	j0_ = (g)->first[(k)]; \
		uint32_t	j1_ = (g)->first[(k) + 1]; \
		size_t		cap_ = (g)->cap_cyl; \
		if ((q)->n == 0 || j0_ == j1_) \
		{ \
			(out) = 0.0f; \
			break; \
		} \
		for (uint32_t j_ = j0_; j_ < j1_; j_++) \
		{ \
			uint64_t	gw_[2 * MCC_MAX_WORDS]; \
			for (int w_ = 0; w_ < (g)->words; w_++) \
				gw_[w_] = (g)->bits[w_ * cap_ + j_]; \
			MCC_VOTES_GENERIC((q), gw_, (g)->pc[j_], (g)->angle[j_], hist_, POPCOUNT); \
		} \
		(out) = mcc_lss_finish(hist_, (q)->np[j1_ - j0_]); \
	} while (0)

/* The same for template view t (mcc_template.h's blob layout). */
#define MCC_SCORE_VIEW_GENERIC(q, t, POPCOUNT, out) \
	do { \
		uint32_t	hist_[MCC_HIST_LEN] = {0}; \
		if ((q)->n == 0 || (t)->n_cyl == 0) \
		{ \
			(out) = 0.0f; \
			break; \
		} \
		for (int c_ = 0; c_ < (t)->n_cyl; c_++) \
		{ \
			uint64_t	gw_[2 * MCC_MAX_WORDS]; \
			int			pcv_ = mcc_template_cyl_popcount((t), c_); \
			int			angv_ = mcc_template_cyl_angle((t), c_); \
			mcc_template_cyl_bits((t), c_, gw_); \
			MCC_VOTES_GENERIC((q), gw_, pcv_, angv_, hist_, POPCOUNT); \
		} \
		(out) = mcc_lss_finish(hist_, (q)->np[(t)->n_cyl]); \
	} while (0)

#endif							/* MCC_SOA_INT_H */
