/*
 * mcc_hd.h: MCC_HD marks an inline function that both src/core (C11) and
 * the CUDA kernels (kernels/, .cu files) compile, so that the CPU and GPU
 * paths run the same arithmetic. Always inlined: callers pass constants
 * (the dimension, the transform type) that must fold into straight-line
 * code; gcc would otherwise keep the big per-point function out of line
 * (four times slower in 3D).
 */
#ifndef MCC_HD_H
#define MCC_HD_H

#if defined(__CUDACC__)
#define MCC_HD static __forceinline__ __host__ __device__
#elif defined(__GNUC__)
#define MCC_HD static inline __attribute__((always_inline))
#else
#define MCC_HD static inline
#endif

#endif							/* MCC_HD_H */
