/*
 * mcc_sad_avx512.c: the SAD band kernel with AVX-512BW VPSADBW, 64 bytes
 * of a row per instruction, blocks of 4 x 4 positions (16 of the 32 vector
 * registers hold accumulators).
 */
#include "mcc_cpu_kernel.h"
#include "mcc_sad_int.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define KERNEL_FN	sad_band_avx512
#define KERNEL_ATTR __attribute__((target("avx512f,avx512bw")))
#define VEC			__m512i
#define VBYTES		64
#define BX			4
#define BY			4
#define VZERO()		_mm512_setzero_si512()
#define VLOADU(p)	_mm512_loadu_si512((const void *) (p))
#define VSAD(a, b)	_mm512_sad_epu8((a), (b))
#define VADD(a, b)	_mm512_add_epi64((a), (b))
#define VHSUM(v)	((uint64_t) _mm512_reduce_add_epi64(v))

#include "mcc_sad_kernel.h"

const mcc_sad_kern mcc_sad_kern_avx512 = {
	MCC_SAD_AVX512, "avx512", VBYTES, BX, BY, sad_band_avx512, mcc_kernel_avx512bw
};
#else
const mcc_sad_kern mcc_sad_kern_avx512 = {MCC_SAD_AVX512, "avx512", 64, 4, 4, NULL, mcc_kernel_never};
#endif
