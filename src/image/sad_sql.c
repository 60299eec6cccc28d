/*
 * sad_sql.c: mcc_sad_locate, mcc_sad_map and mcc_sad_map_array, the SQL
 * face of src/core's SAD search (paper 002).
 *
 * The search runs on mcc.image_threads worker threads of src/core (they
 * never call PostgreSQL; signals are blocked in them). The backend waits
 * for them in steps of a few milliseconds with CHECK_FOR_INTERRUPTS()
 * between steps; a cancel or statement_timeout raises its error, and
 * MCC_PG_WAIT_JOB (image_pg.h) stops and joins the threads before the
 * error goes on, so no thread outlives the memory it writes to.
 */
#include "image_pg.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/tuplestore.h"

#include "mcc_proto.h"
#include "mcc_sad.h"

/* How long the backend waits on the threads between interrupt checks. */
#define SAD_POLL_MS 5

/* Target and pattern from arguments 0 and 1, bytea or smallint[][]. */
static void
get_images(FunctionCallInfo fcinfo, bool arrays, mcc_image *t, mcc_image *p)
{
	if (arrays)
	{
		mcc_pg_image_from_array(PG_GETARG_ARRAYTYPE_P(0), "target image", t);
		mcc_pg_image_from_array(PG_GETARG_ARRAYTYPE_P(1), "pattern image", p);
	}
	else
	{
		mcc_pg_image_from_bytea(PG_GETARG_BYTEA_PP(0), t, NULL);
		mcc_pg_image_from_bytea(PG_GETARG_BYTEA_PP(1), p, NULL);
	}
}

/* The map's size, or the error of a pattern that does not fit. */
static void
map_size(const mcc_image *t, const mcc_image *p, uint32 *nx, uint32 *ny)
{
	mcc_error	err;

	if (mcc_sad_positions(t, p, nx, ny, &err) != MCC_OK)
		mcc_pg_raise(&err);
}

/*
 * Run a search in the matcher engine if mcc.image_device sends it there
 * (image_engine.c); false: this backend runs it. The answer is the one
 * the backend would give: the same hits, the same map.
 */
static bool
engine_search(const char *fn, const mcc_image *t, const mcc_image *p, uint32 nx, uint32 ny,
			  uint64 *map, uint32 k, mcc_sad_hit *hits, uint32 *n_hits)
{
	uint64		request = 12 + mcc_image_field_bytes(t) + mcc_image_field_bytes(p);
	uint64		answer = 16 + (uint64) k * 16 + (map ? (uint64) nx * ny * 8 : 0);
	StringInfoData f;
	mcc_image_result res;
	uint32		n;

	if (!mcc_image_request_start(fn, request, answer, &f))
		return false;
	mcc_image_put_u32(&f, k);
	mcc_image_put_u32(&f, map != NULL);
	mcc_image_put_image(&f, t);
	mcc_image_put_image(&f, p);
	if (!mcc_image_engine_run(&f, MCC_MSG_SAD, fn, &res))
		return false;
	if (res.err.status != MCC_OK)
		mcc_pg_raise(&res.err);
	if (mcc_image_get_u32(&res) != nx || mcc_image_get_u32(&res) != ny ||
		(n = mcc_image_get_u32(&res)) > k)
		mcc_pg_malformed_reply("A SAD result does not fit its request.");
	for (uint32 i = 0; i < n; i++)
	{
		hits[i].sad = mcc_image_get_u64(&res);
		hits[i].x = mcc_image_get_u32(&res);
		hits[i].y = mcc_image_get_u32(&res);
	}
	if (mcc_image_get_u32(&res) != (map != NULL ? 1 : 0))
		mcc_pg_malformed_reply("A SAD result does not fit its request.");
	if (map != NULL)
		memcpy(map, mcc_image_get_raw(&res, (size_t) nx * ny * sizeof(uint64)),
			   (size_t) nx * ny * sizeof(uint64));
	*n_hits = n;
	return true;
}

/*
 * Run a search in the matcher engine or on worker threads of this
 * backend, which keeps answering interrupts; the map (may be NULL) and up
 * to k hits come back.
 */
static uint32
run_search(const char *fn, const mcc_image *t, const mcc_image *p, uint64 *map, uint32 k,
		   mcc_sad_hit *hits)
{
	mcc_sad_request req = {t, p, map, k, mcc_image_threads, MCC_SAD_AUTO};
	mcc_sad_job *job;
	mcc_error	err;
	uint32		n = 0;
	uint32		nx,
				ny;

	map_size(t, p, &nx, &ny);
	if (engine_search(fn, t, p, nx, ny, map, k, hits, &n))
		return n;
	if (mcc_sad_start(&req, &job, &err) != MCC_OK)
		mcc_pg_raise(&err);
	MCC_PG_WAIT_JOB(job, mcc_sad_wait, mcc_sad_abort, SAD_POLL_MS);
	if (mcc_sad_finish(job, hits, &n, &err) != MCC_OK)
		mcc_pg_raise(&err);
	return n;
}

/* mcc_sad_locate: the k best shifts as rows (x, y, sad). */
static Datum
sad_locate(FunctionCallInfo fcinfo, bool arrays)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int32		k = PG_GETARG_INT32(2);
	mcc_image	t,
				p;
	uint32		nx,
				ny,
				want,
				n;
	mcc_sad_hit *hits;

	if (k < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be at least 1")));
	if (k > MCC_SAD_MAX_K)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("k is too large: %d", k),
				 errdetail("At most %d shifts are returned; mcc_sad_map_array() gives every one.",
						   MCC_SAD_MAX_K)));
	InitMaterializedSRF(fcinfo, 0);
	get_images(fcinfo, arrays, &t, &p);
	map_size(&t, &p, &nx, &ny);
	want = (uint64) nx * ny < (uint64) k ? nx * ny : (uint32) k;
	hits = palloc(sizeof(mcc_sad_hit) * want);
	n = run_search("mcc_sad_locate", &t, &p, NULL, want, hits);
	for (uint32 i = 0; i < n; i++)
	{
		Datum		values[3];
		bool		nulls[3] = {false, false, false};

		values[0] = Int32GetDatum((int32) hits[i].x);
		values[1] = Int32GetDatum((int32) hits[i].y);
		values[2] = Int64GetDatum((int64) hits[i].sad);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* A whole map: the SAD of every shift (x, y), row y first, palloc'd. */
typedef struct sad_map
{
	uint64	   *sad;
	uint32		nx;
	uint32		ny;
	size_t		n;				/* nx * ny */
} sad_map;

static sad_map
full_map(FunctionCallInfo fcinfo, const char *fn, bool arrays)
{
	mcc_image	t,
				p;
	sad_map		m;

	get_images(fcinfo, arrays, &t, &p);
	map_size(&t, &p, &m.nx, &m.ny);
	m.n = (size_t) m.nx * m.ny;
	m.sad = palloc(sizeof(uint64) * m.n);
	run_search(fn, &t, &p, m.sad, 0, NULL);
	return m;
}

/*
 * The map as a PGM for viewing: linear from the smallest SAD (black, the
 * best match) to the largest (white); all black when every SAD is equal.
 */
static Datum
sad_map_pgm(FunctionCallInfo fcinfo, bool arrays)
{
	sad_map		m = full_map(fcinfo, "mcc_sad_map", arrays);
	const uint64 *map = m.sad;
	uint64		lo = map[0],
				hi = map[0];
	mcc_image	view;

	for (size_t i = 1; i < m.n; i++)
	{
		lo = map[i] < lo ? map[i] : lo;
		hi = map[i] > hi ? map[i] : hi;
	}
	view.width = m.nx;
	view.height = m.ny;
	view.stride = m.nx;
	view.pixels = palloc(m.n);
	for (size_t i = 0; i < m.n; i++)
		view.pixels[i] = hi == lo ? 0 : (uint8) (((map[i] - lo) * 255 + (hi - lo) / 2) / (hi - lo));
	PG_RETURN_BYTEA_P(mcc_pg_image_to_pgm(&view));
}

/* The map as bigint[ny][nx]: element [y + 1][x + 1] is the SAD of (x, y). */
static Datum
sad_map_array(FunctionCallInfo fcinfo, bool arrays)
{
	sad_map		m = full_map(fcinfo, "mcc_sad_map_array", arrays);
	ArrayType  *a = mcc_pg_array_2d(INT8OID, sizeof(int64), m.ny, m.nx);

	if (a == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("SAD map of %u x %u shifts is too large for an array", m.nx, m.ny),
				 errhint("Use mcc_sad_locate() for the best shifts.")));
	memcpy(ARR_DATA_PTR(a), m.sad, m.n * sizeof(int64));
	pfree(m.sad);
	PG_RETURN_ARRAYTYPE_P(a);
}

/*
 * The C functions of an SQL function's two overloads: images as bytea
 * (PGM, PNG) or as smallint[][]. Both run impl, told which.
 */
#define SAD_SQL_OVERLOADS(bytea_fn, array_fn, impl) \
	PG_FUNCTION_INFO_V1(bytea_fn); \
	PG_FUNCTION_INFO_V1(array_fn); \
	Datum bytea_fn(PG_FUNCTION_ARGS) { return impl(fcinfo, false); } \
	Datum array_fn(PG_FUNCTION_ARGS) { return impl(fcinfo, true); }

/* mcc_sad_locate(bytea, bytea, int), mcc_sad_locate(smallint[], smallint[], int) */
SAD_SQL_OVERLOADS(mcc_sad_locate_bytea, mcc_sad_locate_array, sad_locate)

/* mcc_sad_map(bytea, bytea), mcc_sad_map(smallint[], smallint[]) */
SAD_SQL_OVERLOADS(mcc_sad_map_bytea, mcc_sad_map_array_pgm, sad_map_pgm)

/* mcc_sad_map_array(bytea, bytea), mcc_sad_map_array(smallint[], smallint[]) */
SAD_SQL_OVERLOADS(mcc_sad_map_bytea_array, mcc_sad_map_array_array, sad_map_array)
