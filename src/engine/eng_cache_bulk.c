/*
 * eng_cache_bulk.c: a gallery cache filled in bulk: restored from a cache
 * snapshot (eng_cache_restore_begin/_end, the rows' derived fields on
 * several threads) and rows added by a load's threads at reserved places
 * (eng_cache_bulk_reserve/_put/_end), and a restored row revived by the
 * load's check. The one-row paths and the rest of the cache are in
 * eng_cache.c.
 */
#include "eng_cache.h"
#include "eng_cache_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "eng_prefault.h"
#include "eng_soa.h"
#include "mcc_job.h"

/* Room a restored cache keeps for rows appended after it: 1/32 more, at least a few. */
static uint64_t
restore_room(uint64_t n, uint64_t least)
{
	return n + n / 32 + least;
}

eng_cache *
eng_cache_restore_begin(const mcc_profile *p, uint32_t n_tpl, uint32_t n_cyl, uint64_t n_side,
						mcc_error *err)
{
	uint64_t	cap_t = restore_room(n_tpl, 64);
	uint64_t	cap_c = restore_room(n_cyl, 64 * 40);
	uint64_t	cap_s = restore_room(n_side, 64 * 600);

	if (cap_t > UINT32_MAX / 2 || cap_c > UINT32_MAX - 1)
	{
		mcc_error_set(err, MCC_ERR_LIMIT, "gallery cache too large");
		return NULL;
	}
	return eng_cache_alloc(p, NULL, (uint32_t) cap_t, (uint32_t) cap_c, cap_s, err);
}

/* Rows of a restored cache that the threads of eng_cache_restore_end fill in turn. */
typedef struct restore_fill
{
	eng_cache  *c;
	uint32_t	n_tpl;
	atomic_uint next;			/* the next block of RESTORE_BLOCK rows */
} restore_fill;

#define RESTORE_BLOCK 65536

/* Fill what each row of a block derives alone: its cylinders' template, its entry. */
static void *
restore_fill_main(void *arg)
{
	restore_fill *f = arg;
	eng_cache  *c = f->c;
	mcc_soa    *g = &c->soa;

	for (;;)
	{
		uint64_t	i0 = (uint64_t) atomic_fetch_add(&f->next, 1) * RESTORE_BLOCK;
		uint32_t	i1;

		if (i0 >= f->n_tpl)
			break;
		i1 = f->n_tpl - i0 > RESTORE_BLOCK ? (uint32_t) i0 + RESTORE_BLOCK : f->n_tpl;
		for (uint32_t i = (uint32_t) i0; i < i1; i++)
		{
			eng_entry  *e = &c->entries[i];

			for (uint32_t k = g->first[i]; k < g->first[i + 1]; k++)
				g->tpl[k] = i;
			e->key = g->id[i];
			e->insert_xid = 0;
			e->delete_xid = 0;
			e->flags = ENG_E_PURGED;
		}
	}
	return NULL;
}

mcc_status
eng_cache_restore_end(eng_cache *c, uint32_t n_tpl, uint32_t n_cyl, uint64_t n_side,
					  int threads, mcc_error *err)
{
	mcc_soa    *g = &c->soa;
	uint64_t	cyl = 0;
	uint64_t	side = 0;
	restore_fill f = {.c = c, .n_tpl = n_tpl};
	pthread_t	tids[64];
	int			started = 0;

	if (n_tpl > g->cap_tpl || n_tpl > c->cap_entries || n_cyl > g->cap_cyl || n_side > c->cap_side)
		return mcc_error_set(err, MCC_ERR_VALUE, "restored sizes exceed the cache's room");
	/* each side's offset follows from the one before: one pass, checking every row */
	for (uint32_t i = 0; i < n_tpl; i++)
	{
		uint32_t	nc = g->ncyl[i];
		int			n_min;

		g->first[i] = (uint32_t) cyl;
		if (nc > MCC_MAX_CYL || nc > n_cyl - cyl || n_side - side < 14)
			return mcc_error_set(err, MCC_ERR_VALUE, "restored entry %u overruns the cylinders or sides", i);
		n_min = eng_side_n_min(c->side + side);
		if (n_min > MCC_MAX_MINUTIAE ||
			eng_side_bits_at(n_min) - 4 + nc > n_side - side)
			return mcc_error_set(err, MCC_ERR_VALUE, "restored entry %u has a bad side", i);
		c->entries[i].side = side;
		cyl += nc;
		side += eng_side_bits_at(n_min) - 4 + nc;
	}
	if (cyl != n_cyl || side != n_side)
		return mcc_error_set(err, MCC_ERR_VALUE, "restored counts disagree (%llu cylinders, %llu side bytes)",
							 (unsigned long long) cyl, (unsigned long long) side);
	g->first[n_tpl] = n_cyl;
	/* the rest of each row on several threads (this one too) */
	if (threads > 64)
		threads = 64;
	if ((uint64_t) threads > n_tpl / RESTORE_BLOCK + 1)
		threads = (int) (n_tpl / RESTORE_BLOCK + 1);
	if (threads > 1)
		started = mcc_job_start_threads(tids, threads - 1, restore_fill_main, &f, 0);
	restore_fill_main(&f);
	for (int i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	g->n_tpl = n_tpl;
	g->n_cyl = n_cyl;
	c->n_side = n_side;
	c->n_purged = n_tpl;
	c->n_unsettled = 0;
	c->version++;
	if (!eng_cache_reindex(c, c->n_slots))
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
	return MCC_OK;
}

mcc_status
eng_cache_bulk_reserve(eng_cache *c, uint32_t n, const mcc_template_view *t,
					   eng_bulk_at *at, bool may_grow, mcc_error *err)
{
	uint64_t	cyl = 0;
	uint64_t	side = 0;
	uint64_t	row0 = (uint64_t) c->soa.n_tpl + c->bulk_rows;
	uint64_t	cyl0 = (uint64_t) c->soa.n_cyl + c->bulk_cyl;
	uint64_t	side0 = c->n_side + c->bulk_side;
	mcc_status	st;

	for (uint32_t i = 0; i < n; i++)
	{
		if (t[i].profile != c->profile)
			return mcc_error_set(err, MCC_ERR_VALUE,
								 "template profile \"%s\" differs from the gallery's \"%s\"",
								 t[i].profile->name, c->profile->name);
		at[i].cyl = cyl;
		at[i].side = side;
		cyl += (uint64_t) t[i].n_cyl;
		side += eng_side_bytes(&t[i]);
	}
	if (cyl0 + cyl > UINT32_MAX || row0 + n >= UINT32_MAX)
		return mcc_error_set(err, MCC_ERR_LIMIT, "gallery cache too large");
	if (row0 + n > c->soa.cap_tpl || row0 + n > c->cap_entries ||
		cyl0 + cyl > c->soa.cap_cyl || side0 + side > c->cap_side)
	{
		/* a growth moves the arrays that the reserved frames' rows are written into */
		if (!may_grow || c->bulk_rows > 0)
			return mcc_error_set(err, MCC_ERR_LIMIT, "no room without a growth");
		st = eng_cache_reserve(c, n, cyl, side, err);
		if (st != MCC_OK)
			return st;
	}
	for (uint32_t i = 0; i < n; i++)
	{
		at[i].row = (uint32_t) row0 + i;
		at[i].cyl += cyl0;
		at[i].side += side0;
	}
	c->bulk_rows += n;
	c->bulk_cyl += cyl;
	c->bulk_side += side;
	return MCC_OK;
}

void
eng_cache_revive(eng_cache *c, uint32_t idx, uint64_t insert_xid, uint64_t delete_xid,
				 uint32_t flags)
{
	eng_entry  *e = &c->entries[idx];

	if (!(e->flags & ENG_E_PURGED))
		return;
	c->version++;
	e->insert_xid = insert_xid;
	e->delete_xid = delete_xid;
	e->flags = flags & (ENG_E_LOAD_INS | ENG_E_LOAD_DEL);
	if (delete_xid == 0)
		e->flags &= ~ENG_E_LOAD_DEL;
	if (insert_xid < FIRST_NORMAL_XID)
		e->flags |= ENG_E_INS_SETTLED;
	c->n_purged--;
	if (eng_entry_unsettled(e))
		c->n_unsettled++;
}

void
eng_cache_bulk_put(eng_cache *c, const eng_bulk_at *at, int64_t key,
				   uint64_t hash, uint64_t insert_xid, uint64_t delete_xid,
				   const mcc_template_view *t, uint64_t tid, uint64_t xmin)
{
	uint32_t	k = at->row;
	eng_entry  *e = &c->entries[k];

	mcc_soa_put(&c->soa, k, (uint32_t) at->cyl, t, key);
	eng_cache_side_write(c, at->side, t);
	e->side = at->side;
	e->key = key;
	e->hash = hash;
	e->insert_xid = insert_xid;
	e->delete_xid = delete_xid;
	e->tid = tid;
	e->xmin = xmin;
	e->flags = ENG_E_LOAD_INS | (delete_xid != 0 ? ENG_E_LOAD_DEL : 0);
	if (insert_xid < FIRST_NORMAL_XID)
		e->flags |= ENG_E_INS_SETTLED;
}

void
eng_cache_bulk_end(eng_cache *c, uint32_t n, uint64_t n_cyl, uint64_t n_side)
{
	uint32_t	k0 = c->soa.n_tpl;

	c->version++;
	for (uint32_t k = k0; k < k0 + n; k++)
	{
		eng_entry  *e = &c->entries[k];
		uint32_t	h = eng_cache_key_slot(c, e->key);

		e->next = c->slots[h];
		c->slots[h] = k;
		if (eng_entry_unsettled(e))
			c->n_unsettled++;
	}
	c->soa.n_tpl += n;
	c->soa.n_cyl += (uint32_t) n_cyl;
	c->n_side += n_side;
	c->bulk_rows -= n;
	c->bulk_cyl -= n_cyl;
	c->bulk_side -= n_side;
	/* the next reserved frame's first row, being written, says the same already */
	if (c->bulk_rows == 0)
		c->soa.first[c->soa.n_tpl] = c->soa.n_cyl;
	if (c->prefault != NULL)
		eng_prefault_advance(c->prefault, c->soa.n_tpl);
}

/* The smaller of n and cap. */
static uint64_t
at_most(uint64_t n, uint64_t cap)
{
	return n < cap ? n : cap;
}

void
eng_cache_prefault(eng_cache *c, int threads, uint64_t rows, uint64_t cyl, uint64_t side)
{
	eng_prefault_area a[ENG_PREFAULT_MAX_AREAS];
	mcc_soa    *g = &c->soa;
	size_t		nc = (size_t) at_most(cyl, g->cap_cyl);
	size_t		nt = (size_t) at_most(rows, g->cap_tpl);
	int			n = 0;

	eng_cache_prefault_stop(c);
	/* each word's plane of the bits is filled from its start, as the other arrays */
	for (int w = 0; w < g->words && n < ENG_PREFAULT_MAX_AREAS - 8; w++)
		a[n++] = (eng_prefault_area) {g->bits + (size_t) w * g->cap_cyl, sizeof(uint64_t) * nc};
	a[n++] = (eng_prefault_area) {g->angle, nc};
	a[n++] = (eng_prefault_area) {g->pc, sizeof(*g->pc) * nc};
	a[n++] = (eng_prefault_area) {g->tpl, sizeof(*g->tpl) * nc};
	a[n++] = (eng_prefault_area) {g->first, sizeof(*g->first) * (nt + 1)};
	a[n++] = (eng_prefault_area) {g->ncyl, sizeof(*g->ncyl) * nt};
	a[n++] = (eng_prefault_area) {g->id, sizeof(*g->id) * nt};
	a[n++] = (eng_prefault_area) {c->entries, sizeof(eng_entry) * (size_t) at_most(rows, c->cap_entries)};
	a[n++] = (eng_prefault_area) {c->side, (size_t) at_most(side, c->cap_side)};
	c->prefault = eng_prefault_start(a, n, threads, rows, g->n_tpl);
}

void
eng_cache_prefault_stop(eng_cache *c)
{
	eng_prefault_stop(c->prefault);
	c->prefault = NULL;
}
