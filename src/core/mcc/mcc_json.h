/*
 * mcc_json.h: the text form of mcc_template.
 *
 *   {"profile":"gpu2015","width":388,"height":374,"dpi":500,
 *    "minutiae":[[120,88,1.5708,"ending",60], ...]}
 *
 * Each minutia is [x, y, theta] optionally followed by type ("ending",
 * "bifurcation", "other"; default "other") and quality (0..100, default 0),
 * or an object {"x":..,"y":..,"theta":..,"type":..,"quality":..}. x and y
 * are integers in pixels; theta is in radians, [0, 2pi), conventions of
 * mcc_minutiae.h. "profile" is optional (default gpu2015); "dpi" is optional
 * (default 500); "width", "height" and "minutiae" are required. Keys may come
 * in any order; unknown keys, duplicate keys, NaN, Infinity, numbers that
 * overflow, and trailing garbage are errors. Strict RFC 8259 JSON otherwise.
 *
 * Output is canonical: the key order above, theta printed with the fewest
 * digits that read back to the same float, so out(in(out(t))) == out(t).
 */
#ifndef MCC_JSON_H
#define MCC_JSON_H

#include <stddef.h>

#include "mcc_error.h"
#include "mcc_minutiae.h"
#include "mcc_profile.h"

/* Parse text[0..len); *profile gets the named or default profile. */
mcc_status	mcc_json_read(const char *text, size_t len, mcc_minutiae *out,
						  const mcc_profile **profile, mcc_error *err);

/* snprintf semantics: returns the length needed (without the NUL). */
size_t		mcc_json_write(const mcc_minutiae *ms, const mcc_profile *p,
						   char *out, size_t cap);

#endif							/* MCC_JSON_H */
