/*
 * test_chamfer.c: parametric chamfer alignment (mcc_chamfer.h).
 *
 * - Table 2: the reduced sums of every transform type, expanded, equal
 *   sum J^T J and sum J^T r with J by central differences of the
 *   parameterization the header documents (derived here independently).
 * - Recovery: point sets mapped by known transforms of each type, 2D and
 *   3D, are aligned back: exactly (no noise: transfer error <= 1e-6 of the
 *   extent), with noise (plain chamfer) and with noise and 10% outliers
 *   (truncated, graduated): transfer error <= noise + grid spacing.
 * - Threads: results are bit-identical for 1, 2, 3 and 8 threads, and
 *   pipelined (Sec. 3.2.2) equals traditional LM.
 * - Parameters <-> matrices, rotations; bad input; cancel.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "testpoll.h"
#include "chamfer_synth.h"
#include "mcc_chamfer.h"

/* Rodrigues, written out independently of the library. */
static void
rodrigues(const double *w, double *R)
{
	double		th = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
	double		k[3] = {0, 0, 0};
	double		c = cos(th);
	double		s = sin(th);

	if (th > 0)
		for (int i = 0; i < 3; i++)
			k[i] = w[i] / th;
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			R[i * 3 + j] = (i == j ? c : 0) + (1 - c) * k[i] * k[j];
	R[1] -= s * k[2];
	R[2] += s * k[1];
	R[3] += s * k[2];
	R[5] -= s * k[0];
	R[6] -= s * k[1];
	R[7] += s * k[0];
}

/* A test transform: its evaluation input plus what the parameterization perturbs. */
typedef struct tx
{
	int			type;
	int			dim;
	double		theta;
	double		R[9];
	double		s;
	double		m[16];			/* (dim+1)^2 */
} tx;

/* y = T_delta(p) for transform t perturbed by delta in its documented parameterization. */
static void
perturbed_map(const tx *t, const double *delta, const double *p, double *y)
{
	int			d = t->dim;
	int			d1 = d + 1;

	if (t->type <= MCC_XFORM_SIMILARITY)
	{
		int			o = t->type == MCC_XFORM_SIMILARITY ? 1 : 0;
		double		s = t->s + (o ? delta[0] : 0);
		double		R[9];
		int			nrot = d == 2 ? 1 : 3;

		if (d == 2)
		{
			double		a = t->theta + delta[o];

			R[0] = cos(a);
			R[1] = -sin(a);
			R[2] = sin(a);
			R[3] = cos(a);
		}
		else
		{
			double		E[9];

			rodrigues(delta + o, E);
			for (int i = 0; i < 3; i++)
				for (int j = 0; j < 3; j++)
				{
					R[i * 3 + j] = 0;
					for (int k = 0; k < 3; k++)
						R[i * 3 + j] += E[i * 3 + k] * t->R[k * 3 + j];
				}
		}
		for (int i = 0; i < d; i++)
		{
			y[i] = t->m[i * d1 + d] + delta[o + nrot + i];
			for (int k = 0; k < d; k++)
				y[i] += s * R[i * d + k] * p[k];
		}
	}
	else if (t->type == MCC_XFORM_AFFINE)
	{
		for (int i = 0; i < d; i++)
		{
			y[i] = t->m[i * d1 + d] + delta[i * d1 + d];
			for (int k = 0; k < d; k++)
				y[i] += (t->m[i * d1 + k] + delta[i * d1 + k]) * p[k];
		}
	}
	else
	{
		/* compositional: (I + D(delta)) applied to p' = T(p) */
		double		pp[3];
		double		w;

		mcc_chamfer_map(d, t->m, p, pp);
		w = 1.0;
		for (int k = 0; k < d; k++)
			w += delta[d * d1 + k] * pp[k];
		for (int i = 0; i < d; i++)
		{
			double		v = pp[i] + delta[i * d1 + d];

			for (int k = 0; k < d; k++)
				v += delta[i * d1 + k] * pp[k];
			y[i] = v / w;
		}
	}
}

/* A random transform of a type near the identity, for the Jacobian check. */
static void
random_tx(mcc_rng *r, int type, int dim, tx *t)
{
	int			d1 = dim + 1;

	memset(t, 0, sizeof(*t));
	t->type = type;
	t->dim = dim;
	t->s = type == MCC_XFORM_SIMILARITY ? mcc_rng_range(r, 0.8, 1.25) : 1.0;
	for (int i = 0; i < d1 * d1; i++)
		t->m[i] = (i % (d1 + 1) == 0) ? 1.0 : 0.0;
	if (type <= MCC_XFORM_SIMILARITY)
	{
		if (dim == 2)
		{
			t->theta = mcc_rng_range(r, -1, 1);
			t->R[0] = cos(t->theta);
			t->R[1] = -sin(t->theta);
			t->R[2] = sin(t->theta);
			t->R[3] = cos(t->theta);
		}
		else
		{
			double		w[3];

			for (int k = 0; k < 3; k++)
				w[k] = mcc_rng_range(r, -0.6, 0.6);
			rodrigues(w, t->R);
		}
		for (int i = 0; i < dim; i++)
			for (int j = 0; j < dim; j++)
				t->m[i * d1 + j] = t->s * t->R[i * dim + j];
	}
	else
	{
		for (int i = 0; i < dim; i++)
			for (int j = 0; j < dim; j++)
				t->m[i * d1 + j] += mcc_rng_range(r, -0.2, 0.2);
		if (type == MCC_XFORM_PROJECTIVE)
			for (int j = 0; j < dim; j++)
				t->m[dim * d1 + j] = mcc_rng_range(r, -0.1, 0.1);
	}
	for (int i = 0; i < dim; i++)
		t->m[i * d1 + dim] = mcc_rng_range(r, -0.3, 0.3);
}

/*
 * Table 2 against numerical Jacobians: reference and observed points in
 * [-1, 1]^dim, a random transform, sums over the points through
 * mcc_chamfer_point, expanded; then sum J^T J and J^T r directly.
 */
static void
test_table2(void)
{
	for (int dim = 2; dim <= 3; dim++)
		for (int type = 0; type < MCC_XFORM_COUNT; type++)
		{
			mcc_rng		r;
			double		ref[300 * 3];
			double		obs[40 * 3];
			mcc_edt_opts eo = {0};
			mcc_edt		e;
			mcc_error	err;
			tx			t;
			mcc_chamfer_xf xf;
			double		S[MCC_CHAMFER_MAX_SUMS] = {0};
			double		H[225];
			double		b[15];
			double		Hn[225] = {0};
			double		bn[15] = {0};
			int			L = mcc_chamfer_nparams(type, dim);
			double		errH = 0;
			double		errb = 0;
			double		maxH = 0;
			double		maxb = 0;

			mcc_rng_seed(&r, mcc_rng_key(77, type, dim, 0));
			for (int i = 0; i < 300 * dim; i++)
				ref[i] = mcc_rng_range(&r, -1.2, 1.2);
			for (int i = 0; i < 40 * dim; i++)
				obs[i] = mcc_rng_range(&r, -1, 1);
			eo.resolution = dim == 2 ? 0.01 : 0.04;
			eo.margin = 1;
			if (mcc_edt_build(ref, 300, dim, &eo, &e, &err) != MCC_OK)
			{
				UNIT_CHECK(0, "edt for the Jacobian test: %s", err.message);
				continue;
			}
			random_tx(&r, type, dim, &t);
			memset(&xf, 0, sizeof(xf));
			xf.type = type;
			xf.dim = dim;
			memcpy(xf.m, t.m, sizeof(t.m));
			memcpy(xf.r, t.R, sizeof(t.R));
			xf.s = t.s;
			xf.tau2 = HUGE_VAL;
			for (int j = 0; j < 40; j++)
			{
				double		zero[15] = {0};
				double		y[3];
				double		J[3][15];
				double		rr[3];
				const double *q;

				mcc_chamfer_point(&xf, dim, type, 1, &e.geom, e.site, ref, obs + j * dim, S);
				perturbed_map(&t, zero, obs + j * dim, y);
				q = ref + (size_t) dim * mcc_edt_nearest(&e, y);
				for (int k = 0; k < dim; k++)
					rr[k] = q[k] - y[k];
				for (int l = 0; l < L; l++)
				{
					double		dp[15] = {0};
					double		dm[15] = {0};
					double		yp[3];
					double		ym[3];

					dp[l] = 1e-6;
					dm[l] = -1e-6;
					perturbed_map(&t, dp, obs + j * dim, yp);
					perturbed_map(&t, dm, obs + j * dim, ym);
					for (int k = 0; k < dim; k++)
						J[k][l] = (yp[k] - ym[k]) / 2e-6;
				}
				for (int l = 0; l < L; l++)
				{
					for (int k = 0; k < dim; k++)
						bn[l] += J[k][l] * rr[k];
					for (int l2 = 0; l2 < L; l2++)
						for (int k = 0; k < dim; k++)
							Hn[l * L + l2] += J[k][l] * J[k][l2];
				}
			}
			mcc_chamfer_expand(type, dim, t.s, S, H, b);
			for (int i = 0; i < L * L; i++)
			{
				errH = fmax(errH, fabs(H[i] - Hn[i]));
				maxH = fmax(maxH, fabs(Hn[i]));
			}
			for (int i = 0; i < L; i++)
			{
				errb = fmax(errb, fabs(b[i] - bn[i]));
				maxb = fmax(maxb, fabs(bn[i]));
			}
			UNIT_CHECK(errH <= 1e-7 * maxH && errb <= 1e-7 * fmax(maxb, 1) && S[1] == 40,
					   "%dD %s: Table 2 terms expand to sum J^T J (max error %.2g of %.3g) and "
					   "J^T r (%.2g of %.3g)", dim, mcc_xform_name(type), errH, maxH, errb, maxb);
			mcc_edt_free(&e);
		}
}

/* The reference set of the recovery tests, malloc'd. */
static double *
make_ref(int dim, size_t n)
{
	return dim == 2 ? cs_roads_2d(1, n) : cs_buildings_3d(1, n);
}

/* Run a test on the 2D and the 3D reference set of make_ref, n_ref points each. */
static void
each_dim(size_t n_ref, void (*test) (int dim, double *ref, size_t n_ref))
{
	for (int dim = 2; dim <= 3; dim++)
	{
		double	   *ref = make_ref(dim, n_ref);

		test(dim, ref, n_ref);
		free(ref);
	}
}

/* Order of two lattice points, for qsort. */
static int	cmp_dim;

/* Lexicographic order of two points of cmp_dim coordinates. */
static int
cmp_point(const void *a, const void *b)
{
	const double *x = a;
	const double *y = b;

	for (int k = 0; k < cmp_dim; k++)
		if (x[k] != y[k])
			return x[k] < y[k] ? -1 : 1;
	return 0;
}

/*
 * Round points to a lattice of the given spacing and drop duplicates, in
 * place: any two points left are at least spacing apart, so each owns its
 * own node of a grid finer than spacing / sqrt(dim). Returns the count.
 */
static size_t
lattice_dedupe(double *p, size_t n, int dim, double spacing)
{
	size_t		k = 0;

	for (size_t i = 0; i < n * dim; i++)
		p[i] = spacing * round(p[i] / spacing);
	cmp_dim = dim;
	qsort(p, n, dim * sizeof(double), cmp_point);
	for (size_t i = 0; i < n; i++)
		if (k == 0 || cmp_point(p + i * dim, p + (k - 1) * dim) != 0)
			memmove(p + (k++) * dim, p + i * dim, dim * sizeof(double));
	return k;
}

/*
 * Align an observed set made from ref by a known transform of a type;
 * returns the transfer RMS (truth vs estimate on the clean points) and
 * fills res.
 */
static double
recover(int dim, int type, const double *ref, size_t n_ref, size_t stride, double noise,
		size_t n_out, const mcc_chamfer_opts *base, mcc_chamfer_result *res, mcc_status *st,
		mcc_error *err)
{
	double		m[16];
	size_t		n_obs;
	size_t		n_clean;
	double	   *obs;
	double		tr;
	mcc_chamfer_opts o = *base;

	cs_random_matrix(1000 + type * 7 + dim, type, dim, m);
	obs = cs_observed(5 + type, ref, n_ref, dim, m, stride, 1, noise, n_out, &n_obs, &n_clean);
	o.transform = type;
	*st = mcc_chamfer_align(obs, n_obs, ref, n_ref, dim, &o, res, err);
	tr = *st == MCC_OK ? cs_transfer_rms(dim, res->matrix, m, obs, n_clean) : HUGE_VAL;
	free(obs);
	return tr;
}

/*
 * Exact recovery: references on a lattice of spacing 3 (every point owns
 * its node of a grid of spacing 1), observed = every 3rd reference point
 * mapped exactly. At the truth f = 0, so LM must land there: transfer
 * error <= 1e-6 of the extent.
 */
static void
test_recover_exact(int dim, double *ref, size_t n_ref)
{
	double		E = dim == 2 ? CS_EXTENT_2D : CS_EXTENT_3D;

	n_ref = lattice_dedupe(ref, n_ref, dim, 3.0);

	for (int type = 0; type < MCC_XFORM_COUNT; type++)
	{
		mcc_chamfer_opts o;
		mcc_chamfer_result res;
		mcc_error	err;
		mcc_status	st;
		double		tr;

		mcc_chamfer_opts_init(&o);
		o.resolution = 1.0;
		tr = recover(dim, type, ref, n_ref, 3, 0.0, 0, &o, &res, &st, &err);
		UNIT_CHECK(st == MCC_OK && tr <= 1e-6 * E && res.converged,
				   "%dD %s, exact data (%zu reference points): recovered, transfer error %.3g "
				   "(<= %.0g), residual %.3g, %d iterations, %d stages%s%s", dim,
				   mcc_xform_name(type), n_ref, tr, 1e-6 * E,
				   res.residual, res.iterations, res.stages, st ? ": " : "", st ? err.message : "");
	}
}

/*
 * Noisy recovery at the default (automatic) resolution: Gaussian noise of
 * 0.2% of the extent; plain chamfer without outliers, then 10% uniform
 * outliers with max_distance = 3 max(sigma, grid spacing) (graduated
 * truncation; the lookup's error is up to a spacing). Tolerance: transfer
 * error <= noise + grid spacing.
 */
static void
test_recover_noisy(int dim, double *ref, size_t n_ref)
{
	double		E = dim == 2 ? CS_EXTENT_2D : CS_EXTENT_3D;
	double		sigma = 0.002 * E;
	mcc_chamfer_ref rf;
	mcc_chamfer_opts o;
	mcc_error	err;
	double		h;

	mcc_chamfer_opts_init(&o);
	mcc_chamfer_ref_build(ref, n_ref, dim, &o, &rf, &err);
	h = rf.edt.geom.h * rf.scale;
	mcc_chamfer_ref_free(&rf);
	for (int type = 0; type < MCC_XFORM_COUNT; type++)
	{
		mcc_chamfer_result res;
		mcc_status	st;
		double		tr;
		size_t		n_obs = n_ref / 10;

		tr = recover(dim, type, ref, n_ref, 10, sigma, 0, &o, &res, &st, &err);
		UNIT_CHECK(st == MCC_OK && tr <= sigma + h,
				   "%dD %s, noise %.2g: transfer error %.3g (<= noise + spacing %.3g), residual %.3g, "
				   "%d iterations", dim, mcc_xform_name(type), sigma, tr, sigma + h, res.residual,
				   res.iterations);
		o.max_distance = 3 * fmax(sigma, h);
		tr = recover(dim, type, ref, n_ref, 10, sigma, n_obs / 10, &o, &res, &st, &err);
		UNIT_CHECK(st == MCC_OK && tr <= sigma + h && res.inliers >= n_obs * 8 / 10,
				   "%dD %s, noise and 10%% outliers, max_distance %.3g: transfer error %.3g "
				   "(<= %.3g), %zu of %zu inliers, %d iterations, %d stages", dim,
				   mcc_xform_name(type), o.max_distance, tr, sigma + h, res.inliers, res.n_points,
				   res.iterations, res.stages);
		o.max_distance = HUGE_VAL;
	}
}

/* Same bits for any thread count; pipelined LM = traditional LM. */
static void
test_threads(int dim, double *ref, size_t n_ref)
{
	double		m[16];
	size_t		n_obs = 0;		/* stays 0 (alignment fails) if cs_observed does */
	size_t		n_clean;
	double	   *obs;
	mcc_error	err;
	mcc_chamfer_result base;
	const int	threads[] = {2, 3, 8};
	mcc_chamfer_opts o;

	cs_random_matrix(4242, MCC_XFORM_AFFINE, dim, m);
	/* 10000 + 3000 points: 4 chunks, so that threads share the work */
	obs = cs_observed(8, ref, n_ref, dim, m, 1, 0, 0.001 * (dim == 2 ? 1000 : 100), 3000,
					  &n_obs, &n_clean);
	mcc_chamfer_opts_init(&o);
	o.transform = MCC_XFORM_AFFINE;
	o.max_distance = dim == 2 ? 5 : 0.5;
	UNIT_CHECK(mcc_chamfer_align(obs, n_obs, ref, n_ref, dim, &o, &base, &err) == MCC_OK,
			   "%dD: one-thread alignment of %zu points", dim, n_obs);
	for (int i = 0; i < 3; i++)
	{
		mcc_chamfer_result res;

		o.threads = threads[i];
		mcc_chamfer_align(obs, n_obs, ref, n_ref, dim, &o, &res, &err);
		UNIT_CHECK(memcmp(res.params, base.params, sizeof(res.params)) == 0 &&
				   memcmp(&res.residual, &base.residual, sizeof(double)) == 0 &&
				   res.iterations == base.iterations && res.evaluations == base.evaluations,
				   "%dD: %d threads give the same bits as one (residual %.17g vs %.17g, %d vs %d iterations)",
				   dim, threads[i], res.residual, base.residual, res.iterations, base.iterations);
	}
	o.threads = 3;
	o.pipelined = 1;
	{
		mcc_chamfer_result res;

		mcc_chamfer_align(obs, n_obs, ref, n_ref, dim, &o, &res, &err);
		UNIT_CHECK(memcmp(res.params, base.params, sizeof(res.params)) == 0 &&
				   res.iterations == base.iterations && res.evaluations < base.evaluations,
				   "%dD: pipelined LM takes the same path (%d iterations) with fewer passes (%d vs %d)",
				   dim, res.iterations, res.evaluations, base.evaluations);
	}
	free(obs);
}

/* Parameters -> matrix -> parameters for every type, and rotation vectors near pi. */
static void
test_params(void)
{
	for (int dim = 2; dim <= 3; dim++)
		for (int type = 0; type < MCC_XFORM_COUNT; type++)
		{
			double		p[16];
			double		m[16];
			double		q[16];
			double		worst = 0;
			mcc_error	err;
			int			L = mcc_chamfer_nparams(type, dim);

			cs_random_params(31 + type, type, dim, p);
			mcc_chamfer_params_to_matrix(type, dim, p, m, &err);
			mcc_chamfer_matrix_to_params(type, dim, m, q);
			for (int i = 0; i < L; i++)
				worst = fmax(worst, fabs(p[i] - q[i]) / fmax(1, fabs(p[i])));
			UNIT_CHECK(worst < 1e-12, "%dD %s: parameters survive a round trip through the matrix (%.2g)",
					   dim, mcc_xform_name(type), worst);
		}
	{
		/* 3D rotation of 179.9 degrees about an oblique axis */
		double		a = 179.9 * M_PI / 180;
		double		ax[3] = {0.48, -0.6, 0.64};
		double		p[6];
		double		m[16];
		double		q[6];
		mcc_error	err;
		double		d = 0;

		for (int k = 0; k < 3; k++)
			p[k] = ax[k] * a;
		p[3] = p[4] = p[5] = 1;
		mcc_chamfer_params_to_matrix(MCC_XFORM_EUCLIDEAN, 3, p, m, &err);
		mcc_chamfer_matrix_to_params(MCC_XFORM_EUCLIDEAN, 3, m, q);
		for (int k = 0; k < 3; k++)
			d = fmax(d, fabs(p[k] - q[k]));
		UNIT_CHECK(d < 1e-9, "a rotation of 179.9 degrees comes back from its matrix (%.2g)", d);
	}
	{
		double		p[4] = {0, 0.1, 0, 0};
		double		m[16];
		mcc_error	err;

		UNIT_CHECK(mcc_chamfer_params_to_matrix(MCC_XFORM_SIMILARITY, 2, p, m, &err) == MCC_ERR_VALUE,
				   "a similarity scale of 0 is refused: %s", err.message);
		p[0] = NAN;
		UNIT_CHECK(mcc_chamfer_params_to_matrix(MCC_XFORM_SIMILARITY, 2, p, m, &err) == MCC_ERR_VALUE,
				   "a NaN parameter is refused: %s", err.message);
	}
	UNIT_CHECK(mcc_xform_parse("Affine", 6) == MCC_XFORM_AFFINE && mcc_xform_parse("rigid", 5) == -1,
			   "transform names parse case-insensitively; unknown names do not");
}

/* Expect an error of a status whose message contains a string. */
static void
expect_error(const double *obs, size_t n_obs, const double *ref, size_t n_ref, int dim,
			 const mcc_chamfer_opts *o, mcc_status want, const char *needle, const char *what)
{
	mcc_chamfer_result res;
	mcc_error	err;
	mcc_status	st = mcc_chamfer_align(obs, n_obs, ref, n_ref, dim, o, &res, &err);

	UNIT_CHECK(st == want && strstr(err.message, needle) != NULL, "%s: \"%s\" (%s)", what,
			   st == MCC_OK ? "no error" : err.message, err.detail);
}

/* Bad input: every case a clear error of the right class. */
static void
test_errors(void)
{
	double		sq[] = {0, 0, 10, 0, 10, 10, 0, 10, 5, 5};
	double		line[] = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4};
	double		same[] = {3, 3, 3, 3, 3, 3};
	double		nanp[] = {0, 0, NAN, 1, 2, 2};
	double		infp[] = {0, 0, 1, 1, 2, -INFINITY};
	double		plane3[] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0, 2, 3, 0};
	double		cube3[] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1};
	mcc_chamfer_opts o;

	mcc_chamfer_opts_init(&o);
	expect_error(sq, 0, sq, 5, 2, &o, MCC_ERR_VALUE, "no observed points", "no observed points");
	expect_error(sq, 5, sq, 0, 2, &o, MCC_ERR_VALUE, "no reference points", "no reference points");
	expect_error(sq, 2, sq, 5, 4, &o, MCC_ERR_VALUE, "dimension", "dimension 4");
	expect_error(nanp, 3, sq, 5, 2, &o, MCC_ERR_VALUE, "observed point 2", "NaN observed coordinate");
	expect_error(sq, 5, infp, 3, 2, &o, MCC_ERR_VALUE, "reference point 3", "infinite reference coordinate");
	expect_error(sq, 5, same, 3, 2, &o, MCC_ERR_VALUE, "all coincide", "coincident reference points");
	expect_error(same, 3, sq, 5, 2, &o, MCC_ERR_VALUE, "degenerate", "coincident observed points");
	{
		/* issue 18: squares of these overflowed and read as "coincide" */
		double		huge[] = {1e200, 1e200, 1e300, 1e200, 1e300, 1e300, 1e200, 1e300, 5e299, 5e299};
		double		edge[] = {0, 0, 1e100, 0, 0, -1e100};
		double		tiny[] = {0, 0, 1e-60, 0, 0, 1e-60};
		double		wide[] = {0, 0, 1e50, 0, 0, 1e50};

		expect_error(sq, 5, huge, 5, 2, &o, MCC_ERR_RANGE, "reference point 1 has coordinate 1e+200, outside",
					 "reference coordinates 1e200..1e300");
		expect_error(huge, 5, sq, 5, 2, &o, MCC_ERR_RANGE, "observed point 1 has coordinate 1e+200",
					 "observed coordinates 1e200..1e300");
		expect_error(wide, 3, tiny, 3, 2, &o, MCC_ERR_RANGE, "reference sizes from the observed centroid",
					 "observed points 1e50 apart against a reference 1e-60 wide");
		{
			mcc_chamfer_result res;
			mcc_error	err;
			mcc_status	st;

			mcc_error_clear(&err);
			st = mcc_chamfer_align(edge, 3, edge, 3, 2, &o, &res, &err);
			UNIT_CHECK(st == MCC_OK && fabs(res.params[0] - 1.0) < 1e-9 && fabs(res.params[1]) < 1e-9,
					   "coordinates of exactly +-1e100 align onto themselves (s = %g, theta = %g; %s)",
					   res.params[0], res.params[1], err.message);
		}
	}
	o.transform = MCC_XFORM_AFFINE;
	expect_error(line, 5, sq, 5, 2, &o, MCC_ERR_VALUE, "observed points are degenerate",
				 "collinear observed points, affine");
	expect_error(sq, 5, line, 5, 2, &o, MCC_ERR_VALUE, "reference points are degenerate",
				 "collinear reference points, affine");
	o.transform = MCC_XFORM_EUCLIDEAN;
	{
		mcc_chamfer_result res;
		mcc_error	err;

		UNIT_CHECK(mcc_chamfer_align(line, 5, sq, 5, 2, &o, &res, &err) == MCC_OK,
				   "collinear observed points are fine for a euclidean alignment");
	}
	o.transform = MCC_XFORM_PROJECTIVE;
	expect_error(sq, 3, sq, 5, 2, &o, MCC_ERR_VALUE, "too few", "3 points, 2D projective");
	o.transform = MCC_XFORM_AFFINE;
	expect_error(plane3, 5, cube3, 5, 3, &o, MCC_ERR_VALUE, "degenerate", "coplanar observed points, 3D affine");
	o.transform = MCC_XFORM_SIMILARITY;
	o.max_distance = 0;
	expect_error(sq, 5, sq, 5, 2, &o, MCC_ERR_VALUE, "max_distance", "max_distance 0");
	o.max_distance = NAN;
	expect_error(sq, 5, sq, 5, 2, &o, MCC_ERR_VALUE, "max_distance", "max_distance NaN");
	o.max_distance = HUGE_VAL;
	o.resolution = -2;
	expect_error(sq, 5, sq, 5, 2, &o, MCC_ERR_VALUE, "resolution", "negative resolution");
	o.resolution = 1e-5;
	expect_error(sq, 5, sq, 5, 2, &o, MCC_ERR_LIMIT, "too large", "a grid over the cell limit");
	o.resolution = 0;
	o.transform = 7;
	expect_error(sq, 5, sq, 5, 2, &o, MCC_ERR_VALUE, "transform", "an unknown transform type");
	o.transform = MCC_XFORM_SIMILARITY;
	o.init_type = MCC_XFORM_AFFINE;
	for (int i = 0; i < 9; i++)
		o.init[i] = i % 4 == 0;
	expect_error(sq, 5, sq, 5, 2, &o, MCC_ERR_VALUE, "more general", "an affine start for a similarity");
	o.init_type = MCC_XFORM_SIMILARITY;
	o.init[2] = NAN;
	expect_error(sq, 5, sq, 5, 2, &o, MCC_ERR_VALUE, "not finite", "a NaN start");
	o.transform = MCC_XFORM_PROJECTIVE;
	o.init_type = MCC_XFORM_PROJECTIVE;
	for (int i = 0; i < 9; i++)
		o.init[i] = i % 4 == 0;
	o.init[8] = -1;				/* w < 0 everywhere */
	expect_error(sq, 5, sq, 5, 2, &o, MCC_ERR_VALUE, "infinity", "a projective start beyond infinity");
	o.threads = -1;
	o.init_type = -1;
	expect_error(sq, 5, sq, 5, 2, &o, MCC_ERR_VALUE, "thread", "a negative thread count");
}

/* An initial transform: the truth as start converges in few iterations to the same answer. */
static void
test_initial(void)
{
	size_t		n_ref = 3000;
	double	   *ref = make_ref(2, n_ref);
	double		m[16];
	size_t		n_obs;
	size_t		n_clean;
	double	   *obs;
	mcc_error	err;
	mcc_chamfer_opts o;
	mcc_chamfer_result cold;
	mcc_chamfer_result warm;

	n_ref = lattice_dedupe(ref, n_ref, 2, 3.0);

	cs_random_matrix(99, MCC_XFORM_SIMILARITY, 2, m);
	obs = cs_observed(99, ref, n_ref, 2, m, 3, 0, 0, 0, &n_obs, &n_clean);
	mcc_chamfer_opts_init(&o);
	o.resolution = 1.0;
	o.search = 0;				/* the paper's local fit from the centroids */
	mcc_chamfer_align(obs, n_obs, ref, n_ref, 2, &o, &cold, &err);
	o.init_type = MCC_XFORM_SIMILARITY;
	memcpy(o.init, m, sizeof(double) * 9);
	mcc_chamfer_align(obs, n_obs, ref, n_ref, 2, &o, &warm, &err);
	UNIT_CHECK(warm.stages == 1 && warm.iterations <= 3 && warm.residual <= 1e-9 &&
			   cs_transfer_rms(2, warm.matrix, m, obs, n_clean) <= 1e-6,
			   "starting at the truth: 1 stage, %d iterations, residual %.2g", warm.iterations, warm.residual);
	UNIT_CHECK(cold.stages == 2 && cold.iterations > warm.iterations,
			   "from the centroids: %d stages (euclidean, similarity), %d iterations", cold.stages,
			   cold.iterations);
	o.hierarchical = 0;
	o.init_type = -1;
	mcc_chamfer_align(obs, n_obs, ref, n_ref, 2, &o, &warm, &err);
	UNIT_CHECK(warm.stages == 1, "hierarchical = 0 runs one stage");
	free(obs);
	free(ref);
}

/* A cancel during the distance transform and during LM, with threads. */
static void
test_cancel(void)
{
	size_t		n_ref = 10000;
	double	   *ref = make_ref(2, n_ref);
	double		m[16];
	size_t		n_obs;
	size_t		n_clean;
	double	   *obs;
	mcc_error	err;
	mcc_chamfer_opts o;
	mcc_chamfer_result res;
	mcc_status	st;

	cs_random_matrix(5, MCC_XFORM_AFFINE, 2, m);
	obs = cs_observed(5, ref, n_ref, 2, m, 1, 0, 1, 0, &n_obs, &n_clean);
	mcc_chamfer_opts_init(&o);
	o.transform = MCC_XFORM_AFFINE;
	o.threads = 3;
	o.poll = stop_after;
	for (int k = 0; k < 2; k++)
	{
		polls = 0;
		poll_limit = k == 0 ? 1 : 30;	/* in the transform's lines; in LM */
		st = mcc_chamfer_align(obs, n_obs, ref, n_ref, 2, &o, &res, &err);
		UNIT_CHECK(st == MCC_ERR_INTERNAL && res.canceled && strstr(err.message, "canceled"),
				   "a poll cancels %s: \"%s\"", k == 0 ? "the distance transform" : "the LM iterations",
				   err.message);
	}
	free(obs);
	free(ref);
}

/* Every group of checks; TAP on stdout. */
int
main(void)
{
	test_table2();
	test_params();
	test_errors();
	test_initial();
	each_dim(3000, test_recover_exact);
	each_dim(10000, test_recover_noisy);
	each_dim(10000, test_threads);
	test_cancel();
	return unit_done();
}
