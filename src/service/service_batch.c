/*
 * service_batch.c: identify_batch(), several probes in one call.
 *
 * The probes go to the matcher service in chunks (one SEARCH, so one pass
 * over the gallery, serves a chunk) through serve() of
 * src/service/service_identify.c; a chunk the service cannot answer is answered by
 * identify() per probe in the backend.
 */
#include "postgres.h"

#include "service_identify.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"

#define BATCH_MAX_PROBES	256		/* probes per SEARCH of identify_batch() */
#define BATCH_MAX_BYTES		(16 * 1024 * 1024)	/* ... and their bytes */
#define BATCH_MAX_CANDIDATES 16384	/* ... and their first k' (refining) */

PG_FUNCTION_INFO_V1(mcc_identify_batch);

/* Append one probe's hits to the batch result. */
static void
put_hits(ReturnSetInfo *rsinfo, int probe_no, const candidate *hits, int n)
{
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	int			i;

	for (i = 0; i < n; i++)
	{
		values[0] = Int32GetDatum(probe_no);
		values[1] = Int64GetDatum(hits[i].key);
		values[2] = Float4GetDatum(hits[i].score);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/*
 * Probes without the service: identify() per probe through SPI, with the
 * service bypassed (mcc.fallback has already spoken for them); first_no is
 * the probe number of probes[0].
 */
static void
batch_in_backend(FunctionCallInfo fcinfo, Oid tpltype, struct varlena **probes, int n,
				 int first_no)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			types[7] = {REGCLASSOID, tpltype, INT4OID, FLOAT4OID, NAMEOID, NAMEOID, TEXTOID};
	Datum		args[7];
	char		nulls[8] = "       ";
	char	   *sql;
	int			i;

	/* identify()'s arguments are identify_batch()'s, in the same order */
	sql = psprintf("SELECT id, score FROM %s.identify($1, $2, $3, $4, $5, $6, $7)",
				   quote_identifier(get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid))));
	args[0] = PG_GETARG_DATUM(0);
	args[2] = PG_GETARG_DATUM(2);
	args[3] = PG_GETARG_DATUM(3);
	for (i = 4; i < 7; i++)
	{
		args[i] = PG_ARGISNULL(i) ? (Datum) 0 : PG_GETARG_DATUM(i);
		nulls[i] = PG_ARGISNULL(i) ? 'n' : ' ';
	}
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	PG_TRY();
	{
		mcc_service_bypass = true;
		for (i = 0; i < n; i++)
		{
			uint64		row;

			args[1] = PointerGetDatum(probes[i]);
			if (SPI_execute_with_args(sql, 7, types, args, nulls, true, 0) != SPI_OK_SELECT)
				elog(ERROR, "identify() failed for probe %d", i + 1);
			for (row = 0; row < SPI_processed; row++)
			{
				HeapTuple	tup = SPI_tuptable->vals[row];
				bool		isnull;
				candidate	c;

				c.key = DatumGetInt64(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));
				c.score = DatumGetFloat4(SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &isnull));
				put_hits(rsinfo, first_no + i, &c, 1);
			}
			SPI_freetuptable(SPI_tuptable);
		}
	}
	PG_FINALLY();
	{
		mcc_service_bypass = false;
	}
	PG_END_TRY();
	SPI_finish();
}

/*
 * The probes of the array, detoasted and validated; a NULL one is an error
 * naming function fn (identify_batch(), identify_shortlists()).
 */
struct varlena **
mcc_probes_arg(ArrayType *arr, const char *fn, int *n)
{
	Datum	   *elems;
	bool	   *nulls;
	struct varlena **probes;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	int			i;

	get_typlenbyvalalign(ARR_ELEMTYPE(arr), &typlen, &typbyval, &typalign);
	deconstruct_array(arr, ARR_ELEMTYPE(arr), typlen, typbyval, typalign, &elems, &nulls, n);
	probes = palloc(Max(*n, 1) * sizeof(struct varlena *));
	for (i = 0; i < *n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("probe %d of %s is null", i + 1, fn)));
		probes[i] = checked_probe(elems[i]);
	}
	return probes;
}

/*
 * End of the chunk of probes that starts at first: one SEARCH's worth, with
 * at most max_probes probes.
 */
static int
chunk_end(struct varlena **probes, int first, int n, int max_probes)
{
	size_t		bytes = 0;
	int			i;

	for (i = first; i < n && i - first < max_probes; i++)
	{
		bytes += VARSIZE(probes[i]);
		if (i > first && bytes > BATCH_MAX_BYTES)
			break;
	}
	return i;
}

/*
 * identify_batch(gallery regclass, probes mcc_template[], k int, min_score
 * real, id_column name, template_column name, refine text)
 * RETURNS TABLE(probe_no int, id bigint, score real)
 *
 * The probes go to the engine in batches of up to BATCH_MAX_PROBES: one
 * pass over the gallery serves a batch. When refining, a batch is smaller,
 * so that the templates its re-check keeps for REFINE stay near
 * BATCH_MAX_CANDIDATES. probe_no is the 1-based position in the array.
 */
Datum
mcc_identify_batch(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	serve_req	r;
	mcc_gallery gallery;
	ArrayType  *arr;
	int			first;
	int			end;
	int			max_probes = BATCH_MAX_PROBES;
	int			i;

	mcc_pg_require_args(fcinfo, "identify_batch()",
						(const char *const[]) {"gallery", "probes", "k", "min_score"}, 4);
	memset(&r, 0, sizeof(r));
	mcc_identify_args(fcinfo, "identify_batch()", &r.k, &r.min_score, &r.method);
	if (r.method != MCC_LSS)
		max_probes = (int) Max(1, Min((int64) BATCH_MAX_PROBES, BATCH_MAX_CANDIDATES /
									  (2 * Max((int64) mcc_refine_min, (int64) r.k) + 8)));
	arr = PG_GETARG_ARRAYTYPE_P(1);
	r.probes = mcc_probes_arg(arr, "identify_batch()", &r.n_probes);
	mcc_gallery_resolve(PG_GETARG_OID(0),
						PG_ARGISNULL(4) ? NULL : NameStr(*PG_GETARG_NAME(4)),
						PG_ARGISNULL(5) ? NULL : NameStr(*PG_GETARG_NAME(5)),
						&gallery);
	r.g = &gallery;

	InitMaterializedSRF(fcinfo, 0);
	for (first = 0; first < r.n_probes; first = end)
	{
		serve_req	c = r;

		end = chunk_end(r.probes, first, r.n_probes, max_probes);
		c.probes = r.probes + first;
		c.n_probes = end - first;
		if (!serve(&c))
		{
			MemoryContextDelete(c.cxt);
			batch_in_backend(fcinfo, ARR_ELEMTYPE(arr), c.probes, c.n_probes, first + 1);
			continue;
		}
		for (i = 0; i < c.n_probes; i++)
			put_hits(rsinfo, first + i + 1, c.ans[i].hits, c.ans[i].n_hits);
		MemoryContextDelete(c.cxt);
	}
	return (Datum) 0;
}
