/*
 * mcc_align.c: minutiae alignment by chamfer fits from Hough (or rotation)
 * starts; mcc_align.h says how and why.
 */
#include "mcc_align.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_cmp.h"

/* Suppression radius between two starts, in Hough bins. */
#define PEAK_SEPARATION		2
/* Translation bin offset that makes packed keys non-negative. */
#define KEY_OFFSET			(1 << 20)

/* Defaults. */
void
mcc_align_opts_init(mcc_align_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->transform = MCC_XFORM_EUCLIDEAN;
	opts->use_directions = 1;
	opts->max_distance = MCC_ALIGN_DEFAULT_MAX_DISTANCE;
	opts->resolution = MCC_ALIGN_DEFAULT_RESOLUTION;
	opts->starts = MCC_ALIGN_DEFAULT_STARTS;
	opts->min_scale = MCC_CHAMFER_DEFAULT_MIN_SCALE;
	opts->max_scale = MCC_CHAMFER_DEFAULT_MAX_SCALE;
	opts->init_type = -1;
	opts->threads = 1;
}

/* Positions of a minutiae set as doubles (x0 y0 x1 y1 ...). */
static void
positions(const mcc_minutiae *ms, double *p)
{
	for (int i = 0; i < ms->count; i++)
	{
		p[2 * i] = ms->m[i].x;
		p[2 * i + 1] = ms->m[i].y;
	}
}

/* Chamfer options from alignment options. */
static void
chamfer_opts(const mcc_align_opts *opts, mcc_chamfer_opts *co)
{
	mcc_chamfer_opts_init(co);
	co->transform = opts->transform;
	co->resolution = opts->resolution;
	co->max_distance = opts->max_distance;
	co->threads = opts->threads;
	co->min_scale = opts->min_scale;
	co->max_scale = opts->max_scale;
	co->max_cells = opts->max_cells;
	co->cancel = opts->cancel;
	co->poll = opts->poll;
	co->poll_arg = opts->poll_arg;
}

/* Prepare a candidate's distance transform. */
mcc_status
mcc_align_prepare(const mcc_minutiae *cand, const mcc_align_opts *opts, mcc_chamfer_ref *ref,
				  mcc_error *err)
{
	double		q[2 * MCC_MAX_MINUTIAE];
	mcc_chamfer_opts co;

	memset(ref, 0, sizeof(*ref));
	if (cand->count == 0)
		return mcc_error_set(err, MCC_ERR_VALUE, "the candidate has no minutiae");
	chamfer_opts(opts, &co);
	positions(cand, q);
	return mcc_chamfer_ref_build(q, cand->count, 2, &co, ref, err);
}

/* A start: a similarity pose (scale s, rotation a, then translation t). */
typedef struct align_start
{
	double		s;
	double		a;
	double		t[2];
} align_start;

/* One Hough cell with its votes and its neighbourhood sum. */
typedef struct hough_cell
{
	uint64_t	key;
	int			count;
	int			score;
} hough_cell;

/* Pack a cell (angle bin, translation bins) into a key. */
static uint64_t
cell_key(int a, int bx, int by)
{
	return (uint64_t) a | ((uint64_t) (bx + KEY_OFFSET) << 5) | ((uint64_t) (by + KEY_OFFSET) << 27);
}

/* Unpack a key. */
static void
cell_unkey(uint64_t k, int *a, int *bx, int *by)
{
	*a = (int) (k & 31);
	*bx = (int) ((k >> 5) & ((1 << 22) - 1)) - KEY_OFFSET;
	*by = (int) (k >> 27) - KEY_OFFSET;
}

/* Open-addressing table of cells; cap is a power of two. */
typedef struct hough_table
{
	hough_cell *cells;
	size_t		cap;
} hough_table;

/* Slot of key: its cell or the empty slot where it would go (key + 1 is stored, 0 = empty). */
static size_t
table_slot(const hough_table *t, uint64_t key)
{
	size_t		i = (size_t) ((key + 1) * 0x9E3779B97F4A7C15ULL >> 20) & (t->cap - 1);

	while (t->cells[i].key != 0 && t->cells[i].key != key + 1)
		i = (i + 1) & (t->cap - 1);
	return i;
}

/* Votes in the cell of key (0 if none). */
static int
table_count(const hough_table *t, uint64_t key)
{
	size_t		i = table_slot(t, key);

	return t->cells[i].key == key + 1 ? t->cells[i].count : 0;
}

/* Circular bin distance of two angle bins. */
static int
angle_bin_dist(int a, int b)
{
	int			d = abs(a - b) % MCC_ALIGN_HOUGH_ANGLES;

	return d < MCC_ALIGN_HOUGH_ANGLES - d ? d : MCC_ALIGN_HOUGH_ANGLES - d;
}

/* Whether two cells are at most d bins apart on each axis (the angle's circular). */
static int
cells_near(uint64_t k1, uint64_t k2, int d)
{
	int			a1,
				bx1,
				by1;
	int			a2,
				bx2,
				by2;

	cell_unkey(k1, &a1, &bx1, &by1);
	cell_unkey(k2, &a2, &bx2, &by2);
	return angle_bin_dist(a1, a2) <= d && abs(bx1 - bx2) <= d && abs(by1 - by2) <= d;
}

/*
 * The start of a peak at scale sc: the mean pose of the votes (va, keys vk)
 * in the cells next to the peak's, its angle as their mean direction; the
 * centroids cp (probe) and cq (candidate) mapped back out of the votes.
 */
static void
peak_start(const double *va, const uint64_t *vk, size_t nv, uint64_t peak, double sc,
		   const double cp[2], const double cq[2], align_start *out)
{
	double		cs_sum = 0;
	double		sn_sum = 0;
	double		sx = 0;
	double		sy = 0;
	double		w = 0;

	for (size_t v = 0; v < nv; v++)
		if (cells_near(peak, vk[v], 1))
		{
			cs_sum += cos(va[3 * v]);
			sn_sum += sin(va[3 * v]);
			sx += va[3 * v + 1];
			sy += va[3 * v + 2];
			w += 1;
		}
	out->s = sc;
	out->a = atan2(sn_sum, cs_sum);
	/* x' = s R (x - cp) + cq + t = s R x + (cq + t - s R cp) */
	out->t[0] = cq[0] + sx / w - sc * (cos(out->a) * cp[0] - sin(out->a) * cp[1]);
	out->t[1] = cq[1] + sy / w - sc * (sin(out->a) * cp[0] + cos(out->a) * cp[1]);
}

/* Best cell first; ties by key, so that the order is deterministic. */
static int
cmp_cells(const void *x, const void *y)
{
	const hough_cell *a = x;
	const hough_cell *b = y;
	int			c = MCC_CMP(b->score, a->score);

	return MCC_CMP_THEN(c, a->key, b->key);
}

/*
 * Hough starts from minutia directions at one scale sc (mcc_align.h).
 * Returns the number of starts written (<= max), or -1 if out of memory.
 */
static int
hough_starts(const mcc_minutiae *probe, const mcc_minutiae *cand, double sc, int max,
			 align_start *out)
{
	int			np = probe->count;
	int			nc = cand->count;
	size_t		nv = (size_t) np * nc;
	double		cp[2] = {0, 0};
	double		cq[2] = {0, 0};
	double		bin = MCC_TWO_PI / MCC_ALIGN_HOUGH_ANGLES;
	double	   *va = malloc(nv * 3 * sizeof(double));
	uint64_t   *vk = malloc(nv * sizeof(uint64_t));
	hough_table t;
	hough_cell *list;
	size_t		n_list = 0;
	int			n_out = 0;

	t.cap = 1024;
	while (t.cap < 2 * nv)
		t.cap *= 2;
	t.cells = calloc(t.cap, sizeof(hough_cell));
	list = malloc(nv * sizeof(hough_cell));
	if (!va || !vk || !t.cells || !list)
	{
		free(va);
		free(vk);
		free(t.cells);
		free(list);
		return -1;
	}
	for (int i = 0; i < np; i++)
	{
		cp[0] += probe->m[i].x / (double) np;
		cp[1] += probe->m[i].y / (double) np;
	}
	for (int j = 0; j < nc; j++)
	{
		cq[0] += cand->m[j].x / (double) nc;
		cq[1] += cand->m[j].y / (double) nc;
	}
	/* votes: rotation theta_i - theta_j (mcc_align.h), centroid-relative translation */
	for (int i = 0; i < np; i++)
		for (int j = 0; j < nc; j++)
		{
			size_t		v = (size_t) i * nc + j;
			double		a = fmod((double) probe->m[i].theta - (double) cand->m[j].theta + MCC_TWO_PI,
								 MCC_TWO_PI);
			double		c = cos(a);
			double		s = sin(a);
			double		px = sc * (probe->m[i].x - cp[0]);
			double		py = sc * (probe->m[i].y - cp[1]);
			double		tx = (cand->m[j].x - cq[0]) - (c * px - s * py);
			double		ty = (cand->m[j].y - cq[1]) - (s * px + c * py);
			int			ab = (int) (a / bin + 0.5) % MCC_ALIGN_HOUGH_ANGLES;
			size_t		slot;

			va[3 * v] = a;
			va[3 * v + 1] = tx;
			va[3 * v + 2] = ty;
			vk[v] = cell_key(ab, (int) floor(tx / MCC_ALIGN_HOUGH_CELL),
							 (int) floor(ty / MCC_ALIGN_HOUGH_CELL));
			slot = table_slot(&t, vk[v]);
			if (t.cells[slot].key == 0)
			{
				t.cells[slot].key = vk[v] + 1;
				list[n_list++].key = vk[v];
			}
			t.cells[slot].count++;
		}
	/* neighbourhood sums */
	for (size_t k = 0; k < n_list; k++)
	{
		int			a;
		int			bx;
		int			by;
		int			score = 0;

		cell_unkey(list[k].key, &a, &bx, &by);
		for (int da = -1; da <= 1; da++)
			for (int dx = -1; dx <= 1; dx++)
				for (int dy = -1; dy <= 1; dy++)
					score += table_count(&t, cell_key((a + da + MCC_ALIGN_HOUGH_ANGLES) % MCC_ALIGN_HOUGH_ANGLES,
													  bx + dx, by + dy));
		list[k].score = score;
	}
	qsort(list, n_list, sizeof(hough_cell), cmp_cells);
	/* the strongest separated peaks, each as the mean pose of its neighbourhood's votes */
	for (size_t k = 0; k < n_list && n_out < max; k++)
	{
		int			separate = 1;

		for (int o = 0; o < n_out && separate; o++)
			separate = !cells_near(list[k].key, list[o].key, PEAK_SEPARATION);
		if (!separate)
			continue;
		peak_start(va, vk, nv, list[k].key, sc, cp, cq, &out[n_out]);
		/* keep the peak's key at position n_out for the separation test */
		list[n_out].key = list[k].key;
		n_out++;
	}
	free(va);
	free(vk);
	free(t.cells);
	free(list);
	return n_out;
}

/*
 * Minutia i of probe mapped by the homogeneous 3 x 3 matrix m into out
 * (x, y, theta); 0 (and NaN) where it goes to infinity.
 */
static int
map_one(const double *m, const mcc_minutia *mi, double *out)
{
	double		p[2] = {mi->x, mi->y};
	double		y[2];

	if (!mcc_chamfer_map(2, m, p, y))
	{
		out[0] = out[1] = out[2] = NAN;
		return 0;
	}
	{
		/* direction vector (cos, -sin) through the Jacobian of x -> (M x)/w */
		double		w = m[6] * p[0] + m[7] * p[1] + m[8];
		double		dx = cos(mi->theta);
		double		dy = -sin(mi->theta);
		double		ex = ((m[0] - y[0] * m[6]) * dx + (m[1] - y[0] * m[7]) * dy) / w;
		double		ey = ((m[3] - y[1] * m[6]) * dx + (m[4] - y[1] * m[7]) * dy) / w;
		double		th = atan2(-ey, ex);

		out[0] = y[0];
		out[1] = y[1];
		out[2] = th < 0 ? th + MCC_TWO_PI : th;
	}
	return 1;
}

/* Circular difference of two angles, in [0, pi]. */
static double
angle_gap(double a, double b)
{
	double		d = fabs(fmod(a - b, MCC_TWO_PI));

	return d > MCC_TWO_PI / 2 ? MCC_TWO_PI - d : d;
}

/*
 * Mates of probe minutiae mapped by m: in probe order, each takes the
 * nearest candidate minutia not yet taken within tau whose direction is
 * within MCC_ALIGN_MATE_ANGLE.
 */
static int
mated_count(const double *m, const mcc_minutiae *probe, const mcc_minutiae *cand, double tau)
{
	unsigned char taken[MCC_MAX_MINUTIAE] = {0};
	int			n = 0;

	for (int i = 0; i < probe->count; i++)
	{
		double		y[3];
		int			best = -1;
		double		bd = tau * tau;

		if (!map_one(m, &probe->m[i], y))
			continue;
		for (int j = 0; j < cand->count; j++)
		{
			double		dx = y[0] - cand->m[j].x;
			double		dy = y[1] - cand->m[j].y;
			double		d = dx * dx + dy * dy;

			if (!taken[j] && d <= bd && angle_gap(y[2], cand->m[j].theta) <= MCC_ALIGN_MATE_ANGLE)
			{
				bd = d;
				best = j;
			}
		}
		if (best >= 0)
		{
			taken[best] = 1;
			n++;
		}
	}
	return n;
}

/* Probe minutiae mapped into the candidate's frame, and how many land near a candidate minutia. */
static void
map_minutiae(const mcc_minutiae *probe, const mcc_minutiae *cand, double tau, mcc_align_result *res)
{
	const double *m = res->fit.matrix;

	res->n_probe = probe->count;
	res->paired = 0;
	for (int i = 0; i < probe->count; i++)
	{
		double	   *out = res->mapped[i];

		if (!map_one(m, &probe->m[i], out))
			continue;
		for (int j = 0; j < cand->count; j++)
		{
			double		ddx = out[0] - cand->m[j].x;
			double		ddy = out[1] - cand->m[j].y;

			if (ddx * ddx + ddy * ddy <= tau * tau)
			{
				res->paired++;
				break;
			}
		}
	}
	res->mated = mated_count(m, probe, cand, tau);
}

/* One chamfer fit through opts->fit or on the CPU. */
static mcc_status
fit_one(const mcc_align_opts *opts, const mcc_chamfer_ref *ref, const double *p, int n,
		const mcc_chamfer_opts *co, mcc_chamfer_result *r, mcc_error *err)
{
	memset(r, 0, sizeof(*r));
	if (opts->fit != NULL)
		return opts->fit(opts->fit_arg, ref, p, (size_t) n, co, r, err);
	return mcc_chamfer_align_ref(ref, p, (size_t) n, co, r, err);
}

/*
 * The Hough starts at every scale (mcc_align.h) into starts; returns their
 * count or -1 when out of memory.
 */
static int
all_hough_starts(const mcc_minutiae *probe, const mcc_minutiae *cand, const mcc_align_opts *opts,
				 int per_scale, align_start *starts)
{
	int			n_scales = 1;
	double		lo = 0.0;
	double		span = 0.0;
	int			n = 0;

	if (opts->transform != MCC_XFORM_EUCLIDEAN && opts->max_scale > opts->min_scale)
	{
		n_scales = MCC_ALIGN_HOUGH_SCALES;
		lo = log(opts->min_scale);
		span = log(opts->max_scale) - lo;
	}
	else if (opts->transform != MCC_XFORM_EUCLIDEAN)
		lo = log(opts->min_scale);
	for (int k = 0; k < n_scales; k++)
	{
		double		sc = exp(lo + (n_scales > 1 ? span * k / (n_scales - 1) : 0.0));
		int			got = hough_starts(probe, cand, sc, per_scale, starts + n);

		if (got < 0)
			return -1;
		n += got;
	}
	return n;
}

/* Align probe onto a prepared candidate. */
mcc_status
mcc_align_minutiae_ref(const mcc_minutiae *probe, const mcc_minutiae *cand,
					   const mcc_chamfer_ref *ref, const mcc_align_opts *opts,
					   mcc_align_result *res, mcc_error *err)
{
	double		p[2 * MCC_MAX_MINUTIAE];
	align_start starts[MCC_ALIGN_HOUGH_SCALES * MCC_ALIGN_MAX_STARTS];
	int			n_starts;
	int			per_scale = opts->starts > 0 ? opts->starts : MCC_ALIGN_DEFAULT_STARTS;
	mcc_chamfer_opts co;
	mcc_chamfer_result r;
	mcc_status	st;
	int			best = -1;
	int			best_mated = -1;

	memset(res, 0, sizeof(*res));
	if (probe->count == 0)
		return mcc_error_set(err, MCC_ERR_VALUE, "the probe has no minutiae");
	if (cand->count == 0)
		return mcc_error_set(err, MCC_ERR_VALUE, "the candidate has no minutiae");
	if (per_scale > MCC_ALIGN_MAX_STARTS)
		per_scale = MCC_ALIGN_MAX_STARTS;
	if (isnan(opts->max_distance) || !(opts->max_distance > 0) || isinf(opts->max_distance))
		return mcc_error_set(err, MCC_ERR_VALUE, "max_distance must be a positive number of pixels");
	if (opts->transform != MCC_XFORM_EUCLIDEAN &&
		(!(opts->min_scale > 0) || !(opts->max_scale >= opts->min_scale) || isinf(opts->max_scale)))
		return mcc_error_set(err, MCC_ERR_VALUE, "the scale range needs 0 < min_scale <= max_scale");
	positions(probe, p);
	chamfer_opts(opts, &co);
	if (opts->init_type >= 0 || !opts->use_directions)
	{
		/* one fit: from the initial transform (trusted), or from the position search */
		co.init_type = opts->init_type;
		if (opts->init_type >= 0)
			memcpy(co.init, opts->init, sizeof(opts->init));
		st = fit_one(opts, ref, p, probe->count, &co, &r, err);
		res->starts_tried = opts->init_type >= 0 ? 1 : r.starts;
		res->iterations = r.iterations;
		res->fit = r;
		if (st != MCC_OK)
			return st;
		res->start = 0;
		map_minutiae(probe, cand, opts->max_distance, res);
		return MCC_OK;
	}
	n_starts = all_hough_starts(probe, cand, opts, per_scale, starts);
	if (n_starts < 0)
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for the alignment votes");
	/* each start is trusted as close: truncated from the start */
	co.init_type = opts->transform == MCC_XFORM_EUCLIDEAN ? MCC_XFORM_EUCLIDEAN : MCC_XFORM_SIMILARITY;
	for (int k = 0; k < n_starts; k++)
	{
		double		c = starts[k].s * cos(starts[k].a);
		double		s = starts[k].s * sin(starts[k].a);
		const double init[9] = {c, -s, starts[k].t[0], s, c, starts[k].t[1], 0, 0, 1};
		int			mated;

		memcpy(co.init, init, sizeof(init));
		st = fit_one(opts, ref, p, probe->count, &co, &r, err);
		res->starts_tried++;
		res->iterations += r.iterations;
		if (st != MCC_OK)
		{
			res->fit.canceled = r.canceled;
			return st;
		}
		mated = mated_count(r.matrix, probe, cand, opts->max_distance);
		if (best < 0 || mated > best_mated || (mated == best_mated && r.sum_sq < res->fit.sum_sq))
		{
			best = k;
			best_mated = mated;
			res->fit = r;
		}
	}
	if (best < 0)
		return mcc_error_set(err, MCC_ERR_VALUE, "no alignment start: the minutiae cast no votes");
	res->start = best;
	map_minutiae(probe, cand, opts->max_distance, res);
	return MCC_OK;
}

/* Align probe onto cand. */
mcc_status
mcc_align_minutiae(const mcc_minutiae *probe, const mcc_minutiae *cand,
				   const mcc_align_opts *opts, mcc_align_result *res, mcc_error *err)
{
	volatile int local_cancel = 0;
	mcc_align_opts o;
	mcc_chamfer_ref ref;
	mcc_status	st;

	if (opts == NULL)
		mcc_align_opts_init(&o);
	else
		o = *opts;
	/* a flag of our own, so that a poll's cancel is told from a failure */
	if (o.cancel == NULL)
		o.cancel = &local_cancel;
	memset(res, 0, sizeof(*res));
	if (probe->count == 0)
		return mcc_error_set(err, MCC_ERR_VALUE, "the probe has no minutiae");
	if ((st = mcc_align_prepare(cand, &o, &ref, err)) != MCC_OK)
	{
		res->fit.canceled = *o.cancel != 0;
		return st;
	}
	st = mcc_align_minutiae_ref(probe, cand, &ref, &o, res, err);
	mcc_chamfer_ref_free(&ref);
	return st;
}
