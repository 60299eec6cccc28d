/*
 * mcc_dp2d_avx512.c: the lane kernel with AVX-512BW, 32 lanes of 16-bit
 * elements (saturating adds) or 16 lanes of 32-bit elements; compares give
 * the lane bits directly as mask registers.
 */
#include "mcc_cpu_kernel.h"
#include "mcc_dp2d_int.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define AVX512_ATTR __attribute__((target("avx512f,avx512bw")))

AVX512_ATTR static inline __m512i
absdiff16(__m512i a, __m512i b)
{
	return _mm512_or_si512(_mm512_subs_epu16(a, b), _mm512_subs_epu16(b, a));
}

AVX512_ATTR static inline __m512i
absdiff32(__m512i a, __m512i b)
{
	return _mm512_sub_epi32(_mm512_max_epu32(a, b), _mm512_min_epu32(a, b));
}

#define LANES_FN	lanes_avx512_16
#define LANES_BODY	lanes_avx512_16_body
#define LANES_BLOCK	lanes_avx512_16_block
#define LANES_ATTR	AVX512_ATTR
#define LANES_R		4
#define VEC			__m512i
#define ELEM		uint16_t
#define NL			32
#define VINF		MCC_DP2D_INF16
#define VLOAD(p)	_mm512_load_si512((const void *) (p))
#define VSTORE(p, v) _mm512_store_si512((void *) (p), (v))
#define VSET1(x)	_mm512_set1_epi16((short) (x))
#define VABSDIFF(a, b) absdiff16((a), (b))
#define VADDS(a, b)	_mm512_adds_epu16((a), (b))
#define VMIN(a, b)	_mm512_min_epu16((a), (b))
#define VLE_BITS(a, b) ((uint32_t) _mm512_cmple_epu16_mask((a), (b)))
#include "mcc_dp2d_kernel.h"

#define LANES_FN	lanes_avx512_32
#define LANES_BODY	lanes_avx512_32_body
#define LANES_BLOCK	lanes_avx512_32_block
#define LANES_ATTR	AVX512_ATTR
#define LANES_R		4
#define VEC			__m512i
#define ELEM		uint32_t
#define NL			16
#define VINF		MCC_DP2D_INF32
#define VLOAD(p)	_mm512_load_si512((const void *) (p))
#define VSTORE(p, v) _mm512_store_si512((void *) (p), (v))
#define VSET1(x)	_mm512_set1_epi32((int) (x))
#define VABSDIFF(a, b) absdiff32((a), (b))
#define VADDS(a, b)	_mm512_add_epi32((a), (b))
#define VMIN(a, b)	_mm512_min_epu32((a), (b))
#define VLE_BITS(a, b) ((uint32_t) _mm512_cmple_epu32_mask((a), (b)))
#include "mcc_dp2d_kernel.h"

const mcc_dp2d_kern mcc_dp2d_kern_avx512 = {
	MCC_DP2D_AVX512, "avx512", 32, 16, lanes_avx512_16, lanes_avx512_32, mcc_kernel_avx512bw
};
#else
const mcc_dp2d_kern mcc_dp2d_kern_avx512 = {
	MCC_DP2D_AVX512, "avx512", 32, 16, NULL, NULL, mcc_kernel_never
};
#endif
