/*
 * mcc_dp2d_lanes.c: the portable lane kernel (8 lanes of 16-bit or 4 of
 * 32-bit elements: one 128-bit vector) in C with GCC/Clang vector extensions, for CPUs without AVX2
 * (and other architectures) and as a second implementation the SIMD
 * kernels are tested against.
 */
#include <string.h>

#include "mcc_dp2d_int.h"

#define GL16 8					/* 128-bit vectors: SSE2, NEON */
#define GL32 4

/*
 * GCC/Clang vector extensions: plain C that the compiler lowers to the
 * vectors of whatever the baseline target has (SSE2 on x86-64, NEON on
 * AArch64). Comparisons give all-ones lanes, used as masks.
 */
typedef uint16_t g16 __attribute__((vector_size(2 * GL16)));
typedef uint32_t g32 __attribute__((vector_size(4 * GL32)));

/*
 * The operations both widths share, written once for a vector type V of
 * NL elements of type E: unaligned load and store, broadcast, select by
 * mask, absolute difference, minimum, and the a <= b mask as one bit a lane.
 */
#define G_LANE_OPS(V, E, NL) \
static inline V \
V##_load(const E *p) \
{ \
	V			r; \
\
	memcpy(&r, p, sizeof(r)); \
	return r; \
} \
\
static inline void \
V##_store(E *p, V a) \
{ \
	memcpy(p, &a, sizeof(a)); \
} \
\
static inline V \
V##_set1(uint32_t x) \
{ \
	return (V) {0} + (E) x; \
} \
\
static inline V \
V##_sel(V mask, V a, V b) \
{ \
	return (a & mask) | (b & ~mask); \
} \
\
static inline V \
V##_absdiff(V a, V b) \
{ \
	return V##_sel((V) (a > b), a - b, b - a); \
} \
\
static inline V \
V##_min(V a, V b) \
{ \
	return V##_sel((V) (a < b), a, b); \
} \
\
static inline uint32_t \
V##_le(V a, V b) \
{ \
	V			m = (V) (a <= b); \
	uint32_t	r = 0; \
\
	for (int l = 0; l < (NL); l++) \
		r |= (uint32_t) (m[l] & 1u) << l; \
	return r; \
}

G_LANE_OPS(g16, uint16_t, GL16)
G_LANE_OPS(g32, uint32_t, GL32)

/* 16-bit lanes: sums saturate at 0xFFFF */
static inline g16
g16_adds(g16 a, g16 b)
{
	g16			s = a + b;

	return s | (g16) (s < a);	/* wrapped: all ones */
}

/* 32-bit lanes: no sum comes near 2^32 within the size limits */
static inline g32
g32_add(g32 a, g32 b)
{
	return a + b;
}

#define LANES_FN	lanes_generic16
#define LANES_BODY	lanes_generic16_body
#define LANES_BLOCK	lanes_generic16_block
#define LANES_ATTR
#define LANES_R		4
#define VEC			g16
#define ELEM		uint16_t
#define NL			GL16
#define VINF		MCC_DP2D_INF16
#define VLOAD(p)	g16_load(p)
#define VSTORE(p, v) g16_store((p), (v))
#define VSET1(x)	g16_set1(x)
#define VABSDIFF(a, b) g16_absdiff((a), (b))
#define VADDS(a, b)	g16_adds((a), (b))
#define VMIN(a, b)	g16_min((a), (b))
#define VLE_BITS(a, b) g16_le((a), (b))
#include "mcc_dp2d_kernel.h"

#define LANES_FN	lanes_generic32
#define LANES_BODY	lanes_generic32_body
#define LANES_BLOCK	lanes_generic32_block
#define LANES_ATTR
#define LANES_R		4
#define VEC			g32
#define ELEM		uint32_t
#define NL			GL32
#define VINF		MCC_DP2D_INF32
#define VLOAD(p)	g32_load(p)
#define VSTORE(p, v) g32_store((p), (v))
#define VSET1(x)	g32_set1(x)
#define VABSDIFF(a, b) g32_absdiff((a), (b))
#define VADDS(a, b)	g32_add((a), (b))
#define VMIN(a, b)	g32_min((a), (b))
#define VLE_BITS(a, b) g32_le((a), (b))
#include "mcc_dp2d_kernel.h"

/* Always usable. */
static int
generic_usable(void)
{
	return 1;
}

const mcc_dp2d_kern mcc_dp2d_kern_generic = {
	MCC_DP2D_GENERIC, "generic", GL16, GL32, lanes_generic16, lanes_generic32, generic_usable
};
