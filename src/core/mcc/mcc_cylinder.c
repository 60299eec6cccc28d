/*
 * mcc_cylinder.c: Minutia Cylinder-Code creation (mcc-spec §3).
 *
 * Frame: y down, theta counter-clockwise on screen (mcc_minutiae.h). The
 * cell centres use the TPAMI rotation written for that frame, so the local
 * i-axis of a cylinder points along the minutia's direction.
 *
 * Per cylinder of minutia m:
 *   - neighbours: every other minutia within R + 3 sigma_S of m. That radius
 *     is a safe prefilter for the per-cell 3 sigma_S test because every disc
 *     cell centre lies strictly inside R (no half-integer (a, b) has
 *     a^2 + b^2 = (N_S/2)^2: an odd square plus an odd square is 2 mod 8);
 *     test_cylinder.c checks it against a brute-force reference;
 *   - for each kept disc cell (i, j) and section k, the value
 *     v = sum over neighbours within 3 sigma_S of the cell centre of
 *     G_S(distance) * G_D(angle difference to the section's centre);
 *     bit = v >= mu_psi; a cell outside the omega-dilated convex hull of all
 *     minutiae is invalid: value bit 0 and mask bit 0;
 *   - the cylinder is kept if enough disc cells are valid and m has at least
 *     min_M neighbours.
 * Everything runs in double precision; the result is sorted by byte angle
 * then minutia index, the order the template stores.
 */
#include "mcc_cylinder.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_clamp.h"
#include "mcc_cmp.h"
#define PI 3.14159265358979323846
#define MAX_ND 8				/* most sections a profile may have */

/* One kept disc cell: its offsets from the minutia in units of Delta_S. */
typedef struct disc_cell
{
	double		a;
	double		b;
} disc_cell;

/* Convex hull of the minutiae positions, counter-clockwise, no collinear points. */
typedef struct hull
{
	int			n;				/* 1: a point, 2: a segment, >= 3: a polygon */
	double		x[MCC_MAX_MINUTIAE + 1];
	double		y[MCC_MAX_MINUTIAE + 1];
} hull;

/* Difference of two angles wrapped into [-pi, pi) (mcc-spec §1). */
static double
angle_diff(double alpha, double beta)
{
	double		d = alpha - beta;

	if (d < -PI)
		d += 2.0 * PI;
	else if (d >= PI)
		d -= 2.0 * PI;
	return d;
}

/*
 * The kept disc cells of profile p in (i, j) order, i outer: returns their
 * number. A cell is in the disc if its centre lies within R of the minutia,
 * i.e. (2i - N_S - 1)^2 + (2j - N_S - 1)^2 <= N_S^2 in exact integers.
 */
static int
disc_cells(const mcc_profile *p, disc_cell *cells)
{
	int			n = 0;

	for (int i = 1; i <= p->ns; i++)
	{
		for (int j = 1; j <= p->ns; j++)
		{
			int			ta = 2 * i - p->ns - 1;	/* 2a */
			int			tb = 2 * j - p->ns - 1;	/* 2b */

			if (ta * ta + tb * tb > p->ns * p->ns)
				continue;
			/* the dropped cell of the 255-bit layout: (a, b) = (-3.5, -1.5) */
			if (p->drop_cell && ta == -7 && tb == -3)
				continue;
			cells[n].a = ta / 2.0;
			cells[n].b = tb / 2.0;
			n++;
		}
	}
	return n;
}

/* Order points by x then y, for the monotone chain. */
static int
cmp_point(const void *pa, const void *pb)
{
	const int  *a = pa;
	const int  *b = pb;
	int			c = MCC_CMP(a[0], b[0]);

	return MCC_CMP_THEN(c, a[1], b[1]);
}

/* Cross product of (b - o) and (c - o) in exact integer arithmetic. */
static long long
cross3(const int *o, const int *b, const int *c)
{
	return (long long) (b[0] - o[0]) * (c[1] - o[1]) -
		(long long) (b[1] - o[1]) * (c[0] - o[0]);
}

/*
 * Convex hull of the minutiae (Andrew's monotone chain, exact on the integer
 * coordinates). Collinear points are dropped, so an all-collinear set gives
 * its two extreme points and a set of identical points gives one.
 */
static void
hull_build(const mcc_minutiae *ms, hull *h)
{
	int			pts[MCC_MAX_MINUTIAE][2];
	int			out[2 * MCC_MAX_MINUTIAE + 1][2];
	int			n = 0;
	int			k = 0;

	for (int i = 0; i < ms->count; i++)
	{
		pts[i][0] = ms->m[i].x;
		pts[i][1] = ms->m[i].y;
	}
	qsort(pts, ms->count, sizeof(pts[0]), cmp_point);
	/* drop duplicates */
	for (int i = 0; i < ms->count; i++)
		if (n == 0 || cmp_point(pts[n - 1], pts[i]) != 0)
		{
			pts[n][0] = pts[i][0];
			pts[n][1] = pts[i][1];
			n++;
		}
	if (n <= 2)
	{
		for (int i = 0; i < n; i++)
		{
			h->x[i] = pts[i][0];
			h->y[i] = pts[i][1];
		}
		h->n = n;
		return;
	}
	/* lower chain, then upper chain */
	for (int i = 0; i < n; i++)
	{
		while (k >= 2 && cross3(out[k - 2], out[k - 1], pts[i]) <= 0)
			k--;
		out[k][0] = pts[i][0];
		out[k][1] = pts[i][1];
		k++;
	}
	for (int i = n - 2, lo = k + 1; i >= 0; i--)
	{
		while (k >= lo && cross3(out[k - 2], out[k - 1], pts[i]) <= 0)
			k--;
		out[k][0] = pts[i][0];
		out[k][1] = pts[i][1];
		k++;
	}
	k--;						/* the last point repeats the first */
	for (int i = 0; i < k; i++)
	{
		h->x[i] = out[i][0];
		h->y[i] = out[i][1];
	}
	h->n = k;					/* 2 when every point is collinear */
}

/* Squared distance from (px, py) to the segment from (ax, ay) to (bx, by). */
static double
seg_dist2(double px, double py, double ax, double ay, double bx, double by)
{
	double		dx = bx - ax;
	double		dy = by - ay;
	double		len2 = dx * dx + dy * dy;
	double		t = 0.0;
	double		ex;
	double		ey;

	if (len2 > 0.0)
	{
		t = ((px - ax) * dx + (py - ay) * dy) / len2;
		t = MCC_CLAMP(t, 0.0, 1.0);
	}
	ex = ax + t * dx - px;
	ey = ay + t * dy - py;
	return ex * ex + ey * ey;
}

/* Is (px, py) inside the hull dilated by omega (Minkowski sum with a disc)? */
static bool
hull_contains(const hull *h, double px, double py, double omega)
{
	double		om2 = omega * omega;

	if (h->n == 1)
		return (px - h->x[0]) * (px - h->x[0]) +
			(py - h->y[0]) * (py - h->y[0]) <= om2;
	if (h->n >= 3)
	{
		bool		inside = true;

		for (int i = 0; i < h->n; i++)
		{
			int			j = (i + 1) % h->n;

			if ((h->x[j] - h->x[i]) * (py - h->y[i]) -
				(h->y[j] - h->y[i]) * (px - h->x[i]) < 0.0)
			{
				inside = false;
				break;
			}
		}
		if (inside)
			return true;
	}
	for (int i = 0; i < h->n; i++)
	{
		int			j = (i + 1) % h->n;

		if (seg_dist2(px, py, h->x[i], h->y[i], h->x[j], h->y[j]) <= om2)
			return true;
		if (h->n == 2)
			break;				/* one segment, not a closed polygon */
	}
	return false;
}

/*
 * G_D: the probability mass of a normal(0, sigma_D) variable on the interval
 * of width Delta_D centred at alpha (mcc-spec §3.2).
 */
static double
g_dir(double alpha, double sigma_d, double delta_d)
{
	double		s = sigma_d * sqrt(2.0);

	return 0.5 * (erf((alpha + delta_d / 2.0) / s) - erf((alpha - delta_d / 2.0) / s));
}

/* Order cylinders by byte angle, then minutia index. */
static int
cmp_cylinder(const void *pa, const void *pb)
{
	const mcc_cylinder *a = pa;
	const mcc_cylinder *b = pb;
	int			c = MCC_CMP(a->angle, b->angle);

	return MCC_CMP_THEN(c, a->minutia, b->minutia);
}

/* G_D of the profile, for tests (see mcc_cylinder.h). */
double
mcc_cylinder_gd(const mcc_profile *p, double alpha)
{
	return g_dir(alpha, p->sigma_d, 2.0 * PI / p->nd);
}

/* The kept disc cells in bit order (see mcc_cylinder.h). */
int
mcc_cylinder_cells(const mcc_profile *p, double *a, double *b)
{
	disc_cell	cells[MCC_MAX_BITS];
	int			n = disc_cells(p, cells);

	for (int i = 0; i < n; i++)
	{
		a[i] = cells[i].a;
		b[i] = cells[i].b;
	}
	return n;
}

/*
 * Real values of minutia mi's cylinder into vals[k * ncells + c] and cell
 * validity into valid[c]; returns false if the cylinder is invalid (too few
 * neighbours or valid cells), in which case vals may be incomplete.
 */
static bool
cylinder_values(const mcc_minutiae *ms, const mcc_profile *p, const hull *h,
				const disc_cell *cells, int ncells, int mi, double *vals,
				uint8_t *valid)
{
	const mcc_minutia *m = &ms->m[mi];
	double		theta = m->theta;
	double		cos_t = cos(theta);
	double		sin_t = sin(theta);
	double		delta_s = 2.0 * p->radius / p->ns;
	double		delta_d = 2.0 * PI / p->nd;
	double		reach = p->radius + 3.0 * p->sigma_s;
	double		r3 = 3.0 * p->sigma_s;
	double		gs_norm = 1.0 / (p->sigma_s * sqrt(2.0 * PI));
	double		gs_den = 2.0 * p->sigma_s * p->sigma_s;
	int			nb[MCC_MAX_MINUTIAE];
	double		cd[MCC_MAX_MINUTIAE][MAX_ND];
	int			nn = 0;
	int			nvalid = 0;

	/* neighbours within R + 3 sigma_S and their directional contributions */
	for (int t = 0; t < ms->count; t++)
	{
		double		dx;
		double		dy;
		double		dtheta;

		if (t == mi)
			continue;
		dx = (double) ms->m[t].x - m->x;
		dy = (double) ms->m[t].y - m->y;
		if (dx * dx + dy * dy > reach * reach)
			continue;
		dtheta = angle_diff(theta, (double) ms->m[t].theta);
		for (int k = 0; k < p->nd; k++)
		{
			double		phi_k = -PI + (k + 0.5) * delta_d;

			cd[nn][k] = g_dir(angle_diff(phi_k, dtheta), p->sigma_d, delta_d);
		}
		nb[nn++] = t;
	}
	if (nn < p->min_m)
		return false;

	for (int ci = 0; ci < ncells; ci++)
	{
		double		px = m->x + delta_s * (cells[ci].a * cos_t + cells[ci].b * sin_t);
		double		py = m->y + delta_s * (-cells[ci].a * sin_t + cells[ci].b * cos_t);
		double		v[MAX_ND] = {0};

		valid[ci] = hull_contains(h, px, py, p->omega);
		if (valid[ci])
		{
			nvalid++;
			for (int n = 0; n < nn; n++)
			{
				double		dx = ms->m[nb[n]].x - px;
				double		dy = ms->m[nb[n]].y - py;
				double		d2 = dx * dx + dy * dy;
				double		gs;

				if (d2 > r3 * r3)
					continue;
				gs = gs_norm * exp(-d2 / gs_den);
				for (int k = 0; k < p->nd; k++)
					v[k] += gs * cd[n][k];
			}
		}
		for (int k = 0; k < p->nd; k++)
			vals[k * ncells + ci] = v[k];
	}
	return nvalid >= (int) ceil(p->min_vc * ncells - 1e-9);
}

/*
 * Build minutia mi's cylinder into c; returns false if the cylinder is
 * invalid.
 */
static bool
cylinder_one(const mcc_minutiae *ms, const mcc_profile *p, const hull *h,
			 const disc_cell *cells, int ncells, int mi, mcc_cylinder *c)
{
	double		vals[MCC_MAX_BITS];
	uint8_t		valid[MCC_MAX_BITS];
	uint64_t   *val = c->bits;
	uint64_t   *mask = c->bits + p->words;

	if (!cylinder_values(ms, p, h, cells, ncells, mi, vals, valid))
		return false;
	memset(c->bits, 0, sizeof(c->bits));
	for (int k = 0; k < p->nd; k++)
		for (int ci = 0; ci < ncells; ci++)
		{
			int			bit = k * ncells + ci;

			if (!valid[ci])
				continue;
			if (p->masks)
				mask[bit / 64] |= UINT64_C(1) << (bit % 64);
			if (vals[bit] >= p->mu_psi)
				val[bit / 64] |= UINT64_C(1) << (bit % 64);
		}
	c->popcount = 0;
	for (int w = 0; w < p->words; w++)
		c->popcount += __builtin_popcountll(val[w]);
	c->angle = mcc_angle_to_byte(ms->m[mi].theta);
	c->minutia = (uint8_t) mi;
	return true;
}

/* Check that profile p describes a cylinder shape this code builds. */
static mcc_status
check_shape(const mcc_profile *p, disc_cell *cells, int *ncells, mcc_error *err)
{
	if (p->nd < 1 || p->nd > MAX_ND || p->ns < 1 || p->ns * p->ns > MCC_MAX_BITS)
		return mcc_error_set(err, MCC_ERR_INTERNAL,
							 "profile \"%s\" has an unsupported cylinder shape", p->name);
	*ncells = disc_cells(p, cells);
	if (*ncells != p->ndisc || *ncells * p->nd != p->nbits ||
		p->nbits > MCC_MAX_BITS || (p->nbits + 63) / 64 != p->words)
		return mcc_error_set(err, MCC_ERR_INTERNAL,
							 "profile \"%s\" has an inconsistent cell count", p->name);
	return MCC_OK;
}

/* Real values of one cylinder, with its own hull (see mcc_cylinder.h). */
bool
mcc_cylinder_values(const mcc_minutiae *ms, const mcc_profile *p, int mi,
					double *values, uint8_t *valid)
{
	disc_cell	cells[MCC_MAX_BITS];
	hull		h;
	int			ncells;

	if (check_shape(p, cells, &ncells, NULL) != MCC_OK ||
		mi < 0 || mi >= ms->count)
		return false;
	hull_build(ms, &h);
	return cylinder_values(ms, p, &h, cells, ncells, mi, values, valid);
}

/* All valid cylinders of a set, sorted by angle then minutia. */
mcc_status
mcc_cylinders_create(const mcc_minutiae *ms, const mcc_profile *p,
					 mcc_cylinder *out, int *n, mcc_error *err)
{
	disc_cell	cells[MCC_MAX_BITS];
	hull		h;
	int			ncells;
	int			nc = 0;
	mcc_status	st;

	*n = 0;
	st = check_shape(p, cells, &ncells, err);
	if (st != MCC_OK)
		return st;
	if (ms->count == 0)
		return MCC_OK;

	hull_build(ms, &h);
	for (int mi = 0; mi < ms->count && mi < MCC_MAX_CYL; mi++)
		if (cylinder_one(ms, p, &h, cells, ncells, mi, &out[nc]))
			nc++;
	qsort(out, nc, sizeof(mcc_cylinder), cmp_cylinder);
	*n = nc;
	return MCC_OK;
}
