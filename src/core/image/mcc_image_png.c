/*
 * mcc_image_png.c: PNG input through libpng (mcc_image.h says what is
 * accepted).
 *
 * libpng reports errors by calling an error function that must not return;
 * ours copies the message and longjmps back to the setjmp in png_run(),
 * which frees everything and returns an mcc_status. No longjmp crosses the
 * src/core API, and nothing is printed (warnings are dropped).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_image_int.h"

/* Whether the data starts with the PNG signature. */
int
mcc_png_is_png(const uint8_t *data, size_t len)
{
	static const uint8_t sig[MCC_PNG_SIGNATURE_LEN] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

	return len >= MCC_PNG_SIGNATURE_LEN && memcmp(data, sig, MCC_PNG_SIGNATURE_LEN) == 0;
}

/* a machine without libpng's header builds the core without PNG input */
#if !defined(MCC_NO_PNG) && defined(__has_include)
#if !__has_include(<png.h>)
#define MCC_NO_PNG 1
#endif
#endif

#ifdef MCC_NO_PNG
/*
 * Built without libpng (a machine without png.h): PNG
 * data is recognized and refused.
 */
static mcc_status
no_png(mcc_error *err)
{
	return mcc_error_set(err, MCC_ERR_VALUE, "PNG images are not supported by this build"),
		mcc_error_detail(err, "It was built without libpng.");
}

/* PNG header: refused. */
mcc_status
mcc_png_probe(const uint8_t *data, size_t len, mcc_image_info *info, mcc_error *err)
{
	return no_png(err);
}

/* PNG decoding: refused. */
mcc_status
mcc_png_decode(const uint8_t *data, size_t len, mcc_image *img, mcc_error *err)
{
	return no_png(err);
}
#else
#include <png.h>
#include <setjmp.h>

/* Largest ancillary chunk libpng may allocate (zTXt, iCCP, ...). */
#define PNG_CHUNK_MALLOC_MAX	(8u * 1024u * 1024u)

/*
 * Largest single allocation granted to libpng: a chunk of the size above
 * (and its terminator), or a row of MCC_IMAGE_MAX_SIDE pixels of 8 bytes,
 * fits many times over; the image itself is allocated by the caller. A
 * larger request comes from a chunk whose claimed length libpng did not
 * hold to png_set_chunk_malloc_max (libpng 1.6.39 read an sPLT chunk
 * claiming 1.9 GB: found by fuzz_image), and is refused.
 */
#define PNG_ALLOC_MAX			(2u * PNG_CHUNK_MALLOC_MAX)

/* Reading state shared with libpng's callbacks. */
typedef struct png_src
{
	const uint8_t *data;
	size_t		len;
	size_t		pos;			/* bytes handed to libpng */
	int			truncated;		/* libpng asked for more than there is */
	int			oom;			/* an allocation failed */
	size_t		refused;		/* the largest request above PNG_ALLOC_MAX, or 0 */
	char		msg[160];		/* libpng's last error message */
	int			npal;			/* palette entries (palette images) */
	uint8_t		lut[256];		/* palette index -> gray */
} png_src;

/* libpng's read function: copy from memory, or fail as truncated. */
static void
read_cb(png_structp png, png_bytep out, size_t n)
{
	png_src    *s = (png_src *) png_get_io_ptr(png);

	if (n > s->len - s->pos)
	{
		s->truncated = 1;
		png_error(png, "unexpected end of data");
	}
	memcpy(out, s->data + s->pos, n);
	s->pos += n;
}

/* libpng's error function: keep the message, return to png_run(). */
static void
error_cb(png_structp png, png_const_charp msg)
{
	png_src    *s = (png_src *) png_get_error_ptr(png);

	snprintf(s->msg, sizeof(s->msg), "%s", msg ? msg : "unknown error");
	png_longjmp(png, 1);
}

/* libpng's warning function: src/core never prints. */
static void
warning_cb(png_structp png, png_const_charp msg)
{
	(void) png;
	(void) msg;
}

/* libpng's allocator: malloc up to PNG_ALLOC_MAX, remembering a failure for the message. */
static png_voidp
malloc_cb(png_structp png, png_alloc_size_t size)
{
	png_src    *s = (png_src *) png_get_mem_ptr(png);
	void	   *p;

	if (size > PNG_ALLOC_MAX)
	{
		if (s != NULL && size > s->refused)
			s->refused = size;
		return NULL;
	}
	p = malloc(size);

	if (p == NULL && s != NULL)
		s->oom = 1;
	return p;
}

/* libpng's deallocator. */
static void
free_cb(png_structp png, png_voidp p)
{
	(void) png;
	free(p);
}

/* The mcc_status of a libpng failure. */
static mcc_status
png_failure(const png_src *s, mcc_error *err)
{
	if (s->refused)
		return mcc_error_set(err, MCC_ERR_SYNTAX, "invalid PNG image"),
			mcc_error_detail(err, "A chunk's claimed length asks for an allocation of %zu bytes; the data is %zu bytes long.",
							 s->refused, s->len);
	if (s->oom)
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory while decoding a PNG image");
	if (s->truncated)
		return mcc_error_set(err, MCC_ERR_TRUNCATED, "PNG image is truncated"),
			mcc_error_detail(err, "The data ends after %zu bytes, inside a chunk or before IEND.",
							 s->len);
	return mcc_error_set(err, MCC_ERR_SYNTAX, "invalid PNG image"),
		mcc_error_detail(err, "libpng: %s.", s->msg);
}

/*
 * The size in the IHDR chunk, which a valid PNG has right after the
 * signature, checked against the limits before libpng allocates anything.
 * Anything unexpected is left for libpng to diagnose.
 */
static mcc_status
precheck_size(const uint8_t *d, size_t len, mcc_error *err)
{
	uint32_t	w,
				h;

	if (len < 24 || memcmp(d + 12, "IHDR", 4) != 0)
		return MCC_OK;
	w = (uint32_t) d[16] << 24 | (uint32_t) d[17] << 16 | (uint32_t) d[18] << 8 | d[19];
	h = (uint32_t) d[20] << 24 | (uint32_t) d[21] << 16 | (uint32_t) d[22] << 8 | d[23];
	if (w == 0 || h == 0)
		return MCC_OK;
	return mcc_image_check_size(w, h, err);
}

/* Name of a PNG color type for messages. */
static const char *
color_name(int color_type)
{
	switch (color_type)
	{
		case PNG_COLOR_TYPE_GRAY:
			return "grayscale";
		case PNG_COLOR_TYPE_GRAY_ALPHA:
			return "grayscale with alpha";
		case PNG_COLOR_TYPE_PALETTE:
			return "palette";
		case PNG_COLOR_TYPE_RGB:
			return "RGB";
		case PNG_COLOR_TYPE_RGB_ALPHA:
			return "RGB with alpha";
	}
	return "unknown";
}

/*
 * Check the header read by png_read_info() against what mcc accepts; for a
 * palette image, fill lut (index -> gray) and *npal.
 */
static mcc_status
check_header(png_structp png, png_infop pinfo, mcc_image_info *info, uint8_t *lut,
			 int *npal, mcc_error *err)
{
	png_uint_32 w,
				h;
	int			depth,
				ctype;
	mcc_status	st;

	png_get_IHDR(png, pinfo, &w, &h, &depth, &ctype, NULL, NULL, NULL);
	if ((st = mcc_image_check_size(w, h, err)) != MCC_OK)
		return st;
	if (ctype == PNG_COLOR_TYPE_RGB || ctype == PNG_COLOR_TYPE_RGB_ALPHA)
		return mcc_error_set(err, MCC_ERR_VALUE, "image is not grayscale"),
			mcc_error_detail(err, "It is a PNG image of color type %s; convert it to 8-bit grayscale.",
							 color_name(ctype));
	if (depth > 8)
		return mcc_error_set(err, MCC_ERR_VALUE, "16-bit PNG images are not supported"),
			mcc_error_detail(err, "It is a %d-bit %s image; only 8-bit (or lower) grayscale is accepted.",
							 depth, color_name(ctype));
	*npal = 0;
	if (ctype == PNG_COLOR_TYPE_PALETTE)
	{
		png_colorp	pal = NULL;
		int			n = 0;

		if (png_get_PLTE(png, pinfo, &pal, &n) == 0 || n <= 0)
			return mcc_error_set(err, MCC_ERR_SYNTAX, "invalid PNG image"),
				mcc_error_detail(err, "The palette image has no PLTE chunk.");
		for (int i = 0; i < n; i++)
		{
			if (pal[i].red != pal[i].green || pal[i].red != pal[i].blue)
				return mcc_error_set(err, MCC_ERR_VALUE, "image is not grayscale"),
					mcc_error_detail(err, "Palette entry %d of the PNG image is the color (%d, %d, %d); convert it to 8-bit grayscale.",
									 i, pal[i].red, pal[i].green, pal[i].blue);
			lut[i] = pal[i].red;
		}
		*npal = n;
	}
	info->format = MCC_IMAGE_PNG;
	info->width = w;
	info->height = h;
	info->bit_depth = depth;
	info->maxval = (1 << depth) - 1;
	return MCC_OK;
}

/*
 * Turn the decoded rows into 8-bit gray: palette indices through lut, gray
 * + alpha pairs (in tmp) checked for opacity and copied.
 */
static mcc_status
finish_pixels(int ctype, const uint8_t *lut, int npal, const uint8_t *tmp, mcc_image *img,
			  mcc_error *err)
{
	for (uint32_t y = 0; y < img->height; y++)
	{
		uint8_t    *row = img->pixels + (size_t) y * img->stride;

		if (ctype == PNG_COLOR_TYPE_PALETTE)
		{
			for (uint32_t x = 0; x < img->width; x++)
			{
				if (row[x] >= npal)
					return mcc_error_set(err, MCC_ERR_SYNTAX, "invalid PNG image"),
						mcc_error_detail(err, "Palette index %d at x = %u, y = %u is beyond the %d palette entries.",
										 row[x], x, y, npal);
				row[x] = lut[row[x]];
			}
		}
		else if (ctype == PNG_COLOR_TYPE_GRAY_ALPHA)
		{
			const uint8_t *src = tmp + (size_t) y * img->width * 2;

			for (uint32_t x = 0; x < img->width; x++)
			{
				if (src[2 * x + 1] != 255)
					return mcc_error_set(err, MCC_ERR_VALUE, "PNG image has transparent pixels"),
						mcc_error_detail(err, "The pixel at x = %u, y = %u has alpha %d; only fully opaque gray + alpha images are accepted.",
										 x, y, src[2 * x + 1]);
				row[x] = src[2 * x];
			}
		}
	}
	return MCC_OK;
}

/*
 * Read a PNG: the header only (img NULL) or the whole image into img. All
 * libpng calls happen between setjmp and the cleanup at the end.
 */
static mcc_status
png_run(const uint8_t *data, size_t len, mcc_image_info *info, mcc_image *img,
		mcc_error *err)
{
	png_src		src;
	png_structp png;
	png_infop	pinfo;
	png_bytep  *volatile rows = NULL;
	uint8_t    *volatile tmp = NULL;
	volatile mcc_status st = MCC_OK;

	if ((st = precheck_size(data, len, err)) != MCC_OK)
		return st;
	memset(&src, 0, sizeof(src));
	src.data = data;
	src.len = len;
	png = png_create_read_struct_2(PNG_LIBPNG_VER_STRING, &src, error_cb, warning_cb,
								   &src, malloc_cb, free_cb);
	if (png == NULL)
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory while decoding a PNG image");
	pinfo = png_create_info_struct(png);
	if (pinfo == NULL)
	{
		png_destroy_read_struct(&png, NULL, NULL);
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory while decoding a PNG image");
	}
	if (setjmp(png_jmpbuf(png)))
	{
		st = png_failure(&src, err);
		goto done;
	}
	png_set_read_fn(png, &src, read_cb);
	/* our own limits apply after the header, with their own status */
	png_set_user_limits(png, 0x7fffffffu, 0x7fffffffu);
	png_set_chunk_malloc_max(png, PNG_CHUNK_MALLOC_MAX);
	png_set_chunk_cache_max(png, 1000);
	png_read_info(png, pinfo);
	if ((st = check_header(png, pinfo, info, src.lut, &src.npal, err)) != MCC_OK || img == NULL)
		goto done;
	{
		int			ctype = png_get_color_type(png, pinfo);
		int			depth = png_get_bit_depth(png, pinfo);
		size_t		bpp = ctype == PNG_COLOR_TYPE_GRAY_ALPHA ? 2 : 1;
		uint32_t	w = info->width,
					h = info->height;

		if (img->stride < w)
		{
			st = mcc_error_set(err, MCC_ERR_INTERNAL, "image stride %zu is below the width %u",
							   img->stride, w);
			goto done;
		}
		if (depth < 8 && ctype == PNG_COLOR_TYPE_GRAY)
			png_set_expand_gray_1_2_4_to_8(png);
		if (depth < 8 && ctype == PNG_COLOR_TYPE_PALETTE)
			png_set_packing(png);
		(void) png_set_interlace_handling(png);
		png_read_update_info(png, pinfo);
		if (png_get_rowbytes(png, pinfo) != bpp * w)
		{
			st = mcc_error_set(err, MCC_ERR_INTERNAL, "libpng rows have %zu bytes, expected %zu",
							   (size_t) png_get_rowbytes(png, pinfo), bpp * w);
			goto done;
		}
		rows = malloc(sizeof(png_bytep) * h);
		if (bpp == 2)
			tmp = malloc((size_t) w * h * 2);
		if (rows == NULL || (bpp == 2 && tmp == NULL))
		{
			st = mcc_error_set(err, MCC_ERR_MEMORY, "out of memory while decoding a PNG image");
			goto done;
		}
		for (uint32_t y = 0; y < h; y++)
			rows[y] = bpp == 2 ? tmp + (size_t) y * w * 2 : img->pixels + (size_t) y * img->stride;
		png_read_image(png, rows);
		png_read_end(png, NULL);
		if (src.pos != len)
		{
			st = mcc_error_set(err, MCC_ERR_SYNTAX, "PNG image has %zu trailing byte%s", len - src.pos,
							   len - src.pos == 1 ? "" : "s"),
				mcc_error_detail(err, "The data goes on after the IEND chunk.");
			goto done;
		}
		img->width = w;
		img->height = h;
		st = finish_pixels(ctype, src.lut, src.npal, tmp, img, err);
	}
done:
	free(rows);
	free(tmp);
	png_destroy_read_struct(&png, &pinfo, NULL);
	return st;
}

/* Header of a PNG image. */
mcc_status
mcc_png_probe(const uint8_t *data, size_t len, mcc_image_info *info, mcc_error *err)
{
	return png_run(data, len, info, NULL, err);
}

/* Decode a PNG image into the caller's buffer. */
mcc_status
mcc_png_decode(const uint8_t *data, size_t len, mcc_image *img, mcc_error *err)
{
	mcc_image_info info;

	return png_run(data, len, &info, img, err);
}
#endif							/* MCC_NO_PNG */
