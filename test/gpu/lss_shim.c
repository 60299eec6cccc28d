/*
 * lss_shim.c: LUT_sqrt and LUT_p straight from mcc_lss.h and mcc-spec §5.1,
 * for the GPU tests and benchmark while src/core has no mcc_lss.c yet. The
 * GPU makefile links this file only when src/core does not define
 * mcc_lss_sqrt_fx (kernels/gpu.mk).
 */
#include <math.h>

#include "mcc_lss.h"

static uint32_t shim_sqrt[MCC_MAX_BITS + 1];
static int	shim_ready;

/* Fill LUT_sqrt: round(sqrt(p) * 2^12). */
void
mcc_lss_init(void)
{
	if (shim_ready)
		return;
	for (int p = 0; p <= MCC_MAX_BITS; p++)
		shim_sqrt[p] = (uint32_t) lround(sqrt((double) p) * (1 << MCC_SQRT_SHIFT));
	shim_ready = 1;
}

/* LUT_sqrt value of a popcount. */
uint32_t
mcc_lss_sqrt_fx(int popcount)
{
	mcc_lss_init();
	return popcount >= 0 && popcount <= MCC_MAX_BITS ? shim_sqrt[popcount] : 0;
}

/* n_P = min_np + round((max_np - min_np) * Z(n; mu_p, tau_p)). */
int
mcc_lss_np(const mcc_profile *p, int min_cyl)
{
	double		z = 1.0 / (1.0 + exp(-p->tau_p * (min_cyl - p->mu_p)));

	return p->min_np + (int) lround((p->max_np - p->min_np) * z);
}
