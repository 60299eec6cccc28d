/*
 * mcc_extract_freq.c: the local ridge period of a print (mcc_extract_int.h),
 * after Hong, Wan and Jain (1998), "Fingerprint image enhancement:
 * algorithm and performance evaluation", Sec. 2.4:
 *   1. for every block of the foreground, the x-signature: the normalized
 *      image averaged along the ridges (a window of FQ_ALONG pixels) at
 *      each of FQ_ACROSS positions across them (the orientation field's
 *      gradient direction at the block's centre);
 *   2. the block's period: the mean spacing of the signature's ridges,
 *      measured between its zero crossings (interpolated, so sub-pixel;
 *      two crossings per period). The signature is first smoothed over
 *      three positions, which keeps pores and dots from adding crossings;
 *   3. valid blocks: at least FQ_MIN_CROSS crossings, a signature that
 *      stands out of the noise (standard deviation at least FQ_MIN_AMP of
 *      the image's), a coherent orientation, and a period inside
 *      FQ_MIN..FQ_MAX pixels (0.2 to 0.8 mm at 500 dpi, wider than any
 *      finger's ridges);
 *   4. invalid foreground blocks get the mean of their valid neighbours,
 *      repeatedly, until every one has a value (the paper's
 *      interpolation); then the map is smoothed (a Gaussian of
 *      FQ_SMOOTH blocks, over foreground blocks only), since the ridge
 *      period varies slowly over a finger;
 *   5. every pixel's period: the block map interpolated bilinearly
 *      between block centres.
 * A print without a single valid block gets `fallback` everywhere.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_extract_int.h"

#define FQ_ACROSS		32		/* signature length across the ridges, pixels */
#define FQ_ALONG		16		/* window along the ridges, pixels */
#define FQ_MIN			4.0		/* valid periods, pixels at 500 dpi */
#define FQ_MAX			16.0
#define FQ_MIN_CROSS	4		/* zero crossings: at least 1.5 periods */
#define FQ_MIN_AMP		0.2		/* signature deviation, in image deviations */
#define FQ_MIN_COH		0.15	/* orientation coherence at the block's centre */
#define FQ_SMOOTH		1.5		/* Gaussian of the block map, blocks */

/* Bilinear sample of the normalized image; 0 with *ok cleared off the image or background. */
static double
sample(const xt_ctx *c, double x, double y, int *ok)
{
	int			x0 = (int) floor(x),
				y0 = (int) floor(y);
	double		fx = x - x0,
				fy = y - y0;
	size_t		w = c->w;
	const double *f = c->e.norm;

	if (x0 < 0 || y0 < 0 || x0 + 1 >= (int) c->w || y0 + 1 >= (int) c->h ||
		!c->fg[(size_t) y0 * w + x0])
	{
		*ok = 0;
		return 0;
	}
	return (1 - fy) * ((1 - fx) * f[y0 * w + x0] + fx * f[y0 * w + x0 + 1]) +
		fy * ((1 - fx) * f[(y0 + 1) * w + x0] + fx * f[(y0 + 1) * w + x0 + 1]);
}

/* The period of the block centred on (cx, cy), or 0 when it is not valid. */
static double
block_period(const xt_ctx *c, int cx, int cy)
{
	size_t		at = (size_t) cy * c->w + cx;
	double		phi = 0.5 * atan2(c->e.os[at], c->e.oc[at]);	/* across the ridges */
	double		ux = cos(phi),
				uy = sin(phi);
	double		sig[FQ_ACROSS],
				sm[FQ_ACROSS],
				mean = 0,
				var = 0,
				first = -1,
				last = -1,
				en = c->e.energy[at];
	int			ncross = 0;

	if (!(en > 1e-9) || hypot(c->e.oc[at], c->e.os[at]) / en < FQ_MIN_COH)
		return 0;
	for (int k = 0; k < FQ_ACROSS; k++)
	{
		double		u = k - (FQ_ACROSS - 1) / 2.0,
					s = 0;
		int			ok = 1;

		for (int d = 0; d < FQ_ALONG; d++)
		{
			double		v = d - (FQ_ALONG - 1) / 2.0;

			s += sample(c, cx + u * ux - v * uy, cy + u * uy + v * ux, &ok);
		}
		if (!ok)
			return 0;			/* the window leaves the print */
		sig[k] = s / FQ_ALONG;
	}
	for (int k = 0; k < FQ_ACROSS; k++)
	{
		sm[k] = (sig[k > 0 ? k - 1 : k] + 2 * sig[k] + sig[k + 1 < FQ_ACROSS ? k + 1 : k]) / 4;
		mean += sm[k];
	}
	mean /= FQ_ACROSS;
	for (int k = 0; k < FQ_ACROSS; k++)
	{
		sm[k] -= mean;
		var += sm[k] * sm[k];
	}
	if (sqrt(var / FQ_ACROSS) < FQ_MIN_AMP)
		return 0;
	for (int k = 0; k + 1 < FQ_ACROSS; k++)
		if ((sm[k] < 0) != (sm[k + 1] < 0))
		{
			double		z = k + sm[k] / (sm[k] - sm[k + 1]);

			if (first < 0)
				first = z;
			last = z;
			ncross++;
		}
	if (ncross < FQ_MIN_CROSS)
		return 0;
	{
		double		t = 2 * (last - first) / (ncross - 1);

		return t >= FQ_MIN && t <= FQ_MAX ? t : 0;
	}
}

/*
 * Fill the invalid foreground blocks (0) of the nx x ny map v from their
 * valid neighbours, rounds of 3 x 3 means; fgb: foreground blocks. Returns
 * 0 when no block is valid.
 */
static int
fill_blocks(double *v, const uint8_t *fgb, double *tmp, int nx, int ny)
{
	int			missing = 1,
				any = 0;

	for (int k = 0; k < nx * ny; k++)
		any |= v[k] > 0;
	if (!any)
		return 0;
	while (missing)
	{
		missing = 0;
		memcpy(tmp, v, (size_t) nx * ny * sizeof(double));
		for (int by = 0; by < ny; by++)
			for (int bx = 0; bx < nx; bx++)
			{
				double		s = 0;
				int			n = 0;

				if (!fgb[by * nx + bx] || tmp[by * nx + bx] > 0)
					continue;
				for (int dy = -1; dy <= 1; dy++)
					for (int dx = -1; dx <= 1; dx++)
					{
						int			yy = by + dy,
									xx = bx + dx;

						if (yy >= 0 && yy < ny && xx >= 0 && xx < nx && tmp[yy * nx + xx] > 0)
						{
							s += tmp[yy * nx + xx];
							n++;
						}
					}
				if (n)
					v[by * nx + bx] = s / n;
				else
					missing = 1;
			}
	}
	/* blocks outside the foreground: the nearest value does for interpolation */
	for (int k = 0; k < nx * ny; k++)
		if (!(v[k] > 0))
			v[k] = -1;
	return 1;
}

/* Gaussian smoothing of the valued blocks (v > 0) into out, weights over valued blocks only. */
static void
smooth_blocks(const double *v, double *out, int nx, int ny)
{
	int			r = (int) ceil(2 * FQ_SMOOTH);

	for (int by = 0; by < ny; by++)
		for (int bx = 0; bx < nx; bx++)
		{
			double		s = 0,
						ws = 0;

			for (int dy = -r; dy <= r; dy++)
				for (int dx = -r; dx <= r; dx++)
				{
					int			yy = by + dy,
								xx = bx + dx;
					double		wt;

					if (yy < 0 || yy >= ny || xx < 0 || xx >= nx || !(v[yy * nx + xx] > 0))
						continue;
					wt = exp(-(dx * dx + dy * dy) / (2 * FQ_SMOOTH * FQ_SMOOTH));
					s += wt * v[yy * nx + xx];
					ws += wt;
				}
			out[by * nx + bx] = ws > 0 ? s / ws : -1;
		}
}

/*
 * Pixel p's place between block centres along an axis of n blocks of b
 * pixels: the blocks before (*lo) and after (*hi), clamped to the map, and
 * the fraction of the way (*f).
 */
static void
axis_cell(uint32_t p, int b, int n, int *lo, int *hi, double *f)
{
	double		g = ((double) p - (b - 1) / 2.0) / b;
	int			i = (int) floor(g);

	*f = g - i;
	*lo = i < 0 ? 0 : (i >= n ? n - 1 : i);
	*hi = i + 1 < 0 ? 0 : (i + 1 >= n ? n - 1 : i + 1);
}

/*
 * The map m (nx blocks a row) between blocks (xa..xb, ya..yb) at fractions
 * fx, fy; corners without a value (far from the print) do not count, and
 * none gives `none`.
 */
static double
bilinear(const double *m, int nx, int xa, int xb, int ya, int yb, double fx, double fy,
		 double none)
{
	double		q[4] = {m[ya * nx + xa], m[ya * nx + xb], m[yb * nx + xa], m[yb * nx + xb]};
	double		wq[4] = {(1 - fx) * (1 - fy), fx * (1 - fy), (1 - fx) * fy, fx * fy};
	double		s = 0,
				ws = 0;

	for (int i = 0; i < 4; i++)
		if (q[i] > 0)
		{
			s += wq[i] * q[i];
			ws += wq[i];
		}
	return ws > 0 ? s / ws : none;
}

mcc_status
xt_ridge_period(xt_ctx *c, double fallback, float *period, double *median_out,
				mcc_error *err)
{
	double		med = fallback,
			   *median = median_out ? median_out : &med;
	int			b = (int) c->p.block,
				nx = ((int) c->w + b - 1) / b,
				ny = ((int) c->h + b - 1) / b,
				nb = nx * ny,
				nvalid = 0;
	double	   *v = malloc((size_t) nb * 3 * sizeof(double) + (size_t) nb);
	double	   *tmp,
			   *sm;
	uint8_t    *fgb;

	if (v == NULL)
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for the ridge period map");
	tmp = v + nb;
	sm = tmp + nb;
	fgb = (uint8_t *) (sm + nb);

	/* 1-3. every block's own period (0: not valid) */
	for (int by = 0; by < ny; by++)
		for (int bx = 0; bx < nx; bx++)
		{
			int			cx = bx * b + b / 2,
						cy = by * b + b / 2;
			size_t		at;

			if (cx >= (int) c->w)
				cx = (int) c->w - 1;
			if (cy >= (int) c->h)
				cy = (int) c->h - 1;
			at = (size_t) cy * c->w + cx;
			fgb[by * nx + bx] = c->fg[at];
			v[by * nx + bx] = c->fg[at] ? block_period(c, cx, cy) : 0;
			if (v[by * nx + bx] > 0)
				tmp[nvalid++] = v[by * nx + bx];
		}
	*median = fallback;
	if (nvalid > 0)
	{
		/* the median of the valid blocks (for tools), by insertion: a few hundred values */
		for (int i = 1; i < nvalid; i++)
			for (int j = i; j > 0 && tmp[j - 1] > tmp[j]; j--)
			{
				double		t = tmp[j];

				tmp[j] = tmp[j - 1];
				tmp[j - 1] = t;
			}
		*median = tmp[nvalid / 2];
	}

	/* 4. interpolation and smoothing */
	if (!fill_blocks(v, fgb, tmp, nx, ny))
	{
		for (size_t k = 0; k < (size_t) c->w * c->h; k++)
			period[k] = (float) fallback;
		free(v);
		return MCC_OK;
	}
	smooth_blocks(v, sm, nx, ny);

	/* 5. per pixel, bilinear between block centres (clamped at the map's edges) */
	for (uint32_t y = 0; y < c->h; y++)
	{
		int			ya,
					yb;
		double		fy;

		axis_cell(y, b, ny, &ya, &yb, &fy);
		for (uint32_t x = 0; x < c->w; x++)
		{
			int			xa,
						xb;
			double		fx;

			axis_cell(x, b, nx, &xa, &xb, &fx);
			period[(size_t) y * c->w + x] = (float) bilinear(sm, nx, xa, xb, ya, yb, fx, fy,
															 *median);
		}
	}
	free(v);
	return MCC_OK;
}
