/*
 * mcc_dp2d_verify.c: enhancement, binarization and verification of
 * fingerprints by elastic matching (mcc_dp2d_verify.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_dp2d_verify.h"
#include "mcc_enhance.h"


/* Defaults. */
void
mcc_dp2d_prep_default(mcc_dp2d_prep *p)
{
	*p = (mcc_dp2d_prep) {.side = 128, .crop = 256, .block = 16, .period = 9.0, .sigma = 4.0};
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
				side = p->side;
	double	   *mem,
			   *resp,
			   *fres,
			   *tmp;
	double		cx = 0,
				cy = 0,
				cn = 0;
	int64_t		x0,
				y0;
	mcc_enh		e;
	mcc_status	st;

	if ((st = mcc_dp2d_prep_check(p, err)) != MCC_OK)
		return st;
	w = raw->width;
	h = raw->height;
	if ((st = mcc_image_check_sides(w, h, MCC_DP2D_PREP_MIN_SIDE, MCC_DP2D_PREP_MAX_SIDE,
									 err)) != MCC_OK)
		return st;
	c = p->crop;
	if (c > w)
		c = w;
	if (c > h)
		c = h;
	/* the resampled response and mask: side^2 each; resampling: side * c */
	mem = malloc((2 * (size_t) side * side + (size_t) side * c) * sizeof(double));
	if (mem == NULL)
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for fingerprint enhancement");
	resp = mem;
	fres = resp + (size_t) side * side;
	tmp = fres + (size_t) side * side;

	/* 1-3. segmentation, normalization, orientation (mcc_enhance.h) */
	if ((st = mcc_enh_init(&e, raw, p->block, 0, err)) != MCC_OK)
	{
		free(mem);
		return st;
	}

	/* 5 (before 4): the window, centred on the foreground's centroid */
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
			if (e.mask[(size_t) y * w + x])
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

	/* 4. Gabor filtering of the window's foreground into e.resp */
	if ((st = mcc_enh_gabor(&e, p->period, p->sigma, (uint32_t) x0, (uint32_t) y0,
							(uint32_t) x0 + c, (uint32_t) y0 + c, err)) != MCC_OK)
	{
		mcc_enh_free(&e);
		free(mem);
		return st;
	}
	/* the window's mask as doubles, for area averaging */
	for (uint32_t y = (uint32_t) y0; y < y0 + c; y++)
		for (uint32_t x = (uint32_t) x0; x < x0 + c; x++)
			e.scratch[(size_t) y * w + x] = e.mask[(size_t) y * w + x];

	/* 5. resample the response and the mask */
	resample_2d(e.resp + (size_t) y0 * w + x0, w, c, side, tmp, resp);
	resample_2d(e.scratch + (size_t) y0 * w + x0, w, c, side, tmp, fres);

	/* 6. binarize */
	for (size_t k = 0; k < (size_t) side * side; k++)
		out[k] = (fres[k] >= 0.5 && resp[k] < 0) ? 0 : 255;
	mcc_enh_free(&e);
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
	mcc_dp2d_request req = {.npairs = 1, .a = pa, .b = pb, .out = out, .flags = MCC_DP2D_WARP,
	.threads = threads, .kernel = kernel};
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
