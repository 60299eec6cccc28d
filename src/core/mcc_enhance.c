/*
 * mcc_enhance.c: segmentation, normalization, orientation and Gabor
 * filtering of a raw fingerprint (mcc_enhance.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_enhance.h"

#define PI			3.14159265358979323846

void
mcc_enh_box_mean(const double *src, uint32_t w, uint32_t h, uint32_t r, double *integral,
				 double *dst)
{
	size_t		iw = (size_t) w + 1;

	memset(integral, 0, iw * sizeof(double));
	for (uint32_t y = 0; y < h; y++)
	{
		double		run = 0;

		integral[(y + 1) * iw] = 0;
		for (uint32_t x = 0; x < w; x++)
		{
			run += src[(size_t) y * w + x];
			integral[(y + 1) * iw + x + 1] = integral[y * iw + x + 1] + run;
		}
	}
	for (uint32_t y = 0; y < h; y++)
	{
		uint32_t	y0 = y >= r ? y - r : 0,
					y1 = y + r + 1 < h ? y + r + 1 : h;

		for (uint32_t x = 0; x < w; x++)
		{
			uint32_t	x0 = x >= r ? x - r : 0,
						x1 = x + r + 1 < w ? x + r + 1 : w;
			double		s = integral[y1 * iw + x1] - integral[y0 * iw + x1] -
				integral[y1 * iw + x0] + integral[y0 * iw + x0];

			dst[(size_t) y * w + x] = s / ((double) (x1 - x0) * (y1 - y0));
		}
	}
}

/*
 * Foreground tiles: standard deviation per tile, smoothed over 3 x 3
 * tiles, thresholded, then a 3 x 3 majority pass. tiles: 2 nx ny doubles
 * of scratch; mask gets one byte per pixel.
 */
static void
segment(const mcc_image *raw, uint32_t block, double *sd, uint8_t *mask)
{
	uint32_t	w = raw->width,
				h = raw->height;
	uint32_t	nx = (w + block - 1) / block,
				ny = (h + block - 1) / block;
	double	   *sm = sd + (size_t) nx * ny;
	uint8_t    *fg,
			   *fg2;
	double		top = 0,
				thr;

	for (uint32_t by = 0; by < ny; by++)
		for (uint32_t bx = 0; bx < nx; bx++)
		{
			double		s = 0,
						s2 = 0,
						n = 0,
						mean;

			for (uint32_t y = by * block; y < h && y < (by + 1) * block; y++)
				for (uint32_t x = bx * block; x < w && x < (bx + 1) * block; x++)
				{
					double		v = raw->pixels[(size_t) y * raw->stride + x];

					s += v;
					s2 += v * v;
					n++;
				}
			mean = s / n;
			sd[by * nx + bx] = sqrt(fmax(s2 / n - mean * mean, 0.0));
		}
	for (uint32_t by = 0; by < ny; by++)
		for (uint32_t bx = 0; bx < nx; bx++)
		{
			double		s = 0;
			int			n = 0;

			for (int dy = -1; dy <= 1; dy++)
				for (int dx = -1; dx <= 1; dx++)
				{
					int64_t		yy = (int64_t) by + dy,
								xx = (int64_t) bx + dx;

					if (yy >= 0 && yy < ny && xx >= 0 && xx < nx)
					{
						s += sd[yy * nx + xx];
						n++;
					}
				}
			sm[by * nx + bx] = s / n;
			if (sm[by * nx + bx] > top)
				top = sm[by * nx + bx];
		}
	thr = fmax(MCC_ENH_MIN_STD, 0.25 * top);
	/* tile flags in the (now unused) first array's bytes */
	fg = (uint8_t *) sd;
	fg2 = fg + (size_t) nx * ny;
	for (size_t k = 0; k < (size_t) nx * ny; k++)
		fg[k] = sm[k] > thr;
	for (uint32_t by = 0; by < ny; by++)
		for (uint32_t bx = 0; bx < nx; bx++)
		{
			int			votes = 0,
						n = 0;

			for (int dy = -1; dy <= 1; dy++)
				for (int dx = -1; dx <= 1; dx++)
				{
					int64_t		yy = (int64_t) by + dy,
								xx = (int64_t) bx + dx;

					if (yy >= 0 && yy < ny && xx >= 0 && xx < nx)
					{
						votes += fg[yy * nx + xx];
						n++;
					}
				}
			fg2[by * nx + bx] = 2 * votes > n;
		}
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
			mask[(size_t) y * w + x] = fg2[(y / block) * nx + x / block];
}

void
mcc_enh_free(mcc_enh *e)
{
	free(e->mem);
	memset(e, 0, sizeof(*e));
}

mcc_status
mcc_enh_init(mcc_enh *e, const mcc_image *raw, uint32_t block, int with_energy, mcc_error *err)
{
	uint32_t	w = raw->width,
				h = raw->height,
				r = block / 2;
	size_t		n = (size_t) w * h,
				tiles = (size_t) ((w + block - 1) / block) * ((h + block - 1) / block);
	size_t		nd = (5 + (with_energy ? 1 : 0)) * n + (size_t) (w + 1) * (h + 1) + 2 * tiles;
	double	   *d;

	memset(e, 0, sizeof(*e));
	e->mem = malloc(nd * sizeof(double) + n);
	if (e->mem == NULL)
		return mcc_error_set(err, MCC_ERR_MEMORY,
							 "out of memory for the ridge field of a %ux%u image", w, h);
	d = e->mem;
	e->w = w;
	e->h = h;
	e->block = block;
	e->norm = d;
	e->oc = d + n;
	e->os = d + 2 * n;
	e->resp = d + 3 * n;
	e->scratch = d + 4 * n;
	e->integral = d + 5 * n;
	d = e->integral + (size_t) (w + 1) * (h + 1);
	if (with_energy)
	{
		e->energy = d;
		d += n;
	}
	e->mask = (uint8_t *) (d + 2 * tiles);

	/* 1. segmentation (tile statistics in the last 2 tiles doubles) */
	segment(raw, block, d, e->mask);

	/* 2. local normalization: norm = (I - mean) / sd */
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
		{
			double		v = raw->pixels[(size_t) y * raw->stride + x];

			e->oc[(size_t) y * w + x] = v;
			e->os[(size_t) y * w + x] = v * v;
		}
	mcc_enh_box_mean(e->oc, w, h, r, e->integral, e->resp);
	mcc_enh_box_mean(e->os, w, h, r, e->integral, e->scratch);
	for (size_t k = 0; k < n; k++)
		e->norm[k] = (e->oc[k] - e->resp[k]) /
			sqrt(fmax(e->scratch[k] - e->resp[k] * e->resp[k], 1.0));

	/* 3. orientation: Sobel, then doubled-angle averages (twice) */
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
		{
			uint32_t	xm = x ? x - 1 : 0,
						xp = x + 1 < w ? x + 1 : x,
						ym = y ? y - 1 : 0,
						yp = y + 1 < h ? y + 1 : y;
			const double *f = e->norm;
#define F(xx, yy) f[(size_t) (yy) * w + (xx)]
			double		sx = (F(xp, ym) + 2 * F(xp, y) + F(xp, yp)) -
				(F(xm, ym) + 2 * F(xm, y) + F(xm, yp));
			double		sy = (F(xm, yp) + 2 * F(x, yp) + F(xp, yp)) -
				(F(xm, ym) + 2 * F(x, ym) + F(xp, ym));
#undef F

			e->oc[(size_t) y * w + x] = sx * sx - sy * sy;
			e->os[(size_t) y * w + x] = 2 * sx * sy;
			if (e->energy)
				e->energy[(size_t) y * w + x] = sx * sx + sy * sy;
		}
	mcc_enh_box_mean(e->oc, w, h, r, e->integral, e->resp);
	mcc_enh_box_mean(e->resp, w, h, r, e->integral, e->oc);
	mcc_enh_box_mean(e->os, w, h, r, e->integral, e->resp);
	mcc_enh_box_mean(e->resp, w, h, r, e->integral, e->os);
	if (e->energy)
	{
		mcc_enh_box_mean(e->energy, w, h, r, e->integral, e->resp);
		mcc_enh_box_mean(e->resp, w, h, r, e->integral, e->energy);
	}
	memset(e->resp, 0, n * sizeof(double));
	return MCC_OK;
}

/* The zero-mean even Gabor kernel of orientation k (normal at k pi / 16). */
static void
gabor_kernel(int k, double period, double sigma, int r, double *g)
{
	double		phi = k * PI / MCC_ENH_ORIENTS;
	double		c = cos(phi),
				s = sin(phi);
	int			side = 2 * r + 1;
	double		mean = 0;

	for (int dy = -r; dy <= r; dy++)
		for (int dx = -r; dx <= r; dx++)
		{
			double		u = dx * c + dy * s;	/* across the ridges */
			double		v = -dx * s + dy * c;	/* along them */
			double		e = exp(-(u * u + v * v) / (2 * sigma * sigma));

			g[(dy + r) * side + dx + r] = e * cos(2 * PI * u / period);
			mean += g[(dy + r) * side + dx + r];
		}
	mean /= (double) side * side;
	for (int t = 0; t < side * side; t++)
		g[t] -= mean;
}

/* The kernel of pixel at: the orientation of its averaged gradient. */
static const double *
kernel_at(const mcc_enh *e, size_t at, const double *kern, int ks)
{
	double		phi = 0.5 * atan2(e->os[at], e->oc[at]);	/* -pi/2 .. pi/2 */
	int			k = (int) lround(phi / (PI / MCC_ENH_ORIENTS));

	k = ((k % MCC_ENH_ORIENTS) + MCC_ENH_ORIENTS) % MCC_ENH_ORIENTS;
	return kern + (size_t) k * ks * ks;
}

/* One pixel, the window clipped to the image. */
static double
gabor_clipped(const mcc_enh *e, uint32_t x, uint32_t y, const double *g, int kr)
{
	int			ks = 2 * kr + 1;
	double		acc = 0;

	for (int dy = -kr; dy <= kr; dy++)
	{
		int64_t		yy = (int64_t) y + dy;

		if (yy < 0 || yy >= e->h)
			continue;
		for (int dx = -kr; dx <= kr; dx++)
		{
			int64_t		xx = (int64_t) x + dx;

			if (xx >= 0 && xx < e->w)
				acc += g[(dy + kr) * ks + dx + kr] * e->norm[(size_t) yy * e->w + xx];
		}
	}
	return acc;
}

/*
 * Four pixels whose windows lie inside the image, each with its own
 * kernel: four independent sums, each in the same tap order as
 * gabor_clipped (so the same bits), which lets the CPU overlap them.
 */
static void
gabor_four(mcc_enh *e, const size_t at[4], const double *g[4], int kr)
{
	int			ks = 2 * kr + 1;
	size_t		w = e->w;
	double		a0 = 0,
				a1 = 0,
				a2 = 0,
				a3 = 0;

	for (int dy = -kr; dy <= kr; dy++)
	{
		ptrdiff_t	row = (ptrdiff_t) dy * (ptrdiff_t) w - kr;
		const double *f0 = e->norm + at[0] + row,
				   *f1 = e->norm + at[1] + row,
				   *f2 = e->norm + at[2] + row,
				   *f3 = e->norm + at[3] + row;
		int			t0 = (dy + kr) * ks;

		for (int i = 0; i < ks; i++)
		{
			a0 += g[0][t0 + i] * f0[i];
			a1 += g[1][t0 + i] * f1[i];
			a2 += g[2][t0 + i] * f2[i];
			a3 += g[3][t0 + i] * f3[i];
		}
	}
	e->resp[at[0]] = a0;
	e->resp[at[1]] = a1;
	e->resp[at[2]] = a2;
	e->resp[at[3]] = a3;
}

mcc_status
mcc_enh_gabor(mcc_enh *e, double period, double sigma, uint32_t x0, uint32_t y0, uint32_t x1,
			  uint32_t y1, mcc_error *err)
{
	int			kr = (int) ceil(3 * sigma),
				ks = 2 * kr + 1;
	double	   *kern = malloc((size_t) MCC_ENH_ORIENTS * ks * ks * sizeof(double));

	if (kern == NULL)
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for Gabor kernels");
	for (int k = 0; k < MCC_ENH_ORIENTS; k++)
		gabor_kernel(k, period, sigma, kr, kern + (size_t) k * ks * ks);
	for (uint32_t y = y0; y < y1; y++)
	{
		int			inner_y = y >= (uint32_t) kr && (int64_t) y + kr < e->h;
		size_t		at[4];
		const double *g[4];
		int			q = 0;

		for (uint32_t x = x0; x < x1; x++)
		{
			size_t		p = (size_t) y * e->w + x;
			const double *gp;

			if (!e->mask[p])
			{
				e->resp[p] = 0;
				continue;
			}
			gp = kernel_at(e, p, kern, ks);
			if (!inner_y || x < (uint32_t) kr || (int64_t) x + kr >= e->w)
			{
				e->resp[p] = gabor_clipped(e, x, y, gp, kr);
				continue;
			}
			at[q] = p;
			g[q++] = gp;
			if (q == 4)
			{
				gabor_four(e, at, g, kr);
				q = 0;
			}
		}
		for (int i = 0; i < q; i++)
			e->resp[at[i]] = gabor_clipped(e, (uint32_t) (at[i] % e->w),
										   (uint32_t) (at[i] / e->w), g[i], kr);
	}
	free(kern);
	return MCC_OK;
}
