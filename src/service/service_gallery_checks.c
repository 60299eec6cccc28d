/*
 * service_gallery_checks.c: what the backend checks of a gallery before the
 * matcher service may answer for it (service_gallery_checks.h): its
 * registration, the unique key the cache relies on, storage given in this
 * transaction, the predicate locks of a serializable search, and the checks
 * every request for a gallery passes first (mcc_service_gallery_problem). Only
 * PostgreSQL can tell these; service_identify.c decides what follows.
 */
#include "mcc_pg.h"
#include "service_gallery_checks.h"
#include "service.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_index.h"
#include "storage/predicate.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

/* NULL if the gallery is registered for the columns identify() uses. */
char *
mcc_registration_problem(const mcc_gallery *g)
{
	mcc_registration reg;

	if (g->relkind != RELKIND_RELATION && g->relkind != RELKIND_PARTITIONED_TABLE)
		return psprintf("\"%s\" is not a table", g->relname);
	if (!mcc_registration_get(g->relid, &reg))
		return psprintf("gallery \"%s\" is not registered with mcc_gallery_register()",
						g->relname);
	if (strcmp(reg.id_column, g->key_name) != 0 || strcmp(reg.template_column, g->tpl_name) != 0)
		return psprintf("gallery \"%s\" is registered for columns \"%s\" and \"%s\", not \"%s\" and \"%s\"",
						g->relname, reg.id_column, reg.template_column,
						g->key_name, g->tpl_name);
	return NULL;
}

char *
mcc_service_gallery_problem(const mcc_gallery *g)
{
	char	   *why;

	if (mcc_svc == NULL)
		return pstrdup("mcc is not in shared_preload_libraries");
	if ((why = mcc_registration_problem(g)) != NULL)
		return why;
	/* a hot standby serves only galleries whose writes are logged */
	if (RecoveryInProgress() && (why = mcc_standby_log_problem(g->relid, g->relname)) != NULL)
		return why;
	if (check_enable_rls(g->relid, InvalidOid, false) == RLS_ENABLED)
		return pstrdup("row-level security is active for the gallery");
	return NULL;
}

/*
 * The first valid unique index of rel on exactly column att (no predicate,
 * no expressions) whose operator class is opclass, or any when opclass is
 * InvalidOid; InvalidOid if there is none. Such an index is what makes
 * the key identify a row: the cache, the registration and the routed
 * re-check all rely on it.
 */
Oid
mcc_unique_key_index(Relation rel, AttrNumber att, Oid opclass)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	Oid			found = InvalidOid;

	foreach(lc, indexes)
	{
		HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
		Form_pg_index ix;

		if (!HeapTupleIsValid(tup))
			continue;
		ix = (Form_pg_index) GETSTRUCT(tup);
		if (!OidIsValid(found) && ix->indisunique && ix->indisvalid && ix->indislive &&
			ix->indnkeyatts == 1 && ix->indkey.values[0] == att &&
			heap_attisnull(tup, Anum_pg_index_indpred, NULL) &&
			heap_attisnull(tup, Anum_pg_index_indexprs, NULL))
		{
			bool		isnull;
			Datum		cls = SysCacheGetAttr(INDEXRELID, tup, Anum_pg_index_indclass, &isnull);

			if (!OidIsValid(opclass) ||
				(!isnull && ((oidvector *) DatumGetPointer(cls))->values[0] == opclass))
				found = lfirst_oid(lc);
		}
		ReleaseSysCache(tup);
	}
	list_free(indexes);
	return found;
}

/* Does a valid unique index on exactly the key column exist? */
bool
mcc_key_is_unique(Oid relid, AttrNumber key_att)
{
	Relation	rel = relation_open(relid, NoLock);
	bool		unique = OidIsValid(mcc_unique_key_index(rel, key_att, InvalidOid));

	relation_close(rel, NoLock);
	return unique;
}

/* Was any of the relations created or given new storage in this transaction? */
bool
mcc_rewritten_in_xact(List *relids)
{
	ListCell   *lc;
	bool		found = false;

	foreach(lc, relids)
	{
		Relation	rel = relation_open(lfirst_oid(lc), NoLock);

		if (rel->rd_createSubid != InvalidSubTransactionId ||
			rel->rd_firstRelfilenodeSubid != InvalidSubTransactionId)
			found = true;
		relation_close(rel, NoLock);
	}
	return found;
}

/* Serializable transactions: the search reads the whole gallery. */
void
mcc_predicate_lock_gallery(List *relids)
{
	ListCell   *lc;

	if (!IsolationIsSerializable())
		return;
	foreach(lc, relids)
	{
		Relation	rel = relation_open(lfirst_oid(lc), NoLock);

		PredicateLockRelation(rel, GetActiveSnapshot());
		relation_close(rel, NoLock);
	}
}
