/*
 * mcc_soa_avx512.c: the gallery scan with AVX-512 VPOPCNTDQ.
 *
 * For each gallery cylinder j, the probe cylinders that pass the angular
 * gate are one contiguous run of the probe's doubled angle order
 * (mcc_probe_int.h). The kernel broadcasts j's four words and takes that run
 * 8 probe cylinders at a time, one 64-bit lane each: 4 XOR + 4 VPOPCNTQ + 3
 * ADD give 8 popcounts, a gather from LUT_sqrt and one 32x32->64 multiply by
 * the probe's rcp row for j's popcount give 8 distances d, exactly as
 * mcc_lss.h defines them. Lanes past the run read the zeroed padding and are
 * ignored. The votes go to two interleaved 65-bucket histograms (bucket 64
 * takes d >= w, i.e. no vote) so that equal consecutive buckets do not
 * serialize on one counter.
 */
#include <immintrin.h>
#include <string.h>

#include "mcc_soa_int.h"

#define AVX512_TARGET "avx512f,avx512bw,avx512vl,avx512vpopcntdq,popcnt"

/* Score template k: the SIMD path for mask-less profiles of up to 4 words. */
__attribute__((target(AVX512_TARGET)))
static float
score_template(const mcc_probe *q, const mcc_soa *g, uint32_t k)
{
	uint32_t	hist[2][MCC_HIST_LEN] __attribute__((aligned(64)));
	uint8_t		dbuf[MCC_PROBE_DBL] __attribute__((aligned(64)));
	uint32_t	j0 = g->first[k];
	uint32_t	j1 = g->first[k + 1];
	size_t		cap = g->cap_cyl;
	const uint64_t *b0 = g->bits;
	const uint64_t *b1 = b0 + cap;
	const uint64_t *b2 = b1 + cap;
	const uint64_t *b3 = b2 + cap;
	const __m512i w64 = _mm512_set1_epi64(MCC_W);

	if (q->n == 0 || j0 == j1)
		return 0.0f;
	memset(hist, 0, sizeof(hist));
	for (uint32_t j = j0; j < j1; j++)
	{
		int			a = g->angle[j];
		int			c = q->lt_count[a];
		int			s = q->lt_start[a];
		int			pcg = g->pc[j];
		const uint32_t *rr;
		__m512i		g0;
		__m512i		g1;
		__m512i		g2;
		__m512i		g3;

		if (c == 0)
			continue;
		if (pcg == 0 && q->zero_pc)
		{
			/* den may be 0 for some pairs: the generic loop checks each */
			uint64_t	gw[4] = {b0[j], b1[j], b2[j], b3[j]};

			MCC_VOTES_GENERIC(q, gw, pcg, a, hist[0], __builtin_popcountll);
			continue;
		}
		g0 = _mm512_set1_epi64((long long) b0[j]);
		g1 = _mm512_set1_epi64((long long) b1[j]);
		g2 = _mm512_set1_epi64((long long) b2[j]);
		g3 = _mm512_set1_epi64((long long) b3[j]);
		rr = q->rcp + (size_t) pcg * q->rcp_stride + s;
		for (int l = 0; l < c; l += 8)
		{
			const uint64_t *p = &q->soa[0][s + l];
			__m512i		x;
			__m256i		sq;
			__m512i		d;

			x = _mm512_popcnt_epi64(_mm512_xor_si512(_mm512_loadu_si512(p), g0));
			x = _mm512_add_epi64(x, _mm512_popcnt_epi64(
									_mm512_xor_si512(_mm512_loadu_si512(p + MCC_PROBE_DBL), g1)));
			x = _mm512_add_epi64(x, _mm512_popcnt_epi64(
									_mm512_xor_si512(_mm512_loadu_si512(p + 2 * MCC_PROBE_DBL), g2)));
			x = _mm512_add_epi64(x, _mm512_popcnt_epi64(
									_mm512_xor_si512(_mm512_loadu_si512(p + 3 * MCC_PROBE_DBL), g3)));
			sq = _mm512_i64gather_epi32(x, (const void *) mcc_lss_sqrt_tab, 4);
			d = _mm512_mul_epu32(_mm512_cvtepu32_epi64(sq),
								 _mm512_cvtepu32_epi64(_mm256_loadu_si256((const __m256i *) (rr + l))));
			d = _mm512_min_epu64(_mm512_srli_epi64(d, 32), w64);
			_mm_storel_epi64((__m128i *) (dbuf + l), _mm512_cvtepi64_epi8(d));
		}
		for (int l = 0; l + 1 < c; l += 2)
		{
			hist[0][dbuf[l]]++;
			hist[1][dbuf[l + 1]]++;
		}
		if (c & 1)
			hist[0][dbuf[c - 1]]++;
	}
	for (int i = 0; i < MCC_W; i++)
		hist[0][i] += hist[1][i];
	return mcc_lss_finish(hist[0], q->np[j1 - j0]);
}

void
mcc_scan_avx512(const mcc_probe *q, const mcc_soa *g, uint32_t t0, uint32_t t1,
				float *scores)
{
	if (q->rcp_stride == 0 || g->words != 4)
	{
		mcc_scan_popcnt(q, g, t0, t1, scores);
		return;
	}
	for (uint32_t k = t0; k < t1; k++)
		scores[k - t0] = score_template(q, g, k);
}
