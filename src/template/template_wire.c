/*
 * template_wire.c: an mcc_template from its binary wire form in a bytea.
 *
 * mcc_template_send() gives the versioned wire form as bytea; this is the
 * way back, through the type's own receive function, for callers that carry
 * templates as bytea. The scale-out extensions need it (docs/scale-out.md):
 * PL/Proxy sends only a fixed list of built-in types in binary, bytea among
 * them, so templates cross between coordinator and shards as the bytea of
 * mcc_template_send() and are received with this. Those extensions declare
 * it; mcc itself does not, so nothing changes for mcc's own SQL surface.
 */
#include "postgres.h"
#include "fmgr.h"

#include "lib/stringinfo.h"
#include "utils/lsyscache.h"

PG_FUNCTION_INFO_V1(mcc_template_from_wire);

/*
 * The value of the function's declared result type (mcc_template) whose
 * binary form is the bytea argument: the receive function validates it and
 * must consume every byte (ReceiveFunctionCall checks that).
 */
Datum
mcc_template_from_wire(PG_FUNCTION_ARGS)
{
	bytea	   *wire = PG_GETARG_BYTEA_PP(0);
	Oid			rettype = get_func_rettype(fcinfo->flinfo->fn_oid);
	Oid			recv;
	Oid			ioparam;
	StringInfoData buf;

	getTypeBinaryInputInfo(rettype, &recv, &ioparam);

	/* a NUL-terminated copy, as the receive functions' StringInfo contract asks */
	initStringInfo(&buf);
	appendBinaryStringInfo(&buf, VARDATA_ANY(wire), VARSIZE_ANY_EXHDR(wire));

	PG_RETURN_DATUM(OidReceiveFunctionCall(recv, &buf, ioparam, -1));
}
