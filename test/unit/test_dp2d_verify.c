/*
 * test_dp2d_verify.c: enhancement, binarization and verification of
 * mcc_dp2d_verify.h on synthetic patterns whose answers are known by
 * construction: stripes of a known period and direction must come out as
 * stripes of that direction and the scaled period; a print against itself
 * differs in no pixel; flat images are all background; bad parameters and
 * sizes are refused.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_dp2d_verify.h"
#include "unit.h"

#define PI 3.14159265358979323846

/* A w x h image of dark stripes (period per, normal at angle phi) inside a disc. */
static mcc_image
stripes(uint32_t w, uint32_t h, double per, double phi, double radius)
{
	mcc_image	im;

	im.width = w;
	im.height = h;
	im.stride = w + 3;
	im.pixels = malloc(im.stride * h);
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
		{
			double		dx = x - w / 2.0,
						dy = y - h / 2.0;
			double		u = dx * cos(phi) + dy * sin(phi);
			double		v = 128 + 100 * cos(2 * PI * u / per);

			im.pixels[y * im.stride + x] = dx * dx + dy * dy <= radius * radius
				? (uint8_t) lround(v) : 230;
		}
	return im;
}

/* Fraction of black pixels in a square of the output centred on it. */
static double
black_fraction(const uint8_t *px, uint32_t side, uint32_t half)
{
	uint32_t	n = 0,
				b = 0;

	for (uint32_t y = side / 2 - half; y < side / 2 + half; y++)
		for (uint32_t x = side / 2 - half; x < side / 2 + half; x++)
		{
			b += px[y * side + x] == 0;
			n++;
		}
	return (double) b / n;
}

/* Horizontal and vertical stripes come out as such, with the scaled period. */
static void
test_stripes(void)
{
	mcc_dp2d_prep p;
	mcc_error	err;

	mcc_dp2d_prep_default(&p);
	for (int dir = 0; dir < 2; dir++)
	{
		/* dir 0: the normal is vertical (stripes run along x) */
		mcc_image	im = stripes(300, 300, 9.0, dir ? 0.0 : PI / 2, 140);
		uint8_t    *out = malloc(p.side * p.side);
		uint32_t	uniform = 0,
					lines = 0,
					changes = 0;
		double		period;
		int			only_bw = 1;

		UNIT_CHECK(mcc_dp2d_enhance(&im, &p, out, &err) == MCC_OK, "enhance %s stripes",
				   dir ? "vertical" : "horizontal");
		for (uint32_t k = 0; k < p.side * p.side; k++)
			only_bw &= out[k] == 0 || out[k] == 255;
		UNIT_CHECK(only_bw, "the output is binary (0 and 255 only)");
		/* in the central 64 x 64, lines along the stripes are uniform */
		for (uint32_t t = p.side / 2 - 32; t < p.side / 2 + 32; t++)
		{
			int			same = 1;
			uint8_t		first = dir ? out[(p.side / 2 - 32) * p.side + t] : out[t * p.side + p.side / 2 - 32];

			for (uint32_t s = p.side / 2 - 32; s < p.side / 2 + 32; s++)
				same &= (dir ? out[s * p.side + t] : out[t * p.side + s]) == first;
			uniform += same;
			lines++;
			if (t > p.side / 2 - 32)
			{
				uint8_t		prev = dir ? out[(p.side / 2 - 32) * p.side + t - 1] :
					out[(t - 1) * p.side + p.side / 2 - 32];

				changes += prev != first;
			}
		}
		/* 64 lines of output span 64 * crop / side raw pixels */
		period = 2.0 * 64 * ((double) p.crop / p.side) / (changes ? changes : 1);
		UNIT_CHECK(uniform >= lines - 2, "%s stripes stay stripes: %u of %u central lines uniform",
				   dir ? "vertical" : "horizontal", uniform, lines);
		UNIT_CHECK(fabs(period - 9.0) < 1.0, "their period is kept: %.2f raw pixels (9)", period);
		UNIT_CHECK(fabs(black_fraction(out, p.side, 32) - 0.5) < 0.1,
				   "about half the centre is ridge (%.2f)", black_fraction(out, p.side, 32));
		free(out);
		free(im.pixels);
	}
}

/* Flat images are background; a print against itself differs nowhere. */
static void
test_known(void)
{
	mcc_dp2d_prep p;
	mcc_error	err;
	mcc_image	flat;
	mcc_image	print = stripes(280, 320, 8.0, 0.6, 120);
	mcc_dp2d_verdict v;
	uint8_t    *out;
	int			all_white = 1;
	mcc_status	st;

	mcc_dp2d_prep_default(&p);
	p.side = 64;
	out = malloc(p.side * p.side);
	flat.width = 100;
	flat.height = 120;
	flat.stride = 100;
	flat.pixels = malloc(100 * 120);
	memset(flat.pixels, 140, 100 * 120);
	UNIT_CHECK(mcc_dp2d_enhance(&flat, &p, out, &err) == MCC_OK, "enhance a flat image");
	for (uint32_t k = 0; k < p.side * p.side; k++)
		all_white &= out[k] == 255;
	UNIT_CHECK(all_white, "a flat image is all background (255)");
	memset(&v, 0, sizeof(v));
	v.differences = 1;
	UNIT_CHECK(mcc_dp2d_verify(&print, &print, &p, MCC_DP2D_AUTO, 1, &v, &err) == MCC_OK &&
			   v.differences == 0 && v.distance == 0.0,
			   "a print verified against itself: 0 differences, distance 0");
	v.differences = 0;
	st = mcc_dp2d_verify(&print, &flat, &p, MCC_DP2D_AUTO, 2, &v, &err);
	UNIT_CHECK(st == MCC_OK && v.differences > 0,
			   "a print against a flat image differs (%llu pixels)",
			   (unsigned long long) v.differences);
	free(out);
	free(flat.pixels);
	free(print.pixels);
}

/* Parameters and sizes out of range. */
static void
test_bad(void)
{
	mcc_dp2d_prep p,
				q;
	mcc_error	err;
	mcc_image	im = stripes(15, 40, 9.0, 0, 10);
	mcc_image	big;
	uint8_t		out[128 * 128];

	mcc_dp2d_prep_default(&p);
	UNIT_CHECK(mcc_dp2d_prep_check(&p, &err) == MCC_OK, "the defaults are valid");
	q = p;
	q.side = 7;
	UNIT_CHECK(mcc_dp2d_prep_check(&q, &err) == MCC_ERR_VALUE, "side 7: %s", err.message);
	q = p;
	q.side = MCC_DP2D_MAX_SIDE + 1;
	UNIT_CHECK(mcc_dp2d_prep_check(&q, &err) == MCC_ERR_VALUE, "side 513: %s", err.message);
	q = p;
	q.period = NAN;
	UNIT_CHECK(mcc_dp2d_prep_check(&q, &err) == MCC_ERR_VALUE, "period NaN: %s", err.message);
	q = p;
	q.sigma = 0.5;
	UNIT_CHECK(mcc_dp2d_prep_check(&q, &err) == MCC_ERR_VALUE, "sigma 0.5: %s", err.message);
	q = p;
	q.block = 65;
	UNIT_CHECK(mcc_dp2d_prep_check(&q, &err) == MCC_ERR_VALUE, "block 65: %s", err.message);
	UNIT_CHECK(mcc_dp2d_enhance(&im, &p, out, &err) == MCC_ERR_VALUE, "a 15 x 40 print: %s",
			   err.message);
	big.width = MCC_DP2D_PREP_MAX_SIDE + 1;
	big.height = 20;
	big.stride = big.width;
	big.pixels = im.pixels;		/* never read: the size is refused first */
	UNIT_CHECK(mcc_dp2d_enhance(&big, &p, out, &err) == MCC_ERR_LIMIT, "a %u-pixel wide print: %s",
			   big.width, err.message);
	free(im.pixels);
}

int
main(void)
{
	test_stripes();
	test_known();
	test_bad();
	return unit_done();
}
