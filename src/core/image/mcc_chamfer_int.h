/*
 * mcc_chamfer_int.h: small dense linear algebra and rotation helpers of
 * the chamfer alignment (mcc_chamfer_math.c), internal to src/core.
 */
#ifndef MCC_CHAMFER_INT_H
#define MCC_CHAMFER_INT_H

/* c = a b for n x n row-major matrices (c may not alias a or b). */
void		mcc_cm_matmul(int n, const double *a, const double *b, double *c);

/* Identity n x n. */
void		mcc_cm_identity(int n, double *a);

/*
 * Solve (H + lambda D) x = b, D = diag(H) floored at 1e-12 of its largest
 * entry (Marquardt's scaling), by Cholesky; n <= 15. Returns 0 if the
 * damped matrix is not positive definite.
 */
int			mcc_cm_damped_solve(int n, const double *H, const double *b, double lambda, double *x);

/* 2 x 2 rotation by theta: [c -s; s c]. */
void		mcc_cm_rot2(double theta, double *R);

/* 3 x 3 rotation exp([w]x) (Rodrigues), |w| the angle. */
void		mcc_cm_rot_exp(const double *w, double *R);

/* Rotation vector of a 3 x 3 rotation matrix, angle in [0, pi]. */
void		mcc_cm_rot_log(const double *R, double *w);

/* Eigenvalues of a symmetric dim x dim matrix (dim 2 or 3), descending. */
void		mcc_cm_sym_eigenvalues(int dim, const double *C, double *ev);

#endif							/* MCC_CHAMFER_INT_H */
