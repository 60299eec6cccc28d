/*
 * mcc_template.h: the stored template format (the body of type mcc_template).
 *
 * A template is one contiguous, versioned blob: minutiae plus the cylinders
 * derived from them. The first 4 bytes belong to PostgreSQL's varlena header
 * and are never read or written here, so that offsets below are offsets from
 * the start of the varlena and 8-byte alignment of the cylinder bits holds
 * when the datum is 8-aligned (the type is declared ALIGNMENT = double).
 * Multi-byte fields are in host byte order (send/recv define the portable
 * wire form). Layout of format version 1:
 *
 *   off  size  field
 *     0     4  varlena header (PostgreSQL's)
 *     4     1  format version (MCC_TEMPLATE_VERSION)
 *     5     1  profile id (mcc_profile.h)
 *     6     2  flags (0)
 *     8     2  width       10  2  height      12  2  dpi
 *    14     2  minutiae count n_m
 *    16     2  cylinder count n_c (0..MCC_MAX_CYL)
 *    18     2  uint64 words per cylinder (mcc_profile_cyl_words)
 *    20     4  reserved (0)
 *    24        n_m minutiae records of 12 bytes:
 *                int16 x, int16 y, float theta, uint8 type, uint8 quality,
 *                uint16 reserved (0)
 *     B        cylinder bits, B = align8(24 + 12 n_m): n_c * words uint64,
 *              value bits first then (profile with masks) validity bits; bit
 *              b of a vector is bit (b % 64) of word (b / 64), layer-major
 *              (section k outer, disc cell inner in (i, j) order)
 *     C        cylinder metadata, C = B + 8 * n_c * words: n_c records of
 *              4 bytes: uint16 popcount of the value bits, uint8 angle
 *              (z = 256), uint8 index of the cylinder's minutia
 *   end        C + 4 n_c = total size
 *
 * Cylinders are stored sorted by angle (ties by minutia index), the order
 * paper 000 Sec. 4.6 uses inside each gallery template.
 */
#ifndef MCC_TEMPLATE_H
#define MCC_TEMPLATE_H

#include <stddef.h>
#include <stdint.h>

#include "mcc_error.h"
#include "mcc_minutiae.h"
#include "mcc_profile.h"

#define MCC_TEMPLATE_VERSION	1
#define MCC_TEMPLATE_HDRSZ		24
#define MCC_MINUTIA_RECSZ		12
#define MCC_CYLMETA_RECSZ		4

/* A read-only, validated view of a stored template. */
typedef struct mcc_template_view
{
	const uint8_t *base;		/* start of the varlena */
	size_t		size;			/* total size in bytes */
	const mcc_profile *profile;
	uint16_t	width;
	uint16_t	height;
	uint16_t	dpi;
	int			n_min;
	int			n_cyl;
	int			words;			/* uint64 words per cylinder */
	const uint8_t *minutiae;	/* n_min records */
	const uint8_t *bits;		/* n_cyl * words uint64, maybe unaligned */
	const uint8_t *meta;		/* n_cyl records */
} mcc_template_view;

/* Total stored size of a template. */
size_t		mcc_template_size(const mcc_profile *p, int n_min, int n_cyl);

/*
 * Build a template from minutiae: validate them, create the cylinders with
 * profile p (mcc_cylinder.h) and serialize. The caller supplies the output
 * buffer: call with out == NULL to learn the size needed in *size, then again
 * with a buffer of at least that size (its first 4 bytes are left alone).
 * Fails with MCC_ERR_VALUE on an empty minutiae set.
 */
mcc_status	mcc_template_build(const mcc_minutiae *ms, const mcc_profile *p,
							   uint8_t *out, size_t *size, mcc_error *err);

/*
 * Check a stored blob (version, profile, counts, sizes, minutia ranges,
 * cylinder metadata) and fill a view. Never reads outside [base, base+size).
 */
mcc_status	mcc_template_open(const uint8_t *base, size_t size,
							  mcc_template_view *v, mcc_error *err);

/*
 * Check only the header and the size of a blob and fill a view: for a blob
 * that mcc_template_open accepted before and that was copied or rebuilt
 * from its parts since (the matcher engine rebuilds cached templates to
 * refine them); its minutiae and cylinders are trusted.
 */
mcc_status	mcc_template_open_header(const uint8_t *base, size_t size,
									 mcc_template_view *v, mcc_error *err);

/*
 * Check a stored blob as far as a scan relies on it (mcc_soa_append,
 * mcc_soa_scan): the header, the size and each cylinder's popcount within
 * the profile's bits. For values that mcc_template_open accepted when they
 * were stored (a table's templates); a scan then never reads out of bounds,
 * and a value altered on disk since scores as its bits say.
 */
mcc_status	mcc_template_open_stored(const uint8_t *base, size_t size,
									 mcc_template_view *v, mcc_error *err);

/* Decode minutia i of a view. */
void		mcc_template_minutia(const mcc_template_view *v, int i, mcc_minutia *m);

/* Copy all minutiae of a view, with the image header, into ms. */
void		mcc_template_minutiae(const mcc_template_view *v, mcc_minutiae *ms);

/* Cylinder c's words (value bits, then masks) copied into out[v->words]. */
void		mcc_template_cyl_bits(const mcc_template_view *v, int c, uint64_t *out);

/* Cylinder c's metadata. */
int			mcc_template_cyl_popcount(const mcc_template_view *v, int c);
int			mcc_template_cyl_angle(const mcc_template_view *v, int c);
int			mcc_template_cyl_minutia(const mcc_template_view *v, int c);

#endif							/* MCC_TEMPLATE_H */
