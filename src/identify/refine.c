/*
 * refine.c: what both identify() paths share about refinement: the refine
 * argument, mcc.refine_fraction and mcc.refine_min, the shortlist size n'
 * and the final ranking (src/identify/refine.h).
 */
#include "mcc_pg.h"
#include "refine.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "utils/builtins.h"
#include "utils/guc.h"

#include "mcc_topk.h"

/*
 * Paper 000 refines the best 0.1 % of the gallery. We refine 0.4 %: at
 * paper 000's size (250,000 templates) the LSS stage leaves 1.46 % of the
 * mates out of its best 0.1 % but 0.61 % out of its best 0.4 %, and fused's
 * FNIR at FPIR = 0 falls from 1.95 % to 1.29 % (docs/accuracy.md, section
 * 6); the refinement then costs about a fifth of the LSS scan on a CPU
 * core with AVX-512. At least 100 candidates keep small galleries from
 * being refined on a handful (with 20,000 templates 0.4 % would be 80).
 */
#define REFINE_FRACTION_DEFAULT 0.004
#define REFINE_MIN_DEFAULT		100

double		mcc_refine_fraction = REFINE_FRACTION_DEFAULT;
int			mcc_refine_min = REFINE_MIN_DEFAULT;

/* mcc.refine_method: what refine => NULL (the default) means */
static char *refine_method_setting = NULL;
static int	refine_method_default = MCC_METHOD_BEST;

/* GUC check hook: a refine name ('none', 'dtr' or a method). */
static bool
refine_method_check(char **newval, void **extra, GucSource source)
{
	int			m = mcc_refine_parse(*newval, (int) strlen(*newval));
	int		   *e;

	if (m < 0)
	{
		GUC_check_errdetail("Use none, dtr (lss-dtr) or a method: %s.", mcc_method_list());
		return false;
	}
	e = malloc(sizeof(int));	/* PostgreSQL 15 frees a GUC extra with free() */
	if (e == NULL)
		return false;
	*e = m;
	*extra = e;
	return true;
}

static void
refine_method_assign(const char *newval, void *extra)
{
	refine_method_default = *(int *) extra;
}

void
mcc_refine_define_gucs(void)
{
	DefineCustomRealVariable("mcc.refine_fraction",
							 "Fraction of the gallery that identify() refines.",
							 "identify() rescores the best ceil(fraction * n) rows by LSS "
							 "(at least mcc.refine_min and k) with its refine method; "
							 "n is the number of rows with a template the statement sees.",
							 &mcc_refine_fraction, REFINE_FRACTION_DEFAULT, 0.0, 1.0,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("mcc.refine_method",
							   "Refinement of identify() and identify_batch() when refine is not given.",
							   "fused (the default: the most accurate method), none (LSS alone), "
							   "dtr (paper 000's LSS-DTR) or any method of mcc_score(a, b, method).",
							   &refine_method_setting, mcc_method_name(MCC_METHOD_BEST),
							   PGC_USERSET, 0,
							   refine_method_check, refine_method_assign, NULL);
	DefineCustomIntVariable("mcc.refine_min",
							"Fewest rows identify() refines (unless the gallery has fewer).",
							NULL,
							&mcc_refine_min, REFINE_MIN_DEFAULT, 0, INT_MAX,
							PGC_USERSET, 0, NULL, NULL, NULL);
}

mcc_method
mcc_refine_arg(Datum arg, bool isnull, const char *fname)
{
	text	   *t;
	int			m;

	if (isnull)
		return (mcc_method) refine_method_default;
	t = DatumGetTextPP(arg);
	m = mcc_refine_parse(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
	if (m < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown refinement \"%s\" for %s", text_to_cstring(t), fname),
				 errhint("Use none, dtr (lss-dtr) or a method: %s.", mcc_method_list())));
	return (mcc_method) m;
}

void
mcc_identify_args(FunctionCallInfo fcinfo, const char *fname, int32 *k_out,
				  float4 *min_score_out, mcc_method *method)
{
	int32		k = PG_GETARG_INT32(2);
	float4		min_score = PG_GETARG_FLOAT4(3);

	/* every method's score lies in [0, 1], LSS's as the refined ones */
	if (k <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be greater than zero"),
				 errdetail("k is %d.", k)));
	if (isnan(min_score) || min_score < 0.0f || min_score > 1.0f)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("min_score must be between 0 and 1"),
				 errdetail("Scores lie in [0, 1]; min_score is %g.", min_score)));
	*k_out = k;
	*min_score_out = min_score;
	*method = mcc_refine_arg(PG_GETARG_DATUM(6), PG_ARGISNULL(6), fname);
}

int64
mcc_refine_shortlist(int64 n, int32 k)
{
	return mcc_refine_count(n, mcc_refine_fraction, mcc_refine_min, k);
}

PG_FUNCTION_INFO_V1(mcc_refine_count_sql);

/*
 * mcc_refine_count(n bigint, k integer) RETURNS bigint: n' for n rows and a
 * k under the current settings, what identify() rescores; STRICT.
 */
Datum
mcc_refine_count_sql(PG_FUNCTION_ARGS)
{
	int64		n = PG_GETARG_INT64(0);
	int32		k = PG_GETARG_INT32(1);

	if (n < 0 || k <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("mcc_refine_count needs n >= 0 and k > 0"),
				 errdetail("n is " INT64_FORMAT ", k is %d.", n, k)));
	PG_RETURN_INT64(mcc_refine_shortlist(n, k));
}

int64
mcc_refine_flat_limit(int32 k)
{
	int64		flat = Max((int64) mcc_refine_min, (int64) k);
	int64		lo = flat;		/* shortlist(lo) == flat */
	int64		hi = PG_INT64_MAX / 2;

	if (mcc_refine_shortlist(hi, k) == flat)
		return PG_INT64_MAX;
	/* the shortlist grows with n: the last n where it is still flat */
	while (hi - lo > 1)
	{
		int64		mid = lo + (hi - lo) / 2;

		if (mcc_refine_shortlist(mid, k) == flat)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The k best by mcc_topk (its order is mcc_refine_rank's: score descending,
 * key ascending), so that a shortlist of thousands costs n log k
 * comparisons instead of a sort of all n.
 */
int64
mcc_refine_rank(mcc_refined *c, int64 n, int32 k, float4 min_score)
{
	int64		cap = Min(n, (int64) k);
	mcc_hit    *best;
	mcc_topk	t;

	if (k <= 0)
		return 0;
	best = palloc(sizeof(mcc_hit) * Max(cap, 1));
	mcc_topk_init(&t, k, best, cap);
	for (int64 i = 0; i < n; i++)
		if (c[i].score >= min_score)
			mcc_topk_push(&t, c[i].score, c[i].key);
	mcc_topk_sort(&t);
	for (int64 i = 0; i < t.n; i++)
	{
		c[i].score = best[i].score;
		c[i].key = best[i].id;
	}
	pfree(best);
	return t.n;
}
