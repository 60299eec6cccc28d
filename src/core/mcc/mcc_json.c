/*
 * mcc_json.c: the JSON text form of a template's minutiae: the reader of
 * the one schema of mcc_json.h and the canonical writer.
 *
 * A strict RFC 8259 parser (its tokens: mcc_json_lex.c) driven by the
 * schema: it never builds a tree and never recurses, so nesting deeper than
 * the schema is simply a value of the wrong kind. Numbers are checked
 * against the JSON grammar before conversion; theta goes through strtof,
 * whose correct rounding is what the writer's shortest round-trip digits
 * rely on.
 */
#include "mcc_json_lex.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_NAME_MAX	32		/* longest key or name we need to recognise */

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

	if ((st = mcc_json_scan_number(jp, &num, "a number")) != MCC_OK)
		return st;
	n = num.end - num.start;
	if (!mcc_json_text_to_float(jp->s + num.start, n, &f, &overflow, &oom))
		return mcc_json_fail(jp, oom ? MCC_ERR_MEMORY : MCC_ERR_INTERNAL, num.start,
							 oom ? "out of memory for a %zu-character number" :
							 "strtof disagrees with the JSON grammar on a %zu-character number", n);
	if (overflow)
		return mcc_json_fail(jp, MCC_ERR_RANGE, num.start, "theta %.*s overflows",
							 (int) (n > 32 ? 32 : n), jp->s + num.start);
	if (f == 0.0f)
		f = 0.0f;				/* -0 reads as 0 */
	if (!(f >= 0.0f && f < (float) MCC_TWO_PI))
		return mcc_json_fail(jp, MCC_ERR_RANGE, num.start,
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

	mcc_json_skip_ws(jp);
	at = jp->pos;
	if ((st = mcc_json_parse_string(jp, name, sizeof(name), &n, "a minutia type string")) != MCC_OK)
		return st;
	t = n <= sizeof(name) ? mcc_minutia_type_parse(name, (int) n) : -1;
	if (t < 0)
		return mcc_json_fail(jp, MCC_ERR_VALUE, at,
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
			if ((st = mcc_json_parse_int(jp, 0, MCC_MAX_IMAGE_SIDE - 1, minutia_keys[k], &v)) == MCC_OK)
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
			if ((st = mcc_json_parse_int(jp, 0, 100, "quality", &v)) == MCC_OK)
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

	mcc_json_skip_ws(jp);
	at = jp->pos;
	if ((st = mcc_json_parse_string(jp, name, sizeof(name), &len, "a key string")) != MCC_OK)
		return st;
	*k = len <= sizeof(name) ? find_key(name, len, keys, n) : -1;
	if (*k < 0)
		return mcc_json_fail(jp, MCC_ERR_SYNTAX, at, "unknown key \"%s\" in %s",
							 shown_name(name, len, sizeof(name), shown), where);
	if (seen[*k])
		return mcc_json_fail(jp, MCC_ERR_SYNTAX, at, "duplicate key \"%s\" in %s", keys[*k], where);
	seen[*k] = true;
	return mcc_json_expect_char(jp, ':', "\":\" after a key");
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
		mcc_json_skip_ws(jp);
		if (jp->pos < jp->len && jp->s[jp->pos] == ']')
		{
			jp->pos++;
			break;
		}
		if (k == N_MKEYS)
			return mcc_json_fail(jp, MCC_ERR_SYNTAX, at,
								 "a minutia array has at most %d elements (x, y, theta, type, quality)",
								 N_MKEYS);
		if ((st = mcc_json_expect_char(jp, ',', "\",\" or \"]\" in a minutia array")) != MCC_OK)
			return st;
	}
	if (k < 3)
		return mcc_json_fail(jp, MCC_ERR_SYNTAX, at,
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
	mcc_json_skip_ws(jp);
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
			mcc_json_skip_ws(jp);
			if (jp->pos < jp->len && jp->s[jp->pos] == '}')
			{
				jp->pos++;
				break;
			}
			if ((st = mcc_json_expect_char(jp, ',', "\",\" or \"}\" in a minutia object")) != MCC_OK)
				return st;
		}
	}
	for (int k = MKEY_X; k <= MKEY_THETA; k++)
		if (!seen[k])
			return mcc_json_fail(jp, MCC_ERR_SYNTAX, at, "a minutia object lacks \"%s\"",
								 minutia_keys[k]);
	return MCC_OK;
}

/* Parse the minutiae array; *where gets each minutia's offset. */
static mcc_status
parse_minutiae(json_parse *jp, mcc_minutiae *out, size_t *where)
{
	mcc_status	st;

	if ((st = mcc_json_expect_char(jp, '[', "\"[\" to open the minutiae array")) != MCC_OK)
		return st;
	mcc_json_skip_ws(jp);
	if (jp->pos < jp->len && jp->s[jp->pos] == ']')
	{
		jp->pos++;
		return MCC_OK;
	}
	for (;;)
	{
		mcc_minutia *m;

		mcc_json_skip_ws(jp);
		if (out->count == MCC_MAX_MINUTIAE)
		{
			mcc_json_fail(jp, MCC_ERR_LIMIT, jp->pos, "minutia %d is one too many",
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
			st = mcc_json_expected(jp, "a minutia array or object");
		if (st != MCC_OK)
			return st;
		out->count++;
		mcc_json_skip_ws(jp);
		if (jp->pos < jp->len && jp->s[jp->pos] == ']')
		{
			jp->pos++;
			return MCC_OK;
		}
		if ((st = mcc_json_expect_char(jp, ',', "\",\" or \"]\" in the minutiae array")) != MCC_OK)
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
			mcc_json_skip_ws(jp);
			at = jp->pos;
			if ((st = mcc_json_parse_string(jp, name, sizeof(name), &n, "a profile name string")) != MCC_OK)
				return st;
			*profile = n <= sizeof(name) ? mcc_profile_by_name(name, (int) n) : NULL;
			if (*profile == NULL)
				return mcc_json_fail(jp, MCC_ERR_VERSION, at, "unknown profile \"%s\"",
									 shown_name(name, n, sizeof(name), shown));
			return MCC_OK;
		case KEY_WIDTH:
		case KEY_HEIGHT:
			if ((st = mcc_json_parse_int(jp, 1, MCC_MAX_IMAGE_SIDE, template_keys[k], &v)) != MCC_OK)
				return st;
			if (k == KEY_WIDTH)
				out->width = (uint16_t) v;
			else
				out->height = (uint16_t) v;
			return MCC_OK;
		case KEY_DPI:
			if ((st = mcc_json_parse_int(jp, 1, MCC_MAX_DPI, "dpi", &v)) != MCC_OK)
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
			return mcc_json_fail(jp, MCC_ERR_RANGE, where[i],
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
	mcc_json_skip_ws(&jp);
	if (jp.pos >= len)
		return mcc_error_set(err, MCC_ERR_SYNTAX, "invalid json template: the text is empty");
	if ((st = mcc_json_expect_char(&jp, '{', "\"{\" to open the template object")) != MCC_OK)
		return st;
	mcc_json_skip_ws(&jp);
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
			mcc_json_skip_ws(&jp);
			if (jp.pos < len && text[jp.pos] == '}')
			{
				jp.pos++;
				break;
			}
			if ((st = mcc_json_expect_char(&jp, ',', "\",\" or \"}\" in the template object")) != MCC_OK)
				return st;
		}
	}
	mcc_json_skip_ws(&jp);
	if (jp.pos < len)
		return mcc_json_fail(&jp, MCC_ERR_SYNTAX, jp.pos, "unexpected text after the template object");
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
		if (mcc_json_text_to_float(out, k, &back, &overflow, &oom) && back == f)
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
