/*
 * eng_cache_int.h: what the units of the gallery cache share beyond
 * eng_cache.h: eng_cache.c (versions, key index, deltas, compaction) and
 * eng_cache_bulk.c (a cache restored from a snapshot, rows added in bulk by
 * a load's threads). Not for other units.
 */
#ifndef ENG_CACHE_INT_H
#define ENG_CACHE_INT_H

#include <string.h>

#include "eng_cache.h"
#include "eng_index.h"
#include "mcc_template.h"

#define FIRST_NORMAL_XID 3		/* PostgreSQL's xids below this are special */

/*
 * An entry's transactions as a load or a delta gives them: the xids, and
 * of flags the load's ENG_E_LOAD_INS and ENG_E_LOAD_DEL (the latter only
 * with a deleting xid); a special inserting xid (frozen) is settled.
 */
static inline void
eng_entry_set_xids(eng_entry *e, uint64_t insert_xid, uint64_t delete_xid, uint32_t flags)
{
	e->insert_xid = insert_xid;
	e->delete_xid = delete_xid;
	e->flags = flags & (ENG_E_LOAD_INS | ENG_E_LOAD_DEL);
	if (delete_xid == 0)
		e->flags &= ~ENG_E_LOAD_DEL;
	if (insert_xid < FIRST_NORMAL_XID)
		e->flags |= ENG_E_INS_SETTLED;
}

/* Index slot of a key (eng_index.h's hash). */
static inline uint32_t
eng_cache_key_slot(const eng_cache *c, int64_t key)
{
	return eng_index_slot((uint64_t) key, c->n_slots);
}

/* Minutiae of the template whose side starts at d (the header's n_min). */
static inline int
eng_side_n_min(const uint8_t *d)
{
	uint16_t	n;

	memcpy(&n, d + 14 - 4, sizeof(n));
	return n;
}

/* Bytes from the template's start to its cylinder bits, for n_min minutiae. */
static inline size_t
eng_side_bits_at(int n_min)
{
	return ((size_t) MCC_TEMPLATE_HDRSZ + (size_t) MCC_MINUTIA_RECSZ * n_min + 7) & ~(size_t) 7;
}


/* A new empty cache with room for the given sizes, charged to budget (may be NULL). */
eng_cache  *eng_cache_alloc(const mcc_profile *p, eng_budget *budget, uint32_t cap_tpl,
							uint32_t cap_cyl, uint64_t cap_side, mcc_error *err);

/*
 * Rebuild the key index with n slots (a power of two) on up to `threads`
 * threads (eng_index.h: the chains one thread would build); false if out
 * of memory.
 */
bool		eng_cache_reindex(eng_cache *c, uint32_t n, int threads);

/* Write t's side at offset off of the cache's sides (room reserved). */
void		eng_cache_side_write(eng_cache *c, uint64_t off, const mcc_template_view *t);

#endif
