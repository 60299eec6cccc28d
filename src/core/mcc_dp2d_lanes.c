/*
 * mcc_dp2d_lanes.c: the portable lane kernel (16 lanes, 16-bit or 32-bit
 * elements) in plain C, for CPUs without AVX2 and as a second
 * implementation the SIMD kernels are tested against.
 */
#include <string.h>

#include "mcc_dp2d_int.h"

#define GL 16

typedef struct g16
{
	uint16_t	v[GL];
} g16;

typedef struct g32
{
	uint32_t	v[GL];
} g32;

/* 16-bit lanes, sums saturating at 0xFFFF */
static inline g16
g16_load(const uint16_t *p)
{
	g16			r;

	memcpy(r.v, p, sizeof(r.v));
	return r;
}

static inline void
g16_store(uint16_t *p, g16 a)
{
	memcpy(p, a.v, sizeof(a.v));
}

static inline g16
g16_set1(uint32_t x)
{
	g16			r;

	for (int l = 0; l < GL; l++)
		r.v[l] = (uint16_t) x;
	return r;
}

static inline g16
g16_absdiff(g16 a, g16 b)
{
	g16			r;

	for (int l = 0; l < GL; l++)
		r.v[l] = a.v[l] > b.v[l] ? a.v[l] - b.v[l] : b.v[l] - a.v[l];
	return r;
}

static inline g16
g16_adds(g16 a, g16 b)
{
	g16			r;

	for (int l = 0; l < GL; l++)
	{
		uint32_t	s = (uint32_t) a.v[l] + b.v[l];

		r.v[l] = (uint16_t) (s > 0xFFFFu ? 0xFFFFu : s);
	}
	return r;
}

static inline g16
g16_min(g16 a, g16 b)
{
	g16			r;

	for (int l = 0; l < GL; l++)
		r.v[l] = a.v[l] < b.v[l] ? a.v[l] : b.v[l];
	return r;
}

static inline uint32_t
g16_le(g16 a, g16 b)
{
	uint32_t	r = 0;

	for (int l = 0; l < GL; l++)
		r |= (uint32_t) (a.v[l] <= b.v[l]) << l;
	return r;
}

/* 32-bit lanes; no sum comes near 2^32 within the size limits */
static inline g32
g32_load(const uint32_t *p)
{
	g32			r;

	memcpy(r.v, p, sizeof(r.v));
	return r;
}

static inline void
g32_store(uint32_t *p, g32 a)
{
	memcpy(p, a.v, sizeof(a.v));
}

static inline g32
g32_set1(uint32_t x)
{
	g32			r;

	for (int l = 0; l < GL; l++)
		r.v[l] = x;
	return r;
}

static inline g32
g32_absdiff(g32 a, g32 b)
{
	g32			r;

	for (int l = 0; l < GL; l++)
		r.v[l] = a.v[l] > b.v[l] ? a.v[l] - b.v[l] : b.v[l] - a.v[l];
	return r;
}

static inline g32
g32_add(g32 a, g32 b)
{
	g32			r;

	for (int l = 0; l < GL; l++)
		r.v[l] = a.v[l] + b.v[l];
	return r;
}

static inline g32
g32_min(g32 a, g32 b)
{
	g32			r;

	for (int l = 0; l < GL; l++)
		r.v[l] = a.v[l] < b.v[l] ? a.v[l] : b.v[l];
	return r;
}

static inline uint32_t
g32_le(g32 a, g32 b)
{
	uint32_t	r = 0;

	for (int l = 0; l < GL; l++)
		r |= (uint32_t) (a.v[l] <= b.v[l]) << l;
	return r;
}

#define LANES_FN	lanes_generic16
#define LANES_BODY	lanes_generic16_body
#define LANES_BLOCK	lanes_generic16_block
#define LANES_ATTR
#define LANES_R		4
#define VEC			g16
#define ELEM		uint16_t
#define NL			GL
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
#define NL			GL
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
	MCC_DP2D_GENERIC, "generic", GL, GL, lanes_generic16, lanes_generic32, generic_usable
};
