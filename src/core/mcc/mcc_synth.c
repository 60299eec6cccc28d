/*
 * mcc_synth.c: master fingers and their impressions (see mcc_synth.h and
 * docs/synthetic.md for the model and its parameters).
 *
 * Reproducibility: every random quantity is drawn from a stream keyed by
 * (seed, finger, impression, purpose), always the same number of draws per
 * item whatever the outcome, so one parameter never shifts the randomness
 * of another. Discrete decisions compare exactly computed values (integer
 * draws, uniform doubles made by exact scaling, squared distances of
 * integer coordinates); coordinates and angles go through the reproducible
 * functions of mcc_detmath.h, so even a coordinate that lands on a rounding
 * boundary rounds the same way on every IEEE 754 machine.
 */
#include "mcc_synth_int.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "mcc_detmath.h"

#define DEG				(MCC_DM_PI / 180.0)
#define PLACE_TRIES		400		/* dart throws per wanted master minutia */
#define SPURIOUS_TRIES	50		/* tries to place one spurious minutia */
#define SPURIOUS_GAP2	36		/* squared pixels: no spurious minutia closer */
#define DIR_STEP		4.0		/* pixels: probe step for the distorted direction */

void
mcc_synth_defaults(mcc_synth_params *sp)
{
	memset(sp, 0, sizeof(*sp));
	sp->seed = 1;
	sp->width = 388;			/* FVC2002 DB1 */
	sp->height = 374;
	sp->dpi = MCC_DEFAULT_DPI;
	sp->min_minutiae = 30;
	sp->max_minutiae = 60;
	sp->max_rotation = 25.0;
	sp->max_translation = 40.0;
	sp->distortion = 1.0;
	sp->p_missing = 0.08;
	sp->max_spurious = 0.08;
	sp->pos_noise = 2.0;
	sp->angle_noise = 5.0;
	sp->min_spacing = 12.0;
	sp->contact_loss = 0.15;
	sp->border = 8;
	sp->p_type_flip = 0.10;
	sp->p_dir_flip = 0.02;
	sp->quality_noise = 8.0;
	sp->variability = 0.5;
}

/*
 * Every perturbation of an impression off: the master finger's parameters
 * (seed, sensor, minutiae counts and spacing) kept, every other field zero
 * ("no perturbation", mcc_synth_params).
 */
void
mcc_synth_clean(mcc_synth_params *sp)
{
	mcc_synth_params clean = {
		.seed = sp->seed, .width = sp->width, .height = sp->height, .dpi = sp->dpi,
		.min_minutiae = sp->min_minutiae, .max_minutiae = sp->max_minutiae,
		.min_spacing = sp->min_spacing
	};

	*sp = clean;
}

/* A non-negative finite value no larger than hi (NaN becomes 0). */
static double
clampd(double v, double hi)
{
	if (!(v > 0.0))
		return 0.0;
	return v > hi ? hi : v;
}

/* An integer in [lo, hi]. */
static int
clampi(int v, int lo, int hi)
{
	return v < lo ? lo : (v > hi ? hi : v);
}

/*
 * The range of every field but the seed, written once: the generator clamps
 * to it (mcc_synth_sanitize) and the tools' check reports the first value
 * outside it (mcc_synth_check). Two bounds follow other fields, given
 * earlier in the list: max_minutiae is at least min_minutiae, and border at
 * most half the window's shorter side (range_of).
 */
typedef struct synth_range
{
	const char *name;
	size_t		off;
	bool		is_int;			/* int field; else double, lower bound 0 */
	double		lo;
	double		hi;
} synth_range;

#define RANGE_I(f, lo, hi) {#f, offsetof(mcc_synth_params, f), true, lo, hi}
#define RANGE_D(f, hi) {#f, offsetof(mcc_synth_params, f), false, 0, hi}
static const synth_range ranges[] = {
	RANGE_I(width, 1, MCC_MAX_IMAGE_SIDE), RANGE_I(height, 1, MCC_MAX_IMAGE_SIDE),
	RANGE_I(dpi, 1, MCC_MAX_DPI), RANGE_I(min_minutiae, 0, MCC_MAX_MINUTIAE),
	RANGE_I(max_minutiae, 0, MCC_MAX_MINUTIAE), RANGE_D(max_rotation, 180),
	RANGE_D(max_translation, MCC_MAX_IMAGE_SIDE), RANGE_D(distortion, 10), RANGE_D(p_missing, 1),
	RANGE_D(max_spurious, 10), RANGE_D(pos_noise, 100), RANGE_D(angle_noise, 180),
	RANGE_D(min_spacing, 100), RANGE_D(contact_loss, 0.9), RANGE_I(border, 0, 0),
	RANGE_D(p_type_flip, 1), RANGE_D(p_dir_flip, 1), RANGE_D(quality_noise, 100),
	RANGE_D(variability, 1),
};
#undef RANGE_I
#undef RANGE_D

/* The bounds of range r for the fields of sp. */
static void
range_of(const synth_range *r, const mcc_synth_params *sp, double *lo, double *hi)
{
	*lo = r->lo;
	*hi = r->hi;
	if (r->off == offsetof(mcc_synth_params, max_minutiae))
		*lo = sp->min_minutiae;
	else if (r->off == offsetof(mcc_synth_params, border))
		*hi = ((sp->width < sp->height ? sp->width : sp->height) - 1) / 2;
}

/* The value of range r's field in sp. */
static double
range_value(const synth_range *r, const mcc_synth_params *sp)
{
	const char *at = (const char *) sp + r->off;

	return r->is_int ? *(const int *) at : *(const double *) at;
}

/* Clamp in order, so a bound that follows a field sees it clamped. */
void
mcc_synth_sanitize(const mcc_synth_params *in, mcc_synth_params *out)
{
	*out = *in;
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
	{
		const synth_range *r = &ranges[i];
		char	   *at = (char *) out + r->off;
		double		lo,
					hi;

		range_of(r, out, &lo, &hi);
		if (r->is_int)
			*(int *) at = clampi(*(int *) at, (int) lo, (int) hi);
		else
			*(double *) at = clampd(*(double *) at, hi);
	}
}

double
mcc_synth_scale(const mcc_synth_params *sp)
{
	return sp->dpi / 500.0;
}

/* Report a parameter outside [lo, hi] (NaN included). */
static mcc_status
check_range(const char *name, double v, double lo, double hi, mcc_error *err)
{
	if (v >= lo && v <= hi)
		return MCC_OK;
	mcc_error_set(err, MCC_ERR_RANGE, "synthetic parameter %s = %g is out of range",
				  name, v);
	return mcc_error_detail(err, "It must be between %g and %g.", lo, hi);
}

mcc_status
mcc_synth_check(const mcc_synth_params *sp, mcc_error *err)
{
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
	{
		double		lo,
					hi;

		range_of(&ranges[i], sp, &lo, &hi);
		if (check_range(ranges[i].name, range_value(&ranges[i], sp), lo, hi, err) != MCC_OK)
			return err ? err->status : MCC_ERR_RANGE;
	}
	return MCC_OK;
}

/* Round half up to an integer (exact: floor of an exact sum). */
static double
round_px(double v)
{
	return floor(v + 0.5);
}

/* Minutia a before b: by y, then x, then angle, then origin. */
static int
minutia_before(const mcc_minutia *a, int oa, const mcc_minutia *b, int ob)
{
	if (a->y != b->y)
		return a->y < b->y;
	if (a->x != b->x)
		return a->x < b->x;
	if (a->theta != b->theta)
		return a->theta < b->theta;
	return oa < ob;
}

/* Sort minutiae (and their origins, if any) in reading order. */
static void
sort_minutiae(mcc_minutiae *ms, int *origin)
{
	for (int i = 1; i < ms->count; i++)
	{
		mcc_minutia m;
		int			o = origin ? origin[i] : i;
		int			j = i - 1;

		/* memcpy keeps the padding bytes (zeroed by the caller) as they are */
		memcpy(&m, &ms->m[i], sizeof(m));
		while (j >= 0 && minutia_before(&m, o, &ms->m[j], origin ? origin[j] : j))
		{
			memcpy(&ms->m[j + 1], &ms->m[j], sizeof(m));
			if (origin)
				origin[j + 1] = origin[j];
			j--;
		}
		memcpy(&ms->m[j + 1], &m, sizeof(m));
		if (origin)
			origin[j + 1] = o;
	}
}

/* Squared distance from (x, y) to the nearest minutia of ms (large if none). */
static long
nearest2(const mcc_minutiae *ms, int x, int y)
{
	long		best = 0x7fffffffL;

	for (int i = 0; i < ms->count; i++)
	{
		long		dx = ms->m[i].x - x;
		long		dy = ms->m[i].y - y;
		long		d2 = dx * dx + dy * dy;

		if (d2 < best)
			best = d2;
	}
	return best;
}

void
mcc_synth_master(const mcc_synth_params *sp_in, uint64_t finger,
				 mcc_minutiae *master)
{
	mcc_synth_params sp;
	mcc_synth_finger f;
	mcc_rng		r;
	double		spacing;
	long		spacing2;
	int			want;

	mcc_synth_sanitize(sp_in, &sp);
	mcc_synth_shape(&sp, finger, &f);
	mcc_rng_seed(&r, mcc_rng_key(sp.seed, finger, 0, MCC_SYNTH_STREAM_MINUTIAE));
	spacing = sp.min_spacing * mcc_synth_scale(&sp);
	/* integer test d2 >= spacing2 is d >= spacing for integer coordinates */
	spacing2 = (long) ceil(spacing * spacing);

	/* the whole struct, so that unused slots and padding compare equal too */
	memset(master, 0, sizeof(*master));
	master->width = (uint16_t) f.width;
	master->height = (uint16_t) f.height;
	master->dpi = (uint16_t) sp.dpi;
	master->count = 0;
	want = sp.min_minutiae +
		(int) mcc_rng_below(&r, (uint64_t) (sp.max_minutiae - sp.min_minutiae + 1));

	/*
	 * Dart throwing inside 95% of the ellipse: extractors find few minutiae
	 * at the very edge of the print. Each try makes five draws.
	 */
	for (long t = 0; t < (long) PLACE_TRIES * want && master->count < want; t++)
	{
		double		X = mcc_rng_range(&r, -0.95, 0.95);
		double		Y = mcc_rng_range(&r, -0.95, 0.95);
		int			polarity = (int) mcc_rng_below(&r, 2);
		int			ending = mcc_rng_below(&r, 100) < 55;
		int			quality = 40 + (int) mcc_rng_below(&r, 60);
		mcc_minutia *m;
		int			x,
					y;

		if (X * X + Y * Y > 0.95 * 0.95)
			continue;
		x = (int) round_px(f.cx + X * f.a);
		y = (int) round_px(f.cy + Y * f.b);
		if (nearest2(master, x, y) < spacing2)
			continue;
		m = &master->m[master->count++];
		m->x = (int16_t) x;
		m->y = (int16_t) y;
		/* an ending or bifurcation points one of the two ways along the ridge */
		m->theta = mcc_angle_normalize(mcc_synth_orientation(&f, x, y) +
									   polarity * MCC_DM_PI);
		m->type = ending ? MCC_TYPE_ENDING : MCC_TYPE_BIFURCATION;
		m->quality = (uint8_t) quality;
	}
	sort_minutiae(master, NULL);
}

/*
 * Plastic distortion of Cappelli, Maio and Maltoni (2001): no displacement
 * inside the close-contact ellipse R, the full displacement T(v) - v of a
 * small rigid motion beyond a transition band of width k, and a smooth
 * "brake" between.
 */
typedef struct distortion
{
	int			on;
	double		px,				/* centre of R */
				py;
	double		ra,				/* semi-axes of R */
				rb;
	double		k;				/* transition width */
	double		cb,				/* rotation of T about (px, py) */
				sb;
	double		tx,				/* translation of T */
				ty;
} distortion;

/* Distance from v to the ellipse R, 0 inside (along the ray from its centre). */
static double
shape_dist(const distortion *d, double dx, double dy)
{
	double		r2 = dx * dx + dy * dy;
	double		e;

	if (r2 == 0.0)
		return 0.0;
	/* the ray meets the ellipse at r * ra rb / sqrt(rb^2 dx^2 + ra^2 dy^2) */
	e = sqrt(r2) * (1.0 - d->ra * d->rb /
					sqrt(d->rb * d->rb * dx * dx + d->ra * d->ra * dy * dy));
	return e > 0.0 ? e : 0.0;
}

/* Apply the distortion to (x, y) in place. */
static void
distort(const distortion *d, double *x, double *y)
{
	double		dx = *x - d->px;
	double		dy = *y - d->py;
	double		s,
				brake;

	if (!d->on)
		return;
	s = shape_dist(d, dx, dy);
	if (s <= 0.0)
		return;
	brake = s >= d->k ? 1.0 : 0.5 * (1.0 - mcc_dm_cos(MCC_DM_PI * s / d->k));
	/* T(v) - v for a counter-clockwise (on screen) rotation and a shift */
	*x += brake * (dx * d->cb + dy * d->sb - dx + d->tx);
	*y += brake * (-dx * d->sb + dy * d->cb - dy + d->ty);
}

/* The rigid placement of the finger on the sensor. */
typedef struct placement
{
	double		fx,				/* finger centre in the master frame */
				fy;
	double		ox,				/* where it lands in the window */
				oy;
	double		alpha;			/* rotation, radians, counter-clockwise on screen */
	double		ca,
				sa;
} placement;

/* Master-frame point to window coordinates (before noise). */
static void
place_point(const placement *p, const distortion *d, double x, double y,
			double *wx, double *wy)
{
	double		dx,
				dy;

	distort(d, &x, &y);
	dx = x - p->fx;
	dy = y - p->fy;
	*wx = p->ox + (dx * p->ca + dy * p->sa);
	*wy = p->oy + (-dx * p->sa + dy * p->ca);
}

/* Direction theta at (x, y) of the master frame, as seen in the window. */
static double
place_angle(const placement *p, const distortion *d, double x, double y,
			double theta)
{
	double		x0 = x,
				y0 = y,
				x1,
				y1,
				s,
				c;

	if (!d->on)
		return theta + p->alpha;
	/* the distortion also turns directions: follow a short step along theta */
	mcc_dm_sincos(theta, &s, &c);
	x1 = x + DIR_STEP * c;
	y1 = y - DIR_STEP * s;
	distort(d, &x0, &y0);
	distort(d, &x1, &y1);
	return mcc_dm_atan2(-(y1 - y0), x1 - x0) + p->alpha;
}

/* Floor division for possibly negative numerators. */
static int
floor_div2(int v)
{
	return v >= 0 ? v / 2 : -((-v + 1) / 2);
}

/* A quality 1..100 from a value. */
static uint8_t
quality_of(double q)
{
	q = round_px(q);
	return (uint8_t) (q < 1.0 ? 1 : (q > 100.0 ? 100 : q));
}

/* Is (x, y) inside the ellipse of centre (ex, ey) and semi-axes (ea, eb)? */
static int
in_ellipse(double x, double y, double ex, double ey, double ea, double eb)
{
	double		u = (x - ex) / ea;
	double		v = (y - ey) / eb;

	return u * u + v * v <= 1.0;
}

/* Draw the impression-wide quantities, always in the same order. */
static void
draw_impression(mcc_rng *r, const mcc_synth_params *sp, const mcc_synth_finger *f,
				placement *pl, distortion *d, double *ex, double *ey,
				double *ea, double *eb, double *q_shift, double *condition)
{
	double		s = mcc_synth_scale(sp);
	double		D = sp->distortion;
	double		shrink,
				beta,
				tau,
				phi,
				tx,
				ty;

	pl->alpha = mcc_rng_range(r, -1.0, 1.0) * sp->max_rotation * DEG;
	tx = mcc_rng_range(r, -1.0, 1.0) * sp->max_translation;
	ty = mcc_rng_range(r, -1.0, 1.0) * sp->max_translation;
	mcc_dm_sincos(pl->alpha, &pl->sa, &pl->ca);
	pl->fx = f->cx;
	pl->fy = f->cy;
	/* integer offsets, so that an unperturbed impression keeps integer positions */
	pl->ox = f->cx + floor_div2(sp->width - f->width) + tx;
	pl->oy = f->cy + floor_div2(sp->height - f->height) + ty;

	/* the part of the fingertip that touches: a smaller, shifted ellipse */
	shrink = mcc_rng_uniform(r) * sp->contact_loss;
	*ea = f->a * (1.0 - shrink);
	*eb = f->b * (1.0 - shrink);
	*ex = f->cx + mcc_rng_range(r, -1.0, 1.0) * shrink * f->a;
	*ey = f->cy + mcc_rng_range(r, -1.0, 1.0) * shrink * f->b;

	d->px = f->cx + mcc_rng_range(r, -0.25, 0.25) * f->a;
	d->py = f->cy + mcc_rng_range(r, -0.25, 0.25) * f->b;
	d->ra = s * mcc_rng_range(r, 40.0, 70.0);
	d->rb = d->ra * mcc_rng_range(r, 1.0, 1.4);
	d->k = s * mcc_rng_range(r, 80.0, 140.0);
	beta = mcc_rng_range(r, -1.0, 1.0) * 3.0 * DEG * D;
	tau = mcc_rng_uniform(r) * 8.0 * s * D;
	phi = mcc_rng_uniform(r) * 2.0 * MCC_DM_PI;
	mcc_dm_sincos(beta, &d->sb, &d->cb);
	mcc_dm_sincos(phi, &ty, &tx);
	d->tx = tau * tx;
	d->ty = tau * ty;
	d->on = D > 0.0;

	/* how good this impression is (dry, wet, pressed): 1 is average, more is worse */
	*condition = 1.0 + mcc_rng_range(r, -1.0, 1.0) * sp->variability;
	/* the extractor's qualities follow, 20 points per unit of condition */
	*q_shift = mcc_rng_normal(r) * sp->quality_noise * 0.5 - (*condition - 1.0) * 20.0;
}

/* Window position (rounded) if inside the detectable part of the window. */
static int
in_window(const mcc_synth_params *sp, double wx, double wy, int *x, int *y)
{
	double		rx = round_px(wx);
	double		ry = round_px(wy);

	if (rx < sp->border || rx >= sp->width - sp->border ||
		ry < sp->border || ry >= sp->height - sp->border)
		return 0;
	*x = (int) rx;
	*y = (int) ry;
	return 1;
}

void
mcc_synth_impression_trace(const mcc_synth_params *sp_in,
						   const mcc_minutiae *master, uint64_t finger,
						   uint64_t impression, mcc_minutiae *out, int *origin)
{
	mcc_synth_params sp;
	mcc_synth_finger f;
	mcc_rng		r;
	placement	pl;
	distortion	d;
	double		ex,
				ey,
				ea,
				eb,
				q_shift,
				condition;
	int			detected;
	long		n_spurious;

	mcc_synth_sanitize(sp_in, &sp);
	mcc_synth_shape(&sp, finger, &f);
	mcc_rng_seed(&r, mcc_rng_key(sp.seed, finger, impression,
								 MCC_SYNTH_STREAM_IMPRESSION));
	draw_impression(&r, &sp, &f, &pl, &d, &ex, &ey, &ea, &eb, &q_shift, &condition);
	sp.pos_noise *= condition;
	sp.angle_noise *= condition;
	sp.p_missing *= condition;
	sp.max_spurious *= condition;

	memset(out, 0, sizeof(*out));
	out->width = (uint16_t) sp.width;
	out->height = (uint16_t) sp.height;
	out->dpi = (uint16_t) sp.dpi;
	out->count = 0;

	for (int i = 0; i < master->count; i++)
	{
		const mcc_minutia *mm = &master->m[i];
		double		u_miss = mcc_rng_uniform(&r);
		double		nx = mcc_rng_normal(&r);
		double		ny = mcc_rng_normal(&r);
		double		na = mcc_rng_normal(&r);
		double		nq = mcc_rng_normal(&r);
		double		u_type = mcc_rng_uniform(&r);
		double		u_dir = mcc_rng_uniform(&r);
		/* weak minutiae are missed more often: the factor averages 1 over 40..100 */
		double		p_miss = sp.p_missing * (1.0 + (70.0 - mm->quality) / 60.0);
		double		wx,
					wy,
					theta;
		mcc_minutia *m;
		int			x,
					y;

		if (!in_ellipse(mm->x, mm->y, ex, ey, ea, eb) || u_miss < p_miss)
			continue;
		place_point(&pl, &d, mm->x, mm->y, &wx, &wy);
		if (!in_window(&sp, wx + nx * sp.pos_noise, wy + ny * sp.pos_noise, &x, &y))
			continue;
		theta = place_angle(&pl, &d, mm->x, mm->y, mm->theta) +
			na * sp.angle_noise * DEG;
		if (u_dir < sp.p_dir_flip)
			theta += MCC_DM_PI;
		m = &out->m[out->count];
		m->x = (int16_t) x;
		m->y = (int16_t) y;
		m->theta = mcc_angle_normalize(theta);
		m->type = mm->type;
		/* ISO angles make an ending and its dual bifurcation point the same way */
		if (u_type < sp.p_type_flip && mm->type != MCC_TYPE_OTHER)
			m->type = mm->type == MCC_TYPE_ENDING ? MCC_TYPE_BIFURCATION : MCC_TYPE_ENDING;
		m->quality = quality_of(mm->quality + nq * sp.quality_noise + q_shift);
		if (origin)
			origin[out->count] = i;
		out->count++;
	}
	detected = out->count;

	/* spurious minutiae follow the ridge flow and are distorted like the rest */
	n_spurious = (long) floor(mcc_rng_uniform(&r) * (sp.max_spurious * detected + 1.0));
	for (long k = 0; k < n_spurious && out->count < MCC_MAX_MINUTIAE; k++)
	{
		for (int t = 0; t < SPURIOUS_TRIES; t++)
		{
			double		X = mcc_rng_range(&r, -1.0, 1.0);
			double		Y = mcc_rng_range(&r, -1.0, 1.0);
			double		nx = mcc_rng_normal(&r);
			double		ny = mcc_rng_normal(&r);
			int			polarity = (int) mcc_rng_below(&r, 2);
			int			ending = (int) mcc_rng_below(&r, 2);
			int			quality = 10 + (int) mcc_rng_below(&r, 40);
			double		mx,
						my,
						wx,
						wy;
			mcc_minutia *m;
			int			x,
						y;

			if (X * X + Y * Y > 1.0)
				continue;
			mx = ex + X * ea;
			my = ey + Y * eb;
			place_point(&pl, &d, mx, my, &wx, &wy);
			if (!in_window(&sp, wx + nx * sp.pos_noise, wy + ny * sp.pos_noise, &x, &y) ||
				nearest2(out, x, y) < SPURIOUS_GAP2)
				continue;
			m = &out->m[out->count];
			m->x = (int16_t) x;
			m->y = (int16_t) y;
			m->theta = mcc_angle_normalize(
				place_angle(&pl, &d, mx, my,
							mcc_synth_orientation(&f, mx, my) + polarity * MCC_DM_PI));
			m->type = ending ? MCC_TYPE_ENDING : MCC_TYPE_BIFURCATION;
			m->quality = (uint8_t) quality;
			if (origin)
				origin[out->count] = -1;
			out->count++;
			break;
		}
	}
	sort_minutiae(out, origin);
}

void
mcc_synth_impression(const mcc_synth_params *sp, const mcc_minutiae *master,
					 uint64_t finger, uint64_t impression, mcc_minutiae *out)
{
	mcc_synth_impression_trace(sp, master, finger, impression, out, NULL);
}
