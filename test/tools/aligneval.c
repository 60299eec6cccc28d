/*
 * aligneval.c: alignment from any pose (docs/alignment.md, "Global
 * search"): the share of random poses that chamfer alignment brings back
 * to the true transform, for synthetic point sets and for the minutiae of
 * real prints, and the time per alignment.
 *
 *   aligneval [--trials N] [--poses K] [--threads T] [--data DIR]
 *             [--points-only | --minutiae-only] [--local] [--workload K]
 *
 * A random pose: any rotation (uniform), a scale drawn log-uniformly in
 * [0.8, 1.25], and a shift that puts the posed set's centre anywhere in
 * a 1000 x 1000 frame (point sets) or keeps every posed minutia inside a
 * 1024 x 1024 frame (minutiae). Seeds are fixed: every run draws the same
 * poses.
 *
 * Point sets (N trials per workload, default 200): the reference is a
 * 4,000-point road network of test/unit/chamfer_synth.h (24 segments and
 * arcs in 1000 x 1000) or the shape of sql/align.sql (six lines and an
 * arc); the observed set is part of it, posed, with Gaussian noise
 * (sigma 1) and, in some workloads, uniform outliers over its box.
 * mcc_chamfer_align (similarity) without an initial transform; aligned
 * when the result maps the clean observed points within 5 units RMS of
 * their true places (2 for the noise-free shape). --local runs the same
 * with the search off (the local fit from the centroids, the behaviour
 * before the search) for comparison; --workload K runs only the K-th
 * workload of the table (from 1).
 *
 * Minutiae (FVC2002 set B, NBIS mindtct minutiae from --data, default
 * ../shared/data or $MCC_SHARED_DATA): for every genuine pair (a later
 * impression onto an earlier one, 280 per database), the reference
 * alignment is mcc_align's default (euclidean, Hough starts) from the
 * original pose; its mates are the probe minutiae that land within 15 px
 * and 30 degrees of a candidate minutia, one to one. A pair "shares
 * enough minutiae" when there are at least 12 mates. For the similarity
 * fits the reference is mcc_align's similarity fit from the original pose
 * instead when it mates more minutiae (a scale near 1 may fit better than
 * none; the found fit then has to reproduce the better one). Each pair is
 * aligned from K random poses of the probe (default 3; positions and
 * directions posed, rounded to whole pixels); aligned when at least half
 * of the reference mates are mates again. Four ways: similarity fits
 * with directions (Hough starts at five scales) and without (the global
 * search of mcc_chamfer_search.h on positions) from poses with a scale,
 * and euclidean fits (mcc_align's default) with and without directions
 * from poses without one (rotation and shift: a euclidean fit cannot undo
 * a scale).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../unit/chamfer_synth.h"
#include "../unit/testargs.h"
#include "../unit/testclock.h"
#include "../unit/testsort.h"
#include "mcc_align.h"
#include "mcc_chamfer.h"
#include "mcc_rng.h"
#include "mcc_xyt.h"
#include "record_file.h"

#define FRAME		1000.0
#define MIN_MATES	12

static int	opt_threads = 1;
static int	opt_local = 0;
static int	opt_workload = -1;	/* --workload K: only the K-th (from 1) point-set workload */

/*
 * Milliseconds of CPU time of the calling thread: with one thread (the
 * default) every step of an alignment runs on it, and the figure does not
 * depend on what else the machine runs. With --threads > 1 it is the wall
 * clock instead.
 */
static double
now_ms(void)
{
	return opt_threads > 1 ? tclock_wall_ms() : tclock_cpu_ms();
}

/* A random pose: rotation, log-uniform scale in [0.8, 1.25] (or 1). */
static void
random_rs(mcc_rng *r, int with_scale, double *theta, double *s)
{
	*theta = mcc_rng_range(r, -M_PI, M_PI);
	*s = with_scale ? exp(mcc_rng_range(r, log(0.8), log(1.25))) : 1.0;
}

/* ---- point sets ---- */

/* A point-set workload. */
typedef struct workload
{
	const char *name;
	int			shape;			/* 0: roads, 1: the SQL shape */
	int			stride;			/* every stride-th reference point is observed */
	double		window;			/* < 1: only points in a random window of this side (fraction) */
	double		noise;			/* Gaussian, per coordinate */
	double		outliers;		/* uniform outliers, fraction of the clean points */
	double		max_distance;	/* HUGE_VAL: default options */
	double		tolerance;		/* aligned: transfer RMS at most this */
} workload;

static const workload workloads[] = {
	{"roads, default options", 0, 4, 1.0, 1.0, 0.0, HUGE_VAL, 5.0},
	{"roads, 10 % outliers, max_distance 20", 0, 4, 1.0, 1.0, 0.1, 20.0, 5.0},
	{"roads, a window of 70 % of the side, 10 % outliers, max_distance 20", 0, 2, 0.7, 1.0, 0.1, 20.0, 5.0},
	{"roads, a window of 50 % of the side, 10 % outliers, max_distance 20", 0, 2, 0.5, 1.0, 0.1, 20.0, 5.0},
	{"shape of sql/align.sql, every third point, default options", 1, 3, 1.0, 0.0, 0.0, HUGE_VAL, 2.0},
};

/*
 * Trial t of a workload: the observed set (malloc'd; the first *n_clean
 * points are clean) and the true transform m (observed -> reference).
 */
static double *
make_trial(const workload *w, const double *ref, size_t n_ref, int t, double *m, size_t *n_obs,
		   size_t *n_clean)
{
	mcc_rng		r;
	double		theta;
	double		s;
	double		P[9];
	double		c[2] = {0, 0};
	double		lo[2] = {HUGE_VAL, HUGE_VAL};
	double		hi[2] = {-HUGE_VAL, -HUGE_VAL};
	double		wx = 0;
	double		wy = 0;
	double		E = w->shape ? 400.0 : 1000.0;
	double	   *p = malloc(sizeof(double) * 2 * (n_ref + n_ref / 2 + 1));
	size_t		k = 0;

	mcc_rng_seed(&r, mcc_rng_key(2111, (uint64_t) (w - workloads), (uint64_t) t, 0));
	random_rs(&r, 1, &theta, &s);
	if (w->window < 1.0)
	{
		wx = mcc_rng_range(&r, 0, E * (1 - w->window));
		wy = mcc_rng_range(&r, 0, E * (1 - w->window));
	}
	for (size_t i = 0; i < n_ref; i++)
	{
		c[0] += ref[2 * i] / n_ref;
		c[1] += ref[2 * i + 1] / n_ref;
	}
	/* P: about the reference's centroid, then the centre anywhere in the frame */
	P[0] = s * cos(theta);
	P[1] = -s * sin(theta);
	P[3] = s * sin(theta);
	P[4] = s * cos(theta);
	P[2] = mcc_rng_range(&r, 0, FRAME) - (P[0] * c[0] + P[1] * c[1]);
	P[5] = mcc_rng_range(&r, 0, FRAME) - (P[3] * c[0] + P[4] * c[1]);
	P[6] = P[7] = 0;
	P[8] = 1;
	cs_invert(3, P, m);
	for (size_t i = 0; i < n_ref; i += w->stride)
	{
		const double *q = ref + 2 * i;

		if (w->window < 1.0 && (q[0] < wx || q[0] > wx + E * w->window || q[1] < wy ||
								q[1] > wy + E * w->window))
			continue;
		mcc_chamfer_map(2, P, q, p + 2 * k);
		for (int d = 0; d < 2; d++)
		{
			p[2 * k + d] += w->noise > 0 ? w->noise * cs_normal(&r) : 0.0;
			lo[d] = fmin(lo[d], p[2 * k + d]);
			hi[d] = fmax(hi[d], p[2 * k + d]);
		}
		k++;
	}
	*n_clean = k;
	for (size_t j = 0; j < (size_t) (w->outliers * *n_clean); j++, k++)
		for (int d = 0; d < 2; d++)
			p[2 * k + d] = mcc_rng_range(&r, lo[d], hi[d]);
	*n_obs = k;
	return p;
}

/* Run every point-set workload. */
static void
run_points(int trials)
{
	size_t		n_roads = 4000;
	size_t		n_shape;
	double	   *roads = cs_roads_2d(1, n_roads);
	double	   *shape = cs_sql_shape(&n_shape);

	printf("## Point sets: %d random poses per workload, search %s, %d thread%s\n\n", trials,
		   opt_local ? "off (centroid start)" : "on", opt_threads, opt_threads == 1 ? "" : "s");
	printf("| workload | observed points | aligned | share | %s ms per alignment (median) | poses scored |\n",
		   opt_threads > 1 ? "wall" : "thread CPU");
	printf("|---|---|---|---|---|---|\n");
	for (size_t wi = 0; wi < sizeof(workloads) / sizeof(workloads[0]); wi++)
	{
		const workload *w = &workloads[wi];
		const double *ref;
		size_t		n_ref;
		int			ok = 0;
		double	   *ms;
		long		poses = 0;
		size_t		pts = 0;

		if (opt_workload > 0 && (size_t) opt_workload != wi + 1)
			continue;
		ref = w->shape ? shape : roads;
		n_ref = w->shape ? n_shape : n_roads;
		ms = malloc(sizeof(double) * trials);

		for (int t = 0; t < trials; t++)
		{
			double		m[9];
			size_t		n_obs;
			size_t		n_clean;
			double	   *obs = make_trial(w, ref, n_ref, t, m, &n_obs, &n_clean);
			mcc_chamfer_opts o;
			mcc_chamfer_result res;
			mcc_error	err;
			double		t0;

			mcc_chamfer_opts_init(&o);
			o.transform = MCC_XFORM_SIMILARITY;
			o.max_distance = w->max_distance;
			o.threads = opt_threads;
			o.search = !opt_local;
			t0 = now_ms();
			if (mcc_chamfer_align(obs, n_obs, ref, n_ref, 2, &o, &res, &err) != MCC_OK)
			{
				fprintf(stderr, "%s, trial %d: %s\n", w->name, t, err.message);
				ms[t] = now_ms() - t0;
				free(obs);
				continue;
			}
			ms[t] = now_ms() - t0;
			poses += res.search_poses;
			pts += n_obs;
			if (cs_transfer_rms(2, res.matrix, m, obs, n_clean) <= w->tolerance)
				ok++;
			free(obs);
		}
		qsort(ms, trials, sizeof(double), tsort_double_asc);	/* for the median */
		printf("| %s | %zu | %d of %d | %.1f %% | %.1f | %ld |\n", w->name, pts / trials, ok, trials,
			   100.0 * ok / trials, ms[trials / 2], poses / trials);
		fflush(stdout);
		free(ms);
	}
	free(roads);
	free(shape);
	printf("\n");
}

/* ---- minutiae ---- */

/*
 * Mates of probe under the 3 x 3 matrix M (probe pixels -> candidate
 * pixels): one to one, nearest first in probe order, within 15 px and
 * 30 degrees. mate[i] = candidate index or -1; returns the count.
 */
static int
mates(const double *M, const mcc_minutiae *p, const mcc_minutiae *c, int *mate)
{
	unsigned char used[MCC_MAX_MINUTIAE] = {0};
	int			n = 0;

	for (int i = 0; i < p->count; i++)
	{
		double		x = p->m[i].x;
		double		y = p->m[i].y;
		double		u = M[0] * x + M[1] * y + M[2];
		double		v = M[3] * x + M[4] * y + M[5];
		double		ex = M[0] * cos(p->m[i].theta) - M[1] * sin(p->m[i].theta);
		double		ey = M[3] * cos(p->m[i].theta) - M[4] * sin(p->m[i].theta);
		double		th = atan2(-ey, ex);
		double		bd = 15.0 * 15.0;
		int			bj = -1;

		mate[i] = -1;
		for (int j = 0; j < c->count; j++)
		{
			double		dx = u - c->m[j].x;
			double		dy = v - c->m[j].y;
			double		d = dx * dx + dy * dy;

			if (!used[j] && d <= bd && fabs(remainder(th - c->m[j].theta, 2 * M_PI)) <= M_PI / 6)
			{
				bd = d;
				bj = j;
			}
		}
		if (bj >= 0)
		{
			used[bj] = 1;
			mate[i] = bj;
			n++;
		}
	}
	return n;
}

/* Pose a probe: P about its centroid, shifted to a random place where every minutia stays in the frame. */
static void
pose_probe(const mcc_minutiae *in, mcc_rng *r, int with_scale, mcc_minutiae *out, double *P)
{
	double		theta;
	double		s;
	double		c[2] = {0, 0};
	double		lo[2] = {HUGE_VAL, HUGE_VAL};
	double		hi[2] = {-HUGE_VAL, -HUGE_VAL};
	double		ox;
	double		oy;

	random_rs(r, with_scale, &theta, &s);
	for (int i = 0; i < in->count; i++)
	{
		c[0] += in->m[i].x / (double) in->count;
		c[1] += in->m[i].y / (double) in->count;
	}
	P[0] = s * cos(theta);
	P[1] = -s * sin(theta);
	P[3] = s * sin(theta);
	P[4] = s * cos(theta);
	P[6] = P[7] = 0;
	P[8] = 1;
	for (int i = 0; i < in->count; i++)
	{
		double		x = in->m[i].x - c[0];
		double		y = in->m[i].y - c[1];
		double		u = P[0] * x + P[1] * y;
		double		v = P[3] * x + P[4] * y;

		lo[0] = fmin(lo[0], u);
		hi[0] = fmax(hi[0], u);
		lo[1] = fmin(lo[1], v);
		hi[1] = fmax(hi[1], v);
	}
	ox = mcc_rng_range(r, -lo[0] + 1, 1022 - hi[0]);
	oy = mcc_rng_range(r, -lo[1] + 1, 1022 - hi[1]);
	P[2] = ox - (P[0] * c[0] + P[1] * c[1]);
	P[5] = oy - (P[3] * c[0] + P[4] * c[1]);
	*out = *in;
	out->width = 1024;
	out->height = 1024;
	for (int i = 0; i < in->count; i++)
	{
		double		x = in->m[i].x;
		double		y = in->m[i].y;

		out->m[i].x = (int16_t) lround(P[0] * x + P[1] * y + P[2]);
		out->m[i].y = (int16_t) lround(P[3] * x + P[4] * y + P[5]);
		/* theta is counter-clockwise on screen (y down): a rotation by theta turns it by -theta */
		out->m[i].theta = mcc_angle_normalize(in->m[i].theta - theta);
	}
}

/* The four ways of the minutiae experiment. */
static const struct
{
	const char *name;
	int			transform;
	int			dirs;
	int			scaled;			/* poses with a scale */
}			ways[] = {
	{"similarity, directions (Hough at 5 scales)", MCC_XFORM_SIMILARITY, 1, 1},
	{"similarity, positions only (global search)", MCC_XFORM_SIMILARITY, 0, 1},
	{"euclidean, directions (mcc_align's default), poses without scale", MCC_XFORM_EUCLIDEAN, 1, 0},
	{"euclidean, positions only, poses without scale", MCC_XFORM_EUCLIDEAN, 0, 0},
};

/* Run the minutiae experiment. */
static void
run_minutiae(const char *data, int poses)
{
	static mcc_minutiae ms[80];
	long		ok[4][4] = {{0}};
	long		tot[4][4] = {{0}};
	double		ms_sum[4] = {0};
	long		ms_n[4] = {0};
	int			eligible[4] = {0};
	int			genuine[4] = {0};

	printf("## Minutiae of FVC2002 set B (mindtct): %d random poses per pair sharing at least %d mates\n\n",
		   poses, MIN_MATES);
	for (int db = 0; db < TFVC_DBS; db++)
	{
		int			read = 1;

		for (int k = 0; k < 80 && read; k++)
			read = rf_read_fvc2002(data, db, k / 8, k % 8, &ms[k]);
		if (!read)
		{
			printf("%s: minutiae not found under %s, skipped\n", tfvc_dbs[db].db, data);
			continue;
		}
		for (int c = 0; c < 80; c++)
			for (int p = 0; p < 80; p++)
			{
				mcc_align_opts o;
				mcc_align_result a0;
				mcc_error	err;
				int			mate0[MCC_MAX_MINUTIAE];
				int			mate_s[MCC_MAX_MINUTIAE];
				int			n0;
				int			n_s;

				if (!(p / 8 == c / 8 && p % 8 > c % 8))
					continue;
				genuine[db]++;
				mcc_align_opts_init(&o);
				if (mcc_align_minutiae(&ms[p], &ms[c], &o, &a0, &err) != MCC_OK)
					continue;
				n0 = mates(a0.fit.matrix, &ms[p], &ms[c], mate0);
				if (n0 < MIN_MATES)
					continue;
				eligible[db]++;
				/* the similarity ways' reference: the similarity fit from the original pose if it mates more */
				{
					mcc_align_result as;
					int			ns;

					o.transform = MCC_XFORM_SIMILARITY;
					if (mcc_align_minutiae(&ms[p], &ms[c], &o, &as, &err) != MCC_OK)
						continue;
					ns = mates(as.fit.matrix, &ms[p], &ms[c], mate_s);
					if (ns > n0)
						n_s = ns;
					else
					{
						n_s = n0;
						memcpy(mate_s, mate0, sizeof(mate0));
					}
				}
				for (int wi = 0; wi < 4; wi++)
					for (int q = 0; q < poses; q++)
					{
						mcc_rng		r;
						mcc_minutiae pp;
						double		P[9];
						mcc_align_result a;
						double		AP[9];
						int			mate[MCC_MAX_MINUTIAE];
						int			same = 0;
						double		t0;

						mcc_rng_seed(&r, mcc_rng_key(2112, (uint64_t) (db * 6400 + c * 80 + p), (uint64_t) q,
													 (uint64_t) ways[wi].scaled));
						pose_probe(&ms[p], &r, ways[wi].scaled, &pp, P);
						mcc_align_opts_init(&o);
						o.transform = ways[wi].transform;
						o.use_directions = ways[wi].dirs;
						o.threads = opt_threads;
						t0 = now_ms();
						if (mcc_align_minutiae(&pp, &ms[c], &o, &a, &err) != MCC_OK)
						{
							tot[wi][db]++;
							continue;
						}
						ms_sum[wi] += now_ms() - t0;
						ms_n[wi]++;
						/* the found transform on the original probe: A P */
						for (int i = 0; i < 3; i++)
							for (int j = 0; j < 3; j++)
							{
								AP[i * 3 + j] = 0;
								for (int k = 0; k < 3; k++)
									AP[i * 3 + j] += a.fit.matrix[i * 3 + k] * P[k * 3 + j];
							}
						{
							const int  *ref_mate = ways[wi].scaled ? mate_s : mate0;
							int			n_ref = ways[wi].scaled ? n_s : n0;

							mates(AP, &ms[p], &ms[c], mate);

							for (int i = 0; i < ms[p].count; i++)
								same += ref_mate[i] >= 0 && mate[i] == ref_mate[i];
							tot[wi][db]++;
							ok[wi][db] += 2 * same >= n_ref;
						}

					}
			}
		fflush(stdout);
	}
	printf("Pairs sharing at least %d mates: DB1 %d, DB2 %d, DB3 %d, DB4 %d of %d, %d, %d, %d genuine pairs.\n\n",
		   MIN_MATES, eligible[0], eligible[1], eligible[2], eligible[3], genuine[0], genuine[1],
		   genuine[2], genuine[3]);
	printf("| fit | DB1_B | DB2_B | DB3_B | DB4_B | all | %s ms per alignment (mean) |\n",
		   opt_threads > 1 ? "wall" : "thread CPU");
	printf("|---|---|---|---|---|---|---|\n");
	for (int wi = 0; wi < 4; wi++)
	{
		long		a = 0;
		long		t = 0;

		printf("| %s", ways[wi].name);
		for (int db = 0; db < TFVC_DBS; db++)
		{
			printf(" | %.1f %%", tot[wi][db] ? 100.0 * ok[wi][db] / tot[wi][db] : 0.0);
			a += ok[wi][db];
			t += tot[wi][db];
		}
		printf(" | %.1f %% (%ld of %ld) | %.2f |\n", t ? 100.0 * a / t : 0.0, a, t,
			   ms_n[wi] ? ms_sum[wi] / ms_n[wi] : 0.0);

	}
	printf("\n");
}

int
main(int argc, char **argv)
{
	int			trials = 200;
	int			poses = 3;
	int			points = 1;
	int			minutiae = 1;
	const char *data = getenv("MCC_SHARED_DATA");
	const targ_opt opts[] = {
		OPT_INT("--trials", &trials, "N"), OPT_INT("--poses", &poses, "K"), OPT_INT("--threads", &opt_threads, "T"),
		OPT_STR("--data", &data, "DIR"), OPT_SET("--points-only", &minutiae, 0), OPT_SET("--minutiae-only", &points, 0),
		OPT_SET("--local", &opt_local, 1), OPT_INT("--workload", &opt_workload, "K"), OPT_END
	};

	targ_parse(argc, argv, opts);
	if (trials < 1 || poses < 1 || opt_threads < 1)
	{
		fprintf(stderr, "trials, poses and threads must be positive\n");
		return 2;
	}
	if (data == NULL)
		data = "../shared/data";
	if (points)
		run_points(trials);
	if (minutiae)
		run_minutiae(data, poses);
	return 0;
}
