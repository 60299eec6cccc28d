/*
 * mcc_edt.c: exact Euclidean distance (feature) transform on a grid, by the
 * separable lower-envelope algorithm of Felzenszwalb and Huttenlocher
 * (mcc_edt.h says what is stored and why).
 */
#include "mcc_edt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Lines between two cancel checks of a build. */
#define EDT_POLL_LINES	1024

/* Cells per point the automatic resolution aims at. */
#define EDT_AUTO_PER_POINT_2D	16
#define EDT_AUTO_PER_POINT_3D	64

/* Cells of a grid with spacing h over extents ext[dim], as a double (may be huge). */
static double
grid_cells(const double *ext, int dim, double h, int *n)
{
	double		cells = 1.0;

	for (int k = 0; k < dim; k++)
	{
		double		side = ceil(ext[k] / h) + 1.0;

		if (n != NULL)
			n[k] = side > (double) MCC_EDT_MAX_SIDE ? MCC_EDT_MAX_SIDE + 1 : (int) side;
		cells *= side;
	}
	return cells;
}

/*
 * The smallest spacing whose grid has at most target cells, by bisection
 * on a log scale (cells only shrink as h grows).
 */
static double
auto_spacing(const double *ext, int dim, double target)
{
	double		emax = 0.0;
	double		lo;
	double		hi;

	for (int k = 0; k < dim; k++)
		emax = fmax(emax, ext[k]);
	if (emax <= 0.0)
		return 1.0;				/* one point, no margin: any spacing works */
	lo = emax / target;			/* at least target cells along the longest axis */
	hi = emax;					/* at most 2^dim cells */
	for (int it = 0; it < 100 && hi / lo > 1.0 + 1e-9; it++)
	{
		double		mid = sqrt(lo * hi);

		if (grid_cells(ext, dim, mid, NULL) <= target)
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

/* Check that every coordinate is finite; names the first point that is not. */
static mcc_status
check_finite(const double *pts, size_t n, int dim, mcc_error *err)
{
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < dim; k++)
			if (!isfinite(pts[i * dim + k]))
				return mcc_error_set(err, MCC_ERR_VALUE,
									 "reference point %zu has a coordinate that is not finite",
									 i + 1);
	return MCC_OK;
}

/* Grid geometry without building (see mcc_edt.h). */
mcc_status
mcc_edt_plan(const double *pts, size_t n, int dim, const mcc_edt_opts *opts,
			 mcc_edt_geom *geom, size_t *cells, mcc_error *err)
{
	double		lo[MCC_EDT_MAX_DIM];
	double		hi[MCC_EDT_MAX_DIM];
	double		ext[MCC_EDT_MAX_DIM];
	size_t		max_cells = opts->max_cells ? opts->max_cells : MCC_EDT_DEFAULT_MAX_CELLS;
	double		h = opts->resolution;
	double		total;
	mcc_status	st;

	if (dim != 2 && dim != 3)
		return mcc_error_set(err, MCC_ERR_VALUE, "point dimension must be 2 or 3, not %d", dim);
	if (n == 0)
		return mcc_error_set(err, MCC_ERR_VALUE, "no reference points");
	if (n > (size_t) INT32_MAX)
		return mcc_error_set(err, MCC_ERR_LIMIT, "too many reference points (%zu)", n);
	if (!isfinite(h) || h < 0.0)
		return mcc_error_set(err, MCC_ERR_VALUE,
							 "distance transform resolution must be a finite number >= 0 (0: automatic)");
	if (!isfinite(opts->margin) || opts->margin < 0.0)
		return mcc_error_set(err, MCC_ERR_VALUE, "distance transform margin must be finite and >= 0");
	if ((st = check_finite(pts, n, dim, err)) != MCC_OK)
		return st;

	for (int k = 0; k < dim; k++)
	{
		lo[k] = hi[k] = pts[k];
		for (size_t i = 1; i < n; i++)
		{
			lo[k] = fmin(lo[k], pts[i * dim + k]);
			hi[k] = fmax(hi[k], pts[i * dim + k]);
		}
		ext[k] = (hi[k] - lo[k]) + 2.0 * opts->margin;
		if (!isfinite(ext[k]))
			return mcc_error_set(err, MCC_ERR_LIMIT, "reference points span too large a range");
	}
	if (h == 0.0)
	{
		double		target = (double) n * (dim == 2 ? EDT_AUTO_PER_POINT_2D : EDT_AUTO_PER_POINT_3D);
		double		cap = (double) (max_cells < MCC_EDT_AUTO_MAX_CELLS ? max_cells : MCC_EDT_AUTO_MAX_CELLS);

		target = fmax(target, (double) MCC_EDT_AUTO_MIN_CELLS);
		target = fmin(target, cap);
		h = auto_spacing(ext, dim, target);
	}

	memset(geom, 0, sizeof(*geom));
	geom->dim = dim;
	geom->h = h;
	geom->inv_h = 1.0 / h;
	geom->n[0] = geom->n[1] = geom->n[2] = 1;
	total = grid_cells(ext, dim, h, geom->n);
	for (int k = 0; k < dim; k++)
		geom->origin[k] = lo[k] - opts->margin;
	if (!(total <= (double) max_cells) || geom->n[0] > MCC_EDT_MAX_SIDE ||
		geom->n[1] > MCC_EDT_MAX_SIDE || geom->n[2] > MCC_EDT_MAX_SIDE)
	{
		char		extent[128];

		if (dim == 2)
			snprintf(extent, sizeof(extent), "%g x %g", ext[0], ext[1]);
		else
			snprintf(extent, sizeof(extent), "%g x %g x %g", ext[0], ext[1], ext[2]);
		mcc_error_set(err, MCC_ERR_LIMIT, "distance transform grid too large");
		return mcc_error_detail(err,
								"A resolution of %g over an extent of %s gives %.0f cells; "
								"the limit is %zu cells and %d per axis.",
								h, extent, total, max_cells, MCC_EDT_MAX_SIDE);
	}
	*cells = (size_t) total;
	return MCC_OK;
}

/* Squared distance, in cell units, from point x to the node with coordinates c. */
static double
node_dist2(const mcc_edt_geom *g, const double *x, const int32_t *c)
{
	double		d2 = 0.0;

	for (int k = 0; k < g->dim; k++)
	{
		double		d = (x[k] - g->origin[k]) * g->inv_h - (double) c[k];

		d2 += d * d;
	}
	return d2;
}

/*
 * Snap every point to its nearest node: snap[i * dim + k] gets the node
 * coordinates, site[node] the point that keeps the node (closest, then
 * lowest index).
 */
static void
snap_points(const double *pts, size_t n, const mcc_edt_geom *g, int32_t *site, int32_t *snap)
{
	int			dim = g->dim;

	for (size_t i = 0; i < n; i++)
	{
		const double *x = pts + i * dim;
		size_t		idx = 0;
		size_t		stride = 1;

		for (int k = 0; k < dim; k++)
		{
			mcc_edt_geom one = *g;
			double		xk = x[k];
			size_t		c;

			/* the per-axis part of mcc_edt_cell */
			one.dim = 1;
			one.origin[0] = g->origin[k];
			one.n[0] = g->n[k];
			c = mcc_edt_cell(&one, &xk);
			snap[i * dim + k] = (int32_t) c;
			idx += c * stride;
			stride *= (size_t) g->n[k];
		}
		if (site[idx] < 0)
			site[idx] = (int32_t) i;
		else
		{
			int32_t		o = site[idx];

			if (node_dist2(g, x, snap + i * dim) < node_dist2(g, pts + (size_t) o * dim, snap + (size_t) o * dim))
				site[idx] = (int32_t) i;
		}
	}
}

/*
 * Lower envelope of the parabolas (x - q)^2 + f[q] over the finite f[q] of a
 * line of n samples; arg[x] gets the q of the lowest parabola at each x.
 * v (n) and z (n + 1) are scratch. Returns 0 when no f[q] is finite.
 */
static int
envelope(const double *f, int n, int *v, double *z, int *arg)
{
	int			k = -1;

	for (int q = 0; q < n; q++)
	{
		double		s = 0.0;

		if (isinf(f[q]))
			continue;
		if (k < 0)
		{
			k = 0;
			v[0] = q;
			z[0] = -HUGE_VAL;
			z[1] = HUGE_VAL;
			continue;
		}
		for (;;)
		{
			int			p = v[k];

			s = ((f[q] + (double) q * q) - (f[p] + (double) p * p)) / (2.0 * (double) (q - p));
			if (s <= z[k])
				k--;			/* z[0] = -inf stops this at k = 0 */
			else
				break;
		}
		k++;
		v[k] = q;
		z[k] = s;
		z[k + 1] = HUGE_VAL;
	}
	if (k < 0)
		return 0;
	k = 0;
	for (int x = 0; x < n; x++)
	{
		while (z[k + 1] < (double) x)
			k++;
		arg[x] = v[k];
	}
	return 1;
}

/* Whether a build should stop now. */
static int
build_canceled(const mcc_edt_opts *opts)
{
	if (opts->cancel != NULL && *opts->cancel)
		return 1;
	if (opts->poll != NULL && opts->poll(opts->poll_arg))
	{
		if (opts->cancel != NULL)
			*opts->cancel = 1;
		return 1;
	}
	return 0;
}

/* Scratch of one pass: one line's values, envelope and new sites. */
typedef struct edt_line
{
	double	   *f;
	double	   *z;
	int		   *v;
	int		   *arg;
	int32_t    *old;
} edt_line;

/*
 * One pass along axis a: every node takes the site that minimizes the
 * squared distance over the axes done so far plus the offset along a.
 * Returns 0 if canceled.
 */
static int
edt_pass(const mcc_edt_geom *g, int a, int32_t *site, const int32_t *snap,
		 edt_line *ln, const mcc_edt_opts *opts)
{
	int			dim = g->dim;
	int			len = g->n[a];
	size_t		st = 1;
	size_t		lines;
	size_t		cells = (size_t) g->n[0] * g->n[1] * g->n[2];

	for (int k = 0; k < a; k++)
		st *= (size_t) g->n[k];
	lines = cells / (size_t) len;
	for (size_t b = 0; b < lines; b++)
	{
		size_t		base = (b % st) + (b / st) * st * (size_t) len;
		int32_t		c[MCC_EDT_MAX_DIM];
		size_t		rem = base;

		if (b % EDT_POLL_LINES == 0 && build_canceled(opts))
			return 0;
		/* node coordinates of the line's first node (axis a is 0 there) */
		for (int k = 0; k < dim; k++)
		{
			c[k] = (int32_t) (rem % (size_t) g->n[k]);
			rem /= (size_t) g->n[k];
		}
		for (int i = 0; i < len; i++)
		{
			int32_t		s = site[base + (size_t) i * st];
			double		f = HUGE_VAL;

			ln->old[i] = s;
			if (s >= 0)
			{
				f = 0.0;
				for (int k = 0; k < a; k++)
				{
					double		d = (double) (c[k] - snap[(size_t) s * dim + k]);

					f += d * d;
				}
			}
			ln->f[i] = f;
		}
		if (!envelope(ln->f, len, ln->v, ln->z, ln->arg))
			continue;
		for (int i = 0; i < len; i++)
			site[base + (size_t) i * st] = ln->old[ln->arg[i]];
	}
	return 1;
}

/* Build the transform (see mcc_edt.h). */
mcc_status
mcc_edt_build(const double *pts, size_t n, int dim, const mcc_edt_opts *opts,
			  mcc_edt *out, mcc_error *err)
{
	mcc_edt_geom g;
	size_t		cells;
	int32_t    *site;
	int32_t    *snap;
	edt_line	ln;
	int			side;
	mcc_status	st;
	int			ok = 1;

	memset(out, 0, sizeof(*out));
	if ((st = mcc_edt_plan(pts, n, dim, opts, &g, &cells, err)) != MCC_OK)
		return st;
	side = g.n[0] > g.n[1] ? g.n[0] : g.n[1];
	side = side > g.n[2] ? side : g.n[2];
	site = malloc(cells * sizeof(int32_t));
	snap = malloc(n * (size_t) dim * sizeof(int32_t));
	ln.f = malloc((size_t) side * sizeof(double));
	ln.z = malloc(((size_t) side + 1) * sizeof(double));
	ln.v = malloc((size_t) side * sizeof(int));
	ln.arg = malloc((size_t) side * sizeof(int));
	ln.old = malloc((size_t) side * sizeof(int32_t));
	if (!site || !snap || !ln.f || !ln.z || !ln.v || !ln.arg || !ln.old)
	{
		st = mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for a distance transform of %zu cells",
						   cells);
		ok = 0;
	}
	if (ok)
	{
		memset(site, 0xff, cells * sizeof(int32_t));	/* -1: no site yet */
		snap_points(pts, n, &g, site, snap);
		for (int a = 0; a < dim && ok; a++)
			ok = edt_pass(&g, a, site, snap, &ln, opts);
		if (!ok)
			st = mcc_error_set(err, MCC_ERR_INTERNAL, "distance transform canceled");
	}
	free(snap);
	free(ln.f);
	free(ln.z);
	free(ln.v);
	free(ln.arg);
	free(ln.old);
	if (!ok)
	{
		free(site);
		return st;
	}
	out->geom = g;
	out->cells = cells;
	out->site = site;
	return MCC_OK;
}

/* Release a transform. */
void
mcc_edt_free(mcc_edt *e)
{
	if (e == NULL)
		return;
	free(e->site);
	e->site = NULL;
	e->cells = 0;
}

/* Reference point stored for the node nearest to x. */
int32_t
mcc_edt_nearest(const mcc_edt *e, const double *x)
{
	return e->site[mcc_edt_cell(&e->geom, x)];
}

/* Coordinates of node idx. */
void
mcc_edt_node(const mcc_edt_geom *g, size_t idx, double *x)
{
	for (int k = 0; k < g->dim; k++)
	{
		x[k] = g->origin[k] + (double) (idx % (size_t) g->n[k]) * g->h;
		idx /= (size_t) g->n[k];
	}
}
