/*
 * mcc_relax_hd.h: the arithmetic of the global stage that the CPU
 * (mcc_match.c, mcc_relax.c) and the GPU refinement kernel
 * (kernels/impl/mcc_refine_body.h) share, written once as MCC_HD functions so
 * that both compile the same expression trees: the sort keys of Gamma's
 * entries, the sigmoid table lookup, the two kinds of rho terms and a rho
 * entry. Scores are bit-identical because both sides build with no fused
 * multiply-add (-ffp-contract=off here, --fmad=false for the kernel) and
 * use only correctly rounded IEEE operations.
 */
#ifndef MCC_RELAX_HD_H
#define MCC_RELAX_HD_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "mcc_hd.h"
#include "mcc_match.h"

/*
 * Sort key of entry (r, c) of Gamma: Gamma's bits (non-negative floats
 * order as their bit patterns), then smaller r, then smaller c; unique per
 * entry.
 */
MCC_HD uint64_t
mcc_entry_key(float g, int r, int c)
{
	uint32_t	bits;

	memcpy(&bits, &g, sizeof(bits));
	return ((uint64_t) bits << 16) | (uint64_t) (0xFFFF - ((r << 8) | c));
}

/* Row of a key. */
MCC_HD int
mcc_key_row(uint64_t key)
{
	return (0xFFFF - (int) (key & 0xFFFF)) >> 8;
}

/* Column of a key. */
MCC_HD int
mcc_key_col(uint64_t key)
{
	return (0xFFFF - (int) (key & 0xFFFF)) & 0xFF;
}

/* Row and column of a key. */
MCC_HD void
mcc_key_entry(uint64_t key, int *r, int *c)
{
	*r = mcc_key_row(key);
	*c = mcc_key_col(key);
}

/* Gamma of a key. */
MCC_HD float
mcc_key_gamma(uint64_t key)
{
	uint32_t	bits = (uint32_t) (key >> 16);
	float		g;

	memcpy(&g, &bits, sizeof(g));
	return g;
}

/* Linear interpolation in a sigmoid table; x >= 0. */
MCC_HD double
mcc_tab_get(const mcc_sigmoid_tab *t, double x)
{
	double		s;
	int			i;

	if (!(x < t->hi))
		return t->z[MCC_SIG_SEGS];
	s = x * t->scale;
	i = (int) s;
	return t->z[i] + (s - i) * ((double) t->z[i + 1] - (double) t->z[i]);
}

/* The angle term of a cosine: the table is indexed by sin(d / 2). */
MCC_HD double
mcc_angle_term(const mcc_sigmoid_tab *t, double cosd)
{
	double		h = 0.5 * (1.0 - cosd);

	if (h < 0.0)
		h = 0.0;
	return mcc_tab_get(t, sqrt(h));
}

/* The distance term of rho. */
MCC_HD double
mcc_dist_term(const mcc_sigmoid_tab *t, mcc_d1_norm norm, double da, double db)
{
	double		diff = fabs(da - db);
	double		sum = da + db;

	switch (norm)
	{
		case MCC_D1_SUM:
			return mcc_tab_get(t, sum > 0.0 ? diff / sum : 0.0);
		case MCC_D1_MEAN:
			return mcc_tab_get(t, sum > 0.0 ? diff / (0.5 * sum) : 0.0);
		default:
			return mcc_tab_get(t, diff);
	}
}

/*
 * rho(t, k) for k != t (mcc_relax.c explains the terms): pair t at
 * positions (axt, ayt) in A and (bxt, byt) in B with phi_t = (fxt, fyt),
 * pair k likewise; tab[0..2] the tables of d1, d2, d3.
 */
MCC_HD double
mcc_rho(const mcc_sigmoid_tab *tab, mcc_d1_norm d1,
		double axt, double ayt, double bxt, double byt, double fxt, double fyt,
		double axk, double ayk, double bxk, double byk, double fxk, double fyk)
{
	double		sax = axk - axt;
	double		say = ayk - ayt;
	double		sbx = bxk - bxt;
	double		sby = byk - byt;
	double		da = sqrt(sax * sax + say * say);
	double		db = sqrt(sbx * sbx + sby * sby);
	double		c2;
	double		re;
	double		im;
	double		c3;

	/* d2: cos of the angle of phi_t conj(phi_k) */
	c2 = fxt * fxk + fyt * fyk;
	/* d3: conj(s_a) s_b with zero-length segments read as (1, 0) */
	if (da == 0.0)
	{
		sax = 1.0;
		say = 0.0;
	}
	if (db == 0.0)
	{
		sbx = 1.0;
		sby = 0.0;
	}
	re = sax * sbx + say * sby;
	im = sax * sby - say * sbx;
	c3 = (fxt * re - fyt * im) /
		((da > 0.0 ? da : 1.0) * (db > 0.0 ? db : 1.0));
	return mcc_dist_term(&tab[0], d1, da, db) *
		mcc_angle_term(&tab[1], c2) * mcc_angle_term(&tab[2], c3);
}

#endif							/* MCC_RELAX_HD_H */
