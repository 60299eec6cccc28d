/*
 * mcc_detmath.c: reproducible sin, cos, atan2 and log from basic IEEE
 * operations (see mcc_detmath.h for why).
 *
 * Methods: Cody-Waite reduction by pi/2 and Taylor polynomials on
 * [-pi/4, pi/4] for sin and cos; reduction to [0, tan(pi/12)] and the
 * arctangent series for atan2; frexp and the atanh series for log. The
 * polynomial degrees keep the truncation error below 1e-17.
 */
#include "mcc_detmath.h"

#include <math.h>

/* pi/2 in three parts; the first two have trailing zero bits (fdlibm) */
#define PIO2_1		1.57079632673412561417e+00
#define PIO2_2		6.07710050630396597660e-11
#define PIO2_3		2.02226624871116645580e-21
#define INV_PIO2	6.36619772367581382433e-01
#define LN2_HI		6.93147180369123816490e-01
#define LN2_LO		1.90821492927058770002e-10
#define SQRT_HALF	0.70710678118654752440
#define TAN_PI_12	0.26794919243112270647
#define SQRT3		1.73205080756887729353
#define PI_6		0.52359877559829887308

/* sin on [-pi/4, pi/4]: Taylor series to r^17 in Horner form. */
static double
sin_kernel(double r)
{
	double		z = r * r;

	return r + r * z * (-1.0 / 6 + z * (1.0 / 120 + z * (-1.0 / 5040 +
		z * (1.0 / 362880 + z * (-1.0 / 39916800 + z * (1.0 / 6227020800.0 +
		z * (-1.0 / 1307674368000.0 + z * (1.0 / 355687428096000.0))))))));
}

/* cos on [-pi/4, pi/4]: Taylor series to r^18 in Horner form. */
static double
cos_kernel(double r)
{
	double		z = r * r;

	return 1.0 + z * (-1.0 / 2 + z * (1.0 / 24 + z * (-1.0 / 720 +
		z * (1.0 / 40320 + z * (-1.0 / 3628800 + z * (1.0 / 479001600.0 +
		z * (-1.0 / 87178291200.0 + z * (1.0 / 20922789888000.0 +
		z * (-1.0 / 6402373705728000.0)))))))));
}

void
mcc_dm_sincos(double x, double *s, double *c)
{
	double		k,
				r,
				sr,
				cr;
	long		q;

	if (!isfinite(x))
	{
		*s = *c = NAN;
		return;
	}
	/* x = k pi/2 + r with |r| <= pi/4 (a bit more for huge x) */
	k = floor(x * INV_PIO2 + 0.5);
	r = ((x - k * PIO2_1) - k * PIO2_2) - k * PIO2_3;
	sr = sin_kernel(r);
	cr = cos_kernel(r);
	q = (long) fmod(k, 4.0);
	if (q < 0)
		q += 4;
	switch (q)
	{
		case 0:
			*s = sr;
			*c = cr;
			break;
		case 1:
			*s = cr;
			*c = -sr;
			break;
		case 2:
			*s = -sr;
			*c = -cr;
			break;
		default:
			*s = -cr;
			*c = sr;
			break;
	}
}

double
mcc_dm_sin(double x)
{
	double		s,
				c;

	mcc_dm_sincos(x, &s, &c);
	return s;
}

double
mcc_dm_cos(double x)
{
	double		s,
				c;

	mcc_dm_sincos(x, &s, &c);
	return c;
}

/* atan(t) for 0 <= t <= 1. */
static double
atan_unit(double t)
{
	double		base = 0.0,
				z,
				p;

	/* atan(t) = pi/6 + atan((t sqrt3 - 1) / (sqrt3 + t)) moves t below tan(pi/12) */
	if (t > TAN_PI_12)
	{
		t = (t * SQRT3 - 1.0) / (SQRT3 + t);
		base = PI_6;
	}
	/* |t| <= 0.268: 16 terms of t - t^3/3 + t^5/5 - ... reach 1e-18 */
	z = t * t;
	p = 0.0;
	for (int n = 15; n >= 1; n--)
		p = z * ((n % 2 ? -1.0 : 1.0) / (2 * n + 1) + p);
	return base + (t + t * p);
}

double
mcc_dm_atan2(double y, double x)
{
	double		ax = fabs(x),
				ay = fabs(y),
				a;

	if (isnan(x) || isnan(y))
		return NAN;
	if (ax == 0.0 && ay == 0.0)
		return 0.0;
	if (isinf(ax) || isinf(ay))
	{
		/* only the generator's finite inputs matter; keep it defined */
		a = isinf(ax) && isinf(ay) ? MCC_DM_PI / 4 : (isinf(ax) ? 0.0 : MCC_DM_PI / 2);
	}
	else if (ay <= ax)
		a = atan_unit(ay / ax);
	else
		a = MCC_DM_PI / 2 - atan_unit(ax / ay);
	if (x < 0)
		a = MCC_DM_PI - a;
	return y < 0 ? -a : a;
}

double
mcc_dm_log(double x)
{
	double		m,
				s,
				z,
				p;
	int			e;

	if (isnan(x) || x < 0)
		return NAN;
	if (x == 0)
		return -HUGE_VAL;
	if (isinf(x))
		return x;
	m = frexp(x, &e);			/* exact: x = m 2^e, 0.5 <= m < 1 */
	if (m < SQRT_HALF)
	{
		m *= 2.0;
		e--;
	}
	/* log m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.1716 */
	s = (m - 1.0) / (m + 1.0);
	z = s * s;
	p = 0.0;
	for (int n = 12; n >= 1; n--)
		p = z * (1.0 / (2 * n + 1) + p);
	return e * LN2_HI + (e * LN2_LO + 2.0 * (s + s * p));
}
