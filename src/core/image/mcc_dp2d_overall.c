/*
 * mcc_dp2d_overall.c: paper 003's overall verification (mcc_dp2d_overall.h).
 */
#include "mcc_dp2d_overall.h"

#include <stdlib.h>
#include <string.h>

/* The overall algorithm's enhancement parameters. */
void
mcc_dp2d_overall_prep(mcc_dp2d_prep *p)
{
	mcc_dp2d_prep_default(p);
	p->side = MCC_DP2D_OVERALL_SIDE;
}

/* The ridge options for working images made with p. */
void
mcc_dp2d_overall_opts(const mcc_dp2d_prep *p, mcc_ridge_opts *o)
{
	/* the working image holds side pixels for (at most) crop raw pixels */
	mcc_ridge_opts_default(o, p->period * (double) p->side / (double) p->crop);
}

/* Thin and restore one working image. */
mcc_status
mcc_dp2d_overall_restore(const uint8_t *bin, const mcc_dp2d_prep *p, uint8_t *skel, mcc_error *err)
{
	mcc_ridge_opts o;

	mcc_dp2d_overall_opts(p, &o);
	return mcc_ridge_restore(bin, p->side, p->side, &o, skel, NULL, err);
}

/* Pixels where two restored images differ. */
uint64_t
mcc_dp2d_overall_differences(const uint8_t *a, const uint8_t *b, size_t n)
{
	uint64_t	d = 0;

	for (size_t i = 0; i < n; i++)
		d += (a[i] != 0) != (b[i] != 0);
	return d;
}

/* The overall algorithm on two raw prints. */
mcc_status
mcc_dp2d_verify_overall(const mcc_image *reference, const mcc_image *probe, const mcc_dp2d_prep *p,
						int kernel, int threads, mcc_dp2d_verdict *v, mcc_error *err)
{
	size_t		n = (size_t) p->side * p->side;
	uint8_t    *buf;
	mcc_dp2d_out out;
	mcc_status	st;

	if ((st = mcc_dp2d_prep_check(p, err)) != MCC_OK)
		return st;
	/* reference, probe, warped probe, two restored images */
	if ((buf = malloc(5 * n)) == NULL)
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for fingerprint verification");
	memset(&out, 0, sizeof(out));
	out.warped = buf + 2 * n;
	st = mcc_dp2d_enhance_warp(reference, probe, p, kernel, threads, buf, &out, err);
	if (st == MCC_OK)
		st = mcc_dp2d_overall_restore(buf, p, buf + 3 * n, err);
	if (st == MCC_OK)
		st = mcc_dp2d_overall_restore(out.warped, p, buf + 4 * n, err);
	if (st == MCC_OK)
	{
		v->differences = mcc_dp2d_overall_differences(buf + 3 * n, buf + 4 * n, n);
		v->distance = out.distance;
	}
	free(buf);
	return st;
}
