/*
 * mcc_dp2d_verify.c: enhancement, binarization and verification of
 * fingerprints by elastic matching (mcc_dp2d_verify.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_dp2d_verify.h"

#define N_ORIENT	16
#define PI			3.14159265358979323846

/* Defaults. */
void
mcc_dp2d_prep_default(mcc_dp2d_prep *p)
{
	p->side = 128;
	p->crop = 256;
	p->block = 16;
	p->period = 9.0;
	p->sigma = 4.0;
}

/* Parameter ranges. */
mcc_status
mcc_dp2d_prep_check(const mcc_dp2d_prep *p, mcc_error *err)
{
	if (p->side < 8 || p->side > MCC_DP2D_MAX_SIDE)
		return mcc_error_set(err, MCC_ERR_VALUE, "working side %u is outside 8..%d", p->side,
							 MCC_DP2D_MAX_SIDE);
	if (p->crop < 16 || p->crop > MCC_DP2D_PREP_MAX_SIDE)
		return mcc_error_set(err, MCC_ERR_VALUE, "crop %u is outside 16..%d", p->crop,
							 MCC_DP2D_PREP_MAX_SIDE);
	if (p->block < 4 || p->block > 64)
		return mcc_error_set(err, MCC_ERR_VALUE, "block %u is outside 4..64", p->block);
	if (!(p->period >= 3.0 && p->period <= 30.0))
		return mcc_error_set(err, MCC_ERR_VALUE, "ridge period %g is outside 3..30", p->period);
	if (!(p->sigma >= 1.0 && p->sigma <= 16.0))
		return mcc_error_set(err, MCC_ERR_VALUE, "Gabor sigma %g is outside 1..16", p->sigma);
	return MCC_OK;
}

/*
 * dst = the mean of src over the (2r+1)^2 window around each pixel, the
 * window clipped to the image; integral is scratch of (w+1)(h+1) doubles.
 */
static void
box_mean(const double *src, uint32_t w, uint32_t h, uint32_t r, double *integral, double *dst)
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
 * tiles, thresholded, then a 3 x 3 majority pass. mask gets one byte per
 * pixel.
 */
static void
segment(const mcc_image *raw, uint32_t block, uint8_t *mask)
{
	uint32_t	w = raw->width,
				h = raw->height;
	uint32_t	nx = (w + block - 1) / block,
				ny = (h + block - 1) / block;
	double	   *sd = calloc((size_t) nx * ny * 2, sizeof(double));
	double	   *sm;
	uint8_t    *fg,
			   *fg2;
	double		top = 0,
				thr;

	if (sd == NULL)
	{
		memset(mask, 1, (size_t) w * h);
		return;
	}
	sm = sd + (size_t) nx * ny;
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
	thr = fmax(MCC_DP2D_MIN_STD, 0.25 * top);
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
	free(sd);
}

/* The zero-mean even Gabor kernel of orientation k (normal at k pi / 16). */
static void
gabor_kernel(int k, double period, double sigma, int r, double *g)
{
	double		phi = k * PI / N_ORIENT;
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

/*
 * One dimension of exact area averaging: dst[k] (n_dst values, stride
 * sd) = the mean of src (n_src values, stride ss) over
 * [k n_src / n_dst, (k+1) n_src / n_dst).
 */
static void
resample_1d(const double *src, uint32_t n_src, size_t ss, double *dst, uint32_t n_dst, size_t sd)
{
	double		scale = (double) n_src / n_dst;

	for (uint32_t k = 0; k < n_dst; k++)
	{
		double		lo = k * scale,
					hi = (k + 1) * scale,
					acc = 0;
		uint32_t	i0 = (uint32_t) floor(lo);

		for (uint32_t i = i0; i < n_src && i < hi; i++)
		{
			double		a = fmax(lo, (double) i),
						b = fmin(hi, (double) i + 1);

			if (b > a)
				acc += (b - a) * src[i * ss];
		}
		dst[k * sd] = acc / scale;
	}
}

/* Area-average a c x c window (stride w) to side x side; tmp: side * c doubles. */
static void
resample_2d(const double *src, size_t w, uint32_t c, uint32_t side, double *tmp, double *dst)
{
	for (uint32_t y = 0; y < c; y++)
		resample_1d(src + y * w, c, 1, tmp + (size_t) y * side, side, 1);
	for (uint32_t x = 0; x < side; x++)
		resample_1d(tmp + x, c, side, dst + x, side, side);
}

/* Enhance and binarize a raw print. */
mcc_status
mcc_dp2d_enhance(const mcc_image *raw, const mcc_dp2d_prep *p, uint8_t *out, mcc_error *err)
{
	uint32_t	w,
				h,
				c,
				r = p->block / 2,
				side = p->side;
	size_t		n;
	double	   *mem,
			   *f,
			   *a,
			   *b,
			   *gx,
			   *gy,
			   *integral,
			   *kern,
			   *resp,
			   *fres,
			   *tmp;
	uint8_t    *mask;
	int			kr = (int) ceil(3 * p->sigma),
				ks = 2 * kr + 1;
	double		cx = 0,
				cy = 0,
				cn = 0;
	int64_t		x0,
				y0;
	mcc_status	st;

	if ((st = mcc_dp2d_prep_check(p, err)) != MCC_OK)
		return st;
	w = raw->width;
	h = raw->height;
	if (w < MCC_DP2D_PREP_MIN_SIDE || h < MCC_DP2D_PREP_MIN_SIDE)
		return mcc_error_set(err, MCC_ERR_VALUE, "fingerprint image %ux%u is too small", w, h),
			mcc_error_detail(err, "Each side must be at least %d pixels.", MCC_DP2D_PREP_MIN_SIDE);
	if (w > MCC_DP2D_PREP_MAX_SIDE || h > MCC_DP2D_PREP_MAX_SIDE)
		return mcc_error_set(err, MCC_ERR_LIMIT, "fingerprint image %ux%u is too large", w, h),
			mcc_error_detail(err, "Each side must be at most %d pixels.", MCC_DP2D_PREP_MAX_SIDE);
	n = (size_t) w * h;
	c = p->crop;
	if (c > w)
		c = w;
	if (c > h)
		c = h;
	/*
	 * f, a, b, gx, gy: n each; integral: (w+1)(h+1); kernels; the
	 * resampled response and mask: side^2 each; resampling: side * c;
	 * mask bytes
	 */
	mem = malloc((5 * n + (size_t) (w + 1) * (h + 1) + (size_t) N_ORIENT * ks * ks +
				  2 * (size_t) side * side + (size_t) side * c) * sizeof(double) + n);
	if (mem == NULL)
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for fingerprint enhancement");
	f = mem;
	a = f + n;
	b = a + n;
	gx = b + n;
	gy = gx + n;
	integral = gy + n;
	kern = integral + (size_t) (w + 1) * (h + 1);
	resp = kern + (size_t) N_ORIENT * ks * ks;
	fres = resp + (size_t) side * side;
	tmp = fres + (size_t) side * side;
	mask = (uint8_t *) (tmp + (size_t) side * c);

	/* 1. segmentation */
	segment(raw, p->block, mask);

	/* 2. local normalization: f = (I - mean) / sd */
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
		{
			double		v = raw->pixels[(size_t) y * raw->stride + x];

			a[(size_t) y * w + x] = v;
			b[(size_t) y * w + x] = v * v;
		}
	box_mean(a, w, h, r, integral, gx);
	box_mean(b, w, h, r, integral, gy);
	for (size_t k = 0; k < n; k++)
		f[k] = (a[k] - gx[k]) / sqrt(fmax(gy[k] - gx[k] * gx[k], 1.0));

	/* 3. orientation: Sobel, then doubled-angle averages (twice) */
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
		{
			uint32_t	xm = x ? x - 1 : 0,
						xp = x + 1 < w ? x + 1 : x,
						ym = y ? y - 1 : 0,
						yp = y + 1 < h ? y + 1 : y;
#define F(xx, yy) f[(size_t) (yy) * w + (xx)]
			double		sx = (F(xp, ym) + 2 * F(xp, y) + F(xp, yp)) -
				(F(xm, ym) + 2 * F(xm, y) + F(xm, yp));
			double		sy = (F(xm, yp) + 2 * F(x, yp) + F(xp, yp)) -
				(F(xm, ym) + 2 * F(x, ym) + F(xp, ym));
#undef F

			a[(size_t) y * w + x] = sx * sx - sy * sy;
			b[(size_t) y * w + x] = 2 * sx * sy;
		}
	box_mean(a, w, h, r, integral, gx);
	box_mean(b, w, h, r, integral, gy);
	box_mean(gx, w, h, r, integral, a);
	box_mean(gy, w, h, r, integral, b);
	/* a, b: the averaged (cos 2 phi, sin 2 phi) of the gradient direction phi */

	/* 5 (before 4): the window, centred on the foreground's centroid */
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
			if (mask[(size_t) y * w + x])
			{
				cx += x;
				cy += y;
				cn++;
			}
	if (cn == 0)
	{
		cx = w / 2.0;
		cy = h / 2.0;
	}
	else
	{
		cx /= cn;
		cy /= cn;
	}
	x0 = (int64_t) floor(cx - c / 2.0);
	y0 = (int64_t) floor(cy - c / 2.0);
	x0 = x0 < 0 ? 0 : (x0 > (int64_t) (w - c) ? (int64_t) (w - c) : x0);
	y0 = y0 < 0 ? 0 : (y0 > (int64_t) (h - c) ? (int64_t) (h - c) : y0);

	/* 4. Gabor filtering of the window's foreground into gx */
	for (int k = 0; k < N_ORIENT; k++)
		gabor_kernel(k, p->period, p->sigma, kr, kern + (size_t) k * ks * ks);
	for (uint32_t y = (uint32_t) y0; y < y0 + c; y++)
		for (uint32_t x = (uint32_t) x0; x < x0 + c; x++)
		{
			size_t		at = (size_t) y * w + x;
			double		phi,
						acc = 0;
			int			k;
			const double *g;

			gy[at] = mask[at];
			if (!mask[at])
			{
				gx[at] = 0;
				continue;
			}
			phi = 0.5 * atan2(b[at], a[at]);	/* -pi/2 .. pi/2 */
			k = (int) lround(phi / (PI / N_ORIENT));
			k = ((k % N_ORIENT) + N_ORIENT) % N_ORIENT;
			g = kern + (size_t) k * ks * ks;
			for (int dy = -kr; dy <= kr; dy++)
			{
				int64_t		yy = (int64_t) y + dy;

				if (yy < 0 || yy >= h)
					continue;
				for (int dx = -kr; dx <= kr; dx++)
				{
					int64_t		xx = (int64_t) x + dx;

					if (xx >= 0 && xx < w)
						acc += g[(dy + kr) * ks + dx + kr] * f[(size_t) yy * w + xx];
				}
			}
			gx[at] = acc;
		}

	/* 5. resample the response (gx) and the mask (gy) */
	resample_2d(gx + (size_t) y0 * w + x0, w, c, side, tmp, resp);
	resample_2d(gy + (size_t) y0 * w + x0, w, c, side, tmp, fres);

	/* 6. binarize */
	for (size_t k = 0; k < (size_t) side * side; k++)
		out[k] = (fres[k] >= 0.5 && resp[k] < 0) ? 0 : 255;
	free(mem);
	return MCC_OK;
}

/* Enhance two raw prints and warp the probe onto the reference (see the header). */
mcc_status
mcc_dp2d_enhance_warp(const mcc_image *reference, const mcc_image *probe, const mcc_dp2d_prep *p,
					  int kernel, int threads, uint8_t *work, mcc_dp2d_out *out, mcc_error *err)
{
	mcc_image	ia,
				ib;
	const mcc_image *pa[1] = {&ia},
			   *pb[1] = {&ib};
	mcc_dp2d_request req;
	mcc_status	st;

	if ((st = mcc_dp2d_prep_check(p, err)) != MCC_OK)
		return st;
	ia.width = ia.height = ib.width = ib.height = p->side;
	ia.stride = ib.stride = p->side;
	ia.pixels = work;
	ib.pixels = work + (size_t) p->side * p->side;
	if ((st = mcc_dp2d_enhance(reference, p, ia.pixels, err)) != MCC_OK ||
		(st = mcc_dp2d_enhance(probe, p, ib.pixels, err)) != MCC_OK)
		return st;
	memset(&req, 0, sizeof(req));
	req.npairs = 1;
	req.a = pa;
	req.b = pb;
	req.out = out;
	req.flags = MCC_DP2D_WARP;
	req.threads = threads;
	req.kernel = kernel;
	return mcc_dp2d_run(&req, err);
}

/* Verification of two raw prints. */
mcc_status
mcc_dp2d_verify(const mcc_image *reference, const mcc_image *probe, const mcc_dp2d_prep *p,
				int kernel, int threads, mcc_dp2d_verdict *v, mcc_error *err)
{
	uint8_t    *buf;
	mcc_dp2d_out out;
	mcc_status	st;

	if ((st = mcc_dp2d_prep_check(p, err)) != MCC_OK)
		return st;
	if ((buf = malloc(2 * (size_t) p->side * p->side)) == NULL)
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for fingerprint verification");
	memset(&out, 0, sizeof(out));
	st = mcc_dp2d_enhance_warp(reference, probe, p, kernel, threads, buf, &out, err);
	if (st == MCC_OK)
	{
		v->differences = out.differences;
		v->distance = out.distance;
	}
	free(buf);
	return st;
}
