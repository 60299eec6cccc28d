/*
 * mcc_json_lex.c: the tokens of strict RFC 8259 JSON (mcc_json_lex.h).
 *
 * Numbers are checked against the JSON grammar before conversion; floats go
 * through strtof, whose correct rounding is what the writer's shortest
 * round-trip digits rely on. Strings are decoded with their escapes and
 * checked to be well-formed UTF-8.
 */
#include "mcc_json_lex.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Record a failure at byte offset `at`, named by line and column:
 * "invalid json template: <what> at line L, column C".
 */
mcc_status
mcc_json_fail(json_parse *jp, mcc_status status, size_t at, const char *fmt,...)
{
	char		what[MCC_ERRMSG_LEN];
	va_list		ap;
	int			line = 1,
				col = 1;

	for (size_t i = 0; i < at && i < jp->len; i++)
	{
		if (jp->s[i] == '\n')
		{
			line++;
			col = 1;
		}
		else
			col++;
	}
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return mcc_error_set(jp->err, status,
						 "invalid json template: %s at line %d, column %d",
						 what, line, col);
}

/* Skip JSON whitespace: space, tab, newline, carriage return. */
void
mcc_json_skip_ws(json_parse *jp)
{
	while (jp->pos < jp->len)
	{
		char		c = jp->s[jp->pos];

		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		jp->pos++;
	}
}

/* Describe the character at the read position for an error message. */
static const char *
describe_here(json_parse *jp, char *buf, size_t cap)
{
	unsigned char c;

	static const char *const literals[] = {"true", "false", "null"};

	if (jp->pos >= jp->len)
		return "the end of the text";
	c = (unsigned char) jp->s[jp->pos];
	/* name the kind of value rather than its first character */
	if (c == '"')
		return "a string";
	if (c == '-' || (c >= '0' && c <= '9'))
		return "a number";
	for (int i = 0; i < 3; i++)
	{
		size_t		n = strlen(literals[i]);

		if (jp->len - jp->pos >= n && memcmp(jp->s + jp->pos, literals[i], n) == 0)
			return literals[i];
	}
	if (c >= 0x20 && c < 0x7f)
		snprintf(buf, cap, "\"%c\"", c);
	else
		snprintf(buf, cap, "byte 0x%02x", c);
	return buf;
}

/* Fail with "expected <what>, found <here>". */
mcc_status
mcc_json_expected(json_parse *jp, const char *what)
{
	char		buf[16];

	/* name the usual non-JSON spellings of special floats */
	if (jp->pos < jp->len)
	{
		const char *p = jp->s + jp->pos;
		size_t		left = jp->len - jp->pos;

		if ((left >= 3 && memcmp(p, "NaN", 3) == 0) ||
			(left >= 3 && memcmp(p, "nan", 3) == 0))
			return mcc_json_fail(jp, MCC_ERR_SYNTAX, jp->pos,
								 "expected %s, found NaN, which JSON does not allow", what);
		if ((left >= 3 && (memcmp(p, "Inf", 3) == 0 || memcmp(p, "inf", 3) == 0)) ||
			(left >= 4 && (memcmp(p, "-Inf", 4) == 0 || memcmp(p, "-inf", 4) == 0 ||
						   memcmp(p, "+Inf", 4) == 0)))
			return mcc_json_fail(jp, MCC_ERR_SYNTAX, jp->pos,
								 "expected %s, found Infinity, which JSON does not allow", what);
	}
	return mcc_json_fail(jp, MCC_ERR_SYNTAX, jp->pos, "expected %s, found %s",
						 what, describe_here(jp, buf, sizeof(buf)));
}

/* Consume the character c after whitespace, or fail. */
mcc_status
mcc_json_expect_char(json_parse *jp, char c, const char *what)
{
	mcc_json_skip_ws(jp);
	if (jp->pos < jp->len && jp->s[jp->pos] == c)
	{
		jp->pos++;
		return MCC_OK;
	}
	return mcc_json_expected(jp, what);
}

/* Value of a hex digit, or -1. */
static int
hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Read the 4 hex digits of a \u escape at s[p]; -1 if malformed. */
static long
read_u_escape(json_parse *jp, size_t p)
{
	long		v = 0;

	if (jp->len - p < 4)
		return -1;
	for (int k = 0; k < 4; k++)
	{
		int			h = hex_value(jp->s[p + k]);

		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

/* Length of the well-formed UTF-8 sequence at s[p], or 0 if ill-formed. */
static size_t
utf8_length(const unsigned char *s, size_t left)
{
	unsigned	c = s[0];
	size_t		n;
	unsigned	cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	if (left < n)
		return 0;
	for (size_t k = 1; k < n; k++)
	{
		if ((s[k] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[k] & 0x3f);
	}
	/* no overlong forms, no surrogates, nothing above U+10FFFF */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
		(cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

/* Append code point cp as UTF-8 to buf if it fits; count it anyway. */
static void
put_utf8(char *buf, size_t cap, size_t *n, long cp)
{
	char		tmp[4];
	size_t		k;

	if (cp < 0x80)
		tmp[0] = (char) cp, k = 1;
	else if (cp < 0x800)
		tmp[0] = (char) (0xc0 | (cp >> 6)), tmp[1] = (char) (0x80 | (cp & 0x3f)), k = 2;
	else if (cp < 0x10000)
		tmp[0] = (char) (0xe0 | (cp >> 12)), tmp[1] = (char) (0x80 | ((cp >> 6) & 0x3f)),
			tmp[2] = (char) (0x80 | (cp & 0x3f)), k = 3;
	else
		tmp[0] = (char) (0xf0 | (cp >> 18)), tmp[1] = (char) (0x80 | ((cp >> 12) & 0x3f)),
			tmp[2] = (char) (0x80 | ((cp >> 6) & 0x3f)), tmp[3] = (char) (0x80 | (cp & 0x3f)), k = 4;
	for (size_t i = 0; i < k; i++, (*n)++)
		if (*n < cap)
			buf[*n] = tmp[i];
}

/*
 * Parse a string (after whitespace) and decode it into buf (cap bytes, not
 * NUL-terminated); *n gets its decoded length, which may exceed cap (the
 * string then matches no name we know). Escapes and UTF-8 are validated.
 */
mcc_status
mcc_json_parse_string(json_parse *jp, char *buf, size_t cap, size_t *n, const char *what)
{
	size_t		start;

	mcc_json_skip_ws(jp);
	if (jp->pos >= jp->len || jp->s[jp->pos] != '"')
		return mcc_json_expected(jp, what);
	start = jp->pos++;
	*n = 0;
	for (;;)
	{
		unsigned char c;

		if (jp->pos >= jp->len)
			return mcc_json_fail(jp, MCC_ERR_SYNTAX, start, "unterminated string");
		c = (unsigned char) jp->s[jp->pos];
		if (c == '"')
		{
			jp->pos++;
			return MCC_OK;
		}
		if (c < 0x20)
			return mcc_json_fail(jp, MCC_ERR_SYNTAX, jp->pos,
								 "control character 0x%02x must be escaped in a string", c);
		if (c == '\\')
		{
			char		e;
			long		cp;

			if (jp->len - jp->pos < 2)
				return mcc_json_fail(jp, MCC_ERR_SYNTAX, start, "unterminated string");
			e = jp->s[jp->pos + 1];
			switch (e)
			{
				case '"':
				case '\\':
				case '/':
					cp = e;
					break;
				case 'b':
					cp = '\b';
					break;
				case 'f':
					cp = '\f';
					break;
				case 'n':
					cp = '\n';
					break;
				case 'r':
					cp = '\r';
					break;
				case 't':
					cp = '\t';
					break;
				case 'u':
					cp = read_u_escape(jp, jp->pos + 2);
					if (cp < 0)
						return mcc_json_fail(jp, MCC_ERR_SYNTAX, jp->pos,
											 "\\u must be followed by 4 hex digits");
					if (cp >= 0xdc00 && cp <= 0xdfff)
						return mcc_json_fail(jp, MCC_ERR_SYNTAX, jp->pos,
											 "unpaired low surrogate \\u%04lx", cp);
					if (cp >= 0xd800 && cp <= 0xdbff)
					{
						long		lo = -1;

						if (jp->len - jp->pos >= 12 && jp->s[jp->pos + 6] == '\\' &&
							jp->s[jp->pos + 7] == 'u')
							lo = read_u_escape(jp, jp->pos + 8);
						if (lo < 0xdc00 || lo > 0xdfff)
							return mcc_json_fail(jp, MCC_ERR_SYNTAX, jp->pos,
												 "unpaired high surrogate \\u%04lx", cp);
						cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
						jp->pos += 6;
					}
					jp->pos += 4;
					break;
				default:
					return mcc_json_fail(jp, MCC_ERR_SYNTAX, jp->pos,
										 "invalid escape \"\\%c\" in a string",
										 (e >= 0x20 && e < 0x7f) ? e : '?');
			}
			put_utf8(buf, cap, n, cp);
			jp->pos += 2;
		}
		else
		{
			size_t		k = utf8_length((const unsigned char *) jp->s + jp->pos,
										jp->len - jp->pos);

			if (k == 0)
				return mcc_json_fail(jp, MCC_ERR_SYNTAX, jp->pos, "invalid UTF-8 in a string");
			for (size_t i = 0; i < k; i++, (*n)++)
				if (*n < cap)
					buf[*n] = jp->s[jp->pos + i];
			jp->pos += k;
		}
	}
}

/* Scan a number token (after whitespace) per the JSON grammar. */
mcc_status
mcc_json_scan_number(json_parse *jp, json_number *num, const char *what)
{
	const char *s = jp->s;
	size_t		p,
				len = jp->len;

	mcc_json_skip_ws(jp);
	p = jp->pos;
	num->start = p;
	num->integer = true;
	if (p < len && s[p] == '-')
		p++;
	if (p >= len || s[p] < '0' || s[p] > '9')
		return mcc_json_expected(jp, what);
	if (s[p] == '0')
		p++;
	else
		while (p < len && s[p] >= '0' && s[p] <= '9')
			p++;
	if (p < len && s[p] == '.')
	{
		num->integer = false;
		if (++p >= len || s[p] < '0' || s[p] > '9')
			return mcc_json_fail(jp, MCC_ERR_SYNTAX, p, "expected a digit after the decimal point");
		while (p < len && s[p] >= '0' && s[p] <= '9')
			p++;
	}
	if (p < len && (s[p] == 'e' || s[p] == 'E'))
	{
		num->integer = false;
		if (++p < len && (s[p] == '+' || s[p] == '-'))
			p++;
		if (p >= len || s[p] < '0' || s[p] > '9')
			return mcc_json_fail(jp, MCC_ERR_SYNTAX, p, "expected a digit in the exponent");
		while (p < len && s[p] >= '0' && s[p] <= '9')
			p++;
	}
	/* "01", "1x", "1.5.2": the token must end at a delimiter */
	if (p < len && ((s[p] >= '0' && s[p] <= '9') || (s[p] >= 'a' && s[p] <= 'z') ||
					(s[p] >= 'A' && s[p] <= 'Z') || s[p] == '.' || s[p] == '_' ||
					s[p] == '+' || s[p] == '-'))
		return mcc_json_fail(jp, MCC_ERR_SYNTAX, num->start, "malformed number");
	num->end = p;
	jp->pos = p;
	return MCC_OK;
}

/* Parse an integer in [lo, hi]; a fraction or exponent is an error. */
mcc_status
mcc_json_parse_int(json_parse *jp, long lo, long hi, const char *name, long *v)
{
	json_number num;
	mcc_status	st;
	long		val = 0;
	bool		neg;
	int			digits = 0;

	if ((st = mcc_json_scan_number(jp, &num, "an integer")) != MCC_OK)
		return st;
	if (!num.integer)
		return mcc_json_fail(jp, MCC_ERR_SYNTAX, num.start, "%s must be an integer, found %.*s",
							 name, (int) (num.end - num.start > 32 ? 32 : num.end - num.start),
							 jp->s + num.start);
	neg = jp->s[num.start] == '-';
	for (size_t p = num.start + (neg ? 1 : 0); p < num.end; p++)
	{
		if (++digits > JSON_INT_DIGITS)
			return mcc_json_fail(jp, MCC_ERR_RANGE, num.start, "%s %.*s... is out of range %ld..%ld",
								 name, JSON_INT_DIGITS, jp->s + num.start, lo, hi);
		val = val * 10 + (jp->s[p] - '0');
	}
	if (neg)
		val = -val;
	if (val < lo || val > hi)
		return mcc_json_fail(jp, MCC_ERR_RANGE, num.start, "%s %ld is out of range %ld..%ld",
							 name, val, lo, hi);
	*v = val;
	return MCC_OK;
}

/*
 * Convert the decimal text (JSON grammar, '.' as decimal point) to the
 * nearest float with strtof, whatever LC_NUMERIC says. Returns false if
 * memory for a long token cannot be had or strtof disagrees with the
 * grammar (*oom tells which).
 */
bool
mcc_json_text_to_float(const char *text, size_t n, float *out, bool *overflow, bool *oom)
{
	char		local[JSON_NUMBER_MAX + 8];
	const char *dp = localeconv()->decimal_point;
	size_t		dpl = strlen(dp),
				k = 0;
	char	   *buf = local,
			   *end;
	bool		ok;

	*oom = false;
	if (n + dpl + 1 > sizeof(local))
	{
		/* a valid number may be long: "0.000...1" */
		if ((buf = malloc(n + dpl + 1)) == NULL)
		{
			*oom = true;
			return false;
		}
	}
	for (size_t i = 0; i < n; i++)
	{
		if (text[i] == '.')
		{
			memcpy(buf + k, dp, dpl);
			k += dpl;
		}
		else
			buf[k++] = text[i];
	}
	buf[k] = '\0';
	errno = 0;
	*out = strtof(buf, &end);
	ok = end == buf + k;
	*overflow = isinf(*out);
	if (buf != local)
		free(buf);
	return ok;
}
