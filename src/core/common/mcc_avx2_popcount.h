/*
 * mcc_avx2_popcount.h: the popcount of each byte with AVX2, which has no
 * VPOPCNT: VPSHUFB looks up both nibbles in a 16-entry table. Shared by the
 * AVX2 kernels of the gallery scan (mcc_soa_avx2.c) and of the comparison
 * (mcc_match_avx2.c).
 */
#ifndef MCC_AVX2_POPCOUNT_H
#define MCC_AVX2_POPCOUNT_H

#include <immintrin.h>

/* Bits set in each byte of v (0..8 per byte). */
__attribute__((target("avx2")))
static inline __m256i
mcc_avx2_byte_popcount(__m256i v)
{
	const __m256i nibble = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
											0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
	const __m256i low4 = _mm256_set1_epi8(0x0f);

	return _mm256_add_epi8(_mm256_shuffle_epi8(nibble, _mm256_and_si256(v, low4)),
						   _mm256_shuffle_epi8(nibble, _mm256_and_si256(_mm256_srli_epi16(v, 4), low4)));
}

#endif							/* MCC_AVX2_POPCOUNT_H */
