/*
 * mcc_cuda_util.h: host helpers shared by the CUDA libraries of kernels/
 * (the search engine, SAD, elastic matching, chamfer alignment).
 *
 * Header only (static inline), so that each library's own checks, which
 * link only that library's object, need no further object.
 */
#ifndef MCC_CUDA_UTIL_H
#define MCC_CUDA_UTIL_H

#include <cuda_runtime.h>
#include <time.h>

/*
 * Faults of a kernel (bad address, bad instruction, trap, assert): after
 * any of them the CUDA context of the process is unusable. Every library
 * counts them as sticky; each adds its own further errors.
 */
static inline bool
mcc_cuda_kernel_fault(cudaError_t e)
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
			return true;
		default:
			return false;
	}
}

/*
 * Errors after which the CUDA context of the process is unusable, as the
 * search engine and elastic matching count them: the kernel faults, an
 * uncorrectable ECC error, a launch timeout, a destroyed context and an
 * unknown error.
 */
static inline bool
mcc_cuda_is_sticky(cudaError_t e)
{
	return mcc_cuda_kernel_fault(e) ||
		e == cudaErrorECCUncorrectable ||
		e == cudaErrorLaunchTimeout ||
		e == cudaErrorContextIsDestroyed ||
		e == cudaErrorUnknown;
}

/* Wall-clock milliseconds (monotonic), for the libraries' timings. */
static inline double
mcc_cuda_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

#endif							/* MCC_CUDA_UTIL_H */
