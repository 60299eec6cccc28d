/*
 * mcc_cpu_kernel.h: the run-time choice among the CPU variants of a kernel
 * (AVX-512, AVX2, scalar...), shared by the gallery scan (mcc_soa.c) and
 * the comparisons (mcc_match_cpu.c). A table lists the variants best first,
 * each entry beginning with an mcc_kernel_head; the choice is the first
 * usable one, made on first use, unless a test or benchmark forces one by
 * name.
 */
#ifndef MCC_CPU_KERNEL_H
#define MCC_CPU_KERNEL_H

#include <stddef.h>

typedef struct mcc_kernel_head
{
	const char *name;
	int			(*usable) (void);	/* this CPU can run it */
} mcc_kernel_head;

/*
 * A table: n entries of size bytes from table, each beginning with an
 * mcc_kernel_head, and the index in use (-1 until chosen).
 */
typedef struct mcc_kernel_table
{
	const void *table;
	size_t		size;
	int			n;
	int			index;
} mcc_kernel_table;

/* Always usable (the portable variant). */
int			mcc_kernel_always(void);

/* Never usable (an x86 variant built for another architecture). */
int			mcc_kernel_never(void);

/*
 * The usable() of the x86 variants, 0 off x86. The image kernels (SAD,
 * DP2D): AVX2, AVX-512 F with BW. The gallery scan and the comparisons:
 * POPCNT; AVX2 and POPCNT; AVX-512 F/BW/VL/VPOPCNTDQ and POPCNT.
 */
int			mcc_kernel_avx2(void);
int			mcc_kernel_avx512bw(void);
int			mcc_cpu_has_popcnt(void);
int			mcc_cpu_has_avx2(void);
int			mcc_cpu_has_avx512(void);

/* The entry in use, chosen on first call. Thread-safe. */
const void *mcc_kernel_current(mcc_kernel_table *t);

/*
 * Force an entry by name, or NULL for the automatic choice. Returns 0, or
 * -1 if the name is unknown or this CPU cannot run it.
 */
int			mcc_kernel_force(mcc_kernel_table *t, const char *name);

/*
 * For the families that number their kernels (SAD, DP2D): the first of
 * the n ids of order (best first) that usable(id) accepts, else fallback.
 */
int			mcc_kernel_first(const int *order, int n, int (*usable) (int), int fallback);

#endif							/* MCC_CPU_KERNEL_H */
