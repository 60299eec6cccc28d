/*
 * dp2d_sql.c: elastic image matching in SQL (paper 003; src/core/image/mcc_dp2d.h
 * and mcc_dp2d_verify.h): mcc_dp2d_distance, mcc_dp2d_warp,
 * mcc_dp2d_enhance, mcc_dp2d_differences, mcc_dp2d_verify,
 * mcc_dp2d_verify_many (the simplified algorithm here, the overall one of
 * algorithm => 'overall' in dp2d_overall_sql.c), and the GUC
 * mcc.dp2d_threads.
 *
 * Images arrive as bytea holding an 8-bit grayscale PGM (P5) or PNG,
 * decoded by src/image/image_io.c like every image argument.
 *
 * Where mcc.image_device sends them (src/image/image_engine.c), the matches run
 * in the matcher engine, on its GPU when it has one: one request per call,
 * and for mcc_dp2d_verify_many one request for many probes (the engine
 * enhances them on its CPU threads, then matches them all in one GPU
 * batch). Otherwise they run on worker threads of src/core
 * (mcc_dp2d_start) even with one thread, so that the backend only waits:
 * it checks for interrupts every few milliseconds and stops the threads
 * before an error or cancel leaves the function. The threads never call
 * PostgreSQL. Both give the same integers (costs, differences) and the
 * same distances; a verification enhances its images in the order
 * reference, probes on either path, so the same error comes first.
 */
#include "dp2d_pg.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/tuplestore.h"

#include "mcc_proto.h"
#include "mcc_dp2d.h"
#include "mcc_dp2d_verify.h"
#include "mcc_image.h"

PG_FUNCTION_INFO_V1(mcc_dp2d_distance);
PG_FUNCTION_INFO_V1(mcc_dp2d_warp);
PG_FUNCTION_INFO_V1(mcc_dp2d_enhance_sql);
PG_FUNCTION_INFO_V1(mcc_dp2d_differences);
PG_FUNCTION_INFO_V1(mcc_dp2d_verify_sql);
PG_FUNCTION_INFO_V1(mcc_dp2d_verify_many);

/* mcc.dp2d_threads: worker threads of one elastic match. */
static int	mcc_dp2d_threads = 1;

/* How often a waiting backend checks for interrupts. */
#define DP2D_POLL_MS 10

/* Define mcc.dp2d_threads; called once from _PG_init. */
void
mcc_dp2d_sql_init(void)
{
	DefineCustomIntVariable("mcc.dp2d_threads",
							"Worker threads of one elastic image match.",
							"Results do not depend on it; more threads finish a large "
							"match sooner.",
							&mcc_dp2d_threads,
							1, 1, MCC_DP2D_MAX_THREADS,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);
}

/* Decode image argument n (PGM or PNG bytea) into palloc'd pixels. */
static void
dp2d_image_arg(FunctionCallInfo fcinfo, int n, const char *what, mcc_image *img)
{
	mcc_pg_image_arg(PG_GETARG_BYTEA_PP(n), what, img, NULL);
}

/*
 * Match the pairs (a[i], b[i]) on mcc.dp2d_threads threads, waiting with
 * interrupts checked; the threads are stopped before any error leaves.
 */
void
dp2d_match_pairs(uint32 npairs, const mcc_image *const *a, const mcc_image *const *b,
				 int flags, mcc_dp2d_out *out)
{
	mcc_dp2d_request req = {.npairs = npairs, .a = a, .b = b, .out = out, .flags = flags,
	.threads = mcc_dp2d_threads, .kernel = MCC_DP2D_AUTO};
	mcc_dp2d_job *job;
	mcc_error	err;

	if (mcc_dp2d_start(&req, &job, &err) != MCC_OK)
		mcc_pg_raise(&err);
	MCC_PG_WAIT_JOB(job, mcc_dp2d_wait, mcc_dp2d_abort, DP2D_POLL_MS);
	if (mcc_dp2d_finish(job, &err) != MCC_OK)
		mcc_pg_raise(&err);
}

/* Raise a failed enhancement of the image named what. */
void
dp2d_raise_enhance(const char *what, const mcc_error *err)
{
	ereport(ERROR,
			(errcode(mcc_pg_sqlstate(err->status)),
			 errmsg("cannot enhance the %s image: %s", what, err->message),
			 err->detail[0] ? errdetail("%s", err->detail) : 0));
}

/*
 * One engine request: a images against b images in the pairs (0, i) or
 * (i, 0), flags MCC_IMG_*. The outputs of pair i go to out[i] (warped
 * images too, when out[i].warped is set). false: this backend is to run
 * it. what_a and what_b name the images of a failed enhancement
 * (what_b[i] for image i of b).
 */
bool
dp2d_engine(const char *fn, uint32 na, const mcc_image *a, uint32 nb, const mcc_image *b,
			uint32 flags, mcc_dp2d_out *out, const char *what_a, char *const *what_b)
{
	uint32		npairs = Max(na, nb);
	uint64		request = 20 + (uint64) npairs * 8;
	uint64		answer = 8 + (uint64) npairs * 24;
	StringInfoData f;
	mcc_image_result res;
	uint32		side,
				index;

	for (uint32 i = 0; i < na; i++)
		request += mcc_image_field_bytes(&a[i]);
	for (uint32 i = 0; i < nb; i++)
		request += mcc_image_field_bytes(&b[i]);
	if (flags & MCC_IMG_WARPED)
		answer += (uint64) npairs * a[0].width * a[0].height;
	if (!mcc_image_request_start(fn, request, answer, &f))
		return false;
	mcc_image_put_u32(&f, flags);
	mcc_image_put_u32(&f, na);
	for (uint32 i = 0; i < na; i++)
		mcc_image_put_image(&f, &a[i]);
	mcc_image_put_u32(&f, nb);
	for (uint32 i = 0; i < nb; i++)
		mcc_image_put_image(&f, &b[i]);
	mcc_image_put_u32(&f, npairs);
	for (uint32 i = 0; i < npairs; i++)
	{
		mcc_image_put_u32(&f, na == 1 ? 0 : i);
		mcc_image_put_u32(&f, nb == 1 ? 0 : i);
	}
	if (!mcc_image_engine_run(&f, MCC_MSG_DP2D, fn, &res))
		return false;
	side = mcc_image_get_u32(&res);
	index = mcc_image_get_u32(&res);
	if (res.err.status != MCC_OK)
	{
		if (side == 1)
			dp2d_raise_enhance(what_a, &res.err);
		if (side == 2 && index < nb)
			dp2d_raise_enhance(what_b[index], &res.err);
		mcc_pg_raise(&res.err);
	}
	if (mcc_image_get_u32(&res) != npairs)
		mcc_pg_malformed_reply("An elastic matching result does not fit its request.");
	for (uint32 i = 0; i < npairs; i++)
	{
		out[i].cost = mcc_image_get_u64(&res);
		out[i].distance = mcc_image_get_f64(&res);
		out[i].differences = mcc_image_get_u64(&res);
	}
	if (flags & MCC_IMG_WARPED)
		for (uint32 i = 0; i < npairs; i++)
		{
			size_t		px = (size_t) a[0].width * a[0].height;

			memcpy(out[i].warped, mcc_image_get_raw(&res, px), px);
		}
	return true;
}

/*
 * Match the function's images a and b (arguments 0 and 1) in the engine or
 * here. warped: NULL, or it gets b warped onto a (an image of a's size).
 */
static void
dp2d_match_args(FunctionCallInfo fcinfo, const char *fn, mcc_image *warped,
				mcc_dp2d_out *out)
{
	mcc_image	a,
				b;
	const mcc_image *pa[1] = {&a};
	const mcc_image *pb[1] = {&b};
	uint32		flags = warped != NULL ? MCC_IMG_WARP | MCC_IMG_WARPED : 0;

	dp2d_image_arg(fcinfo, 0, "first", &a);
	dp2d_image_arg(fcinfo, 1, "second", &b);
	memset(out, 0, sizeof(*out));
	if (warped != NULL)
	{
		warped->width = a.width;
		warped->height = a.height;
		warped->stride = a.width;
		warped->pixels = palloc((size_t) a.width * a.height);
		out->warped = warped->pixels;
	}
	if (dp2d_engine(fn, 1, &a, 1, &b, flags, out, NULL, NULL))
		return;
	dp2d_match_pairs(1, pa, pb, warped != NULL ? MCC_DP2D_WARP : 0, out);
}

/* mcc_dp2d_distance(a, b): Eq. 8's distance, 0..255. */
Datum
mcc_dp2d_distance(PG_FUNCTION_ARGS)
{
	mcc_dp2d_out out;

	dp2d_match_args(fcinfo, "mcc_dp2d_distance", NULL, &out);
	PG_RETURN_FLOAT8(out.distance);
}

/* mcc_dp2d_warp(a, b): b warped onto a, a PGM of a's size. */
Datum
mcc_dp2d_warp(PG_FUNCTION_ARGS)
{
	mcc_image	w;
	mcc_dp2d_out out;

	dp2d_match_args(fcinfo, "mcc_dp2d_warp", &w, &out);
	PG_RETURN_BYTEA_P(mcc_pg_image_to_pgm(&w));
}

/* Enhance and binarize raw into img (the working size), or raise naming what. */
static void
dp2d_enhance_image(const mcc_image *raw, const char *what, mcc_image *img)
{
	mcc_dp2d_prep p;
	mcc_error	err;

	mcc_dp2d_prep_default(&p);
	img->width = img->height = p.side;
	img->stride = p.side;
	img->pixels = palloc((size_t) p.side * p.side);
	if (mcc_dp2d_enhance(raw, &p, img->pixels, &err) != MCC_OK)
		dp2d_raise_enhance(what, &err);
}

/* mcc_dp2d_enhance(image): the enhanced, binarized working image (PGM). */
Datum
mcc_dp2d_enhance_sql(PG_FUNCTION_ARGS)
{
	mcc_image	raw,
				img;

	dp2d_image_arg(fcinfo, 0, "fingerprint", &raw);
	dp2d_enhance_image(&raw, "fingerprint", &img);
	PG_RETURN_BYTEA_P(mcc_pg_image_to_pgm(&img));
}

/*
 * Sec. 8 for n probes against one reference: the pixels where the
 * enhanced reference and each enhanced probe warped onto it differ, into
 * differences[i]. The engine enhances and matches them all in one
 * request where it fits, else in several; this backend enhances the
 * reference, then each probe, and matches every pair in one job.
 */
static void
dp2d_verify_n(const char *fn, const mcc_image *ref, uint32 n, const mcc_image *probes,
			  char *const *what, int64 *differences)
{
	mcc_dp2d_out *out = palloc0(sizeof(mcc_dp2d_out) * Max(n, 1));
	const mcc_image **pa;
	const mcc_image **pb;
	mcc_image	eref;
	mcc_image  *eprobes;
	uint32		done = 0;

	/* as many probes per request as fit in a frame (at least one) */
	while (done < n)
	{
		uint64		bytes = mcc_image_field_bytes(ref) + 64;
		uint32		k = 0;

		while (done + k < n &&
			   (k == 0 || bytes + mcc_image_field_bytes(&probes[done + k]) + 64 < MCC_PROTO_MAX_FRAME / 2))
			bytes += mcc_image_field_bytes(&probes[done + k++]) + 8;
		if (!dp2d_engine(fn, 1, ref, k, probes + done, MCC_IMG_WARP | MCC_IMG_ENHANCE,
						 out + done, "reference", what + done))
			break;
		done += k;
	}
	if (done < n)
	{
		/* this backend: every pair not answered by the engine (all of them) */
		dp2d_enhance_image(ref, "reference", &eref);
		eprobes = palloc(sizeof(mcc_image) * n);
		pa = palloc(sizeof(mcc_image *) * n);
		pb = palloc(sizeof(mcc_image *) * n);
		for (uint32 i = done; i < n; i++)
		{
			dp2d_enhance_image(&probes[i], what[i], &eprobes[i]);
			pa[i - done] = &eref;
			pb[i - done] = &eprobes[i];
		}
		dp2d_match_pairs(n - done, pa, pb, MCC_DP2D_WARP, out + done);
	}
	for (uint32 i = 0; i < n; i++)
		differences[i] = (int64) out[i].differences;
}

/*
 * Pixels where the reference and the warped probe differ: Sec. 8 (the
 * simplified algorithm) or Sec. 8.1 (the overall one, after thinning and
 * restoration). The algorithm's name is argument alg.
 */
static int64
dp2d_differences(FunctionCallInfo fcinfo, const char *fn, int alg)
{
	mcc_image	r,
				p;
	char	   *what[1] = {"probe"};
	int64		differences;
	dp2d_algorithm a = dp2d_algorithm_arg(PG_GETARG_TEXT_PP(alg));

	dp2d_image_arg(fcinfo, 0, "reference", &r);
	dp2d_image_arg(fcinfo, 1, "probe", &p);
	if (a == DP2D_OVERALL)
		dp2d_overall_n(fn, &r, 1, &p, what, &differences);
	else
		dp2d_verify_n(fn, &r, 1, &p, what, &differences);
	return differences;
}

/* mcc_dp2d_differences(reference, probe, algorithm) */
Datum
mcc_dp2d_differences(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(dp2d_differences(fcinfo, "mcc_dp2d_differences", 2));
}

/* Refuse a negative verification threshold. */
static void
check_threshold(int64 threshold)
{
	if (threshold < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("verification threshold must not be negative: " INT64_FORMAT, threshold)));
}

/* mcc_dp2d_verify(reference, probe, threshold, algorithm): differences <= threshold. */
Datum
mcc_dp2d_verify_sql(PG_FUNCTION_ARGS)
{
	int64		threshold = PG_GETARG_INT64(2);

	check_threshold(threshold);
	PG_RETURN_BOOL(dp2d_differences(fcinfo, "mcc_dp2d_verify", 3) <= threshold);
}

/*
 * mcc_dp2d_verify_many(reference, probes[], threshold, algorithm): one row
 * per element of probes, in array order: (probe, differences, verified),
 * probe being the element's position from 1; NULL elements give NULL
 * results.
 */
Datum
mcc_dp2d_verify_many(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(1);
	int64		threshold = PG_GETARG_INT64(2);
	mcc_image	ref;
	mcc_image  *probes;
	char	  **what;
	int64	   *differences;
	Datum	   *elems;
	bool	   *nulls;
	int			count;
	uint32		n = 0;
	uint32		k = 0;
	dp2d_algorithm alg = dp2d_algorithm_arg(PG_GETARG_TEXT_PP(3));

	check_threshold(threshold);
	InitMaterializedSRF(fcinfo, 0);
	deconstruct_array(arr, BYTEAOID, -1, false, TYPALIGN_INT, &elems, &nulls, &count);
	dp2d_image_arg(fcinfo, 0, "reference", &ref);
	probes = palloc(sizeof(mcc_image) * Max(count, 1));
	what = palloc(sizeof(char *) * Max(count, 1));
	differences = palloc(sizeof(int64) * Max(count, 1));
	for (int i = 0; i < count; i++)
		if (!nulls[i])
		{
			what[n] = psprintf("probe %d", i + 1);
			mcc_pg_image_arg(DatumGetByteaPP(elems[i]), what[n], &probes[n], NULL);
			n++;
		}
	if (n > 0 && alg == DP2D_OVERALL)
		dp2d_overall_n("mcc_dp2d_verify_many", &ref, n, probes, what, differences);
	else if (n > 0)
		dp2d_verify_n("mcc_dp2d_verify_many", &ref, n, probes, what, differences);
	for (int i = 0; i < count; i++)
	{
		Datum		values[3];
		bool		isnull[3] = {false, nulls[i], nulls[i]};

		values[0] = Int32GetDatum(i + 1);
		values[1] = nulls[i] ? (Datum) 0 : Int64GetDatum(differences[k]);
		values[2] = nulls[i] ? (Datum) 0 : BoolGetDatum(differences[k] <= threshold);
		if (!nulls[i])
			k++;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, isnull);
	}
	return (Datum) 0;
}
