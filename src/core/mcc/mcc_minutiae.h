/*
 * mcc_minutiae.h: a finger view's minutiae, the input of every template.
 *
 * Conventions (mcc-spec §1, ISO/IEC 19794-2): pixels, origin at the top-left
 * corner of the image, x to the right, y down; theta in radians in [0, 2pi),
 * counter-clockwise as seen on screen, so the direction's unit vector in image
 * coordinates is (cos theta, -sin theta). Every importer converts to this
 * frame; every exporter converts from it.
 */
#ifndef MCC_MINUTIAE_H
#define MCC_MINUTIAE_H

#include <stdint.h>

#include "mcc_error.h"

#define MCC_MAX_MINUTIAE	256		/* MaxC of paper 000, and ISO's own count limit */
#define MCC_MAX_IMAGE_SIDE	16383	/* ISO/ANSI coordinates are 14-bit */
#define MCC_MAX_DPI			10000
#define MCC_DEFAULT_DPI		500
#define MCC_TWO_PI			6.28318530717958647692

typedef enum mcc_minutia_type
{
	MCC_TYPE_OTHER = 0,
	MCC_TYPE_ENDING = 1,
	MCC_TYPE_BIFURCATION = 2
} mcc_minutia_type;

typedef struct mcc_minutia
{
	int16_t		x;				/* 0 <= x < width */
	int16_t		y;				/* 0 <= y < height */
	float		theta;			/* radians, 0 <= theta < 2pi */
	uint8_t		type;			/* mcc_minutia_type */
	uint8_t		quality;		/* 0..100 (0: unknown, as ISO) */
} mcc_minutia;

typedef struct mcc_minutiae
{
	uint16_t	width;			/* image width in pixels, 1..MCC_MAX_IMAGE_SIDE */
	uint16_t	height;			/* image height in pixels */
	uint16_t	dpi;			/* resolution, pixels per inch */
	uint16_t	count;			/* 0..MCC_MAX_MINUTIAE */
	mcc_minutia m[MCC_MAX_MINUTIAE];
} mcc_minutiae;

/*
 * Check a minutiae set against the conventions above: image size and dpi in
 * range, every coordinate inside the image, every angle finite and in
 * [0, 2pi), types and qualities valid. Returns MCC_OK or fills err.
 */
mcc_status	mcc_minutiae_validate(const mcc_minutiae *ms, mcc_error *err);

/* Name of a minutia type ("ending", "bifurcation", "other"). */
const char *mcc_minutia_type_name(int type);

/* Parse a minutia type name; returns -1 if unknown. */
int			mcc_minutia_type_parse(const char *name, int len);

/* theta in radians to the byte angle of z = 256 (ISO 19794-2 unit). */
uint8_t		mcc_angle_to_byte(double theta);

/* Wrap any finite angle into [0, 2pi) as a float that is strictly below 2pi. */
float		mcc_angle_normalize(double theta);

#endif							/* MCC_MINUTIAE_H */
