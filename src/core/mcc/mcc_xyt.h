/*
 * mcc_xyt.h: NIST NBIS minutiae text ("x y theta [quality]" per line).
 *
 * NBIS mindtct's default frame: origin bottom-left (y = H - row), theta in
 * integer degrees counter-clockwise from east, pointing away from the ridge
 * ending. Converted to mcc_minutiae.h conventions by row = H - y and
 * theta' = theta + 180 degrees (shared/data README; mindtct -m1). When the
 * image height is not given (0), H is the largest y in the file, which
 * translates the template, and leaves its cylinders unchanged; height then
 * becomes the largest row + 1; width 0 becomes the largest x + 1. Blank
 * lines are skipped; anything else that is not 3 or 4 integers is an error
 * naming the line; text without minutiae is an error. dpi 0 means 500.
 */
#ifndef MCC_XYT_H
#define MCC_XYT_H

#include <stddef.h>

#include "mcc_error.h"
#include "mcc_minutiae.h"

mcc_status	mcc_xyt_read(const char *text, size_t len, int width, int height,
						 int dpi, mcc_minutiae *out, mcc_error *err);

/*
 * Write ms as xyt text in NBIS's frame (the inverse of mcc_xyt_read with the
 * template's height). snprintf semantics: returns the length needed, writes
 * at most cap bytes including the terminating NUL.
 */
size_t		mcc_xyt_write(const mcc_minutiae *ms, char *out, size_t cap);

#endif							/* MCC_XYT_H */
