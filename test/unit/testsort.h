/*
 * testsort.h: the qsort orders of numbers that the tests, tools and
 * benchmarks sort (timings for medians, scores for thresholds), ascending
 * and descending, for double and float, and the median of doubles.
 * Unordered values (NaN) compare equal, as with the relational operators.
 */
#include <stdlib.h>

#ifndef MCC_TESTSORT_H
#define MCC_TESTSORT_H

/* Ascending doubles. */
static inline int
tsort_double_asc(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return (x > y) - (x < y);
}

/* Descending doubles. */
static inline int
tsort_double_desc(const void *a, const void *b)
{
	return tsort_double_asc(b, a);
}

/* Ascending floats. */
static inline int
tsort_float_asc(const void *a, const void *b)
{
	float		x = *(const float *) a;
	float		y = *(const float *) b;

	return (x > y) - (x < y);
}

/* Descending floats. */
static inline int
tsort_float_desc(const void *a, const void *b)
{
	return tsort_float_asc(b, a);
}

/* The median of v[0 .. n), n >= 1 (sorts v): the mean of the middle two for even n. */
static inline double
tsort_median(double *v, int n)
{
	qsort(v, n, sizeof(double), tsort_double_asc);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif							/* MCC_TESTSORT_H */
