/*
 * refcyl.h: two formulas of mcc-spec §3 written out plainly, for the
 * brute-force cylinder references of test_cylinder.c and test_fvc.c (they
 * share no code with src/core on purpose).
 */
#ifndef MCC_REFCYL_H
#define MCC_REFCYL_H

#include <math.h>

/* Angle difference wrapped into [-pi, pi). */
static inline double
ref_dphi(double a, double b)
{
	double		d = a - b;

	while (d < -M_PI)
		d += 2 * M_PI;
	while (d >= M_PI)
		d -= 2 * M_PI;
	return d;
}

/* Gaussian mass of sigma_d on [alpha - w/2, alpha + w/2]. */
static inline double
ref_gd(double alpha, double sigma_d, double w)
{
	return 0.5 * (erf((alpha + w / 2) / (sigma_d * M_SQRT2)) -
				  erf((alpha - w / 2) / (sigma_d * M_SQRT2)));
}

#endif
