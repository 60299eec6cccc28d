/*
 * mcc_sad_sse2.c: the SAD band kernel with SSE2 PSADBW (part of x86-64
 * itself), 16 bytes of a row per instruction, blocks of 4 x 3 positions.
 * On other architectures only the reference kernel exists.
 */
#include "mcc_cpu_kernel.h"
#include "mcc_sad_int.h"

#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>

/* The sum of the two 64-bit lanes. */
static inline uint64_t
hsum128(__m128i v)
{
	return (uint64_t) _mm_cvtsi128_si64(v) + (uint64_t) _mm_cvtsi128_si64(_mm_unpackhi_epi64(v, v));
}

#define KERNEL_FN	sad_band_sse2
#define KERNEL_ATTR
#define VEC			__m128i
#define VBYTES		16
#define BX			4
#define BY			3
#define VZERO()		_mm_setzero_si128()
#define VLOADU(p)	_mm_loadu_si128((const __m128i *) (p))
#define VSAD(a, b)	_mm_sad_epu8((a), (b))
#define VADD(a, b)	_mm_add_epi64((a), (b))
#define VHSUM(v)	hsum128(v)

#include "mcc_sad_kernel.h"

/* SSE2 is part of x86-64. */
const mcc_sad_kern mcc_sad_kern_sse2 = {
	MCC_SAD_SSE2, "sse2", VBYTES, BX, BY, sad_band_sse2, mcc_kernel_always
};
#else
const mcc_sad_kern mcc_sad_kern_sse2 = {MCC_SAD_SSE2, "sse2", 16, 4, 3, NULL, mcc_kernel_never};
#endif
