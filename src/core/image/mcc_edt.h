/*
 * mcc_edt.h: exact Euclidean distance transform of a point set on a regular
 * grid (2D or 3D), as the nearest-point ("feature") transform that parametric
 * chamfer alignment reads (paper 004, Sec. 2: the residual vector r(x) from
 * a location to its closest reference point, by lookup).
 *
 * The grid covers the points' bounding box grown by a margin on every side;
 * nodes are h apart (the resolution). Each reference point is snapped to the
 * grid node nearest to it (when several share a node, the one closest to the
 * node wins, ties by lower index). For every node the build stores the index
 * of the reference point whose snapped node is nearest to it in exact
 * squared Euclidean distance: the separable lower-envelope algorithm of
 * Felzenszwalb and Huttenlocher (Cornell TR2004-1963, paper 004's [25]),
 * one pass per axis, O(cells) time, with the argmin carried along. Node
 * distances are integers in cell units, so the transform is exact with
 * respect to the snapped points; with respect to the points themselves the
 * stored point is nearest to within h * sqrt(dim) (docs/alignment.md).
 *
 * A lookup takes the grid node nearest to a location (clamped to the grid
 * outside it) and returns that node's point; the caller forms the residual
 * with the point's real coordinates. mcc_chamfer_model.h has the same lookup
 * as an inline function that CUDA kernels share.
 *
 * Memory: 4 bytes per cell (int32 point index) plus 4 * dim bytes per point
 * while building. The caller bounds the cell count (max_cells): a grid that
 * would exceed it is MCC_ERR_LIMIT, before anything is allocated.
 */
#ifndef MCC_EDT_H
#define MCC_EDT_H

#include <stddef.h>
#include <stdint.h>

#include "mcc_error.h"
#include "mcc_hd.h"

#define MCC_EDT_MAX_DIM			3
#define MCC_EDT_MAX_SIDE		65535			/* nodes per axis */
#define MCC_EDT_DEFAULT_MAX_CELLS	((size_t) 1 << 24)	/* 64 MiB of indices */
#define MCC_EDT_AUTO_MIN_CELLS	((size_t) 1 << 16)
#define MCC_EDT_AUTO_MAX_CELLS	((size_t) 1 << 22)

/* Where the grid lies: plain data, passed by value to CUDA kernels. */
typedef struct mcc_edt_geom
{
	int			dim;			/* 2 or 3 */
	int			n[MCC_EDT_MAX_DIM];	/* nodes per axis (1 on unused axes) */
	double		origin[MCC_EDT_MAX_DIM];	/* coordinates of node 0 */
	double		h;				/* node spacing */
	double		inv_h;			/* 1 / h, the factor lookups multiply by */
} mcc_edt_geom;

/* A built transform. */
typedef struct mcc_edt
{
	mcc_edt_geom geom;
	size_t		cells;			/* n[0] * n[1] * n[2] */
	int32_t    *site;			/* per node (x fastest): nearest point index */
} mcc_edt;

/* How to build one; zero-fill, then set what differs from the defaults. */
typedef struct mcc_edt_opts
{
	double		resolution;		/* node spacing h; 0 = automatic (below) */
	double		margin;			/* grown on every side of the bounding box; >= 0 */
	size_t		max_cells;		/* 0 = MCC_EDT_DEFAULT_MAX_CELLS */
	volatile int *cancel;		/* optional: nonzero stops the build */
	int			(*poll) (void *arg);	/* optional: called between lines on the
										 * calling thread; nonzero cancels */
	void	   *poll_arg;
} mcc_edt_opts;

/*
 * Grid geometry for n points of dimension dim (x0 y0 [z0] x1 ...) without
 * building it: checks dim, n, finite coordinates, the resolution and the cell
 * limit. Automatic resolution aims at 16 cells per point in 2D and 64 in 3D
 * (about a quarter of the mean point spacing), within
 * [MCC_EDT_AUTO_MIN_CELLS, min(MCC_EDT_AUTO_MAX_CELLS, max_cells)].
 */
mcc_status	mcc_edt_plan(const double *pts, size_t n, int dim, const mcc_edt_opts *opts,
						 mcc_edt_geom *geom, size_t *cells, mcc_error *err);

/*
 * Build the transform of n points. On success out->site is malloc'd (free it
 * with mcc_edt_free); on failure out is left empty. A cancel returns
 * MCC_ERR_INTERNAL with the message "distance transform canceled".
 */
mcc_status	mcc_edt_build(const double *pts, size_t n, int dim, const mcc_edt_opts *opts,
						  mcc_edt *out, mcc_error *err);

/* Release a transform (safe on an empty or already freed one). */
void		mcc_edt_free(mcc_edt *e);

/*
 * Index of the grid node nearest to x: per axis, round half up of
 * (x - origin) * inv_h, clamped to the grid (NaN goes to node 0). The build
 * snaps reference points with this same function. The _n form takes the
 * dimension as an argument, so that callers with a constant dimension get
 * straight-line code (and no local memory on a GPU).
 */
MCC_HD size_t
mcc_edt_cell_n(const mcc_edt_geom *g, const double *x, int dim)
{
	size_t		idx = 0;
	size_t		stride = 1;

	for (int k = 0; k < dim; k++)
	{
		double		v = (x[k] - g->origin[k]) * g->inv_h;
		int			i;

		if (!(v > 0.0))
			i = 0;
		else if (v >= (double) (g->n[k] - 1))
			i = g->n[k] - 1;
		else
			i = (int) (v + 0.5);
		idx += (size_t) i * stride;
		stride *= (size_t) g->n[k];
	}
	return idx;
}

/* mcc_edt_cell_n with the grid's own dimension. */
MCC_HD size_t
mcc_edt_cell(const mcc_edt_geom *g, const double *x)
{
	return mcc_edt_cell_n(g, x, g->dim);
}

/* Index of the reference point stored for the node nearest to x. */
int32_t		mcc_edt_nearest(const mcc_edt *e, const double *x);

/* Coordinates of node idx into x[dim]. */
void		mcc_edt_node(const mcc_edt_geom *g, size_t idx, double *x);

#endif							/* MCC_EDT_H */
