/*
 * mcc_detmath.h: deterministic elementary functions.
 *
 * The C library's sin, cos, atan2, log and exp may differ in the last bit
 * from one libm to another (glibc, musl, macOS, across versions and CPU
 * variants). The synthetic generator must give byte-identical minutiae on
 * every machine, and some of its decisions are discrete (is this minutia
 * inside the sensor window, which of two rounding neighbours is nearest), so
 * it uses these instead: they are built only from IEEE 754 operations that
 * are correctly rounded everywhere (+, -, *, /, sqrt, frexp, ldexp, floor).
 * Given the same double inputs they return the same bits on any IEEE 754
 * machine, as long as the compiler neither fuses multiply-adds nor keeps
 * extended precision: the Makefile builds src/core with -ffp-contract=off,
 * and x86-64 (SSE2) and AArch64 have no excess precision.
 *
 * Accuracy is a few units in the last place for the arguments the generator
 * uses (|x| below about 1e6 for the trigonometric functions); they are not
 * correctly rounded, only reproducible.
 */
#ifndef MCC_DETMATH_H
#define MCC_DETMATH_H

#define MCC_DM_PI		3.14159265358979323846

/* sin(x) and cos(x), both at once. */
void		mcc_dm_sincos(double x, double *s, double *c);

/* sin(x). */
double		mcc_dm_sin(double x);

/* cos(x). */
double		mcc_dm_cos(double x);

/* atan2(y, x) in [-pi, pi]; 0 for (0, 0). */
double		mcc_dm_atan2(double y, double x);

/* Natural logarithm of x > 0 (-HUGE_VAL for 0, NaN for x < 0). */
double		mcc_dm_log(double x);

#endif							/* MCC_DETMATH_H */
