/*
 * mcc_synth.h: synthetic fingerprints (minutiae level), deterministic by seed.
 *
 * A master finger is a plausible finger: an elliptical print area, an
 * orientation field with core and delta singularities, and 30..60 minutiae
 * placed with a minimum spacing and directions that follow the field. An
 * impression of it applies what a sensor and a finger do: rotation,
 * translation, non-linear plastic distortion, partial overlap with the
 * sensor window, missing and spurious minutiae, and position/angle noise.
 * The same (seed, finger, impression) always gives the same minutiae, on
 * any machine: the random numbers come from mcc_rng.h and every
 * floating-point step uses correctly rounded IEEE operations or the
 * reproducible functions of mcc_detmath.h (docs/synthetic.md).
 *
 * Lengths that describe the finger (print area, singularity positions,
 * minutia spacing, distortion) are given for 500 dpi and scaled by dpi/500;
 * the sensor window, translation and noise are in pixels as given.
 */
#ifndef MCC_SYNTH_H
#define MCC_SYNTH_H

#include <stdint.h>

#include "mcc_error.h"
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
	/* added after the first contract; all zero means "no perturbation" */
	double		min_spacing;	/* master: least distance between minutiae, px at 500 dpi */
	double		contact_loss;	/* impression: contact area semi-axes shrink by up to this fraction */
	int			border;			/* impression: pixels along the window edge where nothing is detected */
	double		p_type_flip;	/* impression: ending <-> bifurcation, angle kept */
	double		p_dir_flip;		/* impression: direction reversed by 180 degrees */
	double		quality_noise;	/* impression: minutia quality, standard deviation */
	double		variability;	/* impression: noise, missing and spurious scale by 1 +- this */
} mcc_synth_params;

/* Pattern classes of master fingers. */
typedef enum mcc_synth_class
{
	MCC_SYNTH_ARCH = 0,
	MCC_SYNTH_TENTED_ARCH,
	MCC_SYNTH_LEFT_LOOP,
	MCC_SYNTH_RIGHT_LOOP,
	MCC_SYNTH_WHORL
} mcc_synth_class;

#define MCC_SYNTH_NCLASSES	5

/*
 * The shape of a master finger in its own frame (pixels, x right, y down):
 * the fingertip ellipse, the pattern class and the singularities of its
 * orientation field (zero-pole model of Sherlock and Monro), or the arch
 * parameters of a plain arch.
 */
typedef struct mcc_synth_finger
{
	mcc_synth_class cls;
	int			width;			/* master frame: the ellipse's box plus a margin */
	int			height;
	double		cx;				/* ellipse centre (width/2, height/2) */
	double		cy;
	double		a;				/* semi-axes, horizontal and vertical */
	double		b;
	double		theta_inf;		/* orientation far from the singularities, radians */
	int			n_cores;
	int			n_deltas;
	double		core_x[2];
	double		core_y[2];
	double		delta_x[2];
	double		delta_y[2];
	double		arch_height;	/* plain arch: rise of the top ridges, pixels */
	double		arch_width;		/* plain arch: half-width of the rise, pixels */
} mcc_synth_finger;

/* The defaults used by the demo, the tests and the benchmarks. */
void		mcc_synth_defaults(mcc_synth_params *sp);

/* Impressions without perturbation (tests, --clean): the master kept. */
void		mcc_synth_clean(mcc_synth_params *sp);

/*
 * Check parameters for the CLI: sizes, counts and probabilities in range.
 * The generator itself clamps out-of-range values instead of failing.
 */
mcc_status	mcc_synth_check(const mcc_synth_params *sp, mcc_error *err);

/* Master finger number `finger` (any 64-bit value) as minutiae in its own frame. */
void		mcc_synth_master(const mcc_synth_params *sp, uint64_t finger,
							 mcc_minutiae *master);

/* Impression number `impression` of a master finger, as the sensor sees it. */
void		mcc_synth_impression(const mcc_synth_params *sp,
								 const mcc_minutiae *master, uint64_t finger,
								 uint64_t impression, mcc_minutiae *out);

/*
 * The same impression, and for each output minutia the index in master of
 * the minutia it comes from, or -1 for a spurious one (origin[out->count]).
 */
void		mcc_synth_impression_trace(const mcc_synth_params *sp,
									   const mcc_minutiae *master, uint64_t finger,
									   uint64_t impression, mcc_minutiae *out,
									   int *origin);

/* The shape of master finger `finger` (what mcc_synth_master starts from). */
void		mcc_synth_shape(const mcc_synth_params *sp, uint64_t finger,
							mcc_synth_finger *f);

/* Ridge orientation at (x, y) of the master frame, radians in [0, pi). */
double		mcc_synth_orientation(const mcc_synth_finger *f, double x, double y);

/* Name of a pattern class ("arch", "tented_arch", "left_loop", ...). */
const char *mcc_synth_class_name(int cls);

#endif							/* MCC_SYNTH_H */
