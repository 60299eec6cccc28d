/*
 * mcc_popcount.h: the portable 64-bit popcount, for code built for any
 * x86-64 (no POPCNT instruction assumed: the build never uses
 * -march=native). __builtin_popcountll there is a call into libgcc's
 * table-driven __popcountdi2, which was 7.6 % of the engine's load CPU
 * (the template check of every cylinder, mcc_template.c); this is a dozen
 * inline instructions. Kernels chosen at run time (mcc_cpu_kernel.h) use
 * the instruction where the CPU has it.
 */
#ifndef MCC_POPCOUNT_H
#define MCC_POPCOUNT_H

#include <stdint.h>

/* Portable 64-bit popcount (no POPCNT instruction needed). */
static inline int
mcc_popcount64_swar(uint64_t x)
{
	x = x - ((x >> 1) & UINT64_C(0x5555555555555555));
	x = (x & UINT64_C(0x3333333333333333)) + ((x >> 2) & UINT64_C(0x3333333333333333));
	x = (x + (x >> 4)) & UINT64_C(0x0F0F0F0F0F0F0F0F);
	return (int) ((x * UINT64_C(0x0101010101010101)) >> 56);
}

#endif							/* MCC_POPCOUNT_H */
