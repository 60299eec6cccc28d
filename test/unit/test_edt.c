/*
 * test_edt.c: the exact Euclidean distance transform (mcc_edt.h) against
 * brute force: every node's stored point is at the smallest grid distance
 * of all snapped points, in 2D and 3D, at several resolutions; snapping
 * ties; lookups outside the grid; automatic resolution; limits and errors;
 * cancel.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "testpoll.h"
#include "mcc_edt.h"
#include "mcc_rng.h"

/* n random points in [0, side)^dim, some repeated and some on a line, malloc'd. */
static double *
random_points(uint64_t seed, size_t n, int dim, double side)
{
	mcc_rng		r;
	double	   *p = malloc(n * dim * sizeof(double));

	mcc_rng_seed(&r, mcc_rng_key(seed, 11, dim, n));
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < dim; k++)
			p[i * dim + k] = mcc_rng_range(&r, 0, side);
	/* a duplicate and a short run along x, to exercise ties */
	if (n > 10)
	{
		memcpy(p + 5 * dim, p + 4 * dim, dim * sizeof(double));
		for (int j = 6; j < 10; j++)
		{
			memcpy(p + j * dim, p + 4 * dim, dim * sizeof(double));
			p[j * dim] += 0.3 * (j - 5);
		}
	}
	return p;
}

/* Integer node coordinates of point x (per axis, as mcc_edt_cell rounds). */
static void
snap_of(const mcc_edt_geom *g, const double *x, long *c)
{
	size_t		idx = mcc_edt_cell(g, x);

	for (int k = 0; k < g->dim; k++)
	{
		c[k] = (long) (idx % (size_t) g->n[k]);
		idx /= (size_t) g->n[k];
	}
}

/* Squared grid distance between node coordinates. */
static long
grid_d2(int dim, const long *a, const long *b)
{
	long		s = 0;

	for (int k = 0; k < dim; k++)
		s += (a[k] - b[k]) * (a[k] - b[k]);
	return s;
}

/*
 * Check every node of e against brute force over the snapped points: the
 * stored point's snapped node is at the least squared grid distance, and
 * the stored point is within h * sqrt(dim) of the truly nearest point.
 * Returns the number of nodes that fail; *real_excess gets the worst
 * (distance to stored) - (distance to nearest), in units of h.
 */
static long
check_against_brute(const mcc_edt *e, const double *pts, size_t n, double *real_excess)
{
	const mcc_edt_geom *g = &e->geom;
	int			dim = g->dim;
	long	   *snaps = malloc(n * dim * sizeof(long));
	long		bad = 0;

	*real_excess = 0.0;
	for (size_t i = 0; i < n; i++)
		snap_of(g, pts + i * dim, snaps + i * dim);
	for (size_t idx = 0; idx < e->cells; idx++)
	{
		long		c[3];
		size_t		rem = idx;
		long		best = -1;
		double		best_real = HUGE_VAL;
		double		x[3];
		int32_t		s = e->site[idx];
		double		d_stored = 0.0;

		for (int k = 0; k < dim; k++)
		{
			c[k] = (long) (rem % (size_t) g->n[k]);
			rem /= (size_t) g->n[k];
		}
		mcc_edt_node(g, idx, x);
		for (size_t i = 0; i < n; i++)
		{
			long		d = grid_d2(dim, c, snaps + i * dim);
			double		dr = 0.0;

			if (best < 0 || d < best)
				best = d;
			for (int k = 0; k < dim; k++)
				dr += (x[k] - pts[i * dim + k]) * (x[k] - pts[i * dim + k]);
			best_real = fmin(best_real, dr);
		}
		if (s < 0 || (size_t) s >= n || grid_d2(dim, c, snaps + (size_t) s * dim) != best)
		{
			bad++;
			continue;
		}
		for (int k = 0; k < dim; k++)
			d_stored += (x[k] - pts[(size_t) s * dim + k]) * (x[k] - pts[(size_t) s * dim + k]);
		*real_excess = fmax(*real_excess, (sqrt(d_stored) - sqrt(best_real)) / g->h);
	}
	free(snaps);
	return bad;
}

/* Brute-force checks in 2D and 3D at several resolutions and margins. */
static void
test_exact(void)
{
	struct
	{
		int			dim;
		size_t		n;
		double		side;
		double		res;
		double		margin;
	}			cases[] = {
		{2, 1, 10, 1.0, 2.0},
		{2, 40, 50, 1.0, 0.0},
		{2, 300, 100, 0.73, 5.0},
		{2, 300, 100, 3.1, 1.0},
		{2, 2000, 300, 2.0, 10.0},
		{3, 1, 5, 1.0, 1.0},
		{3, 60, 20, 1.0, 0.0},
		{3, 400, 30, 0.9, 3.0},
		{3, 400, 30, 2.7, 0.5},
	};

	for (size_t t = 0; t < sizeof(cases) / sizeof(cases[0]); t++)
	{
		double	   *p = random_points(t + 1, cases[t].n, cases[t].dim, cases[t].side);
		mcc_edt_opts o = {0};
		mcc_edt		e;
		mcc_error	err;
		double		excess;
		long		bad;

		o.resolution = cases[t].res;
		o.margin = cases[t].margin;
		if (!UNIT_CHECK(mcc_edt_build(p, cases[t].n, cases[t].dim, &o, &e, &err) == MCC_OK,
						"%dD, %zu points, h %g: builds (%s)", cases[t].dim, cases[t].n,
						cases[t].res, err.message))
		{
			free(p);
			continue;
		}
		bad = check_against_brute(&e, p, cases[t].n, &excess);
		UNIT_CHECK(bad == 0, "%dD, %zu points, h %g, margin %g: every one of %zu nodes holds a "
				   "nearest snapped point (%ld wrong)", cases[t].dim, cases[t].n, cases[t].res,
				   cases[t].margin, e.cells, bad);
		UNIT_CHECK(excess <= sqrt((double) cases[t].dim) + 1e-9,
				   "%dD, h %g: the stored point is within h*sqrt(dim) of the nearest "
				   "(worst excess %.3f h)", cases[t].dim, cases[t].res, excess);
		mcc_edt_free(&e);
		free(p);
	}
}

/* Several points in one cell: the closest to the node wins, then the lowest index. */
static void
test_snap_ties(void)
{
	/* nodes at integers; all three round to node (2, 2) */
	double		p[] = {2.3, 2.1, 1.8, 2.05, 2.1, 2.3, 1.8, 2.05, 7.0, 7.0};
	mcc_edt_opts o = {0};
	mcc_edt		e;
	mcc_error	err;
	double		x[2] = {2.0, 2.0};

	o.resolution = 1.0;
	UNIT_CHECK(mcc_edt_build(p, 5, 2, &o, &e, &err) == MCC_OK, "tie set builds");
	/* point 1 (1.8, 2.05) is at distance^2 0.0425, point 3 the same: lower index wins */
	UNIT_CHECK(mcc_edt_nearest(&e, x) == 1, "node (2,2) keeps the closest point, lower index on a tie (got %d)",
			   mcc_edt_nearest(&e, x));
	mcc_edt_free(&e);
}

/* Lookups outside the grid clamp; NaN goes to node 0. */
static void
test_lookup_outside(void)
{
	double		p[] = {0, 0, 10, 0, 0, 10, 10, 10};
	mcc_edt_opts o = {0};
	mcc_edt		e;
	mcc_error	err;
	double		far_right[2] = {1e9, 6.1};
	double		far_down[2] = {-3, -1e300};
	double		nan_pt[2] = {NAN, 3};
	int32_t		s;

	o.resolution = 0.5;
	UNIT_CHECK(mcc_edt_build(p, 4, 2, &o, &e, &err) == MCC_OK, "square builds");
	s = mcc_edt_nearest(&e, far_right);
	UNIT_CHECK(s == 3, "a point far right at y 6.1 gets the upper right corner (got %d)", s);
	s = mcc_edt_nearest(&e, far_down);
	UNIT_CHECK(s == 0, "a point far below left gets the origin corner (got %d)", s);
	s = mcc_edt_nearest(&e, nan_pt);
	UNIT_CHECK(s >= 0 && s < 4, "a NaN coordinate still gives a valid point (%d)", s);
	mcc_edt_free(&e);
}

/* Automatic resolution stays within its cell bounds. */
static void
test_auto(void)
{
	size_t		sizes[] = {3, 1000, 100000};

	for (int dim = 2; dim <= 3; dim++)
		for (size_t t = 0; t < 3; t++)
		{
			double	   *p = random_points(50 + t, sizes[t], dim, 100);
			mcc_edt_opts o = {0};
			mcc_edt_geom g;
			size_t		cells;
			mcc_error	err;
			double		target = (double) sizes[t] * (dim == 2 ? 16 : 64);
			mcc_status	st;

			target = fmin(fmax(target, (double) MCC_EDT_AUTO_MIN_CELLS), (double) MCC_EDT_AUTO_MAX_CELLS);
			o.margin = 4;
			st = mcc_edt_plan(p, sizes[t], dim, &o, &g, &cells, &err);
			UNIT_CHECK(st == MCC_OK, "auto plan %dD n=%zu", dim, sizes[t]);
			UNIT_CHECK(cells <= target && cells >= target / (dim == 2 ? 1.1 : 1.2),
					   "auto %dD n=%zu: %zu cells for a target of %.0f", dim, sizes[t], cells, target);
			o.max_cells = 5000;
			st = mcc_edt_plan(p, sizes[t], dim, &o, &g, &cells, &err);
			UNIT_CHECK(st == MCC_OK && cells <= 5000 && cells >= 4000,
					   "auto %dD n=%zu under max_cells 5000: %zu cells", dim, sizes[t], cells);
			free(p);
		}
}

/* Bad input and limits. */
static void
test_errors(void)
{
	double		p[] = {0, 0, 1, 1, 2, 5};
	double		bad[] = {0, 0, NAN, 1};
	double		inf[] = {0, 0, 1, INFINITY};
	mcc_edt_opts o = {0};
	mcc_edt		e;
	mcc_error	err;
	mcc_status	st;

	UNIT_CHECK(mcc_edt_build(p, 3, 4, &o, &e, &err) == MCC_ERR_VALUE, "dimension 4 is refused: %s", err.message);
	UNIT_CHECK(mcc_edt_build(p, 0, 2, &o, &e, &err) == MCC_ERR_VALUE, "no points is refused: %s", err.message);
	UNIT_CHECK(mcc_edt_build(bad, 2, 2, &o, &e, &err) == MCC_ERR_VALUE &&
			   strstr(err.message, "point 2") != NULL, "a NaN coordinate is refused, naming the point: %s",
			   err.message);
	UNIT_CHECK(mcc_edt_build(inf, 2, 2, &o, &e, &err) == MCC_ERR_VALUE, "an infinite coordinate is refused");
	o.resolution = -1;
	UNIT_CHECK(mcc_edt_build(p, 3, 2, &o, &e, &err) == MCC_ERR_VALUE, "a negative resolution is refused");
	o.resolution = NAN;
	UNIT_CHECK(mcc_edt_build(p, 3, 2, &o, &e, &err) == MCC_ERR_VALUE, "a NaN resolution is refused");
	o.resolution = 0.0001;		/* 20001 x 50001 nodes */
	st = mcc_edt_build(p, 3, 2, &o, &e, &err);
	UNIT_CHECK(st == MCC_ERR_LIMIT && strstr(err.detail, "limit") != NULL,
			   "a grid beyond the default limit is MCC_ERR_LIMIT: %s (%s)", err.message, err.detail);
	o.resolution = 0.1;
	o.max_cells = 100;
	UNIT_CHECK(mcc_edt_build(p, 3, 2, &o, &e, &err) == MCC_ERR_LIMIT, "max_cells is honoured");
	o.max_cells = 0;
	o.resolution = 1;
	o.margin = -1;
	UNIT_CHECK(mcc_edt_build(p, 3, 2, &o, &e, &err) == MCC_ERR_VALUE, "a negative margin is refused");
	mcc_edt_free(&e);			/* empty after a failure: must be harmless */
}

/* A build stops when polled to, and says so. */
static void
test_cancel(void)
{
	double	   *p = random_points(9, 500, 3, 100);
	mcc_edt_opts o = {0};
	mcc_edt		e;
	mcc_error	err;
	volatile int flag = 0;
	mcc_status	st;

	o.resolution = 0.5;			/* 201^3 cells: many polls */
	o.max_cells = (size_t) 1 << 24;
	o.poll = stop_after;
	polls = 0;
	poll_limit = 2;				/* stop on the third call */
	o.cancel = &flag;
	st = mcc_edt_build(p, 500, 3, &o, &e, &err);
	UNIT_CHECK(st == MCC_ERR_INTERNAL && flag == 1 && e.site == NULL && polls == 3,
			   "a poll returning nonzero cancels the build (%s, flag %d, %d polls)", err.message,
			   flag, polls);
	o.poll = NULL;
	flag = 1;
	st = mcc_edt_build(p, 500, 3, &o, &e, &err);
	UNIT_CHECK(st == MCC_ERR_INTERNAL, "a set cancel flag stops the build");
	free(p);
}

/* Every group of checks; TAP on stdout. */
int
main(void)
{
	test_exact();
	test_snap_ties();
	test_lookup_outside();
	test_auto();
	test_errors();
	test_cancel();
	return unit_done();
}
