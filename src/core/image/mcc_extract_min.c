/*
 * mcc_extract_min.c: minutiae on the skeleton (mcc_extract_int.h):
 * crossing numbers, branch traces, the rules that remove spurious
 * minutiae, directions and qualities.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_extract_int.h"

#define PI			3.14159265358979323846

/* Neighbour offsets clockwise from north: N, NE, E, SE, S, SW, W, NW. */
static const int NX[8] = {0, 1, 1, 1, 0, -1, -1, -1};
static const int NY[8] = {-1, -1, 0, 1, 1, 1, 0, -1};

/* Skeleton pixel (x, y), outside the image counting as 0. */
static inline int
sk(const xt_ctx *c, int x, int y)
{
	return x >= 0 && y >= 0 && x < (int) c->w && y < (int) c->h && c->skel[y * (int) c->w + x];
}

/* The 8 neighbour bits of (x, y), bit k for direction k. */
static unsigned
nbits(const xt_ctx *c, int x, int y)
{
	unsigned	m = 0;

	for (int k = 0; k < 8; k++)
		m |= (unsigned) sk(c, x + NX[k], y + NY[k]) << k;
	return m;
}

/* Crossing number: the 0 -> 1 transitions around the pixel. */
static int
crossing(unsigned m)
{
	int			n = 0;

	for (int k = 0; k < 8; k++)
		n += !((m >> k) & 1) && ((m >> ((k + 1) & 7)) & 1);
	return n;
}

/*
 * The first pixel of each run of set neighbours (a 4-neighbour when the
 * run has one: the branch starts there): dirs gets up to 3 directions.
 */
static int
branch_starts(unsigned m, int dirs[3])
{
	int			n = 0;

	for (int k = 0; k < 8 && n < 3; k++)
	{
		int			pick;

		if (!((m >> k) & 1) || ((m >> ((k + 7) & 7)) & 1))
			continue;			/* not the start of a run */
		pick = k;
		for (int j = k; (m >> (j & 7)) & 1; j++)
		{
			if ((j & 1) == 0)
			{
				pick = j & 7;
				break;
			}
			if (j - k >= 7)
				break;
		}
		dirs[n++] = pick;
	}
	return n;
}

/*
 * Trace the branch of minutia i that starts in direction d, for at most
 * maxlen pixels. Pixels of this minutia and its other neighbours are
 * marked first, so the trace cannot turn back into another branch.
 */
static void
trace(xt_ctx *c, int i, int d, int maxlen, uint32_t mark, xt_branch *b)
{
	int			w = (int) c->w;
	int			x0 = c->m[i].x,
				y0 = c->m[i].y,
				x = x0 + NX[d],
				y = y0 + NY[d];
	int			dir_len = (int) lround(c->p.trace);

	c->stamp[y0 * w + x0] = mark;
	for (int k = 0; k < 8; k++)
		if (k != d && sk(c, x0 + NX[k], y0 + NY[k]))
			c->stamp[(y0 + NY[k]) * w + x0 + NX[k]] = mark;
	b->kind = XT_LENGTH;
	b->other = -1;
	b->len = 1;
	b->vx = (float) (x - x0);
	b->vy = (float) (y - y0);
	for (;;)
	{
		int			nx = 0,
					ny = 0,
					cand = 0,
					id;

		c->stamp[y * w + x] = mark;
		if (b->len <= dir_len)
		{
			b->vx = (float) (x - x0);
			b->vy = (float) (y - y0);
		}
		id = c->idx[y * w + x];
		if (id)
		{
			b->kind = XT_MINUTIA;
			b->other = id - 1;
			return;
		}
		/* 4-neighbours first: on a thin line a diagonal step is taken only without one */
		for (int pass = 0; pass < 2 && cand == 0; pass++)
			for (int k = pass; k < 8; k += 2)
			{
				int			xx = x + NX[k],
							yy = y + NY[k];

				if (sk(c, xx, yy) && c->stamp[yy * w + xx] != mark)
				{
					if (cand == 0)
					{
						nx = xx;
						ny = yy;
					}
					cand++;
				}
			}
		if (cand == 0)
		{
			b->kind = XT_END;
			return;
		}
		if (cand > 1 && crossing(nbits(c, x, y)) >= 3)
		{
			/* a junction without a candidate here: look next to it */
			for (int k = 0; k < 8; k++)
			{
				int			xx = x + NX[k],
							yy = y + NY[k];

				if (xx >= 0 && yy >= 0 && xx < w && yy < (int) c->h &&
					(id = c->idx[yy * w + xx]) != 0 && id - 1 != i)
				{
					b->kind = XT_MINUTIA;
					b->other = id - 1;
					return;
				}
			}
			b->kind = XT_JUNCTION;
			return;
		}
		if (b->len >= maxlen)
			return;
		x = nx;
		y = ny;
		b->len++;
	}
}

/* Angle in [0, 2pi). */
static double
wrap(double a)
{
	a = fmod(a, 2 * PI);
	return a < 0 ? a + 2 * PI : a;
}

/* Smallest difference of two angles, 0..pi. */
static double
adiff(double a, double b)
{
	double		d = fabs(wrap(a - b));

	return d > PI ? 2 * PI - d : d;
}

/*
 * Direction of minutia i in the image frame (y down), from its traced
 * branches: along an ending's ridge; for a bifurcation, between the two
 * branches closest in direction, away from the third (the stem).
 */
static int
traced_vector(const xt_min *m, double *vx, double *vy)
{
	double		ux[3],
				uy[3];

	for (int k = 0; k < m->nbr; k++)
	{
		double		l = hypot(m->br[k].vx, m->br[k].vy);

		if (l == 0)
			return 0;
		ux[k] = m->br[k].vx / l;
		uy[k] = m->br[k].vy / l;
	}
	if (m->nbr == 1)
	{
		*vx = ux[0];
		*vy = uy[0];
		return 1;
	}
	{
		/* the stem is the branch not in the closest pair */
		double		best = -2;
		int			stem = 0;

		for (int s = 0; s < 3; s++)
		{
			int			j = (s + 1) % 3,
						k = (s + 2) % 3;
			double		dot = ux[j] * ux[k] + uy[j] * uy[k];

			if (dot > best)
			{
				best = dot;
				stem = s;
			}
		}
		*vx = ux[(stem + 1) % 3] + ux[(stem + 2) % 3] - ux[stem];
		*vy = uy[(stem + 1) % 3] + uy[(stem + 2) % 3] - uy[stem];
		return hypot(*vx, *vy) > 0;
	}
}

/*
 * ISO direction: the ridge orientation of the field at the minutia, in the
 * sense of the traced vector; the traced angle itself when the two
 * disagree by more than 45 degrees (the field is smooth, a minutia's
 * neighbourhood is not always).
 */
static void
direction(const xt_ctx *c, xt_min *m)
{
	size_t		at = (size_t) m->y * c->w + m->x;
	double		vx,
				vy,
				tr,
				fr;

	if (!traced_vector(m, &vx, &vy))
	{
		vx = 1;
		vy = 0;
	}
	tr = atan2(vy, vx);
	/* the gradient's angle is half that of the averaged doubled vector; ridges run across it */
	fr = 0.5 * atan2(c->e.os[at], c->e.oc[at]) + PI / 2;
	if (adiff(fr, tr) > PI / 2)
		fr += PI;
	if (adiff(fr, tr) > PI / 4)
		fr = tr;
	/* image frame (y down) to ISO (counter-clockwise on screen) */
	m->theta = wrap(-fr);
}

/* Coherence of the orientation field at a pixel, 0..1. */
static double
coherence(const xt_ctx *c, size_t at)
{
	double		en = c->e.energy[at];

	if (!(en > 1e-9))
		return 0;
	return fmin(1.0, hypot(c->e.oc[at], c->e.os[at]) / en);
}

/* Mark candidates i and j removed by rule r (those already removed stay as they were). */
static void
remove_pair(xt_ctx *c, int i, int j, int r, uint32_t *count)
{
	if (!c->m[i].removed)
	{
		c->m[i].removed = r;
		(*count)++;
	}
	if (j >= 0 && !c->m[j].removed)
	{
		c->m[j].removed = r;
		(*count)++;
	}
}

/* The count of a rule in the statistics. */
static uint32_t *
rule_count(mcc_extract_stats *st, int r)
{
	return r == XR_SHORT_RIDGE ? &st->short_ridge : r == XR_SPUR ? &st->spur : &st->bridge;
}

/*
 * Rules on traced pairs: short ridges, spurs, bridges. Decided on the full
 * set of candidates (rule: nm zeroed ints of scratch), then applied, so
 * the order of the candidates does not matter.
 */
static void
trace_rules(xt_ctx *c, mcc_extract_stats *st, int *rule)
{
	for (int i = 0; i < c->nm; i++)
	{
		xt_min	   *a = &c->m[i];

		for (int k = 0; k < a->nbr; k++)
		{
			const xt_branch *b = &a->br[k];
			const xt_min *o;
			int			r = 0;

			if (b->kind != XT_MINUTIA || b->other == i)
				continue;
			o = &c->m[b->other];
			if (a->type == MCC_TYPE_ENDING && o->type == MCC_TYPE_ENDING &&
				b->len < c->p.short_ridge)
				r = XR_SHORT_RIDGE;
			else if (a->type != o->type && b->len < c->p.spur)
				r = XR_SPUR;
			else if (a->type == MCC_TYPE_BIFURCATION && o->type == MCC_TYPE_BIFURCATION &&
					 b->len < c->p.bridge)
				r = XR_BRIDGE;
			if (r && !rule[i])
				rule[i] = r;
			if (r && !rule[b->other])
				rule[b->other] = r;
		}
	}
	for (int i = 0; i < c->nm; i++)
		if (rule[i])
			remove_pair(c, i, -1, rule[i], rule_count(st, rule[i]));
}

/* Unit vector of an ISO angle in the image frame. */
static void
iso_unit(double theta, double *ux, double *uy)
{
	*ux = cos(theta);
	*uy = -sin(theta);
}

/*
 * Broken ridges: two endings facing each other within `gap` pixels, their
 * directions within 45 degrees of opposite and each lying behind the
 * other (the gap runs along the ridge).
 */
static void
gap_rule(xt_ctx *c, mcc_extract_stats *st)
{
	double		g2 = c->p.gap * c->p.gap;

	for (int i = 0; i < c->nm; i++)
	{
		xt_min	   *a = &c->m[i];

		if (a->removed || a->type != MCC_TYPE_ENDING)
			continue;
		for (int j = i + 1; j < c->nm; j++)
		{
			xt_min	   *b = &c->m[j];
			double		dx = b->x - a->x,
						dy = b->y - a->y,
						d2 = dx * dx + dy * dy,
						ax,
						ay,
						bx,
						by,
						l;

			if (b->removed || b->type != MCC_TYPE_ENDING || d2 >= g2)
				continue;
			if (adiff(a->theta, b->theta + PI) > PI / 4)
				continue;
			iso_unit(a->theta, &ax, &ay);
			iso_unit(b->theta, &bx, &by);
			l = sqrt(d2);
			/* b lies behind a (against a's direction), a behind b */
			if (l >= 3 && (-(dx * ax + dy * ay) < l * cos(PI / 4) ||
						   (dx * bx + dy * by) < l * cos(PI / 4)))
				continue;
			remove_pair(c, i, j, XR_GAP, &st->gap);
			break;
		}
	}
}

/* Pairs closer than `close` pixels: both go (hit: nm zeroed ints of scratch). */
static void
close_rule(xt_ctx *c, mcc_extract_stats *st, int *hit)
{
	double		c2 = c->p.close * c->p.close;

	for (int i = 0; i < c->nm; i++)
		for (int j = i + 1; j < c->nm; j++)
		{
			double		dx = c->m[j].x - c->m[i].x,
						dy = c->m[j].y - c->m[i].y;

			if (!c->m[i].removed && !c->m[j].removed && dx * dx + dy * dy < c2)
				hit[i] = hit[j] = 1;
		}
	for (int i = 0; i < c->nm; i++)
		if (hit[i])
			remove_pair(c, i, -1, XR_CLOSE, &st->close);
}

/*
 * Does the ridge of ending t stop because the print does? Its line,
 * continued past the end (against its direction) for border_ray pixels,
 * leaves the foreground or the image.
 */
static int
ends_at_border(const xt_ctx *c, const xt_min *t)
{
	double		ux,
				uy;

	iso_unit(t->theta, &ux, &uy);
	for (double r = 1; r <= c->p.border_ray; r += 1)
	{
		long		x = lround(t->x - r * ux),
					y = lround(t->y - r * uy);

		if (x < 0 || y < 0 || x >= (long) c->w || y >= (long) c->h ||
			!c->fg[(size_t) y * c->w + x])
			return 1;
	}
	return 0;
}

mcc_status
xt_minutiae(xt_ctx *c, mcc_extract_stats *st, mcc_error *err)
{
	int			w = (int) c->w,
				h = (int) c->h;
	int			maxlen = (int) ceil(fmax(fmax(c->p.short_ridge, c->p.spur),
										 fmax(c->p.bridge, c->p.trace))) + 1;
	uint32_t	mark = 0;
	int		   *scratch;

	/* candidates: crossing number 1 or 3, inside the foreground */
	c->nm = 0;
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
		{
			unsigned	m;
			int			cn,
						dirs[3],
						nb;
			xt_min	   *t;

			if (!c->skel[y * w + x] || !c->fg[y * w + x])
				continue;
			m = nbits(c, x, y);
			cn = crossing(m);
			if (cn != 1 && cn != 3)
				continue;
			nb = branch_starts(m, dirs);
			if (nb != cn)
				continue;
			if (c->nm == c->cap)
			{
				int			cap = c->cap ? 2 * c->cap : 256;
				xt_min	   *nm = realloc(c->m, (size_t) cap * sizeof(xt_min));

				if (nm == NULL)
					return mcc_error_set(err, MCC_ERR_MEMORY,
										 "out of memory for %d minutiae candidates", cap);
				c->m = nm;
				c->cap = cap;
			}
			t = &c->m[c->nm];
			memset(t, 0, sizeof(*t));
			t->x = x;
			t->y = y;
			t->type = cn == 1 ? MCC_TYPE_ENDING : MCC_TYPE_BIFURCATION;
			t->nbr = nb;
			for (int k = 0; k < nb; k++)
				t->br[k].kind = dirs[k];	/* start directions until traced */
			c->idx[y * w + x] = ++c->nm;
		}
	st->candidates = (uint32_t) c->nm;

	/* traces, directions, coherence */
	for (int i = 0; i < c->nm; i++)
	{
		xt_min	   *t = &c->m[i];
		size_t		at = (size_t) t->y * w + t->x;

		for (int k = 0; k < t->nbr; k++)
			trace(c, i, t->br[k].kind, maxlen, ++mark, &t->br[k]);
		direction(c, t);
		t->coherence = coherence(c, at);
		t->clarity = c->e.scratch[at];
	}

	if ((scratch = calloc((size_t) c->nm + 1, sizeof(int))) == NULL)
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for %d minutiae candidates",
							 c->nm);
	trace_rules(c, st, scratch);
	gap_rule(c, st);
	memset(scratch, 0, ((size_t) c->nm + 1) * sizeof(int));
	close_rule(c, st, scratch);
	free(scratch);
	for (int i = 0; i < c->nm; i++)
	{
		xt_min	   *t = &c->m[i];
		double		d = c->dist[(size_t) t->y * w + t->x];

		if (t->removed)
			continue;
		if (t->coherence < c->p.min_coherence)
			remove_pair(c, i, -1, XR_COHERENCE, &st->coherence);
		else if (t->clarity < c->p.min_clarity)
			remove_pair(c, i, -1, XR_CLARITY, &st->clarity);
		else if (d < c->p.border || (t->type == MCC_TYPE_ENDING && ends_at_border(c, t)))
			remove_pair(c, i, -1, XR_BORDER, &st->border);
		else
			t->quality = fmin(1.0, t->clarity) * fmin(1.0, d / (2 * c->p.border + 1));
	}
	return MCC_OK;
}
