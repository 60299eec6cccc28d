/*
 * mccsyneval.c: how hard is the synthetic data for the matcher?
 *
 * Enrols impression 0 of fingers F .. F+N-1 as a gallery, searches it with
 * mated probes (another impression of a gallery finger) and non-mated probes
 * (fingers outside the gallery) with the CPU scan (mcc_soa_scan, the LSS of
 * paper 000), and reports the genuine and impostor score distributions, EER,
 * FNMR at fixed FMR, the rank-k identification rates, FNIR at fixed FPIR,
 * and, for the mated probes that miss rank 1, how many master minutiae the
 * probe and its gallery impression still share. docs/synthetic.md quotes its
 * output.
 *
 *   mccsyneval [--gallery N] [--probes P] [--nonmated Q] [--first F]
 *              [--profile NAME] [model options]
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mcc_lss.h"
#include "mcc_profile.h"
#include "mcc_soa.h"
#include "mcc_synth.h"
#include "mcc_template.h"
#include "synth_cli.h"
#include "../unit/testsort.h"

#define HIST_BINS	100000		/* score histogram resolution: 1e-5 */
#define MAX_RANK	10
#define N_SHARED	6			/* shared-minutiae classes: <10, 10-14, ..., >=30 */

enum
{
	OPT_GALLERY = 256, OPT_PROBES, OPT_NONMATED, OPT_FIRST
};

static const struct option own_options[] = {
	{"gallery", required_argument, NULL, OPT_GALLERY},
	{"probes", required_argument, NULL, OPT_PROBES},
	{"nonmated", required_argument, NULL, OPT_NONMATED},
	{"first", required_argument, NULL, OPT_FIRST},
	{NULL, 0, NULL, 0}
};

typedef struct eval_opts
{
	mcc_synth_params sp;
	uint64_t	gallery;
	uint64_t	probes;
	uint64_t	nonmated;
	uint64_t	first;
	const mcc_profile *profile;
} eval_opts;

/* A 256-bit set of master minutia indices. */
typedef struct idset
{
	uint64_t	w[4];
} idset;

static void
usage(FILE *f)
{
	fprintf(f,
			"mccsyneval: score distributions and identification rates on synthetic data\n"
			"\n"
			"Usage: mccsyneval [options]\n"
			"  --gallery N     gallery fingers F .. F+N-1, impression 0 [2000]\n"
			"  --probes P      mated probes: impression 1+p of finger F + floor(p N / P) [1000]\n"
			"  --nonmated Q    non-mated probes: impression 1 of fingers F+N .. F+N+Q-1 [1000]\n"
			"  --first F       first finger number [1]\n"
			"  --profile NAME  MCC profile [gpu2015]\n"
			"  --help          this text\n"
			"\n");
	cli_model_usage(f);
}

/* Parse the command line. */
static void
parse(int argc, char **argv, eval_opts *o)
{
	struct option *lo;
	int			c;
	const char *name;

	memset(o, 0, sizeof(*o));
	lo = cli_begin(argc, argv, own_options, &o->sp);
	o->gallery = 2000;
	o->probes = 1000;
	o->nonmated = 1000;
	o->first = 1;
	o->profile = mcc_profile_by_id(MCC_PROFILE_DEFAULT);
	while ((c = cli_next_option(argc, argv, lo, &o->sp, &o->profile, usage, &name)) != -1)
	{
		switch (c)
		{
			case OPT_GALLERY:
				o->gallery = cli_u64(name, optarg, 10000000);
				break;
			case OPT_PROBES:
				o->probes = cli_u64(name, optarg, 10000000);
				break;
			case OPT_NONMATED:
				o->nonmated = cli_u64(name, optarg, 10000000);
				break;
			case OPT_FIRST:
				o->first = cli_u64(name, optarg, UINT64_C(1) << 62);
				break;
		}
	}
	if (o->gallery == 0)
		cli_die("--gallery must be at least 1");
	cli_end(argc, argv, &o->sp);
}

/* Build a template of ms (malloc'ed); NULL for an empty minutiae set. */
static uint8_t *
build(const mcc_minutiae *ms, const mcc_profile *p, mcc_template_view *v)
{
	mcc_error	err;
	size_t		size;
	uint8_t    *buf;

	if (ms->count == 0)
		return NULL;
	if (mcc_template_build(ms, p, NULL, &size, &err) != MCC_OK)
		cli_die("template: %s", err.message);
	/* 8-aligned as a PostgreSQL datum of ALIGNMENT = double would be */
	buf = aligned_alloc(64, (size + 63) / 64 * 64);
	if (!buf)
		cli_die("out of memory");
	memset(buf, 0, size);
	if (mcc_template_build(ms, p, buf, &size, &err) != MCC_OK ||
		mcc_template_open(buf, size, v, &err) != MCC_OK)
		cli_die("template: %s", err.message);
	return buf;
}

/* The set of master indices an impression kept (spurious ones excluded). */
static idset
origins(const mcc_minutiae *imp, const int *origin)
{
	idset		s;

	memset(&s, 0, sizeof(s));
	for (int i = 0; i < imp->count; i++)
		if (origin[i] >= 0)
			s.w[origin[i] / 64] |= UINT64_C(1) << (origin[i] % 64);
	return s;
}

/* Number of master minutiae two impressions share. */
static int
shared(const idset *a, const idset *b)
{
	int			n = 0;

	for (int i = 0; i < 4; i++)
		n += __builtin_popcountll(a->w[i] & b->w[i]);
	return n;
}

/* Histogram bin of a score in [0, 1]. */
static int
bin_of(float s)
{
	int			b = (int) (s * (HIST_BINS - 1) + 0.5f);

	return b < 0 ? 0 : (b >= HIST_BINS ? HIST_BINS - 1 : b);
}

/* The q-quantile of a sorted array. */
static double
quantile(const float *v, size_t n, double q)
{
	size_t		i;

	if (n == 0)
		return NAN;
	i = (size_t) (q * (double) (n - 1) + 0.5);
	return v[i];
}

/* Score at which the fraction of the histogram at or above it is <= rate. */
static double
hist_threshold(const uint64_t *hist, uint64_t total, double rate)
{
	uint64_t	above = 0;

	for (int b = HIST_BINS - 1; b >= 0; b--)
	{
		if ((double) (above + hist[b]) / (double) total > rate)
			return (double) (b + 1) / (HIST_BINS - 1);
		above += hist[b];
	}
	return 0.0;
}

/* Fraction of sorted genuine scores below threshold t. */
static double
frac_below(const float *v, size_t n, double t)
{
	size_t		lo = 0,
				hi = n;

	while (lo < hi)
	{
		size_t		mid = (lo + hi) / 2;

		if (v[mid] < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return n ? (double) lo / (double) n : NAN;
}

/*
 * FNIR at rank 1: the fraction of mated probes whose mate is not the top
 * candidate, or scores below t (strict: at or below t).
 */
static double
fnir(const float *score, const uint8_t *at_rank1, size_t n, double t, int strict)
{
	size_t		miss = 0;

	for (size_t i = 0; i < n; i++)
		miss += !at_rank1[i] || (strict ? score[i] <= t : score[i] < t);
	return n ? (double) miss / (double) n : NAN;
}

/* Print the impostor histogram's quantiles. */
static void
print_hist_quantiles(const uint64_t *hist, uint64_t total)
{
	static const double qs[] = {0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999};
	uint64_t	cum = 0;
	int			k = 0,
				last = 0;

	printf("impostor scores (%" PRIu64 "):", total);
	for (int b = 0; b < HIST_BINS && k < 6; b++)
	{
		cum += hist[b];
		while (k < 6 && (double) cum >= qs[k] * (double) total)
		{
			printf(" q%g %.4f", qs[k] * 100, (double) b / (HIST_BINS - 1));
			k++;
		}
	}
	for (int b = 0; b < HIST_BINS; b++)
		if (hist[b])
			last = b;
	printf(" max %.4f\n", (double) last / (HIST_BINS - 1));
}

/* EER: the threshold where FMR (impostors >= t) meets FNMR (genuine < t). */
static double
eer(const uint64_t *hist, uint64_t total, const float *gen, size_t n_gen)
{
	uint64_t	above = total;
	double		best = 1.0;

	for (int b = 0; b < HIST_BINS; b++)
	{
		double		t = (double) b / (HIST_BINS - 1);
		double		fmr = (double) above / (double) total;
		double		fnmr = frac_below(gen, n_gen, t);
		double		e = fmr > fnmr ? fmr : fnmr;

		if (e < best)
			best = e;
		above -= hist[b];
	}
	return best;
}

int
main(int argc, char **argv)
{
	static mcc_minutiae master,
				imp;
	static int	origin[MCC_MAX_MINUTIAE];
	eval_opts	o;
	mcc_soa		g;
	mcc_error	err;
	mcc_probe  *q;
	idset	   *gal_set;
	float	   *scores,
			   *gen,
			   *gen_raw,
			   *nonmated_top;
	uint8_t    *at_rank1;
	uint64_t   *hist;
	uint64_t	imp_total = 0,
				rank_hits[MAX_RANK + 1] = {0},
				ties = 0;
	long		gal_min = 0,
				probe_min = 0;
	long		ok_shared = 0,
				ok_n = 0,
				miss_shared = 0,
				miss_n = 0,
				miss_by_shared[N_SHARED] = {0},
				all_by_shared[N_SHARED] = {0};
	clock_t		t0 = clock();

	cli_progname = "mccsyneval";
	parse(argc, argv, &o);
	mcc_lss_init();
	if (mcc_soa_init(&g, o.profile, (uint32_t) o.gallery, (uint32_t) (o.gallery * 40), &err) != MCC_OK)
		cli_die("%s", err.message);
	gal_set = calloc(o.gallery, sizeof(idset));
	scores = malloc(o.gallery * sizeof(float));
	gen = malloc((o.probes + 1) * sizeof(float));
	gen_raw = malloc((o.probes + 1) * sizeof(float));
	at_rank1 = calloc(o.probes + 1, 1);
	nonmated_top = malloc((o.nonmated + 1) * sizeof(float));
	hist = calloc(HIST_BINS, sizeof(uint64_t));
	q = aligned_alloc(64, (mcc_probe_size() + 63) / 64 * 64);
	if (!gal_set || !scores || !gen || !gen_raw || !at_rank1 || !nonmated_top || !hist || !q)
		cli_die("out of memory");

	/* the gallery: impression 0 of each finger */
	for (uint64_t k = 0; k < o.gallery; k++)
	{
		uint64_t	finger = o.first + k;
		mcc_template_view v;
		uint8_t    *t;

		mcc_synth_master(&o.sp, finger, &master);
		mcc_synth_impression_trace(&o.sp, &master, finger, 0, &imp, origin);
		gal_set[k] = origins(&imp, origin);
		gal_min += imp.count;
		if (!(t = build(&imp, o.profile, &v)))
			cli_die("gallery finger %" PRIu64 " has no minutiae: the parameters are too harsh", finger);
		if (mcc_soa_append(&g, &v, (int64_t) finger, &err) != MCC_OK)
			cli_die("%s", err.message);
		free(t);
	}

	/* mated probes */
	for (uint64_t p = 0; p < o.probes; p++)
	{
		uint64_t	k = p * o.gallery / o.probes;
		uint64_t	finger = o.first + k;
		mcc_template_view v;
		uint8_t    *t;
		uint64_t	better = 0,
					equal = 0;
		int			sh,
					bucket;

		mcc_synth_master(&o.sp, finger, &master);
		mcc_synth_impression_trace(&o.sp, &master, finger, 1 + p, &imp, origin);
		probe_min += imp.count;
		{
			idset		s = origins(&imp, origin);

			sh = shared(&s, &gal_set[k]);
		}
		if ((t = build(&imp, o.profile, &v)))
		{
			mcc_probe_init(q, &v);
			mcc_soa_scan(q, &g, 0, g.n_tpl, scores);
			free(t);
		}
		else
			memset(scores, 0, o.gallery * sizeof(float));
		gen[p] = gen_raw[p] = scores[k];
		for (uint64_t j = 0; j < o.gallery; j++)
		{
			if (j == k)
				continue;
			hist[bin_of(scores[j])]++;
			imp_total++;
			better += scores[j] > scores[k];
			equal += scores[j] == scores[k];
		}
		/* a tie with an impostor counts against the probe */
		ties += equal > 0;
		for (int r = 1; r <= MAX_RANK; r++)
			rank_hits[r] += better + equal < (uint64_t) r;
		bucket = sh < 10 ? 0 : (sh >= 30 ? N_SHARED - 1 : (sh - 5) / 5);
		all_by_shared[bucket]++;
		if (better + equal == 0)
		{
			at_rank1[p] = 1;
			ok_shared += sh;
			ok_n++;
		}
		else
		{
			miss_shared += sh;
			miss_n++;
			miss_by_shared[bucket]++;
		}
	}

	/* non-mated probes: fingers outside the gallery */
	for (uint64_t p = 0; p < o.nonmated; p++)
	{
		uint64_t	finger = o.first + o.gallery + p;
		mcc_template_view v;
		uint8_t    *t;
		float		top = 0;

		mcc_synth_master(&o.sp, finger, &master);
		mcc_synth_impression(&o.sp, &master, finger, 1, &imp);
		if ((t = build(&imp, o.profile, &v)))
		{
			mcc_probe_init(q, &v);
			mcc_soa_scan(q, &g, 0, g.n_tpl, scores);
			free(t);
			for (uint64_t j = 0; j < o.gallery; j++)
			{
				hist[bin_of(scores[j])]++;
				imp_total++;
				if (scores[j] > top)
					top = scores[j];
			}
		}
		nonmated_top[p] = top;
	}

	qsort(gen, o.probes, sizeof(float), tsort_float_asc);
	qsort(nonmated_top, o.nonmated, sizeof(float), tsort_float_asc);

	printf("profile %s, gallery %" PRIu64 " (mean %.1f minutiae), %" PRIu64 " mated probes "
		   "(mean %.1f minutiae), %" PRIu64 " non-mated probes, seed %" PRIu64 "\n",
		   o.profile->name, o.gallery, (double) gal_min / o.gallery, o.probes,
		   o.probes ? (double) probe_min / o.probes : 0.0, o.nonmated, o.sp.seed);
	if (o.probes)
	{
		printf("genuine scores: q1 %.4f q5 %.4f q25 %.4f median %.4f q75 %.4f q95 %.4f\n",
			   quantile(gen, o.probes, 0.01), quantile(gen, o.probes, 0.05),
			   quantile(gen, o.probes, 0.25), quantile(gen, o.probes, 0.5),
			   quantile(gen, o.probes, 0.75), quantile(gen, o.probes, 0.95));
	}
	if (imp_total)
		print_hist_quantiles(hist, imp_total);
	if (o.probes && imp_total)
	{
		double		t100 = hist_threshold(hist, imp_total, 0.01);
		double		t1000 = hist_threshold(hist, imp_total, 0.001);
		double		t10000 = hist_threshold(hist, imp_total, 0.0001);

		printf("EER %.4f; FNMR %.4f at FMR 1%% (t %.4f), %.4f at FMR 0.1%% (t %.4f), "
			   "%.4f at FMR 0.01%% (t %.4f)\n",
			   eer(hist, imp_total, gen, o.probes),
			   frac_below(gen, o.probes, t100), t100,
			   frac_below(gen, o.probes, t1000), t1000,
			   frac_below(gen, o.probes, t10000), t10000);
		printf("identification: rank-1 %.4f, rank-5 %.4f, rank-10 %.4f (%" PRIu64
			   " probes tie with an impostor)\n",
			   (double) rank_hits[1] / o.probes, (double) rank_hits[5] / o.probes,
			   (double) rank_hits[10] / o.probes, ties);
		printf("shared master minutiae with the gallery impression: %.1f when found at rank 1, "
			   "%.1f when missed\n", ok_n ? (double) ok_shared / ok_n : 0.0,
			   miss_n ? (double) miss_shared / miss_n : 0.0);
		printf("rank-1 misses / probes by shared minutiae:");
		for (int b = 0; b < N_SHARED; b++)
		{
			if (b == 0)
				printf(" <10: ");
			else if (b == N_SHARED - 1)
				printf(", >=30: ");
			else
				printf(", %d-%d: ", 5 + 5 * b, 9 + 5 * b);
			printf("%ld/%ld", miss_by_shared[b], all_by_shared[b]);
		}
		printf("\n");
	}
	if (o.nonmated)
	{
		double		fpir0 = nonmated_top[o.nonmated - 1];

		printf("non-mated top scores: median %.4f q99 %.4f max %.4f\n",
			   quantile(nonmated_top, o.nonmated, 0.5),
			   quantile(nonmated_top, o.nonmated, 0.99), fpir0);
		if (o.probes)
		{
			double		t1 = quantile(nonmated_top, o.nonmated, 0.99);

			printf("FNIR at rank 1: %.4f at FPIR 1%% (t %.4f), %.4f at FPIR 0 (t > %.4f)\n",
				   fnir(gen_raw, at_rank1, o.probes, t1, 0), t1,
				   fnir(gen_raw, at_rank1, o.probes, fpir0, 1), fpir0);
		}
	}
	printf("time %.1f s\n", (double) (clock() - t0) / CLOCKS_PER_SEC);
	mcc_soa_free(&g);
	free(gal_set);
	free(scores);
	free(gen);
	free(gen_raw);
	free(at_rank1);
	free(nonmated_top);
	free(hist);
	free(q);
	return 0;
}
