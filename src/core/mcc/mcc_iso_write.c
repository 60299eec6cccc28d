/*
 * mcc_iso_write.c: writing one-view finger minutiae records, ISO/IEC
 * 19794-2:2005 and :2011, ANSI/INCITS 378-2004 and -2009 (mcc_iso.h; the
 * layouts are in mcc_iso_int.h).
 */
#include "mcc_iso_int.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

/*
 * Writing. Every written record holds one finger view; the fields mcc does
 * not keep are written as "not given" in the way of each edition:
 * ISO 2005 / ANSI 2004 use 0; ANSI 2009 uses 254 for qualities, the IBIA
 * "unknown" organisation (0x0103) for the CBEFF owner and the quality
 * algorithm's vendor, and algorithm 0x0001; ISO 2011 uses 0xff for every
 * byte of the capture date and time, 0 for the device fields and no quality
 * or certification blocks. Minutia quality 0 ("not given" in mcc, see
 * mcc_minutiae.h) is 254 ("not reported") in ANSI 2009 and ISO 2011, which
 * the reader turns back into 0.
 */
#define IBIA_UNKNOWN_ORG 0x0103
#define IBIA_UNKNOWN_ALGORITHM 0x0001
#define QUALITY_NOT_REPORTED 254
#define ISO2011_DATETIME 9
#define ENDING_VALLEY_BIFURCATION 0 /* ISO 2011: ISO 2005's ridge ending point */

/* Bytes of a one-view record of fmt with n minutiae. */
static size_t
record_size(mcc_record_format fmt, int n)
{
	size_t		minutiae = 6 * (size_t) n + 2;	/* and the empty extended data */

	switch (fmt)
	{
		case MCC_REC_ISO2005:
			return ISO2005_HEADER + V2004_VIEW_HEADER + minutiae;
		case MCC_REC_ANSI2004:
			return ANSI2004_HEADER + V2004_VIEW_HEADER + minutiae;
		case MCC_REC_ANSI2009:
			return ANSI2009_HEADER + V2009_VIEW_HEADER + minutiae;
		case MCC_REC_ISO2011:
			return ISO2011_HEADER + ISO2011_REP_MIN - 2 + minutiae;
		default:
			return 0;
	}
}

/*
 * Minutia quality as fmt stores it: 0 ("not given") is "not reported" in
 * the editions that have that value.
 */
static uint8_t
quality_out(mcc_record_format fmt, uint8_t q)
{
	bool		reported = fmt == MCC_REC_ISO2005 || fmt == MCC_REC_ANSI2004;

	return (q == 0 && !reported) ? QUALITY_NOT_REPORTED : q;
}

/*
 * Write the minutiae (6 bytes each) and an empty extended data area at p;
 * returns the end. Angles are rounded to the format's unit (nearest; a
 * value that rounds to a full turn wraps to 0).
 */
static uint8_t *
write_minutiae(const mcc_minutiae *ms, mcc_record_format fmt, uint8_t *p)
{
	for (int i = 0; i < ms->count; i++)
	{
		const mcc_minutia *m = &ms->m[i];
		unsigned	a;

		if (angle_units(fmt) == 180)
		{
			/* 2-degree units, nearest, 180 wraps to 0 */
			long		q = lrint(m->theta * (180.0 / MCC_TWO_PI));

			a = (unsigned) (((q % 180) + 180) % 180);
		}
		else
			a = mcc_angle_to_byte(m->theta);
		put16(p, ((unsigned) m->type << 14) | (unsigned) m->x);
		put16(p + 2, (unsigned) m->y);
		p[4] = (uint8_t) a;
		p[5] = quality_out(fmt, m->quality);
		p += 6;
	}
	put16(p, 0);				/* no extended data */
	return p + 2;
}

/* Image size and resolution as the 2004 header and the 2009 view hold them. */
static uint8_t *
write_image(const mcc_minutiae *ms, unsigned ppcm, uint8_t *p)
{
	put16(p, ms->width);
	put16(p + 2, ms->height);
	put16(p + 4, ppcm);
	put16(p + 6, ppcm);
	return p + 8;
}

/* ISO 2005 or ANSI 2004 (same view layout, different header). */
static uint8_t *
write_2004(const mcc_minutiae *ms, mcc_record_format fmt, unsigned ppcm,
		   size_t size, uint8_t *p)
{
	memcpy(p, "FMR\0 20\0", 8);
	p += 8;
	if (fmt == MCC_REC_ANSI2004)
	{
		put16(p, (unsigned) size);	/* at most 26 + 6 + 255 * 6 < 65536 */
		put32(p + 2, 0);		/* CBEFF product identifier: not given */
		p += 6;
	}
	else
	{
		put32(p, (uint32_t) size);
		p += 4;
	}
	put16(p, 0);				/* capture equipment: not given */
	p = write_image(ms, ppcm, p + 2);
	p[0] = 1;					/* one finger view */
	p[1] = 0;
	p += 2;
	p[0] = 0;					/* finger position unknown */
	p[1] = 0;					/* view 0, live-scan plain */
	p[2] = 0;					/* finger quality not given */
	p[3] = (uint8_t) ms->count;
	return p + V2004_VIEW_HEADER;
}

/* ANSI/INCITS 378-2009: the header, then one view with its own image. */
static uint8_t *
write_ansi2009(const mcc_minutiae *ms, unsigned ppcm, size_t size, uint8_t *p)
{
	memcpy(p, "FMR\0" "030\0", 8);
	put32(p + 8, (uint32_t) size);
	put16(p + 12, IBIA_UNKNOWN_ORG);	/* CBEFF product id: owner, type 0 */
	put16(p + 14, 0);
	p[16] = 0;					/* capture device not certified */
	put16(p + 17, 0);			/* capture device id: not given */
	p[19] = 1;					/* one finger view */
	p[20] = 0;
	p += ANSI2009_HEADER;
	p[0] = 0;					/* finger position unknown */
	p[1] = 0;					/* view number */
	p[2] = 0;					/* live-scan plain */
	p[3] = QUALITY_NOT_REPORTED;	/* finger quality */
	put16(p + 4, IBIA_UNKNOWN_ORG);	/* quality algorithm vendor */
	put16(p + 6, IBIA_UNKNOWN_ALGORITHM);
	p = write_image(ms, ppcm, p + 8);
	p[0] = (uint8_t) ms->count;
	return p + 1;
}

/* ISO/IEC 19794-2:2011: the header, then one finger representation. */
static uint8_t *
write_iso2011(const mcc_minutiae *ms, unsigned ppcm, size_t size, uint8_t *p)
{
	memcpy(p, "FMR\0" "030\0", 8);
	put32(p + 8, (uint32_t) size);
	put16(p + 12, 1);			/* one representation */
	p[14] = 0;					/* no certification blocks */
	p += ISO2011_HEADER;
	put32(p, (uint32_t) (size - ISO2011_HEADER));	/* representation length */
	memset(p + 4, 0xff, ISO2011_DATETIME);	/* capture time not given */
	p += 4 + ISO2011_DATETIME;
	p[0] = 0;					/* capture technology unknown */
	put16(p + 1, 0);			/* capture device vendor: not given */
	put16(p + 3, 0);			/* capture device type: not given */
	p[5] = 0;					/* no quality blocks */
	p += 6;
	p[0] = 0;					/* finger position unknown */
	p[1] = 0;					/* view number */
	put16(p + 2, ppcm);
	put16(p + 4, ppcm);
	p[6] = 0;					/* live-scan plain */
	put16(p + 7, ms->width);
	put16(p + 9, ms->height);
	p[11] = (6u << 4) | ENDING_VALLEY_BIFURCATION;	/* 6-byte minutiae */
	p[12] = (uint8_t) ms->count;
	return p + 13;
}

/* Serialize one view in fmt; out has room for `size` bytes. */
static void
write_record(const mcc_minutiae *ms, mcc_record_format fmt, uint8_t *out,
			 size_t size)
{
	unsigned	ppcm = (unsigned) ((ms->dpi * 100u + 127u) / 254u);	/* round(dpi / 2.54) */
	uint8_t    *p;

	if (fmt == MCC_REC_ANSI2009)
		p = write_ansi2009(ms, ppcm, size, out);
	else if (fmt == MCC_REC_ISO2011)
		p = write_iso2011(ms, ppcm, size, out);
	else
		p = write_2004(ms, fmt, ppcm, size, out);
	write_minutiae(ms, fmt, p);
}

/* Write a one-view record (mcc_iso.h). */
mcc_status
mcc_iso_write(const mcc_minutiae *ms, mcc_record_format fmt,
			  uint8_t *out, size_t *len, mcc_error *err)
{
	size_t		size;
	mcc_status	st;

	if (ms == NULL || len == NULL)
		return mcc_error_set(err, MCC_ERR_INTERNAL, "mcc_iso_write called without a template or length");
	size = record_size(fmt, ms->count);
	if (size == 0)
	{
		mcc_error_set(err, MCC_ERR_VERSION, "cannot write %s records",
					  mcc_record_format_name(fmt));
		return mcc_error_detail(err, "Records are written as ISO/IEC 19794-2:2005 or :2011, or ANSI/INCITS 378-2004 or -2009.");
	}
	if ((st = mcc_minutiae_validate(ms, err)) != MCC_OK)
		return st;
	if (ms->count > MAX_VIEW_MINUTIAE)
	{
		mcc_error_set(err, MCC_ERR_LIMIT, "too many minutiae for a %s record: %u",
					  mcc_record_format_name(fmt), ms->count);
		return mcc_error_detail(err, "A finger view holds at most %d minutiae.",
								MAX_VIEW_MINUTIAE);
	}
	if (out == NULL)
	{
		*len = size;
		return MCC_OK;
	}
	if (*len < size)
	{
		mcc_error_set(err, MCC_ERR_INTERNAL,
					  "output buffer of %zu bytes is too small for a %zu-byte record",
					  *len, size);
		*len = size;
		return MCC_ERR_INTERNAL;
	}
	write_record(ms, fmt, out, size);
	*len = size;
	return MCC_OK;
}
