/*
 * test_fvc.c: cylinders and LSS on real minutiae: FVC2002 DB1_B as NBIS
 * mindtct extracted it (../shared/data, read in place; skipped when absent).
 * Checks the cylinder code against the brute-force reference of
 * test_cylinder.c's kind on real sets, every scan kernel against
 * mcc_lss_score, and that genuine pairs outscore impostor pairs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "testfvc.h"
#include "../tools/record_file.h"
#include "refcyl.h"
#include "mcc_cylinder.h"
#include "mcc_lss.h"
#include "mcc_soa.h"
#include "mcc_xyt.h"

#define FINGERS 10
#define IMPRESSIONS 8
#define N_TPL (FINGERS * IMPRESSIONS)

static const char *const kernel_names[] = {"avx512", "avx2", "popcnt", "generic"};

/*
 * The cell values of minutia mi's cylinder by the formulas, brute force (no
 * neighbour prefilter), on the cells mcc_cylinder_values reports valid:
 * the largest difference from mcc_cylinder_values, and whether every bit
 * (value >= mu_psi) agrees.
 */
static int
values_agree(const mcc_minutiae *ms, const mcc_profile *p, int mi, double *worst)
{
	double		vals[MCC_MAX_BITS];
	uint8_t		valid[MCC_MAX_BITS];
	double		a[MCC_MAX_BITS];
	double		b[MCC_MAX_BITS];
	const mcc_minutia *m = &ms->m[mi];
	double		ds = 2 * p->radius / p->ns;
	double		dd = 2 * M_PI / p->nd;
	int			n = mcc_cylinder_cells(p, a, b);
	int			same = 1;

	if (!mcc_cylinder_values(ms, p, mi, vals, valid))
		return 1;				/* invalid cylinder: nothing to compare */
	for (int c = 0; c < n; c++)
	{
		double		px = m->x + ds * (a[c] * cos(m->theta) + b[c] * sin(m->theta));
		double		py = m->y + ds * (-a[c] * sin(m->theta) + b[c] * cos(m->theta));

		for (int k = 0; k < p->nd && valid[c]; k++)
		{
			double		v = 0;

			for (int t = 0; t < ms->count; t++)
			{
				double		d = hypot(ms->m[t].x - px, ms->m[t].y - py);

				if (t == mi || d > 3 * p->sigma_s)
					continue;
				v += exp(-d * d / (2 * p->sigma_s * p->sigma_s)) / (p->sigma_s * sqrt(2 * M_PI)) *
					ref_gd(ref_dphi(-M_PI + (k + 0.5) * dd, ref_dphi(m->theta, ms->m[t].theta)),
						   p->sigma_d, dd);
			}
			*worst = fmax(*worst, fabs(v - vals[k * n + c]));
			same &= (v >= p->mu_psi) == (vals[k * n + c] >= p->mu_psi);
		}
	}
	return same;
}

int
main(void)
{
	const char *data = unit_shared_data_or_skip("FVC2002 minutiae not read");
	mcc_minutiae *ms;
	int			loaded = 0;

	if (data == NULL)
		return unit_done();
	ms = calloc(N_TPL, sizeof(mcc_minutiae));
	for (int f = 0; f < FINGERS; f++)
		for (int i = 0; i < IMPRESSIONS; i++)
			loaded += rf_read_fvc2002(data, 0, f, i, &ms[f * IMPRESSIONS + i]);
	if (loaded != N_TPL)
	{
		UNIT_SKIP("FVC2002 DB1_B xyt files incomplete (%d of %d)", loaded, N_TPL);
		free(ms);
		return unit_done();
	}
	mcc_lss_init();

	for (int id = MCC_PROFILE_GPU2015; id <= MCC_PROFILE_TPAMI2010; id++)
	{
		const mcc_profile *p = mcc_profile_by_id(id);
		uint8_t    *blob[N_TPL];
		mcc_template_view v[N_TPL];
		mcc_probe  *q = malloc(mcc_probe_size());
		float	   *score = malloc(sizeof(float) * N_TPL * N_TPL);
		float	   *scan = malloc(sizeof(float) * N_TPL);
		mcc_soa		g;
		mcc_error	err;
		int			built = 0;
		int			cyl = 0;
		int			agree = 0;
		int			checked = 0;
		double		worst = 0;
		double		gen = 0;
		double		imp = 0;
		long		ng = 0;
		long		ni = 0;
		double		wins = 0;
		int			rank1 = 0;

		/* the reference on a few real templates (brute force is slow) */
		for (int t = 0; t < N_TPL; t += id == MCC_PROFILE_GPU2015 ? 8 : 20)
			for (int mi = 0; mi < ms[t].count; mi++, checked++)
				agree += values_agree(&ms[t], p, mi, &worst);
		UNIT_CHECK(agree == checked && worst < 1e-12,
				   "%s: %d real cylinders equal the brute-force reference (values within %.1g)",
				   p->name, checked, worst);

		mcc_soa_init(&g, p, N_TPL, 0, &err);
		for (int t = 0; t < N_TPL; t++)
		{
			size_t		size;

			blob[t] = NULL;
			if (mcc_template_build(&ms[t], p, NULL, &size, &err) != MCC_OK)
				continue;
			blob[t] = malloc(size);
			if (mcc_template_build(&ms[t], p, blob[t], &size, &err) == MCC_OK &&
				mcc_template_open(blob[t], size, &v[t], &err) == MCC_OK &&
				mcc_soa_append(&g, &v[t], t, &err) == MCC_OK)
			{
				built++;
				cyl += v[t].n_cyl;
			}
		}
		UNIT_CHECK(built == N_TPL, "%s: all %d templates built (%.1f cylinders each)",
				   p->name, built, (double) cyl / N_TPL);
		if (built != N_TPL)
			continue;

		/* all-against-all with mcc_lss_score; every kernel must agree */
		for (int a = 0; a < N_TPL; a++)
		{
			mcc_probe_init(q, &v[a]);
			for (int b = 0; b < N_TPL; b++)
				score[a * N_TPL + b] = mcc_lss_score(q, &v[b]);
		}
		for (size_t kn = 0; kn < sizeof(kernel_names) / sizeof(kernel_names[0]); kn++)
		{
			int			diff = 0;

			if (mcc_soa_set_kernel(kernel_names[kn]) != 0)
			{
				UNIT_SKIP("%s: kernel %s not supported by this CPU", p->name, kernel_names[kn]);
				continue;
			}
			for (int a = 0; a < N_TPL; a++)
			{
				mcc_probe_init(q, &v[a]);
				mcc_soa_scan(q, &g, 0, N_TPL, scan);
				for (int b = 0; b < N_TPL; b++)
					diff += memcmp(&scan[b], &score[a * N_TPL + b], sizeof(float)) != 0;
			}
			UNIT_CHECK(diff == 0, "%s: kernel %s equals mcc_lss_score on all %d real pairs (%d differ)",
					   p->name, kernel_names[kn], N_TPL * N_TPL, diff);
		}
		mcc_soa_set_kernel(NULL);

		/*
		 * Genuine pairs (same finger) against impostor pairs: the chance a
		 * genuine score beats an impostor score (ROC AUC, ties half), and
		 * rank-1 identification of each impression among the others.
		 */
		for (int a = 0; a < N_TPL; a++)
		{
			int			best = -1;

			for (int b = 0; b < N_TPL; b++)
			{
				if (a == b)
					continue;
				if (a / IMPRESSIONS == b / IMPRESSIONS)
				{
					gen += score[a * N_TPL + b];
					ng++;
				}
				else
				{
					imp += score[a * N_TPL + b];
					ni++;
				}
				if (best < 0 || score[a * N_TPL + b] > score[a * N_TPL + best])
					best = b;
			}
			rank1 += best / IMPRESSIONS == a / IMPRESSIONS;
		}
		for (int a = 0; a < N_TPL; a++)
			for (int b = a + 1; b < N_TPL; b++)
			{
				if (a / IMPRESSIONS != b / IMPRESSIONS)
					continue;
				for (int c = 0; c < N_TPL; c++)
					for (int d = c + 1; d < N_TPL; d++)
					{
						float		sg = score[a * N_TPL + b];
						float		si = score[c * N_TPL + d];

						if (c / IMPRESSIONS == d / IMPRESSIONS)
							continue;
						wins += sg > si ? 1.0 : sg == si ? 0.5 : 0.0;
					}
			}
		wins /= (double) (FINGERS * IMPRESSIONS * (IMPRESSIONS - 1) / 2) *
			(double) (N_TPL * (N_TPL - 1) / 2 - FINGERS * IMPRESSIONS * (IMPRESSIONS - 1) / 2);
		printf("# %s: mean genuine %.3f, mean impostor %.3f, AUC %.4f, rank-1 %d of %d\n",
			   p->name, gen / ng, imp / ni, wins, rank1, N_TPL);
		UNIT_CHECK(wins > 0.95 && rank1 >= N_TPL * 8 / 10,
				   "%s: genuine pairs outscore impostors (AUC %.4f > 0.95, rank-1 %d of %d >= 80%%)",
				   p->name, wins, rank1, N_TPL);
		for (int t = 0; t < N_TPL; t++)
			free(blob[t]);
		mcc_soa_free(&g);
		free(q);
		free(score);
		free(scan);
	}
	free(ms);
	return unit_done();
}
