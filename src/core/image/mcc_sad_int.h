/*
 * mcc_sad_int.h: the plan behind mcc_sad.h and its band kernels. Private
 * to src/core.
 *
 * A SIMD kernel computes, for the by map rows y0 .. y0 + by - 1 and every
 * column x < nxp (nx rounded up to bx), the raw sum
 *     sum over r < h, c < cw of |Tp[y + r][x + c] - Pp[r][c]|
 * where Pp is the pattern padded with zeros to cw = nch * vec columns and
 * Tp the target padded with zeros to tstride columns and H + by rows.
 * Columns c >= w add |Tp - 0| = Tp, which the plan subtracts with the
 * strip sums strip[t][x] = sum over w <= c < cw of Tp[t][x + c].
 */
#ifndef MCC_SAD_INT_H
#define MCC_SAD_INT_H

#include <stddef.h>
#include <stdint.h>

#include "mcc_sad.h"

struct mcc_sad_plan;

/* Raw sums of rows y0 .. y0 + by - 1, columns 0 .. nxp - 1, into out[dy * nxp + x]. */
typedef void (*mcc_sad_band_fn) (const struct mcc_sad_plan *pl, uint32_t y0, uint64_t *out);

typedef struct mcc_sad_kern
{
	int			id;				/* mcc_sad_kernel */
	const char *name;
	uint32_t	vec;			/* bytes per vector; 0 for the reference */
	uint32_t	bx;				/* map columns per block */
	uint32_t	by;				/* map rows per band */
	mcc_sad_band_fn band;
	int			(*usable) (void);
} mcc_sad_kern;

struct mcc_sad_plan
{
	const mcc_sad_kern *kern;
	const mcc_image *target;	/* the caller's images */
	const mcc_image *pattern;
	uint32_t	nx,
				ny;				/* map size */
	uint32_t	nxp;			/* nx rounded up to kern->bx */
	uint32_t	bands;
	/* SIMD kernels only */
	uint32_t	nch;			/* vectors per pattern row */
	uint32_t	cw;				/* nch * vec */
	uint8_t    *tp;				/* padded target */
	size_t		tstride;
	uint8_t    *pp;				/* padded pattern, stride cw */
	uint16_t   *strip;			/* (H + by) x nx strip sums; NULL if cw == w */
	void	   *mem;			/* one allocation for the three */
};

/* The SIMD band kernels (mcc_sad_sse2.c, mcc_sad_avx2.c, mcc_sad_avx512.c). */
extern const mcc_sad_kern mcc_sad_kern_sse2;
extern const mcc_sad_kern mcc_sad_kern_avx2;
extern const mcc_sad_kern mcc_sad_kern_avx512;

#endif							/* MCC_SAD_INT_H */
