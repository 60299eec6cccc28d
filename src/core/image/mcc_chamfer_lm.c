/*
 * mcc_chamfer_lm.c: the Levenberg-Marquardt driver of chamfer alignment
 * (paper 004, Algorithms 1 and 3) with hierarchical stages (Sec. 6), and
 * the CPU entry points.
 */
#include "mcc_chamfer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_chamfer_int.h"

#define LAMBDA_START	1e-3
#define LAMBDA_MIN		1e-12
#define LAMBDA_MAX		1e12

/*
 * A stage ends when the undamped Gauss-Newton step predicts a decrease of
 * f below this fraction: near a minimum f falls with the square of the
 * distance to it, so the points are then within about 1e-3 of the RMS
 * residual of their optimum (docs/alignment.md). It also ends the creep of
 * tiny damped steps that the piecewise-constant nearest-point lookup
 * causes, while a heavily damped step far from the minimum does not stop
 * the stage (its own gain may be tiny; the model's is not).
 */
#define FTOL			1e-6

/*
 * A stage also ends when STALL_WINDOW candidates in a row lowered f by less
 * than FTOL together: the creep of tiny damped steps at a kink of the
 * piecewise-constant lookup, where the undamped step still predicts a gain
 * that crossing a cell boundary takes back.
 */
#define STALL_WINDOW	10

/*
 * The current transform of a stage, in the normalized frames. m is always
 * the full homogeneous matrix; euclidean and similarity also keep their
 * parameters (theta or R, s) so that updates act on them exactly.
 */
typedef struct lm_state
{
	int			type;
	int			dim;
	double		m[16];
	double		theta;			/* 2D euclidean and similarity */
	double		R[9];			/* rotation, dim x dim */
	double		s;
} lm_state;

/* What a solve carries around. */
typedef struct lm_ctx
{
	const mcc_chamfer_evaluator *ev;
	const mcc_chamfer_opts *opts;
	volatile int *cancel;
	double		tau2;			/* normalized units */
	int			max_iter;
	double		tol;
	mcc_chamfer_result *res;
} lm_ctx;

/* Rebuild m from (R, s, t) of a euclidean or similarity state. */
static void
state_compose(lm_state *st, const double *t)
{
	int			d = st->dim;
	int			d1 = d + 1;

	mcc_cm_identity(d1, st->m);
	for (int i = 0; i < d; i++)
	{
		for (int j = 0; j < d; j++)
			st->m[i * d1 + j] = st->s * st->R[i * d + j];
		st->m[i * d1 + d] = t[i];
	}
}

/* Translation column of m. */
static void
state_translation(const lm_state *st, double *t)
{
	int			d1 = st->dim + 1;

	for (int i = 0; i < st->dim; i++)
		t[i] = st->m[i * d1 + st->dim];
}

/*
 * A state of the given type from a homogeneous matrix that is of that type
 * (an initial transform, already in the normalized frames).
 */
static void
state_from_matrix(int type, int dim, const double *m, lm_state *st)
{
	int			d1 = dim + 1;
	double		t[3];

	memset(st, 0, sizeof(*st));
	st->type = type;
	st->dim = dim;
	st->s = 1.0;
	memcpy(st->m, m, sizeof(double) * d1 * d1);
	if (type == MCC_XFORM_AFFINE)
	{
		for (int k = 0; k < dim; k++)
			st->m[dim * d1 + k] = 0.0;
		st->m[dim * d1 + dim] = 1.0;
	}
	if (type > MCC_XFORM_SIMILARITY)
		return;
	state_translation(st, t);
	if (dim == 2)
	{
		st->theta = atan2(m[3], m[0]);
		if (type == MCC_XFORM_SIMILARITY)
			st->s = hypot(m[0], m[3]);
		mcc_cm_rot2(st->theta, st->R);
	}
	else
	{
		double		w[3];

		if (type == MCC_XFORM_SIMILARITY)
			st->s = sqrt(m[0] * m[0] + m[4] * m[4] + m[8] * m[8]);
		for (int i = 0; i < 3; i++)
			for (int j = 0; j < 3; j++)
				st->R[i * 3 + j] = m[i * 4 + j] / st->s;
		/* through the rotation vector, so that R is a rotation to rounding */
		mcc_cm_rot_log(st->R, w);
		mcc_cm_rot_exp(w, st->R);
	}
	state_compose(st, t);
}

/* The identity state of a type. */
static void
state_identity(int type, int dim, lm_state *st)
{
	double		m[16];

	mcc_cm_identity(dim + 1, m);
	state_from_matrix(type, dim, m, st);
}

/* The evaluation input of a state. */
static void
state_xf(const lm_state *st, double tau2, mcc_chamfer_xf *xf)
{
	memset(xf, 0, sizeof(*xf));
	xf->type = st->type;
	xf->dim = st->dim;
	memcpy(xf->m, st->m, sizeof(xf->m));
	memcpy(xf->r, st->R, sizeof(xf->r));
	xf->s = st->s;
	xf->tau2 = tau2;
}

/*
 * The candidate alpha + delta (Algorithm 1, line 8) in each type's
 * parameterization (mcc_chamfer_model.h). Returns 0 if the candidate is not
 * a valid transform (scale <= 0, a non-finite entry).
 */
static int
state_update(const lm_state *st, const double *delta, lm_state *out)
{
	int			d = st->dim;
	int			d1 = d + 1;
	double		t[3];

	*out = *st;
	if (st->type <= MCC_XFORM_SIMILARITY)
	{
		int			o = st->type == MCC_XFORM_SIMILARITY ? 1 : 0;
		int			nrot = d == 2 ? 1 : 3;

		state_translation(st, t);
		if (o)
			out->s = st->s + delta[0];
		if (!(out->s > 0.0))
			return 0;
		if (d == 2)
		{
			out->theta = st->theta + delta[o];
			mcc_cm_rot2(out->theta, out->R);
		}
		else
		{
			double		E[9];

			mcc_cm_rot_exp(delta + o, E);
			mcc_cm_matmul(3, E, st->R, out->R);
		}
		for (int i = 0; i < d; i++)
			t[i] += delta[o + nrot + i];
		state_compose(out, t);
	}
	else if (st->type == MCC_XFORM_AFFINE)
	{
		for (int i = 0; i < d * d1; i++)
			out->m[i] = st->m[i] + delta[i];
	}
	else
	{
		/* compositional: m <- (I + D(delta)) m (Appendix A, eq. 13) */
		double		D[16];
		double		last;

		mcc_cm_identity(d1, D);
		for (int i = 0; i < d1 * d1 - 1; i++)
			D[i] += delta[i];
		mcc_cm_matmul(d1, D, st->m, out->m);
		last = out->m[d1 * d1 - 1];
		if (last > 1e-12)
			for (int i = 0; i < d1 * d1; i++)
				out->m[i] /= last;
	}
	for (int i = 0; i < d1 * d1; i++)
		if (!isfinite(out->m[i]))
			return 0;
	return 1;
}

/* Whether the solve was asked to stop; polls on the calling thread. */
static int
lm_canceled(const lm_ctx *c)
{
	if (*c->cancel)
		return 1;
	if (c->opts->poll != NULL && c->opts->poll(c->opts->poll_arg))
	{
		*c->cancel = 1;
		return 1;
	}
	return 0;
}

/* One evaluation through the evaluator, counted; a cancel becomes its error. */
static mcc_status
lm_eval(const lm_ctx *c, const lm_state *st, int gh, double *S, mcc_error *err)
{
	mcc_chamfer_xf xf;
	mcc_status	rc;

	state_xf(st, c->tau2, &xf);
	rc = c->ev->eval(c->ev->ctx, &xf, gh, S, err);
	c->res->evaluations++;
	if (rc == MCC_OK && lm_canceled(c))
		rc = mcc_error_set(err, MCC_ERR_INTERNAL, "alignment canceled");
	if (rc != MCC_OK && *c->cancel)
		c->res->canceled = 1;
	return rc;
}

/*
 * One stage: LM on st's type from st, until |delta| <= tol, the undamped
 * step predicts less than FTOL, the last STALL_WINDOW candidates gained
 * less than FTOL, lambda stalls, f = 0, or max_iter candidates. S holds the sums (with g and H) at st on return; *converged
 * says why it stopped.
 */
static mcc_status
lm_stage(const lm_ctx *c, lm_state *st, double *S, int *converged, mcc_error *err)
{
	int			L = mcc_chamfer_nparams(st->type, st->dim);
	double		H[MCC_CHAMFER_MAX_PARAMS * MCC_CHAMFER_MAX_PARAMS];
	double		b[MCC_CHAMFER_MAX_PARAMS];
	double		delta[MCC_CHAMFER_MAX_PARAMS];
	double		Sc[MCC_CHAMFER_MAX_SUMS];
	double		lambda = LAMBDA_START;
	double		e;
	int			it = 0;
	int			fresh = 1;		/* S changed since the last undamped check */
	double		hist[STALL_WINDOW];	/* f after each of the last candidates */
	mcc_status	rc;

	*converged = 0;
	if ((rc = lm_eval(c, st, 1, S, err)) != MCC_OK)
		return rc;
	e = S[0];
	if (!isfinite(e))
		return mcc_error_set(err, MCC_ERR_VALUE,
							 "the initial transform sends observed points to infinity");
	while (it < c->max_iter)
	{
		lm_state	cand;
		double		step = 0.0;
		int			accepted = 0;

		if (e == 0.0)
		{
			*converged = 1;		/* a perfect fit */
			break;
		}
		if (S[1] == 0.0)
			break;				/* every point beyond max_distance: nothing to fit */
		mcc_chamfer_expand(st->type, st->dim, st->s, S, H, b);
		if (fresh && mcc_cm_damped_solve(L, H, b, LAMBDA_MIN, delta))
		{
			/* the linear model's best decrease: |r - J d|^2 = f - d.b at H d = b */
			double		pred = 0.0;

			for (int i = 0; i < L; i++)
				pred += delta[i] * b[i];
			if (pred <= FTOL * e)
			{
				*converged = 1;
				break;
			}
		}
		fresh = 0;
		if (!mcc_cm_damped_solve(L, H, b, lambda, delta))
		{
			lambda *= 10.0;
			if (lambda > LAMBDA_MAX)
			{
				*converged = 1;
				break;
			}
			continue;
		}
		it++;
		c->res->iterations++;
		for (int i = 0; i < L; i++)
			step += delta[i] * delta[i];
		step = sqrt(step);
		if (state_update(st, delta, &cand))
		{
			if ((rc = lm_eval(c, &cand, c->opts->pipelined, Sc, err)) != MCC_OK)
				return rc;
			accepted = Sc[0] < e;
		}
		if (accepted)
		{
			*st = cand;
			e = Sc[0];
			if (c->opts->pipelined)
				memcpy(S, Sc, sizeof(Sc));
			else if ((rc = lm_eval(c, st, 1, S, err)) != MCC_OK)
				return rc;
			lambda = fmax(lambda / 10.0, LAMBDA_MIN);
			fresh = 1;
		}
		else
			lambda *= 10.0;
		if (step <= c->tol || lambda > LAMBDA_MAX)
		{
			*converged = 1;
			break;
		}
		/* it >= 1 here; hist[it % W] held f after candidate it - W */
		if (it > STALL_WINDOW && hist[it % STALL_WINDOW] - e <= FTOL * hist[it % STALL_WINDOW])
		{
			*converged = 1;
			break;
		}
		hist[it % STALL_WINDOW] = e;
	}
	return MCC_OK;
}

/*
 * Graduated truncation for one stage, used when max_distance is finite and
 * no initial transform was given (or opts->graduated > 0): the start may be
 * far off, and points
 * that are beyond max_distance there would never pull the fit into the
 * right basin. tau starts at twice the untruncated RMS residual of the
 * start and halves, one LM pass per value, down to tau_n (normalized).
 */
static mcc_status
lm_graduated(lm_ctx *c, lm_state *st, double tau_n, size_t n, double *S, int *converged,
			 mcc_error *err)
{
	double		t;
	mcc_status	rc;

	c->tau2 = HUGE_VAL;
	if ((rc = lm_eval(c, st, 0, S, err)) != MCC_OK)
		return rc;
	t = fmax(tau_n, 2.0 * sqrt(S[0] / (double) n));
	if (!isfinite(t))
		t = tau_n;				/* a projective start at infinity: lm_stage reports it */
	for (;;)
	{
		c->tau2 = t * t;
		c->res->stages++;
		if ((rc = lm_stage(c, st, S, converged, err)) != MCC_OK)
			return rc;
		if (t <= tau_n)
			return MCC_OK;
		t = fmax(tau_n, 0.5 * t);
	}
}

/* Promote a state to the next, more general type without changing the transform. */
static void
state_promote(lm_state *st, int type)
{
	st->type = type;
}

/*
 * Homogeneous normalizers: np maps input units of the observed set to its
 * normalized frame, nq_inv maps the reference's normalized frame back.
 */
static void
normalizers(const mcc_chamfer_ref *ref, const mcc_chamfer_obs *obs, double *np, double *np_inv,
			double *nq, double *nq_inv)
{
	int			d = ref->dim;
	int			d1 = d + 1;
	double		sg = ref->scale;

	mcc_cm_identity(d1, np);
	mcc_cm_identity(d1, np_inv);
	mcc_cm_identity(d1, nq);
	mcc_cm_identity(d1, nq_inv);
	for (int i = 0; i < d; i++)
	{
		np[i * d1 + i] = 1.0 / sg;
		np[i * d1 + d] = -obs->center[i] / sg;
		np_inv[i * d1 + i] = sg;
		np_inv[i * d1 + d] = obs->center[i];
		nq[i * d1 + i] = 1.0 / sg;
		nq[i * d1 + d] = -ref->center[i] / sg;
		nq_inv[i * d1 + i] = sg;
		nq_inv[i * d1 + d] = ref->center[i];
	}
}

/* The result's transform, parameters and residual from the final state. */
static mcc_status
fill_result(const mcc_chamfer_ref *ref, const mcc_chamfer_obs *obs, const lm_state *st,
			const double *S, int target, mcc_chamfer_result *res, mcc_error *err)
{
	int			d = ref->dim;
	int			d1 = d + 1;
	double		np[16];
	double		np_inv[16];
	double		nq[16];
	double		nq_inv[16];
	double		tmp[16];
	double		T[16];
	double		last;

	normalizers(ref, obs, np, np_inv, nq, nq_inv);
	mcc_cm_matmul(d1, st->m, np, tmp);
	mcc_cm_matmul(d1, nq_inv, tmp, T);
	last = T[d1 * d1 - 1];
	if (!(fabs(last) > 1e-300) || !isfinite(last))
		return mcc_error_set(err, MCC_ERR_VALUE, "the projective alignment degenerated");
	for (int i = 0; i < d1 * d1; i++)
		res->matrix[i] = T[i] / last;
	res->transform = target;
	res->dim = d;
	res->n_params = mcc_chamfer_nparams(target, d);
	if (target <= MCC_XFORM_SIMILARITY)
	{
		/* from the state's own parameters: no round trip through the matrix */
		double	   *p = res->params + (target == MCC_XFORM_SIMILARITY ? 1 : 0);

		if (target == MCC_XFORM_SIMILARITY)
			res->params[0] = st->s;
		if (d == 2)
			p[0] = atan2(sin(st->theta), cos(st->theta));
		else
			mcc_cm_rot_log(st->R, p);
		for (int i = 0; i < d; i++)
			p[(d == 2 ? 1 : 3) + i] = res->matrix[i * d1 + d];
	}
	else
		mcc_chamfer_matrix_to_params(target, d, res->matrix, res->params);
	res->sum_sq = S[0] * ref->scale * ref->scale;
	res->n_points = obs->n;
	res->residual = sqrt(res->sum_sq / (double) obs->n);
	res->inliers = (size_t) S[1];
	return MCC_OK;
}

/* The starting state: the centroid alignment, or opts->init in the normalized frames. */
static mcc_status
initial_state(const mcc_chamfer_ref *ref, const mcc_chamfer_obs *obs,
			  const mcc_chamfer_opts *opts, lm_state *st, mcc_error *err)
{
	int			d = ref->dim;
	int			d1 = d + 1;
	int			first = opts->hierarchical ? MCC_XFORM_EUCLIDEAN : opts->transform;

	if (opts->init_type < 0)
	{
		state_identity(first, d, st);
		return MCC_OK;
	}
	if (opts->init_type > opts->transform)
		return mcc_error_set(err, MCC_ERR_VALUE,
							 "the initial transform (%s) is more general than the requested %s",
							 mcc_xform_name(opts->init_type), mcc_xform_name(opts->transform));
	for (int i = 0; i < d1 * d1; i++)
		if (!isfinite(opts->init[i]))
			return mcc_error_set(err, MCC_ERR_VALUE, "the initial transform is not finite");
	{
		double		np[16];
		double		np_inv[16];
		double		nq[16];
		double		nq_inv[16];
		double		tmp[16];
		double		m[16];
		int			type = opts->hierarchical ? opts->init_type : opts->transform;

		normalizers(ref, obs, np, np_inv, nq, nq_inv);
		mcc_cm_matmul(d1, opts->init, np_inv, tmp);
		mcc_cm_matmul(d1, nq, tmp, m);
		state_from_matrix(type, d, m, st);
	}
	return MCC_OK;
}

/*
 * The transform of a search start in input units (N_Q^-1 T~ N_P, T~ the
 * start's similarity between the normalized frames).
 */
static void
start_matrix(const mcc_chamfer_ref *ref, const mcc_chamfer_obs *obs, const mcc_chamfer_start *st,
			 double *T)
{
	double		np[16];
	double		np_inv[16];
	double		nq[16];
	double		nq_inv[16];
	double		tmp[16];
	mcc_chamfer_spose P;
	double		M[9];

	mcc_chamfer_spose_set(&P, st->theta, st->sigma, st->t[0], st->t[1]);
	M[0] = P.m[0];
	M[1] = P.m[1];
	M[2] = P.m[2];
	M[3] = P.m[3];
	M[4] = P.m[4];
	M[5] = P.m[5];
	M[6] = 0.0;
	M[7] = 0.0;
	M[8] = 1.0;
	normalizers(ref, obs, np, np_inv, nq, nq_inv);
	mcc_cm_matmul(3, M, np, tmp);
	mcc_cm_matmul(3, nq_inv, tmp, T);
}

/*
 * A sample of at most MCC_CHAMFER_SELECT_POINTS observed points, normalized
 * like obs (the same centre and scale): every point when there are no more,
 * else evenly spaced indices. 0 when out of memory.
 */
static int
select_subset(const mcc_chamfer_obs *obs, mcc_chamfer_obs *sub)
{
	size_t		m = obs->n < MCC_CHAMFER_SELECT_POINTS ? obs->n : MCC_CHAMFER_SELECT_POINTS;

	*sub = *obs;
	sub->n = m;
	sub->pts = malloc(sizeof(double) * 2 * m);
	if (sub->pts == NULL)
		return 0;
	for (size_t k = 0; k < m; k++)
	{
		/* k * n / m without overflow: n <= INT32_MAX, m <= 1024 */
		size_t		i = (size_t) ((uint64_t) k * obs->n / m);

		sub->pts[2 * k] = obs->pts[2 * i];
		sub->pts[2 * k + 1] = obs->pts[2 * i + 1];
	}
	return 1;
}

/*
 * Whether a start's fit (2D) keeps its scale within the search's range,
 * with a tenth of slack for fits that end near a bound. A fit can shrink
 * the observed set onto a single road, where every point is close to the
 * reference and the truncated f is lower than at the true pose: the
 * search only looked inside the range, so a fit that left it is taken
 * only when no fit stayed.
 */
static int
fit_in_range(const mcc_chamfer_result *r, double min_scale, double max_scale)
{
	double		s = sqrt(fabs(r->matrix[0] * r->matrix[4] - r->matrix[1] * r->matrix[3]));

	return s >= 0.9 * min_scale && s <= max_scale / 0.9;
}

/* The evaluator of an open CPU context. */
static mcc_chamfer_evaluator
cpu_evaluator(mcc_chamfer_cpu *cpu)
{
	mcc_chamfer_evaluator ev;

	memset(&ev, 0, sizeof(ev));
	ev.eval = mcc_chamfer_cpu_eval;
	ev.ctx = cpu;
	return ev;
}

/* What the truncated fits of the search's starts found. */
typedef struct start_fits
{
	mcc_chamfer_result best;
	int			best_in_range;	/* fit_in_range of best; -1 before the first fit */
	int			iterations;		/* of every fit */
	int			evaluations;
} start_fits;

/*
 * Each start fitted on a subset of obs, truncated, on the CPU (the same
 * bits everywhere), as a transform of type sel_type, truncated at twice the
 * finest blur b_final unless opts bounds the distance. The best fit:
 * within the scale range of so first, then the lowest f.
 */
static mcc_status
fit_starts(const mcc_chamfer_ref *ref, const mcc_chamfer_obs *obs, const mcc_chamfer_opts *opts,
		   int sel_type, double b_final, const mcc_chamfer_search_opts *so,
		   const mcc_chamfer_start *starts, int n_starts, start_fits *fits,
		   mcc_chamfer_result *res, mcc_error *err)
{
	mcc_chamfer_obs sub;
	mcc_chamfer_cpu *cpu;
	mcc_chamfer_evaluator sev;
	mcc_chamfer_opts o = *opts;
	mcc_status	st;

	memset(fits, 0, sizeof(*fits));
	fits->best_in_range = -1;
	if (!select_subset(obs, &sub))
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for the alignment search");
	if ((st = mcc_chamfer_cpu_open(ref, &sub, 1, opts->cancel, &cpu, err)) != MCC_OK)
	{
		mcc_chamfer_obs_free(&sub);
		return st;
	}
	sev = cpu_evaluator(cpu);
	o.transform = sel_type;
	o.init_type = sel_type;
	o.search = 0;
	o.graduated = 1;
	if (isinf(o.max_distance))
		o.max_distance = 2.0 * b_final * ref->scale;
	for (int k = 0; k < n_starts && st == MCC_OK; k++)
	{
		mcc_chamfer_result r;

		start_matrix(ref, obs, &starts[k], o.init);
		st = mcc_chamfer_solve(ref, &sub, &o, &sev, &r, err);
		fits->iterations += r.iterations;
		fits->evaluations += r.evaluations;
		if (st == MCC_OK)
		{
			int			in_range = fit_in_range(&r, so->min_scale, so->max_scale);

			if (in_range > fits->best_in_range ||
				(in_range == fits->best_in_range && r.sum_sq < fits->best.sum_sq))
			{
				fits->best = r;
				fits->best_in_range = in_range;
			}
		}
		if (st != MCC_OK && r.canceled)
			res->canceled = 1;
	}
	mcc_chamfer_cpu_close(cpu);
	mcc_chamfer_obs_free(&sub);
	return st;
}

/*
 * Without an initial transform in 2D: the global search, a truncated fit
 * of every start on a subset, and the final LM from the best (see the
 * header).
 */
static mcc_status
solve_global(const mcc_chamfer_ref *ref, const mcc_chamfer_obs *obs, const mcc_chamfer_opts *opts,
			 const mcc_chamfer_evaluator *ev, mcc_chamfer_result *res, mcc_error *err)
{
	int			sel_type = opts->transform < MCC_XFORM_SIMILARITY ? opts->transform : MCC_XFORM_SIMILARITY;
	double		sample[2 * MCC_CHAMFER_SEARCH_SAMPLE];
	int			n_sample;
	mcc_chamfer_pyramid pyr;
	mcc_chamfer_search_opts so;
	mcc_chamfer_search_stats stats;
	mcc_chamfer_start starts[MCC_CHAMFER_SEARCH_STARTS];
	int			n_starts = 0;
	start_fits	fits;
	mcc_chamfer_opts o;
	double		b_final;
	mcc_status	st;

	memset(&so, 0, sizeof(so));
	if (sel_type == MCC_XFORM_EUCLIDEAN)
		so.min_scale = so.max_scale = 1.0;
	else
	{
		so.min_scale = opts->min_scale;
		so.max_scale = opts->max_scale;
		if (!(so.min_scale > 0.0) || !(so.max_scale >= so.min_scale) || !isfinite(so.max_scale))
			return mcc_error_set(err, MCC_ERR_VALUE,
								 "the scale range of the search needs 0 < min_scale <= max_scale");
	}
	so.threads = opts->threads > 0 ? opts->threads : 1;
	so.cancel = opts->cancel;
	so.poll = opts->poll;
	so.poll_arg = opts->poll_arg;
	so.score = ev->score;
	so.score_ctx = ev->score_ctx;
	if ((st = mcc_chamfer_pyramid_build(ref->pts, ref->n, &pyr, err)) != MCC_OK)
		return st;
	n_sample = mcc_chamfer_search_sample(obs->pts, obs->n, sample);
	st = mcc_chamfer_search(&pyr, sample, n_sample, &so, starts, &n_starts, &stats, err);
	b_final = pyr.level[pyr.levels - 1].blur;
	mcc_chamfer_pyramid_free(&pyr);
	if (st != MCC_OK)
	{
		res->canceled = opts->cancel && *opts->cancel;
		return st;
	}
	if ((st = fit_starts(ref, obs, opts, sel_type, b_final, &so, starts, n_starts, &fits, res, err)) != MCC_OK)
		return st;
	if (fits.best_in_range < 0)
		return mcc_error_set(err, MCC_ERR_INTERNAL, "the alignment search found no start");
	/* the final fit over every point, from the best start, as without an initial transform */
	o = *opts;
	o.search = 0;
	o.init_type = sel_type;
	memcpy(o.init, fits.best.matrix, sizeof(o.init));
	if (o.graduated == 0)
		o.graduated = 1;
	st = mcc_chamfer_solve(ref, obs, &o, ev, res, err);
	res->iterations += fits.iterations;
	res->evaluations += fits.evaluations;
	res->starts = n_starts;
	res->search_poses = stats.poses;
	return st;
}

/* Run the hierarchical LM (see the header). */
mcc_status
mcc_chamfer_solve(const mcc_chamfer_ref *ref, const mcc_chamfer_obs *obs,
				  const mcc_chamfer_opts *opts, const mcc_chamfer_evaluator *ev,
				  mcc_chamfer_result *res, mcc_error *err)
{
	volatile int local_cancel = 0;
	lm_ctx		c;
	lm_state	st;
	double		S[MCC_CHAMFER_MAX_SUMS];
	int			converged = 0;
	int			graduated;
	double		tau = opts->max_distance;
	mcc_status	rc;

	memset(res, 0, sizeof(*res));
	if (opts->transform < 0 || opts->transform >= MCC_XFORM_COUNT)
		return mcc_error_set(err, MCC_ERR_VALUE, "invalid transform type %d", opts->transform);
	if (ref->dim != obs->dim)
		return mcc_error_set(err, MCC_ERR_VALUE, "observed points have %d coordinates, reference points %d",
							 obs->dim, ref->dim);
	if (isnan(tau) || !(tau > 0.0))
		return mcc_error_set(err, MCC_ERR_VALUE, "max_distance must be positive (infinity: no truncation)");
	if (opts->max_iterations < 0 || isnan(opts->tolerance) || opts->tolerance < 0.0)
		return mcc_error_set(err, MCC_ERR_VALUE, "invalid iteration limit or tolerance");
	memset(&c, 0, sizeof(c));
	c.ev = ev;
	c.opts = opts;
	c.cancel = opts->cancel != NULL ? opts->cancel : &local_cancel;
	c.tau2 = HUGE_VAL;
	c.max_iter = opts->max_iterations > 0 ? opts->max_iterations : MCC_CHAMFER_DEFAULT_ITERATIONS;
	c.tol = opts->tolerance > 0.0 ? opts->tolerance : MCC_CHAMFER_DEFAULT_TOLERANCE;
	c.res = res;
	if (opts->init_type < 0 && opts->search && ref->dim == 2)
		return solve_global(ref, obs, opts, ev, res, err);
	if ((rc = initial_state(ref, obs, opts, &st, err)) != MCC_OK)
		return rc;
	graduated = !isinf(tau) && (opts->graduated > 0 || (opts->graduated == 0 && opts->init_type < 0));
	if (!isinf(tau))
		c.tau2 = (tau / ref->scale) * (tau / ref->scale);	/* a given start is trusted */
	for (int type = st.type; type <= opts->transform; type++)
	{
		state_promote(&st, type);
		if (graduated)
			rc = lm_graduated(&c, &st, tau / ref->scale, obs->n, S, &converged, err);
		else
		{
			res->stages++;
			rc = lm_stage(&c, &st, S, &converged, err);
		}
		if (rc != MCC_OK)
			return rc;
	}
	res->converged = converged;
	return fill_result(ref, obs, &st, S, opts->transform, res, err);
}

/*
 * *o: opts, or the defaults when opts is NULL, with local_cancel as its
 * cancel flag when it has none (a flag of our own, so that a poll's cancel
 * is told from a failure).
 */
static void
opts_resolve(const mcc_chamfer_opts *opts, volatile int *local_cancel,
			 mcc_chamfer_opts *o)
{
	if (opts == NULL)
		mcc_chamfer_opts_init(o);
	else
		*o = *opts;
	if (o->cancel == NULL)
		o->cancel = local_cancel;
}

/* Align with a prepared reference on the CPU. */
mcc_status
mcc_chamfer_align_ref(const mcc_chamfer_ref *ref, const double *obs, size_t n,
					  const mcc_chamfer_opts *opts, mcc_chamfer_result *res, mcc_error *err)
{
	volatile int local_cancel = 0;
	mcc_chamfer_opts o;
	mcc_chamfer_obs ob;
	mcc_chamfer_cpu *cpu = NULL;
	mcc_chamfer_evaluator ev;
	mcc_status	rc;

	opts_resolve(opts, &local_cancel, &o);
	memset(res, 0, sizeof(*res));
	if ((rc = mcc_chamfer_obs_prepare(ref, obs, n, o.transform, &ob, err)) != MCC_OK)
		return rc;
	rc = mcc_chamfer_cpu_open(ref, &ob, o.threads, o.cancel, &cpu, err);
	if (rc == MCC_OK)
	{
		ev = cpu_evaluator(cpu);
		rc = mcc_chamfer_solve(ref, &ob, &o, &ev, res, err);
	}
	mcc_chamfer_cpu_close(cpu);
	mcc_chamfer_obs_free(&ob);
	if (rc != MCC_OK && *o.cancel)
		res->canceled = 1;
	return rc;
}

/* The whole alignment on the CPU. */
mcc_status
mcc_chamfer_align(const double *obs, size_t n_obs, const double *ref, size_t n_ref,
				  int dim, const mcc_chamfer_opts *opts, mcc_chamfer_result *res,
				  mcc_error *err)
{
	volatile int local_cancel = 0;
	mcc_chamfer_opts o;
	mcc_chamfer_ref rf;
	mcc_status	rc;

	opts_resolve(opts, &local_cancel, &o);
	memset(res, 0, sizeof(*res));
	if ((rc = mcc_chamfer_ref_build(ref, n_ref, dim, &o, &rf, err)) != MCC_OK)
	{
		if (*o.cancel)
			res->canceled = 1;
		return rc;
	}
	rc = mcc_chamfer_align_ref(&rf, obs, n_obs, &o, res, err);
	mcc_chamfer_ref_free(&rf);
	return rc;
}
