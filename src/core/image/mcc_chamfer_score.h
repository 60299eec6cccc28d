/*
 * mcc_chamfer_score.h: the per-pose work of the global pose search of
 * chamfer alignment (mcc_chamfer_search.h), shared by the CPU scorer and
 * the CUDA kernel (kernels/impl/mcc_chamfer.cu) so that both compute the same
 * integers.
 *
 * A level of the search holds a band-pass density image of the reference
 * set on a regular 2D grid: int32 values, cell centres at origin + i h. A
 * pose maps a sample point p of the observed set (normalized frame) to
 * x = A p + t, A = s R(theta); the point scores the value of the cell
 * nearest to x (0 outside the grid), and a pose's score is the sum over
 * the sample, an int64. Integer sums do not depend on their order, and the
 * per-point arithmetic is the same source compiled without fused
 * multiply-add on both sides (-ffp-contract=off, --fmad=false), so every
 * device and thread count gives the same scores, hence the same search.
 */
#ifndef MCC_CHAMFER_SCORE_H
#define MCC_CHAMFER_SCORE_H

#include <stdint.h>

#include "mcc_hd.h"

/* Where a level's grid lies: plain data (a kernel argument on the GPU). */
typedef struct mcc_chamfer_sgeom
{
	int			nx;				/* cells per row */
	int			ny;				/* rows */
	double		origin[2];		/* centre of cell (0, 0) */
	double		inv_h;			/* 1 / cell side */
} mcc_chamfer_sgeom;

/* A pose as the search evaluates it: x' = a x + b y + tx, y' = c x + d y + ty. */
typedef struct mcc_chamfer_spose
{
	double		m[6];			/* a b tx c d ty */
} mcc_chamfer_spose;

/* Value of the cell nearest to (x, y); 0 outside the grid (and for NaN). */
MCC_HD int32_t
mcc_chamfer_score_cell(const mcc_chamfer_sgeom *g, const int32_t *v, double x, double y)
{
	double		fx = (x - g->origin[0]) * g->inv_h + 0.5;
	double		fy = (y - g->origin[1]) * g->inv_h + 0.5;
	int			ix;
	int			iy;

	if (!(fx >= 0.0) || !(fy >= 0.0) || fx >= (double) g->nx || fy >= (double) g->ny)
		return 0;
	ix = (int) fx;
	iy = (int) fy;
	return v[(long long) iy * g->nx + ix];
}

/* The score of one sample point under a pose. */
MCC_HD int32_t
mcc_chamfer_score_point(const mcc_chamfer_sgeom *g, const int32_t *v, const mcc_chamfer_spose *P,
						const double *p)
{
	double		x = P->m[0] * p[0] + P->m[1] * p[1] + P->m[2];
	double		y = P->m[3] * p[0] + P->m[4] * p[1] + P->m[5];

	return mcc_chamfer_score_cell(g, v, x, y);
}

#endif							/* MCC_CHAMFER_SCORE_H */
