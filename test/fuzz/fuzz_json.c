/*
 * fuzz_json.c: libFuzzer harness for the JSON template text.
 *
 * Any input: mcc_json_read must return, with a message on failure. Text
 * that reads must give a valid set; its canonical text must read back to
 * the same set and profile, bit for bit, and print the same text again.
 */
#define FUZZ_NAME "fuzz_json"

#include "fuzz_common.h"

#include "mcc_json.h"

static char text[1 << 16],
			text2[1 << 16];

/* libFuzzer entry point: one input. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static mcc_minutiae ms,
				back;
	const mcc_profile *p = NULL,
			   *p2 = NULL;
	mcc_error	err;
	mcc_status	st;
	size_t		n,
				n2;

	mcc_error_clear(&err);
	st = mcc_json_read((const char *) data, size, &ms, &p, &err);
	if (st != MCC_OK)
	{
		check_failure(st, &err);
		return 0;
	}
	if (p == NULL || mcc_minutiae_validate(&ms, &err) != MCC_OK)
		die("text read to an invalid set", &err);
	n = mcc_json_write(&ms, p, text, sizeof(text));
	if (n >= sizeof(text) || strlen(text) != n || mcc_json_write(&ms, p, NULL, 0) != n)
		die("write length disagrees with the text", NULL);
	if (mcc_json_read(text, n, &back, &p2, &err) != MCC_OK)
		die("our own text does not read", &err);
	if (p2 != p || !same_set(&ms, &back))
		die("write then read changed the template", NULL);
	n2 = mcc_json_write(&back, p2, text2, sizeof(text2));
	if (n2 != n || memcmp(text, text2, n) != 0)
		die("the canonical text is not a fixed point", NULL);
	return 0;
}
