/*
 * refine.c: what both identify() paths share about refinement: the refine
 * argument, mcc.refine_fraction and mcc.refine_min, the shortlist size n'
 * and the final ranking (src/refine.h).
 */
#include "mcc_pg.h"
#include "refine.h"

#include <limits.h>

#include "utils/builtins.h"
#include "utils/guc.h"

/*
 * Paper 000 refines the best 0.1 % of the gallery; at least 100 candidates
 * keep small galleries from being refined on a handful (docs/accuracy.md,
 * section 6: with 20,000 templates the 0.1 % would be 20).
 */
#define REFINE_FRACTION_DEFAULT 0.001
#define REFINE_MIN_DEFAULT		100

double		mcc_refine_fraction = REFINE_FRACTION_DEFAULT;
int			mcc_refine_min = REFINE_MIN_DEFAULT;

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
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("refine of %s must not be null", fname),
				 errhint("Use 'none' for no refinement.")));
	t = DatumGetTextPP(arg);
	m = mcc_refine_parse(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
	if (m < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown refinement \"%s\" for %s", text_to_cstring(t), fname),
				 errhint("Use none, dtr (lss-dtr) or a method: %s.", mcc_method_list())));
	return (mcc_method) m;
}

int64
mcc_refine_shortlist(int64 n, int32 k)
{
	return mcc_refine_count(n, mcc_refine_fraction, mcc_refine_min, k);
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

/* qsort comparator: score descending, key ascending */
static int
cmp_refined(const void *a, const void *b)
{
	const mcc_refined *x = a;
	const mcc_refined *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

int64
mcc_refine_rank(mcc_refined *c, int64 n, int32 k, float4 min_score)
{
	int64		m = 0;
	int64		i;

	for (i = 0; i < n; i++)
		if (c[i].score >= min_score)
			c[m++] = c[i];
	if (m > 1)
		qsort(c, m, sizeof(mcc_refined), cmp_refined);
	return Min(m, (int64) k);
}
