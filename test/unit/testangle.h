/*
 * testangle.h: the difference of two directions, wrapped, as the tests
 * check rotations (test_align.c, test_sad_fvc.c). Written apart from
 * src/core's mcc_angle_* on purpose: the tests check that code.
 */
#ifndef MCC_TESTANGLE_H
#define MCC_TESTANGLE_H

#include <math.h>

/* a - b wrapped into (-pi, pi]. */
static inline double
tangle_sub(double a, double b)
{
	double		d = fmod(a - b, 2 * M_PI);

	if (d > M_PI)
		d -= 2 * M_PI;
	if (d <= -M_PI)
		d += 2 * M_PI;
	return d;
}

#endif
