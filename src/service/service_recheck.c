/*
 * service_recheck.c: which of the engine's candidates the caller can see
 * (service_recheck.h).
 *
 * The engine answers over every tuple version it holds; one indexed query
 * under the caller's snapshot (prepared once per gallery and session) says
 * which (key, template hash) pairs are visible, and each probe keeps its
 * first visible candidates (src/service/service_identify.c says why that is exactly
 * the top k). A partitioned gallery's keys are looked up where they must
 * lie instead, with the same answer (service_recheck_route.c).
 */
#include "postgres.h"

#include "service_recheck.h"
#include "service_recheck_route.h"

#include "access/detoast.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "mcc_hash.h"

/* Prepared re-check statements, by query text (kept for the session). */
typedef struct recheck_plan
{
	char	   *sql;
	SPIPlanPtr	plan;
} recheck_plan;

static List *recheck_plans = NIL;

/* The prepared re-check for the gallery. */
static SPIPlanPtr
recheck_plan_for(const mcc_gallery *g)
{
	char	   *sql = psprintf("SELECT %s::pg_catalog.int8, %s FROM %s WHERE %s OPERATOR(pg_catalog.=) ANY ($1)",
							   quote_identifier(g->key_name), quote_identifier(g->tpl_name),
							   g->qualname, quote_identifier(g->key_name));
	Oid			argtype = INT8ARRAYOID;
	ListCell   *lc;
	recheck_plan *p;
	SPIPlanPtr	plan;
	MemoryContext old;

	foreach(lc, recheck_plans)
	{
		p = lfirst(lc);
		if (strcmp(p->sql, sql) == 0)
			return p->plan;
	}
	plan = SPI_prepare(sql, 1, &argtype);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for \"%s\": %s", sql, SPI_result_code_string(SPI_result));
	SPI_keepplan(plan);
	old = MemoryContextSwitchTo(TopMemoryContext);
	p = palloc(sizeof(recheck_plan));
	p->sql = pstrdup(sql);
	p->plan = plan;
	recheck_plans = lappend(recheck_plans, p);
	MemoryContextSwitchTo(old);
	return plan;
}

/* The candidate keys of all probes (repeats allowed). */
static int64 *
candidate_keys(serve_req *r, int *n_keys)
{
	int			total = 0;
	int			n = 0;
	int			i;
	int			j;
	int64	   *keys;

	for (i = 0; i < r->n_probes; i++)
		total += r->ans[i].n_cand;
	keys = palloc(Max(total, 1) * sizeof(int64));
	for (i = 0; i < r->n_probes; i++)
		for (j = 0; j < r->ans[i].n_cand; j++)
			keys[n++] = r->ans[i].cand[j].key;
	*n_keys = n;
	return keys;
}

/* Where the re-check's visible rows go. */
typedef struct recheck_out
{
	HTAB	   *visible;
	bool		keep_tpl;
	bool		unique;			/* no key with several visible rows so far */
	MemoryContext outer;		/* the caller's, for the kept templates */
} recheck_out;

/* A visible row: its template's hash (and the template) under its key. */
static void
add_row(void *arg, int64 key, Datum tpl)
{
	recheck_out *o = arg;
	struct varlena *t = detoast_attr((struct varlena *) DatumGetPointer(tpl));
	visible_row *v;
	bool		found;

	v = hash_search(o->visible, &key, HASH_ENTER, &found);
	if (found)
		o->unique = false;
	v->hash = mcc_template_hash((const uint8_t *) t, VARSIZE(t));
	v->tpl = NULL;
	if (o->keep_tpl)
	{
		/* kept for REFINE, outside SPI's memory */
		v->tpl = MemoryContextAlloc(o->outer, VARSIZE(t));
		memcpy(v->tpl, t, VARSIZE(t));
	}
}

/* The re-check as one indexed query through SPI. */
static void
recheck_query(serve_req *r, const int64 *keys, int n_keys, recheck_out *o)
{
	Datum	   *d = palloc(Max(n_keys, 1) * sizeof(Datum));
	Datum		arr;
	uint64		row;
	int			rc;

	for (int i = 0; i < n_keys; i++)
		d[i] = Int64GetDatum(keys[i]);
	arr = PointerGetDatum(construct_array(d, n_keys, INT8OID, sizeof(int64),
										  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	rc = SPI_execute_plan(recheck_plan_for(r->g), &arr, NULL, true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "visibility re-check failed: %s", SPI_result_code_string(rc));
	for (row = 0; row < SPI_processed; row++)
	{
		HeapTuple	tup = SPI_tuptable->vals[row];
		bool		isnull;
		int64		key = DatumGetInt64(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));
		Datum		tpl = SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &isnull);

		if (!isnull)
			add_row(o, key, tpl);
	}
	SPI_finish();
}

/*
 * Which candidate keys the caller can see, with their template hashes (and
 * with keep_tpl their templates), under the caller's snapshot: a
 * partitioned gallery's keys routed to their partitions
 * (service_recheck_route.c), else by one indexed query. False if some key
 * has several visible rows (no longer unique): the backend scan must
 * answer.
 */
bool
recheck(serve_req *r, HTAB *visible, bool keep_tpl)
{
	int			n_keys;
	int64	   *keys = candidate_keys(r, &n_keys);
	recheck_out o = {visible, keep_tpl, true, CurrentMemoryContext};

	if (n_keys == 0)
		return true;
	if (r->g->relkind != RELKIND_PARTITIONED_TABLE || !recheck_routed(r->g, keys, n_keys, add_row, &o))
		recheck_query(r, keys, n_keys, &o);
	pfree(keys);
	return o.unique;
}

/* Keep each probe's first `want` visible candidates; true if some probe needs more. */
bool
filter_visible(serve_req *r, HTAB *visible)
{
	bool		need_more = false;
	int			i;

	for (i = 0; i < r->n_probes; i++)
	{
		probe_answer *a = &r->ans[i];
		HASHCTL		ctl;
		HTAB	   *emitted;
		int			j;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(int64);
		ctl.entrysize = sizeof(int64);
		ctl.hcxt = CurrentMemoryContext;
		emitted = hash_create("mcc emitted keys", Max(a->n_cand, 16), &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		a->hits = palloc(Max(Min(a->n_cand, r->want), 1) * sizeof(candidate));
		a->hit_tpl = palloc(Max(Min(a->n_cand, r->want), 1) * sizeof(struct varlena *));
		a->n_hits = 0;
		for (j = 0; j < a->n_cand && a->n_hits < r->want; j++)
		{
			candidate  *c = &a->cand[j];
			visible_row *v = hash_search(visible, &c->key, HASH_FIND, NULL);
			bool		dup;

			if (v == NULL || v->hash != c->hash)
				continue;		/* a version the caller cannot see */
			hash_search(emitted, &c->key, HASH_ENTER, &dup);
			if (!dup)
			{
				a->hit_tpl[a->n_hits] = v->tpl;
				a->hits[a->n_hits++] = *c;
			}
		}
		hash_destroy(emitted);
		if (a->n_hits < r->want && a->more)
			need_more = true;
	}
	return need_more;
}
