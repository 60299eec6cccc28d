/*
 * testsort.h: the qsort orders of numbers that the tests, tools and
 * benchmarks sort (timings for medians, scores for thresholds), ascending
 * and descending, for double and float, and the median of doubles.
 * Unordered values (NaN) compare equal, as with the relational operators.
 */
#ifndef MCC_TESTSORT_H
#define MCC_TESTSORT_H

#include <stdlib.h>

/*
 * tsort_double_asc, tsort_double_desc, tsort_float_asc, tsort_float_desc:
 * the order of T ascending, and descending (the ascending one reversed).
 */
#define TSORT_ORDERS(T) \
static inline int \
tsort_##T##_asc(const void *a, const void *b) \
{ \
	T			x = *(const T *) a; \
	T			y = *(const T *) b; \
 \
	return (x > y) - (x < y); \
} \
 \
static inline int \
tsort_##T##_desc(const void *a, const void *b) \
{ \
	return tsort_##T##_asc(b, a); \
}

TSORT_ORDERS(double)
TSORT_ORDERS(float)

/* The median of v[0 .. n), n >= 1 (sorts v): the mean of the middle two for even n. */
static inline double
tsort_median(double *v, int n)
{
	qsort(v, n, sizeof(double), tsort_double_asc);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif							/* MCC_TESTSORT_H */
