/*
 * mcc_chamfer.h: parametric chamfer alignment of point sets (paper 004).
 *
 * Given an observed set P and a reference set Q (2D or 3D), find the
 * transform T of a chosen type (euclidean, similarity, affine, projective)
 * that minimizes f(T) = sum_j min(|mu_Q(T(p_j)) - T(p_j)|^2, tau^2), where
 * mu_Q(x) is the reference point nearest to x, read from a distance
 * transform of Q (mcc_edt.h), and tau an optional truncation (none by
 * default, as in the paper). The minimization is Levenberg-Marquardt
 * (paper 004, Algorithm 1) with the reduced Hessian terms of Table 2
 * (mcc_chamfer_model.h), estimated hierarchically, euclidean -> similarity
 * -> affine -> projective up to the requested type, each stage starting
 * from the previous one's result (Sec. 6).
 *
 * Frames: coordinates are normalized before the fit, for conditioning: Q by
 * its centroid c_Q and RMS radius sigma, P by its own centroid c_P and the
 * same sigma; the fit T~ runs between those frames and the result is
 * T = N_Q^-1 T~ N_P in the input units. The default start, T~ = identity,
 * therefore aligns the centroids; an explicit initial transform replaces it.
 *
 * The work per LM iteration is an "evaluation": the sums of f, b = J^T r
 * and the reduced terms at one candidate transform, over all observed
 * points. Evaluators are pluggable: the threaded CPU one below, and the GPU
 * one of kernels/mcc_chamfer_gpu.h. With "pipelined" set, every candidate's
 * evaluation also computes g and H (paper 004, Sec. 3.2.2, Algorithm 3),
 * so an accepted candidate needs no second pass; otherwise candidates get
 * f only and g, H are computed after an acceptance (Algorithm 1). Both
 * follow the same trajectory and give the same result.
 *
 * Determinism: the CPU evaluator cuts the points into fixed chunks of
 * MCC_CHAMFER_CHUNK, sums each chunk in point order and adds the chunk sums
 * in chunk order, whatever the thread count: results are bit-identical for
 * any number of threads.
 *
 * Cancellation: opts.cancel (if set) is read by worker threads between
 * chunks and by the driver between evaluations; opts.poll (if set) is
 * called on the calling thread between evaluations and distance-transform
 * lines, and a nonzero return cancels. A canceled call returns
 * MCC_ERR_INTERNAL with result.canceled = 1 and frees everything it took.
 * Worker threads block all signals and call nothing but this code.
 */
#ifndef MCC_CHAMFER_H
#define MCC_CHAMFER_H

#include <stddef.h>
#include <stdint.h>

#include "mcc_chamfer_model.h"
#include "mcc_chamfer_search.h"
#include "mcc_edt.h"
#include "mcc_error.h"

#define MCC_CHAMFER_CHUNK			4096	/* points per CPU work unit */
#define MCC_CHAMFER_MAX_THREADS		256
#define MCC_CHAMFER_DEFAULT_ITERATIONS	100
#define MCC_CHAMFER_DEFAULT_TOLERANCE	1e-10
#define MCC_CHAMFER_SELECT_POINTS		1024	/* observed points of a search start's fit */
/*
 * Largest coordinate magnitude accepted, in input units and, for observed
 * points, in reference sizes from the reference's centroid: the set-up sums
 * squares of up to 2^31 points x 3 coordinates, which stays far below the
 * double range (1e308) at this bound. Beyond it: MCC_ERR_RANGE.
 */
#define MCC_CHAMFER_MAX_COORD		1e100

/* Options; mcc_chamfer_opts_init() sets the defaults. */
typedef struct mcc_chamfer_opts
{
	int			transform;		/* target mcc_xform (default similarity) */
	double		resolution;		/* distance transform spacing, input units; 0 = automatic */
	double		max_distance;	/* truncation tau, input units; HUGE_VAL = none (default) */
	int			max_iterations;	/* LM iterations per stage; 0 = default */
	double		tolerance;		/* stop when |delta| <= this (normalized units); 0 = default */
	int			threads;		/* CPU evaluator threads: 1 (default) or more; 0 = every CPU */
	int			pipelined;		/* 1: g and H with every candidate (Sec. 3.2.2) */
	int			hierarchical;	/* 1 (default): stages from euclidean up (Sec. 6) */
	int			init_type;		/* -1 (default): start at the centroid alignment;
								 * else the mcc_xform of init[], <= transform */
	double		init[16];		/* initial transform, (dim+1)^2 homogeneous, row-major */
	int			graduated;		/* truncation schedule (max_distance finite): 0 (default)
								 * graduated without init, straight with one; 1 always
								 * graduated; -1 never (see mcc_chamfer_lm.c) */
	size_t		max_cells;		/* distance transform limit; 0 = MCC_EDT_DEFAULT_MAX_CELLS */
	int			search;			/* without init (init_type < 0), in 2D: 1 (default) start
								 * from the global search of mcc_chamfer_search.h; 0 from
								 * the centroid alignment alone (paper 004's local fit) */
	double		min_scale;		/* scales the search tries (similarity and more general */
	double		max_scale;		/* targets; a euclidean search keeps 1): default 0.8, 1.25 */
	volatile int *cancel;		/* optional cancel flag (see above) */
	int			(*poll) (void *arg);	/* optional cancel poll (see above) */
	void	   *poll_arg;
} mcc_chamfer_opts;

/* What an alignment found. */
typedef struct mcc_chamfer_result
{
	int			transform;		/* mcc_xform of params */
	int			dim;
	int			n_params;
	double		params[MCC_CHAMFER_MAX_PARAMS];	/* layout: mcc_chamfer_params_to_matrix */
	double		matrix[16];		/* T, (dim+1)^2 homogeneous, input units, last entry 1 */
	double		sum_sq;			/* f at the result, input units squared */
	double		residual;		/* sqrt(f / n): RMS of the (truncated) distances */
	size_t		inliers;		/* points within max_distance at the result */
	size_t		n_points;		/* observed points */
	int			iterations;		/* LM iterations (candidates tried), all stages */
	int			evaluations;	/* passes over the points, all stages */
	int			stages;			/* stages run */
	int			converged;		/* the last stage stopped on |delta| or a stalled lambda */
	int			canceled;		/* stopped by opts.cancel / opts.poll */
	int			starts;			/* search starts fitted (0: no search ran) */
	long		search_poses;	/* poses the search scored */
} mcc_chamfer_result;

/* A prepared reference set: normalized points and their distance transform. */
typedef struct mcc_chamfer_ref
{
	int			dim;
	size_t		n;
	double		center[3];		/* c_Q */
	double		scale;			/* sigma: RMS distance of Q from c_Q */
	double	   *pts;			/* n * dim normalized coordinates (malloc'd) */
	mcc_edt		edt;			/* over pts */
} mcc_chamfer_ref;

/* A prepared observed set, normalized for one reference. */
typedef struct mcc_chamfer_obs
{
	int			dim;
	size_t		n;
	double		center[3];		/* c_P */
	double		scale;			/* the reference's sigma */
	double	   *pts;			/* n * dim normalized coordinates (malloc'd) */
} mcc_chamfer_obs;

/*
 * An evaluator: fills sums[0 .. mcc_chamfer_nsums) for transform xf over
 * every observed point (gh = 0: f and N only, the rest zero). Returns
 * MCC_OK or an error (a cancel is MCC_ERR_INTERNAL "alignment canceled").
 */
typedef mcc_status (*mcc_chamfer_eval_fn) (void *ctx, const mcc_chamfer_xf *xf, int gh,
										   double *sums, mcc_error *err);

typedef struct mcc_chamfer_evaluator
{
	mcc_chamfer_eval_fn eval;
	void	   *ctx;
	mcc_chamfer_score_fn score; /* the global search's scorer; NULL: the CPU's */
	void	   *score_ctx;
} mcc_chamfer_evaluator;

/* Set the defaults. */
void		mcc_chamfer_opts_init(mcc_chamfer_opts *opts);

/* "euclidean", "similarity", "affine", "projective". */
const char *mcc_xform_name(int type);

/* Transform type by name (ASCII case-insensitive); -1 if unknown. */
int			mcc_xform_parse(const char *name, size_t len);

/*
 * Parameters to a homogeneous matrix (input units). Layouts:
 *   2D euclidean [theta, tx, ty]: x' = R(theta) x + t, R = [c -s; s c]
 *   2D similarity [s, theta, tx, ty]: x' = s R(theta) x + t, s > 0
 *   2D affine [a11 a12 tx a21 a22 ty]
 *   2D projective [h11 h12 h13 h21 h22 h23 h31 h32], h33 = 1
 *   3D euclidean [wx wy wz tx ty tz]: R = exp([w]x), |w| the angle (radians)
 *   3D similarity [s wx wy wz tx ty tz]
 *   3D affine: the 3 x 4 matrix [A | t], row-major (12)
 *   3D projective: the 4 x 4 matrix, row-major, without h44 = 1 (15)
 * MCC_ERR_VALUE for a non-finite parameter or a scale <= 0.
 */
mcc_status	mcc_chamfer_params_to_matrix(int type, int dim, const double *params,
										 double *m, mcc_error *err);

/* A matrix of (at most) the given type to its parameters; 2D angles in (-pi, pi]. */
void		mcc_chamfer_matrix_to_params(int type, int dim, const double *m, double *params);

/* Map point p by homogeneous m; returns 0 if it goes to infinity (w <= 0). */
int			mcc_chamfer_map(int dim, const double *m, const double *p, double *out);

/*
 * Prepare a reference set: checks (dim 2 or 3, n >= 2 finite points within
 * +-MCC_CHAMFER_MAX_COORD, not all coincident), normalizes and builds the distance transform with
 * opts->resolution (input units), opts->max_cells and the cancel settings.
 * Free with mcc_chamfer_ref_free.
 */
mcc_status	mcc_chamfer_ref_build(const double *pts, size_t n, int dim,
								  const mcc_chamfer_opts *opts, mcc_chamfer_ref *ref,
								  mcc_error *err);

void		mcc_chamfer_ref_free(mcc_chamfer_ref *ref);

/*
 * Prepare an observed set for ref and a target transform: checks (finite,
 * within +-MCC_CHAMFER_MAX_COORD and within MCC_CHAMFER_MAX_COORD reference
 * sizes of the reference, enough points, not degenerate for the transform, and the reference not
 * degenerate for it either) and normalizes. Free with mcc_chamfer_obs_free.
 */
mcc_status	mcc_chamfer_obs_prepare(const mcc_chamfer_ref *ref, const double *pts, size_t n,
									int transform, mcc_chamfer_obs *obs, mcc_error *err);

void		mcc_chamfer_obs_free(mcc_chamfer_obs *obs);

/*
 * Run the (hierarchical) LM with an evaluator over obs; fills res. Without
 * an initial transform, a 2D alignment first searches every pose
 * (opts->search, mcc_chamfer_search.h): each start the search returns is
 * fitted on the CPU over a sample of at most MCC_CHAMFER_SELECT_POINTS
 * observed points, truncated (at max_distance, or at 0.1 of the
 * reference's RMS radius when there is none), and the fit with the lowest
 * f starts the final LM with ev over every point.
 */
mcc_status	mcc_chamfer_solve(const mcc_chamfer_ref *ref, const mcc_chamfer_obs *obs,
							  const mcc_chamfer_opts *opts, const mcc_chamfer_evaluator *ev,
							  mcc_chamfer_result *res, mcc_error *err);

/*
 * H = sum J^T J (L x L, row-major) and b = sum J^T r from a sum vector
 * (Table 2's expansion); s is the similarity scale of the evaluated
 * transform (1 for other types).
 */
void		mcc_chamfer_expand(int type, int dim, double s, const double *sums,
							   double *H, double *b);

/* The threaded CPU evaluator (mcc_chamfer_cpu.c). */
typedef struct mcc_chamfer_cpu mcc_chamfer_cpu;

/*
 * Start a CPU evaluator over ref and obs (both must outlive it) with the
 * given threads (1: the calling thread alone; 0: every online CPU; at most
 * MCC_CHAMFER_MAX_THREADS) and an optional cancel flag.
 */
mcc_status	mcc_chamfer_cpu_open(const mcc_chamfer_ref *ref, const mcc_chamfer_obs *obs,
								 int threads, volatile int *cancel, mcc_chamfer_cpu **out,
								 mcc_error *err);

/* The evaluator function of a CPU evaluator (ctx is the mcc_chamfer_cpu). */
mcc_status	mcc_chamfer_cpu_eval(void *ctx, const mcc_chamfer_xf *xf, int gh,
								 double *sums, mcc_error *err);

/* Threads the evaluator actually runs (the calling thread included). */
int			mcc_chamfer_cpu_threads(const mcc_chamfer_cpu *c);

/* Stop the threads and free the evaluator (NULL is fine). */
void		mcc_chamfer_cpu_close(mcc_chamfer_cpu *c);

/* Align with a prepared reference on the CPU. */
mcc_status	mcc_chamfer_align_ref(const mcc_chamfer_ref *ref, const double *obs, size_t n,
								  const mcc_chamfer_opts *opts, mcc_chamfer_result *res,
								  mcc_error *err);

/*
 * The whole alignment on the CPU: n_obs observed and n_ref reference points
 * of dimension dim (x0 y0 [z0] x1 ...), options (NULL: defaults).
 */
mcc_status	mcc_chamfer_align(const double *obs, size_t n_obs, const double *ref, size_t n_ref,
							  int dim, const mcc_chamfer_opts *opts, mcc_chamfer_result *res,
							  mcc_error *err);

#endif							/* MCC_CHAMFER_H */
