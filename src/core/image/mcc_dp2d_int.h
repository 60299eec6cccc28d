/*
 * mcc_dp2d_int.h: what the parts of mcc_dp2d.h share. Private to src/core.
 *
 * Lane kernels. A kernel runs the constrained 1D-DP (mcc_dp2d.h) of
 * `lanes` independent pairs of sequences at once, all of lengths n and m:
 * x holds n vectors and y m vectors, vector k holding element k of every
 * lane's sequence (lane l at index k * lanes + l). Elements are uint16_t
 * (sums saturate at 65535, which stands for "no path": exact while
 * 255 (n + m) < 65535) or uint32_t (no path = MCC_DP2D_INF32 or more).
 * out[l] gets lane l's cost. With masks, the kernel also records for
 * every cell (i, j), in masks[2 (i m + j)] and masks[2 (i m + j) + 1],
 * lane l's bit of "Dd <= Dn" and of "Dd(i-1, j) <= Dd(i, j-1)", the two
 * choices back-tracing needs.
 */
#ifndef MCC_DP2D_INT_H
#define MCC_DP2D_INT_H

#include <stddef.h>
#include <stdint.h>

#include "mcc_dp2d.h"

#define MCC_DP2D_INF16		0xFFFFu
#define MCC_DP2D_INF32		0x3FFFFFFFu
#define MCC_DP2D_INF64		(UINT64_MAX / 4)
#define MCC_DP2D_MAX_LANES	32
#define MCC_DP2D_VEC_BYTES	64	/* the widest vector of any kernel */

/* 16-bit elements are exact when every sum stays below 65535. */
#define MCC_DP2D_FITS16(wa, wb) (255u * ((uint32_t) (wa) + (uint32_t) (wb)) < 0xFFFFu)

typedef void (*mcc_dp2d_lanes_fn) (const void *x, uint32_t n, const void *y, uint32_t m,
								   void *work, uint32_t *masks, uint32_t *out);

typedef struct mcc_dp2d_kern
{
	int			id;				/* mcc_dp2d_kernel */
	const char *name;
	uint32_t	lanes16;		/* lanes of 16-bit elements */
	uint32_t	lanes32;		/* lanes of 32-bit elements */
	mcc_dp2d_lanes_fn run16;
	mcc_dp2d_lanes_fn run32;
	int			(*usable) (void);
} mcc_dp2d_kern;

/* The lane kernels (mcc_dp2d_lanes.c, mcc_dp2d_avx2.c, mcc_dp2d_avx512.c). */
extern const mcc_dp2d_kern mcc_dp2d_kern_generic;
extern const mcc_dp2d_kern mcc_dp2d_kern_avx2;
extern const mcc_dp2d_kern mcc_dp2d_kern_avx512;

/* The usable lane kernel for an id (AUTO: the best); NULL for the reference. */
const mcc_dp2d_kern *mcc_dp2d_kern_get(int kernel);

/* ------------------------------------------------------------------ */
/* one pair with a lane kernel (mcc_dp2d.c)                            */

/* What a pair's arithmetic looks like with a kernel. */
typedef struct mcc_dp2d_geom
{
	uint32_t	ha,
				wa,
				hb,
				wb;
	int			wide;			/* 32-bit elements */
	uint32_t	lanes;
	uint32_t	esize;			/* bytes per element */
	uint32_t	groups;			/* ceil(hb / lanes): lane groups of b's rows */
} mcc_dp2d_geom;

void		mcc_dp2d_geom_init(mcc_dp2d_geom *g, const mcc_dp2d_kern *k, const mcc_image *a,
							   const mcc_image *b);

/* Per pair state shared by the threads that compute its rows. */
typedef struct mcc_dp2d_pairbuf
{
	uint32_t   *cost;			/* ha x hb local distances (Eq. 7) */
	void	   *bt;				/* b's rows transposed into lane groups */
} mcc_dp2d_pairbuf;

/* Per thread scratch. */
typedef struct mcc_dp2d_scratch
{
	void	   *xt;				/* wa vectors */
	void	   *yt;				/* wb vectors */
	void	   *work;			/* 2 wb vectors */
	uint32_t   *masks;			/* 2 wa wb words, or NULL without back-tracing */
	uint64_t   *oe;				/* outer DP rows: hb values each */
	uint64_t   *od;
	uint8_t    *odir;			/* ha x hb back-tracing choices of the outer DP */
	uint32_t   *row_map;		/* ha */
	uint32_t   *col_map;		/* wa */
	uint32_t	lanes_out[MCC_DP2D_MAX_LANES];
} mcc_dp2d_scratch;

/* Largest sizes of a batch, for the allocations. */
typedef struct mcc_dp2d_maxdims
{
	uint32_t	ha,
				wa,
				hb,
				wb;
} mcc_dp2d_maxdims;

/* Bytes of a pair buffer and of a scratch for sizes up to d. */
size_t		mcc_dp2d_pairbuf_size(const mcc_dp2d_maxdims *d);
size_t		mcc_dp2d_scratch_size(const mcc_dp2d_maxdims *d, int flags);

/* Carve a buffer of the sizes above (64-byte aligned) into its parts. */
void		mcc_dp2d_pairbuf_init(mcc_dp2d_pairbuf *pb, void *mem, const mcc_dp2d_maxdims *d);
void		mcc_dp2d_scratch_init(mcc_dp2d_scratch *s, void *mem, const mcc_dp2d_maxdims *d,
								  int flags);

/* Transpose b into pb->bt. */
void		mcc_dp2d_pair_prepare(const mcc_dp2d_kern *k, const mcc_dp2d_geom *g,
								  const mcc_image *b, mcc_dp2d_pairbuf *pb);

/* Local distances of row i of a against every row of b: pb->cost[i][*]. */
void		mcc_dp2d_pair_row(const mcc_dp2d_kern *k, const mcc_dp2d_geom *g, const mcc_image *a,
							  uint32_t i, mcc_dp2d_pairbuf *pb, mcc_dp2d_scratch *s);

/* Outer DP, back-tracing and the warp, once every row is done. */
mcc_status	mcc_dp2d_pair_finish(const mcc_dp2d_kern *k, const mcc_dp2d_geom *g,
								 const mcc_image *a, const mcc_image *b, int flags,
								 const mcc_dp2d_pairbuf *pb, mcc_dp2d_scratch *s,
								 mcc_dp2d_out *out, mcc_error *err);

/* The reference kernel: one pair from full matrices (mcc_dp2d_ref.c). */
mcc_status	mcc_dp2d_match_ref(const mcc_image *a, const mcc_image *b, int flags,
							   mcc_dp2d_out *out, mcc_error *err);

#endif							/* MCC_DP2D_INT_H */
