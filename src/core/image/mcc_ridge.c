/*
 * mcc_ridge.c: the restoration of ridge continuity of paper 003, Sec. 8.1
 * (mcc_ridge.h says what each phase does).
 */
#include "mcc_ridge.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_cmp.h"
#include "mcc_thin.h"

#define RIDGE_PI	3.14159265358979323846
#define BLOCK		4			/* the paper's sub-blocks */
#define BANDS		13			/* slope bands of 15 degrees (the end ones half as wide) */
#define NO_SLOPE	14			/* Eq. 13's 14th label */
#define OUT_STEPS	3			/* a line end's direction: from this many pixels back */
#define JOIN_ANGLE	45.0		/* a gap runs along an end within this (degrees) */
#define OPPOSITE	45.0		/* labels further apart are "opposite" (degrees) */

static const int dx8[8] = {0, 1, 1, 1, 0, -1, -1, -1};
static const int dy8[8] = {-1, -1, 0, 1, 1, 1, 0, -1};

/*
 * Defaults for a ridge period (pixels): gaps up to two thirds of a period
 * joined; filling, the removal of small components and of spurs off. On
 * FVC2002 each of those phases raised the overall algorithm's EER
 * (docs/elastic-matching.md), so they stay available but unused.
 */
void
mcc_ridge_opts_default(mcc_ridge_opts *o, double period)
{
	long		gap = lround(2.0 * period / 3.0);

	o->fill_max = 0;
	o->min_component = 1;
	o->spur = 0;
	o->gap = gap > 1 ? (int) gap : 1;
	o->alpha = 0.5;
}

/* The working state of one restoration. */
typedef struct ridge
{
	uint32_t	w;
	uint32_t	h;
	uint8_t    *sk;				/* skeleton, 0/1 */
	int32_t    *queue;			/* w * h */
	uint8_t    *mark;			/* w * h scratch */
} ridge;

/* Whether (x, y) is inside the image. */
static int
inside(const ridge *r, int x, int y)
{
	return x >= 0 && y >= 0 && x < (int) r->w && y < (int) r->h;
}

/* Skeleton neighbours of pixel i. */
static int
degree(const ridge *r, int32_t i)
{
	int			x = i % (int) r->w;
	int			y = i / (int) r->w;
	int			n = 0;

	for (int d = 0; d < 8; d++)
		if (inside(r, x + dx8[d], y + dy8[d]) && r->sk[(y + dy8[d]) * (int) r->w + x + dx8[d]])
			n++;
	return n;
}

/*
 * Flood the component of pixel s: the pixels whose px is nonzero (on = 1)
 * or zero (on = 0), 4-connected (step 2 through dx8/dy8) or 8-connected
 * (step 1), into r->queue, each marked in r->mark. Returns its size;
 * *border says whether it touches the image border.
 */
static int
flood(ridge *r, const uint8_t *px, int on, int step, size_t s, int *border)
{
	int			head = 0;
	int			tail = 0;

	*border = 0;
	r->mark[s] = 1;
	r->queue[tail++] = (int32_t) s;
	while (head < tail)
	{
		int32_t		i = r->queue[head++];
		int			x = i % (int) r->w;
		int			y = i / (int) r->w;

		if (x == 0 || y == 0 || x == (int) r->w - 1 || y == (int) r->h - 1)
			*border = 1;
		for (int d = 0; d < 8; d += step)
		{
			int			u = x + dx8[d];
			int			v = y + dy8[d];
			int32_t		j = v * (int) r->w + u;

			if (inside(r, u, v) && (px[j] != 0) == on && !r->mark[j])
			{
				r->mark[j] = 1;
				r->queue[tail++] = j;
			}
		}
	}
	return tail;
}

/*
 * Flip the small components of px's pixels that are on (nonzero: on = 1,
 * zero: on = 0), connected as flood's step says: each of at most max
 * pixels (and, with interior, touching no border) becomes !on. Returns
 * the pixels flipped. Phase 1 (fill the holes): the 4-connected valleys
 * of img, interior ones of at most fill_max pixels. Phase 3: the
 * 8-connected skeleton components of fewer than min_component pixels.
 */
static int
flip_small(ridge *r, uint8_t *px, int on, int step, int max, int interior)
{
	int			flipped = 0;
	size_t		n = (size_t) r->w * r->h;

	memset(r->mark, 0, n);
	for (size_t s = 0; s < n; s++)
	{
		int			border;
		int			tail;

		if ((px[s] != 0) != on || r->mark[s])
			continue;
		tail = flood(r, px, on, step, s, &border);
		if (!(interior && border) && tail <= max)
		{
			for (int k = 0; k < tail; k++)
				px[r->queue[k]] = !on;
			flipped += tail;
		}
	}
	return flipped;
}

/*
 * The next pixel of a chain from cur (coming from prev): the one skeleton
 * neighbour that is not prev, or -1 when there is none or more than one.
 */
static int32_t
chain_next(const ridge *r, int32_t prev, int32_t cur)
{
	int			x = cur % (int) r->w;
	int			y = cur / (int) r->w;
	int32_t		next = -1;

	for (int d = 0; d < 8; d++)
	{
		int			u = x + dx8[d];
		int			v = y + dy8[d];
		int32_t		j = v * (int) r->w + u;

		if (!inside(r, u, v) || !r->sk[j] || j == prev)
			continue;
		if (next >= 0)
			return -1;
		next = j;
	}
	return next;
}

/*
 * Phase 4: cut spurs. From every line end, follow the chain; if a junction
 * comes within spur pixels, the pixels before it go. Decided on the
 * skeleton as it is, then applied.
 */
static int
cut_spurs(ridge *r, int spur)
{
	size_t		n = (size_t) r->w * r->h;
	int			cut = 0;

	memset(r->mark, 0, n);
	for (size_t s = 0; s < n; s++)
	{
		int32_t		path[64];
		int			len = 0;
		int32_t		prev = -1;
		int32_t		cur = (int32_t) s;

		if (!r->sk[s] || degree(r, (int32_t) s) != 1)
			continue;
		while (len <= spur && len < 64)
		{
			int			deg = degree(r, cur);

			if (deg >= 3)
			{
				for (int k = 0; k < len; k++)
					r->mark[path[k]] = 1;
				break;
			}
			if (len > 0 && deg != 2)
				break;			/* another line end: a short segment, not a spur */
			path[len++] = cur;
			{
				int32_t		next = chain_next(r, prev, cur);

				if (next < 0)
					break;
				prev = cur;
				cur = next;
			}
		}
	}
	for (size_t s = 0; s < n; s++)
		if (r->mark[s])
		{
			r->sk[s] = 0;
			cut++;
		}
	return cut;
}

/* A run of the skeleton: its pixels are pix[first .. first + len). */
typedef struct run
{
	int32_t		first;
	int32_t		len;
	int			band;			/* 1..13 */
} run;

/* A (sub-block, band, length) entry of a run passing through a sub-block. */
typedef struct entry
{
	int32_t		block;
	int16_t		band;
	int32_t		len;
} entry;

static int
cmp_entry(const void *a, const void *b)
{
	const entry *x = a;
	const entry *y = b;
	int			c = MCC_CMP(x->block, y->block);

	c = MCC_CMP_THEN(c, x->band, y->band);
	return MCC_CMP_THEN(c, x->len, y->len);
}

/* The slope band (1..13) of the chord from pixel a to pixel b. */
static int
slope_band(const ridge *r, int32_t a, int32_t b)
{
	double		dx = (double) (b % (int) r->w - a % (int) r->w);
	double		dy = (double) (b / (int) r->w - a / (int) r->w);
	double		deg = atan2(-dy, dx) * 180.0 / RIDGE_PI;

	if (deg > 90.0)
		deg -= 180.0;
	if (deg <= -90.0)
		deg += 180.0;
	if (deg < -82.5)
		return 1;
	if (deg >= 82.5)
		return BANDS;
	return 2 + (int) floor((deg + 82.5) / 15.0);
}

/* The slope of a label, degrees (bands 1 and 13 are both vertical). */
static double
label_angle(int k)
{
	return k == BANDS ? -90.0 : -90.0 + 15.0 * (k - 1);
}

/* Whether two labels are of opposite slope. */
static int
opposite(int a, int b)
{
	double		d = fabs(label_angle(a) - label_angle(b));

	if (d > 90.0)
		d = 180.0 - d;
	return d > OPPOSITE;
}

/*
 * Cut the skeleton into runs: chains between nodes (pixels with other than
 * two neighbours), and closed loops. pix receives the pixels of every run
 * one after the other; returns the run count, or -1 when out of memory.
 */
static int
trace_runs(ridge *r, int32_t *pix, run **runs_out)
{
	size_t		n = (size_t) r->w * r->h;
	int			cap = 256;
	int			nr = 0;
	int32_t		used = 0;
	run		   *runs = malloc(sizeof(run) * cap);

	if (runs == NULL)
		return -1;
	memset(r->mark, 0, n);
	for (int pass = 0; pass < 2; pass++)
		for (size_t s = 0; s < n; s++)
		{
			int			x = (int) (s % r->w);
			int			y = (int) (s / r->w);
			int			deg;

			if (!r->sk[s])
				continue;
			deg = degree(r, (int32_t) s);
			/* pass 0: runs from nodes; pass 1: loops left over */
			if (pass == 0 ? deg == 2 : (deg != 2 || r->mark[s]))
				continue;
			for (int d = 0; d < (pass == 0 ? 8 : 1); d++)
			{
				int32_t		start = (int32_t) s;
				int32_t		prev = start;
				int32_t		cur;
				int32_t		first = used;

				if (pass == 0)
				{
					int			u = x + dx8[d];
					int			v = y + dy8[d];

					if (!inside(r, u, v) || !r->sk[v * (int) r->w + u])
						continue;
					cur = v * (int) r->w + u;
					if (degree(r, cur) != 2 ? cur < start : r->mark[cur])
						continue;	/* a node-node run is traced once, a chain once */
				}
				else
				{
					/* a loop: any neighbour will do, the chain comes back */
					cur = -1;
					for (int e = 0; e < 8 && cur < 0; e++)
					{
						int			u = x + dx8[e];
						int			v = y + dy8[e];

						if (inside(r, u, v) && r->sk[v * (int) r->w + u])
							cur = v * (int) r->w + u;
					}
					r->mark[start] = 1;
				}
				pix[used++] = start;
				while (cur >= 0 && cur != start)
				{
					pix[used++] = cur;
					if (degree(r, cur) != 2)
						break;
					r->mark[cur] = 1;
					{
						int32_t		next = chain_next(r, prev, cur);

						prev = cur;
						cur = next;
						if (next >= 0 && r->mark[next] && degree(r, next) == 2)
							break;	/* back into the loop's start */
					}
				}
				if (nr == cap)
				{
					run		   *t = realloc(runs, sizeof(run) * cap * 2);

					if (t == NULL)
					{
						free(runs);
						return -1;
					}
					runs = t;
					cap *= 2;
				}
				runs[nr].first = first;
				runs[nr].len = used - first;
				{
					/* the chord: to the last pixel, or for a loop the farthest one */
					int32_t		a = pix[first];
					int32_t		b = pix[used - 1];
					int			best = -1;

					for (int32_t k = first; k < used; k++)
					{
						int			ddx = pix[k] % (int) r->w - a % (int) r->w;
						int			ddy = pix[k] / (int) r->w - a / (int) r->w;

						if (ddx * ddx + ddy * ddy > best)
						{
							best = ddx * ddx + ddy * ddy;
							if (pass == 1)
								b = pix[k];
						}
					}
					runs[nr].band = slope_band(r, a, b);
				}
				nr++;
			}
		}
	*runs_out = runs;
	return nr;
}

/* Eqs. 9-13: the label of every sub-block, from the runs. 0 when out of memory. */
static int
label_blocks(const ridge *r, const int32_t *pix, const run *runs, int nr, double alpha,
			 int *label, int bw, int bh)
{
	int			nb = bw * bh;
	size_t		cap = 0;
	size_t		ne = 0;
	entry	   *e;
	int32_t    *stamp = malloc(sizeof(int32_t) * nb);
	double	   *L = calloc((size_t) nb * (BANDS + 1), sizeof(double));
	double	   *N = calloc((size_t) nb * (BANDS + 1), sizeof(double));
	double		Lmax[BANDS + 1] = {0};
	double		Nmax[BANDS + 1] = {0};

	for (int i = 0; i < nr; i++)
		cap += (size_t) runs[i].len;
	e = malloc(sizeof(entry) * (cap ? cap : 1));
	if (!e || !stamp || !L || !N)
	{
		free(e);
		free(stamp);
		free(L);
		free(N);
		return 0;
	}
	for (int b = 0; b < nb; b++)
		stamp[b] = -1;
	for (int i = 0; i < nr; i++)
		for (int32_t k = runs[i].first; k < runs[i].first + runs[i].len; k++)
		{
			int			b = (pix[k] / (int) r->w / BLOCK) * bw + (pix[k] % (int) r->w) / BLOCK;

			if (stamp[b] == i)
				continue;
			stamp[b] = i;
			e[ne].block = b;
			e[ne].band = (int16_t) runs[i].band;
			e[ne].len = runs[i].len;
			ne++;
		}
	qsort(e, ne, sizeof(entry), cmp_entry);
	/* per (block, band): sum R_l, sum l^2 R_l, sum R_l^2 over the lengths l */
	for (size_t i = 0; i < ne;)
	{
		size_t		j = i;
		double		sr = 0;
		double		sl2 = 0;
		double		sr2 = 0;

		while (j < ne && e[j].block == e[i].block && e[j].band == e[i].band)
		{
			size_t		k = j;

			while (k < ne && e[k].block == e[j].block && e[k].band == e[j].band && e[k].len == e[j].len)
				k++;
			sr += (double) (k - j);
			sl2 += (double) e[j].len * e[j].len * (double) (k - j);
			sr2 += (double) (k - j) * (double) (k - j);
			j = k;
		}
		L[(size_t) e[i].block * (BANDS + 1) + e[i].band] = sl2 / sr;
		N[(size_t) e[i].block * (BANDS + 1) + e[i].band] = sr2 / sr;
		i = j;
	}
	for (int b = 0; b < nb; b++)
		for (int k = 1; k <= BANDS; k++)
		{
			Lmax[k] = fmax(Lmax[k], L[(size_t) b * (BANDS + 1) + k]);
			Nmax[k] = fmax(Nmax[k], N[(size_t) b * (BANDS + 1) + k]);
		}
	for (int b = 0; b < nb; b++)
	{
		double		P[NO_SLOPE + 1] = {0};
		double		pmax = 0;
		double		nmin = HUGE_VAL;
		int			any = 0;
		int			best = NO_SLOPE;

		for (int k = 1; k <= BANDS; k++)
		{
			double		l = Lmax[k] > 0 ? L[(size_t) b * (BANDS + 1) + k] / Lmax[k] : 0;
			double		nn = Nmax[k] > 0 ? N[(size_t) b * (BANDS + 1) + k] / Nmax[k] : 0;

			any |= L[(size_t) b * (BANDS + 1) + k] > 0;
			P[k] = fmax(0.0, l - alpha * nn);
			pmax = fmax(pmax, P[k]);
			nmin = fmin(nmin, nn);
		}
		if (!any)
		{
			label[b] = 0;
			continue;
		}
		for (int k = 1; k <= BANDS; k++)
			P[k] = pmax > 0 ? P[k] / pmax : 0;
		P[NO_SLOPE] = nmin;
		for (int k = 1; k <= NO_SLOPE; k++)
			if (P[k] > P[best] || (P[k] == P[best] && k < best))
				best = k;
		label[b] = best;
	}
	free(e);
	free(stamp);
	free(L);
	free(N);
	return 1;
}

/* A line end: its pixel, run, outward direction and sub-block label. */
typedef struct line_end
{
	int32_t		pixel;
	int			run;
	double		ox;
	double		oy;
	int			label;
} line_end;

/* A candidate join of two line ends. */
typedef struct join
{
	int			a;
	int			b;
	int			d2;
} join;

static int
cmp_join(const void *x, const void *y)
{
	const join *p = x;
	const join *q = y;
	int			c = MCC_CMP(p->d2, q->d2);

	c = MCC_CMP_THEN(c, p->a, q->a);
	return MCC_CMP_THEN(c, p->b, q->b);
}

/* Draw the 8-connected digital line from pixel a to pixel b. */
static void
draw_line(ridge *r, int32_t a, int32_t b)
{
	int			x0 = a % (int) r->w;
	int			y0 = a / (int) r->w;
	int			x1 = b % (int) r->w;
	int			y1 = b / (int) r->w;
	int			dx = abs(x1 - x0);
	int			dy = -abs(y1 - y0);
	int			sx = x0 < x1 ? 1 : -1;
	int			sy = y0 < y1 ? 1 : -1;
	int			e = dx + dy;

	for (;;)
	{
		int			e2 = 2 * e;

		r->sk[y0 * (int) r->w + x0] = 1;
		if (x0 == x1 && y0 == y1)
			break;
		if (e2 >= dy)
		{
			e += dy;
			x0 += sx;
		}
		if (e2 <= dx)
		{
			e += dx;
			y0 += sy;
		}
	}
}

/* Whether vector (gx, gy) is within JOIN_ANGLE of (ox, oy). */
static int
along(double gx, double gy, double ox, double oy)
{
	double		ng = hypot(gx, gy);
	double		no = hypot(ox, oy);

	return ng > 0 && no > 0 && (gx * ox + gy * oy) >= cos(JOIN_ANGLE * RIDGE_PI / 180.0) * ng * no;
}

/* Phase 5: reconstruction (Eqs. 9-13 and the joining rules). Returns joins, or -1 (memory). */
static int
reconstruct(ridge *r, const mcc_ridge_opts *o, int *n_runs)
{
	size_t		n = (size_t) r->w * r->h;
	size_t		room = 1;
	int32_t    *pix;
	run		   *runs = NULL;
	int			nr;
	int			bw = (int) (r->w + BLOCK - 1) / BLOCK;
	int			bh = (int) (r->h + BLOCK - 1) / BLOCK;
	int		   *label = malloc(sizeof(int) * (size_t) bw * bh);
	line_end   *ends = NULL;
	int			ne = 0;
	join	   *cand = NULL;
	size_t		nc = 0;
	size_t		cc = 0;
	uint8_t    *taken = NULL;
	int			joined = 0;

	/* every pixel is in one run, a node in one per neighbour */
	for (size_t i = 0; i < n; i++)
		if (r->sk[i])
		{
			int			d = degree(r, (int32_t) i);

			room += d == 2 ? 1 : (size_t) d + 1;
		}
	pix = malloc(sizeof(int32_t) * room);
	if (pix == NULL || label == NULL)
		goto oom;
	nr = trace_runs(r, pix, &runs);
	if (nr < 0)
		goto oom;
	*n_runs = nr;
	if (!label_blocks(r, pix, runs, nr, o->alpha, label, bw, bh))
		goto oom;
	ends = malloc(sizeof(line_end) * (size_t) (2 * nr + 1));
	if (ends == NULL)
		goto oom;
	for (int i = 0; i < nr; i++)
		for (int side = 0; side < 2; side++)
		{
			int32_t		k = side == 0 ? runs[i].first : runs[i].first + runs[i].len - 1;
			int32_t		p = pix[k];
			int32_t		back;
			int			steps = runs[i].len - 1 < OUT_STEPS ? runs[i].len - 1 : OUT_STEPS;

			if (runs[i].len < 2 || degree(r, p) != 1)
				continue;
			back = pix[side == 0 ? k + steps : k - steps];
			ends[ne].pixel = p;
			ends[ne].run = i;
			ends[ne].ox = (double) (p % (int) r->w - back % (int) r->w);
			ends[ne].oy = (double) (p / (int) r->w - back / (int) r->w);
			ends[ne].label = label[(p / (int) r->w / BLOCK) * bw + (p % (int) r->w) / BLOCK];
			ne++;
		}
	for (int a = 0; a < ne; a++)
		for (int b = a + 1; b < ne; b++)
		{
			const line_end *p = &ends[a];
			const line_end *q = &ends[b];
			int			gx = q->pixel % (int) r->w - p->pixel % (int) r->w;
			int			gy = q->pixel / (int) r->w - p->pixel / (int) r->w;

			if (abs(gx) > o->gap || abs(gy) > o->gap || p->run == q->run)
				continue;
			if (p->label < 1 || p->label > BANDS || q->label < 1 || q->label > BANDS ||
				opposite(p->label, q->label))
				continue;
			if (!along(gx, gy, p->ox, p->oy) || !along(-gx, -gy, q->ox, q->oy))
				continue;
			if (nc == cc)
			{
				size_t		ncap = cc ? 2 * cc : 256;
				join	   *t = realloc(cand, sizeof(join) * ncap);

				if (t == NULL)
					goto oom;
				cand = t;
				cc = ncap;
			}
			cand[nc].a = a;
			cand[nc].b = b;
			cand[nc].d2 = gx * gx + gy * gy;
			nc++;
		}
	if (nc > 1)				/* qsort must not get NULL, even empty */
		qsort(cand, nc, sizeof(join), cmp_join);
	taken = calloc((size_t) ne + 1, 1);
	if (taken == NULL)
		goto oom;
	for (size_t i = 0; i < nc; i++)
		if (!taken[cand[i].a] && !taken[cand[i].b])
		{
			taken[cand[i].a] = taken[cand[i].b] = 1;
			draw_line(r, ends[cand[i].a].pixel, ends[cand[i].b].pixel);
			joined++;
		}
	free(pix);
	free(runs);
	free(label);
	free(ends);
	free(cand);
	free(taken);
	return joined;
oom:
	free(pix);
	free(runs);
	free(label);
	free(ends);
	free(cand);
	free(taken);
	return -1;
}

/* Restore a binarized print (see the header). */
mcc_status
mcc_ridge_restore(const uint8_t *bin, uint32_t w, uint32_t h, const mcc_ridge_opts *o, uint8_t *out,
				  mcc_ridge_stats *stats, mcc_error *err)
{
	size_t		n = (size_t) w * h;
	ridge		r;
	uint8_t    *img;
	mcc_ridge_stats st;
	mcc_status	rc;
	int			j;

	memset(&st, 0, sizeof(st));
	if (w == 0 || h == 0)
		return mcc_error_set(err, MCC_ERR_VALUE, "empty image");
	r.w = w;
	r.h = h;
	r.sk = out;
	img = malloc(n);
	r.queue = malloc(sizeof(int32_t) * n);
	r.mark = malloc(n);
	if (!img || !r.queue || !r.mark)
	{
		free(img);
		free(r.queue);
		free(r.mark);
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for ridge restoration");
	}
	for (size_t i = 0; i < n; i++)
		img[i] = bin[i] == 0;
	st.filled = flip_small(&r, img, 0, 2, o->fill_max, 1);
	rc = mcc_thin(img, w, w, h, out, err);
	if (rc == MCC_OK)
	{
		st.removed = flip_small(&r, r.sk, 1, 1, o->min_component - 1, 0);
		st.cut = cut_spurs(&r, o->spur);
		st.removed += flip_small(&r, r.sk, 1, 1, o->min_component - 1, 0);
		j = reconstruct(&r, o, &st.runs);
		if (j < 0)
			rc = mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for ridge restoration");
		else
			st.joined = j;
	}
	free(img);
	free(r.queue);
	free(r.mark);
	if (stats)
		*stats = st;
	return rc;
}
