/*
 * test_rho_split.c: rho's split into the part that rho(t, k) and rho(k, t)
 * share and each direction's part (mcc_relax_hd.h), which the GPU kernel
 * and the generic CPU kernel compute once per unordered pair, gives the bits
 * of mcc_rho() for both directions. Pairs of minutiae on a small grid, so
 * that segments of length 0 in A, in B and in both come often (the reverse
 * direction's negated conj(s_a) s_b), with directions quantized as in ISO
 * records, on the axes (cosines of about 6e-17) and continuous; both
 * parameter sets of the default parameters (d1 in pixels and over the sum)
 * and d1 over the mean; every rounding mode (the positions are integers,
 * so the segments are exact in each).
 */
#include <fenv.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "unit.h"
#include "testgen.h"
#include "mcc_detmath.h"
#include "mcc_match.h"
#include "mcc_relax_hd.h"

#define PI 3.14159265358979323846

/* One pair t or k: positions in A and B, phi = u(a) conj(u(b)). */
typedef struct rs_pair
{
	double		ax,
				ay,
				bx,
				by,
				fx,
				fy;
} rs_pair;

/* A direction: quantized to 256 values, on an axis, or continuous. */
static double
rs_angle(tg_rng *r)
{
	switch (tg_int(r, 0, 2))
	{
		case 0:
			return tg_int(r, 0, 255) * (2.0 * PI / 256.0);
		case 1:
			return tg_int(r, 0, 3) * (PI / 2.0);
		default:
			return tg_unit(r) * 2.0 * PI;
	}
}

/* A pair on a grid of 3 x 3 positions (rsetup's phi). */
static void
rs_pair_make(tg_rng *r, rs_pair *p)
{
	double		as,
				ac,
				bs,
				bc;

	p->ax = tg_int(r, 0, 2);
	p->ay = -tg_int(r, 0, 2);
	p->bx = tg_int(r, 0, 2);
	p->by = -tg_int(r, 0, 2);
	mcc_dm_sincos(rs_angle(r), &as, &ac);
	mcc_dm_sincos(rs_angle(r), &bs, &bc);
	p->fx = ac * bc + as * bs;
	p->fy = as * bc - ac * bs;
}

static int
rs_same(double x, double y)
{
	return memcmp(&x, &y, sizeof(x)) == 0;
}

static double
rs_rho(const mcc_sigmoid_tab *tab, mcc_d1_norm d1, const rs_pair *t, const rs_pair *k)
{
	return mcc_rho(tab, d1, t->ax, t->ay, t->bx, t->by, t->fx, t->fy,
				   k->ax, k->ay, k->bx, k->by, k->fx, k->fy);
}

/*
 * n random (t, k) of one table set and norm: both directions from one
 * shared part equal mcc_rho's; counts the segments of length 0.
 */
static int
rs_run(tg_rng *r, const mcc_sigmoid_tab *tab, mcc_d1_norm d1, int n, int zeros[3])
{
	int			bad = 0;

	for (int i = 0; i < n; i++)
	{
		rs_pair		t,
					k;
		mcc_rho_sym s;

		rs_pair_make(r, &t);
		rs_pair_make(r, &k);
		s = mcc_rho_shared(tab, d1, t.ax, t.ay, t.bx, t.by, t.fx, t.fy,
						   k.ax, k.ay, k.bx, k.by, k.fx, k.fy);
		zeros[(t.ax == k.ax && t.ay == k.ay) + (t.bx == k.bx && t.by == k.by)]++;
		if (!rs_same(mcc_rho_tk(tab, &s, t.fx, t.fy), rs_rho(tab, d1, &t, &k)) ||
			!rs_same(mcc_rho_kt(tab, &s, k.fx, k.fy), rs_rho(tab, d1, &k, &t)))
		{
			if (bad++ < 3)
				printf("# differs: t (%g %g %g %g) k (%g %g %g %g)\n",
					   t.ax, t.ay, t.bx, t.by, k.ax, k.ay, k.bx, k.by);
		}
	}
	return bad;
}

int
main(void)
{
	const mcc_match_params *mp = mcc_match_params_std();
	const int	modes[] = {FE_TONEAREST, FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
	const char *const mode_names[] = {"to nearest", "upward", "downward", "toward zero"};
	const mcc_d1_norm norms[] = {MCC_D1_ABS, MCC_D1_SUM, MCC_D1_MEAN};
	tg_rng		r = {20261127};

	for (int m = 0; m < 4; m++)
		for (int set = 0; set < 2; set++)
			for (int d = 0; d < 3; d++)
			{
				int			zeros[3] = {0, 0, 0};
				int			bad;

				fesetround(modes[m]);
				bad = rs_run(&r, mp->tab[set], norms[d], 20000, zeros);
				fesetround(FE_TONEAREST);
				UNIT_CHECK(bad == 0, "rho split, rounding %s, table set %d, d1 norm %d: "
						   "%d of 20000 differ (segments of length 0: none %d, one %d, both %d)",
						   mode_names[m], set, (int) norms[d], bad, zeros[0], zeros[1], zeros[2]);
				UNIT_CHECK(zeros[0] > 1000 && zeros[1] > 1000 && zeros[2] > 100,
						   "rho split, rounding %s, table set %d, d1 norm %d: every case of "
						   "segments of length 0 drawn", mode_names[m], set, (int) norms[d]);
			}
	return unit_done();
}
