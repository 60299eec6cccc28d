/*
 * gpu_bench_refine.c: throughput of refinement on the GPU
 * (kernels/mcc_gpu_refine.h).
 *
 *   gpu_bench_refine [--gallery N] [--unique U] [--cands C] [--reps R] [--out DIR]
 *
 * A device gallery of N templates (U distinct synthetic fingers, src/core's
 * mcc_synth defaults, about 35 cylinders each, repeated) with refinement
 * data; probes are other impressions of gallery fingers; each probe gets C
 * candidates (its mates and random templates: the shortlist of an LSS
 * search). For batches of Q = 1 .. 64 probes (Q x C pairs in one call, as
 * the engine batches concurrent queries): the time of one mcc_gpu_refine
 * call (median of R after 2 warm-ups), ms per 1,000 candidates, candidates
 * per second, and the kernel's share; for methods fused and lss-dtr (every
 * GPU method at Q = 16), for gallery candidates and candidates given as
 * templates, and for block sizes 64, 128 and 256. Last, the CPU's
 * mcc_match_candidate on one thread for the same pairs, for scale (alone
 * with --cpu-only, or when there is no GPU).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../unit/refine_testdata.h"
#include "gpu_data.h"
#include "mcc_gpu.h"
#include "mcc_gpu_refine.h"
#include "mcc_soa.h"
#include "../unit/testargs.h"
#include "../unit/testclock.h"
#include "../unit/testsort.h"

#define MAXQ 64

/* The bench's data: gallery templates (views into blobs) and probes. */
typedef struct bdata
{
	rt_set		gal;			/* the distinct gallery templates */
	rt_set		prb;			/* probes */
	int		   *finger_of;		/* probe -> its finger's first gallery template */
	mcc_soa		soa;
	mcc_gpu_geom geo;
	uint32_t	n;				/* gallery size (repeats of gal) */
} bdata;

static int
bdata_build(bdata *d, uint32_t n, int unique, int nprobes, uint64_t seed)
{
	mcc_synth_params sp;
	mcc_minutiae *master = malloc(sizeof(mcc_minutiae));
	mcc_minutiae *imp = malloc(sizeof(mcc_minutiae));
	mcc_error	err;
	const mcc_profile *prof = mcc_profile_by_id(MCC_PROFILE_GPU2015);

	memset(d, 0, sizeof(*d));
	mcc_synth_defaults(&sp);
	sp.seed = seed;
	for (int f = 0; f < unique; f++)
	{
		mcc_synth_master(&sp, (uint64_t) f, master);
		mcc_synth_impression(&sp, master, (uint64_t) f, 0, imp);
		if (rt_build(&d->gal, imp) < 0)
			return -1;
	}
	d->finger_of = malloc(sizeof(int) * nprobes);
	for (int q = 0; q < nprobes; q++)
	{
		int			f = (int) ((uint64_t) q * 7919 % (uint64_t) unique);

		mcc_synth_master(&sp, (uint64_t) f, master);
		mcc_synth_impression(&sp, master, (uint64_t) f, 1 + (uint64_t) q, imp);
		if (rt_build(&d->prb, imp) < 0)
			return -1;
		d->finger_of[q] = f;
	}
	if (mcc_soa_init(&d->soa, prof, n, n * 40, &err) != MCC_OK ||
		mcc_gpu_geom_init(&d->geo, n, n * 40, &err) != MCC_OK)
		return -1;
	for (uint32_t t = 0; t < n; t++)
		if (mcc_soa_append(&d->soa, &d->gal.v[t % (uint32_t) unique], t, &err) != MCC_OK ||
			mcc_gpu_geom_append(&d->geo, &d->gal.v[t % (uint32_t) unique], &err) != MCC_OK)
			return -1;
	d->n = n;
	free(master);
	free(imp);
	return 0;
}

/* C candidates per probe for probes [0, nq): its finger's copies first, then random templates. */
static mcc_gpu_pair *
shortlist(const bdata *d, int nq, int ncand, int from, uint64_t seed)
{
	mcc_gpu_pair *p = malloc(sizeof(mcc_gpu_pair) * (size_t) nq * ncand);
	tg_rng		r = {seed};
	int			unique = d->gal.n;

	for (int q = 0; q < nq; q++)
		for (int c = 0; c < ncand; c++)
		{
			mcc_gpu_pair *x = &p[(size_t) q * ncand + c];
			uint32_t	t = c < 2 ? (uint32_t) (d->finger_of[q] + c * unique) % d->n :
				(uint32_t) tg_int(&r, 0, (int) d->n - 1);

			x->probe = (uint32_t) q;
			x->cand = from == MCC_GPU_FROM_VIEW ? t % (uint32_t) unique : t;
			x->from = (uint32_t) from;
		}
	return p;
}

/* Median time of one refine call, and its timing breakdown. */
static double
time_call(mcc_gpu *g, const bdata *d, const mcc_gpu_pair *pairs, size_t np, int nq, int method,
		  int reps, float *sc, mcc_gpu_refine_timing *tm)
{
	double		t[64];
	mcc_error	err;
	mcc_gpu_refine_timing best[64];

	if (reps > 64)
		reps = 64;
	for (int i = -2; i < reps; i++)
	{
		double		t0 = tclock_wall_ms();

		if (mcc_gpu_refine(g, d->prb.v, nq, d->gal.v, (uint32_t) d->gal.n, pairs, np, method, NULL, sc, &err) !=
			MCC_GPU_OK)
		{
			gd_say("# refine failed: %s\n", err.message);
			return -1;
		}
		if (i >= 0)
		{
			t[i] = tclock_wall_ms() - t0;
			mcc_gpu_refine_last_timing(g, &best[i]);
		}
	}
	{
		double		s[64];
		int			mid = 0;

		memcpy(s, t, sizeof(double) * reps);
		qsort(s, reps, sizeof(double), tsort_double_asc);
		for (int i = 0; i < reps; i++)
			if (t[i] == s[reps / 2])
				mid = i;
		*tm = best[mid];
		return s[reps / 2];
	}
}

/* The CPU for scale: mcc_match_candidate on one thread, the same candidates of probe 0. */
static void
cpu_rows(const bdata *d, int ncand)
{
	static const int meth[] = {MCC_FUSED, MCC_LSS_DTR, MCC_LSS};
	mcc_match_work *w = malloc(mcc_match_work_size());
	mcc_gpu_pair *p = shortlist(d, 1, ncand, MCC_GPU_FROM_VIEW, 5);
	mcc_error	err;
	float		s;

	mcc_match_work_init(w);
	for (int mi = 0; mi < 3; mi++)
	{
		double		t0;
		double		ms;

		mcc_match_set_probe(w, &d->prb.v[0]);
		t0 = tclock_wall_ms();
		for (int c = 0; c < ncand; c++)
			mcc_match_candidate(w, &d->gal.v[p[c].cand], meth[mi], NULL, &s, &err);
		ms = tclock_wall_ms() - t0;
		gd_say("cpu, 1 thread                %-8s Q=1   pairs=%-6d call %8.3f ms  per 1000 cand %7.3f ms\n",
			   mcc_method_name(meth[mi]), ncand, ms, ms * 1000.0 / ncand);
	}
	free(p);
	free(w);
}

/* What every timed row needs besides its own parameters. */
typedef struct bench_run
{
	mcc_gpu    *g;
	const bdata *d;
	int			ncand;			/* --cands: candidates per probe */
	int			reps;			/* --reps: calls timed (their median) */
	float	   *sc;				/* room for the scores of MAXQ probes */
} bench_run;

/*
 * One row: Q probes with shortlists of C candidates (from the gallery or
 * given as templates, MCC_GPU_FROM_*), refined with method, timed and
 * printed with the call's breakdown; nothing if the call failed.
 */
static void
bench_row(const bench_run *b, const char *what, int method, int q, int from, uint64_t seed)
{
	mcc_gpu_pair *p = shortlist(b->d, q, b->ncand, from, seed);
	double		pairs = (double) q * b->ncand;
	mcc_gpu_refine_timing tm;
	double		ms = time_call(b->g, b->d, p, (size_t) q * b->ncand, q, method, b->reps, b->sc, &tm);

	free(p);
	if (ms < 0)
		return;
	gd_say("%-28s %-8s Q=%-3d pairs=%-6.0f call %8.3f ms  per 1000 cand %7.3f ms  %8.2f M cand/s  "
		"kernel %8.3f ms  prep %6.3f  h2d %6.3f  d2h %6.3f  launches %d  blocks/SM %d\n",
		what, mcc_method_name(method), q, pairs, ms, ms * 1000.0 / pairs, pairs / ms / 1e3,
		tm.kernel_ms, tm.prep_ms, tm.h2d_ms, tm.d2h_ms, tm.launches, tm.blocks_per_sm);
}

/* Open device 0 and put d's gallery and refinement data on it; NULL on a failure (said). */
static mcc_gpu *
gpu_setup(const bdata *d)
{
	mcc_gpu    *g = NULL;
	int			dev0 = 0;
	mcc_error	err;
	mcc_gpu_meminfo mi;
	int			nm = 0;
	double		t0;

	if (mcc_gpu_open(&dev0, 1, mcc_profile_by_id(MCC_PROFILE_GPU2015), NULL, &g, &err) != MCC_GPU_OK)
	{
		gd_say("# open failed: %s\n", err.message);
		return NULL;
	}
	t0 = tclock_wall_ms();
	if (mcc_gpu_upload(g, &d->soa, &err) != MCC_GPU_OK)
	{
		gd_say("# upload failed: %s\n", err.message);
		return NULL;
	}
	gd_say("# gallery upload: %.0f ms\n", tclock_wall_ms() - t0);
	t0 = tclock_wall_ms();
	if (mcc_gpu_refine_attach(g, &d->soa, &d->geo, 0, d->n, &err) != MCC_GPU_OK)
	{
		gd_say("# attach failed: %s\n", err.message);
		return NULL;
	}
	gd_say("# refinement data attach: %.0f ms\n", tclock_wall_ms() - t0);
	if (mcc_gpu_memory(g, &mi, 1, &nm, &err) == MCC_GPU_OK)
		gd_say("# device memory: gallery with refinement data %.1f MB (%.1f B per cylinder)\n",
			   mi.gallery_bytes / 1e6, (double) mi.gallery_bytes / d->soa.n_cyl);
	return g;
}

/* The rows of the GPU: batch sizes, every method, candidates as templates, block sizes. */
static void
gpu_rows(const bench_run *b)
{
	static const int qs[] = {1, 2, 4, 8, 16, 32, 64};
	static const int meth[] = {MCC_FUSED, MCC_LSS_DTR, MCC_LSS_R, MCC_LGS, MCC_LGS_R, MCC_LGS_DTR, MCC_LSS};
	mcc_error	err;

	gd_say("# batches, gallery candidates, 128 threads per block\n");
	for (int mi = 0; mi < 2; mi++)
		for (size_t k = 0; k < sizeof(qs) / sizeof(qs[0]); k++)
			bench_row(b, "gallery", meth[mi], qs[k], MCC_GPU_FROM_GALLERY, 5);
	gd_say("# every GPU method, Q = 1 and 16, gallery candidates\n");
	for (int mi = 0; mi < 7; mi++)
		for (int q = 1; q <= 16; q += 15)
			bench_row(b, "gallery", meth[mi], q, MCC_GPU_FROM_GALLERY, 6);
	gd_say("# candidates given as templates (sides prepared on the host each call)\n");
	for (int q = 1; q <= 16; q += 15)
		bench_row(b, "templates", MCC_FUSED, q, MCC_GPU_FROM_VIEW, 7);
	gd_say("# block sizes (fused, gallery)\n");
	for (int th = 64; th <= 256; th *= 2)
	{
		char		what[64];

		if (mcc_gpu_refine_tune(b->g, th, 0, &err) != MCC_GPU_OK)
			continue;
		snprintf(what, sizeof(what), "gallery, %d threads", th);
		for (int q = 1; q <= 16; q += 15)
			bench_row(b, what, MCC_FUSED, q, MCC_GPU_FROM_GALLERY, 8);
	}
	mcc_gpu_refine_tune(b->g, 0, 0, &err);
}

int
main(int argc, char **argv)
{
	uint32_t	n = 100000;
	int			unique = 5000;
	bench_run	b = {.ncand = 1000, .reps = 9};
	const char *out = NULL;
	int			cpu_only = 0;
	bdata		d;
	mcc_error	err;
	int			count = 0;
	mcc_gpu_devinfo info[MCC_GPU_MAX_DEVICES];
	double		t0;
	long		c = 0;
	const targ_opt opts[] = {
		OPT_U32("--gallery", &n, "N"), OPT_INT("--unique", &unique, "U"), OPT_INT("--cands", &b.ncand, "C"),
		OPT_INT("--reps", &b.reps, "R"), OPT_STR("--out", &out, "DIR"), OPT_SET("--cpu-only", &cpu_only, 1),
		OPT_END
	};

	targ_parse(argc, argv, opts);
	if (unique > (int) n)
		unique = (int) n;
	if (out)
	{
		char		path[1024];

		snprintf(path, sizeof(path), "%s/bench-refine.log", out);
		gd_logf = fopen(path, "w");
	}
	mcc_lss_init();
	t0 = tclock_wall_ms();
	if (bdata_build(&d, n, unique, MAXQ, 99) != 0)
	{
		gd_say("# data build failed\n");
		return 1;
	}
	gd_say("# data: gallery %u templates (%d distinct synthetic fingers, %.1f cylinders per template), %d probes, "
		"%d candidates per probe; built in %.0f ms\n",
		n, unique, (double) d.soa.n_cyl / n, MAXQ, b.ncand, tclock_wall_ms() - t0);
	for (int q = 0; q < MAXQ; q++)
		c += d.prb.v[q].n_cyl;
	gd_say("# probes: %.1f cylinders on average\n", (double) c / MAXQ);
	if (cpu_only || mcc_gpu_probe(&count, info, MCC_GPU_MAX_DEVICES, &err) != MCC_GPU_OK)
	{
		if (!cpu_only)
			gd_say("# no GPU: %s\n", err.message);
		cpu_rows(&d, b.ncand);
		return 0;
	}
	gd_say("# GPU 0: %s, %d SMs\n", info[0].name, info[0].sm_count);
	if ((b.g = gpu_setup(&d)) == NULL)
		return 1;
	b.d = &d;
	b.sc = malloc(sizeof(float) * (size_t) MAXQ * b.ncand);
	gpu_rows(&b);
	cpu_rows(&d, b.ncand);
	gd_say("# summary: see the rows above (median of %d calls after 2 warm-ups)\n", b.reps);
	mcc_gpu_close(b.g);
	free(b.sc);
	return 0;
}
