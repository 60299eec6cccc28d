/*
 * mcc_json.c: the JSON text form of a template's minutiae.
 *
 * A strict RFC 8259 parser driven by the one schema of mcc_json.h: it never
 * builds a tree and never recurses, so nesting deeper than the schema is
 * simply a value of the wrong kind. Numbers are checked against the JSON
 * grammar before conversion; theta goes through strtof, whose correct
 * rounding is what the writer's shortest round-trip digits rely on.
 */
#include "mcc_json.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_NAME_MAX	32		/* longest key or name we need to recognise */
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

/* Keys of the template object, in canonical order. */
enum
{
	KEY_PROFILE, KEY_WIDTH, KEY_HEIGHT, KEY_DPI, KEY_MINUTIAE, N_KEYS
};
static const char *const template_keys[N_KEYS] = {
	"profile", "width", "height", "dpi", "minutiae"
};

/* Keys of a minutia object, in the order of the array form. */
enum
{
	MKEY_X, MKEY_Y, MKEY_THETA, MKEY_TYPE, MKEY_QUALITY, N_MKEYS
};
static const char *const minutia_keys[N_MKEYS] = {
	"x", "y", "theta", "type", "quality"
};

/*
 * Record a failure at byte offset `at`, named by line and column:
 * "invalid json template: <what> at line L, column C".
 */
static mcc_status
jfail(json_parse *jp, mcc_status status, size_t at, const char *fmt,...)
	__attribute__((format(printf, 4, 5)));

static mcc_status
jfail(json_parse *jp, mcc_status status, size_t at, const char *fmt,...)
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
static void
skip_ws(json_parse *jp)
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
static mcc_status
expected(json_parse *jp, const char *what)
{
	char		buf[16];

	/* name the usual non-JSON spellings of special floats */
	if (jp->pos < jp->len)
	{
		const char *p = jp->s + jp->pos;
		size_t		left = jp->len - jp->pos;

		if ((left >= 3 && memcmp(p, "NaN", 3) == 0) ||
			(left >= 3 && memcmp(p, "nan", 3) == 0))
			return jfail(jp, MCC_ERR_SYNTAX, jp->pos,
						 "expected %s, found NaN, which JSON does not allow", what);
		if ((left >= 3 && (memcmp(p, "Inf", 3) == 0 || memcmp(p, "inf", 3) == 0)) ||
			(left >= 4 && (memcmp(p, "-Inf", 4) == 0 || memcmp(p, "-inf", 4) == 0 ||
						   memcmp(p, "+Inf", 4) == 0)))
			return jfail(jp, MCC_ERR_SYNTAX, jp->pos,
						 "expected %s, found Infinity, which JSON does not allow", what);
	}
	return jfail(jp, MCC_ERR_SYNTAX, jp->pos, "expected %s, found %s",
				 what, describe_here(jp, buf, sizeof(buf)));
}

/* Consume the character c after whitespace, or fail. */
static mcc_status
expect_char(json_parse *jp, char c, const char *what)
{
	skip_ws(jp);
	if (jp->pos < jp->len && jp->s[jp->pos] == c)
	{
		jp->pos++;
		return MCC_OK;
	}
	return expected(jp, what);
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
static mcc_status
parse_string(json_parse *jp, char *buf, size_t cap, size_t *n, const char *what)
{
	size_t		start;

	skip_ws(jp);
	if (jp->pos >= jp->len || jp->s[jp->pos] != '"')
		return expected(jp, what);
	start = jp->pos++;
	*n = 0;
	for (;;)
	{
		unsigned char c;

		if (jp->pos >= jp->len)
			return jfail(jp, MCC_ERR_SYNTAX, start, "unterminated string");
		c = (unsigned char) jp->s[jp->pos];
		if (c == '"')
		{
			jp->pos++;
			return MCC_OK;
		}
		if (c < 0x20)
			return jfail(jp, MCC_ERR_SYNTAX, jp->pos,
						 "control character 0x%02x must be escaped in a string", c);
		if (c == '\\')
		{
			char		e;
			long		cp;

			if (jp->len - jp->pos < 2)
				return jfail(jp, MCC_ERR_SYNTAX, start, "unterminated string");
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
						return jfail(jp, MCC_ERR_SYNTAX, jp->pos,
									 "\\u must be followed by 4 hex digits");
					if (cp >= 0xdc00 && cp <= 0xdfff)
						return jfail(jp, MCC_ERR_SYNTAX, jp->pos,
									 "unpaired low surrogate \\u%04lx", cp);
					if (cp >= 0xd800 && cp <= 0xdbff)
					{
						long		lo = -1;

						if (jp->len - jp->pos >= 12 && jp->s[jp->pos + 6] == '\\' &&
							jp->s[jp->pos + 7] == 'u')
							lo = read_u_escape(jp, jp->pos + 8);
						if (lo < 0xdc00 || lo > 0xdfff)
							return jfail(jp, MCC_ERR_SYNTAX, jp->pos,
										 "unpaired high surrogate \\u%04lx", cp);
						cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
						jp->pos += 6;
					}
					jp->pos += 4;
					break;
				default:
					return jfail(jp, MCC_ERR_SYNTAX, jp->pos,
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
				return jfail(jp, MCC_ERR_SYNTAX, jp->pos, "invalid UTF-8 in a string");
			for (size_t i = 0; i < k; i++, (*n)++)
				if (*n < cap)
					buf[*n] = jp->s[jp->pos + i];
			jp->pos += k;
		}
	}
}

/* Scan a number token (after whitespace) per the JSON grammar. */
static mcc_status
scan_number(json_parse *jp, json_number *num, const char *what)
{
	const char *s = jp->s;
	size_t		p,
				len = jp->len;

	skip_ws(jp);
	p = jp->pos;
	num->start = p;
	num->integer = true;
	if (p < len && s[p] == '-')
		p++;
	if (p >= len || s[p] < '0' || s[p] > '9')
		return expected(jp, what);
	if (s[p] == '0')
		p++;
	else
		while (p < len && s[p] >= '0' && s[p] <= '9')
			p++;
	if (p < len && s[p] == '.')
	{
		num->integer = false;
		if (++p >= len || s[p] < '0' || s[p] > '9')
			return jfail(jp, MCC_ERR_SYNTAX, p, "expected a digit after the decimal point");
		while (p < len && s[p] >= '0' && s[p] <= '9')
			p++;
	}
	if (p < len && (s[p] == 'e' || s[p] == 'E'))
	{
		num->integer = false;
		if (++p < len && (s[p] == '+' || s[p] == '-'))
			p++;
		if (p >= len || s[p] < '0' || s[p] > '9')
			return jfail(jp, MCC_ERR_SYNTAX, p, "expected a digit in the exponent");
		while (p < len && s[p] >= '0' && s[p] <= '9')
			p++;
	}
	/* "01", "1x", "1.5.2": the token must end at a delimiter */
	if (p < len && ((s[p] >= '0' && s[p] <= '9') || (s[p] >= 'a' && s[p] <= 'z') ||
					(s[p] >= 'A' && s[p] <= 'Z') || s[p] == '.' || s[p] == '_' ||
					s[p] == '+' || s[p] == '-'))
		return jfail(jp, MCC_ERR_SYNTAX, num->start, "malformed number");
	num->end = p;
	jp->pos = p;
	return MCC_OK;
}

/* Parse an integer in [lo, hi]; a fraction or exponent is an error. */
static mcc_status
parse_int(json_parse *jp, long lo, long hi, const char *name, long *v)
{
	json_number num;
	mcc_status	st;
	long		val = 0;
	bool		neg;
	int			digits = 0;

	if ((st = scan_number(jp, &num, "an integer")) != MCC_OK)
		return st;
	if (!num.integer)
		return jfail(jp, MCC_ERR_SYNTAX, num.start, "%s must be an integer, found %.*s",
					 name, (int) (num.end - num.start > 32 ? 32 : num.end - num.start),
					 jp->s + num.start);
	neg = jp->s[num.start] == '-';
	for (size_t p = num.start + (neg ? 1 : 0); p < num.end; p++)
	{
		if (++digits > JSON_INT_DIGITS)
			return jfail(jp, MCC_ERR_RANGE, num.start, "%s %.*s... is out of range %ld..%ld",
						 name, JSON_INT_DIGITS, jp->s + num.start, lo, hi);
		val = val * 10 + (jp->s[p] - '0');
	}
	if (neg)
		val = -val;
	if (val < lo || val > hi)
		return jfail(jp, MCC_ERR_RANGE, num.start, "%s %ld is out of range %ld..%ld",
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
static bool
text_to_float(const char *text, size_t n, float *out, bool *overflow, bool *oom)
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

/* Parse theta: a JSON number that is a float in [0, 2pi). */
static mcc_status
parse_theta(json_parse *jp, float *theta)
{
	json_number num;
	mcc_status	st;
	bool		overflow = false,
				oom;
	float		f;
	size_t		n;

	if ((st = scan_number(jp, &num, "a number")) != MCC_OK)
		return st;
	n = num.end - num.start;
	if (!text_to_float(jp->s + num.start, n, &f, &overflow, &oom))
		return jfail(jp, oom ? MCC_ERR_MEMORY : MCC_ERR_INTERNAL, num.start,
					 oom ? "out of memory for a %zu-character number" :
					 "strtof disagrees with the JSON grammar on a %zu-character number", n);
	if (overflow)
		return jfail(jp, MCC_ERR_RANGE, num.start, "theta %.*s overflows",
					 (int) (n > 32 ? 32 : n), jp->s + num.start);
	if (f == 0.0f)
		f = 0.0f;				/* -0 reads as 0 */
	if (!(f >= 0.0f && f < (float) MCC_TWO_PI))
		return jfail(jp, MCC_ERR_RANGE, num.start,
					 "theta %.*s is outside [0, 2pi)", (int) (n > 32 ? 32 : n), jp->s + num.start);
	*theta = f;
	return MCC_OK;
}

/*
 * A decoded name for an error message: at most its first 24 bytes, with
 * anything but printable ASCII shown as '?' (a cut could split a UTF-8
 * character, and control characters have no place in a message).
 */
static const char *
shown_name(const char *name, size_t n, size_t cap, char *out)
{
	size_t		k = n < cap ? n : cap;

	if (k > 24)
		k = 24;
	for (size_t i = 0; i < k; i++)
		out[i] = (name[i] >= 0x20 && name[i] < 0x7f && name[i] != '"') ? name[i] : '?';
	out[k] = '\0';
	if (n > k)
		strcpy(out + k, "...");
	return out;
}

/* Parse a minutia type name. */
static mcc_status
parse_type(json_parse *jp, uint8_t *type)
{
	char		name[JSON_NAME_MAX],
				shown[32];
	size_t		n;
	size_t		at;
	mcc_status	st;
	int			t;

	skip_ws(jp);
	at = jp->pos;
	if ((st = parse_string(jp, name, sizeof(name), &n, "a minutia type string")) != MCC_OK)
		return st;
	t = n <= sizeof(name) ? mcc_minutia_type_parse(name, (int) n) : -1;
	if (t < 0)
		return jfail(jp, MCC_ERR_VALUE, at,
					 "unknown minutia type \"%s\" (ending, bifurcation or other)",
					 shown_name(name, n, sizeof(name), shown));
	*type = (uint8_t) t;
	return MCC_OK;
}

/* Parse one field of a minutia (index k of the array form). */
static mcc_status
parse_minutia_field(json_parse *jp, int k, mcc_minutia *m)
{
	mcc_status	st = MCC_OK;
	long		v;

	switch (k)
	{
		case MKEY_X:
		case MKEY_Y:
			if ((st = parse_int(jp, 0, MCC_MAX_IMAGE_SIDE - 1, minutia_keys[k], &v)) == MCC_OK)
			{
				if (k == MKEY_X)
					m->x = (int16_t) v;
				else
					m->y = (int16_t) v;
			}
			break;
		case MKEY_THETA:
			st = parse_theta(jp, &m->theta);
			break;
		case MKEY_TYPE:
			st = parse_type(jp, &m->type);
			break;
		case MKEY_QUALITY:
			if ((st = parse_int(jp, 0, 100, "quality", &v)) == MCC_OK)
				m->quality = (uint8_t) v;
			break;
	}
	return st;
}

/* Look a decoded key up in keys[0..n); -1 if it is not there. */
static int
find_key(const char *name, size_t len, const char *const *keys, int n)
{
	for (int k = 0; k < n; k++)
		if (strlen(keys[k]) == len && memcmp(keys[k], name, len) == 0)
			return k;
	return -1;
}

/*
 * Parse a key and its colon; *k gets its index in keys[0..n). Unknown and
 * repeated keys are errors.
 */
static mcc_status
parse_key(json_parse *jp, const char *const *keys, int n, bool *seen,
		  const char *where, int *k)
{
	char		name[JSON_NAME_MAX],
				shown[32];
	size_t		len,
				at;
	mcc_status	st;

	skip_ws(jp);
	at = jp->pos;
	if ((st = parse_string(jp, name, sizeof(name), &len, "a key string")) != MCC_OK)
		return st;
	*k = len <= sizeof(name) ? find_key(name, len, keys, n) : -1;
	if (*k < 0)
		return jfail(jp, MCC_ERR_SYNTAX, at, "unknown key \"%s\" in %s",
					 shown_name(name, len, sizeof(name), shown), where);
	if (seen[*k])
		return jfail(jp, MCC_ERR_SYNTAX, at, "duplicate key \"%s\" in %s", keys[*k], where);
	seen[*k] = true;
	return expect_char(jp, ':', "\":\" after a key");
}

/* Parse a minutia in array form: [x, y, theta, type?, quality?]. */
static mcc_status
parse_minutia_array(json_parse *jp, mcc_minutia *m)
{
	size_t		at = jp->pos;
	mcc_status	st;
	int			k = 0;

	jp->pos++;					/* the '[' */
	for (;;)
	{
		if ((st = parse_minutia_field(jp, k, m)) != MCC_OK)
			return st;
		k++;
		skip_ws(jp);
		if (jp->pos < jp->len && jp->s[jp->pos] == ']')
		{
			jp->pos++;
			break;
		}
		if (k == N_MKEYS)
			return jfail(jp, MCC_ERR_SYNTAX, at,
						 "a minutia array has at most %d elements (x, y, theta, type, quality)",
						 N_MKEYS);
		if ((st = expect_char(jp, ',', "\",\" or \"]\" in a minutia array")) != MCC_OK)
			return st;
	}
	if (k < 3)
		return jfail(jp, MCC_ERR_SYNTAX, at,
					 "a minutia array needs at least x, y and theta, found %d element%s",
					 k, k == 1 ? "" : "s");
	return MCC_OK;
}

/* Parse a minutia in object form: {"x":..,"y":..,"theta":..,...}. */
static mcc_status
parse_minutia_object(json_parse *jp, mcc_minutia *m)
{
	bool		seen[N_MKEYS] = {false};
	size_t		at = jp->pos;
	mcc_status	st;

	jp->pos++;					/* the '{' */
	skip_ws(jp);
	if (jp->pos < jp->len && jp->s[jp->pos] == '}')
		jp->pos++;
	else
	{
		for (;;)
		{
			int			k;

			if ((st = parse_key(jp, minutia_keys, N_MKEYS, seen, "a minutia", &k)) != MCC_OK)
				return st;
			if ((st = parse_minutia_field(jp, k, m)) != MCC_OK)
				return st;
			skip_ws(jp);
			if (jp->pos < jp->len && jp->s[jp->pos] == '}')
			{
				jp->pos++;
				break;
			}
			if ((st = expect_char(jp, ',', "\",\" or \"}\" in a minutia object")) != MCC_OK)
				return st;
		}
	}
	for (int k = MKEY_X; k <= MKEY_THETA; k++)
		if (!seen[k])
			return jfail(jp, MCC_ERR_SYNTAX, at, "a minutia object lacks \"%s\"",
						 minutia_keys[k]);
	return MCC_OK;
}

/* Parse the minutiae array; *where gets each minutia's offset. */
static mcc_status
parse_minutiae(json_parse *jp, mcc_minutiae *out, size_t *where)
{
	mcc_status	st;

	if ((st = expect_char(jp, '[', "\"[\" to open the minutiae array")) != MCC_OK)
		return st;
	skip_ws(jp);
	if (jp->pos < jp->len && jp->s[jp->pos] == ']')
	{
		jp->pos++;
		return MCC_OK;
	}
	for (;;)
	{
		mcc_minutia *m;

		skip_ws(jp);
		if (out->count == MCC_MAX_MINUTIAE)
		{
			jfail(jp, MCC_ERR_LIMIT, jp->pos, "minutia %d is one too many",
				  MCC_MAX_MINUTIAE + 1);
			return mcc_error_detail(jp->err, "A template holds at most %d minutiae.",
									MCC_MAX_MINUTIAE);
		}
		m = &out->m[out->count];
		memset(m, 0, sizeof(*m));
		m->type = MCC_TYPE_OTHER;
		where[out->count] = jp->pos;
		if (jp->pos < jp->len && jp->s[jp->pos] == '[')
			st = parse_minutia_array(jp, m);
		else if (jp->pos < jp->len && jp->s[jp->pos] == '{')
			st = parse_minutia_object(jp, m);
		else
			st = expected(jp, "a minutia array or object");
		if (st != MCC_OK)
			return st;
		out->count++;
		skip_ws(jp);
		if (jp->pos < jp->len && jp->s[jp->pos] == ']')
		{
			jp->pos++;
			return MCC_OK;
		}
		if ((st = expect_char(jp, ',', "\",\" or \"]\" in the minutiae array")) != MCC_OK)
			return st;
	}
}

/* Parse one value of the template object, for key k. */
static mcc_status
parse_template_value(json_parse *jp, int k, mcc_minutiae *out, size_t *where,
					 const mcc_profile **profile)
{
	char		name[JSON_NAME_MAX],
				shown[32];
	size_t		n,
				at;
	long		v;
	mcc_status	st;

	switch (k)
	{
		case KEY_PROFILE:
			skip_ws(jp);
			at = jp->pos;
			if ((st = parse_string(jp, name, sizeof(name), &n, "a profile name string")) != MCC_OK)
				return st;
			*profile = n <= sizeof(name) ? mcc_profile_by_name(name, (int) n) : NULL;
			if (*profile == NULL)
				return jfail(jp, MCC_ERR_VERSION, at, "unknown profile \"%s\"",
							 shown_name(name, n, sizeof(name), shown));
			return MCC_OK;
		case KEY_WIDTH:
		case KEY_HEIGHT:
			if ((st = parse_int(jp, 1, MCC_MAX_IMAGE_SIDE, template_keys[k], &v)) != MCC_OK)
				return st;
			if (k == KEY_WIDTH)
				out->width = (uint16_t) v;
			else
				out->height = (uint16_t) v;
			return MCC_OK;
		case KEY_DPI:
			if ((st = parse_int(jp, 1, MCC_MAX_DPI, "dpi", &v)) != MCC_OK)
				return st;
			out->dpi = (uint16_t) v;
			return MCC_OK;
		default:
			return parse_minutiae(jp, out, where);
	}
}

/* Check every minutia against the image, naming its position. */
static mcc_status
check_minutiae(json_parse *jp, const mcc_minutiae *out, const size_t *where)
{
	for (int i = 0; i < out->count; i++)
	{
		const mcc_minutia *m = &out->m[i];

		if (m->x >= out->width || m->y >= out->height)
			return jfail(jp, MCC_ERR_RANGE, where[i],
						 "minutia %d at (%d, %d) lies outside the %ux%u image",
						 i + 1, m->x, m->y, out->width, out->height);
	}
	return MCC_OK;
}

/* Parse a JSON template text (mcc_json.h). */
mcc_status
mcc_json_read(const char *text, size_t len, mcc_minutiae *out,
			  const mcc_profile **profile, mcc_error *err)
{
	json_parse	jp = {text, len, 0, err};
	bool		seen[N_KEYS] = {false};
	size_t		where[MCC_MAX_MINUTIAE];
	const mcc_profile *prof = mcc_profile_by_id(MCC_PROFILE_DEFAULT);
	mcc_status	st;

	if (out == NULL || (text == NULL && len > 0))
		return mcc_error_set(err, MCC_ERR_INTERNAL, "mcc_json_read called without text");
	memset(out, 0, offsetof(mcc_minutiae, m));
	out->dpi = MCC_DEFAULT_DPI;
	skip_ws(&jp);
	if (jp.pos >= len)
		return mcc_error_set(err, MCC_ERR_SYNTAX, "invalid json template: the text is empty");
	if ((st = expect_char(&jp, '{', "\"{\" to open the template object")) != MCC_OK)
		return st;
	skip_ws(&jp);
	if (jp.pos < len && text[jp.pos] == '}')
		jp.pos++;
	else
	{
		for (;;)
		{
			int			k;

			if ((st = parse_key(&jp, template_keys, N_KEYS, seen, "the template", &k)) != MCC_OK)
				return st;
			if ((st = parse_template_value(&jp, k, out, where, &prof)) != MCC_OK)
				return st;
			skip_ws(&jp);
			if (jp.pos < len && text[jp.pos] == '}')
			{
				jp.pos++;
				break;
			}
			if ((st = expect_char(&jp, ',', "\",\" or \"}\" in the template object")) != MCC_OK)
				return st;
		}
	}
	skip_ws(&jp);
	if (jp.pos < len)
		return jfail(&jp, MCC_ERR_SYNTAX, jp.pos, "unexpected text after the template object");
	for (int k = KEY_WIDTH; k <= KEY_MINUTIAE; k++)
		if (!seen[k] && k != KEY_DPI)
			return mcc_error_set(err, MCC_ERR_SYNTAX,
								 "invalid json template: the key \"%s\" is missing",
								 template_keys[k]);
	if ((st = check_minutiae(&jp, out, where)) != MCC_OK)
		return st;
	if (profile)
		*profile = prof;
	return MCC_OK;
}

/*
 * The shortest "%.Ng" text of f (N = 1..9) that strtof reads back as f,
 * with '.' as the decimal point whatever the locale.
 */
static void
float_text(float f, char *out, size_t cap)
{
	const char *dp = localeconv()->decimal_point;

	for (int prec = 1; prec <= 9; prec++)
	{
		char		tmp[48];
		size_t		k = 0;
		bool		overflow,
					oom;
		float		back;

		snprintf(tmp, sizeof(tmp), "%.*g", prec, (double) f);
		/* the locale's decimal point back to '.' */
		for (size_t i = 0; tmp[i] != '\0' && k + 1 < cap;)
		{
			if (*dp && strncmp(tmp + i, dp, strlen(dp)) == 0)
			{
				out[k++] = '.';
				i += strlen(dp);
			}
			else
				out[k++] = tmp[i++];
		}
		out[k] = '\0';
		if (text_to_float(out, k, &back, &overflow, &oom) && back == f)
			return;
	}
}

/* snprintf-style appending: count everything, store what fits. */
static void
jappend(char *out, size_t cap, size_t *used, const char *s)
{
	size_t		n = strlen(s);

	if (*used < cap)
	{
		size_t		room = cap - *used - 1;	/* keep a byte for the NUL */

		memcpy(out + *used, s, n < room ? n : room);
	}
	*used += n;
}

/* Write the canonical JSON text, snprintf-style (mcc_json.h). */
size_t
mcc_json_write(const mcc_minutiae *ms, const mcc_profile *p,
			   char *out, size_t cap)
{
	char		buf[160];
	size_t		used = 0;

	if (p == NULL)
		p = mcc_profile_by_id(MCC_PROFILE_DEFAULT);
	snprintf(buf, sizeof(buf),
			 "{\"profile\":\"%s\",\"width\":%u,\"height\":%u,\"dpi\":%u,\"minutiae\":[",
			 p->name, ms->width, ms->height, ms->dpi);
	jappend(out, cap, &used, buf);
	for (int i = 0; i < ms->count && i < MCC_MAX_MINUTIAE; i++)
	{
		const mcc_minutia *m = &ms->m[i];
		char		theta[48];

		float_text(m->theta, theta, sizeof(theta));
		snprintf(buf, sizeof(buf), "%s[%d,%d,%s,\"%s\",%d]", i > 0 ? "," : "",
				 m->x, m->y, theta, mcc_minutia_type_name(m->type), (int) m->quality);
		jappend(out, cap, &used, buf);
	}
	jappend(out, cap, &used, "]}");
	if (cap > 0)
		out[used < cap ? used : cap - 1] = '\0';
	return used;
}
