/*
 * template_import.c: constructors of mcc_template from ISO/ANSI records,
 * NBIS xyt text and JSON, and the exporters back to records and xyt.
 *
 * The parsing itself is src/core's (mcc_iso.h, mcc_xyt.h, mcc_json.h); this
 * file checks the SQL arguments and turns core errors into ereports.
 */
#include "mcc_pg.h"

#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "mcc_iso.h"
#include "mcc_xyt.h"

PG_FUNCTION_INFO_V1(mcc_template_from_iso);
PG_FUNCTION_INFO_V1(mcc_template_from_xyt);
PG_FUNCTION_INFO_V1(mcc_template_from_json);
PG_FUNCTION_INFO_V1(mcc_template_to_iso);
PG_FUNCTION_INFO_V1(mcc_template_to_xyt);
PG_FUNCTION_INFO_V1(mcc_iso_finger_position);

/* Raise 22004 if argument n is NULL; name is the argument's SQL name. */
static void
require_arg(FunctionCallInfo fcinfo, int n, const char *name)
{
	if (PG_ARGISNULL(n))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", name)));
}

/* An image side given in SQL, checked against the ISO/ANSI limit. */
static int
image_side_arg(int32 v, const char *name)
{
	if (v < 1 || v > MCC_MAX_IMAGE_SIDE)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("%s %d is out of range", name, v),
				 errdetail("Width and height must be between 1 and %d pixels.",
						   MCC_MAX_IMAGE_SIDE)));
	return (int) v;
}

/* Raise 22023 for a finger view number below 1. */
static void
check_view(int32 view)
{
	if (view < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("finger view number %d is invalid", view),
				 errdetail("Views are numbered from 1 in record order.")));
}

/* mcc_template_from_iso(record bytea, view int, profile text) */
Datum
mcc_template_from_iso(PG_FUNCTION_ARGS)
{
	bytea	   *rec = PG_GETARG_BYTEA_PP(0);
	int32		view = PG_GETARG_INT32(1);
	const mcc_profile *p = mcc_pg_profile(text_to_cstring(PG_GETARG_TEXT_PP(2)));
	mcc_minutiae ms;
	mcc_error	err;

	check_view(view);
	if (mcc_iso_read((const uint8_t *) VARDATA_ANY(rec), VARSIZE_ANY_EXHDR(rec),
					 view, &ms, NULL, &err) != MCC_OK)
		mcc_pg_raise(&err);
	PG_RETURN_POINTER(mcc_pg_build(&ms, p));
}

/*
 * mcc_iso_finger_position(record bytea, view int): the finger position code
 * of finger view number view (ISO/IEC 19794-2 and ANSI/INCITS 378: 0
 * unknown, 1 right thumb .. 10 left little finger), as the record gives it.
 * The record is parsed whole, as mcc_template_from_iso() parses it, so the
 * same records are refused with the same errors. A template does not keep
 * the position: persons' galleries store it in a column (docs/persons.md).
 */
Datum
mcc_iso_finger_position(PG_FUNCTION_ARGS)
{
	bytea	   *rec = PG_GETARG_BYTEA_PP(0);
	int32		view = PG_GETARG_INT32(1);
	mcc_minutiae ms;
	mcc_record_info info;
	mcc_error	err;

	check_view(view);
	if (mcc_iso_read((const uint8_t *) VARDATA_ANY(rec), VARSIZE_ANY_EXHDR(rec),
					 view, &ms, &info, &err) != MCC_OK)
		mcc_pg_raise(&err);
	PG_RETURN_INT16((int16) info.finger_position);
}

/*
 * mcc_template_from_xyt(xyt text, width int, height int, dpi int,
 * profile text): NULL xyt gives NULL; NULL width or height means "derive
 * from the data" (mcc_xyt.h); NULL dpi or profile is an error.
 */
Datum
mcc_template_from_xyt(PG_FUNCTION_ARGS)
{
	text	   *xyt;
	int			width = 0;
	int			height = 0;
	int32		dpi;
	const mcc_profile *p;
	mcc_minutiae ms;
	mcc_error	err;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	require_arg(fcinfo, 3, "dpi");
	require_arg(fcinfo, 4, "profile");
	xyt = PG_GETARG_TEXT_PP(0);
	if (!PG_ARGISNULL(1))
		width = image_side_arg(PG_GETARG_INT32(1), "width");
	if (!PG_ARGISNULL(2))
		height = image_side_arg(PG_GETARG_INT32(2), "height");
	dpi = PG_GETARG_INT32(3);
	if (dpi < 1 || dpi > MCC_MAX_DPI)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("resolution %d dpi is out of range", dpi),
				 errdetail("Resolution must be between 1 and %d dpi.",
						   MCC_MAX_DPI)));
	p = mcc_pg_profile(text_to_cstring(PG_GETARG_TEXT_PP(4)));

	if (mcc_xyt_read(VARDATA_ANY(xyt), VARSIZE_ANY_EXHDR(xyt), width, height,
					 (int) dpi, &ms, &err) != MCC_OK)
		mcc_pg_raise(&err);
	PG_RETURN_POINTER(mcc_pg_build(&ms, p));
}

/* mcc_template_from_json(jsonb): the text form, profile from the JSON. */
Datum
mcc_template_from_json(PG_FUNCTION_ARGS)
{
	Jsonb	   *jb = PG_GETARG_JSONB_P(0);
	char	   *s = JsonbToCString(NULL, &jb->root, VARSIZE(jb));

	PG_RETURN_POINTER(mcc_pg_template_from_json(s, strlen(s)));
}

/* Record formats written, by their SQL names (docs/sql-reference.md). */
static const struct
{
	const char *name;
	mcc_record_format fmt;
}			record_formats[] = {
	{"iso2005", MCC_REC_ISO2005},
	{"iso2011", MCC_REC_ISO2011},
	{"ansi2004", MCC_REC_ANSI2004},
	{"ansi2009", MCC_REC_ANSI2009},
};

/* Record format by SQL name; 22023 for another name. */
static mcc_record_format
record_format_arg(const char *name)
{
	for (size_t i = 0; i < lengthof(record_formats); i++)
		if (strcmp(name, record_formats[i].name) == 0)
			return record_formats[i].fmt;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown record format \"%s\"", name),
			 errhint("Known formats are \"iso2005\", \"iso2011\", \"ansi2004\" and \"ansi2009\".")));
	pg_unreachable();
}

/* mcc_template_to_iso(t, format text): a one-view ISO or ANSI record. */
Datum
mcc_template_to_iso(PG_FUNCTION_ARGS)
{
	struct varlena *t = MCC_GETARG_TEMPLATE(0);
	mcc_record_format fmt = record_format_arg(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	mcc_minutiae ms;
	mcc_error	err;
	size_t		len = 0;
	bytea	   *out;

	mcc_pg_minutiae(t, &ms, NULL);
	if (mcc_iso_write(&ms, fmt, NULL, &len, &err) != MCC_OK)
		mcc_pg_raise(&err);
	out = (bytea *) palloc(VARHDRSZ + len);
	if (mcc_iso_write(&ms, fmt, (uint8_t *) VARDATA(out), &len, &err) != MCC_OK)
		mcc_pg_raise(&err);
	SET_VARSIZE(out, VARHDRSZ + len);
	PG_RETURN_BYTEA_P(out);
}

/* mcc_template_to_xyt(t): NBIS xyt text in NBIS's frame. */
Datum
mcc_template_to_xyt(PG_FUNCTION_ARGS)
{
	struct varlena *t = MCC_GETARG_TEMPLATE(0);
	mcc_minutiae ms;
	size_t		len;
	char	   *s;

	mcc_pg_minutiae(t, &ms, NULL);
	len = mcc_xyt_write(&ms, NULL, 0);
	s = palloc(len + 1);
	mcc_xyt_write(&ms, s, len + 1);
	PG_RETURN_TEXT_P(cstring_to_text_with_len(s, (int) len));
}
