/*
 * mcc_synth.h: synthetic fingerprints (minutiae level), deterministic by seed.
 *
 * A master finger is a plausible finger: an elliptical print area, an
 * orientation field with core and delta singularities, and 30..60 minutiae
 * placed with a minimum spacing and directions that follow the field. An
 * impression of it applies what a sensor and a finger do: rotation,
 * translation, non-linear plastic distortion, partial overlap with the
 * sensor window, missing and spurious minutiae, and position/angle noise.
 * The same (seed, finger, impression) always gives the same minutiae.
 */
#ifndef MCC_SYNTH_H
#define MCC_SYNTH_H

#include <stdint.h>

#include "mcc_minutiae.h"

typedef struct mcc_synth_params
{
	uint64_t	seed;
	int			width;			/* sensor image, pixels */
	int			height;
	int			dpi;
	int			min_minutiae;	/* master finger: 30 */
	int			max_minutiae;	/* master finger: 60 */
	double		max_rotation;	/* impression: degrees, uniform +- */
	double		max_translation;	/* pixels, uniform +- in x and y */
	double		distortion;		/* plastic distortion strength, 0 = none */
	double		p_missing;		/* chance a master minutia is not detected */
	double		max_spurious;	/* spurious minutiae, fraction of detected */
	double		pos_noise;		/* pixels, standard deviation */
	double		angle_noise;	/* degrees, standard deviation */
} mcc_synth_params;

/* The defaults used by the demo, the tests and the benchmarks. */
void		mcc_synth_defaults(mcc_synth_params *sp);

/* Master finger number `finger` (any 64-bit value) as minutiae in its own frame. */
void		mcc_synth_master(const mcc_synth_params *sp, uint64_t finger,
							 mcc_minutiae *master);

/* Impression number `impression` of a master finger, as the sensor sees it. */
void		mcc_synth_impression(const mcc_synth_params *sp,
								 const mcc_minutiae *master, uint64_t finger,
								 uint64_t impression, mcc_minutiae *out);

#endif							/* MCC_SYNTH_H */
