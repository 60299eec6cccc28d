/*
 * mcc_soa_avx2.c: the gallery scan with AVX2, for x86-64 CPUs without
 * AVX-512 VPOPCNTDQ (AMD before Zen 4, Intel before Ice Lake, many cloud
 * instances).
 *
 * The loop of mcc_soa_kernel.h, as for AVX-512 (float square roots for
 * LUT_sqrt, the probe's rcp rows, the n_p lowest votes selected from a byte
 * array), with what AVX2 has instead of VPOPCNTQ: each byte's popcount from a 16-entry
 * nibble table by VPSHUFB, the four words' byte counts added (at most 32 per
 * byte), then VPSADBW sums a cylinder's 8 bytes. Two 4-lane halves are
 * joined into one 8-lane vector for the square roots and the multiply.
 */
#include <immintrin.h>

#include "mcc_avx2_popcount.h"
#include "mcc_lss.h"

#include "mcc_soa_int.h"

#define AVX2_TARGET "avx2,popcnt"

/*
 * popcount(v_i xor v_j) of 4 probe cylinders (p, word-major with stride
 * MCC_PROBE_DBL) against gallery cylinder words g0..g3, one per 64-bit lane.
 */
__attribute__((target(AVX2_TARGET)))
static inline __m256i
xor_popcount4(const uint64_t *p, __m256i g0, __m256i g1, __m256i g2, __m256i g3)
{
	__m256i		c;

	c = mcc_avx2_byte_popcount(_mm256_xor_si256(_mm256_loadu_si256((const __m256i *) p), g0));
	c = _mm256_add_epi8(c, mcc_avx2_byte_popcount(_mm256_xor_si256(
							_mm256_loadu_si256((const __m256i *) (p + MCC_PROBE_DBL)), g1)));
	c = _mm256_add_epi8(c, mcc_avx2_byte_popcount(_mm256_xor_si256(
							_mm256_loadu_si256((const __m256i *) (p + 2 * MCC_PROBE_DBL)), g2)));
	c = _mm256_add_epi8(c, mcc_avx2_byte_popcount(_mm256_xor_si256(
							_mm256_loadu_si256((const __m256i *) (p + 3 * MCC_PROBE_DBL)), g3)));
	return _mm256_sad_epu8(c, _mm256_setzero_si256());
}

/*
 * The 8 votes d = min((LUT_sqrt[x] * rcp) >> 32, w) of mcc_lss.h for the
 * popcounts x of lanes 0-3 (xa) and 4-7 (xb), as 8 bytes at out.
 */
__attribute__((target(AVX2_TARGET)))
static inline void
votes_from_counts(__m256i xa, __m256i xb, const uint32_t *rr, uint8_t *out)
{
	const __m256i order = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
	const __m256i hi32 = _mm256_set1_epi64x((long long) 0xffffffff00000000ULL);
	__m256i		x;
	__m256i		sq;
	__m256i		r;
	__m256i		d;

	/* dwords [a0 b0 a1 b1 a2 b2 a3 b3] -> [a0 a1 a2 a3 b0 b1 b2 b3] */
	x = _mm256_permutevar8x32_epi32(_mm256_or_si256(xa, _mm256_slli_epi64(xb, 32)), order);
	sq = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_sqrt_ps(_mm256_cvtepi32_ps(x)),
										  _mm256_set1_ps(4096.0f)));
	r = _mm256_loadu_si256((const __m256i *) rr);
	/* high halves of the 32x32 -> 64 products, even and odd lanes */
	d = _mm256_or_si256(_mm256_srli_epi64(_mm256_mul_epu32(sq, r), 32),
						_mm256_and_si256(_mm256_mul_epu32(_mm256_srli_epi64(sq, 32),
														  _mm256_srli_epi64(r, 32)), hi32));
	d = _mm256_min_epu32(d, _mm256_set1_epi32(MCC_W));
	/* to bytes: each 128-bit half packs its 4 votes into its low 4 bytes */
	d = _mm256_packus_epi16(_mm256_packus_epi32(d, d), _mm256_setzero_si256());
	d = _mm256_permutevar8x32_epi32(d, _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0));
	_mm_storel_epi64((__m128i *) out, _mm256_castsi256_si128(d));
}

/*
 * The LSS sum of the n_p smallest of the nv votes in d[] (64 = no vote; the
 * 32 bytes after them are 64 too): the n_p-th smallest vote T by binary
 * search on counts of d <= t, then the votes below T plus (n_p - their
 * number) * T, as in mcc_soa_avx512.c.
 */
__attribute__((target(AVX2_TARGET)))
static uint32_t
lowest_sum(const uint8_t *d, int nv, int np)
{
	int			nz = (nv + 31) / 32;
	int			lo = 0;
	int			hi = MCC_W;
	__m256i		acc = _mm256_setzero_si256();
	uint32_t	below = 0;
	uint64_t	lanes[4];

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;
		__m256i		t = _mm256_set1_epi8((char) mid);
		int			cnt = 0;

		for (int z = 0; z < nz; z++)
		{
			__m256i		v = _mm256_loadu_si256((const __m256i *) (d + 32 * z));

			cnt += _mm_popcnt_u32((uint32_t) _mm256_movemask_epi8(
										_mm256_cmpeq_epi8(_mm256_min_epu8(v, t), v)));
		}
		if (cnt >= np)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (lo > 0)
	{
		__m256i		t = _mm256_set1_epi8((char) (lo - 1));

		for (int z = 0; z < nz; z++)
		{
			__m256i		v = _mm256_loadu_si256((const __m256i *) (d + 32 * z));
			__m256i		m = _mm256_cmpeq_epi8(_mm256_min_epu8(v, t), v);

			below += (uint32_t) _mm_popcnt_u32((uint32_t) _mm256_movemask_epi8(m));
			acc = _mm256_add_epi64(acc, _mm256_sad_epu8(_mm256_and_si256(v, m), _mm256_setzero_si256()));
		}
	}
	_mm256_storeu_si256((__m256i *) lanes, acc);
	return (uint32_t) (lanes[0] + lanes[1] + lanes[2] + lanes[3]) + ((uint32_t) np - below) * (uint32_t) lo;
}

/* The 8 votes of probe cylinders p[0..7] against gallery words g0..g3, as bytes. */
__attribute__((target(AVX2_TARGET)))
static inline void
votes8(const uint64_t *p, __m256i g0, __m256i g1, __m256i g2, __m256i g3,
	   const uint32_t *rr, uint8_t *out)
{
	votes_from_counts(xor_popcount4(p, g0, g1, g2, g3), xor_popcount4(p + 4, g0, g1, g2, g3),
					  rr, out);
}

#define SCAN_FN		mcc_scan_avx2
#define SCAN_VIEW_FN	mcc_score_view_avx2
#define SCAN_ATTR	__attribute__((target(AVX2_TARGET)))
#define GVEC		__m256i
#define GBROADCAST(w) _mm256_set1_epi64x((long long) (w))
#define VOTES8		votes8
#define PAD_VOTES(out) _mm256_storeu_si256((__m256i *) (out), _mm256_set1_epi8(MCC_W))
#define LOWEST_SUM	lowest_sum
#include "mcc_soa_kernel.h"

/* LUT_sqrt by SSE float square roots for x = 0..255, in round-to-nearest. */
int
mcc_simd_sqrt_exact(void)
{
	const __m128 k4096 = _mm_set1_ps(4096.0f);
	unsigned int csr = _mm_getcsr();
	int			ok = 1;

	mcc_lss_init();
	_mm_setcsr((csr & ~_MM_ROUND_MASK) | _MM_ROUND_NEAREST);
	for (int x = 0; x < 256; x += 4)
	{
		uint32_t	out[4];

		_mm_storeu_si128((__m128i *) out,
						 _mm_cvtps_epi32(_mm_mul_ps(_mm_sqrt_ps(_mm_cvtepi32_ps(
										_mm_setr_epi32(x, x + 1, x + 2, x + 3))), k4096)));
		for (int i = 0; i < 4; i++)
			ok &= out[i] == mcc_lss_sqrt_fx(x + i);
	}
	_mm_setcsr(csr);
	return ok;
}

/* Whether the AVX2 kernel may run: CPU support and exact square roots. */
int
mcc_avx2_ok(void)
{
	return mcc_cpu_has_avx2() && mcc_simd_sqrt_exact();
}
