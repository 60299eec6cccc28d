/*
 * fuzz_iso.c: libFuzzer harness for the ISO/IEC 19794-2 and ANSI/INCITS 378
 * record reader and writer.
 *
 * Any input: mcc_iso_read must return, with a message on failure. A record
 * that reads must hold a valid minutiae set, and writing it back in its
 * family (ISO 2005 for ISO records, ANSI 2004 for ANSI ones, so that angles
 * keep their unit) and reading that must give the same set exactly.
 */
#define FUZZ_NAME "fuzz_iso"

#include "fuzz_common.h"

#include "mcc_iso.h"

/* Read view `view`; on success check the set and its round trip. */
static void
one_view(const uint8_t *data, size_t size, int view)
{
	static mcc_minutiae ms,
				back;
	static uint8_t out[4096];
	mcc_record_info info;
	mcc_record_format fmt;
	mcc_error	err;
	size_t		len = 0;
	mcc_status	st;

	mcc_error_clear(&err);
	st = mcc_iso_read(data, size, view, &ms, &info, &err);
	if (st != MCC_OK)
	{
		check_failure(st, &err);
		return;
	}
	if (mcc_minutiae_validate(&ms, &err) != MCC_OK)
		die("a record read to an invalid set", &err);
	if (info.n_views < view || info.format == MCC_REC_UNKNOWN)
		die("record info disagrees with the view read", NULL);
	fmt = (info.format == MCC_REC_ISO2005 || info.format == MCC_REC_ISO2011) ?
		MCC_REC_ISO2005 : MCC_REC_ANSI2004;
	if (mcc_iso_write(&ms, fmt, NULL, &len, &err) != MCC_OK || len > sizeof(out))
		die("size query failed", &err);
	if (mcc_iso_write(&ms, fmt, out, &len, &err) != MCC_OK)
		die("write failed", &err);
	if (mcc_iso_read(out, len, 1, &back, &info, &err) != MCC_OK)
		die("our own record does not read", &err);
	if (info.format != fmt || !same_set(&ms, &back))
		die("write then read changed the minutiae", NULL);
}

/* libFuzzer entry point: one input. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	one_view(data, size, 1);
	one_view(data, size, 2);
	return 0;
}
