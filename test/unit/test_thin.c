/*
 * test_thin.c: mcc_thin.h on shapes whose skeletons are known (bars,
 * rings, stripes) and on random images, where every promise of the header
 * is checked by brute force independent of the implementation: subset of
 * the foreground, the same 8-connected components and 4-connected holes
 * (matched one to one, not only counted), one pixel wide (every pixel a
 * line end or not simple, by flood fills of its 3 x 3 neighbourhood),
 * thinning a skeleton changes nothing.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_thin.h"
#include "unit.h"

#define PI 3.14159265358979323846

static uint32_t rng_state = 12345;

static uint32_t
rnd(void)
{
	rng_state = rng_state * 1664525u + 1013904223u;
	return rng_state >> 8;
}

/*
 * Label the components of pixels equal to `value` (0 or 1) of a w x h image
 * with conn = 4 or 8; pixels outside the image count as background, so
 * background labelling includes a virtual outer frame (background components
 * that touch the border share the outer label). Returns the number of
 * labels; lab gets 1..n (0 for the other value).
 */
static int
label(const uint8_t *im, int w, int h, int value, int conn, int *lab)
{
	int		   *stack = malloc(sizeof(int) * (size_t) (w * h + 1));
	int			n = 0,
				outer = 0;

	memset(lab, 0, sizeof(int) * (size_t) w * h);
	for (int start = 0; start < w * h; start++)
	{
		int			sp = 0,
					id;

		if ((im[start] != 0) != value || lab[start])
			continue;
		id = ++n;
		lab[start] = id;
		stack[sp++] = start;
		while (sp)
		{
			int			p = stack[--sp],
						x = p % w,
						y = p / w;

			for (int dy = -1; dy <= 1; dy++)
				for (int dx = -1; dx <= 1; dx++)
				{
					int			xx = x + dx,
								yy = y + dy,
								q;

					if ((dx == 0 && dy == 0) || (conn == 4 && dx != 0 && dy != 0))
						continue;
					if (xx < 0 || yy < 0 || xx >= w || yy >= h)
					{
						/* background touching the border joins the outer frame */
						if (value == 0)
						{
							if (outer == 0)
								outer = id;
							else if (outer != id)
							{
								/* merge: relabel this component as outer */
								for (int t = 0; t < w * h; t++)
									if (lab[t] == id)
										lab[t] = outer;
								id = outer;
							}
						}
						continue;
					}
					q = yy * w + xx;
					if ((im[q] != 0) == value && lab[q] != id)
					{
						lab[q] = id;
						stack[sp++] = q;
					}
				}
		}
	}
	free(stack);
	/* compact the labels */
	{
		int		   *map = calloc((size_t) n + 1, sizeof(int));
		int			m = 0;

		for (int t = 0; t < w * h; t++)
			if (lab[t])
			{
				if (!map[lab[t]])
					map[lab[t]] = ++m;
				lab[t] = map[lab[t]];
			}
		free(map);
		n = m;
	}
	return n;
}

/*
 * The labels of `a` map one to one onto those of `b` where both are
 * nonzero (each a-component lies inside one b-component, no two share one,
 * every b-component is reached).
 */
static int
one_to_one(const int *la, int na, const int *lb, int nb, int npix)
{
	int		   *to = calloc((size_t) na + 1, sizeof(int));
	int		   *from = calloc((size_t) nb + 1, sizeof(int));
	int			ok = na == nb;

	for (int t = 0; t < npix && ok; t++)
	{
		if (!la[t] || !lb[t])
			continue;
		if (to[la[t]] && to[la[t]] != lb[t])
			ok = 0;
		if (from[lb[t]] && from[lb[t]] != la[t])
			ok = 0;
		to[la[t]] = lb[t];
		from[lb[t]] = la[t];
	}
	for (int k = 1; k <= na && ok; k++)
		ok = to[k] != 0;
	free(to);
	free(from);
	return ok;
}

/* Count neighbours of (x, y) set in im. */
static int
count_nb(const uint8_t *im, int w, int h, int x, int y)
{
	int			c = 0;

	for (int dy = -1; dy <= 1; dy++)
		for (int dx = -1; dx <= 1; dx++)
		{
			int			xx = x + dx,
						yy = y + dy;

			if ((dx || dy) && xx >= 0 && yy >= 0 && xx < w && yy < h && im[yy * w + xx])
				c++;
		}
	return c;
}

/*
 * Is (x, y) 8-simple, by definition: its foreground 8-neighbours form one
 * 8-component within the ring, and its background 4-neighbours lie in one
 * 4-component of the ring's background (paths inside the 3 x 3 ring).
 */
static int
simple_bruteforce(const uint8_t *im, int w, int h, int x, int y)
{
	int			v[9],
				lab[9],
				nf = 0,
				nbg = 0,
				first4 = -1;

	for (int k = 0; k < 9; k++)
	{
		int			xx = x + k % 3 - 1,
					yy = y + k / 3 - 1;

		v[k] = xx >= 0 && yy >= 0 && xx < w && yy < h && im[yy * w + xx];
		lab[k] = 0;
	}
	v[4] = -1;					/* the pixel itself is neither */
	for (int pass = 0; pass < 2; pass++)
	{
		int			want = pass == 0 ? 1 : 0,
					conn = pass == 0 ? 8 : 4,
					n = 0;

		memset(lab, 0, sizeof(lab));
		for (int s = 0; s < 9; s++)
		{
			int			stack[9],
						sp = 0;

			if (v[s] != want || lab[s])
				continue;
			lab[s] = ++n;
			stack[sp++] = s;
			while (sp)
			{
				int			p = stack[--sp];

				for (int q = 0; q < 9; q++)
				{
					int			dx = abs(q % 3 - p % 3),
								dy = abs(q / 3 - p / 3);

					if (q == p || dx > 1 || dy > 1 || (conn == 4 && dx + dy > 1))
						continue;
					if (v[q] == want && !lab[q])
					{
						lab[q] = n;
						stack[sp++] = q;
					}
				}
			}
		}
		if (pass == 0)
			nf = n;
		else
		{
			/* background components that hold a 4-neighbour of the pixel */
			int			seen[10] = {0};

			nbg = 0;
			for (int k = 1; k < 9; k += 2)
				if (v[k] == 0 && !seen[lab[k]])
				{
					seen[lab[k]] = 1;
					nbg++;
					first4 = k;
				}
		}
	}
	(void) first4;
	return nf == 1 && nbg == 1;
}

/* Every check of the header on one image; returns the number of failures. */
static int
check_all(const char *name, const uint8_t *im, int w, int h, uint8_t *sk)
{
	int		   *la = malloc(sizeof(int) * (size_t) w * h),
			   *lb = malloc(sizeof(int) * (size_t) w * h);
	uint8_t    *again = malloc((size_t) w * h);
	mcc_error	err;
	int			fails = 0,
				subset = 1,
				thin = 1,
				na,
				nb;

	if (!UNIT_CHECK(mcc_thin(im, (size_t) w, (uint32_t) w, (uint32_t) h, sk, &err) == MCC_OK,
					"%s: thins", name))
		return 1;
	for (int t = 0; t < w * h; t++)
		subset &= sk[t] == 0 || (sk[t] == 1 && im[t]);
	fails += !UNIT_CHECK(subset, "%s: skeleton is 0/1 and inside the foreground", name);

	na = label(im, w, h, 1, 8, la);
	nb = label(sk, w, h, 1, 8, lb);
	fails += !UNIT_CHECK(one_to_one(la, na, lb, nb, w * h),
						 "%s: the same %d 8-connected components (skeleton: %d)", name, na, nb);
	na = label(im, w, h, 0, 4, la);
	nb = label(sk, w, h, 0, 4, lb);
	fails += !UNIT_CHECK(one_to_one(la, na, lb, nb, w * h),
						 "%s: the same %d 4-connected background components (skeleton: %d)",
						 name, na, nb);

	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
			if (sk[y * w + x] && count_nb(sk, w, h, x, y) >= 2 &&
				simple_bruteforce(sk, w, h, x, y))
			{
				if (thin)
					printf("#   removable pixel (%d, %d)\n", x, y);
				thin = 0;
			}
	fails += !UNIT_CHECK(thin, "%s: one pixel wide (every pixel an end or not simple)", name);

	memcpy(again, sk, (size_t) w * h);
	mcc_thin(again, (size_t) w, (uint32_t) w, (uint32_t) h, again, &err);
	fails += !UNIT_CHECK(memcmp(again, sk, (size_t) w * h) == 0,
						 "%s: thinning the skeleton in place changes nothing", name);
	free(la);
	free(lb);
	free(again);
	return fails;
}

/* A horizontal bar becomes its middle row; a vertical one its middle column. */
static void
test_bars(void)
{
	int			w = 60,
				h = 21;
	uint8_t    *im = calloc((size_t) w * h, 1),
			   *sk = malloc((size_t) w * h);
	int			rows_ok = 1;

	for (int y = 7; y < 14; y++)
		for (int x = 5; x < 55; x++)
			im[y * w + x] = 1;
	check_all("7-pixel bar", im, w, h, sk);
	/* between the ends, each column holds one skeleton pixel, on row 10 */
	for (int x = 12; x < 48; x++)
		for (int y = 0; y < h; y++)
			if ((sk[y * w + x] != 0) != (y == 10))
				rows_ok = 0;
	UNIT_CHECK(rows_ok, "7-pixel bar: skeleton on the middle row between the ends");

	/* an even-width bar: one of the two middle rows */
	memset(im, 0, (size_t) w * h);
	for (int y = 6; y < 14; y++)
		for (int x = 5; x < 55; x++)
			im[y * w + x] = 1;
	check_all("8-pixel bar", im, w, h, sk);
	rows_ok = 1;
	for (int x = 12; x < 48; x++)
	{
		int			c = 0;

		for (int y = 0; y < h; y++)
			if (sk[y * w + x])
			{
				c++;
				rows_ok &= y == 9 || y == 10;
			}
		rows_ok &= c == 1;
	}
	UNIT_CHECK(rows_ok, "8-pixel bar: one skeleton pixel per column on a middle row");
	free(im);
	free(sk);
}

/* A ring keeps its hole: a closed curve where every pixel has two neighbours. */
static void
test_ring_disc(void)
{
	int			w = 64,
				h = 64,
				two = 1,
				count = 0;
	uint8_t    *im = calloc((size_t) w * h, 1),
			   *sk = malloc((size_t) w * h);

	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
		{
			double		r = hypot(x - 31.5, y - 31.5);

			im[y * w + x] = r >= 14 && r <= 20;
		}
	check_all("ring", im, w, h, sk);
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
			if (sk[y * w + x])
			{
				double		r = hypot(x - 31.5, y - 31.5);

				count++;
				two &= count_nb(sk, w, h, x, y) == 2 && r > 15 && r < 19;
			}
	UNIT_CHECK(two && count > 80, "ring: a closed curve of %d pixels near radius 17", count);

	/* a disc shrinks to a small connected set around its centre */
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
			im[y * w + x] = hypot(x - 31.5, y - 31.5) <= 20;
	check_all("disc", im, w, h, sk);
	count = 0;
	two = 1;
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
			if (sk[y * w + x])
			{
				count++;
				two &= hypot(x - 31.5, y - 31.5) <= 20;
			}
	UNIT_CHECK(count >= 1 && two, "disc: %d skeleton pixels inside the disc", count);
	free(im);
	free(sk);
}

/*
 * Ridge-like stripes (period 9, ridges about 4 pixels wide, at several
 * angles): as many skeleton lines as ridges, and far from the image
 * border every skeleton pixel lies within a pixel of a ridge's centre line.
 */
static void
test_stripes(void)
{
	int			w = 120,
				h = 100;
	uint8_t    *im = malloc((size_t) w * h),
			   *sk = malloc((size_t) w * h);

	for (int a = 0; a < 6; a++)
	{
		double		phi = a * PI / 6 + 0.1;
		double		c = cos(phi),
					s = sin(phi);
		int			centred = 1;
		char		name[64];

		for (int y = 0; y < h; y++)
			for (int x = 0; x < w; x++)
				im[y * w + x] = cos(2 * PI * (x * c + y * s) / 9.0) > 0.15;
		snprintf(name, sizeof(name), "stripes at %.2f rad", phi);
		check_all(name, im, w, h, sk);
		for (int y = 10; y < h - 10; y++)
			for (int x = 10; x < w - 10; x++)
				if (sk[y * w + x])
				{
					/* distance to the nearest ridge centre u = 9 k */
					double		u = x * c + y * s,
								d = fabs(u - 9.0 * floor(u / 9.0 + 0.5));

					centred &= d <= 1.5;
				}
		UNIT_CHECK(centred, "%s: skeleton on the ridge centre lines", name);
	}
	free(im);
	free(sk);
}

/* Random images: blobs, noise, thin and thick structures at once. */
static void
test_random(void)
{
	for (int t = 0; t < 12; t++)
	{
		int			w = 20 + (int) (rnd() % 60),
					h = 20 + (int) (rnd() % 60);
		uint8_t    *im = calloc((size_t) w * h, 1),
				   *sk = malloc((size_t) w * h);
		char		name[64];

		if (t % 3 == 0)
		{
			/* salt noise of density 0.3 .. 0.7 */
			uint32_t	p = 30 + rnd() % 41;

			for (int k = 0; k < w * h; k++)
				im[k] = rnd() % 100 < p;
		}
		else
		{
			/* random rectangles and discs, some holes cut back out */
			for (int k = 0; k < 12; k++)
			{
				int			x0 = (int) (rnd() % w),
							y0 = (int) (rnd() % h),
							rw = 1 + (int) (rnd() % 15),
							rh = 1 + (int) (rnd() % 15),
							val = k % 4 != 3;

				for (int y = y0; y < y0 + rh && y < h; y++)
					for (int x = x0; x < x0 + rw && x < w; x++)
						if (t % 3 == 1 || hypot(x - x0 - rw / 2.0, y - y0 - rh / 2.0) <= rw / 2.0)
							im[y * w + x] = (uint8_t) val;
			}
		}
		snprintf(name, sizeof(name), "random %d (%dx%d)", t, w, h);
		check_all(name, im, w, h, sk);
		free(im);
		free(sk);
	}
}

/* A stride larger than the width, nonzero values other than 1, errors. */
static void
test_api(void)
{
	uint8_t		in[5 * 8],
				out[5 * 5],
				ref[5 * 5];
	mcc_error	err;

	memset(in, 0, sizeof(in));
	for (int y = 1; y < 4; y++)
		for (int x = 0; x < 5; x++)
			in[y * 8 + x] = 200;	/* a 5 x 3 bar, stride 8 */
	UNIT_CHECK(mcc_thin(in, 8, 5, 5, out, &err) == MCC_OK, "stride 8: thins");
	memset(ref, 0, sizeof(ref));
	for (int x = 0; x < 5; x++)
		ref[2 * 5 + x] = 1;
	UNIT_CHECK(memcmp(out, ref, sizeof(ref)) == 0,
			   "stride 8, foreground 200: a 5 x 3 bar becomes its middle row");
	UNIT_CHECK(mcc_thin(in, 8, 0, 5, out, &err) == MCC_ERR_VALUE, "width 0 refused");
	UNIT_CHECK(mcc_thin(in, 8, 5, 0, out, &err) == MCC_ERR_VALUE, "height 0 refused");
	UNIT_CHECK(mcc_thin(in, 4, 5, 5, out, &err) == MCC_ERR_VALUE &&
			   strstr(err.message, "stride") != NULL, "stride below width refused: %s",
			   err.message);
	/* one pixel, two pixels: ends are kept */
	memset(in, 0, sizeof(in));
	in[2 * 8 + 2] = 1;
	mcc_thin(in, 8, 5, 5, out, &err);
	UNIT_CHECK(out[2 * 5 + 2] == 1, "a single pixel is kept");
	in[2 * 8 + 3] = 1;
	mcc_thin(in, 8, 5, 5, out, &err);
	UNIT_CHECK(out[2 * 5 + 2] == 1 && out[2 * 5 + 3] == 1, "two pixels are kept");
}

int
main(void)
{
	test_api();
	test_bars();
	test_ring_disc();
	test_stripes();
	test_random();
	return unit_done();
}
