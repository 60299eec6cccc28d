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

#endif							/* MCC_CUDA_UTIL_H */
