/*
 * bench_refine: the cost of refining LSS candidates with each method of
 * mcc_match.h, on one thread, as the matcher service would do it: one
 * probe set once, then the local similarity matrix and the method for each
 * candidate.
 *
 *   bench_refine [candidates] [repeats] [seed]
 *
 * Probes and candidates are synthetic impressions (mcc_synth.h defaults):
 * each probe is refined against its mate and candidates-1 other fingers, as
 * in a shortlist. Prints, per method, microseconds per candidate (matrix
 * included; for each probe the best of the repeats of its candidates) and
 * the time of 1000 refinements, the shortlist of a 1 M gallery at paper
 * 000's 0.1 %. MCC_MATCH_KERNEL names the CPU kernel (mcc_match.h:
 * avx512, avx2, popcnt, generic); by default the best this CPU runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mcc_match.h"
#include "mcc_synth.h"
#include "mcc_template.h"
#include "../unit/testclock.h"

/* Build impression imp of finger f as a template; exits on failure. */
static uint8_t *
make(const mcc_synth_params *sp, int f, int imp, mcc_template_view *v)
{
	mcc_minutiae *master = malloc(sizeof(mcc_minutiae));
	mcc_minutiae *ms = malloc(sizeof(mcc_minutiae));
	mcc_error	err;
	size_t		size;
	uint8_t    *b;

	mcc_synth_master(sp, (uint64_t) f, master);
	mcc_synth_impression(sp, master, (uint64_t) f, (uint64_t) imp, ms);
	if (mcc_template_build(ms, mcc_profile_by_id(MCC_PROFILE_DEFAULT), NULL, &size, &err) != MCC_OK)
	{
		fprintf(stderr, "bench_refine: %s\n", err.message);
		exit(1);
	}
	b = malloc(size);
	if (mcc_template_build(ms, mcc_profile_by_id(MCC_PROFILE_DEFAULT), b, &size, &err) != MCC_OK ||
		mcc_template_open(b, size, v, &err) != MCC_OK)
	{
		fprintf(stderr, "bench_refine: %s\n", err.message);
		exit(1);
	}
	free(master);
	free(ms);
	return b;
}

/*
 * Seconds per candidate of a method: for each probe, the best of the
 * repeats of its candidates (short runs: on a loaded machine some of them
 * run undisturbed), summed over the probes.
 */
static double
time_method(mcc_match_work *w, const mcc_match_params *mp, int m,
			const mcc_template_view *probe, const mcc_template_view *cand,
			int n_probe, int n_cand, int repeats, volatile float *sink)
{
	double		total = 0;

	for (int p = 0; p < n_probe; p++)
	{
		double		best = 1e9;

		for (int r = 0; r < repeats; r++)
		{
			double		t0 = tclock_cpu_s();
			double		t;

			mcc_match_set_probe(w, &probe[p]);
			for (int c = 0; c < n_cand; c++)
			{
				float		s;
				mcc_error	err;

				mcc_match_candidate(w, &cand[p * n_cand + c], m, mp, &s, &err);
				*sink += s;
			}
			t = tclock_cpu_s() - t0;
			if (t < best)
				best = t;
		}
		total += best;
	}
	return total / (n_probe * n_cand);
}

int
main(int argc, char **argv)
{
	int			n_cand = argc > 1 ? atoi(argv[1]) : 200;
	int			repeats = argc > 2 ? atoi(argv[2]) : 3;
	int			n_probe = 10;
	mcc_synth_params sp;
	mcc_template_view *probe;
	mcc_template_view *cand;
	mcc_match_work *w = malloc(mcc_match_work_size());
	const mcc_match_params *mp = mcc_match_params_std();
	double		cyl_p = 0;
	double		cyl_c = 0;
	volatile float sink = 0;

	mcc_synth_defaults(&sp);
	if (argc > 3)
		sp.seed = strtoull(argv[3], NULL, 10);
	probe = malloc(sizeof(mcc_template_view) * n_probe);
	cand = malloc(sizeof(mcc_template_view) * n_probe * n_cand);
	for (int p = 0; p < n_probe; p++)
	{
		make(&sp, p, 1, &probe[p]);
		cyl_p += probe[p].n_cyl;
		for (int c = 0; c < n_cand; c++)
		{
			/* candidate 0 is the mate; the rest other fingers */
			make(&sp, c == 0 ? p : 1000 + p * n_cand + c, 0, &cand[p * n_cand + c]);
			cyl_c += cand[p * n_cand + c].n_cyl;
		}
	}
	mcc_match_work_init(w);
	if (getenv("MCC_MATCH_KERNEL") != NULL && mcc_match_set_kernel(getenv("MCC_MATCH_KERNEL")) != 0)
	{
		fprintf(stderr, "bench_refine: kernel %s is unknown or not supported here\n",
				getenv("MCC_MATCH_KERNEL"));
		return 1;
	}
	printf("bench_refine: %d probes (%.1f cylinders on average) x %d candidates (%.1f), "
		   "best of %d, one thread, kernel %s\n", n_probe, cyl_p / n_probe, n_cand,
		   cyl_c / (n_probe * n_cand), repeats, mcc_match_kernel_name());

	printf("  %-14s %8s %14s\n", "method", "us/cand", "1000 cands ms");
	/* method lss: the matrix pass plus the vote count */
	for (int m = 0; m < MCC_NMETHODS; m++)
	{
		double		t = time_method(w, mp, m, probe, cand, n_probe, n_cand, repeats, &sink);

		printf("  %-14s %8.1f %14.1f%s\n", m == MCC_LSS ? "matrix" : mcc_method_name(m),
			   1e6 * t, 1e3 * t * 1000, m == MCC_LSS ? "   (matrix and LSS votes)" : "");
	}
	free(w);
	return sink < 0;
}
