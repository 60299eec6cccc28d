/*
 * mcc_image_int.h: the PNG half of mcc_image.c, private to src/core.
 */
#ifndef MCC_IMAGE_INT_H
#define MCC_IMAGE_INT_H

#include "mcc_image.h"

#define MCC_PNG_SIGNATURE_LEN 8

/* Whether data starts with the 8-byte PNG signature. */
int			mcc_png_is_png(const uint8_t *data, size_t len);

/* Header of a PNG image (mcc_image_probe for PNG data). */
mcc_status	mcc_png_probe(const uint8_t *data, size_t len, mcc_image_info *info,
						  mcc_error *err);

/* Decode a PNG image (mcc_image_decode for PNG data). */
mcc_status	mcc_png_decode(const uint8_t *data, size_t len, mcc_image *img,
						   mcc_error *err);

#endif							/* MCC_IMAGE_INT_H */
