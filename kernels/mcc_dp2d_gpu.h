/*
 * mcc_dp2d_gpu.h: elastic image matching (src/core/image/mcc_dp2d.h) on a CUDA
 * GPU, behind a plain C interface with no CUDA types.
 *
 * One call matches a batch of pairs (1:N verification: a probe against N
 * references, or any list of pairs) in three kernels per chunk of pairs:
 *   1. every row pair of every pair: one warp computes the row DP of rows
 *      (i, j) in wavefront order (kernels/impl/mcc_dp2d_wave.h: 32 lanes of
 *      K = ceil(Wb / 32) columns, a lane a step behind its left
 *      neighbour, values passed by shuffles);
 *   2. the DP over rows of each pair: one warp per pair, the same
 *      wavefront over the local distances, with the back-tracing bits kept
 *      by ballots in shared memory, then back-tracing into the row map;
 *   3. with MCC_DP2D_WARP: one warp per row of a, the row DP of (i,
 *      row_map[i]) again with its ballots, back-tracing into the column
 *      map, the warped row and a warp-wide count of differing pixels.
 * The arithmetic is that of the CPU (exact unsigned integers, the same tie
 * rules), so the cost, distance, maps, warped images and differences
 * equal mcc_dp2d_match()'s bit for bit; make gpu-check-dp2d checks it.
 *
 * Errors: every function returns an mcc_gpu_code (mcc_gpu_runtime.h, the
 * codes of every library of kernels/) and fills err; no driver or no
 * device is a clean MCC_GPU_NO_DRIVER / MCC_GPU_NO_DEVICE. After
 * MCC_GPU_STICKY the process's CUDA context is lost: close the context
 * and use the CPU. A context is used by one thread at a time.
 *
 * Device code is built for compute capability 9.0 (H100/H200), with PTX
 * for later GPUs; older GPUs get MCC_GPU_UNSUPPORTED.
 */
#ifndef MCC_DP2D_GPU_H
#define MCC_DP2D_GPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C"
{
#endif

#include "mcc_dp2d.h"
#include "mcc_error.h"
#include "mcc_gpu_runtime.h"

typedef struct mcc_dp2d_gpu mcc_dp2d_gpu;

/*
 * Open a context on device ordinal (-1: device 0). Fails cleanly without a
 * driver or device.
 */
mcc_gpu_code mcc_dp2d_gpu_open(int ordinal, mcc_dp2d_gpu **ctx, mcc_error *err);

/* Free the context and its device memory (NULL is fine). */
void		mcc_dp2d_gpu_close(mcc_dp2d_gpu *ctx);

/* The device's name, e.g. "NVIDIA H100 80GB HBM3". */
const char *mcc_dp2d_gpu_name(const mcc_dp2d_gpu *ctx);

/*
 * A batch: na images a (each wa x ha, stride wa, one after the other),
 * nb images b (wb x hb), and npairs pairs (pair_a[k], pair_b[k]): b image
 * pair_b[k] is warped onto a image pair_a[k]. Outputs are the caller's
 * memory, any of them NULL when not wanted; the last four need
 * MCC_DP2D_WARP in flags.
 */
typedef struct mcc_dp2d_gpu_batch
{
	uint32_t	wa,
				ha,
				wb,
				hb;
	uint32_t	na,
				nb;
	const uint8_t *a;			/* na * wa * ha bytes */
	const uint8_t *b;			/* nb * wb * hb bytes */
	uint32_t	npairs;
	const uint32_t *pair_a;		/* npairs indices < na */
	const uint32_t *pair_b;		/* npairs indices < nb */
	int			flags;			/* MCC_DP2D_WARP or 0 */
	uint64_t   *cost;			/* npairs */
	double	   *distance;		/* npairs */
	uint64_t   *differences;	/* npairs */
	uint32_t   *row_map;		/* npairs * ha */
	uint32_t   *col_map;		/* npairs * ha * wa */
	uint8_t    *warped;			/* npairs * ha * wa */
	uint32_t	max_chunk;		/* pairs per chunk at most; 0: what memory allows */
} mcc_dp2d_gpu_batch;

/*
 * Run a batch (in chunks that fit the device's memory). cancel, if not
 * NULL, is read between chunks: when it becomes nonzero the call returns
 * MCC_GPU_CANCELLED with the outputs part-filled.
 */
mcc_gpu_code mcc_dp2d_gpu_run(mcc_dp2d_gpu *ctx, const mcc_dp2d_gpu_batch *batch,
								   const volatile int *cancel, mcc_error *err);

#ifdef __cplusplus
}
#endif

#endif							/* MCC_DP2D_GPU_H */
