/*
 * fuzz_xyt.c: libFuzzer harness for the NBIS xyt reader and writer.
 *
 * Any input: mcc_xyt_read must return, with a message on failure. Text that
 * reads (image size derived, then given as 640x480 when it fits) must give
 * a valid set, and writing it and reading the text back with the set's
 * size must give the same set exactly (angles are whole degrees already).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_xyt.h"

static char text[1 << 16];

/* Abort with a note: libFuzzer records the input. */
static void
die(const char *what, const mcc_error *err)
{
	fprintf(stderr, "fuzz_xyt: %s: %s\n", what, err ? err->message : "");
	abort();
}

/* Same set, field by field, floats bit for bit. */
static int
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

/* Read with the given size; on success check the set and its round trip. */
static void
one_size(const uint8_t *data, size_t size, int w, int h)
{
	static mcc_minutiae ms,
				back;
	mcc_error	err;
	mcc_status	st;
	size_t		n;

	mcc_error_clear(&err);
	st = mcc_xyt_read((const char *) data, size, w, h, 0, &ms, &err);
	if (st != MCC_OK)
	{
		if (err.message[0] == '\0' || err.status != st)
			die("failure without a message", &err);
		return;
	}
	if (mcc_minutiae_validate(&ms, &err) != MCC_OK)
		die("text read to an invalid set", &err);
	n = mcc_xyt_write(&ms, text, sizeof(text));
	if (n >= sizeof(text) || strlen(text) != n)
		die("write length disagrees with the text", NULL);
	if (mcc_xyt_read(text, n, ms.width, ms.height, ms.dpi, &back, &err) != MCC_OK)
		die("our own text does not read", &err);
	if (!same_set(&ms, &back))
		die("write then read changed the minutiae", NULL);
}

/* libFuzzer entry point: one input. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	one_size(data, size, 0, 0);
	one_size(data, size, 640, 480);
	return 0;
}
