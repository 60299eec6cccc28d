/*
 * mccbench: matches per second of the CPU gallery scan (mcc_soa_scan), one
 * thread, for each scan kernel this CPU can run.
 *
 *   mccbench [-n templates] [-p probes] [-u unique] [-g synth|random]
 *            [-m min,max] [-s seed] [-k kernel,...] [-r repeats] [-P stride] [-I]
 *
 * The gallery holds n templates (default 250,000, paper 000's benchmark
 * size). Building cylinders costs ~0.25 ms per template, so by default only
 * u = 20,000 distinct templates are built and the gallery cycles through
 * them (every copy is stored separately, so memory traffic is that of n
 * templates); -u 0 builds all n. Minutiae come from the synthetic generator
 * (mcc_synth.h, defaults: FVC2002 DB1-like 388x374 impressions of masters
 * with min..max minutiae): gallery template i is impression 0 of finger i,
 * probes are impression 1 of gallery fingers (mated): random ones, or with
 * -P the fingers i * stride mod u for probe i (scripts/bench-scan.sh's
 * probes, with -g synth and a stride of 997). -g random uses the
 * plausible random sets of test/unit/testgen.h instead (probes are noisy
 * copies of gallery sets). Masters have 30..60 minutiae by default (-m),
 * random sets 22..42: both give about 32 cylinders per template. Reports, per kernel, the best of r rounds (each round
 * scans the whole gallery once per probe), timed in thread CPU seconds so
 * that other processes on a shared machine do not count (wall time too): matches/s (template comparisons), local similarities
 * per second and ns per local similarity, and the matches/s the same LS
 * rate gives on paper 000's shape (32.23 x 16 = 515.6 LS per match). A
 * second line per kernel scores the same templates in place, one call of
 * mcc_soa_score_view per template, as identify()'s backend scan does (the
 * distinct templates only: a smaller working set than the gallery's).
 * With -I it runs rounds on request instead (run_rounds).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../unit/testgen.h"
#include "mcc_lss.h"
#include "mcc_soa.h"
#include "mcc_synth.h"
#include "../unit/testargs.h"
#include "../unit/testclock.h"

#define PAPER_LS_PER_MATCH (32.23 * 16.0)

/* The time of one round: every probe against the whole gallery. */
typedef struct round_time
{
	double		cpu;			/* thread CPU seconds in the scans */
	double		wall;
	double		checksum;		/* of every 997th score */
} round_time;

/* One round of the SoA scan with the kernel set: each probe over the gallery. */
static round_time
soa_round(mcc_probe *q, const mcc_soa *g, uint8_t **pblobs, const size_t *psizes, int np,
		  float *scores)
{
	round_time	t = {0, 0, 0};
	mcc_template_view v;
	mcc_error	err;

	for (int i = 0; i < np; i++)
	{
		double		s;
		double		sw;

		mcc_template_open(pblobs[i], psizes[i], &v, &err);
		mcc_probe_init(q, &v);
		s = tclock_cpu_s();
		sw = tclock_wall_s();
		mcc_soa_scan(q, g, 0, g->n_tpl, scores);
		t.cpu += tclock_cpu_s() - s;
		t.wall += tclock_wall_s() - sw;
		for (uint32_t j = 0; j < g->n_tpl; j += 997)
			t.checksum += scores[j];
	}
	return t;
}

/*
 * -I: rounds on request, for a script that interleaves them with the
 * backend scan's (scripts/bench-scan.sh): "ready" once the gallery is
 * built, then for each line read from stdin one round of the SoA scan with
 * the kernel named first, answered with a line "round CPU-seconds
 * wall-seconds matches". The two are then measured minutes apart no more,
 * so the machine's drift (a quarter to a half within minutes on a shared
 * VM) stays out of their ratio.
 */
static int
run_rounds(const char *kernel, mcc_probe *q, const mcc_soa *g, uint8_t **pblobs,
		   const size_t *psizes, int np, float *scores)
{
	char		line[64];

	if (kernel == NULL || mcc_soa_set_kernel(kernel) != 0)
	{
		fprintf(stderr, "mccbench: kernel %s not available on this CPU\n", kernel ? kernel : "(none)");
		return 1;
	}
	printf("ready %s\n", kernel);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) != NULL)
	{
		round_time	t = soa_round(q, g, pblobs, psizes, np, scores);

		printf("round %.6f %.6f %.0f\n", t.cpu, t.wall, (double) np * g->n_tpl);
		fflush(stdout);
	}
	mcc_soa_set_kernel(NULL);
	return 0;
}

/* Build the gallery and probes, then time each kernel. */
int
main(int argc, char **argv)
{
	long		n = 250000;
	int			np = 20;
	long		unique = 20000;
	int			min_m = 0;
	int			max_m = 0;
	int			synth;
	mcc_synth_params sp;
	int			repeats = 3;
	long		stride = 0;
	uint64_t	seed = 1;
	const char *kernels = "avx512,avx2,popcnt,generic";
	const mcc_profile *p = mcc_profile_by_id(MCC_PROFILE_GPU2015);
	tg_rng		r;
	mcc_minutiae *masters;
	uint64_t   *fingers_of;
	uint8_t   **blobs;
	size_t	   *sizes;
	mcc_template_view v;
	mcc_template_view *views;
	mcc_soa		g;
	mcc_error	err;
	mcc_probe  *q;
	float	   *scores;
	uint8_t   **pblobs;
	size_t	   *psizes;
	double		pcyl = 0;
	double		gate = 0;
	char		kbuf[256];
	double		t0;
	const char *gen = "synth";
	const char *m_range = NULL;
	bool		rounds_mode = false;
	const targ_opt opts[] = {
		OPT_LONG("-n", &n, "templates"), OPT_INT("-p", &np, "probes"), OPT_LONG("-u", &unique, "unique"),
		OPT_STR("-g", &gen, "synth|random"), OPT_STR("-m", &m_range, "min,max"), OPT_U64("-s", &seed, "seed"),
		OPT_STR("-k", &kernels, "kernel,..."), OPT_INT("-r", &repeats, "repeats"), OPT_LONG("-P", &stride, "stride"),
		OPT_BOOL("-I", &rounds_mode), OPT_END
	};

	targ_parse(argc, argv, opts);
	synth = strcmp(gen, "synth") == 0;
	if ((!synth && strcmp(gen, "random") != 0) ||
		(m_range != NULL && sscanf(m_range, "%d,%d", &min_m, &max_m) != 2))
		targ_usage(argv[0], opts);
	if (min_m == 0 && max_m == 0)
	{
		/* ~32 cylinders per template either way, as in paper 000 */
		min_m = synth ? 30 : 22;
		max_m = synth ? 60 : 42;
	}
	if (n < 1 || np < 1 || repeats < 1 || min_m < 1 || max_m < min_m || max_m > MCC_MAX_MINUTIAE)
		targ_usage(argv[0], opts);
	if (unique <= 0 || unique > n)
		unique = n;
	r.s = seed;
	mcc_lss_init();
	mcc_synth_defaults(&sp);
	sp.seed = seed;
	sp.min_minutiae = min_m;
	sp.max_minutiae = max_m;

	/* the distinct gallery templates */
	t0 = tclock_wall_s();
	masters = malloc(sizeof(mcc_minutiae) * unique);
	fingers_of = malloc(sizeof(uint64_t) * unique);
	blobs = malloc(sizeof(uint8_t *) * unique);
	sizes = malloc(sizeof(size_t) * unique);
	for (long i = 0; i < unique; i++)
	{
		uint64_t	finger = (uint64_t) i;

		do
		{
			if (synth)
			{
				mcc_minutiae imp;

				mcc_synth_master(&sp, finger, &masters[i]);
				mcc_synth_impression(&sp, &masters[i], finger, 0, &imp);
				blobs[i] = tg_build_blob(&imp, p, &sizes[i]);
			}
			else
			{
				tg_minutiae(&r, &masters[i], min_m, max_m, 8.0);
				blobs[i] = tg_build_blob(&masters[i], p, &sizes[i]);
			}
			finger += (uint64_t) unique;	/* an unusable finger: take another */
		} while (blobs[i] == NULL);
		fingers_of[i] = finger - (uint64_t) unique;
	}
	printf("# built %ld distinct templates in %.1f s (%.3f ms each)\n", unique,
		   tclock_wall_s() - t0, (tclock_wall_s() - t0) * 1e3 / unique);

	/* the gallery: n templates cycling through the distinct ones */
	if (mcc_soa_init(&g, p, (uint32_t) n, (uint32_t) (n * 34), &err) != MCC_OK)
	{
		fprintf(stderr, "mccbench: %s\n", err.message);
		return 1;
	}
	for (long i = 0; i < n; i++)
	{
		mcc_template_open(blobs[i % unique], sizes[i % unique], &v, &err);
		if (mcc_soa_append(&g, &v, i, &err) != MCC_OK)
		{
			fprintf(stderr, "mccbench: %s\n", err.message);
			return 1;
		}
	}

	/* the distinct templates as views, for the in-place scan */
	views = malloc(sizeof(mcc_template_view) * unique);
	for (long i = 0; i < unique; i++)
		mcc_template_open(blobs[i], sizes[i], &views[i], &err);

	/* probes: impressions of gallery fingers */
	pblobs = malloc(sizeof(uint8_t *) * np);
	psizes = malloc(sizeof(size_t) * np);
	for (int i = 0; i < np; i++)
		do
		{
			mcc_minutiae imp;
			long		m = stride > 0 ? (long) (((uint64_t) i * (uint64_t) stride) % (uint64_t) unique) :
				(long) (tg_next(&r) % (uint64_t) unique);

			if (synth)
				mcc_synth_impression(&sp, &masters[m], fingers_of[m], 1, &imp);
			else
				tg_impression(&r, &masters[m], &imp, 0.85, 3, 0.15, 4);
			pblobs[i] = tg_build_blob(&imp, p, &psizes[i]);
		} while (pblobs[i] == NULL);

	/* workload shape: probe cylinders, and those that pass the gate per gallery cylinder */
	for (int i = 0; i < np; i++)
	{
		long		per_angle[MCC_Z] = {0};
		double		sum = 0;

		mcc_template_open(pblobs[i], psizes[i], &v, &err);
		pcyl += v.n_cyl;
		for (int a = 0; a < MCC_Z; a++)
			for (int c = 0; c < v.n_cyl; c++)
				per_angle[a] += mcc_lss_gate(mcc_template_cyl_angle(&v, c), a, p->delta_theta);
		for (uint32_t j = 0; j < g.n_cyl; j++)
			sum += per_angle[g.angle[j]];
		gate += sum / g.n_cyl;
	}
	pcyl /= np;
	gate /= np;
	printf("# profile %s; gallery %ld templates (%ld distinct), %u cylinders, %.2f per template\n",
		   p->name, n, unique, g.n_cyl, (double) g.n_cyl / n);
	printf("# %d probes, %.2f cylinders each; %.2f probe cylinders pass the gate per gallery cylinder\n",
		   np, pcyl, gate);
	printf("# local similarities per match: %.1f (paper 000: %.1f)\n",
		   gate * g.n_cyl / n, PAPER_LS_PER_MATCH);
	if (synth)
		printf("# minutiae: mcc_synth defaults (%dx%d at %d dpi), masters of %d..%d minutiae, "
			   "gallery impression 0, probes impression 1, seed %llu\n",
			   sp.width, sp.height, sp.dpi, min_m, max_m, (unsigned long long) seed);
	else
		printf("# minutiae: plausible random sets, %d..%d per template (test/unit/testgen.h), seed %llu\n",
			   min_m, max_m, (unsigned long long) seed);

	q = aligned_alloc(64, (mcc_probe_size() + 63) / 64 * 64);	/* as the PostgreSQL layer aligns it */
	scores = malloc(sizeof(float) * n);
	snprintf(kbuf, sizeof(kbuf), "%s", kernels);
	if (rounds_mode)
		return run_rounds(strtok(kbuf, ","), q, &g, pblobs, psizes, np, scores);
	for (char *k = strtok(kbuf, ","); k != NULL; k = strtok(NULL, ","))
	{
		double		best = 1e30;
		double		best_wall = 1e30;
		double		best_view = 1e30;
		double		checksum = 0;
		double		checksum_view = 0;

		if (mcc_soa_set_kernel(k) != 0)
		{
			printf("%-8s not available on this CPU\n", k);
			continue;
		}
		for (int rep = 0; rep < repeats; rep++)
		{
			round_time t = soa_round(q, &g, pblobs, psizes, np, scores);
			double		tv = 0;

			checksum = t.checksum;
			checksum_view = 0;
			for (int i = 0; i < np; i++)
			{
				double		s;

				mcc_template_open(pblobs[i], psizes[i], &v, &err);
				mcc_probe_init(q, &v);
				/* the same templates scored in place, one by one (identify()'s backend scan) */
				s = tclock_cpu_s();
				for (long j = 0; j < n; j++)
					scores[j] = mcc_soa_score_view(q, &views[j % unique]);
				tv += tclock_cpu_s() - s;
				for (long j = 0; j < n; j += 997)
					checksum_view += scores[j];
			}
			if (tv < best_view)
				best_view = tv;
			if (t.cpu < best)
				best = t.cpu;
			if (t.wall < best_wall)
				best_wall = t.wall;
		}
		{
			double		matches = (double) n * np / best;
			double		ls = matches * gate * g.n_cyl / n;

			printf("%-8s %7.3f s CPU (%7.3f s wall) for %d x %ld matches: %6.3f M matches/s/core, "
				   "%6.3f G LS/s, %5.2f ns/LS; at paper 000's shape %6.3f M matches/s/core (checksum %.4f)\n",
				   k, best, best_wall, np, n, matches / 1e6, ls / 1e9, 1e9 / ls,
				   ls / PAPER_LS_PER_MATCH / 1e6, checksum);
			matches = (double) n * np / best_view;
			printf("%-8s %7.3f s CPU in place (mcc_soa_score_view, template by template): %6.3f M matches/s/core (checksum %.4f)\n",
				   k, best_view, matches / 1e6, checksum_view);
		}
	}
	mcc_soa_set_kernel(NULL);
	return 0;
}
