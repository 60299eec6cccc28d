/*
 * mcc_xyt.c: NIST NBIS minutiae text ("x y theta [quality]" per line).
 *
 * NBIS's internal frame (lfs2nist_minutia_XYT): x = column, y = H - row
 * (origin bottom-left, so y runs 1..H), theta in integer degrees
 * counter-clockwise from east, pointing away from the ridge ending. Ours
 * (mcc_minutiae.h) is row down from the top and the ISO/ANSI direction, which
 * is NBIS's plus 180 degrees (mindtct -m1 writes exactly that).
 */
#include "mcc_xyt.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define XYT_MAX_DIGITS 9		/* keeps every value inside a long */

/* One parsed line before the frame conversion. */
typedef struct xyt_line
{
	long		x;
	long		y;
	long		theta;
	long		quality;
	int			line;
} xyt_line;

/* Is c the blank of an xyt line (newlines are handled by the caller)? */
static bool
is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/*
 * Parse one integer token [+-]digits at s[*i..end); false if the token is
 * something else or has more than XYT_MAX_DIGITS digits.
 */
static bool
parse_int(const char *s, size_t *i, size_t end, long *v, bool *too_long)
{
	size_t		p = *i;
	bool		neg = false;
	int			digits = 0;
	long		val = 0;

	if (p < end && (s[p] == '-' || s[p] == '+'))
		neg = s[p++] == '-';
	while (p < end && s[p] >= '0' && s[p] <= '9')
	{
		if (++digits > XYT_MAX_DIGITS)
		{
			*too_long = true;
			return false;
		}
		val = val * 10 + (s[p++] - '0');
	}
	if (digits == 0 || (p < end && !is_blank(s[p])))
		return false;
	*v = neg ? -val : val;
	*i = p;
	return true;
}

/*
 * Parse the line s[start..end) into up to 4 integers. Returns the number
 * found (0 for a blank line), or -1 if the line is not integers separated by
 * blanks, -2 if a number has too many digits.
 */
static int
parse_line(const char *s, size_t start, size_t end, long *vals)
{
	size_t		i = start;
	int			n = 0;

	for (;;)
	{
		bool		too_long = false;

		while (i < end && is_blank(s[i]))
			i++;
		if (i >= end)
			return n;
		if (n == 4)
			return -1;
		if (!parse_int(s, &i, end, &vals[n], &too_long))
			return too_long ? -2 : -1;
		n++;
	}
}

/* Reject a junk line, quoting its start. */
static mcc_status
junk_line(mcc_error *err, const char *s, size_t start, size_t end, int line,
		  bool too_long)
{
	int			shown = (int) (end - start > 40 ? 40 : end - start);
	char		quoted[64];

	for (int k = 0; k < shown; k++)
		quoted[k] = (s[start + k] >= 0x20 && s[start + k] < 0x7f) ? s[start + k] : '?';
	quoted[shown] = '\0';
	if (too_long)
		mcc_error_set(err, MCC_ERR_RANGE,
					  "line %d of the xyt text has a number with more than %d digits",
					  line, XYT_MAX_DIGITS);
	else
		mcc_error_set(err, MCC_ERR_SYNTAX,
					  "line %d of the xyt text is not \"x y theta [quality]\"", line);
	return mcc_error_detail(err, "The line begins \"%s\"%s.", quoted,
							(size_t) shown < end - start ? "..." : "");
}

/* Check the values of one line that do not depend on the image. */
static mcc_status
check_line(const xyt_line *l, mcc_error *err)
{
	if (l->x < 0 || l->x >= MCC_MAX_IMAGE_SIDE)
		return mcc_error_set(err, MCC_ERR_RANGE,
							 "x %ld on line %d of the xyt text is outside 0..%d",
							 l->x, l->line, MCC_MAX_IMAGE_SIDE - 1);
	if (l->y < 0 || l->y > MCC_MAX_IMAGE_SIDE)
		return mcc_error_set(err, MCC_ERR_RANGE,
							 "y %ld on line %d of the xyt text is outside 0..%d",
							 l->y, l->line, MCC_MAX_IMAGE_SIDE);
	if (l->theta < 0 || l->theta >= 360)
		return mcc_error_set(err, MCC_ERR_RANGE,
							 "theta %ld on line %d of the xyt text is outside 0..359 degrees",
							 l->theta, l->line);
	if (l->quality < 0 || l->quality > 100)
		return mcc_error_set(err, MCC_ERR_RANGE,
							 "quality %ld on line %d of the xyt text is outside 0..100",
							 l->quality, l->line);
	return MCC_OK;
}

/* Check the image size and resolution arguments. */
static mcc_status
check_args(int width, int height, int dpi, mcc_error *err)
{
	if (width < 0 || width > MCC_MAX_IMAGE_SIDE || height < 0 ||
		height > MCC_MAX_IMAGE_SIDE)
	{
		mcc_error_set(err, MCC_ERR_RANGE, "image size %dx%d is out of range",
					  width, height);
		return mcc_error_detail(err, "Width and height must be between 1 and %d pixels, or 0 to derive them from the minutiae.",
								MCC_MAX_IMAGE_SIDE);
	}
	if (dpi < 0 || dpi > MCC_MAX_DPI)
	{
		mcc_error_set(err, MCC_ERR_RANGE, "resolution %d dpi is out of range", dpi);
		return mcc_error_detail(err, "Resolution must be between 1 and %d dpi, or 0 for %d.",
								MCC_MAX_DPI, MCC_DEFAULT_DPI);
	}
	return MCC_OK;
}

/*
 * Convert the parsed lines to our frame: row = H - y, theta + 180 degrees.
 * H is the height given, or the largest y (the template is then translated,
 * which leaves its cylinders unchanged); a derived width or height is the
 * bounding box of the minutiae from 0.
 */
static mcc_status
convert(const xyt_line *lines, int n, int width, int height, int dpi,
		mcc_minutiae *out, mcc_error *err)
{
	long		h_frame = height,
				max_x = 0,
				max_row = 0;

	if (height == 0)
	{
		h_frame = 0;
		for (int i = 0; i < n; i++)
			if (lines[i].y > h_frame)
				h_frame = lines[i].y;
	}
	for (int i = 0; i < n; i++)
	{
		long		row = h_frame - lines[i].y;

		if (row < 0 || (height > 0 && row >= height))
			return mcc_error_set(err, MCC_ERR_RANGE,
								 "y %ld on line %d of the xyt text is outside 1..%d, the rows of the %d-pixel image height",
								 lines[i].y, lines[i].line, height, height);
		if (width > 0 && lines[i].x >= width)
			return mcc_error_set(err, MCC_ERR_RANGE,
								 "x %ld on line %d of the xyt text is outside the %d-pixel image width",
								 lines[i].x, lines[i].line, width);
		if (lines[i].x > max_x)
			max_x = lines[i].x;
		if (row > max_row)
			max_row = row;
		out->m[i].x = (int16_t) lines[i].x;
		out->m[i].y = (int16_t) row;
		out->m[i].theta = (float) (((lines[i].theta + 180) % 360) * (MCC_TWO_PI / 360.0));
		out->m[i].type = MCC_TYPE_OTHER;
		out->m[i].quality = (uint8_t) lines[i].quality;
	}
	if (height == 0 && max_row >= MCC_MAX_IMAGE_SIDE)
		return mcc_error_set(err, MCC_ERR_RANGE,
							 "the y values of the xyt text span %ld rows, more than %d",
							 max_row + 1, MCC_MAX_IMAGE_SIDE);
	out->width = (uint16_t) (width > 0 ? width : max_x + 1);
	out->height = (uint16_t) (height > 0 ? height : max_row + 1);
	out->dpi = (uint16_t) (dpi > 0 ? dpi : MCC_DEFAULT_DPI);
	out->count = (uint16_t) n;
	return MCC_OK;
}

/* Read NBIS xyt text into our frame (mcc_xyt.h). */
mcc_status
mcc_xyt_read(const char *text, size_t len, int width, int height,
			 int dpi, mcc_minutiae *out, mcc_error *err)
{
	xyt_line	lines[MCC_MAX_MINUTIAE];
	int			n = 0,
				line = 0;
	size_t		start = 0;
	mcc_status	st;

	if (out == NULL || (text == NULL && len > 0))
		return mcc_error_set(err, MCC_ERR_INTERNAL, "mcc_xyt_read called without text");
	if ((st = check_args(width, height, dpi, err)) != MCC_OK)
		return st;
	memset(out, 0, offsetof(mcc_minutiae, m));
	while (start < len)
	{
		size_t		end = start;
		long		vals[4];
		int			k;

		while (end < len && text[end] != '\n')
			end++;
		line++;
		k = parse_line(text, start, end, vals);
		if (k < 0 || (k > 0 && k < 3))
			return junk_line(err, text, start, end, line, k == -2);
		if (k > 0)
		{
			xyt_line   *l = &lines[n];

			if (n == MCC_MAX_MINUTIAE)
			{
				mcc_error_set(err, MCC_ERR_LIMIT,
							  "too many minutiae in the xyt text: line %d holds minutia %d",
							  line, n + 1);
				return mcc_error_detail(err, "A template holds at most %d minutiae.",
										MCC_MAX_MINUTIAE);
			}
			l->x = vals[0];
			l->y = vals[1];
			l->theta = vals[2];
			l->quality = k == 4 ? vals[3] : 0;
			l->line = line;
			if ((st = check_line(l, err)) != MCC_OK)
				return st;
			n++;
		}
		start = end + 1;
	}
	if (n == 0)
	{
		mcc_error_set(err, MCC_ERR_SYNTAX, "xyt text holds no minutiae");
		return mcc_error_detail(err, "Each line must hold \"x y theta [quality]\"; the text is empty or blank.");
	}
	return convert(lines, n, width, height, dpi, out, err);
}

/* snprintf-style appending: count everything, store what fits. */
static void
append(char *out, size_t cap, size_t *used, const char *s, size_t n)
{
	if (*used < cap)
	{
		size_t		room = cap - *used - 1;	/* keep a byte for the NUL */

		memcpy(out + *used, s, n < room ? n : room);
	}
	*used += n;
}

/* Write xyt text in NBIS's frame, snprintf-style (mcc_xyt.h). */
size_t
mcc_xyt_write(const mcc_minutiae *ms, char *out, size_t cap)
{
	size_t		used = 0;

	for (int i = 0; i < ms->count && i < MCC_MAX_MINUTIAE; i++)
	{
		const mcc_minutia *m = &ms->m[i];
		char		line[64];
		long		deg = lrint(m->theta * (360.0 / MCC_TWO_PI));
		int			n;

		/* back to NBIS: y up from the bottom, direction turned by 180 degrees */
		deg = ((deg + 180) % 360 + 360) % 360;
		n = snprintf(line, sizeof(line), "%d %d %ld %d\n", m->x,
					 (int) ms->height - m->y, deg, (int) m->quality);
		append(out, cap, &used, line, (size_t) n);
	}
	if (cap > 0)
		out[used < cap ? used : cap - 1] = '\0';
	return used;
}
