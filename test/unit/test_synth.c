/*
 * test_synth.c: the synthetic fingerprint generator and its building blocks
 * (reproducible math, random streams, masters, impressions).
 *
 * Statistical checks use fixed seeds, so they are deterministic; their
 * tolerances are still set from the sampling error (several standard
 * deviations), so that they test the model, not one lucky stream.
 */
#include <math.h>
#include <string.h>

#include "unit.h"
#include "mcc_detmath.h"
#include "mcc_rng.h"
#include "mcc_synth.h"

#define PI		3.14159265358979323846
#define DEG		(PI / 180.0)

static mcc_minutiae master,
			imp,
			imp2;
static int	origin[MCC_MAX_MINUTIAE];

/* Angle difference wrapped into [-pi, pi). */
static double
angle_diff(double a, double b)
{
	double		d = fmod(a - b, 2 * PI);

	if (d < -PI)
		d += 2 * PI;
	if (d >= PI)
		d -= 2 * PI;
	return d;
}

/* Floor of v / 2 for any sign, computed independently of the generator. */
static int
half_floor(int v)
{
	return (int) floor(v / 2.0);
}

static void
test_detmath(void)
{
	double		worst_s = 0,
				worst_c = 0,
				worst_a = 0,
				worst_l = 0;

	for (int i = -20000; i <= 20000; i++)
	{
		double		x = i * 0.0037 + 1e-7 * (i % 7);
		double		s,
					c;

		mcc_dm_sincos(x, &s, &c);
		worst_s = fmax(worst_s, fabs(s - sin(x)));
		worst_c = fmax(worst_c, fabs(c - cos(x)));
	}
	UNIT_CHECK(worst_s < 1e-15 && worst_c < 1e-15,
			   "sin/cos within 1e-15 of libm on [-74, 74] (%.2g, %.2g)", worst_s, worst_c);
	for (int i = -60; i <= 60; i++)
		for (int j = -60; j <= 60; j++)
		{
			double		y = i * 1.37,
						x = j * 0.91;

			worst_a = fmax(worst_a, fabs(mcc_dm_atan2(y, x) - atan2(y, x)));
		}
	UNIT_CHECK(worst_a < 1e-15, "atan2 within 1e-15 of libm on a grid (%.2g)", worst_a);
	for (double x = 1e-300; x < 1e300; x *= 1.7389)
		worst_l = fmax(worst_l, fabs(mcc_dm_log(x) - log(x)) / fmax(1.0, fabs(log(x))));
	for (int i = 1; i < 20000; i++)
	{
		double		x = i / 10000.0;

		worst_l = fmax(worst_l, fabs(mcc_dm_log(x) - log(x)) / fmax(1.0, fabs(log(x))));
	}
	UNIT_CHECK(worst_l < 1e-15, "log within 1e-15 (relative) of libm (%.2g)", worst_l);
	UNIT_CHECK(mcc_dm_sin(0.0) == 0.0 && mcc_dm_cos(0.0) == 1.0 && mcc_dm_atan2(0, 1) == 0.0,
			   "sin 0, cos 0 and atan2(0, 1) are exact");
	UNIT_CHECK(mcc_dm_log(1.0) == 0.0 && isnan(mcc_dm_log(-1.0)) && isinf(mcc_dm_log(0.0)),
			   "log of 1, -1 and 0");
}

static void
test_rng(void)
{
	mcc_rng		a,
				b;
	double		sum = 0,
				sum2 = 0,
				umin = 1,
				umax = 0;
	int			n = 200000,
				same = 1,
				hist[10] = {0},
				bad_below = 0;

	mcc_rng_seed(&a, mcc_rng_key(1, 2, 3, 4));
	mcc_rng_seed(&b, mcc_rng_key(1, 2, 3, 4));
	for (int i = 0; i < 1000; i++)
		same &= mcc_rng_next(&a) == mcc_rng_next(&b);
	UNIT_CHECK(same, "same key, same stream");
	UNIT_CHECK(mcc_rng_key(1, 2, 3, 4) != mcc_rng_key(1, 2, 3, 5) &&
			   mcc_rng_key(1, 2, 3, 4) != mcc_rng_key(1, 2, 4, 3) &&
			   mcc_rng_key(1, 2, 3, 4) != mcc_rng_key(2, 1, 3, 4) &&
			   mcc_rng_key(0, 0, 0, 0) != mcc_rng_key(0, 0, 0, 1), "keys are order sensitive");
	for (int i = 0; i < n; i++)
	{
		double		u = mcc_rng_uniform(&a);
		double		z = mcc_rng_normal(&a);
		uint64_t	k = mcc_rng_below(&a, 10);

		umin = fmin(umin, u);
		umax = fmax(umax, u);
		sum += z;
		sum2 += z * z;
		if (k >= 10)
			bad_below++;
		else
			hist[k]++;
	}
	UNIT_CHECK(umin >= 0 && umax < 1 && umin < 1e-4 && umax > 1 - 1e-4,
			   "uniform covers [0, 1) (%g .. %g)", umin, umax);
	/* the mean of n standard normals has sd 1/sqrt(n) = 0.0022 */
	UNIT_CHECK(fabs(sum / n) < 0.012 && fabs(sqrt(sum2 / n) - 1) < 0.012,
			   "normal: mean %.4f, sd %.4f", sum / n, sqrt(sum2 / n));
	{
		int			ok = bad_below == 0;

		/* each bin ~ 20000 +- 134 */
		for (int k = 0; k < 10; k++)
			ok &= abs(hist[k] - n / 10) < 800;
		UNIT_CHECK(ok, "below(10) is uniform over 0..9");
	}
	UNIT_CHECK(mcc_rng_below(&a, 0) == 0 && mcc_rng_below(&a, 1) == 0, "below(0) and below(1)");
}

static void
test_determinism(void)
{
	mcc_synth_params sp,
				sp2;
	static mcc_minutiae m2;

	mcc_synth_defaults(&sp);
	mcc_synth_master(&sp, 42, &master);
	mcc_synth_master(&sp, 42, &m2);
	UNIT_CHECK(memcmp(&master, &m2, sizeof(master)) == 0, "master: byte-identical on repeat");
	mcc_synth_impression(&sp, &master, 42, 3, &imp);
	mcc_synth_impression(&sp, &master, 42, 3, &imp2);
	UNIT_CHECK(memcmp(&imp, &imp2, sizeof(imp)) == 0, "impression: byte-identical on repeat");
	mcc_synth_impression_trace(&sp, &master, 42, 3, &imp2, origin);
	UNIT_CHECK(memcmp(&imp, &imp2, sizeof(imp)) == 0, "traced impression equals the plain one");

	mcc_synth_impression(&sp, &master, 42, 4, &imp2);
	UNIT_CHECK(imp.count != imp2.count || memcmp(imp.m, imp2.m, imp.count * sizeof(mcc_minutia)) != 0,
			   "another impression differs");
	mcc_synth_master(&sp, 43, &m2);
	UNIT_CHECK(master.count != m2.count || memcmp(master.m, m2.m, master.count * sizeof(mcc_minutia)) != 0,
			   "another finger differs");
	sp2 = sp;
	sp2.seed = 2;
	mcc_synth_master(&sp2, 42, &m2);
	UNIT_CHECK(master.count != m2.count || memcmp(master.m, m2.m, master.count * sizeof(mcc_minutia)) != 0,
			   "another seed differs");

	/* an impression parameter must not change the master */
	sp2 = sp;
	sp2.p_missing = 0.5;
	sp2.max_rotation = 5;
	mcc_synth_master(&sp2, 42, &m2);
	UNIT_CHECK(memcmp(&master, &m2, sizeof(master)) == 0, "impression parameters leave the master alone");

	/* streams are independent: changing one draw's scale changes only that quantity */
	sp2 = sp;
	sp2.quality_noise = 0;
	mcc_synth_impression(&sp2, &master, 42, 3, &imp2);
	{
		int			same_geometry = imp.count == imp2.count;

		for (int i = 0; same_geometry && i < imp.count; i++)
			same_geometry = imp.m[i].x == imp2.m[i].x && imp.m[i].y == imp2.m[i].y &&
				imp.m[i].theta == imp2.m[i].theta;
		UNIT_CHECK(same_geometry, "quality noise does not move minutiae");
	}
}

static void
test_masters(void)
{
	mcc_synth_params sp;
	mcc_synth_finger f;
	mcc_error	err;
	int			nf = 3000,
				cls[MCC_SYNTH_NCLASSES] = {0},
				bad_valid = 0,
				bad_count = 0,
				bad_spacing = 0,
				bad_dir = 0,
				bad_area = 0,
				bad_sorted = 0,
				bad_size = 0;
	long		total = 0,
				flipped = 0,
				endings = 0;
	static double nn[3000 * 64];
	long		n_nn = 0;
	double		frac;

	mcc_synth_defaults(&sp);
	for (int fi = 0; fi < nf; fi++)
	{
		uint64_t	finger = 1000 + fi;

		mcc_synth_shape(&sp, finger, &f);
		mcc_synth_master(&sp, finger, &master);
		cls[f.cls]++;
		if (mcc_minutiae_validate(&master, &err) != MCC_OK)
			bad_valid++;
		if (master.count < 30 || master.count > 60)
			bad_count++;
		/* plausible fingertip at 500 dpi: 300-400 by 400-500 pixels */
		if (f.a < 150 || f.a > 200 || f.b < 200 || f.b > 250 ||
			master.width < 2 * f.a || master.height < 2 * f.b)
			bad_size++;
		for (int i = 0; i < master.count; i++)
		{
			const mcc_minutia *m = &master.m[i];
			double		o = mcc_synth_orientation(&f, m->x, m->y);
			double		d = angle_diff(m->theta, o);
			double		u = (m->x - f.cx) / f.a,
						v = (m->y - f.cy) / f.b;
			long		best = 1L << 30;

			/* theta is the orientation or its reverse, up to float rounding */
			if (fabs(d) > 1e-5 && fabs(fabs(d) - PI) > 1e-5)
				bad_dir++;
			if (fabs(d) > PI / 2)
				flipped++;
			if (m->type == MCC_TYPE_ENDING)
				endings++;
			if (u * u + v * v > 0.96 * 0.96)
				bad_area++;
			if (i > 0 && (m->y < master.m[i - 1].y ||
						  (m->y == master.m[i - 1].y && m->x <= master.m[i - 1].x)))
				bad_sorted++;
			for (int j = 0; j < master.count; j++)
			{
				long		dx = m->x - master.m[j].x,
							dy = m->y - master.m[j].y;

				if (j != i && dx * dx + dy * dy < best)
					best = dx * dx + dy * dy;
			}
			if (best < 12 * 12)
				bad_spacing++;
			nn[n_nn++] = sqrt((double) best);
		}
		total += master.count;
	}
	UNIT_CHECK(bad_valid == 0, "%d masters: all valid", nf);
	UNIT_CHECK(bad_count == 0, "masters have 30..60 minutiae");
	UNIT_CHECK(bad_size == 0, "fingertip ellipses are 300-400 x 400-500 px and fit the frame");
	UNIT_CHECK(bad_spacing == 0, "no two master minutiae closer than 12 px");
	UNIT_CHECK(bad_dir == 0, "master directions follow the orientation field (mod pi)");
	UNIT_CHECK(bad_area == 0, "master minutiae lie inside the fingertip");
	UNIT_CHECK(bad_sorted == 0, "master minutiae are sorted by y, then x");
	/* uniform 30..60: mean 45, sd 8.9, so the mean of 3000 has sd 0.16 */
	UNIT_CHECK(fabs((double) total / nf - 45.0) < 0.8, "mean master count %.2f", (double) total / nf);
	/* polarity: a fair coin over ~135000 minutiae (sd 0.0014) */
	frac = (double) flipped / total;
	UNIT_CHECK(fabs(frac - 0.5) < 0.01, "half the minutiae point against theta_inf's sense (%.3f)", frac);
	frac = (double) endings / total;
	UNIT_CHECK(fabs(frac - 0.55) < 0.01, "55%% endings (%.3f)", frac);
	{
		/* class frequencies: binomial sd sqrt(p(1-p)/3000) <= 0.0087; 4 sd */
		static const double expect[MCC_SYNTH_NCLASSES] = {0.037, 0.029, 0.338, 0.317, 0.279};
		int			ok = 1;

		for (int c = 0; c < MCC_SYNTH_NCLASSES; c++)
		{
			double		p = (double) cls[c] / nf;

			ok &= fabs(p - expect[c]) < 4 * sqrt(expect[c] * (1 - expect[c]) / nf);
			printf("# class %-12s %.3f (expected %.3f)\n", mcc_synth_class_name(c), p, expect[c]);
		}
		UNIT_CHECK(ok, "class frequencies match the natural ones");
	}
	{
		/* median nearest-neighbour distance: for ~45 points in ~112000 px^2 a
		 * Poisson pattern gives 0.47 / sqrt(density) ~ 23 px */
		double		med;
		int			below = 0;

		for (long i = 0; i < n_nn; i++)
			below += nn[i] < 25.0;
		med = (double) below / n_nn;
		printf("# fraction of nearest-neighbour distances below 25 px: %.3f\n", med);
		UNIT_CHECK(med > 0.3 && med < 0.7, "nearest-neighbour distances plausible (median near 25 px)");
	}
}

static void
test_identity(void)
{
	mcc_synth_params sp;
	mcc_error	err;
	int			bad = 0,
				cropped = 0,
				total = 0,
				sizes[3][2] = {{388, 374}, {640, 640}, {201, 157}};

	for (int s = 0; s < 3; s++)
	{
		for (int fi = 0; fi < 200; fi++)
		{
			uint64_t	finger = 77 + fi;
			int			dx,
						dy,
						k = 0;

			mcc_synth_defaults(&sp);
			mcc_synth_clean(&sp);
			sp.width = sizes[s][0];
			sp.height = sizes[s][1];
			mcc_synth_master(&sp, finger, &master);
			mcc_synth_impression(&sp, &master, finger, fi, &imp);
			dx = half_floor(sp.width - master.width);
			dy = half_floor(sp.height - master.height);
			if (mcc_minutiae_validate(&imp, &err) != MCC_OK || imp.width != sp.width ||
				imp.height != sp.height || imp.dpi != master.dpi)
				bad++;
			/* the master, shifted and cropped, in the same order */
			for (int i = 0; i < master.count; i++)
			{
				const mcc_minutia *m = &master.m[i];
				int			x = m->x + dx,
							y = m->y + dy;

				if (x < 0 || y < 0 || x >= sp.width || y >= sp.height)
				{
					cropped++;
					continue;
				}
				total++;
				if (k >= imp.count || imp.m[k].x != x || imp.m[k].y != y ||
					imp.m[k].theta != m->theta || imp.m[k].type != m->type ||
					imp.m[k].quality != m->quality)
					bad++;
				k++;
			}
			if (k != imp.count)
				bad++;
		}
	}
	UNIT_CHECK(bad == 0 && total > 0, "unperturbed impressions reproduce the master up to the crop "
			   "(%d kept, %d cropped)", total, cropped);
	UNIT_CHECK(cropped > 0, "the small windows do crop");
}

/* Statistics of traced impressions under one kind of perturbation. */
typedef struct trace_stats
{
	long		master_total;
	long		kept;
	long		spurious;
	long		type_flips;
	long		dir_flips;
	double		sum_dx2;
	double		sum_da2;
	double		max_disp;
	double		sum_disp;
	double		expected_missing;
	int			bad;
} trace_stats;

/* Generate nf fingers x ni impressions with sp and gather trace statistics. */
static void
gather(const mcc_synth_params *sp, int nf, int ni, trace_stats *ts)
{
	mcc_error	err;

	memset(ts, 0, sizeof(*ts));
	for (int fi = 0; fi < nf; fi++)
	{
		uint64_t	finger = 5000 + fi;

		mcc_synth_master(sp, finger, &master);
		for (int ii = 1; ii <= ni; ii++)
		{
			int			dx = half_floor(sp->width - master.width);
			int			dy = half_floor(sp->height - master.height);

			mcc_synth_impression_trace(sp, &master, finger, ii, &imp, origin);
			if (mcc_minutiae_validate(&imp, &err) != MCC_OK)
				ts->bad++;
			ts->master_total += master.count;
			for (int i = 0; i < master.count; i++)
			{
				double		p = sp->p_missing * (1.0 + (70.0 - master.m[i].quality) / 60.0);

				ts->expected_missing += p < 0 ? 0 : (p > 1 ? 1 : p);
			}
			for (int i = 0; i < imp.count; i++)
			{
				const mcc_minutia *m = &imp.m[i];
				const mcc_minutia *mm;
				double		ex,
							ey,
							da,
							disp;

				if (origin[i] < 0)
				{
					ts->spurious++;
					continue;
				}
				mm = &master.m[origin[i]];
				ts->kept++;
				ex = m->x - (mm->x + dx);
				ey = m->y - (mm->y + dy);
				ts->sum_dx2 += ex * ex + ey * ey;
				disp = sqrt(ex * ex + ey * ey);
				ts->sum_disp += disp;
				ts->max_disp = fmax(ts->max_disp, disp);
				da = angle_diff(m->theta, mm->theta);
				if (fabs(da) > PI / 2)
				{
					ts->dir_flips++;
					da = angle_diff(da + PI, 0);
				}
				ts->sum_da2 += da * da;
				if (m->type != mm->type)
					ts->type_flips++;
			}
		}
	}
}

static void
test_perturbations(void)
{
	mcc_synth_params base,
				sp;
	trace_stats ts;
	double		v,
				expect;

	mcc_synth_defaults(&base);
	mcc_synth_clean(&base);
	/* a window larger than any master: nothing is cropped */
	base.width = 640;
	base.height = 640;

	sp = base;
	sp.pos_noise = 2.5;
	gather(&sp, 100, 4, &ts);
	/* per axis: noise 2.5^2 plus rounding 1/12; sd of the estimate ~ 0.02 */
	v = sqrt(ts.sum_dx2 / (2.0 * ts.kept));
	UNIT_CHECK(ts.bad == 0 && ts.kept == ts.master_total && fabs(v - sqrt(6.25 + 1.0 / 12)) < 0.08,
			   "position noise sd %.3f px (expected %.3f)", v, sqrt(6.25 + 1.0 / 12));

	sp = base;
	sp.angle_noise = 6.0;
	gather(&sp, 100, 4, &ts);
	v = sqrt(ts.sum_da2 / ts.kept) / DEG;
	UNIT_CHECK(ts.bad == 0 && ts.sum_dx2 == 0 && fabs(v - 6.0) < 0.2 && ts.dir_flips == 0,
			   "angle noise sd %.3f degrees (expected 6)", v);

	sp = base;
	sp.p_missing = 0.15;
	gather(&sp, 200, 4, &ts);
	v = 1.0 - (double) ts.kept / ts.master_total;
	expect = ts.expected_missing / ts.master_total;
	/* binomial sd over ~36000 minutiae: 0.0019 */
	UNIT_CHECK(ts.bad == 0 && fabs(v - expect) < 0.008 && ts.sum_dx2 == 0,
			   "missing fraction %.4f (expected %.4f)", v, expect);

	sp = base;
	sp.p_type_flip = 0.10;
	sp.p_dir_flip = 0.02;
	gather(&sp, 200, 4, &ts);
	v = (double) ts.type_flips / ts.kept;
	UNIT_CHECK(fabs(v - 0.10) < 0.008, "type flips %.4f (expected 0.10)", v);
	v = (double) ts.dir_flips / ts.kept;
	UNIT_CHECK(fabs(v - 0.02) < 0.004 && ts.sum_da2 < 1e-6 * ts.kept,
			   "direction flips %.4f (expected 0.02), flipped by exactly pi", v);

	sp = base;
	sp.max_spurious = 0.15;
	gather(&sp, 200, 4, &ts);
	/* count = floor(U (0.15 n + 1)): mean about 0.075 n */
	v = (double) ts.spurious / ts.kept;
	UNIT_CHECK(ts.bad == 0 && ts.kept == ts.master_total && v > 0.06 && v < 0.09,
			   "spurious minutiae: %.4f of the detected (expected about 0.075)", v);

	sp = base;
	sp.distortion = 1.0;
	gather(&sp, 200, 4, &ts);
	v = ts.sum_disp / ts.kept;
	/* |T(v) - v| <= 8 px + 2 sin(1.5 deg) * 500 px */
	UNIT_CHECK(ts.bad == 0 && ts.kept == ts.master_total && v > 1.0 && v < 10.0 &&
			   ts.max_disp < 8.0 + 2 * sin(1.5 * DEG) * 500 + 1,
			   "plastic distortion: mean displacement %.2f px, max %.2f px", v, ts.max_disp);

	sp = base;
	sp.max_translation = 30;
	gather(&sp, 50, 4, &ts);
	v = sqrt(ts.sum_dx2 / (2.0 * ts.kept));
	/* uniform on +-30: sd 17.3 */
	UNIT_CHECK(ts.bad == 0 && ts.max_disp <= 30 * sqrt(2.0) + 1 && v > 12 && v < 22 &&
			   ts.sum_da2 == 0, "translation sd %.2f px, max %.2f px", v, ts.max_disp);

	/* variability: each impression scales the noise by its own factor in [0.5, 1.5] */
	sp = base;
	sp.pos_noise = 2.0;
	sp.variability = 0.5;
	{
		double		lo = 1e9,
					hi = 0;
		int			bad_sd = 0;

		for (int fi = 0; fi < 100; fi++)
		{
			mcc_synth_master(&sp, 7000 + fi, &master);
			for (int ii = 1; ii <= 2; ii++)
			{
				int			dx = half_floor(sp.width - master.width);
				int			dy = half_floor(sp.height - master.height);
				double		s2 = 0,
							est;

				mcc_synth_impression_trace(&sp, &master, 7000 + fi, ii, &imp, origin);
				for (int i = 0; i < imp.count; i++)
				{
					double		ex = imp.m[i].x - (master.m[origin[i]].x + dx);
					double		ey = imp.m[i].y - (master.m[origin[i]].y + dy);

					s2 += ex * ex + ey * ey;
				}
				est = sqrt(s2 / (2.0 * imp.count));
				lo = fmin(lo, est);
				hi = fmax(hi, est);
				/* never beyond 1.5 x 2 px, allowing for the estimate's own error */
				bad_sd += est > 3.0 * 1.3 + 0.1;
			}
		}
		UNIT_CHECK(lo < 1.4 && hi > 2.6 && bad_sd == 0,
				   "variability spreads the per-impression noise (sd %.2f .. %.2f px)", lo, hi);
	}

	sp = base;
	sp.contact_loss = 0.3;
	gather(&sp, 200, 4, &ts);
	v = (double) ts.kept / ts.master_total;
	UNIT_CHECK(ts.bad == 0 && v < 1.0 && v > 0.6 && ts.sum_dx2 == 0,
			   "partial contact keeps %.3f of the minutiae, unmoved", v);
}

static void
test_rotation(void)
{
	mcc_synth_params sp;
	int			bad = 0,
				bad_shape = 0,
				big = 0;
	double		max_rot = 0;

	mcc_synth_defaults(&sp);
	mcc_synth_clean(&sp);
	sp.width = 640;
	sp.height = 640;
	sp.max_rotation = 25;
	for (int fi = 0; fi < 100; fi++)
	{
		mcc_synth_master(&sp, 900 + fi, &master);
		for (int ii = 0; ii < 4; ii++)
		{
			double		rot = 0;

			mcc_synth_impression_trace(&sp, &master, 900 + fi, ii, &imp, origin);
			for (int i = 0; i < imp.count; i++)
			{
				const mcc_minutia *a = &master.m[origin[i]];
				double		r = angle_diff(imp.m[i].theta, a->theta);

				if (i == 0)
					rot = r;
				else if (fabs(angle_diff(r, rot)) > 1e-5)
					bad++;
				/* rigid: distances kept up to the rounding of both ends */
				for (int j = 0; j < i; j++)
				{
					const mcc_minutia *b = &master.m[origin[j]];
					double		d0 = hypot(a->x - b->x, a->y - b->y);
					double		d1 = hypot(imp.m[i].x - imp.m[j].x, imp.m[i].y - imp.m[j].y);

					if (fabs(d1 - d0) > 1.5)
						bad_shape++;
				}
			}
			if (imp.count != master.count || origin[0] < 0)
				bad++;
			max_rot = fmax(max_rot, fabs(rot));
			big += fabs(rot) > 20 * DEG;
		}
	}
	UNIT_CHECK(bad == 0, "rotation turns every direction by the same angle");
	UNIT_CHECK(bad_shape == 0, "rotation keeps distances (within rounding)");
	UNIT_CHECK(max_rot <= 25 * DEG + 1e-6 && big > 20,
			   "rotation spans +-25 degrees (max %.2f, %d of 400 beyond 20)", max_rot / DEG, big);
}

static void
test_defaults(void)
{
	mcc_synth_params sp;
	mcc_error	err;
	trace_stats ts;
	double		found,
				n_mean;
	int			bad_border = 0,
				empty = 0,
				bad_gap = 0;

	mcc_synth_defaults(&sp);
	UNIT_CHECK(mcc_synth_check(&sp, &err) == MCC_OK, "defaults pass mcc_synth_check");
	UNIT_CHECK(sp.width == 388 && sp.height == 374 && sp.dpi == 500 && sp.max_rotation == 25,
			   "default window 388x374 at 500 dpi, rotation +-25 degrees");
	gather(&sp, 300, 4, &ts);
	UNIT_CHECK(ts.bad == 0, "1200 default impressions are valid");
	found = (double) ts.kept / ts.master_total;
	n_mean = (double) (ts.kept + ts.spurious) / 1200;
	printf("# defaults: %.3f of master minutiae detected, %.1f minutiae per impression, "
		   "%.3f spurious\n", found, n_mean, (double) ts.spurious / (ts.kept + ts.spurious));
	UNIT_CHECK(found > 0.4 && found < 0.85, "defaults: %.3f of the master minutiae are seen", found);
	UNIT_CHECK(n_mean > 20 && n_mean < 50, "defaults: %.1f minutiae per impression", n_mean);

	for (int fi = 0; fi < 300; fi++)
	{
		mcc_synth_master(&sp, 5000 + fi, &master);
		mcc_synth_impression_trace(&sp, &master, 5000 + fi, 9, &imp, origin);
		empty += imp.count == 0;
		for (int i = 0; i < imp.count; i++)
		{
			if (imp.m[i].x < sp.border || imp.m[i].y < sp.border ||
				imp.m[i].x >= sp.width - sp.border || imp.m[i].y >= sp.height - sp.border)
				bad_border++;
			if (origin[i] < 0)
				for (int j = 0; j < imp.count; j++)
				{
					int			dx = imp.m[i].x - imp.m[j].x,
								dy = imp.m[i].y - imp.m[j].y;

					if (j != i && dx * dx + dy * dy < 36)
						bad_gap++;
				}
		}
	}
	UNIT_CHECK(bad_border == 0, "nothing is detected within the border");
	UNIT_CHECK(bad_gap == 0, "spurious minutiae keep 6 px from the others");
	UNIT_CHECK(empty == 0, "no empty impression");
}

static void
test_robustness(void)
{
	mcc_synth_params sp;
	mcc_error	err;
	int			bad = 0;

	mcc_synth_defaults(&sp);
	sp.p_missing = 2;
	UNIT_CHECK(mcc_synth_check(&sp, &err) == MCC_ERR_RANGE &&
			   strstr(err.message, "p_missing") != NULL, "check: %s", err.message);
	mcc_synth_defaults(&sp);
	sp.max_minutiae = 10;
	UNIT_CHECK(mcc_synth_check(&sp, &err) == MCC_ERR_RANGE, "check: max below min rejected");
	mcc_synth_defaults(&sp);
	sp.angle_noise = NAN;
	UNIT_CHECK(mcc_synth_check(&sp, &err) == MCC_ERR_RANGE, "check: NaN rejected");

	/* out-of-range values are clamped, never crash, and output stays valid */
	mcc_synth_defaults(&sp);
	sp.width = -5;
	sp.height = 100000;
	sp.dpi = 0;
	sp.min_minutiae = 500;
	sp.max_minutiae = -1;
	sp.pos_noise = 1e300;
	sp.angle_noise = NAN;
	sp.p_missing = -1;
	sp.max_spurious = 1e9;
	sp.border = 1000000;
	sp.min_spacing = -4;
	for (int fi = 0; fi < 20; fi++)
	{
		mcc_synth_master(&sp, fi, &master);
		mcc_synth_impression(&sp, &master, fi, 1, &imp);
		bad += mcc_minutiae_validate(&imp, &err) != MCC_OK ||
			mcc_minutiae_validate(&master, &err) != MCC_OK;
	}
	UNIT_CHECK(bad == 0, "absurd parameters give valid (if odd) minutiae");

	/* many minutiae and spurious ones: never more than 256 */
	mcc_synth_defaults(&sp);
	sp.min_minutiae = sp.max_minutiae = 256;
	sp.min_spacing = 4;
	sp.max_spurious = 10;
	sp.width = sp.height = 2000;
	mcc_synth_master(&sp, 3, &master);
	mcc_synth_impression(&sp, &master, 3, 1, &imp);
	UNIT_CHECK(master.count == 256 && imp.count <= MCC_MAX_MINUTIAE &&
			   mcc_minutiae_validate(&imp, &err) == MCC_OK,
			   "256 master minutiae, impression capped (%d)", imp.count);

	/* 1000 dpi: the finger is twice as large in pixels */
	mcc_synth_defaults(&sp);
	sp.dpi = 1000;
	{
		mcc_synth_finger f;

		mcc_synth_shape(&sp, 8, &f);
		mcc_synth_master(&sp, 8, &master);
		UNIT_CHECK(f.a >= 300 && f.a <= 400 && master.dpi == 1000 &&
				   master.width >= 2 * f.a, "1000 dpi doubles the fingertip (%.0f px wide)", 2 * f.a);
	}
}

int
main(void)
{
	test_detmath();
	test_rng();
	test_determinism();
	test_masters();
	test_identity();
	test_perturbations();
	test_rotation();
	test_defaults();
	test_robustness();
	return unit_done();
}
