/*
 * eng_cache_count.h: the visibility count of a RESULT over a cache
 * (eng_cache_count.c).
 */
#ifndef ENG_CACHE_COUNT_H
#define ENG_CACHE_COUNT_H

#include "eng_cache.h"

/* A group of the visibility count: entries with equal xids and flags. */
typedef struct eng_count_group
{
	uint64_t	insert_xid;
	uint64_t	delete_xid;		/* 0: not deleted */
	uint32_t	flags;			/* MCC_COUNT_F_* of mcc_proto.h */
	uint32_t	entries;
} eng_count_group;

/*
 * The visibility count of RESULT (mcc_proto.h): *certain gets the
 * searchable entries that every snapshot with this xmin sees (inserted by an
 * xid known committed and below xmin, not deleted); entries whose deletion is
 * known committed below xmin are left out (no such snapshot sees them); every
 * other searchable entry goes into a group of equal (insert xid, delete xid, flags), returned
 * as a malloc'ed array sorted by those three (*groups NULL if none). False,
 * with nothing returned, if there are more than max_groups groups or no
 * memory. Reads c only: safe in a thread while c is pinned.
 */
bool		eng_cache_count(const eng_cache *c, uint64_t xmin, uint32_t max_groups,
							uint64_t *certain, eng_count_group **groups,
							uint32_t *n_groups);

/*
 * At most how many live entries of c may be uncertain for some xmin (the
 * count memo's: entries not inserted below every horizon, or deleted), when
 * the memo is up to date and free; false otherwise (never waits: a count
 * building the memo holds it). For a refining search's room beyond its
 * shortlist.
 */
bool		eng_cache_uncertain_bound(const eng_cache *c, uint64_t *bound);

#endif							/* ENG_CACHE_COUNT_H */
