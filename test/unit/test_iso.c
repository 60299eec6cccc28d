/*
 * test_iso.c: ISO/IEC 19794-2 and ANSI/INCITS 378 records.
 *
 * Synthetic records are built here byte by byte from the layouts in
 * docs/formats.md (independently of src/core/mcc/mcc_iso_write.c), then read
 * back; malformed variants of them cover every error class. The published
 * samples and the FVC2002 records: test_iso_samples.c.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "iso_testlib.h"
#include "unit.h"
#include "testgen.h"
#include "mcc_iso.h"
#include "mcc_xyt.h"


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

	tg_frame(&ms, 300, 400, 500);	/* 500 dpi: 197 px/cm */
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
	enum
	{
		M0 = 24 + 4				/* first minutia of ISO 2005 view 1 */
	};

	/*
	 * One field of an ISO 2005 record changed: 16 bits at `at` (and at at2
	 * too, if not 0: both resolutions), or the byte at `at` if byte.
	 */
	static const struct
	{
		size_t		at;
		size_t		at2;
		bool		byte;
		unsigned	v;
		mcc_status	want;
		const char *needle;
		const char *name;
	}			iso[] = {
		{M0, 0, false, (1u << 14) | 300, MCC_ERR_RANGE, "outside the 300x400 image", "x equal to the width"},
		{M0 + 2, 0, false, 400, MCC_ERR_RANGE, "outside the 300x400 image", "y equal to the height"},
		{M0, 0, false, (3u << 14) | 10, MCC_ERR_VALUE, "reserved type code 3", "minutia type 3"},
		{M0 + 5, 0, true, 101, MCC_ERR_RANGE, "quality 101", "ISO 2005 minutia quality 101"},
		{M0 + 5, 0, true, 254, MCC_ERR_RANGE, "quality 254", "ISO 2005 minutia quality 254 (a 2011 code)"},
		{14, 0, false, 0, MCC_ERR_RANGE, "image size 0x400", "image width 0"},
		{16, 0, false, 16384, MCC_ERR_RANGE, "image size 300x16384", "image height 16384"},
		{20, 0, false, 196, MCC_ERR_VALUE, "differ", "different x and y resolutions"},
		{18, 20, false, 0, MCC_ERR_RANGE, "resolution 0", "resolution 0"},
		{18, 20, false, 4000, MCC_ERR_RANGE, "resolution 4000", "resolution 10160 dpi"},
	};
	bytes		bb;
	size_t		n;

	for (size_t i = 0; i < sizeof(iso) / sizeof(iso[0]); i++)
	{
		build_2004(&bb, false, -1, true);
		n = bb.n;
		if (iso[i].byte)
			bb.b[iso[i].at] = (uint8_t) iso[i].v;
		else
			set16(&bb, iso[i].at, iso[i].v);
		if (iso[i].at2 != 0)
			set16(&bb, iso[i].at2, iso[i].v);
		expect_fail(&bb, n, iso[i].want, iso[i].needle, iso[i].name);
	}

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

int
main(void)
{
	test_layouts();
	test_write();
	test_truncation();
	test_lengths();
	test_values();
	test_identity();
	return unit_done();
}
