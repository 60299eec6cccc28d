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
 * The sum of v over the 3 x 3 tiles around (bx, by) that lie in the
 * nx x ny grid, row by row; *n gets their count.
 */
static double
box3_sum(const double *v, uint32_t nx, uint32_t ny, uint32_t bx, uint32_t by, int *n)
{
	uint32_t	x0 = bx > 0 ? bx - 1 : 0,
				x1 = bx + 2 < nx ? bx + 2 : nx,
				y0 = by > 0 ? by - 1 : 0,
				y1 = by + 2 < ny ? by + 2 : ny;
	double		s = 0;

	for (uint32_t y = y0; y < y1; y++)
		for (uint32_t x = x0; x < x1; x++)
			s += v[(size_t) y * nx + x];
	*n = (int) ((x1 - x0) * (y1 - y0));
	return s;
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
	uint8_t    *fg;
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
			int			n;
			double		sum = box3_sum(sd, nx, ny, bx, by, &n);

			sm[by * nx + bx] = sum / n;
			if (sm[by * nx + bx] > top)
				top = sm[by * nx + bx];
		}
	thr = fmax(MCC_ENH_MIN_STD, 0.25 * top);
	/* tile flags (0, 1) in the now unused first array; the majority in the second's bytes */
	for (size_t k = 0; k < (size_t) nx * ny; k++)
		sd[k] = sm[k] > thr;
	fg = (uint8_t *) sm;
	for (uint32_t by = 0; by < ny; by++)
		for (uint32_t bx = 0; bx < nx; bx++)
		{
			int			n;
			double		votes = box3_sum(sd, nx, ny, bx, by, &n);

			fg[by * nx + bx] = 2 * votes > n;
		}
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
			mask[(size_t) y * w + x] = fg[(y / block) * nx + x / block];
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

double
mcc_enh_gabor_gain(double period, double sigma)
{
	int			kr = (int) ceil(3 * sigma),
				ks = 2 * kr + 1;
	double	   *g = malloc((size_t) ks * ks * sizeof(double));
	double		sum = 0;

	if (g == NULL)
		return 0;
	gabor_kernel(0, period, sigma, kr, g);
	for (int dy = -kr; dy <= kr; dy++)
		for (int dx = -kr; dx <= kr; dx++)
			sum += g[(dy + kr) * ks + dx + kr] * cos(2 * PI * dx / period);
	free(g);
	return sum;
}

/* The kernel of pixel at: the orientation of its averaged gradient. */
static int
kernel_index(const mcc_enh *e, size_t at)
{
	double		phi = 0.5 * atan2(e->os[at], e->oc[at]);	/* -pi/2 .. pi/2 */
	int			k = (int) lround(phi / (PI / MCC_ENH_ORIENTS));

	return ((k % MCC_ENH_ORIENTS) + MCC_ENH_ORIENTS) % MCC_ENH_ORIENTS;
}

/*
 * The Gabor sums read the normalized image through a copy with kr zero
 * pixels on every side: a tap outside the image adds +-0, which leaves
 * every sum as the clipped window gives it (a sum of products starts at
 * +0 and exact cancellation gives +0), so no pixel needs a bounds check.
 */
typedef double v2d __attribute__((vector_size(16)));

/*
 * n = 4 or 8 consecutive pixels with the same kernel: vector sums of two
 * lanes (SSE2 or NEON registers), each lane adding the taps in the same
 * order as gabor_four (the same bits); eight pixels keep four sums in
 * flight to cover the latency of the additions.
 */
static void
gabor_run(const double *f, size_t stride, const double *g, int kr, int n, double *out)
{
	int			ks = 2 * kr + 1;
	v2d			a0 = {0, 0},
				a1 = {0, 0},
				a2 = {0, 0},
				a3 = {0, 0};

	for (int dy = 0; dy < ks; dy++)
	{
		const double *row = f + (size_t) dy * stride;
		const double *gr = g + (size_t) dy * ks;

		if (n == 8)
			for (int i = 0; i < ks; i++)
			{
				v2d			gv = {gr[i], gr[i]},
							f0,
							f1,
							f2,
							f3;

				memcpy(&f0, row + i, sizeof(f0));
				memcpy(&f1, row + i + 2, sizeof(f1));
				memcpy(&f2, row + i + 4, sizeof(f2));
				memcpy(&f3, row + i + 6, sizeof(f3));
				a0 += gv * f0;
				a1 += gv * f1;
				a2 += gv * f2;
				a3 += gv * f3;
			}
		else
			for (int i = 0; i < ks; i++)
			{
				v2d			gv = {gr[i], gr[i]},
							f0,
							f1;

				memcpy(&f0, row + i, sizeof(f0));
				memcpy(&f1, row + i + 2, sizeof(f1));
				a0 += gv * f0;
				a1 += gv * f1;
			}
	}
	memcpy(out, &a0, sizeof(a0));
	memcpy(out + 2, &a1, sizeof(a1));
	if (n == 8)
	{
		memcpy(out + 4, &a2, sizeof(a2));
		memcpy(out + 6, &a3, sizeof(a3));
	}
}

/*
 * Four pixels anywhere, each with its own kernel: four independent sums
 * (f[k]: the top-left tap of pixel k's window in the padded copy).
 */
static void
gabor_four(const double *const f[4], size_t stride, const double *const g[4], int kr,
		   double *const out[4])
{
	int			ks = 2 * kr + 1;
	double		a0 = 0,
				a1 = 0,
				a2 = 0,
				a3 = 0;

	for (int dy = 0; dy < ks; dy++)
	{
		size_t		ro = (size_t) dy * stride;
		int			t0 = dy * ks;

		for (int i = 0; i < ks; i++)
		{
			a0 += g[0][t0 + i] * f[0][ro + i];
			a1 += g[1][t0 + i] * f[1][ro + i];
			a2 += g[2][t0 + i] * f[2][ro + i];
			a3 += g[3][t0 + i] * f[3][ro + i];
		}
	}
	*out[0] = a0;
	*out[1] = a1;
	*out[2] = a2;
	*out[3] = a3;
}

/*
 * Period bin of a period map: 3 px + k steps of MCC_ENH_PERIOD_STEP (the
 * map's periods clamped to 3..30 first).
 */
int
mcc_enh_period_bin(double period)
{
	double		p = fmin(30.0, fmax(3.0, period));

	return (int) lround((p - 3.0) / MCC_ENH_PERIOD_STEP);
}

double
mcc_enh_bin_period(int bin)
{
	return 3.0 + bin * MCC_ENH_PERIOD_STEP;
}

/*
 * Kernels made when first used: kernel (bin, orientation) at
 * slot[(bin - lo) * 16 + k], for the bins lo..hi the map holds; with a
 * fixed period, one bin holds it exactly.
 */
typedef struct gabor_bank
{
	double	  **slot;
	double	   *store;			/* kernels made so far, ks * ks doubles each */
	int			used;
	int			lo;
	int			kr;
	double		sigma;
	double		fixed;			/* > 0: the one period (no map) */
} gabor_bank;

static const double *
bank_kernel(gabor_bank *b, int bin, int k)
{
	int			ks = 2 * b->kr + 1;
	double	  **s = &b->slot[(bin - b->lo) * MCC_ENH_ORIENTS + k];

	if (*s == NULL)
	{
		/* the store never moves: it is sized for every slot up front */
		*s = b->store + (size_t) b->used++ * ks * ks;
		gabor_kernel(k, b->fixed > 0 ? b->fixed : mcc_enh_bin_period(bin), b->sigma, b->kr, *s);
	}
	return *s;
}

/* The bins of pmap over the rectangle's foreground: *lo..*hi (0..0 without any). */
static void
map_bins(const mcc_enh *e, const float *pmap, uint32_t x0, uint32_t y0, uint32_t x1,
		 uint32_t y1, int *lo, int *hi)
{
	*lo = 1 << 30;
	*hi = -1;
	for (uint32_t y = y0; y < y1; y++)
		for (uint32_t x = x0; x < x1; x++)
		{
			size_t		p = (size_t) y * e->w + x;
			int			bin;

			if (!e->mask[p])
				continue;
			bin = mcc_enh_period_bin(pmap[p]);
			*lo = bin < *lo ? bin : *lo;
			*hi = bin > *hi ? bin : *hi;
		}
	if (*hi < 0)
		*lo = *hi = 0;
}

static mcc_status
gabor_filter(mcc_enh *e, const float *pmap, double period, double sigma, uint32_t x0,
			 uint32_t y0, uint32_t x1, uint32_t y1, mcc_error *err)
{
	int			kr = (int) ceil(3 * sigma),
				ks = 2 * kr + 1;
	int			lo = 0,
				hi = 0,
				nslots;
	size_t		pw = (size_t) e->w + 2 * kr,
				ph = (size_t) e->h + 2 * kr;
	double	   *pad = malloc(pw * ph * sizeof(double));
	int		   *kidx = malloc((size_t) e->w * sizeof(int));
	gabor_bank	b;

	if (pmap)
		map_bins(e, pmap, x0, y0, x1, y1, &lo, &hi);
	nslots = (hi - lo + 1) * MCC_ENH_ORIENTS;
	memset(&b, 0, sizeof(b));
	b.lo = lo;
	b.kr = kr;
	b.sigma = sigma;
	b.fixed = pmap ? 0 : period;
	b.slot = calloc((size_t) nslots, sizeof(double *));
	b.store = malloc((size_t) nslots * ks * ks * sizeof(double));
	if (pad == NULL || kidx == NULL || b.slot == NULL || b.store == NULL)
	{
		free(pad);
		free(kidx);
		free(b.slot);
		free(b.store);
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for Gabor filtering");
	}
	memset(pad, 0, pw * ph * sizeof(double));
	for (uint32_t y = 0; y < e->h; y++)
		memcpy(pad + (y + kr) * pw + kr, e->norm + (size_t) y * e->w, e->w * sizeof(double));

	for (uint32_t y = y0; y < y1; y++)
	{
		const double *f[4],
				   *g[4];
		double	   *o[4];
		int			q = 0;
		uint32_t	x = x0;

		/* pixel (x, y)'s window starts at (x, y) of the padded copy */
		for (uint32_t xx = x0; xx < x1; xx++)
		{
			size_t		p = (size_t) y * e->w + xx;

			kidx[xx] = e->mask[p] ? kernel_index(e, p) : -1;
			if (kidx[xx] < 0)
				e->resp[p] = 0;
			else if (pmap)
				kidx[xx] += mcc_enh_period_bin(pmap[p]) * MCC_ENH_ORIENTS;
		}
		while (x < x1)
		{
			uint32_t	run = 1;
			int			k = kidx[x];
			const double *kern;

			if (k < 0)
			{
				x++;
				continue;
			}
			kern = bank_kernel(&b, k / MCC_ENH_ORIENTS, k % MCC_ENH_ORIENTS);
			while (x + run < x1 && kidx[x + run] == k)
				run++;
			while (run >= 4)
			{
				int			step = run >= 8 ? 8 : 4;

				gabor_run(pad + (size_t) y * pw + x, pw, kern, kr,
						  step, e->resp + (size_t) y * e->w + x);
				run -= step;
				x += step;
			}
			for (; run > 0; run--, x++)
			{
				f[q] = pad + (size_t) y * pw + x;
				g[q] = kern;
				o[q++] = e->resp + (size_t) y * e->w + x;
				if (q == 4)
				{
					gabor_four(f, pw, g, kr, o);
					q = 0;
				}
			}
		}
		/* the last 1-3 pixels of the row: pad with copies of the first */
		if (q > 0)
		{
			double		sink[3];

			for (int i = q; i < 4; i++)
			{
				f[i] = f[0];
				g[i] = g[0];
				o[i] = &sink[i - 1];
			}
			gabor_four(f, pw, g, kr, o);
		}
	}
	free(pad);
	free(kidx);
	free(b.slot);
	free(b.store);
	return MCC_OK;
}

mcc_status
mcc_enh_gabor(mcc_enh *e, double period, double sigma, uint32_t x0, uint32_t y0, uint32_t x1,
			  uint32_t y1, mcc_error *err)
{
	return gabor_filter(e, NULL, period, sigma, x0, y0, x1, y1, err);
}

mcc_status
mcc_enh_gabor_map(mcc_enh *e, const float *pmap, double sigma, uint32_t x0, uint32_t y0,
				  uint32_t x1, uint32_t y1, mcc_error *err)
{
	return gabor_filter(e, pmap, 0, sigma, x0, y0, x1, y1, err);
}
