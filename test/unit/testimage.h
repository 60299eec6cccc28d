/*
 * testimage.h: images for the SAD tests (test_sad.c, test_sad_gpu_emu.c,
 * test_sad_fvc.c, test/gpu/sad_gpu_check.c): one xorshift64* generator,
 * whose state each test seeds itself, images of random bytes with some
 * stride slack, and image files decoded.
 */
#ifndef MCC_TESTIMAGE_H
#define MCC_TESTIMAGE_H

#include <stdint.h>
#include <stdlib.h>

#include "mcc_image.h"
#include "unit.h"

/* xorshift64*: the high 32 bits of the next number of state *s. */
static inline uint32_t
ti_rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return (uint32_t) ((*s * 0x2545F4914F6CDD1Dull) >> 32);
}

/* A w x h image of random bytes, stride w + 0..slack-1 (pixels malloc'd). */
static inline mcc_image
ti_random_image(uint64_t *s, uint32_t w, uint32_t h, uint32_t slack)
{
	mcc_image	img = {w, h, w + ti_rnd(s) % slack, NULL};

	img.pixels = malloc(img.stride * h);
	for (size_t i = 0; i < img.stride * h; i++)
		img.pixels[i] = (uint8_t) ti_rnd(s);
	return img;
}

/* Decode an image file (PNG, PGM) into img (pixels malloc'ed); 0 on success. */
static inline int
ti_load_image(const char *path, mcc_image *img)
{
	size_t		len;
	uint8_t    *d = unit_read_file(path, &len);
	mcc_image_info info;
	mcc_error	err;
	int			ok;

	img->pixels = NULL;
	if (d == NULL)
		return -1;
	ok = mcc_image_probe(d, len, &info, &err) == MCC_OK;
	if (ok)
	{
		img->stride = info.width;
		img->pixels = malloc((size_t) info.width * info.height);
		ok = mcc_image_decode(d, len, img, &err) == MCC_OK;
	}
	free(d);
	if (!ok)
		printf("# %s: %s\n", path, err.message);
	return ok ? 0 : -1;
}

#endif							/* MCC_TESTIMAGE_H */
