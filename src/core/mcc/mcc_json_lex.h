/*
 * mcc_json_lex.h: the tokens of RFC 8259 JSON for the template reader
 * (mcc_json.c): whitespace, punctuation, strings, numbers, and errors that
 * name the line and column. Internal to src/core; the public interface is
 * mcc_json.h.
 */
#ifndef MCC_JSON_LEX_H
#define MCC_JSON_LEX_H

#include <stdbool.h>
#include <stddef.h>

#include "mcc_json.h"

#define JSON_NUMBER_MAX 64		/* number tokens longer than this go to the heap */
#define JSON_INT_DIGITS 9		/* integers beyond this overflow our fields */

typedef struct json_parse
{
	const char *s;
	size_t		len;
	size_t		pos;
	mcc_error  *err;
} json_parse;

/* A number token: where it is and whether it is written as an integer. */
typedef struct json_number
{
	size_t		start;
	size_t		end;
	bool		integer;		/* no fraction, no exponent */
} json_number;

/*
 * Record a failure at byte offset `at`, named by line and column:
 * "invalid json template: <what> at line L, column C".
 */
extern mcc_status mcc_json_fail(json_parse *jp, mcc_status status, size_t at,
								const char *fmt,...)
			__attribute__((format(printf, 4, 5)));

/* Skip JSON whitespace: space, tab, newline, carriage return. */
extern void mcc_json_skip_ws(json_parse *jp);

/* Fail with "expected <what>, found <here>". */
extern mcc_status mcc_json_expected(json_parse *jp, const char *what);

/* Consume the character c after whitespace, or fail. */
extern mcc_status mcc_json_expect_char(json_parse *jp, char c,
									   const char *what);

/*
 * Parse a string (after whitespace) and decode it into buf (cap bytes, not
 * NUL-terminated); *n gets its decoded length, which may exceed cap (the
 * string then matches no name we know). Escapes and UTF-8 are validated.
 */
extern mcc_status mcc_json_parse_string(json_parse *jp, char *buf, size_t cap,
										size_t *n, const char *what);

/* Scan a number token (after whitespace) per the JSON grammar. */
extern mcc_status mcc_json_scan_number(json_parse *jp, json_number *num,
									   const char *what);

/* Parse an integer in [lo, hi]; a fraction or exponent is an error. */
extern mcc_status mcc_json_parse_int(json_parse *jp, long lo, long hi,
									 const char *name, long *v);

/*
 * Convert the decimal text (JSON grammar, '.' as decimal point) to the
 * nearest float with strtof, whatever LC_NUMERIC says. Returns false if
 * memory for a long token cannot be had or strtof disagrees with the
 * grammar (*oom tells which).
 */
extern bool mcc_json_text_to_float(const char *text, size_t n, float *out,
								   bool *overflow, bool *oom);

#endif							/* MCC_JSON_LEX_H */
