/*
 * mcc_pg.h: what the PostgreSQL layer's files share.
 *
 * Templates are varlenas whose bytes are exactly the src/core blob of
 * mcc_template.h (its first 4 bytes are the varlena header).
 */
#ifndef MCC_PG_H
#define MCC_PG_H

#include "postgres.h"
#include "fmgr.h"
#include "access/htup.h"
#include "access/tupdesc.h"
#include "storage/bufpage.h"

#include "mcc_error.h"
#include "mcc_minutiae.h"
#include "mcc_profile.h"
#include "mcc_template.h"

/* mcc.match_threshold, the threshold of the % operator (src/module/mcc.c). */
extern double mcc_match_threshold;

/* Detoasted template argument n (never a short-header or toasted pointer). */
#define MCC_GETARG_TEMPLATE(n) ((struct varlena *) PG_DETOAST_DATUM(PG_GETARG_DATUM(n)))

/* Define the GUCs of elastic image matching (src/image/dp2d_sql.c). */
extern void mcc_dp2d_sql_init(void);

/* Raise err as an ERROR with the SQLSTATE of its status (src/module/pg_error.c). */
extern void mcc_pg_raise(const mcc_error *err) pg_attribute_noreturn();

/*
 * Raise 08P01 protocol_violation "malformed reply from the matcher engine"
 * with the detail fmt (a sentence saying what did not fit; its first 255
 * bytes are shown).
 */
extern void mcc_pg_malformed_reply(const char *fmt,...)
			pg_attribute_printf(1, 2) pg_attribute_noreturn();

/*
 * Raise 22004 null_value_not_allowed ("NAME of FN must not be null") for
 * the first NULL among the arguments 0 .. n - 1, named names[i], of the SQL
 * function fn (e.g. "identify()").
 */
extern void mcc_pg_require_args(FunctionCallInfo fcinfo, const char *fn,
								const char *const *names, int n);

/* SQLSTATE for a core status. */
extern int	mcc_pg_sqlstate(mcc_status status);

/* Open a stored template; a corrupt value raises ERROR (data_corrupted). */
extern void mcc_pg_open(const struct varlena *t, mcc_template_view *v);

/*
 * The same for a value read back from a table: only what a scan relies on
 * is checked (mcc_template_open_stored); the rest was checked when it was
 * stored.
 */
extern void mcc_pg_open_stored(const struct varlena *t, mcc_template_view *v);

/*
 * The minutiae of a template (raises if it is corrupt) and, profile not
 * NULL, its profile: what the text and record outputs write
 * (src/template/template_io.c).
 */
extern void mcc_pg_minutiae(const struct varlena *t, mcc_minutiae *ms,
							const mcc_profile **profile);

/* Build a palloc'd template from minutiae with profile p; raises on bad input. */
extern struct varlena *mcc_pg_build(const mcc_minutiae *ms, const mcc_profile *p);

/*
 * Attribute attnum of a heap tuple. heap_getattr() is avoided on purpose:
 * since 15.20 that header inline calls heap_datum_check(), which 15.18 and
 * older servers do not export, so a module using it fails to load there.
 */
extern Datum mcc_pg_tuple_attr(HeapTuple tup, TupleDesc desc, AttrNumber attnum,
							   bool *isnull);

/*
 * The tuple at offset off of block blk of relation relid, a page locked or
 * known to hold it, in tup (pointing into the page), as heapgetpage reads
 * one; false if the line pointer is not a normal one (unused, dead, a
 * redirect). The scans that read a page themselves use it.
 */
static inline bool
mcc_pg_page_tuple(Page page, BlockNumber blk, OffsetNumber off, Oid relid, HeapTuple tup)
{
	ItemId		lp = PageGetItemId(page, off);

	if (!ItemIdIsNormal(lp))
		return false;
	tup->t_data = (HeapTupleHeader) PageGetItem(page, lp);
	tup->t_len = ItemIdGetLength(lp);
	tup->t_tableOid = relid;
	ItemPointerSet(&tup->t_self, blk, off);
	return true;
}

/* Schema of extension extoid (InvalidOid if there is none). */
extern Oid	mcc_pg_extension_schema(Oid extoid);

/* Profile by SQL name; raises 22023 naming the known profiles if unknown. */
extern const mcc_profile *mcc_pg_profile(const char *name);

/* Template from the JSON text form (src/template/template_io.c); raises on bad input. */
extern struct varlena *mcc_pg_template_from_json(const char *text, size_t len);

/* The canonical JSON text form of a stored template, palloc'd (src/template/template_io.c). */
extern char *mcc_pg_template_to_json(const struct varlena *t);

/* Define the alignment GUCs mcc.align_* (src/image/align_sql.c); called from _PG_init. */
extern void mcc_align_define_gucs(void);

/* Define the image settings (mcc.image_threads); once, from _PG_init (src/image/image_io.c). */
extern void mcc_image_init(void);

#endif							/* MCC_PG_H */
