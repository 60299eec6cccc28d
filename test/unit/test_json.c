/*
 * test_json.c: the JSON text form of a template's minutiae.
 *
 * Grammar and schema (mcc_json.h), error classes with their positions,
 * canonical output with shortest round-trip floats, and, with
 * ../shared/data, FVC2002 minutiae through JSON and back.
 */
#include <locale.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "unit.h"
#include "testfvc.h"
#include "testgen.h"
#include "testsets.h"
#include "mcc_iso.h"
#include "mcc_json.h"
#include "mcc_xyt.h"

#define TWO_PI 6.28318530717958647692

/* Parse text; status, message in err. */
static mcc_status
parse(const char *text, mcc_minutiae *ms, const mcc_profile **p, mcc_error *err)
{
	mcc_error_clear(err);
	return mcc_json_read(text, strlen(text), ms, p, err);
}

/* Expect a failure whose message holds `needle`. */
static void
expect_fail(const char *text, mcc_status want, const char *needle, const char *name)
{
	mcc_minutiae ms;
	mcc_error	err;
	mcc_status	st = parse(text, &ms, NULL, &err);

	UNIT_CHECK(st == want && strstr(err.message, needle) != NULL,
			   "%s: status %d (want %d), \"%s\"", name, st, want, err.message);
}

/*
 * Write, read back, write again: the set and the text must survive
 * unchanged. Returns true if they do.
 */
static bool
round_trip(const mcc_minutiae *ms, const mcc_profile *p)
{
	static char text[32768],
				text2[32768];
	mcc_minutiae back;
	const mcc_profile *p2 = NULL;
	mcc_error	err;
	size_t		n = mcc_json_write(ms, p, text, sizeof(text));

	if (n >= sizeof(text) || mcc_json_read(text, n, &back, &p2, &err) != MCC_OK)
	{
		printf("# round trip: %s\n", err.message);
		return false;
	}
	if (mcc_json_write(&back, p2, text2, sizeof(text2)) != n || strcmp(text, text2) != 0)
		return false;
	return same_set(ms, &back) && p2 == (p ? p : mcc_profile_by_id(MCC_PROFILE_DEFAULT));
}

/* Names in messages are cut and shown as printable ASCII. */
static void
expect_fail_shown(void)
{
	mcc_minutiae ms;
	mcc_error	err;

	parse("{\"a\\nb\\u00e9cdefghijklmnopqrstuvwxyz0123456789\":1}", &ms, NULL, &err);
	UNIT_CHECK(strstr(err.message, "unknown key \"a?b??cdefghijklmnopqrstu...\"") != NULL,
			   "an unknown key is shown cut, non-ASCII as '?': %s", err.message);
}

/* The accepted forms. */
static void
test_parse(void)
{
	mcc_minutiae ms;
	const mcc_profile *p;
	mcc_error	err;
	mcc_status	st;
	char		out[512];

	st = parse("{\"profile\":\"gpu2015\",\"width\":388,\"height\":374,\"dpi\":500,"
			   "\"minutiae\":[[120,88,1.5708,\"ending\",60],[5,6,0.25]]}", &ms, &p, &err);
	UNIT_CHECK(st == MCC_OK && p == mcc_profile_by_name("gpu2015", 7) && ms.width == 388 &&
			   ms.height == 374 && ms.dpi == 500 && ms.count == 2 && ms.m[0].x == 120 &&
			   ms.m[0].y == 88 && ms.m[0].theta == 1.5708f && ms.m[0].type == MCC_TYPE_ENDING &&
			   ms.m[0].quality == 60 && ms.m[1].type == MCC_TYPE_OTHER && ms.m[1].quality == 0 &&
			   ms.m[1].theta == 0.25f,
			   "the documented example, with defaults for type and quality (%s)", err.message);
	st = parse(" \r\n\t{ \"minutiae\" : [ { \"theta\" : 3e-1 , \"quality\":100, \"y\":0,"
			   " \"type\":\"bifurcation\", \"x\" : 9 } , [1,2,0,\"other\"] ] ,"
			   "\"height\":10,\"width\":10 ,\"profile\":\"tpami2010\"}\n ", &ms, &p, &err);
	UNIT_CHECK(st == MCC_OK && p == mcc_profile_by_name("tpami2010", 9) && ms.dpi == 500 &&
			   ms.count == 2 && ms.m[0].x == 9 && ms.m[0].y == 0 && ms.m[0].theta == 0.3f &&
			   ms.m[0].type == MCC_TYPE_BIFURCATION && ms.m[0].quality == 100,
			   "object form, any key order, whitespace, default dpi (%s)", err.message);
	st = parse("{\"width\":3,\"height\":4,\"minutiae\":[]}", &ms, &p, &err);
	UNIT_CHECK(st == MCC_OK && ms.count == 0 && p == mcc_profile_by_id(MCC_PROFILE_DEFAULT),
			   "no minutiae, default profile (%s)", err.message);
	st = parse("{\"\\u0077idth\":3,\"height\":4,\"minutiae\":[[0,0,-0,\"\\u0065nd\\u0069ng\"]]}",
			   &ms, &p, &err);
	UNIT_CHECK(st == MCC_OK && ms.width == 3 && ms.m[0].type == MCC_TYPE_ENDING &&
			   ms.m[0].theta == 0.0f && !signbit(ms.m[0].theta),
			   "escaped key and type name; -0 reads as +0 (%s)", err.message);
	st = parse("{\"width\":3,\"height\":4,\"minutiae\":[[0,0,1E0],[0,0,6.283185],[0,0,1e-400]]}",
			   &ms, &p, &err);
	UNIT_CHECK(st == MCC_OK && ms.m[0].theta == 1.0f && ms.m[1].theta < (float) TWO_PI &&
			   ms.m[2].theta == 0.0f,
			   "exponents; 6.283185 is below 2pi; 1e-400 underflows to 0 (%s)", err.message);

	/* a valid number may be long: 1.000...0001 (600 digits) is 1 as a float */
	{
		static char text[1024];
		size_t		n = (size_t) snprintf(text, sizeof(text),
										  "{\"width\":3,\"height\":4,\"minutiae\":[[0,0,1.");

		for (int i = 0; i < 600; i++)
			text[n++] = i == 599 ? '1' : '0';
		n += (size_t) snprintf(text + n, sizeof(text) - n, "]]}");
		mcc_error_clear(&err);
		st = mcc_json_read(text, n, &ms, &p, &err);
		UNIT_CHECK(st == MCC_OK && ms.m[0].theta == 1.0f,
				   "a 602-character theta reads (%s)", err.message);
	}
	expect_fail_shown();

	/* canonical text: key order, compact, shortest floats (checked by hand) */
	tg_frame(&ms, 300, 400, 569);
	ms.count = 4;
	ms.m[0] = (mcc_minutia) {1, 2, 1.5f, MCC_TYPE_ENDING, 60};
	ms.m[1] = (mcc_minutia) {3, 4, 0.1f, MCC_TYPE_BIFURCATION, 0};
	ms.m[2] = (mcc_minutia) {5, 6, (float) M_PI, MCC_TYPE_OTHER, 100};
	ms.m[3] = (mcc_minutia) {7, 8, 0x1p-149f, MCC_TYPE_OTHER, 1};
	mcc_json_write(&ms, NULL, out, sizeof(out));
	UNIT_CHECK(strcmp(out, "{\"profile\":\"gpu2015\",\"width\":300,\"height\":400,\"dpi\":569,"
					  "\"minutiae\":[[1,2,1.5,\"ending\",60],[3,4,0.1,\"bifurcation\",0],"
					  "[5,6,3.1415927,\"other\",100],[7,8,1e-45,\"other\",1]]}") == 0,
			   "canonical text: %s", out);
}

/* Every error class, with its position. */
static void
test_errors(void)
{
	static char big[300 * 16 + 128];
	size_t		n,
				cut = 0;
	mcc_minutiae ms;
	mcc_error	err;

#define T(body) "{\"width\":10,\"height\":10,\"minutiae\":[" body "]}"
	expect_fail("", MCC_ERR_SYNTAX, "empty", "empty input");
	expect_fail(" \n\t ", MCC_ERR_SYNTAX, "empty", "whitespace only");
	expect_fail("[]", MCC_ERR_SYNTAX, "expected \"{\"", "an array at the top");
	expect_fail("\xef\xbb\xbf{}", MCC_ERR_SYNTAX, "byte 0xef", "a byte order mark");
	expect_fail(T("[1,2,NaN]"), MCC_ERR_SYNTAX, "NaN", "NaN");
	expect_fail(T("[1,2,Infinity]"), MCC_ERR_SYNTAX, "Infinity", "Infinity");
	expect_fail(T("[1,2,-Infinity]"), MCC_ERR_SYNTAX, "Infinity", "-Infinity");
	expect_fail(T("[1,2,1e39]"), MCC_ERR_RANGE, "overflows", "a theta overflowing a float");
	expect_fail(T("[1,2,1e999]"), MCC_ERR_RANGE, "overflows", "a theta overflowing a double");
	expect_fail(T("[1,2,6.2831855]"), MCC_ERR_RANGE, "outside [0, 2pi)", "theta that rounds to 2pi");
	expect_fail(T("[1,2,7]"), MCC_ERR_RANGE, "outside [0, 2pi)", "theta 7");
	expect_fail(T("[1,2,-0.5]"), MCC_ERR_RANGE, "outside [0, 2pi)", "negative theta");
	expect_fail(T("[10,2,1]"), MCC_ERR_RANGE, "minutia 1 at (10, 2) lies outside", "x equal to the width");
	expect_fail(T("[1,2,1],[2,10,1]"), MCC_ERR_RANGE, "minutia 2 at (2, 10)", "y equal to the height");
	expect_fail(T("[-1,2,1]"), MCC_ERR_RANGE, "x -1 is out of range", "negative x");
	expect_fail(T("[16383,2,1]"), MCC_ERR_RANGE, "x 16383", "x 16383");
	expect_fail(T("[1,12345678901,1]"), MCC_ERR_RANGE, "out of range", "an overflowing y");
	expect_fail(T("[1,2,1,\"ending\",101]"), MCC_ERR_RANGE, "quality 101", "quality 101");
	expect_fail(T("[1.0,2,1]"), MCC_ERR_SYNTAX, "x must be an integer", "a fractional x");
	expect_fail(T("[1e0,2,1]"), MCC_ERR_SYNTAX, "x must be an integer", "an exponent x");
	expect_fail(T("[01,2,1]"), MCC_ERR_SYNTAX, "malformed number", "a leading zero");
	expect_fail(T("[1,2,1.]"), MCC_ERR_SYNTAX, "decimal point", "a bare decimal point");
	expect_fail(T("[1,2,.5]"), MCC_ERR_SYNTAX, "expected a number", "a missing integer part");
	expect_fail(T("[1,2,+1]"), MCC_ERR_SYNTAX, "expected a number", "a plus sign");
	expect_fail(T("[1,2,-]"), MCC_ERR_SYNTAX, "expected a number", "a lone minus");
	expect_fail(T("[1,2,1e]"), MCC_ERR_SYNTAX, "exponent", "an empty exponent");
	expect_fail(T("[1,2,0x1]"), MCC_ERR_SYNTAX, "malformed number", "hex");
	expect_fail(T("[1,2]"), MCC_ERR_SYNTAX, "at least x, y and theta", "two elements");
	expect_fail(T("[1,2,1,\"other\",0,7]"), MCC_ERR_SYNTAX, "at most 5", "six elements");
	expect_fail(T("[1,2,1,]"), MCC_ERR_SYNTAX, "expected a minutia type", "a trailing comma");
	expect_fail(T("[1,2,1],"), MCC_ERR_SYNTAX, "expected a minutia array or object", "a trailing comma in the list");
	expect_fail(T("[1,2,1,2]"), MCC_ERR_SYNTAX, "minutia type string", "a numeric type");
	expect_fail(T("[1,2,1,null]"), MCC_ERR_SYNTAX, "found null", "a null type");
	expect_fail(T("[1,2,true]"), MCC_ERR_SYNTAX, "expected a number, found true", "a boolean theta");
	expect_fail(T("[1,2,\"1\"]"), MCC_ERR_SYNTAX, "expected a number, found a string", "a string theta");
	expect_fail("{\"width\":10,\"height\":10,\"minutiae\":[-1]}", MCC_ERR_SYNTAX,
				"expected a minutia array or object, found a number", "a number for a minutia");
	expect_fail(T("[1,2,1,\"ridge\"]"), MCC_ERR_VALUE, "unknown minutia type \"ridge\"", "an unknown type");
	expect_fail(T("[1,2,1,\"Ending\"]"), MCC_ERR_VALUE, "unknown minutia type", "type names are case-sensitive");
	expect_fail(T("{\"x\":1,\"y\":2}"), MCC_ERR_SYNTAX, "lacks \"theta\"", "an object without theta");
	expect_fail(T("{\"x\":1,\"y\":2,\"theta\":1,\"x\":3}"), MCC_ERR_SYNTAX, "duplicate key \"x\"",
				"a duplicate key in a minutia");
	expect_fail(T("{\"x\":1,\"y\":2,\"theta\":1,\"angle\":3}"), MCC_ERR_SYNTAX, "unknown key \"angle\"",
				"an unknown key in a minutia");
	expect_fail("{\"width\":10,\"height\":10,\"minutiae\":[],\"width\":10}", MCC_ERR_SYNTAX,
				"duplicate key \"width\"", "a duplicate template key");
	expect_fail("{\"width\":10,\"height\":10,\"minutiae\":[],\"cylinders\":[]}", MCC_ERR_SYNTAX,
				"unknown key \"cylinders\"", "an unknown template key");
	expect_fail("{\"width\":10,\"minutiae\":[]}", MCC_ERR_SYNTAX, "\"height\" is missing", "no height");
	expect_fail("{\"width\":10,\"height\":10}", MCC_ERR_SYNTAX, "\"minutiae\" is missing", "no minutiae");
	expect_fail("{}", MCC_ERR_SYNTAX, "\"width\" is missing", "an empty object");
	expect_fail("{\"width\":0,\"height\":10,\"minutiae\":[]}", MCC_ERR_RANGE, "width 0", "width 0");
	expect_fail("{\"width\":16384,\"height\":10,\"minutiae\":[]}", MCC_ERR_RANGE, "width 16384", "width 16384");
	expect_fail("{\"width\":1,\"height\":1,\"dpi\":0,\"minutiae\":[]}", MCC_ERR_RANGE, "dpi 0", "dpi 0");
	expect_fail("{\"width\":1,\"height\":1,\"dpi\":10001,\"minutiae\":[]}", MCC_ERR_RANGE, "dpi 10001", "dpi 10001");
	expect_fail("{\"width\":\"10\",\"height\":10,\"minutiae\":[]}", MCC_ERR_SYNTAX, "expected an integer",
				"a width string");
	expect_fail("{\"profile\":\"mcc\",\"width\":1,\"height\":1,\"minutiae\":[]}", MCC_ERR_VERSION,
				"unknown profile \"mcc\"", "an unknown profile");
	expect_fail("{\"profile\":null,\"width\":1,\"height\":1,\"minutiae\":[]}", MCC_ERR_SYNTAX,
				"profile name string", "a null profile");
	expect_fail(T("") " x", MCC_ERR_SYNTAX, "unexpected text after", "trailing garbage");
	expect_fail(T("") "{}", MCC_ERR_SYNTAX, "unexpected text after", "a second object");
	expect_fail("{\"width\":10 \"height\":10}", MCC_ERR_SYNTAX, "expected \",\" or \"}\"", "a missing comma");
	expect_fail("{\"width\" 10}", MCC_ERR_SYNTAX, "expected \":\"", "a missing colon");
	expect_fail("{width:10}", MCC_ERR_SYNTAX, "expected a key string", "an unquoted key");
	expect_fail("{'width':10}", MCC_ERR_SYNTAX, "expected a key string", "a single-quoted key");
	expect_fail("{\"width\":10,\"height\":10,\"minutiae\":[", MCC_ERR_SYNTAX, "the end of the text",
				"input ending inside the list");
	expect_fail("{\"wid", MCC_ERR_SYNTAX, "unterminated string", "input ending inside a key");
	expect_fail("{\"wi\tdth\":1}", MCC_ERR_SYNTAX, "control character 0x09", "a raw tab in a key");
	expect_fail("{\"wi\\xdth\":1}", MCC_ERR_SYNTAX, "invalid escape", "an invalid escape");
	expect_fail("{\"wi\\u00g0\":1}", MCC_ERR_SYNTAX, "4 hex digits", "a bad \\u escape");
	expect_fail("{\"\\ud800x\":1}", MCC_ERR_SYNTAX, "unpaired high surrogate", "a lone high surrogate");
	expect_fail("{\"\\udc00\":1}", MCC_ERR_SYNTAX, "unpaired low surrogate", "a lone low surrogate");
	expect_fail("{\"\\ud83d\\ude00\":1}", MCC_ERR_SYNTAX, "unknown key", "a surrogate pair decodes");
	expect_fail("{\"\xc3\x28\":1}", MCC_ERR_SYNTAX, "invalid UTF-8", "invalid UTF-8");
	expect_fail("{\"\xc0\xaf\":1}", MCC_ERR_SYNTAX, "invalid UTF-8", "overlong UTF-8");
	expect_fail("{\"\xed\xa0\x80\":1}", MCC_ERR_SYNTAX, "invalid UTF-8", "a UTF-8 surrogate");
	expect_fail("{\"width\":{\"a\":1}}", MCC_ERR_SYNTAX, "expected an integer", "an object for width");
	expect_fail("{\n  \"width\": 10,\n  \"height\": 10,\n  \"minutiae\": [\n    [1, 2, NaN]\n  ]\n}",
				MCC_ERR_SYNTAX, "at line 5, column 12", "the position is a line and column");
#undef T

	/* deep nesting is a wrong kind of value at the first extra level */
	n = (size_t) snprintf(big, sizeof(big), "{\"width\":10,\"height\":10,\"minutiae\":");
	for (int i = 0; i < 2000; i++)
		big[n++] = '[';
	big[n] = '\0';
	expect_fail(big, MCC_ERR_SYNTAX, "column 38", "2000 nested arrays");

	n = (size_t) snprintf(big, sizeof(big), "{\"width\":10,\"height\":10,\"minutiae\":[");
	for (int i = 0; i < 257; i++)
	{
		if (i == 256)
			cut = n;
		n += (size_t) snprintf(big + n, sizeof(big) - n, "%s[%d,%d,1]", i ? "," : "", i % 10, i / 30);
	}
	n += (size_t) snprintf(big + n, sizeof(big) - n, "]}");
	mcc_error_clear(&err);
	UNIT_CHECK(mcc_json_read(big, n, &ms, NULL, &err) == MCC_ERR_LIMIT &&
			   strstr(err.message, "minutia 257"),
			   "257 minutiae: %s", err.message);
	n = cut;
	n += (size_t) snprintf(big + n, sizeof(big) - n, "]}");
	mcc_error_clear(&err);
	UNIT_CHECK(mcc_json_read(big, n, &ms, NULL, &err) == MCC_OK && ms.count == 256,
			   "256 minutiae read (%s)", err.message);
	mcc_error_clear(&err);
	UNIT_CHECK(mcc_json_read(big, 20, &ms, NULL, &err) == MCC_ERR_SYNTAX,
			   "the length bounds the text, not a NUL: %s", err.message);
}

/* Canonical output survives reading: out(in(out(t))) == out(t). */
static void
test_round_trip(void)
{
	mcc_minutiae ms;
	char		small[24],
				full[16384];
	uint32_t	seed = 2024;
	int			good = 0,
				sets = 200;
	size_t		n;

	for (int s = 0; s < sets; s++)
	{
		tg_frame(&ms, 1 + s * 81 % MCC_MAX_IMAGE_SIDE, 1 + s * 37 % MCC_MAX_IMAGE_SIDE,
				 1 + s * 53 % MCC_MAX_DPI);
		ms.count = (uint16_t) (s % (MCC_MAX_MINUTIAE + 1));
		for (int i = 0; i < ms.count; i++)
		{
			uint32_t	bits;
			float		f;

			seed = seed * 1103515245u + 12345u;
			ms.m[i].x = (int16_t) ((seed >> 8) % ms.width);
			seed = seed * 1103515245u + 12345u;
			ms.m[i].y = (int16_t) ((seed >> 8) % ms.height);
			/* any float in [0, 2pi): random bit patterns, subnormals included */
			do
			{
				seed = seed * 1103515245u + 12345u;
				bits = (seed >> 1) % 0x40c90fdbu;
				memcpy(&f, &bits, sizeof(f));
			} while (!(f >= 0.0f && f < (float) TWO_PI));
			ms.m[i].theta = f;
			ms.m[i].type = (uint8_t) (seed % 3);
			ms.m[i].quality = (uint8_t) (seed % 101);
		}
		if (ms.count > 2)
		{
			ms.m[0].theta = nextafterf((float) TWO_PI, 0.0f);
			ms.m[1].theta = 0x1p-149f;
		}
		good += round_trip(&ms, s % 2 ? mcc_profile_by_name("tpami2010", 9) : NULL);
	}
	UNIT_CHECK(good == sets, "%d of %d random sets survive write, read, write bit for bit",
			   good, sets);

	n = mcc_json_write(&ms, NULL, full, sizeof(full));
	memset(small, 'x', sizeof(small));
	UNIT_CHECK(mcc_json_write(&ms, NULL, small, sizeof(small)) == n &&
			   small[sizeof(small) - 1] == '\0' && strncmp(small, full, sizeof(small) - 1) == 0,
			   "a short buffer gets a NUL-terminated prefix and the full length %zu", n);
	UNIT_CHECK(mcc_json_write(&ms, NULL, NULL, 0) == n, "size query with no buffer");

	/* a locale with a decimal comma must change nothing */
	if (setlocale(LC_NUMERIC, "de_DE.UTF-8") || setlocale(LC_NUMERIC, "fr_FR.UTF-8"))
	{
		char		again[16384];

		UNIT_CHECK(round_trip(&ms, NULL) &&
				   mcc_json_write(&ms, NULL, again, sizeof(again)) == n && strcmp(again, full) == 0,
				   "decimal-comma locale %s: same text, same round trip", setlocale(LC_NUMERIC, NULL));
		setlocale(LC_NUMERIC, "C");
	}
	else
		UNIT_SKIP("no decimal-comma locale installed (de_DE.UTF-8, fr_FR.UTF-8; "
				  "localedef -i de_DE -f UTF-8 DIR/de_DE.UTF-8 and LOCPATH=DIR provide one)");
}

/* FVC2002 minutiae from xyt and ISO records survive JSON. */
static void
test_fvc(const char *data)
{
	int			files = 0,
				good = 0;

	for (int d = 1; d <= 4; d++)
		for (int f = 101; f <= 110; f++)
			for (int imp = 1; imp <= 8; imp += 7)
			{
				size_t		len;
				unsigned char *buf;
				mcc_minutiae ms;
				mcc_error	err;

				if ((buf = tfvc_read_minutiae(data, "fingerjetfx-iso19794-2-2005", &tfvc_dbs[d - 1], f, imp,
											  "ist", &len)) != NULL)
				{
					files++;
					good += mcc_iso_read(buf, len, 1, &ms, NULL, &err) == MCC_OK && round_trip(&ms, NULL);
					free(buf);
				}
				if ((buf = tfvc_read_minutiae(data, "nbis-mindtct-xyt", &tfvc_dbs[d - 1], f, imp, "xyt",
											  &len)) != NULL)
				{
					files++;
					good += mcc_xyt_read((const char *) buf, len, 0, 0, 0, &ms, &err) == MCC_OK &&
						round_trip(&ms, NULL);
					free(buf);
				}
			}
	UNIT_CHECK(files > 0 && good == files,
			   "FVC2002 FingerJetFX and mindtct minutiae survive JSON: %d of %d", good, files);
}

/* Synthetic text always; FVC2002 minutiae when present. */
int
main(void)
{
	const char *data;

	test_parse();
	test_errors();
	test_round_trip();
	if ((data = unit_shared_data_or_skip("FVC2002 minutiae not read")) != NULL)
		test_fvc(data);
	return unit_done();
}
