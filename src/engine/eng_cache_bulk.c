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

#include <stdatomic.h>
#include <stdlib.h>

#include "eng_bigmem.h"
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

/*
 * A restore's rows in blocks that its threads take in turn, twice: first
 * each block's sums (cylinders, side bytes, from the rows' counts alone),
 * then, from the block's first cylinder and side on, what each row
 * derives (its first cylinder, its cylinders' template, its entry). The
 * first pass was one serial walk from side to side (each side's length
 * read in the side before the next could be found: a dependent load a
 * row, about 1 s at 10 M rows); with the rows' minutiae counts stored
 * apart (snapshot format 3) no row waits for another.
 */
#define RESTORE_BLOCK 4096

typedef struct restore_block
{
	uint64_t	cyl;			/* pass 1: its cylinders; pass 2: its first */
	uint64_t	side;			/* the same for side bytes */
	uint32_t	bad;			/* its first bad row, ENG_NONE if none */
} restore_block;

typedef struct restore_run
{
	eng_cache  *c;
	const eng_restore_rows *rows;
	uint32_t	n_tpl;
	restore_block *blocks;
	uint32_t	n_blocks;
	atomic_uint next;			/* the next block of the pass */
	int			pass;			/* 1 sums, 2 fill */
} restore_run;

/* Bytes of a side of n_min minutiae and nc cylinders (eng_side_bytes). */
static uint64_t
side_len_of(int n_min, uint32_t nc)
{
	return eng_side_bits_at(n_min) - 4 + nc;
}

/* Pass 1 on rows [i0, i1): their sums, the first row whose counts are out of range. */
static void
restore_sums(restore_run *r, restore_block *b, uint32_t i0, uint32_t i1)
{
	const uint16_t *ncyl = r->c->soa.ncyl;

	b->cyl = 0;
	b->side = 0;
	b->bad = ENG_NONE;
	for (uint32_t i = i0; i < i1; i++)
	{
		if (ncyl[i] > MCC_MAX_CYL || r->rows->n_min[i] > MCC_MAX_MINUTIAE)
		{
			b->bad = i;
			return;
		}
		b->cyl += ncyl[i];
		b->side += side_len_of(r->rows->n_min[i], ncyl[i]);
	}
}

/*
 * Pass 2 on rows [i0, i1) from the block's first cylinder and side: each
 * row's place, its cylinders' template and its entry (a tombstone); the
 * first row whose side does not hold its stored minutiae count is bad.
 */
static void
restore_fill(restore_run *r, restore_block *b, uint32_t i0, uint32_t i1)
{
	eng_cache  *c = r->c;
	mcc_soa    *g = &c->soa;
	const eng_restore_rows *rows = r->rows;
	uint64_t	cyl = b->cyl;
	uint64_t	side = b->side;

	b->bad = ENG_NONE;
	for (uint32_t i = i0; i < i1; i++)
	{
		eng_entry  *e = &c->entries[i];
		uint32_t	nc = g->ncyl[i];

		if (eng_side_n_min(c->side + side) != rows->n_min[i] && b->bad == ENG_NONE)
			b->bad = i;
		g->first[i] = (uint32_t) cyl;
		e->key = g->id[i];
		e->hash = rows->hash[i];
		e->tid = rows->tid[i];
		e->xmin = rows->xmin[i];
		e->side = side;
		e->insert_xid = 0;
		e->delete_xid = 0;
		e->flags = ENG_E_PURGED;
		cyl += nc;
		side += side_len_of(rows->n_min[i], nc);
	}
}

static void *
restore_main(void *arg)
{
	restore_run *r = arg;
	uint32_t	k;

	while ((k = atomic_fetch_add(&r->next, 1)) < r->n_blocks)
	{
		uint32_t	i0 = k * RESTORE_BLOCK;
		uint32_t	i1 = r->n_tpl - i0 > RESTORE_BLOCK ? i0 + RESTORE_BLOCK : r->n_tpl;

		if (r->pass == 1)
			restore_sums(r, &r->blocks[k], i0, i1);
		else
			restore_fill(r, &r->blocks[k], i0, i1);
	}
	return NULL;
}

/* Run a pass over every block on up to `threads` threads; the first bad row, or ENG_NONE. */
static uint32_t
restore_pass(restore_run *r, int pass, int threads)
{
	r->pass = pass;
	atomic_store(&r->next, 0);
	mcc_job_run_each(threads > 1 ? threads : 1, restore_main, r, 0);
	for (uint32_t k = 0; k < r->n_blocks; k++)
		if (r->blocks[k].bad != ENG_NONE)
			return r->blocks[k].bad;
	return ENG_NONE;
}

/* Turn the blocks' sums into their first cylinders and sides; false if the totals disagree. */
static bool
restore_starts(restore_run *r, uint64_t n_cyl, uint64_t n_side)
{
	uint64_t	cyl = 0;
	uint64_t	side = 0;

	for (uint32_t k = 0; k < r->n_blocks; k++)
	{
		uint64_t	nc = r->blocks[k].cyl;
		uint64_t	ns = r->blocks[k].side;

		r->blocks[k].cyl = cyl;
		r->blocks[k].side = side;
		cyl += nc;
		side += ns;
	}
	return cyl == n_cyl && side == n_side;
}

mcc_status
eng_cache_restore_end(eng_cache *c, uint32_t n_tpl, uint32_t n_cyl, uint64_t n_side,
					  const eng_restore_rows *rows, int threads, mcc_error *err)
{
	mcc_soa    *g = &c->soa;
	restore_run r = {.c = c, .rows = rows, .n_tpl = n_tpl};
	uint32_t	bad;

	if (n_tpl > g->cap_tpl || n_tpl > c->cap_entries || n_cyl > g->cap_cyl || n_side > c->cap_side)
		return mcc_error_set(err, MCC_ERR_VALUE, "restored sizes exceed the cache's room");
	r.n_blocks = (uint32_t) (((uint64_t) n_tpl + RESTORE_BLOCK - 1) / RESTORE_BLOCK);
	r.blocks = malloc(sizeof(restore_block) * (r.n_blocks ? r.n_blocks : 1));
	if (r.blocks == NULL)
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
	if ((uint64_t) threads > r.n_blocks)
		threads = (int) r.n_blocks;
	/* every row's length known from its counts: the sums, then the totals checked */
	if ((bad = restore_pass(&r, 1, threads)) != ENG_NONE)
	{
		free(r.blocks);
		return mcc_error_set(err, MCC_ERR_VALUE, "restored entry %u overruns the cylinders or sides", bad);
	}
	if (!restore_starts(&r, n_cyl, n_side))
	{
		free(r.blocks);
		return mcc_error_set(err, MCC_ERR_VALUE, "restored counts disagree with the header's "
							 "(%llu cylinders, %llu side bytes)",
							 (unsigned long long) n_cyl, (unsigned long long) n_side);
	}
	/* so every side lies inside the sides (each at least a header long): fill the rows */
	bad = restore_pass(&r, 2, threads);
	free(r.blocks);
	if (bad != ENG_NONE)
		return mcc_error_set(err, MCC_ERR_VALUE, "restored entry %u has a bad side", bad);
	g->first[n_tpl] = n_cyl;
	g->n_tpl = n_tpl;
	g->n_cyl = n_cyl;
	c->n_side = n_side;
	c->n_purged = n_tpl;
	c->n_unsettled = 0;
	c->version++;
	if (!eng_cache_reindex(c, c->n_slots, threads))
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
	eng_entry_set_xids(e, insert_xid, delete_xid, flags);
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
	e->tid = tid;
	e->xmin = xmin;
	eng_entry_set_xids(e, insert_xid, delete_xid, ENG_E_LOAD_INS | ENG_E_LOAD_DEL);
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
