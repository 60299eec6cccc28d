/*
 * mcc_relax_hd.h: the arithmetic of the global stage that the CPU
 * (mcc_match.c, mcc_relax.c) and the GPU refinement kernel
 * (kernels/impl/mcc_refine_body.h) share, written once as MCC_HD functions so
 * that both compile the same expression trees: the sort keys of Gamma's
 * entries, the sigmoid table lookup, the two kinds of rho terms and a rho
 * entry, the latter as the part that rho(t, k) and rho(k, t) share and the
 * part of each direction (a caller filling both triangles computes the
 * shared part once). Scores are bit-identical because both sides build
 * with no fused multiply-add (-ffp-contract=off here, --fmad=false for the
 * kernel) and use only correctly rounded IEEE operations.
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
 * The part of rho(t, k) that rho(k, t) shares, bit for bit. Swapping t and
 * k negates both segments s_a = a_k - a_t and s_b = b_k - b_t (exactly:
 * every caller's positions are integers, so the differences are exact in
 * any rounding mode, as are the products and sums of conj(s_a) s_b below;
 * IEEE rounding to nearest is symmetric anyway), so dA, dB, the distance
 * term and the denominator dA dB of d3 are the same bits both ways; the d2
 * cosine adds the same two products (multiplication commutes), so its
 * term is too; and conj(s_a) s_b is the same complex number when both
 * segments are negated, its negation when exactly one has length 0 (that
 * one is read as (1, 0) either way). Only d3's numerator, phi_t's
 * components times it, differs.
 * Zeros may have other signs than in mcc_rho(k, t), which cannot show:
 * operands equal but for a zero's sign give results equal but for a zero's
 * sign in every operation here (den is never 0), and the d3 term reads its
 * cosine only through 1 - cos.
 */
typedef struct mcc_rho_sym
{
	double		w;				/* the distance term times the d2 term */
	double		re;				/* conj(s_a) s_b of (t, k), zero lengths read as (1, 0) */
	double		im;
	double		den;			/* dA dB, a zero length read as 1 */
	int			flip;			/* (k, t)'s conj(s_a) s_b is -(re + i im) */
} mcc_rho_sym;

/*
 * The shared part of rho(t, k) and rho(k, t) (mcc_relax.c explains the
 * terms): pair t at positions (axt, ayt) in A and (bxt, byt) in B with
 * phi_t = (fxt, fyt), pair k likewise; tab[0..1] the tables of d1, d2.
 */
MCC_HD mcc_rho_sym
mcc_rho_shared(const mcc_sigmoid_tab *tab, mcc_d1_norm d1,
			   double axt, double ayt, double bxt, double byt, double fxt, double fyt,
			   double axk, double ayk, double bxk, double byk, double fxk, double fyk)
{
	double		sax = axk - axt;
	double		say = ayk - ayt;
	double		sbx = bxk - bxt;
	double		sby = byk - byt;
	double		da = sqrt(sax * sax + say * say);
	double		db = sqrt(sbx * sbx + sby * sby);
	double		c2 = fxt * fxk + fyt * fyk;	/* d2: cos of the angle of phi_t conj(phi_k) */
	mcc_rho_sym r;

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
	r.re = sax * sbx + say * sby;
	r.im = sax * sby - say * sbx;
	r.den = (da > 0.0 ? da : 1.0) * (db > 0.0 ? db : 1.0);
	r.flip = (da == 0.0) != (db == 0.0);
	r.w = mcc_dist_term(&tab[0], d1, da, db) * mcc_angle_term(&tab[1], c2);
	return r;
}

/*
 * The directional part: rho = w Z(d3), d3's cosine the real part of
 * phi conj(s_a) s_b over den, for phi = (fx, fy) and conj(s_a) s_b =
 * (re, im) of that direction; tab3 the table of d3.
 */
MCC_HD double
mcc_rho_dir(const mcc_sigmoid_tab *tab3, double w, double fx, double fy,
			double re, double im, double den)
{
	return w * mcc_angle_term(tab3, (fx * re - fy * im) / den);
}

/* rho(t, k) from the shared part; phi_t = (fxt, fyt); tab[2] the table of d3. */
MCC_HD double
mcc_rho_tk(const mcc_sigmoid_tab *tab, const mcc_rho_sym *s, double fxt, double fyt)
{
	return mcc_rho_dir(&tab[2], s->w, fxt, fyt, s->re, s->im, s->den);
}

/* rho(k, t) from the shared part; phi_k = (fxk, fyk). */
MCC_HD double
mcc_rho_kt(const mcc_sigmoid_tab *tab, const mcc_rho_sym *s, double fxk, double fyk)
{
	return mcc_rho_dir(&tab[2], s->w, fxk, fyk, s->flip ? -s->re : s->re,
					   s->flip ? -s->im : s->im, s->den);
}

/*
 * rho(t, k) for k != t: the shared part and t's direction, so the same
 * operations in the same order as the two parts computed for both
 * directions at once.
 */
MCC_HD double
mcc_rho(const mcc_sigmoid_tab *tab, mcc_d1_norm d1,
		double axt, double ayt, double bxt, double byt, double fxt, double fyt,
		double axk, double ayk, double bxk, double byk, double fxk, double fyk)
{
	mcc_rho_sym s = mcc_rho_shared(tab, d1, axt, ayt, bxt, byt, fxt, fyt,
								   axk, ayk, bxk, byk, fxk, fyk);

	return mcc_rho_tk(tab, &s, fxt, fyt);
}

#endif							/* MCC_RELAX_HD_H */
