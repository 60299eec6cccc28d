/*
 * synthetic.c: mcc_synthetic(), galleries of synthetic fingerprints in SQL.
 *
 * mcc_synthetic(fingers, impressions, seed, first_finger, profile) returns
 * fingers * impressions rows (finger, impression, template): fingers
 * first_finger .. first_finger + fingers - 1, each with impressions
 * 0 .. impressions - 1, made by src/core/mcc/mcc_synth.h with its default
 * parameters and the given seed, and built into templates of the given
 * profile. The same arguments always give the same rows, and the numbering
 * is the core's: any caller of mcc_synth.h with the same seed, finger and
 * impression makes the same minutiae.
 *
 * It is value-per-call: one template is built per row, so a generator
 * feeding INSERT ... SELECT never holds more than one template. The master
 * finger is built once per finger and kept for its impressions.
 *
 * Declared IMMUTABLE: the result depends only on the arguments (no table,
 * setting or clock is read); PostgreSQL never pre-evaluates a set-returning
 * function at plan time, so the marking costs nothing and states the truth.
 */
#include "mcc_pg.h"

#include "access/htup_details.h"
#include "funcapi.h"
#include "utils/builtins.h"

#include "mcc_synth.h"

PG_FUNCTION_INFO_V1(mcc_synthetic);

/* What the calls of one mcc_synthetic() scan share. */
typedef struct synth_state
{
	mcc_synth_params sp;
	const mcc_profile *profile;
	int64		first_finger;
	int32		impressions;
	int64		master_index;	/* finger index held in master, -1 none */
	mcc_minutiae master;
} synth_state;

/* Check the arguments and set up the state of the scan. */
static synth_state *
synth_begin(FunctionCallInfo fcinfo, uint64 *rows)
{
	int32		fingers = PG_GETARG_INT32(0);
	int32		impressions = PG_GETARG_INT32(1);
	int64		first = PG_GETARG_INT64(3);
	synth_state *st;

	if (fingers < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("fingers must not be negative")));
	if (impressions < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("impressions must not be negative")));
	if (fingers > 0 && first > PG_INT64_MAX - (fingers - 1))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("finger numbers would exceed the bigint range"),
				 errdetail("first_finger is " INT64_FORMAT " and fingers is %d.",
						   first, fingers)));

	st = palloc0(sizeof(synth_state));
	st->profile = mcc_pg_profile(text_to_cstring(PG_GETARG_TEXT_PP(4)));
	mcc_synth_defaults(&st->sp);
	st->sp.seed = (uint64) PG_GETARG_INT64(2);
	st->first_finger = first;
	st->impressions = impressions;
	st->master_index = -1;
	*rows = (uint64) fingers * (uint64) impressions;
	return st;
}

/* Row n of the scan as a heap tuple. */
static Datum
synth_row(synth_state *st, uint64 n, TupleDesc desc)
{
	int64		index = (int64) (n / (uint64) st->impressions);
	int32		impression = (int32) (n % (uint64) st->impressions);
	int64		finger = st->first_finger + index;
	mcc_minutiae view;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	if (index != st->master_index)
	{
		mcc_synth_master(&st->sp, (uint64) finger, &st->master);
		st->master_index = index;
	}
	mcc_synth_impression(&st->sp, &st->master, (uint64) finger,
						 (uint64) impression, &view);
	values[0] = Int64GetDatum(finger);
	values[1] = Int32GetDatum(impression);
	values[2] = PointerGetDatum(mcc_pg_build(&view, st->profile));
	return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}

/*
 * mcc_synthetic(fingers int, impressions int, seed bigint, first_finger
 * bigint, profile text) RETURNS TABLE(finger bigint, impression int,
 * template mcc_template)
 */
Datum
mcc_synthetic(PG_FUNCTION_ARGS)
{
	FuncCallContext *fctx;

	if (SRF_IS_FIRSTCALL())
	{
		MemoryContext old;
		TupleDesc	desc;
		uint64		rows;

		fctx = SRF_FIRSTCALL_INIT();
		old = MemoryContextSwitchTo(fctx->multi_call_memory_ctx);
		if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
			elog(ERROR, "mcc_synthetic must return a row type");
		fctx->tuple_desc = BlessTupleDesc(desc);
		fctx->user_fctx = synth_begin(fcinfo, &rows);
		fctx->max_calls = rows;
		MemoryContextSwitchTo(old);
	}
	fctx = SRF_PERCALL_SETUP();
	if (fctx->call_cntr < fctx->max_calls)
	{
		/* build the row first: SRF_RETURN_NEXT advances call_cntr */
		Datum		row = synth_row(fctx->user_fctx, fctx->call_cntr, fctx->tuple_desc);

		SRF_RETURN_NEXT(fctx, row);
	}
	SRF_RETURN_DONE(fctx);
}
