/*
 * gallery_scan.c: a gallery's rows read straight from its heap tables
 * (src/identify/gallery_scan.h).
 *
 * What the query `SELECT key::bigint, template FROM gallery WHERE template IS
 * NOT NULL` through SPI costs per row, and this reader does not: the
 * executor's per-row calls, a copy of every tuple into SPI's tuple table,
 * and memory allocated per batch and given back to the system (its pages
 * are faulted in again for the next batch). Here a heap scan with the
 * statement's snapshot (the one SPI's read-only cursor uses) returns
 * tuples in the pinned buffer, a slot deforms only the columns up to the two
 * it reads, and a template stored inline without compression is used where
 * it lies. One stored out of line (the type's STORAGE is external: values
 * over about 2 kB) is fetched from the TOAST table into memory that a
 * context recycles.
 *
 * The rows are handed over a page (or at most 64 rows) at a time, each
 * template asked into the CPU's caches two rows before it is scored and the
 * next heap page a few lines per row, so that reading the gallery's bytes
 * from memory overlaps the scoring instead of stalling it: the gallery is
 * far larger than the caches, and the scan is bound by memory once the
 * executor is gone (docs/benchmarks.md, "Backend scan"). Rows in heap
 * buffers keep their pages pinned until handed over.
 *
 * The scan is the executor's own sequential scan (table_beginscan): the
 * snapshot's visibility rules, the serializable predicate lock on each
 * relation, synchronized scans and the buffer ring strategy are the ones a
 * SELECT gets.
 */
#include "mcc_pg.h"
#include "gallery_scan.h"
#include "service.h"
#include "toast_stream.h"

#include "access/detoast.h"
#include "access/heapam.h"
#include "access/relation.h"
#include "access/tableam.h"
#include "catalog/pg_inherits.h"
#include "executor/tuptable.h"
#include "storage/bufmgr.h"
#include "miscadmin.h"
#include "optimizer/plancat.h"
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
	TableScanDesc scan;
	TupleTableSlot *slot;
	AttrNumber	key_att;
	AttrNumber	tpl_att;
	Oid			key_type;
	BlockNumber block;			/* the block the scan is on */
	Buffer		ahead;			/* the next block, pinned ahead of the scan */
	const char *pf_next;		/* its lines not yet asked into the caches */
	const char *pf_end;
	/* templates stored out of line: queued, read from the TOAST table's pages */
	mcc_toast_stream *stream;
	int64	   *queued_keys;	/* by cookie: the key (or QUEUED_NULL_KEY) */
	bool	   *queued_null;
	mcc_heap_row_fn fn;
	void	   *arg;
	/* those the stream hands back, and those compressed (reset after each batch) */
	MemoryContext toast_cxt;
	/* rows gathered, and the heap buffers those stored inline lie in (pinned) */
	pending_row *pending;
	int			n_pending;
	Buffer	   *pins;
	int			n_pins;
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
	if (r->scan == NULL)
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
	if (BufferIsValid(r->ahead))
		ReleaseBuffer(r->ahead);
	r->ahead = InvalidBuffer;
	r->pf_next = r->pf_end = NULL;
	ExecDropSingleTupleTableSlot(r->slot);
	table_endscan(r->scan);
	relation_close(r->rel, NoLock);
	r->slot = NULL;
	r->scan = NULL;
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
	r->scan = table_beginscan(r->rel, r->snapshot, 0, NULL);
	r->slot = table_slot_create(r->rel, NULL);
	r->key_att = p->key_att;
	r->tpl_att = p->tpl_att;
	r->key_type = TupleDescAttr(RelationGetDescr(r->rel), p->key_att - 1)->atttypid;
	r->block = InvalidBlockNumber;
	r->ahead = InvalidBuffer;
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

/* Ask the CPU to bring a whole page into its caches. */
static inline void
prefetch_buffer(Buffer buf)
{
	const char *page = (const char *) BufferGetPage(buf);

	for (int off = 0; off < BLCKSZ; off += 64)
		__builtin_prefetch(page + off);
}

/*
 * On the first tuple of a page, pin the page the scan reads next and ask the
 * CPU to bring it into its caches, so that its first touch (the visibility
 * checks of every tuple on it, as the scan enters it) does not stall on
 * memory: a page holds a few templates of about 2 kB each, the scan reads
 * every byte of them, and the hardware prefetcher stops at each 4 kB
 * boundary. Its 128 lines are asked for a few at a time while the rows of
 * the page before are scored (hand_over), which this hands over now: asked
 * all at once, most of them are lost (perf on the dev VM put the misses
 * back on the tuples' first reads). The pin (with the scan's buffer
 * strategy) is dropped once the scan has pinned that page itself.
 */
static inline void
prefetch_next_page(mcc_heap_rows *r)
{
	HeapScanDesc h = (HeapScanDesc) r->scan;
	BlockNumber next;

	if (h->rs_cblock == r->block || !BufferIsValid(h->rs_cbuf))
		return;
	r->block = h->rs_cblock;
	prefetch_ahead_lines(r, BLCKSZ / 64);	/* what scoring left (a page with no rows to score) */
	if (BufferIsValid(r->ahead))
	{
		ReleaseBuffer(r->ahead);
		r->ahead = InvalidBuffer;
	}
	else
		prefetch_buffer(h->rs_cbuf);	/* the first page, or a jump */
	next = h->rs_cblock + 1 == h->rs_nblocks ? 0 : h->rs_cblock + 1;
	if (next != h->rs_startblock && h->rs_nblocks > 1)
	{
		r->ahead = ReadBufferExtended(r->rel, MAIN_FORKNUM, next, RBM_NORMAL, h->rs_strategy);
		r->pf_next = (const char *) BufferGetPage(r->ahead);
		r->pf_end = r->pf_next + BLCKSZ;
	}
	hand_over(r);				/* the rows of the pages before */
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
	for (int i = 0; i < r->n_pins; i++)
		ReleaseBuffer(r->pins[i]);
	r->n_pins = 0;
	MemoryContextReset(r->toast_cxt);
}

/*
 * Gather a row whose template lies in heap buffer buf (pinned until the
 * row is handed over), or in the reader's or the stream's memory
 * (InvalidBuffer), both valid until hand_over().
 */
static void
gather_row(mcc_heap_rows *r, int64 key, bool key_null, const struct varlena *tpl, Buffer buf)
{
	pending_row *row = &r->pending[r->n_pending++];

	row->key = key;
	row->key_null = key_null;
	row->tpl = tpl;
	if (BufferIsValid(buf) && (r->n_pins == 0 || r->pins[r->n_pins - 1] != buf))
	{
		IncrBufferRefCount(buf);
		r->pins[r->n_pins++] = buf;
	}
	if (r->n_pending == ROW_BATCH)
		hand_over(r);
}

/* A value the stream delivers (or hands back) for a queued row. */
static void
stream_row(void *arg, uint64 cookie, const struct varlena *value, const struct varlena *pointer)
{
	mcc_heap_rows *r = (mcc_heap_rows *) arg;

	if (value == NULL)
		value = template_bytes(r, PointerGetDatum(pointer));
	gather_row(r, r->queued_keys[cookie], r->queued_null[cookie], value, InvalidBuffer);
	/* scored now, while the stream's next pages arrive (hand_over asks for them) */
	hand_over(r);
}

/*
 * Gather the queued rows, their templates read from the TOAST table, and
 * hand them over before the stream's next flush reuses its memory.
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

void
mcc_heap_rows_scan(mcc_heap_rows *r, mcc_heap_row_fn fn, void *arg)
{
	r->fn = fn;
	r->arg = arg;
	r->queued_keys = palloc(STREAM_BATCH * sizeof(int64));
	r->queued_null = palloc(STREAM_BATCH * sizeof(bool));
	r->pending = palloc(ROW_BATCH * sizeof(pending_row));
	r->pins = palloc(ROW_BATCH * sizeof(Buffer));
	while (r->scan != NULL || open_part(r))
	{
		TupleTableSlot *s = r->slot;
		Datum		tpl;
		int64		key;
		bool		key_null;

		CHECK_FOR_INTERRUPTS();
		if (!table_scan_getnextslot(r->scan, ForwardScanDirection, s))
		{
			close_part(r);
			continue;
		}
		prefetch_next_page(r);
		slot_getsomeattrs(s, Max(r->key_att, r->tpl_att));
		if (s->tts_isnull[r->tpl_att - 1])
			continue;			/* WHERE template IS NOT NULL */
		key_null = s->tts_isnull[r->key_att - 1];
		key = key_null ? 0 : mcc_key_int64(s->tts_values[r->key_att - 1], r->key_type);
		tpl = s->tts_values[r->tpl_att - 1];
		if (r->stream != NULL && mcc_toast_stream_can(r->stream, tpl))
		{
			int			n = mcc_toast_stream_pending(r->stream);

			r->queued_keys[n] = key;
			r->queued_null[n] = key_null;
			mcc_toast_stream_want(r->stream, tpl, (uint64) n);
			if (n + 1 == STREAM_BATCH)
				flush_stream(r);
			continue;
		}
		gather_row(r, key, key_null, template_bytes(r, tpl),
				   TTS_IS_BUFFERTUPLE(s) ? ((BufferHeapTupleTableSlot *) s)->buffer : InvalidBuffer);
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
