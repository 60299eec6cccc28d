/*
 * mcc_chamfer_model.h: the per-point work of parametric chamfer alignment
 * (paper 004, Tables 1-2), shared by the CPU evaluator (mcc_chamfer_cpu.c)
 * and the CUDA kernel (kernels/impl/mcc_chamfer.cu) so that both run the same
 * arithmetic; only the order of the final sums differs.
 *
 * For one observed point p (in the normalized frame of mcc_chamfer.h) and a
 * transform T, the point adds to a vector of sums S:
 *
 *   S[0]            f: min(|r|^2, tau^2), r = q - T(p), q the reference
 *                   point the distance transform stores for T(p)'s node
 *   S[1]            N: 1 if |r|^2 <= tau^2 (an inlier), else 0
 *   S[2 .. 2+L)     b = J^T r over inliers (L parameters; the gradient of f
 *                   is -2 b, paper 004 eq. 5)
 *   S[2+L .. 2+L+K) h: the K reduced Hessian terms of Table 2, from which
 *                   mcc_chamfer_expand() rebuilds H = sum J^T J (eq. 7)
 *
 * Outliers (|r| > tau) add tau^2 to f and nothing else: a truncated
 * quadratic, so that unmatched points do not pull the fit. tau = infinity
 * gives the paper's plain objective.
 *
 * Parameterizations (L, K) and their Jacobians at the current transform:
 *   2D euclidean   [theta, tx, ty]        (3, 3)   Table 1; rho = (-u_y, u_x), u = R p
 *   2D similarity  [s, theta, tx, ty]     (4, 3)   Table 1; rho = u
 *   2D affine      [a11 a12 tx a21 a22 ty](6, 5)   Table 1 on p
 *   2D projective  8 entries of H, h33=1  (8, 12)  compositional (paper 004
 *                  Appendix A, eq. 14): J taken at the identity on p' = T(p)
 *   3D euclidean   [w (3), t (3)]         (6, 9)   R <- exp([w]x) R: J_w = -[u]x
 *   3D similarity  [s, w (3), t (3)]      (7, 9)   J_s = u, J_w = -s [u]x
 *   3D affine      rows of [A | t]        (12, 9)  on p
 *   3D projective  15 entries, h44=1      (15, 25) compositional, as in 2D
 * The reduced terms are the distinct monomials of J^T J: (u_x^2 + u_y^2,
 * u_x, u_y) and so on; mcc_chamfer.c's expansion says where each goes.
 */
#ifndef MCC_CHAMFER_MODEL_H
#define MCC_CHAMFER_MODEL_H

#include <math.h>
#include <stdint.h>

#include "mcc_edt.h"
#include "mcc_hd.h"

typedef enum mcc_xform
{
	MCC_XFORM_EUCLIDEAN = 0,
	MCC_XFORM_SIMILARITY = 1,
	MCC_XFORM_AFFINE = 2,
	MCC_XFORM_PROJECTIVE = 3
} mcc_xform;

#define MCC_XFORM_COUNT			4
#define MCC_CHAMFER_MAX_PARAMS	15
#define MCC_CHAMFER_MAX_TERMS	25
#define MCC_CHAMFER_MAX_SUMS	(2 + MCC_CHAMFER_MAX_PARAMS + MCC_CHAMFER_MAX_TERMS)

/* The transform one evaluation applies: plain data (a kernel argument on the GPU). */
typedef struct mcc_chamfer_xf
{
	int			type;			/* mcc_xform */
	int			dim;			/* 2 or 3 */
	double		m[16];			/* homogeneous (dim+1) x (dim+1), row-major */
	double		r[9];			/* rotation, dim x dim row-major (euclidean, similarity) */
	double		s;				/* scale (similarity); 1 otherwise */
	double		tau2;			/* squared truncation distance; HUGE_VAL for none */
} mcc_chamfer_xf;

/* Parameters L of a transform type. */
MCC_HD int
mcc_chamfer_nparams(int type, int dim)
{
	if (dim == 2)
		return type == MCC_XFORM_EUCLIDEAN ? 3 : type == MCC_XFORM_SIMILARITY ? 4 :
			type == MCC_XFORM_AFFINE ? 6 : 8;
	return type == MCC_XFORM_EUCLIDEAN ? 6 : type == MCC_XFORM_SIMILARITY ? 7 :
		type == MCC_XFORM_AFFINE ? 12 : 15;
}

/* Reduced Hessian terms K of a transform type (Table 2). */
MCC_HD int
mcc_chamfer_nterms(int type, int dim)
{
	if (dim == 2)
		return type <= MCC_XFORM_SIMILARITY ? 3 : type == MCC_XFORM_AFFINE ? 5 : 12;
	return type == MCC_XFORM_PROJECTIVE ? 25 : 9;
}

/* Length of the sum vector: f, N, b (L), h (K). */
MCC_HD int
mcc_chamfer_nsums(int type, int dim)
{
	return 2 + mcc_chamfer_nparams(type, dim) + mcc_chamfer_nterms(type, dim);
}

/*
 * The affine part of one inlier's terms, 2D, at point (x, y) with residual
 * (rx, ry): J^T r into b[0..6), the 5 terms of Table 2 into h. 2D affine
 * is only this; 2D projective adds its own terms at p' = T(p).
 */
MCC_HD void
mcc_chamfer_affine_2d(double x, double y, double rx, double ry, double *b, double *h)
{
	b[0] += x * rx;
	b[1] += y * rx;
	b[2] += rx;
	b[3] += x * ry;
	b[4] += y * ry;
	b[5] += ry;
	h[0] += x * x;
	h[1] += x * y;
	h[2] += x;
	h[3] += y * y;
	h[4] += y;
}

/*
 * The terms 2D euclidean and similarity share, with rho their first
 * column of Table 1 (euclidean (-u_y, u_x), similarity u) and L their
 * parameter count: rho . r into b[0], the translation's r into
 * b[L-2 .. L), the 3 reduced terms (|rho|^2, rho_x, rho_y) into b[L ..).
 */
MCC_HD void
mcc_chamfer_rho_2d(double rho_x, double rho_y, double rx, double ry, int L, double *b)
{
	double	   *h = b + L;

	b[0] += rho_x * rx + rho_y * ry;
	b[L - 2] += rx;
	b[L - 1] += ry;
	h[0] += rho_x * rho_x + rho_y * rho_y;
	h[1] += rho_x;
	h[2] += rho_y;
}

/*
 * Add one inlier's b and h terms, 2D. (px, py) = T(p), (ux, uy) = R p for
 * euclidean and similarity, (x, y) = p.
 */
MCC_HD void
mcc_chamfer_terms_2d(int type, double s, double x, double y, double ux, double uy,
					 double px, double py, double rx, double ry, double *S)
{
	double	   *b = S + 2;

	if (type == MCC_XFORM_EUCLIDEAN)
		mcc_chamfer_rho_2d(-uy, ux, rx, ry, 3, b);	/* rho = J_{j,1} */
	else if (type == MCC_XFORM_SIMILARITY)
	{
		b[1] += s * (ux * ry - uy * rx);
		mcc_chamfer_rho_2d(ux, uy, rx, ry, 4, b);
	}
	else if (type == MCC_XFORM_AFFINE)
		mcc_chamfer_affine_2d(x, y, rx, ry, b, b + 6);
	else
	{
		/* eq. 14 at p' = (px, py) */
		double		xx = px * px;
		double		xy = px * py;
		double		yy = py * py;
		double		pr = px * rx + py * ry;
		double		rho2 = xx + yy;
		double	   *h = b + 8;

		mcc_chamfer_affine_2d(px, py, rx, ry, b, h);
		b[6] -= px * pr;
		b[7] -= py * pr;
		h[5] += xx * px;
		h[6] += xx * py;
		h[7] += xy * py;
		h[8] += yy * py;
		h[9] += rho2 * xx;
		h[10] += rho2 * xy;
		h[11] += rho2 * yy;
	}
}

/* The second-order moments of v (with 1) in the 9-term order of 3D affine. */
MCC_HD void
mcc_chamfer_moments_3d(const double *v, double *h)
{
	h[0] += v[0] * v[0];
	h[1] += v[0] * v[1];
	h[2] += v[0] * v[2];
	h[3] += v[0];
	h[4] += v[1] * v[1];
	h[5] += v[1] * v[2];
	h[6] += v[1];
	h[7] += v[2] * v[2];
	h[8] += v[2];
}

/* The affine part of J^T r, 3D, at point v with residual r: b[0..12). */
MCC_HD void
mcc_chamfer_affine_b_3d(const double *v, const double *r, double *b)
{
	for (int c = 0; c < 3; c++)
	{
		b[4 * c + 0] += v[0] * r[c];
		b[4 * c + 1] += v[1] * r[c];
		b[4 * c + 2] += v[2] * r[c];
		b[4 * c + 3] += r[c];
	}
}

/*
 * Add one inlier's b and h terms, 3D. pt = T(p), u = R p (euclidean,
 * similarity), p the normalized point, r the residual.
 */
MCC_HD void
mcc_chamfer_terms_3d(int type, double s, const double *p, const double *u,
					 const double *pt, const double *r, double *S)
{
	double	   *b = S + 2;

	if (type == MCC_XFORM_EUCLIDEAN || type == MCC_XFORM_SIMILARITY)
	{
		/* u x r: the rotation part of J^T r */
		double		cx = u[1] * r[2] - u[2] * r[1];
		double		cy = u[2] * r[0] - u[0] * r[2];
		double		cz = u[0] * r[1] - u[1] * r[0];
		int			o = 0;

		if (type == MCC_XFORM_SIMILARITY)
		{
			b[0] += u[0] * r[0] + u[1] * r[1] + u[2] * r[2];
			b[1] += s * cx;
			b[2] += s * cy;
			b[3] += s * cz;
			o = 1;
		}
		else
		{
			b[0] += cx;
			b[1] += cy;
			b[2] += cz;
		}
		b[o + 3] += r[0];
		b[o + 4] += r[1];
		b[o + 5] += r[2];
		mcc_chamfer_moments_3d(u, b + o + 6);
	}
	else if (type == MCC_XFORM_AFFINE)
	{
		mcc_chamfer_affine_b_3d(p, r, b);
		mcc_chamfer_moments_3d(p, b + 12);
	}
	else
	{
		double		pr = pt[0] * r[0] + pt[1] * r[1] + pt[2] * r[2];
		double		rho2 = pt[0] * pt[0] + pt[1] * pt[1] + pt[2] * pt[2];
		double	   *h = b + 15;
		double		x = pt[0];
		double		y = pt[1];
		double		z = pt[2];

		mcc_chamfer_affine_b_3d(pt, r, b);
		b[12] -= x * pr;
		b[13] -= y * pr;
		b[14] -= z * pr;
		mcc_chamfer_moments_3d(pt, h);
		/* third-order monomials, sorted index triples */
		h[9] += x * x * x;
		h[10] += x * x * y;
		h[11] += x * x * z;
		h[12] += x * y * y;
		h[13] += x * y * z;
		h[14] += x * z * z;
		h[15] += y * y * y;
		h[16] += y * y * z;
		h[17] += y * z * z;
		h[18] += z * z * z;
		/* |p'|^2 times the second-order monomials */
		h[19] += rho2 * (x * x);
		h[20] += rho2 * (x * y);
		h[21] += rho2 * (x * z);
		h[22] += rho2 * (y * y);
		h[23] += rho2 * (y * z);
		h[24] += rho2 * (z * z);
	}
}

/*
 * A point's f and N into S from its squared distance d2: an outlier
 * (d2 > tau2) adds tau2 to f and nothing else; an inlier adds d2 and 1.
 * Returns whether it is an inlier (whose b and h terms follow).
 */
MCC_HD int
mcc_chamfer_add_f(double d2, double tau2, double *S)
{
	if (d2 > tau2)
	{
		S[0] += tau2;
		return 0;
	}
	S[0] += d2;
	S[1] += 1.0;
	return 1;
}

/*
 * One observed point p into the sums S (see the top of this file). dim,
 * type and gh are constants at every call site, so each (dim, type, gh)
 * compiles to its own straight-line code. gh = 0 computes f and N only.
 * A projective transform that sends p to or behind the line at infinity
 * (w <= 0) makes f infinite: the caller rejects that candidate.
 */
MCC_HD void
mcc_chamfer_point(const mcc_chamfer_xf *xf, int dim, int type, int gh,
				  const mcc_edt_geom *g, const int32_t *site, const double *ref,
				  const double *p, double *S)
{
	const double *m = xf->m;
	double		pt[3];
	double		u[3] = {0.0, 0.0, 0.0};
	double		r[3];
	double		d2;
	const double *q;

	if (dim == 2)
	{
		double		x = p[0];
		double		y = p[1];

		if (type <= MCC_XFORM_SIMILARITY)
		{
			u[0] = xf->r[0] * x + xf->r[1] * y;
			u[1] = xf->r[2] * x + xf->r[3] * y;
			pt[0] = xf->s * u[0] + m[2];
			pt[1] = xf->s * u[1] + m[5];
		}
		else if (type == MCC_XFORM_AFFINE)
		{
			pt[0] = m[0] * x + m[1] * y + m[2];
			pt[1] = m[3] * x + m[4] * y + m[5];
		}
		else
		{
			double		w = m[6] * x + m[7] * y + m[8];

			if (!(w > 0.0))
			{
				S[0] += HUGE_VAL;
				return;
			}
			pt[0] = (m[0] * x + m[1] * y + m[2]) / w;
			pt[1] = (m[3] * x + m[4] * y + m[5]) / w;
		}
		q = ref + 2 * (size_t) site[mcc_edt_cell_n(g, pt, 2)];
		r[0] = q[0] - pt[0];
		r[1] = q[1] - pt[1];
		d2 = r[0] * r[0] + r[1] * r[1];
		if (mcc_chamfer_add_f(d2, xf->tau2, S) && gh)
			mcc_chamfer_terms_2d(type, xf->s, x, y, u[0], u[1], pt[0], pt[1], r[0], r[1], S);
	}
	else
	{
		if (type <= MCC_XFORM_SIMILARITY)
		{
			for (int c = 0; c < 3; c++)
				u[c] = xf->r[3 * c] * p[0] + xf->r[3 * c + 1] * p[1] + xf->r[3 * c + 2] * p[2];
			for (int c = 0; c < 3; c++)
				pt[c] = xf->s * u[c] + m[4 * c + 3];
		}
		else if (type == MCC_XFORM_AFFINE)
		{
			for (int c = 0; c < 3; c++)
				pt[c] = m[4 * c] * p[0] + m[4 * c + 1] * p[1] + m[4 * c + 2] * p[2] + m[4 * c + 3];
		}
		else
		{
			double		w = m[12] * p[0] + m[13] * p[1] + m[14] * p[2] + m[15];

			if (!(w > 0.0))
			{
				S[0] += HUGE_VAL;
				return;
			}
			for (int c = 0; c < 3; c++)
				pt[c] = (m[4 * c] * p[0] + m[4 * c + 1] * p[1] + m[4 * c + 2] * p[2] + m[4 * c + 3]) / w;
		}
		q = ref + 3 * (size_t) site[mcc_edt_cell_n(g, pt, 3)];
		r[0] = q[0] - pt[0];
		r[1] = q[1] - pt[1];
		r[2] = q[2] - pt[2];
		d2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
		if (mcc_chamfer_add_f(d2, xf->tau2, S) && gh)
			mcc_chamfer_terms_3d(type, xf->s, p, u, pt, r, S);
	}
}

#endif							/* MCC_CHAMFER_MODEL_H */
