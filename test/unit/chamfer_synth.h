/*
 * chamfer_synth.h: synthetic point sets and transforms for the chamfer
 * alignment tests, the GPU check and the benchmark (header-only, seeded
 * through mcc_rng.h, so every program sees the same data).
 *
 * 2D reference: a "road network" like paper 004's WAMI example: points
 * spaced along straight segments and circular arcs in [0, 1000]^2. 3D
 * reference: points on the faces of a few boxes ("buildings") and a sphere
 * in [0, 100]^3, like the paper's range data. Observed sets: a subset of
 * the reference mapped by the inverse of a known transform, with Gaussian
 * noise and uniform outliers.
 */
#ifndef CHAMFER_SYNTH_H
#define CHAMFER_SYNTH_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_chamfer.h"
#include "mcc_chamfer_search.h"
#include "mcc_rng.h"

#define CS_EXTENT_2D	1000.0
#define CS_EXTENT_3D	100.0

/* A standard normal number (Box-Muller). */
static inline double
cs_normal(mcc_rng *r)
{
	double		u = mcc_rng_uniform(r);
	double		v = mcc_rng_uniform(r);

	return sqrt(-2.0 * log(1.0 - u)) * cos(2.0 * M_PI * v);
}

/* n reference points along random segments and arcs in [0, 1000]^2 (malloc'd). */
static inline double *
cs_roads_2d(uint64_t seed, size_t n)
{
	mcc_rng		r;
	double	   *p = malloc(n * 2 * sizeof(double));
	size_t		i = 0;
	int			roads = 24;

	mcc_rng_seed(&r, mcc_rng_key(seed, 2, 0, 0));
	for (int k = 0; k < roads && p; k++)
	{
		size_t		m = (n - i) / (size_t) (roads - k);
		double		cx = mcc_rng_range(&r, 100, 900);
		double		cy = mcc_rng_range(&r, 100, 900);

		if (k % 3 == 2)
		{
			/* an arc of a circle */
			double		rad = mcc_rng_range(&r, 80, 300);
			double		a0 = mcc_rng_range(&r, 0, 2 * M_PI);
			double		span = mcc_rng_range(&r, 1.0, 3.0);

			for (size_t j = 0; j < m; j++, i++)
			{
				double		a = a0 + span * (double) j / (double) m;

				p[2 * i] = fmin(fmax(cx + rad * cos(a), 0), CS_EXTENT_2D);
				p[2 * i + 1] = fmin(fmax(cy + rad * sin(a), 0), CS_EXTENT_2D);
			}
		}
		else
		{
			double		a = mcc_rng_range(&r, 0, M_PI);
			double		len = mcc_rng_range(&r, 300, 900);

			for (size_t j = 0; j < m; j++, i++)
			{
				double		t = len * ((double) j / (double) m - 0.5);

				p[2 * i] = fmin(fmax(cx + t * cos(a), 0), CS_EXTENT_2D);
				p[2 * i + 1] = fmin(fmax(cy + t * sin(a), 0), CS_EXTENT_2D);
			}
		}
	}
	return p;
}

/* n reference points on the faces of boxes and a sphere in [0, 100]^3 (malloc'd). */
static inline double *
cs_buildings_3d(uint64_t seed, size_t n)
{
	mcc_rng		r;
	double	   *p = malloc(n * 3 * sizeof(double));
	const double box[3][6] = {
		{10, 10, 0, 45, 30, 40}, {55, 15, 0, 90, 45, 25}, {20, 55, 0, 60, 90, 60}
	};

	mcc_rng_seed(&r, mcc_rng_key(seed, 3, 0, 0));
	for (size_t i = 0; i < n && p; i++)
	{
		double	   *q = p + 3 * i;
		int			what = (int) mcc_rng_below(&r, 4);

		if (what == 3)
		{
			/* a sphere of radius 12 at (75, 75, 20) */
			double		z = mcc_rng_range(&r, -1, 1);
			double		a = mcc_rng_range(&r, 0, 2 * M_PI);
			double		s = sqrt(1 - z * z);

			q[0] = 75 + 12 * s * cos(a);
			q[1] = 75 + 12 * s * sin(a);
			q[2] = 20 + 12 * z;
		}
		else
		{
			const double *b = box[what];
			int			face = (int) mcc_rng_below(&r, 5);	/* no bottom face */
			int			ax = face / 2 < 2 ? face / 2 : 2;
			double		u[3];

			for (int k = 0; k < 3; k++)
				u[k] = mcc_rng_range(&r, b[k], b[k + 3]);
			u[ax] = (face == 4 || face % 2 == 1) ? b[ax + 3] : b[ax];
			memcpy(q, u, sizeof(u));
		}
	}
	return p;
}

/* Invert a (d+1) x (d+1) matrix by Gauss-Jordan with partial pivoting; 0 if singular. */
static inline int
cs_invert(int n, const double *a, double *inv)
{
	double		m[16];

	memcpy(m, a, sizeof(double) * n * n);
	for (int i = 0; i < n * n; i++)
		inv[i] = (i % (n + 1) == 0) ? 1.0 : 0.0;
	for (int c = 0; c < n; c++)
	{
		int			piv = c;

		for (int r = c + 1; r < n; r++)
			if (fabs(m[r * n + c]) > fabs(m[piv * n + c]))
				piv = r;
		if (m[piv * n + c] == 0.0)
			return 0;
		for (int k = 0; k < n; k++)
		{
			double		t = m[c * n + k];

			m[c * n + k] = m[piv * n + k];
			m[piv * n + k] = t;
			t = inv[c * n + k];
			inv[c * n + k] = inv[piv * n + k];
			inv[piv * n + k] = t;
		}
		{
			double		d = m[c * n + c];

			for (int k = 0; k < n; k++)
			{
				m[c * n + k] /= d;
				inv[c * n + k] /= d;
			}
		}
		for (int r = 0; r < n; r++)
			if (r != c)
			{
				double		f = m[r * n + c];

				for (int k = 0; k < n; k++)
				{
					m[r * n + k] -= f * m[c * n + k];
					inv[r * n + k] -= f * inv[c * n + k];
				}
			}
	}
	return 1;
}

/*
 * A random transform of a type, as parameters in mcc_chamfer.h's layout,
 * moderate as paper 004's "within tolerances": rotation up to 15 degrees,
 * translation up to 5% of the extent, scale 0.9..1.1, affine entries within
 * 0.08 of the similarity, projective terms that change w by up to 6%
 * across the extent; about the extent's center.
 */
static inline void
cs_random_params(uint64_t seed, int type, int dim, double *params)
{
	mcc_rng		r;
	double		E = dim == 2 ? CS_EXTENT_2D : CS_EXTENT_3D;
	double		m[16];
	double		c[3];
	int			d1 = dim + 1;
	double		ang = 15.0 * M_PI / 180.0;

	mcc_rng_seed(&r, mcc_rng_key(seed, 100 + type, (uint64_t) dim, 0));
	for (int k = 0; k < dim; k++)
		c[k] = E / 2;
	if (type == MCC_XFORM_EUCLIDEAN || type == MCC_XFORM_SIMILARITY)
	{
		double		s = type == MCC_XFORM_SIMILARITY ? mcc_rng_range(&r, 0.9, 1.1) : 1.0;
		double	   *p = params + (type == MCC_XFORM_SIMILARITY ? 1 : 0);
		double		R[9];
		int			nrot = dim == 2 ? 1 : 3;

		if (type == MCC_XFORM_SIMILARITY)
			params[0] = s;
		if (dim == 2)
			p[0] = mcc_rng_range(&r, -ang, ang);
		else
		{
			double		ax[3];
			double		nrm = 0;
			double		a = mcc_rng_range(&r, -ang, ang);

			for (int k = 0; k < 3; k++)
			{
				ax[k] = cs_normal(&r);
				nrm += ax[k] * ax[k];
			}
			for (int k = 0; k < 3; k++)
				p[k] = ax[k] / sqrt(nrm) * a;
		}
		/* translation that rotates about the center, plus a shift */
		{
			mcc_error	err;

			for (int k = 0; k < dim; k++)
				p[nrot + k] = 0.0;
			mcc_chamfer_params_to_matrix(type, dim, params, m, &err);
			for (int i = 0; i < dim; i++)
			{
				R[i] = 0;
				for (int k = 0; k < dim; k++)
					R[i] += m[i * d1 + k] * c[k];
				p[nrot + i] = c[i] - R[i] + mcc_rng_range(&r, -0.05 * E, 0.05 * E);
			}
		}
		return;
	}
	/* affine or projective, built as a matrix about the center */
	{
		double		A[16];
		double		Tc[16];
		double		Tci[16];
		double		tmp[16];

		memset(A, 0, sizeof(A));
		for (int i = 0; i < dim; i++)
		{
			for (int k = 0; k < dim; k++)
				A[i * d1 + k] = (i == k ? 1.0 : 0.0) + mcc_rng_range(&r, -0.08, 0.08);
			A[i * d1 + dim] = mcc_rng_range(&r, -0.05 * E, 0.05 * E);
		}
		A[dim * d1 + dim] = 1.0;
		if (type == MCC_XFORM_PROJECTIVE)
			for (int k = 0; k < dim; k++)
				A[dim * d1 + k] = mcc_rng_range(&r, -0.06, 0.06) / E;
		/* about the center: Tc A Tc^-1 */
		memset(Tc, 0, sizeof(Tc));
		memset(Tci, 0, sizeof(Tci));
		for (int i = 0; i < d1; i++)
		{
			Tc[i * d1 + i] = 1.0;
			Tci[i * d1 + i] = 1.0;
		}
		for (int i = 0; i < dim; i++)
		{
			Tc[i * d1 + dim] = c[i];
			Tci[i * d1 + dim] = -c[i];
		}
		for (int i = 0; i < d1; i++)
			for (int j = 0; j < d1; j++)
			{
				tmp[i * d1 + j] = 0;
				for (int k = 0; k < d1; k++)
					tmp[i * d1 + j] += A[i * d1 + k] * Tci[k * d1 + j];
			}
		for (int i = 0; i < d1; i++)
			for (int j = 0; j < d1; j++)
			{
				m[i * d1 + j] = 0;
				for (int k = 0; k < d1; k++)
					m[i * d1 + j] += Tc[i * d1 + k] * tmp[k * d1 + j];
			}
		mcc_chamfer_matrix_to_params(type, dim, m, params);
	}
}

/* The matrix m ((dim + 1)^2 entries) of the transform cs_random_params draws. */
static inline void
cs_random_matrix(uint64_t seed, int type, int dim, double *m)
{
	double		params[MCC_CHAMFER_MAX_PARAMS];
	mcc_error	err;

	cs_random_params(seed, type, dim, params);
	mcc_chamfer_params_to_matrix(type, dim, params, m, &err);
}

/*
 * An observed set: every stride-th reference point from offset, mapped by
 * the inverse of m (so that m maps it back), plus N(0, noise) per
 * coordinate; then n_out uniform outliers over the reference's box. The
 * first *n_clean points are the mapped ones. malloc'd; NULL if m is singular.
 */
static inline double *
cs_observed(uint64_t seed, const double *ref, size_t n_ref, int dim, const double *m,
			size_t stride, size_t offset, double noise, size_t n_out, size_t *n_obs, size_t *n_clean)
{
	mcc_rng		r;
	double		inv[16];
	size_t		nc = 0;
	double		lo[3] = {HUGE_VAL, HUGE_VAL, HUGE_VAL};
	double		hi[3] = {-HUGE_VAL, -HUGE_VAL, -HUGE_VAL};
	double	   *p;

	if (!cs_invert(dim + 1, m, inv))
		return NULL;
	for (size_t i = offset; i < n_ref; i += stride)
		nc++;
	p = malloc((nc + n_out) * (size_t) dim * sizeof(double));
	if (p == NULL)
		return NULL;
	mcc_rng_seed(&r, mcc_rng_key(seed, 7, (uint64_t) dim, stride));
	for (size_t i = 0; i < n_ref; i++)
		for (int k = 0; k < dim; k++)
		{
			lo[k] = fmin(lo[k], ref[i * dim + k]);
			hi[k] = fmax(hi[k], ref[i * dim + k]);
		}
	nc = 0;
	for (size_t i = offset; i < n_ref; i += stride, nc++)
	{
		mcc_chamfer_map(dim, inv, ref + i * dim, p + nc * dim);
		for (int k = 0; k < dim; k++)
			p[nc * dim + k] += noise > 0 ? noise * cs_normal(&r) : 0.0;
	}
	for (size_t j = 0; j < n_out; j++)
		for (int k = 0; k < dim; k++)
			p[(nc + j) * dim + k] = mcc_rng_range(&r, lo[k], hi[k]);
	*n_clean = nc;
	*n_obs = nc + n_out;
	return p;
}

/* RMS over the first n points of |a(p) - b(p)|: how far two transforms disagree there. */
static inline double
cs_transfer_rms(int dim, const double *a, const double *b, const double *pts, size_t n)
{
	double		ss = 0;

	for (size_t i = 0; i < n; i++)
	{
		double		x[3];
		double		y[3];

		if (!mcc_chamfer_map(dim, a, pts + i * dim, x) || !mcc_chamfer_map(dim, b, pts + i * dim, y))
			return HUGE_VAL;
		for (int k = 0; k < dim; k++)
			ss += (x[k] - y[k]) * (x[k] - y[k]);
	}
	return sqrt(ss / (double) n);
}

/* The shape of sql/align.sql: six lines and an arc, points 2 apart (malloc'd). */
static inline double *
cs_sql_shape(size_t *n)
{
	static const int L[6][4] = {{20, 20, 380, 60}, {40, 350, 360, 300}, {50, 40, 90, 360},
	{300, 30, 350, 380}, {100, 100, 300, 300}, {100, 300, 250, 120}};
	double	   *p = malloc(sizeof(double) * 2 * 2000);
	size_t		k = 0;

	for (int l = 0; l < 6; l++)
	{
		int			m = (int) floor(hypot(L[l][2] - L[l][0], L[l][3] - L[l][1]) / 2);

		for (int i = 0; i <= m; i++, k++)
		{
			p[2 * k] = L[l][0] + (L[l][2] - L[l][0]) * (double) i / m;
			p[2 * k + 1] = L[l][1] + (L[l][3] - L[l][1]) * (double) i / m;
		}
	}
	for (int i = 0; i <= 104; i++, k++)
	{
		p[2 * k] = 200 + 60 * cos(200.0 * M_PI / 180 * i / 104);
		p[2 * k + 1] = 200 + 60 * sin(200.0 * M_PI / 180 * i / 104);
	}
	*n = k;
	return p;
}

/*
 * A case of the global pose search of a 2D similarity: the observed points
 * (made by the caller, the first n_clean of them mapped by the truth) and
 * what the search scores, built from them and a reference set by
 * cs_search_case_build: the prepared reference rf (default options), the
 * observed set ob, the reference's pyramid and the search's sample of ob.
 */
typedef struct cs_search_case
{
	double	   *obs;			/* malloc'd; freed by cs_search_case_free */
	size_t		n_obs;
	size_t		n_clean;
	mcc_chamfer_ref rf;
	mcc_chamfer_obs ob;
	mcc_chamfer_pyramid pyr;
	double		sample[2 * MCC_CHAMFER_SEARCH_SAMPLE];
	int			ns;
} cs_search_case;

/* Free what a case holds, its observed points too. */
static inline void
cs_search_case_free(cs_search_case *c)
{
	mcc_chamfer_pyramid_free(&c->pyr);
	mcc_chamfer_obs_free(&c->ob);
	mcc_chamfer_ref_free(&c->rf);
	free(c->obs);
	c->obs = NULL;
}

/* Prepare c (c->obs set) against the n_ref points of ref; on failure c is freed. */
static inline mcc_status
cs_search_case_build(const double *ref, size_t n_ref, cs_search_case *c, mcc_error *err)
{
	mcc_chamfer_opts o;
	mcc_status	st;

	memset(&c->rf, 0, sizeof(c->rf));
	memset(&c->ob, 0, sizeof(c->ob));
	memset(&c->pyr, 0, sizeof(c->pyr));
	mcc_chamfer_opts_init(&o);
	if ((st = mcc_chamfer_ref_build(ref, n_ref, 2, &o, &c->rf, err)) != MCC_OK ||
		(st = mcc_chamfer_obs_prepare(&c->rf, c->obs, c->n_obs, MCC_XFORM_SIMILARITY, &c->ob,
									  err)) != MCC_OK ||
		(st = mcc_chamfer_pyramid_build(c->rf.pts, c->rf.n, &c->pyr, err)) != MCC_OK)
	{
		cs_search_case_free(c);
		return st;
	}
	c->ns = mcc_chamfer_search_sample(c->ob.pts, c->ob.n, c->sample);
	return MCC_OK;
}

#endif							/* CHAMFER_SYNTH_H */
