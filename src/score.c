/*
 * score.c: 1:1 comparison of two templates: mcc_score() (LSS, paper 000),
 * the threshold operator % and the distance operator <=>.
 */
#include "mcc_pg.h"

#include "mcc_lss.h"

PG_FUNCTION_INFO_V1(mcc_score);
PG_FUNCTION_INFO_V1(mcc_matches);
PG_FUNCTION_INFO_V1(mcc_distance);

/* LSS score of template arguments 0 and 1; templates of different profiles raise 22023. */
static float
score_args(FunctionCallInfo fcinfo)
{
	mcc_template_view a;
	mcc_template_view b;
	mcc_error	err;
	float		score;

	mcc_pg_open(MCC_GETARG_TEMPLATE(0), &a);
	mcc_pg_open(MCC_GETARG_TEMPLATE(1), &b);
	if (mcc_lss_pair(&a, &b, &score, &err) != MCC_OK)
		mcc_pg_raise(&err);
	return score;
}

/* mcc_score(a, b): LSS score in [0, 1]. */
Datum
mcc_score(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT4(score_args(fcinfo));
}

/*
 * a % b: mcc_score(a, b) >= mcc.match_threshold, compared in double
 * precision. STABLE in SQL because it reads the GUC.
 */
Datum
mcc_matches(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL((double) score_args(fcinfo) >= mcc_match_threshold);
}

/* a <=> b: 1 - mcc_score(a, b), in single precision. */
Datum
mcc_distance(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT4(1.0f - score_args(fcinfo));
}
