/*
 * dp2d_pg.h: what the SQL files of elastic matching share (src/image/dp2d_sql.c,
 * src/image/dp2d_overall_sql.c).
 */
#ifndef DP2D_PG_H
#define DP2D_PG_H

#include "image_pg.h"

#include "mcc_dp2d.h"

/* The verification algorithms of paper 003, Sec. 8. */
typedef enum dp2d_algorithm
{
	DP2D_SIMPLIFIED = 0,
	DP2D_OVERALL = 1
} dp2d_algorithm;

/* The algorithm named by a SQL text argument, or a clear error. */
extern dp2d_algorithm dp2d_algorithm_arg(text *t);

/* dp2d_sql.c: match pairs in this backend, waiting with interrupts served. */
extern void dp2d_match_pairs(uint32 npairs, const mcc_image *const *a, const mcc_image *const *b,
							 int flags, mcc_dp2d_out *out);

/* dp2d_sql.c: one request to the matcher engine; false: run it here. */
extern bool dp2d_engine(const char *fn, uint32 na, const mcc_image *a, uint32 nb,
						const mcc_image *b, uint32 flags, mcc_dp2d_out *out,
						const char *what_a, char *const *what_b);

/* dp2d_sql.c: raise a failed enhancement of the image named what. */
extern void dp2d_raise_enhance(const char *what, const mcc_error *err);

/*
 * dp2d_overall_sql.c: the overall algorithm (Sec. 8.1) for n probes
 * against one reference: differences[i] for probe i.
 */
extern void dp2d_overall_n(const char *fn, const mcc_image *ref, uint32 n, const mcc_image *probes,
						   char *const *what, int64 *differences);

#endif							/* DP2D_PG_H */
