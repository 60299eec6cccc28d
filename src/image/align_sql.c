/*
 * align_sql.c: SQL functions of point-set and minutiae alignment
 * (mcc_chamfer_align, mcc_align; src/core/image/mcc_chamfer.h, mcc_align.h) and
 * their configuration parameters.
 *
 * The core runs on malloc'd memory and, with mcc.align_threads > 1, on
 * worker threads that block every signal and call no PostgreSQL function.
 * Between LM evaluations the core polls for a pending interrupt on this
 * thread; when one is pending it stops, frees everything and returns, and
 * only then does CHECK_FOR_INTERRUPTS() run here (raising the cancel, or
 * returning after a harmless interrupt, in which case the alignment starts
 * again: it is deterministic). No ERROR is ever raised while the core holds
 * memory or threads.
 *
 * Where mcc.image_device sends them (src/image/image_engine.c), alignments run
 * in the matcher engine instead, on its GPU when it has one (the GPU
 * evaluator of kernels/mcc_chamfer_gpu.h: the same fit up to the rounding
 * of its sums) or on its CPU threads (the same bits as here); the backend
 * waits for the answer with interrupts served.
 */
#include "image_pg.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "mcc_proto.h"
#include "mcc_align.h"
#include "mcc_chamfer.h"

PG_FUNCTION_INFO_V1(mcc_chamfer_align_sql);
PG_FUNCTION_INFO_V1(mcc_align_sql);

#define CHAMFER_NATTS	4
#define ALIGN_NATTS		6

/* mcc.align_threads and mcc.align_max_cells */
static int	align_threads = 1;
static int	align_max_cells = (int) MCC_EDT_DEFAULT_MAX_CELLS;

/* Define the alignment GUCs; called once from _PG_init. */
void
mcc_align_define_gucs(void)
{
	DefineCustomIntVariable("mcc.align_threads",
							"Threads one alignment may use.",
							"mcc_chamfer_align() and mcc_align() sum over the observed points on "
							"this many threads of the backend (results do not depend on it).",
							&align_threads, 1, 1, MCC_CHAMFER_MAX_THREADS,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("mcc.align_max_cells",
							"Largest distance transform grid of one alignment, in cells.",
							"Each cell takes 4 bytes; a larger grid is refused "
							"(program_limit_exceeded): choose a coarser resolution.",
							&align_max_cells, (int) MCC_EDT_DEFAULT_MAX_CELLS, 1024, INT_MAX,
							PGC_USERSET, 0, NULL, NULL, NULL);
}

/* The core's cancel poll: an interrupt is pending that ProcessInterrupts would serve. */
static int
align_poll(void *arg)
{
	return INTERRUPTS_PENDING_CONDITION() && INTERRUPTS_CAN_BE_PROCESSED();
}

/* Transform type from its SQL name, or a clear error. */
static int
transform_arg(text *t)
{
	char	   *name = text_to_cstring(t);
	int			type = mcc_xform_parse(name, strlen(name));

	if (type < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown transform \"%s\"", name),
				 errhint("Known transforms are \"euclidean\", \"similarity\", \"affine\" and \"projective\".")));
	pfree(name);
	return type;
}

/*
 * Points from an n x 2 or n x 3 float8 array: a palloc'd copy of the
 * coordinates, row by row; *dim gets the columns. what names the argument.
 */
static double *
points_arg(ArrayType *a, const char *what, size_t *n, int *dim)
{
	Datum	   *elems;
	bool	   *nulls;
	int			count;
	double	   *pts;

	if (ARR_NDIM(a) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s points are empty", what)));
	if (ARR_NDIM(a) != 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s points must be a two-dimensional array", what),
				 errdetail("The array has %d dimension%s.", ARR_NDIM(a), ARR_NDIM(a) == 1 ? "" : "s"),
				 errhint("Give one row of 2 or 3 coordinates per point, such as '{{0,0},{1,0},{0,1}}'.")));
	if (ARR_DIMS(a)[1] != 2 && ARR_DIMS(a)[1] != 3)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s points must have 2 or 3 coordinates each", what),
				 errdetail("The rows have %d.", ARR_DIMS(a)[1])));
	deconstruct_array(a, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &elems, &nulls, &count);
	pts = palloc(sizeof(double) * Max(count, 1));
	for (int i = 0; i < count; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s point %d has a NULL coordinate", what, i / ARR_DIMS(a)[1] + 1)));
		pts[i] = DatumGetFloat8(elems[i]);
	}
	*dim = ARR_DIMS(a)[1];
	*n = (size_t) ARR_DIMS(a)[0];
	pfree(elems);
	pfree(nulls);
	return pts;
}

/* The initial transform argument (parameters of type in dim) into opts. */
static void
initial_arg(ArrayType *a, int type, int dim, mcc_chamfer_opts *opts)
{
	Datum	   *elems;
	bool	   *nulls;
	int			count;
	int			L = mcc_chamfer_nparams(type, dim);
	double		params[MCC_CHAMFER_MAX_PARAMS];
	mcc_error	err;

	if (ARR_NDIM(a) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("initial must be a one-dimensional array")));
	deconstruct_array(a, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &elems, &nulls, &count);
	if (count != L)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("initial must have %d parameters for a %dD %s transform, not %d",
						L, dim, mcc_xform_name(type), count)));
	for (int i = 0; i < count; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("initial parameter %d is NULL", i + 1)));
		params[i] = DatumGetFloat8(elems[i]);
	}
	if (mcc_chamfer_params_to_matrix(type, dim, params, opts->init, &err) != MCC_OK)
		mcc_pg_raise(&err);
	opts->init_type = type;
}

/* A float8[] of n values. */
static Datum
float8_array(const double *v, int n)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(n, 1));

	for (int i = 0; i < n; i++)
		d[i] = Float8GetDatum(v[i]);
	return PointerGetDatum(construct_array(d, n, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL,
										   TYPALIGN_DOUBLE));
}

/*
 * Run fn(arg) until it is not canceled by a pending interrupt; each cancel
 * is served by CHECK_FOR_INTERRUPTS() (which normally raises the cancel).
 */
static mcc_status
run_interruptible(mcc_status (*fn) (void *arg, int *canceled, mcc_error *err), void *arg,
				  mcc_error *err)
{
	for (;;)
	{
		int			canceled = 0;
		mcc_status	st = fn(arg, &canceled, err);

		if (!canceled)
			return st;
		CHECK_FOR_INTERRUPTS();
	}
}

/* Arguments of one mcc_chamfer_align call, for run_interruptible. */
typedef struct chamfer_call
{
	const double *obs;
	size_t		n_obs;
	const double *ref;
	size_t		n_ref;
	int			dim;
	mcc_chamfer_opts opts;
	mcc_chamfer_result res;
} chamfer_call;

/* One attempt of a chamfer alignment. */
static mcc_status
chamfer_once(void *arg, int *canceled, mcc_error *err)
{
	chamfer_call *c = arg;
	mcc_status	st = mcc_chamfer_align(c->obs, c->n_obs, c->ref, c->n_ref, c->dim, &c->opts,
									   &c->res, err);

	*canceled = c->res.canceled;
	return st;
}

/* A fit of an engine's answer into res (n_params, params, residual, iterations, converged). */
static void
get_fit(mcc_image_result *r, mcc_chamfer_result *res, int *iterations)
{
	uint32		n = mcc_image_get_u32(r);

	if (n > MCC_CHAMFER_MAX_PARAMS)
		mcc_pg_malformed_reply("An alignment result has %u parameters.", n);
	res->n_params = (int) n;
	for (uint32 i = 0; i < n; i++)
		res->params[i] = mcc_image_get_f64(r);
	res->residual = mcc_image_get_f64(r);
	*iterations = (int32) mcc_image_get_u32(r);
	res->converged = mcc_image_get_u32(r) != 0;
}

/* Run a chamfer alignment in the matcher engine; false: here instead. */
static bool
chamfer_engine(chamfer_call *c)
{
	const char *fn = "mcc_chamfer_align";
	uint64		request = 180 + ((uint64) c->n_obs + c->n_ref) * c->dim * 8;
	StringInfoData f;
	mcc_image_result r;

	if (!mcc_image_request_start(fn, request, 256, &f))
		return false;
	mcc_image_put_u32(&f, (uint32) c->dim);
	mcc_image_put_u32(&f, (uint32) c->opts.transform);
	mcc_image_put_f64(&f, c->opts.resolution);
	mcc_image_put_f64(&f, c->opts.max_distance);
	mcc_image_put_u32(&f, (uint32) c->opts.init_type);
	for (int i = 0; i < 16; i++)
		mcc_image_put_f64(&f, c->opts.init[i]);
	mcc_image_put_f64(&f, c->opts.min_scale);
	mcc_image_put_f64(&f, c->opts.max_scale);
	mcc_image_put_u64(&f, (uint64) c->opts.max_cells);
	mcc_image_put_u32(&f, (uint32) c->n_obs);
	for (size_t i = 0; i < c->n_obs * c->dim; i++)
		mcc_image_put_f64(&f, c->obs[i]);
	mcc_image_put_u32(&f, (uint32) c->n_ref);
	for (size_t i = 0; i < c->n_ref * c->dim; i++)
		mcc_image_put_f64(&f, c->ref[i]);
	if (!mcc_image_engine_run(&f, MCC_MSG_CHAMFER, fn, &r))
		return false;
	if (r.err.status != MCC_OK)
		mcc_pg_raise(&r.err);
	get_fit(&r, &c->res, &c->res.iterations);
	return true;
}

/* The scale range of the search (SQL arguments a and b), or a clear error. */
static void
scale_range_arg(double lo, double hi, double *min_scale, double *max_scale)
{
	if (!(lo > 0) || !(hi >= lo) || isinf(hi))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("min_scale and max_scale must satisfy 0 < min_scale <= max_scale < infinity"),
				 errdetail("min_scale is %g, max_scale %g.", lo, hi)));
	*min_scale = lo;
	*max_scale = hi;
}

/*
 * mcc_chamfer_align(observed, reference, transform, resolution,
 * max_distance, initial, min_scale, max_scale): (params, residual,
 * iterations, converged). NULL in any argument but initial gives NULL.
 */
Datum
mcc_chamfer_align_sql(PG_FUNCTION_ARGS)
{
	chamfer_call c;
	int			dim_ref;
	TupleDesc	tupdesc;
	Datum		values[CHAMFER_NATTS];
	bool		nulls[CHAMFER_NATTS] = {0};
	mcc_error	err;

	for (int i = 0; i < 8; i++)
		if (i != 5 && PG_ARGISNULL(i))
			PG_RETURN_NULL();
	memset(&c, 0, sizeof(c));
	mcc_chamfer_opts_init(&c.opts);
	c.obs = points_arg(PG_GETARG_ARRAYTYPE_P(0), "observed", &c.n_obs, &c.dim);
	c.ref = points_arg(PG_GETARG_ARRAYTYPE_P(1), "reference", &c.n_ref, &dim_ref);
	if (c.dim != dim_ref)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("observed and reference points differ in dimension"),
				 errdetail("Observed points have %d coordinates, reference points %d.", c.dim, dim_ref)));
	c.opts.transform = transform_arg(PG_GETARG_TEXT_PP(2));
	c.opts.resolution = PG_GETARG_FLOAT8(3);
	c.opts.max_distance = PG_GETARG_FLOAT8(4);
	if (!PG_ARGISNULL(5))
		initial_arg(PG_GETARG_ARRAYTYPE_P(5), c.opts.transform, c.dim, &c.opts);
	scale_range_arg(PG_GETARG_FLOAT8(6), PG_GETARG_FLOAT8(7), &c.opts.min_scale, &c.opts.max_scale);
	c.opts.threads = align_threads;
	c.opts.max_cells = (size_t) align_max_cells;
	c.opts.poll = align_poll;
	if (c.n_obs > UINT32_MAX || c.n_ref > UINT32_MAX || !chamfer_engine(&c))
	{
		if (run_interruptible(chamfer_once, &c, &err) != MCC_OK)
			mcc_pg_raise(&err);
	}

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);
	values[0] = float8_array(c.res.params, c.res.n_params);
	values[1] = Float8GetDatum(c.res.residual);
	values[2] = Int32GetDatum(c.res.iterations);
	values[3] = BoolGetDatum(c.res.converged != 0);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/* Arguments of one mcc_align call. */
typedef struct align_call
{
	mcc_minutiae *probe;
	mcc_minutiae *cand;
	mcc_align_opts opts;
	mcc_align_result *res;
} align_call;

/* One attempt of a minutiae alignment. */
static mcc_status
align_once(void *arg, int *canceled, mcc_error *err)
{
	align_call *c = arg;
	mcc_status	st = mcc_align_minutiae(c->probe, c->cand, &c->opts, c->res, err);

	*canceled = c->res->fit.canceled;
	return st;
}

/* Run a minutiae alignment of two stored templates in the matcher engine; false: here. */
static bool
align_engine(const struct varlena *probe, const struct varlena *cand, align_call *c)
{
	const char *fn = "mcc_align";
	uint64		request = 64 + VARSIZE(probe) + VARSIZE(cand);
	uint64		answer = 256 + (uint64) MCC_MAX_MINUTIAE * 24;
	StringInfoData f;
	mcc_image_result r;
	uint32		n;

	if (!mcc_image_request_start(fn, request, answer, &f))
		return false;
	mcc_image_put_u32(&f, (uint32) c->opts.transform);
	mcc_image_put_u32(&f, c->opts.use_directions ? 1 : 0);
	mcc_image_put_f64(&f, c->opts.max_distance);
	mcc_image_put_u32(&f, (uint32) c->opts.init_type);
	for (int i = 0; i < 9; i++)
		mcc_image_put_f64(&f, c->opts.init[i]);
	mcc_image_put_u64(&f, (uint64) c->opts.max_cells);
	mcc_image_put_u32(&f, VARSIZE(probe));
	appendBinaryStringInfo(&f, (const char *) probe, VARSIZE(probe));
	mcc_image_put_u32(&f, VARSIZE(cand));
	appendBinaryStringInfo(&f, (const char *) cand, VARSIZE(cand));
	if (!mcc_image_engine_run(&f, MCC_MSG_ALIGN, fn, &r))
		return false;
	if (r.err.status != MCC_OK)
		mcc_pg_raise(&r.err);
	memset(c->res, 0, sizeof(mcc_align_result));
	get_fit(&r, &c->res->fit, &c->res->iterations);
	n = mcc_image_get_u32(&r);
	if (n > MCC_MAX_MINUTIAE)
		mcc_pg_malformed_reply("An alignment result maps %u minutiae.", n);
	c->res->n_probe = (int) n;
	for (uint32 i = 0; i < n; i++)
		for (int k = 0; k < 3; k++)
			c->res->mapped[i][k] = mcc_image_get_f64(&r);
	c->res->paired = (int) mcc_image_get_u32(&r);
	return true;
}

/*
 * mcc_align(probe, candidate, transform, use_directions, max_distance,
 * initial): (params, residual, iterations, converged, mapped, paired).
 * NULL in any argument but initial gives NULL.
 */
Datum
mcc_align_sql(PG_FUNCTION_ARGS)
{
	struct varlena *pt;
	struct varlena *ct;
	mcc_template_view pv;
	mcc_template_view cv;
	align_call	c;
	double		max_distance;
	TupleDesc	tupdesc;
	Datum		values[ALIGN_NATTS];
	bool		nulls[ALIGN_NATTS] = {0};
	mcc_error	err;
	Datum	   *cells;
	int			dims[2];
	int			lbs[2] = {1, 1};
	int			n;

	for (int i = 0; i < 5; i++)
		if (PG_ARGISNULL(i))
			PG_RETURN_NULL();
	pt = MCC_GETARG_TEMPLATE(0);
	ct = MCC_GETARG_TEMPLATE(1);
	max_distance = PG_GETARG_FLOAT8(4);
	mcc_pg_open(pt, &pv);
	mcc_pg_open(ct, &cv);
	memset(&c, 0, sizeof(c));
	c.probe = palloc(sizeof(mcc_minutiae));
	c.cand = palloc(sizeof(mcc_minutiae));
	c.res = palloc(sizeof(mcc_align_result));
	mcc_template_minutiae(&pv, c.probe);
	mcc_template_minutiae(&cv, c.cand);
	mcc_align_opts_init(&c.opts);
	c.opts.transform = transform_arg(PG_GETARG_TEXT_PP(2));
	c.opts.use_directions = PG_GETARG_BOOL(3);
	if (isnan(max_distance) || !(max_distance > 0) || isinf(max_distance))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_distance must be a positive finite number of pixels")));
	c.opts.max_distance = max_distance;
	if (!PG_ARGISNULL(5))
	{
		/* the transform's parameters, as mcc_chamfer_align's initial, in pixels */
		mcc_chamfer_opts co;

		mcc_chamfer_opts_init(&co);
		initial_arg(PG_GETARG_ARRAYTYPE_P(5), c.opts.transform, 2, &co);
		c.opts.init_type = co.init_type;
		memcpy(c.opts.init, co.init, sizeof(c.opts.init));
	}
	c.opts.threads = align_threads;
	c.opts.max_cells = (size_t) align_max_cells;
	c.opts.poll = align_poll;
	if (!align_engine(pt, ct, &c))
	{
		if (run_interruptible(align_once, &c, &err) != MCC_OK)
			mcc_pg_raise(&err);
	}

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);
	values[0] = float8_array(c.res->fit.params, c.res->fit.n_params);
	values[1] = Float8GetDatum(c.res->fit.residual);
	values[2] = Int32GetDatum(c.res->iterations);
	values[3] = BoolGetDatum(c.res->fit.converged != 0);
	n = c.res->n_probe;
	cells = palloc(sizeof(Datum) * 3 * Max(n, 1));
	for (int i = 0; i < n; i++)
		for (int k = 0; k < 3; k++)
			cells[3 * i + k] = Float8GetDatum(c.res->mapped[i][k]);
	dims[0] = n;
	dims[1] = 3;
	values[4] = PointerGetDatum(construct_md_array(cells, NULL, 2, dims, lbs, FLOAT8OID,
												   sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	values[5] = Int32GetDatum(c.res->paired);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
