/*
 * mcc_chamfer_gpu.h: parametric chamfer alignment on a CUDA GPU (paper
 * 004, Sec. 3), behind a plain C interface with no CUDA types.
 *
 * The distance transform and the LM driver stay on the CPU (mcc_chamfer.h:
 * the same mcc_chamfer_solve as the CPU path); the GPU is the evaluator.
 * The observed points are partitioned over the blocks of a grid (Sec.
 * 3.2.1); each thread evaluates points through the same per-point code as
 * the CPU (mcc_chamfer_model.h: f, J^T r and Table 2's reduced terms),
 * each block reduces its threads' sums in shared memory into a per-block
 * partial, and a second kernel adds the partials in a fixed order. The
 * transform is a kernel argument (constant memory, broadcast to all
 * threads). With opts->pipelined = 1 (what mcc_chamfer_gpu_align uses by
 * default, "PGPU") every candidate's evaluation also computes g and H
 * (Sec. 3.2.2, Algorithm 3), so the points are read once per iteration;
 * pipelined = 0 is the paper's "TGPU" for comparison.
 *
 * Results: the per-point arithmetic is the CPU's, compiled without fused
 * multiply-add; only the order of the sums differs (tree per block, then
 * partials in block order), so sums agree with the CPU's to rounding
 * (relative 1e-12 or so) and alignments to about 1e-9 of the extent (make
 * gpu-check-chamfer states and checks the tolerances). GPU results are
 * deterministic for a given device and point count.
 *
 * Errors: every function returns an mcc_gpu_code (mcc_gpu_runtime.h, the
 * codes of every library of kernels/) and fills err. No driver or no
 * device is a clean MCC_GPU_NO_DRIVER / NO_DEVICE. MCC_GPU_STICKY means
 * the CUDA context of the process is corrupt: close the context and use
 * the CPU. Bad input (the core's checks) is MCC_GPU_INVALID with the
 * core's status in err->status. A context is used by one thread at a time.
 */
#ifndef MCC_CHAMFER_GPU_H
#define MCC_CHAMFER_GPU_H

/* system headers outside the C-linkage block: C++ declares overloads in them */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C"
{
#endif

#include "mcc_chamfer.h"
#include "mcc_error.h"
#include "mcc_gpu_runtime.h"

typedef struct mcc_chamfer_gpu mcc_chamfer_gpu;

/* Timings of the last mcc_chamfer_gpu_align*, milliseconds of wall time. */
typedef struct mcc_chamfer_gpu_times
{
	double		reference_ms;	/* upload of the distance transform and points */
	double		observed_ms;	/* normalization and upload of the observed points */
	double		solve_ms;		/* LM iterations (kernels, copies of the sums) */
} mcc_chamfer_gpu_times;

/* Usable devices in *count (0 with MCC_GPU_NO_DEVICE / NO_DRIVER). */
mcc_gpu_code mcc_chamfer_gpu_device_count(int *count, mcc_error *err);

/* A context on a device (ordinal); *out is NULL on failure. */
mcc_gpu_code mcc_chamfer_gpu_open(int device, mcc_chamfer_gpu **out, mcc_error *err);

/* Free a context (NULL is fine). */
void		mcc_chamfer_gpu_close(mcc_chamfer_gpu *g);

/* Device name of a context. */
const char *mcc_chamfer_gpu_device_name(const mcc_chamfer_gpu *g);

/*
 * Upload a prepared reference (its normalized points and distance
 * transform); it stays until the next call. ref must outlive its use.
 */
mcc_gpu_code mcc_chamfer_gpu_set_reference(mcc_chamfer_gpu *g, const mcc_chamfer_ref *ref,
												   mcc_error *err);

/* Upload a prepared observed set (normalized for the reference set). */
mcc_gpu_code mcc_chamfer_gpu_set_observed(mcc_chamfer_gpu *g, const mcc_chamfer_obs *obs,
												  mcc_error *err);

/*
 * The evaluator function over the uploaded sets (ctx is the context), for
 * mcc_chamfer_solve and for comparing sums with the CPU's.
 */
mcc_status	mcc_chamfer_gpu_eval(void *ctx, const mcc_chamfer_xf *xf, int gh, double *sums,
								 mcc_error *err);

/*
 * The global search's scorer (mcc_chamfer_score_fn of mcc_chamfer_search.h;
 * ctx is the context): one launch per batch of poses, a warp per pose,
 * integer sums, so the scores equal mcc_chamfer_score_cpu's bit for bit.
 * The pyramid's levels are uploaded once per pyramid (by its id).
 * mcc_chamfer_gpu_align_ref's search uses it.
 */
mcc_status	mcc_chamfer_gpu_score(void *ctx, const mcc_chamfer_pyramid *pyr, int level,
								  const double *pts, int n, const mcc_chamfer_spose *poses,
								  int n_poses, int64_t *out, mcc_error *err);

/*
 * Align n observed points with the reference uploaded by
 * mcc_chamfer_gpu_set_reference (the same ref): prepare, upload, solve.
 * opts->pipelined selects PGPU (1) or TGPU (0); opts->threads is ignored.
 */
mcc_gpu_code mcc_chamfer_gpu_align_ref(mcc_chamfer_gpu *g, const mcc_chamfer_ref *ref,
											   const double *obs, size_t n,
											   const mcc_chamfer_opts *opts,
											   mcc_chamfer_result *res, mcc_error *err);

/*
 * The whole alignment with the GPU evaluator (distance transform on the
 * CPU, as in the paper): like mcc_chamfer_align, opts NULL for defaults
 * with pipelined = 1.
 */
mcc_gpu_code mcc_chamfer_gpu_align(mcc_chamfer_gpu *g, const double *obs, size_t n_obs,
										   const double *ref, size_t n_ref, int dim,
										   const mcc_chamfer_opts *opts, mcc_chamfer_result *res,
										   mcc_error *err);

/* Timings of the last alignment. */
mcc_chamfer_gpu_times mcc_chamfer_gpu_last_times(const mcc_chamfer_gpu *g);

#ifdef __cplusplus
}
#endif

#endif							/* MCC_CHAMFER_GPU_H */
