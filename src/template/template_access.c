/*
 * template_access.c: read-only accessors of mcc_template (counts, profile,
 * image header, minutiae as jsonb) and mcc_cylinders(), which shows the
 * stored cylinders for inspection and tests.
 */
#include "mcc_pg.h"

#include "access/htup_details.h"
#include "common/shortest_dec.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/varbit.h"

PG_FUNCTION_INFO_V1(mcc_minutiae_count);
PG_FUNCTION_INFO_V1(mcc_cylinder_count);
PG_FUNCTION_INFO_V1(mcc_template_profile_name);
PG_FUNCTION_INFO_V1(mcc_template_info);
PG_FUNCTION_INFO_V1(mcc_template_minutiae_jsonb);
PG_FUNCTION_INFO_V1(mcc_cylinders);

#define INFO_NATTS			7
#define CYLINDERS_NATTS		7

/* Open template argument n into v. */
static void
open_arg(FunctionCallInfo fcinfo, int n, mcc_template_view *v)
{
	mcc_pg_open(MCC_GETARG_TEMPLATE(n), v);
}

/* mcc_minutiae_count(t): minutiae stored in the template. */
Datum
mcc_minutiae_count(PG_FUNCTION_ARGS)
{
	mcc_template_view v;

	open_arg(fcinfo, 0, &v);
	PG_RETURN_INT32(v.n_min);
}

/* mcc_cylinder_count(t): valid cylinders built from the minutiae. */
Datum
mcc_cylinder_count(PG_FUNCTION_ARGS)
{
	mcc_template_view v;

	open_arg(fcinfo, 0, &v);
	PG_RETURN_INT32(v.n_cyl);
}

/* mcc_profile(t): name of the template's profile (C name avoids the typedef). */
Datum
mcc_template_profile_name(PG_FUNCTION_ARGS)
{
	mcc_template_view v;

	open_arg(fcinfo, 0, &v);
	PG_RETURN_TEXT_P(cstring_to_text(v.profile->name));
}

/* mcc_template_info(t): profile, image header, counts and stored size. */
Datum
mcc_template_info(PG_FUNCTION_ARGS)
{
	mcc_template_view v;
	TupleDesc	tupdesc;
	Datum		values[INFO_NATTS];
	bool		nulls[INFO_NATTS] = {0};

	open_arg(fcinfo, 0, &v);
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);
	values[0] = PointerGetDatum(cstring_to_text(v.profile->name));
	values[1] = Int32GetDatum(v.width);
	values[2] = Int32GetDatum(v.height);
	values[3] = Int32GetDatum(v.dpi);
	values[4] = Int32GetDatum(v.n_min);
	values[5] = Int32GetDatum(v.n_cyl);
	values[6] = Int32GetDatum((int32) v.size);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/* mcc_minutiae(t): jsonb array of {x, y, theta, type, quality} objects. */
Datum
mcc_template_minutiae_jsonb(PG_FUNCTION_ARGS)
{
	mcc_template_view v;
	StringInfoData s;

	open_arg(fcinfo, 0, &v);
	initStringInfo(&s);
	appendStringInfoChar(&s, '[');
	for (int i = 0; i < v.n_min; i++)
	{
		mcc_minutia m;
		char		theta[FLOAT_SHORTEST_DECIMAL_LEN];

		mcc_template_minutia(&v, i, &m);
		/* shortest digits that read back to the same float, as float4out */
		float_to_shortest_decimal_buf(m.theta, theta);
		appendStringInfo(&s,
						 "%s{\"x\": %d, \"y\": %d, \"theta\": %s, \"type\": \"%s\", \"quality\": %d}",
						 i > 0 ? ", " : "", m.x, m.y, theta,
						 mcc_minutia_type_name(m.type), m.quality);
	}
	appendStringInfoChar(&s, ']');
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(s.data)));
}

/* Bits [0, nbits) of a vector as a bit varying, bit 0 leftmost. */
static VarBit *
bits_to_varbit(const uint64_t *words, int nbits)
{
	int			len = VARBITTOTALLEN(nbits);
	VarBit	   *r = (VarBit *) palloc0(len);
	bits8	   *p = VARBITS(r);

	SET_VARSIZE(r, len);
	VARBITLEN(r) = nbits;
	for (int b = 0; b < nbits; b++)
	{
		if ((words[b / 64] >> (b % 64)) & 1)
			p[b / 8] |= (bits8) (0x80 >> (b % 8));
	}
	return r;
}

/*
 * mcc_cylinders(t): one row per stored cylinder, in stored order (by angle):
 * its minutia (numbered from 1, as in mcc_minutiae() WITH ORDINALITY), the
 * minutia's position, the byte angle, the popcount of the value bits, the
 * value bits and, for profiles with validity masks, the mask bits.
 */
Datum
mcc_cylinders(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	mcc_template_view v;
	const mcc_profile *p;
	uint64_t	words[2 * MCC_MAX_WORDS];

	open_arg(fcinfo, 0, &v);
	p = v.profile;
	InitMaterializedSRF(fcinfo, 0);

	for (int c = 0; c < v.n_cyl; c++)
	{
		Datum		values[CYLINDERS_NATTS];
		bool		nulls[CYLINDERS_NATTS] = {0};
		int			mi = mcc_template_cyl_minutia(&v, c);
		mcc_minutia m;

		CHECK_FOR_INTERRUPTS();
		mcc_template_minutia(&v, mi, &m);
		mcc_template_cyl_bits(&v, c, words);
		values[0] = Int32GetDatum(mi + 1);
		values[1] = Int32GetDatum(m.x);
		values[2] = Int32GetDatum(m.y);
		values[3] = Int32GetDatum(mcc_template_cyl_angle(&v, c));
		values[4] = Int32GetDatum(mcc_template_cyl_popcount(&v, c));
		values[5] = VarBitPGetDatum(bits_to_varbit(words, p->nbits));
		if (p->masks)
			values[6] = VarBitPGetDatum(bits_to_varbit(words + p->words, p->nbits));
		else
			nulls[6] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		/* the tuplestore holds copies */
		pfree(DatumGetPointer(values[5]));
		if (!nulls[6])
			pfree(DatumGetPointer(values[6]));
	}
	return (Datum) 0;
}
