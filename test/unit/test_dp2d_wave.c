/*
 * test_dp2d_wave.c: the GPU's wavefront (kernels/impl/mcc_dp2d_wave.h) run by a
 * host emulation of a warp: 32 lanes in lock step, shuffles and ballots
 * emulated exactly as kernels/impl/mcc_dp2d.cu uses them. It checks, without a
 * GPU, the part of the GPU algorithm most likely to be wrong (lane
 * boundaries, the one-step delay of the diagonal, borders, the ballot
 * layout and back-tracing from it) against the CPU reference: row costs
 * against brute-force-checked mcc_dp2d_seq_cost, paths against
 * mcc_dp2d_seq_path, and whole pairs (rows, DP over rows, warp) against
 * mcc_dp2d_match with the reference kernel. make gpu-check-dp2d compares
 * the real GPU with the CPU on a device.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_dp2d.h"
#include "mcc_rng.h"
#include "unit.h"

#include "../../kernels/impl/mcc_dp2d_wave.h"

/* Local cost of cell (i, j) of an emulated wavefront. */
typedef uint32_t (*cost_fn) (const void *arg, uint32_t i, uint32_t j);

/*
 * Run an n x m wavefront on an emulated warp; words (room for
 * 2 k steps words, or NULL) gets the ballots. Returns E(n-1, m-1).
 */
static uint32_t
emulate(uint32_t n, uint32_t m, cost_fn cost, const void *arg, uint32_t *words)
{
	mcc_dp2d_lane lane[32];
	uint32_t	k = mcc_dp2d_wave_k(m);
	uint32_t	steps = mcc_dp2d_wave_steps(n, m);
	uint32_t	tl = (m - 1) / k,
				cl = (m - 1) % k;

	for (int t = 0; t < 32; t++)
		mcc_dp2d_lane_init(&lane[t], k);
	for (uint32_t s = 0; s < steps; s++)
	{
		uint32_t	last_e[32],
					last_d[32];

		/* __shfl_up_sync(.., 1) of every lane's last column, before the step */
		for (int t = 0; t < 32; t++)
		{
			last_e[t] = lane[t].e[k - 1];
			last_d[t] = lane[t].d[k - 1];
		}
		if (words)
			memset(words + (size_t) s * k * 2, 0, k * 2 * sizeof(uint32_t));
		for (uint32_t t = 0; t < 32; t++)
		{
			uint32_t	le = t ? last_e[t - 1] : last_e[0];
			uint32_t	ld = t ? last_d[t - 1] : last_d[0];
			int64_t		i = (int64_t) s - t;

			if (i >= 0 && i < n)
			{
				uint32_t	c_[MCC_DP2D_WAVE_KMAX];
				uint32_t	b0 = 0,
							b1 = 0;

				for (uint32_t c = 0; c < k; c++)
					c_[c] = t * k + c < m ? cost(arg, (uint32_t) i, t * k + c) : 0;
				mcc_dp2d_lane_row(&lane[t], k, t, (uint32_t) i, c_, le, ld, &b0, &b1);
				/* __ballot_sync per column and bit */
				if (words)
					for (uint32_t c = 0; c < k; c++)
					{
						words[((size_t) s * k + c) * 2] |= ((b0 >> c) & 1u) << t;
						words[((size_t) s * k + c) * 2 + 1] |= ((b1 >> c) & 1u) << t;
					}
			}
			mcc_dp2d_lane_shift(&lane[t], le);
		}
	}
	return lane[tl].e[cl];
}

typedef struct seq_arg
{
	const uint8_t *x;
	const uint8_t *y;
} seq_arg;

/* |x[i] - y[j]| */
static uint32_t
seq_cost(const void *arg, uint32_t i, uint32_t j)
{
	const seq_arg *a = arg;

	return a->x[i] > a->y[j] ? a->x[i] - a->y[j] : a->y[j] - a->x[i];
}

typedef struct mat_arg
{
	const uint32_t *c;
	uint32_t	m;
} mat_arg;

/* A local distance matrix. */
static uint32_t
mat_cost(const void *arg, uint32_t i, uint32_t j)
{
	const mat_arg *a = arg;

	return a->c[(size_t) i * a->m + j];
}

/* Sequences: cost and first-column maps of the emulated warp vs the CPU. */
static void
test_sequences(void)
{
	mcc_rng		r;
	static const uint32_t lens[][2] = {
		{1, 1}, {1, 2}, {2, 1}, {5, 7}, {31, 32}, {32, 33}, {33, 40}, {40, 64}, {65, 64},
		{85, 85}, {100, 97}, {128, 128}, {200, 255}, {256, 256}, {300, 511}, {512, 512}, {260, 512}
	};
	int			bad_cost = 0,
				bad_map = 0,
				n_cases = 0;

	mcc_rng_seed(&r, 11);
	for (size_t t = 0; t < sizeof(lens) / sizeof(lens[0]); t++)
		for (int rep = 0; rep < 3; rep++)
		{
			uint32_t	n = lens[t][0],
						m = lens[t][1];
			uint8_t    *x = malloc(n),
					   *y = malloc(m);
			uint32_t	k = mcc_dp2d_wave_k(m);
			uint32_t   *words = malloc((size_t) mcc_dp2d_wave_steps(n, m) * k * 2 * sizeof(uint32_t));
			uint32_t   *pi = malloc((n + m) * sizeof(uint32_t)),
					   *pj = malloc((n + m) * sizeof(uint32_t));
			uint32_t   *map = malloc(n * sizeof(uint32_t)),
					   *ref = malloc(n * sizeof(uint32_t));
			uint32_t	range = rep == 0 ? 2 : 256,
						len,
						e;
			seq_arg		arg = {x, y};

			for (uint32_t i = 0; i < n; i++)
				x[i] = (uint8_t) mcc_rng_below(&r, range);
			for (uint32_t j = 0; j < m; j++)
				y[j] = (uint8_t) mcc_rng_below(&r, range);
			e = emulate(n, m, seq_cost, &arg, words);
			if ((uint64_t) e != mcc_dp2d_seq_cost(x, n, y, m))
				bad_cost++;
			mcc_dp2d_wave_trace(words, k, n, m, map);
			len = mcc_dp2d_seq_path(x, n, y, m, pi, pj);
			for (uint32_t q = len; q-- > 0;)
				ref[pi[q]] = pj[q];	/* the first j of each i wins */
			if (len == 0 || memcmp(map, ref, n * sizeof(uint32_t)) != 0)
				bad_map++;
			n_cases++;
			free(x);
			free(y);
			free(words);
			free(pi);
			free(pj);
			free(map);
			free(ref);
		}
	UNIT_CHECK(bad_cost == 0, "emulated warp: row costs equal the CPU's (%d cases, 1..16 columns per lane, %d wrong)",
			   n_cases, bad_cost);
	UNIT_CHECK(bad_map == 0, "emulated warp: back-tracing from ballots gives the CPU's maps (%d wrong)",
			   bad_map);
}

/*
 * A whole pair the way the GPU computes it: every row pair's cost
 * (kernel 1), the DP over rows with ballots and back-tracing (kernel 2),
 * the row pairs on the path again with ballots, column maps, the warp and
 * the differences (kernel 3); against the CPU reference.
 */
static void
test_pairs(void)
{
	mcc_rng		r;
	static const uint32_t sizes[][4] = {
		{8, 8, 8, 8}, {20, 17, 25, 30}, {33, 40, 40, 33}, {64, 64, 64, 64}, {85, 12, 85, 12},
		{130, 5, 140, 6}, {3, 60, 4, 70}
	};

	mcc_rng_seed(&r, 12);
	for (size_t t = 0; t < sizeof(sizes) / sizeof(sizes[0]); t++)
		for (int rep = 0; rep < 2; rep++)
		{
			uint32_t	wa = sizes[t][0],
						ha = sizes[t][1],
						wb = sizes[t][2],
						hb = sizes[t][3];
			uint8_t    *pa = malloc((size_t) wa * ha),
					   *pb = malloc((size_t) wb * hb);
			mcc_image	a = {wa, ha, wa, pa},
						b = {wb, hb, wb, pb};
			uint32_t   *cost = malloc((size_t) ha * hb * sizeof(uint32_t));
			uint32_t	ko = mcc_dp2d_wave_k(hb),
						ki = mcc_dp2d_wave_k(wb);
			uint32_t   *ow = malloc((size_t) mcc_dp2d_wave_steps(ha, hb) * ko * 2 * sizeof(uint32_t));
			uint32_t   *iw = malloc((size_t) mcc_dp2d_wave_steps(wa, wb) * ki * 2 * sizeof(uint32_t));
			uint32_t   *rmap = malloc(ha * sizeof(uint32_t)),
					   *cmap = malloc((size_t) ha * wa * sizeof(uint32_t));
			uint8_t    *warped = malloc((size_t) ha * wa);
			uint64_t	total,
						diffs = 0;
			mcc_dp2d_out ref = {0};
			mcc_error	err;
			int			same_row_costs = 1,
						same;
			mat_arg		ma = {cost, hb};

			for (size_t q = 0; q < (size_t) wa * ha; q++)
				pa[q] = (uint8_t) mcc_rng_below(&r, rep ? 256 : 3);
			for (size_t q = 0; q < (size_t) wb * hb; q++)
				pb[q] = (uint8_t) mcc_rng_below(&r, rep ? 256 : 3);
			for (uint32_t i = 0; i < ha; i++)
				for (uint32_t j = 0; j < hb; j++)
				{
					seq_arg		sa = {pa + (size_t) i * wa, pb + (size_t) j * wb};

					cost[(size_t) i * hb + j] = emulate(wa, wb, seq_cost, &sa, NULL);
				}
			total = emulate(ha, hb, mat_cost, &ma, ow);
			mcc_dp2d_wave_trace(ow, ko, ha, hb, rmap);
			for (uint32_t i = 0; i < ha; i++)
			{
				seq_arg		sa = {pa + (size_t) i * wa, pb + (size_t) rmap[i] * wb};

				if (emulate(wa, wb, seq_cost, &sa, iw) != cost[(size_t) i * hb + rmap[i]])
					same_row_costs = 0;
				mcc_dp2d_wave_trace(iw, ki, wa, wb, cmap + (size_t) i * wa);
				for (uint32_t p = 0; p < wa; p++)
				{
					uint8_t		v = pb[(size_t) rmap[i] * wb + cmap[(size_t) i * wa + p]];

					warped[(size_t) i * wa + p] = v;
					diffs += v != pa[(size_t) i * wa + p];
				}
			}
			ref.row_map = malloc(ha * sizeof(uint32_t));
			ref.col_map = malloc((size_t) ha * wa * sizeof(uint32_t));
			ref.warped = malloc((size_t) ha * wa);
			same = mcc_dp2d_match(&a, &b, MCC_DP2D_REFERENCE, MCC_DP2D_WARP, &ref, &err) == MCC_OK &&
				same_row_costs && total == ref.cost && diffs == ref.differences &&
				memcmp(rmap, ref.row_map, ha * sizeof(uint32_t)) == 0 &&
				memcmp(cmap, ref.col_map, (size_t) ha * wa * sizeof(uint32_t)) == 0 &&
				memcmp(warped, ref.warped, (size_t) ha * wa) == 0;
			UNIT_CHECK(same, "emulated GPU pipeline == CPU reference: %ux%u onto %ux%u, values 0..%d "
					   "(cost %llu, %llu differences)", wb, hb, wa, ha, rep ? 255 : 2,
					   (unsigned long long) ref.cost, (unsigned long long) ref.differences);
			free(ref.row_map);
			free(ref.col_map);
			free(ref.warped);
			free(pa);
			free(pb);
			free(cost);
			free(ow);
			free(iw);
			free(rmap);
			free(cmap);
			free(warped);
		}
}

int
main(void)
{
	test_sequences();
	test_pairs();
	return unit_done();
}
