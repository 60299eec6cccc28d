/*
 * mcc_match_int.h: the inside of mcc_match_work and the functions shared by
 * mcc_match.c, mcc_relax.c and mcc_consolidate.c. Private to src/core.
 *
 * Geometry is kept in the counter-clockwise frame of the angles: a minutia
 * at image (x, y) is the point (x, -y), and its direction theta the unit
 * vector (cos theta, sin theta), so rotations are complex products and no
 * step needs atan2 (mcc_relax.c says how the angle terms are computed).
 */
#ifndef MCC_MATCH_INT_H
#define MCC_MATCH_INT_H

#include <stdint.h>

#include "mcc_cpu_kernel.h"
#include "mcc_lss.h"
#include "mcc_match.h"

/* Entries a per-cylinder array holds past the last cylinder: SIMD kernels read 8 lanes. */
#define MCC_MATCH_PAD	8

/*
 * One side of a comparison: its cylinders and their minutiae, in the order
 * of the minutiae (not the stored order, which depends on the angles): every
 * index-based tie-break then gives the same answer for a template and a
 * rotated copy of it. The bits are word-major (bits[k][i] = word k of
 * cylinder i; value words, then mask words) so that a SIMD kernel loads one
 * word of 8 consecutive cylinders at once; the MCC_MATCH_PAD entries after
 * the last cylinder of bits, angle and eta are zero.
 */
typedef struct match_side
{
	int			n;				/* cylinders */
	uint8_t		mi[MCC_MAX_CYL];	/* minutia index of each */
	uint16_t	pc[MCC_MAX_CYL];	/* popcount of the value bits */
	uint8_t		angle[MCC_MAX_CYL + MCC_MATCH_PAD];	/* byte angle */
	uint32_t	eta[MCC_MAX_CYL + MCC_MATCH_PAD];	/* LUT_sqrt[pc] */
	double		px[MCC_MAX_CYL];	/* position, counter-clockwise frame */
	double		py[MCC_MAX_CYL];
	double		ux[MCC_MAX_CYL];	/* direction, unit vector */
	double		uy[MCC_MAX_CYL];
	uint64_t	bits[2 * MCC_MAX_WORDS][MCC_MAX_CYL + MCC_MATCH_PAD];
} match_side;

/* A candidate pair of the global stage. */
typedef struct match_pair
{
	uint8_t		r;				/* cylinder of A */
	uint8_t		c;				/* cylinder of B */
	double		lambda0;		/* Gamma[r][c] */
} match_pair;

struct mcc_match_work
{
	int			magic;			/* MCC_MATCH_MAGIC once initialised */
	const mcc_profile *profile;
	int			have_probe;
	int			have_matrix;
	int			have_votes;		/* hist holds LSS votes (template path) */
	int			np;				/* n_P of this comparison */
	match_side	a;
	match_side	b;
	/* row-major n_a x n_b; a SIMD row may write MCC_MATCH_PAD entries past its end */
	float		gamma[MCC_MAX_CYL * MCC_MAX_CYL + MCC_MATCH_PAD];
	/* the LSS vote of each entry of gamma (a bucket, MCC_W for none) */
	uint8_t		vote[MCC_MAX_CYL * MCC_MAX_CYL + MCC_MATCH_PAD];
	/* scratch of the global stage */
	union
	{
		uint64_t	keys[MCC_MAX_CYL * MCC_MAX_CYL];	/* ranked entries */
		int64_t		weight[MCC_MAX_CYL * MCC_MAX_CYL];	/* LSA weights */
	};
	match_pair	pairs[MCC_MAX_CYL];
	int			npairs;
	/* compatibilities: rho[t][k] (generic kernel), rows of rho^T (SIMD) */
	double		rho[MCC_MAX_CYL * MCC_MAX_CYL];
	double		lam[2][MCC_MAX_CYL];
	int64_t		assign_work[8 * (MCC_MAX_CYL + 1)];
	int			col_of_row[MCC_MAX_CYL];
	/* what the last score used (mcc_match_last_pairs) */
	int			n_last;
	uint8_t		last_r[MCC_MAX_CYL];
	uint8_t		last_c[MCC_MAX_CYL];
	double		last_v[MCC_MAX_CYL];
};

#define MCC_MATCH_MAGIC 0x4d434357	/* "MCCW" */

/*
 * The candidate pairs of a relaxation as its kernels read them: pair t's
 * minutiae a_t (ax, ay) and b_t (bx, by) and phi_t = u(a_t) conj(u(b_t))
 * (fx, fy), for t < n, then zeros up to the next multiple of MCC_MATCH_PAD.
 */
typedef struct relax_pairs
{
	int			n;
	double		ax[MCC_MAX_CYL + MCC_MATCH_PAD];
	double		ay[MCC_MAX_CYL + MCC_MATCH_PAD];
	double		bx[MCC_MAX_CYL + MCC_MATCH_PAD];
	double		by[MCC_MAX_CYL + MCC_MATCH_PAD];
	double		fx[MCC_MAX_CYL + MCC_MATCH_PAD];
	double		fy[MCC_MAX_CYL + MCC_MATCH_PAD];
} relax_pairs;

/*
 * A CPU kernel of the comparison. Every kernel computes the same bits (the
 * scalar code of mcc_match.c and mcc_relax.c is the reference, and what the
 * GPU reproduces); they differ only in instructions and in the order of
 * independent operations, never in the order of a sum.
 */
typedef struct match_kernel
{
	mcc_kernel_head h;			/* name, usable */
	/* Gamma and the LSS votes of w->a against w->b */
	void		(*matrix) (mcc_match_work *w);
	/*
	 * rho of the pairs of rx (n >= 2) into w->rho, then rp->n_rel iterations
	 * from lambda_0 in w->lam[0]; returns the buffer of w->lam holding the result
	 */
	double	   *(*relax) (mcc_match_work *w, const relax_pairs *rx,
						  const mcc_relax_params *rp, const mcc_sigmoid_tab *tab);

	/*
	 * Ranking helpers on values of Gamma (never NaN) by their bits read as
	 * int32: positive floats order as their bits, 0 and negative values
	 * never rank. argmax: the first i < n with bit i of set[] holding the
	 * largest positive v[i], its bits in *max; -1 (and 0) if none. ge64:
	 * bit i set when i < n and v[i]'s bits >= thr > 0, for i < 64. Neither
	 * reads v[i] for i >= n.
	 */
	int			(*argmax) (const float *v, int n, const uint64_t *set, int32_t *max);
	uint64_t	(*ge64) (const float *v, int n, int32_t thr);
} match_kernel;

/* The kernel in use (chosen on first call; mcc_match_set_kernel forces one). */
const match_kernel *mcc_match_kernel(void);

/* The scalar kernels: software popcount, and the POPCNT instruction. */
void		mcc_matrix_generic(mcc_match_work *w);
void		mcc_matrix_popcnt(mcc_match_work *w);
double	   *mcc_relax_generic(mcc_match_work *w, const relax_pairs *rx,
							  const mcc_relax_params *rp, const mcc_sigmoid_tab *tab);
int			mcc_argmax_generic(const float *v, int n, const uint64_t *set, int32_t *max);
uint64_t	mcc_ge64_generic(const float *v, int n, int32_t thr);

/* AVX2 (4 lanes) and AVX-512 (8 lanes), mcc_match_avx2.c and mcc_match_avx512.c. */
void		mcc_matrix_avx2(mcc_match_work *w);
double	   *mcc_relax_avx2(mcc_match_work *w, const relax_pairs *rx,
						   const mcc_relax_params *rp, const mcc_sigmoid_tab *tab);
int			mcc_argmax_avx2(const float *v, int n, const uint64_t *set, int32_t *max);
uint64_t	mcc_ge64_avx2(const float *v, int n, int32_t thr);
void		mcc_matrix_avx512(mcc_match_work *w);
double	   *mcc_relax_avx512(mcc_match_work *w, const relax_pairs *rx,
							 const mcc_relax_params *rp, const mcc_sigmoid_tab *tab);
int			mcc_argmax_avx512(const float *v, int n, const uint64_t *set, int32_t *max);
uint64_t	mcc_ge64_avx512(const float *v, int n, int32_t thr);

/*
 * Relaxation of w->pairs[0 .. w->npairs) with constants rp and tables tab;
 * the score averages the np pairs of best efficiency.
 */
double		mcc_relax_score(mcc_match_work *w, const mcc_relax_params *rp,
							const mcc_sigmoid_tab *tab, int np);

/* Consolidation of paper 001 on the current matrix. */
double		mcc_consolidate(mcc_match_work *w, const mcc_cons_params *cp);

/* LSS of the current comparison: votes if any, else the float mean. */
double		mcc_match_lss(mcc_match_work *w);

/* Record the pairs a score used. */
void		mcc_match_note(mcc_match_work *w, int i, int r, int c, double v);

#endif							/* MCC_MATCH_INT_H */
