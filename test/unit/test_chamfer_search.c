/*
 * test_chamfer_search.c: the global pose search of 2D chamfer alignment
 * (mcc_chamfer_search.h) and alignment from any pose (mcc_chamfer.h
 * without an initial transform). Seeds are fixed; nothing depends on time.
 *
 * - The pyramid: band-pass levels of zero mean; the CPU scorer gives the
 *   same integers on 1, 2 and 3 threads and scores the true pose above
 *   random ones; the sample is deterministic.
 * - Random poses (any rotation, scale 0.8-1.25, any shift in the frame)
 *   of a road network are aligned back: plain, with outliers and
 *   truncation, and in partial windows of half and a quarter of the area;
 *   the shape of sql/align.sql too;
 *   a far pose of it (2 rad, scale 1.2) that the local fit from the
 *   centroids (search off) misses.
 * - An initial transform keeps the local fit: no search, the same bits as
 *   with the search off.
 * - Thread counts give the same bits; a euclidean search keeps scale 1; the
 *   scale range is checked and honoured; a poll cancels the search.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "testpoll.h"
#include "chamfer_synth.h"
#include "mcc_chamfer.h"
#include "mcc_chamfer_search.h"

#define N_ROADS		4000

/* The similarity (s, theta, t) as a 3 x 3 matrix. */
static void
similarity(double s, double theta, double tx, double ty, double *m)
{
	m[0] = s * cos(theta);
	m[1] = -s * sin(theta);
	m[2] = tx;
	m[3] = s * sin(theta);
	m[4] = s * cos(theta);
	m[5] = ty;
	m[6] = m[7] = 0;
	m[8] = 1;
}

/*
 * A random pose of seed k: P (reference -> observed) about the reference's
 * centroid c, any rotation, scale in [0.8, 1.25], the centre anywhere in
 * [0, frame]^2; m = P^-1 is the alignment to find.
 */
static void
random_pose(uint64_t k, const double *c, double frame, double *m)
{
	mcc_rng		r;
	double		P[9];
	double		th;
	double		s;

	mcc_rng_seed(&r, mcc_rng_key(4242, k, 0, 0));
	th = mcc_rng_range(&r, -M_PI, M_PI);
	s = exp(mcc_rng_range(&r, log(0.8), log(1.25)));
	similarity(s, th, 0, 0, P);
	P[2] = mcc_rng_range(&r, 0, frame) - (P[0] * c[0] + P[1] * c[1]);
	P[5] = mcc_rng_range(&r, 0, frame) - (P[3] * c[0] + P[4] * c[1]);
	cs_invert(3, P, m);
}

/* Centroid of n 2D points. */
static void
centroid2(const double *p, size_t n, double *c)
{
	c[0] = c[1] = 0;
	for (size_t i = 0; i < n; i++)
	{
		c[0] += p[2 * i] / n;
		c[1] += p[2 * i + 1] / n;
	}
}

/*
 * The observed set of a trial: reference points i = offset, offset +
 * stride, ... inside the window [wx, wx + side]^2 (side <= 0: all), mapped
 * by m^-1, noise sigma; then outliers (fraction of the clean points) over
 * the clean points' box. malloc'd; the first *n_clean are clean.
 */
static double *
observed(uint64_t seed, const double *ref, size_t n_ref, const double *m, size_t stride,
		 double wx, double wy, double side, double noise, double outliers, size_t *n_obs,
		 size_t *n_clean)
{
	mcc_rng		r;
	double		inv[9];
	double	   *p = malloc(sizeof(double) * 2 * (n_ref + n_ref / 2 + 1));
	double		lo[2] = {HUGE_VAL, HUGE_VAL};
	double		hi[2] = {-HUGE_VAL, -HUGE_VAL};
	size_t		k = 0;

	cs_invert(3, m, inv);
	mcc_rng_seed(&r, mcc_rng_key(seed, 77, 0, 0));
	for (size_t i = 0; i < n_ref; i += stride)
	{
		const double *q = ref + 2 * i;

		if (side > 0 && (q[0] < wx || q[0] > wx + side || q[1] < wy || q[1] > wy + side))
			continue;
		mcc_chamfer_map(2, inv, q, p + 2 * k);
		for (int d = 0; d < 2; d++)
		{
			p[2 * k + d] += noise > 0 ? noise * cs_normal(&r) : 0.0;
			lo[d] = fmin(lo[d], p[2 * k + d]);
			hi[d] = fmax(hi[d], p[2 * k + d]);
		}
		k++;
	}
	*n_clean = k;
	for (size_t j = 0; j < (size_t) (outliers * *n_clean); j++, k++)
		for (int d = 0; d < 2; d++)
			p[2 * k + d] = mcc_rng_range(&r, lo[d], hi[d]);
	*n_obs = k;
	return p;
}

/* The pyramid: zero-mean levels, thread-independent scores, the truth above random poses. */
static void
test_pyramid(void)
{
	double	   *ref = cs_roads_2d(1, N_ROADS);
	double		m[9];
	double		c[2];
	cs_search_case scase;
	mcc_error	err;
	double		again[2 * MCC_CHAMFER_SEARCH_SAMPLE];

	centroid2(ref, N_ROADS, c);
	random_pose(1, c, 1000, m);
	scase.obs = observed(1, ref, N_ROADS, m, 4, 0, 0, 0, 1.0, 0.0, &scase.n_obs, &scase.n_clean);
	if (cs_search_case_build(ref, N_ROADS, &scase, &err) != MCC_OK)
	{
		UNIT_CHECK(0, "set-up: %s", err.message);
		return;
	}
	for (int l = 0; l < scase.pyr.levels; l++)
	{
		const mcc_chamfer_slevel *lv = &scase.pyr.level[l];
		double		sum = 0;
		double		abs_sum = 0;
		size_t		cells = (size_t) lv->geom.nx * lv->geom.ny;
		int			border = 1;

		for (size_t k = 0; k < cells; k++)
		{
			sum += lv->v[k];
			abs_sum += fabs((double) lv->v[k]);
		}
		for (int x = 0; x < lv->geom.nx; x++)
			border &= abs(lv->v[x]) < (1 << 20) / 100 &&
				abs(lv->v[(size_t) (lv->geom.ny - 1) * lv->geom.nx + x]) < (1 << 20) / 100;
		UNIT_CHECK(fabs(sum) <= 0.02 * abs_sum && border,
				   "level %d (blur %.3f, %d x %d cells): band-pass, sum %.3g of %.3g absolute, border "
				   "below 1%% of the peak", l, lv->blur, lv->geom.nx, lv->geom.ny, sum, abs_sum);
	}
	UNIT_CHECK(scase.ns == MCC_CHAMFER_SEARCH_SAMPLE &&
			   mcc_chamfer_search_sample(scase.ob.pts, scase.ob.n, again) == scase.ns &&
			   memcmp(scase.sample, again, sizeof(double) * 2 * scase.ns) == 0,
			   "the sample: %d of %zu points, the same twice", scase.ns, scase.ob.n);
	{
		/* the true pose in the normalized frames and 200 random ones */
		int			np = 201;
		mcc_chamfer_spose *poses = malloc(sizeof(mcc_chamfer_spose) * np);
		int64_t		s1[201];
		int64_t		s2[201];
		int64_t		s3[201];
		mcc_chamfer_score_cpu_ctx c2 = {2, NULL};
		mcc_chamfer_score_cpu_ctx c3 = {3, NULL};
		mcc_rng		r;
		int			below = 0;
		double		s = hypot(m[0], m[3]);
		double		th = atan2(m[3], m[0]);
		/* T~ = N_Q m N_P^-1: t~ = (m c_P - c_Q) / sigma */
		const double *oc = scase.ob.center;
		double		tx = (m[0] * oc[0] + m[1] * oc[1] + m[2] - scase.rf.center[0]) / scase.rf.scale;
		double		ty = (m[3] * oc[0] + m[4] * oc[1] + m[5] - scase.rf.center[1]) / scase.rf.scale;

		mcc_chamfer_spose_set(&poses[0], th, log(s), tx, ty);
		mcc_rng_seed(&r, 99);
		for (int i = 1; i < np; i++)
			mcc_chamfer_spose_set(&poses[i], mcc_rng_range(&r, -M_PI, M_PI),
								  mcc_rng_range(&r, log(0.8), log(1.25)), mcc_rng_range(&r, -1.5, 1.5),
								  mcc_rng_range(&r, -1.5, 1.5));
		for (int l = 0; l < scase.pyr.levels; l++)
		{
			int			same;

			mcc_chamfer_score_cpu(NULL, &scase.pyr, l, scase.sample, scase.ns, poses, np, s1, &err);
			mcc_chamfer_score_cpu(&c2, &scase.pyr, l, scase.sample, scase.ns, poses, np, s2, &err);
			mcc_chamfer_score_cpu(&c3, &scase.pyr, l, scase.sample, scase.ns, poses, np, s3, &err);
			same = memcmp(s1, s2, sizeof(s1)) == 0 && memcmp(s1, s3, sizeof(s1)) == 0;
			below = 0;
			for (int i = 1; i < np; i++)
				below += s1[i] < s1[0];
			/* level 0 sees only where the mass lies: allow a few look-alikes there */
			UNIT_CHECK(same && below >= (l == 0 ? 190 : np - 1),
					   "level %d: 1, 2 and 3 threads score alike (%s); the true pose scores %lld, above "
					   "%d of %d random poses", l, same ? "yes" : "no", (long long) s1[0], below, np - 1);
		}
		free(poses);
	}
	cs_search_case_free(&scase);
	free(ref);
}

/*
 * Trials of a workload: how many of n random poses align within tol
 * (transfer RMS over the clean points). window: side of a random window
 * (fraction of 1000; 1: all).
 */
static int
aligned_poses(const double *ref, size_t n_ref, double frame, int n, uint64_t seed0, size_t stride,
			  double window, double outliers, double max_distance, double noise, double tol,
			  int *worst_trial, double *worst)
{
	double		c[2];
	int			ok = 0;

	centroid2(ref, n_ref, c);
	*worst = 0;
	*worst_trial = -1;
	for (int t = 0; t < n; t++)
	{
		double		m[9];
		size_t		n_obs;
		size_t		n_clean;
		double	   *obs;
		mcc_rng		r;
		double		wx = 0;
		double		wy = 0;
		mcc_chamfer_opts o;
		mcc_chamfer_result res;
		mcc_error	err;
		double		e = HUGE_VAL;

		random_pose(seed0 + t, c, frame, m);
		mcc_rng_seed(&r, mcc_rng_key(seed0 + t, 5, 0, 0));
		if (window < 1)
		{
			wx = mcc_rng_range(&r, 0, frame * (1 - window));
			wy = mcc_rng_range(&r, 0, frame * (1 - window));
		}
		obs = observed(seed0 + t, ref, n_ref, m, stride, wx, wy, window < 1 ? window * frame : 0, noise,
					   outliers, &n_obs, &n_clean);
		mcc_chamfer_opts_init(&o);
		o.max_distance = max_distance;
		if (mcc_chamfer_align(obs, n_obs, ref, n_ref, 2, &o, &res, &err) == MCC_OK)
			e = cs_transfer_rms(2, res.matrix, m, obs, n_clean);
		if (e <= tol)
			ok++;
		if (e > *worst)
		{
			*worst = e;
			*worst_trial = t;
		}
		free(obs);
	}
	return ok;
}

/* Random poses of point sets are aligned back. */
static void
test_random_poses(void)
{
	double	   *roads = cs_roads_2d(1, N_ROADS);
	size_t		n_shape;
	double	   *shape = cs_sql_shape(&n_shape);
	int			wt;
	double		worst;
	int			ok;

	ok = aligned_poses(roads, N_ROADS, 1000, 24, 100, 4, 1, 0, HUGE_VAL, 1.0, 5.0, &wt, &worst);
	UNIT_CHECK(ok == 24, "roads, default options: %d of 24 random poses aligned within 5 units "
			   "(worst %.3g, trial %d)", ok, worst, wt);
	ok = aligned_poses(roads, N_ROADS, 1000, 24, 200, 4, 1, 0.1, 20, 1.0, 5.0, &wt, &worst);
	UNIT_CHECK(ok == 24, "roads, 10%% outliers, max_distance 20: %d of 24 aligned (worst %.3g, trial %d)",
			   ok, worst, wt);
	ok = aligned_poses(roads, N_ROADS, 1000, 12, 300, 2, 0.7, 0.1, 20, 1.0, 5.0, &wt, &worst);
	UNIT_CHECK(ok == 12, "roads, a window of 70%% of the side, outliers: %d of 12 aligned (worst %.3g, trial %d)",
			   ok, worst, wt);
	/* a quarter of the area: a part, searched from a finer level (mcc_chamfer_search.c, first_level) */
	ok = aligned_poses(roads, N_ROADS, 1000, 12, 500, 2, 0.5, 0.1, 20, 1.0, 5.0, &wt, &worst);
	UNIT_CHECK(ok == 12, "roads, a window of 50%% of the side, outliers: %d of 12 aligned (worst %.3g, trial %d)",
			   ok, worst, wt);
	ok = aligned_poses(shape, n_shape, 400, 24, 400, 3, 1, 0, HUGE_VAL, 0.0, 2.0, &wt, &worst);
	UNIT_CHECK(ok == 24, "the shape of sql/align.sql: %d of 24 aligned within 2 units (worst %.3g, trial %d)",
			   ok, worst, wt);
	free(roads);
	free(shape);
}

/* A far pose: the search finds it, the local fit (search off, or an initial transform) does not. */
static void
test_far_pose(void)
{
	size_t		n_shape;
	double	   *shape = cs_sql_shape(&n_shape);
	double		m[9];
	double	   *ref = malloc(sizeof(double) * 2 * n_shape);
	double	   *obs = malloc(sizeof(double) * 2 * n_shape);
	size_t		n_obs = 0;
	mcc_chamfer_opts o;
	mcc_chamfer_result global;
	mcc_chamfer_result local;
	mcc_chamfer_result from_init;
	mcc_chamfer_result off_init;
	mcc_error	err;
	double		e_global;
	double		e_local;

	/* the reference is the shape turned by 2 rad and scaled by 1.2; the observed set every third point */
	similarity(1.2, 2.0, 15, -10, m);
	for (size_t i = 0; i < n_shape; i++)
	{
		mcc_chamfer_map(2, m, shape + 2 * i, ref + 2 * i);
		if (i % 3 == 0)
		{
			obs[2 * n_obs] = shape[2 * i];
			obs[2 * n_obs + 1] = shape[2 * i + 1];
			n_obs++;
		}
	}
	mcc_chamfer_opts_init(&o);
	o.resolution = 0.5;
	mcc_chamfer_align(obs, n_obs, ref, n_shape, 2, &o, &global, &err);
	o.search = 0;
	mcc_chamfer_align(obs, n_obs, ref, n_shape, 2, &o, &local, &err);
	e_global = cs_transfer_rms(2, global.matrix, m, obs, n_obs);
	e_local = cs_transfer_rms(2, local.matrix, m, obs, n_obs);
	UNIT_CHECK(e_global <= 0.5 && global.residual <= 0.5 && global.starts > 0 && global.search_poses > 0,
			   "2 rad and scale 1.2: the search finds it (transfer error %.3g, residual %.3g, %d starts, "
			   "%ld poses scored)", e_global, global.residual, global.starts, global.search_poses);
	UNIT_CHECK(e_local > 5 && local.residual > 5 && local.starts == 0,
			   "the same with the search off stops in a local minimum (transfer error %.3g, residual %.3g)",
			   e_local, local.residual);
	/* an initial transform: the local fit, with or without the search option */
	similarity(1.0, 0.0, 0, 0, o.init);
	o.init_type = MCC_XFORM_SIMILARITY;
	o.search = 1;
	mcc_chamfer_align(obs, n_obs, ref, n_shape, 2, &o, &from_init, &err);
	o.search = 0;
	mcc_chamfer_align(obs, n_obs, ref, n_shape, 2, &o, &off_init, &err);
	UNIT_CHECK(from_init.starts == 0 && from_init.search_poses == 0 &&
			   memcmp(from_init.params, off_init.params, sizeof(from_init.params)) == 0 &&
			   from_init.residual == off_init.residual && from_init.iterations == off_init.iterations,
			   "with an initial transform (the identity) there is no search: the local fit's bits "
			   "(residual %.3g, %d iterations)", from_init.residual, from_init.iterations);
	free(ref);
	free(obs);
	free(shape);
}

/* Thread counts, the euclidean search, the scale range, errors, cancel. */
static void
test_options(void)
{
	double	   *ref = cs_roads_2d(1, N_ROADS);
	double		c[2];
	double		m[9];
	size_t		n_obs;
	size_t		n_clean;
	double	   *obs;
	mcc_chamfer_opts o;
	mcc_chamfer_result r1;
	mcc_chamfer_result rn;
	mcc_error	err;
	mcc_status	st;
	int			same = 1;

	centroid2(ref, N_ROADS, c);
	random_pose(7, c, 1000, m);
	obs = observed(7, ref, N_ROADS, m, 4, 0, 0, 0, 1.0, 0.1, &n_obs, &n_clean);
	mcc_chamfer_opts_init(&o);
	o.max_distance = 20;
	mcc_chamfer_align(obs, n_obs, ref, N_ROADS, 2, &o, &r1, &err);
	for (int t = 2; t <= 4; t++)
	{
		o.threads = t;
		mcc_chamfer_align(obs, n_obs, ref, N_ROADS, 2, &o, &rn, &err);
		same &= memcmp(r1.params, rn.params, sizeof(r1.params)) == 0 && r1.residual == rn.residual &&
			r1.iterations == rn.iterations && r1.search_poses == rn.search_poses;
	}
	UNIT_CHECK(same && cs_transfer_rms(2, r1.matrix, m, obs, n_clean) <= 5,
			   "search and fits give the same bits on 1 to 4 threads");
	o.threads = 1;
	free(obs);

	/* euclidean: rotation and shift only, the scale stays 1 */
	{
		double		P[9];

		similarity(1.0, 2.5, 0, 0, P);
		P[2] = 600 - (P[0] * c[0] + P[1] * c[1]);
		P[5] = 300 - (P[3] * c[0] + P[4] * c[1]);
		cs_invert(3, P, m);
		obs = observed(8, ref, N_ROADS, m, 4, 0, 0, 0, 1.0, 0.0, &n_obs, &n_clean);
		o.transform = MCC_XFORM_EUCLIDEAN;
		o.min_scale = 0.5;		/* not used by a euclidean search */
		st = mcc_chamfer_align(obs, n_obs, ref, N_ROADS, 2, &o, &r1, &err);
		UNIT_CHECK(st == MCC_OK && r1.n_params == 3 && cs_transfer_rms(2, r1.matrix, m, obs, n_clean) <= 5,
				   "euclidean: rotation 2.5 rad and a shift found (theta %.4f)", r1.params[0]);
		free(obs);
	}

	/* the scale range: 1.6 is outside the default, inside [0.5, 2] */
	o.transform = MCC_XFORM_SIMILARITY;
	similarity(1.0 / 1.6, 1.0, 0, 0, m);
	{
		double		P[9];

		cs_invert(3, m, P);
		P[2] = 500 - (P[0] * c[0] + P[1] * c[1]);
		P[5] = 500 - (P[3] * c[0] + P[4] * c[1]);
		cs_invert(3, P, m);
	}
	obs = observed(9, ref, N_ROADS, m, 4, 0, 0, 0, 1.0, 0.0, &n_obs, &n_clean);
	o.min_scale = 0.8;
	o.max_scale = 1.25;
	mcc_chamfer_align(obs, n_obs, ref, N_ROADS, 2, &o, &r1, &err);
	o.min_scale = 0.5;
	o.max_scale = 2.0;
	mcc_chamfer_align(obs, n_obs, ref, N_ROADS, 2, &o, &rn, &err);
	UNIT_CHECK(cs_transfer_rms(2, rn.matrix, m, obs, n_clean) <= 5 && fabs(rn.params[0] - 0.625) < 0.01,
			   "scale 0.625: found with the range [0.5, 2] (scale %.4f); the default range gives %.4f",
			   rn.params[0], r1.params[0]);
	o.min_scale = 0;
	st = mcc_chamfer_align(obs, n_obs, ref, N_ROADS, 2, &o, &r1, &err);
	UNIT_CHECK(st == MCC_ERR_VALUE && strstr(err.message, "scale"), "min_scale 0: %s", err.message);
	o.min_scale = 1.3;
	o.max_scale = 1.2;
	st = mcc_chamfer_align(obs, n_obs, ref, N_ROADS, 2, &o, &r1, &err);
	UNIT_CHECK(st == MCC_ERR_VALUE && strstr(err.message, "scale"), "min_scale > max_scale: %s", err.message);
	o.min_scale = 0.8;
	o.max_scale = 1.25;

	/* a poll stops the search (between levels), and the fits after it */
	{
		mcc_chamfer_ref rf;

		if (mcc_chamfer_ref_build(ref, N_ROADS, 2, &o, &rf, &err) != MCC_OK)
			UNIT_CHECK(0, "reference: %s", err.message);
		else
		{
			o.poll = stop_after;
			for (int k = 0; k < 3; k++)
			{
				polls = 0;
				poll_limit = k == 0 ? 0 : k == 1 ? 2 : 6;
				st = mcc_chamfer_align_ref(&rf, obs, n_obs, &o, &r1, &err);
				UNIT_CHECK(st == MCC_ERR_INTERNAL && r1.canceled && strstr(err.message, "canceled"),
						   "a poll after %d calls cancels: \"%s\", canceled = %d", poll_limit, err.message,
						   r1.canceled);
			}
			mcc_chamfer_ref_free(&rf);
		}
	}
	free(obs);
	free(ref);
}

int
main(void)
{
	test_pyramid();
	test_random_poses();
	test_far_pose();
	test_options();
	return unit_done();
}
