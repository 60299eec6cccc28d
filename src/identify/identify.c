/*
 * identify.c: 1:N identification inside the calling backend (CPU).
 *
 * identify(gallery, probe, k, min_score, id_column, template_column, refine)
 * returns the k gallery rows with the best scores against the probe, best
 * first, ties broken by the smaller key, among rows scoring at least
 * min_score. With refine 'none' the score is LSS; otherwise the best n' rows
 * by LSS (src/identify/refine.h) are rescored with the refine method in the backend
 * (src/identify/identify_refine.c) and the score is the method's.
 *
 * Tables (and partitioned tables, materialized views) are read straight
 * from the heap with the calling statement's snapshot (src/identify/gallery_scan.c):
 * it sees exactly the rows a SELECT in the same statement would see, with
 * the same locks and serializable predicate locks; templates stored inline
 * are read where they lie in the shared buffer, those stored out of line
 * from the TOAST table's pages in order. Views, and galleries with
 * row-level security active for the caller, are read through SPI with a
 * read-only cursor instead, in batches of IDENTIFY_FETCH rows, so that the
 * policies and the view's query apply as they would to that SELECT. Either
 * way each row's template is scored where it lies, by the gallery scan's
 * kernel (mcc_soa_score_view: the score mcc_soa_scan gives, without copying
 * the cylinders into a structure-of-arrays gallery first), with
 * CHECK_FOR_INTERRUPTS() between rows, and offered to a top-k heap whose
 * storage doubles only when it fills (k may be far larger than the table).
 * Memory is bounded by a batch and k, never by the table size.
 *
 * When refining, the scan keeps an LSS shortlist instead of the top k (no
 * min_score: it applies to the refined score), sized from the planner's row
 * estimate; the rows it counted then give n', and if n' is larger than the
 * shortlist the gallery is scanned again with the exact size.
 */
#include "mcc_pg.h"
#include "gallery.h"
#include "gallery_scan.h"
#include "identify_refine.h"
#include "service.h"
#include "shortlist.h"

#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/plannodes.h"
#include "utils/builtins.h"
#include "utils/plancache.h"
#include "utils/snapmgr.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"

#include "mcc_lss.h"
#include "mcc_soa.h"
#include "mcc_topk.h"

#define IDENTIFY_FETCH		1000	/* gallery rows per cursor fetch */
#define IDENTIFY_CHUNK		256		/* SPI rows scored between interrupt checks */
#define IDENTIFY_TOPK_MIN	64		/* first top-k storage, in hits */
#define IDENTIFY_BATCH_BLOCK (4 * 1024 * 1024)	/* the batch context's blocks */
#define PROBE_ALIGN			64

PG_FUNCTION_INFO_V1(mcc_identify);

/* What one identify() call works with. */
typedef struct identify_state
{
	mcc_probe  *probe;
	const mcc_profile *profile;
	int32		k;
	float4		min_score;
	const mcc_gallery *gallery;
	int64		row_key;		/* key of the row being read, for errors */
	bool		have_key;		/* row_key belongs to the row being read */
	mcc_topk	topk;
	MemoryContext call_cxt;		/* top-k storage, or the shortlist's */
	MemoryContext batch_cxt;	/* an SPI batch's copies, reset after it, keeping its first block */
	/* refinement (method MCC_LSS: none) */
	mcc_method	method;
	mcc_shortlist shortlist;	/* instead of topk */
	int64		n_rows;			/* rows scanned: n of src/identify/refine.h */
} identify_state;

/* Optional name argument n as a C string, or NULL. */
static char *
name_arg(FunctionCallInfo fcinfo, int n)
{
	return PG_ARGISNULL(n) ? NULL : pstrdup(NameStr(*PG_GETARG_NAME(n)));
}

/* The probe prepared for matching, in 64-byte aligned palloc'ed memory. */
static mcc_probe *
prepare_probe(const struct varlena *tpl)
{
	mcc_template_view v;
	char	   *raw = palloc(mcc_probe_size() + PROBE_ALIGN);
	mcc_probe  *q = (mcc_probe *) TYPEALIGN(PROBE_ALIGN, raw);

	mcc_pg_open(tpl, &v);
	mcc_probe_init(q, &v);
	return q;
}

/* Error context: which gallery row was being read. */
static void
row_context(void *arg)
{
	identify_state *st = (identify_state *) arg;

	if (st->have_key)
		errcontext("gallery \"%s\", row with key " INT64_FORMAT,
				   st->gallery->relname, st->row_key);
}

/* Give the top-k larger storage when it is full but holds fewer than k. */
static void
topk_grow(identify_state *st)
{
	mcc_topk   *t = &st->topk;
	int64		cap = Min((int64) st->k, Max(2 * t->cap, (int64) IDENTIFY_TOPK_MIN));
	mcc_hit    *h = MemoryContextAllocHuge(st->call_cxt, cap * sizeof(mcc_hit));

	memcpy(h, t->h, t->n * sizeof(mcc_hit));
	pfree(t->h);
	mcc_topk_rebind(t, h, cap);
}

/*
 * Score a row's template where it lies (mcc_soa_score_view: no copy) and
 * offer it to the top-k, or to the shortlist, which copies the templates of
 * the rows it keeps.
 */
static void
score_row(identify_state *st, int64 key, bool key_null, const struct varlena *tpl)
{
	mcc_template_view v;
	float		score;

	st->have_key = !key_null;
	if (key_null)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("gallery \"%s\" has a row with a null key in column \"%s\"",
						st->gallery->relname, st->gallery->key_name),
				 errhint("Rows with a template need a key.")));
	st->row_key = key;
	mcc_pg_open_stored(tpl, &v);
	if (v.profile->id != st->profile->id)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("gallery row with key " INT64_FORMAT " has a template of profile \"%s\", but the probe's profile is \"%s\"",
						st->row_key, v.profile->name, st->profile->name),
				 errhint("Templates of different profiles cannot be compared.")));
	score = mcc_soa_score_view(st->probe, &v);
	st->n_rows++;
	st->have_key = false;
	if (st->method != MCC_LSS)
	{
		mcc_shortlist_push(&st->shortlist, score, key, tpl);
		return;
	}
	if (score < st->min_score)
		return;
	if (mcc_topk_needs_room(&st->topk))
		topk_grow(st);
	mcc_topk_push(&st->topk, score, key);
}

/* Error context: the row being read. */
static void
push_row_context(identify_state *st, ErrorContextCallback *ctx)
{
	ctx->callback = row_context;
	ctx->arg = st;
	ctx->previous = error_context_stack;
	error_context_stack = ctx;
}

/* One batch fetched through SPI, scored row by row; its detoasted copies freed. */
static void
process_spi_batch(identify_state *st, SPITupleTable *tt, uint64 nrows)
{
	MemoryContext old = MemoryContextSwitchTo(st->batch_cxt);
	ErrorContextCallback ctx;
	uint64		r;

	push_row_context(st, &ctx);
	for (r = 0; r < nrows; r++)
	{
		bool		key_null;
		bool		tpl_null;
		Datum		key = SPI_getbinval(tt->vals[r], tt->tupdesc, 1, &key_null);
		Datum		tpl = SPI_getbinval(tt->vals[r], tt->tupdesc, 2, &tpl_null);

		if (r % IDENTIFY_CHUNK == 0)
			CHECK_FOR_INTERRUPTS();
		Assert(!tpl_null);
		score_row(st, key_null ? 0 : DatumGetInt64(key), key_null,
				  (struct varlena *) PG_DETOAST_DATUM(tpl));
	}
	error_context_stack = ctx.previous;
	MemoryContextSwitchTo(old);
	MemoryContextReset(st->batch_cxt);
}

/* The planner's estimate of the rows a prepared query returns. */
static double
plan_rows(SPIPlanPtr plan)
{
	CachedPlan *cp = SPI_plan_get_cached_plan(plan);
	double		rows = 0;

	if (cp == NULL)
		return 0;
	if (list_length(cp->stmt_list) == 1)
		rows = linitial_node(PlannedStmt, cp->stmt_list)->planTree->plan_rows;
	/* an unsaved plan is not tracked by a resource owner */
	ReleaseCachedPlan(cp, NULL);
	return rows;
}

/*
 * Rows the shortlist keeps: n' for half again the planner's estimate and a
 * thousand rows more, so that only a gallery much larger than estimated is
 * scanned twice.
 */
static int64
shortlist_cap(int32 k, double est_rows)
{
	double		est = est_rows * 1.5 + 1000.0;

	return mcc_refine_shortlist(est < 1e15 ? (int64) est : (int64) 1e15, k);
}

/* Read the whole gallery through a read-only SPI cursor (views, RLS). */
static void
scan_spi(identify_state *st)
{
	const char *query = mcc_gallery_query(st->gallery);
	SPIPlanPtr	plan;
	Portal		portal;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	plan = SPI_prepare(query, 0, NULL);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for \"%s\": %s", query,
			 SPI_result_code_string(SPI_result));
	if (st->method != MCC_LSS && st->shortlist.h == NULL)
		mcc_shortlist_init(&st->shortlist, shortlist_cap(st->k, plan_rows(plan)),
						   st->call_cxt);
	/* read_only: run with the calling statement's snapshot */
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);
	for (;;)
	{
		SPI_cursor_fetch(portal, true, IDENTIFY_FETCH);
		if (SPI_processed == 0)
			break;
		process_spi_batch(st, SPI_tuptable, SPI_processed);
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	SPI_finish();
}

/* A row of the heap reader (which checks for interrupts row by row). */
static void
heap_row(void *arg, int64 key, bool key_null, const struct varlena *tpl)
{
	score_row((identify_state *) arg, key, key_null, tpl);
}

/*
 * Read the gallery's heap tables with the statement's snapshot; false if it
 * must be read through SQL instead (src/identify/gallery_scan.h says when).
 */
static bool
scan_heap(identify_state *st)
{
	const char *why;
	mcc_heap_rows *r = mcc_heap_rows_begin(st->gallery, GetActiveSnapshot(), &why);
	ErrorContextCallback ctx;

	if (r == NULL)
	{
		ereport(DEBUG2,
				(errmsg_internal("identify(): gallery \"%s\" read through SQL: %s",
								 st->gallery->relname, why)));
		return false;
	}
	if (st->method != MCC_LSS && st->shortlist.h == NULL)
		mcc_shortlist_init(&st->shortlist, shortlist_cap(st->k, mcc_heap_rows_estimate(r)),
						   st->call_cxt);
	push_row_context(st, &ctx);
	mcc_heap_rows_scan(r, heap_row, st);
	error_context_stack = ctx.previous;
	mcc_heap_rows_end(r);
	return true;
}

/* Read the gallery: its heap tables directly where possible, else through SQL. */
static void
scan_gallery(identify_state *st)
{
	if (!scan_heap(st))
		scan_spi(st);
}

/* Return the sorted hits as the function's result set. */
static void
return_hits(FunctionCallInfo fcinfo, mcc_topk *t)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	int64		i;

	InitMaterializedSRF(fcinfo, 0);
	mcc_topk_sort(t);
	for (i = 0; i < t->n; i++)
	{
		values[0] = Int64GetDatum(t->h[i].id);
		values[1] = Float4GetDatum(t->h[i].score);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/* Return refined hits (already ranked) as the function's result set. */
static void
return_refined(FunctionCallInfo fcinfo, const mcc_refined *r, int64 n)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	int64		i;

	InitMaterializedSRF(fcinfo, 0);
	for (i = 0; i < n; i++)
	{
		values[0] = Int64GetDatum(r[i].key);
		values[1] = Float4GetDatum(r[i].score);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/*
 * The refining scan: the LSS shortlist (scanned again if n' turns out larger
 * than it), its first n' rows rescored, ranked and returned.
 */
static void
identify_refined(FunctionCallInfo fcinfo, identify_state *st, const struct varlena *probe)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "identify shortlist",
											  ALLOCSET_DEFAULT_SIZES);
	int64		n1;
	mcc_refined *out;

	st->call_cxt = cxt;
	scan_gallery(st);
	n1 = mcc_refine_shortlist(st->n_rows, st->k);
	if (n1 > st->shortlist.cap)
	{
		/* more rows than the planner expected: again, with the exact size */
		ereport(DEBUG1,
				(errmsg_internal("identify(): %lld rows need a shortlist of %lld, more than the planner's estimate gave: scanning again",
								 (long long) st->n_rows, (long long) n1)));
		MemoryContextReset(cxt);
		mcc_shortlist_init(&st->shortlist, n1, cxt);
		st->n_rows = 0;
		scan_gallery(st);
		n1 = Min(n1, mcc_refine_shortlist(st->n_rows, st->k));
	}
	mcc_shortlist_sort(&st->shortlist);
	n1 = Min(n1, st->shortlist.n);
	out = palloc(Max(n1, 1) * sizeof(mcc_refined));
	mcc_shortlist_refine(&st->shortlist, n1, probe, st->method, out);
	MemoryContextDelete(cxt);
	return_refined(fcinfo, out, mcc_refine_rank(out, n1, st->k, st->min_score));
}

/*
 * identify_shortlist()'s backend scan (src/identify/shortlist.h): the
 * refining scan with a shortlist of exactly n rows, every one rescored and
 * returned in LSS order with both scores.
 */
int64
mcc_identify_list(const mcc_gallery *g, const struct varlena *probe, mcc_method method,
				  int64 n, mcc_list_row **rows)
{
	identify_state st;
	mcc_refined *out;
	mcc_list_row *r;
	int64		m;
	int64		i;

	memset(&st, 0, sizeof(st));
	st.probe = prepare_probe(probe);
	st.profile = mcc_probe_profile(st.probe);
	st.gallery = g;
	st.k = 1;
	st.method = method;
	st.batch_cxt = AllocSetContextCreate(CurrentMemoryContext, "identify batch",
										 IDENTIFY_BATCH_BLOCK, IDENTIFY_BATCH_BLOCK,
										 IDENTIFY_BATCH_BLOCK);
	st.call_cxt = AllocSetContextCreate(CurrentMemoryContext, "identify shortlist",
										ALLOCSET_DEFAULT_SIZES);
	mcc_shortlist_init(&st.shortlist, n, st.call_cxt);
	scan_gallery(&st);
	mcc_shortlist_sort(&st.shortlist);
	m = st.shortlist.n;
	out = palloc(Max(m, 1) * sizeof(mcc_refined));
	mcc_shortlist_refine(&st.shortlist, m, probe, method, out);
	r = palloc(Max(m, 1) * sizeof(mcc_list_row));
	for (i = 0; i < m; i++)
	{
		r[i].lss = st.shortlist.h[i].score;
		r[i].refined = out[i].score;
		r[i].key = out[i].key;
	}
	MemoryContextDelete(st.call_cxt);
	MemoryContextDelete(st.batch_cxt);
	pfree(out);
	*rows = r;
	return m;
}

/*
 * identify(gallery regclass, probe mcc_template, k int, min_score real,
 *          id_column name, template_column name, refine text)
 * RETURNS TABLE(id, score)
 */
Datum
mcc_identify(PG_FUNCTION_ARGS)
{
	identify_state st;
	mcc_gallery gallery;
	struct varlena *probe;
	int64		cap;

	mcc_pg_require_args(fcinfo, "identify()",
						(const char *const[]) {"gallery", "probe", "k", "min_score"}, 4);
	memset(&st, 0, sizeof(st));
	mcc_identify_args(fcinfo, "identify()", &st.k, &st.min_score, &st.method);

	mcc_lss_init();
	probe = MCC_GETARG_TEMPLATE(1);
	st.probe = prepare_probe(probe);
	st.profile = mcc_probe_profile(st.probe);
	mcc_gallery_resolve(PG_GETARG_OID(0), name_arg(fcinfo, 4), name_arg(fcinfo, 5), &gallery);
	st.gallery = &gallery;
	if (mcc_service_identify(fcinfo, &gallery, probe, st.k, st.min_score, st.method))
		return (Datum) 0;		/* answered by the matcher service (src/service/service_identify.c) */

	/* a batch of copied templates fits in the first block, which resets keep */
	st.batch_cxt = AllocSetContextCreate(CurrentMemoryContext, "identify batch",
										 IDENTIFY_BATCH_BLOCK, IDENTIFY_BATCH_BLOCK,
										 IDENTIFY_BATCH_BLOCK);
	if (st.method != MCC_LSS)
	{
		identify_refined(fcinfo, &st, probe);
		MemoryContextDelete(st.batch_cxt);
		return (Datum) 0;
	}
	st.call_cxt = CurrentMemoryContext;
	cap = Min((int64) st.k, (int64) IDENTIFY_TOPK_MIN);
	mcc_topk_init(&st.topk, st.k, palloc(cap * sizeof(mcc_hit)), cap);

	scan_gallery(&st);

	MemoryContextDelete(st.batch_cxt);
	return_hits(fcinfo, &st.topk);
	return (Datum) 0;
}
