/*
 * mcc_iso.h: finger minutiae records, ISO/IEC 19794-2 and ANSI/INCITS 378.
 *
 * Read: ISO/IEC 19794-2:2005 ("FMR\0" " 20\0"), ISO/IEC 19794-2:2011
 * ("FMR\0" "030\0"), ANSI/INCITS 378-2004 (" 20\0", and the "020\0" of the
 * standard's own sample), ANSI/INCITS 378-2009 ("030\0") and 2009/AM1
 * ("035\0"); the pre-2009 "030" layout without the certification flag is
 * told apart by its lengths. Versions that share a version string are told
 * apart by which layout's length fields are consistent with the data.
 * Trailing bytes after the record length (zero padding of SDK buffers) are
 * ignored; a record shorter than its length field is MCC_ERR_TRUNCATED.
 * Two record-length mismatches of published records are tolerated
 * (docs/formats.md §2.5).
 * Extended data blocks are skipped after their lengths are checked.
 *
 * Coordinates and angles are converted to the conventions of
 * mcc_minutiae.h: ISO angles are in units of 360/256 degrees, ANSI angles in
 * units of 2 degrees, both counter-clockwise from the x axis. Resolution in
 * pixels per centimetre becomes dpi = round(ppcm * 2.54).
 *
 * Write: ISO/IEC 19794-2:2005 and :2011, ANSI/INCITS 378-2004 and -2009,
 * one finger view (docs/formats.md §2.8 gives the fields written).
 */
#ifndef MCC_ISO_H
#define MCC_ISO_H

#include <stddef.h>
#include <stdint.h>

#include "mcc_error.h"
#include "mcc_minutiae.h"

typedef enum mcc_record_format
{
	MCC_REC_UNKNOWN = 0,
	MCC_REC_ISO2005,
	MCC_REC_ISO2011,
	MCC_REC_ANSI2004,
	MCC_REC_ANSI2007,			/* "030" without the certification flag */
	MCC_REC_ANSI2009,
	MCC_REC_ANSI2009AM1
} mcc_record_format;

typedef struct mcc_record_info
{
	mcc_record_format format;
	int			n_views;		/* finger views in the record */
	int			finger_position;	/* of the view returned */
	int			view_number;	/* the view's own view number field */
	int			impression_type;
	int			finger_quality;
} mcc_record_info;

/* Human name of a format ("ISO/IEC 19794-2:2005", ...). */
const char *mcc_record_format_name(mcc_record_format f);

/*
 * Parse a record and return the minutiae of finger view number `view`,
 * counted from 1 in record order. Never reads outside [buf, buf+len).
 * info may be NULL.
 */
mcc_status	mcc_iso_read(const uint8_t *buf, size_t len, int view,
						 mcc_minutiae *out, mcc_record_info *info,
						 mcc_error *err);

/*
 * Write ms as a one-view record of format fmt (MCC_REC_ISO2005,
 * MCC_REC_ISO2011, MCC_REC_ANSI2004 or MCC_REC_ANSI2009; another is
 * MCC_ERR_VERSION). Two-call sizing: out == NULL sets *len to the size.
 * Angles are rounded to the format's unit.
 */
mcc_status	mcc_iso_write(const mcc_minutiae *ms, mcc_record_format fmt,
						  uint8_t *out, size_t *len, mcc_error *err);

#endif							/* MCC_ISO_H */
