/*
 * mcc_soa_avx512.c: the gallery scan with AVX-512 VPOPCNTDQ.
 *
 * For each gallery cylinder j, the probe cylinders that pass the angular
 * gate are one contiguous run of the probe's doubled angle order
 * (mcc_probe_int.h). The kernel broadcasts j's four words and takes that run
 * 8 probe cylinders at a time, one 64-bit lane each:
 *   - 4 XOR + 4 VPOPCNTQ + 3 ADD give the 8 popcounts x of v_i xor v_j;
 *   - LUT_sqrt[x] without a table, by float square roots
 *     (mcc_simd_sqrt_exact() says why they are exact and checks all 256
 *     values at start-up; the scan falls back if the rounding mode is not
 *     round-to-nearest). A gather from the table costs about 40% more on
 *     Sapphire Rapids;
 *   - one 32x32->64 multiply by the probe's rcp row for j's popcount and a
 *     shift give the 8 distances d of mcc_lss.h, stored as bytes.
 * Lanes past the run compute from padding or from real pairs and are
 * overwritten by the next cylinder's votes or by the final padding (64,
 * no vote). Instead of a 64-bucket histogram (scalar increments cost more
 * than all the vector work), the template's n_p lowest votes are selected
 * from the byte array with vector compares (lowest_sum).
 */
#include <immintrin.h>
#include <string.h>

#include "mcc_lss.h"

#include "mcc_soa_int.h"

#define AVX512_TARGET "avx512f,avx512bw,avx512vl,avx512vpopcntdq,popcnt"

/*
 * The LSS sum of the n_p smallest of the nv votes in d[] (bytes, 64 = no
 * vote; the 64 bytes after them are 64 too), without a histogram: the
 * n_p-th smallest vote T is found by binary search on counts of d <= t,
 * then sum = (sum of votes below T) + (n_p - their number) * T, which is
 * what mcc_lss_finish() computes from the buckets (missing votes count w).
 */
__attribute__((target(AVX512_TARGET)))
static uint32_t
lowest_sum(const uint8_t *d, int nv, int np)
{
	int			nz = (nv + 63) / 64;
	int			lo = 0;			/* count(d <= lo - 1) < np */
	int			hi = MCC_W;		/* count(d <= hi) >= np, 64 counts as infinite */
	__m512i		acc = _mm512_setzero_si512();
	uint32_t	below = 0;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;
		__m512i		t = _mm512_set1_epi8((char) mid);
		int			cnt = 0;

		for (int z = 0; z < nz; z++)
			cnt += (int) _mm_popcnt_u64(_mm512_cmple_epu8_mask(_mm512_loadu_si512(d + 64 * z), t));
		if (cnt >= np)
			hi = mid;
		else
			lo = mid + 1;
	}
	/* lo is T: add up the votes below it */
	if (lo > 0)
	{
		__m512i		t = _mm512_set1_epi8((char) (lo - 1));

		for (int z = 0; z < nz; z++)
		{
			__mmask64	m = _mm512_cmple_epu8_mask(_mm512_loadu_si512(d + 64 * z), t);

			below += (uint32_t) _mm_popcnt_u64(m);
			acc = _mm512_add_epi64(acc, _mm512_sad_epu8(_mm512_maskz_mov_epi8(m, _mm512_loadu_si512(d + 64 * z)),
														 _mm512_setzero_si512()));
		}
	}
	return (uint32_t) _mm512_reduce_add_epi64(acc) + ((uint32_t) np - below) * (uint32_t) lo;
}

/* Score template k: the SIMD path for mask-less profiles of up to 4 words. */
__attribute__((target(AVX512_TARGET)))
static float
score_template(const mcc_probe *q, const mcc_soa *g, uint32_t k, uint8_t *dall)
{
	uint32_t	j0 = g->first[k];
	uint32_t	j1 = g->first[k + 1];
	size_t		cap = g->cap_cyl;
	const uint64_t *b0 = g->bits;
	const uint64_t *b1 = b0 + cap;
	const uint64_t *b2 = b1 + cap;
	const uint64_t *b3 = b2 + cap;
	const __m512i w64 = _mm512_set1_epi64(MCC_W);
	const __m256	k4096 = _mm256_set1_ps(4096.0f);
	int			nv = 0;
	int			np;
	uint32_t	sum;

	if (q->n == 0 || j0 == j1)
		return 0.0f;
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
			nv += mcc_soa_votes_den0(q, g, j, dall + nv);
			continue;
		}
		g0 = _mm512_broadcastq_epi64(_mm_loadl_epi64((const __m128i *) (b0 + j)));
		g1 = _mm512_broadcastq_epi64(_mm_loadl_epi64((const __m128i *) (b1 + j)));
		g2 = _mm512_broadcastq_epi64(_mm_loadl_epi64((const __m128i *) (b2 + j)));
		g3 = _mm512_broadcastq_epi64(_mm_loadl_epi64((const __m128i *) (b3 + j)));
		rr = q->rcp + (size_t) pcg * q->rcp_stride + s;
		for (int l = 0; l < c; l += 8)
		{
			const uint64_t *p = &q->soa[0][s + l];
			__m512i		x;
			__m512i		sq;
			__m512i		d;

			x = _mm512_popcnt_epi64(_mm512_xor_si512(_mm512_loadu_si512(p), g0));
			x = _mm512_add_epi64(x, _mm512_popcnt_epi64(
									_mm512_xor_si512(_mm512_loadu_si512(p + MCC_PROBE_DBL), g1)));
			x = _mm512_add_epi64(x, _mm512_popcnt_epi64(
									_mm512_xor_si512(_mm512_loadu_si512(p + 2 * MCC_PROBE_DBL), g2)));
			x = _mm512_add_epi64(x, _mm512_popcnt_epi64(
									_mm512_xor_si512(_mm512_loadu_si512(p + 3 * MCC_PROBE_DBL), g3)));
			sq = _mm512_cvtepu32_epi64(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_sqrt_ps(
								_mm256_cvtepi32_ps(_mm512_cvtepi64_epi32(x))), k4096)));
			d = _mm512_mul_epu32(sq, _mm512_cvtepu32_epi64(_mm256_loadu_si256((const __m256i *) (rr + l))));
			d = _mm512_min_epu64(_mm512_srli_epi64(d, 32), w64);
			_mm_storel_epi64((__m128i *) (dall + nv + l), _mm512_cvtepi64_epi8(d));
		}
		nv += c;				/* lanes past the run are overwritten or padded */
	}
	_mm512_storeu_si512(dall + nv, _mm512_set1_epi8(MCC_W));
	np = q->np[j1 - j0];
	sum = lowest_sum(dall, nv, np);
	return mcc_lss_from_sum(np, sum);
}

/*
 * The SIMD path needs a mask-less profile of at most 4 words (the probe then
 * has rcp rows) and round-to-nearest for its float square roots; anything
 * else takes the POPCNT kernel, with the same scores.
 */
__attribute__((target(AVX512_TARGET)))
void
mcc_scan_avx512(const mcc_probe *q, const mcc_soa *g, uint32_t t0, uint32_t t1,
				float *scores)
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

/* Whether the AVX-512 kernel may run: CPU support and exact square roots. */
int
mcc_avx512_ok(void)
{
	return mcc_cpu_has_avx512() && mcc_simd_sqrt_exact();
}
