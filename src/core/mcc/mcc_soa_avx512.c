/*
 * mcc_soa_avx512.c: the gallery scan with AVX-512 VPOPCNTDQ (the loop is
 * mcc_soa_kernel.h's). Per 8 probe cylinders, one 64-bit lane each:
 *   - 4 XOR + 4 VPOPCNTQ + 3 ADD give the 8 popcounts x of v_i xor v_j;
 *   - LUT_sqrt[x] without a table, by float square roots
 *     (mcc_simd_sqrt_exact() says why they are exact and checks all 256
 *     values at start-up; the scan falls back if the rounding mode is not
 *     round-to-nearest). A gather from the table costs about 40% more on
 *     Sapphire Rapids;
 *   - one 32x32->64 multiply by the probe's rcp row for j's popcount and a
 *     shift give the 8 distances d of mcc_lss.h, stored as bytes;
 * the n_p lowest votes come from 64-byte compares (lowest_sum).
 */
#include <immintrin.h>

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

/* The 8 votes of probe cylinders p[0..7] against gallery words g0..g3, as bytes. */
__attribute__((target(AVX512_TARGET)))
static inline void
votes8(const uint64_t *p, __m512i g0, __m512i g1, __m512i g2, __m512i g3,
	   const uint32_t *rr, uint8_t *out)
{
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
						_mm256_cvtepi32_ps(_mm512_cvtepi64_epi32(x))), _mm256_set1_ps(4096.0f))));
	d = _mm512_mul_epu32(sq, _mm512_cvtepu32_epi64(_mm256_loadu_si256((const __m256i *) rr)));
	d = _mm512_min_epu64(_mm512_srli_epi64(d, 32), _mm512_set1_epi64(MCC_W));
	_mm_storel_epi64((__m128i *) out, _mm512_cvtepi64_epi8(d));
}

#define SCAN_FN		mcc_scan_avx512
#define SCAN_VIEW_FN	mcc_score_view_avx512
#define SCAN_ATTR	__attribute__((target(AVX512_TARGET)))
#define GVEC		__m512i
#define GBROADCAST(w) _mm512_set1_epi64((long long) (w))
#define VOTES8		votes8
#define PAD_VOTES(out) _mm512_storeu_si512((out), _mm512_set1_epi8(MCC_W))
#define LOWEST_SUM	lowest_sum
#include "mcc_soa_kernel.h"

/* Whether the AVX-512 kernel may run: CPU support and exact square roots. */
int
mcc_avx512_ok(void)
{
	return mcc_cpu_has_avx512() && mcc_simd_sqrt_exact();
}
