/*
 * test_ridge.c: the restoration of ridge continuity (mcc_ridge.h) and paper
 * 003's overall verification (mcc_dp2d_overall.h).
 *
 * - Each phase on drawn images: a gap in a ridge is joined (and not with
 *   the joins off, nor across more than `gap` pixels); a ridge ending
 *   against a perpendicular one is not joined to it; a spur is cut; specks
 *   are removed; a one-pixel hole is filled (no loop in the skeleton).
 * - The output is a one-pixel skeleton plus the joins: a subset of the
 *   ridges and of the drawn join lines; the same bits twice.
 * - The overall verification: a print against itself differs in 0 pixels;
 *   mcc_dp2d_verify_overall equals the steps done one by one (enhance,
 *   warp, restore both, count) and its DP distance equals the simplified
 *   algorithm's; real FVC2002 prints when ../shared/data is present.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "testfvc.h"
#include "mcc_dp2d.h"
#include "mcc_dp2d_overall.h"
#include "mcc_image.h"
#include "mcc_ridge.h"

#define W	64
#define H	64

/* A valley image (255 everywhere). */
static void
blank(uint8_t *img)
{
	memset(img, 255, W * H);
}

/* A ridge rectangle [x0, x1] x [y0, y1] (0 = ridge). */
static void
rect(uint8_t *img, int x0, int y0, int x1, int y1)
{
	for (int y = y0; y <= y1; y++)
		for (int x = x0; x <= x1; x++)
			img[y * W + x] = 0;
}

/* 8-connected components of a 0/1 image. */
static int
components(const uint8_t *sk)
{
	uint8_t		seen[W * H] = {0};
	int			stack[W * H];
	int			n = 0;

	for (int s = 0; s < W * H; s++)
	{
		int			top = 0;

		if (!sk[s] || seen[s])
			continue;
		n++;
		seen[s] = 1;
		stack[top++] = s;
		while (top > 0)
		{
			int			i = stack[--top];

			for (int dy = -1; dy <= 1; dy++)
				for (int dx = -1; dx <= 1; dx++)
				{
					int			x = i % W + dx;
					int			y = i / W + dy;

					if (x >= 0 && y >= 0 && x < W && y < H && sk[y * W + x] && !seen[y * W + x])
					{
						seen[y * W + x] = 1;
						stack[top++] = y * W + x;
					}
				}
		}
	}
	return n;
}

/* Skeleton pixels. */
static int
count(const uint8_t *sk)
{
	int			n = 0;

	for (int i = 0; i < W * H; i++)
		n += sk[i] != 0;
	return n;
}

/* Options with every phase off but the joins (gap 0: those too). */
static void
joins_only(mcc_ridge_opts *o, int gap)
{
	mcc_ridge_opts_default(o, 4.5);
	o->gap = gap;
}

static void
test_phases(void)
{
	uint8_t		img[W * H];
	uint8_t		sk[W * H];
	uint8_t		again[W * H];
	mcc_ridge_opts o;
	mcc_ridge_stats st;
	mcc_error	err;
	int			outside = 0;

	/* a horizontal ridge, three pixels thick, cut by a gap of 4 pixels */
	blank(img);
	rect(img, 5, 30, 28, 32);
	rect(img, 33, 30, 58, 32);
	joins_only(&o, 0);
	mcc_ridge_restore(img, W, H, &o, sk, &st, &err);
	UNIT_CHECK(components(sk) == 2 && st.joined == 0, "a gap with the joins off: 2 pieces (%d)", components(sk));
	joins_only(&o, 6);
	mcc_ridge_restore(img, W, H, &o, sk, &st, &err);
	UNIT_CHECK(components(sk) == 1 && st.joined == 1, "a gap of 4 px, joins up to 6: one ridge (%d pieces, %d joined)",
			   components(sk), st.joined);
	for (int i = 0; i < W * H; i++)
		outside += sk[i] && img[i] != 0 && !(i / W == 31 && i % W > 28 && i % W < 33);
	UNIT_CHECK(outside == 0, "the skeleton lies on the ridges and the join (%d pixels elsewhere)", outside);
	mcc_ridge_restore(img, W, H, &o, again, &st, &err);
	UNIT_CHECK(memcmp(sk, again, sizeof(sk)) == 0, "the same bits twice");
	joins_only(&o, 3);
	mcc_ridge_restore(img, W, H, &o, sk, &st, &err);
	UNIT_CHECK(components(sk) == 2, "joins up to 3 px leave a gap of 4 (%d pieces)", components(sk));

	/* a vertical ridge ending 3 px beside a horizontal one: perpendicular, not joined */
	blank(img);
	rect(img, 5, 30, 58, 32);
	rect(img, 30, 5, 32, 26);
	joins_only(&o, 6);
	mcc_ridge_restore(img, W, H, &o, sk, &st, &err);
	UNIT_CHECK(st.joined == 0 && components(sk) == 2, "a ridge ending against a perpendicular one stays apart "
			   "(%d joined)", st.joined);

	/* a spur of 2 pixels on a ridge */
	blank(img);
	rect(img, 5, 30, 58, 32);
	rect(img, 31, 27, 31, 29);
	joins_only(&o, 0);			/* every phase off */
	mcc_ridge_restore(img, W, H, &o, sk, &st, &err);
	{
		int			with = count(sk);

		o.spur = 3;
		mcc_ridge_restore(img, W, H, &o, sk, &st, &err);
		UNIT_CHECK(st.cut > 0 && count(sk) == with - st.cut && sk[28 * W + 31] == 0,
				   "a spur is cut (%d of %d pixels)", st.cut, with);
	}

	/* specks */
	blank(img);
	rect(img, 5, 30, 58, 32);
	rect(img, 10, 10, 10, 10);
	rect(img, 40, 50, 41, 50);
	joins_only(&o, 0);			/* every phase off */
	mcc_ridge_restore(img, W, H, &o, sk, &st, &err);
	UNIT_CHECK(components(sk) == 3, "specks kept with the removal off (%d components)", components(sk));
	o.min_component = 3;
	mcc_ridge_restore(img, W, H, &o, sk, &st, &err);
	UNIT_CHECK(components(sk) == 1 && st.removed == 3, "specks of 1 and 2 px removed (%d components, %d pixels)",
			   components(sk), st.removed);

	/* a hole of one pixel in a thick ridge: a loop unless filled */
	blank(img);
	rect(img, 5, 28, 58, 34);
	img[31 * W + 30] = 255;
	joins_only(&o, 0);			/* every phase off */
	mcc_ridge_restore(img, W, H, &o, sk, &st, &err);
	{
		int			loop = count(sk);

		o.fill_max = 1;
		mcc_ridge_restore(img, W, H, &o, sk, &st, &err);
		UNIT_CHECK(st.filled == 1 && count(sk) < loop, "a one-pixel hole filled: the skeleton loses its loop "
				   "(%d pixels instead of %d)", count(sk), loop);
	}
	blank(img);
	UNIT_CHECK(mcc_ridge_restore(img, 0, H, &o, sk, &st, &err) == MCC_ERR_VALUE, "an empty image: %s",
			   err.message);
}

/* A synthetic print: sinusoidal ridges around a centre, so that Gabor enhancement finds ridges. */
static void
synthetic_print(uint8_t *px, int w, int h, double cx, double cy)
{
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
		{
			double		r = sqrt((x - cx) * (x - cx) + 0.6 * (y - cy) * (y - cy));

			px[y * w + x] = (uint8_t) (128 + 100 * cos(2 * 3.14159265358979 * r / 9.0));
		}
}

static void
test_overall(void)
{
	int			w = 300;
	int			h = 300;
	uint8_t    *a = malloc((size_t) w * h);
	uint8_t    *b = malloc((size_t) w * h);
	mcc_image	ia = {(uint32_t) w, (uint32_t) h, (uint32_t) w, a};
	mcc_image	ib = {(uint32_t) w, (uint32_t) h, (uint32_t) w, b};
	mcc_dp2d_prep p;
	mcc_dp2d_verdict v;
	mcc_dp2d_verdict simple;
	mcc_error	err;
	mcc_status	st;

	synthetic_print(a, w, h, 150, 140);
	synthetic_print(b, w, h, 156, 146);
	mcc_dp2d_prep_default(&p);
	st = mcc_dp2d_verify_overall(&ia, &ia, &p, MCC_DP2D_AUTO, 1, &v, &err);
	UNIT_CHECK(st == MCC_OK && v.differences == 0, "a print against itself: %llu differences",
			   (unsigned long long) v.differences);
	st = mcc_dp2d_verify_overall(&ia, &ib, &p, MCC_DP2D_AUTO, 1, &v, &err);
	{
		size_t		n = (size_t) p.side * p.side;
		uint8_t    *buf = malloc(5 * n);
		mcc_image	wa = {p.side, p.side, p.side, buf};
		mcc_image	wb = {p.side, p.side, p.side, buf + n};
		mcc_dp2d_out out;
		uint64_t	d = 0;

		memset(&out, 0, sizeof(out));
		out.warped = buf + 2 * n;
		mcc_dp2d_enhance(&ia, &p, buf, &err);
		mcc_dp2d_enhance(&ib, &p, buf + n, &err);
		mcc_dp2d_match(&wa, &wb, MCC_DP2D_AUTO, MCC_DP2D_WARP, &out, &err);
		mcc_dp2d_overall_restore(buf, &p, buf + 3 * n, &err);
		mcc_dp2d_overall_restore(out.warped, &p, buf + 4 * n, &err);
		d = mcc_dp2d_overall_differences(buf + 3 * n, buf + 4 * n, n);
		mcc_dp2d_verify(&ia, &ib, &p, MCC_DP2D_AUTO, 1, &simple, &err);
		UNIT_CHECK(st == MCC_OK && v.differences == d && v.differences > 0 && v.distance == simple.distance,
				   "a shifted print: %llu differences, the same as step by step (%llu); the DP distance is "
				   "the simplified algorithm's", (unsigned long long) v.differences, (unsigned long long) d);
		free(buf);
	}
	free(a);
	free(b);
}

/* Two real prints, when the data is there: the pipeline runs and restores few gaps. */
static void
test_fvc(void)
{
	const char *data = unit_shared_data_or_skip("no FVC2002 print restored");
	char		path[1024];
	size_t		len;
	uint8_t    *file;
	mcc_image	img;
	mcc_image_info info;
	mcc_dp2d_prep p;
	mcc_error	err;
	uint8_t    *bin;
	uint8_t    *sk;
	mcc_ridge_opts o;
	mcc_ridge_stats st;
	int			outside = 0;

	if (data == NULL)
		return;
	tfvc_image_path(path, sizeof(path), data, &tfvc_dbs[0], 101, 1);
	if ((file = unit_read_file(path, &len)) == NULL || mcc_image_probe(file, len, &info, &err) != MCC_OK)
	{
		UNIT_SKIP("%s not readable", path);
		free(file);
		return;
	}
	img.stride = info.width;
	img.pixels = malloc((size_t) info.width * info.height);
	mcc_image_decode(file, len, &img, &err);
	mcc_dp2d_prep_default(&p);
	bin = malloc((size_t) p.side * p.side);
	sk = malloc((size_t) p.side * p.side);
	mcc_dp2d_enhance(&img, &p, bin, &err);
	mcc_dp2d_overall_opts(&p, &o);
	mcc_ridge_restore(bin, p.side, p.side, &o, sk, &st, &err);
	for (size_t i = 0; i < (size_t) p.side * p.side; i++)
		outside += sk[i] && bin[i] != 0;
	UNIT_CHECK(st.runs > 20 && outside <= st.joined * (o.gap + 1),
			   "FVC2002 DB1_B 101_1: %d runs, %d gaps joined (up to %d px), skeleton off the ridges only on "
			   "joins (%d pixels)", st.runs, st.joined, o.gap, outside);
	free(file);
	free(img.pixels);
	free(bin);
	free(sk);
}

int
main(void)
{
	test_phases();
	test_overall();
	test_fvc();
	return unit_done();
}
