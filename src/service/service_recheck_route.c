/*
 * service_recheck_route.c: the re-check of a partitioned gallery's
 * candidates by key (service_recheck_route.h).
 *
 * Through SPI, `WHERE key = ANY($1)` on a partitioned table is planned at
 * every call (the plan cache keeps custom plans, which prune to the
 * partitions holding the keys; the generic plan scans every partition's
 * index for every key and is slower still): 1 ms of a call at 50
 * partitions on the dev VM (docs/benchmarks.md, "The backend's cost per
 * partition"). The unique index on the key that the service requires makes
 * the key the partition key of every level, so each key has one partition
 * that may hold it, found as PostgreSQL routes an inserted row
 * (get_partition_for_tuple), and one index to look it up in. The rows are
 * those the query returns: the same snapshot, the same visibility, no row
 * of another partition; privileges were checked on the gallery, as the
 * query checks them (not on its partitions), and the service refuses a
 * gallery under row-level security, whose policies the query would apply.
 */
#include "postgres.h"

#include "service_recheck_route.h"
#include "service.h"
#include "service_gallery_checks.h"

#include "access/genam.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_am.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "executor/tuptable.h"
#include "partitioning/partbounds.h"
#include "partitioning/partdesc.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

/* A key and the partition it was routed to (InvalidOid: none may hold it). */
typedef struct routed_key
{
	Oid			leaf;
	int64		key;
} routed_key;

/* key as a value of the key column's integer type; false if out of its range. */
static bool
key_datum(Oid typid, int64 key, Datum *d, RegProcedure *eq)
{
	switch (getBaseType(typid))
	{
		case INT2OID:
			*d = Int16GetDatum((int16) key);
			*eq = F_INT2EQ;
			return key >= PG_INT16_MIN && key <= PG_INT16_MAX;
		case INT4OID:
			*d = Int32GetDatum((int32) key);
			*eq = F_INT4EQ;
			return key >= PG_INT32_MIN && key <= PG_INT32_MAX;
		default:				/* int8: mcc_gallery_resolve allows no other */
			*d = Int64GetDatum(key);
			*eq = F_INT8EQ;
			return true;
	}
}

/* The partition of pd that takes value v (get_partition_for_tuple's rules), or -1. */
static int
partition_of(PartitionKey pk, PartitionDesc pd, Datum v)
{
	PartitionBoundInfo b = pd->boundinfo;
	bool		isnull = false;
	bool		equal = false;
	int			off;
	int			i = -1;

	if (pd->nparts == 0 || b == NULL)
		return -1;
	switch (pk->strategy)
	{
		case PARTITION_STRATEGY_HASH:
			i = b->indexes[compute_partition_hash_value(1, pk->partsupfunc, pk->partcollation,
														&v, &isnull) % b->nindexes];
			break;
		case PARTITION_STRATEGY_LIST:
			off = partition_list_bsearch(pk->partsupfunc, pk->partcollation, b, v, &equal);
			if (off >= 0 && equal)
				i = b->indexes[off];
			break;
		case PARTITION_STRATEGY_RANGE:
			/* the bound at off is at most v: the one after it bounds v's partition */
			off = partition_range_datum_bsearch(pk->partsupfunc, pk->partcollation, b, 1, &v, &equal);
			i = b->indexes[off + 1];
			break;
	}
	return i >= 0 ? i : b->default_index;
}

/*
 * The leaf partition of partitioned table root that may hold key
 * (InvalidOid if none may); false if some level is not partitioned by the
 * key column alone.
 */
static bool
route_key(Relation root, const char *key_name, int64 key, Oid *leaf)
{
	Relation	rel = root;
	bool		ok = true;

	*leaf = InvalidOid;
	for (;;)
	{
		PartitionKey pk = RelationGetPartitionKey(rel);
		PartitionDesc pd = RelationGetPartitionDesc(rel, true);
		AttrNumber	att = mcc_column_attnum(RelationGetRelid(rel), key_name);
		Datum		v;
		RegProcedure eq;
		int			i;
		Relation	next;

		if (pk == NULL || pk->partnatts != 1 || att == InvalidAttrNumber || pk->partattrs[0] != att)
		{
			ok = false;
			break;
		}
		if (!key_datum(pk->parttypid[0], key, &v, &eq) || (i = partition_of(pk, pd, v)) < 0)
			break;
		if (pd->is_leaf[i])
		{
			*leaf = pd->oids[i];
			break;
		}
		/* a partitioned partition: locked by mcc_gallery_relations, as every level */
		next = relation_open(pd->oids[i], NoLock);
		if (rel != root)
			relation_close(rel, NoLock);
		rel = next;
	}
	if (rel != root)
		relation_close(rel, NoLock);
	return ok;
}

/*
 * The valid unique btree index of operator class opclass (the key type's
 * default) on exactly leaf's key column, or InvalidOid.
 */
static Oid
key_index(Relation leaf, AttrNumber att, Oid opclass)
{
	Oid			ix = OidIsValid(opclass) ? mcc_unique_key_index(leaf, att, opclass) : InvalidOid;

	return OidIsValid(ix) && get_rel_relkind(ix) == RELKIND_INDEX ? ix : InvalidOid;
}

/* qsort: by partition, then key */
static int
cmp_routed(const void *a, const void *b)
{
	const routed_key *x = a;
	const routed_key *y = b;

	if (x->leaf != y->leaf)
		return x->leaf < y->leaf ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

/* Look up keys r[0..n) (one partition's, distinct) in its key index. */
static void
read_leaf(const mcc_gallery *g, Relation heap, Oid index, const routed_key *r, int n,
		  recheck_row_fn fn, void *arg)
{
	AttrNumber	key_att = mcc_column_attnum(RelationGetRelid(heap), g->key_name);
	AttrNumber	tpl_att = mcc_column_attnum(RelationGetRelid(heap), g->tpl_name);
	Oid			typid = TupleDescAttr(RelationGetDescr(heap), key_att - 1)->atttypid;
	Relation	irel = index_open(index, AccessShareLock);
	TupleTableSlot *slot = table_slot_create(heap, NULL);
	IndexScanDesc scan = index_beginscan(heap, irel, GetActiveSnapshot(), 1, 0);

	for (int i = 0; i < n; i++)
	{
		ScanKeyData sk;
		Datum		v;
		RegProcedure eq;

		(void) key_datum(typid, r[i].key, &v, &eq);
		ScanKeyInit(&sk, 1, BTEqualStrategyNumber, eq, v);
		index_rescan(scan, &sk, 1, NULL, 0);
		while (index_getnext_slot(scan, ForwardScanDirection, slot))
		{
			bool		isnull;
			Datum		tpl = slot_getattr(slot, tpl_att, &isnull);

			if (!isnull)
				fn(arg, r[i].key, tpl);
		}
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(irel, NoLock);
}

bool
recheck_routed(const mcc_gallery *g, const int64 *keys, int n, recheck_row_fn fn, void *arg)
{
	Relation	root = relation_open(g->relid, NoLock);
	/* every partition's key column has the root's type */
	Oid			opclass = GetDefaultOpClass(TupleDescAttr(RelationGetDescr(root), g->key_att - 1)->atttypid,
											BTREE_AM_OID);
	routed_key *r = palloc(Max(n, 1) * sizeof(routed_key));
	Oid		   *index = palloc(Max(n, 1) * sizeof(Oid));
	bool		ok = true;
	int			i;

	/* every key routed and every partition's index found before anything is read */
	for (i = 0; i < n && ok; i++)
	{
		r[i].key = keys[i];
		ok = route_key(root, g->key_name, keys[i], &r[i].leaf);
	}
	relation_close(root, NoLock);
	if (ok)
		qsort(r, n, sizeof(routed_key), cmp_routed);
	for (i = 0; i < n && ok; i++)
	{
		Relation	leaf;
		AttrNumber	att;

		index[i] = i > 0 && r[i].leaf == r[i - 1].leaf ? index[i - 1] : InvalidOid;
		if (!OidIsValid(r[i].leaf) || (i > 0 && r[i].leaf == r[i - 1].leaf))
			continue;
		leaf = table_open(r[i].leaf, AccessShareLock);
		att = mcc_column_attnum(r[i].leaf, g->key_name);
		ok = leaf->rd_rel->relkind == RELKIND_RELATION &&
			leaf->rd_tableam == GetHeapamTableAmRoutine() && att != InvalidAttrNumber &&
			mcc_column_attnum(r[i].leaf, g->tpl_name) != InvalidAttrNumber &&
			OidIsValid(index[i] = key_index(leaf, att, opclass));
		table_close(leaf, NoLock);
	}
	if (ok)
		ereport(DEBUG2,
				(errmsg_internal("identify(): the re-check of %d keys of \"%s\" routed to their partitions",
								 n, g->relname)));
	for (i = 0; i < n && ok;)
	{
		int			j = i + 1;
		int			m = 1;

		/* one partition's keys, each once */
		while (j < n && r[j].leaf == r[i].leaf)
		{
			if (r[j].key != r[m - 1 + i].key)
				r[i + m++] = r[j];
			j++;
		}
		if (OidIsValid(r[i].leaf))
		{
			Relation	leaf = table_open(r[i].leaf, NoLock);

			read_leaf(g, leaf, index[i], r + i, m, fn, arg);
			table_close(leaf, NoLock);
		}
		i = j;
	}
	pfree(r);
	pfree(index);
	return ok;
}
