/*
 * test_cylinder.c: cylinder creation (mcc-spec §3) against an independent
 * brute-force reference, a hand-derived case and geometric invariances.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "testsort.h"
#include "refcyl.h"
#include "testgen.h"
#include "mcc_cylinder.h"
#include "mcc_profile.h"

/* ---------------------------------------------------------------------
 * The reference: the formulas of mcc-spec §3 written out as plainly as
 * possible, sharing no code with src/core: no neighbour prefilter, every
 * cell of the N_S x N_S grid tested against the disc with hypot(), and a
 * hull test that builds no hull (see ref_in_dilated_hull).
 * --------------------------------------------------------------------- */

typedef struct ref_cyl
{
	int			valid;
	uint64_t	val[MCC_MAX_WORDS];
	uint64_t	mask[MCC_MAX_WORDS];
	int			pc;
	double		v[MCC_MAX_BITS];
} ref_cyl;

/*
 * Is p within omega of the convex hull of the minutiae? Without building a
 * hull: p is inside the hull iff the directions from p to the points leave
 * no angular gap wider than pi; otherwise its distance to the hull is the
 * smallest distance to a point or to a segment between two points (the
 * hull's boundary is made of such segments and every such segment lies in
 * the hull).
 */
static int
ref_in_dilated_hull(const mcc_minutiae *ms, double px, double py, double omega)
{
	double		ang[MCC_MAX_MINUTIAE];
	double		best = INFINITY;
	double		gap;

	for (int i = 0; i < ms->count; i++)
	{
		double		dx = ms->m[i].x - px;
		double		dy = ms->m[i].y - py;

		if (hypot(dx, dy) == 0)
			return 1;
		ang[i] = atan2(dy, dx);
	}
	qsort(ang, ms->count, sizeof(double), tsort_double_asc);
	gap = ang[0] + 2 * M_PI - ang[ms->count - 1];
	for (int i = 1; i < ms->count; i++)
		if (ang[i] - ang[i - 1] > gap)
			gap = ang[i] - ang[i - 1];
	if (ms->count >= 2 && gap <= M_PI)
		return 1;
	for (int i = 0; i < ms->count; i++)
		for (int j = i; j < ms->count; j++)
		{
			double		ax = ms->m[i].x, ay = ms->m[i].y;
			double		bx = ms->m[j].x, by = ms->m[j].y;
			double		l2 = (bx - ax) * (bx - ax) + (by - ay) * (by - ay);
			double		t = l2 > 0 ? ((px - ax) * (bx - ax) + (py - ay) * (by - ay)) / l2 : 0;

			t = t < 0 ? 0 : t > 1 ? 1 : t;
			best = fmin(best, hypot(ax + t * (bx - ax) - px, ay + t * (by - ay) - py));
		}
	return best <= omega;
}

/* Minutia mi's cylinder by the formulas, brute force. */
static void
ref_cylinder(const mcc_minutiae *ms, const mcc_profile *p, int mi, ref_cyl *rc)
{
	const mcc_minutia *m = &ms->m[mi];
	double		ds = 2 * p->radius / p->ns;
	double		dd = 2 * M_PI / p->nd;
	double		th = m->theta;
	int			c = 0;
	int			nvalid = 0;
	int			neighbours = 0;

	memset(rc, 0, sizeof(*rc));
	for (int t = 0; t < ms->count; t++)
		if (t != mi && hypot(ms->m[t].x - m->x, ms->m[t].y - m->y) <=
			p->radius + 3 * p->sigma_s)
			neighbours++;
	for (int i = 1; i <= p->ns; i++)
		for (int j = 1; j <= p->ns; j++)
		{
			double		a = i - (p->ns + 1) / 2.0;
			double		b = j - (p->ns + 1) / 2.0;
			double		px = m->x + ds * (a * cos(th) + b * sin(th));
			double		py = m->y + ds * (-a * sin(th) + b * cos(th));
			int			ok;

			if (hypot(px - m->x, py - m->y) > p->radius)
				continue;
			if (p->drop_cell && a == -3.5 && b == -1.5)
				continue;
			ok = ref_in_dilated_hull(ms, px, py, p->omega);
			nvalid += ok;
			for (int k = 0; k < p->nd; k++)
			{
				double		phik = -M_PI + (k + 0.5) * dd;
				double		v = 0;
				int			bit = k * p->ndisc + c;

				for (int t = 0; ok && t < ms->count; t++)
				{
					double		d = hypot(ms->m[t].x - px, ms->m[t].y - py);

					if (t == mi || d > 3 * p->sigma_s)
						continue;
					v += exp(-d * d / (2 * p->sigma_s * p->sigma_s)) /
						(p->sigma_s * sqrt(2 * M_PI)) *
						ref_gd(ref_dphi(phik, ref_dphi(th, ms->m[t].theta)), p->sigma_d, dd);
				}
				rc->v[bit] = v;
				if (ok)
					rc->mask[bit / 64] |= UINT64_C(1) << (bit % 64);
				if (ok && v >= p->mu_psi)
				{
					rc->val[bit / 64] |= UINT64_C(1) << (bit % 64);
					rc->pc++;
				}
			}
			c++;
		}
	rc->valid = neighbours >= p->min_m && nvalid >= p->min_vc * c;
}

/* ------------------------------------------------------------------ */

static mcc_cylinder cyl_a[MCC_MAX_CYL];
static mcc_cylinder cyl_b[MCC_MAX_CYL];
static ref_cyl refs[MCC_MAX_MINUTIAE];

/* The cylinder of minutia mi in a created set, or NULL. */
static const mcc_cylinder *
find_cyl(const mcc_cylinder *c, int n, int mi)
{
	for (int i = 0; i < n; i++)
		if (c[i].minutia == mi)
			return &c[i];
	return NULL;
}

/* Compare mcc_cylinders_create with the reference on one set; 1 if equal. */
static int
agrees_with_reference(const mcc_minutiae *ms, const mcc_profile *p, int *ncyl)
{
	int			n;
	int			nref = 0;
	mcc_error	err;

	if (mcc_cylinders_create(ms, p, cyl_a, &n, &err) != MCC_OK)
		return 0;
	*ncyl = n;
	for (int i = 1; i < n; i++)
		if (cyl_a[i].angle < cyl_a[i - 1].angle ||
			(cyl_a[i].angle == cyl_a[i - 1].angle && cyl_a[i].minutia <= cyl_a[i - 1].minutia))
			return 0;
	for (int mi = 0; mi < ms->count; mi++)
	{
		const mcc_cylinder *c = find_cyl(cyl_a, n, mi);

		ref_cylinder(ms, p, mi, &refs[mi]);
		nref += refs[mi].valid;
		if (!refs[mi].valid)
		{
			if (c != NULL)
				return 0;
			continue;
		}
		if (c == NULL || c->popcount != refs[mi].pc ||
			c->angle != mcc_angle_to_byte(ms->m[mi].theta))
			return 0;
		if (memcmp(c->bits, refs[mi].val, p->words * 8) != 0)
			return 0;
		if (p->masks && memcmp(c->bits + p->words, refs[mi].mask, p->words * 8) != 0)
			return 0;
	}
	return nref == n;
}

/* Rotate by 90 degrees in the y-down frame and translate: (x, y) -> (y + tx, W - 1 - x + ty). */
static void
rot90(const mcc_minutiae *in, mcc_minutiae *out, int tx, int ty)
{
	*out = *in;
	out->width = in->height + tx;
	out->height = in->width + ty;
	for (int i = 0; i < in->count; i++)
	{
		out->m[i].x = in->m[i].y + tx;
		out->m[i].y = in->width - 1 - in->m[i].x + ty;
		out->m[i].theta = mcc_angle_normalize(in->m[i].theta + M_PI / 2);
	}
}

/* Set bits in n words. */
static int
popcount_words(const uint64_t *w, int n)
{
	int			pc = 0;

	for (int i = 0; i < n; i++)
		pc += __builtin_popcountll(w[i]);
	return pc;
}

/*
 * Known answer, derived by hand (gpu2015: Delta_S = 150/8 = 18.75 px,
 * sigma_S = 6, 3 sigma_S = 18, Delta_D = 72 degrees, mu_psi = 0.005).
 *
 * m0 = (200, 200, theta 0) and m1 = (209, 209, theta 0). With theta = 0 the
 * cell centre of offset (a, b) is (200 + 18.75 a, 200 + 18.75 b). m1 lies
 * 0.375 * sqrt(2) = 0.530 px from the centre of (a, b) = (0.5, 0.5), i.e.
 * (i, j) = (5, 5); the next nearest centres, (-0.5, 0.5) and (0.5, -0.5), are
 * 18.38 px away, beyond 3 sigma_S, so that is the only cell m1 touches.
 * G_S(0.530) = exp(-0.281/72) / (6 sqrt(2 pi)) = 0.06623. The direction
 * difference is 0, so the section centred on 0 (k = 2 of 0..4, centre
 * -180 + 2.5 * 72 = 0 degrees) gets G_D(0) = erf(36 deg / (25 deg sqrt 2))
 * = 0.8501, v = 0.0563 >= 0.005: set. Sections k = 1 and 3 get
 * G_D(72 deg) = 0.0749, v = 0.00496 < 0.005: clear; k = 0, 4 get ~5e-7.
 * So m0's cylinder has exactly one bit. Its index: disc cells per row i are
 * 4, 6, 8, 8, 8, 8, 6, 4 (52); before row 5 there are 26, (5, 5) is the
 * 5th of row 5: index 30 in the disc, 29 once the dropped cell (i, j) =
 * (1, 3) is removed; bit = 2 * 51 + 29 = 131. By symmetry m1's cylinder has
 * one bit at (a, b) = (-0.5, -0.5), (i, j) = (4, 4): disc index 18 + 3 = 21,
 * kept index 20, bit 2 * 51 + 20 = 122. Both have one neighbour within
 * R + 3 sigma_S = 93 px (min_M = 1) and dozens of valid cells (the hull is
 * the segment m0-m1, dilated by 75 px; 11 needed), so both are valid.
 */
static void
test_known_answer(void)
{
	const mcc_profile *p = mcc_profile_by_id(MCC_PROFILE_GPU2015);
	mcc_minutiae ms;
	mcc_error	err;
	int			n;
	const mcc_cylinder *c0;
	const mcc_cylinder *c1;

	tg_frame(&ms, 400, 400, 500);
	ms.count = 2;
	ms.m[0].x = 200;
	ms.m[0].y = 200;
	ms.m[1].x = 209;
	ms.m[1].y = 209;
	UNIT_CHECK(mcc_cylinders_create(&ms, p, cyl_a, &n, &err) == MCC_OK && n == 2,
			   "known answer: two valid cylinders");
	c0 = find_cyl(cyl_a, n, 0);
	c1 = find_cyl(cyl_a, n, 1);
	UNIT_CHECK(c0 && c0->popcount == 1 && (c0->bits[131 / 64] >> (131 % 64) & 1),
			   "known answer: m0 has exactly bit 131");
	UNIT_CHECK(c1 && c1->popcount == 1 && (c1->bits[122 / 64] >> (122 % 64) & 1),
			   "known answer: m1 has exactly bit 122");
}

/* Disc cell counts and the 255-bit layout. */
static void
test_cells(void)
{
	for (int id = MCC_PROFILE_GPU2015; id <= MCC_PROFILE_TPAMI2010; id++)
	{
		const mcc_profile *p = mcc_profile_by_id(id);
		double		a[MCC_MAX_BITS];
		double		b[MCC_MAX_BITS];
		int			n = mcc_cylinder_cells(p, a, b);
		int			disc = 0;
		int			k = 0;
		int			order_ok = 1;
		int			dropped_absent = 1;

		/* count the disc independently: cell centres within R */
		for (int i = 1; i <= p->ns; i++)
			for (int j = 1; j <= p->ns; j++)
			{
				double		ca = i - (p->ns + 1) / 2.0;
				double		cb = j - (p->ns + 1) / 2.0;

				if (hypot(ca, cb) * 2 * p->radius / p->ns > p->radius)
					continue;
				disc++;
				if (p->drop_cell && ca == -3.5 && cb == -1.5)
					continue;
				if (k >= n || a[k] != ca || b[k] != cb)
					order_ok = 0;
				k++;
			}
		for (int i = 0; i < n; i++)
			if (a[i] == -3.5 && b[i] == -1.5)
				dropped_absent = 0;
		UNIT_CHECK(disc == (p->ns == 8 ? 52 : 208), "%s: %d disc cells per layer", p->name, disc);
		UNIT_CHECK(n == p->ndisc && n == disc - (p->drop_cell ? 1 : 0) &&
				   p->nbits == n * p->nd, "%s: %d kept cells, %d bits", p->name, n, p->nbits);
		UNIT_CHECK(order_ok && k == n, "%s: kept cells in (i, j) order", p->name);
		UNIT_CHECK(!p->drop_cell || dropped_absent, "%s: cell (-3.5, -1.5) not kept", p->name);
	}
}

/* G_D sums to ~1 over the sections; spot values of mcc-spec §3.2. */
static void
test_gd(void)
{
	const mcc_profile *g = mcc_profile_by_id(MCC_PROFILE_GPU2015);
	const mcc_profile *t = mcc_profile_by_id(MCC_PROFILE_TPAMI2010);
	double		worst[2] = {0, 0};

	for (int id = 0; id < 2; id++)
	{
		const mcc_profile *p = id ? t : g;

		for (int s = 0; s < 1000; s++)
		{
			double		alpha = -M_PI + s * 2 * M_PI / 1000;
			double		sum = 0;

			for (int k = 0; k < p->nd; k++)
				sum += mcc_cylinder_gd(p, ref_dphi(-M_PI + (k + 0.5) * 2 * M_PI / p->nd, alpha));
			worst[id] = fmax(worst[id], fabs(sum - 1));
		}
	}
	UNIT_CHECK(worst[0] < 1e-6, "gpu2015: sum over sections of G_D is 1 (off by %.2g)", worst[0]);
	UNIT_CHECK(worst[1] < 1e-4, "tpami2010: sum over sections of G_D is 1 (off by %.2g)", worst[1]);
	UNIT_CHECK(fabs(mcc_cylinder_gd(g, 0) - 0.850) < 0.001 &&
			   fabs(mcc_cylinder_gd(g, 2 * M_PI / 5) - 0.075) < 0.001,
			   "gpu2015: G_D(0) = 0.850, one section away 0.075");
	UNIT_CHECK(fabs(mcc_cylinder_gd(t, 0) - 0.547) < 0.001 &&
			   fabs(mcc_cylinder_gd(t, M_PI / 3) - 0.214) < 0.001 &&
			   fabs(mcc_cylinder_gd(t, 2 * M_PI / 3) - 0.012) < 0.001,
			   "tpami2010: G_D = 0.547, 0.214, 0.012 at 0, 1, 2 sections");
}

/* Isolated minutiae give no cylinder; the min_M radius is R + 3 sigma_S inclusive. */
static void
test_isolated(void)
{
	const mcc_profile *p = mcc_profile_by_id(MCC_PROFILE_GPU2015);
	mcc_minutiae ms;
	mcc_error	err;
	int			n = -1;

	tg_frame(&ms, 400, 400, 500);
	ms.count = 1;
	ms.m[0].x = 100;
	ms.m[0].y = 100;
	UNIT_CHECK(mcc_cylinders_create(&ms, p, cyl_a, &n, &err) == MCC_OK && n == 0,
			   "a lone minutia has no cylinder");
	ms.count = 2;
	ms.m[1].x = 194;			/* 94 px: beyond R + 3 sigma_S = 93 */
	ms.m[1].y = 100;
	UNIT_CHECK(mcc_cylinders_create(&ms, p, cyl_a, &n, &err) == MCC_OK && n == 0,
			   "two minutiae 94 px apart: no cylinder");
	ms.m[1].x = 193;			/* exactly 93 px */
	UNIT_CHECK(mcc_cylinders_create(&ms, p, cyl_a, &n, &err) == MCC_OK && n == 2,
			   "two minutiae 93 px apart: two cylinders");
	p = mcc_profile_by_id(MCC_PROFILE_TPAMI2010);
	ms.m[1].x = 150;
	UNIT_CHECK(mcc_cylinders_create(&ms, p, cyl_a, &n, &err) == MCC_OK && n == 0,
			   "tpami2010 (min_M = 2): a pair has no cylinder");
}

/* Bit-for-bit agreement with the reference on random and degenerate sets. */
static void
test_reference(void)
{
	tg_rng		r = {42};
	mcc_minutiae ms;

	for (int id = MCC_PROFILE_GPU2015; id <= MCC_PROFILE_TPAMI2010; id++)
	{
		const mcc_profile *p = mcc_profile_by_id(id);
		int			sets = id == MCC_PROFILE_GPU2015 ? 40 : 12;
		int			ok = 0;
		int			total = 0;
		int			bit255 = 0;
		int			n;

		for (int s = 0; s < sets; s++)
		{
			/* spacing 0 allows neighbours at every distance, duplicates included */
			tg_minutiae(&r, &ms, 20, 60, s % 4 == 0 ? 0.0 : 8.0);
			ok += agrees_with_reference(&ms, p, &n);
			total += n;
			for (int c = 0; c < n && p->nbits == 255; c++)
				bit255 |= (int) (cyl_a[c].bits[3] >> 63);
		}
		UNIT_CHECK(ok == sets, "%s: %d of %d random sets (%d cylinders) equal the brute-force reference",
				   p->name, ok, sets, total);
		if (p->nbits == 255)
			UNIT_CHECK(!bit255, "%s: bit 255 is never set", p->name);

		/* degenerate hulls: collinear points, two points, one repeated point */
		for (int shape = 0; shape < 3; shape++)
		{
			tg_frame(&ms, 300, 400, 500);
			ms.count = shape == 1 ? 2 : 6;
			for (int i = 0; i < ms.count; i++)
			{
				ms.m[i].x = shape == 2 ? 150 : 60 + 25 * i;
				ms.m[i].y = shape == 2 ? 200 : 100 + 20 * i;
				ms.m[i].theta = (float) (0.9 * i);
			}
			ok = agrees_with_reference(&ms, p, &n);
			UNIT_CHECK(ok, "%s: degenerate hull %d equals the reference (%d cylinders)",
					   p->name, shape, n);
		}
	}
}

/*
 * Rotations by 90, 180, 270 degrees plus an integer translation map every
 * minutia and cell centre exactly, so the bits must be identical. The only
 * tolerated difference is a value within 1e-4 relative of mu_psi: the new
 * theta is theta + pi/2 rounded to float, which moves values by ~1e-6.
 */
static void
test_right_angles(void)
{
	tg_rng		r = {7};
	mcc_minutiae ms;
	mcc_minutiae rot;
	mcc_minutiae tmp;

	for (int id = MCC_PROFILE_GPU2015; id <= MCC_PROFILE_TPAMI2010; id++)
	{
		const mcc_profile *p = mcc_profile_by_id(id);

		for (int quarter = 1; quarter <= 3; quarter++)
		{
			int			sets = 30;
			int			same_sets = 0;
			int			near_flips = 0;
			int			cyls = 0;

			for (int s = 0; s < sets; s++)
			{
				int			na;
				int			nb;
				int			same = 1;
				mcc_error	err;

				tg_minutiae(&r, &ms, 20, 60, 8.0);
				rot = ms;
				for (int q = 0; q < quarter; q++)
				{
					tmp = rot;
					rot90(&tmp, &rot, tg_int(&r, 0, 40), tg_int(&r, 0, 40));
				}
				mcc_cylinders_create(&ms, p, cyl_a, &na, &err);
				mcc_cylinders_create(&rot, p, cyl_b, &nb, &err);
				same = na == nb;
				for (int c = 0; c < na && same; c++)
				{
					const mcc_cylinder *o = find_cyl(cyl_b, nb, cyl_a[c].minutia);
					int			words = mcc_profile_cyl_words(p);

					if (o == NULL)
					{
						same = 0;
						break;
					}
					cyls++;
					for (int b = 0; b < words * 64; b++)
					{
						double		vals[MCC_MAX_BITS];
						uint8_t		valid[MCC_MAX_BITS];

						if (((cyl_a[c].bits[b / 64] ^ o->bits[b / 64]) >> (b % 64) & 1) == 0)
							continue;
						if (b >= p->nbits ||
							!mcc_cylinder_values(&ms, p, cyl_a[c].minutia, vals, valid) ||
							fabs(vals[b] - p->mu_psi) > 1e-4 * p->mu_psi)
						{
							same = 0;
							break;
						}
						near_flips++;
					}
				}
				same_sets += same;
			}
			UNIT_CHECK(same_sets == sets,
					   "%s: rotation by %d degrees + translation keeps the bits (%d of %d sets, %d cylinders, %d flips at the threshold)",
					   p->name, 90 * quarter, same_sets, sets, cyls, near_flips);
		}
	}
}

/*
 * An arbitrary rotation rounds the coordinates to pixels (up to 0.7 px of
 * displacement), so bits near the edge of a contribution change; most
 * survive.
 */
static void
test_any_angle(void)
{
	tg_rng		r = {99};
	const mcc_profile *p = mcc_profile_by_id(MCC_PROFILE_GPU2015);
	mcc_minutiae ms;
	mcc_minutiae rot;
	long		kept = 0;
	long		total = 0;
	int			cyl_kept = 0;
	int			cyl_total = 0;

	for (int s = 0; s < 40; s++)
	{
		double		alpha = tg_unit(&r) * 2 * M_PI;
		int			na;
		int			nb;
		mcc_error	err;

		tg_minutiae(&r, &ms, 30, 60, 8.0);
		rot = ms;
		rot.width = rot.height = 600;
		for (int i = 0; i < ms.count; i++)
		{
			/* about the image centre, in the y-down frame: u(theta) turns by alpha */
			double		dx = ms.m[i].x - 150.0;
			double		dy = ms.m[i].y - 200.0;

			rot.m[i].x = (int16_t) lround(300 + dx * cos(alpha) + dy * sin(alpha));
			rot.m[i].y = (int16_t) lround(300 - dx * sin(alpha) + dy * cos(alpha));
			rot.m[i].theta = mcc_angle_normalize(ms.m[i].theta + alpha);
		}
		mcc_cylinders_create(&ms, p, cyl_a, &na, &err);
		mcc_cylinders_create(&rot, p, cyl_b, &nb, &err);
		cyl_total += na;
		for (int c = 0; c < na; c++)
		{
			const mcc_cylinder *o = find_cyl(cyl_b, nb, cyl_a[c].minutia);
			uint64_t	both[MCC_MAX_WORDS];

			if (o == NULL)
				continue;
			cyl_kept++;
			for (int w = 0; w < p->words; w++)
				both[w] = cyl_a[c].bits[w] & o->bits[w];
			kept += popcount_words(both, p->words);
			total += cyl_a[c].popcount;
		}
	}
	printf("# arbitrary rotation: %ld of %ld set bits kept, %d of %d cylinders\n",
				kept, total, cyl_kept, cyl_total);
	UNIT_CHECK(cyl_kept == cyl_total, "arbitrary rotation keeps every cylinder valid (%d)", cyl_total);
	UNIT_CHECK(total > 0 && kept >= 0.9 * total,
			   "arbitrary rotation keeps most set bits (%.1f%%)", 100.0 * kept / total);
}

/* Run every cylinder test. */
int
main(void)
{
	test_cells();
	test_gd();
	test_known_answer();
	test_isolated();
	test_reference();
	test_right_angles();
	test_any_angle();
	return unit_done();
}
