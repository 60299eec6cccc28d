/*
 * gallery_scan.c: a gallery's rows read straight from its heap tables
 * (src/identify/gallery_scan.h).
 *
 * What the query `SELECT key::bigint, template FROM gallery WHERE template IS
 * NOT NULL` through SPI costs per row, and this reader does not: the
 * executor's per-row calls, a copy of every tuple into SPI's tuple table,
 * and memory allocated per batch and given back to the system (its pages
 * are faulted in again for the next batch). Here the heap's pages are read
 * with the statement's snapshot (the one SPI's read-only cursor uses), the
 * two columns read from each visible tuple in the pinned buffer, and a
 * template stored inline without compression is used where it lies. One
 * stored out of line (the type's STORAGE is external: values over about
 * 2 kB) is assembled from the TOAST table's chunks (src/template/toast_stream.h)
 * into a buffer the stream reuses, and scored as it is delivered.
 *
 * The rows are handed over a page (or at most 64 rows) at a time, each
 * template asked into the CPU's caches two rows before it is scored and the
 * next heap page a few lines per row, so that reading the gallery's bytes
 * from memory overlaps the scoring instead of stalling it: the gallery is
 * far larger than the caches, and the scan is bound by memory once the
 * executor is gone (docs/benchmarks.md, "Backend scan"). A page stays
 * pinned until its rows are handed over.
 *
 * The pages are read as the executor's sequential scan reads them in page
 * mode (heapgetpage): the relation's predicate lock in serializable
 * transactions, each page pruned if it can be, its tuples' visibility
 * checked under a share lock (skipped on an all-visible page, as there) with
 * each one's serializable conflict check, then the visible tuples read under
 * the pin alone; the same buffer ring strategy for a relation larger than a
 * quarter of shared buffers, and the same statistics (a sequential scan, its
 * tuples). What differs is how a page is pinned: through the buffer that held
 * it on this backend's last scan when it still does (src/template/block_map.h),
 * without the buffer mapping's hash lookup, which stalled on memory for every
 * page (a tenth of the backend's time). The map also says where the next page
 * lies, so that its lines are asked into the CPU's caches while the rows of
 * the page before are scored, without pinning it. (Synchronized scans are
 * not joined: the rows' order does not matter here.)
 */
#include "mcc_pg.h"
#include "block_map.h"
#include "gallery_scan.h"
#include "service.h"
#include "toast_stream.h"

#include "access/detoast.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/tableam.h"
#include "catalog/pg_inherits.h"
#include "storage/bufmgr.h"
#include "miscadmin.h"
#include "optimizer/plancat.h"
#include "pgstat.h"
#include "storage/predicate.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"

/* out-of-line templates queued before the TOAST table is read for them */
#define STREAM_BATCH		512
/* rows gathered before they are handed over, their templates prefetched */
#define ROW_BATCH			64
/* how many rows ahead of the one handed over its template is prefetched */
#define PREFETCH_ROWS		2
/* lines of the heap page ahead asked into the caches per row handed over */
#define AHEAD_LINES_PER_ROW	32

/* A row waiting to be handed over; its template stays where it lies meanwhile. */
typedef struct pending_row
{
	int64		key;
	bool		key_null;
	const struct varlena *tpl;
} pending_row;

/* One heap table of the gallery. */
typedef struct heap_part
{
	Oid			relid;
	AttrNumber	key_att;
	AttrNumber	tpl_att;
} heap_part;

struct mcc_heap_rows
{
	Snapshot	snapshot;
	heap_part  *parts;
	int			n_parts;
	int			next_part;		/* the next one to open */
	double		reltuples;
	/* the table being read */
	Relation	rel;
	TupleDesc	desc;
	AttrNumber	key_att;
	AttrNumber	tpl_att;
	int16		key_len;		/* the key's attlen: an int2, int4 or int8 (or a domain over one) */
	BlockNumber nblocks;		/* its blocks when the scan began */
	BlockNumber next_block;		/* the next one to read */
	BufferAccessStrategy strategy;
	mcc_block_map *map;			/* where its blocks lay on the last scan */
	Buffer		ahead;			/* the next block, pinned ahead when the map had no guess */
	const char *pf_next;		/* lines of the next page not yet asked into the caches */
	const char *pf_end;
	/* templates stored out of line: queued, read from the TOAST table's pages */
	mcc_toast_stream *stream;
	int64	   *queued_keys;	/* by cookie: the key (or QUEUED_NULL_KEY) */
	bool	   *queued_null;
	mcc_heap_row_fn fn;
	void	   *arg;
	/* those the stream hands back, and those compressed (reset after each batch) */
	MemoryContext toast_cxt;
	/* rows gathered (those stored inline lie in the page being read, pinned) */
	pending_row *pending;
	int			n_pending;
};

/*
 * Can the reader stand in for the SELECT? Fills r->parts with the heap
 * tables to read; NULL if it can, else why not.
 */
static const char *
collect_parts(mcc_heap_rows *r, const mcc_gallery *g)
{
	List	   *relids;
	ListCell   *lc;

	if (g->relkind != RELKIND_RELATION && g->relkind != RELKIND_PARTITIONED_TABLE &&
		g->relkind != RELKIND_MATVIEW)
		return "the gallery is a view";
	/* the SELECT applies the policies of the relation it names */
	if (check_enable_rls(g->relid, InvalidOid, false) == RLS_ENABLED)
		return "row-level security is active for the gallery";
	relids = mcc_gallery_relations(g->relid);
	r->parts = palloc0(Max(list_length(relids), 1) * sizeof(heap_part));
	foreach(lc, relids)
	{
		Relation	rel = relation_open(lfirst_oid(lc), NoLock);
		char		kind = rel->rd_rel->relkind;
		heap_part  *p = &r->parts[r->n_parts];
		bool		heap = rel->rd_tableam == GetHeapamTableAmRoutine();
		bool		scannable = RelationIsScannable(rel);

		if (kind == RELKIND_RELATION || kind == RELKIND_MATVIEW)
		{
			BlockNumber pages;
			double		tuples;
			double		allvisfrac;

			/* the planner's estimate of a scan of it */
			estimate_rel_size(rel, NULL, &pages, &tuples, &allvisfrac);
			r->reltuples += tuples;
		}
		relation_close(rel, NoLock);
		if (kind == RELKIND_PARTITIONED_TABLE)
			continue;			/* no storage: its partitions follow */
		if ((kind != RELKIND_RELATION && kind != RELKIND_MATVIEW) || !heap)
			return "a relation of the gallery is not a heap table";
		if (!scannable)
			return "the materialized view is not populated";
		p->relid = lfirst_oid(lc);
		p->key_att = mcc_column_attnum(p->relid, g->key_name);
		p->tpl_att = mcc_column_attnum(p->relid, g->tpl_name);
		if (p->key_att == InvalidAttrNumber || p->tpl_att == InvalidAttrNumber)
			return "a relation of the gallery lacks its columns";
		r->n_parts++;
	}
	return NULL;
}

mcc_heap_rows *
mcc_heap_rows_begin(const mcc_gallery *g, Snapshot snapshot, const char **why)
{
	mcc_heap_rows *r = palloc0(sizeof(mcc_heap_rows));

	*why = collect_parts(r, g);
	if (*why != NULL)
	{
		if (r->parts != NULL)
			pfree(r->parts);
		pfree(r);
		return NULL;
	}
	r->snapshot = snapshot;
	r->toast_cxt = AllocSetContextCreate(CurrentMemoryContext, "mcc gallery TOAST",
										 ALLOCSET_DEFAULT_SIZES);
	return r;
}

double
mcc_heap_rows_estimate(const mcc_heap_rows *r)
{
	return r->reltuples;
}

static void flush_stream(mcc_heap_rows *r);
static void hand_over(mcc_heap_rows *r);

/* Close the table being read, if any, after the rows it queued. */
static void
close_part(mcc_heap_rows *r)
{
	if (r->rel == NULL)
		return;
	if (r->stream != NULL)
	{
		uint64		streamed;
		uint64		handed_back;
		uint64		pages;

		flush_stream(r);
		mcc_toast_stream_counts(r->stream, &streamed, &handed_back, &pages);
		ereport(DEBUG2,
				(errmsg_internal("gallery scan of \"%s\": " UINT64_FORMAT " templates read from " UINT64_FORMAT " TOAST pages in order, " UINT64_FORMAT " fetched through the index",
								 RelationGetRelationName(r->rel), streamed, pages, handed_back)));
		mcc_toast_stream_end(r->stream);
		r->stream = NULL;
	}
	hand_over(r);
	r->pf_next = r->pf_end = NULL;
	if (BufferIsValid(r->ahead))
		ReleaseBuffer(r->ahead);
	r->ahead = InvalidBuffer;
	if (r->strategy != NULL)
		FreeAccessStrategy(r->strategy);
	r->strategy = NULL;
	relation_close(r->rel, NoLock);
	r->rel = NULL;
}

/* Open the next table; false if none is left. */
static bool
open_part(mcc_heap_rows *r)
{
	heap_part  *p;

	if (r->next_part >= r->n_parts)
		return false;
	p = &r->parts[r->next_part++];
	r->rel = relation_open(p->relid, NoLock);
	r->desc = RelationGetDescr(r->rel);
	r->key_att = p->key_att;
	r->tpl_att = p->tpl_att;
	r->key_len = TupleDescAttr(r->desc, p->key_att - 1)->attlen;
	/* as heap_beginscan and initscan do for a sequential scan */
	r->nblocks = RelationGetNumberOfBlocks(r->rel);
	r->next_block = 0;
	r->strategy = NULL;
	if (!RelationUsesLocalBuffers(r->rel) && r->nblocks > (BlockNumber) (NBuffers / 4))
		r->strategy = GetAccessStrategy(BAS_BULKREAD);
	PredicateLockRelation(r->rel, r->snapshot);
	pgstat_count_heap_scan(r->rel);
	r->map = mcc_block_map_get(r->rel, r->nblocks);
	r->ahead = InvalidBuffer;
	r->pf_next = r->pf_end = NULL;
	if (OidIsValid(r->rel->rd_rel->reltoastrelid))
		r->stream = mcc_toast_stream_begin(r->rel, r->snapshot);
	return true;
}

/* Ask the CPU to bring up to n more lines of the page ahead into its caches. */
static inline void
prefetch_ahead_lines(mcc_heap_rows *r, int n)
{
	for (; n > 0 && r->pf_next < r->pf_end; n--, r->pf_next += 64)
		__builtin_prefetch(r->pf_next);
}

/*
 * Before block blk is read: its lines that scoring the page before did not
 * ask for, then the page after it to be asked for a few lines per row
 * scored (hand_over), and the buffer header and line pointers of the one
 * after that, from where the map saw them last. Without a guess (the
 * session's first scan of the relation, or no map) the next page is pinned
 * ahead instead, which tells where it is (and the map remembers it). A page
 * holds a few templates of about 2 kB each, the scan reads every byte of
 * them and the hardware prefetcher stops at each 4 kB boundary; asked all
 * at once, most of a page's 128 lines are lost (perf on the dev VM put the
 * misses back on the tuples' first reads).
 */
static void
prefetch_pages_ahead(mcc_heap_rows *r, BlockNumber blk)
{
	const char *next = NULL;

	prefetch_ahead_lines(r, BLCKSZ / 64);
	if (blk + 1 < r->nblocks)
	{
		next = mcc_block_map_guess(r->map, blk + 1);
		if (next == NULL)
		{
			r->ahead = mcc_block_map_read(r->map, r->rel, blk + 1, r->strategy);
			next = (const char *) BufferGetPage(r->ahead);
		}
	}
	r->pf_next = next;
	r->pf_end = next != NULL ? next + BLCKSZ : NULL;
	if (blk + 2 < r->nblocks)
		mcc_block_map_prefetch(r->map, blk + 2);
}

/*
 * The template as contiguous bytes with a 4-byte header: in place when it is
 * stored so, else fetched (out of line, compressed, or a short header) into
 * the reader's TOAST memory.
 */
static const struct varlena *
template_bytes(mcc_heap_rows *r, Datum d)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(d);
	MemoryContext old;

	if (!VARATT_IS_EXTENDED(v))
		return v;
	old = MemoryContextSwitchTo(r->toast_cxt);
	v = detoast_attr(v);
	MemoryContextSwitchTo(old);
	return v;
}

/* Ask the CPU to bring a template's bytes into its caches. */
static inline void
prefetch_template(const struct varlena *tpl)
{
	const char *p = (const char *) tpl;
	const char *end = p + VARSIZE(tpl);

	for (; p < end; p += 64)
		__builtin_prefetch(p);
}

/*
 * Hand the gathered rows over, the template PREFETCH_ROWS rows ahead asked
 * into the CPU's caches while a row is scored: a template is about 2 kB
 * scattered in the shared buffers or the stream's memory, and scored as it
 * is first read it stalls the kernel on memory (in mccbench the in-place
 * scan gains about 15 % from the same prefetch). Then drop the pins and
 * what fetching the templates allocated.
 */
static void
hand_over(mcc_heap_rows *r)
{
	int			n = r->n_pending;

	for (int i = 0; i < Min(n, PREFETCH_ROWS); i++)
		prefetch_template(r->pending[i].tpl);
	for (int i = 0; i < n; i++)
	{
		const pending_row *row = &r->pending[i];

		if (i + PREFETCH_ROWS < n)
			prefetch_template(r->pending[i + PREFETCH_ROWS].tpl);
		prefetch_ahead_lines(r, AHEAD_LINES_PER_ROW);
		if (r->stream != NULL)
			mcc_toast_stream_prefetch(r->stream, AHEAD_LINES_PER_ROW);
		r->fn(r->arg, row->key, row->key_null, row->tpl);
	}
	r->n_pending = 0;
	MemoryContextReset(r->toast_cxt);
}

/*
 * Gather a row whose template lies in the page being read (pinned until the
 * rows are handed over) or in the reader's memory (valid until hand_over()).
 */
static void
gather_row(mcc_heap_rows *r, int64 key, bool key_null, const struct varlena *tpl)
{
	pending_row *row = &r->pending[r->n_pending++];

	row->key = key;
	row->key_null = key_null;
	row->tpl = tpl;
	if (r->n_pending == ROW_BATCH)
		hand_over(r);
}

/*
 * A value the stream delivers (or hands back) for a queued row, scored at
 * once: the stream reuses the value's buffer once this returns, and the
 * buffer it just filled is still in the CPU's caches (so it is not
 * prefetched, nor gathered with the rows of the page being read). The
 * stream's next pages, and the heap page ahead, are asked for meanwhile.
 */
static void
stream_row(void *arg, uint64 cookie, const struct varlena *value, const struct varlena *pointer)
{
	mcc_heap_rows *r = (mcc_heap_rows *) arg;

	if (value == NULL)
		value = template_bytes(r, PointerGetDatum(pointer));
	prefetch_ahead_lines(r, AHEAD_LINES_PER_ROW);
	mcc_toast_stream_prefetch(r->stream, AHEAD_LINES_PER_ROW);
	r->fn(r->arg, r->queued_keys[cookie], r->queued_null[cookie], value);
}

/*
 * Gather the queued rows, their templates read from the TOAST table and
 * handed over as they are delivered, then the rows gathered meanwhile.
 */
static void
flush_stream(mcc_heap_rows *r)
{
	if (mcc_toast_stream_pending(r->stream) > 0)
	{
		mcc_toast_stream_flush(r->stream, stream_row, r);
		hand_over(r);
	}
}

/*
 * The key as int64, by its length (mcc_key_int64 asks the type cache for the
 * base type on every call: a tenth of a microsecond per row).
 */
static inline int64
key_int64(Datum d, int16 len)
{
	switch (len)
	{
		case sizeof(int16):
			return DatumGetInt16(d);
		case sizeof(int32):
			return DatumGetInt32(d);
		default:
			return DatumGetInt64(d);
	}
}

/* A visible tuple: its row gathered, or queued for the TOAST stream. */
static void
read_tuple(mcc_heap_rows *r, HeapTuple tup)
{
	bool		tpl_null;
	bool		key_null;
	Datum		tpl = heap_getattr(tup, r->tpl_att, r->desc, &tpl_null);
	Datum		keyd;
	int64		key;

	pgstat_count_heap_getnext(r->rel);
	if (tpl_null)
		return;					/* WHERE template IS NOT NULL */
	keyd = heap_getattr(tup, r->key_att, r->desc, &key_null);
	key = key_null ? 0 : key_int64(keyd, r->key_len);
	if (r->stream != NULL && mcc_toast_stream_can(r->stream, tpl))
	{
		int			n = mcc_toast_stream_pending(r->stream);

		r->queued_keys[n] = key;
		r->queued_null[n] = key_null;
		mcc_toast_stream_want(r->stream, tpl, (uint64) n);
		if (n + 1 == STREAM_BATCH)
			flush_stream(r);
		return;
	}
	gather_row(r, key, key_null, template_bytes(r, tpl));
}

/*
 * Read block blk as heapgetpage reads a page in page mode (see the top of
 * the file), then its visible rows, handed over before its pin is dropped.
 */
static void
read_block(mcc_heap_rows *r, BlockNumber blk)
{
	OffsetNumber visible[MaxHeapTuplesPerPage];
	int			n_visible = 0;
	Buffer		buf;
	Page		page;
	OffsetNumber maxoff;
	bool		all_visible;
	HeapTupleData tup;
	Buffer		held = r->ahead;	/* blk, if it was pinned ahead */

	CHECK_FOR_INTERRUPTS();
	r->ahead = InvalidBuffer;
	prefetch_pages_ahead(r, blk);
	buf = BufferIsValid(held) ? held : mcc_block_map_read(r->map, r->rel, blk, r->strategy);
	heap_page_prune_opt(r->rel, buf);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	TestForOldSnapshot(r->snapshot, r->rel, page);
	all_visible = PageIsAllVisible(page) && !r->snapshot->takenDuringRecovery;
	maxoff = PageGetMaxOffsetNumber(page);
	for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off++)
	{
		bool		valid;

		if (!mcc_pg_page_tuple(page, blk, off, RelationGetRelid(r->rel), &tup))
			continue;
		valid = all_visible || HeapTupleSatisfiesVisibility(&tup, r->snapshot, buf);
		HeapCheckForSerializableConflictOut(valid, r->rel, &tup, buf, r->snapshot);
		if (valid)
			visible[n_visible++] = off;
	}
	LockBuffer(buf, BUFFER_LOCK_UNLOCK);
	/* the tuples found visible stay valid while the page is pinned */
	for (int i = 0; i < n_visible; i++)
		if (mcc_pg_page_tuple(page, blk, visible[i], RelationGetRelid(r->rel), &tup))
			read_tuple(r, &tup);
	hand_over(r);
	ReleaseBuffer(buf);
}

void
mcc_heap_rows_scan(mcc_heap_rows *r, mcc_heap_row_fn fn, void *arg)
{
	r->fn = fn;
	r->arg = arg;
	r->queued_keys = palloc(STREAM_BATCH * sizeof(int64));
	r->queued_null = palloc(STREAM_BATCH * sizeof(bool));
	r->pending = palloc(ROW_BATCH * sizeof(pending_row));
	while (r->rel != NULL || open_part(r))
	{
		if (r->next_block >= r->nblocks)
			close_part(r);
		else
			read_block(r, r->next_block++);
	}
}

void
mcc_heap_rows_end(mcc_heap_rows *r)
{
	close_part(r);
	MemoryContextDelete(r->toast_cxt);
	pfree(r->parts);
	pfree(r);
}
