/*
 * test_extract_freq.c: the local ridge period (mcc_extract_freq.c) and the
 * Gabor filtering at a period per pixel (mcc_enh_gabor_map) on synthetic
 * ridges whose period is known by construction:
 *   - parallel ridges of period 6, 8.5 and 12 pixels, at several
 *     orientations: the median of the blocks within 0.3 px, every
 *     foreground pixel's period within 10 % (0.6 px at 6 px: the short
 *     periods are sampled coarsest);
 *   - ridges whose period grows from 7 px on the left to 11 px on the
 *     right: the map follows (left and right thirds within 0.6 px of their
 *     own period, not the mean's);
 *   - a flat image in the foreground (no ridges to measure): the fallback
 *     everywhere;
 *   - a constant period map at a bin's exact period filters bit for bit as
 *     the fixed period does, and the period bins round as documented;
 *   - extraction with period_ratio on finds the minutiae of a synthetic
 *     print (two endings facing each other) as the fixed period does.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_extract.h"
#include "mcc_extract_int.h"
#include "unit.h"

#define PI 3.14159265358979323846
#define SIDE 256

/*
 * A square print of SIDE pixels: ridges across the direction rot (radians)
 * whose local period at x is period(x) (phase integrated along the
 * direction across the ridges), inside a disc of radius 110.
 */
static mcc_image
ridges(double p_left, double p_right, double rot)
{
	mcc_image	im;

	im.width = im.height = SIDE;
	im.stride = SIDE;
	im.pixels = malloc((size_t) SIDE * SIDE);
	for (int y = 0; y < SIDE; y++)
		for (int x = 0; x < SIDE; x++)
		{
			double		u = (x - 128) * cos(rot) + (y - 128) * sin(rot);	/* across */
			double		a = p_left,
						b = (p_right - p_left) / SIDE,
						ph;

			/* period a + b (u + 128): phase = 2 pi integral du / period */
			ph = b == 0 ? 2 * PI * u / a : 2 * PI / b * log((a + b * (u + 128)) / (a + b * 0));
			im.pixels[(size_t) y * SIDE + x] = hypot(x - 128, y - 128) < 110
				? (uint8_t) lround(128 + 90 * cos(ph)) : 230;
		}
	return im;
}

/* The ridge field of im in c (foreground: the tile mask), ready for xt_ridge_period. */
static int
field(xt_ctx *c, const mcc_image *im)
{
	mcc_error	err;

	memset(c, 0, sizeof(*c));
	c->w = im->width;
	c->h = im->height;
	mcc_extract_params_default(&c->p);
	if (mcc_enh_init(&c->e, im, c->p.block, 1, &err) != MCC_OK)
		return 0;
	c->fg = c->e.mask;
	return 1;
}

/* A print of ridges(), its ridge field and the period map a test measures into. */
typedef struct period_case
{
	mcc_image	im;
	xt_ctx		c;
	float	   *per;
} period_case;

/* Set up the case of ridges(p_left, p_right, rot); one check (name) that its field was built. */
static int
open_case(period_case *pc, double p_left, double p_right, double rot, const char *name)
{
	pc->im = ridges(p_left, p_right, rot);
	pc->per = malloc((size_t) SIDE * SIDE * sizeof(float));
	return UNIT_CHECK(field(&pc->c, &pc->im) && pc->per, "%s: ridge field", name);
}

/* Free what open_case() allocated. */
static void
release(period_case *pc)
{
	mcc_enh_free(&pc->c.e);
	free(pc->per);
	free(pc->im.pixels);
}

/* Foreground pixels of [x0, x1) whose period is farther than tol from want. */
static long
off_period(const xt_ctx *c, const float *per, int x0, int x1, double want, double tol,
		   double *worst)
{
	long		bad = 0;

	for (int y = 0; y < SIDE; y++)
		for (int x = x0; x < x1; x++)
		{
			size_t		k = (size_t) y * SIDE + x;
			double		d;

			/* the map is measured where a whole signature fits in the print */
			if (!c->fg[k] || hypot(x - 128, y - 128) > 80)
				continue;
			d = fabs(per[k] - want);
			if (d > *worst)
				*worst = d;
			bad += d > tol;
		}
	return bad;
}

static void
test_constant(void)
{
	static const double periods[3] = {6, 8.5, 12};

	for (int i = 0; i < 3; i++)
		for (int r = 0; r < 3; r++)
		{
			double		rot = r * 0.7 + 0.1,
						median = 0,
						worst = 0;
			period_case pc;
			mcc_error	err;
			char		name[32];

			snprintf(name, sizeof(name), "period %.1f", periods[i]);
			if (open_case(&pc, periods[i], periods[i], rot, name) &&
				UNIT_CHECK(xt_ridge_period(&pc.c, 99, pc.per, &median, &err) == MCC_OK,
						   "period %.1f, %.1f rad: measured", periods[i], rot))
			{
				double		tol = 0.1 * periods[i];
				long		bad = off_period(&pc.c, pc.per, 0, SIDE, periods[i], tol, &worst);

				UNIT_CHECK(fabs(median - periods[i]) < 0.3,
						   "period %.1f, %.1f rad: median of the blocks %.2f", periods[i], rot,
						   median);
				UNIT_CHECK(bad == 0, "period %.1f, %.1f rad: %ld pixels off by more than %.2f "
						   "(worst %.2f)", periods[i], rot, bad, tol, worst);
			}
			release(&pc);
		}
}

static void
test_varying(void)
{
	period_case pc;
	mcc_error	err;
	double		median,
				wl = 0,
				wr = 0;

	/* period 7 + 4 x / 256: about 8.4 at x = 90 and 9.6 at x = 166 */
	if (open_case(&pc, 7, 11, 0, "varying period") &&
		UNIT_CHECK(xt_ridge_period(&pc.c, 99, pc.per, &median, &err) == MCC_OK,
				   "varying period: measured"))
	{
		double		sl = 0,
					sr = 0;
		long		nl = 0,
					nr = 0;

		for (int y = 100; y < 156; y++)
		{
			for (int x = 60; x < 90; x++)
			{
				sl += pc.per[y * SIDE + x] - (7 + 4.0 * x / SIDE);
				nl++;
			}
			for (int x = 166; x < 196; x++)
			{
				sr += pc.per[y * SIDE + x] - (7 + 4.0 * x / SIDE);
				nr++;
			}
		}
		wl = sl / nl;
		wr = sr / nr;
		UNIT_CHECK(fabs(wl) < 0.6 && fabs(wr) < 0.6,
				   "varying period: the map follows it (mean error %.2f left, %.2f right)",
				   wl, wr);
	}
	release(&pc);
}

static void
test_flat(void)
{
	period_case pc;
	mcc_error	err;
	double		median = 0;
	long		other = 0;

	/* the foreground of real ridges, then the ridges wiped: nothing to measure */
	if (open_case(&pc, 8, 8, 0, "flat"))
	{
		for (size_t k = 0; k < (size_t) SIDE * SIDE; k++)
			pc.c.e.norm[k] = 0;
		UNIT_CHECK(xt_ridge_period(&pc.c, 8.25, pc.per, &median, &err) == MCC_OK, "flat: measured");
		for (size_t k = 0; k < (size_t) SIDE * SIDE; k++)
			other += pc.per[k] != 8.25f;
		UNIT_CHECK(median == 8.25 && other == 0,
				   "flat: the fallback everywhere (median %.2f, %ld other pixels)", median, other);
	}
	release(&pc);
}

static void
test_gabor_map(void)
{
	mcc_image	im = ridges(9, 9, 0.4);
	size_t		n = (size_t) SIDE * SIDE;
	float	   *pmap = malloc(n * sizeof(float));
	double	   *fixed = malloc(n * sizeof(double));
	mcc_enh		e;
	mcc_error	err;
	long		diff = 0;

	UNIT_CHECK(mcc_enh_period_bin(7.5) == 18 && mcc_enh_bin_period(18) == 7.5 &&
			   mcc_enh_period_bin(7.6) == 18 && mcc_enh_period_bin(7.7) == 19 &&
			   mcc_enh_period_bin(1) == 0 && mcc_enh_period_bin(99) == mcc_enh_period_bin(30),
			   "period bins of 0.25 px from 3 to 30 px");
	if (UNIT_CHECK(pmap && fixed && mcc_enh_init(&e, &im, 16, 0, &err) == MCC_OK,
				   "Gabor map: ridge field"))
	{
		for (size_t k = 0; k < n; k++)
			pmap[k] = 7.5f;
		UNIT_CHECK(mcc_enh_gabor(&e, 7.5, 4, 0, 0, SIDE, SIDE, &err) == MCC_OK,
				   "Gabor at a fixed period");
		memcpy(fixed, e.resp, n * sizeof(double));
		UNIT_CHECK(mcc_enh_gabor_map(&e, pmap, 4, 0, 0, SIDE, SIDE, &err) == MCC_OK,
				   "Gabor at a period map");
		for (size_t k = 0; k < n; k++)
			diff += memcmp(&fixed[k], &e.resp[k], sizeof(double)) != 0;
		UNIT_CHECK(diff == 0, "a constant map at 7.5 px filters as the fixed 7.5 px, bit for "
				   "bit (%ld pixels differ)", diff);
		/* another period gives another response */
		for (size_t k = 0; k < n; k++)
			pmap[k] = 9.0f;
		mcc_enh_gabor_map(&e, pmap, 4, 0, 0, SIDE, SIDE, &err);
		diff = 0;
		for (size_t k = 0; k < n; k++)
			diff += fixed[k] != e.resp[k];
		UNIT_CHECK(diff > 0, "a map at 9 px filters otherwise (%ld pixels differ)", diff);
		mcc_enh_free(&e);
	}
	free(pmap);
	free(fixed);
	free(im.pixels);
}

/* Two endings facing each other on a row of parallel ridges (period 9), as in test_extract.c. */
static void
test_extract_local(void)
{
	mcc_image	im;
	mcc_extract_params p;
	mcc_minutiae ms;
	mcc_error	err;
	static const double dx[2] = {90, 166};
	int			near = 0;

	im.width = im.height = SIDE;
	im.stride = SIDE;
	im.pixels = malloc((size_t) SIDE * SIDE);
	for (int y = 0; y < SIDE; y++)
		for (int x = 0; x < SIDE; x++)
		{
			double		ph = 2 * PI * y / 9.0 + atan2(y - 126.0, x - dx[0]) -
				atan2(y - 126.0, x - dx[1]);

			im.pixels[(size_t) y * SIDE + x] = hypot(x - 128, y - 128) < 120
				? (uint8_t) lround(128 + 100 * cos(ph)) : 230;
		}
	mcc_extract_params_default(&p);
	p.period_ratio = 0.85;
	if (UNIT_CHECK(mcc_extract_minutiae(&im, &p, &ms, NULL, NULL, &err) == MCC_OK,
				   "extraction at the local period: %s", err.message))
	{
		for (int i = 0; i < ms.count; i++)
			for (int k = 0; k < 2; k++)
				near += hypot(ms.m[i].x - dx[k], ms.m[i].y - 126) <= 7 &&
					ms.m[i].type == MCC_TYPE_ENDING;
		UNIT_CHECK(ms.count == 2 && near == 2,
				   "extraction at the local period: the two endings (%d minutiae, %d near)",
				   ms.count, near);
	}
	p.period_ratio = 2.5;
	UNIT_CHECK(mcc_extract_minutiae(&im, &p, &ms, NULL, NULL, &err) == MCC_ERR_VALUE &&
			   strstr(err.message, "period_ratio"), "period_ratio 2.5 is refused: %s",
			   err.message);
	free(im.pixels);
}

int
main(void)
{
	test_constant();
	test_varying();
	test_flat();
	test_gabor_map();
	test_extract_local();
	return unit_done();
}
