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

/*
 * The kept disc cells of profile p in bit order ((i, j) order, i outer), as
 * offsets (a, b) from the minutia in units of Delta_S, a along the minutia's
 * direction; a and b hold MCC_MAX_BITS. Returns their number (p->ndisc).
 */
int			mcc_cylinder_cells(const mcc_profile *p, double *a, double *b);

/* G_D(alpha) of profile p: the directional contribution (mcc-spec §3.2). */
double		mcc_cylinder_gd(const mcc_profile *p, double alpha);

/*
 * The real values of minutia mi's cylinder before thresholding (tests, and
 * later P-MCC): values[k * p->ndisc + c] for section k and kept disc cell c
 * (0 for invalid cells), valid[c] = 1 for cells inside the dilated hull;
 * p->nbits and p->ndisc entries. Returns whether the cylinder is valid; when
 * it is not, the arrays may be incomplete. ms must be validated.
 */
bool		mcc_cylinder_values(const mcc_minutiae *ms, const mcc_profile *p,
								int mi, double *values, uint8_t *valid);

#endif							/* MCC_CYLINDER_H */
