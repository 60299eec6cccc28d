/*
 * test_iso.c: ISO/IEC 19794-2 and ANSI/INCITS 378 records.
 *
 * Synthetic records are built here byte by byte from the layouts in
 * docs/formats.md (independently of src/core/mcc_iso_write.c), then read
 * back; malformed variants of them cover every error class. The published
 * samples and the FVC2002 records in ../shared/data are read when present.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "unit.h"
#include "mcc_iso.h"
#include "mcc_xyt.h"

#define TWO_PI 6.28318530717958647692

/* A byte buffer that records are assembled in. */
typedef struct bytes
{
	uint8_t		b[8192];
	size_t		n;
} bytes;

/* Append one byte. */
static void
put8(bytes *bb, unsigned v)
{
	bb->b[bb->n++] = (uint8_t) v;
}

/* Append a big-endian 16-bit value. */
static void
put16(bytes *bb, unsigned v)
{
	put8(bb, v >> 8);
	put8(bb, v);
}

/* Append a big-endian 32-bit value. */
static void
put32(bytes *bb, uint32_t v)
{
	put16(bb, v >> 16);
	put16(bb, v & 0xffff);
}

/* Big-endian 32-bit value at `at`. */
static uint32_t
get32(const bytes *bb, size_t at)
{
	return ((uint32_t) bb->b[at] << 24) | ((uint32_t) bb->b[at + 1] << 16) |
		((uint32_t) bb->b[at + 2] << 8) | bb->b[at + 3];
}

/* Overwrite a big-endian 16-bit value at `at`. */
static void
set16(bytes *bb, size_t at, unsigned v)
{
	bb->b[at] = (uint8_t) (v >> 8);
	bb->b[at + 1] = (uint8_t) v;
}

/* Overwrite a big-endian 32-bit value at `at`. */
static void
set32(bytes *bb, size_t at, uint32_t v)
{
	set16(bb, at, v >> 16);
	set16(bb, at + 2, v & 0xffff);
}

/* A made-up finger view: raw field values as they are stored. */
typedef struct raw_minutia
{
	int			type;
	int			x;
	int			y;
	int			angle;			/* in the format's unit */
	int			quality;
} raw_minutia;

static const raw_minutia view_a[] = {
	{1, 10, 20, 0, 60},
	{2, 299, 5, 45, 100},
	{0, 0, 399, 89, 0},
	{1, 150, 200, 179, 1},
	{2, 77, 123, 120, 55},
};

static const raw_minutia view_b[] = {
	{2, 31, 41, 59, 26},
	{1, 53, 58, 97, 93},
};

#define NA ((int) (sizeof(view_a) / sizeof(view_a[0])))
#define NB ((int) (sizeof(view_b) / sizeof(view_b[0])))

/* Append n minutiae, 6 bytes each (5 without quality). */
static void
put_minutiae(bytes *bb, const raw_minutia *m, int n, bool quality)
{
	for (int i = 0; i < n; i++)
	{
		put16(bb, ((unsigned) m[i].type << 14) | (unsigned) m[i].x);
		put16(bb, (unsigned) m[i].y);
		put8(bb, (unsigned) m[i].angle);
		if (quality)
			put8(bb, (unsigned) m[i].quality);
	}
}

/* Append an extended data area holding one block of `data` bytes. */
static void
put_ext(bytes *bb, int data, bool length_counts_header)
{
	if (data < 0)
	{
		put16(bb, 0);
		return;
	}
	put16(bb, 4 + (unsigned) data);
	put16(bb, 0x0102);			/* a vendor block */
	put16(bb, (unsigned) (length_counts_header ? 4 + data : data));
	for (int i = 0; i < data; i++)
		put8(bb, 0xa0 + (unsigned) i);
}

/*
 * ISO 2005 (ansi = false) or ANSI 2004 record of views a and b, image
 * 300x400 at 197 px/cm. ext_a: bytes of a block in view a (-1: none).
 */
static void
build_2004(bytes *bb, bool ansi, int ext_a, bool ext_incl)
{
	bb->n = 0;
	memcpy(bb->b, "FMR\0 20\0", 8);
	bb->n = 8;
	if (ansi)
	{
		put16(bb, 0);			/* length, set below */
		put32(bb, 0x00420011);	/* CBEFF product id */
	}
	else
		put32(bb, 0);
	put16(bb, 0x00b5);			/* capture equipment */
	put16(bb, 300);
	put16(bb, 400);
	put16(bb, 197);
	put16(bb, 197);
	put8(bb, 2);
	put8(bb, 0);
	put8(bb, 7);				/* left index */
	put8(bb, 0x00);
	put8(bb, 90);
	put8(bb, NA);
	put_minutiae(bb, view_a, NA, true);
	put_ext(bb, ext_a, ext_incl);
	put8(bb, 2);				/* right index */
	put8(bb, 0x01);				/* view 0, rolled */
	put8(bb, 70);
	put8(bb, NB);
	put_minutiae(bb, view_b, NB, true);
	put_ext(bb, -1, true);
	if (ansi)
		set16(bb, 8, (unsigned) bb->n);
	else
		set32(bb, 8, (uint32_t) bb->n);
}

/* ANSI 2009 (cert = true) or the 2007 draft layout (no certification byte). */
static void
build_2009(bytes *bb, bool cert, const char *version)
{
	bb->n = 0;
	memcpy(bb->b, "FMR\0", 4);
	memcpy(bb->b + 4, version, 4);
	bb->n = 8;
	put32(bb, 0);
	put32(bb, 0x00420011);
	if (cert)
		put8(bb, 0x80);
	put16(bb, 0x00b5);
	put8(bb, 2);
	put8(bb, 0);
	for (int v = 0; v < 2; v++)
	{
		put8(bb, v == 0 ? 7 : 2);
		put8(bb, 0);			/* view number */
		put8(bb, 0);			/* impression */
		put8(bb, v == 0 ? 90 : 70);
		put32(bb, 0x00060037);	/* quality algorithm */
		put16(bb, 300);
		put16(bb, 400);
		put16(bb, 197);
		put16(bb, 197);
		put8(bb, v == 0 ? NA : NB);
		put_minutiae(bb, v == 0 ? view_a : view_b, v == 0 ? NA : NB, true);
		put_ext(bb, v == 0 ? 3 : -1, true);
	}
	set32(bb, 8, (uint32_t) bb->n);
}

/*
 * ISO 2011 record; quality = false writes 5-byte minutiae; cert adds the
 * certification flag and one certification block per representation.
 */
static void
build_2011(bytes *bb, bool quality, bool cert)
{
	bb->n = 0;
	memcpy(bb->b, "FMR\0" "030\0", 8);
	bb->n = 8;
	put32(bb, 0);
	put16(bb, 2);
	put8(bb, cert ? 1 : 0);
	for (int v = 0; v < 2; v++)
	{
		size_t		start = bb->n;

		put32(bb, 0);			/* representation length, set below */
		put16(bb, 2005);
		for (int i = 0; i < 7; i++)
			put8(bb, 1);		/* the rest of the date and time */
		put8(bb, 0);			/* technology */
		put16(bb, 0xabcd);		/* vendor */
		put16(bb, 0x00b5);		/* device type */
		put8(bb, 2);			/* two quality blocks */
		put8(bb, 88);
		put16(bb, 0xabcd);
		put16(bb, 0x0123);
		put8(bb, 44);
		put16(bb, 0xabcd);
		put16(bb, 0x0124);
		if (cert)
		{
			put8(bb, 1);
			put16(bb, 0x0001);
			put8(bb, 0x01);
		}
		put8(bb, v == 0 ? 7 : 2);
		put8(bb, 0);			/* view number */
		put16(bb, 197);
		put16(bb, 197);
		put8(bb, 0);			/* impression */
		put16(bb, 300);
		put16(bb, 400);
		put8(bb, ((quality ? 6u : 5u) << 4) | 1u);
		put8(bb, v == 0 ? NA : NB);
		put_minutiae(bb, v == 0 ? view_a : view_b, v == 0 ? NA : NB, quality);
		put_ext(bb, v == 0 ? 2 : -1, true);
		set32(bb, start, (uint32_t) (bb->n - start));
	}
	set32(bb, 8, (uint32_t) bb->n);
}

/*
 * Do the minutiae read equal the raw ones? Angles: the raw value in units
 * of 2pi/units; qualities: the raw value, or 0 when not stored.
 */
static bool
same_view(const mcc_minutiae *ms, const raw_minutia *m, int n, int units,
		  bool quality)
{
	if (ms->count != n)
		return false;
	for (int i = 0; i < n; i++)
	{
		const mcc_minutia *g = &ms->m[i];
		double		want = m[i].angle * TWO_PI / units;

		if (g->x != m[i].x || g->y != m[i].y || g->type != m[i].type ||
			g->quality != (quality ? m[i].quality : 0) ||
			fabs(g->theta - want) > 1e-5)
			return false;
	}
	return true;
}

/* Are two minutiae sets equal, field by field? */
static bool
same_set(const mcc_minutiae *a, const mcc_minutiae *b)
{
	if (a->width != b->width || a->height != b->height || a->dpi != b->dpi ||
		a->count != b->count)
		return false;
	for (int i = 0; i < a->count; i++)
		if (a->m[i].x != b->m[i].x || a->m[i].y != b->m[i].y ||
			a->m[i].theta != b->m[i].theta || a->m[i].type != b->m[i].type ||
			a->m[i].quality != b->m[i].quality)
			return false;
	return true;
}

/* Read view `view` of a buffer; returns the status, message in err. */
static mcc_status
read_view(const bytes *bb, size_t len, int view, mcc_minutiae *ms,
		  mcc_record_info *info, mcc_error *err)
{
	mcc_error_clear(err);
	return mcc_iso_read(bb->b, len, view, ms, info, err);
}

/* Read a buffer and check the status and that the message holds `needle`. */
static void
expect_fail(const bytes *bb, size_t len, mcc_status want, const char *needle,
			const char *name)
{
	mcc_minutiae ms;
	mcc_error	err;
	mcc_status	st = read_view(bb, len, 1, &ms, NULL, &err);

	UNIT_CHECK(st == want && strstr(err.message, needle) != NULL,
			   "%s: status %d (want %d), \"%s\"", name, st, want, err.message);
}

/* Every layout reads back the made-up views. */
static void
test_layouts(void)
{
	bytes		bb;
	mcc_minutiae ms;
	mcc_record_info info;
	mcc_error	err;
	mcc_status	st;

	for (int ansi = 0; ansi < 2; ansi++)
	{
		int			units = ansi ? 180 : 256;

		build_2004(&bb, ansi, 5, true);
		st = read_view(&bb, bb.n, 1, &ms, &info, &err);
		UNIT_CHECK(st == MCC_OK && info.format == (ansi ? MCC_REC_ANSI2004 : MCC_REC_ISO2005) &&
				   info.n_views == 2 && info.finger_position == 7 && info.finger_quality == 90 &&
				   ms.width == 300 && ms.height == 400 && ms.dpi == 500 &&
				   same_view(&ms, view_a, NA, units, true),
				   "%s view 1 reads back (%s)", ansi ? "ANSI 2004" : "ISO 2005", err.message);
		st = read_view(&bb, bb.n, 2, &ms, &info, &err);
		UNIT_CHECK(st == MCC_OK && info.finger_position == 2 && info.impression_type == 1 &&
				   same_view(&ms, view_b, NB, units, true),
				   "%s view 2 reads back (%s)", ansi ? "ANSI 2004" : "ISO 2005", err.message);
		/* an extension block whose length counts only its data */
		build_2004(&bb, ansi, 5, false);
		st = read_view(&bb, bb.n, 2, &ms, NULL, &err);
		UNIT_CHECK(st == MCC_OK && same_view(&ms, view_b, NB, units, true),
				   "%s with a data-only block length reads (%s)",
				   ansi ? "ANSI 2004" : "ISO 2005", err.message);
	}

	build_2009(&bb, true, "030\0");
	st = read_view(&bb, bb.n, 2, &ms, &info, &err);
	UNIT_CHECK(st == MCC_OK && info.format == MCC_REC_ANSI2009 && info.n_views == 2 &&
			   same_view(&ms, view_b, NB, 180, true) && ms.dpi == 500,
			   "ANSI 2009 reads back (%s)", err.message);
	build_2009(&bb, true, "035\0");
	st = read_view(&bb, bb.n, 1, &ms, &info, &err);
	UNIT_CHECK(st == MCC_OK && info.format == MCC_REC_ANSI2009AM1 &&
			   same_view(&ms, view_a, NA, 180, true),
			   "ANSI 2009/AM1 reads back (%s)", err.message);
	build_2009(&bb, false, "030\0");
	st = read_view(&bb, bb.n, 1, &ms, &info, &err);
	UNIT_CHECK(st == MCC_OK && info.format == MCC_REC_ANSI2007 && info.finger_quality == 90 &&
			   same_view(&ms, view_a, NA, 180, true),
			   "ANSI 2007 draft layout is told from 2009 by its lengths (%s)", err.message);

	for (int cert = 0; cert < 2; cert++)
		for (int q = 0; q < 2; q++)
		{
			build_2011(&bb, q, cert);
			st = read_view(&bb, bb.n, 2, &ms, &info, &err);
			UNIT_CHECK(st == MCC_OK && info.format == MCC_REC_ISO2011 &&
					   info.finger_quality == 88 && same_view(&ms, view_b, NB, 256, q),
					   "ISO 2011, %d-byte minutiae, certification flag %d (%s)",
					   q ? 6 : 5, cert, err.message);
		}

	/* the 2009/2011 "not reported" (254) and "failed" (255) qualities read as 0 */
	build_2011(&bb, true, false);
	bb.b[15 + 4 + 9 + 5 + 1 + 10 + 13 + 5] = 254;
	bb.b[15 + 4 + 9 + 5 + 1 + 10 + 13 + 11] = 255;
	st = read_view(&bb, bb.n, 1, &ms, NULL, &err);
	UNIT_CHECK(st == MCC_OK && ms.m[0].quality == 0 && ms.m[1].quality == 0 &&
			   ms.m[2].quality == 0 && ms.m[3].quality == 1,
			   "ISO 2011 qualities 254 and 255 read as 0 (%s)", err.message);
}

/* The four formats written, with their unit and size of a one-view record. */
static const struct
{
	mcc_record_format fmt;
	int			units;			/* angle units per turn */
	size_t		fixed;			/* bytes besides 6 per minutia */
}			written[] = {
	{MCC_REC_ISO2005, 256, 24 + 4 + 2},
	{MCC_REC_ANSI2004, 180, 26 + 4 + 2},
	{MCC_REC_ISO2011, 256, 15 + 34},
	{MCC_REC_ANSI2009, 180, 21 + 17 + 2},
};

#define N_WRITTEN ((int) (sizeof(written) / sizeof(written[0])))

/* A made-up set of 40 minutiae, angles anywhere, qualities 0..100. */
static void
made_up_set(mcc_minutiae *ms)
{
	uint32_t	seed = 12345;

	memset(ms, 0, sizeof(*ms));
	ms->width = 321;
	ms->height = 457;
	ms->dpi = 569;
	ms->count = 40;
	for (int i = 0; i < ms->count; i++)
	{
		seed = seed * 1103515245u + 12345u;
		ms->m[i].x = (int16_t) ((seed >> 8) % ms->width);
		seed = seed * 1103515245u + 12345u;
		ms->m[i].y = (int16_t) ((seed >> 8) % ms->height);
		seed = seed * 1103515245u + 12345u;
		ms->m[i].theta = mcc_angle_normalize((seed >> 8) * (TWO_PI / 16777216.0));
		ms->m[i].type = (uint8_t) (i % 3);
		ms->m[i].quality = (uint8_t) ((i * 37) % 101);
	}
	ms->m[0].theta = 0.0f;
	ms->m[1].theta = nextafterf((float) TWO_PI, 0.0f);	/* rounds to 0 */
}

/* Write and read back one format: header, minutiae, a second round trip. */
static void
check_round_trip(const mcc_minutiae *ms, mcc_record_format fmt, int units,
				 size_t want)
{
	const char *name = mcc_record_format_name(fmt);
	double		unit = TWO_PI / units;
	mcc_minutiae back,
				again;
	mcc_record_info info;
	mcc_error	err;
	uint8_t		buf[2048],
				buf2[2048];
	size_t		len = 0,
				len2 = sizeof(buf2);
	bool		ok = true;
	mcc_status	st;

	st = mcc_iso_write(ms, fmt, NULL, &len, &err);
	UNIT_CHECK(st == MCC_OK && len == want, "%s size query gives %zu (want %zu)", name, len, want);
	st = mcc_iso_write(ms, fmt, buf, &len, &err);
	UNIT_CHECK(st == MCC_OK, "%s write (%s)", name, err.message);
	mcc_error_clear(&err);
	st = mcc_iso_read(buf, len, 1, &back, &info, &err);
	UNIT_CHECK(st == MCC_OK && info.format == fmt && info.n_views == 1 &&
			   back.width == ms->width && back.height == ms->height &&
			   back.dpi == ms->dpi && back.count == ms->count,
			   "%s reads back as itself with its header (%s, read as %s)", name,
			   err.message, mcc_record_format_name(info.format));
	for (int i = 0; i < ms->count && ok; i++)
	{
		double		d = fabs(back.m[i].theta - ms->m[i].theta);

		d = fmin(d, TWO_PI - d);
		if (back.m[i].x != ms->m[i].x || back.m[i].y != ms->m[i].y ||
			back.m[i].type != ms->m[i].type || back.m[i].quality != ms->m[i].quality ||
			d > unit / 2 + 1e-6)
			ok = false;
	}
	UNIT_CHECK(ok, "%s round trip keeps the minutiae (quality 0 too), angles within half a unit", name);
	UNIT_CHECK(back.m[1].theta == 0.0f, "%s: an angle just below 2pi rounds to 0", name);
	st = mcc_iso_write(&back, fmt, buf2, &len2, &err);
	UNIT_CHECK(st == MCC_OK && len2 == len && memcmp(buf, buf2, len) == 0 &&
			   mcc_iso_read(buf2, len2, 1, &again, NULL, &err) == MCC_OK &&
			   same_set(&again, &back),
			   "%s: write(read(record)) is the same record", name);
	len = 10;
	st = mcc_iso_write(ms, fmt, buf, &len, &err);
	UNIT_CHECK(st == MCC_ERR_INTERNAL && len == want,
			   "%s: a short output buffer is refused and sized", name);
}

/*
 * The bytes of one-view ISO 2011 and ANSI 2009 records of two minutiae,
 * assembled here from docs/formats.md §2.1, §2.2 and §2.8, equal the
 * writer's output.
 */
static void
test_write_bytes(void)
{
	mcc_minutiae ms;
	mcc_error	err;
	uint8_t		out[256];
	size_t		len;
	bytes		bb;

	memset(&ms, 0, sizeof(ms));
	ms.width = 300;
	ms.height = 400;
	ms.dpi = 500;				/* 197 px/cm */
	ms.count = 2;
	ms.m[0] = (mcc_minutia) {.x = 10, .y = 20, .theta = (float) (64 * TWO_PI / 256), .type = 1, .quality = 60};
	ms.m[1] = (mcc_minutia) {.x = 299, .y = 399, .theta = 0.0f, .type = 2, .quality = 0};

	/* ISO 2011: header, representation of 34 + 12 bytes */
	bb.n = 0;
	memcpy(bb.b, "FMR\0" "030\0", 8);
	bb.n = 8;
	put32(&bb, 15 + 34 + 12);
	put16(&bb, 1);
	put8(&bb, 0);
	put32(&bb, 34 + 12);
	for (int i = 0; i < 9; i++)
		put8(&bb, 0xff);		/* date and time not given */
	put8(&bb, 0);
	put16(&bb, 0);
	put16(&bb, 0);
	put8(&bb, 0);				/* no quality blocks */
	put8(&bb, 0);				/* position */
	put8(&bb, 0);				/* view */
	put16(&bb, 197);
	put16(&bb, 197);
	put8(&bb, 0);				/* impression */
	put16(&bb, 300);
	put16(&bb, 400);
	put8(&bb, 0x60);			/* 6-byte minutiae, ending type 0 */
	put8(&bb, 2);
	put16(&bb, (1u << 14) | 10);
	put16(&bb, 20);
	put8(&bb, 64);
	put8(&bb, 60);
	put16(&bb, (2u << 14) | 299);
	put16(&bb, 399);
	put8(&bb, 0);
	put8(&bb, 254);				/* quality not reported */
	put16(&bb, 0);
	len = sizeof(out);
	UNIT_CHECK(mcc_iso_write(&ms, MCC_REC_ISO2011, out, &len, &err) == MCC_OK &&
			   len == bb.n && memcmp(out, bb.b, len) == 0,
			   "ISO 2011 record written byte for byte as docs/formats.md says (%zu bytes)", bb.n);

	/* ANSI 2009: header of 21, view of 17 + 12 + 2 */
	bb.n = 0;
	memcpy(bb.b, "FMR\0" "030\0", 8);
	bb.n = 8;
	put32(&bb, 21 + 17 + 12 + 2);
	put16(&bb, 0x0103);			/* CBEFF owner: IBIA "unknown" */
	put16(&bb, 0);
	put8(&bb, 0);				/* not certified */
	put16(&bb, 0);				/* device id */
	put8(&bb, 1);
	put8(&bb, 0);
	put8(&bb, 0);				/* position */
	put8(&bb, 0);				/* view */
	put8(&bb, 0);				/* impression */
	put8(&bb, 254);				/* finger quality not reported */
	put16(&bb, 0x0103);
	put16(&bb, 0x0001);
	put16(&bb, 300);
	put16(&bb, 400);
	put16(&bb, 197);
	put16(&bb, 197);
	put8(&bb, 2);
	put16(&bb, (1u << 14) | 10);
	put16(&bb, 20);
	put8(&bb, 45);				/* 90 degrees in 2-degree units */
	put8(&bb, 60);
	put16(&bb, (2u << 14) | 299);
	put16(&bb, 399);
	put8(&bb, 0);
	put8(&bb, 254);
	put16(&bb, 0);
	len = sizeof(out);
	UNIT_CHECK(mcc_iso_write(&ms, MCC_REC_ANSI2009, out, &len, &err) == MCC_OK &&
			   len == bb.n && memcmp(out, bb.b, len) == 0,
			   "ANSI 2009 record written byte for byte as docs/formats.md says (%zu bytes)", bb.n);
}

/* Writing and reading back: every format written. */
static void
test_write(void)
{
	mcc_minutiae ms,
				back;
	mcc_error	err;
	uint8_t		buf[2048];
	size_t		len;

	made_up_set(&ms);
	for (int f = 0; f < N_WRITTEN; f++)
		check_round_trip(&ms, written[f].fmt, written[f].units,
						 written[f].fixed + 6 * (size_t) ms.count);

	len = sizeof(buf);
	UNIT_CHECK(mcc_iso_write(&ms, MCC_REC_ANSI2009AM1, buf, &len, &err) == MCC_ERR_VERSION,
			   "writing ANSI 2009/AM1 is refused: %s", err.message);
	UNIT_CHECK(mcc_iso_write(&ms, MCC_REC_ANSI2007, buf, &len, &err) == MCC_ERR_VERSION,
			   "writing the ANSI 2007 draft is refused: %s", err.message);
	ms.m[3].x = (int16_t) ms.width;
	for (int f = 0; f < N_WRITTEN; f++)
		UNIT_CHECK(mcc_iso_write(&ms, written[f].fmt, buf, &len, &err) == MCC_ERR_RANGE,
				   "%s: writing a minutia outside the image is refused: %s",
				   mcc_record_format_name(written[f].fmt), err.message);
	ms.m[3].x = 0;
	ms.count = 256;
	for (int i = 40; i < 256; i++)
		ms.m[i] = ms.m[i % 40];
	for (int f = 0; f < N_WRITTEN; f++)
	{
		len = sizeof(buf);
		UNIT_CHECK(mcc_iso_write(&ms, written[f].fmt, buf, &len, &err) == MCC_ERR_LIMIT,
				   "%s: 256 minutiae do not fit a view's count byte: %s",
				   mcc_record_format_name(written[f].fmt), err.message);
	}
	ms.count = 255;
	for (int f = 0; f < N_WRITTEN; f++)
	{
		len = sizeof(buf);
		UNIT_CHECK(mcc_iso_write(&ms, written[f].fmt, buf, &len, &err) == MCC_OK &&
				   mcc_iso_read(buf, len, 1, &back, NULL, &err) == MCC_OK && back.count == 255,
				   "%s: 255 minutiae write and read back", mcc_record_format_name(written[f].fmt));
	}
	test_write_bytes();
}

/* Truncation at every length, of every layout. */
static void
test_truncation(void)
{
	bytes		bb;
	const char *names[] = {"ISO 2005", "ANSI 2004", "ANSI 2009", "ANSI 2007", "ISO 2011"};

	for (int f = 0; f < 5; f++)
	{
		int			bad = 0;
		size_t		first_bad = 0;
		mcc_minutiae ms;
		mcc_error	err;

		if (f < 2)
			build_2004(&bb, f == 1, 3, true);
		else if (f < 4)
			build_2009(&bb, f == 2, "030\0");
		else
			build_2011(&bb, true, true);
		for (size_t len = 0; len < bb.n; len++)
		{
			mcc_status	st = read_view(&bb, len, 1, &ms, NULL, &err);

			if (st != MCC_ERR_TRUNCATED || strstr(err.message, "truncated") == NULL)
			{
				if (bad++ == 0)
					first_bad = len;
			}
		}
		UNIT_CHECK(bad == 0, "%s cut at each of %zu lengths is TRUNCATED (%d not, first at %zu)",
				   names[f], bb.n, bad, first_bad);
	}
}

/* Length fields that disagree with the data. */
static void
test_lengths(void)
{
	bytes		bb;
	mcc_minutiae ms;
	mcc_error	err;
	mcc_status	st;
	size_t		n;

	build_2004(&bb, false, 3, true);
	n = bb.n;
	set32(&bb, 8, (uint32_t) n + 1);
	expect_fail(&bb, n, MCC_ERR_TRUNCATED, "record length", "record length one past the data");
	build_2011(&bb, true, false);
	set32(&bb, 8, 10);
	expect_fail(&bb, bb.n, MCC_ERR_SYNTAX, "less than the 15-byte header", "record length below the header");
	build_2004(&bb, false, 3, true);

	/* the tolerated mismatches (docs/formats.md) */
	set32(&bb, 8, (uint32_t) n - 1);
	st = read_view(&bb, n, 1, &ms, NULL, &err);
	UNIT_CHECK(st == MCC_OK, "record length one short, views filling the data: read (%s)", err.message);
	memset(bb.b + n, 0, 16);
	expect_fail(&bb, n + 16, MCC_ERR_SYNTAX, "past the record length",
				"record length one short in a zero-padded buffer");
	set32(&bb, 8, (uint32_t) n + 2);
	st = read_view(&bb, n + 16, 1, &ms, NULL, &err);
	UNIT_CHECK(st == MCC_OK, "views ending 2 bytes before the record length: read (%s)", err.message);

	/* zero padding after the record is ignored */
	build_2004(&bb, true, 3, true);
	n = bb.n;
	memset(bb.b + n, 0, 100);
	st = read_view(&bb, n + 100, 2, &ms, NULL, &err);
	UNIT_CHECK(st == MCC_OK && same_view(&ms, view_b, NB, 180, true),
			   "zero padding after the record is ignored (%s)", err.message);

	/* extended data */
	build_2004(&bb, false, 3, true);
	n = bb.n;
	set16(&bb, 24 + 4 + 6 * NA, 8);		/* area 8 bytes, block says 7 */
	expect_fail(&bb, n, MCC_ERR_SYNTAX, "do not fill", "extended data length disagreeing with its block");
	set16(&bb, 24 + 4 + 6 * NA, 3);
	expect_fail(&bb, n, MCC_ERR_SYNTAX, "do not fill", "extended data area shorter than a block header");
	build_2004(&bb, false, 3, true);
	set16(&bb, 24 + 4 + 6 * NA + 4, 0);	/* a block of length 0 */
	set16(&bb, 24 + 4 + 6 * NA, 7);
	st = read_view(&bb, n, 2, &ms, NULL, &err);
	UNIT_CHECK(st == MCC_ERR_SYNTAX, "block length 0 in a 7-byte area is refused: %s", err.message);
	build_2004(&bb, false, -1, true);
	n = bb.n;
	set16(&bb, n - 2, 40);		/* the last view's extended data runs off the end */
	expect_fail(&bb, n, MCC_ERR_TRUNCATED, "extended data of finger view 2",
				"extended data length past the end");

	/* view counts */
	build_2004(&bb, false, 3, true);
	n = bb.n;
	bb.b[22] = 3;
	expect_fail(&bb, n, MCC_ERR_TRUNCATED, "header of finger view 3", "view count one too many");
	bb.b[22] = 1;
	st = read_view(&bb, n, 2, &ms, NULL, &err);
	UNIT_CHECK(st == MCC_ERR_VALUE && strstr(err.message, "no finger view 2"),
			   "view count one too few hides view 2: %s", err.message);
	bb.b[22] = 2;
	st = read_view(&bb, n, 3, &ms, NULL, &err);
	UNIT_CHECK(st == MCC_ERR_VALUE && strstr(err.detail, "offset 22 says 2 finger views"),
			   "asking for view 3 of 2: %s (%s)", err.message, err.detail);
	st = read_view(&bb, n, 0, &ms, NULL, &err);
	UNIT_CHECK(st == MCC_ERR_VALUE, "asking for view 0: %s", err.message);

	/* minutia counts that overrun */
	build_2004(&bb, false, -1, true);
	n = bb.n;
	bb.b[24 + 4 + 6 * NA + 2 + 3] = 255;
	expect_fail(&bb, n, MCC_ERR_TRUNCATED, "minutia 3 of 255 of finger view 2",
				"minutia count 255 in a view of 2");
	build_2004(&bb, false, -1, true);
	bb.b[27] = NA + 1;
	st = read_view(&bb, n, 1, &ms, NULL, &err);
	UNIT_CHECK(st != MCC_OK, "minutia count one too many in view 1 is refused: %s", err.message);

	/* ISO 2011 representation lengths */
	build_2011(&bb, true, false);
	n = bb.n;
	set32(&bb, 15, get32(&bb, 15) + 1);
	st = read_view(&bb, n, 1, &ms, NULL, &err);
	UNIT_CHECK(st == MCC_ERR_SYNTAX || st == MCC_ERR_TRUNCATED,
			   "ISO 2011 representation length one too long: %s", err.message);
	build_2011(&bb, true, false);
	set32(&bb, 15, 20);
	expect_fail(&bb, n, MCC_ERR_SYNTAX, "less than the 34-byte minimum",
				"ISO 2011 representation length below the minimum");
	build_2011(&bb, true, false);
	bb.b[14] = 2;
	expect_fail(&bb, n, MCC_ERR_SYNTAX, "certification flag", "ISO 2011 certification flag 2");
	build_2011(&bb, true, false);
	bb.b[15 + 4 + 9 + 5 + 1 + 10 + 11] = 0x70;
	expect_fail(&bb, n, MCC_ERR_SYNTAX, "minutia size of 7", "ISO 2011 minutia size 7");
}

/* Values out of range in otherwise well-formed records. */
static void
test_values(void)
{
	bytes		bb;
	size_t		m0 = 24 + 4;	/* first minutia of ISO 2005 view 1 */
	size_t		n;

	build_2004(&bb, false, -1, true);
	n = bb.n;
	set16(&bb, m0, (1u << 14) | 300);	/* x == width */
	expect_fail(&bb, n, MCC_ERR_RANGE, "outside the 300x400 image", "x equal to the width");
	build_2004(&bb, false, -1, true);
	set16(&bb, m0 + 2, 400);
	expect_fail(&bb, n, MCC_ERR_RANGE, "outside the 300x400 image", "y equal to the height");
	build_2004(&bb, false, -1, true);
	set16(&bb, m0, (3u << 14) | 10);
	expect_fail(&bb, n, MCC_ERR_VALUE, "reserved type code 3", "minutia type 3");
	build_2004(&bb, false, -1, true);
	bb.b[m0 + 5] = 101;
	expect_fail(&bb, n, MCC_ERR_RANGE, "quality 101", "ISO 2005 minutia quality 101");
	build_2004(&bb, false, -1, true);
	bb.b[m0 + 5] = 254;
	expect_fail(&bb, n, MCC_ERR_RANGE, "quality 254", "ISO 2005 minutia quality 254 (a 2011 code)");
	build_2004(&bb, false, -1, true);
	set16(&bb, 14, 0);
	expect_fail(&bb, n, MCC_ERR_RANGE, "image size 0x400", "image width 0");
	build_2004(&bb, false, -1, true);
	set16(&bb, 16, 16384);
	expect_fail(&bb, n, MCC_ERR_RANGE, "image size 300x16384", "image height 16384");
	build_2004(&bb, false, -1, true);
	set16(&bb, 20, 196);
	expect_fail(&bb, n, MCC_ERR_VALUE, "differ", "different x and y resolutions");
	build_2004(&bb, false, -1, true);
	set16(&bb, 18, 0);
	set16(&bb, 20, 0);
	expect_fail(&bb, n, MCC_ERR_RANGE, "resolution 0", "resolution 0");
	build_2004(&bb, false, -1, true);
	set16(&bb, 18, 4000);
	set16(&bb, 20, 4000);
	expect_fail(&bb, n, MCC_ERR_RANGE, "resolution 4000", "resolution 10160 dpi");

	/* ANSI angles are 2-degree units, 0..179 */
	build_2004(&bb, true, -1, true);
	n = bb.n;
	bb.b[26 + 4 + 6 + 4] = 180;
	expect_fail(&bb, n, MCC_ERR_RANGE, "angle 180", "ANSI angle 180");
	build_2009(&bb, true, "030\0");
	n = bb.n;
	bb.b[21 + 17 + 4] = 200;
	expect_fail(&bb, n, MCC_ERR_RANGE, "angle 200", "ANSI 2009 angle 200");
	build_2009(&bb, true, "030\0");
	set16(&bb, 21 + 10, 0);
	expect_fail(&bb, n, MCC_ERR_RANGE, "image size 300x0", "ANSI 2009 view height 0");
}

/* Format identifier and version. */
static void
test_identity(void)
{
	bytes		bb;
	mcc_minutiae ms;
	mcc_error	err;

	build_2004(&bb, false, -1, true);
	expect_fail(&bb, 0, MCC_ERR_TRUNCATED, "empty", "empty input");
	expect_fail(&bb, 3, MCC_ERR_TRUNCATED, "format identifier", "3 bytes of \"FMR\"");
	memcpy(bb.b + 4, "021\0", 4);
	expect_fail(&bb, bb.n, MCC_ERR_VERSION, "\"021\"", "version \"021\"");
	memcpy(bb.b + 4, "\x01\x02\x03\x04", 4);
	expect_fail(&bb, bb.n, MCC_ERR_VERSION, "0x01020304", "binary version");
	memcpy(bb.b, "FIR\0 20\0", 8);
	expect_fail(&bb, bb.n, MCC_ERR_SYNTAX, "not a finger minutiae record", "a finger image record");
	bb.b[0] = 'X';
	expect_fail(&bb, 2, MCC_ERR_SYNTAX, "not a finger minutiae record", "2 bytes that are not \"FM\"");
	UNIT_CHECK(mcc_iso_read(bb.b, bb.n, 1, NULL, NULL, &err) == MCC_ERR_INTERNAL,
			   "no output set is an internal error");
	(void) ms;
}


/* ---- shared data: published samples and FVC2002 ---- */

/* FVC2002 set B image sizes (../shared/data/README.md). */
static const struct
{
	const char *db;
	int			width;
	int			height;
}			fvc_db[4] = {
	{"DB1_B", 388, 374}, {"DB2_B", 296, 560}, {"DB3_B", 300, 300}, {"DB4_B", 288, 384}
};

/* A view decoded by FingerprintIO: raw field values. */
typedef struct fpio_view
{
	int			count;
	raw_minutia m[256];
} fpio_view;

/* Load data/<rel> into a fresh buffer; NULL if absent. */
static unsigned char *
load(const char *data, const char *rel, size_t *len)
{
	char		path[1024];

	snprintf(path, sizeof(path), "%s/%s", data, rel);
	return unit_read_file(path, len);
}

/* The integer after `"key" : ` at or after p, before `end`; -1 if none. */
static int
json_int_after(const char **p, const char *end, const char *key)
{
	char		pat[64];
	const char *q;

	snprintf(pat, sizeof(pat), "\"%s\" : ", key);
	q = strstr(*p, pat);
	if (q == NULL || q >= end)
		return -1;
	q += strlen(pat);
	*p = q;
	return atoi(q);
}

/*
 * Scan FingerprintIO's JSON decoding for the minutiae of each fingerprint:
 * each "minutiae" array runs to the fingerprint's "counts" key; each
 * minutia is "type", "positionX", "positionY", "angle", "quality" in that
 * order. Returns the number of fingerprints.
 */
static int
scan_fpio_json(const char *json, fpio_view *views, int max)
{
	const char *p = json;
	int			n = 0;

	while (n < max && (p = strstr(p, "\"minutiae\" : [")) != NULL)
	{
		const char *end = strstr(p, "\"counts\"");
		fpio_view  *v = &views[n++];

		if (end == NULL)
			end = p + strlen(p);
		v->count = 0;
		for (;;)
		{
			const char *t = strstr(p, "\"type\" : \"");
			raw_minutia *m = &v->m[v->count];

			if (t == NULL || t >= end || v->count == 256)
				break;
			t += strlen("\"type\" : \"");
			m->type = strncmp(t, "ENDING\"", 7) == 0 ? 1 :
				strncmp(t, "BIFURCATION\"", 12) == 0 ? 2 : 0;
			p = t;
			m->x = json_int_after(&p, end, "positionX");
			m->y = json_int_after(&p, end, "positionY");
			m->angle = json_int_after(&p, end, "angle");
			m->quality = json_int_after(&p, end, "quality");
			v->count++;
		}
		p = end;
	}
	return n;
}

/*
 * A sample record against its FingerprintIO decoding: every view imports
 * to the raw values (angles in `units` per turn; qualities 254/255 read as
 * 0). Returns the views compared, -1 on any mismatch.
 */
static int
check_sample(const char *data, const char *name, int units, mcc_record_format fmt)
{
	char		rel[256];
	unsigned char *rec,
			   *json;
	size_t		rlen,
				jlen;
	static fpio_view views[4];
	int			nv,
				ok = 0;

	snprintf(rel, sizeof(rel), "format-samples/fingerprintio/%s.dat", name);
	rec = load(data, rel, &rlen);
	snprintf(rel, sizeof(rel), "format-samples/fingerprintio/%s.json", name);
	json = load(data, rel, &jlen);
	if (rec == NULL || json == NULL)
	{
		free(rec);
		free(json);
		return -1;
	}
	nv = scan_fpio_json((const char *) json, views, 4);
	for (int v = 0; v < nv; v++)
	{
		mcc_minutiae ms;
		mcc_record_info info;
		mcc_error	err;

		for (int i = 0; i < views[v].count; i++)
			if (views[v].m[i].quality >= 254)
				views[v].m[i].quality = 0;
		if (mcc_iso_read(rec, rlen, v + 1, &ms, &info, &err) == MCC_OK &&
			info.format == fmt && info.n_views == nv && ms.width == 512 &&
			ms.height == 512 && ms.dpi == 500 &&
			same_view(&ms, views[v].m, views[v].count, units, true))
			ok++;
		else
			printf("# %s view %d: %s\n", name, v + 1, err.message);
	}
	free(rec);
	free(json);
	return nv > 0 && ok == nv ? nv : -1;
}

/* Angle units per turn of the format a record was read as. */
static int
angle_units_of(mcc_record_format fmt)
{
	return (fmt == MCC_REC_ISO2005 || fmt == MCC_REC_ISO2011) ? 256 : 180;
}

/*
 * Is b the set a written in a format of `units` angle units and read back:
 * equal but for angles, which are within half a unit?
 */
static bool
near_set(const mcc_minutiae *a, const mcc_minutiae *b, int units)
{
	if (a->width != b->width || a->height != b->height || a->dpi != b->dpi ||
		a->count != b->count)
		return false;
	for (int i = 0; i < a->count; i++)
	{
		double		d = fabs(a->m[i].theta - b->m[i].theta);

		d = fmin(d, TWO_PI - d);
		if (a->m[i].x != b->m[i].x || a->m[i].y != b->m[i].y ||
			a->m[i].type != b->m[i].type || a->m[i].quality != b->m[i].quality ||
			d > TWO_PI / units / 2 + 1e-6)
			return false;
	}
	return true;
}

/*
 * Every view of a published sample, written in each format and read back,
 * gives the minutiae read from the sample: the same set in a format of the
 * sample's angle unit, angles within half a unit in the other.
 */
static void
check_sample_rewrites(const char *data, const char *rel)
{
	mcc_minutiae ms,
				back;
	mcc_record_info info;
	mcc_error	err;
	uint8_t		buf[2048];
	size_t		n;
	unsigned char *rec = load(data, rel, &n);
	int			views = 0,
				bad = 0,
				checked = 0;

	if (rec != NULL && mcc_iso_read(rec, n, 1, &ms, &info, &err) == MCC_OK)
		views = info.n_views;
	for (int v = 1; v <= views; v++)
	{
		if (mcc_iso_read(rec, n, v, &ms, &info, &err) != MCC_OK)
		{
			bad++;
			continue;
		}
		for (int f = 0; f < N_WRITTEN; f++)
		{
			size_t		len = sizeof(buf);
			int			units = written[f].units;

			checked++;
			if (mcc_iso_write(&ms, written[f].fmt, buf, &len, &err) != MCC_OK ||
				mcc_iso_read(buf, len, 1, &back, NULL, &err) != MCC_OK ||
				!(units == angle_units_of(info.format) ? same_set(&back, &ms) : near_set(&ms, &back, units)))
				bad++;
		}
	}
	free(rec);
	UNIT_CHECK(bad == 0 && checked > 0, "%s: %d views rewritten in the %d formats read back (%d bad)",
			   rel, views, N_WRITTEN, bad);
}

/* Read a shared file's view; status, with the set in ms. */
static mcc_status
read_shared(const char *data, const char *rel, size_t cut, int view,
			mcc_minutiae *ms, mcc_record_info *info, mcc_error *err)
{
	size_t		len;
	unsigned char *buf = load(data, rel, &len);
	mcc_status	st;

	if (buf == NULL)
		return mcc_error_set(err, MCC_ERR_INTERNAL, "cannot read %s", rel);
	mcc_error_clear(err);
	st = mcc_iso_read(buf, cut && cut < len ? cut : len, view, ms, info, err);
	free(buf);
	return st;
}

/* The published samples, each per its quirk (docs/formats.md). */
static void
test_samples(const char *data)
{
	mcc_minutiae a,
				b;
	mcc_record_info info;
	mcc_error	err;
	mcc_status	st;
	static fpio_view views[4];
	unsigned char *json;
	size_t		jlen;
	int			maxangle = -1;

	UNIT_CHECK(check_sample(data, "iso19794p2v2005-sample", 256, MCC_REC_ISO2005) == 2,
			   "ISO 2005 sample: both views import as FingerprintIO decodes them");
	UNIT_CHECK(check_sample(data, "iso19794p2v2011-sample", 256, MCC_REC_ISO2011) == 2,
			   "ISO 2011 sample (extension length counting its header): both views import");
	UNIT_CHECK(check_sample(data, "ansi378v2009-sample", 180, MCC_REC_ANSI2009) == 2,
			   "ANSI 2009 sample (record length 363 of 364 bytes): both views import");
	UNIT_CHECK(check_sample(data, "ansi378v2009am1-sample", 180, MCC_REC_ANSI2009AM1) == 2,
			   "ANSI 2009/AM1 sample: both views import");

	/* ANSI 2004 sample: "020" is read, but its angles are ISO bytes */
	json = load(data, "format-samples/fingerprintio/ansi378v2004-sample.json", &jlen);
	if (json && scan_fpio_json((const char *) json, views, 4) == 2)
		for (int i = 0; i < views[1].count; i++)
			if (views[1].m[i].angle > maxangle)
				maxangle = views[1].m[i].angle;
	free(json);
	st = read_shared(data, "format-samples/fingerprintio/ansi378v2004-sample.dat", 0, 1,
					 &a, NULL, &err);
	UNIT_CHECK(maxangle > 179 && st == MCC_ERR_RANGE && strstr(err.message, "ANSI/INCITS 378-2004") &&
			   strstr(err.message, "outside 0..179"),
			   "ANSI 2004 sample (angles up to %d) is refused: %s", maxangle, err.message);

	/*
	 * ...and only the angles: halved into 0..127, the same bytes read, "020"
	 * and the record length 340 of 342 bytes notwithstanding (tolerance 1)
	 */
	{
		size_t		len;
		unsigned char *buf = load(data, "format-samples/fingerprintio/ansi378v2004-sample.dat", &len);
		bool		ok = false;

		mcc_error_clear(&err);
		if (buf && len == 342 && buf[194 + 3] == views[1].count)
		{
			for (int i = 0; i < views[1].count; i++)
			{
				buf[198 + 6 * i + 4] /= 2;
				views[1].m[i].angle /= 2;
			}
			ok = mcc_iso_read(buf, len, 2, &a, &info, &err) == MCC_OK &&
				info.format == MCC_REC_ANSI2004 &&
				same_view(&a, views[1].m, views[1].count, 180, true) &&
				mcc_iso_read(buf, len, 1, &b, &info, &err) == MCC_OK &&
				same_view(&b, views[0].m, views[0].count, 180, true);
		}
		free(buf);
		UNIT_CHECK(ok, "ANSI 2004 sample with its view 2 angles halved imports (%s)", err.message);
	}

	/* the same two fingers in every format */
	for (int v = 1; v <= 2; v++)
	{
		bool		same;

		read_shared(data, "format-samples/fingerprintio/iso19794p2v2005-sample.dat", 0, v, &a, NULL, &err);
		read_shared(data, "format-samples/fingerprintio/iso19794p2v2011-sample.dat", 0, v, &b, NULL, &err);
		UNIT_CHECK(same_set(&a, &b), "ISO 2005 and ISO 2011 samples agree on view %d", v);
		read_shared(data, "format-samples/fingerprintio/ansi378v2009-sample.dat", 0, v, &a, NULL, &err);
		st = read_shared(data, "format-samples/libbiomeval/fmr.ansi2007", 0, v, &b, &info, &err);
		same = st == MCC_OK && info.format == MCC_REC_ANSI2007 && same_set(&a, &b);
		UNIT_CHECK(same, "libbiomeval fmr.ansi2007 (no certification byte) equals the ANSI 2009 sample, view %d (%s)",
				   v, err.message);
		st = read_shared(data, "format-samples/libbiomeval/fmr.ansi2004", 0, v, &b, &info, &err);
		UNIT_CHECK(st == MCC_OK && info.n_views == 3 && same_set(&a, &b),
				   "libbiomeval fmr.ansi2004 (42-vs-44 block) equals the ANSI 2009 sample, view %d (%s)",
				   v, err.message);
	}
	check_sample_rewrites(data, "format-samples/fingerprintio/iso19794p2v2005-sample.dat");
	check_sample_rewrites(data, "format-samples/fingerprintio/iso19794p2v2011-sample.dat");
	check_sample_rewrites(data, "format-samples/fingerprintio/ansi378v2009-sample.dat");
	check_sample_rewrites(data, "format-samples/fingerprintio/ansi378v2009am1-sample.dat");
	check_sample_rewrites(data, "format-samples/libbiomeval/fmr.ansi2004");
	st = read_shared(data, "format-samples/libbiomeval/fmr.ansi2004", 0, 3, &a, &info, &err);
	UNIT_CHECK(st == MCC_OK && a.count == 28 && info.finger_position == 3 &&
			   mcc_minutiae_validate(&a, &err) == MCC_OK,
			   "libbiomeval fmr.ansi2004 view 3 imports 28 minutiae (%s)", err.message);
	st = read_shared(data, "format-samples/libbiomeval/fmr.iso2005", 0, 1, &a, &info, &err);
	UNIT_CHECK(st == MCC_ERR_TRUNCATED && strstr(err.message, "extended data of finger view 2"),
			   "libbiomeval fmr.iso2005 (block claiming 42 of 41 bytes) is refused: %s", err.message);
	for (int i = 0; i < 3; i++)
	{
		const char *f[] = {"type9.an2k", "type9-13.an2k", "type9-efs.an2k"};
		char		rel[128];

		snprintf(rel, sizeof(rel), "format-samples/libbiomeval/%s", f[i]);
		st = read_shared(data, rel, 0, 1, &a, NULL, &err);
		UNIT_CHECK(st == MCC_ERR_SYNTAX && strstr(err.message, "not a finger minutiae record"),
				   "%s (ANSI/NIST-ITL, not FMR) is refused: %s", f[i], err.message);
	}
	for (int i = 1; i <= 3; i++)
	{
		char		rel[128];

		snprintf(rel, sizeof(rel), "format-samples/openafis-invalid/101_1_truncate_%d_byte%s.iso",
				 i, i > 1 ? "s" : "");
		st = read_shared(data, rel, 0, 1, &a, NULL, &err);
		UNIT_CHECK(st == MCC_ERR_TRUNCATED && strstr(err.message, "record length 30"),
				   "openafis record cut by %d byte%s is refused: %s", i, i > 1 ? "s" : "",
				   err.message);
	}

	/* SourceAFIS: the record length, not the 384-byte buffer, decides */
	for (int i = 0; i < 3; i++)
	{
		const char *f[] = {"iso-probe.dat", "iso-matching.dat", "iso-nonmatching.dat"};
		char		rel[128];
		size_t		len;
		unsigned char *buf;
		size_t		reclen;

		snprintf(rel, sizeof(rel), "format-samples/sourceafis/%s", f[i]);
		buf = load(data, rel, &len);
		if (buf == NULL)
		{
			UNIT_CHECK(0, "cannot read %s", rel);
			continue;
		}
		reclen = ((size_t) buf[8] << 24) | ((size_t) buf[9] << 16) | ((size_t) buf[10] << 8) | buf[11];
		free(buf);
		st = read_shared(data, rel, 0, 1, &a, NULL, &err);
		UNIT_CHECK(st == MCC_OK && len == 384 && reclen < len &&
				   reclen == 24 + 4 + 6 * (size_t) a.count + 2 + 5 &&
				   read_shared(data, rel, reclen, 1, &b, NULL, &err) == MCC_OK && same_set(&a, &b),
				   "SourceAFIS %s: %u minutiae, the %zu bytes of zero padding ignored (%s)",
				   f[i], a.count, len - reclen, err.message);
	}

	/* FingerJetFX: one view, no extended data: size = 30 + 6 * count */
	{
		const char *f[] = {"a001_03p", "a001_04p", "a001_05p", "a001_06p", "a001_07p",
		"a004_05p", "b001_04p", "b001_06p", "b001_08p"};
		int			good = 0;

		for (int i = 0; i < 9; i++)
		{
			char		rel[128];
			size_t		len;
			unsigned char *buf;

			snprintf(rel, sizeof(rel), "format-samples/fingerjetfx/%s.ist", f[i]);
			buf = load(data, rel, &len);
			free(buf);
			if (buf && read_shared(data, rel, 0, 1, &a, &info, &err) == MCC_OK &&
				info.n_views == 1 && len == 30 + 6 * (size_t) a.count &&
				mcc_minutiae_validate(&a, &err) == MCC_OK)
				good++;
			else
				printf("# %s: %s\n", rel, err.message);
		}
		UNIT_CHECK(good == 9, "FingerJetFX samples: %d of 9 import", good);
	}
}

/*
 * Every importable sample cut short at every length is TRUNCATED: the cuts
 * run through real headers, views and extension blocks.
 */
static void
test_sample_cuts(const char *data)
{
	static const char *const files[] = {
		"fingerprintio/iso19794p2v2005-sample.dat", "fingerprintio/iso19794p2v2011-sample.dat",
		"fingerprintio/ansi378v2009-sample.dat", "fingerprintio/ansi378v2009am1-sample.dat",
		"libbiomeval/fmr.ansi2004", "libbiomeval/fmr.ansi2007", "sourceafis/iso-probe.dat",
		"fingerjetfx/a001_05p.ist"
	};
	int			cuts = 0,
				bad = 0;

	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++)
	{
		char		rel[256];
		size_t		len,
					reclen;
		unsigned char *buf;

		snprintf(rel, sizeof(rel), "format-samples/%s", files[f]);
		if ((buf = load(data, rel, &len)) == NULL || len < 12)
		{
			bad++;
			free(buf);
			continue;
		}
		/* all of these have a 4-byte length at 8, or ANSI's 2-byte one */
		reclen = buf[8] == 0 && buf[9] == 0 ?
			((size_t) buf[10] << 8 | buf[11]) : ((size_t) buf[8] << 8 | buf[9]);
		for (size_t cut = 0; cut < len && cut < reclen; cut++)
		{
			mcc_minutiae ms;
			mcc_error	err;
			mcc_status	st;

			mcc_error_clear(&err);
			st = mcc_iso_read(buf, cut, 1, &ms, NULL, &err);
			cuts++;
			if (st != MCC_ERR_TRUNCATED)
			{
				if (bad++ < 3)
					printf("# %s cut to %zu: %s\n", files[f], cut, err.message);
			}
		}
		free(buf);
	}
	UNIT_CHECK(cuts > 2000 && bad == 0, "published samples cut at %d lengths: all TRUNCATED (%d not)",
			   cuts, bad);
}

/* Every FVC2002 record of the three binary encodings imports. */
static void
test_fvc_records(const char *data)
{
	static const struct
	{
		const char *dir;
		const char *ext;
		mcc_record_format fmt;
	}			enc[3] = {
		{"fingerjetfx-iso19794-2-2005", "ist", MCC_REC_ISO2005},
		{"secugen-iso19794-2-2005", "iso", MCC_REC_ISO2005},
		{"nbis-minex-ansi378-2004", "fmr", MCC_REC_ANSI2004},
	};

	for (int e = 0; e < 3; e++)
	{
		int			files = 0,
					good = 0,
					minutiae = 0,
					lo = 1000,
					hi = 0;

		for (int d = 0; d < 4; d++)
			for (int f = 101; f <= 110; f++)
				for (int imp = 1; imp <= 8; imp++)
				{
					char		rel[256];
					size_t		len;
					unsigned char *buf;
					mcc_minutiae ms;
					mcc_record_info info;
					mcc_error	err;
					bool		size_ok;

					snprintf(rel, sizeof(rel), "fvc2002/minutiae/%s/%s/%d_%d.%s",
							 enc[e].dir, fvc_db[d].db, f, imp, enc[e].ext);
					if ((buf = load(data, rel, &len)) == NULL)
						continue;
					files++;
					mcc_error_clear(&err);
					/* SecuGen stretched every image to 300x400 (README) */
					if (mcc_iso_read(buf, len, 1, &ms, &info, &err) == MCC_OK &&
						info.format == enc[e].fmt && info.n_views == 1 &&
						mcc_minutiae_validate(&ms, &err) == MCC_OK)
					{
						size_ok = e == 1 ? (ms.width == 300 && ms.height == 400) :
							(ms.width == fvc_db[d].width && ms.height == fvc_db[d].height);
						if (size_ok)
						{
							good++;
							minutiae += ms.count;
							lo = ms.count < lo ? ms.count : lo;
							hi = ms.count > hi ? ms.count : hi;
						}
						else
							printf("# %s: image %ux%u\n", rel, ms.width, ms.height);
					}
					else
						printf("# %s: %s\n", rel, err.message);
					free(buf);
				}
		UNIT_CHECK(files > 0 && good == files,
				   "FVC2002 %s: %d of %d records import (%d minutiae, %d..%d per record)",
				   enc[e].dir, good, files, minutiae, lo, hi);
	}
}

/*
 * NBIS-MINEX ANSI records hold a subset of mindtct's minutiae (README):
 * each must coincide with an xyt minutia once both are in our frame: x and
 * y exactly, the angle within the 2-degree unit, the same quality.
 */
static void
test_minex_vs_xyt(const char *data)
{
	int			records = 0,
				matched = 0,
				total = 0,
				bad_records = 0;

	for (int d = 0; d < 4; d++)
		for (int f = 101; f <= 110; f++)
			for (int imp = 1; imp <= 8; imp++)
			{
				char		rel[256];
				size_t		len,
							tlen;
				unsigned char *buf,
						   *text;
				mcc_minutiae fmr,
							xyt;
				mcc_error	err;
				int			here = 0;

				snprintf(rel, sizeof(rel), "fvc2002/minutiae/nbis-minex-ansi378-2004/%s/%d_%d.fmr",
						 fvc_db[d].db, f, imp);
				buf = load(data, rel, &len);
				snprintf(rel, sizeof(rel), "fvc2002/minutiae/nbis-mindtct-xyt/%s/%d_%d.xyt",
						 fvc_db[d].db, f, imp);
				text = load(data, rel, &tlen);
				if (buf == NULL || text == NULL ||
					mcc_iso_read(buf, len, 1, &fmr, NULL, &err) != MCC_OK ||
					mcc_xyt_read((const char *) text, tlen, fvc_db[d].width,
								 fvc_db[d].height, 500, &xyt, &err) != MCC_OK)
				{
					free(buf);
					free(text);
					bad_records++;
					continue;
				}
				records++;
				for (int i = 0; i < fmr.count; i++)
				{
					const mcc_minutia *a = &fmr.m[i];

					for (int j = 0; j < xyt.count; j++)
					{
						const mcc_minutia *b = &xyt.m[j];
						double		da = fabs(a->theta - b->theta) * 360.0 / TWO_PI;

						da = fmin(da, 360.0 - da);
						if (a->x == b->x && a->y == b->y && da <= 1.0 + 1e-3 &&
							a->quality == b->quality)
						{
							here++;
							break;
						}
					}
				}
				matched += here;
				total += fmr.count;
				free(buf);
				free(text);
			}
	UNIT_CHECK(records > 0 && bad_records == 0 && matched == total,
			   "NBIS-MINEX ANSI minutiae coincide with mindtct xyt ones: %d of %d in %d records",
			   matched, total, records);
}

/* Synthetic records always; shared samples and FVC2002 when present. */
int
main(void)
{
	const char *data = unit_shared_data();

	test_layouts();
	test_write();
	test_truncation();
	test_lengths();
	test_values();
	test_identity();
	if (data == NULL)
		UNIT_SKIP("../shared/data is absent: published samples and FVC2002 records not read");
	else
	{
		test_samples(data);
		test_sample_cuts(data);
		test_fvc_records(data);
		test_minex_vs_xyt(data);
	}
	return unit_done();
}
