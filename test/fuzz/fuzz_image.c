/*
 * fuzz_image.c: libFuzzer harness for the PGM and PNG decoders and the SAD
 * search on what they decode.
 *
 * Any input: mcc_image_probe and mcc_image_decode must return, with a
 * message on failure. An image that decodes (kept under 1 Mpixel here)
 * must survive a PGM round trip unchanged, and a quarter of it cut out
 * and searched for (images up to 64 x 64) must be found with SAD 0, by
 * the reference and by the fastest kernel alike.
 */
#define FUZZ_NAME "fuzz_image"

#include "fuzz_common.h"

#include "mcc_image.h"
#include "mcc_sad.h"

/* Search a cut-out quarter of img with kernel; abort unless found with SAD 0. */
static void
search_quarter(const mcc_image *img, int kernel)
{
	mcc_image	p;
	mcc_error	err;
	mcc_sad_hit hit;
	uint32_t	n;
	uint32_t	w = img->width / 2 ? img->width / 2 : 1,
				h = img->height / 2 ? img->height / 2 : 1;
	mcc_sad_request req = {img, &p, NULL, 1, 1, kernel};

	if (mcc_image_crop(img, img->width - w, img->height - h, w, h, &p, &err) != MCC_OK)
		die("crop", &err);
	if (mcc_sad_run(&req, &hit, &n, &err) != MCC_OK)
		die("sad", &err);
	if (n != 1 || hit.sad != 0 ||
		mcc_sad_at(img, &p, hit.x, hit.y) != 0)
		die("cut-out quarter not found with SAD 0", NULL);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	mcc_image_info info;
	mcc_image	img,
				back;
	mcc_error	err;
	uint8_t    *pgm;
	size_t		n;

	if (mcc_image_probe(data, size, &info, &err) != MCC_OK)
	{
		if (err.message[0] == '\0')
			die("probe failed without a message", NULL);
		return 0;
	}
	if ((uint64_t) info.width * info.height > (1u << 20))
		return 0;
	img.stride = info.width + 1;
	img.pixels = malloc(img.stride * info.height);
	if (mcc_image_decode(data, size, &img, &err) != MCC_OK)
	{
		if (err.message[0] == '\0')
			die("decode failed without a message", NULL);
		free(img.pixels);
		return 0;
	}
	if (img.width != info.width || img.height != info.height)
		die("decoded size differs from the header", NULL);
	n = mcc_image_pgm_size(img.width, img.height);
	pgm = malloc(n);
	if (mcc_image_write_pgm(&img, pgm) != n)
		die("PGM writer size", NULL);
	back.stride = img.width;
	back.pixels = malloc((size_t) img.width * img.height);
	if (mcc_image_decode(pgm, n, &back, &err) != MCC_OK)
		die("PGM round trip", &err);
	for (uint32_t y = 0; y < img.height; y++)
		if (memcmp(back.pixels + (size_t) y * back.stride, img.pixels + (size_t) y * img.stride, img.width))
			die("PGM round trip changed pixels", NULL);
	if (img.width <= 64 && img.height <= 64)
	{
		search_quarter(&img, MCC_SAD_REFERENCE);
		search_quarter(&img, MCC_SAD_AUTO);
	}
	free(pgm);
	free(back.pixels);
	free(img.pixels);
	return 0;
}
