/*
 * mcc_extract.c: minutiae extraction, the pipeline (mcc_extract.h).
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_cmp.h"
#include "mcc_extract_int.h"
#include "mcc_thin.h"

/* The tunable lengths by name, with their defaults and ranges at 500 dpi. */
typedef struct xp_field
{
	const char *name;
	size_t		off;
	double		def;
	double		lo;
	double		hi;
} xp_field;

#define XP(f, def, lo, hi) {#f, offsetof(mcc_extract_params, f), def, lo, hi}
static const xp_field fields[] = {
	XP(period, 7.5, 3, 30),
	XP(period_ratio, 0.0, 0, 2),
	XP(sigma, 4.0, 1, 16),
	XP(min_blob, 40.0, 0, 10000),
	XP(trace, 10.0, 2, 64),
	XP(short_ridge, 11.0, 0, 200),
	XP(spur, 0.0, 0, 200),
	XP(bridge, 7.0, 0, 200),
	XP(gap, 8.0, 0, 200),
	XP(close, 4.0, 0, 200),
	XP(border, 8.0, 0, 200),
	XP(border_ray, 16.0, 0, 200),
	XP(min_coherence, 0.15, 0, 1),
	XP(min_clarity, 0.25, 0, 2),
	XP(edge_floor, 0.15, 0, 1),
};
#undef XP

void
mcc_extract_params_default(mcc_extract_params *p)
{
	p->dpi = MCC_DEFAULT_DPI;
	p->min_minutiae = 0;
	p->block = 16;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		*(double *) ((char *) p + fields[i].off) = fields[i].def;
}

mcc_status
mcc_extract_params_check(const mcc_extract_params *p, mcc_error *err)
{
	if (p->dpi < MCC_EXTRACT_MIN_DPI || p->dpi > MCC_EXTRACT_MAX_DPI)
		return mcc_error_set(err, MCC_ERR_RANGE,
							 "resolution %u dpi is out of range for minutiae extraction", p->dpi),
			mcc_error_detail(err, "Images from %d to %d dpi are supported.",
							 MCC_EXTRACT_MIN_DPI, MCC_EXTRACT_MAX_DPI);
	if (p->block < 4 || p->block > 32)
		return mcc_error_set(err, MCC_ERR_VALUE, "block %u is outside 4..32", p->block);
	if (p->min_minutiae > MCC_MAX_MINUTIAE)
		return mcc_error_set(err, MCC_ERR_VALUE, "min_minutiae %u is above %d",
							 p->min_minutiae, MCC_MAX_MINUTIAE);
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
	{
		double		v = *(const double *) ((const char *) p + fields[i].off);

		if (!(v >= fields[i].lo && v <= fields[i].hi))
			return mcc_error_set(err, MCC_ERR_VALUE, "%s %g is outside %g..%g",
								 fields[i].name, v, fields[i].lo, fields[i].hi);
	}
	return MCC_OK;
}

mcc_status
mcc_extract_params_set(mcc_extract_params *p, const char *name, double value, mcc_error *err)
{
	if (strcmp(name, "block") == 0)
	{
		p->block = (uint32_t) value;
		return MCC_OK;
	}
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (strcmp(name, fields[i].name) == 0)
		{
			*(double *) ((char *) p + fields[i].off) = value;
			return MCC_OK;
		}
	return mcc_error_set(err, MCC_ERR_VALUE, "unknown extraction parameter \"%s\"", name);
}

/* Better quality first, then raster order. */
static int
by_quality(const void *a, const void *b)
{
	const xt_min *x = a,
			   *y = b;
	int			c = MCC_CMP(y->quality, x->quality);

	c = MCC_CMP_THEN(c, x->y, y->y);
	return MCC_CMP_THEN(c, x->x, y->x);
}

static int
by_position(const void *a, const void *b)
{
	const xt_min *x = a,
			   *y = b;
	int			c = MCC_CMP(x->y, y->y);

	return MCC_CMP_THEN(c, x->x, y->x);
}

/* The mean absolute Gabor response to perfect ridges of the kernel's period (unit deviation). */
static double
perfect_response(double period, double sigma)
{
	double		unit = mcc_enh_gabor_gain(period, sigma) * sqrt(2.0) * 2.0 / 3.14159265358979323846;

	return unit > 0 ? unit : 1;
}

/*
 * Ridge clarity in e.scratch: the mean absolute Gabor response over a
 * block, relative to what perfect ridges give (1; noise and blur give
 * less). The normalized image is not needed any more and holds |resp|.
 */
static void
clarity_map(xt_ctx *c)
{
	size_t		n = (size_t) c->w * c->h;

	if (c->gperiod == NULL)
	{
		double		unit = perfect_response(c->p.period, c->p.sigma);

		for (size_t k = 0; k < n; k++)
			c->e.norm[k] = fabs(c->e.resp[k]) / unit;
	}
	else
	{
		/* each pixel against its own kernel's gain (per period bin) */
		double		unit[MCC_ENH_PERIOD_BINS] = {0};

		for (size_t k = 0; k < n; k++)
		{
			int			bin = mcc_enh_period_bin(c->gperiod[k]);

			if (unit[bin] == 0)
				unit[bin] = perfect_response(mcc_enh_bin_period(bin), c->p.sigma);
			c->e.norm[k] = fabs(c->e.resp[k]) / unit[bin];
		}
	}
	mcc_enh_box_mean(c->e.norm, c->w, c->h, c->e.block / 2, c->e.integral, c->e.scratch);
}

static void
free_ctx(xt_ctx *c)
{
	mcc_enh_free(&c->e);
	free(c->fg);
	free(c->gperiod);
	free(c->m);
}

/* Copy a 0/1 map to an image: one -> on, zero -> off. */
static void
put_image(uint8_t *dst, const uint8_t *src, size_t n, uint8_t on, uint8_t off)
{
	if (dst)
		for (size_t k = 0; k < n; k++)
			dst[k] = src[k] ? on : off;
}

/*
 * The pipeline on an image at the working resolution (params->dpi is
 * MCC_EXTRACT_WORK_DPI; sides checked by the caller): every minutia in out,
 * without the min_minutiae check.
 */
static mcc_status
extract_working(const mcc_image *img, const mcc_extract_params *params, mcc_minutiae *out,
				mcc_extract_stats *stats, const mcc_extract_images *images, mcc_error *err)
{
	xt_ctx		c;
	mcc_extract_stats st;
	uint32_t	w = img->width,
				h = img->height;
	size_t		n = (size_t) w * h;
	mcc_status	rc;
	int			kept = 0;

	memset(&c, 0, sizeof(c));
	memset(&st, 0, sizeof(st));
	c.w = w;
	c.h = h;
	c.p = *params;

	/* 1. the ridge field */
	if ((rc = mcc_enh_init(&c.e, img, c.p.block, 1, err)) != MCC_OK)
		return rc;
	/* fg, bin, skel: bytes; dist: floats; idx, stamp, queue: 4 bytes each */
	c.fg = malloc(n * (3 + sizeof(float) + 3 * sizeof(int32_t)) + 4);
	if (c.fg == NULL)
	{
		free_ctx(&c);
		return mcc_error_set(err, MCC_ERR_MEMORY,
							 "out of memory for minutiae extraction from a %ux%u image", w, h);
	}
	c.bin = c.fg + n;
	c.skel = c.bin + n;
	c.dist = (float *) (c.skel + n + ((4 - (3 * n) % 4) % 4));
	c.idx = (int32_t *) (c.dist + n);
	c.stamp = (uint32_t *) (c.idx + n);
	c.queue = (int32_t *) (c.stamp + n);
	memset(c.idx, 0, n * sizeof(int32_t));
	memset(c.stamp, 0, n * sizeof(uint32_t));

	/* 2. the foreground */
	c.img = img;
	st.foreground = xt_foreground(&c);
	put_image(images ? images->mask : NULL, c.fg, n, 255, 0);
	if (st.foreground == 0)
	{
		free_ctx(&c);
		return mcc_error_set(err, MCC_ERR_VALUE, "no fingerprint ridges found in the image"),
			mcc_error_detail(err, "Every %u x %u tile is flatter than a standard deviation of %g "
							 "grey levels or than a quarter of the most contrasted one.",
							 c.p.block, c.p.block, MCC_ENH_MIN_STD);
	}
	memcpy(c.e.mask, c.fg, n);

	/* 3. Gabor filtering (at the local ridge period, if asked) and binarization */
	if (c.p.period_ratio > 0)
	{
		if ((c.gperiod = malloc(n * sizeof(float))) == NULL)
			rc = mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for the ridge period map");
		else
			rc = xt_ridge_period(&c, c.p.period / c.p.period_ratio, c.gperiod, NULL, err);
		if (rc != MCC_OK)
		{
			free_ctx(&c);
			return rc;
		}
		for (size_t k = 0; k < n; k++)
			c.gperiod[k] = (float) (c.gperiod[k] * c.p.period_ratio);
		rc = mcc_enh_gabor_map(&c.e, c.gperiod, c.p.sigma, 0, 0, w, h, err);
	}
	else
		rc = mcc_enh_gabor(&c.e, c.p.period, c.p.sigma, 0, 0, w, h, err);
	if (rc != MCC_OK)
	{
		free_ctx(&c);
		return rc;
	}
	for (size_t k = 0; k < n; k++)
		c.bin[k] = c.fg[k] && c.e.resp[k] < 0;
	clarity_map(&c);

	/* 4. small fragments and holes */
	xt_clean_blobs(&c);
	put_image(images ? images->ridges : NULL, c.bin, n, 0, 255);

	/* 5. thinning */
	if ((rc = mcc_thin(c.bin, w, w, h, c.skel, err)) != MCC_OK)
	{
		free_ctx(&c);
		return rc;
	}
	put_image(images ? images->skeleton : NULL, c.skel, n, 0, 255);

	/* 6-8. minutiae */
	if ((rc = xt_minutiae(&c, &st, err)) != MCC_OK)
	{
		free_ctx(&c);
		return rc;
	}

	/* 9. the best MCC_MAX_MINUTIAE, in raster order */
	for (int i = 0; i < c.nm; i++)
		if (!c.m[i].removed)
			c.m[kept++] = c.m[i];
	/* c.m is NULL when no candidate was found: qsort must not see it */
	if (kept > 1)
		qsort(c.m, (size_t) kept, sizeof(xt_min), by_quality);
	if (kept > MCC_MAX_MINUTIAE)
	{
		st.capped = (uint32_t) kept - MCC_MAX_MINUTIAE;
		kept = MCC_MAX_MINUTIAE;
	}
	if (kept > 1)
		qsort(c.m, (size_t) kept, sizeof(xt_min), by_position);

	memset(out, 0, sizeof(*out));
	out->width = (uint16_t) w;
	out->height = (uint16_t) h;
	out->dpi = (uint16_t) params->dpi;
	out->count = (uint16_t) kept;
	for (int i = 0; i < kept; i++)
	{
		mcc_minutia *m = &out->m[i];

		m->x = (int16_t) c.m[i].x;
		m->y = (int16_t) c.m[i].y;
		m->theta = mcc_angle_normalize(c.m[i].theta);
		m->type = (uint8_t) c.m[i].type;
		m->quality = (uint8_t) (1 + lround(99 * fmin(1.0, fmax(0.0, c.m[i].quality))));
	}
	if (stats)
		*stats = st;
	free_ctx(&c);
	return MCC_OK;
}

/* Side n at dpi, in pixels at the working resolution (at least 1). */
static uint32_t
working_side(uint32_t n, uint32_t dpi)
{
	long		v = lround((double) n * MCC_EXTRACT_WORK_DPI / dpi);

	return (uint32_t) (v < 1 ? 1 : v);
}

/* Check the sides of a w x h image, and of the same image at the working resolution. */
static mcc_status
check_sides(uint32_t w, uint32_t h, uint32_t w2, uint32_t h2, uint32_t dpi, mcc_error *err)
{
	mcc_status	st = mcc_image_check_sides(w, h, MCC_EXTRACT_MIN_SIDE, MCC_EXTRACT_MAX_SIDE, err);

	if (st != MCC_OK)
		return st;
	/* the limits hold at the working resolution too (a 250-dpi image doubles) */
	if (w2 < MCC_EXTRACT_MIN_SIDE || h2 < MCC_EXTRACT_MIN_SIDE)
		return mcc_error_set(err, MCC_ERR_VALUE, "fingerprint image %ux%u is too small at %u dpi",
							 w, h, dpi),
			mcc_error_detail(err, "Each side must be at least %d pixels at %d dpi (this image: "
							 "%ux%u).", MCC_EXTRACT_MIN_SIDE, MCC_EXTRACT_WORK_DPI, w2, h2);
	if (w2 > MCC_EXTRACT_MAX_SIDE || h2 > MCC_EXTRACT_MAX_SIDE)
		return mcc_error_set(err, MCC_ERR_LIMIT, "fingerprint image %ux%u is too large at %u dpi",
							 w, h, dpi),
			mcc_error_detail(err, "Each side must be at most %d pixels at %d dpi (this image: "
							 "%ux%u).", MCC_EXTRACT_MAX_SIDE, MCC_EXTRACT_WORK_DPI, w2, h2);
	return MCC_OK;
}

mcc_status
mcc_extract_minutiae(const mcc_image *img, const mcc_extract_params *params, mcc_minutiae *out,
					 mcc_extract_stats *stats, const mcc_extract_images *images, mcc_error *err)
{
	uint32_t	w = img->width,
				h = img->height,
				w2,
				h2;
	mcc_extract_params p;
	mcc_status	rc;

	if ((rc = mcc_extract_params_check(params, err)) != MCC_OK)
		return rc;
	w2 = params->dpi == MCC_EXTRACT_WORK_DPI ? w : working_side(w, params->dpi);
	h2 = params->dpi == MCC_EXTRACT_WORK_DPI ? h : working_side(h, params->dpi);
	if ((rc = check_sides(w, h, w2, h2, params->dpi, err)) != MCC_OK)
		return rc;
	p = *params;
	p.dpi = MCC_EXTRACT_WORK_DPI;
	if (params->dpi == MCC_EXTRACT_WORK_DPI)
		rc = extract_working(img, &p, out, stats, images, err);
	else
	{
		/* the image at the working resolution, then the minutiae back in its pixels */
		size_t		n2 = (size_t) w2 * h2;
		uint8_t    *buf = malloc(n2 * 4);
		mcc_image	small;
		mcc_extract_images im2;

		if (buf == NULL)
			return mcc_error_set(err, MCC_ERR_MEMORY,
								 "out of memory for minutiae extraction from a %ux%u image", w, h);
		small.width = w2;
		small.height = h2;
		small.stride = w2;
		small.pixels = buf;
		im2.mask = images && images->mask ? buf + n2 : NULL;
		im2.ridges = images && images->ridges ? buf + 2 * n2 : NULL;
		im2.skeleton = images && images->skeleton ? buf + 3 * n2 : NULL;
		if ((rc = xt_resample(img, w2, h2, buf, err)) == MCC_OK)
			rc = extract_working(&small, &p, out, stats, &im2, err);
		if (rc == MCC_OK)
		{
			for (int i = 0; i < out->count; i++)
			{
				out->m[i].x = (int16_t) xt_unscale(out->m[i].x, w, w2);
				out->m[i].y = (int16_t) xt_unscale(out->m[i].y, h, h2);
			}
			out->width = (uint16_t) w;
			out->height = (uint16_t) h;
			out->dpi = (uint16_t) params->dpi;
			if (im2.mask)
				xt_image_back(im2.mask, w2, h2, images->mask, w, h);
			if (im2.ridges)
				xt_image_back(im2.ridges, w2, h2, images->ridges, w, h);
			if (im2.skeleton)
				xt_image_back(im2.skeleton, w2, h2, images->skeleton, w, h);
		}
		free(buf);
	}
	if (rc != MCC_OK)
		return rc;
	if (params->min_minutiae && (uint32_t) out->count < params->min_minutiae)
		return mcc_error_set(err, MCC_ERR_VALUE, "too few minutiae in the fingerprint image"),
			mcc_error_detail(err, "Found %d, at least %u are needed.", out->count,
							 params->min_minutiae);
	return MCC_OK;
}
