/*
 * mcc_sad_avx2.c: the SAD band kernel with AVX2 VPSADBW, 32 bytes of a row
 * per instruction, blocks of 4 x 3 positions (12 of the 16 vector
 * registers hold accumulators).
 */
#include "mcc_cpu_kernel.h"
#include "mcc_sad_int.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

/* The sum of the four 64-bit lanes. */
__attribute__((target("avx2")))
static inline uint64_t
hsum256(__m256i v)
{
	__m128i		s = _mm_add_epi64(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));

	return (uint64_t) _mm_cvtsi128_si64(s) + (uint64_t) _mm_cvtsi128_si64(_mm_unpackhi_epi64(s, s));
}

#define KERNEL_FN	sad_band_avx2
#define KERNEL_ATTR __attribute__((target("avx2")))
#define VEC			__m256i
#define VBYTES		32
#define BX			4
#define BY			3
#define VZERO()		_mm256_setzero_si256()
#define VLOADU(p)	_mm256_loadu_si256((const __m256i *) (p))
#define VSAD(a, b)	_mm256_sad_epu8((a), (b))
#define VADD(a, b)	_mm256_add_epi64((a), (b))
#define VHSUM(v)	hsum256(v)

#include "mcc_sad_kernel.h"

const mcc_sad_kern mcc_sad_kern_avx2 = {
	MCC_SAD_AVX2, "avx2", VBYTES, BX, BY, sad_band_avx2, mcc_kernel_avx2
};
#else
const mcc_sad_kern mcc_sad_kern_avx2 = {MCC_SAD_AVX2, "avx2", 32, 4, 3, NULL, mcc_kernel_never};
#endif
