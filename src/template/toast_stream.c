/*
 * toast_stream.c: out-of-line values fetched by reading the TOAST table's
 * pages in order (src/template/toast_stream.h says why and when it is exact).
 *
 * A flush reads pages from the cursor forward while they hold chunks of
 * queued values, and stops after STREAM_MISSES pages in a row without one;
 * the cursor then goes back to the page before the last one that had any,
 * so that values later rows will want are not skipped. When a flush met no
 * queued value at all (a reader that starts in the middle of a table, or
 * values written elsewhere), the next one first places the cursor, with one
 * index search, on the page of its first queued value's first chunk.
 */
#include "mcc_pg.h"
#include "toast_stream.h"
#include "block_map.h"

#include "access/detoast.h"
#include "access/genam.h"
#include "access/heapam.h"
#include "access/heaptoast.h"
#include "access/relation.h"
#include "access/toast_internals.h"
#include "access/relscan.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#define STREAM_MISSES	8		/* pages without a queued chunk before giving up */
#define STREAM_AHEAD	4		/* pages pinned and prefetched ahead of the one read */
#define READ_PREFETCH_LINES 32	/* lines ahead asked for by each page read */
#define TOAST_PTR_SIZE	(VARHDRSZ_EXTERNAL + sizeof(varatt_external))

/* A queued value. */
typedef struct stream_value
{
	Oid			valueid;
	int32		extsize;		/* bytes of data */
	int32		nchunks;
	int32		got;			/* chunks copied */
	bool		bad;			/* a chunk out of place: hand it back */
	bool		done;			/* delivered */
	int			first_want;		/* head of its wants */
	char	   *buf;			/* VARHDRSZ + extsize, once the first chunk comes */
	char		pointer[TOAST_PTR_SIZE];	/* the original TOAST pointer */
} stream_value;

/* A cookie waiting for a value (several rows may share one value). */
typedef struct stream_want
{
	uint64		cookie;
	int			next;			/* next want of the same value, -1 */
} stream_want;

struct mcc_toast_stream
{
	Relation	toastrel;
	Relation	toastidx;
	Snapshot	snapshot;		/* chunks must be visible to it */
	Oid			toastrelid;
	BufferAccessStrategy strategy;
	BlockNumber nblocks;
	mcc_block_map *map;			/* where its blocks lay on this backend's last read */
	BlockNumber cursor;			/* InvalidBlockNumber: place it first */
	Buffer		ahead[STREAM_AHEAD];	/* blocks ahead_blk.., pinned before they are read */
	BlockNumber ahead_blk;
	int			n_ahead;
	BlockNumber pf_blk;			/* the page ahead whose lines are being asked for */
	const char *pf_next;		/* its lines not asked for yet */
	const char *pf_end;
	MemoryContext cxt;			/* the values' buffers, reset after each flush */
	stream_value *values;
	int			n_values;
	int			cap_values;
	stream_want *wants;
	int			n_wants;
	int			cap_wants;
	int		   *slots;			/* open addressing: value index + 1, 0 empty */
	int			n_slots;		/* a power of two, > 2 * cap_values */
	int			remaining;		/* values not delivered */
	uint64		streamed;
	uint64		handed_back;
	uint64		pages;
};

mcc_toast_stream *
mcc_toast_stream_begin(Relation heap, Snapshot snapshot)
{
	mcc_toast_stream *ts = palloc0(sizeof(mcc_toast_stream));

	Assert(IsMVCCSnapshot(snapshot));
	ts->snapshot = snapshot;
	Assert(OidIsValid(heap->rd_rel->reltoastrelid));
	ts->toastrelid = heap->rd_rel->reltoastrelid;
	ts->toastrel = relation_open(ts->toastrelid, AccessShareLock);
	ts->toastidx = index_open(toast_get_valid_index(ts->toastrelid, AccessShareLock),
							  AccessShareLock);
	ts->nblocks = RelationGetNumberOfBlocks(ts->toastrel);
	/* a large table goes through a ring of buffers, as a sequential scan would */
	if (ts->nblocks > (BlockNumber) (NBuffers / 4))
		ts->strategy = GetAccessStrategy(BAS_BULKREAD);
	ts->map = mcc_block_map_get(ts->toastrel, ts->nblocks);
	ts->cursor = InvalidBlockNumber;
	ts->pf_blk = InvalidBlockNumber;
	/*
	 * The values being assembled (a few at a time: each buffer is freed once
	 * its value is delivered) fit in the first block, which resets keep: no
	 * memory given back to the system and faulted in again at every flush.
	 */
	ts->cxt = AllocSetContextCreate(CurrentMemoryContext, "mcc TOAST stream",
									2 * 1024 * 1024, 2 * 1024 * 1024, 8 * 1024 * 1024);
	ts->cap_values = 64;
	ts->values = palloc(ts->cap_values * sizeof(stream_value));
	ts->cap_wants = 64;
	ts->wants = palloc(ts->cap_wants * sizeof(stream_want));
	ts->n_slots = 256;
	ts->slots = palloc0(ts->n_slots * sizeof(int));
	return ts;
}

bool
mcc_toast_stream_can(const mcc_toast_stream *ts, Datum d)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(d);
	varatt_external p;

	if (!VARATT_IS_EXTERNAL_ONDISK(v))
		return false;
	VARATT_EXTERNAL_GET_POINTER(p, v);
	return p.va_toastrelid == ts->toastrelid && !VARATT_EXTERNAL_IS_COMPRESSED(p) &&
		VARATT_EXTERNAL_GET_EXTSIZE(p) > 0;
}

/* Slot of valueid in the table (its index + 1 there, or the empty slot). */
static int
find_slot(const mcc_toast_stream *ts, Oid valueid)
{
	uint32		h = (uint32) valueid * 0x9e3779b1u;
	int			i = (int) (h & (ts->n_slots - 1));

	while (ts->slots[i] != 0 && ts->values[ts->slots[i] - 1].valueid != valueid)
		i = (i + 1) & (ts->n_slots - 1);
	return i;
}

/* Double the table and reinsert every value. */
static void
grow_slots(mcc_toast_stream *ts)
{
	pfree(ts->slots);
	ts->n_slots *= 2;
	ts->slots = palloc0(ts->n_slots * sizeof(int));
	for (int v = 0; v < ts->n_values; v++)
		ts->slots[find_slot(ts, ts->values[v].valueid)] = v + 1;
}

void
mcc_toast_stream_want(mcc_toast_stream *ts, Datum d, uint64 cookie)
{
	struct varlena *ptr = (struct varlena *) DatumGetPointer(d);
	varatt_external p;
	stream_value *v;
	stream_want *w;
	int			slot;

	VARATT_EXTERNAL_GET_POINTER(p, ptr);
	slot = find_slot(ts, p.va_valueid);
	if (ts->slots[slot] == 0)
	{
		if (ts->n_values == ts->cap_values)
		{
			ts->cap_values *= 2;
			ts->values = repalloc(ts->values, ts->cap_values * sizeof(stream_value));
		}
		if (2 * (ts->n_values + 1) > ts->n_slots)
		{
			grow_slots(ts);
			slot = find_slot(ts, p.va_valueid);
		}
		v = &ts->values[ts->n_values];
		memset(v, 0, sizeof(*v));
		v->valueid = p.va_valueid;
		v->extsize = VARATT_EXTERNAL_GET_EXTSIZE(p);
		v->nchunks = (v->extsize - 1) / (int32) TOAST_MAX_CHUNK_SIZE + 1;
		v->first_want = -1;
		memcpy(v->pointer, ptr, TOAST_PTR_SIZE);
		ts->slots[slot] = ++ts->n_values;
		ts->remaining++;
	}
	v = &ts->values[ts->slots[slot] - 1];
	if (ts->n_wants == ts->cap_wants)
	{
		ts->cap_wants *= 2;
		ts->wants = repalloc(ts->wants, ts->cap_wants * sizeof(stream_want));
	}
	w = &ts->wants[ts->n_wants];
	w->cookie = cookie;
	w->next = v->first_want;
	v->first_want = ts->n_wants++;
}

int
mcc_toast_stream_pending(const mcc_toast_stream *ts)
{
	return ts->n_wants;
}

/*
 * Copy one chunk into its value; true if the value is now complete. A chunk
 * out of place marks the value bad (handed back: the usual fetch says why).
 */
static bool
take_chunk(mcc_toast_stream *ts, stream_value *v, int32 seq, const char *data, int32 len)
{
	int32		expect;

	if (v->bad || v->done)
		return false;
	expect = seq < v->nchunks - 1 ? (int32) TOAST_MAX_CHUNK_SIZE :
		v->extsize - (v->nchunks - 1) * (int32) TOAST_MAX_CHUNK_SIZE;
	if (seq < 0 || seq >= v->nchunks || len != expect)
	{
		v->bad = true;
		return false;
	}
	if (v->buf == NULL)
	{
		v->buf = MemoryContextAlloc(ts->cxt, VARHDRSZ + v->extsize);
		SET_VARSIZE(v->buf, VARHDRSZ + v->extsize);
	}
	memcpy(v->buf + VARHDRSZ + (Size) seq * TOAST_MAX_CHUNK_SIZE, data, len);
	/* a chunk seen twice would mean a broken table: let the usual fetch see it */
	if (++v->got > v->nchunks)
		v->bad = true;
	return v->got == v->nchunks && !v->bad;
}

/* Ask the CPU to bring a whole page into its caches. */
static inline void
prefetch_buffer(Buffer buf)
{
	const char *page = (const char *) BufferGetPage(buf);

	for (int off = 0; off < BLCKSZ; off += 64)
		__builtin_prefetch(page + off);
}

/* Drop the pins taken ahead. */
static void
release_ahead(mcc_toast_stream *ts)
{
	for (int i = 0; i < ts->n_ahead; i++)
		ReleaseBuffer(ts->ahead[i]);
	ts->n_ahead = 0;
	ts->pf_blk = InvalidBlockNumber;
	ts->pf_next = ts->pf_end = NULL;
}

void
mcc_toast_stream_prefetch(mcc_toast_stream *ts, int lines)
{
	for (; lines > 0; lines--, ts->pf_next += 64)
	{
		if (ts->pf_next >= ts->pf_end)
		{
			/* the first page pinned ahead that was not asked for yet */
			BlockNumber b = ts->pf_blk == InvalidBlockNumber || ts->pf_blk < ts->ahead_blk ?
				ts->ahead_blk : ts->pf_blk + 1;

			if (ts->n_ahead == 0 || b >= ts->ahead_blk + ts->n_ahead)
				return;
			ts->pf_blk = b;
			ts->pf_next = (const char *) BufferGetPage(ts->ahead[b - ts->ahead_blk]);
			ts->pf_end = ts->pf_next + BLCKSZ;
		}
		__builtin_prefetch(ts->pf_next);
	}
}

/*
 * Pin block blk, and the next STREAM_AHEAD ones ahead of time: the first
 * touch of a page (every tuple's header, as read_page deforms them) would
 * otherwise stall on memory, page after page, the few copies per page being
 * too short to hide it. Their lines are asked into the CPU's caches a few
 * at a time (mcc_toast_stream_prefetch, by the caller between deliveries
 * and by read_page), not all at once: most of a burst of 128 prefetches is
 * lost.
 */
static Buffer
pin_page(mcc_toast_stream *ts, BlockNumber blk)
{
	Buffer		buf;
	BlockNumber next;

	if (ts->n_ahead > 0 && ts->ahead_blk == blk)
	{
		buf = ts->ahead[0];
		memmove(ts->ahead, ts->ahead + 1, --ts->n_ahead * sizeof(Buffer));
	}
	else
	{
		release_ahead(ts);
		buf = mcc_block_map_read(ts->map, ts->toastrel, blk, ts->strategy);
		prefetch_buffer(buf);
	}
	ts->ahead_blk = blk + 1;
	for (next = blk + 1 + ts->n_ahead;
		 ts->n_ahead < STREAM_AHEAD && next < ts->nblocks; next++)
	{
		ts->ahead[ts->n_ahead++] = mcc_block_map_read(ts->map, ts->toastrel, next, ts->strategy);
	}
	return buf;
}

/*
 * Read one page, copying the chunks of queued values; the values it
 * completed go to done[] (their number is returned). Under the page's share
 * lock only copies happen; delivery waits until it is released.
 */
static int
read_page(mcc_toast_stream *ts, BlockNumber blk, int *done, bool *hit)
{
	TupleDesc	desc = RelationGetDescr(ts->toastrel);
	Buffer		buf = pin_page(ts, blk);
	Page		page;
	OffsetNumber maxoff;
	int			n_done = 0;
	bool		all_visible;

	mcc_toast_stream_prefetch(ts, READ_PREFETCH_LINES);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	maxoff = PageGetMaxOffsetNumber(page);
	all_visible = PageIsAllVisible(page) && !ts->snapshot->takenDuringRecovery;
	*hit = false;
	for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off++)
	{
		HeapTupleData tup;
		bool		isnull;
		Datum		d;
		int			slot;
		stream_value *v;
		int32		seq;
		struct varlena *chunk;

		if (!mcc_pg_page_tuple(page, blk, off, RelationGetRelid(ts->toastrel), &tup))
			continue;
		/* an old value's chunks, left by an OID reused (toast_stream.h) */
		if (!all_visible && !HeapTupleSatisfiesVisibility(&tup, ts->snapshot, buf))
			continue;

		/*
		 * The three columns read one by one (heap_getattr: at their cached
		 * offsets when the tuple has no NULL), the value's id first: a chunk
		 * of a value not queued is skipped without reading the rest, and no
		 * array of all three is filled (heap_deform_tuple was a tenth of the
		 * stream's time).
		 */
		d = heap_getattr(&tup, 1, desc, &isnull);
		if (isnull)
			continue;
		slot = find_slot(ts, DatumGetObjectId(d));
		if (ts->slots[slot] == 0)
			continue;
		*hit = true;
		v = &ts->values[ts->slots[slot] - 1];
		d = heap_getattr(&tup, 2, desc, &isnull);
		if (isnull)
			continue;
		seq = DatumGetInt32(d);
		d = heap_getattr(&tup, 3, desc, &isnull);
		if (isnull)
			continue;
		chunk = (struct varlena *) DatumGetPointer(d);
		if (VARATT_IS_EXTENDED(chunk) && !VARATT_IS_SHORT(chunk))
		{
			v->bad = true;
			continue;
		}
		if (take_chunk(ts, v, seq, VARDATA_ANY(chunk), VARSIZE_ANY_EXHDR(chunk)))
			done[n_done++] = ts->slots[slot] - 1;
	}
	UnlockReleaseBuffer(buf);
	ts->pages++;
	return n_done;
}

/* Give a value to each cookie waiting for it. */
static void
deliver_value(mcc_toast_stream *ts, stream_value *v, mcc_toast_deliver deliver, void *arg)
{
	bool		whole = v->got == v->nchunks && !v->bad;

	v->done = true;
	ts->remaining--;
	if (whole)
		ts->streamed++;
	else
		ts->handed_back++;
	for (int w = v->first_want; w >= 0; w = ts->wants[w].next)
		deliver(arg, ts->wants[w].cookie, whole ? (struct varlena *) v->buf : NULL,
				(struct varlena *) v->pointer);

	/*
	 * Its buffer goes back to the context's free list of its size, from
	 * which the next value's comes: the few buffers being filled stay in the
	 * CPU's caches instead of a flush's worth of fresh memory (512 values,
	 * over a megabyte), each first write of which was a miss.
	 */
	if (v->buf != NULL)
		pfree(v->buf);
	v->buf = NULL;
}

/* The block of the first chunk of valueid, by the TOAST index; false if none. */
static bool
locate(mcc_toast_stream *ts, Oid valueid, BlockNumber *blk)
{
	IndexScanDesc scan;
	ScanKeyData key;
	ItemPointer tid;
	bool		found = false;

	ScanKeyInit(&key, (AttrNumber) 1, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(valueid));
	scan = index_beginscan(ts->toastrel, ts->toastidx, SnapshotAny, 1, 0);
	index_rescan(scan, &key, 1, NULL, 0);
	tid = index_getnext_tid(scan, ForwardScanDirection);
	if (tid != NULL)
	{
		*blk = ItemPointerGetBlockNumber(tid);
		found = true;
	}
	index_endscan(scan);
	return found;
}

/* Stream pages from the cursor while they hold queued chunks. */
static void
stream_pages(mcc_toast_stream *ts, mcc_toast_deliver deliver, void *arg)
{
	int		   *done = palloc(ts->n_values * sizeof(int));
	BlockNumber last_hit = InvalidBlockNumber;
	BlockNumber first;
	int			misses = 0;

	if (ts->cursor == InvalidBlockNumber && !locate(ts, ts->values[0].valueid, &ts->cursor))
		ts->cursor = InvalidBlockNumber;
	first = ts->cursor;
	while (ts->cursor != InvalidBlockNumber && ts->remaining > 0 && misses < STREAM_MISSES)
	{
		bool		hit;
		int			n;

		if (ts->cursor >= ts->nblocks)
		{
			/* the table may have grown since the stream began */
			ts->nblocks = RelationGetNumberOfBlocks(ts->toastrel);
			if (ts->cursor >= ts->nblocks)
				break;
			ts->map = mcc_block_map_get(ts->toastrel, ts->nblocks);
		}
		CHECK_FOR_INTERRUPTS();
		n = read_page(ts, ts->cursor, done, &hit);
		for (int i = 0; i < n; i++)
			deliver_value(ts, &ts->values[done[i]], deliver, arg);
		if (hit)
		{
			last_hit = ts->cursor;
			misses = 0;
		}
		else
			misses++;
		ts->cursor++;
	}
	/*
	 * The next flush starts again at the page before the last one that held
	 * a queued chunk: a value spanning both may be followed there by the
	 * first chunks of the next rows' values, and the pages read past it may
	 * hold later ones. None at all: place it anew.
	 */
	ts->cursor = last_hit == InvalidBlockNumber ? InvalidBlockNumber :
		last_hit > first ? last_hit - 1 : last_hit;
	pfree(done);
}

void
mcc_toast_stream_flush(mcc_toast_stream *ts, mcc_toast_deliver deliver, void *arg)
{
	if (ts->n_values == 0)
		return;
	/* the last flush's values, valid until now */
	MemoryContextReset(ts->cxt);
	stream_pages(ts, deliver, arg);
	/* what the pages did not give: the usual fetch, in the order queued */
	for (int v = 0; v < ts->n_values; v++)
		if (!ts->values[v].done)
		{
			ts->values[v].bad = true;
			deliver_value(ts, &ts->values[v], deliver, arg);
		}
	ts->n_values = 0;
	ts->n_wants = 0;
	ts->remaining = 0;
	memset(ts->slots, 0, ts->n_slots * sizeof(int));
}

void
mcc_toast_stream_counts(const mcc_toast_stream *ts, uint64 *streamed,
						uint64 *handed_back, uint64 *pages)
{
	*streamed = ts->streamed;
	*handed_back = ts->handed_back;
	*pages = ts->pages;
}

void
mcc_toast_stream_end(mcc_toast_stream *ts)
{
	release_ahead(ts);
	index_close(ts->toastidx, AccessShareLock);
	relation_close(ts->toastrel, AccessShareLock);
	if (ts->strategy != NULL)
		FreeAccessStrategy(ts->strategy);
	MemoryContextDelete(ts->cxt);
	pfree(ts->values);
	pfree(ts->wants);
	pfree(ts->slots);
	pfree(ts);
}
