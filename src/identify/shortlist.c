/*
 * shortlist.c: identify_shortlist(gallery, probe, shortlist, k, window_from,
 * id_column, template_column, refine) (src/identify/shortlist.h), and
 * mcc_gallery_rows(), the row count the scale-out refinement sizes each
 * partition's window with.
 *
 * Why the rows it returns are enough (docs/scale-out.md, "Refinement"): a
 * coordinator's answer is the k best by refined score among the global n'
 * best rows by LSS. A gallery's rows among those n' are a prefix of its own
 * LSS order, of a length it cannot know; a row of the answer is beaten by
 * fewer than k rows of the global shortlist, so by fewer than k of the
 * rows before it in its own prefix. Rows beaten by k earlier rows are
 * therefore never needed, whatever the prefix (about k ln(n/k) of n rows
 * are not). The rows from window_from on carry the keys that let the
 * coordinator find the global cutoff exactly; the count row says how long
 * the shortlist is.
 */
#include "mcc_pg.h"
#include "gallery.h"
#include "refine.h"
#include "service.h"
#include "shortlist.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"

#include "mcc_lss.h"

PG_FUNCTION_INFO_V1(mcc_identify_shortlist);
PG_FUNCTION_INFO_V1(mcc_gallery_rows_sql);
PG_FUNCTION_INFO_V1(mcc_identify_shortlists);
PG_FUNCTION_INFO_V1(mcc_galleries_rows);

/* refined score descending, key ascending: the final answer's order */
#define ROW_BETTER(a, b) \
	((a)->refined > (b)->refined || ((a)->refined == (b)->refined && (a)->key < (b)->key))
#define MCC_HEAP_PREFIX	refined
#define MCC_HEAP_TYPE	mcc_list_row
#define MCC_HEAP_BETTER(a, b) ROW_BETTER(a, b)
#include "mcc_heap.h"

void
mcc_list_answer_fill(mcc_list_answer *a, const mcc_list_row *rows, int64 m, int32 k, int64 from)
{
	int64		cap = Max(Min((int64) k, m), 1);
	mcc_list_row *best = palloc(cap * sizeof(mcc_list_row));
	int64		n_best = 0;
	int64		i;

	a->m = m;
	a->n = 0;
	a->rows = MemoryContextAllocHuge(a->cxt, Max(m, 1) * sizeof(mcc_list_row));
	a->pos = MemoryContextAllocHuge(a->cxt, Max(m, 1) * sizeof(int64));
	for (i = 0; i < m; i++)
	{
		/* beaten by fewer than k earlier rows: it would enter their top k */
		bool		few = n_best < cap || ROW_BETTER(&rows[i], &best[0]);

		if (few)
			n_best = refined_offer(best, n_best, cap, &rows[i]);
		if (few || i >= from)
		{
			a->rows[a->n] = rows[i];
			a->pos[a->n++] = i;
		}
	}
	pfree(best);
}

/* Optional name argument n as a C string, or NULL. */
static char *
name_arg(FunctionCallInfo fcinfo, int n)
{
	return PG_ARGISNULL(n) ? NULL : pstrdup(NameStr(*PG_GETARG_NAME(n)));
}

/* The bigint argument n, at least 0 (22023 otherwise). */
static int64
count_arg(FunctionCallInfo fcinfo, int n, const char *name)
{
	int64		v = PG_GETARG_INT64(n);

	if (v < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s of identify_shortlist() must not be negative", name),
				 errdetail("%s is " INT64_FORMAT ".", name, v)));
	return v;
}

/*
 * The answer as rows of the materialized result: the `lead` leading
 * columns' values (identify_shortlists()'s gallery and probe numbers), then
 * (id, lss, score, pos) per row, then the count row (NULL, NULL, NULL, m).
 */
static void
put_list(ReturnSetInfo *rsinfo, const Datum *lead, int n_lead, const mcc_list_answer *a)
{
	Datum		values[6];
	bool		nulls[6] = {false, false, false, false, false, false};
	Datum	   *v = values + n_lead;
	bool	   *vn = nulls + n_lead;
	int64		i;

	Assert(n_lead <= 2);
	for (i = 0; i < n_lead; i++)
		values[i] = lead[i];
	for (i = 0; i < a->n; i++)
	{
		v[0] = Int64GetDatum(a->rows[i].key);
		v[1] = Float4GetDatum(a->rows[i].lss);
		v[2] = Float4GetDatum(a->rows[i].refined);
		v[3] = Int64GetDatum(a->pos[i]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	vn[0] = vn[1] = vn[2] = true;
	v[3] = Int64GetDatum(a->m);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* k, at least 1 (22023), and the refinement, not LSS (22023). */
static mcc_method
list_args(int32 k, Datum refine, bool refine_null)
{
	mcc_method	method;

	if (k <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be greater than zero"),
				 errdetail("k is %d.", k)));
	method = mcc_refine_arg(refine, refine_null, "identify_shortlist()");
	if (method == MCC_LSS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("identify_shortlist() needs a refinement other than LSS"),
				 errhint("Use dtr (lss-dtr) or a method: %s.", mcc_method_list())));
	return method;
}

/*
 * identify_shortlist()'s answer for gallery g and probe into *ans (in
 * CurrentMemoryContext): through the matcher service (which takes the
 * reply of a request sent ahead for the same frame), else the backend scan.
 */
static void
answer_list(const mcc_gallery *g, const struct varlena *probe, int32 k, mcc_method method,
			int64 shortlist, int64 from, mcc_list_answer *ans)
{
	memset(ans, 0, sizeof(*ans));
	ans->cxt = CurrentMemoryContext;
	/* k beyond the shortlist keeps every row, as k = shortlist does */
	k = (int32) Min((int64) k, Max(shortlist, (int64) 1));
	if (shortlist > 0 &&
		!mcc_service_identify_list(g, probe, k, method, shortlist, from, ans))
	{
		mcc_list_row *rows;
		int64		m = mcc_identify_list(g, probe, method, shortlist, &rows);

		mcc_list_answer_fill(ans, rows, m, k, from);
	}
}

/*
 * identify_shortlist(gallery regclass, probe mcc_template, shortlist bigint,
 *                    k int, window_from bigint, id_column name,
 *                    template_column name, refine text)
 * RETURNS TABLE(id bigint, lss real, score real, pos bigint)
 */
Datum
mcc_identify_shortlist(PG_FUNCTION_ARGS)
{
	mcc_gallery gallery;
	mcc_list_answer ans;
	struct varlena *probe;
	mcc_template_view pv;
	int64		shortlist;
	int64		from;
	int32		k;
	mcc_method	method;

	mcc_pg_require_args(fcinfo, "identify_shortlist()",
						(const char *const[]) {"gallery", "probe", "shortlist", "k", "window_from"}, 5);
	shortlist = count_arg(fcinfo, 2, "shortlist");
	k = PG_GETARG_INT32(3);
	from = count_arg(fcinfo, 4, "window_from");
	method = list_args(k, PG_GETARG_DATUM(7), PG_ARGISNULL(7));

	mcc_lss_init();
	probe = MCC_GETARG_TEMPLATE(1);
	mcc_pg_open(probe, &pv);
	mcc_gallery_resolve(PG_GETARG_OID(0), name_arg(fcinfo, 5), name_arg(fcinfo, 6), &gallery);
	answer_list(&gallery, probe, k, method, shortlist, from, &ans);
	InitMaterializedSRF(fcinfo, 0);
	put_list((ReturnSetInfo *) fcinfo->resultinfo, NULL, 0, &ans);
	return (Datum) 0;
}

/* The rows of g with a template that the statement sees: the engine's count, else the table's. */
static int64
gallery_rows(const mcc_gallery *g)
{
	int64		n;

	if (!mcc_service_gallery_rows(g, &n))
		n = mcc_count_rows(g);
	return n;
}

/*
 * mcc_gallery_rows(gallery regclass, id_column name, template_column name)
 * RETURNS bigint: the rows with a template the statement sees, which the
 * scale-out refinement sizes each partition's window with. The matcher
 * engine counts them from its cache as it counts identify()'s n; without
 * the service (off, unavailable, row-level security) a count(*) query,
 * under the same snapshot and policies, does.
 */
Datum
mcc_gallery_rows_sql(PG_FUNCTION_ARGS)
{
	mcc_gallery gallery;

	mcc_pg_require_args(fcinfo, "mcc_gallery_rows()", (const char *const[]) {"gallery"}, 1);
	mcc_gallery_resolve(PG_GETARG_OID(0), name_arg(fcinfo, 1), name_arg(fcinfo, 2), &gallery);
	PG_RETURN_INT64(gallery_rows(&gallery));
}
/*
 * The elements of a non-null array argument n of function fn, of a known
 * element type (no NULL element: 22004), into *elems; their number.
 */
static int
array_arg(FunctionCallInfo fcinfo, int n, const char *fn, const char *name, Oid elem, Datum **elems)
{
	ArrayType  *a = PG_GETARG_ARRAYTYPE_P(n);
	bool	   *nulls;
	int			count;
	int16		typlen;
	bool		typbyval;
	char		typalign;

	get_typlenbyvalalign(elem, &typlen, &typbyval, &typalign);
	deconstruct_array(a, elem, typlen, typbyval, typalign, elems, &nulls, &count);
	for (int i = 0; i < count; i++)
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("element %d of %s of %s is null", i + 1, name, fn)));
	return count;
}

/* The bigint elements of array argument n, each at least 0 (22023), all `count` of them (2202E). */
static int64 *
counts_arg(FunctionCallInfo fcinfo, int n, const char *name, int count)
{
	Datum	   *elems;
	int64	   *v = palloc(Max(count, 1) * sizeof(int64));

	if (array_arg(fcinfo, n, "identify_shortlists()", name, INT8OID, &elems) != count)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s of identify_shortlists() must have one element per gallery", name)));
	for (int i = 0; i < count; i++)
	{
		v[i] = DatumGetInt64(elems[i]);
		if (v[i] < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s of identify_shortlists() must not be negative", name),
					 errdetail("Element %d is " INT64_FORMAT ".", i + 1, v[i])));
	}
	return v;
}

/*
 * identify_shortlists(galleries regclass[], probes mcc_template[],
 *                     shortlists bigint[], k int, windows_from bigint[],
 *                     id_column name, template_column name, refine text)
 * RETURNS TABLE(gallery_no int, probe_no int, id bigint, lss real,
 *               score real, pos bigint)
 *
 * identify_shortlist(galleries[i], probes[j], shortlists[i], k,
 * windows_from[i], ...) for every gallery i and probe j (numbered from 1),
 * with the same rows, under the statement's one snapshot. Every request the
 * matcher service serves is sent to the engine first and awaited after
 * (src/service/service_ahead.c): the engine searches and rescores the
 * galleries at once, where one identify_shortlist() after another waited
 * for each in turn (a scale-out shard's partitions, docs/scale-out.md).
 */
Datum
mcc_identify_shortlists(PG_FUNCTION_ARGS)
{
	Datum	   *rels;
	int			n_gal;
	struct varlena **probes;
	int			n_probes;
	int64	   *shortlists;
	int64	   *froms;
	int32		k;
	mcc_method	method;
	mcc_gallery *galleries;
	char	   *id_column = name_arg(fcinfo, 5);
	char	   *tpl_column = name_arg(fcinfo, 6);
	MemoryContext cxt;
	MemoryContext old;

	mcc_pg_require_args(fcinfo, "identify_shortlists()",
						(const char *const[]) {"galleries", "probes", "shortlists", "k", "windows_from"}, 5);
	n_gal = array_arg(fcinfo, 0, "identify_shortlists()", "galleries", REGCLASSOID, &rels);
	probes = mcc_probes_arg(PG_GETARG_ARRAYTYPE_P(1), "identify_shortlists()", &n_probes);
	shortlists = counts_arg(fcinfo, 2, "shortlists", n_gal);
	k = PG_GETARG_INT32(3);
	froms = counts_arg(fcinfo, 4, "windows_from", n_gal);
	method = list_args(k, PG_GETARG_DATUM(7), PG_ARGISNULL(7));

	mcc_lss_init();
	galleries = palloc(Max(n_gal, 1) * sizeof(mcc_gallery));
	for (int i = 0; i < n_gal; i++)
		mcc_gallery_resolve(DatumGetObjectId(rels[i]), id_column, tpl_column, &galleries[i]);
	InitMaterializedSRF(fcinfo, 0);
	cxt = AllocSetContextCreate(CurrentMemoryContext, "identify_shortlists", ALLOCSET_DEFAULT_SIZES);
	PG_TRY();
	{
		mcc_ahead_begin();
		for (int i = 0; i < n_gal; i++)
			for (int j = 0; j < n_probes && shortlists[i] > 0; j++)
				mcc_service_identify_list_ahead(&galleries[i], probes[j],
												(int32) Min((int64) k, shortlists[i]), method,
												shortlists[i]);
		for (int i = 0; i < n_gal; i++)
			for (int j = 0; j < n_probes; j++)
			{
				mcc_list_answer ans;
				Datum		lead[2] = {Int32GetDatum(i + 1), Int32GetDatum(j + 1)};

				old = MemoryContextSwitchTo(cxt);
				answer_list(&galleries[i], probes[j], k, method, shortlists[i], froms[i], &ans);
				MemoryContextSwitchTo(old);
				put_list((ReturnSetInfo *) fcinfo->resultinfo, lead, 2, &ans);
				MemoryContextReset(cxt);
			}
	}
	PG_FINALLY();
	{
		mcc_ahead_end();
	}
	PG_END_TRY();
	MemoryContextDelete(cxt);
	return (Datum) 0;
}

/*
 * mcc_galleries_rows(galleries regclass[], id_column name, template_column
 * name) RETURNS bigint[]: mcc_gallery_rows() of each gallery, in order,
 * under the statement's one snapshot; the matcher engine's counts asked
 * for all at once (src/service/service_ahead.c).
 */
Datum
mcc_galleries_rows(PG_FUNCTION_ARGS)
{
	Datum	   *rels;
	int			n_gal;
	mcc_gallery *galleries;
	Datum	   *counts;
	char	   *id_column = name_arg(fcinfo, 1);
	char	   *tpl_column = name_arg(fcinfo, 2);

	mcc_pg_require_args(fcinfo, "mcc_galleries_rows()", (const char *const[]) {"galleries"}, 1);
	n_gal = array_arg(fcinfo, 0, "mcc_galleries_rows()", "galleries", REGCLASSOID, &rels);
	galleries = palloc(Max(n_gal, 1) * sizeof(mcc_gallery));
	counts = palloc(Max(n_gal, 1) * sizeof(Datum));
	for (int i = 0; i < n_gal; i++)
		mcc_gallery_resolve(DatumGetObjectId(rels[i]), id_column, tpl_column, &galleries[i]);
	PG_TRY();
	{
		mcc_ahead_begin();
		for (int i = 0; i < n_gal; i++)
			mcc_service_gallery_rows_ahead(&galleries[i]);
		for (int i = 0; i < n_gal; i++)
			counts[i] = Int64GetDatum(gallery_rows(&galleries[i]));
	}
	PG_FINALLY();
	{
		mcc_ahead_end();
	}
	PG_END_TRY();
	PG_RETURN_ARRAYTYPE_P(construct_array(counts, n_gal, INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
										  TYPALIGN_DOUBLE));
}
