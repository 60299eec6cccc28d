/*
 * mcc_gpu_rt.h: the GPU runtime shared by the CUDA libraries of kernels/
 * (the LSS search engine, SAD, elastic matching, chamfer alignment): the
 * device count, opening a device, the one translation of a CUDA error into
 * an mcc_gpu_code (kernels/mcc_gpu_runtime.h) and its message, and the
 * sticky-error rule. No library opens a device or reads a cudaError_t
 * any other way.
 *
 * Header only (static inline), so that each library's own checks, which
 * link only that library's object (kernels/sad.mk, kernels/chamfer.mk),
 * need no further object.
 */
#ifndef MCC_GPU_RT_H
#define MCC_GPU_RT_H

#include <cuda_runtime.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mcc_gpu_runtime.h"

/*
 * Errors after which the CUDA context of the process is unusable (every
 * later call fails the same way): the faults of a kernel (bad address, bad
 * instruction, trap, assert), an uncorrectable ECC error, a launch timeout,
 * a destroyed context and an unknown error. Every library of kernels/ marks
 * its context for good on these, so that the engine stops using that GPU
 * whichever job met the error.
 */
static inline bool
mcc_cuda_is_sticky(cudaError_t e)
{
	switch (e)
	{
		case cudaErrorIllegalAddress:
		case cudaErrorLaunchFailure:
		case cudaErrorHardwareStackError:
		case cudaErrorIllegalInstruction:
		case cudaErrorMisalignedAddress:
		case cudaErrorInvalidAddressSpace:
		case cudaErrorInvalidPc:
		case cudaErrorAssert:
		case cudaErrorECCUncorrectable:
		case cudaErrorLaunchTimeout:
		case cudaErrorContextIsDestroyed:
		case cudaErrorUnknown:
			return true;
		default:
			return false;
	}
}

/* Wall-clock milliseconds (monotonic), for the libraries' timings. */
static inline double
mcc_cuda_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* The code of a CUDA error: the one translation every library uses. */
static inline mcc_gpu_code
mcc_gpu_rt_code(cudaError_t e)
{
	switch (e)
	{
		case cudaSuccess:
			return MCC_GPU_OK;
		case cudaErrorMemoryAllocation:
			return MCC_GPU_OOM;
		case cudaErrorInsufficientDriver:
		case cudaErrorSystemDriverMismatch:
		case cudaErrorStubLibrary:
		case cudaErrorInitializationError:
		case cudaErrorCallRequiresNewerDriver:
			return MCC_GPU_NO_DRIVER;
		case cudaErrorNoDevice:
		case cudaErrorInvalidDevice:
		case cudaErrorDevicesUnavailable:
			return MCC_GPU_NO_DEVICE;
		case cudaErrorNoKernelImageForDevice:
		case cudaErrorUnsupportedPtxVersion:
			return MCC_GPU_UNSUPPORTED;
		default:
			return mcc_cuda_is_sticky(e) ? MCC_GPU_STICKY : MCC_GPU_CUDA;
	}
}

/* Set err to a failure given by its code (not a CUDA error); returns code. */
static inline __attribute__((format(printf, 3, 4))) mcc_gpu_code
mcc_gpu_rt_err(mcc_error *err, mcc_gpu_code code, const char *fmt,...)
{
	va_list		ap;

	if (err)
	{
		err->status = code == MCC_GPU_OOM ? MCC_ERR_MEMORY :
			code == MCC_GPU_INVALID ? MCC_ERR_VALUE :
			code == MCC_GPU_UNSUPPORTED ? MCC_ERR_VALUE : MCC_ERR_INTERNAL;
		va_start(ap, fmt);
		vsnprintf(err->message, sizeof(err->message), fmt, ap);
		va_end(ap);
		err->detail[0] = 0;
	}
	return code;
}

/*
 * The sticky state of a library's context: set by the first sticky error,
 * with that error's message; from then on every call on the context
 * returns MCC_GPU_STICKY (mcc_gpu_rt_usable) and close frees only host
 * memory where the library says so.
 */
typedef struct mcc_gpu_rt_lost
{
	int			lost;
	char		why[MCC_ERRMSG_LEN];
} mcc_gpu_rt_lost;

/*
 * A failed CUDA call (what names it, dev >= 0 the device): its code and
 * message in err; a sticky error marks lost (when not NULL). The error is
 * then read off (cudaGetLastError), so that later calls see their own; a
 * sticky one stays, as CUDA keeps it.
 */
static inline mcc_gpu_code
mcc_gpu_rt_fail(mcc_gpu_rt_lost *lost, cudaError_t e, const char *what, int dev, mcc_error *err)
{
	mcc_gpu_code code = mcc_gpu_rt_code(e);
	const char *pre = code == MCC_GPU_STICKY ? "unrecoverable GPU error: " : "";

	(void) cudaGetLastError();
	if (dev >= 0)
		mcc_gpu_rt_err(err, code, "%s%s on GPU %d failed: %s (%s)", pre, what, dev,
					   cudaGetErrorString(e), cudaGetErrorName(e));
	else
		mcc_gpu_rt_err(err, code, "%s%s failed: %s (%s)", pre, what, cudaGetErrorString(e),
					   cudaGetErrorName(e));
	if (err && code == MCC_GPU_STICKY)
		snprintf(err->detail, sizeof(err->detail),
				 "The CUDA context of this process is lost; use the CPU path.");
	if (err && code == MCC_GPU_OOM)
		snprintf(err->detail, sizeof(err->detail),
				 "The GPU has too little free memory; the context is still usable.");
	if (lost && code == MCC_GPU_STICKY && !lost->lost)
	{
		lost->lost = 1;
		snprintf(lost->why, sizeof(lost->why), "%s", err ? err->message : what);
	}
	return code;
}

/* MCC_GPU_OK, or MCC_GPU_STICKY with the first sticky error's message. */
static inline mcc_gpu_code
mcc_gpu_rt_usable(const mcc_gpu_rt_lost *lost, mcc_error *err)
{
	if (!lost->lost)
		return MCC_GPU_OK;
	return mcc_gpu_rt_err(err, MCC_GPU_STICKY, "%s", lost->why);
}

/*
 * Make the device buffer *buf of *cap bytes hold at least need bytes, by a
 * new allocation when it is smaller (what it held is not kept; on failure
 * it is gone: NULL, 0 bytes).
 */
static inline cudaError_t
mcc_gpu_rt_reserve(void **buf, size_t *cap, size_t need)
{
	cudaError_t e;

	if (need <= *cap)
		return cudaSuccess;
	cudaFree(*buf);
	*buf = NULL;
	*cap = 0;
	if ((e = cudaMalloc(buf, need)) != cudaSuccess)
		return e;
	*cap = need;
	return cudaSuccess;
}

/*
 * Release buffers and forget them: every pointer given is NULL after, so
 * that a second release, or a reserve, finds nothing to free. Device
 * buffers (cudaFree), pinned host buffers (cudaFreeHost), malloc'ed ones.
 */
template <typename... T>
static inline void
mcc_gpu_rt_free(T *&...p)
{
	((cudaFree((void *) p), p = NULL), ...);
}

template <typename... T>
static inline void
mcc_gpu_rt_free_host(T *&...p)
{
	((cudaFreeHost((void *) p), p = NULL), ...);
}

template <typename... T>
static inline void
mcc_gpu_rt_free_malloc(T *&...p)
{
	((free((void *) p), p = NULL), ...);
}

/*
 * Queue the copy of bytes of host memory src into the device buffer *buf of
 * *cap bytes on stream st, the buffer grown first (mcc_gpu_rt_reserve).
 */
static inline cudaError_t
mcc_gpu_rt_upload(void **buf, size_t *cap, const void *src, size_t bytes, cudaStream_t st)
{
	cudaError_t e = mcc_gpu_rt_reserve(buf, cap, bytes);

	if (e != cudaSuccess)
		return e;
	return cudaMemcpyAsync(*buf, src, bytes, cudaMemcpyHostToDevice, st);
}

/* Add the milliseconds between two recorded events to *ms (a stage's time). */
static inline cudaError_t
mcc_gpu_rt_add_ms(double *ms, cudaEvent_t from, cudaEvent_t to)
{
	float		t;
	cudaError_t e = cudaEventElapsedTime(&t, from, to);

	if (e == cudaSuccess)
		*ms += t;
	return e;
}

/* The number of devices in *n; no driver or no device fail cleanly. */
static inline mcc_gpu_code
mcc_gpu_rt_count(int *n, mcc_error *err)
{
	cudaError_t e;

	*n = 0;
	if ((e = cudaGetDeviceCount(n)) != cudaSuccess)
	{
		*n = 0;
		return mcc_gpu_rt_fail(NULL, e, "CUDA device probe", -1, err);
	}
	if (*n == 0)
		return mcc_gpu_rt_err(err, MCC_GPU_NO_DEVICE, "no CUDA device found");
	return MCC_GPU_OK;
}

/* What device i is, its free and total memory included (mcc_gpu_probe). */
static inline mcc_gpu_code
mcc_gpu_rt_describe(int i, mcc_gpu_devinfo *info, mcc_error *err)
{
	cudaDeviceProp pr;
	cudaError_t e;

	if ((e = cudaGetDeviceProperties(&pr, i)) != cudaSuccess)
		return mcc_gpu_rt_fail(NULL, e, "device properties", i, err);
	memset(info, 0, sizeof(*info));
	info->ordinal = i;
	snprintf(info->name, sizeof(info->name), "%s", pr.name);
	info->cc_major = pr.major;
	info->cc_minor = pr.minor;
	info->sm_count = pr.multiProcessorCount;
	if ((e = cudaSetDevice(i)) != cudaSuccess ||
		(e = cudaMemGetInfo(&info->mem_free, &info->mem_total)) != cudaSuccess)
		return mcc_gpu_rt_fail(NULL, e, "memory query", i, err);
	return MCC_GPU_OK;
}

/* A device a library opened: what it needs to know of it. */
typedef struct mcc_gpu_rt_dev
{
	int			ordinal;
	char		name[96];
	int			cc_major;
	int			cc_minor;
	int			sm_count;
	size_t		smem_optin;		/* shared memory per block, opted in */
} mcc_gpu_rt_dev;

/*
 * Open device ordinal for a library whose kernels need compute capability
 * min_major.0 (lib names the library in the message): the driver and the
 * device probed, its properties read, the device made current. No driver,
 * no such device and a device too old fail cleanly (NO_DRIVER, NO_DEVICE,
 * UNSUPPORTED); nothing is allocated.
 */
static inline mcc_gpu_code
mcc_gpu_rt_open(int ordinal, int min_major, const char *lib, mcc_gpu_rt_dev *d, mcc_error *err)
{
	cudaDeviceProp pr;
	cudaError_t e;
	int			n;
	mcc_gpu_code code;

	memset(d, 0, sizeof(*d));
	if ((code = mcc_gpu_rt_count(&n, err)) != MCC_GPU_OK)
		return code;
	if (ordinal < 0 || ordinal >= n)
		return mcc_gpu_rt_err(err, MCC_GPU_NO_DEVICE, "no CUDA device %d (%d found)", ordinal, n);
	if ((e = cudaGetDeviceProperties(&pr, ordinal)) != cudaSuccess)
		return mcc_gpu_rt_fail(NULL, e, "device properties", ordinal, err);
	if (pr.major < min_major)
		return mcc_gpu_rt_err(err, MCC_GPU_UNSUPPORTED,
							  "GPU %d (%s) has compute capability %d.%d; the %s kernels need %d.0",
							  ordinal, pr.name, pr.major, pr.minor, lib, min_major);
	if ((e = cudaSetDevice(ordinal)) != cudaSuccess)
		return mcc_gpu_rt_fail(NULL, e, "device selection", ordinal, err);
	d->ordinal = ordinal;
	snprintf(d->name, sizeof(d->name), "%s", pr.name);
	d->cc_major = pr.major;
	d->cc_minor = pr.minor;
	d->sm_count = pr.multiProcessorCount;
	d->smem_optin = pr.sharedMemPerBlockOptin;
	return MCC_GPU_OK;
}

#endif							/* MCC_GPU_RT_H */
