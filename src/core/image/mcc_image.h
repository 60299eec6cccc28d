/*
 * mcc_image.h: 8-bit grayscale images, shared by every image feature
 * (SAD search, elastic matching).
 *
 * An image is width x height pixels, one byte each (0 black .. 255 white),
 * rows top to bottom, `stride` bytes from one row to the next. The pixels
 * belong to whoever allocated them: decoders fill a caller's buffer, so the
 * PostgreSQL layer can palloc it and an error never leaks memory.
 *
 * Input formats (docs/images.md):
 *   - binary PGM (P5), maxval 1..255, comments allowed in the header; the
 *     raster must be exactly width * height bytes, each <= maxval; values
 *     are scaled to 0..255 when maxval < 255 (v * 255 / maxval, rounded);
 *   - PNG (libpng): grayscale of 1, 2, 4 or 8 bits (scaled to 0..255 by
 *     libpng's bit replication), a palette whose entries are all gray,
 *     gray + alpha of 8 bits when every pixel is opaque. Interlacing is
 *     fine; a tRNS chunk is ignored; data after IEND is an error.
 * Everything else (16-bit samples, color, transparency, other formats) is
 * refused with a message that says what was found.
 *
 * Limits: each side 1..MCC_IMAGE_MAX_SIDE, at most MCC_IMAGE_MAX_PIXELS
 * pixels (MCC_ERR_LIMIT), checked from the header before any pixel is
 * decoded.
 *
 * Error statuses: MCC_ERR_SYNTAX (malformed), MCC_ERR_TRUNCATED (the data
 * ends early or is empty), MCC_ERR_VALUE (well formed but not 8-bit
 * grayscale, or an unsupported format), MCC_ERR_LIMIT (too large),
 * MCC_ERR_MEMORY (libpng's own allocations failed).
 */
#ifndef MCC_IMAGE_H
#define MCC_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "mcc_error.h"

#define MCC_IMAGE_MAX_SIDE		16384
#define MCC_IMAGE_MAX_PIXELS	(64u * 1024u * 1024u)	/* 64 Mpixels, 64 MiB */

typedef struct mcc_image
{
	uint32_t	width;
	uint32_t	height;
	size_t		stride;			/* bytes from a row to the next, >= width */
	uint8_t    *pixels;			/* row 0 first; not owned */
} mcc_image;

typedef enum mcc_image_format
{
	MCC_IMAGE_PGM = 1,			/* binary PGM (P5) */
	MCC_IMAGE_PNG = 2
} mcc_image_format;

/* What the header of an encoded image says. */
typedef struct mcc_image_info
{
	mcc_image_format format;
	uint32_t	width;
	uint32_t	height;
	int			bit_depth;		/* bits per stored sample: 1..8 */
	int			maxval;			/* PGM maxval; (1 << bit_depth) - 1 for PNG */
} mcc_image_info;

/* The format's name as SQL shows it: "pgm" or "png". */
const char *mcc_image_format_name(mcc_image_format f);

/* Check a size against the limits: MCC_ERR_VALUE for 0, MCC_ERR_LIMIT above. */
mcc_status	mcc_image_check_size(uint64_t width, uint64_t height, mcc_error *err);

/*
 * Check the sides of a w x h fingerprint against what an algorithm takes:
 * MCC_ERR_VALUE "fingerprint image WxH is too small" below min_side,
 * MCC_ERR_LIMIT "... is too large" above max_side.
 */
mcc_status	mcc_image_check_sides(uint32_t w, uint32_t h, int min_side, int max_side,
								  mcc_error *err);

/*
 * Read the header of a PGM or PNG image: format, size and depth, with the
 * size limits and the grayscale rules applied. It does not decode (or
 * validate) the pixels: mcc_image_decode() does.
 */
mcc_status	mcc_image_probe(const uint8_t *data, size_t len, mcc_image_info *info,
							mcc_error *err);

/*
 * Decode a PGM or PNG image into img->pixels, which the caller allocated
 * with img->stride >= info.width and stride * height bytes (info from
 * mcc_image_probe() of the same data). Sets img->width and img->height.
 * Validates the whole image; on error the pixels are undefined.
 */
mcc_status	mcc_image_decode(const uint8_t *data, size_t len, mcc_image *img,
							 mcc_error *err);

/* Bytes of the binary PGM (maxval 255) of a width x height image. */
size_t		mcc_image_pgm_size(uint32_t width, uint32_t height);

/*
 * Write img as a binary PGM with maxval 255 into out, which has room for
 * mcc_image_pgm_size() bytes; returns the bytes written.
 */
size_t		mcc_image_write_pgm(const mcc_image *img, uint8_t *out);

/*
 * A view of the w x h rectangle of img whose top-left pixel is (x, y): no
 * copy, same stride. MCC_ERR_VALUE if the rectangle is empty or leaves img.
 */
mcc_status	mcc_image_crop(const mcc_image *img, int64_t x, int64_t y, int64_t w,
						   int64_t h, mcc_image *out, mcc_error *err);

#endif							/* MCC_IMAGE_H */
