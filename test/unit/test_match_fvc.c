/*
 * test_match_fvc.c: the refinements on real fingerprints. On FVC2002 DB1
 * set B (../shared/data; skipped when absent), with FingerJetFX ISO records
 * and NBIS mindtct xyt minutiae, every pair of impressions is scored with
 * each method; every relaxation must lower the equal error rate of plain
 * LSS by at least a quarter (docs/accuracy.md measures a factor 1.4 to 3.6
 * on all 16 sets), and the matrix pass must give LSS exactly.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "testfvc.h"
#include "../tools/record_file.h"
#include "mcc_iso.h"
#include "mcc_lss.h"
#include "mcc_match.h"
#include "mcc_xyt.h"

#define N_REC	80				/* 10 fingers x 8 impressions */

typedef struct scored
{
	double		s;
	int			gen;
} scored;

/* Descending scores. */
static int
cmp_desc(const void *pa, const void *pb)
{
	double		a = ((const scored *) pa)->s;
	double		b = ((const scored *) pb)->s;

	return (a < b) - (a > b);
}

/*
 * Equal error rate: FMR and FNMR at every distinct threshold (accept when
 * score >= t), the mean of the two where they are closest.
 */
static double
eer(scored *l, int n)
{
	int			ng = 0;
	int			ni = 0;
	int			ag = 0;
	int			ai = 0;
	double		best_gap = 2.0;
	double		best = 1.0;

	for (int i = 0; i < n; i++)
		ng += l[i].gen;
	ni = n - ng;
	qsort(l, n, sizeof(scored), cmp_desc);
	for (int i = 0; i < n; i++)
	{
		double		fmr;
		double		fnmr;

		ag += l[i].gen;
		ai += !l[i].gen;
		if (i + 1 < n && l[i + 1].s == l[i].s)
			continue;
		fmr = (double) ai / ni;
		fnmr = (double) (ng - ag) / ng;
		if (fabs(fmr - fnmr) < best_gap)
		{
			best_gap = fabs(fmr - fnmr);
			best = (fmr + fnmr) / 2;
		}
	}
	return best;
}

/* Load the 80 records of one encoding of DB1_B as templates; 0 if absent. */
static int
load_db1(const char *data, const char *dir, const char *ext, uint8_t **blob,
		 mcc_template_view *v)
{
	mcc_minutiae *ms = malloc(sizeof(mcc_minutiae));

	for (int f = 0; f < 10; f++)
		for (int i = 0; i < 8; i++)
		{
			size_t		size;
			mcc_error	err;
			int			k = f * 8 + i;

			if (rf_read_print(data, dir, &tfvc_dbs[0], 101 + f, 1 + i, ext, ms, &err) != MCC_OK ||
				mcc_template_build(ms, mcc_profile_by_id(MCC_PROFILE_GPU2015), NULL, &size, &err) != MCC_OK)
			{
				free(ms);
				return 0;
			}
			blob[k] = malloc(size);
			if (mcc_template_build(ms, mcc_profile_by_id(MCC_PROFILE_GPU2015), blob[k], &size, &err) != MCC_OK ||
				mcc_template_open(blob[k], size, &v[k], &err) != MCC_OK)
			{
				free(ms);
				return 0;
			}
		}
	free(ms);
	return 1;
}

/* Score every pair of one encoding with every method; check the EERs. */
static void
check_encoding(const char *data, const char *dir, const char *ext, const char *name)
{
	uint8_t    *blob[N_REC] = {0};
	mcc_template_view v[N_REC];
	int			n_pairs = N_REC * (N_REC - 1) / 2;
	scored	   *l[MCC_NMETHODS];
	mcc_match_work *w = malloc(mcc_match_work_size());
	int			lss_same = 0;
	double		e[MCC_NMETHODS];
	int			k = 0;

	if (!load_db1(data, dir, ext, blob, v))
	{
		UNIT_SKIP("FVC2002 DB1_B %s records missing or unreadable", name);
		free(w);
		return;
	}
	mcc_match_work_init(w);
	for (int m = 0; m < MCC_NMETHODS; m++)
		l[m] = malloc(sizeof(scored) * n_pairs);
	for (int i = 0; i < N_REC; i++)
		for (int j = i + 1; j < N_REC; j++)
		{
			float		s;
			float		ref;
			mcc_error	err;

			mcc_match_pair(w, &v[i], &v[j], MCC_LSS, NULL, &s, &err);
			mcc_lss_pair(&v[i], &v[j], &ref, &err);
			lss_same += s == ref;
			for (int m = 0; m < MCC_NMETHODS; m++)
			{
				l[m][k].s = mcc_match_rescore(w, m, NULL);
				l[m][k].gen = i / 8 == j / 8;
			}
			k++;
		}
	for (int m = 0; m < MCC_NMETHODS; m++)
		e[m] = eer(l[m], n_pairs);
	UNIT_CHECK(lss_same == n_pairs, "DB1_B %s: the matrix pass gives mcc_lss_pair's score on %d of %d pairs",
			   name, lss_same, n_pairs);
	for (int m = 0; m < MCC_NMETHODS; m++)
	{
		const char *mn = mcc_method_name(m);

		if (strstr(mn, "-r") == NULL && strstr(mn, "-dtr") == NULL && m != MCC_FUSED)
			continue;
		UNIT_CHECK(e[m] < 0.75 * e[MCC_LSS], "DB1_B %s: %s EER %.2f%% below 3/4 of LSS's %.2f%%",
				   name, mn, 100 * e[m], 100 * e[MCC_LSS]);
	}
	for (int m = 0; m < MCC_NMETHODS; m++)
		free(l[m]);
	for (int i = 0; i < N_REC; i++)
		free(blob[i]);
	free(w);
}

int
main(void)
{
	const char *data = unit_shared_data_or_skip("FVC2002 pairs not matched");

	if (data == NULL)
		return unit_done();
	check_encoding(data, "fingerjetfx-iso19794-2-2005", "ist", "FingerJetFX");
	check_encoding(data, "nbis-mindtct-xyt", "xyt", "mindtct");
	return unit_done();
}
