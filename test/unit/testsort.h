/*
 * testsort.h: the qsort orders of numbers that the tests, tools and
 * benchmarks sort (timings for medians, scores for thresholds), ascending
 * and descending, for double and float. Unordered values (NaN) compare
 * equal, as with the relational operators.
 */
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

#endif							/* MCC_TESTSORT_H */
