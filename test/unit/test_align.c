/*
 * test_align.c: aligning minutiae (mcc_align.h).
 *
 * - Synthetic: a random minutiae set and a second "impression" of it
 *   (rotated, shifted, scaled for similarity fits, 25% missed, spurious
 *   minutiae, position and angle noise); aligning the impression back
 *   recovers the transform within 3 pixels RMS and maps directions
 *   consistently, with and without directions (Hough starts at one or five
 *   scales; the position search), for euclidean and similarity fits.
 * - An initial transform: one start, the local fit from it.
 * - Real data: FVC2002 set B, NBIS mindtct minutiae, all four databases
 *   (read in place from ../shared/data, skipped when absent): the residual
 *   of aligning two impressions of the same finger is lower than that of
 *   different fingers. The distributions are printed as diagnostics.
 * - Bad input.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "testsort.h"
#include "testpoll.h"
#include "testangle.h"
#include "../tools/record_file.h"
#include "mcc_align.h"
#include "mcc_rng.h"
#include "mcc_xyt.h"

/* n minutiae at least 14 px apart in [60, 340)^2 of a 400 x 400 image. */
static void
random_minutiae(uint64_t seed, int n, mcc_minutiae *ms)
{
	mcc_rng		r;

	memset(ms, 0, sizeof(*ms));
	ms->width = 400;
	ms->height = 400;
	ms->dpi = 500;
	mcc_rng_seed(&r, mcc_rng_key(seed, 21, 0, 0));
	while (ms->count < n)
	{
		int			x = 60 + (int) mcc_rng_below(&r, 280);
		int			y = 60 + (int) mcc_rng_below(&r, 280);
		int			ok = 1;

		for (int i = 0; i < ms->count && ok; i++)
			if ((x - ms->m[i].x) * (x - ms->m[i].x) + (y - ms->m[i].y) * (y - ms->m[i].y) < 14 * 14)
				ok = 0;
		if (!ok)
			continue;
		ms->m[ms->count].x = (int16_t) x;
		ms->m[ms->count].y = (int16_t) y;
		ms->m[ms->count].theta = mcc_angle_normalize(mcc_rng_range(&r, 0, 2 * M_PI));
		ms->m[ms->count].type = MCC_TYPE_ENDING;
		ms->count++;
	}
}

/*
 * A second impression: minutia i (kept with chance 3/4) goes to
 * s R(a) (p - c) + c + t with noise, theta - a with noise; 8 spurious
 * minutiae. kept[i] is its index in the impression or -1.
 */
static void
impression(const mcc_minutiae *a, uint64_t seed, double ang, double s, double tx, double ty,
		   mcc_minutiae *b, int *kept)
{
	mcc_rng		r;
	double		c = cos(ang);
	double		sn = sin(ang);

	memset(b, 0, sizeof(*b));
	b->width = 400;
	b->height = 400;
	b->dpi = 500;
	mcc_rng_seed(&r, mcc_rng_key(seed, 22, 0, 0));
	for (int i = 0; i < a->count; i++)
	{
		double		x = a->m[i].x - 200.0;
		double		y = a->m[i].y - 200.0;
		double		nx = s * (c * x - sn * y) + 200 + tx + mcc_rng_range(&r, -2, 2);
		double		ny = s * (sn * x + c * y) + 200 + ty + mcc_rng_range(&r, -2, 2);

		kept[i] = -1;
		if (mcc_rng_below(&r, 4) == 0 || nx < 0 || ny < 0 || nx > 399 || ny > 399)
			continue;
		kept[i] = b->count;
		b->m[b->count].x = (int16_t) lround(nx);
		b->m[b->count].y = (int16_t) lround(ny);
		b->m[b->count].theta = mcc_angle_normalize(a->m[i].theta - ang + mcc_rng_range(&r, -0.08, 0.08));
		b->count++;
	}
	for (int k = 0; k < 8; k++)
	{
		b->m[b->count].x = (int16_t) (40 + mcc_rng_below(&r, 320));
		b->m[b->count].y = (int16_t) (40 + mcc_rng_below(&r, 320));
		b->m[b->count].theta = mcc_angle_normalize(mcc_rng_range(&r, 0, 2 * M_PI));
		b->count++;
	}
}

/*
 * A synthetic pair: a master of 45 random minutiae and its impression
 * (impression(): kept maps the master's minutiae into it), the probe the
 * tests align back onto the master with the options o.
 */
typedef struct synth_pair
{
	mcc_minutiae master;
	mcc_minutiae probe;
	int			kept[MCC_MAX_MINUTIAE];
	mcc_align_opts o;
} synth_pair;

/* The master of seed, its impression of seed2 in pose (ang, s, tx, ty), default options. */
static void
make_pair(synth_pair *pr, uint64_t seed, uint64_t seed2, double ang, double s, double tx, double ty)
{
	random_minutiae(seed, 45, &pr->master);
	impression(&pr->master, seed2, ang, s, tx, ty, &pr->probe, pr->kept);
	mcc_align_opts_init(&pr->o);
}

/* Synthetic impressions aligned back onto their master. */
static void
test_synthetic(void)
{
	struct
	{
		double		deg;
		double		scale;
		double		tx;
		double		ty;
		int			transform;
		int			dirs;
	}			cases[] = {
		{25, 1.0, 30, -20, MCC_XFORM_EUCLIDEAN, 1},
		{-140, 1.0, -15, 40, MCC_XFORM_EUCLIDEAN, 1},
		{170, 1.0, 5, 5, MCC_XFORM_EUCLIDEAN, 1},
		{25, 1.0, 30, -20, MCC_XFORM_EUCLIDEAN, 0},
		{-60, 1.0, 10, 25, MCC_XFORM_EUCLIDEAN, 0},
		{12, 1.06, -20, 10, MCC_XFORM_SIMILARITY, 1},
		{-8, 0.95, 12, 18, MCC_XFORM_AFFINE, 1},
		{150, 1.18, 25, -15, MCC_XFORM_SIMILARITY, 1},
		{-110, 0.84, -10, 20, MCC_XFORM_SIMILARITY, 1},
		{75, 1.12, 5, -25, MCC_XFORM_SIMILARITY, 0},
		{-165, 1.0, 20, 10, MCC_XFORM_EUCLIDEAN, 0},
	};

	for (size_t t = 0; t < sizeof(cases) / sizeof(cases[0]); t++)
	{
		synth_pair	pr;
		mcc_align_result res;
		mcc_error	err;
		mcc_status	st;
		double		ss = 0;
		double		worst_dir = 0;
		int			n = 0;

		make_pair(&pr, 100 + t, 200 + t, cases[t].deg * M_PI / 180, cases[t].scale, cases[t].tx,
				  cases[t].ty);
		pr.o.transform = cases[t].transform;
		pr.o.use_directions = cases[t].dirs;
		/* the impression is the probe: the fit maps it back onto the master */
		st = mcc_align_minutiae(&pr.probe, &pr.master, &pr.o, &res, &err);
		for (int i = 0; i < pr.master.count && st == MCC_OK; i++)
		{
			const mcc_minutia *mate = &pr.master.m[i];
			const double *m;

			if (pr.kept[i] < 0)
				continue;
			m = res.mapped[pr.kept[i]];
			ss += (m[0] - mate->x) * (m[0] - mate->x) + (m[1] - mate->y) * (m[1] - mate->y);
			worst_dir = fmax(worst_dir, fabs(tangle_sub(m[2], mate->theta)));
			n++;
		}
		UNIT_CHECK(st == MCC_OK && n > 0 && sqrt(ss / n) <= 3.0 && worst_dir <= 0.2 &&
				   res.paired >= n && res.n_probe == pr.probe.count,
				   "%s, %s, rotation %g deg, scale %g: mapped minutiae %.2f px RMS from their "
				   "mates (<= 3), directions within %.1f deg (<= 11.5), %d of %d paired (%d mates), "
				   "start %d of %d%s%s", mcc_xform_name(cases[t].transform),
				   cases[t].dirs ? "Hough starts" : "position search", cases[t].deg, cases[t].scale,
				   n ? sqrt(ss / n) : -1.0, worst_dir * 180 / M_PI, res.paired, pr.probe.count, n,
				   res.start, res.starts_tried, st ? ": " : "", st ? err.message : "");
	}
}

/* An initial transform: one fit from it; at the answer it stays, half a turn off it does not reach it. */
static void
test_initial(void)
{
	synth_pair	pr;
	mcc_align_result res;
	mcc_align_result far;
	mcc_error	err;
	mcc_status	st;
	double		ang = 40 * M_PI / 180;
	/* the impression maps back by R(-ang) about (200, 200) after the shift */
	double		c = cos(-ang);
	double		s = sin(-ang);
	double		tx = 200 - (c * (200 + 30) - s * (200 - 20));
	double		ty = 200 - (s * (200 + 30) + c * (200 - 20));
	const double truth[9] = {c, -s, tx, s, c, ty, 0, 0, 1};

	make_pair(&pr, 400, 401, ang, 1.0, 30, -20);
	pr.o.init_type = MCC_XFORM_EUCLIDEAN;
	memcpy(pr.o.init, truth, sizeof(truth));
	st = mcc_align_minutiae(&pr.probe, &pr.master, &pr.o, &res, &err);
	UNIT_CHECK(st == MCC_OK && res.starts_tried == 1 &&
			   fabs(tangle_sub(res.fit.params[0], -ang)) < 0.02 && res.mated >= 20,
			   "from the answer: one start, theta %.4f (truth %.4f), %d mated", res.fit.params[0], -ang,
			   res.mated);
	{
		const double off[9] = {-c, s, 400 - tx, -s, -c, 400 - ty, 0, 0, 1};

		memcpy(pr.o.init, off, sizeof(off));
	}
	st = mcc_align_minutiae(&pr.probe, &pr.master, &pr.o, &far, &err);
	UNIT_CHECK(st == MCC_OK && far.starts_tried == 1 &&
			   fabs(tangle_sub(far.fit.params[0], -ang)) > 1.0 && far.fit.residual > res.fit.residual,
			   "half a turn off: one start, the local fit stays off (theta %.4f, residual %.2f vs %.2f)",
			   far.fit.params[0], far.fit.residual, res.fit.residual);
}

/*
 * Same finger vs different fingers on real minutiae: every genuine pair
 * (280 per database: a later impression aligned onto an earlier one) and
 * 90 impostor pairs (impression 2 of each finger onto impression 1 of each
 * other finger), default options (euclidean, 15 px).
 */
static void
test_fvc(void)
{
	const char *data = unit_shared_data_or_skip("FVC2002 alignment not run");
	static mcc_minutiae ms[80];

	if (data == NULL)
		return;
	for (int db = 0; db < TFVC_DBS; db++)
	{
		double		gen[280];
		double		imp[90];
		int			ng = 0;
		int			ni = 0;
		int			read = 1;
		long		ordered = 0;
		mcc_align_opts o;
		mcc_error	err;
		int			failed = 0;

		for (int k = 0; k < 80 && read; k++)
			read = rf_read_fvc2002(data, db, k / 8, k % 8, &ms[k]);
		if (!read)
		{
			UNIT_SKIP("FVC2002 %s mindtct minutiae not found", tfvc_dbs[db].db);
			continue;
		}
		mcc_align_opts_init(&o);
		for (int c = 0; c < 80; c++)
		{
			mcc_chamfer_ref ref;

			if (mcc_align_prepare(&ms[c], &o, &ref, &err) != MCC_OK)
			{
				failed++;
				continue;
			}
			for (int p = 0; p < 80; p++)
			{
				int			genuine = p / 8 == c / 8 && p % 8 > c % 8;
				int			impostor = p / 8 != c / 8 && p % 8 == 1 && c % 8 == 0;
				mcc_align_result r;

				if (!genuine && !impostor)
					continue;
				if (mcc_align_minutiae_ref(&ms[p], &ms[c], &ref, &o, &r, &err) != MCC_OK)
				{
					failed++;
					continue;
				}
				if (genuine)
					gen[ng++] = r.fit.residual;
				else
					imp[ni++] = r.fit.residual;
			}
			mcc_chamfer_ref_free(&ref);
		}
		UNIT_CHECK(failed == 0 && ng == 280 && ni == 90, "%s: %d genuine and %d impostor alignments, %d failed",
				   tfvc_dbs[db].db, ng, ni, failed);
		if (ng == 0 || ni == 0)
			continue;
		qsort(gen, ng, sizeof(double), tsort_double_asc);
		qsort(imp, ni, sizeof(double), tsort_double_asc);
		for (int i = 0; i < ng; i++)
			for (int j = 0; j < ni; j++)
				ordered += gen[i] < imp[j];
		printf("# %s residual (px RMS, truncated at 15): same finger q10 %.2f q25 %.2f median %.2f "
			   "q75 %.2f q90 %.2f; different fingers q10 %.2f q25 %.2f median %.2f q75 %.2f q90 %.2f\n",
			   tfvc_dbs[db].db, gen[ng / 10], gen[ng / 4], gen[ng / 2], gen[3 * ng / 4], gen[9 * ng / 10],
			   imp[ni / 10], imp[ni / 4], imp[ni / 2], imp[3 * ni / 4], imp[9 * ni / 10]);
		UNIT_CHECK(gen[ng / 2] < imp[ni / 2],
				   "%s: the median same-finger residual %.2f is below the median different-finger %.2f",
				   tfvc_dbs[db].db, gen[ng / 2], imp[ni / 2]);
		UNIT_CHECK((double) ordered / ((double) ng * ni) >= 0.75,
				   "%s: a same-finger pair has the lower residual in %.1f%% of (same, different) "
				   "pairs (floor 75%%)", tfvc_dbs[db].db, 100.0 * ordered / ((double) ng * ni));
	}
}

/* A poll stops an alignment in its distance transform and in its fits, and says so. */
static void
test_cancel(void)
{
	synth_pair	pr;
	mcc_align_result res;
	mcc_error	err;

	make_pair(&pr, 300, 301, 0.3, 1.0, 10, 5);
	pr.o.poll = stop_after;
	for (int k = 0; k < 2; k++)
	{
		mcc_status	st;

		polls = 0;
		poll_limit = k == 0 ? 0 : 8;
		st = mcc_align_minutiae(&pr.probe, &pr.master, &pr.o, &res, &err);
		UNIT_CHECK(st == MCC_ERR_INTERNAL && res.fit.canceled && strstr(err.message, "canceled"),
				   "a poll cancels the %s: \"%s\", canceled = %d", k == 0 ? "distance transform" : "fits",
				   err.message, res.fit.canceled);
	}
}

/* Bad input. */
static void
test_errors(void)
{
	mcc_minutiae a;
	mcc_minutiae empty;
	mcc_minutiae one;
	mcc_align_opts o;
	mcc_align_result res;
	mcc_error	err;

	random_minutiae(5, 20, &a);
	memset(&empty, 0, sizeof(empty));
	one = a;
	one.count = 1;
	mcc_align_opts_init(&o);
	UNIT_CHECK(mcc_align_minutiae(&empty, &a, &o, &res, &err) == MCC_ERR_VALUE &&
			   strstr(err.message, "probe"), "an empty probe: %s", err.message);
	UNIT_CHECK(mcc_align_minutiae(&a, &empty, &o, &res, &err) == MCC_ERR_VALUE &&
			   strstr(err.message, "candidate"), "an empty candidate: %s", err.message);
	UNIT_CHECK(mcc_align_minutiae(&one, &a, &o, &res, &err) == MCC_ERR_VALUE &&
			   strstr(err.message, "too few"), "a one-minutia probe: %s", err.message);
	UNIT_CHECK(mcc_align_minutiae(&a, &one, &o, &res, &err) == MCC_ERR_VALUE &&
			   strstr(err.message, "coincide"), "a one-minutia candidate: %s", err.message);
	o.max_distance = -1;
	UNIT_CHECK(mcc_align_minutiae(&a, &a, &o, &res, &err) == MCC_ERR_VALUE, "a negative max_distance: %s",
			   err.message);
	o.max_distance = 15;
	o.resolution = 1e-4;
	UNIT_CHECK(mcc_align_minutiae(&a, &a, &o, &res, &err) == MCC_ERR_LIMIT, "a grid over the limit: %s",
			   err.message);
}

/* Every group of checks; TAP on stdout. */
int
main(void)
{
	test_synthetic();
	test_initial();
	test_errors();
	test_cancel();
	test_fvc();
	return unit_done();
}
