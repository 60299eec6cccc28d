/*
 * testimage.h: random images for the SAD tests (test_sad.c,
 * test_sad_gpu_emu.c, test/gpu/sad_gpu_check.c): one xorshift64*
 * generator, whose state each test seeds itself, and images of random
 * bytes with some stride slack.
 */
#ifndef MCC_TESTIMAGE_H
#define MCC_TESTIMAGE_H

#include <stdint.h>
#include <stdlib.h>

#include "mcc_image.h"

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

#endif							/* MCC_TESTIMAGE_H */
