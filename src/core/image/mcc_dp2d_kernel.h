/*
 * mcc_dp2d_kernel.h: the body of the lane kernels of mcc_dp2d_int.h,
 * included by mcc_dp2d_lanes.c, mcc_dp2d_avx2.c and mcc_dp2d_avx512.c
 * after they define
 *
 *   LANES_FN         the function's name (an mcc_dp2d_lanes_fn)
 *   LANES_ATTR       its target attribute (or nothing)
 *   LANES_R          rows per register block (3 x LANES_R vectors stay live)
 *   VEC, ELEM, NL    the vector type, its element type and lane count
 *   VINF             "no path": 0xFFFF (saturating) or MCC_DP2D_INF32
 *   VLOAD(p), VSTORE(p, v), VSET1(x)
 *   VABSDIFF(a, b)   |a - b| per lane
 *   VADDS(a, b)      a + b per lane (saturating for 16-bit elements)
 *   VMIN(a, b)       unsigned minimum per lane
 *   VLE_BITS(a, b)   uint32_t with bit l set when lane l of a <= that of b
 *
 * The work array holds, for every column j of the previous row, E = min(Dd,
 * Dn) and Dd. Within a row, Dd(i, j) depends on the previous row only
 * (diagonal) and Dn(i, j) on Dd(i, j-1): no dependency runs from one
 * column's result to the next column's Dd, so the loop pipelines well.
 * Per cell: |x - y| (2-3 operations), t = diag + d, Dd = t + d,
 * mn = min(Dd(i-1, j), Dd(i, j-1)), E = min(t, mn) + d, which equals
 * min(Dd, Dn) since Dn = mn + d.
 */

/*
 * Rows i .. i + R - 1 of one DP of NL lanes, kept in registers: the work
 * array is read and written once per column for R rows, and b's element
 * once. R and with_masks are constants, so the variants unroll.
 */
LANES_ATTR static inline __attribute__((always_inline)) void
LANES_BLOCK(const ELEM *x, uint32_t i, const ELEM *y, uint32_t m, ELEM *E, ELEM *D,
			uint32_t *masks, const int R, const int with_masks)
{
	const VEC	inf = VSET1(VINF);
	VEC			xr[8],			/* R <= 8; a constant size, no VLA */
				diag[8],
				left[8];

#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
	{
		xr[r] = VLOAD(x + (size_t) (i + r) * NL);
		diag[r] = i + r == 0 ? VSET1(0) : inf;	/* E(i+r-1, -1) */
		left[r] = inf;			/* Dd(i+r, -1) */
	}
	for (uint32_t j = 0; j < m; j++)
	{
		const VEC	yj = VLOAD(y + (size_t) j * NL);
		VEC			up = VLOAD(D + (size_t) j * NL);	/* Dd(i-1, j) */
		VEC			above = VLOAD(E + (size_t) j * NL);	/* E(i-1, j) */

#pragma GCC unroll 8
		for (int r = 0; r < R; r++)
		{
			const VEC	d = VABSDIFF(xr[r], yj);
			const VEC	t = VADDS(diag[r], d);
			const VEC	dd = VADDS(t, d);	/* Dd = diag + 2d */
			const VEC	mn = VMIN(up, left[r]);
			const VEC	e = VADDS(VMIN(t, mn), d);	/* min(Dd, Dn) */

			if (with_masks)
			{
				uint32_t   *mk = masks + 2 * ((size_t) (i + r) * m + j);

				mk[0] = VLE_BITS(dd, VADDS(mn, d));
				mk[1] = VLE_BITS(up, left[r]);
			}
			diag[r] = above;	/* E(i+r-1, j): the next column's diagonal */
			above = e;
			left[r] = dd;
			up = dd;
		}
		VSTORE(E + (size_t) j * NL, above);
		VSTORE(D + (size_t) j * NL, up);
	}
}

/* One DP of NL lanes: rows LANES_R at a time, then one at a time. */
LANES_ATTR static inline __attribute__((always_inline)) void
LANES_BODY(const ELEM *x, uint32_t n, const ELEM *y, uint32_t m, ELEM *work,
		   uint32_t *masks, uint32_t *out, const int with_masks)
{
	const VEC	inf = VSET1(VINF);
	ELEM	   *E = work;
	ELEM	   *D = work + (size_t) m * NL;
	ELEM		last[NL] __attribute__((aligned(64)));
	uint32_t	i = 0;

	for (uint32_t j = 0; j < m; j++)
	{
		VSTORE(E + (size_t) j * NL, inf);
		VSTORE(D + (size_t) j * NL, inf);
	}
	for (; i + LANES_R <= n; i += LANES_R)
		LANES_BLOCK(x, i, y, m, E, D, masks, LANES_R, with_masks);
	for (; i < n; i++)
		LANES_BLOCK(x, i, y, m, E, D, masks, 1, with_masks);
	VSTORE(last, VLOAD(E + (size_t) (m - 1) * NL));
	for (int l = 0; l < NL; l++)
		out[l] = last[l];
}

/* The kernel: masks may be NULL. */
LANES_ATTR static void
LANES_FN(const void *x, uint32_t n, const void *y, uint32_t m, void *work, uint32_t *masks,
		 uint32_t *out)
{
	if (masks)
		LANES_BODY(x, n, y, m, work, masks, out, 1);
	else
		LANES_BODY(x, n, y, m, work, NULL, out, 0);
}

#undef LANES_FN
#undef LANES_BODY
#undef LANES_BLOCK
#undef LANES_R
#undef LANES_ATTR
#undef VEC
#undef ELEM
#undef NL
#undef VINF
#undef VLOAD
#undef VSTORE
#undef VSET1
#undef VABSDIFF
#undef VADDS
#undef VMIN
#undef VLE_BITS
