/*
 * score.c: 1:1 comparison of two templates: mcc_score(a, b) (the most
 * accurate method, 'fused'), mcc_score(a, b, method) (every method of
 * mcc_match.h), the threshold operator % and the distance operator <=>,
 * which score as mcc_score(a, b) does.
 */
#include "mcc_pg.h"

#include "utils/builtins.h"

#include "mcc_lss.h"
#include "mcc_match.h"

PG_FUNCTION_INFO_V1(mcc_score);
PG_FUNCTION_INFO_V1(mcc_score_method);
PG_FUNCTION_INFO_V1(mcc_matches);
PG_FUNCTION_INFO_V1(mcc_distance);

/*
 * The matching workspace of a call site: about 2 MB, allocated once in the
 * function's memory context and kept in fn_extra, so that a query scoring
 * many rows does not allocate per row.
 */
static mcc_match_work *
call_workspace(FunctionCallInfo fcinfo)
{
	if (fcinfo->flinfo->fn_extra == NULL)
	{
		mcc_match_work *w = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt,
											   mcc_match_work_size());

		mcc_match_work_init(w);
		fcinfo->flinfo->fn_extra = w;
	}
	return (mcc_match_work *) fcinfo->flinfo->fn_extra;
}

/*
 * True if template x comes after y in the canonical order of a pair: by
 * their stored bytes, then by length. Equal templates are in order.
 */
static bool
canonical_swap(const struct varlena *x, const struct varlena *y)
{
	size_t		nx = VARSIZE_ANY_EXHDR(x);
	size_t		ny = VARSIZE_ANY_EXHDR(y);
	int			c = memcmp(VARDATA_ANY(x), VARDATA_ANY(y), Min(nx, ny));

	return c > 0 || (c == 0 && nx > ny);
}

/*
 * Score of template arguments 0 and 1 with a method; templates of different
 * profiles raise 22023. With canonical, the two are scored in their
 * canonical order (canonical_swap), which makes the score exactly
 * symmetric: the relaxations rank equal similarities by position, so
 * mcc_score(a, b, 'fused') and mcc_score(b, a, 'fused') may differ in rare
 * pairs, while mcc_score(a, b), % and <=> (declared commutative) may not.
 */
static float
score_args(FunctionCallInfo fcinfo, mcc_method method, bool canonical)
{
	struct varlena *x = MCC_GETARG_TEMPLATE(0);
	struct varlena *y = MCC_GETARG_TEMPLATE(1);
	mcc_template_view a;
	mcc_template_view b;
	mcc_error	err;
	float		score;

	if (canonical && canonical_swap(x, y))
	{
		struct varlena *t = x;

		x = y;
		y = t;
	}
	mcc_pg_open(x, &a);
	mcc_pg_open(y, &b);
	if (mcc_match_pair(call_workspace(fcinfo), &a, &b, method, NULL, &score, &err) != MCC_OK)
		mcc_pg_raise(&err);
	return score;
}

/*
 * mcc_score(a, b): the score of the most accurate method (MCC_METHOD_BEST,
 * 'fused') in [0, 1], of the pair in canonical order (exactly symmetric).
 * IMMUTABLE: the method is fixed, not a setting.
 */
Datum
mcc_score(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT4(score_args(fcinfo, MCC_METHOD_BEST, true));
}

/*
 * a % b: mcc_score(a, b) >= mcc.match_threshold, compared in double
 * precision. STABLE in SQL because it reads the GUC.
 */
Datum
mcc_matches(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL((double) score_args(fcinfo, MCC_METHOD_BEST, true) >= mcc_match_threshold);
}

/* a <=> b: 1 - mcc_score(a, b), in single precision. */
Datum
mcc_distance(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT4(1.0f - score_args(fcinfo, MCC_METHOD_BEST, true));
}

/*
 * mcc_score(a, b, method): the score of a method of mcc_match.h in [0, 1];
 * 'lss' is mcc_score(a, b). a is the probe (it matters for
 * 'consolidation', the one asymmetric method). An unknown method raises
 * 22023 with the list of known ones.
 */
Datum
mcc_score_method(PG_FUNCTION_ARGS)
{
	text	   *name = PG_GETARG_TEXT_PP(2);
	int			method = mcc_method_parse(VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name));
	if (method < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown matching method \"%s\"", text_to_cstring(name)),
				 errhint("Known methods are %s.", mcc_method_list())));
	PG_RETURN_FLOAT4(score_args(fcinfo, (mcc_method) method, false));
}
