/*
 * mcc_gpu_runtime.h: what the CUDA libraries of kernels/ share on their C
 * side: the one set of result codes, the description of a device and the
 * device count (kernels/impl/mcc_gpu_rt.h is the CUDA side: opening a
 * device, turning a CUDA error into a code, the sticky-error rule).
 *
 * Every function of the libraries (mcc_gpu.h: the LSS search and its
 * refinement; mcc_sad_gpu.h, mcc_dp2d_gpu.h, mcc_chamfer_gpu.h: the image
 * libraries) returns an mcc_gpu_code and fills an mcc_error (PostgreSQL
 * style message). Nothing aborts or exits. A caller decides with these
 * codes alone, whatever the library:
 *   NO_DRIVER, NO_DEVICE, UNSUPPORTED   that library cannot run on that
 *                                       device (or at all): use the CPU;
 *   INVALID, OOM, CUDA, INTERNAL        this call failed; the context is
 *                                       still usable;
 *   STICKY                              the CUDA context of the process is
 *                                       lost: every later call on the
 *                                       context says so again; close it and
 *                                       use the CPU (a new process is needed
 *                                       to use that GPU again);
 *   CANCELLED                           the caller's cancel flag was raised.
 */
#ifndef MCC_GPU_RUNTIME_H
#define MCC_GPU_RUNTIME_H

#include <stddef.h>

/* src/core's headers have no C++ guards of their own */
#ifdef __cplusplus
extern "C"
{
#endif

#include "mcc_error.h"

typedef enum mcc_gpu_code
{
	MCC_GPU_OK = 0,
	MCC_GPU_NO_DRIVER,			/* no usable CUDA driver (absent or too old) */
	MCC_GPU_NO_DEVICE,			/* a driver, but no (such) usable device */
	MCC_GPU_UNSUPPORTED,		/* profile, size or device the kernels do not handle */
	MCC_GPU_INVALID,			/* bad argument (err says which) */
	MCC_GPU_OOM,				/* device or pinned memory exhausted; usable */
	MCC_GPU_STICKY,				/* CUDA context corrupt: close, fall back */
	MCC_GPU_CUDA,				/* another CUDA error; the context is usable */
	MCC_GPU_CANCELLED,			/* the caller's cancel flag was raised */
	MCC_GPU_INTERNAL			/* a device result failed its check (a bug) */
} mcc_gpu_code;

#define MCC_GPU_MAX_DEVICES		16

/* What a device is; filled by mcc_gpu_probe(). */
typedef struct mcc_gpu_devinfo
{
	int			ordinal;
	char		name[96];
	int			cc_major;
	int			cc_minor;
	int			sm_count;
	size_t		mem_total;
	size_t		mem_free;
} mcc_gpu_devinfo;

/*
 * Count the usable devices (libmccgpu). Never crashes without a driver:
 * returns MCC_GPU_NO_DRIVER or MCC_GPU_NO_DEVICE with the CUDA message in
 * err. info (may be NULL) receives up to max entries.
 */
mcc_gpu_code mcc_gpu_probe(int *count, mcc_gpu_devinfo *info, int max,
						   mcc_error *err);

#ifdef __cplusplus
}
#endif

#endif							/* MCC_GPU_RUNTIME_H */
