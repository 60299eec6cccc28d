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

#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "mcc_lss.h"

PG_FUNCTION_INFO_V1(mcc_identify_shortlist);
PG_FUNCTION_INFO_V1(mcc_gallery_rows_sql);

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

/* The answer as the function's rows, then the count row (NULL, NULL, NULL, m). */
static void
return_list(FunctionCallInfo fcinfo, const mcc_list_answer *a)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		values[4];
	bool		nulls[4] = {false, false, false, false};
	bool		count_nulls[4] = {true, true, true, false};
	int64		i;

	InitMaterializedSRF(fcinfo, 0);
	for (i = 0; i < a->n; i++)
	{
		values[0] = Int64GetDatum(a->rows[i].key);
		values[1] = Float4GetDatum(a->rows[i].lss);
		values[2] = Float4GetDatum(a->rows[i].refined);
		values[3] = Int64GetDatum(a->pos[i]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	values[3] = Int64GetDatum(a->m);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, count_nulls);
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
	if (k <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be greater than zero"),
				 errdetail("k is %d.", k)));
	method = mcc_refine_arg(PG_GETARG_DATUM(7), PG_ARGISNULL(7), "identify_shortlist()");
	if (method == MCC_LSS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("identify_shortlist() needs a refinement other than LSS"),
				 errhint("Use dtr (lss-dtr) or a method: %s.", mcc_method_list())));

	mcc_lss_init();
	probe = MCC_GETARG_TEMPLATE(1);
	mcc_pg_open(probe, &pv);
	mcc_gallery_resolve(PG_GETARG_OID(0), name_arg(fcinfo, 5), name_arg(fcinfo, 6), &gallery);
	memset(&ans, 0, sizeof(ans));
	ans.cxt = CurrentMemoryContext;
	/* k beyond the shortlist keeps every row, as k = shortlist does */
	k = (int32) Min((int64) k, Max(shortlist, (int64) 1));
	if (shortlist > 0 &&
		!mcc_service_identify_list(&gallery, probe, k, method, shortlist, from, &ans))
	{
		mcc_list_row *rows;
		int64		m = mcc_identify_list(&gallery, probe, method, shortlist, &rows);

		mcc_list_answer_fill(&ans, rows, m, k, from);
	}
	return_list(fcinfo, &ans);
	return (Datum) 0;
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
	int64		n;

	mcc_pg_require_args(fcinfo, "mcc_gallery_rows()", (const char *const[]) {"gallery"}, 1);
	mcc_gallery_resolve(PG_GETARG_OID(0), name_arg(fcinfo, 1), name_arg(fcinfo, 2), &gallery);
	if (!mcc_service_gallery_rows(&gallery, &n))
		n = mcc_count_rows(&gallery);
	PG_RETURN_INT64(n);
}
