/*
 * image_pg.h: images in the PostgreSQL layer, shared by every image
 * feature (SAD search now, elastic matching later).
 *
 * An image argument is a bytea holding a PGM (P5) or PNG (src/core's
 * mcc_image.h decodes it) or a two-dimensional smallint array [row][column]
 * of values 0..255. Both become an mcc_image whose pixels are palloc'd in
 * the current memory context; errors are raised with the SQLSTATE of
 * their mcc_status (22P02, 22P03, 22023, 54000) or, for arrays, 22004 for
 * NULL elements and 22003 for values outside 0..255.
 */
#ifndef IMAGE_PG_H
#define IMAGE_PG_H

#include "mcc_pg.h"

#include "utils/array.h"

#include "mcc_image.h"

/* mcc.image_threads: worker threads of one image search (src/image_io.c). */
extern int	mcc_image_threads;

/* Decode a PGM or PNG bytea; info (may be NULL) gets its header. */
extern void mcc_pg_image_from_bytea(const bytea *b, mcc_image *img, mcc_image_info *info);

/* A smallint[][] as an image (what names the argument in messages: "target image"). */
extern void mcc_pg_image_from_array(ArrayType *a, const char *what, mcc_image *img);

/* The image as a binary PGM bytea (maxval 255). */
extern bytea *mcc_pg_image_to_pgm(const mcc_image *img);

#endif							/* IMAGE_PG_H */
