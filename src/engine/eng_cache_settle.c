/*
 * eng_cache_settle.c: what SETTLE does to a cache (eng_cache_settle.h):
 * the transaction states of the unsettled xids decide each entry's fate,
 * and the xids still unsettled are listed for the next SETTLE.
 */
#include "eng_cache_settle.h"

#include <stdlib.h>

#include "mcc_cmp.h"
#include "mcc_proto.h"

/* State of xid in a sorted list, or 0 if absent. */
static uint32_t
xid_state(uint64_t xid, const uint64_t *xids, const uint32_t *states, uint32_t n)
{
	uint32_t	lo = 0;
	uint32_t	hi = n;

	while (lo < hi)
	{
		uint32_t	mid = lo + (hi - lo) / 2;

		if (xids[mid] < xid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && xids[lo] == xid ? states[lo] : 0;
}

uint32_t
eng_cache_settle(eng_cache *c, uint64_t horizon, const uint64_t *xids,
				 const uint32_t *states, uint32_t n)
{
	uint32_t	purged = 0;

	for (uint32_t i = 0; i < c->soa.n_tpl; i++)
	{
		eng_entry  *e = &c->entries[i];
		bool		before;
		uint64_t	was_delete;
		uint32_t	was_flags;

		if (e->flags & ENG_E_PURGED)
			continue;
		before = eng_entry_unsettled(e);
		was_delete = e->delete_xid;
		was_flags = e->flags;
		if (!(e->flags & ENG_E_INS_SETTLED))
		{
			uint32_t	st = xid_state(e->insert_xid, xids, states, n);

			if (st == MCC_XID_ABORTED)
			{
				eng_cache_purge(c, i);
				purged++;
				continue;
			}
			if (st == MCC_XID_COMMITTED)
				e->flags |= ENG_E_INS_SETTLED;
		}
		if (e->delete_xid != 0 && !(e->flags & ENG_E_DEL_COMMITTED))
		{
			uint32_t	st = xid_state(e->delete_xid, xids, states, n);

			if (st == MCC_XID_ABORTED)
			{
				e->delete_xid = 0;
				e->flags &= ~ENG_E_LOAD_DEL;
			}
			else if (st == MCC_XID_COMMITTED)
				e->flags |= ENG_E_DEL_COMMITTED;
		}
		c->n_unsettled += (int) eng_entry_unsettled(e) - (int) before;
		if (e->delete_xid != was_delete || e->flags != was_flags)
			c->version++;		/* eng_cache_count's memo is stale */
		if ((e->flags & ENG_E_DEL_COMMITTED) && e->delete_xid < horizon)
		{
			eng_cache_purge(c, i);
			purged++;
		}
	}
	return purged;
}

uint32_t
eng_cache_xids(const eng_cache *c, uint32_t max, uint64_t **out)
{
	uint64_t   *x;
	uint32_t	n = 0;
	uint32_t	u = 0;

	*out = NULL;
	if (c->n_unsettled == 0 || max == 0)
		return 0;
	x = malloc((size_t) 2 * c->n_unsettled * sizeof(uint64_t));
	if (x == NULL)
		return 0;
	for (uint32_t i = 0; i < c->soa.n_tpl; i++)
	{
		const eng_entry *e = &c->entries[i];

		if (!eng_entry_unsettled(e))
			continue;
		if (!(e->flags & ENG_E_INS_SETTLED))
			x[n++] = e->insert_xid;
		if (e->delete_xid != 0)
			x[n++] = e->delete_xid;
	}
	qsort(x, n, sizeof(uint64_t), mcc_cmp_u64);
	for (uint32_t i = 0; i < n && u < max; i++)
		if (u == 0 || x[u - 1] != x[i])
			x[u++] = x[i];
	*out = x;
	return u;
}
