/*
 * refine.h: the refinement stage of identify() and identify_batch() (paper
 * 000 Sec. 5.4; docs/accuracy.md, docs/sql-reference.md).
 *
 * Both paths (the backend scan, src/identify/identify.c and src/identify/identify_refine.c,
 * and the matcher service, src/service/service_identify.c) do the same: the LSS
 * score of every row the statement sees (n rows with a template), the best
 * n' = mcc_refine_count(n, mcc.refine_fraction, mcc.refine_min, k) of them
 * by LSS (ties by key) rescored with the method, and the top k by the new
 * score (ties by key) among those scoring at least min_score. This file
 * holds what they share: the argument, the settings, n', the final ranking.
 */
#ifndef MCC_REFINE_H
#define MCC_REFINE_H

#include "postgres.h"

#include "fmgr.h"

#include "mcc_match.h"

extern double mcc_refine_fraction;	/* mcc.refine_fraction */
extern int	mcc_refine_min;		/* mcc.refine_min */

/* Define mcc.refine_fraction and mcc.refine_min (from _PG_init). */
extern void mcc_refine_define_gucs(void);

/*
 * The method of a refine argument of function fname: 'none' (MCC_LSS, no
 * refinement), 'dtr' (MCC_LSS_DTR) or a method name; NULL (isnull) means
 * the setting mcc.refine_method (by default MCC_METHOD_BEST). Raises 22023
 * for an unknown name.
 */
extern mcc_method mcc_refine_arg(Datum arg, bool isnull, const char *fname);

/*
 * The arguments identify() and identify_batch() (function fname) share: k
 * (argument 2, > 0), min_score (3, in [0, 1]) and refine (6, as
 * mcc_refine_arg); raises 22023 for a value out of range.
 */
extern void mcc_identify_args(FunctionCallInfo fcinfo, const char *fname, int32 *k,
							  float4 *min_score, mcc_method *method);

/* n' for a statement that sees n rows with a template. */
extern int64 mcc_refine_shortlist(int64 n, int32 k);

/*
 * The largest n for which n' is min(n, max(mcc.refine_min, k)), that is,
 * does not depend on n beyond being capped by it (INT64_MAX if n' never
 * grows with n: mcc.refine_fraction 0).
 */
extern int64 mcc_refine_flat_limit(int32 k);

/* A rescored candidate. */
typedef struct mcc_refined
{
	float		score;
	int64		key;
} mcc_refined;

/*
 * Keep the candidates scoring at least min_score, sorted best first (score
 * descending, key ascending), at most k of them; returns how many.
 */
extern int64 mcc_refine_rank(mcc_refined *c, int64 n, int32 k, float4 min_score);

#endif							/* MCC_REFINE_H */
