/*
 * testsets.h: the equality of two minutiae sets that the round-trip tests
 * check (test_json.c, and test_iso.c, test_iso_samples.c through
 * iso_testlib.h): every field equal, theta bit for bit.
 */
#ifndef MCC_TESTSETS_H
#define MCC_TESTSETS_H

#include <stdbool.h>
#include <string.h>

#include "mcc_minutiae.h"

/* Are two sets equal, field by field (floats bit for bit)? */
static inline bool
same_set(const mcc_minutiae *a, const mcc_minutiae *b)
{
	if (a->width != b->width || a->height != b->height || a->dpi != b->dpi ||
		a->count != b->count)
		return false;
	for (int i = 0; i < a->count; i++)
		if (a->m[i].x != b->m[i].x || a->m[i].y != b->m[i].y ||
			memcmp(&a->m[i].theta, &b->m[i].theta, sizeof(a->m[i].theta)) != 0 ||
			a->m[i].type != b->m[i].type || a->m[i].quality != b->m[i].quality)
			return false;
	return true;
}

#endif
