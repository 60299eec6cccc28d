/*
 * pg_error.c: the bridge between src/core's mcc_error and ereport, the
 * template helpers every SQL function uses, and small catalog helpers.
 */
#include "mcc_pg.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"

/* SQLSTATE for a core status (table in docs/architecture.md). */
int
mcc_pg_sqlstate(mcc_status status)
{
	switch (status)
	{
		case MCC_ERR_SYNTAX:
			return ERRCODE_INVALID_TEXT_REPRESENTATION;
		case MCC_ERR_VALUE:
			return ERRCODE_INVALID_PARAMETER_VALUE;
		case MCC_ERR_RANGE:
			return ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE;
		case MCC_ERR_LIMIT:
			return ERRCODE_PROGRAM_LIMIT_EXCEEDED;
		case MCC_ERR_TRUNCATED:
		case MCC_ERR_VERSION:
			return ERRCODE_INVALID_BINARY_REPRESENTATION;
		case MCC_ERR_MEMORY:
			return ERRCODE_OUT_OF_MEMORY;
		case MCC_OK:
		case MCC_ERR_INTERNAL:
			break;
	}
	return ERRCODE_INTERNAL_ERROR;
}

/* Raise a core error. */
void
mcc_pg_raise(const mcc_error *err)
{
	ereport(ERROR,
			(errcode(mcc_pg_sqlstate(err->status)),
			 errmsg("%s", err->message),
			 err->detail[0] ? errdetail("%s", err->detail) : 0));
	pg_unreachable();
}

/* Raise 08P01 "malformed reply from the matcher engine" with a detail (mcc_pg.h). */
void
mcc_pg_malformed_reply(const char *fmt,...)
{
	char		detail[256];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	ereport(ERROR,
			(errcode(ERRCODE_PROTOCOL_VIOLATION),
			 errmsg("malformed reply from the matcher engine"),
			 errdetail_internal("%s", detail)));
	pg_unreachable();
}

/* The first NULL argument among 0 .. n - 1 (mcc_pg.h). */
void
mcc_pg_require_args(FunctionCallInfo fcinfo, const char *fn, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s of %s must not be null", names[i], fn)));
}

/* Raise data_corrupted for a value that failed to open. */
static void
raise_corrupt(const mcc_error *err)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("corrupt mcc_template value: %s", err->message),
			 err->detail[0] ? errdetail_internal("%s", err->detail) : 0));
}

/* Open a stored template or report it as corrupt. */
void
mcc_pg_open(const struct varlena *t, mcc_template_view *v)
{
	mcc_error	err;

	if (mcc_template_open((const uint8_t *) t, VARSIZE(t), v, &err) != MCC_OK)
		raise_corrupt(&err);
}

/* Open a value read back from a table (mcc_template_open_stored's checks). */
void
mcc_pg_open_stored(const struct varlena *t, mcc_template_view *v)
{
	mcc_error	err;

	if (mcc_template_open_stored((const uint8_t *) t, VARSIZE(t), v, &err) != MCC_OK)
		raise_corrupt(&err);
}

/*
 * Build a template into palloc'd memory. The buffer has room for a cylinder
 * per minutia, the most there can be, so that the cylinders are created
 * once rather than once to learn the size and again to store them.
 */
struct varlena *
mcc_pg_build(const mcc_minutiae *ms, const mcc_profile *p)
{
	mcc_error	err;
	int			max_cyl = Min((int) ms->count, MCC_MAX_CYL);
	size_t		size = mcc_template_size(p, ms->count, max_cyl);
	struct varlena *t = (struct varlena *) palloc(size);

	if (mcc_template_build(ms, p, (uint8_t *) t, &size, &err) != MCC_OK)
		mcc_pg_raise(&err);
	SET_VARSIZE(t, size);
	return t;
}

/* Profile by name or a clear error. */
const mcc_profile *
mcc_pg_profile(const char *name)
{
	const mcc_profile *p = mcc_profile_by_name(name, (int) strlen(name));

	if (p == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown MCC profile \"%s\"", name),
				 errhint("Known profiles are \"gpu2015\" and \"tpami2010\".")));
	return p;
}

/* One attribute of a heap tuple, by deforming the tuple (see mcc_pg.h). */
Datum
mcc_pg_tuple_attr(HeapTuple tup, TupleDesc desc, AttrNumber attnum, bool *isnull)
{
	Datum		stack_values[32];
	bool		stack_nulls[32];
	Datum	   *values = stack_values;
	bool	   *nulls = stack_nulls;
	Datum		result;

	Assert(attnum > 0 && attnum <= desc->natts);
	if (desc->natts > lengthof(stack_values))
	{
		values = palloc(desc->natts * sizeof(Datum));
		nulls = palloc(desc->natts * sizeof(bool));
	}
	heap_deform_tuple(tup, desc, values, nulls);
	result = values[attnum - 1];
	*isnull = nulls[attnum - 1];
	if (values != stack_values)
	{
		pfree(values);
		pfree(nulls);
	}
	return result;
}

/* The schema an extension lives in (PostgreSQL 15 does not export this). */
Oid
mcc_pg_extension_schema(Oid extoid)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			nsp = InvalidOid;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(extoid));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		nsp = ((Form_pg_extension) GETSTRUCT(tup))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return nsp;
}
