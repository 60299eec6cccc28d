/*
 * mcc_image.c: format detection, the binary PGM reader and writer, size
 * limits and crops (mcc_image.h). PNG lives in mcc_image_png.c.
 */
#include "mcc_image.h"

#include <stdio.h>
#include <string.h>

#include "mcc_image_int.h"

/* A parsed PGM header: where the raster starts. */
typedef struct pgm_header
{
	uint32_t	width;
	uint32_t	height;
	uint32_t	maxval;
	size_t		raster;			/* offset of the first pixel */
} pgm_header;

/* The format's SQL name. */
const char *
mcc_image_format_name(mcc_image_format f)
{
	return f == MCC_IMAGE_PNG ? "png" : "pgm";
}

/* Size against the limits; 0 is a value error, too large a limit error. */
mcc_status
mcc_image_check_size(uint64_t width, uint64_t height, mcc_error *err)
{
	if (width == 0 || height == 0)
		return mcc_error_set(err, MCC_ERR_VALUE, "image is empty"),
			mcc_error_detail(err, "Its size is %llu x %llu pixels.",
							 (unsigned long long) width, (unsigned long long) height);
	if (width > MCC_IMAGE_MAX_SIDE || height > MCC_IMAGE_MAX_SIDE ||
		width * height > MCC_IMAGE_MAX_PIXELS)
		return mcc_error_set(err, MCC_ERR_LIMIT, "image is too large: %llu x %llu pixels",
							 (unsigned long long) width, (unsigned long long) height),
			mcc_error_detail(err, "Images may have at most %u pixels per side and %u pixels in all.",
							 (unsigned) MCC_IMAGE_MAX_SIDE, (unsigned) MCC_IMAGE_MAX_PIXELS);
	return MCC_OK;
}

/* A fingerprint's sides against an algorithm's limits (mcc_image.h). */
mcc_status
mcc_image_check_sides(uint32_t w, uint32_t h, int min_side, int max_side, mcc_error *err)
{
	if (w < (uint32_t) min_side || h < (uint32_t) min_side)
		return mcc_error_set(err, MCC_ERR_VALUE, "fingerprint image %ux%u is too small", w, h),
			mcc_error_detail(err, "Each side must be at least %d pixels.", min_side);
	if (w > (uint32_t) max_side || h > (uint32_t) max_side)
		return mcc_error_set(err, MCC_ERR_LIMIT, "fingerprint image %ux%u is too large", w, h),
			mcc_error_detail(err, "Each side must be at most %d pixels.", max_side);
	return MCC_OK;
}

/* Netpbm whitespace: blank, tab, CR, LF, vertical tab, form feed. */
static int
pgm_space(uint8_t c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

/* Skip whitespace and comments ("#" to the end of the line) from *pos. */
static void
pgm_skip(const uint8_t *d, size_t len, size_t *pos)
{
	while (*pos < len)
	{
		if (pgm_space(d[*pos]))
			(*pos)++;
		else if (d[*pos] == '#')
		{
			while (*pos < len && d[*pos] != '\n' && d[*pos] != '\r')
				(*pos)++;
		}
		else
			break;
	}
}

/*
 * Read the decimal header field `what` at *pos (after whitespace and
 * comments). More than 9 digits is reported as too large a value.
 */
static mcc_status
pgm_number(const uint8_t *d, size_t len, size_t *pos, const char *what,
		   uint32_t *out, mcc_error *err)
{
	uint32_t	v = 0;
	int			digits = 0;

	pgm_skip(d, len, pos);
	if (*pos >= len)
		return mcc_error_set(err, MCC_ERR_TRUNCATED, "PGM header is truncated"),
			mcc_error_detail(err, "The data ends before the %s.", what);
	while (*pos < len && d[*pos] >= '0' && d[*pos] <= '9')
	{
		if (++digits > 9)
			return mcc_error_set(err, MCC_ERR_LIMIT, "PGM %s is too large", what),
				mcc_error_detail(err, "It has more than 9 digits.");
		v = v * 10 + (uint32_t) (d[*pos] - '0');
		(*pos)++;
	}
	if (digits == 0)
		return mcc_error_set(err, MCC_ERR_SYNTAX, "invalid PGM header: expected the %s", what),
			mcc_error_detail(err, "Found byte 0x%02x at offset %zu.", d[*pos], *pos);
	if (*pos >= len)
		return mcc_error_set(err, MCC_ERR_TRUNCATED, "PGM header is truncated"),
			mcc_error_detail(err, "The data ends after the %s.", what);
	if (!pgm_space(d[*pos]) && d[*pos] != '#')
		return mcc_error_set(err, MCC_ERR_SYNTAX, "invalid PGM header: bad character after the %s", what),
			mcc_error_detail(err, "Found byte 0x%02x at offset %zu.", d[*pos], *pos);
	*out = v;
	return MCC_OK;
}

/* Parse "P5 width height maxval" and the one whitespace byte after it. */
static mcc_status
pgm_header_read(const uint8_t *d, size_t len, pgm_header *h, mcc_error *err)
{
	size_t		pos = 2;
	mcc_status	st;

	if (len <= 2)
		return mcc_error_set(err, MCC_ERR_TRUNCATED, "PGM header is truncated"),
			mcc_error_detail(err, "The data ends after the magic number.");
	if (!pgm_space(d[2]) && d[2] != '#')
		return mcc_error_set(err, MCC_ERR_SYNTAX, "invalid PGM header: bad character after the magic number"),
			mcc_error_detail(err, "Found byte 0x%02x at offset 2.", d[2]);
	if ((st = pgm_number(d, len, &pos, "width", &h->width, err)) != MCC_OK ||
		(st = pgm_number(d, len, &pos, "height", &h->height, err)) != MCC_OK ||
		(st = pgm_number(d, len, &pos, "maxval", &h->maxval, err)) != MCC_OK)
		return st;
	if (h->width == 0 || h->height == 0)
		return mcc_error_set(err, MCC_ERR_SYNTAX, "invalid PGM header: size %u x %u",
							 h->width, h->height),
			mcc_error_detail(err, "Width and height must be at least 1.");
	if (h->maxval == 0 || h->maxval > 65535)
		return mcc_error_set(err, MCC_ERR_SYNTAX, "invalid PGM header: maxval %u", h->maxval),
			mcc_error_detail(err, "The maxval must be between 1 and 65535.");
	if (h->maxval > 255)
		return mcc_error_set(err, MCC_ERR_VALUE, "16-bit PGM images are not supported"),
			mcc_error_detail(err, "The maxval is %u; only 8-bit images (maxval at most 255) are accepted.",
							 h->maxval);
	/* a comment may end the header: its end of line is the delimiter */
	if (d[pos] == '#')
	{
		while (pos < len && d[pos] != '\n' && d[pos] != '\r')
			pos++;
		if (pos >= len)
			return mcc_error_set(err, MCC_ERR_TRUNCATED, "PGM header is truncated"),
				mcc_error_detail(err, "The data ends inside a comment.");
	}
	h->raster = pos + 1;
	return mcc_image_check_size(h->width, h->height, err);
}

/* Format of the data by its first bytes; anything unsupported is an error. */
static mcc_status
detect(const uint8_t *d, size_t len, mcc_image_format *f, mcc_error *err)
{
	if (len == 0)
		return mcc_error_set(err, MCC_ERR_TRUNCATED, "image data is empty");
	if (mcc_png_is_png(d, len))
	{
		*f = MCC_IMAGE_PNG;
		return MCC_OK;
	}
	if (len >= 2 && d[0] == 'P' && d[1] >= '1' && d[1] <= '7')
	{
		switch (d[1])
		{
			case '5':
				*f = MCC_IMAGE_PGM;
				return MCC_OK;
			case '2':
				return mcc_error_set(err, MCC_ERR_VALUE, "plain (ASCII) PGM images are not supported"),
					mcc_error_detail(err, "Only binary PGM (magic number P5) is accepted.");
			case '3':
			case '6':
				return mcc_error_set(err, MCC_ERR_VALUE, "image is not grayscale"),
					mcc_error_detail(err, "It is a color PPM image (magic number P%c); convert it to 8-bit grayscale.",
									 d[1]);
			default:
				return mcc_error_set(err, MCC_ERR_VALUE, "unsupported Netpbm format P%c", d[1]),
					mcc_error_detail(err, "Only binary PGM (magic number P5) is accepted.");
		}
	}
	if (len >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF)
		return mcc_error_set(err, MCC_ERR_VALUE, "JPEG images are not supported"),
			mcc_error_detail(err, "Images must be binary PGM (P5) or PNG.");
	if (len >= 4 && ((memcmp(d, "II*\0", 4) == 0) || memcmp(d, "MM\0*", 4) == 0))
		return mcc_error_set(err, MCC_ERR_VALUE, "TIFF images are not supported"),
			mcc_error_detail(err, "Images must be binary PGM (P5) or PNG.");
	return mcc_error_set(err, MCC_ERR_SYNTAX, "unrecognized image format"),
		mcc_error_detail(err, "Images must be binary PGM (P5) or PNG; the data starts with 0x%02x.", d[0]);
}

/* The header of a P5 image, its bit depth from the maxval. */
static mcc_status
pgm_probe(const uint8_t *data, size_t len, mcc_image_info *info, mcc_error *err)
{
	pgm_header	h;
	mcc_status	st;

	if ((st = pgm_header_read(data, len, &h, err)) != MCC_OK)
		return st;
	info->format = MCC_IMAGE_PGM;
	info->width = h.width;
	info->height = h.height;
	info->maxval = (int) h.maxval;
	info->bit_depth = 1;
	while ((1u << info->bit_depth) - 1 < h.maxval)
		info->bit_depth++;
	return MCC_OK;
}

/* The raster of a P5 image: exact length, samples <= maxval, then scaling. */
static mcc_status
pgm_decode(const uint8_t *d, size_t len, mcc_image *img, mcc_error *err)
{
	pgm_header	h;
	mcc_status	st;
	size_t		need;
	uint8_t		lut[256];

	if ((st = pgm_header_read(d, len, &h, err)) != MCC_OK)
		return st;
	need = (size_t) h.width * h.height;
	if (h.raster > len || len - h.raster < need)
		return mcc_error_set(err, MCC_ERR_TRUNCATED, "PGM image is truncated"),
			mcc_error_detail(err, "The header announces %u x %u pixels (%zu bytes), but only %zu bytes follow it.",
							 h.width, h.height, need, h.raster > len ? (size_t) 0 : len - h.raster);
	if (len - h.raster > need)
		return mcc_error_set(err, MCC_ERR_SYNTAX, "PGM image has %zu trailing byte%s",
							 len - h.raster - need, len - h.raster - need == 1 ? "" : "s"),
			mcc_error_detail(err, "The header announces %u x %u pixels (%zu bytes), but %zu bytes follow it.",
							 h.width, h.height, need, len - h.raster);
	if (img->stride < h.width)
		return mcc_error_set(err, MCC_ERR_INTERNAL, "image stride %zu is below the width %u",
							 img->stride, h.width);
	for (unsigned v = 0; v < 256; v++)
		lut[v] = (uint8_t) (v <= h.maxval ? (v * 255 + h.maxval / 2) / h.maxval : 0);
	for (uint32_t y = 0; y < h.height; y++)
	{
		const uint8_t *src = d + h.raster + (size_t) y * h.width;
		uint8_t    *dst = img->pixels + (size_t) y * img->stride;

		if (h.maxval == 255)
		{
			memcpy(dst, src, h.width);
			continue;
		}
		for (uint32_t x = 0; x < h.width; x++)
		{
			if (src[x] > h.maxval)
				return mcc_error_set(err, MCC_ERR_SYNTAX, "PGM sample %u exceeds the maxval %u",
									 src[x], h.maxval),
					mcc_error_detail(err, "The sample is at x = %u, y = %u.", x, y);
			dst[x] = lut[src[x]];
		}
	}
	img->width = h.width;
	img->height = h.height;
	return MCC_OK;
}

/* A supported format: what reads its header and what decodes it. */
typedef struct image_codec
{
	mcc_status	(*probe) (const uint8_t *data, size_t len, mcc_image_info *info, mcc_error *err);
	mcc_status	(*decode) (const uint8_t *data, size_t len, mcc_image *img, mcc_error *err);
} image_codec;

static const image_codec codecs[] = {
	[MCC_IMAGE_PGM] = {pgm_probe, pgm_decode},
	[MCC_IMAGE_PNG] = {mcc_png_probe, mcc_png_decode},
};

/* Detect the format, then read the header into info or, with img, decode the image. */
static mcc_status
read_image(const uint8_t *data, size_t len, mcc_image_info *info, mcc_image *img, mcc_error *err)
{
	mcc_image_format f;
	mcc_status	st;

	if ((st = detect(data, len, &f, err)) != MCC_OK)
		return st;
	if (img != NULL)
		return codecs[f].decode(data, len, img, err);
	return codecs[f].probe(data, len, info, err);
}

/* Header of a PGM or PNG image. */
mcc_status
mcc_image_probe(const uint8_t *data, size_t len, mcc_image_info *info, mcc_error *err)
{
	return read_image(data, len, info, NULL, err);
}

/* Decode a PGM or PNG image into the caller's buffer. */
mcc_status
mcc_image_decode(const uint8_t *data, size_t len, mcc_image *img, mcc_error *err)
{
	return read_image(data, len, NULL, img, err);
}

/* Number of decimal digits of v. */
static int
digits(uint32_t v)
{
	int			n = 1;

	while (v >= 10)
	{
		v /= 10;
		n++;
	}
	return n;
}

/* "P5\n<w> <h>\n255\n" plus the raster. */
size_t
mcc_image_pgm_size(uint32_t width, uint32_t height)
{
	return 3 + (size_t) digits(width) + 1 + (size_t) digits(height) + 1 + 4 +
		(size_t) width * height;
}

/* Write a binary PGM, maxval 255. */
size_t
mcc_image_write_pgm(const mcc_image *img, uint8_t *out)
{
	char		head[40];
	int			n = snprintf(head, sizeof(head), "P5\n%u %u\n255\n", img->width, img->height);
	uint8_t    *p = out + n;

	memcpy(out, head, (size_t) n);
	for (uint32_t y = 0; y < img->height; y++)
	{
		memcpy(p, img->pixels + (size_t) y * img->stride, img->width);
		p += img->width;
	}
	return (size_t) (p - out);
}

/* A rectangle of img, without copying. */
mcc_status
mcc_image_crop(const mcc_image *img, int64_t x, int64_t y, int64_t w, int64_t h,
			   mcc_image *out, mcc_error *err)
{
	if (w < 1 || h < 1)
		return mcc_error_set(err, MCC_ERR_VALUE, "crop size %lld x %lld is empty",
							 (long long) w, (long long) h);
	if (x < 0 || y < 0 || x > (int64_t) img->width - w || y > (int64_t) img->height - h)
		return mcc_error_set(err, MCC_ERR_VALUE, "crop rectangle is outside the image"),
			mcc_error_detail(err, "The rectangle at x = %lld, y = %lld of %lld x %lld pixels does not fit in a %u x %u image.",
							 (long long) x, (long long) y, (long long) w, (long long) h,
							 img->width, img->height);
	out->width = (uint32_t) w;
	out->height = (uint32_t) h;
	out->stride = img->stride;
	out->pixels = img->pixels + (size_t) y * img->stride + (size_t) x;
	return MCC_OK;
}
