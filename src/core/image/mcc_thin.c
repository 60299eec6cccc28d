/*
 * mcc_thin.c: Rosenfeld's directional parallel thinning (mcc_thin.h).
 *
 * The image is copied into a buffer with a background border of one pixel,
 * so neighbours never need bounds checks. The foreground pixels are kept in
 * a list that every cycle compacts, so a sub-iteration visits only pixels
 * still set.
 */
#include <stdlib.h>
#include <string.h>

#include "mcc_thin.h"

/*
 * Neighbour bits, clockwise from north: 0 N, 1 NE, 2 E, 3 SE, 4 S, 5 SW,
 * 6 W, 7 NW. The 4-neighbours have even bits.
 */
static int
bit(unsigned m, int k)
{
	return (m >> (k & 7)) & 1;
}

/*
 * Yokoi's 8-connectivity number: the sum over the 4-neighbours k of
 * x'_k - x'_k x'_k+1 x'_k+2 with x' = 1 - x. A pixel is 8-simple (its
 * deletion changes no 8-component of the foreground and no 4-component of
 * the background) exactly when it is 1.
 */
static int
yokoi8(unsigned m)
{
	int			n = 0;

	for (int k = 0; k < 8; k += 2)
	{
		int			a = !bit(m, k),
					b = !bit(m, k + 1),
					c = !bit(m, k + 2);

		n += a - a * b * c;
	}
	return n;
}

/* deletable[m]: 8-simple with at least two foreground neighbours. */
static void
build_table(uint8_t deletable[256])
{
	for (unsigned m = 0; m < 256; m++)
		deletable[m] = yokoi8(m) == 1 && __builtin_popcount(m) >= 2;
}

/* The neighbour mask of p in a buffer of row length W. */
static inline unsigned
neighbours(const uint8_t *b, size_t p, size_t W)
{
	return (unsigned) (b[p - W] != 0) | (unsigned) (b[p - W + 1] != 0) << 1 |
		(unsigned) (b[p + 1] != 0) << 2 | (unsigned) (b[p + W + 1] != 0) << 3 |
		(unsigned) (b[p + W] != 0) << 4 | (unsigned) (b[p + W - 1] != 0) << 5 |
		(unsigned) (b[p - 1] != 0) << 6 | (unsigned) (b[p - W - 1] != 0) << 7;
}

mcc_status
mcc_thin(const uint8_t *in, size_t stride, uint32_t w, uint32_t h, uint8_t *out, mcc_error *err)
{
	size_t		W = (size_t) w + 2,
				n = 0,
				nb;
	uint8_t    *b;
	size_t	   *live,
			   *del;
	uint8_t		deletable[256];
	ptrdiff_t	side[4];
	int			changed = 1;

	if (w == 0 || h == 0)
		return mcc_error_set(err, MCC_ERR_VALUE, "cannot thin an empty image");
	if (stride < w)
		return mcc_error_set(err, MCC_ERR_VALUE, "image stride %zu is below its width %u",
							 stride, w);
	nb = W * ((size_t) h + 2);
	b = calloc(nb, 1);
	live = malloc(2 * (size_t) w * h * sizeof(size_t));
	if (b == NULL || live == NULL)
	{
		free(b);
		free(live);
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for thinning a %ux%u image",
							 w, h);
	}
	del = live + (size_t) w * h;
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
			if (in[(size_t) y * stride + x])
			{
				size_t		p = (y + 1) * W + x + 1;

				b[p] = 1;
				live[n++] = p;
			}
	build_table(deletable);
	/* north, south, east, west */
	side[0] = -(ptrdiff_t) W;
	side[1] = (ptrdiff_t) W;
	side[2] = 1;
	side[3] = -1;

	while (changed)
	{
		size_t		kept = 0;

		changed = 0;
		for (int s = 0; s < 4; s++)
		{
			size_t		nd = 0;

			/* decide on the image as it is, then delete together */
			for (size_t i = 0; i < n; i++)
			{
				size_t		p = live[i];

				if (b[p] && !b[p + side[s]] && deletable[neighbours(b, p, W)])
					del[nd++] = p;
			}
			for (size_t i = 0; i < nd; i++)
				b[del[i]] = 0;
			changed |= nd > 0;
		}
		for (size_t i = 0; i < n; i++)
			if (b[live[i]])
				live[kept++] = live[i];
		n = kept;
	}

	for (uint32_t y = 0; y < h; y++)
		memcpy(out + (size_t) y * w, b + (y + 1) * W + 1, w);
	free(b);
	free(live);
	return MCC_OK;
}
