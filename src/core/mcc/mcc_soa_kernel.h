/*
 * mcc_soa_kernel.h: the body of the SIMD scan kernels, included by
 * mcc_soa_avx2.c and mcc_soa_avx512.c after they define
 *
 *   SCAN_FN          the kernel's name (mcc_soa_int.h declares it)
 *   SCAN_VIEW_FN     its one-template form over a stored blob (the same)
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

/*
 * Where a template's cylinders lie: in a gallery's arrays (mcc_soa.h) or in
 * a stored blob (mcc_template.h), which differ only in the steps between
 * words, cylinders and metadata. score_cylinders is inlined into each
 * caller with its steps, so the SoA scan keeps its loads.
 */
typedef struct cyl_source
{
	const uint8_t *bits;		/* word 0 of the first cylinder */
	size_t		cyl_step;		/* bytes from one cylinder's words to the next's */
	size_t		word_step;		/* bytes from a cylinder's word to its next one */
	const uint8_t *angle;		/* the first cylinder's byte angle */
	size_t		angle_step;		/* bytes from one angle to the next */
	const uint8_t *pc;			/* its popcount, a host-order uint16 */
	size_t		pc_step;		/* bytes from one popcount to the next */
	uint32_t	n;				/* cylinders */
} cyl_source;

/* Word w of cylinder j (any alignment). */
static inline uint64_t
cyl_word(const cyl_source *s, uint32_t j, int w)
{
	uint64_t	v;

	memcpy(&v, s->bits + j * s->cyl_step + (size_t) w * s->word_step, sizeof(v));
	return v;
}

/* The SIMD path for mask-less profiles of 4 words. */
SCAN_ATTR static inline __attribute__((always_inline)) float
score_cylinders(const mcc_probe *q, const cyl_source *src, uint8_t *dall)
{
	int			nv = 0;
	int			np;

	if (q->n == 0 || src->n == 0)
		return 0.0f;
	for (uint32_t j = 0; j < src->n; j++)
	{
		int			a = src->angle[j * src->angle_step];
		int			c = q->lt_count[a];
		int			s = q->lt_start[a];
		uint16_t	pcg;
		const uint32_t *rr;
		GVEC		g0;
		GVEC		g1;
		GVEC		g2;
		GVEC		g3;

		if (c == 0)
			continue;
		memcpy(&pcg, src->pc + j * src->pc_step, sizeof(pcg));
		if (pcg == 0 && q->zero_pc)
		{
			uint64_t	gw[4] = {cyl_word(src, j, 0), cyl_word(src, j, 1),
			cyl_word(src, j, 2), cyl_word(src, j, 3)};

			nv += mcc_votes_den0(q, gw, pcg, a, dall + nv);
			continue;
		}
		g0 = GBROADCAST(cyl_word(src, j, 0));
		g1 = GBROADCAST(cyl_word(src, j, 1));
		g2 = GBROADCAST(cyl_word(src, j, 2));
		g3 = GBROADCAST(cyl_word(src, j, 3));
		rr = q->rcp + (size_t) pcg * q->rcp_stride + s;
		for (int l = 0; l < c; l += 8)
			VOTES8(&q->soa[0][s + l], g0, g1, g2, g3, rr + l, dall + nv + l);
		nv += c;				/* lanes past the run are overwritten or padded */
	}
	PAD_VOTES(dall + nv);
	np = q->np[src->n];
	return mcc_lss_from_sum(np, LOWEST_SUM(dall, nv, np));
}

/* Whether the SIMD path applies (else the POPCNT kernel, same scores). */
SCAN_ATTR static inline int
simd_applies(const mcc_probe *q, int words)
{
	return q->rcp_stride != 0 && words == 4 &&
		(_mm_getcsr() & _MM_ROUND_MASK) == _MM_ROUND_NEAREST;
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
	cyl_source	src;

	if (!simd_applies(q, g->words))
	{
		mcc_scan_popcnt(q, g, t0, t1, scores);
		return;
	}
	src.cyl_step = sizeof(uint64_t);
	src.word_step = sizeof(uint64_t) * g->cap_cyl;
	src.angle_step = sizeof(uint8_t);
	src.pc_step = sizeof(uint16_t);
	for (uint32_t k = t0; k < t1; k++)
	{
		uint32_t	j0 = g->first[k];

		src.bits = (const uint8_t *) (g->bits + j0);
		src.angle = g->angle + j0;
		src.pc = (const uint8_t *) (g->pc + j0);
		src.n = g->first[k + 1] - j0;
		scores[k - t0] = score_cylinders(q, &src, dall);
	}
}

/* One template in place: its blob's cylinders, as mcc_template.h lays them out. */
SCAN_ATTR float
SCAN_VIEW_FN(const mcc_probe *q, const mcc_template_view *t)
{
	uint8_t		dall[MCC_MAX_CYL * MCC_MAX_CYL + 128] __attribute__((aligned(64)));
	cyl_source	src;

	if (!simd_applies(q, t->words))
		return mcc_score_view_popcnt(q, t);
	src.bits = t->bits;
	src.cyl_step = sizeof(uint64_t) * 4;
	src.word_step = sizeof(uint64_t);
	src.angle = t->meta + 2;
	src.angle_step = MCC_CYLMETA_RECSZ;
	src.pc = t->meta;
	src.pc_step = MCC_CYLMETA_RECSZ;
	src.n = (uint32_t) t->n_cyl;
	return score_cylinders(q, &src, dall);
}
