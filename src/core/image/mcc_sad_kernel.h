/*
 * mcc_sad_kernel.h: the body of the SIMD band kernels, included by
 * mcc_sad_sse2.c, mcc_sad_avx2.c and mcc_sad_avx512.c after they define
 *
 *   KERNEL_FN        the function's name
 *   KERNEL_ATTR      its target attribute (or nothing)
 *   VEC              the vector type; VBYTES its width in bytes
 *   BX, BY           map columns and rows per block (BX * BY accumulators)
 *   VZERO()          a zero vector
 *   VLOADU(p)        an unaligned load of VBYTES bytes
 *   VSAD(a, b)       PSADBW: per 8-byte group, the 64-bit sum of |a - b|
 *   VADD(a, b)       64-bit lane addition
 *   VHSUM(v)         the sum of the 64-bit lanes
 *
 * For a block of BX x BY positions, every pattern row vector is loaded once
 * and compared with the BX x BY target vectors under it, one accumulator
 * per position (mcc_sad_int.h gives the padded layout that makes every load
 * safe and the padding exact).
 */

/* Raw padded sums of the map rows y0 .. y0 + BY - 1 (mcc_sad_int.h). */
KERNEL_ATTR static void
KERNEL_FN(const struct mcc_sad_plan *pl, uint32_t y0, uint64_t *out)
{
	const uint32_t h = pl->pattern->height;
	const uint32_t nch = pl->nch;
	const uint32_t cw = pl->cw;
	const size_t ts = pl->tstride;
	const uint32_t nxp = pl->nxp;

	for (uint32_t x0 = 0; x0 < nxp; x0 += BX)
	{
		VEC			acc[BY][BX];

#pragma GCC unroll 16
		for (int dy = 0; dy < BY; dy++)
#pragma GCC unroll 16
			for (int dx = 0; dx < BX; dx++)
				acc[dy][dx] = VZERO();
		for (uint32_t r = 0; r < h; r++)
		{
			const uint8_t *prow = pl->pp + (size_t) r * cw;
			const uint8_t *trow = pl->tp + (size_t) (y0 + r) * ts + x0;

			for (uint32_t j = 0; j < nch; j++)
			{
				const VEC	pv = VLOADU(prow + (size_t) j * VBYTES);
				const uint8_t *tj = trow + (size_t) j * VBYTES;

#pragma GCC unroll 16
				for (int dy = 0; dy < BY; dy++)
#pragma GCC unroll 16
					for (int dx = 0; dx < BX; dx++)
						acc[dy][dx] = VADD(acc[dy][dx],
										   VSAD(VLOADU(tj + (size_t) dy * ts + dx), pv));
			}
		}
#pragma GCC unroll 16
		for (int dy = 0; dy < BY; dy++)
#pragma GCC unroll 16
			for (int dx = 0; dx < BX; dx++)
				out[(size_t) dy * nxp + x0 + dx] = VHSUM(acc[dy][dx]);
	}
}
