/*
 * fuzz_xyt.c: libFuzzer harness for the NBIS xyt reader and writer.
 *
 * Any input: mcc_xyt_read must return, with a message on failure. Text that
 * reads (image size derived, then given as 640x480 when it fits) must give
 * a valid set, and writing it and reading the text back with the set's
 * size must give the same set exactly (angles are whole degrees already).
 */
#define FUZZ_NAME "fuzz_xyt"

#include "fuzz_common.h"

#include "mcc_xyt.h"

static char text[1 << 16];

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
		check_failure(st, &err);
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
