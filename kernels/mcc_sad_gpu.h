/*
 * mcc_sad_gpu.h: the SAD search of mcc_sad.h on an NVIDIA GPU, behind a
 * plain C interface with no CUDA types (kernels/impl/mcc_sad.cu).
 *
 * Results are identical to the CPU's (exact integers): the best k shifts
 * by (SAD, y, x) and, if asked, the whole map. The kernel computes packed
 * byte SADs (PTX vabsdiff4, the instruction behind __vsadu4) of 4 bytes at
 * a time, with register tiles of 4J x Y map positions per thread and a
 * target window that slides down the pattern rows (kernels/impl/mcc_sad_body.h);
 * the best k are selected on the device (CUB: a min-reduction for k = 1, a
 * radix sort of 60-bit keys SAD << 26 | position otherwise) and only they
 * are copied back.
 *
 * Errors: every function returns an mcc_gpu_code (mcc_gpu_runtime.h, the
 * codes of every library of kernels/) and fills err. NO_DRIVER and
 * NO_DEVICE come from mcc_sad_gpu_open() on a machine without a usable
 * GPU; STICKY means the CUDA context is corrupt (close it and use the CPU).
 *
 * Threads: a context is used by one thread at a time. The matcher engine
 * owns it (docs/images.md, "GPU"); a plain C program can use it directly
 * (test/gpu/sad_gpu_check.c, test/bench/sadbench.c).
 */
#ifndef MCC_SAD_GPU_H
#define MCC_SAD_GPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C"
{
#endif

#include "mcc_error.h"
#include "mcc_gpu_runtime.h"
#include "mcc_image.h"
#include "mcc_sad.h"

/* Kernel variants: J words (4J columns) x Y rows per thread. */
typedef enum mcc_sad_gpu_variant
{
	MCC_SAD_GPU_AUTO = 0,		/* by the size of the map */
	MCC_SAD_GPU_J2_Y8,
	MCC_SAD_GPU_J2_Y4,
	MCC_SAD_GPU_J1_Y4,
	MCC_SAD_GPU_J4_Y4,
	MCC_SAD_GPU_J2_Y8_SMEM,		/* pattern column staged in shared memory */
	MCC_SAD_GPU_J2_Y8_DP4A,		/* per-byte vabsdiff4 + dp4a instead of vabsdiff4.add */
	MCC_SAD_GPU_VARIANTS
} mcc_sad_gpu_variant;

typedef struct mcc_sad_gpu mcc_sad_gpu;

/* Milliseconds of the stages of the last search (CUDA events). */
typedef struct mcc_sad_gpu_timing
{
	double		upload_ms;		/* target and pattern to the device, padding */
	double		corr_ms;		/* the padding correction table */
	double		sad_ms;			/* the SAD kernel(s) */
	double		select_ms;		/* keys, then reduction or sort */
	double		download_ms;	/* hits (and map) back */
	double		total_ms;		/* wall clock of the call */
	int			variant;		/* the variant that ran */
	int			launches;		/* SAD kernel launches (bands, row chunks) */
} mcc_sad_gpu_timing;

/* Name of a variant ("j2y8", ...), NULL if unknown. */
const char *mcc_sad_gpu_variant_name(int variant);

/*
 * Open device `device` (0 = the first). Probes the driver and the device;
 * no other CUDA call happens before this one.
 */
mcc_gpu_code mcc_sad_gpu_open(int device, mcc_sad_gpu **ctx, mcc_error *err);

/* Free the context and its device memory. */
void		mcc_sad_gpu_close(mcc_sad_gpu *ctx);

/* "NVIDIA H100 80GB HBM3, 132 SMs, cc 9.0". */
const char *mcc_sad_gpu_describe(const mcc_sad_gpu *ctx);

/*
 * Search target for pattern: the best min(k, shifts) hits best first into
 * hits (room for k; k may be 0) and their number into *n_hits, and the
 * whole map into map (nx * ny values) when map is not NULL. k at most
 * MCC_SAD_MAX_K. variant: mcc_sad_gpu_variant. cancel (may be NULL) is
 * polled between kernel launches. timing may be NULL.
 */
mcc_gpu_code mcc_sad_gpu_search(mcc_sad_gpu *ctx, const mcc_image *target,
									const mcc_image *pattern, uint32_t k,
									mcc_sad_hit *hits, uint32_t *n_hits, uint64_t *map,
									int variant, const volatile int *cancel,
									mcc_sad_gpu_timing *timing, mcc_error *err);

#ifdef __cplusplus
}
#endif

#endif							/* MCC_SAD_GPU_H */
