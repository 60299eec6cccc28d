/*
 * gallery.c: find the relation and columns identify() searches.
 *
 * The template column is the relation's only column of type mcc_template (or
 * a domain over it), unless the caller names one. The key is the
 * single-column integer primary key, else the only single-column unique index
 * on a NOT NULL integer column, unless the caller names one; views have
 * neither, so a view needs id_column. Indexes only count when they guarantee
 * uniqueness for every row: valid, live, not partial, not on an expression.
 *
 * The type is looked up by name in the extension's schema, so a user type of
 * the same name in another schema is never mistaken for ours.
 */
#include "mcc_pg.h"
#include "gallery.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/bitmapset.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"
#include "funcapi.h"

/* OID of mcc_template in the extension's schema. */
Oid
mcc_template_type_oid(void)
{
	Oid			nsp = mcc_pg_extension_schema(get_extension_oid("mcc", false));
	Oid			typoid;

	typoid = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
							 CStringGetDatum("mcc_template"),
							 ObjectIdGetDatum(nsp));
	if (!OidIsValid(typoid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("type mcc_template does not exist in the schema of extension mcc")));
	return typoid;
}

/* True for smallint, integer, bigint and domains over them. */
static bool
is_integer_type(Oid typid)
{
	Oid			base = getBaseType(typid);

	return base == INT2OID || base == INT4OID || base == INT8OID;
}

/* Refuse relations that are not tables, views or materialized views. */
static void
check_relkind(Relation rel)
{
	char		kind = rel->rd_rel->relkind;

	if (kind != RELKIND_RELATION && kind != RELKIND_PARTITIONED_TABLE &&
		kind != RELKIND_VIEW && kind != RELKIND_MATVIEW)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table, view or materialized view",
						RelationGetRelationName(rel)),
				 errdetail("identify() searches tables, partitioned tables, views and materialized views.")));
}

/* Attribute number of a column the caller named; raises if there is none. */
static AttrNumber
named_column(Relation rel, const char *name, const char *argname)
{
	AttrNumber	att = get_attnum(RelationGetRelid(rel), name);

	if (att == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						name, RelationGetRelationName(rel)),
				 errhint("%s names a column of the gallery.", argname)));
	if (att < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
				 errmsg("%s cannot be system column \"%s\"", argname, name)));
	return att;
}

/* The template column: the one named, or the only one of type mcc_template. */
static AttrNumber
find_template_column(Relation rel, const char *name, Oid tpltype)
{
	TupleDesc	desc = RelationGetDescr(rel);
	AttrNumber	found = InvalidAttrNumber;
	StringInfoData names;
	int			n = 0;
	int			i;

	if (name != NULL)
	{
		AttrNumber	att = named_column(rel, name, "template_column");
		Oid			typid = TupleDescAttr(desc, att - 1)->atttypid;

		if (getBaseType(typid) != tpltype)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of relation \"%s\" is of type %s, not mcc_template",
							name, RelationGetRelationName(rel), format_type_be(typid))));
		return att;
	}

	initStringInfo(&names);
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute a = TupleDescAttr(desc, i);

		if (a->attisdropped || getBaseType(a->atttypid) != tpltype)
			continue;
		appendStringInfo(&names, "%s%s", n ? ", " : "", quote_identifier(NameStr(a->attname)));
		found = a->attnum;
		n++;
	}
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("relation \"%s\" has no column of type mcc_template",
						RelationGetRelationName(rel))));
	if (n > 1)
		ereport(ERROR,
				(errcode(ERRCODE_AMBIGUOUS_COLUMN),
				 errmsg("relation \"%s\" has %d columns of type mcc_template",
						RelationGetRelationName(rel), n),
				 errdetail("The columns are %s.", names.data),
				 errhint("Name the one to search with template_column.")));
	return found;
}

/*
 * The key column of a single-column unique index that guarantees uniqueness
 * of every row, or InvalidAttrNumber.
 */
static AttrNumber
index_key_column(Oid indexoid, bool *primary)
{
	HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexoid));
	Form_pg_index ix;
	AttrNumber	att = InvalidAttrNumber;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for index %u", indexoid);
	ix = (Form_pg_index) GETSTRUCT(tup);
	*primary = ix->indisprimary;
	if (ix->indisunique && ix->indisvalid && ix->indislive &&
		ix->indnkeyatts == 1 && ix->indkey.values[0] > 0 &&
		heap_attisnull(tup, Anum_pg_index_indpred, NULL))
		att = ix->indkey.values[0];
	ReleaseSysCache(tup);
	return att;
}

/* Raise the "no usable key" error, saying why for views and matviews. */
static void
no_key_error(Relation rel)
{
	char		kind = rel->rd_rel->relkind;

	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_COLUMN),
			 errmsg("relation \"%s\" has no integer key column",
					RelationGetRelationName(rel)),
			 kind == RELKIND_VIEW ?
			 errdetail("A view has no primary key or unique index to find the key from.") :
			 kind == RELKIND_MATVIEW ?
			 errdetail("The columns of a materialized view are never NOT NULL, so its unique indexes do not make a key.") :
			 errdetail("The key is a single-column primary key, or a single-column unique index on a NOT NULL column, of type smallint, integer or bigint."),
			 errhint("Name the key column with id_column.")));
}

/*
 * The key column found from the indexes: the primary key when it is one
 * integer column, else the only integer column that a unique index covers
 * and that is NOT NULL.
 */
static AttrNumber
found_key_column(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	Bitmapset  *unique = NULL;	/* candidate columns (several indexes may share one) */
	StringInfoData names;
	int			att;

	foreach(lc, indexes)
	{
		bool		primary;
		Form_pg_attribute a;

		att = index_key_column(lfirst_oid(lc), &primary);
		if (att == InvalidAttrNumber)
			continue;
		a = TupleDescAttr(desc, att - 1);
		if (!is_integer_type(a->atttypid))
			continue;
		if (primary)
			return att;
		if (a->attnotnull)
			unique = bms_add_member(unique, att);
	}
	list_free(indexes);
	if (bms_is_empty(unique))
		no_key_error(rel);
	if (bms_membership(unique) == BMS_MULTIPLE)
	{
		initStringInfo(&names);
		att = -1;
		while ((att = bms_next_member(unique, att)) >= 0)
			appendStringInfo(&names, "%s%s", names.len ? ", " : "",
							 quote_identifier(NameStr(TupleDescAttr(desc, att - 1)->attname)));
		ereport(ERROR,
				(errcode(ERRCODE_AMBIGUOUS_COLUMN),
				 errmsg("relation \"%s\" has %d candidate key columns",
						RelationGetRelationName(rel), bms_num_members(unique)),
				 errdetail("Unique indexes cover the NOT NULL integer columns %s.", names.data),
				 errhint("Name the key column with id_column.")));
	}
	return bms_singleton_member(unique);
}

/* The key column: the one named (of an integer type), or the one found. */
static AttrNumber
find_key_column(Relation rel, const char *name)
{
	AttrNumber	att;
	Oid			typid;

	if (name == NULL)
		return found_key_column(rel);
	att = named_column(rel, name, "id_column");
	typid = TupleDescAttr(RelationGetDescr(rel), att - 1)->atttypid;
	if (!is_integer_type(typid))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of relation \"%s\" is of type %s, not an integer type",
						name, RelationGetRelationName(rel), format_type_be(typid)),
				 errhint("The key column must be of type smallint, integer or bigint.")));
	return att;
}

/* Raise 42501 for the relation. */
static void
permission_denied(Oid relid, char relkind)
{
	aclcheck_error(ACLCHECK_NO_PRIV, get_relkind_objtype(relkind), get_rel_name(relid));
}

/* Resolve the gallery, checking privileges before and after locking it. */
void
mcc_gallery_resolve(Oid relid, const char *id_column,
					const char *template_column, mcc_gallery *g)
{
	Oid			user = GetUserId();
	char		relkind = get_rel_relkind(relid);
	bool		table_priv;
	Relation	rel;
	Oid			tpltype = mcc_template_type_oid();

	if (relkind == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));

	/* no right to read any column: refuse before waiting for a lock */
	table_priv = pg_class_aclcheck(relid, user, ACL_SELECT) == ACLCHECK_OK;
	if (!table_priv &&
		pg_attribute_aclcheck_all(relid, user, ACL_SELECT, ACLMASK_ANY) != ACLCHECK_OK)
		permission_denied(relid, relkind);

	rel = try_relation_open(relid, AccessShareLock);
	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	check_relkind(rel);

	g->relid = relid;
	g->relkind = rel->rd_rel->relkind;
	g->relname = pstrdup(RelationGetRelationName(rel));
	g->qualname = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
											 g->relname);
	g->tpl_att = find_template_column(rel, template_column, tpltype);
	g->key_att = find_key_column(rel, id_column);
	g->tpl_name = pstrdup(NameStr(TupleDescAttr(RelationGetDescr(rel), g->tpl_att - 1)->attname));
	g->key_name = pstrdup(NameStr(TupleDescAttr(RelationGetDescr(rel), g->key_att - 1)->attname));
	/* keep the lock until the end of the transaction, as a query would */
	relation_close(rel, NoLock);

	if (!table_priv &&
		(pg_attribute_aclcheck(relid, g->key_att, user, ACL_SELECT) != ACLCHECK_OK ||
		 pg_attribute_aclcheck(relid, g->tpl_att, user, ACL_SELECT) != ACLCHECK_OK))
		permission_denied(relid, g->relkind);
}

/* SELECT key::bigint, template FROM gallery WHERE template IS NOT NULL. */
char *
mcc_gallery_query(const mcc_gallery *g)
{
	const char *key = quote_identifier(g->key_name);
	const char *tpl = quote_identifier(g->tpl_name);

	return psprintf("SELECT %s::pg_catalog.int8, %s FROM %s WHERE %s IS NOT NULL",
					key, tpl, g->qualname, tpl);
}

PG_FUNCTION_INFO_V1(mcc_gallery_columns);

/*
 * mcc_gallery_columns(gallery regclass, id_column name, template_column name,
 *                     OUT id_column name, OUT template_column name)
 * The key and template columns identify() would use, found and checked as
 * identify() does (same errors); for SQL written on top of identify(), such
 * as identify_persons(), that must join its answer back to the gallery.
 */
Datum
mcc_gallery_columns(PG_FUNCTION_ARGS)
{
	mcc_gallery g;
	TupleDesc	desc;
	Datum		values[2];
	bool		nulls[2] = {false, false};

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("gallery must not be null")));
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "mcc_gallery_columns must return a record");
	mcc_gallery_resolve(PG_GETARG_OID(0),
						PG_ARGISNULL(1) ? NULL : NameStr(*PG_GETARG_NAME(1)),
						PG_ARGISNULL(2) ? NULL : NameStr(*PG_GETARG_NAME(2)), &g);
	values[0] = DirectFunctionCall1(namein, CStringGetDatum(g.key_name));
	values[1] = DirectFunctionCall1(namein, CStringGetDatum(g.tpl_name));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}
