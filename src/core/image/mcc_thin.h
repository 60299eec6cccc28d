/*
 * mcc_thin.h: thinning of a binary image to a one-pixel-wide skeleton.
 *
 * Foreground is 8-connected, background 4-connected (the usual pairing for
 * ridge skeletons); pixels outside the image count as background.
 *
 * The algorithm is Rosenfeld's directional parallel thinning (A. Rosenfeld,
 * "A characterization of parallel thinning algorithms", Information and
 * Control 29, 1975): cycles of four sub-iterations, north, south, east and
 * west; each deletes at once every foreground pixel whose neighbour on that
 * side is background, that is 8-simple (Yokoi's 8-connectivity number is 1)
 * and that has at least two foreground 8-neighbours (not a line end). It
 * stops after a cycle that deletes nothing.
 *
 * What the skeleton satisfies (test/unit/test_thin.c checks each on random
 * and ridge-like images):
 *   - it is a subset of the foreground;
 *   - topology is kept: the same 8-connected foreground components, each
 *     with the same 4-connected holes;
 *   - it is one pixel wide: every skeleton pixel is a line end (at most one
 *     8-neighbour) or cannot be removed without changing the topology (so
 *     no pixel is a 4-connected corner that a diagonal step would replace;
 *     a 2 x 2 block stays only where each of its pixels holds a branch);
 *   - it is a function of the image alone (no thread or CPU dependence).
 */
#ifndef MCC_THIN_H
#define MCC_THIN_H

#include <stddef.h>
#include <stdint.h>

#include "mcc_error.h"

/*
 * Thin the w x h binary image `in` (rows `stride` bytes apart; a pixel is
 * foreground when its byte is nonzero) into `out` (w x h bytes, stride w):
 * 1 on the skeleton, 0 elsewhere. out may be in itself when stride == w.
 * MCC_ERR_VALUE for an empty image or stride < w, MCC_ERR_MEMORY.
 */
mcc_status	mcc_thin(const uint8_t *in, size_t stride, uint32_t w, uint32_t h, uint8_t *out,
					 mcc_error *err);

#endif							/* MCC_THIN_H */
