/*
 * eng_cache_settle.h: SETTLE applied to a cache (eng_cache_settle.c): the
 * fate of the entries whose inserting or deleting xid is now known, and the
 * xids still unknown.
 */
#ifndef ENG_CACHE_SETTLE_H
#define ENG_CACHE_SETTLE_H

#include "eng_cache.h"

/*
 * Apply transaction states: xids[] sorted ascending with states[] of
 * mcc_xid_state. Returns the number of entries purged.
 */
uint32_t	eng_cache_settle(eng_cache *c, uint64_t horizon, const uint64_t *xids,
							 const uint32_t *states, uint32_t n);

/*
 * The distinct unsettled xids, ascending, at most max: a malloc'ed array in
 * *out (NULL if none or out of memory) and its length.
 */
uint32_t	eng_cache_xids(const eng_cache *c, uint32_t max, uint64_t **out);

#endif							/* ENG_CACHE_SETTLE_H */
