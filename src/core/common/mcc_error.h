/*
 * mcc_error.h: how src/core reports failure without PostgreSQL.
 *
 * Core functions never abort, longjmp or print. They return an mcc_status and
 * fill an mcc_error that the PostgreSQL layer turns into ereport(ERROR) with a
 * SQLSTATE chosen from the status (see src/module/pg_error.c), and that the CLI tools
 * print. Messages follow PostgreSQL style: lower case, no trailing period.
 */
#ifndef MCC_ERROR_H
#define MCC_ERROR_H

#include <stdarg.h>

typedef enum mcc_status
{
	MCC_OK = 0,
	MCC_ERR_SYNTAX,				/* malformed text or record: SQLSTATE 22P02 */
	MCC_ERR_VALUE,				/* well formed but invalid value: 22023 */
	MCC_ERR_RANGE,				/* number outside its allowed range: 22003 */
	MCC_ERR_LIMIT,				/* a program limit such as MaxC: 54000 */
	MCC_ERR_TRUNCATED,			/* binary input ends early: 22P03 */
	MCC_ERR_VERSION,			/* unknown format version or profile: 22P03 */
	MCC_ERR_MEMORY,				/* allocation failed: 53200 */
	MCC_ERR_INTERNAL			/* a bug: XX000 */
} mcc_status;

#define MCC_ERRMSG_LEN 256

typedef struct mcc_error
{
	mcc_status	status;
	char		message[MCC_ERRMSG_LEN];	/* primary message */
	char		detail[MCC_ERRMSG_LEN];		/* optional detail, "" if none */
} mcc_error;

/* Clear an error record. */
void		mcc_error_clear(mcc_error *err);

/* Record a failure with a printf-style message; returns status for chaining. */
mcc_status	mcc_error_set(mcc_error *err, mcc_status status, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

/* Add a printf-style detail line to an error already set; returns its status. */
mcc_status	mcc_error_detail(mcc_error *err, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));

#endif							/* MCC_ERROR_H */
