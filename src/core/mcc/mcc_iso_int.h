/*
 * mcc_iso_int.h: what the reader (mcc_iso_read.c) and the writer
 * (mcc_iso_write.c) of finger minutiae records share: the fixed sizes of
 * each layout, big-endian access and angle units. The public interface is
 * mcc_iso.h.
 *
 * Layouts (big-endian; offsets from the record start; docs/formats.md has
 * the full tables):
 *
 *  ISO 2005   "FMR\0" " 20\0" len:4 equip:2 w:2 h:2 xres:2 yres:2 views:1 0:1
 *  ANSI 2004  "FMR\0" " 20\0" len:2 (or 0:2 len:4) cbeff:4 equip:2 w h xres
 *             yres views:1 0:1
 *     view:   pos:1 viewno<<4|imp:1 quality:1 count:1 minutia*6 ext
 *  ANSI 2007  "FMR\0" "030\0" len:4 cbeff:4 equip:2 views:1 0:1
 *  ANSI 2009  "FMR\0" "030\0"/"035\0" len:4 cbeff:4 cert:1 device:2 views:1 0:1
 *     view:   pos:1 viewno:1 imp:1 quality:1 qalg:4 w:2 h:2 xres:2 yres:2
 *             count:1 minutia*6 ext
 *  ISO 2011   "FMR\0" "030\0" len:4 reps:2 cert:1
 *     rep:    replen:4 datetime:9 tech:1 vendor:2 type:2 nq:1 q*5 [nc:1 c*3]
 *             pos:1 viewno:1 xres:2 yres:2 imp:1 w:2 h:2 size<<4|end:1
 *             count:1 minutia*(5|6) ext
 *  minutia:   type:2|x:14 reserved:2|y:14 angle:1 [quality:1]
 *  ext:       total:2, then blocks type:2 length:2 data
 */
#ifndef MCC_ISO_INT_H
#define MCC_ISO_INT_H

#include <stdint.h>
#include <stddef.h>

#include "mcc_iso.h"

#define ISO2005_HEADER	24
#define ANSI2004_HEADER 26
#define ANSI2007_HEADER 20
#define ANSI2009_HEADER 21
#define ISO2011_HEADER	15
#define V2004_VIEW_HEADER 4
#define V2009_VIEW_HEADER 17
#define ISO2011_REP_MIN 34		/* representation header without blocks */
#define EXT_BLOCK_HEADER 4
#define MAX_CANDIDATES	3
#define MAX_VIEW_MINUTIAE 255	/* the count field is one byte */

/* Big-endian 16-bit value at buf[off]; the caller checked the bounds. */
static inline uint16_t
get16(const uint8_t *buf, size_t off)
{
	return (uint16_t) ((buf[off] << 8) | buf[off + 1]);
}

/* Big-endian 32-bit value at buf[off]; the caller checked the bounds. */
static inline uint32_t
get32(const uint8_t *buf, size_t off)
{
	return ((uint32_t) buf[off] << 24) | ((uint32_t) buf[off + 1] << 16) |
		((uint32_t) buf[off + 2] << 8) | (uint32_t) buf[off + 3];
}

/* Store a big-endian 16-bit value. */
static inline void
put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t) (v >> 8);
	p[1] = (uint8_t) v;
}

/* Store a big-endian 32-bit value. */
static inline void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t) (v >> 24);
	p[1] = (uint8_t) (v >> 16);
	p[2] = (uint8_t) (v >> 8);
	p[3] = (uint8_t) v;
}

/* Angle units of a format: 256 per turn (ISO) or 180 (ANSI, 2 degrees). */
static inline int
angle_units(mcc_record_format f)
{
	return (f == MCC_REC_ISO2005 || f == MCC_REC_ISO2011) ? 256 : 180;
}

#endif							/* MCC_ISO_INT_H */
