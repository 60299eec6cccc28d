/*
 * mcc_match.h: global scores of two templates beyond LSS: the local
 * similarity matrix, LSA (Hungarian), LGS, the relaxations of TPAMI 2010
 * (-R) and of [11] (distortion-tolerant, -DTR), and the consolidation stage
 * of paper 001 (Le, Nguyen, Nguyen 2017, Algorithm 3). Formulas, choices and
 * the measurements that settled them: docs/accuracy.md; mcc-spec §5 and §7.
 *
 * Local similarity matrix. Gamma[r][c] compares cylinder r of template A
 * with cylinder c of template B, each side's cylinders counted in the order
 * of their minutiae (not the stored order, which follows the angles: so
 * every tie-break below, by smaller r or c, gives the same result for a
 * template and a rotated copy of it), with the
 * same gate and the same integers as LSS (mcc_lss.h): a pair that passes the
 * angular gate (and, with masks, the min_ME test) and has den > 0 gets
 *
 *     Gamma = 1 - (float) LUT_sqrt[popcount(xor)] / (float) den
 *
 * (one correctly rounded division of exact integers: the same bits on any
 * IEEE machine and on the GPU), and every other pair gets 0. The pass that
 * fills Gamma also collects the LSS votes, so method MCC_LSS gives exactly
 * mcc_lss_pair()'s score.
 *
 * Global scores (n_P = LUT_p[min(n_A, n_B)] as in LSS; a score is a sum
 * over at most n_P pairs divided by n_P: missing pairs count 0, as missing
 * LSS votes do):
 *   lss      the LSS of mcc_lss.h (fixed point, w = 64 buckets)
 *   lsa      the one-to-one assignment maximising the sum of Gamma
 *            (Hungarian method, exact on integer costs); mean of its n_P
 *            best pairs
 *   lgs      greedy one-to-one pairs in descending Gamma; mean of the
 *            first n_P
 *   X-r      relaxation with the TPAMI 2010 constants on n_R pairs of X
 *            (lss: the n_R largest entries of Gamma, not one-to-one; lsa:
 *            the assignment; lgs: the greedy pairs), n_R = min(n_A, n_B)
 *            pairs with Gamma > 0; the n_P pairs of best efficiency
 *            lambda_final / lambda_0; mean of their lambda_final
 *   X-dtr    the same with the constants of [11] and the relative
 *            distance term |dA - dB| / normaliser (sum or mean of dA, dB)
 *   fused    the mean of two relaxed scores sharing one matrix: lss-r
 *            (TPAMI 2010 constants on the LSS pairs, LSS's n_P) and LGS-DTR
 *            as [11] defines it (its constants on the LGS pairs, and its
 *            own n_P: 3..10 around 30 cylinders); the product's default
 *            (docs/accuracy.md, section 2: the best on FVC2002 and among
 *            the best on synthetic identification)
 *   consolidation  paper 001, Algorithm 3: the 32 cylinders with the
 *            most set bits on each side; for each selected cylinder t of
 *            B (the gallery side) its best cylinder of A (the probe side);
 *            the pairs consistent with (t, best(t)) under the rigid
 *            alignment of paper 001 Sec. 5.2 (t_s = 12 px, t_theta =
 *            pi/6); the score is a parameter (mcc_cons_score): by default
 *            the largest sum over t of the similarities of (t, best(t))
 *            and its consistent pairs, / 32; Algorithm 3's own formula,
 *            the largest count / 32, measured worse (docs/accuracy.md)
 *
 * Order and ties: pairs are ranked by Gamma, ties by smaller r then c;
 * efficiencies ties by rank. Everything is deterministic: only IEEE
 * operations that are correctly rounded, the reproducible sin/cos of
 * mcc_detmath.h, and sigmoid tables built once (the GPU gets copies of
 * them), with -ffp-contract=off.
 *
 * Symmetry: lss is symmetric exactly; lsa, lgs and the relaxations are
 * symmetric unless Gamma has ties that change which pairs are taken;
 * consolidation is not symmetric (A is the query, B the gallery template).
 *
 * Memory: nothing here allocates. The caller owns an mcc_match_work of
 * mcc_match_work_size() bytes (about 1.6 MB; one per thread), keeps it for
 * as many comparisons as it likes, and frees it.
 */
#ifndef MCC_MATCH_H
#define MCC_MATCH_H

#include <stddef.h>
#include <stdint.h>

#include "mcc_error.h"
#include "mcc_minutiae.h"
#include "mcc_profile.h"
#include "mcc_template.h"

/* Methods; the SQL names are those of mcc_method_name(). Never renumber. */
typedef enum mcc_method
{
	MCC_LSS = 0,				/* "lss" */
	MCC_LSS_R,					/* "lss-r" */
	MCC_LSS_DTR,				/* "lss-dtr" */
	MCC_LSA,					/* "lsa" */
	MCC_LSA_R,					/* "lsa-r" */
	MCC_LSA_DTR,				/* "lsa-dtr" */
	MCC_LGS,					/* "lgs" */
	MCC_LGS_R,					/* "lgs-r" */
	MCC_LGS_DTR,				/* "lgs-dtr" */
	MCC_CONSOLIDATION,			/* "consolidation" */
	MCC_FUSED					/* "fused": (LSS-R + LGS-DTR) / 2 */
} mcc_method;

#define MCC_NMETHODS	11

/* The most accurate method: what identify() refines with and mcc_score(a, b) gives by default. */
#define MCC_METHOD_BEST MCC_FUSED

/* SQL name of a method, or NULL if out of range. */
const char *mcc_method_name(int method);

/* Method by SQL name (exact, lower case); -1 if unknown. */
int			mcc_method_parse(const char *name, int len);

/* The method names joined by ", " (for error hints). */
const char *mcc_method_list(void);

/*
 * A refinement by name, for identify(..., refine => ...): "none" (keep the
 * LSS scores: MCC_LSS), "dtr" (paper 000's refinement: MCC_LSS_DTR) or any
 * method name; -1 if unknown.
 */
int			mcc_refine_parse(const char *name, int len);

/* How the relative distance term of DTR is normalised. */
typedef enum mcc_d1_norm
{
	MCC_D1_ABS = 0,				/* |dA - dB| in pixels (TPAMI) */
	MCC_D1_SUM,					/* |dA - dB| / (dA + dB) */
	MCC_D1_MEAN					/* |dA - dB| / ((dA + dB) / 2) */
} mcc_d1_norm;

/* Relaxation constants (mcc-spec §5.5, §5.6). */
typedef struct mcc_relax_params
{
	double		w_r;			/* weight of the pair's own similarity */
	int			n_rel;			/* iterations */
	double		mu[3];			/* sigmoid centres of d1, d2, d3 */
	double		tau[3];			/* sigmoid slopes (negative: decreasing) */
	mcc_d1_norm d1;
	int			max_nr;			/* cap on n_R, <= 0 for none */
} mcc_relax_params;

/* Final score of the consolidation (paper 001 and the variants measured). */
typedef enum mcc_cons_score
{
	MCC_CONS_COUNT = 0,			/* Algorithm 3: max count / n_sel */
	MCC_CONS_SIM,				/* max over t of the summed best similarities
								 * of t and its consistent pairs, / n_sel */
	MCC_CONS_COUNT_LSS			/* (max count + LSS) / n_sel: the count, ties
								 * broken by LSS */
} mcc_cons_score;

typedef struct mcc_cons_params
{
	int			n_sel;			/* cylinders kept per side (32) */
	double		t_s;			/* pixels (12) */
	double		t_theta;		/* radians (pi/6) */
	mcc_cons_score score;
} mcc_cons_params;

/*
 * How many pairs a score averages, as a function of min(n_A, n_B) (mcc-spec
 * §5.1): n_P = min_np + round((max_np - min_np) Z(v; mu_p, tau_p)).
 */
typedef struct mcc_np_params
{
	int			min_np;
	int			max_np;
	double		mu_p;
	double		tau_p;
} mcc_np_params;

#define MCC_SIG_SEGS	4096	/* segments of a sigmoid table */

/* A sigmoid tabulated on [0, hi] for linear interpolation. */
typedef struct mcc_sigmoid_tab
{
	double		hi;
	double		scale;			/* MCC_SIG_SEGS / hi */
	float		z[MCC_SIG_SEGS + 2];
} mcc_sigmoid_tab;

/*
 * Everything a method may use. Fill with mcc_match_params_default(), edit
 * the constants, then call mcc_match_params_prepare() to build the tables.
 */
typedef struct mcc_match_params
{
	mcc_relax_params relax;		/* the -r methods: TPAMI 2010 */
	mcc_relax_params dtr;		/* the -dtr methods: [11] */
	mcc_cons_params cons;
	/* n_P of the fused method's LGS-DTR ([11]'s) */
	mcc_np_params fused_dtr_np;
	/* built by mcc_match_params_prepare: [0] relax, [1] dtr; d1, d2, d3 */
	mcc_sigmoid_tab tab[2][3];
	/* n_P of fused_dtr_np for every min(n_A, n_B), tabulated (exp() once per entry) */
	uint8_t		fused_dtr_np_tab[MCC_MAX_CYL + 1];
	int			prepared;
} mcc_match_params;

/* The defaults of docs/accuracy.md, prepared. */
void		mcc_match_params_default(mcc_match_params *mp);

/* Build the sigmoid tables after editing the constants. */
void		mcc_match_params_prepare(mcc_match_params *mp);

/* The default parameters, shared and read-only (built on first use). */
const mcc_match_params *mcc_match_params_std(void);

/* Sigmoid Z(v; mu, tau) = 1 / (1 + exp(-tau (v - mu))) in double precision. */
double		mcc_sigmoid(double v, double mu, double tau);

/*
 * A term of rho as the relaxation computes it, from the tables: set 0 for
 * the -r constants, 1 for -dtr; term 0 is the distance term of a d1 value
 * (pixels or ratio), terms 1 and 2 the angle terms of an angle d in
 * [0, pi] (looked up through sin(d / 2), as the relaxation does).
 */
double		mcc_relax_term(const mcc_match_params *mp, int set, int term, double v);

/* ------------------------------------------------------------------ */
/* comparisons                                                         */

typedef struct mcc_match_work mcc_match_work;

/* Bytes an mcc_match_work needs (any alignment of 16 or more). */
size_t		mcc_match_work_size(void);

/* Make a fresh workspace usable (no probe set). */
void		mcc_match_work_init(mcc_match_work *w);

/*
 * Set template A, the probe (query), of the next comparisons. The view's
 * blob may be freed afterwards: what is needed is copied.
 */
void		mcc_match_set_probe(mcc_match_work *w, const mcc_template_view *probe);

/*
 * Score template B, a gallery candidate, against the probe with a method;
 * mp NULL means mcc_match_params_std(). Fails with MCC_ERR_VALUE if the
 * profiles differ, MCC_ERR_INTERNAL if no probe is set or mp is not
 * prepared. Templates with no cylinder score 0.
 */
mcc_status	mcc_match_candidate(mcc_match_work *w, const mcc_template_view *cand,
								mcc_method method, const mcc_match_params *mp,
								float *score, mcc_error *err);

/* 1:1: set a as the probe, then score b. */
mcc_status	mcc_match_pair(mcc_match_work *w, const mcc_template_view *a,
						   const mcc_template_view *b, mcc_method method,
						   const mcc_match_params *mp, float *score,
						   mcc_error *err);

/*
 * After mcc_match_candidate or mcc_match_load: score the same pair with
 * another method, reusing the matrix (the evaluation tool scores every
 * method at the cost of one matrix).
 */
float		mcc_match_rescore(mcc_match_work *w, mcc_method method,
							  const mcc_match_params *mp);

/*
 * Load a hand-made comparison (tests): n_a and n_b minutiae standing for
 * cylinders, their popcounts (NULL: all equal), Gamma row-major
 * (gamma[r * n_b + c], values in [0, 1], 0 for pairs that do not match),
 * and n_P (<= 0: LUT_p of profile p). Method lss then averages the n_P
 * largest entries of Gamma in double precision (no votes to count).
 */
mcc_status	mcc_match_load(mcc_match_work *w, const mcc_profile *p,
						   int n_a, const mcc_minutia *ma, const uint16_t *pc_a,
						   int n_b, const mcc_minutia *mb, const uint16_t *pc_b,
						   const float *gamma, int np, mcc_error *err);

/*
 * The matrix of the last comparison: Gamma[r][c] (0 <= r < n_a, 0 <= c <
 * n_b), cylinders counted in the order of their minutiae.
 */
float		mcc_match_gamma(const mcc_match_work *w, int r, int c);

/* Cylinder counts of the last comparison. */
void		mcc_match_dims(const mcc_match_work *w, int *n_a, int *n_b, int *np);

/*
 * The pairs behind the last score (for inspection and tests): up to max
 * pairs (r, c) of minutia indices (of A and B) and their final values; returns how
 * many the score used. Relaxations report the n_P pairs of best
 * efficiency; consolidation reports the reference pair, then the pairs
 * consistent with it.
 */
int			mcc_match_last_pairs(const mcc_match_work *w, int *r, int *c,
								 double *value, int max);

/*
 * The CPU kernel of the comparisons ("avx512", "avx2", "popcnt",
 * "generic"), chosen at run time: the matrix pass and the relaxation use
 * the widest SIMD this CPU has, with the same bits as the scalar code.
 */
const char *mcc_match_kernel_name(void);

/*
 * Test and benchmark hook: force the kernel by name, or NULL for the
 * automatic choice. Returns 0, or -1 if the name is unknown or this CPU
 * cannot run that kernel. Not thread-safe against running comparisons.
 */
int			mcc_match_set_kernel(const char *name);

/* ------------------------------------------------------------------ */
/* building blocks (public for tests and the GPU port)                 */

/*
 * Maximum-weight assignment (Hungarian method with potentials, O(n^2 m))
 * on an n x m matrix of non-negative integer weights, row-major, weights
 * below 2^40. Writes col_of_row[r] (-1 for rows left unassigned when
 * n > m) and returns the total weight. work must hold
 * mcc_assign_work_len(n, m) int64_t.
 */
int64_t		mcc_assign_max(int n, int m, const int64_t *weight, int *col_of_row,
						   int64_t *work);

size_t		mcc_assign_work_len(int n, int m);

/*
 * Paper 001's selection: the indices of the (at most) n_sel cylinders with
 * the most set bits, ties by smaller index, written to sel in ascending
 * index order; returns how many.
 */
int			mcc_select_by_popcount(int n, const uint16_t *popcount, int n_sel,
								   int *sel);

/*
 * n_P of the pair sets of a method for min(n_A, n_B) = m: np[0] for its
 * (first) set, np[1] for the second set of fused (LGS-DTR); the other
 * methods average over LUT_p of profile p (both entries). The GPU port
 * (kernels/mcc_gpu_refine.h) takes them from here.
 */
void		mcc_match_set_np(const mcc_match_params *mp, int method, const mcc_profile *p,
							 int m, int np[2]);

/*
 * Identification refinement (paper 000 Sec. 5.4): how many of the best LSS
 * candidates of a gallery of n templates to rescore: ceil(fraction * n),
 * at least min_count and k, at most n.
 */
int64_t		mcc_refine_count(int64_t n, double fraction, int64_t min_count,
							 int64_t k);

#endif							/* MCC_MATCH_H */
