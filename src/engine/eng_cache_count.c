/*
 * eng_cache_count.c: the visibility count of a RESULT (eng_cache_count.h):
 * the entries every snapshot of an xmin sees, and the others grouped by
 * their xids, over a memo of the entries that can be anything but certain.
 */
#include "eng_cache_count.h"

#include <stdlib.h>
#include <string.h>

#include "mcc_cmp.h"
#include "mcc_proto.h"

/* The open-addressing table of eng_cache_count's groups. */
typedef struct count_table
{
	eng_count_group *g;			/* cap slots; entries == 0: empty */
	uint32_t	cap;			/* a power of two */
	uint32_t	n;
} count_table;

/* Slot of a group key (splitmix64 of the mixed xids). */
static inline uint32_t
group_slot(const count_table *t, uint64_t ixid, uint64_t dxid, uint32_t flags)
{
	uint64_t	z = ixid * UINT64_C(0x9e3779b97f4a7c15) ^ dxid ^ ((uint64_t) flags << 62);

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	z ^= z >> 31;
	return (uint32_t) z & (t->cap - 1);
}

/* Add one entry to its group; false if the table cannot grow. */
static bool
count_add(count_table *t, uint64_t ixid, uint64_t dxid, uint32_t flags)
{
	uint32_t	i;

	if (2 * (t->n + 1) > t->cap)
	{
		count_table bigger = {NULL, t->cap ? 2 * t->cap : 64, 0};

		bigger.g = calloc(bigger.cap, sizeof(eng_count_group));
		if (bigger.g == NULL)
			return false;
		for (uint32_t j = 0; j < t->cap; j++)
			if (t->g[j].entries != 0)
			{
				i = group_slot(&bigger, t->g[j].insert_xid, t->g[j].delete_xid, t->g[j].flags);
				while (bigger.g[i].entries != 0)
					i = (i + 1) & (bigger.cap - 1);
				bigger.g[i] = t->g[j];
			}
		bigger.n = t->n;
		free(t->g);
		*t = bigger;
	}
	i = group_slot(t, ixid, dxid, flags);
	while (t->g[i].entries != 0)
	{
		eng_count_group *g = &t->g[i];

		if (g->insert_xid == ixid && g->delete_xid == dxid && g->flags == flags)
		{
			g->entries++;
			return true;
		}
		i = (i + 1) & (t->cap - 1);
	}
	t->g[i].insert_xid = ixid;
	t->g[i].delete_xid = dxid;
	t->g[i].flags = flags;
	t->g[i].entries = 1;
	t->n++;
	return true;
}

/* qsort comparator: insert xid, delete xid, flags */
static int
cmp_group(const void *a, const void *b)
{
	const eng_count_group *x = a;
	const eng_count_group *y = b;
	int			c = MCC_CMP(x->insert_xid, y->insert_xid);

	c = MCC_CMP_THEN(c, x->delete_xid, y->delete_xid);
	return MCC_CMP_THEN(c, x->flags, y->flags);
}

/*
 * Bring c's count memo up to date (see eng_cache.h): a full read of the
 * entries once per change of the cache instead of once per count, which at
 * a million entries cost milliseconds of every refining identify(). Counts
 * run on the pool's threads while their pass pins the cache, so nothing
 * changes an entry meanwhile; the lock is for two counts of one pass.
 * False (no memo: read every entry) if out of memory.
 */
static bool
count_memo(eng_cache *c)
{
	bool		ok = true;

	pthread_mutex_lock(&c->count_lock);
	if (c->count_version != c->version)
	{
		uint32_t   *rest = realloc(c->count_rest, ((size_t) c->soa.n_tpl + 1) * sizeof(uint32_t));
		uint32_t	n_rest = 0;
		uint64_t	base = 0;

		if (rest == NULL)
			ok = false;
		else
		{
			for (uint32_t i = 0; i < c->soa.n_tpl; i++)
			{
				const eng_entry *e = &c->entries[i];

				if (e->flags & ENG_E_PURGED)
					continue;
				/* certain for every xmin >= 1 (eng_entry_certain) */
				if ((e->flags & ENG_E_INS_SETTLED) && e->insert_xid == 0 && e->delete_xid == 0)
					base++;
				else
					rest[n_rest++] = i;
			}
			c->count_rest = rest;
			c->n_count_rest = n_rest;
			c->count_base = base;
			c->count_version = c->version;
		}
	}
	pthread_mutex_unlock(&c->count_lock);
	return ok;
}

bool
eng_cache_count(const eng_cache *c, uint64_t xmin, uint32_t max_groups,
				uint64_t *certain, eng_count_group **groups, uint32_t *n_groups)
{
	count_table t = {NULL, 0, 0};
	uint64_t	n = 0;
	const uint32_t *rest = NULL;
	uint32_t	n_rest = c->soa.n_tpl;

	*certain = 0;
	*groups = NULL;
	*n_groups = 0;
	if (xmin != 0 && count_memo((eng_cache *) c))
	{
		n = c->count_base;
		rest = c->count_rest;
		n_rest = c->n_count_rest;
	}
	for (uint32_t j = 0; j < n_rest; j++)
	{
		uint32_t	i = rest ? rest[j] : j;
		const eng_entry *e = &c->entries[i];
		uint32_t	flags = 0;

		if (e->flags & ENG_E_PURGED)
			continue;
		/* a deletion committed below xmin: no such snapshot sees the entry */
		if (e->delete_xid != 0 && (e->flags & ENG_E_DEL_COMMITTED) && e->delete_xid < xmin)
			continue;
		if (eng_entry_certain(e, xmin))
		{
			n++;
			continue;
		}
		if (e->flags & ENG_E_INS_SETTLED)
			flags |= MCC_COUNT_F_INS_COMMITTED;
		if (e->delete_xid != 0 && (e->flags & ENG_E_DEL_COMMITTED))
			flags |= MCC_COUNT_F_DEL_COMMITTED;
		if (!count_add(&t, e->insert_xid, e->delete_xid, flags) || t.n > max_groups)
		{
			free(t.g);
			return false;
		}
	}
	/* pack and sort */
	if (t.n > 0)
	{
		uint32_t	m = 0;

		for (uint32_t j = 0; j < t.cap; j++)
			if (t.g[j].entries != 0)
				t.g[m++] = t.g[j];
		qsort(t.g, m, sizeof(eng_count_group), cmp_group);
		*groups = t.g;
		*n_groups = m;
	}
	else
		free(t.g);
	*certain = n;
	return true;
}

bool
eng_cache_uncertain_bound(const eng_cache *c, uint64_t *bound)
{
	eng_cache  *w = (eng_cache *) c;	/* the lock only */
	bool		ok;

	if (pthread_mutex_trylock(&w->count_lock) != 0)
		return false;
	ok = c->count_rest != NULL && c->count_version == c->version;
	if (ok)
		*bound = c->n_count_rest;
	pthread_mutex_unlock(&w->count_lock);
	return ok;
}
