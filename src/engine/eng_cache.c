/*
 * eng_cache.c: tuple versions of one gallery, their key index, memory
 * accounting, delta rules and compaction. Settling is in
 * eng_cache_settle.c, the visibility count in eng_cache_count.c.
 */
#include "eng_cache.h"
#include "eng_cache_int.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "eng_bigmem.h"
#include "eng_gpu.h"
#include "eng_soa.h"
#include "mcc_hash.h"
#include "mcc_job.h"
#include "mcc_proto.h"

#define MIN_CAP			16
#define SIDE_PER_TPL	24		/* room for sides a new cache estimates ... */
#define SIDE_PER_CYL	14		/* ... (a minutia record and index per cylinder) */

bool
eng_budget_charge(eng_budget *b, uint64_t n)
{
	if (b == NULL)
		return true;
	if (b->limit != 0 && (n > b->limit || b->used > b->limit - n))
		return false;
	b->used += n;
	return true;
}

void
eng_budget_force(eng_budget *b, uint64_t n)
{
	if (b != NULL)
		b->used += n;
}

void
eng_budget_release(eng_budget *b, uint64_t n)
{
	if (b == NULL)
		return;
	b->used = n > b->used ? 0 : b->used - n;
}

/* Smallest power of two >= n (at least MIN_CAP). */
static uint32_t
pow2_at_least(uint64_t n)
{
	uint64_t	p = MIN_CAP;

	while (p < n && p < (UINT64_C(1) << 31))
		p *= 2;
	return (uint32_t) p;
}


uint64_t
eng_cache_bytes_for(const mcc_profile *p, uint32_t cap_tpl, uint32_t cap_cyl,
					uint64_t cap_side)
{
	return sizeof(eng_cache) + eng_soa_bytes_for(p, cap_tpl, cap_cyl) +
		(uint64_t) cap_tpl * sizeof(eng_entry) +
		(uint64_t) pow2_at_least(cap_tpl) * sizeof(uint32_t) + cap_side;
}

/* Bytes a cache holds now, from its capacities. */
static uint64_t
cache_bytes(const eng_cache *c)
{
	return sizeof(eng_cache) + eng_soa_bytes(&c->soa) +
		(uint64_t) c->cap_entries * sizeof(eng_entry) +
		(uint64_t) c->n_slots * sizeof(uint32_t) + c->cap_side;
}

/* Fail with the memory-limit error, naming the sizes. */
static mcc_status
limit_error(const eng_budget *b, uint64_t need, mcc_error *err)
{
	mcc_error_set(err, MCC_ERR_MEMORY, "gallery cache memory limit exceeded");
	mcc_error_detail(err, "The cache needs %llu more bytes; the limit is %llu bytes, "
					 "of which %llu are in use.",
					 (unsigned long long) need, (unsigned long long) b->limit,
					 (unsigned long long) b->used);
	return MCC_ERR_MEMORY;
}

/* An empty cache with these capacities (see eng_cache_new). */
eng_cache *
eng_cache_alloc(const mcc_profile *p, eng_budget *budget, uint32_t cap_tpl,
				uint32_t cap_cyl, uint64_t cap_side, mcc_error *err)
{
	eng_cache  *c;
	uint64_t	bytes;

	if (cap_tpl < MIN_CAP)
		cap_tpl = MIN_CAP;
	if (cap_cyl < MIN_CAP)
		cap_cyl = MIN_CAP;
	if (cap_side < MIN_CAP)
		cap_side = MIN_CAP;
	if (cap_side > SIZE_MAX / 2)
	{
		mcc_error_set(err, MCC_ERR_LIMIT, "gallery cache too large");
		return NULL;
	}
	bytes = eng_cache_bytes_for(p, cap_tpl, cap_cyl, cap_side);
	if (!eng_budget_charge(budget, bytes))
	{
		limit_error(budget, bytes, err);
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		goto oom;
	c->profile = p;
	if (mcc_soa_init(&c->soa, p, cap_tpl, cap_cyl, err) != MCC_OK)
	{
		free(c);
		eng_budget_release(budget, bytes);
		return NULL;
	}
	c->cap_entries = cap_tpl;
	c->entries = malloc((size_t) cap_tpl * sizeof(eng_entry));
	c->n_slots = pow2_at_least(cap_tpl);
	c->slots = malloc((size_t) c->n_slots * sizeof(uint32_t));
	c->cap_side = cap_side;
	c->side = malloc((size_t) cap_side);
	if (c->entries == NULL || c->slots == NULL || c->side == NULL)
	{
		mcc_soa_free(&c->soa);
		free(c->entries);
		free(c->slots);
		free(c->side);
		free(c);
		goto oom;
	}
	eng_soa_advise(&c->soa);
	eng_advise_huge(c->entries, (size_t) cap_tpl * sizeof(eng_entry));
	eng_advise_huge(c->side, (size_t) cap_side);
	memset(c->slots, 0xff, (size_t) c->n_slots * sizeof(uint32_t));
	c->budget = budget;
	c->bytes = bytes;
	c->version = 1;
	pthread_mutex_init(&c->count_lock, NULL);
	return c;

oom:
	eng_budget_release(budget, bytes);
	mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
	return NULL;
}

/* The room for sides that a new cache of these capacities estimates. */
static uint64_t
side_estimate(uint32_t cap_tpl, uint32_t cap_cyl)
{
	return (uint64_t) SIDE_PER_TPL * cap_tpl + (uint64_t) SIDE_PER_CYL * cap_cyl;
}

eng_cache *
eng_cache_new(const mcc_profile *p, eng_budget *budget, uint32_t cap_tpl,
			  uint32_t cap_cyl, mcc_error *err)
{
	return eng_cache_alloc(p, budget, cap_tpl, cap_cyl, side_estimate(cap_tpl, cap_cyl), err);
}

uint64_t
eng_cache_new_bytes(const mcc_profile *p, uint32_t cap_tpl, uint32_t cap_cyl)
{
	uint64_t	side;

	/* eng_cache_alloc's clamps, so that the figure is what it charges */
	if (cap_tpl < MIN_CAP)
		cap_tpl = MIN_CAP;
	if (cap_cyl < MIN_CAP)
		cap_cyl = MIN_CAP;
	side = side_estimate(cap_tpl, cap_cyl);
	return eng_cache_bytes_for(p, cap_tpl, cap_cyl, side < MIN_CAP ? MIN_CAP : side);
}

/* The host memory of a cache nothing refers to any more. */
static void
free_host(void *arg)
{
	eng_cache  *c = arg;

	mcc_soa_free(&c->soa);
	free(c->entries);
	free(c->slots);
	free(c->side);
	free(c->purge_log);
	free(c->count_rest);
	pthread_mutex_destroy(&c->count_lock);
	free(c);
}

void
eng_cache_free(eng_cache *c)
{
	if (c == NULL)
		return;
	eng_cache_prefault_stop(c);
	eng_budget_release(c->budget, c->bytes);
	eng_gpu_mirror_free(c->gpu);
	/*
	 * A large cache's pages go back to the kernel on a thread of their own
	 * (seconds at 100 M rows, which every client waited for on the main
	 * thread); the budget has them back at once, the system soon after
	 */
	if (!eng_free_detached(free_host, c, c->bytes))
		free_host(c);
}

/* Rebuild the key index with n slots (a power of two). */
bool
eng_cache_reindex(eng_cache *c, uint32_t n, int threads)
{
	/* the same size: rebuilt in place (a restore's, whose slots are faulted in already) */
	uint32_t   *s = n == c->n_slots ? c->slots : malloc((size_t) n * sizeof(uint32_t));

	if (s == NULL)
		return false;
	if (s != c->slots)
		free(c->slots);
	c->slots = s;
	c->n_slots = n;
	/* soa.id[i] is entry i's key (every path that writes one writes both) */
	eng_index_build((const uint64_t *) c->soa.id, c->soa.n_tpl, s, n, &c->entries[0].next,
					sizeof(eng_entry), threads);
	return true;
}

/* Correct a charge of `charged` bytes to what the cache holds now. */
static void
settle_charge(eng_cache *c, uint64_t charged)
{
	uint64_t	actual = cache_bytes(c);

	if (actual > charged)
		eng_budget_force(c->budget, actual - charged);
	else
		eng_budget_release(c->budget, charged - actual);
	c->bytes = actual;
}

/* Half again as much as cap, or need if that is more. */
static uint64_t
grown(uint64_t cap, uint64_t need)
{
	if (need <= cap)
		return cap;
	return need > cap + cap / 2 ? need : cap + cap / 2;
}

/*
 * Grow capacities to hold need_t templates, need_c cylinders, need_s bytes
 * of sides, and the index.
 */
static mcc_status
grow(eng_cache *c, uint64_t need_t, uint64_t need_c, uint64_t need_s, bool exact,
	 mcc_error *err)
{
	uint64_t	cap_t = c->soa.cap_tpl;
	uint64_t	cap_c = c->soa.cap_cyl;
	uint64_t	want_t;
	uint64_t	want_c;
	uint64_t	want_s;
	uint64_t	old = c->bytes;
	uint64_t	now;
	eng_entry  *e;

	if (need_t > UINT32_MAX / 2 || need_c > UINT32_MAX - 1 || need_s > SIZE_MAX / 4)
		return mcc_error_set(err, MCC_ERR_LIMIT, "gallery cache too large");
	/* the arrays move: nothing may fault them in meanwhile */
	eng_cache_prefault_stop(c);
	/* half again as much, else exactly what is needed if that is all that fits */
	want_t = exact ? (need_t > cap_t ? need_t : cap_t) : grown(cap_t, need_t);
	want_c = exact ? (need_c > cap_c ? need_c : cap_c) : grown(cap_c, need_c);
	want_s = exact ? (need_s > c->cap_side ? need_s : c->cap_side) : grown(c->cap_side, need_s);
	if (want_t > UINT32_MAX / 2)
		want_t = UINT32_MAX / 2;
	if (want_c > UINT32_MAX - 1)
		want_c = UINT32_MAX - 1;
	now = eng_cache_bytes_for(c->profile, (uint32_t) want_t, (uint32_t) want_c, want_s);
	if (now > old && !eng_budget_charge(c->budget, now - old))
	{
		want_t = need_t > cap_t ? need_t : cap_t;
		want_c = need_c > cap_c ? need_c : cap_c;
		want_s = need_s > c->cap_side ? need_s : c->cap_side;
		now = eng_cache_bytes_for(c->profile, (uint32_t) want_t, (uint32_t) want_c, want_s);
		if (now > old && !eng_budget_charge(c->budget, now - old))
			return limit_error(c->budget, now - old, err);
	}
	/* max(old, now) is charged; settle_charge corrects it to what is held */
	if (now < old)
		now = old;
	if (want_s > c->cap_side)
	{
		uint8_t    *side = realloc(c->side, (size_t) want_s);

		if (side == NULL)
			goto oom;
		c->side = side;
		c->cap_side = want_s;
	}
	if (want_t > c->cap_entries)
	{
		e = realloc(c->entries, (size_t) want_t * sizeof(eng_entry));
		if (e == NULL)
			goto oom;
		c->entries = e;
		c->cap_entries = (uint32_t) want_t;
	}
	if ((want_t > cap_t || want_c > cap_c) &&
		eng_soa_regrow(&c->soa, (uint32_t) want_t, (uint32_t) want_c, c->copy_threads, err) != MCC_OK)
		goto oom;
	if (pow2_at_least(c->cap_entries) > c->n_slots &&
		!eng_cache_reindex(c, pow2_at_least(c->cap_entries), c->copy_threads))
		goto oom;
	settle_charge(c, now);
	return MCC_OK;

oom:
	settle_charge(c, now);
	return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
}

/* Room for n_tpl, n_cyl, n_side more: as it is, or grown (exact: to just that). */
static mcc_status
reserve(eng_cache *c, uint64_t n_tpl, uint64_t n_cyl, uint64_t n_side, bool exact,
		mcc_error *err)
{
	uint64_t	need_t = (uint64_t) c->soa.n_tpl + n_tpl;
	uint64_t	need_c = (uint64_t) c->soa.n_cyl + n_cyl;
	uint64_t	need_s = c->n_side + n_side;

	if (need_t <= c->soa.cap_tpl && need_c <= c->soa.cap_cyl &&
		need_t <= c->cap_entries && need_s <= c->cap_side)
		return MCC_OK;
	return grow(c, need_t, need_c, need_s, exact, err);
}

mcc_status
eng_cache_reserve(eng_cache *c, uint64_t n_tpl, uint64_t n_cyl, uint64_t n_side,
				  mcc_error *err)
{
	return reserve(c, n_tpl, n_cyl, n_side, false, err);
}

mcc_status
eng_cache_reserve_exact(eng_cache *c, uint64_t n_tpl, uint64_t n_cyl, uint64_t n_side,
						mcc_error *err)
{
	return reserve(c, n_tpl, n_cyl, n_side, true, err);
}

/* Write t's side at offset off of the cache's sides (room reserved). */
void
eng_cache_side_write(eng_cache *c, uint64_t off, const mcc_template_view *t)
{
	size_t		head = (size_t) (t->bits - t->base) - 4;
	uint8_t    *d = c->side + off;

	memcpy(d, t->base + 4, head);
	for (int k = 0; k < t->n_cyl; k++)
		d[head + k] = (uint8_t) mcc_template_cyl_minutia(t, k);
}

/* Append t's side to the cache (room reserved); returns its offset. */
static uint64_t
side_append(eng_cache *c, const mcc_template_view *t)
{
	uint64_t	off = c->n_side;

	eng_cache_side_write(c, off, t);
	c->n_side += eng_side_bytes(t);
	return off;
}

uint64_t
eng_cache_side_bytes(const eng_cache *c, uint32_t idx)
{
	return eng_side_bits_at(eng_side_n_min(c->side + c->entries[idx].side)) - 4 + c->soa.ncyl[idx];
}

size_t
eng_cache_template_bytes(const eng_cache *c, uint32_t idx)
{
	return mcc_template_size(c->profile, eng_side_n_min(c->side + c->entries[idx].side),
							 c->soa.ncyl[idx]);
}

void
eng_cache_template(const eng_cache *c, uint32_t idx, uint8_t *buf, mcc_template_view *v)
{
	const uint8_t *d = c->side + c->entries[idx].side;
	const mcc_soa *g = &c->soa;
	size_t		b0 = eng_side_bits_at(eng_side_n_min(d));
	uint32_t	nc = g->ncyl[idx];
	uint32_t	j0 = g->first[idx];
	int			words = g->words;
	uint8_t    *meta = buf + b0 + (size_t) nc * words * 8;
	mcc_error	err;

	memset(buf, 0, 4);
	memcpy(buf + 4, d, b0 - 4);
	for (uint32_t k = 0; k < nc; k++)
	{
		uint16_t	pc = g->pc[j0 + k];

		for (int w = 0; w < words; w++)
			memcpy(buf + b0 + ((size_t) k * words + w) * 8,
				   &g->bits[(size_t) w * g->cap_cyl + j0 + k], 8);
		memcpy(meta + (size_t) k * MCC_CYLMETA_RECSZ, &pc, 2);
		meta[(size_t) k * MCC_CYLMETA_RECSZ + 2] = g->angle[j0 + k];
		meta[(size_t) k * MCC_CYLMETA_RECSZ + 3] = d[b0 - 4 + k];
	}
	/* the parts were checked when the template entered the cache */
	(void) mcc_template_open_header(buf, b0 + (size_t) nc * words * 8 +
									(size_t) nc * MCC_CYLMETA_RECSZ, v, &err);
}

void
eng_cache_minutiae(const eng_cache *c, uint32_t idx, int *n_min, const uint8_t **minutiae,
				   int *n_cyl, const uint8_t **cyl_minutia)
{
	const uint8_t *d = c->side + c->entries[idx].side;

	/* the side is the template from its byte 4 up to the bits, then the indices */
	*n_min = eng_side_n_min(d);
	*minutiae = d + MCC_TEMPLATE_HDRSZ - 4;
	*n_cyl = (int) c->soa.ncyl[idx];
	*cyl_minutia = d + eng_side_bits_at(*n_min) - 4;
}

size_t
eng_template_max_bytes(void)
{
	size_t		max = 0;

	for (int id = 0; id < 256; id++)
	{
		const mcc_profile *p = mcc_profile_by_id(id);
		size_t		n;

		if (p == NULL)
			continue;
		n = mcc_template_size(p, MCC_MAX_MINUTIAE, MCC_MAX_CYL);
		if (n > max)
			max = n;
	}
	return max;
}

mcc_status
eng_cache_append(eng_cache *c, int64_t key, uint64_t hash, uint64_t insert_xid,
				 uint64_t delete_xid, uint32_t flags, const mcc_template_view *t,
				 uint32_t *idx, mcc_error *err)
{
	mcc_status	st;
	uint32_t	i;
	uint32_t	h;
	eng_entry  *e;

	if (t->profile != c->profile)
		return mcc_error_set(err, MCC_ERR_VALUE,
							 "template profile \"%s\" differs from the gallery's \"%s\"",
							 t->profile->name, c->profile->name);
	c->version++;
	st = eng_cache_reserve(c, 1, (uint64_t) t->n_cyl, eng_side_bytes(t), err);
	if (st != MCC_OK)
		return st;
	i = c->soa.n_tpl;
	st = mcc_soa_append(&c->soa, t, key, err);
	if (st != MCC_OK)
		return st;
	e = &c->entries[i];
	e->side = side_append(c, t);
	e->key = key;
	e->hash = hash;
	e->tid = 0;
	e->xmin = 0;
	eng_entry_set_xids(e, insert_xid, delete_xid, flags);
	h = eng_cache_key_slot(c, key);
	e->next = c->slots[h];
	c->slots[h] = i;
	if (eng_entry_unsettled(e))
		c->n_unsettled++;
	if (idx)
		*idx = i;
	return MCC_OK;
}

uint32_t
eng_cache_find_key(const eng_cache *c, int64_t key)
{
	uint32_t	i = c->slots[eng_cache_key_slot(c, key)];

	while (i != ENG_NONE &&
		   (c->entries[i].key != key || (c->entries[i].flags & ENG_E_PURGED)))
		i = c->entries[i].next;
	return i;
}

uint32_t
eng_cache_next_key(const eng_cache *c, uint32_t idx)
{
	int64_t		key = c->entries[idx].key;
	uint32_t	i = c->entries[idx].next;

	while (i != ENG_NONE &&
		   (c->entries[i].key != key || (c->entries[i].flags & ENG_E_PURGED)))
		i = c->entries[i].next;
	return i;
}

mcc_status
eng_cache_insert(eng_cache *c, int64_t key, uint64_t xid,
				 const mcc_template_view *t, bool *added, mcc_error *err)
{
	uint64_t	hash = mcc_template_hash(t->base, t->size);

	for (uint32_t i = eng_cache_find_key(c, key); i != ENG_NONE;
		 i = eng_cache_next_key(c, i))
	{
		eng_entry  *e = &c->entries[i];

		if ((e->flags & ENG_E_LOAD_INS) && e->hash == hash && e->insert_xid == xid)
		{
			/* the load saw this tuple version already */
			c->version++;
			e->flags &= ~ENG_E_LOAD_INS;
			*added = false;
			return MCC_OK;
		}
	}
	*added = true;
	return eng_cache_append(c, key, hash, xid, 0, 0, t, NULL, err);
}

/* Set or clear an entry's deleting xid, keeping the unsettled count. */
static void
set_delete(eng_cache *c, eng_entry *e, uint64_t xid)
{
	bool		before = eng_entry_unsettled(e);

	c->version++;
	e->delete_xid = xid;
	e->flags &= ~(ENG_E_DEL_COMMITTED | ENG_E_LOAD_DEL);
	c->n_unsettled += (int) eng_entry_unsettled(e) - (int) before;
}

/*
 * Versions with equal key and hash are interchangeable in every search
 * result, so any of them may take the delete; the order below only keeps
 * the count of live versions right in the cases a transaction can produce:
 * a delete the load already saw is absorbed; an update that keeps the
 * template deletes the older version, not its own new one; a version the
 * transaction inserted itself comes next; last a version whose earlier
 * deleter must have aborted (the row lock let this one delete it).
 */
uint32_t
eng_cache_delete(eng_cache *c, int64_t key, uint64_t hash, uint64_t xid)
{
	uint32_t	own = ENG_NONE;
	uint32_t	other = ENG_NONE;
	uint32_t	stale = ENG_NONE;

	for (uint32_t i = eng_cache_find_key(c, key); i != ENG_NONE;
		 i = eng_cache_next_key(c, i))
	{
		eng_entry  *e = &c->entries[i];

		if (e->hash != hash)
			continue;
		if (e->delete_xid == xid && (e->flags & ENG_E_LOAD_DEL))
		{
			c->version++;
			e->flags &= ~ENG_E_LOAD_DEL;
			return i;
		}
		if (e->delete_xid == 0)
		{
			if (e->insert_xid != xid)
				other = other == ENG_NONE ? i : other;
			else
				own = own == ENG_NONE ? i : own;
		}
		else if (e->delete_xid != xid && stale == ENG_NONE)
			stale = i;
	}
	if (other == ENG_NONE)
		other = own;
	if (other == ENG_NONE)
		other = stale;
	if (other != ENG_NONE)
		set_delete(c, &c->entries[other], xid);
	return other;
}

/* Remember a purge for the GPU mirror (at most one per entry: bounded). */
static void
log_purge(eng_cache *c, uint32_t idx)
{
	if (c->purge_log_lost)
		return;
	if (c->n_purge_log == c->cap_purge_log)
	{
		uint32_t	cap = c->cap_purge_log ? c->cap_purge_log * 2 : 64;
		uint32_t   *p = realloc(c->purge_log, (size_t) cap * sizeof(uint32_t));

		if (p == NULL)
		{
			c->purge_log_lost = true;
			return;
		}
		c->purge_log = p;
		c->cap_purge_log = cap;
	}
	c->purge_log[c->n_purge_log++] = idx;
}

void
eng_cache_purge(eng_cache *c, uint32_t idx)
{
	eng_entry  *e = &c->entries[idx];

	if (e->flags & ENG_E_PURGED)
		return;
	c->version++;
	if (eng_entry_unsettled(e))
		c->n_unsettled--;
	e->flags |= ENG_E_PURGED;
	c->n_purged++;
	log_purge(c, idx);
}


bool
eng_cache_wants_compaction(const eng_cache *c)
{
	return c->n_purged >= 64 && c->n_purged >= c->soa.n_tpl / 4;
}

/* Bytes of entry idx's side. */
static uint64_t
side_len(const eng_cache *c, uint32_t idx)
{
	const uint8_t *d = c->side + c->entries[idx].side;

	return eng_side_bits_at(eng_side_n_min(d)) - 4 + c->soa.ncyl[idx];
}

/* Templates, cylinders and bytes of sides of the live entries. */
static void
live_counts(const eng_cache *c, uint32_t *n_tpl, uint32_t *n_cyl, uint64_t *n_side)
{
	uint32_t	t = 0;
	uint32_t	y = 0;
	uint64_t	sb = 0;

	for (uint32_t i = 0; i < c->soa.n_tpl; i++)
		if (!(c->entries[i].flags & ENG_E_PURGED))
		{
			t++;
			y += c->soa.ncyl[i];
			sb += side_len(c, i);
		}
	*n_tpl = t;
	*n_cyl = y;
	*n_side = sb;
}

uint64_t
eng_cache_compacted_bytes(const eng_cache *c)
{
	uint32_t	t;
	uint32_t	y;
	uint64_t	sb;

	live_counts(c, &t, &y, &sb);
	return eng_cache_bytes_for(c->profile, t < MIN_CAP ? MIN_CAP : t,
							   y < MIN_CAP ? MIN_CAP : y, sb < MIN_CAP ? MIN_CAP : sb);
}

eng_cache *
eng_cache_compacted(const eng_cache *c, mcc_error *err)
{
	eng_cache  *n;
	uint32_t	t;
	uint32_t	y;
	uint64_t	sb;

	live_counts(c, &t, &y, &sb);
	n = eng_cache_alloc(c->profile, NULL, t, y, sb, err);
	if (n == NULL)
		return NULL;
	for (uint32_t i = 0; i < c->soa.n_tpl; i++)
	{
		const eng_entry *e = &c->entries[i];
		uint32_t	j = n->soa.n_tpl;
		uint64_t	len = side_len(c, i);
		uint32_t	h;

		if (e->flags & ENG_E_PURGED)
			continue;
		eng_soa_copy_template(&n->soa, &c->soa, i);
		n->entries[j] = *e;
		n->entries[j].side = n->n_side;
		memcpy(n->side + n->n_side, c->side + e->side, (size_t) len);
		n->n_side += len;
		h = eng_cache_key_slot(n, e->key);
		n->entries[j].next = n->slots[h];
		n->slots[h] = j;
	}
	n->n_unsettled = c->n_unsettled;
	n->applied_gen = c->applied_gen;
	n->reload_at = c->reload_at;
	return n;
}


void
eng_cache_uncharge(eng_cache *c)
{
	eng_budget_release(c->budget, c->bytes);
	c->budget = NULL;
}

void
eng_cache_adopt(eng_cache *c, eng_budget *budget, uint64_t charged)
{
	c->budget = budget;
	if (c->bytes > charged)
		eng_budget_force(budget, c->bytes - charged);
	else
		eng_budget_release(budget, charged - c->bytes);
}
