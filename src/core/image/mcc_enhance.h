/*
 * mcc_enhance.h: the ridge field of a raw fingerprint image, shared by the
 * elastic matcher's enhancement (mcc_dp2d_verify.h, paper 003 Sec. 8) and
 * minutiae extraction (mcc_extract.h).
 *
 * At the raw image's resolution:
 *   1. segmentation: the standard deviation of every block x block tile,
 *      smoothed over 3 x 3 tiles; foreground where it is above
 *      max(MCC_ENH_MIN_STD, 0.25 x the largest), then one 3 x 3 majority
 *      pass over the tiles;
 *   2. local normalization: (I - mean) / standard deviation over a window
 *      of block + 1 pixels (the deviation at least 1 grey level);
 *   3. orientation: Sobel gradients of the normalized image, the
 *      doubled-angle vector (gx^2 - gy^2, 2 gx gy) averaged over a window of
 *      block + 1 pixels, twice; optionally the gradient energy gx^2 + gy^2
 *      averaged the same way (its ratio to the vector's length is the
 *      coherence, 0 for isotropic texture, 1 for perfectly parallel ridges);
 *   4. even-symmetric Gabor filtering (Hong, Wan and Jain 1998) across the
 *      ridges, over a rectangle's foreground: one of 16 orientations per
 *      pixel, a fixed ridge period, a circular Gaussian envelope, kernels of
 *      zero mean and 3 sigma in radius. The response has zero mean: ridges
 *      (dark) are negative, valleys positive.
 *
 * Doubles throughout, no contraction (-ffp-contract=off): the same bits on
 * every CPU, whatever the order pixels are filtered in.
 */
#ifndef MCC_ENHANCE_H
#define MCC_ENHANCE_H

#include <stdint.h>

#include "mcc_error.h"
#include "mcc_image.h"

#define MCC_ENH_MIN_STD		6.0		/* grey levels: flatter tiles are background */
#define MCC_ENH_ORIENTS		16		/* Gabor orientations */
#define MCC_ENH_PERIOD_STEP	0.25	/* pixels: the period bins of a period map */
#define MCC_ENH_PERIOD_BINS	109		/* bins 0..108: 3 to 30 pixels */

/* The field of one image; every array is w x h, row-major, stride w. */
typedef struct mcc_enh
{
	uint32_t	w;
	uint32_t	h;
	uint32_t	block;			/* segmentation tile; windows of block + 1 */
	uint8_t    *mask;			/* 1 foreground, 0 background */
	double	   *norm;			/* locally normalized intensity */
	double	   *oc;				/* averaged gx^2 - gy^2 (cos 2 phi of the gradient) */
	double	   *os;				/* averaged 2 gx gy (sin 2 phi) */
	double	   *energy;			/* averaged gx^2 + gy^2, or NULL (not asked) */
	double	   *resp;			/* Gabor response, 0 where not filtered */
	double	   *scratch;		/* w x h doubles free for the caller after init */
	double	   *integral;		/* (w + 1) (h + 1) doubles, box filters */
	void	   *mem;
} mcc_enh;

/*
 * Compute steps 1-3 for raw (block 4..64) into e, which owns its memory
 * until mcc_enh_free(). with_energy: also fill e->energy. MCC_ERR_MEMORY.
 */
mcc_status	mcc_enh_init(mcc_enh *e, const mcc_image *raw, uint32_t block, int with_energy,
						 mcc_error *err);

/* Free what mcc_enh_init() allocated (e may be zeroed or freed already). */
void		mcc_enh_free(mcc_enh *e);

/*
 * Step 4 over the foreground pixels of [x0, x1) x [y0, y1) into e->resp
 * (background pixels of the rectangle get 0; pixels outside it are left as
 * they are). period 3..30, sigma 1..16 pixels (checked by the callers).
 * MCC_ERR_MEMORY.
 */
mcc_status	mcc_enh_gabor(mcc_enh *e, double period, double sigma, uint32_t x0, uint32_t y0,
						  uint32_t x1, uint32_t y1, mcc_error *err);

/*
 * Step 4 with a period per pixel: pmap (w x h, pixels), each pixel's
 * period clamped to 3..30 and rounded to a bin of MCC_ENH_PERIOD_STEP
 * (kernels are made for the bins and orientations met). MCC_ERR_MEMORY.
 */
mcc_status	mcc_enh_gabor_map(mcc_enh *e, const float *pmap, double sigma, uint32_t x0,
							  uint32_t y0, uint32_t x1, uint32_t y1, mcc_error *err);

/* The bin of a period (clamped to 3..30), and the period of a bin. */
int			mcc_enh_period_bin(double period);
double		mcc_enh_bin_period(int bin);

/*
 * The response of the Gabor kernels to a cosine of amplitude 1 and the
 * kernels' period across the ridges (0 without memory): a pattern of
 * perfect ridges of unit standard deviation gives responses of mean
 * absolute value gain * sqrt(2) * 2 / pi.
 */
double		mcc_enh_gabor_gain(double period, double sigma);

/*
 * dst = the mean of src over the (2r+1)^2 window around each pixel, the
 * window clipped to the image; integral: (w+1)(h+1) doubles of scratch.
 */
void		mcc_enh_box_mean(const double *src, uint32_t w, uint32_t h, uint32_t r,
							 double *integral, double *dst);

#endif							/* MCC_ENHANCE_H */
