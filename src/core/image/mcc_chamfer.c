/*
 * mcc_chamfer.c: chamfer alignment set-up: options, transform names and
 * parameters, the prepared reference and observed sets with their checks,
 * and the expansion of Table 2's reduced terms into H. The LM driver is in
 * mcc_chamfer_lm.c, the CPU evaluator in mcc_chamfer_cpu.c.
 */
#include "mcc_chamfer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mcc_chamfer_int.h"

/* Spectral threshold of "spans a dimension": eigenvalue / largest eigenvalue. */
#define RANK_REL_EPS	1e-10
/* Spread below which a set counts as a single point: relative to the reference's sigma. */
#define SPREAD_ABS_EPS	1e-24
/* The distance transform grows the reference's box by this fraction of its largest side. */
#define EDT_MARGIN_FRACTION	0.1

static const char *const xform_names[MCC_XFORM_COUNT] = {
	"euclidean", "similarity", "affine", "projective"
};

/* Defaults. */
void
mcc_chamfer_opts_init(mcc_chamfer_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->transform = MCC_XFORM_SIMILARITY;
	opts->max_distance = HUGE_VAL;
	opts->threads = 1;
	opts->hierarchical = 1;
	opts->init_type = -1;
	opts->search = 1;
	opts->min_scale = MCC_CHAMFER_DEFAULT_MIN_SCALE;
	opts->max_scale = MCC_CHAMFER_DEFAULT_MAX_SCALE;
}

/* Name of a transform type. */
const char *
mcc_xform_name(int type)
{
	return type >= 0 && type < MCC_XFORM_COUNT ? xform_names[type] : "unknown";
}

/* Transform type by name. */
int
mcc_xform_parse(const char *name, size_t len)
{
	for (int t = 0; t < MCC_XFORM_COUNT; t++)
		if (strlen(xform_names[t]) == len && strncasecmp(name, xform_names[t], len) == 0)
			return t;
	return -1;
}

/* Parameters to a homogeneous matrix (layouts in the header). */
mcc_status
mcc_chamfer_params_to_matrix(int type, int dim, const double *params, double *m,
							 mcc_error *err)
{
	int			L;
	int			d1 = dim + 1;

	if ((dim != 2 && dim != 3) || type < 0 || type >= MCC_XFORM_COUNT)
		return mcc_error_set(err, MCC_ERR_VALUE, "invalid transform type or dimension");
	L = mcc_chamfer_nparams(type, dim);
	for (int i = 0; i < L; i++)
		if (!isfinite(params[i]))
			return mcc_error_set(err, MCC_ERR_VALUE,
								 "transform parameter %d is not a finite number", i + 1);
	if (type == MCC_XFORM_SIMILARITY && !(params[0] > 0.0))
		return mcc_error_set(err, MCC_ERR_VALUE, "similarity scale must be positive");
	mcc_cm_identity(d1, m);
	if (type == MCC_XFORM_EUCLIDEAN || type == MCC_XFORM_SIMILARITY)
	{
		double		s = type == MCC_XFORM_SIMILARITY ? params[0] : 1.0;
		const double *p = params + (type == MCC_XFORM_SIMILARITY ? 1 : 0);
		double		R[9];

		if (dim == 2)
			mcc_cm_rot2(p[0], R);
		else
			mcc_cm_rot_exp(p, R);
		for (int i = 0; i < dim; i++)
		{
			for (int j = 0; j < dim; j++)
				m[i * d1 + j] = s * R[i * dim + j];
			m[i * d1 + dim] = p[(dim == 2 ? 1 : 3) + i];
		}
	}
	else if (type == MCC_XFORM_AFFINE)
		memcpy(m, params, sizeof(double) * dim * d1);
	else
		memcpy(m, params, sizeof(double) * (d1 * d1 - 1));
	return MCC_OK;
}

/* A matrix to parameters of the given type. */
void
mcc_chamfer_matrix_to_params(int type, int dim, const double *m, double *params)
{
	int			d1 = dim + 1;

	if (type == MCC_XFORM_EUCLIDEAN || type == MCC_XFORM_SIMILARITY)
	{
		double	   *p = params + (type == MCC_XFORM_SIMILARITY ? 1 : 0);
		double		s;

		if (dim == 2)
		{
			s = hypot(m[0], m[3]);
			p[0] = atan2(m[3], m[0]);
			p[1] = m[2];
			p[2] = m[5];
		}
		else
		{
			double		R[9];

			s = sqrt(m[0] * m[0] + m[4] * m[4] + m[8] * m[8]);
			for (int i = 0; i < 3; i++)
				for (int j = 0; j < 3; j++)
					R[i * 3 + j] = m[i * 4 + j] / s;
			mcc_cm_rot_log(R, p);
			p[3] = m[3];
			p[4] = m[7];
			p[5] = m[11];
		}
		if (type == MCC_XFORM_SIMILARITY)
			params[0] = s;
	}
	else if (type == MCC_XFORM_AFFINE)
		memcpy(params, m, sizeof(double) * dim * d1);
	else
	{
		double		last = m[d1 * d1 - 1];

		for (int i = 0; i < d1 * d1 - 1; i++)
			params[i] = m[i] / last;
	}
}

/* Map a point by a homogeneous matrix. */
int
mcc_chamfer_map(int dim, const double *m, const double *p, double *out)
{
	int			d1 = dim + 1;
	double		w = m[dim * d1 + dim];

	for (int k = 0; k < dim; k++)
		w += m[dim * d1 + k] * p[k];
	if (!(w > 0.0))
		return 0;
	for (int i = 0; i < dim; i++)
	{
		double		v = m[i * d1 + dim];

		for (int k = 0; k < dim; k++)
			v += m[i * d1 + k] * p[k];
		out[i] = v / w;
	}
	return 1;
}

/* Points that the transform type needs at least. */
static int
needed_points(int type, int dim)
{
	static const int need[2][MCC_XFORM_COUNT] = {{2, 2, 3, 4}, {3, 3, 4, 5}};

	return need[dim - 2][type];
}

/* Dimensions the points must span for the transform type. */
static int
needed_rank(int type, int dim)
{
	return type <= MCC_XFORM_SIMILARITY ? dim - 1 : dim;
}

/*
 * Dimensions spanned by n normalized points about their centroid c: the
 * eigenvalues of their covariance that are not negligible (0 when they all
 * coincide at the reference's scale).
 */
static int
spanned_rank(const double *pts, size_t n, int dim, const double *c)
{
	double		C[9] = {0};
	double		ev[3];
	int			rank = 0;

	for (size_t i = 0; i < n; i++)
		for (int a = 0; a < dim; a++)
			for (int b = 0; b < dim; b++)
				C[a * dim + b] += (pts[i * dim + a] - c[a]) * (pts[i * dim + b] - c[b]);
	for (int k = 0; k < dim * dim; k++)
		C[k] /= (double) n;
	mcc_cm_sym_eigenvalues(dim, C, ev);
	if (!(ev[0] > SPREAD_ABS_EPS))
		return 0;
	for (int k = 0; k < dim; k++)
		if (ev[k] > RANK_REL_EPS * ev[0])
			rank++;
	return rank;
}

/* Check that every coordinate is finite; what names the set in the message. */
static mcc_status
check_points(const double *pts, size_t n, int dim, const char *what, mcc_error *err)
{
	if (dim != 2 && dim != 3)
		return mcc_error_set(err, MCC_ERR_VALUE, "point dimension must be 2 or 3, not %d", dim);
	if (n == 0)
		return mcc_error_set(err, MCC_ERR_VALUE, "no %s points", what);
	if (n > (size_t) INT32_MAX)
		return mcc_error_set(err, MCC_ERR_LIMIT, "too many %s points (%zu)", what, n);
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < dim; k++)
		{
			double		v = pts[i * dim + k];

			if (!isfinite(v))
				return mcc_error_set(err, MCC_ERR_VALUE,
									 "%s point %zu has a coordinate that is not finite", what, i + 1);
			if (fabs(v) > MCC_CHAMFER_MAX_COORD)
			{
				mcc_error_set(err, MCC_ERR_RANGE,
							  "%s point %zu has coordinate %g, outside -%g..%g",
							  what, i + 1, v, MCC_CHAMFER_MAX_COORD, MCC_CHAMFER_MAX_COORD);
				return mcc_error_detail(err, "Squares of larger coordinates overflow double precision; rescale the points.");
			}
		}
	return MCC_OK;
}

/* Centroid of n points. */
static void
centroid(const double *pts, size_t n, int dim, double *c)
{
	for (int k = 0; k < dim; k++)
	{
		double		s = 0.0;

		for (size_t i = 0; i < n; i++)
			s += pts[i * dim + k];
		c[k] = s / (double) n;
	}
}

/* Prepare a reference set (see the header). */
mcc_status
mcc_chamfer_ref_build(const double *pts, size_t n, int dim, const mcc_chamfer_opts *opts,
					  mcc_chamfer_ref *ref, mcc_error *err)
{
	double		ss = 0.0;
	double		cmax = 0.0;
	double		lo[3];
	double		hi[3];
	double		ext = 0.0;
	mcc_edt_opts eo;
	mcc_status	st;

	memset(ref, 0, sizeof(*ref));
	if ((st = check_points(pts, n, dim, "reference", err)) != MCC_OK)
		return st;
	if (!isfinite(opts->resolution) || opts->resolution < 0.0)
		return mcc_error_set(err, MCC_ERR_VALUE,
							 "resolution must be a finite number >= 0 (0: automatic)");
	centroid(pts, n, dim, ref->center);
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < dim; k++)
		{
			double		d = pts[i * dim + k] - ref->center[k];

			ss += d * d;
		}
	for (int k = 0; k < dim; k++)
		cmax = fmax(cmax, fabs(ref->center[k]));
	ref->scale = sqrt(ss / (double) n);
	if (!(ref->scale > 1e-12 * cmax) || !(ref->scale > 0.0) || !isfinite(ref->scale))
		return mcc_error_set(err, MCC_ERR_VALUE, "reference points all coincide");
	ref->dim = dim;
	ref->n = n;
	ref->pts = malloc(n * (size_t) dim * sizeof(double));
	if (ref->pts == NULL)
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for %zu reference points", n);
	for (int k = 0; k < dim; k++)
	{
		lo[k] = HUGE_VAL;
		hi[k] = -HUGE_VAL;
	}
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < dim; k++)
		{
			double		v = (pts[i * dim + k] - ref->center[k]) / ref->scale;

			ref->pts[i * dim + k] = v;
			lo[k] = fmin(lo[k], v);
			hi[k] = fmax(hi[k], v);
		}
	for (int k = 0; k < dim; k++)
		ext = fmax(ext, hi[k] - lo[k]);
	memset(&eo, 0, sizeof(eo));
	eo.resolution = opts->resolution / ref->scale;
	eo.margin = EDT_MARGIN_FRACTION * ext;
	eo.max_cells = opts->max_cells;
	eo.cancel = opts->cancel;
	eo.poll = opts->poll;
	eo.poll_arg = opts->poll_arg;
	if (opts->resolution > 0.0 && !(eo.resolution > 0.0 && isfinite(eo.resolution)))
	{
		mcc_chamfer_ref_free(ref);
		return mcc_error_set(err, MCC_ERR_VALUE, "resolution %g is out of range for these points",
							 opts->resolution);
	}
	if ((st = mcc_edt_build(ref->pts, n, dim, &eo, &ref->edt, err)) != MCC_OK)
	{
		mcc_chamfer_ref_free(ref);
		return st;
	}
	return MCC_OK;
}

/* Release a prepared reference. */
void
mcc_chamfer_ref_free(mcc_chamfer_ref *ref)
{
	if (ref == NULL)
		return;
	free(ref->pts);
	ref->pts = NULL;
	mcc_edt_free(&ref->edt);
}

/* The points (centred) must span the dimensions a transform needs. */
static mcc_status
check_rank(const double *pts, size_t n, int dim, int transform, const char *what, mcc_error *err)
{
	double		zero[3] = {0.0, 0.0, 0.0};
	int			need = needed_rank(transform, dim);
	int			rank = spanned_rank(pts, n, dim, zero);

	if (rank >= need)
		return MCC_OK;
	mcc_error_set(err, MCC_ERR_VALUE, "%s points are degenerate for a %s alignment", what,
				  mcc_xform_name(transform));
	return mcc_error_detail(err, "They span %d dimension%s; a %dD %s transform needs %d.",
							rank, rank == 1 ? "" : "s", dim, mcc_xform_name(transform), need);
}

/* Prepare an observed set (see the header). */
mcc_status
mcc_chamfer_obs_prepare(const mcc_chamfer_ref *ref, const double *pts, size_t n,
						int transform, mcc_chamfer_obs *obs, mcc_error *err)
{
	int			dim = ref->dim;
	int			need;
	mcc_status	st;

	memset(obs, 0, sizeof(*obs));
	if (transform < 0 || transform >= MCC_XFORM_COUNT)
		return mcc_error_set(err, MCC_ERR_VALUE, "invalid transform type %d", transform);
	if ((st = check_points(pts, n, dim, "observed", err)) != MCC_OK)
		return st;
	need = needed_points(transform, dim);
	if (n < (size_t) need)
	{
		mcc_error_set(err, MCC_ERR_VALUE, "too few observed points for a %s alignment",
					  mcc_xform_name(transform));
		return mcc_error_detail(err, "%zu given; a %dD %s transform needs at least %d.",
								n, dim, mcc_xform_name(transform), need);
	}
	obs->pts = malloc(n * (size_t) dim * sizeof(double));
	if (obs->pts == NULL)
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for %zu observed points", n);
	obs->dim = dim;
	obs->n = n;
	obs->scale = ref->scale;
	centroid(pts, n, dim, obs->center);
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < dim; k++)
		{
			double		v = (pts[i * dim + k] - obs->center[k]) / ref->scale;

			/* a tiny reference and a wide observed set: squares would overflow */
			if (!(fabs(v) <= MCC_CHAMFER_MAX_COORD))
			{
				mcc_chamfer_obs_free(obs);
				mcc_error_set(err, MCC_ERR_RANGE,
							  "observed point %zu lies %g reference sizes from the observed centroid, more than %g",
							  i + 1, fabs(v), MCC_CHAMFER_MAX_COORD);
				return mcc_error_detail(err, "The reference's size (RMS distance to its centroid) is %g; rescale the points.",
										ref->scale);
			}
			obs->pts[i * dim + k] = v;
		}

	if ((st = check_rank(obs->pts, n, dim, transform, "observed", err)) != MCC_OK ||
		(st = check_rank(ref->pts, ref->n, dim, transform, "reference", err)) != MCC_OK)
	{
		mcc_chamfer_obs_free(obs);
		return st;
	}
	return MCC_OK;
}

/* Release a prepared observed set. */
void
mcc_chamfer_obs_free(mcc_chamfer_obs *obs)
{
	if (obs == NULL)
		return;
	free(obs->pts);
	obs->pts = NULL;
}

/* Mirror the upper triangle of an L x L matrix into the lower one. */
static void
symmetrize(int L, double *H)
{
	for (int i = 0; i < L; i++)
		for (int j = i + 1; j < L; j++)
			H[j * L + i] = H[i * L + j];
}

/*
 * The 4 x 4 moment block [p; 1][p; 1]^T of 3D affine and projective from
 * the 9 terms (x^2 xy xz x y^2 yz y z^2 z) and N, placed at (o, o).
 */
static void
moment_block_3d(const double *h, double N, int L, int o, double *H)
{
	const int	idx[4][4] = {{0, 1, 2, 3}, {1, 4, 5, 6}, {2, 5, 7, 8}, {3, 6, 8, -1}};

	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++)
			H[(o + i) * L + o + j] = idx[i][j] < 0 ? N : h[idx[i][j]];
}

/* Index of the sorted third-order monomial p_a p_b p_c among h[9..18]. */
static int
cubic_index(int a, int b, int c)
{
	static const int base[3][3] = {{9, 10, 11}, {-1, 12, 13}, {-1, -1, 14}};
	int			t;

	/* sort a <= b <= c */
	if (a > b)
	{
		t = a;
		a = b;
		b = t;
	}
	if (b > c)
	{
		t = b;
		b = c;
		c = t;
	}
	if (a > b)
	{
		t = a;
		a = b;
		b = t;
	}
	if (a == 0)
		return base[b][c];
	if (a == 1)
		return b == 1 ? (c == 1 ? 15 : 16) : 17;
	return 18;
}

/* The upper triangle of a 2D H (L x L, zeroed) from the reduced terms h and the inliers N. */
static void
expand_2d(int type, double s, double N, const double *h, int L, double *H)
{
	if (type == MCC_XFORM_EUCLIDEAN)
	{
		H[0] = h[0];
		H[1] = h[1];
		H[2] = h[2];
		H[4] = N;
		H[8] = N;
	}
	else if (type == MCC_XFORM_SIMILARITY)
	{
		H[0 * 4 + 0] = h[0];
		H[0 * 4 + 2] = h[1];
		H[0 * 4 + 3] = h[2];
		H[1 * 4 + 1] = s * s * h[0];
		H[1 * 4 + 2] = -s * h[2];
		H[1 * 4 + 3] = s * h[1];
		H[2 * 4 + 2] = N;
		H[3 * 4 + 3] = N;
	}
	else
	{
		/* Mx = [x^2 xy x; xy y^2 y; x y N] on both output rows */
		const double Mx[9] = {h[0], h[1], h[2], h[1], h[3], h[4], h[2], h[4], N};

		for (int blk = 0; blk < 2; blk++)
			for (int i = 0; i < 3; i++)
				for (int j = 0; j < 3; j++)
					H[(3 * blk + i) * L + 3 * blk + j] = Mx[i * 3 + j];
		if (type == MCC_XFORM_PROJECTIVE)
		{
			/* columns 6 (-x'[x' y' 1] x') and 7, Table 2 */
			const double c6[6] = {-h[5], -h[6], -h[0], -h[6], -h[7], -h[1]};
			const double c7[6] = {-h[6], -h[7], -h[1], -h[7], -h[8], -h[3]};

			for (int i = 0; i < 6; i++)
			{
				H[i * L + 6] = c6[i];
				H[i * L + 7] = c7[i];
			}
			H[6 * L + 6] = h[9];
			H[6 * L + 7] = h[10];
			H[7 * L + 7] = h[11];
		}
	}
}

/* The upper triangle of a 3D H (L x L, zeroed) from the reduced terms h and the inliers N. */
static void
expand_3d(int type, double s, double N, const double *h, int L, double *H)
{
	if (type == MCC_XFORM_EUCLIDEAN || type == MCC_XFORM_SIMILARITY)
	{
		/* u moments: UU (3 x 3), us = sum u, tr = sum |u|^2 */
		const double UU[9] = {h[0], h[1], h[2], h[1], h[4], h[5], h[2], h[5], h[7]};
		const double us[3] = {h[3], h[6], h[8]};
		double		tr = h[0] + h[4] + h[7];
		int			o = type == MCC_XFORM_SIMILARITY ? 1 : 0;	/* first rotation index */
		double		sc = type == MCC_XFORM_SIMILARITY ? s : 1.0;
		/* [us]x */
		const double K[9] = {0.0, -us[2], us[1], us[2], 0.0, -us[0], -us[1], us[0], 0.0};

		for (int i = 0; i < 3; i++)
		{
			for (int j = 0; j < 3; j++)
			{
				H[(o + i) * L + o + j] = sc * sc * ((i == j ? tr : 0.0) - UU[i * 3 + j]);
				H[(o + i) * L + o + 3 + j] = sc * K[i * 3 + j];
			}
			H[(o + 3 + i) * L + o + 3 + i] = N;
		}
		if (type == MCC_XFORM_SIMILARITY)
		{
			H[0] = tr;
			for (int j = 0; j < 3; j++)
				H[0 * L + 4 + j] = us[j];
		}
	}
	else
	{
		for (int c = 0; c < 3; c++)
			moment_block_3d(h, N, L, 4 * c, H);
		if (type == MCC_XFORM_PROJECTIVE)
		{
			static const int sq[3][3] = {{0, 1, 2}, {1, 4, 5}, {2, 5, 7}};
			static const int r2[3][3] = {{19, 20, 21}, {20, 22, 23}, {21, 23, 24}};

			for (int c = 0; c < 3; c++)
				for (int k = 0; k < 3; k++)
				{
					for (int l = 0; l < 3; l++)
						H[(4 * c + l) * L + 12 + k] = -h[cubic_index(c, k, l)];
					H[(4 * c + 3) * L + 12 + k] = -h[sq[c][k]];
				}
			for (int k = 0; k < 3; k++)
				for (int k2 = k; k2 < 3; k2++)
					H[(12 + k) * L + 12 + k2] = h[r2[k][k2]];
		}
	}
}

/* Table 2's expansion (see the header): b copied, H's upper triangle by dimension, then mirrored. */
void
mcc_chamfer_expand(int type, int dim, double s, const double *sums, double *H, double *b)
{
	int			L = mcc_chamfer_nparams(type, dim);
	const double *h = sums + 2 + L;

	memcpy(b, sums + 2, sizeof(double) * L);
	memset(H, 0, sizeof(double) * L * L);
	if (dim == 2)
		expand_2d(type, s, sums[1], h, L, H);
	else
		expand_3d(type, s, sums[1], h, L, H);
	symmetrize(L, H);
}
