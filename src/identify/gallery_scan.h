/*
 * gallery_scan.h: a gallery's rows read straight from its heap tables, for
 * identify()'s backend scan (src/identify/identify.c).
 *
 * The reader scans every heap table of the gallery (the table itself, or the
 * partitions and inheritance children a SELECT of it reads) with the calling
 * statement's snapshot, as the query `SELECT key, template FROM gallery WHERE
 * template IS NOT NULL` would, without the executor, SPI or a copy of each
 * row: templates stored inline are read in place in the shared buffer, those
 * stored out of line are read from the TOAST table's pages in order
 * (src/template/toast_stream.h) into memory the reader reuses.
 *
 * It refuses (and identify() then reads through SQL) whatever only the
 * executor reads exactly: a view, row-level security active for the caller,
 * a foreign or non-heap partition, an unpopulated materialized view.
 * Privileges were checked by mcc_gallery_resolve() on the gallery, as a
 * SELECT checks them on the relation it names (not on its partitions).
 */
#ifndef MCC_GALLERY_SCAN_H
#define MCC_GALLERY_SCAN_H

#include "postgres.h"

#include "utils/snapshot.h"

#include "gallery.h"

typedef struct mcc_heap_rows mcc_heap_rows;

/*
 * A reader of g's rows under snapshot, or NULL (with *why) when they must be
 * read through SQL. Every relation is locked with AccessShareLock until the
 * end of the transaction, as a query locks it.
 */
extern mcc_heap_rows *mcc_heap_rows_begin(const mcc_gallery *g, Snapshot snapshot,
										  const char **why);

/* A row: its key (key_null for a NULL one) and its template, valid during the call. */
typedef void (*mcc_heap_row_fn) (void *arg, int64 key, bool key_null,
								 const struct varlena *tpl);

/*
 * Hand every row with a non-NULL template to fn. Rows come in no particular
 * order, in batches: those stored inline a page later, those stored out of
 * line a few hundred rows later.
 */
extern void mcc_heap_rows_scan(mcc_heap_rows *r, mcc_heap_row_fn fn, void *arg);

/* Release the scan, its buffers and its memory. */
extern void mcc_heap_rows_end(mcc_heap_rows *r);

/* The planner's estimate of the rows the reader returns (estimate_rel_size). */
extern double mcc_heap_rows_estimate(const mcc_heap_rows *r);

#endif							/* MCC_GALLERY_SCAN_H */
