/*
 * mcc.c: module entry point and configuration parameters.
 *
 * _PG_init runs in every process that loads the library, the postmaster
 * included when mcc is in shared_preload_libraries. It therefore does only
 * what is safe and cheap everywhere: fill the scoring tables and define the
 * GUCs. It never touches CUDA (docs/architecture.md).
 */
#include "mcc_pg.h"
#include "refine.h"
#include "service.h"

#include "utils/guc.h"

#include "mcc_lss.h"

PG_MODULE_MAGIC;

/*
 * mcc.match_threshold: the score at or above which `a % b` is true. The
 * default is mcc_threshold(0.001), the threshold of a 0.1 % false match
 * rate of mcc_score(a, b) (the fused method) shipped in mcc_thresholds
 * (scripts/thresholds.py; docs/sql-reference.md, "Choosing the threshold"):
 * the single-precision value written out in double precision, so that
 * `a % b` and `mcc_score(a, b) >= mcc_threshold(0.001)` agree on every
 * score. sql/thresholds.sql checks the two stay equal.
 */
#define MCC_MATCH_THRESHOLD_DEFAULT 0.025171561166644096

double		mcc_match_threshold = MCC_MATCH_THRESHOLD_DEFAULT;

void		_PG_init(void);

/* Define the user-settable parameters of the mcc.* namespace. */
static void
mcc_define_gucs(void)
{
	DefineCustomRealVariable("mcc.match_threshold",
							 "Score at or above which the % operator reports a match.",
							 "mcc_score(a, b) >= mcc.match_threshold makes a % b true.",
							 &mcc_match_threshold,
							 MCC_MATCH_THRESHOLD_DEFAULT,
							 0.0, 1.0,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
}

/* Module load: scoring tables, then GUCs; nothing that needs shared memory. */
void
_PG_init(void)
{
	mcc_lss_init();
	mcc_image_init();			/* image search settings: src/image/image_io.c */
	mcc_define_gucs();
	mcc_refine_define_gucs();	/* identify()'s refinement: src/identify/refine.c */
	mcc_align_define_gucs();
	mcc_dp2d_sql_init();
	mcc_service_init();			/* matcher service: src/service/service_init.c */
	MarkGUCPrefixReserved("mcc");
}
