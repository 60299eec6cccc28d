/*
 * dp2d_sql.c: elastic image matching in SQL (paper 003; src/core/mcc_dp2d.h
 * and mcc_dp2d_verify.h): mcc_dp2d_distance, mcc_dp2d_warp,
 * mcc_dp2d_enhance, mcc_dp2d_differences, mcc_dp2d_verify, and the GUC
 * mcc.dp2d_threads.
 *
 * Images arrive as bytea holding an 8-bit grayscale PGM (P5) or PNG,
 * decoded by src/core/mcc_image.h. (A private decoder: the SQL image input
 * helpers of the SAD search will replace it when they land.)
 *
 * The matching runs on worker threads of src/core (mcc_dp2d_start) even
 * with one thread, so that the backend only waits: it checks for
 * interrupts every few milliseconds and stops the threads before an error
 * or cancel leaves the function. The threads never call PostgreSQL.
 */
#include "mcc_pg.h"

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "mcc_dp2d.h"
#include "mcc_dp2d_verify.h"
#include "mcc_image.h"

PG_FUNCTION_INFO_V1(mcc_dp2d_distance);
PG_FUNCTION_INFO_V1(mcc_dp2d_warp);
PG_FUNCTION_INFO_V1(mcc_dp2d_enhance_sql);
PG_FUNCTION_INFO_V1(mcc_dp2d_differences);
PG_FUNCTION_INFO_V1(mcc_dp2d_verify_sql);

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
	bytea	   *b = PG_GETARG_BYTEA_PP(n);
	const uint8_t *data = (const uint8_t *) VARDATA_ANY(b);
	size_t		len = VARSIZE_ANY_EXHDR(b);
	mcc_image_info info;
	mcc_error	err;

	if (mcc_image_probe(data, len, &info, &err) != MCC_OK)
		ereport(ERROR,
				(errcode(mcc_pg_sqlstate(err.status)),
				 errmsg("invalid %s image: %s", what, err.message),
				 err.detail[0] ? errdetail("%s", err.detail) : 0));
	img->stride = info.width;
	img->pixels = palloc((size_t) info.width * info.height);
	if (mcc_image_decode(data, len, img, &err) != MCC_OK)
		ereport(ERROR,
				(errcode(mcc_pg_sqlstate(err.status)),
				 errmsg("invalid %s image: %s", what, err.message),
				 err.detail[0] ? errdetail("%s", err.detail) : 0));
}

/* A PGM bytea of an image. */
static bytea *
dp2d_pgm(const mcc_image *img)
{
	size_t		size = mcc_image_pgm_size(img->width, img->height);
	bytea	   *out = (bytea *) palloc(VARHDRSZ + size);

	SET_VARSIZE(out, VARHDRSZ + mcc_image_write_pgm(img, (uint8_t *) VARDATA(out)));
	return out;
}

/*
 * Match a against b on mcc.dp2d_threads threads, waiting with interrupts
 * checked; the threads are stopped before any error leaves.
 */
static void
dp2d_match(const mcc_image *a, const mcc_image *b, int flags, mcc_dp2d_out *out)
{
	const mcc_image *pa[1] = {a};
	const mcc_image *pb[1] = {b};
	mcc_dp2d_request req;
	mcc_dp2d_job *job;
	mcc_error	err;

	memset(&req, 0, sizeof(req));
	req.npairs = 1;
	req.a = pa;
	req.b = pb;
	req.out = out;
	req.flags = flags;
	req.threads = mcc_dp2d_threads;
	req.kernel = MCC_DP2D_AUTO;
	if (mcc_dp2d_start(&req, &job, &err) != MCC_OK)
		mcc_pg_raise(&err);
	PG_TRY();
	{
		while (!mcc_dp2d_wait(job, DP2D_POLL_MS))
			CHECK_FOR_INTERRUPTS();
	}
	PG_CATCH();
	{
		mcc_dp2d_abort(job);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (mcc_dp2d_finish(job, &err) != MCC_OK)
		mcc_pg_raise(&err);
}

/* mcc_dp2d_distance(a, b): Eq. 8's distance, 0..255. */
Datum
mcc_dp2d_distance(PG_FUNCTION_ARGS)
{
	mcc_image	a,
				b;
	mcc_dp2d_out out;

	dp2d_image_arg(fcinfo, 0, "first", &a);
	dp2d_image_arg(fcinfo, 1, "second", &b);
	memset(&out, 0, sizeof(out));
	dp2d_match(&a, &b, 0, &out);
	PG_RETURN_FLOAT8(out.distance);
}

/* mcc_dp2d_warp(a, b): b warped onto a, a PGM of a's size. */
Datum
mcc_dp2d_warp(PG_FUNCTION_ARGS)
{
	mcc_image	a,
				b,
				w;
	mcc_dp2d_out out;

	dp2d_image_arg(fcinfo, 0, "first", &a);
	dp2d_image_arg(fcinfo, 1, "second", &b);
	memset(&out, 0, sizeof(out));
	w.width = a.width;
	w.height = a.height;
	w.stride = a.width;
	w.pixels = palloc((size_t) a.width * a.height);
	out.warped = w.pixels;
	dp2d_match(&a, &b, MCC_DP2D_WARP, &out);
	PG_RETURN_BYTEA_P(dp2d_pgm(&w));
}

/* Enhance and binarize image argument n into img (the working size). */
static void
dp2d_enhanced_arg(FunctionCallInfo fcinfo, int n, const char *what, mcc_image *img)
{
	mcc_image	raw;
	mcc_dp2d_prep p;
	mcc_error	err;

	dp2d_image_arg(fcinfo, n, what, &raw);
	mcc_dp2d_prep_default(&p);
	img->width = img->height = p.side;
	img->stride = p.side;
	img->pixels = palloc((size_t) p.side * p.side);
	if (mcc_dp2d_enhance(&raw, &p, img->pixels, &err) != MCC_OK)
		ereport(ERROR,
				(errcode(mcc_pg_sqlstate(err.status)),
				 errmsg("cannot enhance the %s image: %s", what, err.message),
				 err.detail[0] ? errdetail("%s", err.detail) : 0));
	pfree(raw.pixels);
}

/* mcc_dp2d_enhance(image): the enhanced, binarized working image (PGM). */
Datum
mcc_dp2d_enhance_sql(PG_FUNCTION_ARGS)
{
	mcc_image	img;

	dp2d_enhanced_arg(fcinfo, 0, "fingerprint", &img);
	PG_RETURN_BYTEA_P(dp2d_pgm(&img));
}

/* Pixels where the reference and the warped probe differ (Sec. 8). */
static int64
dp2d_differences(FunctionCallInfo fcinfo)
{
	mcc_image	r,
				p;
	mcc_dp2d_out out;

	dp2d_enhanced_arg(fcinfo, 0, "reference", &r);
	dp2d_enhanced_arg(fcinfo, 1, "probe", &p);
	memset(&out, 0, sizeof(out));
	dp2d_match(&r, &p, MCC_DP2D_WARP, &out);
	return (int64) out.differences;
}

/* mcc_dp2d_differences(reference, probe) */
Datum
mcc_dp2d_differences(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(dp2d_differences(fcinfo));
}

/* mcc_dp2d_verify(reference, probe, threshold): differences <= threshold. */
Datum
mcc_dp2d_verify_sql(PG_FUNCTION_ARGS)
{
	int64		threshold = PG_GETARG_INT64(2);

	if (threshold < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("verification threshold must not be negative: " INT64_FORMAT, threshold)));
	PG_RETURN_BOOL(dp2d_differences(fcinfo) <= threshold);
}
