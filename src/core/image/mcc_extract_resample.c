/*
 * mcc_extract_resample.c: the image at the extraction's working resolution
 * (mcc_extract.h, "Resolution"), and the way back to the image's pixels.
 *
 * A separable tent filter: output pixel u of an axis of factor f (output
 * pixels per input pixel) is centred on input coordinate (u + 0.5) / f - 0.5
 * and weighs the input pixels within R = max(1, 1 / f) of it by
 * 1 - distance / R. Shrinking (f < 1) averages over the input pixels that
 * one output pixel covers (no aliasing of the ridges); enlarging is linear
 * interpolation. Taps outside the image are left out and the weights that
 * remain renormalized. Doubles, no contraction: the same bytes on every CPU.
 */
#include <math.h>
#include <stdlib.h>

#include "mcc_extract_int.h"

/* One axis: the taps of output pixel u (first input index, weights, count). */
typedef struct rs_taps
{
	int			first;
	int			n;
	double	   *w;				/* n weights, summing to 1 */
} rs_taps;

/* Taps of every output pixel of an axis of n_in -> n_out pixels, in one block (NULL: no memory). */
static rs_taps *
axis_taps(uint32_t n_in, uint32_t n_out)
{
	double		f = (double) n_out / n_in;
	double		R = f < 1.0 ? 1.0 / f : 1.0;
	int			span = (int) ceil(2.0 * R) + 1;
	rs_taps    *t = malloc(sizeof(rs_taps) * n_out + sizeof(double) * (size_t) span * n_out);
	double	   *w;

	if (t == NULL)
		return NULL;
	w = (double *) (t + n_out);
	for (uint32_t u = 0; u < n_out; u++)
	{
		double		c = (u + 0.5) / f - 0.5;
		int			lo = (int) ceil(c - R);
		int			hi = (int) floor(c + R);
		double		sum = 0.0;

		if (lo < 0)
			lo = 0;
		if (hi > (int) n_in - 1)
			hi = (int) n_in - 1;
		if (hi < lo)			/* cannot happen for n_in >= 1, but stay safe */
			lo = hi = c < 0 ? 0 : (int) n_in - 1;
		t[u].first = lo;
		t[u].n = 0;
		t[u].w = w + (size_t) u * span;
		for (int k = lo; k <= hi && t[u].n < span; k++)
		{
			double		v = 1.0 - fabs(k - c) / R;

			t[u].w[t[u].n++] = v > 0.0 ? v : 0.0;
			sum += v > 0.0 ? v : 0.0;
		}
		for (int k = 0; k < t[u].n; k++)
			t[u].w[k] = sum > 0.0 ? t[u].w[k] / sum : 1.0 / t[u].n;
	}
	return t;
}

mcc_status
xt_resample(const mcc_image *src, uint32_t w2, uint32_t h2, uint8_t *dst, mcc_error *err)
{
	rs_taps    *tx = axis_taps(src->width, w2);
	rs_taps    *ty = axis_taps(src->height, h2);
	double	   *rows = malloc(sizeof(double) * (size_t) w2 * src->height);

	if (!tx || !ty || !rows)
	{
		free(tx);
		free(ty);
		free(rows);
		return mcc_error_set(err, MCC_ERR_MEMORY,
							 "out of memory for resampling a %ux%u fingerprint image",
							 src->width, src->height);
	}
	/* along x: every input row */
	for (uint32_t y = 0; y < src->height; y++)
	{
		const uint8_t *in = src->pixels + (size_t) y * src->stride;

		for (uint32_t u = 0; u < w2; u++)
		{
			double		s = 0.0;

			for (int k = 0; k < tx[u].n; k++)
				s += tx[u].w[k] * in[tx[u].first + k];
			rows[(size_t) y * w2 + u] = s;
		}
	}
	/* along y, rounded to bytes */
	for (uint32_t v = 0; v < h2; v++)
		for (uint32_t u = 0; u < w2; u++)
		{
			double		s = 0.0;
			long		q;

			for (int k = 0; k < ty[v].n; k++)
				s += ty[v].w[k] * rows[(size_t) (ty[v].first + k) * w2 + u];
			q = lround(s);
			dst[(size_t) v * w2 + u] = (uint8_t) (q < 0 ? 0 : q > 255 ? 255 : q);
		}
	free(tx);
	free(ty);
	free(rows);
	return MCC_OK;
}

/* The input coordinate (pixel index) of working pixel k of an axis n_in -> n_out. */
int
xt_unscale(int k, uint32_t n_in, uint32_t n_out)
{
	long		x = lround((k + 0.5) * n_in / n_out - 0.5);

	return (int) (x < 0 ? 0 : x > (long) n_in - 1 ? (long) n_in - 1 : x);
}

void
xt_image_back(const uint8_t *small, uint32_t w2, uint32_t h2, uint8_t *big, uint32_t w,
			  uint32_t h)
{
	for (uint32_t y = 0; y < h; y++)
	{
		uint32_t	v = (uint32_t) ((y + 0.5) * h2 / h);

		if (v >= h2)
			v = h2 - 1;
		for (uint32_t x = 0; x < w; x++)
		{
			uint32_t	u = (uint32_t) ((x + 0.5) * w2 / w);

			big[(size_t) y * w + x] = small[(size_t) v * w2 + (u < w2 ? u : w2 - 1)];
		}
	}
}
