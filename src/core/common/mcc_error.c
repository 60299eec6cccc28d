/*
 * mcc_error.c: error records for src/core.
 */
#include "mcc_error.h"

#include <stdio.h>
#include <string.h>

void
mcc_error_clear(mcc_error *err)
{
	if (err == NULL)
		return;
	err->status = MCC_OK;
	err->message[0] = '\0';
	err->detail[0] = '\0';
}

mcc_status
mcc_error_set(mcc_error *err, mcc_status status, const char *fmt,...)
{
	va_list		ap;

	if (err == NULL)
		return status;
	err->status = status;
	err->detail[0] = '\0';
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return status;
}

mcc_status
mcc_error_detail(mcc_error *err, const char *fmt,...)
{
	va_list		ap;

	if (err == NULL)
		return MCC_ERR_INTERNAL;
	va_start(ap, fmt);
	vsnprintf(err->detail, sizeof(err->detail), fmt, ap);
	va_end(ap);
	return err->status;
}
