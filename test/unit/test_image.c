/*
 * test_image.c: the PGM and PNG decoders of mcc_image.h.
 *
 * PNG inputs are written here with libpng's own encoder from known pixels,
 * so the decoder is checked against an independent implementation. Every
 * bad-input class is checked for its status: truncation at every length,
 * malformed headers, 16-bit, color, transparency, huge sizes.
 */
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_image.h"
#include "unit.h"
#include "testfvc.h"
#include "testcrc.h"

/* A growable memory buffer for libpng's writer. */
typedef struct membuf
{
	uint8_t    *data;
	size_t		len;
	size_t		cap;
} membuf;

/* libpng write callback: append to the buffer. */
static void
mem_write(png_structp png, png_bytep d, size_t n)
{
	membuf	   *b = (membuf *) png_get_io_ptr(png);

	if (b->len + n > b->cap)
	{
		b->cap = (b->len + n) * 2;
		b->data = realloc(b->data, b->cap);
	}
	memcpy(b->data + b->len, d, n);
	b->len += n;
}

/* libpng flush callback: nothing to do. */
static void
mem_flush(png_structp png)
{
	(void) png;
}

/*
 * Encode a PNG with libpng: rows of packed samples as PNG stores them
 * (bytes per row from depth, channels). pal/npal for palette images,
 * trns/ntrns for a tRNS chunk.
 */
static uint8_t *
png_make(uint32_t w, uint32_t h, int depth, int ctype, int interlace, const uint8_t *samples,
		 size_t rowbytes, const png_color *pal, int npal, size_t *len)
{
	membuf		b = {0};
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	png_infop	info = png_create_info_struct(png);

	if (setjmp(png_jmpbuf(png)))
	{
		fprintf(stderr, "libpng write failed\n");
		exit(2);
	}
	png_set_write_fn(png, &b, mem_write, mem_flush);
	png_set_check_for_invalid_index(png, -1);	/* let bad indices through */
	png_set_IHDR(png, info, w, h, depth, ctype,
				 interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
				 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	if (pal)
		png_set_PLTE(png, info, pal, npal);
	png_write_info(png, info);
	{
		png_bytep  *rows = malloc(sizeof(png_bytep) * h);

		for (uint32_t y = 0; y < h; y++)
			rows[y] = (png_bytep) samples + y * rowbytes;
		png_write_image(png, rows);
		free(rows);
	}
	png_write_end(png, NULL);
	png_destroy_write_struct(&png, &info);
	*len = b.len;
	return b.data;
}

/* Decode through probe + decode as the PostgreSQL layer does. */
static mcc_status
decode(const uint8_t *d, size_t len, mcc_image *img, mcc_image_info *info, mcc_error *err)
{
	mcc_status	st;

	mcc_error_clear(err);
	st = mcc_image_probe(d, len, info, err);
	img->pixels = NULL;
	if (st != MCC_OK)
		return st;
	img->stride = info->width + 3;	/* a stride wider than the image */
	img->pixels = malloc(img->stride * info->height);
	return mcc_image_decode(d, len, img, err);
}

/* Whether img holds exactly the w x h pixels of want (row-major). */
static int
same_pixels(const mcc_image *img, const uint8_t *want, uint32_t w, uint32_t h)
{
	if (img->width != w || img->height != h)
		return 0;
	for (uint32_t y = 0; y < h; y++)
		if (memcmp(img->pixels + y * img->stride, want + (size_t) y * w, w) != 0)
			return 0;
	return 1;
}

/* Status of decoding d, freeing the pixels. */
static mcc_status
status_of(const uint8_t *d, size_t len, mcc_error *err)
{
	mcc_image	img;
	mcc_image_info info;
	mcc_status	st = decode(d, len, &img, &info, err);

	free(img.pixels);
	return st;
}

/* A PGM in memory: header text + raster. */
static uint8_t *
pgm_make(const char *header, const uint8_t *raster, size_t n, size_t *len)
{
	size_t		hl = strlen(header);
	uint8_t    *d = malloc(hl + n + 1);

	memcpy(d, header, hl);
	memcpy(d + hl, raster, n);
	*len = hl + n;
	return d;
}

/* Valid PGMs: plain, comments, maxval scaling, stride. */
static void
test_pgm_valid(void)
{
	uint8_t		px[5 * 3];
	uint8_t		want[5 * 3];
	size_t		len;
	uint8_t    *d;
	mcc_image	img;
	mcc_image_info info;
	mcc_error	err;

	for (int i = 0; i < 15; i++)
		px[i] = (uint8_t) (i * 17);
	d = pgm_make("P5\n5 3\n255\n", px, 15, &len);
	UNIT_CHECK(decode(d, len, &img, &info, &err) == MCC_OK && same_pixels(&img, px, 5, 3) &&
			   info.format == MCC_IMAGE_PGM && info.width == 5 && info.height == 3 &&
			   info.maxval == 255 && info.bit_depth == 8, "pgm: 5x3 maxval 255 decoded");
	free(img.pixels);
	free(d);

	d = pgm_make("P5 # a comment\n#another\r5\t# c\n 3 255#end\n", px, 15, &len);
	UNIT_CHECK(decode(d, len, &img, &info, &err) == MCC_OK && same_pixels(&img, px, 5, 3),
			   "pgm: comments and mixed whitespace in the header");
	free(img.pixels);
	free(d);

	/* maxval 15: v scales to v * 17 exactly */
	for (int i = 0; i < 15; i++)
	{
		px[i] = (uint8_t) i;
		want[i] = (uint8_t) (i * 17);
	}
	d = pgm_make("P5\n5 3\n15\n", px, 15, &len);
	UNIT_CHECK(decode(d, len, &img, &info, &err) == MCC_OK && same_pixels(&img, want, 5, 3) &&
			   info.maxval == 15 && info.bit_depth == 4, "pgm: maxval 15 scales to 0..255");
	free(img.pixels);
	free(d);

	/* maxval 1: a bitmap in gray */
	for (int i = 0; i < 15; i++)
	{
		px[i] = (uint8_t) (i % 2);
		want[i] = (uint8_t) (i % 2 ? 255 : 0);
	}
	d = pgm_make("P5\n5 3\n1\n", px, 15, &len);
	UNIT_CHECK(decode(d, len, &img, &info, &err) == MCC_OK && same_pixels(&img, want, 5, 3),
			   "pgm: maxval 1 scales to 0 and 255");
	free(img.pixels);
	free(d);

	/* maxval 200: rounding of v * 255 / 200 */
	px[0] = 0;
	px[1] = 1;
	px[2] = 100;
	px[3] = 199;
	px[4] = 200;
	d = pgm_make("P5\n5 1\n200\n", px, 5, &len);
	UNIT_CHECK(decode(d, len, &img, &info, &err) == MCC_OK && img.pixels[0] == 0 &&
			   img.pixels[1] == 1 && img.pixels[2] == 128 && img.pixels[3] == 254 &&
			   img.pixels[4] == 255, "pgm: maxval 200 rounds to nearest");
	free(img.pixels);
	free(d);

	/* 1 x 1 */
	px[0] = 77;
	d = pgm_make("P5 1 1 255 ", px, 1, &len);
	UNIT_CHECK(decode(d, len, &img, &info, &err) == MCC_OK && same_pixels(&img, px, 1, 1),
			   "pgm: 1x1 with spaces only");
	free(img.pixels);
	free(d);
}

/* Bad PGMs: every class of error with its status. */
static void
test_pgm_bad(void)
{
	static const struct
	{
		const char *header;
		size_t		raster;
		mcc_status	want;
		const char *what;
	}			cases[] = {
		{"P5\n4 3\n255\n", 13, MCC_ERR_SYNTAX, "a trailing byte"},
		{"P5\n4 3\n0\n", 12, MCC_ERR_SYNTAX, "maxval 0"},
		{"P5\n4 3\n70000\n", 24, MCC_ERR_SYNTAX, "maxval over 65535"},
		{"P5\n0 3\n255\n", 0, MCC_ERR_SYNTAX, "width 0"},
		{"P5\n4 0\n255\n", 0, MCC_ERR_SYNTAX, "height 0"},
		{"P5\nx 3\n255\n", 12, MCC_ERR_SYNTAX, "a letter for the width"},
		{"P5\n-4 3\n255\n", 12, MCC_ERR_SYNTAX, "a negative width"},
		{"P5\n4x 3\n255\n", 12, MCC_ERR_SYNTAX, "a letter after the width"},
		{"P54 3\n255\n", 12, MCC_ERR_SYNTAX, "no space after the magic number"},
		{"P5\n4 3\n255x", 12, MCC_ERR_SYNTAX, "no whitespace after the maxval"},
		{"P5\n4 3\n65535\n", 24, MCC_ERR_VALUE, "16-bit (maxval 65535)"},
		{"P5\n4 3\n256\n", 24, MCC_ERR_VALUE, "16-bit (maxval 256)"},
		{"P2\n4 3\n255\n", 12, MCC_ERR_VALUE, "plain PGM (P2)"},
		{"P6\n4 3\n255\n", 36, MCC_ERR_VALUE, "color PPM (P6)"},
		{"P3\n4 3\n255\n", 36, MCC_ERR_VALUE, "plain PPM (P3)"},
		{"P4\n4 3\n", 3, MCC_ERR_VALUE, "PBM (P4)"},
		{"\xff\xd8\xff\xe0", 12, MCC_ERR_VALUE, "JPEG"},
		{"II*\x01", 12, MCC_ERR_SYNTAX, "not quite TIFF"},
		{"BM", 12, MCC_ERR_SYNTAX, "BMP"},
		{"P5\n16385 1\n255\n", 16385, MCC_ERR_LIMIT, "width over 16384"},
		{"P5\n1 16385\n255\n", 16385, MCC_ERR_LIMIT, "height over 16384"},
		{"P5\n16384 16384\n255\n", 0, MCC_ERR_LIMIT, "over the pixel budget"},
		{"P5\n1234567890 1\n255\n", 0, MCC_ERR_LIMIT, "a 10-digit width"},
		{"P5\n16384 4097\n255\n", 0, MCC_ERR_LIMIT, "one row over the pixel budget"},
	};
	uint8_t    *raster = calloc(1, 20000);
	mcc_error	err;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		size_t		len;
		uint8_t    *d = pgm_make(cases[i].header, raster, cases[i].raster, &len);
		mcc_status	st = status_of(d, len, &err);

		UNIT_CHECK(st == cases[i].want, "pgm: %s gives status %d (got %d: %s)",
				   cases[i].what, cases[i].want, st, err.message);
		free(d);
	}
	{
		size_t		len;
		uint8_t    *d = pgm_make("II*\0", raster, 12, &len);

		UNIT_CHECK(status_of(d, len, &err) == MCC_ERR_VALUE && strstr(err.message, "TIFF"),
				   "pgm: TIFF named as such");
		free(d);
	}
	UNIT_CHECK(status_of((const uint8_t *) "", 0, &err) == MCC_ERR_TRUNCATED,
			   "empty data is truncated");

	/* a sample above maxval */
	{
		size_t		len;
		uint8_t		px[4] = {1, 2, 16, 3};
		uint8_t    *d = pgm_make("P5\n2 2\n15\n", px, 4, &len);

		UNIT_CHECK(status_of(d, len, &err) == MCC_ERR_SYNTAX && strstr(err.detail, "x = 0, y = 1"),
				   "pgm: a sample over maxval is malformed, located (%s)", err.detail);
		free(d);
	}

	/* the largest image within the budget passes the header check */
	{
		mcc_image_info info;
		const char *h = "P5\n16384 4096\n255\n";

		UNIT_CHECK(mcc_image_probe((const uint8_t *) h, strlen(h), &info, &err) == MCC_OK &&
				   info.width == 16384 && info.height == 4096,
				   "pgm: 16384 x 4096 (the budget exactly) passes the header");
		UNIT_CHECK(status_of((const uint8_t *) h, strlen(h), &err) == MCC_ERR_TRUNCATED,
				   "pgm: ... and is truncated without its raster");
	}
	free(raster);
}

/* Every proper prefix of a valid PGM (from the magic number on) is truncated. */
static void
test_pgm_truncated(void)
{
	uint8_t		px[12];
	size_t		len;
	uint8_t    *d;
	mcc_error	err;
	int			bad = 0;

	for (int i = 0; i < 12; i++)
		px[i] = (uint8_t) (200 - i);
	d = pgm_make("P5\n# c\n4 3\n255\n", px, 12, &len);
	for (size_t n = 2; n < len; n++)
		if (status_of(d, n, &err) != MCC_ERR_TRUNCATED)
		{
			bad++;
			printf("# prefix %zu: %s\n", n, err.message);
		}
	UNIT_CHECK(bad == 0, "pgm: all %zu proper prefixes are truncated", len - 2);
	UNIT_CHECK(status_of(d, len, &err) == MCC_OK, "pgm: the whole image decodes");
	free(d);
}

/* A PNG (png_make) of 8-bit samples v (< 2^depth) packed into rows of the given depth. */
static uint8_t *
png_packed(const uint8_t *v, uint32_t w, uint32_t h, int depth, int ctype, int interlace,
		   const png_color *pal, int npal, size_t *len)
{
	size_t		rb = ((size_t) w * depth + 7) / 8;
	uint8_t    *out = calloc(rb * h, 1);
	uint8_t    *png;

	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
		{
			size_t		bit = (size_t) x * depth;
			int			shift = 8 - depth - (int) (bit % 8);

			out[y * rb + bit / 8] |= (uint8_t) (v[y * w + x] << shift);
		}
	png = png_make(w, h, depth, ctype, interlace, out, rb, pal, npal, len);
	free(out);
	return png;
}

/* Valid PNGs: gray of every depth, interlaced, gray palette, opaque alpha. */
static void
test_png_valid(void)
{
	enum
	{
		W = 37, H = 23
	};
	uint8_t		v[W * H],
				want[W * H];
	mcc_image	img;
	mcc_image_info info;
	mcc_error	err;
	size_t		len;
	uint8_t    *d;

	for (int depth = 1; depth <= 8; depth *= 2)
		for (int il = 0; il <= 1; il++)
		{
			int			maxv = (1 << depth) - 1;

			for (int i = 0; i < W * H; i++)
			{
				v[i] = (uint8_t) ((i * 7 + i / W) % (maxv + 1));
				want[i] = (uint8_t) (v[i] * 255 / maxv);
			}
			d = png_packed(v, W, H, depth, PNG_COLOR_TYPE_GRAY, il, NULL, 0, &len);
			UNIT_CHECK(decode(d, len, &img, &info, &err) == MCC_OK && same_pixels(&img, want, W, H) &&
					   info.format == MCC_IMAGE_PNG && info.bit_depth == depth,
					   "png: %d-bit gray%s decodes to the scaled samples (%s)", depth,
					   il ? ", interlaced" : "", err.message);
			free(img.pixels);
			free(d);
		}

	/* gray palette, 4-bit indices, entries in scrambled order */
	{
		png_color	pal[16];

		for (int i = 0; i < 16; i++)
			pal[i].red = pal[i].green = pal[i].blue = (uint8_t) ((i * 83) % 256);
		for (int i = 0; i < W * H; i++)
		{
			v[i] = (uint8_t) ((i * 5) % 16);
			want[i] = pal[v[i]].red;
		}
		d = png_packed(v, W, H, 4, PNG_COLOR_TYPE_PALETTE, 1, pal, 16, &len);
		UNIT_CHECK(decode(d, len, &img, &info, &err) == MCC_OK && same_pixels(&img, want, W, H),
				   "png: gray palette (4-bit, interlaced) maps through the palette (%s)", err.message);
		free(img.pixels);
		free(d);

		/* 3 entries, but an index 5 in the data */
		for (int i = 0; i < W * H; i++)
			v[i] = (uint8_t) (i % 3);
		v[W * 2 + 4] = 5;
		d = png_packed(v, W, H, 4, PNG_COLOR_TYPE_PALETTE, 0, pal, 3, &len);
		UNIT_CHECK(status_of(d, len, &err) == MCC_ERR_SYNTAX && strstr(err.detail, "x = 4, y = 2"),
				   "png: a palette index beyond the palette is malformed (%s)", err.detail);
		free(d);

		/* one colored entry */
		pal[7].blue = (uint8_t) (pal[7].red + 1);
		d = png_packed(v, W, H, 4, PNG_COLOR_TYPE_PALETTE, 0, pal, 16, &len);
		UNIT_CHECK(status_of(d, len, &err) == MCC_ERR_VALUE && strstr(err.detail, "entry 7"),
				   "png: a colored palette is not grayscale (%s)", err.detail);
		free(d);
	}

	/* gray + alpha: opaque accepted, transparent refused */
	{
		uint8_t		ga[W * H * 2];

		for (int i = 0; i < W * H; i++)
		{
			ga[2 * i] = want[i] = (uint8_t) (i * 13);
			ga[2 * i + 1] = 255;
		}
		d = png_make(W, H, 8, PNG_COLOR_TYPE_GRAY_ALPHA, 0, ga, W * 2, NULL, 0, &len);
		UNIT_CHECK(decode(d, len, &img, &info, &err) == MCC_OK && same_pixels(&img, want, W, H),
				   "png: opaque gray + alpha decodes to the gray channel (%s)", err.message);
		free(img.pixels);
		free(d);
		ga[2 * (W * 5 + 6) + 1] = 254;
		d = png_make(W, H, 8, PNG_COLOR_TYPE_GRAY_ALPHA, 1, ga, W * 2, NULL, 0, &len);
		UNIT_CHECK(status_of(d, len, &err) == MCC_ERR_VALUE && strstr(err.detail, "x = 6, y = 5"),
				   "png: a transparent pixel is refused, located (%s)", err.detail);
		free(d);
	}
}

/* Write a PNG chunk (length, type, data, CRC) at out; returns its size. */
static size_t
chunk(uint8_t *out, const char *type, const uint8_t *data, uint32_t n)
{
	uint32_t	crc;

	out[0] = (uint8_t) (n >> 24);
	out[1] = (uint8_t) (n >> 16);
	out[2] = (uint8_t) (n >> 8);
	out[3] = (uint8_t) n;
	memcpy(out + 4, type, 4);
	if (n)
		memcpy(out + 8, data, n);
	crc = tcrc_reflected(TCRC_ISO3309, out + 4, 4 + n);
	out[8 + n] = (uint8_t) (crc >> 24);
	out[9 + n] = (uint8_t) (crc >> 16);
	out[10 + n] = (uint8_t) (crc >> 8);
	out[11 + n] = (uint8_t) crc;
	return 12 + n;
}

/* A PNG that is only signature + IHDR(w, h, depth, ctype) + IEND. */
static size_t
png_header_only(uint8_t *out, uint32_t w, uint32_t h, int depth, int ctype)
{
	static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
	uint8_t		ihdr[13] = {(uint8_t) (w >> 24), (uint8_t) (w >> 16), (uint8_t) (w >> 8), (uint8_t) w,
		(uint8_t) (h >> 24), (uint8_t) (h >> 16), (uint8_t) (h >> 8), (uint8_t) h,
	(uint8_t) depth, (uint8_t) ctype, 0, 0, 0};
	size_t		n = 8;

	memcpy(out, sig, 8);
	n += chunk(out + n, "IHDR", ihdr, 13);
	n += chunk(out + n, "IEND", NULL, 0);
	return n;
}

/* Bad PNGs: color, 16-bit, huge, corrupt, truncated, trailing data. */
static void
test_png_bad(void)
{
	enum
	{
		W = 20, H = 9
	};
	uint8_t		rgb[W * H * 4] = {0};
	uint16_t	g16[W * H];
	mcc_error	err;
	mcc_image_info info;
	size_t		len;
	uint8_t    *d;
	uint8_t		hdr[64];

	d = png_make(W, H, 8, PNG_COLOR_TYPE_RGB, 0, rgb, W * 3, NULL, 0, &len);
	UNIT_CHECK(status_of(d, len, &err) == MCC_ERR_VALUE && strstr(err.detail, "RGB"),
			   "png: RGB is not grayscale (%s)", err.detail);
	free(d);
	d = png_make(W, H, 8, PNG_COLOR_TYPE_RGB_ALPHA, 0, rgb, W * 4, NULL, 0, &len);
	UNIT_CHECK(status_of(d, len, &err) == MCC_ERR_VALUE, "png: RGBA is not grayscale");
	free(d);
	for (int i = 0; i < W * H; i++)
		g16[i] = (uint16_t) (i * 300);
	d = png_make(W, H, 16, PNG_COLOR_TYPE_GRAY, 0, (const uint8_t *) g16, W * 2, NULL, 0, &len);
	UNIT_CHECK(status_of(d, len, &err) == MCC_ERR_VALUE && strstr(err.message, "16-bit"),
			   "png: 16-bit gray is refused (%s)", err.message);
	free(d);

	len = png_header_only(hdr, 20000, 10, 8, 0);
	UNIT_CHECK(mcc_image_probe(hdr, len, &info, &err) == MCC_ERR_LIMIT,
			   "png: width 20000 is over the limit (%s)", err.message);
	len = png_header_only(hdr, 10000, 10000, 8, 0);
	UNIT_CHECK(mcc_image_probe(hdr, len, &info, &err) == MCC_ERR_LIMIT,
			   "png: 10000 x 10000 is over the pixel budget");
	len = png_header_only(hdr, 0x7fffffff, 0x7fffffff, 8, 0);
	UNIT_CHECK(status_of(hdr, len, &err) == MCC_ERR_LIMIT, "png: 2^31-1 square is over the limit");
	len = png_header_only(hdr, 0, 10, 8, 0);
	UNIT_CHECK(status_of(hdr, len, &err) == MCC_ERR_SYNTAX, "png: width 0 is malformed (%s)",
			   err.detail);
	len = png_header_only(hdr, 10, 10, 3, 0);
	UNIT_CHECK(status_of(hdr, len, &err) == MCC_ERR_SYNTAX, "png: bit depth 3 is malformed (%s)",
			   err.detail);
	len = png_header_only(hdr, 10, 10, 8, 0);
	UNIT_CHECK(status_of(hdr, len, &err) == MCC_ERR_SYNTAX, "png: no IDAT is malformed (%s)",
			   err.detail);

	/* a valid image, then damaged */
	{
		uint8_t		v[W * H];
		uint8_t    *bad;
		int			nbad = 0;

		for (int i = 0; i < W * H; i++)
			v[i] = (uint8_t) (i * 31);
		d = png_make(W, H, 8, PNG_COLOR_TYPE_GRAY, 0, v, W, NULL, 0, &len);
		UNIT_CHECK(status_of(d, len, &err) == MCC_OK, "png: the undamaged image decodes");
		for (size_t n = 8; n < len; n++)
		{
			mcc_status	st = status_of(d, n, &err);

			if (st != MCC_ERR_TRUNCATED)
			{
				nbad++;
				printf("# prefix %zu: %d %s %s\n", n, st, err.message, err.detail);
			}
		}
		UNIT_CHECK(nbad == 0, "png: all %zu prefixes from the signature on are truncated", len - 8);
		bad = malloc(len + 3);
		memcpy(bad, d, len);
		memcpy(bad + len, "xyz", 3);
		UNIT_CHECK(status_of(bad, len + 3, &err) == MCC_ERR_SYNTAX && strstr(err.message, "3 trailing"),
				   "png: bytes after IEND are malformed (%s)", err.message);
		memcpy(bad, d, len);
		bad[28] ^= 0x01;		/* IHDR's interlace byte: its CRC no longer matches */
		UNIT_CHECK(status_of(bad, len, &err) == MCC_ERR_SYNTAX && strstr(err.detail, "CRC"),
				   "png: a flipped IHDR bit fails the CRC (%s)", err.detail);
		memcpy(bad, d, len);
		bad[len - 20] ^= 0x40;	/* inside IDAT */
		UNIT_CHECK(status_of(bad, len, &err) == MCC_ERR_SYNTAX, "png: a flipped IDAT bit is malformed (%s)",
				   err.detail);
		memcpy(bad, d, len);
		bad[1] = 'Q';
		UNIT_CHECK(status_of(bad, len, &err) == MCC_ERR_SYNTAX, "png: a bad signature is unrecognized");
		free(bad);
		free(d);
	}
}

/*
 * A palette image whose sPLT chunk claims 0x73737373 bytes (fuzz_image's
 * find, also a seed of that harness): libpng 1.6.39 asked for that much in
 * one allocation despite png_set_chunk_malloc_max; the decoder refuses it
 * and reports the chunk, without ever holding 1.9 GB.
 */
static void
test_png_huge_chunk(void)
{
	static const uint8_t d[] = {
		0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 'I', 'H', 'D', 'R',
		0, 0, 0, 4, 0, 0, 0, 1, 2, 3, 0, 0, 0, 0x84, 0x52, 0xe7, 0x5e,
		0, 0, 0, 0x0c, 's', 's', 's', 's', 's', 's', 's', 's', 's', 's', 's', 's', 's', 's', 's', 's',
		's', 's', 's', 's', 's', 's', 's', 's', 's', 'P', 'L', 'T', 'E', 0, 0, 0, 0x55, 0x55, 0x55,
		0xaa, 0xaa, 0xaa, 0xff, 0xff, 0xff, 0xc1, 0x7f, 0x62, 0xd1, 0, 0, 0, 0x0a, 'I', 'D', 'A', 'T',
		0x78, 0xda, 0x63, 0x90, 0x06, 0, 0, 0x1d, 0, 0x1c, 0x23, 0x7c, 0x8f, 0xac, 0, 0, 0, 0,
		'I', 'P', '5', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82};
	mcc_error	err;
	mcc_status	st = status_of(d, sizeof(d), &err);

	UNIT_CHECK(st == MCC_ERR_SYNTAX && strstr(err.detail, "allocation of 1936946036 bytes"),
			   "png: a chunk claiming 1.9 GB is refused, not allocated (%d: %s %s)", st, err.message,
			   err.detail);
}

/* PGM writer and crop. */
static void
test_write_crop(void)
{
	uint8_t		px[7 * 5];
	mcc_image	img = {7, 5, 7, px},
				c,
				back;
	mcc_image_info info;
	mcc_error	err;
	uint8_t    *out;
	size_t		n;

	for (int i = 0; i < 35; i++)
		px[i] = (uint8_t) (i * 7);
	UNIT_CHECK(mcc_image_crop(&img, 2, 1, 4, 3, &c, &err) == MCC_OK && c.width == 4 &&
			   c.height == 3 && c.pixels[0] == px[7 + 2] && c.pixels[c.stride * 2 + 3] == px[21 + 5],
			   "crop: a view of the rectangle");
	UNIT_CHECK(mcc_image_crop(&img, 4, 0, 4, 1, &c, &err) == MCC_ERR_VALUE, "crop: past the right edge");
	UNIT_CHECK(mcc_image_crop(&img, -1, 0, 1, 1, &c, &err) == MCC_ERR_VALUE, "crop: negative x");
	UNIT_CHECK(mcc_image_crop(&img, 0, 0, 0, 1, &c, &err) == MCC_ERR_VALUE, "crop: empty");
	mcc_image_crop(&img, 2, 1, 4, 3, &c, &err);
	n = mcc_image_pgm_size(c.width, c.height);
	out = malloc(n);
	UNIT_CHECK(mcc_image_write_pgm(&c, out) == n && memcmp(out, "P5\n4 3\n255\n", 11) == 0,
			   "pgm writer: header and size (%zu bytes)", n);
	back.stride = 4;
	back.pixels = malloc(12);
	UNIT_CHECK(mcc_image_probe(out, n, &info, &err) == MCC_OK &&
			   mcc_image_decode(out, n, &back, &err) == MCC_OK &&
			   memcmp(back.pixels, px + 9, 4) == 0 && memcmp(back.pixels + 8, px + 23, 4) == 0,
			   "pgm writer: reads back");
	free(back.pixels);
	free(out);
	UNIT_CHECK(mcc_image_pgm_size(16384, 4096) == 3 + 5 + 1 + 4 + 1 + 4 + (size_t) 16384 * 4096,
			   "pgm size of 16384 x 4096");
}

/* The FVC2002 PNGs of ../shared/data decode as 8-bit gray of the README's sizes. */
static void
test_fvc(void)
{
	const char *root = unit_shared_data_or_skip("FVC2002 images not decoded");
	char		path[512];

	if (root == NULL)
		return;
	for (size_t i = 0; i < TFVC_DBS; i++)
	{
		int			ok = 0,
					n = 0;

		for (int f = 101; f <= 110; f++)
			for (int imp = 1; imp <= 8; imp++)
			{
				size_t		len;
				uint8_t    *d;
				mcc_image	img;
				mcc_image_info info;
				mcc_error	err;

				tfvc_image_path(path, sizeof(path), root, &tfvc_dbs[i], f, imp);
				d = unit_read_file(path, &len);
				if (d == NULL)
					continue;
				n++;
				if (decode(d, len, &img, &info, &err) == MCC_OK &&
					img.width == (uint32_t) tfvc_dbs[i].width && img.height == (uint32_t) tfvc_dbs[i].height)
					ok++;
				else
					printf("# %s: %s\n", path, err.message);
				free(img.pixels);
				free(d);
			}
		UNIT_CHECK(n == 80 && ok == n, "fvc2002 %s: %d of %d PNGs decode as %dx%d gray",
				   tfvc_dbs[i].db, ok, n, tfvc_dbs[i].width, tfvc_dbs[i].height);
	}
}

int
main(void)
{
	test_pgm_valid();
	test_pgm_bad();
	test_pgm_truncated();
	test_png_valid();
	test_png_bad();
	test_png_huge_chunk();
	test_write_crop();
	test_fvc();
	return unit_done();
}
