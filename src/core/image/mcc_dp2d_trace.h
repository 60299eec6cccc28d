/*
 * mcc_dp2d_trace.h: the back-trace of a constrained 1D-DP (mcc_dp2d.h),
 * written once for every form that stores its direction bits differently:
 * the CPU's outer DP (a byte a cell), the CPU lanes' row DPs (mask words)
 * and the GPU wavefront (ballot words, kernels/impl/mcc_dp2d_wave.h).
 * A macro, not a function, so that CUDA device code and C expand the same
 * walk around their own bit reads, with no call through a pointer.
 */
#ifndef MCC_DP2D_TRACE_H
#define MCC_DP2D_TRACE_H

#include <stdint.h>

/*
 * Walk an n x m DP back from cell (n-1, m-1) into map[i] = the first
 * column paired with row i (the tie rules of mcc_dp2d.h). BIT(i, j, b) is
 * an expression: b = 0, cell (i, j) came from the diagonal; b = 1, up was
 * at least as good as left.
 */
#define MCC_DP2D_BACK_TRACE(n, m, map, BIT) \
	do \
	{ \
		uint32_t	i_ = (n) - 1, \
					j_ = (m) - 1; \
		uint32_t	diagonal_ = BIT(i_, j_, 0); \
\
		for (;;) \
		{ \
			(map)[i_] = j_; \
			if (i_ == 0 && j_ == 0) \
				break; \
			if (diagonal_) \
			{ \
				i_--; \
				j_--; \
				diagonal_ = BIT(i_, j_, 0); \
			} \
			else \
			{ \
				if (BIT(i_, j_, 1)) \
					i_--; \
				else \
					j_--; \
				diagonal_ = 1; \
			} \
		} \
	} while (0)

#endif							/* MCC_DP2D_TRACE_H */
