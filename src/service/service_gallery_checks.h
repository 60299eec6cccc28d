/*
 * service_gallery_checks.h: a gallery's checks before the matcher service
 * answers for it (src/service/service_gallery_checks.c).
 */
#ifndef SERVICE_GALLERY_CHECKS_H
#define SERVICE_GALLERY_CHECKS_H

#include "gallery.h"

#include "utils/rel.h"

/* NULL if the gallery is registered for the columns identify() uses, else why not. */
extern char *mcc_registration_problem(const mcc_gallery *g);

/*
 * NULL if the service may answer for gallery g at all, else why not: mcc is
 * preloaded, g registered for its columns, its writes logged on a hot
 * standby, no row-level security for the caller. identify() and the dedup's
 * rescoring (service_rescore.c) ask it first.
 */
extern char *mcc_service_gallery_problem(const mcc_gallery *g);

/*
 * The first valid unique index of rel on exactly column att, of operator
 * class opclass (InvalidOid: any); InvalidOid if none.
 */
extern Oid	mcc_unique_key_index(Relation rel, AttrNumber att, Oid opclass);

/* Does a valid unique index on exactly the key column exist? */
extern bool mcc_key_is_unique(Oid relid, AttrNumber key_att);

/* Was any of the relations created or given new storage in this transaction? */
extern bool mcc_rewritten_in_xact(List *relids);

/* Serializable transactions: predicate locks on every relation a search reads. */
extern void mcc_predicate_lock_gallery(List *relids);

#endif							/* SERVICE_GALLERY_CHECKS_H */
