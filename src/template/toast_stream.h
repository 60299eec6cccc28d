/*
 * toast_stream.h: out-of-line values of a table fetched by reading its TOAST
 * table's pages in order rather than one index search per value.
 *
 * A gallery's templates are stored out of line when they exceed about 2 kB
 * (the type's STORAGE is external: no compression). Fetching one the usual
 * way (detoast_attr) opens the TOAST table and its index, searches the index
 * and visits each chunk's heap tuple through it, and copies the chunks into a
 * fresh allocation: several microseconds per value, more than a match.
 * Values that a bulk load wrote together lie together in the TOAST table, in
 * the order of the rows that point to them. So a reader that walks a
 * gallery's heap queues the values it meets (mcc_toast_stream_want) and,
 * now and then, has the stream read the TOAST table's pages forward from
 * where it stopped last, copying the chunks of every queued value into
 * place (mcc_toast_stream_flush). A value not met within a few pages (rows
 * updated since, values written in another order) is handed back for the
 * usual fetch, so the stream is an optimization whose failures cost speed,
 * never a result.
 *
 * Chunks are recognized by their value OID and must be visible to the
 * snapshot the reader reads the heap with. An OID is unique in the TOAST
 * table among the tuples its index still points to (GetNewOidWithIndex
 * checks every index entry), but the index may drop the entries of tuples
 * dead to every snapshot before VACUUM removes the tuples themselves, and a
 * new value may then take the OID: such old chunks are invisible to any
 * snapshot. The chunks of a value that a visible row points to are visible
 * to the same snapshot: they were inserted with the row version that first
 * held the value, or with an earlier one, and are deleted only with the
 * last row version that holds it. (A page marked all-visible skips the
 * check, as a heap scan does.) A value whose chunks are incomplete or
 * inconsistent is handed back too; the usual fetch then reports what is
 * wrong.
 */
#ifndef MCC_TOAST_STREAM_H
#define MCC_TOAST_STREAM_H

#include "postgres.h"

#include "utils/relcache.h"
#include "utils/snapshot.h"

typedef struct mcc_toast_stream mcc_toast_stream;

/*
 * The value of a queued cookie: its bytes (a 4-byte header, valid until the
 * call returns: the buffer is reused for a later value), or NULL with the original TOAST pointer when the stream did not
 * find it: the callee then fetches it the usual way.
 */
typedef void (*mcc_toast_deliver) (void *arg, uint64 cookie, const struct varlena *value,
								   const struct varlena *pointer);

/*
 * A stream over the TOAST table of heap (which must have one), for rows
 * read with snapshot (an MVCC snapshot: chunks invisible to it are skipped).
 */
extern mcc_toast_stream *mcc_toast_stream_begin(Relation heap, Snapshot snapshot);

/*
 * Can the stream fetch this datum? An on-disk external value, uncompressed,
 * of this stream's TOAST table.
 */
extern bool mcc_toast_stream_can(const mcc_toast_stream *ts, Datum d);

/* Queue the value of datum d (mcc_toast_stream_can) under cookie. */
extern void mcc_toast_stream_want(mcc_toast_stream *ts, Datum d, uint64 cookie);

/* Values queued and not delivered yet. */
extern int	mcc_toast_stream_pending(const mcc_toast_stream *ts);

/*
 * Deliver every queued value, in the order the stream meets them. The bytes
 * of a value are valid during its delivery only: a caller that keeps them
 * copies them.
 */
extern void mcc_toast_stream_flush(mcc_toast_stream *ts, mcc_toast_deliver deliver, void *arg);

/*
 * Ask up to lines more cache lines of the TOAST pages pinned ahead of the
 * stream into the CPU's caches: a caller that does other work between
 * deliveries (scoring the values) calls it there, so that the pages the
 * stream reads next arrive meanwhile.
 */
extern void mcc_toast_stream_prefetch(mcc_toast_stream *ts, int lines);

/* Counters: values delivered from the pages, values handed back, pages read. */
extern void mcc_toast_stream_counts(const mcc_toast_stream *ts, uint64 *streamed,
									uint64 *handed_back, uint64 *pages);

/* Release the stream (queued values are forgotten). */
extern void mcc_toast_stream_end(mcc_toast_stream *ts);

#endif							/* MCC_TOAST_STREAM_H */
