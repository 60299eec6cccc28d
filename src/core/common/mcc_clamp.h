/*
 * mcc_clamp.h: a value brought into a range [lo, hi], one expression where
 * the code read
 *
 *     if (v < lo)
 *         v = lo;
 *     if (v > hi)
 *         v = hi;
 *
 * The lower bound is applied first, so where lo > hi the result is hi, as
 * in those chains (a count capped by what there is wins over the count
 * asked for). Like MCC_CMP (mcc_cmp.h) it reads its arguments more than
 * once and compares them in their own types: give it plain values of one
 * signedness, not calls.
 */
#ifndef MCC_CLAMP_H
#define MCC_CLAMP_H

#define MCC_CLAMP(v, lo, hi) \
	((v) < (lo) ? ((lo) > (hi) ? (hi) : (lo)) : ((v) > (hi) ? (hi) : (v)))

#endif							/* MCC_CLAMP_H */
