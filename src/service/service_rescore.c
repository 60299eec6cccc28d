/*
 * service_rescore.c: mcc_dedup_rescore(), the rescoring of a dedup batch's
 * candidate pairs (docs/dedup.md, "How it is computed"): per pair the
 * score of mcc_match_candidate(probe, template, method), which is
 * mcc_score(probe, template, method) bit for bit, computed by the matcher
 * engine's CPU threads (one REFINE exchange, src/service/service_refine.c)
 * or, where the engine is not used, here in the backend with the same
 * function.
 *
 * The engine is used when it would serve identify() on the gallery: the
 * service is on, mcc is preloaded, the gallery registered for its columns
 * and owned by a member of mcc_service_user, no row-level security for the
 * caller (mcc_service_gallery_problem), and the engine ready. Where it is
 * not, the pairs are scored here without a word (the dedup's LSS stage,
 * identify_batch(), has had mcc.fallback's say on the same conditions);
 * an engine that is ready but does not answer (HELLO or
 * mcc.request_timeout) is mcc.fallback's case, as for identify(). The
 * pairs' templates are the ones the caller's query read, under its
 * snapshot and privileges: the REFINE request is stateless.
 */
#include "mcc_pg.h"
#include "service.h"
#include "service_gallery_checks.h"
#include "service_identify.h"
#include "gallery.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "mcc_match.h"

PG_FUNCTION_INFO_V1(mcc_dedup_rescore);

/* The pairs of one call: pair i is probes[probe_of[i]] against tpl[i]. */
typedef struct rescore_pairs
{
	struct varlena **probes;
	int			n_probes;
	int		   *probe_of;		/* 0-based */
	struct varlena **tpl;
	int			n;
	mcc_method	method;
} rescore_pairs;

/* The elements of a one-dimensional array argument; a NULL element raises. */
static Datum *
array_elements(ArrayType *arr, const char *what, int *n)
{
	Datum	   *elems;
	bool	   *nulls;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	int			i;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a one-dimensional array", what)));
	get_typlenbyvalalign(ARR_ELEMTYPE(arr), &typlen, &typbyval, &typalign);
	deconstruct_array(arr, ARR_ELEMTYPE(arr), typlen, typbyval, typalign, &elems, &nulls, n);
	for (i = 0; i < *n; i++)
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("element %d of %s is null", i + 1, what)));
	return elems;
}

/* The arguments as pairs, checked: probe numbers in range, one per template. */
static void
read_pairs(FunctionCallInfo fcinfo, rescore_pairs *p)
{
	Datum	   *nos;
	Datum	   *tpls;
	int			n_nos;
	text	   *name = PG_GETARG_TEXT_PP(4);
	int			method = mcc_method_parse(VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name));
	int			i;

	if (method < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown matching method \"%s\"", text_to_cstring(name)),
				 errhint("Known methods are %s.", mcc_method_list())));
	p->method = (mcc_method) method;
	p->probes = mcc_probes_arg(PG_GETARG_ARRAYTYPE_P(1), "mcc_dedup_rescore()", &p->n_probes);
	nos = array_elements(PG_GETARG_ARRAYTYPE_P(2), "probe_nos", &n_nos);
	tpls = array_elements(PG_GETARG_ARRAYTYPE_P(3), "templates", &p->n);
	if (n_nos != p->n)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("probe_nos and templates of mcc_dedup_rescore() differ in length"),
				 errdetail("probe_nos has %d elements, templates %d.", n_nos, p->n)));
	p->probe_of = palloc(Max(p->n, 1) * sizeof(int));
	p->tpl = palloc(Max(p->n, 1) * sizeof(struct varlena *));
	for (i = 0; i < p->n; i++)
	{
		int32		no = DatumGetInt32(nos[i]);

		if (no < 1 || no > p->n_probes)
			ereport(ERROR,
					(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					 errmsg("probe number %d of pair %d is not that of a probe", no, i + 1),
					 errdetail("There are %d probes.", p->n_probes)));
		p->probe_of[i] = no - 1;
		p->tpl[i] = checked_probe(tpls[i]);
	}
}

/*
 * Score every pair in this backend, mcc_score()'s way: one work area, the
 * probe set again where the pairs move to another probe. Interrupts are
 * checked between pairs.
 */
static void
rescore_here(const rescore_pairs *p, float *score)
{
	mcc_match_work *w = palloc(mcc_match_work_size());
	mcc_template_view pv;		/* the probe set: w may point into it */
	int			set = -1;
	int			i;

	mcc_match_work_init(w);
	for (i = 0; i < p->n; i++)
	{
		mcc_template_view cv;
		mcc_error	err;

		CHECK_FOR_INTERRUPTS();
		if (p->probe_of[i] != set)
		{
			set = p->probe_of[i];
			mcc_pg_open(p->probes[set], &pv);
			mcc_match_set_probe(w, &pv);
		}
		mcc_pg_open(p->tpl[i], &cv);
		if (mcc_match_candidate(w, &cv, p->method, NULL, &score[i], &err) != MCC_OK)
			mcc_pg_raise(&err);
	}
	pfree(w);
}

/*
 * Score every pair in the engine: one REFINE job per run of pairs of the
 * same probe. False (why set) if the engine did not answer in time.
 */
static bool
rescore_in_engine(const rescore_pairs *p, float *score, char **why)
{
	mcc_refine_job *jobs = palloc(Max(p->n, 1) * sizeof(mcc_refine_job));
	int			n_jobs = 0;
	int			i;

	for (i = 0; i < p->n; i++)
	{
		if (i == 0 || p->probe_of[i] != p->probe_of[i - 1])
		{
			jobs[n_jobs].probe = p->probes[p->probe_of[i]];
			jobs[n_jobs].n = 0;
			jobs[n_jobs].tpl = &p->tpl[i];
			jobs[n_jobs].score = &score[i];
			n_jobs++;
		}
		jobs[n_jobs - 1].n++;
	}
	return mcc_service_refine(jobs, n_jobs, (int) p->method, why);
}

/*
 * NULL if the engine may rescore the pairs of gallery g's dedup, else why
 * not (then the backend scores them without a word).
 */
static char *
engine_problem(const mcc_gallery *g)
{
	char	   *why;

	if (mcc_service_bypass || !mcc_service_enabled)
		return pstrdup("mcc.service is off");
	if ((why = mcc_service_gallery_problem(g)) != NULL ||
		(why = mcc_gallery_owner_problem(g->relid)) != NULL)
		return why;
	return NULL;
}

/* May the engine take them now? False with a DEBUG1 line saying why not. */
static bool
engine_ready(const mcc_gallery *g, int n)
{
	char	   *why = engine_problem(g);

	if (why == NULL)
	{
		switch (mcc_conn_ensure(&why))
		{
			case MCC_CONN_OK:
				return true;
			case MCC_CONN_NOT_READY:
				break;			/* off or starting: as if not asked */
			case MCC_CONN_FAILED:
				return mcc_service_fallback("mcc_dedup_rescore()", "rescores its pairs in the backend",
											why);
		}
	}
	ereport(DEBUG1,
			(errmsg_internal("mcc_dedup_rescore(): %d pairs rescored in the backend: %s", n, why)));
	return false;
}

/*
 * mcc_dedup_rescore(gallery regclass, probes mcc_template[], probe_nos
 * int[], templates mcc_template[], method text, id_column name,
 * template_column name) RETURNS real[]
 *
 * Per pair i, mcc_score(probes[probe_nos[i]], templates[i], method), in
 * the order given; gallery (and its columns, as identify() takes them)
 * says whether the matcher engine may compute them. Pairs of one probe
 * should be consecutive: each run of them is one item of the REFINE.
 */
Datum
mcc_dedup_rescore(PG_FUNCTION_ARGS)
{
	rescore_pairs p;
	mcc_gallery gallery;
	float	   *score;
	Datum	   *out;
	char	   *why = NULL;
	int			i;

	mcc_pg_require_args(fcinfo, "mcc_dedup_rescore()",
						(const char *const[]) {"gallery", "probes", "probe_nos", "templates", "method"}, 5);
	read_pairs(fcinfo, &p);
	mcc_gallery_resolve(PG_GETARG_OID(0),
						PG_ARGISNULL(5) ? NULL : NameStr(*PG_GETARG_NAME(5)),
						PG_ARGISNULL(6) ? NULL : NameStr(*PG_GETARG_NAME(6)),
						&gallery);
	score = palloc(Max(p.n, 1) * sizeof(float));
	if (p.n > 0 && engine_ready(&gallery, p.n))
	{
		if (rescore_in_engine(&p, score, &why))
			ereport(DEBUG1,
					(errmsg_internal("mcc_dedup_rescore(): %d pairs rescored in the matcher engine", p.n)));
		else
		{
			(void) mcc_service_fallback("mcc_dedup_rescore()", "rescores its pairs in the backend", why);
			rescore_here(&p, score);
		}
	}
	else
		rescore_here(&p, score);
	out = palloc(Max(p.n, 1) * sizeof(Datum));
	for (i = 0; i < p.n; i++)
		out[i] = Float4GetDatum(score[i]);
	PG_RETURN_ARRAYTYPE_P(construct_array(out, p.n, FLOAT4OID, sizeof(float4), true,
										  TYPALIGN_INT));
}
