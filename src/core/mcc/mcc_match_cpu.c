/*
 * mcc_match_cpu.c: the choice of the CPU kernel of the comparisons of
 * mcc_match.h (the matrix pass and the relaxation), made at run time as the
 * gallery scan's (mcc_soa.c): the first kernel this CPU can run, best
 * first. Every kernel computes the same bits; tests force each in turn.
 */
#include "mcc_cpu_kernel.h"
#include "mcc_match_int.h"
#include "mcc_soa_int.h"

/* Best first: the automatic choice is the first usable one. */
static const match_kernel kernels[] = {
	{{"avx512", mcc_cpu_has_avx512}, mcc_matrix_avx512, mcc_relax_avx512, mcc_argmax_avx512,
	mcc_ge64_avx512},
	{{"avx2", mcc_cpu_has_avx2}, mcc_matrix_avx2, mcc_relax_avx2, mcc_argmax_avx2, mcc_ge64_avx2},
	{{"popcnt", mcc_cpu_has_popcnt}, mcc_matrix_popcnt, mcc_relax_generic, mcc_argmax_generic,
	mcc_ge64_generic},
	{{"generic", mcc_kernel_always}, mcc_matrix_generic, mcc_relax_generic, mcc_argmax_generic,
	mcc_ge64_generic},
};

static mcc_kernel_table choice = {kernels, sizeof(match_kernel), sizeof(kernels) / sizeof(kernels[0]), -1};

const match_kernel *
mcc_match_kernel(void)
{
	return mcc_kernel_current(&choice);
}

int
mcc_match_set_kernel(const char *name)
{
	return mcc_kernel_force(&choice, name);
}

const char *
mcc_match_kernel_name(void)
{
	return mcc_match_kernel()->h.name;
}
