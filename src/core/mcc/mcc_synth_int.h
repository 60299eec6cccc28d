/*
 * mcc_synth_int.h: what the files of the synthetic generator share.
 */
#ifndef MCC_SYNTH_INT_H
#define MCC_SYNTH_INT_H

#include "mcc_rng.h"
#include "mcc_synth.h"

/* Independent random streams of one finger (mcc_rng_key's last key). */
#define MCC_SYNTH_STREAM_SHAPE		1
#define MCC_SYNTH_STREAM_MINUTIAE	2
#define MCC_SYNTH_STREAM_IMPRESSION	3

/* Parameters clamped to what the generator can honour. */
void		mcc_synth_sanitize(const mcc_synth_params *in, mcc_synth_params *out);

/* Pixels per 500-dpi pixel. */
double		mcc_synth_scale(const mcc_synth_params *sp);

#endif							/* MCC_SYNTH_INT_H */
