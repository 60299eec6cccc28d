/*
 * extract_sql.c: enrolment from a fingerprint image (docs/images.md,
 * "Minutiae extraction"): mcc_template_from_image and
 * mcc_minutiae_from_image.
 *
 * The image is decoded by the image module's one decoder (src/image/image_io.c),
 * the minutiae extracted by src/core's mcc_extract.h in this backend, on
 * one core (tens of milliseconds for a 500-dpi print: docs/benchmarks.md).
 * The core allocates with malloc and frees everything before it returns,
 * and nothing here raises while it runs, so an error leaks nothing; the
 * query is interruptible before and after.
 */
#include "image_pg.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "mcc_extract.h"

PG_FUNCTION_INFO_V1(mcc_template_from_image);
PG_FUNCTION_INFO_V1(mcc_minutiae_from_image);

/* Extract the minutiae of argument 0 at the dpi of argument 1. */
static void
extract(FunctionCallInfo fcinfo, uint32 min_minutiae, mcc_minutiae *ms)
{
	bytea	   *b = PG_GETARG_BYTEA_PP(0);
	int32		dpi = PG_GETARG_INT32(1);
	mcc_extract_params p;
	mcc_image	img;
	mcc_error	err;
	mcc_status	st;

	if (dpi < MCC_EXTRACT_MIN_DPI || dpi > MCC_EXTRACT_MAX_DPI)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("resolution %d dpi is out of range for minutiae extraction", dpi),
				 errdetail("Images from %d to %d dpi are supported.",
						   MCC_EXTRACT_MIN_DPI, MCC_EXTRACT_MAX_DPI)));
	mcc_pg_image_arg(b, NULL, &img, NULL);
	mcc_extract_params_default(&p);
	p.dpi = (uint32_t) dpi;
	p.min_minutiae = min_minutiae;
	CHECK_FOR_INTERRUPTS();
	st = mcc_extract_minutiae(&img, &p, ms, NULL, NULL, &err);
	pfree(img.pixels);
	if (st != MCC_OK)
		mcc_pg_raise(&err);
	CHECK_FOR_INTERRUPTS();
}

/*
 * mcc_template_from_image(image bytea, dpi integer, profile text,
 * min_minutiae integer): the template of the image's minutiae.
 */
Datum
mcc_template_from_image(PG_FUNCTION_ARGS)
{
	const mcc_profile *p = mcc_pg_profile(text_to_cstring(PG_GETARG_TEXT_PP(2)));
	int32		min = PG_GETARG_INT32(3);
	mcc_minutiae *ms;

	if (min < 0 || min > MCC_MAX_MINUTIAE)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("min_minutiae %d is out of range", min),
				 errdetail("It must be between 0 and %d.", MCC_MAX_MINUTIAE)));
	ms = palloc(sizeof(mcc_minutiae));
	extract(fcinfo, (uint32) min, ms);
	PG_RETURN_POINTER(mcc_pg_build(ms, p));
}

/*
 * mcc_minutiae_from_image(image bytea, dpi integer): the minutiae as rows
 * (x, y, theta, type, quality), in the template's conventions; none is an
 * empty result, not an error.
 */
Datum
mcc_minutiae_from_image(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	mcc_minutiae *ms = palloc(sizeof(mcc_minutiae));

	extract(fcinfo, 0, ms);
	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < ms->count; i++)
	{
		const mcc_minutia *m = &ms->m[i];
		Datum		values[5];
		bool		nulls[5] = {false, false, false, false, false};

		values[0] = Int32GetDatum(m->x);
		values[1] = Int32GetDatum(m->y);
		values[2] = Float8GetDatum((double) m->theta);
		values[3] = CStringGetTextDatum(mcc_minutia_type_name(m->type));
		values[4] = Int32GetDatum(m->quality);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
