/*
 * mcc_extract_int.h: what the files of minutiae extraction share
 * (mcc_extract.c: the pipeline; mcc_extract_mask.c: foreground, distances
 * and blobs; mcc_extract_min.c: minutiae on the skeleton;
 * mcc_extract_resample.c: the image at the working resolution).
 */
#ifndef MCC_EXTRACT_INT_H
#define MCC_EXTRACT_INT_H

#include <stdint.h>

#include "mcc_enhance.h"
#include "mcc_extract.h"

/* What a branch trace ran into. */
enum
{
	XT_LENGTH = 0,				/* the length limit */
	XT_MINUTIA,					/* another candidate minutia (other) */
	XT_END,						/* a line end that is not a candidate */
	XT_JUNCTION					/* a junction that is not a candidate */
};

/* One branch of a candidate, traced along the skeleton. */
typedef struct xt_branch
{
	int			kind;			/* XT_* */
	int			other;			/* candidate index for XT_MINUTIA, else -1 */
	int			len;			/* pixels walked */
	float		vx;				/* from the minutia to the point `trace` pixels on */
	float		vy;				/* (or the last one), image frame, y down */
} xt_branch;

/* A candidate minutia. */
typedef struct xt_min
{
	int			x;
	int			y;
	int			type;			/* MCC_TYPE_ENDING or MCC_TYPE_BIFURCATION */
	int			nbr;			/* branches: 1 or 3 */
	xt_branch	br[3];
	double		theta;			/* ISO direction, radians */
	double		coherence;		/* 0..1 */
	double		clarity;		/* 0..~1 */
	double		quality;		/* 0..1 */
	int			removed;		/* 0, or the rule that removed it (XR_*) */
} xt_min;

enum
{
	XR_KEEP = 0,
	XR_SHORT_RIDGE,
	XR_SPUR,
	XR_BRIDGE,
	XR_GAP,
	XR_CLOSE,
	XR_COHERENCE,
	XR_CLARITY,
	XR_BORDER
};

/* The state of one extraction. */
typedef struct xt_ctx
{
	uint32_t	w;
	uint32_t	h;
	mcc_extract_params p;		/* at 500 dpi, the working resolution */
	const mcc_image *img;		/* the image at the working resolution */
	mcc_enh		e;
	uint8_t    *fg;				/* 1 foreground (refined) */
	float	   *gperiod;		/* Gabor period per pixel, or NULL (the fixed p.period) */
	float	   *dist;			/* distance to the background or the edge, pixels */
	uint8_t    *bin;			/* 1 ridge */
	uint8_t    *skel;			/* 1 skeleton */
	int32_t    *idx;			/* candidate index + 1 at its pixel, else 0 */
	uint32_t   *stamp;			/* visit marks of branch traces */
	int32_t    *queue;			/* w x h ints for flood fills */
	xt_min	   *m;
	int			nm;
	int			cap;
} xt_ctx;

/* Refine e.mask into fg (tiles, then pixels at the edge) and compute dist: returns the foreground pixels. */
uint32_t	xt_foreground(xt_ctx *c);

/*
 * The local ridge period (mcc_extract_freq.c), pixels, into period (w x h
 * floats); fallback where the print shows no measurable ridges; *median
 * (median may be NULL): the median over the blocks measured (fallback if
 * none). MCC_ERR_MEMORY.
 */
mcc_status	xt_ridge_period(xt_ctx *c, double fallback, float *period, double *median,
							mcc_error *err);

/* Remove ridge fragments and valley holes under p.min_blob pixels from bin. */
void		xt_clean_blobs(xt_ctx *c);

/*
 * Find candidates on skel, trace them, compute directions and qualities,
 * and mark the spurious ones removed (counted in stats).
 * MCC_ERR_MEMORY.
 */
mcc_status	xt_minutiae(xt_ctx *c, mcc_extract_stats *stats, mcc_error *err);

/*
 * src resampled to w2 x h2 pixels into dst (stride w2): a tent filter, an
 * average over the covered pixels when shrinking. MCC_ERR_MEMORY.
 */
mcc_status	xt_resample(const mcc_image *src, uint32_t w2, uint32_t h2, uint8_t *dst,
						mcc_error *err);

/* Pixel k of an axis resampled from n_in to n_out pixels, back in the n_in frame. */
int			xt_unscale(int k, uint32_t n_in, uint32_t n_out);

/* A w2 x h2 step image back to w x h pixels (nearest pixel). */
void		xt_image_back(const uint8_t *small, uint32_t w2, uint32_t h2, uint8_t *big,
						  uint32_t w, uint32_t h);

#endif							/* MCC_EXTRACT_INT_H */
