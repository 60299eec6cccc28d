/*
 * shortlist.h: identify_shortlist(), a gallery's refinement shortlist of a
 * given length, rescored, of which only the rows that can matter to a
 * larger shortlist's answer are returned (src/identify/shortlist.c). The
 * scale-out coordinator's refinement is built on it: each shard's
 * partitions are such galleries (docs/scale-out.md, "Refinement").
 *
 * Both identify() paths fill the answer: the matcher engine rescoring its
 * cache's shortlist (src/service/service_identify.c, on its GPU or CPU
 * threads) and the backend scan (src/identify/identify.c).
 */
#ifndef MCC_SHORTLIST_H
#define MCC_SHORTLIST_H

#include "postgres.h"

#include "mcc_match.h"

struct mcc_gallery;

/* A shortlisted row: its LSS score, refined score and key. */
typedef struct mcc_list_row
{
	float		lss;
	float		refined;
	int64		key;
} mcc_list_row;

/* What identify_shortlist() returns: some rows of a shortlist, with their positions. */
typedef struct mcc_list_answer
{
	MemoryContext cxt;			/* where rows and pos are allocated */
	int64		m;				/* rows in the shortlist */
	int64		n;				/* rows returned */
	mcc_list_row *rows;			/* the returned rows, in LSS order */
	int64	   *pos;			/* their positions in the shortlist, from 0 */
} mcc_list_answer;

/*
 * From a shortlist rows[0 .. m) in LSS order (descending, key ascending),
 * keep in a the rows that fewer than k earlier rows beat by refined score
 * (descending, key ascending), and every row at position `from` or later.
 */
extern void mcc_list_answer_fill(mcc_list_answer *a, const mcc_list_row *rows, int64 m,
								 int32 k, int64 from);

/*
 * The backend scan's shortlist: the first n rows of the gallery by LSS that
 * the statement sees (fewer if it has fewer), rescored with method, into
 * *rows (palloc'ed); returns how many (src/identify/identify.c).
 */
extern int64 mcc_identify_list(const struct mcc_gallery *g, const struct varlena *probe,
							   mcc_method method, int64 n, mcc_list_row **rows);

#endif							/* MCC_SHORTLIST_H */
