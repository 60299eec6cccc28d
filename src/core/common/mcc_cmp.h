/*
 * mcc_cmp.h: three-way comparison (-1, 0, 1) for the qsort comparators of
 * src/core, the engine, the tests and the tools, so that a comparator
 * reads one line a key:
 *
 *     int         c = MCC_CMP(x->block, y->block);
 *
 *     c = MCC_CMP_THEN(c, x->band, y->band);
 *     return MCC_CMP_THEN(c, x->len, y->len);
 *
 * Descending order swaps the arguments: MCC_CMP(y->score, x->score). A
 * later key is read only when the earlier ones tie. MCC_CMP(a, b) is
 * a != b ? (a < b ? -1 : 1) : 0, so a NaN sorts as in the chains of
 * "if (a != b) return a < b ? -1 : 1;" it replaced. The arguments are
 * read more than once: give it plain values, not calls.
 */
#ifndef MCC_CMP_H
#define MCC_CMP_H

#include <stdint.h>

#define MCC_CMP(a, b)	((a) != (b) ? ((a) < (b) ? -1 : 1) : 0)

/* c if it is not a tie, else the comparison of a and b. */
#define MCC_CMP_THEN(c, a, b)	((c) != 0 ? (c) : MCC_CMP(a, b))

/* qsort order of an array of uint64_t, ascending. */
static inline int
mcc_cmp_u64(const void *a, const void *b)
{
	return MCC_CMP(*(const uint64_t *) a, *(const uint64_t *) b);
}

/* qsort order of an array of double, descending (a NaN ties with anything). */
static inline int
mcc_cmp_double_desc(const void *pa, const void *pb)
{
	double		a = *(const double *) pa;
	double		b = *(const double *) pb;

	return (a < b) - (a > b);
}

#endif							/* MCC_CMP_H */
