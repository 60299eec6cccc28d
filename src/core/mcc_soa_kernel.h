/*
 * mcc_soa_kernel.h: the body of the SIMD scan kernels, included by
 * mcc_soa_avx2.c and mcc_soa_avx512.c after they define
 *
 *   SCAN_FN          the kernel's name (mcc_soa_int.h declares it)
 *   SCAN_ATTR        its target attribute
 *   GVEC             the vector type of a broadcast gallery word
 *   GBROADCAST(w)    a GVEC with the 64-bit word w in every lane
 *   VOTES8(p, g0, g1, g2, g3, rr, out)
 *                    the votes of probe cylinders p[0..7] (word-major, stride
 *                    MCC_PROBE_DBL) against the gallery cylinder of words
 *                    g0..g3, with rcp row rr, as 8 bytes at out
 *   PAD_VOTES(out)   store "no vote" (w) over the bytes LOWEST_SUM may read
 *                    past the last vote
 *   LOWEST_SUM(d, nv, np)
 *                    the sum of the np smallest of the nv votes at d
 *
 * For each gallery cylinder j, the probe cylinders that pass the angular
 * gate are one contiguous run of the probe's doubled angle order
 * (mcc_probe_int.h), taken 8 at a time. Lanes past the run compute from
 * padding or from real pairs and are overwritten by the next cylinder's
 * votes or by the final padding. Instead of a 64-bucket histogram (scalar
 * increments cost more than all the vector work), the template's n_p lowest
 * votes are selected from the byte array (LOWEST_SUM).
 */

/* Score template k: the SIMD path for mask-less profiles of 4 words. */
SCAN_ATTR static float
score_template(const mcc_probe *q, const mcc_soa *g, uint32_t k, uint8_t *dall)
{
	uint32_t	j0 = g->first[k];
	uint32_t	j1 = g->first[k + 1];
	size_t		cap = g->cap_cyl;
	int			nv = 0;
	int			np;

	if (q->n == 0 || j0 == j1)
		return 0.0f;
	for (uint32_t j = j0; j < j1; j++)
	{
		int			a = g->angle[j];
		int			c = q->lt_count[a];
		int			s = q->lt_start[a];
		int			pcg = g->pc[j];
		const uint32_t *rr;
		GVEC		g0;
		GVEC		g1;
		GVEC		g2;
		GVEC		g3;

		if (c == 0)
			continue;
		if (pcg == 0 && q->zero_pc)
		{
			nv += mcc_soa_votes_den0(q, g, j, dall + nv);
			continue;
		}
		g0 = GBROADCAST(g->bits[j]);
		g1 = GBROADCAST(g->bits[cap + j]);
		g2 = GBROADCAST(g->bits[2 * cap + j]);
		g3 = GBROADCAST(g->bits[3 * cap + j]);
		rr = q->rcp + (size_t) pcg * q->rcp_stride + s;
		for (int l = 0; l < c; l += 8)
			VOTES8(&q->soa[0][s + l], g0, g1, g2, g3, rr + l, dall + nv + l);
		nv += c;				/* lanes past the run are overwritten or padded */
	}
	PAD_VOTES(dall + nv);
	np = q->np[j1 - j0];
	return mcc_lss_from_sum(np, LOWEST_SUM(dall, nv, np));
}

/*
 * The SIMD path needs a mask-less profile of 4 words (the probe then has rcp
 * rows) and round-to-nearest for its float square roots; anything else
 * takes the POPCNT kernel, with the same scores.
 */
SCAN_ATTR void
SCAN_FN(const mcc_probe *q, const mcc_soa *g, uint32_t t0, uint32_t t1, float *scores)
{
	uint8_t		dall[MCC_MAX_CYL * MCC_MAX_CYL + 128] __attribute__((aligned(64)));

	if (q->rcp_stride == 0 || g->words != 4 ||
		(_mm_getcsr() & _MM_ROUND_MASK) != _MM_ROUND_NEAREST)
	{
		mcc_scan_popcnt(q, g, t0, t1, scores);
		return;
	}
	for (uint32_t k = t0; k < t1; k++)
		scores[k - t0] = score_template(q, g, k, dall);
}
