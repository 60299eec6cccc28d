/*
 * test_lss.c: the LSS arithmetic of mcc_lss.h: tables, edge cases, and the
 * fixed-point score against the floating-point reference of paper 000.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "testgen.h"
#include "mcc_lss.h"

static uint64_t words_a[MCC_MAX_CYL][2 * MCC_MAX_WORDS];
static uint64_t words_b[MCC_MAX_CYL][2 * MCC_MAX_WORDS];
static uint8_t ang_a[MCC_MAX_CYL];
static uint8_t ang_b[MCC_MAX_CYL];

/* Open a blob into v; 1 on success. */
static int
open_blob(const uint8_t *b, size_t size, mcc_template_view *v)
{
	mcc_error	err;

	return mcc_template_open(b, size, v, &err) == MCC_OK;
}

/* n_p of paper 000 eq. 2 against the table of mcc-spec §5.1. */
static void
test_np(void)
{
	const mcc_profile *g = mcc_profile_by_id(MCC_PROFILE_GPU2015);
	const mcc_profile *t = mcc_profile_by_id(MCC_PROFILE_TPAMI2010);
	static const int gv[][2] = {{10, 11}, {25, 11}, {28, 12}, {30, 12}, {32, 12}, {35, 13}, {40, 13}};
	static const int tv[][2] = {{10, 4}, {15, 5}, {20, 8}, {25, 11}, {30, 12}};
	int			ok = 1;

	for (size_t i = 0; i < sizeof(gv) / sizeof(gv[0]); i++)
		UNIT_CHECK(mcc_lss_np(g, gv[i][0]) == gv[i][1], "gpu2015: n_p(%d) = %d (got %d)",
				   gv[i][0], gv[i][1], mcc_lss_np(g, gv[i][0]));
	for (size_t i = 0; i < sizeof(tv) / sizeof(tv[0]); i++)
		UNIT_CHECK(mcc_lss_np(t, tv[i][0]) == tv[i][1], "tpami2010: n_p(%d) = %d (got %d)",
				   tv[i][0], tv[i][1], mcc_lss_np(t, tv[i][0]));
	for (int v = 40; v <= MCC_MAX_CYL; v++)
		ok &= mcc_lss_np(g, v) == 13 && (v < 30 || mcc_lss_np(t, v) == 12);
	UNIT_CHECK(ok, "n_p stays at max_np up to MaxC");
	ok = 1;
	for (int v = 1; v <= MCC_MAX_CYL; v++)
		ok &= mcc_lss_np(g, v) >= mcc_lss_np(g, v - 1) && mcc_lss_np(t, v) >= mcc_lss_np(t, v - 1);
	UNIT_CHECK(ok && mcc_lss_np(g, 0) == 11 && mcc_lss_np(t, 0) == 4, "n_p is monotone from min_np");
}

/* LUT_sqrt, rcp and the distance step. */
static void
test_fixed_point(void)
{
	int			ok = 1;
	int			floor_ok = 1;

	for (int p = 0; p <= MCC_MAX_BITS; p++)
		ok &= fabs(mcc_lss_sqrt_fx(p) - sqrt(p) * 4096.0) <= 0.5;
	UNIT_CHECK(ok && mcc_lss_sqrt_fx(0) == 0 && mcc_lss_sqrt_fx(1) == 4096 &&
			   mcc_lss_sqrt_fx(2) == 5793 && mcc_lss_sqrt_fx(1248) == 144700,
			   "LUT_sqrt = round(sqrt(p) 2^12) for p = 0..1248");
	UNIT_CHECK(mcc_lss_rcp(0) == 0, "rcp(0) = 0");
	UNIT_CHECK(mcc_lss_rcp(4096) == (1u << 26) && mcc_lss_rcp(4097) == 67092483u,
			   "rcp(4096) = 2^26, rcp(4097) = floor(2^38 / 4097)");
	UNIT_CHECK(mcc_lss_rcp(2 * 144700) == 949819u, "rcp of the largest den fits");
	/* d is floor(64 sx / den) or one less (the floor inside rcp), never more */
	for (int a = 0; a <= 255; a++)
		for (int b = 0; b <= 255; b += 3)
			for (int x = 0; x <= a + b && x <= 255; x += 7)
			{
				uint32_t	den = mcc_lss_sqrt_fx(a) + mcc_lss_sqrt_fx(b);
				uint64_t	exact;
				uint32_t	d;

				if (den == 0)
					continue;
				exact = (uint64_t) 64 * mcc_lss_sqrt_fx(x) / den;
				d = mcc_lss_dist(mcc_lss_sqrt_fx(x), mcc_lss_rcp(den));
				floor_ok &= d == exact || d + 1 == exact;
			}
	UNIT_CHECK(floor_ok, "d is floor(w sqrt_xor / den) or one less");
	UNIT_CHECK(mcc_lss_gate(0, 96, 96) && !mcc_lss_gate(0, 97, 96) && mcc_lss_gate(250, 90, 96) &&
			   !mcc_lss_gate(250, 91, 96) && mcc_lss_gate(128, 0, 128) && !mcc_lss_gate(128, 0, 127),
			   "angular gate wraps modulo 256");
}

/* mcc_lss_finish on hand-made histograms (paper 000, Fig. 3, lines 11-18). */
static void
test_finish(void)
{
	uint32_t	b[MCC_W] = {0};

	UNIT_CHECK(mcc_lss_finish(b, 12) == 0.0f, "no votes: score 0");
	b[0] = 12;
	UNIT_CHECK(mcc_lss_finish(b, 12) == 1.0f, "n_p votes at distance 0: score 1");
	memset(b, 0, sizeof(b));
	b[0] = 2;
	b[10] = 5;
	b[40] = 9;
	/* 2 x 0 + 5 x 10 + 5 x 40 = 250 of 12 x 64 = 768 */
	UNIT_CHECK(mcc_lss_finish(b, 12) == (float) (768 - 250) / 768.0f,
			   "2 votes at 0, 5 at 10, then 5 of 9 at 40: (768 - 250) / 768");
	memset(b, 0, sizeof(b));
	b[63] = 3;
	/* 3 x 63 + 8 missing x 64 = 701 of 11 x 64 = 704 */
	UNIT_CHECK(mcc_lss_finish(b, 11) == 3.0f / 704.0f, "missing votes count w: 3 / 704");
}

/*
 * Edge cases of one-cylinder templates: den = 0 (both empty) gives no vote,
 * and d = w (one empty, the other's norm a power of two) is dropped too.
 */
/*
 * A template of one cylinder of p whose first word is bits (the others 0),
 * at angle a, into *blob (free it) and opened into v; 1 if it opens.
 */
static int
one_cylinder(const mcc_profile *p, uint64_t bits, uint8_t a, uint8_t **blob, mcc_template_view *v)
{
	uint64_t	w[1][2 * MCC_MAX_WORDS] = {{bits}};
	size_t		size;

	free(*blob);
	*blob = tg_blob(p, 1, (const uint64_t (*)[2 * MCC_MAX_WORDS]) w, &a, &size);
	return open_blob(*blob, size, v);
}

static void
test_edges(void)
{
	const mcc_profile *p = mcc_profile_by_id(MCC_PROFILE_GPU2015);
	uint8_t    *b1 = NULL;
	uint8_t    *b2 = NULL;
	mcc_template_view v1;
	mcc_template_view v2;
	mcc_error	err;
	float		sc = -1;
	int			np = mcc_lss_np(p, 1);

	UNIT_CHECK(one_cylinder(p, 0, 10, &b1, &v1) && one_cylinder(p, 0, 10, &b2, &v2), "hand-made blobs open");
	UNIT_CHECK(mcc_lss_pair(&v1, &v2, &sc, &err) == MCC_OK && sc == 0.0f,
			   "two empty cylinders (den 0): no vote, score 0");
	one_cylinder(p, 0xF, 10, &b2, &v2);	/* popcount 4, eta = 8192: d = 64 */
	UNIT_CHECK(mcc_lss_pair(&v1, &v2, &sc, &err) == MCC_OK && sc == 0.0f,
			   "empty vs popcount 4: d = w is dropped, score 0");
	one_cylinder(p, 0x7, 10, &b2, &v2);	/* popcount 3, eta = 7094: d = 63 */
	UNIT_CHECK(mcc_lss_pair(&v1, &v2, &sc, &err) == MCC_OK && sc == 1.0f / (np * 64.0f),
			   "empty vs popcount 3: one vote at d = 63, score 1 / (n_p w)");
	UNIT_CHECK(mcc_lss_pair(&v2, &v2, &sc, &err) == MCC_OK && sc == 1.0f / np,
			   "one cylinder against itself: one vote at 0, score 1 / n_p");
	one_cylinder(p, 0x7, 10 + 97, &b2, &v2);	/* outside the gate of 96 */
	one_cylinder(p, 0x7, 10, &b1, &v1);
	UNIT_CHECK(mcc_lss_pair(&v1, &v2, &sc, &err) == MCC_OK && sc == 0.0f,
			   "equal cylinders 97 angle units apart do not vote");
	free(b1);
	free(b2);
}

/* Random cylinder templates: n cylinders of mixed densities. */
static void
random_cylinders(tg_rng *r, const mcc_profile *p, int n, uint64_t (*w)[2 * MCC_MAX_WORDS],
				 uint8_t *ang)
{
	for (int i = 0; i < n; i++)
	{
		double		dens = tg_int(r, 0, 9) == 0 ? 0.0 : tg_unit(r) * 0.3;

		tg_cylinder_words(r, p, dens, 0.6 + 0.4 * tg_unit(r), w[i]);
		ang[i] = (uint8_t) tg_int(r, 0, 255);
	}
}

/*
 * The fixed-point score against the double-precision reference: each vote
 * is floor(64 (1 - s)) up to the rounding of LUT_sqrt and rcp, so the mean
 * of the n_p best differs from the reference by less than 1/64 (plus far
 * less than 1e-6 of rounding), and the two pick the same n_p up to ties.
 * Also symmetry, range, and 1:1 = prepared probe.
 */
static void
test_against_float(void)
{
	tg_rng		r = {2024};

	for (int id = MCC_PROFILE_GPU2015; id <= MCC_PROFILE_TPAMI2010; id++)
	{
		const mcc_profile *p = mcc_profile_by_id(id);
		mcc_probe  *qa = malloc(mcc_probe_size());
		mcc_probe  *qb = malloc(mcc_probe_size());
		int			pairs = id == MCC_PROFILE_GPU2015 ? 600 : 200;
		int			within = 0;
		int			symmetric = 0;
		int			in_range = 0;
		int			probe_eq = 0;
		int			nonzero = 0;
		double		worst = 0;

		for (int k = 0; k < pairs; k++)
		{
			uint8_t    *ba;
			uint8_t    *bb;
			size_t		sa;
			size_t		sb;
			mcc_template_view va;
			mcc_template_view vb;
			mcc_error	err;
			float		ab = -1;
			float		ba_ = -2;
			double		ref;

			if (k % 2 == 0)
			{
				/* real cylinders of a finger and a noisy impression of it */
				mcc_minutiae ms;
				mcc_minutiae imp;

				tg_minutiae(&r, &ms, 20, 60, 8.0);
				tg_impression(&r, &ms, &imp, 0.8, 3, 0.15, tg_int(&r, 0, 8));
				ba = tg_build_open(&ms, p, &va);
				bb = tg_build_open(&imp, p, &vb);
				if (ba == NULL || bb == NULL)
				{
					free(ba);
					free(bb);
					k--;
					continue;
				}
			}
			else
			{
				/* arbitrary cylinders, some empty, some tiny */
				int			na = tg_int(&r, 1, 45);
				int			nb = tg_int(&r, 1, 45);

				random_cylinders(&r, p, na, words_a, ang_a);
				random_cylinders(&r, p, nb, words_b, ang_b);
				if (k % 10 == 1)
				{
					/* b shares some cylinders of a, with a few bits changed */
					for (int i = 0; i < nb && i < na; i += 2)
					{
						memcpy(words_b[i], words_a[i], sizeof(words_b[i]));
						words_b[i][0] ^= tg_next(&r) & tg_next(&r) & tg_next(&r);
						if (p->masks)
							words_b[i][0] &= words_b[i][p->words];
						ang_b[i] = (uint8_t) (ang_a[i] + tg_int(&r, -5, 5));
					}
				}
				ba = tg_blob(p, na, (const uint64_t (*)[2 * MCC_MAX_WORDS]) words_a, ang_a, &sa);
				bb = tg_blob(p, nb, (const uint64_t (*)[2 * MCC_MAX_WORDS]) words_b, ang_b, &sb);
				if (!open_blob(ba, sa, &va) || !open_blob(bb, sb, &vb))
				{
					UNIT_CHECK(0, "random blob opens");
					break;
				}
			}
			mcc_lss_pair(&va, &vb, &ab, &err);
			mcc_lss_pair(&vb, &va, &ba_, &err);
			ref = mcc_lss_float(&va, &vb);
			worst = fmax(worst, fabs(ab - ref));
			within += fabs(ab - ref) <= 1.0 / 64 + 1e-6;
			symmetric += ab == ba_;
			in_range += ab >= 0.0f && ab <= 1.0f;
			nonzero += ab > 0.5f;
			mcc_probe_init(qa, &va);
			mcc_probe_init(qb, &vb);
			probe_eq += mcc_lss_score(qa, &vb) == ab && mcc_lss_score(qb, &va) == ab;
			free(ba);
			free(bb);
		}
		UNIT_CHECK(within == pairs, "%s: |fixed - float| <= 1/64 + 1e-6 on %d of %d pairs (worst %.6f)",
				   p->name, within, pairs, worst);
		UNIT_CHECK(symmetric == pairs, "%s: score(a, b) == score(b, a) on %d of %d pairs",
				   p->name, symmetric, pairs);
		UNIT_CHECK(in_range == pairs, "%s: scores within [0, 1]", p->name);
		UNIT_CHECK(probe_eq == pairs, "%s: mcc_lss_score with a prepared probe equals mcc_lss_pair (%d of %d)",
				   p->name, probe_eq, pairs);
		UNIT_CHECK(nonzero > pairs / 10, "%s: the pairs include high scores (%d above 0.5)",
				   p->name, nonzero);
		free(qa);
		free(qb);
	}
}

/* A template against itself scores 1 when n_p of its cylinders have bits. */
static void
test_self(void)
{
	tg_rng		r = {77};

	for (int id = MCC_PROFILE_GPU2015; id <= MCC_PROFILE_TPAMI2010; id++)
	{
		const mcc_profile *p = mcc_profile_by_id(id);
		int			ones = 0;
		int			tried = 0;

		for (int k = 0; k < 30; k++)
		{
			mcc_minutiae ms;
			mcc_template_view v;
			mcc_error	err;
			uint8_t    *b;
			float		s = -1;
			int			filled = 0;

			tg_minutiae(&r, &ms, 30, 60, 8.0);
			b = tg_build_open(&ms, p, &v);
			if (b == NULL)
				continue;
			for (int c = 0; c < v.n_cyl; c++)
				filled += mcc_template_cyl_popcount(&v, c) > 0;
			if (filled >= mcc_lss_np(p, v.n_cyl))
			{
				tried++;
				mcc_lss_pair(&v, &v, &s, &err);
				ones += s == 1.0f;
			}
			free(b);
		}
		UNIT_CHECK(tried > 20 && ones == tried, "%s: self-score is 1 (%d of %d)", p->name, ones, tried);
	}
}

/* Templates of different profiles are not compared. */
static void
test_profile_mismatch(void)
{
	tg_rng		r = {3};
	mcc_minutiae ms;
	mcc_template_view va;
	mcc_template_view vb;
	mcc_error	err;
	float		s = -1;
	uint8_t    *a;
	uint8_t    *b;

	tg_minutiae(&r, &ms, 40, 40, 8.0);
	a = tg_build_open(&ms, mcc_profile_by_id(MCC_PROFILE_GPU2015), &va);
	b = tg_build_open(&ms, mcc_profile_by_id(MCC_PROFILE_TPAMI2010), &vb);
	UNIT_CHECK(a && b && mcc_lss_pair(&va, &vb, &s, &err) == MCC_ERR_VALUE,
			   "different profiles refused: %s", err.message);
	free(a);
	free(b);
}

/* Run every LSS test. */
int
main(void)
{
	mcc_lss_init();
	mcc_lss_init();				/* idempotent */
	test_np();
	test_fixed_point();
	test_finish();
	test_edges();
	test_against_float();
	test_self();
	test_profile_mismatch();
	return unit_done();
}
