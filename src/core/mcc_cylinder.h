/*
 * mcc_cylinder.h: Minutia Cylinder-Code creation (mcc-spec §3, paper 000 §2.1).
 *
 * One cylinder per minutia whose cylinder is valid; each holds the value bits
 * (and, for profiles with masks, the validity bits) in the layer-major order
 * described in mcc_template.h. Creation is CPU-only and runs at enrolment:
 * the GPU never builds cylinders, it matches the stored ones.
 */
#ifndef MCC_CYLINDER_H
#define MCC_CYLINDER_H

#include <stdint.h>

#include "mcc_error.h"
#include "mcc_minutiae.h"
#include "mcc_profile.h"

typedef struct mcc_cylinder
{
	uint64_t	bits[2 * MCC_MAX_WORDS];	/* value words, then mask words */
	uint16_t	popcount;		/* set value bits */
	uint8_t		angle;			/* byte angle of the minutia (z = 256) */
	uint8_t		minutia;		/* index of the minutia in the set */
} mcc_cylinder;

/*
 * Build the valid cylinders of ms with profile p into out[MCC_MAX_CYL],
 * sorted by angle then minutia index, and set *n. ms must be validated.
 */
mcc_status	mcc_cylinders_create(const mcc_minutiae *ms, const mcc_profile *p,
								 mcc_cylinder *out, int *n, mcc_error *err);

#endif							/* MCC_CYLINDER_H */
