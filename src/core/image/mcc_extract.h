/*
 * mcc_extract.h: minutiae of a fingerprint image (docs/images.md,
 * "Minutiae extraction").
 *
 * The image is an 8-bit grey print, dark ridges on a light background, at
 * p->dpi (500 by default). Every length below is in pixels at 500 dpi, the
 * working resolution: an image at another resolution is resampled to
 * 500 dpi first (a tent filter, an average over the covered pixels when
 * shrinking: mcc_extract_resample.c), the steps run on it, and the
 * minutiae's coordinates are mapped back to the image's own pixels.
 * Scaling the lengths instead (the first version) left the pixel-level
 * steps at the image's scale: 3 x 3 Sobel gradients, 16 Gabor
 * orientations, thinning, crossing numbers and 8-neighbour traces do not
 * scale with a parameter, and on FVC2002 DB2 (569 dpi) the error rates
 * were higher than with the same image treated as 500 dpi
 * (docs/accuracy.md, section 11).
 *
 * Steps:
 *   1. the ridge field of mcc_enhance.h: segmentation into 16 x 16 tiles,
 *      local normalization, orientation and its coherence;
 *   2. the foreground: the tile mask with its holes filled and its largest
 *      component kept, refined to pixels at the print's edge (a pixel
 *      stays where the grey levels' standard deviation over the local
 *      normalization's window is at least edge_floor times its 95th
 *      percentile over the tile mask: the flat part of a tile that the
 *      edge crosses goes), and the distance of every pixel to the
 *      background or the image edge;
 *   3. Gabor filtering of the foreground (period 7.5, sigma 4 pixels) and
 *      binarization at 0: ridge where the response is negative. The
 *      period is shorter than the ridges' own (about 9 pixels at 500 dpi):
 *      it keeps neighbouring ridges apart where they run close, and gave
 *      the lowest error rates on FVC2002 (docs/accuracy.md, section 11);
 *      the clarity of the ridges is the mean absolute response over a
 *      block, relative to what perfect ridges give (1). With
 *      period_ratio > 0 (off by default: measured worse on FVC2002 DB2,
 *      DB4, docs/accuracy.md section 11) the period is instead that
 *      ratio times the local ridge period (mcc_extract_freq.c, Hong, Wan
 *      and Jain 1998), each pixel's clarity against its own kernel;
 *   4. ridge fragments and valley holes smaller than min_blob pixels are
 *      removed;
 *   5. thinning (mcc_thin.h, 8-connected one-pixel-wide skeleton);
 *   6. minutiae where the skeleton's crossing number is 1 (ending) or 3
 *      (bifurcation); each is traced along its one or three branches;
 *   7. spurious minutiae are removed: short ridges (two endings joined by
 *      under short_ridge pixels of skeleton), spurs (an ending joined to a
 *      bifurcation under spur pixels), bridges and lakes (two bifurcations
 *      joined under bridge pixels), broken ridges (two endings facing each
 *      other across a gap under gap pixels, on the ridge's line), pairs
 *      closer than close pixels, minutiae where the orientation coherence
 *      is below min_coherence or the ridge clarity below min_clarity,
 *      minutiae within border pixels of the background or the image edge,
 *      and endings whose ridge, continued for border_ray pixels past its
 *      end, leaves the print (ridges cut by the print's edge). A length of
 *      0 turns its rule off;
 *   8. direction (mcc_minutiae.h, ISO 19794-2): an ending points along its
 *      ridge, into it; a bifurcation points between its two branches,
 *      away from the stem. The traced branches give the sense, the
 *      orientation field the angle; quality 1..100 from the clarity and
 *      the distance to the background;
 *   9. at most MCC_MAX_MINUTIAE, the best by quality (ties: position),
 *      listed in raster order.
 *
 * Plain C and doubles without contraction: the same minutiae on every CPU.
 */
#ifndef MCC_EXTRACT_H
#define MCC_EXTRACT_H

#include <stdint.h>

#include "mcc_error.h"
#include "mcc_image.h"
#include "mcc_minutiae.h"

#define MCC_EXTRACT_MIN_SIDE	48		/* pixels, each side, also at 500 dpi */
#define MCC_EXTRACT_MAX_SIDE	2048	/* pixels, each side, also at 500 dpi (about 80 bytes a pixel) */
#define MCC_EXTRACT_MIN_DPI		250
#define MCC_EXTRACT_MAX_DPI		1000
#define MCC_EXTRACT_WORK_DPI	500		/* the resolution the steps run at */

/* Parameters; lengths in pixels at 500 dpi, defaults in brackets. */
typedef struct mcc_extract_params
{
	uint32_t	dpi;			/* resolution of the image (500) */
	uint32_t	min_minutiae;	/* fewer is an error, 0: never (0) */
	uint32_t	block;			/* segmentation tile, 4..32 (16) */
	double		period;			/* Gabor period across the ridges (7.5) */
	double		period_ratio;	/* > 0: Gabor period = this x the local ridge period (0: off) */
	double		sigma;			/* Gabor envelope (4) */
	double		min_blob;		/* smallest ridge fragment or hole kept, pixels (40) */
	double		trace;			/* branch length that gives directions (10) */
	double		short_ridge;	/* (11) */
	double		spur;			/* (0: off) */
	double		bridge;			/* (7) */
	double		gap;			/* (8) */
	double		close;			/* (4) */
	double		border;			/* (8) */
	double		border_ray;		/* (16) */
	double		min_coherence;	/* 0..1 (0.15) */
	double		min_clarity;	/* 0..2 (0.25) */
	double		edge_floor;		/* 0..1 (0.15; 0: the tile mask alone) */
} mcc_extract_params;

/* The defaults (above, in brackets). */
void		mcc_extract_params_default(mcc_extract_params *p);

/* Check parameters: MCC_ERR_RANGE for the dpi, MCC_ERR_VALUE for the rest. */
mcc_status	mcc_extract_params_check(const mcc_extract_params *p, mcc_error *err);

/*
 * Set a parameter by name ("block", "period", "border", ...; not dpi or
 * min_minutiae) for tools: MCC_ERR_VALUE for an unknown name.
 */
mcc_status	mcc_extract_params_set(mcc_extract_params *p, const char *name, double value,
								   mcc_error *err);

/* What each step found (for tools and tests), in pixels at 500 dpi. */
typedef struct mcc_extract_stats
{
	uint32_t	foreground;		/* foreground pixels */
	uint32_t	candidates;		/* crossing-number minutiae */
	uint32_t	short_ridge;	/* removed by each rule */
	uint32_t	spur;
	uint32_t	bridge;
	uint32_t	gap;
	uint32_t	close;
	uint32_t	coherence;
	uint32_t	clarity;
	uint32_t	border;
	uint32_t	capped;			/* beyond MCC_MAX_MINUTIAE */
} mcc_extract_stats;

/*
 * Images of the steps, w x h bytes each (stride w), in the image's pixels
 * (from the 500-dpi steps by the nearest pixel); any may be NULL.
 */
typedef struct mcc_extract_images
{
	uint8_t    *mask;			/* 255 foreground, 0 background */
	uint8_t    *ridges;			/* 0 ridge, 255 valley or background (step 4) */
	uint8_t    *skeleton;		/* 0 skeleton, 255 elsewhere */
} mcc_extract_images;

/*
 * Extract the minutiae of img into out (width, height, dpi from the image
 * and p). Errors: MCC_ERR_VALUE for a side under MCC_EXTRACT_MIN_SIDE, no
 * foreground ("no fingerprint ridges found") or fewer than p->min_minutiae
 * minutiae; MCC_ERR_LIMIT for a side over MCC_EXTRACT_MAX_SIDE (either
 * side limit also applies to the image resampled to 500 dpi);
 * MCC_ERR_RANGE for the dpi; MCC_ERR_MEMORY. stats and images may be NULL.
 */
mcc_status	mcc_extract_minutiae(const mcc_image *img, const mcc_extract_params *p,
								 mcc_minutiae *out, mcc_extract_stats *stats,
								 const mcc_extract_images *images, mcc_error *err);

#endif							/* MCC_EXTRACT_H */
