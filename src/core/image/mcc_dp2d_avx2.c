/*
 * mcc_dp2d_avx2.c: the lane kernel with AVX2, 16 lanes of 16-bit elements
 * (saturating adds) or 8 lanes of 32-bit elements.
 */
#include "mcc_cpu_kernel.h"
#include "mcc_dp2d_int.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define AVX2_ATTR __attribute__((target("avx2")))

/* Lane bits of a 16-bit compare (all-ones lanes): pack to bytes, movemask. */
AVX2_ATTR static inline uint32_t
bits16(__m256i eq)
{
	uint32_t	mm = (uint32_t) _mm256_movemask_epi8(_mm256_packs_epi16(eq, eq));

	/* bytes: lanes 0-7, 0-7 again, 8-15, 8-15 again */
	return (mm & 0xFFu) | ((mm >> 8) & 0xFF00u);
}

AVX2_ATTR static inline uint32_t
le16(__m256i a, __m256i b)
{
	return bits16(_mm256_cmpeq_epi16(_mm256_min_epu16(a, b), a));
}

AVX2_ATTR static inline __m256i
absdiff16(__m256i a, __m256i b)
{
	return _mm256_or_si256(_mm256_subs_epu16(a, b), _mm256_subs_epu16(b, a));
}

AVX2_ATTR static inline uint32_t
le32(__m256i a, __m256i b)
{
	return (uint32_t) _mm256_movemask_ps(_mm256_castsi256_ps(
		_mm256_cmpeq_epi32(_mm256_min_epu32(a, b), a)));
}

AVX2_ATTR static inline __m256i
absdiff32(__m256i a, __m256i b)
{
	return _mm256_sub_epi32(_mm256_max_epu32(a, b), _mm256_min_epu32(a, b));
}

#define LANES_FN	lanes_avx2_16
#define LANES_BODY	lanes_avx2_16_body
#define LANES_BLOCK	lanes_avx2_16_block
#define LANES_ATTR	AVX2_ATTR
#define LANES_R		3
#define VEC			__m256i
#define ELEM		uint16_t
#define NL			16
#define VINF		MCC_DP2D_INF16
#define VLOAD(p)	_mm256_load_si256((const __m256i *) (p))
#define VSTORE(p, v) _mm256_store_si256((__m256i *) (p), (v))
#define VSET1(x)	_mm256_set1_epi16((short) (x))
#define VABSDIFF(a, b) absdiff16((a), (b))
#define VADDS(a, b)	_mm256_adds_epu16((a), (b))
#define VMIN(a, b)	_mm256_min_epu16((a), (b))
#define VLE_BITS(a, b) le16((a), (b))
#include "mcc_dp2d_kernel.h"

#define LANES_FN	lanes_avx2_32
#define LANES_BODY	lanes_avx2_32_body
#define LANES_BLOCK	lanes_avx2_32_block
#define LANES_ATTR	AVX2_ATTR
#define LANES_R		3
#define VEC			__m256i
#define ELEM		uint32_t
#define NL			8
#define VINF		MCC_DP2D_INF32
#define VLOAD(p)	_mm256_load_si256((const __m256i *) (p))
#define VSTORE(p, v) _mm256_store_si256((__m256i *) (p), (v))
#define VSET1(x)	_mm256_set1_epi32((int) (x))
#define VABSDIFF(a, b) absdiff32((a), (b))
#define VADDS(a, b)	_mm256_add_epi32((a), (b))
#define VMIN(a, b)	_mm256_min_epu32((a), (b))
#define VLE_BITS(a, b) le32((a), (b))
#include "mcc_dp2d_kernel.h"

const mcc_dp2d_kern mcc_dp2d_kern_avx2 = {
	MCC_DP2D_AVX2, "avx2", 16, 8, lanes_avx2_16, lanes_avx2_32, mcc_kernel_avx2
};
#else
const mcc_dp2d_kern mcc_dp2d_kern_avx2 = {
	MCC_DP2D_AVX2, "avx2", 16, 8, NULL, NULL, mcc_kernel_never
};
#endif
