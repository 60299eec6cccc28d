/*
 * eng_cache.h: one gallery's cache: the tuple versions it holds and their
 * cylinders, with the rules that keep it equal to the table.
 *
 * Entry k is template k of the mcc_soa (paper 000's layout, scanned by
 * mcc_soa_scan). An entry is a tuple version: (key, template hash, inserting
 * xid, deleting xid). Besides the cylinders the soa holds, each entry keeps
 * its template's "side": the header, minutiae and padding of the stored
 * blob and its cylinders' minutia indices, from which, with the soa's
 * cylinders, eng_cache_template rebuilds the stored template byte for byte
 * (refinement rescores cached entries: eng_rescore.h). Deleted entries stay searchable until SETTLE says the
 * deleter committed before the horizon; entries of aborted inserters are
 * purged. Purged entries are tombstones: the scan still computes their
 * scores but drops them, and compaction (a copy without them) removes them.
 *
 * A cache is changed only by the main thread and only while no thread reads
 * it (pins == 0); the threads see it read-only.
 *
 * SETTLE's rules are in eng_cache_settle.h, the visibility count of a
 * RESULT in eng_cache_count.h.
 */
#ifndef ENG_CACHE_H
#define ENG_CACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "mcc_error.h"
#include "mcc_soa.h"
#include "mcc_template.h"

#define ENG_NONE	UINT32_MAX

struct eng_gpu_mirror;
struct eng_prefault;

/* Memory charged by every cache against --memory-limit (0: no limit). */
typedef struct eng_budget
{
	uint64_t	limit;
	uint64_t	used;
} eng_budget;

/* Charge n bytes; false (nothing charged) if that would pass the limit. */
bool		eng_budget_charge(eng_budget *b, uint64_t n);

/* Charge n bytes even over the limit (an estimate corrected afterwards). */
void		eng_budget_force(eng_budget *b, uint64_t n);

void		eng_budget_release(eng_budget *b, uint64_t n);

/* entry flags */
#define ENG_E_PURGED		0x01	/* tombstone: not searchable */
#define ENG_E_INS_SETTLED	0x02	/* inserting xid known committed */
#define ENG_E_DEL_COMMITTED	0x04	/* deleting xid known committed */
#define ENG_E_LOAD_INS		0x08	/* from a load: may absorb one delta insert */
#define ENG_E_LOAD_DEL		0x10	/* delete from a load: may absorb one delta delete */

typedef struct eng_entry
{
	int64_t		key;
	uint64_t	hash;			/* mcc_template_hash of the template */
	uint64_t	insert_xid;
	uint64_t	delete_xid;		/* 0: not deleted */
	uint64_t	side;			/* offset of its side in eng_cache.side */
	uint32_t	next;			/* next entry of the same index slot */
	uint32_t	flags;
	/*
	 * The tuple version's identity in the heap, for cache snapshots
	 * (eng_snapfile.h): tid 0 when unknown (delta rows), else the
	 * gallery-wide tuple id of mcc_proto.h's load_ids; xmin the full
	 * inserting xid, or MCC_XMIN_FROZEN | the raw xmin of a tuple that was
	 * frozen when read, 0 when unknown. Never changed once set.
	 */
	uint64_t	tid;
	uint64_t	xmin;
} eng_entry;

typedef struct eng_cache
{
	const mcc_profile *profile;
	mcc_soa		soa;
	eng_entry  *entries;		/* cap_entries >= soa.n_tpl */
	uint32_t	cap_entries;
	uint32_t   *slots;			/* key index: first entry of each slot */
	uint32_t	n_slots;		/* a power of two */
	uint8_t    *side;			/* the entries' sides, in entry order */
	uint64_t	n_side;			/* bytes used */
	uint64_t	cap_side;		/* bytes allocated */
	uint32_t	n_purged;
	uint32_t	n_unsettled;	/* live entries with an unsettled xid */
	uint64_t	applied_gen;	/* every delta up to here is applied */
	uint64_t	reload_at;		/* 0, or a generation that needs a reload */
	uint64_t	bytes;			/* what this cache holds (charged if budget) */
	eng_budget *budget;			/* NULL: not charged */
	int			pins;			/* scans and compactions reading it */
	bool		orphaned;		/* its load dropped it while a job read it: that job frees it */

	/*
	 * Entries purged, in order (the GPU mirror sends them as tombstones);
	 * purge_log_lost: a purge could not be logged, the mirror must reload.
	 */
	uint32_t   *purge_log;
	uint32_t	n_purge_log;
	uint32_t	cap_purge_log;
	bool		purge_log_lost;
	struct eng_gpu_mirror *gpu; /* its copy on the GPU, or NULL (eng_gpu.h) */
	struct eng_prefault *prefault;	/* its memory faulted in ahead of a load's rows, or NULL */
	int			copy_threads;	/* threads a growth's copy may use (a load's: the engine's; 0: one) */
	/* rows reserved by eng_cache_bulk_reserve and not yet linked, past soa.n_tpl */
	uint32_t	bulk_rows;
	uint64_t	bulk_cyl;
	uint64_t	bulk_side;

	/*
	 * What eng_cache_count keeps between calls: version is bumped by every
	 * change of an entry; for count_version == version, count_base live
	 * entries are certain for every snapshot (settled inserts of xid 0,
	 * never deleted: what a load finds below the horizon) and count_rest
	 * lists the others, so that a count reads those only.
	 */
	uint64_t	version;
	pthread_mutex_t count_lock;
	uint64_t	count_version;
	uint64_t	count_base;
	uint32_t   *count_rest;
	uint32_t	n_count_rest;
} eng_cache;

/* Bytes of a cache with these capacities (cap_side: bytes of sides). */
uint64_t	eng_cache_bytes_for(const mcc_profile *p, uint32_t cap_tpl, uint32_t cap_cyl,
								uint64_t cap_side);

/*
 * An empty cache; charges its bytes to budget (if not NULL). Its room for
 * sides is estimated from the capacities (about 14 bytes per cylinder).
 */
eng_cache  *eng_cache_new(const mcc_profile *p, eng_budget *budget,
						  uint32_t cap_tpl, uint32_t cap_cyl, mcc_error *err);

/* The bytes eng_cache_new would charge for these capacities. */
uint64_t	eng_cache_new_bytes(const mcc_profile *p, uint32_t cap_tpl, uint32_t cap_cyl);

/*
 * Bytes of a template's side: its blob from byte 4 to its cylinder bits
 * (header, minutiae, padding), then one minutia index per cylinder.
 */
static inline uint64_t
eng_side_bytes(const mcc_template_view *t)
{
	return (uint64_t) (t->bits - t->base) - 4 + (uint64_t) t->n_cyl;
}

/*
 * Bulk restore (a cache snapshot read back, eng_snapfile.h), instead of an
 * append per template: eng_cache_restore_begin gives an empty cache, not
 * charged, with room for n_tpl templates, n_cyl cylinders and n_side bytes
 * of sides and a little more (rows read from the table after it); the
 * caller fills in place soa.ncyl, soa.id, soa.angle, soa.pc, the soa.bits
 * planes (plane w at soa.bits + w * soa.cap_cyl) and side, and hands the
 * rest of each row in an eng_restore_rows; then eng_cache_restore_end
 * derives the rest (first cylinders, cylinders' templates, sides' offsets,
 * the entries, the key index) on up to `threads` threads, the caller's
 * included, checking that the counts agree and that each side holds the
 * minutiae count given for its row. Every restored entry is then a
 * tombstone until eng_cache_revive makes it live.
 */
typedef struct eng_restore_rows
{
	const uint16_t *n_min;		/* per row: its template's minutiae (the side's length) */
	const uint64_t *hash;		/* per row: the entries' fields */
	const uint64_t *tid;
	const uint64_t *xmin;
} eng_restore_rows;

eng_cache  *eng_cache_restore_begin(const mcc_profile *p, uint32_t n_tpl, uint32_t n_cyl,
									uint64_t n_side, mcc_error *err);
mcc_status	eng_cache_restore_end(eng_cache *c, uint32_t n_tpl, uint32_t n_cyl,
								  uint64_t n_side, const eng_restore_rows *rows, int threads,
								  mcc_error *err);

/*
 * Make restored entry idx (a tombstone of eng_cache_restore_end) live with
 * these xids, flagged as eng_cache_append flags a load row.
 */
void		eng_cache_revive(eng_cache *c, uint32_t idx, uint64_t insert_xid,
							 uint64_t delete_xid, uint32_t flags);

/* Free a cache and release its charge. */
void		eng_cache_free(eng_cache *c);

/* Entries that the scan returns (not purged). */
static inline uint32_t
eng_cache_searchable(const eng_cache *c)
{
	return c->soa.n_tpl - c->n_purged;
}

/*
 * Make room for n_tpl more templates with n_cyl more cylinders and n_side
 * more bytes of sides (eng_side_bytes).
 */
mcc_status	eng_cache_reserve(eng_cache *c, uint64_t n_tpl, uint64_t n_cyl,
							  uint64_t n_side, mcc_error *err);

/*
 * The same, growing to exactly that room (eng_cache_reserve grows by half
 * again, for appends that keep coming): for a load that knows about how
 * many rows remain.
 */
mcc_status	eng_cache_reserve_exact(eng_cache *c, uint64_t n_tpl, uint64_t n_cyl,
									uint64_t n_side, mcc_error *err);

/*
 * Append a tuple version as is (a load row, or a delta insert that is new);
 * *idx receives its entry number. The template must have the cache's profile.
 */
mcc_status	eng_cache_append(eng_cache *c, int64_t key, uint64_t hash,
							 uint64_t insert_xid, uint64_t delete_xid,
							 uint32_t flags, const mcc_template_view *t,
							 uint32_t *idx, mcc_error *err);

/*
 * Appending many load rows at once (a LOAD_ROWS frame), in three steps:
 * eng_cache_bulk_reserve makes room for n templates t[] and gives each its
 * row, cylinders' and side's places in at[]; eng_cache_bulk_put writes one
 * row there as eng_cache_append would with ENG_E_LOAD_INS | ENG_E_LOAD_DEL,
 * tid and xmin, and may run in several threads at once for distinct rows
 * (nothing else may touch c meanwhile); eng_cache_bulk_end then links the n
 * rows into the key index and counts them (n_cyl, n_side: their sums).
 * Several frames may be reserved before the first is linked (a load's
 * pipeline: the next frame's rows written while the current one's are
 * linked): they are linked in the order they were reserved, and a cache
 * grows only while none is reserved (may_grow false, or frames reserved
 * and no room: MCC_ERR_LIMIT, nothing reserved).
 */
typedef struct eng_bulk_at
{
	uint32_t	row;			/* its entry */
	uint64_t	cyl;			/* first cylinder */
	uint64_t	side;			/* offset of its side */
} eng_bulk_at;

mcc_status	eng_cache_bulk_reserve(eng_cache *c, uint32_t n, const mcc_template_view *t,
								   eng_bulk_at *at, bool may_grow, mcc_error *err);
void		eng_cache_bulk_put(eng_cache *c, const eng_bulk_at *at, int64_t key,
							   uint64_t hash, uint64_t insert_xid, uint64_t delete_xid,
							   const mcc_template_view *t, uint64_t tid, uint64_t xmin);
void		eng_cache_bulk_end(eng_cache *c, uint32_t n, uint64_t n_cyl, uint64_t n_side);

/*
 * Fault in the memory that c's rows will fill once `rows` rows with `cyl`
 * cylinders and `side` bytes of sides are in (a load's estimate; at most
 * c's room) on `threads` threads of their own while a load adds rows
 * (eng_prefault.h): eng_cache_bulk_end lets them go further as rows come.
 * It runs until done or until eng_cache_prefault_stop, which growing or
 * freeing c calls first. Nothing happens (and nothing fails) if the threads
 * cannot start.
 */
void		eng_cache_prefault(eng_cache *c, int threads, uint64_t rows, uint64_t cyl,
							   uint64_t side);
void		eng_cache_prefault_stop(eng_cache *c);

/*
 * A delta's insert: absorbed by an entry a load already brought (same key,
 * hash and inserting xid), else appended. *added tells which.
 */
mcc_status	eng_cache_insert(eng_cache *c, int64_t key, uint64_t xid,
							 const mcc_template_view *t, bool *added,
							 mcc_error *err);

/*
 * A delta's delete of (key, hash) by xid: marks one version. Returns the
 * entry marked or absorbing it, or ENG_NONE if none matched.
 */
uint32_t	eng_cache_delete(eng_cache *c, int64_t key, uint64_t hash, uint64_t xid);

/* Bytes of entry idx's side (eng_side_bytes of its template). */
uint64_t	eng_cache_side_bytes(const eng_cache *c, uint32_t idx);

/* Bytes of entry idx's stored template. */
size_t		eng_cache_template_bytes(const eng_cache *c, uint32_t idx);

/*
 * Rebuild entry idx's stored template into buf (eng_cache_template_bytes of
 * room): the blob it was cached from, byte for byte after its 4-byte varlena
 * header (written as zeros), so that its hash is the entry's and every score
 * of it is the stored template's; *v gets a view of it. Reads c only: safe
 * in a thread while c is pinned.
 */
void		eng_cache_template(const eng_cache *c, uint32_t idx, uint8_t *buf,
							   mcc_template_view *v);

/*
 * What refinement geometry reads of entry idx's stored template, without
 * rebuilding it: its n_min minutiae records as the template stores them,
 * and its n_cyl cylinders' minutia indices, one byte each (pointers into
 * the cache, valid while the entry is).
 */
void		eng_cache_minutiae(const eng_cache *c, uint32_t idx, int *n_min,
							   const uint8_t **minutiae, int *n_cyl, const uint8_t **cyl_minutia);

/* The most bytes a template of any profile takes (a buffer for eng_cache_template). */
size_t		eng_template_max_bytes(void);

/*
 * Is entry e certain for snapshot xmin xmin: visible to every snapshot
 * whose xmin it is (inserted by an xid known committed below it, not
 * deleted)? The visibility count and refining searches use it.
 */
static inline bool
eng_entry_certain(const eng_entry *e, uint64_t xmin)
{
	return (e->flags & ENG_E_INS_SETTLED) && e->insert_xid < xmin && e->delete_xid == 0;
}

/* Does entry e count as unsettled (live, with an xid still to check)? */
static inline bool
eng_entry_unsettled(const eng_entry *e)
{
	return !(e->flags & ENG_E_PURGED) &&
		(!(e->flags & ENG_E_INS_SETTLED) || e->delete_xid != 0);
}

/* Make entry idx a tombstone (and log it for the GPU mirror). */
void		eng_cache_purge(eng_cache *c, uint32_t idx);

/* First live entry with this key, or ENG_NONE; then eng_cache_next_key. */
uint32_t	eng_cache_find_key(const eng_cache *c, int64_t key);
uint32_t	eng_cache_next_key(const eng_cache *c, uint32_t idx);

/* true if tombstones are a large enough share to compact. */
bool		eng_cache_wants_compaction(const eng_cache *c);

/* Bytes of the compacted copy of c. */
uint64_t	eng_cache_compacted_bytes(const eng_cache *c);

/*
 * A copy of c without its tombstones (not charged: the caller charged
 * eng_cache_compacted_bytes beforehand). Reads c only: safe in a thread.
 */
eng_cache  *eng_cache_compacted(const eng_cache *c, mcc_error *err);

/*
 * Stop charging c (it is being dropped, but a pass may still read it for
 * a moment): its bytes leave the budget now, not when it is freed.
 */
void		eng_cache_uncharge(eng_cache *c);

/* Take over a charge made for this cache beforehand (adjusting to its size). */
void		eng_cache_adopt(eng_cache *c, eng_budget *budget, uint64_t charged);

#endif							/* ENG_CACHE_H */
