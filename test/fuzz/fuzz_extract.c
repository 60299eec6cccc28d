/*
 * fuzz_extract.c: libFuzzer harness for minutiae extraction
 * (mcc_extract.h) on arbitrary pixels.
 *
 * Input: byte 0 and 1 give the width and height (48..111), byte 2 the
 * resolution (250..1015 dpi, above 1000 must be refused), the rest the
 * pixels, row by row (repeated when short). Extraction must return, with a
 * message on failure; minutiae it returns must be valid, inside the image,
 * and the same when extracted again.
 *
 * Seeds (test/fuzz/seeds/fuzz_extract): a 60 x 60 ridge pattern of period
 * 9 with one phase dislocation at its centre (pixel 128 + 100 cos(2 pi y /
 * 9 + atan2(y - 30, x - 30)), at 499 dpi) and a flat 48 x 48 image.
 */
#define FUZZ_NAME "fuzz_extract"

#include "fuzz_common.h"

#include "mcc_extract.h"
#include "mcc_image.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	mcc_extract_params p;
	mcc_minutiae a,
				b;
	mcc_image	img;
	mcc_error	err;
	mcc_status	st;
	size_t		n;

	if (size < 4)
		return 0;
	img.width = 48 + data[0] % 64;
	img.height = 48 + data[1] % 64;
	img.stride = img.width + 3;
	img.pixels = malloc(img.stride * img.height);
	n = size - 3;
	for (uint32_t y = 0; y < img.height; y++)
		for (uint32_t x = 0; x < img.width; x++)
			img.pixels[y * img.stride + x] = data[3 + ((size_t) y * img.width + x) % n];
	mcc_extract_params_default(&p);
	p.dpi = 250 + 3u * data[2];
	st = mcc_extract_minutiae(&img, &p, &a, NULL, NULL, &err);
	if (p.dpi > MCC_EXTRACT_MAX_DPI)
	{
		if (st != MCC_ERR_RANGE)
			die("a resolution over the maximum was not refused", &err);
	}
	else if (st != MCC_OK)
		check_failure(st, &err);
	else
	{
		if (mcc_minutiae_validate(&a, &err) != MCC_OK)
			die("invalid minutiae", &err);
		if (a.width != img.width || a.height != img.height || a.dpi != p.dpi)
			die("wrong frame", NULL);
		if (mcc_extract_minutiae(&img, &p, &b, NULL, NULL, &err) != MCC_OK || !same_set(&a, &b))
			die("not the same minutiae twice", &err);
	}
	free(img.pixels);
	return 0;
}
