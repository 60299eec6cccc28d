/*
 * test_match.c: the global scores of mcc_match.h: known answers on small
 * hand-made comparisons (values derived by hand in the comments), the
 * Hungarian method against brute force, the 32-cylinder selection, the
 * sigmoid tables against exp(), and properties on real templates (LSS
 * identical to mcc_lss_pair, identical templates, rigid motions, symmetry,
 * range).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "testgen.h"
#include "mcc_lss.h"
#include "mcc_match.h"

#define PI 3.14159265358979323846

static mcc_match_work *w;
static mcc_match_params mp;

/* A minutia record. */
static mcc_minutia
mnt(int x, int y, double theta)
{
	mcc_minutia m = {0};

	m.x = (int16_t) x;
	m.y = (int16_t) y;
	m.theta = mcc_angle_normalize(theta);
	m.type = 1;
	return m;
}

/* Score a loaded hand-made comparison with a method. */
static double
score_of(int method)
{
	return mcc_match_rescore(w, method, &mp);
}

/* Load a hand-made comparison; 1 on success. */
static int
load(int na, const mcc_minutia *ma, const uint16_t *pa, int nb,
	 const mcc_minutia *mb, const uint16_t *pb, const float *g, int np)
{
	mcc_error	err;

	return mcc_match_load(w, mcc_profile_by_id(MCC_PROFILE_GPU2015), na, ma, pa, nb,
						  mb, pb, g, np, &err) == MCC_OK;
}

/* ------------------------------------------------------------------ */

/* Method names: every name parses back to its method; unknown names fail. */
static void
test_names(void)
{
	int			ok = 1;

	for (int m = 0; m < MCC_NMETHODS; m++)
	{
		const char *n = mcc_method_name(m);

		ok &= n != NULL && mcc_method_parse(n, (int) strlen(n)) == m &&
			strstr(mcc_method_list(), n) != NULL;
	}
	UNIT_CHECK(ok, "every method name parses back and is in the list");
	UNIT_CHECK(mcc_method_parse("LSS", 3) == -1 && mcc_method_parse("lss-", 4) == -1 &&
			   mcc_method_parse("", 0) == -1 && mcc_method_parse("dtr", 3) == -1 &&
			   mcc_method_name(MCC_NMETHODS) == NULL && mcc_method_name(-1) == NULL,
			   "unknown, upper-case and partial names are rejected");
	UNIT_CHECK(mcc_method_parse("lss-dtr", 7) == MCC_LSS_DTR &&
			   mcc_method_parse("consolidation", 13) == MCC_CONSOLIDATION &&
			   mcc_method_parse("lss-dtrx", 7) == MCC_LSS_DTR,
			   "names are matched on the given length");
	UNIT_CHECK(mcc_refine_parse("none", 4) == MCC_LSS && mcc_refine_parse("dtr", 3) == MCC_LSS_DTR &&
			   mcc_refine_parse("consolidation", 13) == MCC_CONSOLIDATION &&
			   mcc_refine_parse("lgs-r", 5) == MCC_LGS_R && mcc_refine_parse("nonE", 4) == -1 &&
			   mcc_refine_parse("dt", 2) == -1,
			   "refine names: none, dtr, and every method");
}

/* The refinement shortlist: ceil(f n), at least min and k, at most n. */
static void
test_refine_count(void)
{
	UNIT_CHECK(mcc_refine_count(250000, 0.001, 100, 10) == 250,
			   "paper 000: 0.1%% of 250,000 is 250");
	UNIT_CHECK(mcc_refine_count(1000000, 0.001, 100, 10) == 1000, "0.1%% of 1 M is 1000");
	UNIT_CHECK(mcc_refine_count(20000, 0.001, 100, 10) == 100, "the minimum count wins on 20,000");
	UNIT_CHECK(mcc_refine_count(250001, 0.001, 100, 10) == 251, "the fraction is rounded up");
	UNIT_CHECK(mcc_refine_count(50, 0.001, 100, 10) == 50, "never more than the gallery");
	UNIT_CHECK(mcc_refine_count(20000, 0.001, 100, 500) == 500, "never fewer than k");
	UNIT_CHECK(mcc_refine_count(20000, 0.0, 0, 0) == 0 && mcc_refine_count(0, 0.5, 10, 1) == 0,
			   "zero fraction and empty gallery");
	UNIT_CHECK(mcc_refine_count(100, 2.0, 0, 0) == 100, "a fraction above 1 is the whole gallery");
}

/* Best total weight of an n x m assignment by trying every injection. */
static int64_t
brute_assign(int n, int m, const int64_t *wt, int r, uint32_t used)
{
	int64_t		best;

	if (r == n)
		return 0;
	if (n > m)
	{
		/* more rows than columns: rows may stay unassigned */
		int			rows_left = n - r;
		int			cols_left = m - __builtin_popcount(used);

		best = rows_left > cols_left ? brute_assign(n, m, wt, r + 1, used) : -1;
	}
	else
		best = -1;
	for (int c = 0; c < m; c++)
	{
		int64_t		v;

		if (used & (1u << c))
			continue;
		v = brute_assign(n, m, wt, r + 1, used | (1u << c));
		if (v >= 0 && v + wt[r * m + c] > best)
			best = v + wt[r * m + c];
	}
	return best;
}

/* The Hungarian method finds the brute-force optimum, with a valid assignment. */
static void
test_assign(void)
{
	tg_rng		r = {12345};
	int64_t		wt[64];
	int64_t		work[128];
	int			col[8];
	int			ok_total = 1;
	int			ok_valid = 1;
	int			cases = 0;

	for (int n = 1; n <= 7; n++)
		for (int m = 1; m <= 7; m++)
			for (int rep = 0; rep < 40; rep++)
			{
				/* small ranges give many ties; large ones unique optima */
				int			hi = rep % 2 ? 3 : 1 << 24;
				int64_t		total;
				int64_t		sum = 0;
				uint32_t	seen = 0;
				int			assigned = 0;

				for (int i = 0; i < n * m; i++)
					wt[i] = tg_int(&r, 0, hi);
				total = mcc_assign_max(n, m, wt, col, work);
				ok_total &= total == brute_assign(n, m, wt, 0, 0);
				for (int i = 0; i < n; i++)
				{
					if (col[i] < 0)
						continue;
					ok_valid &= col[i] < m && !(seen & (1u << col[i]));
					seen |= 1u << col[i];
					sum += wt[i * m + col[i]];
					assigned++;
				}
				ok_valid &= sum == total && assigned == (n < m ? n : m);
				cases++;
			}
	UNIT_CHECK(ok_total, "Hungarian total equals brute force on %d matrices up to 7x7", cases);
	UNIT_CHECK(ok_valid, "every assignment is one-to-one, complete and sums to the total");

	/* a hand case: greedy would take 9 first and end at 9 + 1 = 10; the optimum is 8 + 8 = 16 */
	{
		int64_t		h[4] = {9, 8, 8, 1};

		UNIT_CHECK(mcc_assign_max(2, 2, h, col, work) == 16 && col[0] == 1 && col[1] == 0,
				   "[[9, 8], [8, 1]]: rows 0-1 and 1-0, total 16");
	}
	/* 3 x 1 and 1 x 3 */
	{
		int64_t		h[3] = {2, 7, 5};

		UNIT_CHECK(mcc_assign_max(3, 1, h, col, work) == 7 && col[0] == -1 && col[1] == 0 &&
				   col[2] == -1, "a 3x1 matrix assigns only its best row");
		UNIT_CHECK(mcc_assign_max(1, 3, h, col, work) == 7 && col[0] == 1,
				   "a 1x3 matrix takes its best column");
	}
}

/* Paper 001's selection: most set bits first, ties by index, output in index order. */
static void
test_select(void)
{
	uint16_t	pc[8] = {10, 50, 40, 50, 20, 40, 5, 50};
	int			sel[8];
	int			n;

	n = mcc_select_by_popcount(8, pc, 3, sel);
	UNIT_CHECK(n == 3 && sel[0] == 1 && sel[1] == 3 && sel[2] == 7,
			   "top 3 of {10,50,40,50,20,40,5,50}: the three 50s (1, 3, 7)");
	n = mcc_select_by_popcount(8, pc, 4, sel);
	UNIT_CHECK(n == 4 && sel[0] == 1 && sel[1] == 2 && sel[2] == 3 && sel[3] == 7,
			   "top 4: the tie between the 40s goes to the smaller index (2)");
	n = mcc_select_by_popcount(8, pc, 32, sel);
	UNIT_CHECK(n == 8 && sel[0] == 0 && sel[7] == 7, "fewer than n_sel: all, in order");
	n = mcc_select_by_popcount(0, pc, 32, sel);
	UNIT_CHECK(n == 0, "empty side");
}

/* The tabulated terms against the sigmoid computed with exp(). */
static void
test_terms(void)
{
	double		worst = 0.0;

	for (int set = 0; set < 2; set++)
	{
		const mcc_relax_params *rp = set ? &mp.dtr : &mp.relax;

		for (int i = 0; i <= 2000; i++)
		{
			double		a = PI * i / 2000.0;
			double		d1 = (rp->d1 == MCC_D1_ABS ? 40.0 : 1.0) * i / 2000.0;
			double		e0 = fabs(mcc_relax_term(&mp, set, 0, d1) -
								  mcc_sigmoid(d1, rp->mu[0], rp->tau[0]));
			double		e1 = fabs(mcc_relax_term(&mp, set, 1, a) -
								  mcc_sigmoid(a, rp->mu[1], rp->tau[1]));
			double		e2 = fabs(mcc_relax_term(&mp, set, 2, a) -
								  mcc_sigmoid(a, rp->mu[2], rp->tau[2]));

			worst = fmax(worst, fmax(e0, fmax(e1, e2)));
		}
	}
	UNIT_CHECK(worst < 3e-5, "tables within 3e-5 of exp() on [0, pi] and the d1 range (worst %.2g)",
			   worst);
	/* values from the constants by hand: Z(mu) = 1/2; TPAMI d1 = 2 px: 1 / (1 + e^-4.8) */
	UNIT_CHECK(fabs(mcc_relax_term(&mp, 1, 0, 1.0 / 30.0) - 0.5) < 1e-5 &&
			   fabs(mcc_relax_term(&mp, 1, 1, PI / 4) - 0.5) < 1e-5 &&
			   fabs(mcc_relax_term(&mp, 1, 2, PI / 18) - 0.5) < 1e-5 &&
			   fabs(mcc_relax_term(&mp, 0, 0, 2.0) - 1.0 / (1.0 + exp(-4.8))) < 1e-5,
			   "Z is 1/2 at every mu of [11] and 0.99184 at 2 px with TPAMI's");
}

/*
 * LSS, LSA and LGS on a 3 x 3 matrix chosen so that all three differ
 * (n_P = 2):
 *       c0    c1    c2
 *  r0  0.9   0.8   0
 *  r1  0.85  0.1   0
 *  r2  0     0     0.5
 * LSS: the two largest entries, (0.9 + 0.85) / 2 = 0.875.
 * LGS: greedy 0.9 (r0,c0); 0.85 and 0.8 conflict; then 0.5 (r2,c2):
 *      (0.9 + 0.5) / 2 = 0.7.
 * LSA: the optimum is r0-c1, r1-c0, r2-c2 (0.8 + 0.85 + 0.5 = 2.15 against
 *      2.4 - ... greedy's 0.9 + 0.1 + 0.5 = 1.5); its two best pairs:
 *      (0.85 + 0.8) / 2 = 0.825.
 */
static void
test_hand_global(void)
{
	mcc_minutia a[3] = {mnt(50, 50, 0), mnt(90, 50, 0.2), mnt(50, 90, 0.4)};
	float		g[9] = {0.9f, 0.8f, 0, 0.85f, 0.1f, 0, 0, 0, 0.5f};
	int			r[8];
	int			c[8];
	double		v[8];

	if (!load(3, a, NULL, 3, a, NULL, g, 2))
	{
		UNIT_CHECK(0, "load a 3x3 matrix");
		return;
	}
	UNIT_CHECK(fabs(score_of(MCC_LSS) - ((double) 0.9f + 0.85f) / 2) < 1e-7,
			   "LSS = (0.9 + 0.85) / 2 (got %.7f)", score_of(MCC_LSS));
	UNIT_CHECK(fabs(score_of(MCC_LGS) - ((double) 0.9f + 0.5f) / 2) < 1e-7,
			   "LGS = (0.9 + 0.5) / 2 (got %.7f)", score_of(MCC_LGS));
	UNIT_CHECK(fabs(score_of(MCC_LSA) - ((double) 0.85f + 0.8f) / 2) < 1e-7,
			   "LSA = (0.85 + 0.8) / 2 (got %.7f)", score_of(MCC_LSA));
	UNIT_CHECK(mcc_match_last_pairs(w, r, c, v, 8) == 2 && r[0] == 1 && c[0] == 0 &&
			   r[1] == 0 && c[1] == 1, "LSA's pairs: r1-c0 then r0-c1");
	/* n_P larger than the pairs: missing pairs count 0 */
	load(3, a, NULL, 3, a, NULL, g, 4);
	UNIT_CHECK(fabs(score_of(MCC_LSA) - ((double) 0.85f + 0.8f + 0.5f) / 4) < 1e-7 &&
			   fabs(score_of(MCC_LGS) - ((double) 0.9f + 0.5f + 0.1f) / 4) < 1e-7,
			   "n_P = 4 with 3 pairs: sums over 3 pairs divided by 4");
}

/* The constant compatibility of two pairs with identical geometry. */
static double
c_same(const mcc_relax_params *rp)
{
	return mcc_sigmoid(0, rp->mu[0], rp->tau[0]) * mcc_sigmoid(0, rp->mu[1], rp->tau[1]) *
		mcc_sigmoid(0, rp->mu[2], rp->tau[2]);
}

/*
 * Relaxation on geometry whose answers follow by hand.
 *
 * (1) Four pairs, B = A translated, Gamma diagonal 0.8, n_P = 4: every
 *     rho(t, k) is c = Z1(0) Z2(0) Z3(0), so each step gives
 *     lambda' = w lambda + (1 - w) / 3 * 3 c lambda = (w + (1 - w) c) lambda
 *     and the score is (w + (1 - w) c)^n_rel * 0.8, for the three pairings
 *     (the diagonal is every one's choice). B = A turned by 90 degrees
 *     gives the same up to rounding.
 * (2) Three pairs, pair 2's minutia moved 100 px in B: rho with pair 2 is
 *     below 1e-17, so pairs 0 and 1 support only each other:
 *     lambda' = (w + (1 - w) / 2 * c) lambda, pair 2 decays as w^n_rel;
 *     n_P = 2 keeps pairs 0 and 1: score (w + (1 - w) c / 2)^n_rel * 0.8.
 * (3) Two pairs, dA = 29, dB = 31 along the minutiae's common direction
 *     (so d2 = d3 = 0): DTR's sum normaliser gives d1 = 2/60 = mu_1, so
 *     Z1 = 1/2; the mean normaliser d1 = 2/30, Z1 = 1 / (1 + e^5); TPAMI's
 *     d1 = 2 px, Z1 = 1 / (1 + e^-4.8). With n = 2, lambda' = (w + (1 - w)
 *     rho) lambda and the score is (w + (1 - w) rho)^n_rel * 0.9.
 * (4) n_R <= 1 skips the relaxation: LGS-R on [[0.9, 0.8], [0, 0]] has one
 *     greedy pair and scores 0.9 / n_P; LSS-R takes both entries of row 0,
 *     pairs that share a minutia of A (dA = 0, dB = 40 px: rho ~ 0), which
 *     decay as w^n_rel: TPAMI 0.5^5 (0.9 + 0.8) / 2.
 */
static void
test_hand_relax(void)
{
	mcc_minutia a[4] = {mnt(100, 100, 0.3), mnt(160, 110, 1.2), mnt(120, 170, 2.5), mnt(60, 150, 4.0)};
	mcc_minutia b[4];
	float		g[16] = {0};
	static const int methods[3][2] = {{MCC_LSS_R, MCC_LSS_DTR}, {MCC_LSA_R, MCC_LSA_DTR},
	{MCC_LGS_R, MCC_LGS_DTR}};
	const mcc_relax_params *sets[2] = {&mp.relax, &mp.dtr};

	/* (1) */
	for (int i = 0; i < 4; i++)
	{
		b[i] = a[i];
		b[i].x += 37;
		b[i].y -= 21;
		g[i * 4 + i] = 0.8f;
	}
	for (int turn = 0; turn < 2; turn++)
	{
		if (turn)
			for (int i = 0; i < 4; i++)
				b[i] = mnt(a[i].y + 500, -a[i].x + 400, a[i].theta + PI / 2);	/* (x, y) -> (y, -x) */
		load(4, a, NULL, 4, b, NULL, g, 4);
		for (int s = 0; s < 2; s++)
		{
			const mcc_relax_params *rp = sets[s];
			double		want = pow(rp->w_r + (1 - rp->w_r) * c_same(rp), rp->n_rel) * (double) 0.8f;

			for (int k = 0; k < 3; k++)
			{
				double		got = score_of(methods[k][s]);

				UNIT_CHECK(fabs(got - want) < 1e-6, "(1) %s, B %s: (w + (1-w) c)^n_rel 0.8 = %.7f (got %.7f)",
						   mcc_method_name(methods[k][s]), turn ? "turned 90 degrees" : "translated",
						   want, got);
			}
		}
	}

	/* (2) */
	{
		mcc_minutia a3[3] = {mnt(100, 100, 0.3), mnt(150, 100, 1.0), mnt(100, 160, 2.0)};
		mcc_minutia b3[3] = {mnt(100, 100, 0.3), mnt(150, 100, 1.0), mnt(200, 260, 2.0)};
		float		g3[9] = {0.8f, 0, 0, 0, 0.8f, 0, 0, 0, 0.6f};

		load(3, a3, NULL, 3, b3, NULL, g3, 2);
		for (int s = 0; s < 2; s++)
		{
			const mcc_relax_params *rp = sets[s];
			double		want = pow(rp->w_r + (1 - rp->w_r) * c_same(rp) / 2, rp->n_rel) * (double) 0.8f;
			double		got = score_of(s ? MCC_LSS_DTR : MCC_LSS_R);
			int			r[4];
			int			c[4];
			double		v[4];
			int			n = mcc_match_last_pairs(w, r, c, v, 4);

			UNIT_CHECK(fabs(got - want) < 1e-6 && n == 2 && r[0] + r[1] == 1,
					   "(2) %s: the moved pair is dropped, score %.7f (got %.7f)",
					   s ? "lss-dtr" : "lss-r", want, got);
		}
	}

	/* (3) */
	{
		mcc_minutia a2[2] = {mnt(100, 100, 0), mnt(129, 100, 0)};
		mcc_minutia b2[2] = {mnt(100, 100, 0), mnt(131, 100, 0)};
		float		g2[4] = {0.9f, 0, 0, 0.9f};
		double		z_sum = 0.5;
		double		z_mean = 1.0 / (1.0 + exp(5.0));
		double		z_abs = 1.0 / (1.0 + exp(-4.8));
		mcc_match_params mean = mp;
		double		want;
		double		rho;

		load(2, a2, NULL, 2, b2, NULL, g2, 2);
		rho = z_sum * mcc_sigmoid(0, mp.dtr.mu[1], mp.dtr.tau[1]) * mcc_sigmoid(0, mp.dtr.mu[2], mp.dtr.tau[2]);
		want = pow(0.3 + 0.7 * rho, 3) * (double) 0.9f;
		UNIT_CHECK(fabs(score_of(MCC_LSS_DTR) - want) < 2e-5,
				   "(3) DTR, sum normaliser: Z1 = 1/2, score %.6f (got %.6f)", want, score_of(MCC_LSS_DTR));
		mean.dtr.d1 = MCC_D1_MEAN;
		mcc_match_params_prepare(&mean);
		rho = z_mean * mcc_sigmoid(0, mp.dtr.mu[1], mp.dtr.tau[1]) * mcc_sigmoid(0, mp.dtr.mu[2], mp.dtr.tau[2]);
		want = pow(0.3 + 0.7 * rho, 3) * (double) 0.9f;
		UNIT_CHECK(fabs(mcc_match_rescore(w, MCC_LSS_DTR, &mean) - want) < 2e-5,
				   "(3) DTR, mean normaliser: Z1 = 1/(1+e^5), score %.6f (got %.6f)", want,
				   (double) mcc_match_rescore(w, MCC_LSS_DTR, &mean));
		rho = z_abs * mcc_sigmoid(0, mp.relax.mu[1], mp.relax.tau[1]) * mcc_sigmoid(0, mp.relax.mu[2], mp.relax.tau[2]);
		want = pow(0.5 + 0.5 * rho, 5) * (double) 0.9f;
		UNIT_CHECK(fabs(score_of(MCC_LSS_R) - want) < 2e-5,
				   "(3) TPAMI, 2 px: Z1 = 1/(1+e^-4.8), score %.6f (got %.6f)", want, score_of(MCC_LSS_R));
	}

	/* (4) */
	{
		mcc_minutia a2[2] = {mnt(100, 100, 0), mnt(100, 200, 0)};
		mcc_minutia b2[2] = {mnt(100, 100, 0), mnt(140, 100, 0)};
		float		g2[4] = {0.9f, 0.8f, 0, 0};

		load(2, a2, NULL, 2, b2, NULL, g2, 2);
		UNIT_CHECK(fabs(score_of(MCC_LGS_R) - (double) 0.9f / 2) < 1e-7,
				   "(4) one pair: no relaxation, 0.9 / 2 (got %.7f)", score_of(MCC_LGS_R));
		UNIT_CHECK(fabs(score_of(MCC_LSS_R) - pow(0.5, 5) * ((double) 0.9f + 0.8f) / 2) < 1e-7,
				   "(4) LSS-R pairs sharing a minutia decay: 0.5^5 (0.9 + 0.8) / 2 (got %.7f)",
				   score_of(MCC_LSS_R));
	}
}

/* Consolidation with Algorithm 3's own score, the count / 32. */
static double
cons_count(void)
{
	mcc_match_params p = mp;

	p.cons.score = MCC_CONS_COUNT;
	return mcc_match_rescore(w, MCC_CONSOLIDATION, &p);
}

/*
 * Consolidation (paper 001, Algorithm 3) on five pairs. B is A translated
 * by (30, 20); Gamma is 0.8, 0.7, 0.6, 0.5, 0.9 on the diagonal and 0.1
 * elsewhere, so maxIndex[t] = t. Case by case:
 *  (a) B's minutia 4 is 40 px off: references 0..3 each agree with the
 *      three others, reference 4 with none: count 3, score 3/32; the
 *      similarity variant (the default) sums 0.8 + 0.7 + 0.6 + 0.5 = 2.6,
 *      2.6/32; the count-lss variant adds LSS (n_P = 4:
 *      (0.9+0.8+0.7+0.6)/4 = 0.75).
 *  (b) also minutia 2 of B turned by 40 degrees (> 30): it agrees with no
 *      reference and its own reference rotates the rest by 40 degrees:
 *      count 2, 2/32.
 *  (c) as (a) with Gamma[3][0] = 0.8 = Gamma[0][0]: the tie goes to the
 *      later query minutia, maxIndex[0] = 3, so t = 0 maps to the wrong
 *      minutia and agrees with nothing: count 2 (references 1, 2, 3).
 *  (d) as (a) with n_sel = 3 and popcounts 10, 50, 40, 30, 20 on both
 *      sides: cylinders 1, 2, 3 are kept: count 2, score 2/3.
 *  (e) as (a) with A's minutia 1 turned by 180 degrees: it fails the
 *      angular gate of every B minutia, so B's 1 has no match; the other
 *      three agree: count 2, 2/32.
 */
static void
test_hand_consolidation(void)
{
	mcc_minutia a[5] = {mnt(100, 100, 0.0), mnt(160, 90, 0.3), mnt(130, 160, 0.6),
	mnt(70, 150, 0.9), mnt(110, 210, 1.2)};
	mcc_minutia b[5];
	float		g[25];
	uint16_t	pc[5] = {10, 50, 40, 30, 20};
	static const float diag[5] = {0.8f, 0.7f, 0.6f, 0.5f, 0.9f};
	mcc_match_params p3 = mp;
	double		s;

	for (int i = 0; i < 5; i++)
	{
		b[i] = a[i];
		b[i].x += 30;
		b[i].y += 20;
	}
	b[4].x += 40;
	for (int r = 0; r < 5; r++)
		for (int c = 0; c < 5; c++)
			g[r * 5 + c] = r == c ? diag[r] : 0.1f;

	/* (a) */
	load(5, a, NULL, 5, b, NULL, g, 4);
	UNIT_CHECK(fabs(cons_count() - 3.0 / 32) < 1e-7,
			   "(a) count 3: 3/32 (got %.7f)", cons_count());
	s = score_of(MCC_CONSOLIDATION);
	UNIT_CHECK(fabs(s - ((double) 0.8f + 0.7f + 0.6f + 0.5f) / 32) < 1e-6,
			   "(a) similarity variant (the default): 2.6/32 (got %.7f)", s);
	p3.cons.score = MCC_CONS_COUNT_LSS;
	s = mcc_match_rescore(w, MCC_CONSOLIDATION, &p3);
	UNIT_CHECK(fabs(s - (3 + ((double) 0.9f + 0.8f + 0.7f + 0.6f) / 4) / 32) < 1e-6,
			   "(a) count-lss variant: (3 + 0.75)/32 (got %.7f)", s);
	{
		int			r[8];
		int			c[8];
		double		v[8];
		int			n = mcc_match_last_pairs(w, r, c, v, 8);

		UNIT_CHECK(n == 4 && r[0] == 0 && c[0] == 0 && r[3] == 3 && c[3] == 3,
				   "(a) reported: the reference pair 0-0 and pairs 1-1, 2-2, 3-3");
	}

	/* (b) */
	b[2].theta = mcc_angle_normalize(b[2].theta + 40 * PI / 180);
	load(5, a, NULL, 5, b, NULL, g, 4);
	UNIT_CHECK(fabs(cons_count() - 2.0 / 32) < 1e-7,
			   "(b) a direction 40 degrees off: 2/32 (got %.7f)", cons_count());
	b[2].theta = a[2].theta;

	/* (c) */
	g[3 * 5 + 0] = 0.8f;
	load(5, a, NULL, 5, b, NULL, g, 4);
	UNIT_CHECK(fabs(cons_count() - 2.0 / 32) < 1e-7,
			   "(c) a tie goes to the later query minutia: 2/32 (got %.7f)", cons_count());
	g[3 * 5 + 0] = 0.1f;

	/* (d) */
	load(5, a, pc, 5, b, pc, g, 4);
	p3 = mp;
	p3.cons.n_sel = 3;
	p3.cons.score = MCC_CONS_COUNT;
	s = mcc_match_rescore(w, MCC_CONSOLIDATION, &p3);
	UNIT_CHECK(fabs(s - 2.0 / 3) < 1e-7, "(d) 3 cylinders kept by popcount: 2/3 (got %.7f)", s);

	/* (e) */
	a[1].theta = mcc_angle_normalize(a[1].theta + PI);
	load(5, a, NULL, 5, b, NULL, g, 4);
	UNIT_CHECK(fabs(cons_count() - 2.0 / 32) < 1e-7,
			   "(e) a query minutia beyond the angular gate: 2/32 (got %.7f)", cons_count());
}

/* ------------------------------------------------------------------ */
/* real templates                                                      */

/* Position of each stored cylinder when the cylinders are in minutia order. */
static void
order_of(const mcc_template_view *v, int *pos)
{
	for (int c = 0; c < v->n_cyl; c++)
	{
		pos[c] = 0;
		for (int d = 0; d < v->n_cyl; d++)
			pos[c] += mcc_template_cyl_minutia(v, d) < mcc_template_cyl_minutia(v, c);
	}
}

/*
 * A pair of random templates built and opened with profile p: a random set
 * a, and b an impression of it (tg_impression's keep, jitter, turn and
 * spurious) if genuine, else another random set. 0 if a build failed (a
 * failed check says so).
 */
static int
make_pair(tg_rng *r, int genuine, double keep, int jitter, double turn, int spurious,
		  const mcc_profile *p, mcc_template_view *va, mcc_template_view *vb,
		  uint8_t **ba, uint8_t **bb)
{
	mcc_minutiae ma;
	mcc_minutiae mb;

	tg_minutiae(r, &ma, 20, 60, 10);
	if (genuine)
		tg_impression(r, &ma, &mb, keep, jitter, turn, spurious);
	else
		tg_minutiae(r, &mb, 20, 60, 10);
	*ba = tg_build_open(&ma, p, va);
	*bb = tg_build_open(&mb, p, vb);
	if (!*ba || !*bb)
	{
		UNIT_CHECK(0, "build templates");
		return 0;
	}
	return 1;
}

/*
 * Gamma against the definition, and the LSS of the matrix pass against
 * mcc_lss_pair, on templates of both profiles.
 */
static void
test_templates_lss(void)
{
	tg_rng		r = {777};
	int			pairs = 0;
	int			lss_same = 0;
	int			gamma_ok = 1;
	int			gated_zero = 1;

	for (int id = MCC_PROFILE_GPU2015; id <= MCC_PROFILE_TPAMI2010; id++)
	{
		const mcc_profile *p = mcc_profile_by_id(id);

		for (int k = 0; k < (id == MCC_PROFILE_GPU2015 ? 40 : 10); k++)
		{
			mcc_template_view va;
			mcc_template_view vb;
			uint8_t    *ba;
			uint8_t    *bb;
			float		s;
			float		ref;
			int			pos_a[MCC_MAX_CYL];
			int			pos_b[MCC_MAX_CYL];
			mcc_error	err;

			if (!make_pair(&r, k % 2, 0.8, 3, 0.1, 5, p, &va, &vb, &ba, &bb))
				return;
			mcc_match_pair(w, &va, &vb, MCC_LSS, &mp, &s, &err);
			mcc_lss_pair(&va, &vb, &ref, &err);
			order_of(&va, pos_a);
			order_of(&vb, pos_b);
			lss_same += s == ref;
			pairs++;
			for (int i = 0; i < va.n_cyl; i++)
				for (int j = 0; j < vb.n_cyl; j++)
				{
					uint64_t	x[2 * MCC_MAX_WORDS];
					uint64_t	y[2 * MCC_MAX_WORDS];
					int			pa = 0, pb = 0, px = 0, pw = 0;
					double		want;
					float		got = mcc_match_gamma(w, pos_a[i], pos_b[j]);

					mcc_template_cyl_bits(&va, i, x);
					mcc_template_cyl_bits(&vb, j, y);
					if (!mcc_lss_gate(mcc_template_cyl_angle(&va, i),
									  mcc_template_cyl_angle(&vb, j), p->delta_theta))
					{
						gated_zero &= got == 0.0f;
						continue;
					}
					for (int q = 0; q < p->words; q++)
					{
						uint64_t	m = p->masks ? x[p->words + q] & y[p->words + q] : ~UINT64_C(0);

						pw += __builtin_popcountll(m);
						pa += __builtin_popcountll(x[q] & m);
						pb += __builtin_popcountll(y[q] & m);
						px += __builtin_popcountll((x[q] ^ y[q]) & m);
					}
					if ((p->masks && pw < p->min_me * p->nbits) || pa + pb == 0)
						want = 0.0;
					else
						want = 1.0 - sqrt(px) / (sqrt(pa) + sqrt(pb));
					gamma_ok &= fabs(got - want) < 2e-4;
				}
			free(ba);
			free(bb);
		}
	}
	UNIT_CHECK(lss_same == pairs, "method lss equals mcc_lss_pair exactly on %d of %d pairs",
			   lss_same, pairs);
	UNIT_CHECK(gamma_ok, "Gamma within 2e-4 of 1 - sqrt(xor)/(sqrt(a)+sqrt(b)) (TPAMI masks)");
	UNIT_CHECK(gated_zero, "pairs beyond the angular gate have Gamma 0");
}

/*
 * A template against itself: the diagonal of Gamma is 1; if nothing else
 * is 1, every pairing takes the diagonal and the geometry agrees exactly,
 * so LSS = LSA = LGS = 1, every relaxation gives (w + (1 - w) c)^n_rel
 * (n >= n_P), and the consolidation finds min(n, 32) agreeing pairs of
 * similarity 1: min(n, 32) / 32 (Algorithm 3's count: min(n, 32) - 1).
 * A copy turned by 90 degrees and moved gives the same scores.
 */
static void
test_templates_self(void)
{
	tg_rng		r = {4242};
	const mcc_profile *p = mcc_profile_by_id(MCC_PROFILE_GPU2015);
	int			tested = 0;
	int			ok_plain = 1;
	int			ok_relax = 1;
	int			ok_cons = 1;
	int			ok_turn = 1;
	double		worst_turn = 0;

	for (int k = 0; k < 30; k++)
	{
		mcc_minutiae ma;
		mcc_minutiae mt;
		mcc_template_view va;
		mcc_template_view vt;
		uint8_t    *ba;
		uint8_t    *bt;
		int			ones = 0;
		int			n;
		int			nb;
		int			np;
		float		self[MCC_NMETHODS];
		mcc_error	err;

		tg_minutiae(&r, &ma, 25, 60, 10);
		/* turned: (x, y) -> (y + 20, 299 - x + 30), theta + pi/2, in a 460 x 460 image */
		mt = ma;
		mt.width = 460;
		mt.height = 460;
		for (int i = 0; i < ma.count; i++)
			mt.m[i] = mnt(ma.m[i].y + 20, 299 - ma.m[i].x + 30, ma.m[i].theta + PI / 2);
		ba = tg_build_open(&ma, p, &va);
		bt = tg_build_open(&mt, p, &vt);
		if (!ba || !bt)
		{
			UNIT_CHECK(0, "build templates");
			return;
		}
		mcc_match_pair(w, &va, &va, MCC_LSS, &mp, &self[0], &err);
		mcc_match_dims(w, &n, &nb, &np);
		for (int i = 0; i < n; i++)
			for (int j = 0; j < n; j++)
				ones += mcc_match_gamma(w, i, j) == 1.0f;
		if (ones != n || n < np)
		{
			free(ba);
			free(bt);
			continue;
		}
		tested++;
		for (int m = 0; m < MCC_NMETHODS; m++)
			self[m] = mcc_match_rescore(w, m, &mp);
		ok_plain &= self[MCC_LSS] == 1.0f && self[MCC_LSA] == 1.0f && self[MCC_LGS] == 1.0f;
		for (int m = 0; m < MCC_NMETHODS; m++)
		{
			const mcc_relax_params *rp;

			if (m == MCC_LSS_R || m == MCC_LSA_R || m == MCC_LGS_R)
				rp = &mp.relax;
			else if (m == MCC_LSS_DTR || m == MCC_LSA_DTR || m == MCC_LGS_DTR)
				rp = &mp.dtr;
			else
				continue;
			ok_relax &= fabs(self[m] - pow(rp->w_r + (1 - rp->w_r) * c_same(rp), rp->n_rel)) < 1e-6;
		}
		ok_cons &= fabs(self[MCC_CONSOLIDATION] - (n < 32 ? n : 32) / 32.0) < 1e-7 &&
			fabs(cons_count() - ((n < 32 ? n : 32) - 1) / 32.0) < 1e-7;
		/* the turned copy */
		for (int m = 0; m < MCC_NMETHODS; m++)
		{
			float		s;

			mcc_match_pair(w, &va, &vt, m, &mp, &s, &err);
			worst_turn = fmax(worst_turn, fabs(s - self[m]));
		}
		free(ba);
		free(bt);
	}
	ok_turn = worst_turn < 1e-6;
	UNIT_CHECK(tested >= 20, "%d of 30 self-comparisons have a unique diagonal of ones", tested);
	UNIT_CHECK(ok_plain, "self: LSS = LSA = LGS = 1");
	UNIT_CHECK(ok_relax, "self: every relaxation gives (w + (1-w) c)^n_rel");
	UNIT_CHECK(ok_cons, "self: consolidation min(n, 32) / 32, count (min(n, 32) - 1) / 32");
	UNIT_CHECK(ok_turn, "a copy turned 90 degrees and moved scores as itself, every method (worst %.2g)",
			   worst_turn);
}

/*
 * Pairs of different and related templates: every score in [0, 1]; LSS is
 * symmetric exactly; the pairings and relaxations are symmetric except
 * where equal entries of Gamma are ranked by index (r before c on one
 * side, c before r on the other), which changes a pair taken at a
 * boundary or the order of a sum: Gamma takes few distinct values (it is
 * a function of three popcounts), so such ties are common, but they change
 * few scores and little; and a mate scores above an impostor on average
 * for every method.
 */
static void
test_templates_pairs(void)
{
	tg_rng		r = {99};
	const mcc_profile *p = mcc_profile_by_id(MCC_PROFILE_GPU2015);
	int			in_range = 1;
	int			sym_ok[MCC_NMETHODS] = {0};
	double		sym_worst[MCC_NMETHODS] = {0};
	double		mate[MCC_NMETHODS] = {0};
	double		imp[MCC_NMETHODS] = {0};
	int			n_pairs = 200;

	for (int k = 0; k < n_pairs; k++)
	{
		mcc_template_view va;
		mcc_template_view vb;
		uint8_t    *ba;
		uint8_t    *bb;
		float		ab[MCC_NMETHODS];
		float		ba_s[MCC_NMETHODS];
		mcc_error	err;

		if (!make_pair(&r, k % 2, 0.75, 4, 0.15, 6, p, &va, &vb, &ba, &bb))
			return;
		mcc_match_pair(w, &va, &vb, MCC_LSS, &mp, &ab[0], &err);
		for (int m = 0; m < MCC_NMETHODS; m++)
			ab[m] = mcc_match_rescore(w, m, &mp);
		mcc_match_pair(w, &vb, &va, MCC_LSS, &mp, &ba_s[0], &err);
		for (int m = 0; m < MCC_NMETHODS; m++)
		{
			ba_s[m] = mcc_match_rescore(w, m, &mp);
			in_range &= ab[m] >= 0.0f && ab[m] <= 1.0f && ba_s[m] >= 0.0f && ba_s[m] <= 1.0f;
			sym_ok[m] += fabs(ab[m] - ba_s[m]) <= 1e-6;
			sym_worst[m] = fmax(sym_worst[m], fabs(ab[m] - ba_s[m]));
			(k % 2 ? mate : imp)[m] += ab[m] / (n_pairs / 2);
		}
		free(ba);
		free(bb);
	}
	UNIT_CHECK(in_range, "every score of every method in [0, 1]");
	UNIT_CHECK(sym_ok[MCC_LSS] == n_pairs && sym_worst[MCC_LSS] == 0.0,
			   "lss: score(a, b) == score(b, a) on all %d pairs", n_pairs);
	for (int m = 1; m < MCC_CONSOLIDATION; m++)
		UNIT_CHECK(sym_ok[m] >= n_pairs * 9 / 10 && sym_worst[m] < 0.05,
				   "%s: symmetric within 1e-6 on %d of %d pairs, worst difference %.3g",
				   mcc_method_name(m), sym_ok[m], n_pairs, sym_worst[m]);
	for (int m = 0; m < MCC_NMETHODS; m++)
		UNIT_CHECK(mate[m] > imp[m] + 0.05, "%s: mates %.3f above impostors %.3f on average",
				   mcc_method_name(m), mate[m], imp[m]);
}

/* Errors and edge cases of the template path. */
static void
test_templates_errors(void)
{
	tg_rng		r = {5};
	mcc_minutiae ma;
	mcc_minutiae lonely = {.width = 300, .height = 400, .dpi = 500, .count = 1};
	mcc_template_view va;
	mcc_template_view vt;
	mcc_template_view vl;
	uint8_t    *ba;
	uint8_t    *bt;
	uint8_t    *bl;
	float		s = -1;
	mcc_error	err;
	mcc_match_work *fresh = malloc(mcc_match_work_size());
	mcc_match_params unprepared = mp;
	int			zero = 1;

	tg_minutiae(&r, &ma, 30, 40, 10);
	lonely.m[0] = mnt(150, 200, 1.0);
	ba = tg_build_open(&ma, mcc_profile_by_id(MCC_PROFILE_GPU2015), &va);
	bt = tg_build_open(&ma, mcc_profile_by_id(MCC_PROFILE_TPAMI2010), &vt);
	bl = tg_build_open(&lonely, mcc_profile_by_id(MCC_PROFILE_GPU2015), &vl);
	UNIT_CHECK(mcc_match_pair(w, &va, &vt, MCC_LSS_DTR, &mp, &s, &err) == MCC_ERR_VALUE &&
			   strstr(err.message, "different profiles") != NULL && s == 0.0f,
			   "different profiles: MCC_ERR_VALUE (%s)", err.message);
	for (int m = 0; m < MCC_NMETHODS; m++)
	{
		zero &= mcc_match_pair(w, &va, &vl, m, NULL, &s, &err) == MCC_OK && s == 0.0f;
		zero &= mcc_match_pair(w, &vl, &va, m, NULL, &s, &err) == MCC_OK && s == 0.0f;
	}
	UNIT_CHECK(vl.n_cyl == 0 && zero, "a template without cylinders scores 0 with every method");
	mcc_match_work_init(fresh);
	UNIT_CHECK(mcc_match_candidate(fresh, &va, MCC_LSS, NULL, &s, &err) == MCC_ERR_INTERNAL,
			   "no probe set: MCC_ERR_INTERNAL");
	unprepared.prepared = 0;
	mcc_match_set_probe(fresh, &va);
	UNIT_CHECK(mcc_match_candidate(fresh, &va, MCC_LSS, &unprepared, &s, &err) == MCC_ERR_INTERNAL &&
			   mcc_match_candidate(fresh, &va, (mcc_method) MCC_NMETHODS, NULL, &s, &err) == MCC_ERR_VALUE,
			   "unprepared parameters and unknown methods are refused");
	UNIT_CHECK(mcc_match_candidate(fresh, &va, MCC_LSS, NULL, &s, &err) == MCC_OK && s == 1.0f,
			   "NULL parameters mean the defaults");
	{
		float		bad[1] = {1.5f};
		mcc_minutia m1 = mnt(1, 1, 0);

		UNIT_CHECK(mcc_match_load(fresh, mcc_profile_by_id(1), 1, &m1, NULL, 1, &m1, NULL,
								  bad, 1, &err) == MCC_ERR_RANGE,
				   "a hand-made matrix outside [0, 1] is refused");
	}
	free(fresh);
	free(ba);
	free(bt);
	free(bl);
}

int
main(void)
{
	w = malloc(mcc_match_work_size());
	mcc_match_work_init(w);
	mcc_match_params_default(&mp);
	test_names();
	test_refine_count();
	test_assign();
	test_select();
	test_terms();
	test_hand_global();
	test_hand_relax();
	test_hand_consolidation();
	test_templates_lss();
	test_templates_self();
	test_templates_pairs();
	test_templates_errors();
	free(w);
	return unit_done();
}
