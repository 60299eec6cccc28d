/*
 * mcc_iso_read.c: reading finger minutiae records, ISO/IEC 19794-2 and
 * ANSI/INCITS 378 (mcc_iso.h; the layouts are in mcc_iso_int.h).
 *
 * Resolutions are pixels per centimetre. Every read is bounds-checked
 * against the data; a record is parsed whole (every view) so that a length
 * field that disagrees with the data anywhere is reported, and the view
 * asked for is copied out.
 *
 * Versions sharing a version string are parsed under each candidate layout;
 * a parse that ends exactly at the record length wins, then one within the
 * tolerances of check_end(); errors are reported for the layout that the
 * header's fixed fields make most plausible.
 */
#include "mcc_iso_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef struct rec_parse
{
	const uint8_t *buf;
	size_t		len;			/* bytes of data */
	size_t		pos;			/* read position */
	size_t		limit;			/* reads stop here: len or a representation's end */
	mcc_record_format fmt;
	int			want;			/* finger view to copy out, from 1 */
	mcc_minutiae *out;			/* NULL: check only */
	mcc_record_info info;		/* of the view asked for */
	mcc_error  *err;
	mcc_status	status;			/* of the last failure */
	uint32_t	reclen;			/* record length field */
	size_t		end;			/* end of the last finger view */
	int			n_views;
	size_t		views_at;		/* offset of the view count */
	/* image of the view being parsed */
	uint16_t	width;
	uint16_t	height;
	uint16_t	dpi;
} rec_parse;

/* Outcome of parsing a record under one candidate layout. */
typedef struct rec_try
{
	mcc_record_format fmt;
	mcc_status	status;
	mcc_error	err;
	size_t		end;			/* end of the last view, if parsed */
	bool		exact;			/* views end exactly at the record length */
} rec_try;

static const char *const format_names[] = {
	"unknown",
	"ISO/IEC 19794-2:2005",
	"ISO/IEC 19794-2:2011",
	"ANSI/INCITS 378-2004",
	"ANSI/INCITS 378 (2007 draft)",
	"ANSI/INCITS 378-2009",
	"ANSI/INCITS 378-2009/AM1"
};

/* Human name of a record format, "unknown" for anything else. */
const char *
mcc_record_format_name(mcc_record_format f)
{
	if ((int) f < 0 || f > MCC_REC_ANSI2009AM1)
		return format_names[0];
	return format_names[f];
}

/* Record a failure: "invalid <format> record: <what>". */
static mcc_status
fail(rec_parse *ps, mcc_status status, const char *fmt,...)
	__attribute__((format(printf, 3, 4)));

static mcc_status
fail(rec_parse *ps, mcc_status status, const char *fmt,...)
{
	char		what[MCC_ERRMSG_LEN];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	ps->status = status;
	return mcc_error_set(ps->err, status, "%s %s record: %s",
						 status == MCC_ERR_TRUNCATED ? "truncated" : "invalid",
						 mcc_record_format_name(ps->fmt), what);
}

/*
 * Make sure n bytes can be read at the read position. When they cannot, the
 * field `what` (printf-style) is named: TRUNCATED if the data ends, SYNTAX
 * if an enclosing length field (an ISO 2011 representation) ends first.
 */
static bool
need(rec_parse *ps, size_t n, const char *fmt,...)
	__attribute__((format(printf, 3, 4)));

static bool
need(rec_parse *ps, size_t n, const char *fmt,...)
{
	char		what[160];
	va_list		ap;

	if (ps->pos <= ps->limit && ps->limit - ps->pos >= n)
		return true;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (ps->limit >= ps->len)
		fail(ps, MCC_ERR_TRUNCATED,
			 "%s at offset %zu needs %zu bytes, the data ends at offset %zu",
			 what, ps->pos, n, ps->len);
	else
		fail(ps, MCC_ERR_SYNTAX,
			 "%s at offset %zu needs %zu bytes, past the end of its representation at offset %zu",
			 what, ps->pos, n, ps->limit);
	return false;
}

/*
 * Check an image size (read at offset size_at) and resolution (at res_at)
 * and make them the current view's: 1..MCC_MAX_IMAGE_SIDE pixels, square
 * pixels, pixels per centimetre that convert to 1..MCC_MAX_DPI dpi.
 */
static mcc_status
set_image(rec_parse *ps, size_t size_at, size_t res_at, unsigned w,
		  unsigned h, unsigned xres, unsigned yres)
{
	unsigned	dpi;

	if (w < 1 || w > MCC_MAX_IMAGE_SIDE || h < 1 || h > MCC_MAX_IMAGE_SIDE)
		return fail(ps, MCC_ERR_RANGE,
					"image size %ux%u at offset %zu is outside 1..%d pixels",
					w, h, size_at, MCC_MAX_IMAGE_SIDE);
	if (xres != yres)
		return fail(ps, MCC_ERR_VALUE,
					"horizontal resolution %u and vertical resolution %u at offset %zu differ",
					xres, yres, res_at);
	/* dpi = round(ppcm * 2.54) */
	dpi = (xres * 254u + 50u) / 100u;
	if (xres < 1 || dpi > MCC_MAX_DPI)
		return fail(ps, MCC_ERR_RANGE,
					"resolution %u pixels/cm at offset %zu is outside 1..%d dpi",
					xres, res_at, MCC_MAX_DPI);
	ps->width = (uint16_t) w;
	ps->height = (uint16_t) h;
	ps->dpi = (uint16_t) dpi;
	return MCC_OK;
}

/*
 * Read `count` minutiae of finger view `v` (`size` bytes each, 5 without a
 * quality byte) and copy them out if this is the view asked for. Checks the
 * type code, the coordinates against the view's image, the angle against
 * its unit and the quality (0..100; 254 "not reported" and 255 "failed" of
 * the 2009/2011 formats become 0).
 */
static mcc_status
read_minutiae(rec_parse *ps, int v, int count, int size)
{
	int			units = angle_units(ps->fmt);
	bool		q_special = (ps->fmt != MCC_REC_ISO2005 && ps->fmt != MCC_REC_ANSI2004);
	bool		copy = (v == ps->want && ps->out != NULL);

	if (copy)
	{
		ps->out->width = ps->width;
		ps->out->height = ps->height;
		ps->out->dpi = ps->dpi;
		ps->out->count = 0;
	}
	for (int i = 1; i <= count; i++)
	{
		size_t		at = ps->pos;
		const uint8_t *p = ps->buf + at;
		int			type,
					x,
					y,
					angle,
					quality = 0;

		if (!need(ps, (size_t) size, "minutia %d of %d of finger view %d", i, count, v))
			return ps->status;
		type = p[0] >> 6;
		x = get16(p, 0) & 0x3fff;
		/* the top two bits of y are reserved: ignored, as readers must */
		y = get16(p, 2) & 0x3fff;
		angle = p[4];
		if (size == 6)
			quality = p[5];
		if (type == 3)
			return fail(ps, MCC_ERR_VALUE,
						"minutia %d of finger view %d at offset %zu has the reserved type code 3",
						i, v, at);
		if (x >= ps->width || y >= ps->height)
			return fail(ps, MCC_ERR_RANGE,
						"minutia %d of finger view %d at offset %zu lies at (%d, %d), outside the %ux%u image",
						i, v, at, x, y, ps->width, ps->height);
		if (angle >= units)
			return fail(ps, MCC_ERR_RANGE,
						"minutia %d of finger view %d has angle %d at offset %zu, outside 0..%d",
						i, v, angle, at + 4, units - 1);
		if (q_special && quality >= 254)
			quality = 0;
		if (quality > 100)
			return fail(ps, MCC_ERR_RANGE,
						"minutia %d of finger view %d has quality %d at offset %zu, outside 0..100",
						i, v, quality, at + 5);
		if (copy)
		{
			mcc_minutia *m = &ps->out->m[ps->out->count++];

			/* type codes: 00 other, 01 ending, 10 bifurcation, as ours */
			m->type = (uint8_t) type;
			m->x = (int16_t) x;
			m->y = (int16_t) y;
			m->theta = (float) (angle * (MCC_TWO_PI / units));
			m->quality = (uint8_t) quality;
		}
		ps->pos += (size_t) size;
	}
	return MCC_OK;
}

/*
 * Do the blocks of an extended data area [start, end) tile it exactly when
 * each block's length field counts its 4-byte header (incl) or not?
 */
static bool
blocks_tile(const uint8_t *buf, size_t start, size_t end, bool incl)
{
	size_t		p = start;

	while (p < end)
	{
		size_t		blen;

		if (end - p < EXT_BLOCK_HEADER)
			return false;
		blen = get16(buf, p + 2);
		if (incl)
		{
			if (blen < EXT_BLOCK_HEADER)
				return false;
		}
		else
			blen += EXT_BLOCK_HEADER;
		if (blen > end - p)
			return false;
		p += blen;
	}
	return true;
}

/*
 * Read finger view v's extended data: its total length, then blocks whose
 * lengths must tile that area exactly. The standards and the samples
 * disagree on whether a block length counts its own 4-byte header (ANSI,
 * ISO 2011, SourceAFIS: yes; the ISO 2005 standard's sample: no), so either
 * reading is accepted when it accounts for every byte. Block contents are
 * skipped: no block changes the minutiae.
 */
static mcc_status
read_ext(rec_parse *ps, int v)
{
	size_t		at = ps->pos;
	size_t		total;

	if (!need(ps, 2, "extended data length of finger view %d", v))
		return ps->status;
	total = get16(ps->buf, at);
	ps->pos += 2;
	if (total == 0)
		return MCC_OK;
	if (!need(ps, total, "extended data of finger view %d", v))
		return ps->status;
	if (!blocks_tile(ps->buf, ps->pos, ps->pos + total, true) &&
		!blocks_tile(ps->buf, ps->pos, ps->pos + total, false))
		return fail(ps, MCC_ERR_SYNTAX,
					"the extended data blocks of finger view %d do not fill the %zu bytes given by its length at offset %zu",
					v, total, at);
	ps->pos += total;
	return MCC_OK;
}

/* Remember the header fields of view v if it is the one asked for. */
static void
note_view(rec_parse *ps, int v, int pos, int viewno, int imp, int quality)
{
	if (v != ps->want)
		return;
	ps->info.finger_position = pos;
	ps->info.view_number = viewno;
	ps->info.impression_type = imp;
	ps->info.finger_quality = quality;
}

/* A finger view of ISO 2005 / ANSI 2004 (image from the record header). */
static mcc_status
read_view_2004(rec_parse *ps, int v)
{
	const uint8_t *p = ps->buf + ps->pos;
	mcc_status	st;

	if (!need(ps, V2004_VIEW_HEADER, "header of finger view %d", v))
		return ps->status;
	note_view(ps, v, p[0], p[1] >> 4, p[1] & 0x0f, p[2]);
	ps->pos += V2004_VIEW_HEADER;
	if ((st = read_minutiae(ps, v, p[3], 6)) != MCC_OK)
		return st;
	return read_ext(ps, v);
}

/* A finger view of ANSI 2007 / 2009 / 2009 AM1 (each view has its image). */
static mcc_status
read_view_2009(rec_parse *ps, int v)
{
	const uint8_t *p = ps->buf + ps->pos;
	size_t		at = ps->pos;
	mcc_status	st;

	if (!need(ps, V2009_VIEW_HEADER, "header of finger view %d", v))
		return ps->status;
	note_view(ps, v, p[0], p[1], p[2], p[3]);
	if ((st = set_image(ps, at + 8, at + 12, get16(p, 8), get16(p, 10),
						get16(p, 12), get16(p, 14))) != MCC_OK)
		return st;
	ps->pos += V2009_VIEW_HEADER;
	if ((st = read_minutiae(ps, v, p[16], 6)) != MCC_OK)
		return st;
	return read_ext(ps, v);
}

/*
 * A finger representation of ISO 2011: its length field bounds everything
 * inside it, and its content must end exactly there.
 */
static mcc_status
read_rep_2011(rec_parse *ps, int v, bool certified)
{
	size_t		start = ps->pos;
	size_t		outer = ps->limit;
	size_t		replen;
	size_t		at;
	const uint8_t *p;
	int			nq,
				fquality,
				size;
	mcc_status	st;

	if (!need(ps, 4, "length of representation %d", v))
		return ps->status;
	replen = get32(ps->buf, start);
	if (replen < ISO2011_REP_MIN)
		return fail(ps, MCC_ERR_SYNTAX,
					"representation %d has length %zu at offset %zu, less than the %d-byte minimum",
					v, replen, start, ISO2011_REP_MIN);
	if (!need(ps, replen, "representation %d", v))
		return ps->status;
	ps->limit = start + replen;
	ps->pos = start + 4 + 9 + 1 + 2 + 2;	/* datetime, technology, vendor, type */
	if (!need(ps, 1, "quality block count of representation %d", v))
		return ps->status;
	nq = ps->buf[ps->pos++];
	if (!need(ps, (size_t) nq * 5, "%d quality blocks of representation %d", nq, v))
		return ps->status;
	/* the first quality block's score stands for the finger quality */
	fquality = nq > 0 ? ps->buf[ps->pos] : -1;
	ps->pos += (size_t) nq * 5;
	if (certified)
	{
		int			nc;

		if (!need(ps, 1, "certification block count of representation %d", v))
			return ps->status;
		nc = ps->buf[ps->pos++];
		if (!need(ps, (size_t) nc * 3, "%d certification blocks of representation %d", nc, v))
			return ps->status;
		ps->pos += (size_t) nc * 3;
	}
	at = ps->pos;
	if (!need(ps, 13, "finger header of representation %d", v))
		return ps->status;
	p = ps->buf + at;
	note_view(ps, v, p[0], p[1], p[6], fquality);
	if ((st = set_image(ps, at + 7, at + 2, get16(p, 7), get16(p, 9),
						get16(p, 2), get16(p, 4))) != MCC_OK)
		return st;
	size = p[11] >> 4;
	if (size != 5 && size != 6)
		return fail(ps, MCC_ERR_SYNTAX,
					"representation %d gives a minutia size of %d bytes at offset %zu, not 5 or 6",
					v, size, at + 11);
	ps->pos += 13;
	if ((st = read_minutiae(ps, v, p[12], size)) != MCC_OK)
		return st;
	if ((st = read_ext(ps, v)) != MCC_OK)
		return st;
	if (ps->pos != start + replen)
		return fail(ps, MCC_ERR_SYNTAX,
					"representation %d has length %zu at offset %zu but its content ends at offset %zu",
					v, replen, start, ps->pos);
	ps->limit = outer;
	return MCC_OK;
}

/*
 * Read the record length at the read position (`width` bytes) and check it
 * against the data and the header size.
 */
static mcc_status
read_reclen(rec_parse *ps, int width, size_t header)
{
	size_t		at = ps->pos;

	if (!need(ps, (size_t) width, "record length"))
		return ps->status;
	ps->reclen = width == 2 ? get16(ps->buf, at) : get32(ps->buf, at);
	ps->pos += (size_t) width;
	if (ps->reclen > ps->len)
		return fail(ps, MCC_ERR_TRUNCATED,
					"record length %u at offset %zu exceeds the %zu bytes of data",
					ps->reclen, at, ps->len);
	if (ps->reclen < header)
		return fail(ps, MCC_ERR_SYNTAX,
					"record length %u at offset %zu is less than the %zu-byte header",
					ps->reclen, at, header);
	return MCC_OK;
}

/* Record header of ISO 2005 and ANSI 2004, up to the first view. */
static mcc_status
read_header_2004(rec_parse *ps)
{
	size_t		header = ps->fmt == MCC_REC_ISO2005 ? ISO2005_HEADER : ANSI2004_HEADER;
	const uint8_t *p;
	size_t		at;
	mcc_status	st;

	ps->pos = 8;
	if (ps->fmt == MCC_REC_ISO2005)
		st = read_reclen(ps, 4, header);
	else if (ps->len >= 10 && get16(ps->buf, 8) == 0)
	{
		/* a 2-byte zero announces the 4-byte length of long ANSI records */
		ps->pos = 10;
		header += 4;
		st = read_reclen(ps, 4, header);
	}
	else
		st = read_reclen(ps, 2, header);
	if (st != MCC_OK)
		return st;
	if (ps->fmt == MCC_REC_ANSI2004)
		ps->pos += 4;			/* CBEFF product identifier */
	ps->pos += 2;				/* capture equipment */
	at = ps->pos;
	if (!need(ps, 10, "image size, resolution and view count"))
		return ps->status;
	p = ps->buf + at;
	if ((st = set_image(ps, at, at + 4, get16(p, 0), get16(p, 2),
						get16(p, 4), get16(p, 6))) != MCC_OK)
		return st;
	ps->n_views = p[8];
	ps->views_at = at + 8;
	ps->pos += 10;
	return MCC_OK;
}

/* Record header of ANSI 2007 / 2009 / 2009 AM1, up to the first view. */
static mcc_status
read_header_2009(rec_parse *ps)
{
	size_t		header = ps->fmt == MCC_REC_ANSI2007 ? ANSI2007_HEADER : ANSI2009_HEADER;
	mcc_status	st;

	ps->pos = 8;
	if ((st = read_reclen(ps, 4, header)) != MCC_OK)
		return st;
	if (!need(ps, header - 12, "record header"))
		return ps->status;
	ps->n_views = ps->buf[header - 2];
	ps->views_at = header - 2;
	ps->pos = header;
	return MCC_OK;
}

/* Record header of ISO 2011, up to the first representation. */
static mcc_status
read_header_2011(rec_parse *ps, bool *certified)
{
	mcc_status	st;
	int			cert;

	ps->pos = 8;
	if ((st = read_reclen(ps, 4, ISO2011_HEADER)) != MCC_OK)
		return st;
	if (!need(ps, 3, "representation count and certification flag"))
		return ps->status;
	ps->n_views = get16(ps->buf, 12);
	ps->views_at = 12;
	cert = ps->buf[14];
	if (cert > 1)
		return fail(ps, MCC_ERR_SYNTAX,
					"certification flag %d at offset 14 is not 0 or 1", cert);
	*certified = cert == 1;
	ps->pos = ISO2011_HEADER;
	return MCC_OK;
}

/*
 * Check where the views end against the record length. They must end
 * exactly there, with two tolerances seen in published records (see
 * docs/formats.md): the views may end before the record length (the bytes
 * in between are ignored) if there is at least one view, or the
 * record-length field may be short when the views account for the whole
 * buffer exactly.
 */
static mcc_status
check_end(rec_parse *ps)
{
	ps->end = ps->pos;
	if (ps->end == ps->reclen || ps->end == ps->len)
		return MCC_OK;
	if (ps->end < ps->reclen)
	{
		if (ps->n_views > 0)
			return MCC_OK;
		return fail(ps, MCC_ERR_SYNTAX,
					"the record length %u at offset 8 counts %zu bytes after a header announcing no finger views",
					ps->reclen, ps->reclen - ps->end);
	}
	return fail(ps, MCC_ERR_SYNTAX,
				"the finger views end at offset %zu, past the record length %u",
				ps->end, ps->reclen);
}

/* Parse a whole record under layout ps->fmt. */
static mcc_status
parse_record(rec_parse *ps)
{
	bool		certified = false;
	mcc_status	st;

	ps->limit = ps->len;
	ps->n_views = 0;
	switch (ps->fmt)
	{
		case MCC_REC_ISO2005:
		case MCC_REC_ANSI2004:
			st = read_header_2004(ps);
			break;
		case MCC_REC_ANSI2007:
		case MCC_REC_ANSI2009:
		case MCC_REC_ANSI2009AM1:
			st = read_header_2009(ps);
			break;
		case MCC_REC_ISO2011:
			st = read_header_2011(ps, &certified);
			break;
		default:
			return mcc_error_set(ps->err, MCC_ERR_INTERNAL, "unknown record layout %d", ps->fmt);
	}
	if (st != MCC_OK)
		return st;
	for (int v = 1; v <= ps->n_views; v++)
	{
		if (ps->fmt == MCC_REC_ISO2005 || ps->fmt == MCC_REC_ANSI2004)
			st = read_view_2004(ps, v);
		else if (ps->fmt == MCC_REC_ISO2011)
			st = read_rep_2011(ps, v, certified);
		else
			st = read_view_2009(ps, v);
		if (st != MCC_OK)
			return st;
	}
	return check_end(ps);
}

/*
 * Candidate layouts for the version string at buf[4..8), most likely first.
 * Returns the count, 0 for an unknown version.
 */
static int
candidates(const uint8_t *buf, size_t len, mcc_record_format *c)
{
	if (memcmp(buf + 4, " 20\0", 4) == 0)
	{
		/*
		 * ANSI's 2-byte length is >= 26; ISO's 4-byte length has a zero top
		 * half; ANSI's 6-byte form is 0:2 then a length >= 65536.
		 */
		bool		ansi_first = len >= 12 &&
			(get16(buf, 8) >= ANSI2004_HEADER ||
			 (get16(buf, 8) == 0 && get16(buf, 10) < ISO2005_HEADER));

		c[0] = ansi_first ? MCC_REC_ANSI2004 : MCC_REC_ISO2005;
		c[1] = ansi_first ? MCC_REC_ISO2005 : MCC_REC_ANSI2004;
		return 2;
	}
	if (memcmp(buf + 4, "020\0", 4) == 0)
	{
		/* the ANSI 378-2004 standard's own sample record */
		c[0] = MCC_REC_ANSI2004;
		return 1;
	}
	if (memcmp(buf + 4, "030\0", 4) == 0)
	{
		/*
		 * ANSI 2009 has its view count at 19 and a zero reserved byte at 20;
		 * the 2007 draft has them at 18 and 19. ISO 2011 holds the capture
		 * year there (0x07d5 for 2005, 0xffff when not given).
		 */
		bool		a2009 = len > 20 && buf[20] == 0 && buf[19] >= 1;
		bool		a2007 = !a2009 && len > 19 && buf[19] == 0 && buf[18] >= 1;

		c[0] = a2009 ? MCC_REC_ANSI2009 : a2007 ? MCC_REC_ANSI2007 : MCC_REC_ISO2011;
		c[1] = a2009 || a2007 ? MCC_REC_ISO2011 : MCC_REC_ANSI2009;
		c[2] = a2007 ? MCC_REC_ANSI2009 : MCC_REC_ANSI2007;
		return 3;
	}
	if (memcmp(buf + 4, "035\0", 4) == 0)
	{
		c[0] = MCC_REC_ANSI2009AM1;
		return 1;
	}
	return 0;
}

/* Describe the 4 version bytes for an error message (printable or hex). */
static void
version_text(const uint8_t *v, char *out, size_t cap)
{
	bool		printable = true;

	for (int i = 0; i < 3; i++)
		if (v[i] < 0x20 || v[i] > 0x7e || v[i] == '"' || v[i] == '\\')
			printable = false;
	if (printable && v[3] == 0)
		snprintf(out, cap, "\"%c%c%c\"", v[0], v[1], v[2]);
	else
		snprintf(out, cap, "0x%02x%02x%02x%02x", v[0], v[1], v[2], v[3]);
}

/*
 * Check the format identifier and version; fill the candidate layouts.
 */
static mcc_status
identify(const uint8_t *buf, size_t len, mcc_record_format *c, int *nc,
		 mcc_error *err)
{
	static const uint8_t magic[4] = {'F', 'M', 'R', 0};
	char		vtext[16];

	if (len < 4)
	{
		if (memcmp(buf, magic, len) == 0)
			return mcc_error_set(err, MCC_ERR_TRUNCATED,
								 "truncated finger minutiae record: %zu bytes, the format identifier alone takes 4",
								 len);
		return mcc_error_set(err, MCC_ERR_SYNTAX,
							 "not a finger minutiae record: the format identifier at offset 0 is not \"FMR\"");
	}
	if (memcmp(buf, magic, 4) != 0)
		return mcc_error_set(err, MCC_ERR_SYNTAX,
							 "not a finger minutiae record: the format identifier at offset 0 is not \"FMR\"");
	if (len < 8)
		return mcc_error_set(err, MCC_ERR_TRUNCATED,
							 "truncated finger minutiae record: the version at offset 4 needs 4 bytes, the data ends at offset %zu",
							 len);
	*nc = candidates(buf, len, c);
	if (*nc == 0)
	{
		version_text(buf + 4, vtext, sizeof(vtext));
		mcc_error_set(err, MCC_ERR_VERSION,
					  "unsupported finger minutiae record version %s at offset 4", vtext);
		return mcc_error_detail(err, "Supported versions are \" 20\" (ISO/IEC 19794-2:2005, ANSI/INCITS 378-2004), \"030\" (ISO/IEC 19794-2:2011, ANSI/INCITS 378-2009) and \"035\" (ANSI/INCITS 378-2009/AM1).");
	}
	return MCC_OK;
}

/* Run one candidate layout in check mode and rank it. */
static void
try_layout(const uint8_t *buf, size_t len, mcc_record_format fmt, rec_try *t)
{
	rec_parse	ps;

	memset(&ps, 0, sizeof(ps));
	ps.buf = buf;
	ps.len = len;
	ps.fmt = fmt;
	ps.want = 0;
	ps.err = &t->err;
	mcc_error_clear(&t->err);
	t->fmt = fmt;
	t->status = parse_record(&ps);
	t->exact = t->status == MCC_OK && ps.end == ps.reclen;
	t->end = ps.end;
}

/* Read finger view `view` of a record (mcc_iso.h). */
mcc_status
mcc_iso_read(const uint8_t *buf, size_t len, int view,
			 mcc_minutiae *out, mcc_record_info *info, mcc_error *err)
{
	mcc_record_format cand[MAX_CANDIDATES];
	rec_try		tries[MAX_CANDIDATES];
	int			nc = 0,
				best;
	rec_parse	ps;
	mcc_status	st;

	if (out == NULL || (buf == NULL && len > 0))
		return mcc_error_set(err, MCC_ERR_INTERNAL, "mcc_iso_read called without a buffer");
	if (len == 0)
		return mcc_error_set(err, MCC_ERR_TRUNCATED, "truncated finger minutiae record: the data is empty");
	if ((st = identify(buf, len, cand, &nc, err)) != MCC_OK)
		return st;

	/*
	 * A parse that ends exactly at the record length wins; else a parse
	 * within the tolerances, the one reaching furthest; else the error of
	 * the most plausible layout, the first candidate.
	 */
	best = -1;
	for (int i = 0; i < nc; i++)
	{
		try_layout(buf, len, cand[i], &tries[i]);
		if (tries[i].exact)
		{
			best = i;
			break;
		}
		if (tries[i].status == MCC_OK &&
			(best < 0 || tries[i].end > tries[best].end))
			best = i;
	}
	if (best < 0)
	{
		if (err)
			*err = tries[0].err;
		return tries[0].status;
	}

	memset(&ps, 0, sizeof(ps));
	ps.buf = buf;
	ps.len = len;
	ps.fmt = tries[best].fmt;
	ps.want = view;
	ps.out = out;
	ps.err = err;
	memset(out, 0, offsetof(mcc_minutiae, m));
	if ((st = parse_record(&ps)) != MCC_OK)
		return st;				/* cannot happen: the check pass succeeded */
	if (view < 1 || view > ps.n_views)
	{
		mcc_error_set(err, MCC_ERR_VALUE, "%s record has no finger view %d",
					  mcc_record_format_name(ps.fmt), view);
		return mcc_error_detail(err, "The view count at offset %zu says %d finger view%s, counted from 1.",
								ps.views_at, ps.n_views, ps.n_views == 1 ? "" : "s");
	}
	if (info)
	{
		*info = ps.info;
		info->format = ps.fmt;
		info->n_views = ps.n_views;
	}
	return MCC_OK;
}
