/*
 * mcc_dp2d.h: elastic image matching by approximate two-dimensional
 * dynamic programming (paper 003, Sec. 3-4, Eqs. 2-3 and 5-8).
 *
 * The 1D-DP (Eq. 2) between sequences x (length n) and y (length m) fills
 * the cumulative distance of every cell (i, j) from the local distance
 * d(i, j):
 *
 *     D(i, j) = min { D(i-1, j) + d, D(i-1, j-1) + 2d, D(i, j-1) + d },
 *     D(0, 0) = 2 d(0, 0),
 *
 * with the slope constraint of paper 003's kernel (its Wfree/Vfree flags):
 * a horizontal or vertical move may only follow a diagonal move (or the
 * start), so no path makes two non-diagonal moves in a row. The optimum
 * under that constraint needs two values per cell, the best sum reaching
 * it by a diagonal move (Dd) and by another move (Dn):
 *
 *     Dd(i, j) = min(Dd, Dn)(i-1, j-1) + 2 d(i, j)      [(-1,-1) counts 0]
 *     Dn(i, j) = min(Dd(i-1, j), Dd(i, j-1)) + d(i, j)
 *
 * and the sequence cost is min(Dd, Dn)(n-1, m-1); every path weighs
 * n + m in all, so Eq. 3 divides by n + m. A path exists iff the longer
 * sequence is at most twice the shorter.
 *
 * Images (Eq. 5) are sequences of rows. The local distance of rows i of
 * image a and j of image b is the 1D-DP cost of the two rows with
 * d = |a[i][p] - b[j][q]| (Eq. 6); the image cost is the 1D-DP over the
 * rows with those local distances (Eq. 7); the distance (Eq. 8) divides
 * by the total weight (Ha + Hb)(Wa + Wb), which is 4N^2 for N x N images.
 * Every sum is an exact integer (at most 255 (Wa+Wb)(Ha+Hb) < 2^29 within
 * the size limits), so every kernel, thread count and the GPU
 * (kernels/mcc_dp2d_gpu.h) give the same cost and the same distance, one
 * IEEE division of two integers.
 *
 * Back-tracing (Sec. 6) recovers the optimal paths. Ties are broken the
 * same way everywhere: a cell's min(Dd, Dn) takes Dd when Dd <= Dn, and Dn
 * takes the (i-1, j) predecessor (the move that advances a) when its Dd
 * is <= that of (i, j-1). The warping of b onto a (Sec. 3) maps row i of
 * a to row_map[i], the first row of b paired with it on the outer path,
 * and column p of that row pair to col_map[i][p], the first column of b
 * paired with p on the inner path of rows (i, row_map[i]):
 *
 *     warped[i][p] = b[row_map[i]][col_map[i][p]]
 *
 * an image of a's size. Identical images give cost 0 and the identity.
 * differences = the number of pixels where warped and a differ (paper
 * 003 Sec. 8 counts them on binarized prints: mcc_dp2d_verify.h).
 *
 * The paper's kernel keeps one value and one flag per cell (it takes the
 * cheapest move, then forbids the next non-diagonal move), which can miss
 * the constrained optimum; the two values above give the exact optimum of
 * the same recursion and constraint (docs/elastic-matching.md).
 *
 * Kernels (all exact):
 *   reference  Eq. 2 as written: full matrices of both values per row
 *              pair, 64-bit sums, back-tracing through the matrices;
 *   generic    portable C on lanes of row pairs (below);
 *   avx2, avx512
 *              the same lanes in 16-bit (saturating, when
 *              255 (Wa + Wb) < 65535) or 32-bit vector elements: a vector
 *              holds one cell of 16/32 (8/16) different row pairs, so a
 *              row of a is matched against that many rows of b at once.
 * The fastest usable one is chosen at run time (no -march=native).
 *
 * Jobs run a batch of pairs on pthreads (signals blocked) with a cancel
 * flag checked between rows, so a PostgreSQL backend can wait, poll for
 * interrupts and stop the work. Fewer pairs than threads: the rows of each
 * pair are shared out; otherwise each thread takes whole pairs.
 */
#ifndef MCC_DP2D_H
#define MCC_DP2D_H

#include <stdint.h>

#include "mcc_error.h"
#include "mcc_image.h"

#define MCC_DP2D_MAX_SIDE		512 /* each side of either image */
#define MCC_DP2D_MAX_THREADS	256
#define MCC_DP2D_MAX_PAIRS		(1u << 24)

/* flags of a request */
#define MCC_DP2D_WARP			1	/* back-trace: maps, warped image, differences */

typedef enum mcc_dp2d_kernel
{
	MCC_DP2D_AUTO = 0,			/* the fastest usable */
	MCC_DP2D_REFERENCE,
	MCC_DP2D_GENERIC,
	MCC_DP2D_AVX2,
	MCC_DP2D_AVX512,
	MCC_DP2D_KERNELS			/* count */
} mcc_dp2d_kernel;

/* Kernel name ("reference", "generic", "avx2", "avx512"); NULL if unknown. */
const char *mcc_dp2d_kernel_name(int kernel);

/* Kernel by name, or -1. */
int			mcc_dp2d_kernel_by_name(const char *name);

/* Whether this CPU can run the kernel. */
int			mcc_dp2d_kernel_usable(int kernel);

/* The kernel MCC_DP2D_AUTO stands for on this CPU. */
int			mcc_dp2d_kernel_auto(void);

/*
 * Check that a and b can be matched: each side 1..MCC_DP2D_MAX_SIDE
 * (MCC_ERR_LIMIT above) and, per dimension, the larger at most twice the
 * smaller (MCC_ERR_VALUE: no path obeys the slope constraint otherwise).
 */
mcc_status	mcc_dp2d_check(const mcc_image *a, const mcc_image *b, mcc_error *err);

/* The total weight of every path, (Ha + Hb) (Wa + Wb): Eq. 8's denominator. */
uint64_t	mcc_dp2d_weight(const mcc_image *a, const mcc_image *b);

/*
 * The constrained 1D-DP cost (Eq. 2, not divided by n + m) of two byte
 * sequences, from full matrices; UINT64_MAX when no path exists.
 */
uint64_t	mcc_dp2d_seq_cost(const uint8_t *x, uint32_t n, const uint8_t *y, uint32_t m);

/*
 * The back-traced optimal path of two byte sequences: its cells
 * (pi[k], pj[k]) from (0, 0) to (n-1, m-1), each array with room for
 * n + m - 1; returns the number of cells, 0 when no path exists.
 */
uint32_t	mcc_dp2d_seq_path(const uint8_t *x, uint32_t n, const uint8_t *y, uint32_t m,
							  uint32_t *pi, uint32_t *pj);

/* The result of one pair; the maps and the image are the caller's memory. */
typedef struct mcc_dp2d_out
{
	uint64_t	cost;			/* Eq. 8's numerator: the optimal weighted sum */
	double		distance;		/* cost / mcc_dp2d_weight(a, b), 0..255 */
	uint64_t	differences;	/* pixels where warped != a (MCC_DP2D_WARP) */
	uint32_t   *row_map;		/* NULL or Ha entries: row of b for row i of a */
	uint32_t   *col_map;		/* NULL or Ha * Wa: column of b for (i, p) */
	uint8_t    *warped;			/* NULL or Ha * Wa pixels (stride Wa): b on a */
} mcc_dp2d_out;

/*
 * Match one pair in the caller's thread with kernel (MCC_DP2D_AUTO: the
 * best usable). flags 0: cost and distance only; MCC_DP2D_WARP: also the
 * differences and whichever of row_map, col_map, warped are not NULL.
 */
mcc_status	mcc_dp2d_match(const mcc_image *a, const mcc_image *b, int kernel, int flags,
						   mcc_dp2d_out *out, mcc_error *err);

/* ------------------------------------------------------------------ */
/* jobs: a batch of pairs (1:N verification) on worker threads         */

typedef struct mcc_dp2d_request
{
	uint32_t	npairs;			/* 1..MCC_DP2D_MAX_PAIRS */
	const mcc_image *const *a;	/* npairs images (references) */
	const mcc_image *const *b;	/* npairs images warped onto them */
	mcc_dp2d_out *out;			/* npairs results */
	int			flags;			/* MCC_DP2D_WARP or 0 */
	int			threads;		/* 1..MCC_DP2D_MAX_THREADS */
	int			kernel;			/* mcc_dp2d_kernel */
} mcc_dp2d_request;

typedef struct mcc_dp2d_job mcc_dp2d_job;

/*
 * Check every pair and start req on req->threads new threads (the
 * caller's thread only waits). Everything is allocated here; the images
 * and the outputs must stay valid until mcc_dp2d_finish() or
 * mcc_dp2d_abort().
 */
mcc_status	mcc_dp2d_start(const mcc_dp2d_request *req, mcc_dp2d_job **job, mcc_error *err);

/* Wait up to timeout_ms (< 0: forever) for the job; 1 if it is done. */
int			mcc_dp2d_wait(mcc_dp2d_job *job, int timeout_ms);

/* Fraction of the rows done, 0..1 (for progress reports). */
double		mcc_dp2d_progress(const mcc_dp2d_job *job);

/* Wait for the job and free it; the outputs are then complete. */
mcc_status	mcc_dp2d_finish(mcc_dp2d_job *job, mcc_error *err);

/*
 * Stop a job: raise its cancel flag (threads stop after their current
 * row), join the threads and free it. The outputs are undefined.
 */
void		mcc_dp2d_abort(mcc_dp2d_job *job);

/* Run req to the end: in the caller's thread when req->threads is 1. */
mcc_status	mcc_dp2d_run(const mcc_dp2d_request *req, mcc_error *err);

#endif							/* MCC_DP2D_H */
