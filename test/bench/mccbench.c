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

/* The command line. */
typedef struct bench_opts
{
	long		n;				/* -n: gallery templates */
	int			np;				/* -p: probes */
	long		unique;			/* -u: distinct templates, at most n */
	bool		synth;			/* -g synth, else random */
	int			min_m;			/* -m: minutiae of a master (or random set) */
	int			max_m;
	uint64_t	seed;			/* -s */
	const char *kernels;		/* -k: comma-separated */
	int			repeats;		/* -r */
	long		stride;			/* -P: probe i is finger i * stride mod unique */
	bool		rounds_mode;	/* -I: run_rounds */
} bench_opts;

/* The options into o, defaults filled in; the usage line on a bad value. */
static void
parse_options(int argc, char **argv, bench_opts *o)
{
	const char *gen = "synth";
	const char *m_range = NULL;
	const targ_opt opts[] = {
		OPT_LONG("-n", &o->n, "templates"), OPT_INT("-p", &o->np, "probes"),
		OPT_LONG("-u", &o->unique, "unique"), OPT_STR("-g", &gen, "synth|random"),
		OPT_STR("-m", &m_range, "min,max"), OPT_U64("-s", &o->seed, "seed"),
		OPT_STR("-k", &o->kernels, "kernel,..."), OPT_INT("-r", &o->repeats, "repeats"),
		OPT_LONG("-P", &o->stride, "stride"), OPT_BOOL("-I", &o->rounds_mode), OPT_END
	};

	*o = (bench_opts) {.n = 250000, .np = 20, .unique = 20000, .seed = 1,
	.kernels = "avx512,avx2,popcnt,generic", .repeats = 3};
	targ_parse(argc, argv, opts);
	o->synth = strcmp(gen, "synth") == 0;
	if ((!o->synth && strcmp(gen, "random") != 0) ||
		(m_range != NULL && sscanf(m_range, "%d,%d", &o->min_m, &o->max_m) != 2))
		targ_usage(argv[0], opts);
	if (o->min_m == 0 && o->max_m == 0)
	{
		/* ~32 cylinders per template either way, as in paper 000 */
		o->min_m = o->synth ? 30 : 22;
		o->max_m = o->synth ? 60 : 42;
	}
	if (o->n < 1 || o->np < 1 || o->repeats < 1 || o->min_m < 1 || o->max_m < o->min_m ||
		o->max_m > MCC_MAX_MINUTIAE)
		targ_usage(argv[0], opts);
	if (o->unique <= 0 || o->unique > o->n)
		o->unique = o->n;
}

/* What the runs time: the gallery, its distinct templates, the probes. */
typedef struct bench_data
{
	mcc_synth_params sp;
	tg_rng		r;
	mcc_minutiae *masters;		/* [unique] */
	uint64_t   *fingers_of;		/* [unique]: the finger of master i */
	uint8_t   **blobs;			/* [unique] */
	size_t	   *sizes;
	mcc_template_view *views;	/* [unique], for the in-place scan */
	mcc_soa		g;				/* n templates cycling through the distinct ones */
	uint8_t   **pblobs;			/* [np] */
	size_t	   *psizes;
	double		pcyl;			/* probe cylinders, mean */
	double		gate;			/* probe cylinders passing the gate per gallery cylinder */
} bench_data;

/* The distinct gallery templates: impression 0 of fingers 0, 1, ... (or random sets). */
static void
build_distinct(const bench_opts *o, const mcc_profile *p, bench_data *d)
{
	d->masters = malloc(sizeof(mcc_minutiae) * o->unique);
	d->fingers_of = malloc(sizeof(uint64_t) * o->unique);
	d->blobs = malloc(sizeof(uint8_t *) * o->unique);
	d->sizes = malloc(sizeof(size_t) * o->unique);
	for (long i = 0; i < o->unique; i++)
	{
		uint64_t	finger = (uint64_t) i;

		do
		{
			if (o->synth)
			{
				mcc_minutiae imp;

				mcc_synth_master(&d->sp, finger, &d->masters[i]);
				mcc_synth_impression(&d->sp, &d->masters[i], finger, 0, &imp);
				d->blobs[i] = tg_build_blob(&imp, p, &d->sizes[i]);
			}
			else
			{
				tg_minutiae(&d->r, &d->masters[i], o->min_m, o->max_m, 8.0);
				d->blobs[i] = tg_build_blob(&d->masters[i], p, &d->sizes[i]);
			}
			finger += (uint64_t) o->unique; /* an unusable finger: take another */
		} while (d->blobs[i] == NULL);
		d->fingers_of[i] = finger - (uint64_t) o->unique;
	}
}

/*
 * The distinct templates as views (for the in-place scan), and the gallery:
 * n templates cycling through them; 0 or -1.
 */
static int
build_gallery(const bench_opts *o, const mcc_profile *p, bench_data *d)
{
	mcc_error	err;

	d->views = malloc(sizeof(mcc_template_view) * o->unique);
	for (long i = 0; i < o->unique; i++)
		mcc_template_open(d->blobs[i], d->sizes[i], &d->views[i], &err);
	if (mcc_soa_init(&d->g, p, (uint32_t) o->n, (uint32_t) (o->n * 34), &err) != MCC_OK)
	{
		fprintf(stderr, "mccbench: %s\n", err.message);
		return -1;
	}
	for (long i = 0; i < o->n; i++)
		if (mcc_soa_append(&d->g, &d->views[i % o->unique], i, &err) != MCC_OK)
		{
			fprintf(stderr, "mccbench: %s\n", err.message);
			return -1;
		}
	return 0;
}

/* The probes: impressions of gallery fingers (impression 1, or noisy copies). */
static void
build_probes(const bench_opts *o, const mcc_profile *p, bench_data *d)
{
	d->pblobs = malloc(sizeof(uint8_t *) * o->np);
	d->psizes = malloc(sizeof(size_t) * o->np);
	for (int i = 0; i < o->np; i++)
		do
		{
			mcc_minutiae imp;
			long		m = o->stride > 0 ?
				(long) (((uint64_t) i * (uint64_t) o->stride) % (uint64_t) o->unique) :
				(long) (tg_next(&d->r) % (uint64_t) o->unique);

			if (o->synth)
				mcc_synth_impression(&d->sp, &d->masters[m], d->fingers_of[m], 1, &imp);
			else
				tg_impression(&d->r, &d->masters[m], &imp, 0.85, 3, 0.15, 4);
			d->pblobs[i] = tg_build_blob(&imp, p, &d->psizes[i]);
		} while (d->pblobs[i] == NULL);
}

/* The workload's shape: probe cylinders, and those that pass the gate per gallery cylinder. */
static void
measure_shape(const bench_opts *o, const mcc_profile *p, bench_data *d)
{
	mcc_template_view v;
	mcc_error	err;

	d->pcyl = 0;
	d->gate = 0;
	for (int i = 0; i < o->np; i++)
	{
		long		per_angle[MCC_Z] = {0};
		double		sum = 0;

		mcc_template_open(d->pblobs[i], d->psizes[i], &v, &err);
		d->pcyl += v.n_cyl;
		for (int a = 0; a < MCC_Z; a++)
			for (int c = 0; c < v.n_cyl; c++)
				per_angle[a] += mcc_lss_gate(mcc_template_cyl_angle(&v, c), a, p->delta_theta);
		for (uint32_t j = 0; j < d->g.n_cyl; j++)
			sum += per_angle[d->g.angle[j]];
		d->gate += sum / d->g.n_cyl;
	}
	d->pcyl /= o->np;
	d->gate /= o->np;
}

/* The header lines: what the gallery and the probes are. */
static void
print_shape(const bench_opts *o, const mcc_profile *p, const bench_data *d)
{
	printf("# profile %s; gallery %ld templates (%ld distinct), %u cylinders, %.2f per template\n",
		   p->name, o->n, o->unique, d->g.n_cyl, (double) d->g.n_cyl / o->n);
	printf("# %d probes, %.2f cylinders each; %.2f probe cylinders pass the gate per gallery cylinder\n",
		   o->np, d->pcyl, d->gate);
	printf("# local similarities per match: %.1f (paper 000: %.1f)\n",
		   d->gate * d->g.n_cyl / o->n, PAPER_LS_PER_MATCH);
	if (o->synth)
		printf("# minutiae: mcc_synth defaults (%dx%d at %d dpi), masters of %d..%d minutiae, "
			   "gallery impression 0, probes impression 1, seed %llu\n",
			   d->sp.width, d->sp.height, d->sp.dpi, o->min_m, o->max_m, (unsigned long long) o->seed);
	else
		printf("# minutiae: plausible random sets, %d..%d per template (test/unit/testgen.h), seed %llu\n",
			   o->min_m, o->max_m, (unsigned long long) o->seed);
}

/*
 * One round: every probe against the whole gallery, by the SoA scan with
 * the kernel set, or in place (one mcc_soa_score_view call a template, on
 * the distinct templates, as identify()'s backend scan does).
 */
static round_time
scan_round(mcc_probe *q, const bench_opts *o, const bench_data *d, bool in_place, float *scores)
{
	round_time	t = {0, 0, 0};
	mcc_template_view v;
	mcc_error	err;

	for (int i = 0; i < o->np; i++)
	{
		double		s;
		double		sw;

		mcc_template_open(d->pblobs[i], d->psizes[i], &v, &err);
		mcc_probe_init(q, &v);
		s = tclock_cpu_s();
		sw = tclock_wall_s();
		if (in_place)
			for (long j = 0; j < o->n; j++)
				scores[j] = mcc_soa_score_view(q, &d->views[j % o->unique]);
		else
			mcc_soa_scan(q, &d->g, 0, d->g.n_tpl, scores);
		t.cpu += tclock_cpu_s() - s;
		t.wall += tclock_wall_s() - sw;
		for (long j = 0; j < o->n; j += 997)
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
run_rounds(const char *kernel, mcc_probe *q, const bench_opts *o, const bench_data *d, float *scores)
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
		round_time	t = scan_round(q, o, d, false, scores);

		printf("round %.6f %.6f %.0f\n", t.cpu, t.wall, (double) o->np * d->g.n_tpl);
		fflush(stdout);
	}
	mcc_soa_set_kernel(NULL);
	return 0;
}

/* Keep in *best the least times so far, and the checksum of the latest round. */
static void
keep_best(round_time *best, round_time t)
{
	best->cpu = t.cpu < best->cpu ? t.cpu : best->cpu;
	best->wall = t.wall < best->wall ? t.wall : best->wall;
	best->checksum = t.checksum;
}

/*
 * Kernel k, the best of the repeats: the SoA scan's round and the in-place
 * one, a line each.
 */
static void
time_kernel(const char *k, const bench_opts *o, const bench_data *d, mcc_probe *q, float *scores)
{
	round_time	best = {1e30, 1e30, 0};
	round_time	best_view = {1e30, 1e30, 0};
	double		matches;
	double		ls;

	for (int rep = 0; rep < o->repeats; rep++)
	{
		keep_best(&best, scan_round(q, o, d, false, scores));
		keep_best(&best_view, scan_round(q, o, d, true, scores));
	}
	matches = (double) o->n * o->np / best.cpu;
	ls = matches * d->gate * d->g.n_cyl / o->n;
	printf("%-8s %7.3f s CPU (%7.3f s wall) for %d x %ld matches: %6.3f M matches/s/core, "
		   "%6.3f G LS/s, %5.2f ns/LS; at paper 000's shape %6.3f M matches/s/core (checksum %.4f)\n",
		   k, best.cpu, best.wall, o->np, o->n, matches / 1e6, ls / 1e9, 1e9 / ls,
		   ls / PAPER_LS_PER_MATCH / 1e6, best.checksum);
	matches = (double) o->n * o->np / best_view.cpu;
	printf("%-8s %7.3f s CPU in place (mcc_soa_score_view, template by template): %6.3f M matches/s/core (checksum %.4f)\n",
		   k, best_view.cpu, matches / 1e6, best_view.checksum);
}

/* Build the gallery and probes, then time each kernel. */
int
main(int argc, char **argv)
{
	const mcc_profile *p = mcc_profile_by_id(MCC_PROFILE_GPU2015);
	bench_opts	o;
	bench_data	d = {0};
	mcc_probe  *q;
	float	   *scores;
	char		kbuf[256];
	double		t0;

	parse_options(argc, argv, &o);
	d.r.s = o.seed;
	mcc_lss_init();
	mcc_synth_defaults(&d.sp);
	d.sp.seed = o.seed;
	d.sp.min_minutiae = o.min_m;
	d.sp.max_minutiae = o.max_m;

	t0 = tclock_wall_s();
	build_distinct(&o, p, &d);
	printf("# built %ld distinct templates in %.1f s (%.3f ms each)\n", o.unique,
		   tclock_wall_s() - t0, (tclock_wall_s() - t0) * 1e3 / o.unique);
	if (build_gallery(&o, p, &d) != 0)
		return 1;
	build_probes(&o, p, &d);
	measure_shape(&o, p, &d);
	print_shape(&o, p, &d);

	q = aligned_alloc(64, (mcc_probe_size() + 63) / 64 * 64);	/* as the PostgreSQL layer aligns it */
	scores = malloc(sizeof(float) * o.n);
	snprintf(kbuf, sizeof(kbuf), "%s", o.kernels);
	if (o.rounds_mode)
		return run_rounds(strtok(kbuf, ","), q, &o, &d, scores);
	for (char *k = strtok(kbuf, ","); k != NULL; k = strtok(NULL, ","))
	{
		if (mcc_soa_set_kernel(k) != 0)
			printf("%-8s not available on this CPU\n", k);
		else
			time_kernel(k, &o, &d, q, scores);
	}
	mcc_soa_set_kernel(NULL);
	return 0;
}
