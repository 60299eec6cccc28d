/*
 * service_catalog.c: what the matcher service reads from the catalogs:
 * registrations (table mcc_galleries), a gallery's relations, its signature,
 * whether its change triggers are in place, and 64-bit xids.
 */
#include "mcc_pg.h"
#include "service.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_subscription_rel.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "parser/parse_func.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

/* Columns of mcc_galleries (sql/mcc--0.1.0.sql). */
#define Anum_gallery			1
#define Anum_id_column			2
#define Anum_template_column	3

/* Per-backend cache of the extension's schema and table, revalidated on use. */
static Oid	cached_ext_oid = InvalidOid;
static Oid	cached_ext_nsp = InvalidOid;
static Oid	cached_galleries = InvalidOid;

/* Schema of extension mcc (InvalidOid if not created in this database). */
static Oid
mcc_namespace(void)
{
	Oid			ext = get_extension_oid("mcc", true);

	if (!OidIsValid(ext))
		return InvalidOid;
	if (ext != cached_ext_oid)
	{
		cached_ext_nsp = mcc_pg_extension_schema(ext);
		cached_ext_oid = ext;
		cached_galleries = InvalidOid;
	}
	return cached_ext_nsp;
}

/* OID of table mcc_galleries. */
Oid
mcc_galleries_relid(void)
{
	Oid			nsp;

	/* the cache holds while the OID still names that table in that schema */
	if (OidIsValid(cached_galleries) &&
		get_rel_namespace(cached_galleries) == cached_ext_nsp &&
		get_rel_name(cached_galleries) != NULL &&
		strcmp(get_rel_name(cached_galleries), "mcc_galleries") == 0)
		return cached_galleries;
	nsp = mcc_namespace();
	if (!OidIsValid(nsp))
		return InvalidOid;
	cached_galleries = get_relname_relid("mcc_galleries", nsp);
	return cached_galleries;
}

/* OID of function name() (no arguments) in the extension's schema. */
Oid
mcc_extension_function(const char *name)
{
	Oid			nsp = mcc_namespace();
	List	   *qname;

	if (!OidIsValid(nsp))
		return InvalidOid;
	qname = list_make2(makeString(get_namespace_name(nsp)), makeString(pstrdup(name)));
	return LookupFuncName(qname, 0, NULL, true);
}

/* The registration of relid, if any. */
bool
mcc_registration_get(Oid relid, mcc_registration *reg)
{
	Oid			galleries = mcc_galleries_relid();
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	bool		found = false;

	if (!OidIsValid(galleries))
		return false;
	rel = table_open(galleries, AccessShareLock);
	ScanKeyInit(&key, Anum_gallery, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	scan = systable_beginscan(rel, RelationGetPrimaryKeyIndex(rel), true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		TupleDesc	desc = RelationGetDescr(rel);
		bool		isnull;

		AttrNumber	prio_att = mcc_column_attnum(galleries, "priority");
		AttrNumber	log_att = mcc_column_attnum(galleries, "change_log");
		Datum		prio;

		reg->relid = relid;
		reg->id_column = pstrdup(NameStr(*DatumGetName(mcc_pg_tuple_attr(tup, desc, Anum_id_column, &isnull))));
		reg->template_column = pstrdup(NameStr(*DatumGetName(mcc_pg_tuple_attr(tup, desc, Anum_template_column, &isnull))));
		/* mcc_galleries of 0.1.0 has no priority column: every gallery 0 */
		reg->priority = 0;
		if (prio_att != InvalidAttrNumber)
		{
			prio = mcc_pg_tuple_attr(tup, desc, prio_att, &isnull);
			if (!isnull)
				reg->priority = DatumGetInt32(prio);
		}
		/* ... nor a change_log column: no gallery's writes are logged */
		reg->change_log = false;
		if (log_att != InvalidAttrNumber)
		{
			Datum		on = mcc_pg_tuple_attr(tup, desc, log_att, &isnull);

			reg->change_log = !isnull && DatumGetBool(on);
		}
		found = true;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/* Direct parents of relid (partition parent or inheritance parents). */
static List *
parents_of(Oid relid)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *parents = NIL;

	rel = table_open(InheritsRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_inherits_inhrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	scan = systable_beginscan(rel, InheritsRelidSeqnoIndexId, true, NULL, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
		parents = lappend_oid(parents, ((Form_pg_inherits) GETSTRUCT(tup))->inhparent);
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return parents;
}

/* Registrations of relid and of every ancestor of it. */
List *
mcc_registrations_covering(Oid relid)
{
	List	   *todo = list_make1_oid(relid);
	List	   *seen = NIL;
	List	   *regs = NIL;

	if (!OidIsValid(mcc_galleries_relid()))
		return NIL;
	while (todo != NIL)
	{
		Oid			r = linitial_oid(todo);
		mcc_registration reg;

		todo = list_delete_first(todo);
		if (list_member_oid(seen, r))
			continue;
		seen = lappend_oid(seen, r);
		if (mcc_registration_get(r, &reg))
			{
			mcc_registration *copy = palloc(sizeof(reg));

			*copy = reg;
			regs = lappend(regs, copy);
		}
		todo = list_concat(todo, parents_of(r));
	}
	return regs;
}

/* The gallery and all its descendants, locked like a query would. */
List *
mcc_gallery_relations(Oid relid)
{
	return find_all_inheritors(relid, AccessShareLock, NULL);
}

/* Hash of the relations' relfilenodes and the key and template columns. */
uint64
mcc_gallery_signature(List *relids, AttrNumber key_att, AttrNumber tpl_att)
{
	uint64		h = hash_bytes_extended((const unsigned char *) &key_att, sizeof(key_att), 0x6d6363);
	ListCell   *lc;

	h = hash_bytes_extended((const unsigned char *) &tpl_att, sizeof(tpl_att), h);
	foreach(lc, relids)
	{
		Oid			pair[2];
		HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(lfirst_oid(lc)));

		/* a relation dropped by the committing transaction: no storage */
		pair[0] = lfirst_oid(lc);
		pair[1] = InvalidOid;
		if (HeapTupleIsValid(tup))
		{
			pair[1] = ((Form_pg_class) GETSTRUCT(tup))->relfilenode;
			ReleaseSysCache(tup);
		}
		h = hash_bytes_extended((const unsigned char *) pair, sizeof(pair), h);
	}
	return h == 0 ? 1 : h;
}

/* Bit of the event a change trigger of ours covers, or 0. */
static int
trigger_bit(const Trigger *t, Oid func)
{
	if (t->tgfoid != func || t->tgenabled != TRIGGER_FIRES_ALWAYS ||
		!TRIGGER_FOR_AFTER(t->tgtype) || TRIGGER_FOR_ROW(t->tgtype))
		return 0;
	if (TRIGGER_FOR_TRUNCATE(t->tgtype))
		return 8;
	if (TRIGGER_FOR_INSERT(t->tgtype) && t->tgnewtable != NULL)
		return 1;
	if (TRIGGER_FOR_UPDATE(t->tgtype) && t->tgnewtable != NULL && t->tgoldtable != NULL)
		return 2;
	if (TRIGGER_FOR_DELETE(t->tgtype) && t->tgoldtable != NULL)
		return 4;
	return 0;
}

/*
 * Is relid the target of a logical replication subscription? Its apply
 * worker fires no statement-level triggers but TRUNCATE's, so the cache
 * would miss the changes it applies.
 */
static bool
subscribed(Oid relid)
{
	Relation	rel = table_open(SubscriptionRelRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	bool		found;

	ScanKeyInit(&key, Anum_pg_subscription_rel_srrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	scan = systable_beginscan(rel, SubscriptionRelSrrelidSrsubidIndexId, true, NULL, 1, &key);
	found = HeapTupleIsValid(systable_getnext(scan));
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/*
 * Is any relation of this database the target of a subscription? Most
 * databases have none: one look at pg_subscription_rel then spares one
 * index scan per relation of the gallery (a partitioned gallery has one per
 * partition, at each identify()).
 */
static bool
any_subscribed(void)
{
	Relation	rel = table_open(SubscriptionRelRelationId, AccessShareLock);
	SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	bool		found = HeapTupleIsValid(systable_getnext(scan));

	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/*
 * NULL if every relation has our four triggers enabled ALWAYS and no
 * change can bypass them; otherwise why not.
 */
char *
mcc_gallery_triggers_missing(List *relids)
{
	Oid			func = mcc_extension_function("mcc_gallery_trigger");
	ListCell   *lc;

	if (!OidIsValid(func))
		return pstrdup("function mcc_gallery_trigger() does not exist");
	/* one look first: most databases subscribe to nothing */
	if (any_subscribed())
		foreach(lc, relids)
		{
			if (subscribed(lfirst_oid(lc)))
				return psprintf("relation \"%s\" is written by logical replication, which fires no statement triggers",
								get_rel_name(lfirst_oid(lc)));
		}
	foreach(lc, relids)
	{
		Relation	rel = relation_open(lfirst_oid(lc), NoLock);
		int			bits = 0;
		int			i;

		for (i = 0; rel->trigdesc != NULL && i < rel->trigdesc->numtriggers; i++)
			bits |= trigger_bit(&rel->trigdesc->triggers[i], func);
		if (bits != 15)
		{
			char	   *why = psprintf("relation \"%s\" lacks an enabled change trigger of mcc",
									   RelationGetRelationName(rel));

			relation_close(rel, NoLock);
			return why;
		}
		relation_close(rel, NoLock);
	}
	return NULL;
}

/* Attribute number of a live column by name. */
AttrNumber
mcc_column_attnum(Oid relid, const char *name)
{
	AttrNumber	att = get_attnum(relid, name);

	return att > 0 ? att : InvalidAttrNumber;
}

/* Raise unless the current user owns the relation. */
void
mcc_check_owner(Oid relid)
{
	char		relkind = get_rel_relkind(relid);

	if (relkind == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	if (!pg_class_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, get_relkind_objtype(relkind), get_rel_name(relid));
}

/* Owner of a relation. */
Oid
mcc_rel_owner(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/* Superusers and roles with the privileges of MCC_SERVICE_ROLE. */
bool
mcc_role_may_use_service(Oid roleid)
{
	Oid			service = get_role_oid(MCC_SERVICE_ROLE, true);

	if (superuser_arg(roleid))
		return true;
	return OidIsValid(service) && has_privs_of_role(roleid, service);
}

/* NULL if the gallery's owner may have it cached; otherwise why not. */
char *
mcc_gallery_owner_problem(Oid relid)
{
	Oid			owner = mcc_rel_owner(relid);

	if (mcc_role_may_use_service(owner))
		return NULL;
	return psprintf("the owner of gallery \"%s\", role \"%s\", is not a member of role \"%s\"",
					get_rel_name(relid), GetUserNameFromId(owner, false), MCC_SERVICE_ROLE);
}

/* A key as int64 by the column's (base) type. */
int64
mcc_key_int64(Datum d, Oid typid)
{
	switch (getBaseType(typid))
	{
		case INT2OID:
			return DatumGetInt16(d);
		case INT4OID:
			return DatumGetInt32(d);
		default:
			return DatumGetInt64(d);
	}
}

/* Full xid of a recent xid, relative to the next xid to be assigned. */
uint64
mcc_full_xid(TransactionId xid)
{
	FullTransactionId next;
	TransactionId next_xid;

	if (!TransactionIdIsNormal(xid))
		return 0;
	next = ReadNextFullTransactionId();
	next_xid = XidFromFullTransactionId(next);
	/* xid lies within 2^31 before next: the signed distance says how far */
	return U64FromFullTransactionId(next) - (uint64) (int32) (next_xid - xid);
}
