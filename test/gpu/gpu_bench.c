/*
 * gpu_bench.c: throughput of the GPU engine (make bench-gpu).
 *
 *   gpu_bench [--max N] [--angles oriented|uniform] [--reps R] [--out DIR]
 *             [--only V[,V...]] [--synth U] [--scale]
 *
 * --only: those variants only, at --max, Q = 1 and 8 (one gallery for all).
 *
 * 1. every kernel variant at N = 250,000 (or --max), Q = 1 and 8;
 * 2. the best variant over gallery sizes 10 .. --max (paper 000 Fig. 12),
 *    Q = 1 and Q = 8, with upload times;
 * 3. batches Q = 1 .. 32 at 250,000 and at --max;
 * 4. the stage breakdown of one search (paper 000 Table VI).
 *
 * "LSS matches/s" counts (probes x templates) per second of the match
 * kernel (ComputeLMC + Step-1 + Step-2, fused); "e2e" per second of the
 * whole mcc_gpu_search() call (top-k and copies included). LS/s counts the
 * local similarities that passed the angle gate; "paper" = LS/s / 515.6,
 * the matches/s at paper 000's shape (32.23 x 16 LS per match).
 * Times are medians over --reps calls, after two warm-up calls.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu_data.h"
#include "mcc_gpu.h"
#include "../unit/testargs.h"
#include "../unit/testclock.h"
#include "../unit/testsort.h"

#define MAXQ 32
#define PAPER_LS 515.6

typedef struct result
{
	double		match_ms;		/* medians */
	double		total_ms;
	mcc_gpu_timing t;			/* of the median call */
} result;

/* Median timing of reps searches of nq probes (rotating the probe set). */
static int
measure(mcc_gpu *c, gd_probe *pr, int npr, int nq, int reps, result *res)
{
	mcc_template_view v[MAXQ];
	static mcc_gpu_hit h[MAXQ * 10];
	int			nh[MAXQ];
	double		m[64], t[64];
	mcc_gpu_timing tm[64];
	mcc_error	err;

	if (reps > 64)
		reps = 64;
	for (int r = -2; r < reps; r++)
	{
		for (int q = 0; q < nq; q++)
			v[q] = pr[(q + (r + 2) * nq) % npr].v;
		if (mcc_gpu_search(c, v, nq, 10, h, nh, &err) != MCC_GPU_OK)
		{
			gd_say("# search failed: %s\n", err.message);
			return -1;
		}
		if (r >= 0)
		{
			mcc_gpu_last_timing(c, &tm[r]);
			m[r] = tm[r].match_ms;
			t[r] = tm[r].total_ms;
		}
	}
	res->t = tm[reps / 2];
	qsort(m, reps, sizeof(double), tsort_double_asc);
	qsort(t, reps, sizeof(double), tsort_double_asc);
	res->match_ms = m[reps / 2];
	res->total_ms = t[reps / 2];
	return 0;
}

/* Open a context with a variant; upload time in *up_ms. */
static int	pc_window = 0;

static int	ndevs = 1;

static mcc_gpu *
open_variant(int variant, const mcc_soa *g, double *up_ms)
{
	mcc_gpu_options o;
	mcc_gpu    *c = NULL;
	mcc_error	err;
	int			dev[MCC_GPU_MAX_DEVICES];
	double		t0;

	for (int i = 0; i < MCC_GPU_MAX_DEVICES; i++)
		dev[i] = i;
	memset(&o, 0, sizeof(o));
	o.variant = variant;
	o.pc_window = pc_window;
	if (mcc_gpu_open(dev, ndevs, g->profile, &o, &c, &err) != MCC_GPU_OK)
	{
		gd_say("# open failed: %s\n", err.message);
		return NULL;
	}
	t0 = tclock_wall_ms();
	if (mcc_gpu_upload(c, g, &err) != MCC_GPU_OK)
	{
		gd_say("# upload failed: %s\n", err.message);
		mcc_gpu_close(c);
		return NULL;
	}
	*up_ms = tclock_wall_ms() - t0;
	return c;
}

/* One line of results. */
static void
line(const char *what, int variant, uint32_t n, int nq, double up_ms, const result *r,
	 double cyl_per_tpl)
{
	double		mps = (double) nq * n / (r->match_ms / 1e3);
	double		e2e = (double) nq * n / (r->total_ms / 1e3);
	double		lss = r->t.pairs / (r->match_ms / 1e3);
	double		omega = r->t.pairs / ((double) nq * n * cyl_per_tpl);

	gd_say("%-8s %-13s N=%-8u Q=%-3d match %9.4f ms  total %9.4f ms  LSS %8.1f M/s  e2e %8.1f M/s  "
		"LS %7.1f G/s  omega %5.2f  paper-shape %7.1f M/s  upload %8.1f ms  blk/SM %d  passes %d  sel %.3f (sort %.3f) ms\n",
		what, mcc_gpu_variant_name(variant), n, nq, r->match_ms, r->total_ms, mps / 1e6, e2e / 1e6,
		lss / 1e9, omega, lss / PAPER_LS / 1e6, up_ms, r->t.blocks_per_sm, r->t.passes,
		r->t.select_ms, r->t.sort_ms);
}

/* The end of a run: the gallery freed (synthetic or read), the log closed. */
static int
finish(mcc_soa *g, uint32_t synth)
{
	if (synth)
		mcc_soa_free(g);
	else
		gd_gallery_free(g);
	if (gd_logf)
		fclose(gd_logf);
	return 0;
}

int
main(int argc, char **argv)
{
	uint32_t	maxn = 1000000;
	int			oriented;
	int			reps = 15;
	const char *out = NULL;
	mcc_soa		g;
	gd_params	gp = {24, 40, 1, 0, 0};
	static gd_probe pr[64];
	gd_rng		r = {99};
	int			count = 0;
	mcc_error	err;
	mcc_gpu_devinfo info[MCC_GPU_MAX_DEVICES];
	uint32_t	nbase;
	int			best = 1;
	double		best_mps = 0;
	static const uint32_t sizes[] = {10, 100, 1000, 10000, 100000, 250000, 1000000, 2000000, 5000000};
	static const int qs[] = {1, 2, 4, 8, 16, 32};
	result		res;
	double		up;
	mcc_gpu    *c;
	char		path[512];
	double		summary[16][4];
	int			nsum = 0;
	int			only;			/* --only V[,V..]: those variants at --max, Q = 1 and 8 */
	int			onlys[32], nonly = 0;
	uint32_t	synth = 0;		/* --synth U: src/core's synthetic fingers, U distinct */
	int			scale = 0;		/* --scale: 1..all devices at --max, Q = 1 and 8 */
	const char *angles = "oriented";
	const targ_opt opts[] = {
		OPT_U32("--max", &maxn, "N"), OPT_STR("--angles", &angles, "oriented|uniform"), OPT_INT("--reps", &reps, "R"),
		OPT_STR("--out", &out, "DIR"), OPT_INTS("--only", onlys, &nonly, "V[,V...]"), OPT_U32("--synth", &synth, "U"),
		OPT_SET("--scale", &scale, 1), OPT_END
	};

	targ_parse(argc, argv, opts);
	oriented = strcmp(angles, "uniform") != 0;
	only = nonly ? onlys[0] : -1;
	if (out)
	{
		snprintf(path, sizeof(path), "%s/bench-gpu.log", out);
		gd_logf = fopen(path, "w");
	}
	mcc_lss_init();
	if (mcc_gpu_probe(&count, info, MCC_GPU_MAX_DEVICES, &err) != MCC_GPU_OK)
	{
		gd_say("# GPU benchmark skipped: %s\n", err.message);
		return 0;
	}
	gd_say("# device: %s, cc %d.%d, %d SMs, %.1f GiB\n", info[0].name, info[0].cc_major, info[0].cc_minor,
		info[0].sm_count, info[0].mem_total / 1073741824.0);
	gp.oriented = oriented;
	if (synth)
	{
		gd_say("# data: src/core's synthetic fingers (mcc_synth defaults, mcc_template_build), %u distinct"
			" templates repeated; probes: 64 second impressions of gallery fingers\n", synth);
		if (gd_gallery_synth(&g, maxn, synth < maxn ? synth : maxn, 1234, pr, 64) != 0)
		{
			gd_say("# cannot build the gallery\n");
			return 1;
		}
	}
	else
	{
		gd_say("# data: random cylinders (255 bits, density 1/8..1/2), %d..%d per template, angles %s;"
			" probes: 64 random templates of 32 cylinders\n", gp.min_cyl, gp.max_cyl,
			oriented ? "oriented (two clusters 128 apart, sd 16)" : "uniform");
		if (gd_gallery(&g, maxn, &gp, 1234) != 0)
		{
			gd_say("# cannot build the gallery\n");
			return 1;
		}
		for (int i = 0; i < 64; i++)
			gd_probe_random(&pr[i], 32, &gp, &r);
	}
	{
		double		pc = 0;

		for (int i = 0; i < 64; i++)
			pc += pr[i].v.n_cyl;
		gd_say("# probes: %.1f cylinders on average\n", pc / 64);
	}
	gd_say("# gallery: %u templates, %u cylinders (%.2f per template)\n", g.n_tpl, g.n_cyl,
		(double) g.n_cyl / g.n_tpl);
	nbase = maxn < 250000 ? maxn : 250000;
	if (scale)
	{
		/* multi-GPU scaling (issue 10): the whole gallery on 1, 2, .. devices */
		double		base[2] = {0, 0};

		for (int d = 1; d <= count; d++)
		{
			ndevs = d;
			if ((c = open_variant(0, &g, &up)) == NULL)
				continue;
			for (int qi = 0; qi < 2; qi++)
				if (measure(c, pr, 64, qi ? 8 : 1, reps, &res) == 0)
				{
					double		mps = (qi ? 8.0 : 1.0) * g.n_tpl / (res.total_ms / 1e3);

					if (d == 1)
						base[qi] = mps;
					gd_say("# %d GPU(s), Q = %d: whole-call %.1f M matches/s, scaling efficiency %.1f%%"
						" (upload %.2f s)\n", d, qi ? 8 : 1, mps / 1e6,
						base[qi] > 0 ? 100.0 * mps / (d * base[qi]) : 0.0, up / 1e3);
					line("scale", 0, g.n_tpl, qi ? 8 : 1, up, &res, (double) g.n_cyl / g.n_tpl);
				}
			mcc_gpu_close(c);
		}
		ndevs = 1;
		return finish(&g, synth);
	}
	if (only >= 0)
	{
		for (int oi = 0; oi < nonly; oi++)
			if ((c = open_variant(onlys[oi], &g, &up)) != NULL)
			{
				for (int qi = 0; qi < 2; qi++)
					if (measure(c, pr, 64, qi ? 8 : 1, reps, &res) == 0)
						line("only", onlys[oi], g.n_tpl, qi ? 8 : 1, up, &res, (double) g.n_cyl / g.n_tpl);
				mcc_gpu_close(c);
			}
		return finish(&g, synth);
	}

	/* 1. variants */
	for (int v = 1; v < MCC_GPU_VARIANT_COUNT; v++)
	{
		mcc_soa		s = g;

		s.n_tpl = nbase;
		s.n_cyl = g.first[nbase];
		if (!(c = open_variant(v, &s, &up)))
			continue;
		if (measure(c, pr, 64, 1, reps, &res) == 0)
		{
			double		mps = (double) nbase / (res.match_ms / 1e3);

			line("variant", v, nbase, 1, up, &res, (double) s.n_cyl / s.n_tpl);
			if (mps > best_mps)
			{
				best_mps = mps;
				best = v;
			}
		}
		if (measure(c, pr, 64, 8, reps, &res) == 0)
			line("variant", v, nbase, 8, up, &res, (double) s.n_cyl / s.n_tpl);
		mcc_gpu_close(c);
	}
	gd_say("# best variant at Q=1: %s\n", mcc_gpu_variant_name(best));

	/* 1b. tiles in popcount order inside angle windows */
	{
		int			bestw = 0;

		for (int w = 64; w <= 256; w *= 2)
		{
			mcc_soa		s = g;

			s.n_tpl = nbase;
			s.n_cyl = g.first[nbase];
			pc_window = w;
			if (!(c = open_variant(best, &s, &up)))
				continue;
			if (measure(c, pr, 64, 1, reps, &res) == 0)
			{
				double		mps = (double) nbase / (res.match_ms / 1e3);

				gd_say("# popcount window %d:\n", w);
				line("window", best, nbase, 1, up, &res, (double) s.n_cyl / s.n_tpl);
				if (mps > best_mps)
				{
					best_mps = mps;
					bestw = w;
				}
			}
			mcc_gpu_close(c);
		}
		pc_window = bestw;
		gd_say("# best popcount window: %d\n", bestw);
	}

	/* 2. sizes */
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]) && sizes[i] <= maxn; i++)
	{
		mcc_soa		s = g;

		s.n_tpl = sizes[i];
		s.n_cyl = g.first[sizes[i]];
		if (!(c = open_variant(best, &s, &up)))
			continue;
		for (int qi = 0; qi < 2; qi++)
			if (measure(c, pr, 64, qi ? 8 : 1, reps, &res) == 0)
			{
				line("size", best, sizes[i], qi ? 8 : 1, up, &res, (double) s.n_cyl / s.n_tpl);
				if (nsum < 16)
				{
					summary[nsum][0] = sizes[i];
					summary[nsum][1] = qi ? 8 : 1;
					summary[nsum][2] = (qi ? 8.0 : 1.0) * sizes[i] / (res.match_ms / 1e3);
					summary[nsum][3] = (qi ? 8.0 : 1.0) * sizes[i] / (res.total_ms / 1e3);
					nsum++;
				}
			}
		mcc_gpu_close(c);
	}

	/* 3. batches, 4. breakdown */
	for (int pass = 0; pass < 2; pass++)
	{
		mcc_soa		s = g;
		uint32_t	n = pass ? maxn : nbase;

		if (pass && maxn == nbase)
			break;
		s.n_tpl = n;
		s.n_cyl = g.first[n];
		if (!(c = open_variant(best, &s, &up)))
			continue;
		for (size_t qi = 0; qi < sizeof(qs) / sizeof(qs[0]); qi++)
			if (measure(c, pr, 64, qs[qi], reps, &res) == 0)
			{
				line("batch", best, n, qs[qi], up, &res, (double) s.n_cyl / s.n_tpl);
				if (qs[qi] == 1 && pass == 0)
					gd_say("# breakdown N=%u Q=1 (ms): prep %.4f  h2d %.4f  match %.4f  select %.4f  d2h %.4f  merge %.4f  total %.4f\n",
						n, res.t.prep_ms, res.t.h2d_ms, res.t.match_ms, res.t.select_ms, res.t.d2h_ms,
						res.t.merge_ms, res.t.total_ms);
				if (qs[qi] == 16)
					gd_say("# breakdown N=%u Q=16 (ms): prep %.4f  h2d %.4f  match %.4f  select %.4f  d2h %.4f  merge %.4f  total %.4f\n",
						n, res.t.prep_ms, res.t.h2d_ms, res.t.match_ms, res.t.select_ms, res.t.d2h_ms,
						res.t.merge_ms, res.t.total_ms);
			}
		mcc_gpu_close(c);
	}

	/* 5. every device: the gallery partitioned, results merged */
	if (count > 1)
	{
		mcc_soa		s = g;

		ndevs = count;
		if ((c = open_variant(best, &s, &up)) != NULL)
		{
			for (int qi = 0; qi < 2; qi++)
				if (measure(c, pr, 64, qi ? 8 : 1, reps, &res) == 0)
				{
					gd_say("# %d GPUs (match = device 0's kernel time; e2e = the whole call):\n", count);
					line("multi", best, maxn, qi ? 8 : 1, up, &res, (double) s.n_cyl / s.n_tpl);
				}
			mcc_gpu_close(c);
		}
		ndevs = 1;
	}

	gd_say("\n# summary (%s): N, Q, LSS M matches/s, end-to-end M matches/s\n", mcc_gpu_variant_name(best));
	for (int i = 0; i < nsum; i++)
		gd_say("%10.0f %3.0f %10.1f %10.1f\n", summary[i][0], summary[i][1], summary[i][2] / 1e6,
			summary[i][3] / 1e6);
	return finish(&g, synth);
}
