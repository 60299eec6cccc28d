/*
 * mcc_chamfer_search.c: the global pose search of 2D chamfer alignment
 * (mcc_chamfer_search.h says what and why): the reference's band-pass
 * pyramid, the observed sample and its energies, the CPU scorer and the
 * coarse-to-fine driver.
 */
#include "mcc_chamfer_search.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_cmp.h"
#include "mcc_job.h"
#include "mcc_rng.h"

#define SEARCH_TWO_PI		6.28318530717958647692
/* Every coordinate of the normalized sets beyond this many RMS radii is left out of the grids. */
#define BOX_CLAMP			6.0
/* Cells of a pyramid level at most (8 MB of int32). */
#define LEVEL_MAX_CELLS		((size_t) 1 << 21)
/* The difference of Gaussians: sigma b minus (1/K^2) times sigma K b, zero integral. */
#define DOG_K				2.0
/* Gaussians are cut at this many sigmas. */
#define DOG_CUT				3.0
/* Grid values are scaled so that the largest magnitude is this. */
#define VALUE_SCALE			((double) (1 << 20))
/* Energy table: the kernel of u = d^2 / b^2 on [0, TABLE_U), linear between entries. */
#define TABLE_U				(2.0 * DOG_CUT * DOG_CUT * DOG_K * DOG_K)
#define TABLE_N				4096
/* Steps of level 0 at most (rotation radians, log-scale). */
#define MAX_ANGLE_STEP		(SEARCH_TWO_PI / 8)
#define MAX_SCALE_STEP		0.5
/* A sample whose RMS radius times max_scale is below this (reference radii) is a part (first_level). */
#define PART_RADIUS			1.0
/* A part's second pass starts at the coarsest level with a blur at most this times its radius. */
#define PART_BLUR			0.2
/* Poses per unit of work of the CPU scorer. */
#define SCORE_CHUNK			64
/* Fixed seed of the sample. */
#define SAMPLE_SEED			0x5eed2d5a3c1eULL

/* The pose matrix of (theta, sigma, t). */
void
mcc_chamfer_spose_set(mcc_chamfer_spose *P, double theta, double sigma, double tx, double ty)
{
	double		s = exp(sigma);
	double		c = s * cos(theta);
	double		sn = s * sin(theta);

	P->m[0] = c;
	P->m[1] = -sn;
	P->m[2] = tx;
	P->m[3] = sn;
	P->m[4] = c;
	P->m[5] = ty;
}

/* The difference of Gaussians at squared distance d2 for blur b (unnormalized). */
static double
dog(double d2, double b)
{
	double		u = d2 / (b * b);

	return exp(-0.5 * u) - exp(-0.5 * u / (DOG_K * DOG_K)) / (DOG_K * DOG_K);
}

/* Blur the nx x ny array a along x (dx = 1) or y by a kernel of radius R into out. */
static void
blur_axis(const double *a, int nx, int ny, const double *k, int R, int along_x, double *out)
{
	for (int y = 0; y < ny; y++)
		for (int x = 0; x < nx; x++)
		{
			double		s = 0.0;
			int			c = along_x ? x : y;
			int			n = along_x ? nx : ny;
			int			lo = c - R < 0 ? -c : -R;
			int			hi = c + R >= n ? n - 1 - c : R;

			for (int i = lo; i <= hi; i++)
				s += k[i + R] * (along_x ? a[(size_t) y * nx + x + i] : a[(size_t) (y + i) * nx + x]);
			out[(size_t) y * nx + x] = s;
		}
}

/*
 * Add w times the Gaussian blur (sigma) of the splat a into acc; tmp and
 * tmp2 are scratch arrays of the same size.
 */
static int
add_gaussian(const double *a, int nx, int ny, double h, double sigma, double w, double *acc,
			 double *tmp, double *tmp2)
{
	int			R = (int) ceil(DOG_CUT * sigma / h);
	double	   *k = malloc(sizeof(double) * (2 * (size_t) R + 1));

	if (k == NULL)
		return 0;
	for (int i = -R; i <= R; i++)
		k[i + R] = exp(-0.5 * (i * h / sigma) * (i * h / sigma));
	blur_axis(a, nx, ny, k, R, 1, tmp);
	blur_axis(tmp, nx, ny, k, R, 0, tmp2);
	for (size_t c = 0; c < (size_t) nx * ny; c++)
		acc[c] += w * tmp2[c];
	free(k);
	return 1;
}

/* One level: splat the points on the grid, band-pass, quantize. */
static mcc_status
level_build(const double *pts, size_t n, const double *lo, const double *hi, double b,
			mcc_chamfer_slevel *lv, mcc_error *err)
{
	double		margin = DOG_CUT * DOG_K * b;
	double		h = b / 2.0;
	int			nx;
	int			ny;
	size_t		cells;
	double	   *a;
	double	   *acc;
	double	   *tmp;
	double	   *tmp2;
	double		vmax = 0.0;
	int			ok;

	for (;;)
	{
		nx = (int) ceil((hi[0] - lo[0] + 2 * margin) / h) + 1;
		ny = (int) ceil((hi[1] - lo[1] + 2 * margin) / h) + 1;
		cells = (size_t) nx * (size_t) ny;
		if (cells <= LEVEL_MAX_CELLS)
			break;
		h *= 1.25;
	}
	lv->blur = b;
	lv->geom.nx = nx;
	lv->geom.ny = ny;
	lv->geom.origin[0] = lo[0] - margin;
	lv->geom.origin[1] = lo[1] - margin;
	lv->geom.inv_h = 1.0 / h;
	a = calloc(cells, sizeof(double));
	acc = calloc(cells, sizeof(double));
	tmp = malloc(cells * sizeof(double));
	tmp2 = malloc(cells * sizeof(double));
	lv->v = malloc(cells * sizeof(int32_t));
	if (!a || !acc || !tmp || !tmp2 || !lv->v)
	{
		free(a);
		free(acc);
		free(tmp);
		free(tmp2);
		free(lv->v);
		lv->v = NULL;
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for the alignment search");
	}
	for (size_t i = 0; i < n; i++)
	{
		double		fx = (pts[2 * i] - lv->geom.origin[0]) * lv->geom.inv_h + 0.5;
		double		fy = (pts[2 * i + 1] - lv->geom.origin[1]) * lv->geom.inv_h + 0.5;

		if (fx >= 0.0 && fy >= 0.0 && fx < (double) nx && fy < (double) ny)
			a[(size_t) (int) fy * nx + (int) fx] += 1.0;
	}
	ok = add_gaussian(a, nx, ny, h, b, 1.0, acc, tmp, tmp2) &&
		add_gaussian(a, nx, ny, h, DOG_K * b, -1.0 / (DOG_K * DOG_K), acc, tmp, tmp2);
	free(a);
	free(tmp);
	free(tmp2);
	if (!ok)
	{
		free(acc);
		free(lv->v);
		lv->v = NULL;
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for the alignment search");
	}
	for (size_t c = 0; c < cells; c++)
		vmax = fmax(vmax, fabs(acc[c]));
	for (size_t c = 0; c < cells; c++)
		lv->v[c] = vmax > 0.0 ? (int32_t) lround(acc[c] * (VALUE_SCALE / vmax)) : 0;
	free(acc);
	return MCC_OK;
}

/* Build the pyramid. */
mcc_status
mcc_chamfer_pyramid_build(const double *pts, size_t n, mcc_chamfer_pyramid *pyr, mcc_error *err)
{
	static atomic_uint_fast64_t next_id = 1;
	double		lo[2] = {HUGE_VAL, HUGE_VAL};
	double		hi[2] = {-HUGE_VAL, -HUGE_VAL};
	mcc_status	st;

	memset(pyr, 0, sizeof(*pyr));
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < 2; k++)
		{
			double		v = fmin(fmax(pts[2 * i + k], -BOX_CLAMP), BOX_CLAMP);

			lo[k] = fmin(lo[k], v);
			hi[k] = fmax(hi[k], v);
		}
	if (n == 0)
		return mcc_error_set(err, MCC_ERR_VALUE, "no reference points");
	memcpy(pyr->box_lo, lo, sizeof(lo));
	memcpy(pyr->box_hi, hi, sizeof(hi));
	for (int l = 0; l < MCC_CHAMFER_SEARCH_LEVELS; l++)
	{
		if ((st = level_build(pts, n, lo, hi, MCC_CHAMFER_SEARCH_B0 / (double) (1 << l),
							  &pyr->level[l], err)) != MCC_OK)
		{
			mcc_chamfer_pyramid_free(pyr);
			return st;
		}
		pyr->levels = l + 1;
	}
	pyr->id = atomic_fetch_add(&next_id, 1);
	return MCC_OK;
}

/* Free a pyramid. */
void
mcc_chamfer_pyramid_free(mcc_chamfer_pyramid *pyr)
{
	if (pyr == NULL)
		return;
	for (int l = 0; l < MCC_CHAMFER_SEARCH_LEVELS; l++)
	{
		free(pyr->level[l].v);
		pyr->level[l].v = NULL;
	}
	pyr->levels = 0;
}

/* Ascending order of size_t, for qsort. */
static int
cmp_size(const void *a, const void *b)
{
	return MCC_CMP(*(const size_t *) a, *(const size_t *) b);
}

/* The sample (Floyd's selection of distinct indices, then index order). */
int
mcc_chamfer_search_sample(const double *pts, size_t n, double *out)
{
	size_t		idx[MCC_CHAMFER_SEARCH_SAMPLE];
	int			m = 0;

	if (n <= MCC_CHAMFER_SEARCH_SAMPLE)
	{
		memcpy(out, pts, n * 2 * sizeof(double));
		return (int) n;
	}
	{
		mcc_rng		r;

		mcc_rng_seed(&r, mcc_rng_key(SAMPLE_SEED, n, 0, 0));
		for (size_t j = n - MCC_CHAMFER_SEARCH_SAMPLE; j < n; j++)
		{
			size_t		t = (size_t) mcc_rng_below(&r, (uint64_t) j + 1);
			int			seen = 0;

			for (int k = 0; k < m && !seen; k++)
				seen = idx[k] == t;
			idx[m++] = seen ? j : t;
		}
	}
	qsort(idx, (size_t) m, sizeof(size_t), cmp_size);
	for (int k = 0; k < m; k++)
	{
		out[2 * k] = pts[2 * idx[k]];
		out[2 * k + 1] = pts[2 * idx[k] + 1];
	}
	return m;
}

/* ---- the CPU scorer ---- */

/* Score poses [lo, hi) of a batch. */
static void
score_range(const mcc_chamfer_slevel *lv, const double *pts, int n, const mcc_chamfer_spose *poses,
			int lo, int hi, int64_t *out)
{
	for (int i = lo; i < hi; i++)
	{
		int64_t		s = 0;

		for (int k = 0; k < n; k++)
			s += mcc_chamfer_score_point(&lv->geom, lv->v, &poses[i], pts + 2 * k);
		out[i] = s;
	}
}

/* A batch shared among threads: chunks of SCORE_CHUNK poses from an atomic counter. */
typedef struct score_batch
{
	mcc_job_runner run;
	const mcc_chamfer_slevel *lv;
	const double *pts;
	int			n;
	const mcc_chamfer_spose *poses;
	int			n_poses;
	int64_t    *out;
	atomic_int	next;
	volatile int *cancel;
} score_batch;

/* A worker: chunks until none is left or the batch is canceled. */
static void *
score_worker(void *arg)
{
	score_batch *b = *(score_batch **) arg;

	for (;;)
	{
		int			c = atomic_fetch_add(&b->next, 1);
		int			lo = c * SCORE_CHUNK;

		if (lo >= b->n_poses || mcc_job_cancelled(&b->run) || (b->cancel && *b->cancel))
			break;
		score_range(b->lv, b->pts, b->n, b->poses, lo,
					lo + SCORE_CHUNK < b->n_poses ? lo + SCORE_CHUNK : b->n_poses, b->out);
	}
	mcc_job_thread_exit(&b->run);
	return NULL;
}

/* Score a batch on the calling thread and up to threads - 1 more... all on workers when threads > 1. */
static mcc_status
score_cpu_threads(int threads, volatile int *cancel, const mcc_chamfer_pyramid *pyr, int level,
				  const double *pts, int n, const mcc_chamfer_spose *poses, int n_poses,
				  int64_t *out, mcc_error *err)
{
	score_batch b;
	score_batch *args[MCC_CHAMFER_SEARCH_MAX_THREADS];
	int			chunks = (n_poses + SCORE_CHUNK - 1) / SCORE_CHUNK;
	mcc_status	st;

	if (threads > chunks)
		threads = chunks;
	if (threads > MCC_CHAMFER_SEARCH_MAX_THREADS)
		threads = MCC_CHAMFER_SEARCH_MAX_THREADS;
	if (threads <= 1)
	{
		score_range(&pyr->level[level], pts, n, poses, 0, n_poses, out);
		return cancel && *cancel ? mcc_error_set(err, MCC_ERR_INTERNAL, "alignment canceled") : MCC_OK;
	}
	memset(&b, 0, sizeof(b));
	if (!mcc_job_runner_init(&b.run, threads))
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for the alignment search threads");
	b.lv = &pyr->level[level];
	b.pts = pts;
	b.n = n;
	b.poses = poses;
	b.n_poses = n_poses;
	b.out = out;
	b.cancel = cancel;
	atomic_init(&b.next, 0);
	for (int i = 0; i < threads; i++)
		args[i] = &b;
	st = mcc_job_runner_start(&b.run, threads, score_worker, args, sizeof(args[0]),
							  "alignment search threads", err);
	if (st == MCC_OK)
	{
		mcc_job_wait(&b.run, -1);
		mcc_job_join(&b.run);
		if (cancel && *cancel)
			st = mcc_error_set(err, MCC_ERR_INTERNAL, "alignment canceled");
	}
	mcc_job_runner_free(&b.run);
	return st;
}

/* The CPU scorer of the header (ctx: a mcc_chamfer_score_cpu_ctx or NULL for one thread). */
mcc_status
mcc_chamfer_score_cpu(void *ctx, const mcc_chamfer_pyramid *pyr, int level, const double *pts,
					  int n, const mcc_chamfer_spose *poses, int n_poses, int64_t *out,
					  mcc_error *err)
{
	const mcc_chamfer_score_cpu_ctx *c = ctx;

	return score_cpu_threads(c ? c->threads : 1, c ? c->cancel : NULL, pyr, level, pts, n, poses,
							 n_poses, out, err);
}

/* ---- the search ---- */

/* A pose on the lattice of the finest steps, with its score. */
typedef struct lpose
{
	int32_t		k[4];			/* theta (wrapped), sigma (clamped), tx, ty */
	double		score;
} lpose;

/* The lattice and what the search needs along. */
typedef struct search_ctx
{
	const mcc_chamfer_pyramid *pyr;
	const double *pts;
	int			n;
	const mcc_chamfer_search_opts *opts;
	mcc_chamfer_score_cpu_ctx cpu;
	int			first;			/* the coarsest level searched (first_level) */
	int			fine;			/* finest steps per first-level step: 2^(levels - 1 - first) */
	int			n_theta;		/* lattice rotations (a full turn) */
	int			n_sigma;		/* lattice scales (1: none searched) */
	double		d_theta;		/* finest steps */
	double		d_sigma;
	double		d_t[2];
	double		sigma0;
	double		t0[2];
	double	   *d2;				/* squared distances of the sample's pairs */
	size_t		n_pairs;
	double		table[TABLE_N + 1];	/* the kernel by u = d^2 / b^2 */
	double	   *energy;			/* [level][n_sigma], NaN until computed */
	mcc_chamfer_search_stats *stats;
} search_ctx;

/* Lexicographic order of lattice coordinates. */
static int
cmp_lattice(const void *a, const void *b)
{
	const lpose *x = a;
	const lpose *y = b;

	for (int i = 0; i < 4; i++)
		if (x->k[i] != y->k[i])
			return x->k[i] < y->k[i] ? -1 : 1;
	return 0;
}

/* Best score first, ties by lattice order. */
static int
cmp_score(const void *a, const void *b)
{
	const lpose *x = a;
	const lpose *y = b;
	int			c = MCC_CMP(y->score, x->score);

	return c != 0 ? c : cmp_lattice(a, b);
}

/* The sample's band-pass energy at lattice scale is, level l (the NCC denominator). */
static double
energy(search_ctx *c, int l, int is)
{
	double	   *e = &c->energy[(size_t) l * c->n_sigma + is];

	if (isnan(*e))
	{
		double		s2 = exp(2.0 * (c->sigma0 + is * c->d_sigma));
		double		b = c->pyr->level[l].blur;
		double		f = s2 / (b * b) * (TABLE_N / TABLE_U);
		const double *t = c->table;
		double		sum = 0.75 * c->n;	/* the pairs (i, i): 1 - 1/K^2 */

		for (size_t p = 0; p < c->n_pairs; p++)
		{
			double		x = c->d2[p] * f;
			int			i = (int) x;

			if (i < TABLE_N)
				sum += 2.0 * (t[i] + (x - i) * (t[i + 1] - t[i]));
		}
		*e = sum > 1e-12 ? sum : 1e-12;
	}
	return *e;
}

/* The pose of lattice coordinates. */
static void
lattice_pose(const search_ctx *c, const int32_t *k, mcc_chamfer_spose *P)
{
	mcc_chamfer_spose_set(P, k[0] * c->d_theta, c->sigma0 + k[1] * c->d_sigma,
						  c->t0[0] + k[2] * c->d_t[0], c->t0[1] + k[3] * c->d_t[1]);
}

/* Poll and cancel flag between batches. */
static int
search_canceled(const search_ctx *c)
{
	const mcc_chamfer_search_opts *o = c->opts;

	if (o->cancel && *o->cancel)
		return 1;
	if (o->poll && o->poll(o->poll_arg))
	{
		if (o->cancel)
			*o->cancel = 1;
		return 1;
	}
	return 0;
}

/*
 * Score a batch of lattice poses on level l (after removing duplicates):
 * their normalized scores. *n may shrink.
 */
static mcc_status
score_batch_level(search_ctx *c, int l, lpose *cand, int *n, mcc_error *err)
{
	mcc_chamfer_spose *poses;
	int64_t    *raw;
	int			m = 0;
	mcc_status	st;

	qsort(cand, (size_t) *n, sizeof(lpose), cmp_lattice);
	for (int i = 0; i < *n; i++)
		if (m == 0 || cmp_lattice(&cand[i], &cand[m - 1]) != 0)
			cand[m++] = cand[i];
	*n = m;
	poses = malloc(sizeof(mcc_chamfer_spose) * (size_t) (m ? m : 1));
	raw = malloc(sizeof(int64_t) * (size_t) (m ? m : 1));
	if (!poses || !raw)
	{
		free(poses);
		free(raw);
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for the alignment search");
	}
	for (int i = 0; i < m; i++)
		lattice_pose(c, cand[i].k, &poses[i]);
	if (c->opts->score)
		st = c->opts->score(c->opts->score_ctx, c->pyr, l, c->pts, c->n, poses, m, raw, err);
	else
		st = mcc_chamfer_score_cpu(&c->cpu, c->pyr, l, c->pts, c->n, poses, m, raw, err);
	if (st == MCC_OK)
		for (int i = 0; i < m; i++)
			cand[i].score = (double) raw[i] / sqrt(energy(c, l, cand[i].k[1]));
	c->stats->poses += m;
	free(poses);
	free(raw);
	if (st == MCC_OK && search_canceled(c))
		st = mcc_error_set(err, MCC_ERR_INTERNAL, "alignment canceled");
	return st;
}

/* Circular lattice distance of two rotations. */
static int
theta_dist(const search_ctx *c, int a, int b)
{
	int			d = abs(a - b) % c->n_theta;

	return d < c->n_theta - d ? d : c->n_theta - d;
}

/*
 * Sort by score and keep at most keep poses, none within step (lattice
 * units) of a better kept one in every coordinate. Returns the count kept.
 */
static int
keep_best(const search_ctx *c, lpose *cand, int n, int keep, int step)
{
	int			m = 0;

	qsort(cand, (size_t) n, sizeof(lpose), cmp_score);
	for (int i = 0; i < n && m < keep; i++)
	{
		int			separate = 1;

		for (int j = 0; j < m && separate; j++)
			if (theta_dist(c, cand[i].k[0], cand[j].k[0]) <= step &&
				abs(cand[i].k[1] - cand[j].k[1]) <= step &&
				abs(cand[i].k[2] - cand[j].k[2]) <= step && abs(cand[i].k[3] - cand[j].k[3]) <= step)
				separate = 0;
		if (separate)
			cand[m++] = cand[i];
	}
	return m;
}

/* The 90th percentile of the sample's radii. */
static double
sample_radius(const double *pts, int n)
{
	double	   *r = malloc(sizeof(double) * (size_t) (n ? n : 1));
	double		v = 0.0;

	if (r == NULL || n == 0)
	{
		free(r);
		return 1.0;
	}
	for (int i = 0; i < n; i++)
		r[i] = hypot(pts[2 * i], pts[2 * i + 1]);
	/* insertion sort: n <= 128 */
	for (int i = 1; i < n; i++)
	{
		double		x = r[i];
		int			j = i - 1;

		for (; j >= 0 && r[j] > x; j--)
			r[j + 1] = r[j];
		r[j + 1] = x;
	}
	v = r[(int) (0.9 * (n - 1))];
	free(r);
	return v;
}

/*
 * The lattice: level-0 steps from the sample's radius and the blur of
 * level 0, enlarged until the level-0 grid has at most MAX_POSES poses.
 * *n0 gets the level-0 counts per coordinate.
 */
static void
lattice_setup(search_ctx *c, double min_scale, double max_scale, int *n0)
{
	double		b0 = c->pyr->level[c->first].blur;
	double		r = fmax(sample_radius(c->pts, c->n) * max_scale, 1e-3);
	double		range = log(max_scale) - log(min_scale);
	double		grow = 1.0;

	c->fine = 1 << (c->pyr->levels - 1 - c->first);
	c->sigma0 = log(min_scale);
	for (;;)
	{
		double		dth = fmin(grow * b0 / r, MAX_ANGLE_STEP);
		double		dsg = fmin(grow * b0 / r, MAX_SCALE_STEP);
		double		dt = grow * b0;
		long		total;

		n0[0] = (int) ceil(SEARCH_TWO_PI / dth);
		c->d_theta = SEARCH_TWO_PI / n0[0] / c->fine;
		if (range > 0.0)
		{
			n0[1] = (int) ceil(range / dsg) + 1;
			c->d_sigma = range / (n0[1] - 1) / c->fine;
		}
		else
		{
			n0[1] = 1;
			c->d_sigma = 0.0;
		}
		for (int k = 0; k < 2; k++)
		{
			double		ext = c->pyr->box_hi[k] - c->pyr->box_lo[k];

			n0[2 + k] = (int) ceil(ext / dt) + 1;
			c->d_t[k] = (n0[2 + k] > 1 ? ext / (n0[2 + k] - 1) : dt) / c->fine;
			c->t0[k] = c->pyr->box_lo[k];
		}
		total = (long) n0[0] * n0[1] * n0[2] * n0[3];
		if (total <= MCC_CHAMFER_SEARCH_MAX_POSES)
			break;
		grow *= 1.25;
	}
	c->n_theta = n0[0] * c->fine;
	c->n_sigma = (n0[1] - 1) * c->fine + 1;
}

/*
 * The coarsest level the search starts from. A coarse level compares the
 * mass distributions of the two sets, which locates the observed set only
 * when it is the whole reference: a part of it (partial overlap) is a blob
 * at that blur, and a blob scores highest on the densest region of the
 * reference, not on its own place. A whole observed set mapped onto the
 * reference at a scale s <= max_scale has an RMS radius of 1 / s >=
 * 1 / max_scale reference radii (the normalized frames), so a sample whose
 * radius times max_scale is below PART_RADIUS is a part: its second pass
 * starts at the coarsest level whose blur is at most PART_BLUR times the
 * sample's radius, fine enough to see the structure inside the part (its
 * full grid is larger: the cost of partial overlap). Returns that level,
 * or 0 for a whole set (no second pass). The radius is that of the sample
 * about its own centroid: the same bits on every device.
 */
static int
first_level(const mcc_chamfer_pyramid *pyr, const double *pts, int n, double max_scale)
{
	double		c[2] = {0.0, 0.0};
	double		r2 = 0.0;
	double		r;
	int			l = 0;

	for (int i = 0; i < n; i++)
	{
		c[0] += pts[2 * i];
		c[1] += pts[2 * i + 1];
	}
	c[0] /= n;
	c[1] /= n;
	for (int i = 0; i < n; i++)
		r2 += (pts[2 * i] - c[0]) * (pts[2 * i] - c[0]) + (pts[2 * i + 1] - c[1]) * (pts[2 * i + 1] - c[1]);
	r = sqrt(r2 / n);
	if (r * max_scale >= PART_RADIUS)
		return 0;
	while (l + 1 < pyr->levels && pyr->level[l].blur > PART_BLUR * r)
		l++;
	return l;
}

/* The sample's pair distances and each level's kernel table. */
static int
pairs_setup(search_ctx *c)
{
	size_t		p = 0;

	c->n_pairs = (size_t) c->n * (c->n - 1) / 2;
	c->d2 = malloc(sizeof(double) * (c->n_pairs ? c->n_pairs : 1));
	c->energy = malloc(sizeof(double) * (size_t) c->pyr->levels * c->n_sigma);
	if (!c->d2 || !c->energy)
		return 0;
	for (int i = 0; i < c->n; i++)
		for (int j = i + 1; j < c->n; j++)
		{
			double		dx = c->pts[2 * i] - c->pts[2 * j];
			double		dy = c->pts[2 * i + 1] - c->pts[2 * j + 1];

			c->d2[p++] = dx * dx + dy * dy;
		}
	for (size_t i = 0; i < (size_t) c->pyr->levels * c->n_sigma; i++)
		c->energy[i] = NAN;
	for (int i = 0; i <= TABLE_N; i++)
		c->table[i] = dog(TABLE_U * i / TABLE_N, 1.0);
	return 1;
}

/*
 * One coarse-to-fine pass from level `first`: keeps `keep` poses per level
 * and appends at most n_out starts to starts[*n_starts ..].
 */
static mcc_status
search_pass(const mcc_chamfer_pyramid *pyr, const double *sample, int n_sample,
			const mcc_chamfer_search_opts *opts, int first, int keep, int n_out,
			mcc_chamfer_start *starts, int *n_starts, mcc_chamfer_search_stats *stats,
			mcc_error *err)
{
	search_ctx	c;
	int			n0[4];
	lpose	   *cand = NULL;
	lpose		kept[MCC_CHAMFER_SEARCH_KEEP_PART];
	int			n_kept;
	int			n;
	long		total;
	mcc_status	st = MCC_OK;

	memset(&c, 0, sizeof(c));
	c.pyr = pyr;
	c.pts = sample;
	c.n = n_sample;
	c.opts = opts;
	c.cpu.threads = opts->threads;
	c.cpu.cancel = opts->cancel;
	c.stats = stats;
	c.first = first;
	lattice_setup(&c, opts->min_scale, opts->max_scale, n0);
	total = (long) n0[0] * n0[1] * n0[2] * n0[3];
	/* a first-level grid or the neighbours of the kept poses, whichever is larger */
	n = (int) (total > 81L * keep ? total : 81L * keep);
	cand = malloc(sizeof(lpose) * (size_t) n);
	if (cand == NULL || !pairs_setup(&c))
	{
		st = mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for the alignment search");
		goto done;
	}
	/* the first level: the full grid */
	n = 0;
	for (int a = 0; a < n0[0]; a++)
		for (int s = 0; s < n0[1]; s++)
			for (int x = 0; x < n0[2]; x++)
				for (int y = 0; y < n0[3]; y++)
				{
					cand[n].k[0] = a * c.fine;
					cand[n].k[1] = s * c.fine;
					cand[n].k[2] = x * c.fine;
					cand[n].k[3] = y * c.fine;
					n++;
				}
	if (stats->level0 == 0)
		stats->level0 = n;
	if ((st = score_batch_level(&c, c.first, cand, &n, err)) != MCC_OK)
		goto done;
	n_kept = keep_best(&c, cand, n, keep, c.fine);
	memcpy(kept, cand, sizeof(lpose) * n_kept);
	/* finer levels: the neighbours of every kept pose at half the step */
	for (int l = c.first + 1; l < pyr->levels; l++)
	{
		int			step = c.fine >> (l - c.first);
		int			ds = c.n_sigma > 1 ? 1 : 0;

		n = 0;
		for (int i = 0; i < n_kept; i++)
			for (int a = -1; a <= 1; a++)
				for (int s = -ds; s <= ds; s++)
					for (int x = -1; x <= 1; x++)
						for (int y = -1; y <= 1; y++)
						{
							lpose	   *q = &cand[n++];
							int			ks = kept[i].k[1] + s * step;

							q->k[0] = ((kept[i].k[0] + a * step) % c.n_theta + c.n_theta) % c.n_theta;
							q->k[1] = ks < 0 ? 0 : ks >= c.n_sigma ? c.n_sigma - 1 : ks;
							q->k[2] = kept[i].k[2] + x * step;
							q->k[3] = kept[i].k[3] + y * step;
						}
		if ((st = score_batch_level(&c, l, cand, &n, err)) != MCC_OK)
			goto done;
		n_kept = keep_best(&c, cand, n, keep, step);
		memcpy(kept, cand, sizeof(lpose) * n_kept);
	}
	for (int i = 0; i < n_kept && i < n_out; i++)
	{
		mcc_chamfer_start *o = &starts[(*n_starts)++];

		o->theta = kept[i].k[0] * c.d_theta;
		o->sigma = c.sigma0 + kept[i].k[1] * c.d_sigma;
		o->t[0] = c.t0[0] + kept[i].k[2] * c.d_t[0];
		o->t[1] = c.t0[1] + kept[i].k[3] * c.d_t[1];
		o->score = kept[i].score;
	}
done:
	free(cand);
	free(c.d2);
	free(c.energy);
	return st;
}

/*
 * Run the search (see the header): one pass from level 0; for a part
 * (first_level > 0), a second pass from the finer first level, whose
 * starts follow the first pass's (level 0 still finds many parts, the
 * finer pass the others; the LM fits choose).
 */
mcc_status
mcc_chamfer_search(const mcc_chamfer_pyramid *pyr, const double *sample, int n_sample,
				   const mcc_chamfer_search_opts *opts, mcc_chamfer_start *starts, int *n_starts,
				   mcc_chamfer_search_stats *stats, mcc_error *err)
{
	mcc_chamfer_search_stats local_stats;
	int			first;
	mcc_status	st;

	*n_starts = 0;
	if (stats == NULL)
		stats = &local_stats;
	memset(stats, 0, sizeof(*stats));
	if (!(opts->min_scale > 0.0) || !(opts->max_scale >= opts->min_scale) || !isfinite(opts->max_scale))
		return mcc_error_set(err, MCC_ERR_VALUE,
							 "the scale range of the search must satisfy 0 < min_scale <= max_scale");
	if (pyr->levels < 1 || n_sample < 1)
		return mcc_error_set(err, MCC_ERR_VALUE, "nothing to search");
	first = first_level(pyr, sample, n_sample, opts->max_scale);
	st = search_pass(pyr, sample, n_sample, opts, 0, MCC_CHAMFER_SEARCH_KEEP,
					 MCC_CHAMFER_SEARCH_STARTS_WHOLE, starts, n_starts, stats, err);
	if (st == MCC_OK && first > 0)
		st = search_pass(pyr, sample, n_sample, opts, first, MCC_CHAMFER_SEARCH_KEEP_PART,
						 MCC_CHAMFER_SEARCH_STARTS - MCC_CHAMFER_SEARCH_STARTS_WHOLE, starts,
						 n_starts, stats, err);
	return st;
}
