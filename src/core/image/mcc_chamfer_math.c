/*
 * mcc_chamfer_math.c: dense linear algebra and rotations for the chamfer
 * alignment: all tiny (at most 15 x 15), so plain loops.
 */
#include "mcc_chamfer_int.h"

#include <math.h>
#include <string.h>

/* c = a b. */
void
mcc_cm_matmul(int n, const double *a, const double *b, double *c)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
		{
			double		s = 0.0;

			for (int k = 0; k < n; k++)
				s += a[i * n + k] * b[k * n + j];
			c[i * n + j] = s;
		}
}

/* Identity. */
void
mcc_cm_identity(int n, double *a)
{
	memset(a, 0, sizeof(double) * n * n);
	for (int i = 0; i < n; i++)
		a[i * n + i] = 1.0;
}

/* Damped Cholesky solve (see the header). */
int
mcc_cm_damped_solve(int n, const double *H, const double *b, double lambda, double *x)
{
	double		A[15 * 15];
	double		y[15];
	double		dmax = 0.0;

	for (int i = 0; i < n; i++)
		dmax = fmax(dmax, H[i * n + i]);
	if (!(dmax > 0.0) || !isfinite(dmax))
		return 0;
	memcpy(A, H, sizeof(double) * n * n);
	for (int i = 0; i < n; i++)
		A[i * n + i] += lambda * fmax(H[i * n + i], 1e-12 * dmax);
	/* A = L L^T in the lower triangle */
	for (int j = 0; j < n; j++)
	{
		double		d = A[j * n + j];

		for (int k = 0; k < j; k++)
			d -= A[j * n + k] * A[j * n + k];
		if (!(d > 0.0) || !isfinite(d))
			return 0;
		d = sqrt(d);
		A[j * n + j] = d;
		for (int i = j + 1; i < n; i++)
		{
			double		s = A[i * n + j];

			for (int k = 0; k < j; k++)
				s -= A[i * n + k] * A[j * n + k];
			A[i * n + j] = s / d;
		}
	}
	for (int i = 0; i < n; i++)
	{
		double		s = b[i];

		for (int k = 0; k < i; k++)
			s -= A[i * n + k] * y[k];
		y[i] = s / A[i * n + i];
	}
	for (int i = n - 1; i >= 0; i--)
	{
		double		s = y[i];

		for (int k = i + 1; k < n; k++)
			s -= A[k * n + i] * x[k];
		x[i] = s / A[i * n + i];
	}
	for (int i = 0; i < n; i++)
		if (!isfinite(x[i]))
			return 0;
	return 1;
}

/* 2D rotation. */
void
mcc_cm_rot2(double theta, double *R)
{
	double		c = cos(theta);
	double		s = sin(theta);

	R[0] = c;
	R[1] = -s;
	R[2] = s;
	R[3] = c;
}

/* Rodrigues' formula, with its series near 0. */
void
mcc_cm_rot_exp(const double *w, double *R)
{
	double		th2 = w[0] * w[0] + w[1] * w[1] + w[2] * w[2];
	double		th = sqrt(th2);
	double		a;
	double		b;
	double		K[9] = {0.0, -w[2], w[1], w[2], 0.0, -w[0], -w[1], w[0], 0.0};
	double		K2[9];

	if (th < 1e-6)
	{
		a = 1.0 - th2 / 6.0;
		b = 0.5 - th2 / 24.0;
	}
	else
	{
		a = sin(th) / th;
		b = (1.0 - cos(th)) / th2;
	}
	mcc_cm_matmul(3, K, K, K2);
	for (int i = 0; i < 9; i++)
		R[i] = a * K[i] + b * K2[i] + (i % 4 == 0 ? 1.0 : 0.0);
}

/* Rotation vector through the unit quaternion (Shepperd's choice of pivot). */
void
mcc_cm_rot_log(const double *R, double *w)
{
	double		q[4];			/* w, x, y, z */
	double		tr = R[0] + R[4] + R[8];
	double		n;
	double		sn;
	double		angle;

	if (tr >= R[0] && tr >= R[4] && tr >= R[8])
	{
		double		r = sqrt(fmax(1.0 + tr, 0.0));

		q[0] = 0.5 * r;
		q[1] = (R[7] - R[5]) / (2.0 * r);
		q[2] = (R[2] - R[6]) / (2.0 * r);
		q[3] = (R[3] - R[1]) / (2.0 * r);
	}
	else if (R[0] >= R[4] && R[0] >= R[8])
	{
		double		r = sqrt(fmax(1.0 + R[0] - R[4] - R[8], 0.0));

		q[1] = 0.5 * r;
		q[0] = (R[7] - R[5]) / (2.0 * r);
		q[2] = (R[1] + R[3]) / (2.0 * r);
		q[3] = (R[2] + R[6]) / (2.0 * r);
	}
	else if (R[4] >= R[8])
	{
		double		r = sqrt(fmax(1.0 + R[4] - R[0] - R[8], 0.0));

		q[2] = 0.5 * r;
		q[0] = (R[2] - R[6]) / (2.0 * r);
		q[1] = (R[1] + R[3]) / (2.0 * r);
		q[3] = (R[5] + R[7]) / (2.0 * r);
	}
	else
	{
		double		r = sqrt(fmax(1.0 + R[8] - R[0] - R[4], 0.0));

		q[3] = 0.5 * r;
		q[0] = (R[3] - R[1]) / (2.0 * r);
		q[1] = (R[2] + R[6]) / (2.0 * r);
		q[2] = (R[5] + R[7]) / (2.0 * r);
	}
	n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
	for (int i = 0; i < 4; i++)
		q[i] = (q[0] < 0.0 ? -q[i] : q[i]) / n;
	sn = sqrt(q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
	if (sn < 1e-12)
	{
		/* angle 2 asin(sn) ~ 2 sn: w ~ 2 v */
		for (int i = 0; i < 3; i++)
			w[i] = 2.0 * q[i + 1];
		return;
	}
	angle = 2.0 * atan2(sn, q[0]);
	for (int i = 0; i < 3; i++)
		w[i] = q[i + 1] * (angle / sn);
}

/* Eigenvalues of a symmetric 2 x 2 or 3 x 3 matrix (cyclic Jacobi for 3 x 3). */
void
mcc_cm_sym_eigenvalues(int dim, const double *C, double *ev)
{
	if (dim == 2)
	{
		double		m = 0.5 * (C[0] + C[3]);
		double		d = 0.5 * (C[0] - C[3]);
		double		r = sqrt(d * d + C[1] * C[1]);

		ev[0] = m + r;
		ev[1] = m - r;
		return;
	}
	else
	{
		double		a[9];

		memcpy(a, C, sizeof(a));
		for (int sweep = 0; sweep < 50; sweep++)
		{
			double		off = a[1] * a[1] + a[2] * a[2] + a[5] * a[5];

			if (off <= 1e-300 || off <= 1e-32 * (a[0] * a[0] + a[4] * a[4] + a[8] * a[8]))
				break;
			for (int p = 0; p < 2; p++)
				for (int q = p + 1; q < 3; q++)
				{
					double		apq = a[p * 3 + q];
					double		theta;
					double		t;
					double		c;
					double		s;

					if (apq == 0.0)
						continue;
					theta = (a[q * 3 + q] - a[p * 3 + p]) / (2.0 * apq);
					t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
					c = 1.0 / sqrt(t * t + 1.0);
					s = t * c;
					/* a <- J^T a J for the rotation J in plane (p, q) */
					for (int k = 0; k < 3; k++)
					{
						double		akp = a[k * 3 + p];
						double		akq = a[k * 3 + q];

						a[k * 3 + p] = c * akp - s * akq;
						a[k * 3 + q] = s * akp + c * akq;
					}
					for (int k = 0; k < 3; k++)
					{
						double		apk = a[p * 3 + k];
						double		aqk = a[q * 3 + k];

						a[p * 3 + k] = c * apk - s * aqk;
						a[q * 3 + k] = s * apk + c * aqk;
					}
				}
		}
		ev[0] = a[0];
		ev[1] = a[4];
		ev[2] = a[8];
		/* sort descending */
		for (int i = 0; i < 2; i++)
			for (int j = 0; j < 2 - i; j++)
				if (ev[j] < ev[j + 1])
				{
					double		t = ev[j];

					ev[j] = ev[j + 1];
					ev[j + 1] = t;
				}
	}
}
