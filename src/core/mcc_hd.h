/*
 * mcc_hd.h: MCC_HD marks a small inline function that both src/core (C11)
 * and the CUDA kernels (kernels/, .cu files) compile, so that the CPU and GPU paths
 * run the same arithmetic. Outside nvcc it is plain "static inline".
 */
#ifndef MCC_HD_H
#define MCC_HD_H

#ifdef __CUDACC__
#define MCC_HD static inline __host__ __device__
#else
#define MCC_HD static inline
#endif

#endif							/* MCC_HD_H */
