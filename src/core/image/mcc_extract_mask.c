/*
 * mcc_extract_mask.c: the foreground of a print, the distance of every
 * pixel to the background, and the removal of small ridge fragments and
 * valley holes (mcc_extract_int.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_extract_int.h"

/*
 * Flood fill from `start` over the pixels p of a w x h map with
 * map[p] == want (conn 4 or 8), marking them in seen and listing them in
 * queue; returns their count and, in *edge, whether the region touches the
 * image edge or a pixel where stop (may be NULL) is 0.
 */
static uint32_t
flood(const uint8_t *map, uint8_t want, const uint8_t *stop, int32_t w, int32_t h,
	  int conn, int32_t start, uint8_t *seen, int32_t *queue, int *edge)
{
	static const int dx8[8] = {0, 1, 0, -1, 1, 1, -1, -1};
	static const int dy8[8] = {-1, 0, 1, 0, -1, 1, 1, -1};
	uint32_t	head = 0,
				tail = 0;

	*edge = 0;
	seen[start] = 1;
	queue[tail++] = start;
	while (head < tail)
	{
		int32_t		p = queue[head++],
					x = p % w,
					y = p / w;
		int			inner = x > 0 && y > 0 && x < w - 1 && y < h - 1;

		for (int k = 0; k < conn; k++)
		{
			int32_t		q;

			if (!inner)
			{
				int32_t		xx = x + dx8[k],
							yy = y + dy8[k];

				if (xx < 0 || yy < 0 || xx >= w || yy >= h)
				{
					*edge = 1;
					continue;
				}
			}
			q = p + dy8[k] * w + dx8[k];
			if (stop && !stop[q])
				*edge = 1;
			if (map[q] == want && !seen[q])
			{
				seen[q] = 1;
				queue[tail++] = q;
			}
		}
	}
	return tail;
}

/* Chamfer 3-4 distance to the nearest background pixel, outside counting as one. */
static void
distances(xt_ctx *c)
{
	int32_t		w = (int32_t) c->w,
				h = (int32_t) c->h;
	uint16_t   *d = (uint16_t *) c->queue;	/* scratch: w h / 2 ints */

#define D(x, y) (((x) < 0 || (y) < 0 || (x) >= w || (y) >= h) ? 0 : d[(y) * w + (x)])
	for (int32_t y = 0; y < h; y++)
		for (int32_t x = 0; x < w; x++)
		{
			uint32_t	v = 60000;

			if (!c->fg[y * w + x])
				v = 0;
			else
			{
				uint32_t	a = D(x - 1, y) + 3u,
							b = D(x, y - 1) + 3u,
							e = D(x - 1, y - 1) + 4u,
							f = D(x + 1, y - 1) + 4u;

				v = a < v ? a : v;
				v = b < v ? b : v;
				v = e < v ? e : v;
				v = f < v ? f : v;
			}
			d[y * w + x] = (uint16_t) v;
		}
	for (int32_t y = h - 1; y >= 0; y--)
		for (int32_t x = w - 1; x >= 0; x--)
		{
			uint32_t	v = d[y * w + x],
						a = D(x + 1, y) + 3u,
						b = D(x, y + 1) + 3u,
						e = D(x + 1, y + 1) + 4u,
						f = D(x - 1, y + 1) + 4u;

			v = a < v ? a : v;
			v = b < v ? b : v;
			v = e < v ? e : v;
			v = f < v ? f : v;
			d[y * w + x] = (uint16_t) v;
		}
#undef D
	for (size_t k = 0; k < (size_t) w * h; k++)
		c->dist[k] = d[k] / 3.0f;
}

/*
 * The tile mask refined to pixels at the print's edge. A tile that the
 * edge crosses is kept whole, so up to a tile of flat background (or the
 * bright, ridgeless margin of a pressed print) lies inside the mask; the
 * Gabor filter draws ridges there, which hides the endings of the ridges
 * cut by the edge from the border rules and puts minutiae where there is
 * no print. A pixel stays foreground where the grey levels' standard
 * deviation over the local normalization's window (radius block / 2, two
 * ridge periods across at 500 dpi) is at least p.edge_floor times its
 * 95th percentile over the tile mask (the print's well-contrasted ridges).
 * Scratch: e.resp and e.scratch, which the Gabor step fills later.
 */
static void
refine_edge(xt_ctx *c)
{
	size_t		n = (size_t) c->w * c->h,
				cnt = 0;
	uint32_t	hist[512] = {0},
				acc = 0;
	double	   *m = c->e.resp,
			   *sd = c->e.scratch,
			   thr;
	int			b = 0;

	if (!(c->p.edge_floor > 0))
		return;
	/* the grey levels, then their squares, through sd */
	for (uint32_t y = 0; y < c->h; y++)
		for (uint32_t x = 0; x < c->w; x++)
			sd[(size_t) y * c->w + x] = c->img->pixels[(size_t) y * c->img->stride + x];
	mcc_enh_box_mean(sd, c->w, c->h, c->e.block / 2, c->e.integral, m);
	for (size_t k = 0; k < n; k++)
		sd[k] *= sd[k];
	mcc_enh_box_mean(sd, c->w, c->h, c->e.block / 2, c->e.integral, sd);	/* in place: the sums are taken first */
	for (size_t k = 0; k < n; k++)
	{
		sd[k] = sqrt(fmax(sd[k] - m[k] * m[k], 0.0));
		if (c->fg[k])
		{
			/* quarter grey-level bins up to 128 */
			hist[(int) fmin(511.0, sd[k] * 4)]++;
			cnt++;
		}
	}
	if (cnt > 0)
	{
		while (b < 511 && (acc += hist[b]) < 0.95 * (double) cnt)
			b++;
		thr = c->p.edge_floor * (b + 0.5) / 4;
		for (size_t k = 0; k < n; k++)
			if (c->fg[k] && sd[k] < thr)
				c->fg[k] = 0;
	}
	memset(m, 0, n * sizeof(double));
}

/*
 * The foreground on the tile grid of the segmentation (e.mask is constant
 * on each block x block tile): holes (background tiles that do not reach
 * the edge) filled, the largest 8-connected component kept; then expanded
 * to pixels, with the distances.
 */
uint32_t
xt_foreground(xt_ctx *c)
{
	int32_t		w = (int32_t) c->w,
				h = (int32_t) c->h,
				b = (int32_t) c->e.block,
				nx = (w + b - 1) / b,
				ny = (h + b - 1) / b,
				nt = nx * ny;
	uint8_t    *tile = (uint8_t *) c->stamp,	/* scratch: nt + nt bytes */
			   *seen = tile + nt;
	uint32_t	best = 0,
				count = 0;
	int32_t		best_start = -1;
	int			edge;

	for (int32_t ty = 0; ty < ny; ty++)
		for (int32_t tx = 0; tx < nx; tx++)
			tile[ty * nx + tx] = c->e.mask[(size_t) ty * b * w + (size_t) tx * b] != 0;

	memset(seen, 0, (size_t) (uint32_t) nt);
	for (int32_t k = 0; k < nt; k++)
		if (!tile[k] && !seen[k])
		{
			uint32_t	cnt = flood(tile, 0, NULL, nx, ny, 4, k, seen, c->queue, &edge);

			if (!edge)
				for (uint32_t i = 0; i < cnt; i++)
					tile[c->queue[i]] = 1;
		}
	memset(seen, 0, (size_t) (uint32_t) nt);
	for (int32_t k = 0; k < nt; k++)
		if (tile[k] && !seen[k])
		{
			uint32_t	cnt = flood(tile, 1, NULL, nx, ny, 8, k, seen, c->queue, &edge);

			if (cnt > best)
			{
				best = cnt;
				best_start = k;
			}
		}
	memset(seen, 0, (size_t) (uint32_t) nt);
	if (best_start >= 0)
		flood(tile, 1, NULL, nx, ny, 8, best_start, seen, c->queue, &edge);
	for (int32_t y = 0; y < h; y++)
		for (int32_t x = 0; x < w; x++)
		{
			uint8_t		v = seen[(y / b) * nx + x / b];

			c->fg[(size_t) y * w + x] = v;
			count += v;
		}
	refine_edge(c);
	count = 0;
	for (size_t k = 0; k < (size_t) w * h; k++)
		count += c->fg[k];
	memset(c->stamp, 0, (size_t) w * h * sizeof(uint32_t));
	distances(c);
	return count;
}

void
xt_clean_blobs(xt_ctx *c)
{
	size_t		n = (size_t) c->w * c->h;
	uint8_t    *seen = (uint8_t *) c->stamp;
	uint32_t	min = (uint32_t) c->p.min_blob;
	int			edge;

	memset(seen, 0, n);
	for (size_t k = 0; k < n; k++)
		if (c->bin[k] && !seen[k])
		{
			uint32_t	cnt = flood(c->bin, 1, NULL, (int32_t) c->w, (int32_t) c->h, 8,
									(int32_t) k, seen, c->queue, &edge);

			if (cnt < min)
				for (uint32_t i = 0; i < cnt; i++)
					c->bin[c->queue[i]] = 0;
		}
	memset(seen, 0, n);
	for (size_t k = 0; k < n; k++)
		if (!c->bin[k] && c->fg[k] && !seen[k])
		{
			uint32_t	cnt = flood(c->bin, 0, c->fg, (int32_t) c->w, (int32_t) c->h, 4,
									(int32_t) k, seen, c->queue, &edge);

			if (cnt < min && !edge)
				for (uint32_t i = 0; i < cnt; i++)
					c->bin[c->queue[i]] = 1;
		}
	memset(c->stamp, 0, n * sizeof(uint32_t));
}
