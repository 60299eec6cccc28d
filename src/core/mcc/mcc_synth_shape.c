/*
 * mcc_synth_shape.c: the shape of a master finger and its orientation field.
 *
 * Pattern classes come with the frequencies of natural fingers reported by
 * Wilson, Candela and Watson (NIST, 1994) and used by SFinGe: arch 3.7%,
 * tented arch 2.9%, left loop 33.8%, right loop 31.7%, whorl 27.9%.
 * Orientation is the zero-pole model of Sherlock and Monro (1993): in a
 * frame with y up,
 *
 *     theta(z) = theta_inf + 1/2 sum_cores arg(z - c) - 1/2 sum_deltas arg(z - d)
 *
 * which gives each core a Poincare index of +1/2 and each delta -1/2 and
 * tends to theta_inf far from them. A plain arch has no singularity: its
 * ridges follow y = y0 + h(y0) / (1 + x^2 / w^2), flat at the bottom of the
 * finger and rising towards the top. All positions are drawn in 500-dpi
 * pixels relative to the centre of the fingertip ellipse and then scaled.
 */
#include "mcc_synth_int.h"

#include <math.h>

#include "mcc_detmath.h"

#define DEG		(MCC_DM_PI / 180.0)
#define MARGIN	16				/* pixels between the ellipse's box and the frame */

/* Cumulative class frequencies in per mille, in mcc_synth_class order. */
static const int class_cum[MCC_SYNTH_NCLASSES] = {37, 66, 404, 721, 1000};

static const char *const class_names[MCC_SYNTH_NCLASSES] = {
	"arch", "tented_arch", "left_loop", "right_loop", "whorl"
};

const char *
mcc_synth_class_name(int cls)
{
	if (cls < 0 || cls >= MCC_SYNTH_NCLASSES)
		return "invalid";
	return class_names[cls];
}

/* Draw the pattern class (an integer draw: no rounding can change it). */
static mcc_synth_class
draw_class(mcc_rng *r)
{
	int			u = (int) mcc_rng_below(r, 1000);

	for (int c = 0; c < MCC_SYNTH_NCLASSES; c++)
		if (u < class_cum[c])
			return (mcc_synth_class) c;
	return MCC_SYNTH_WHORL;
}

/* Put a singularity at (dx, dy) 500-dpi pixels from the centre, y up. */
static void
place(const mcc_synth_finger *f, double s, double dx, double dy,
	  double *x, double *y)
{
	*x = f->cx + s * dx;
	*y = f->cy - s * dy;
}

void
mcc_synth_shape(const mcc_synth_params *sp_in, uint64_t finger,
				mcc_synth_finger *f)
{
	mcc_synth_params sp;
	mcc_rng		r;
	double		s,
				cx,
				cy,
				dx,
				dy,
				side;

	mcc_synth_sanitize(sp_in, &sp);
	s = mcc_synth_scale(&sp);
	mcc_rng_seed(&r, mcc_rng_key(sp.seed, finger, 0, MCC_SYNTH_STREAM_SHAPE));

	/*
	 * Every draw happens whatever the class, in a fixed order, so that the
	 * stream stays aligned and each quantity depends only on its own draws.
	 */
	f->cls = draw_class(&r);
	f->a = s * mcc_rng_range(&r, 150.0, 200.0);
	f->b = s * mcc_rng_range(&r, 200.0, 250.0);
	f->width = 2 * (int) ceil(f->a) + 2 * MARGIN;
	f->height = 2 * (int) ceil(f->b) + 2 * MARGIN;
	f->cx = f->width / 2;
	f->cy = f->height / 2;
	f->theta_inf = mcc_rng_range(&r, -8.0, 8.0) * DEG;

	/* first core (loops, tented arch, whorl) near the centre */
	cx = mcc_rng_range(&r, -30.0, 30.0);
	cy = mcc_rng_range(&r, -20.0, 40.0);
	/* delta of a loop: below the core and to one side */
	dx = mcc_rng_range(&r, 60.0, 130.0);
	dy = mcc_rng_range(&r, 90.0, 160.0);
	/* whorl: second core below the first, deltas on both sides */
	double		c2x = mcc_rng_range(&r, -15.0, 15.0);
	double		c2y = mcc_rng_range(&r, 20.0, 45.0);
	double		wdx1 = mcc_rng_range(&r, 90.0, 150.0);
	double		wdy1 = mcc_rng_range(&r, 100.0, 160.0);
	double		wdx2 = mcc_rng_range(&r, 90.0, 150.0);
	double		wdy2 = mcc_rng_range(&r, 100.0, 160.0);
	/* tented arch: delta right below the core */
	double		tdx = mcc_rng_range(&r, -10.0, 10.0);
	double		tdy = mcc_rng_range(&r, 50.0, 90.0);

	f->arch_height = s * mcc_rng_range(&r, 30.0, 70.0);
	f->arch_width = s * mcc_rng_range(&r, 70.0, 120.0);

	f->n_cores = 0;
	f->n_deltas = 0;
	for (int i = 0; i < 2; i++)
		f->core_x[i] = f->core_y[i] = f->delta_x[i] = f->delta_y[i] = 0.0;

	switch (f->cls)
	{
		case MCC_SYNTH_ARCH:
			break;
		case MCC_SYNTH_TENTED_ARCH:
			f->n_cores = f->n_deltas = 1;
			place(f, s, cx, cy, &f->core_x[0], &f->core_y[0]);
			place(f, s, cx + tdx, cy - tdy, &f->delta_x[0], &f->delta_y[0]);
			break;
		case MCC_SYNTH_LEFT_LOOP:
		case MCC_SYNTH_RIGHT_LOOP:
			/* a left loop opens to the left: its delta lies to the right */
			side = f->cls == MCC_SYNTH_LEFT_LOOP ? 1.0 : -1.0;
			f->n_cores = f->n_deltas = 1;
			place(f, s, cx, cy, &f->core_x[0], &f->core_y[0]);
			place(f, s, cx + side * dx, cy - dy, &f->delta_x[0], &f->delta_y[0]);
			break;
		case MCC_SYNTH_WHORL:
			f->n_cores = f->n_deltas = 2;
			place(f, s, cx * 0.5, cy, &f->core_x[0], &f->core_y[0]);
			place(f, s, cx * 0.5 + c2x, cy - c2y, &f->core_x[1], &f->core_y[1]);
			place(f, s, -wdx1, -wdy1, &f->delta_x[0], &f->delta_y[0]);
			place(f, s, wdx2, -wdy2, &f->delta_x[1], &f->delta_y[1]);
			break;
	}
}

double
mcc_synth_orientation(const mcc_synth_finger *f, double x, double y)
{
	double		t = f->theta_inf;

	if (f->cls == MCC_SYNTH_ARCH)
	{
		double		X = x - f->cx;
		double		Y = f->cy - y;
		double		lift = (Y + f->b) / (2.0 * f->b);
		double		q,
					slope;

		/* ridges rise more towards the top of the finger */
		lift = lift < 0.0 ? 0.0 : (lift > 1.0 ? 1.0 : lift);
		q = 1.0 + (X * X) / (f->arch_width * f->arch_width);
		slope = -2.0 * f->arch_height * lift * X /
			(f->arch_width * f->arch_width * q * q);
		t += mcc_dm_atan2(slope, 1.0);
	}
	else
	{
		for (int i = 0; i < f->n_cores; i++)
			t += 0.5 * mcc_dm_atan2(f->core_y[i] - y, x - f->core_x[i]);
		for (int i = 0; i < f->n_deltas; i++)
			t -= 0.5 * mcc_dm_atan2(f->delta_y[i] - y, x - f->delta_x[i]);
	}
	/* orientation is defined modulo pi */
	t = fmod(t, MCC_DM_PI);
	if (t < 0.0)
		t += MCC_DM_PI;
	if (t >= MCC_DM_PI)
		t = 0.0;
	return t;
}
