/*
 * gallery.h: which relation and columns identify() searches.
 *
 * A gallery is any table, view, materialized view or partitioned table with
 * one column of type mcc_template (the templates) and one integer column (the
 * key identify() returns). src/identify/gallery.c finds both from the catalogs or
 * checks the ones the caller names, and raises clear errors otherwise.
 */
#ifndef MCC_GALLERY_H
#define MCC_GALLERY_H

#include "postgres.h"

#include "access/attnum.h"

typedef struct mcc_gallery
{
	Oid			relid;
	char		relkind;
	char	   *relname;		/* unqualified, for messages */
	char	   *qualname;		/* schema-qualified and quoted, for SQL */
	AttrNumber	key_att;
	char	   *key_name;		/* unquoted */
	AttrNumber	tpl_att;
	char	   *tpl_name;		/* unquoted */
} mcc_gallery;

/* OID of type mcc_template in the extension's schema; raises if absent. */
extern Oid	mcc_template_type_oid(void);

/*
 * Resolve gallery relid: its template column (template_column, or the only
 * column of type mcc_template) and its key column (id_column, or the
 * single-column integer primary key, or the single-column unique index on a
 * NOT NULL integer column). NULL names mean "find it". Checks that the
 * current user may SELECT both columns. Takes AccessShareLock on relid.
 */
extern void mcc_gallery_resolve(Oid relid, const char *id_column,
								const char *template_column, mcc_gallery *g);

/* The query that reads the gallery: key as bigint, non-NULL templates. */
extern char *mcc_gallery_query(const mcc_gallery *g);

#endif							/* MCC_GALLERY_H */
