/*
 * service_recheck.h: the visibility re-check of the engine's candidates
 * (src/service/service_recheck.c).
 */
#ifndef SERVICE_RECHECK_H
#define SERVICE_RECHECK_H

#include "service_identify.h"

#include "utils/hsearch.h"

/* A visible row of the re-check. */
typedef struct visible_row
{
	int64		key;
	uint64		hash;
	struct varlena *tpl;		/* refining: the row's template */
} visible_row;

/*
 * Which candidate keys the caller can see, with their template hashes (and
 * with keep_tpl their templates), under the caller's snapshot (one indexed
 * query, or for a partitioned gallery each key looked up in its partition),
 * into visible (visible_row by key). False if some key has several visible
 * rows (no longer unique): the backend scan must answer.
 */
extern bool recheck(serve_req *r, HTAB *visible, bool keep_tpl);

/* Keep each probe's first `want` visible candidates; true if some probe needs more. */
extern bool filter_visible(serve_req *r, HTAB *visible);

#endif							/* SERVICE_RECHECK_H */
