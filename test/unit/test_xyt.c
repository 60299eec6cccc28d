/*
 * test_xyt.c: NBIS xyt text.
 *
 * Frame conversion (row = H - y, theta + 180 degrees), junk lines named by
 * number, ranges, derived image sizes, the writer, and, with
 * ../shared/data, every FVC2002 mindtct file against the same runs' .min
 * files (which give top-left coordinates and LFS directions).
 */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "unit.h"
#include "testgen.h"
#include "testfvc.h"
#include "mcc_xyt.h"

#define TWO_PI 6.28318530717958647692
#define DEG (TWO_PI / 360.0)

/* Parse text with the given size; status, message in err. */
static mcc_status
parse(const char *text, int w, int h, int dpi, mcc_minutiae *ms, mcc_error *err)
{
	mcc_error_clear(err);
	return mcc_xyt_read(text, strlen(text), w, h, dpi, ms, err);
}

/* Expect a failure with `needle` in the message. */
static void
expect_fail(const char *text, int w, int h, mcc_status want, const char *needle,
			const char *name)
{
	mcc_minutiae ms;
	mcc_error	err;
	mcc_status	st = parse(text, w, h, 500, &ms, &err);

	UNIT_CHECK(st == want && strstr(err.message, needle) != NULL,
			   "%s: status %d (want %d), \"%s\"", name, st, want, err.message);
}

/* Angles equal within tol degrees, modulo a turn. */
static bool
near_deg(double a_rad, double b_deg, double tol)
{
	double		d = fmod(fabs(a_rad / DEG - b_deg), 360.0);

	return fmin(d, 360.0 - d) <= tol;
}

/* Frame conversion, blank lines, separators. */
static void
test_parse(void)
{
	mcc_minutiae ms;
	mcc_error	err;
	mcc_status	st;

	/* hand-converted: row = 374 - 171 = 203; 247 + 180 - 360 = 67 degrees */
	st = parse("100 171 247 12\n", 388, 374, 500, &ms, &err);
	UNIT_CHECK(st == MCC_OK && ms.count == 1 && ms.width == 388 && ms.height == 374 &&
			   ms.dpi == 500 && ms.m[0].x == 100 && ms.m[0].y == 203 &&
			   fabs(ms.m[0].theta - 67 * DEG) < 1e-6 && ms.m[0].quality == 12 &&
			   ms.m[0].type == MCC_TYPE_OTHER,
			   "one line converts to row 203, 67 degrees (%s)", err.message);
	st = parse("\n  \t\r\n5 10 0\r\n\n7\t1\t359\t99 \n   \n", 20, 10, 0, &ms, &err);
	UNIT_CHECK(st == MCC_OK && ms.count == 2 && ms.dpi == 500 &&
			   ms.m[0].x == 5 && ms.m[0].y == 0 && fabs(ms.m[0].theta - 180 * DEG) < 1e-6 &&
			   ms.m[0].quality == 0 && ms.m[1].y == 9 && fabs(ms.m[1].theta - 179 * DEG) < 1e-6 &&
			   ms.m[1].quality == 99,
			   "blank lines, CRLF, tabs, 3 and 4 columns, dpi 0 = 500 (%s)", err.message);
	st = parse("1 1 0 0", 2, 1, 569, &ms, &err);
	UNIT_CHECK(st == MCC_OK && ms.count == 1 && ms.m[0].y == 0 && ms.dpi == 569,
			   "last line without a newline; y = H maps to row 0 (%s)", err.message);
	st = parse("+3 4 -0 +7\n", 10, 10, 500, &ms, &err);
	UNIT_CHECK(st == MCC_OK && ms.m[0].x == 3 && ms.m[0].y == 6 && ms.m[0].quality == 7,
			   "signed integers (%s)", err.message);

	/* derived sizes: H = largest y, width = largest x + 1 */
	st = parse("10 50 90\n30 20 90\n", 0, 0, 500, &ms, &err);
	UNIT_CHECK(st == MCC_OK && ms.width == 31 && ms.height == 31 &&
			   ms.m[0].y == 0 && ms.m[1].y == 30 && ms.m[1].x == 30,
			   "width and height 0 are derived: 31x31, rows 0 and 30 (%s)", err.message);
	st = parse("10 50 90\n30 20 90\n", 100, 0, 500, &ms, &err);
	UNIT_CHECK(st == MCC_OK && ms.width == 100 && ms.height == 31,
			   "height alone derived (%s)", err.message);
	st = parse("10 50 90\n", 0, 60, 500, &ms, &err);
	UNIT_CHECK(st == MCC_OK && ms.width == 11 && ms.height == 60 && ms.m[0].y == 10,
			   "width alone derived (%s)", err.message);
}

/* Junk lines, ranges, limits. */
static void
test_errors(void)
{
	char		big[256 * 16 + 64];
	size_t		n = 0;
	mcc_minutiae ms;
	mcc_error	err;

	expect_fail("", 10, 10, MCC_ERR_SYNTAX, "no minutiae", "empty text");
	expect_fail("\n \n\t\n", 10, 10, MCC_ERR_SYNTAX, "no minutiae", "blank text");
	expect_fail("1 2 3\n1 2\n", 10, 10, MCC_ERR_SYNTAX, "line 2", "two numbers on line 2");
	expect_fail("1 2 3\n\n1 2 3 4 5\n", 10, 10, MCC_ERR_SYNTAX, "line 3", "five numbers on line 3");
	expect_fail("x y theta\n", 10, 10, MCC_ERR_SYNTAX, "line 1", "a header line");
	expect_fail("1 2 3x\n", 10, 10, MCC_ERR_SYNTAX, "line 1", "letters glued to a number");
	expect_fail("1.5 2 3\n", 10, 10, MCC_ERR_SYNTAX, "line 1", "a decimal number");
	expect_fail("1 2 3\n# comment\n", 10, 10, MCC_ERR_SYNTAX, "line 2", "a comment line");
	expect_fail("1 2 3\n1 - 3\n", 10, 10, MCC_ERR_SYNTAX, "line 2", "a lone minus sign");
	{
		const char	text[] = "1 2 3\n4 5\0006\n";

		mcc_error_clear(&err);
		UNIT_CHECK(mcc_xyt_read(text, sizeof(text) - 1, 10, 10, 500, &ms, &err) == MCC_ERR_SYNTAX &&
				   strstr(err.message, "line 2"),
				   "a NUL byte inside a line is junk: %s", err.message);
	}
	expect_fail("1234567890 2 3\n", 10, 10, MCC_ERR_RANGE, "more than 9 digits", "a 10-digit number");
	expect_fail("1 2 360\n", 10, 10, MCC_ERR_RANGE, "theta 360", "theta 360");
	expect_fail("1 2 -1\n", 10, 10, MCC_ERR_RANGE, "theta -1", "theta -1");
	expect_fail("1 2 3 101\n", 10, 10, MCC_ERR_RANGE, "quality 101", "quality 101");
	expect_fail("1 2 3 -1\n", 10, 10, MCC_ERR_RANGE, "quality -1", "quality -1");
	expect_fail("-1 2 3\n", 10, 10, MCC_ERR_RANGE, "x -1", "negative x");
	expect_fail("1 2 3\n10 2 3\n", 10, 10, MCC_ERR_RANGE, "line 2", "x equal to the width");
	expect_fail("1 0 3\n", 10, 10, MCC_ERR_RANGE, "y 0 on line 1", "y 0 (row H, below the image)");
	expect_fail("1 11 3\n", 10, 10, MCC_ERR_RANGE, "y 11 on line 1", "y above the height");
	expect_fail("1 -2 3\n", 10, 10, MCC_ERR_RANGE, "y -2", "negative y");
	expect_fail("1 0 3\n1 16383 3\n", 10, 0, MCC_ERR_RANGE, "16384 rows", "derived height over the limit");
	expect_fail("1 2 3\n", -1, 10, MCC_ERR_RANGE, "image size", "negative width argument");
	expect_fail("1 2 3\n", 10, 16384, MCC_ERR_RANGE, "image size", "height argument 16384");
	mcc_error_clear(&err);
	UNIT_CHECK(mcc_xyt_read("1 2 3", 5, 10, 10, 10001, &ms, &err) == MCC_ERR_RANGE,
			   "dpi 10001: %s", err.message);

	for (int i = 0; i < 257; i++)
		n += (size_t) snprintf(big + n, sizeof(big) - n, "%d %d 90\n", i % 50, 1 + i % 40);
	mcc_error_clear(&err);
	UNIT_CHECK(mcc_xyt_read(big, n, 50, 40, 500, &ms, &err) == MCC_ERR_LIMIT &&
			   strstr(err.message, "line 257"),
			   "257 minutiae: %s", err.message);
	n -= strlen("6 17 90\n");	/* drop the 257th line */
	mcc_error_clear(&err);
	UNIT_CHECK(mcc_xyt_read(big, n, 50, 40, 500, &ms, &err) == MCC_OK && ms.count == 256,
			   "256 minutiae read (%s)", err.message);
}

/* Write, then read back with the template's size. */
static void
test_write(void)
{
	mcc_minutiae ms,
				back,
				again;
	mcc_error	err;
	char		text[8192],
				text2[8192],
				small[16];
	size_t		n,
				n2;
	uint32_t	seed = 99;
	bool		ok = true;

	tg_frame(&ms, 300, 400, 500);
	ms.count = 60;
	for (int i = 0; i < ms.count; i++)
	{
		seed = seed * 1103515245u + 12345u;
		ms.m[i].x = (int16_t) ((seed >> 8) % ms.width);
		seed = seed * 1103515245u + 12345u;
		ms.m[i].y = (int16_t) ((seed >> 8) % ms.height);
		seed = seed * 1103515245u + 12345u;
		ms.m[i].theta = mcc_angle_normalize((seed >> 8) * (TWO_PI / 16777216.0));
		ms.m[i].type = (uint8_t) (i % 3);
		ms.m[i].quality = (uint8_t) (i % 101);
	}
	ms.m[0].x = 0;
	ms.m[0].y = 0;
	ms.m[1].x = 299;
	ms.m[1].y = 399;
	ms.m[2].theta = nextafterf((float) TWO_PI, 0.0f);

	n = mcc_xyt_write(&ms, text, sizeof(text));
	UNIT_CHECK(n < sizeof(text) && strlen(text) == n, "xyt write: %zu bytes", n);
	UNIT_CHECK(strncmp(text, "0 400 ", 6) == 0, "row 0 is written as y = H: \"%.6s\"", text);
	mcc_error_clear(&err);
	UNIT_CHECK(mcc_xyt_read(text, n, ms.width, ms.height, ms.dpi, &back, &err) == MCC_OK &&
			   back.count == ms.count && back.width == 300 && back.height == 400,
			   "xyt reads back (%s)", err.message);
	for (int i = 0; i < ms.count; i++)
		if (back.m[i].x != ms.m[i].x || back.m[i].y != ms.m[i].y ||
			back.m[i].quality != ms.m[i].quality || back.m[i].type != MCC_TYPE_OTHER ||
			!near_deg(back.m[i].theta, ms.m[i].theta / DEG, 0.5 + 1e-4))
			ok = false;
	UNIT_CHECK(ok, "round trip keeps x, y, quality; angles within half a degree; types become other");
	UNIT_CHECK(back.m[2].theta == 0.0f, "an angle just below 2pi is written as 0 degrees");
	n2 = mcc_xyt_write(&back, text2, sizeof(text2));
	ok = n2 == n && strcmp(text, text2) == 0 &&
		mcc_xyt_read(text2, n2, 300, 400, 500, &again, &err) == MCC_OK &&
		again.count == back.count;
	for (int i = 0; ok && i < back.count; i++)
		ok = again.m[i].x == back.m[i].x && again.m[i].y == back.m[i].y &&
			again.m[i].theta == back.m[i].theta && again.m[i].quality == back.m[i].quality;
	UNIT_CHECK(ok, "a second round trip is exact, text and minutiae");

	memset(small, 'x', sizeof(small));
	UNIT_CHECK(mcc_xyt_write(&ms, small, sizeof(small)) == n && small[15] == '\0' &&
			   strncmp(small, text, 15) == 0,
			   "a short buffer gets a NUL-terminated prefix and the full length");
	UNIT_CHECK(mcc_xyt_write(&ms, NULL, 0) == n, "size query with no buffer");
}

/* Parse a .min line "MN : MX, MY : DIR : REL : TYP ..."; false if not one. */
static bool
parse_min_line(const char *line, int *x, int *y, int *dir, double *rel)
{
	int			mn;

	return sscanf(line, " %d : %d , %d : %d : %lf :", &mn, x, y, dir, rel) == 5;
}

/* Every FVC2002 mindtct file: imports, and agrees with its .min file. */
static void
test_fvc(const char *data)
{
	int			files = 0,
				good = 0,
				minutiae = 0,
				agree = 0,
				compared = 0;

	for (int j = 0; j < TFVC_PRINTS; j++)
	{
		const tfvc_print p = tfvc_print_at(j);
		size_t		len,
					mlen;
		unsigned char *text,
				   *min;
		mcc_minutiae ms;
		mcc_error	err;
		int			lines = 0,
					i = 0;

		if ((text = tfvc_read_minutiae(data, "nbis-mindtct-xyt", p.db, p.finger, p.imp, "xyt", &len)) == NULL)
			continue;
		files++;
		for (size_t k = 0; k < len; k++)
			lines += text[k] == '\n';
		mcc_error_clear(&err);
		if (mcc_xyt_read((const char *) text, len, p.db->width, p.db->height, 500,
						 &ms, &err) == MCC_OK && ms.count == lines &&
			mcc_minutiae_validate(&ms, &err) == MCC_OK)
		{
			good++;
			minutiae += ms.count;
		}
		else
			printf("# %s/%d_%d.xyt: %s\n", p.db->db, p.finger, p.imp, err.message);
		free(text);

		/* the .min file: MX, MY top-left; DIR in 11.25-degree units, 0 up, clockwise */
		if ((min = tfvc_read_minutiae(data, "nbis-mindtct-min", p.db, p.finger, p.imp, "min", &mlen)) == NULL)
			continue;
		for (char *line = strtok((char *) min, "\n"); line; line = strtok(NULL, "\n"))
		{
			int			x,
						y,
						dir;
			double		rel;

			if (!parse_min_line(line, &x, &y, &dir, &rel) || i >= ms.count)
				continue;
			compared++;
			if (ms.m[i].x == x && ms.m[i].y == y &&
				near_deg(ms.m[i].theta, 90.0 - dir * 11.25, 0.5 + 1e-4) &&
				fabs(ms.m[i].quality - rel * 100.0) <= 0.55)
				agree++;
			i++;
		}
		free(min);
	}
	UNIT_CHECK(files == TFVC_PRINTS && good == files,
			   "FVC2002 mindtct xyt: %d of %d files import with the README sizes (%d minutiae)",
			   good, files, minutiae);
	UNIT_CHECK(compared == minutiae && agree == compared,
			   "xyt minutiae agree with the .min files (x, y, direction, reliability): %d of %d",
			   agree, compared);
}

/* Synthetic text always; FVC2002 files when present. */
int
main(void)
{
	const char *data;

	test_parse();
	test_errors();
	test_write();
	if ((data = unit_shared_data_or_skip("FVC2002 xyt files not read")) != NULL)
		test_fvc(data);
	return unit_done();
}
