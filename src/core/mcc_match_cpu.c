/*
 * mcc_match_cpu.c: the choice of the CPU kernel of the comparisons of
 * mcc_match.h (the matrix pass and the relaxation), made at run time as the
 * gallery scan's (mcc_soa.c): the first kernel this CPU can run, best
 * first. Every kernel computes the same bits; tests force each in turn.
 */
#include <string.h>

#include "mcc_match_int.h"
#include "mcc_soa_int.h"

/* Always available. */
static int
always(void)
{
	return 1;
}

/* Best first: the automatic choice is the first usable one. */
static const match_kernel kernels[] = {
	{"avx512", mcc_matrix_avx512, mcc_relax_avx512, mcc_argmax_avx512, mcc_ge64_avx512,
	mcc_cpu_has_avx512},
	{"avx2", mcc_matrix_avx2, mcc_relax_avx2, mcc_argmax_avx2, mcc_ge64_avx2, mcc_cpu_has_avx2},
	{"popcnt", mcc_matrix_popcnt, mcc_relax_generic, mcc_argmax_generic, mcc_ge64_generic,
	mcc_cpu_has_popcnt},
	{"generic", mcc_matrix_generic, mcc_relax_generic, mcc_argmax_generic, mcc_ge64_generic,
	always},
};

#define NKERNELS ((int) (sizeof(kernels) / sizeof(kernels[0])))

/* Index of the kernel in use, -1 until chosen. */
static int	kernel_index = -1;

const match_kernel *
mcc_match_kernel(void)
{
	int			k = __atomic_load_n(&kernel_index, __ATOMIC_ACQUIRE);

	if (k < 0)
	{
		for (k = 0; k < NKERNELS; k++)
			if (kernels[k].usable())
				break;
		__atomic_store_n(&kernel_index, k, __ATOMIC_RELEASE);
	}
	return &kernels[k];
}

int
mcc_match_set_kernel(const char *name)
{
	if (name == NULL)
	{
		__atomic_store_n(&kernel_index, -1, __ATOMIC_RELEASE);
		return 0;
	}
	for (int k = 0; k < NKERNELS; k++)
		if (strcmp(kernels[k].name, name) == 0)
		{
			if (!kernels[k].usable())
				return -1;
			__atomic_store_n(&kernel_index, k, __ATOMIC_RELEASE);
			return 0;
		}
	return -1;
}

const char *
mcc_match_kernel_name(void)
{
	return mcc_match_kernel()->name;
}
