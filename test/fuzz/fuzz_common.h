/*
 * fuzz_common.h: what the libFuzzer harnesses of src/core share.
 *
 * Define FUZZ_NAME (the harness's name, for its notes) before including.
 * Everything here is static inline, so a harness that does not use a
 * function gets no warning for it.
 */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_error.h"
#include "mcc_minutiae.h"

#ifndef FUZZ_NAME
#error "define FUZZ_NAME before including fuzz_common.h"
#endif

/* Abort with a note: libFuzzer records the input. */
static inline void
die(const char *what, const mcc_error *err)
{
	fprintf(stderr, FUZZ_NAME ": %s: %s\n", what, err ? err->message : "");
	abort();
}

/* A reader that failed must say why, with the status it returned. */
static inline void
check_failure(mcc_status st, const mcc_error *err)
{
	if (err->message[0] == '\0' || err->status != st)
		die("failure without a message", err);
}

/* Same set, field by field, floats bit for bit. */
static inline int
same_set(const mcc_minutiae *a, const mcc_minutiae *b)
{
	if (a->width != b->width || a->height != b->height || a->dpi != b->dpi ||
		a->count != b->count)
		return 0;
	for (int i = 0; i < a->count; i++)
		if (a->m[i].x != b->m[i].x || a->m[i].y != b->m[i].y ||
			memcmp(&a->m[i].theta, &b->m[i].theta, sizeof(float)) != 0 ||
			a->m[i].type != b->m[i].type || a->m[i].quality != b->m[i].quality)
			return 0;
	return 1;
}

#endif							/* FUZZ_COMMON_H */
