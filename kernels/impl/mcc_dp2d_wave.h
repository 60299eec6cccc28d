/*
 * mcc_dp2d_wave.h: the wavefront form of the constrained 1D-DP of
 * src/core/image/mcc_dp2d.h, as one warp computes it. Shared, unchanged, by the
 * CUDA kernels (kernels/impl/mcc_dp2d.cu) and by a host emulation of a warp
 * (test/unit/test_dp2d_wave.c), which checks this logic against the CPU
 * reference on machines without a GPU. Valid C11 and CUDA C++.
 *
 * A DP of n x m cells (rows i of the first sequence, columns j of the
 * second) is cut into 32 lanes of K = ceil(m / 32) columns: lane t owns
 * columns t K .. t K + K - 1 and, at step s, computes row i = s - t of
 * them (anti-diagonal wavefront over blocks of K columns). What a lane
 * needs from its left neighbour arrives by one shuffle of that
 * neighbour's last column per step:
 *   left_e, left_d  E and Dd of row i at column t K - 1 (computed by lane
 *                   t - 1 at step s - 1), the Dd for this row's first
 *                   non-diagonal move and, one step later, the E of the
 *                   diagonal move of the next row (kept in diag_prev);
 * lane 0 uses the border instead: E(i-1, -1) = 0 for i = 0 (the start
 * counts as a diagonal move), "no path" otherwise.
 *
 * Per cell, with the local cost d (|x - y| or a local distance):
 *   t = diag + d, Dd = t + d, mn = min(Dd(i-1, j), Dd(i, j-1)),
 *   E = min(t, mn) + d = min(Dd, Dn);
 * back-tracing bits as on the CPU: bit0 = Dd <= Dn, bit1 = Dd(i-1, j) <=
 * Dd(i, j-1). The warp stores them with ballots: word (s, c, b) holds bit
 * b of every lane's cell (s - t, t K + c) at bit t.
 *
 * Unsigned 32-bit arithmetic. "No path" starts at MCC_DP2D_WAVE_INF and
 * only grows; within the size limits (sides <= 512) no sum wraps: finite
 * row sums stay below 255 x 1024, finite image sums below 2^28, and an
 * unreachable cell below INF + 2^30 < 2^32.
 */
#ifndef MCC_DP2D_WAVE_H
#define MCC_DP2D_WAVE_H

#include <stdint.h>

#include "mcc_dp2d_trace.h"

#ifdef __CUDACC__
#define MCC_WAVE_FN static __host__ __device__ __forceinline__
#else
#define MCC_WAVE_FN static inline
#endif

#define MCC_DP2D_WAVE_KMAX	16	/* columns per lane: 32 x 16 = 512 */
#define MCC_DP2D_WAVE_INF	0x7FFFFFFFu

/* Columns per lane for m columns. */
MCC_WAVE_FN uint32_t
mcc_dp2d_wave_k(uint32_t m)
{
	return (m + 31) / 32;
}

/* Steps of the wavefront: the last lane with a real column ends it. */
MCC_WAVE_FN uint32_t
mcc_dp2d_wave_steps(uint32_t n, uint32_t m)
{
	return n + (m - 1) / mcc_dp2d_wave_k(m);
}

/* One lane's state: its columns' E and Dd of the last row done. */
typedef struct mcc_dp2d_lane
{
	uint32_t	e[MCC_DP2D_WAVE_KMAX];
	uint32_t	d[MCC_DP2D_WAVE_KMAX];
	uint32_t	diag_prev;		/* E(i-1, tK - 1): the left neighbour's E a step ago */
} mcc_dp2d_lane;

/* A lane before the first row: no path anywhere. */
MCC_WAVE_FN void
mcc_dp2d_lane_init(mcc_dp2d_lane *st, uint32_t k)
{
	for (uint32_t c = 0; c < k; c++)
	{
		st->e[c] = MCC_DP2D_WAVE_INF;
		st->d[c] = MCC_DP2D_WAVE_INF;
	}
	st->diag_prev = MCC_DP2D_WAVE_INF;
}

MCC_WAVE_FN uint32_t
mcc_dp2d_umin(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/*
 * Row i of lane t's k columns (the lane is active: 0 <= i < n), local
 * costs cost[c]. left_e / left_d: the shuffle from lane t - 1. Sets bit c
 * of *b0 / *b1 to the back-tracing bits of column c (when b0 is not NULL).
 */
MCC_WAVE_FN void
mcc_dp2d_lane_row(mcc_dp2d_lane *st, uint32_t k, uint32_t t, uint32_t i, const uint32_t *cost,
				  uint32_t left_e, uint32_t left_d, uint32_t *b0, uint32_t *b1)
{
	uint32_t	diag = t == 0 ? (i == 0 ? 0u : MCC_DP2D_WAVE_INF) : st->diag_prev;
	uint32_t	left = t == 0 ? MCC_DP2D_WAVE_INF : left_d;

	for (uint32_t c = 0; c < k; c++)
	{
		uint32_t	d = cost[c];
		uint32_t	old_e = st->e[c];
		uint32_t	up = st->d[c];
		uint32_t	tt = diag + d;
		uint32_t	dd = tt + d;
		uint32_t	mn = mcc_dp2d_umin(up, left);
		uint32_t	e = mcc_dp2d_umin(tt, mn) + d;

		if (b0)
		{
			*b0 |= (uint32_t) (dd <= mn + d) << c;
			*b1 |= (uint32_t) (up <= left) << c;
		}
		st->e[c] = e;
		st->d[c] = dd;
		diag = old_e;
		left = dd;
	}
	(void) left_e;
}

/* After every step, active or not: the left E just received is next row's diagonal. */
MCC_WAVE_FN void
mcc_dp2d_lane_shift(mcc_dp2d_lane *st, uint32_t left_e)
{
	st->diag_prev = left_e;
}

/* Bit b of cell (i, j) from the ballot words of a wavefront with k columns per lane. */
MCC_WAVE_FN uint32_t
mcc_dp2d_wave_bit(const uint32_t *words, uint32_t k, uint32_t i, uint32_t j, uint32_t b)
{
	uint32_t	t = j / k,
				c = j % k;

	return (words[((size_t) (i + t) * k + c) * 2 + b] >> t) & 1u;
}

/*
 * Back-trace an n x m wavefront from its ballot words into map[i] = the
 * first column paired with row i (the tie rules of mcc_dp2d.h).
 */
MCC_WAVE_FN void
mcc_dp2d_wave_trace(const uint32_t *words, uint32_t k, uint32_t n, uint32_t m, uint32_t *map)
{
#define MCC_WAVE_BIT(i, j, b) mcc_dp2d_wave_bit(words, k, (i), (j), (b))
	MCC_DP2D_BACK_TRACE(n, m, map, MCC_WAVE_BIT);
#undef MCC_WAVE_BIT
}

#endif							/* MCC_DP2D_WAVE_H */
