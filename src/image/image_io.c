/*
 * image_io.c: image arguments and results of the SQL functions
 * (image_pg.h), the image utility functions mcc_image_info,
 * mcc_image_to_array, mcc_image_from_array and mcc_image_crop, and the
 * mcc.image_threads setting.
 */
#include "image_pg.h"

#include <unistd.h>

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/guc.h"

/* mcc.image_threads default: the CPUs online, at most this many. */
#define MCC_IMAGE_THREADS_CAP	16
#define MCC_IMAGE_THREADS_MAX	64

int			mcc_image_threads = 1;

PG_FUNCTION_INFO_V1(mcc_image_info_sql);
PG_FUNCTION_INFO_V1(mcc_image_to_array_sql);
PG_FUNCTION_INFO_V1(mcc_image_from_array_sql);
PG_FUNCTION_INFO_V1(mcc_image_crop_sql);

/* Define mcc.image_threads; called once from _PG_init. */
void
mcc_image_init(void)
{
	long		n = sysconf(_SC_NPROCESSORS_ONLN);
	int			def = n < 1 ? 1 : n > MCC_IMAGE_THREADS_CAP ? MCC_IMAGE_THREADS_CAP : (int) n;

	DefineCustomIntVariable("mcc.image_threads",
							"Worker threads of one image search (mcc_sad_locate, mcc_sad_map).",
							"The default is the number of CPUs, at most 16.",
							&mcc_image_threads,
							def, 1, MCC_IMAGE_THREADS_MAX,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);
	mcc_image_engine_init();
}

/* Raise a decoder's error, naming the argument when what is not NULL. */
static void
raise_image_error(const char *what, const mcc_error *err)
{
	if (what == NULL)
		mcc_pg_raise(err);
	ereport(ERROR,
			(errcode(mcc_pg_sqlstate(err->status)),
			 errmsg("invalid %s image: %s", what, err->message),
			 err->detail[0] ? errdetail("%s", err->detail) : 0));
}

/*
 * Decode a PGM or PNG bytea into palloc'd pixels: the one image input of
 * every image feature (SAD search, elastic matching, the utilities).
 */
void
mcc_pg_image_arg(const bytea *b, const char *what, mcc_image *img, mcc_image_info *info_out)
{
	const uint8_t *d = (const uint8_t *) VARDATA_ANY(b);
	size_t		len = VARSIZE_ANY_EXHDR(b);
	mcc_image_info info;
	mcc_error	err;

	if (mcc_image_probe(d, len, &info, &err) != MCC_OK)
		raise_image_error(what, &err);
	img->stride = info.width;
	img->pixels = palloc((size_t) info.width * info.height);
	if (mcc_image_decode(d, len, img, &err) != MCC_OK)
		raise_image_error(what, &err);
	if (info_out)
		*info_out = info;
}

/* Decode a PGM or PNG bytea into palloc'd pixels; errors as the decoder says. */
void
mcc_pg_image_from_bytea(const bytea *b, mcc_image *img, mcc_image_info *info_out)
{
	mcc_pg_image_arg(b, NULL, img, info_out);
}

/* A smallint[][] (rows of pixels) as an image. */
void
mcc_pg_image_from_array(ArrayType *a, const char *what, mcc_image *img)
{
	int			ndim = ARR_NDIM(a);
	const int16 *v;
	uint32		w,
				h;
	mcc_error	err;

	if (ARR_ELEMTYPE(a) != INT2OID)
		elog(ERROR, "%s array is not of type smallint[]", what);
	if (ndim == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s array is empty", what)));
	if (ndim != 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s array must have two dimensions", what),
				 errdetail("It has %d; an image is smallint[rows][columns].", ndim)));
	h = (uint32) ARR_DIMS(a)[0];
	w = (uint32) ARR_DIMS(a)[1];
	if (mcc_image_check_size(w, h, &err) != MCC_OK)
		mcc_pg_raise(&err);
	if (array_contains_nulls(a))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s array contains NULL pixels", what)));
	v = (const int16 *) ARR_DATA_PTR(a);
	img->width = w;
	img->height = h;
	img->stride = w;
	img->pixels = palloc((size_t) w * h);
	for (size_t i = 0; i < (size_t) w * h; i++)
	{
		if (v[i] < 0 || v[i] > 255)
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("pixel value %d of the %s array is outside 0..255", v[i], what),
					 errdetail("It is element [%zu][%zu] of the array (x = %zu, y = %zu).",
							   i / w + 1, i % w + 1, i % w, i / w)));
		img->pixels[i] = (uint8_t) v[i];
	}
}

/* A binary PGM bytea of the image. */
bytea *
mcc_pg_image_to_pgm(const mcc_image *img)
{
	size_t		n = mcc_image_pgm_size(img->width, img->height);
	bytea	   *out = palloc(VARHDRSZ + n);

	mcc_image_write_pgm(img, (uint8_t *) VARDATA(out));
	SET_VARSIZE(out, VARHDRSZ + n);
	return out;
}

/* mcc_image_info(bytea): width, height and format of a valid image. */
Datum
mcc_image_info_sql(PG_FUNCTION_ARGS)
{
	bytea	   *b = PG_GETARG_BYTEA_PP(0);
	mcc_image	img;
	mcc_image_info info;
	TupleDesc	desc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	mcc_pg_image_from_bytea(b, &img, &info);
	pfree(img.pixels);
	values[0] = Int32GetDatum((int32) info.width);
	values[1] = Int32GetDatum((int32) info.height);
	values[2] = CStringGetTextDatum(mcc_image_format_name(info.format));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}

/* A zeroed two-dimensional array without NULLs (image_pg.h). */
ArrayType *
mcc_pg_array_2d(Oid elemtype, int elemsize, uint32 rows, uint32 cols)
{
	Size		bytes = ARR_OVERHEAD_NONULLS(2) + (Size) rows * cols * elemsize;
	ArrayType  *a;

	if (!AllocSizeIsValid(bytes))
		return NULL;
	a = (ArrayType *) palloc0(bytes);
	SET_VARSIZE(a, bytes);
	a->ndim = 2;
	a->dataoffset = 0;
	a->elemtype = elemtype;
	ARR_DIMS(a)[0] = (int) rows;
	ARR_DIMS(a)[1] = (int) cols;
	ARR_LBOUND(a)[0] = 1;
	ARR_LBOUND(a)[1] = 1;
	return a;
}

/* mcc_image_to_array(bytea): the pixels as smallint[height][width]. */
Datum
mcc_image_to_array_sql(PG_FUNCTION_ARGS)
{
	bytea	   *b = PG_GETARG_BYTEA_PP(0);
	mcc_image	img;
	ArrayType  *a;
	int16	   *v;

	/* the largest image's array fits in one allocation: a is never NULL */
	StaticAssertStmt(ARR_OVERHEAD_NONULLS(2) + (uint64) MCC_IMAGE_MAX_PIXELS * sizeof(int16) <= MaxAllocSize,
					 "the largest image does not fit a smallint[][]");
	mcc_pg_image_from_bytea(b, &img, NULL);
	a = mcc_pg_array_2d(INT2OID, sizeof(int16), img.height, img.width);
	v = (int16 *) ARR_DATA_PTR(a);
	for (size_t i = 0; i < (size_t) img.width * img.height; i++)
		v[i] = img.pixels[i];
	PG_RETURN_ARRAYTYPE_P(a);
}

/* mcc_image_from_array(smallint[][]): the binary PGM of the pixels. */
Datum
mcc_image_from_array_sql(PG_FUNCTION_ARGS)
{
	ArrayType  *a = PG_GETARG_ARRAYTYPE_P(0);
	mcc_image	img;

	mcc_pg_image_from_array(a, "image", &img);
	PG_RETURN_BYTEA_P(mcc_pg_image_to_pgm(&img));
}

/* mcc_image_crop(bytea, x, y, width, height): a rectangle as a binary PGM. */
Datum
mcc_image_crop_sql(PG_FUNCTION_ARGS)
{
	bytea	   *b = PG_GETARG_BYTEA_PP(0);
	mcc_image	img,
				c;
	mcc_error	err;

	mcc_pg_image_from_bytea(b, &img, NULL);
	if (mcc_image_crop(&img, PG_GETARG_INT32(1), PG_GETARG_INT32(2), PG_GETARG_INT32(3),
					   PG_GETARG_INT32(4), &c, &err) != MCC_OK)
		mcc_pg_raise(&err);
	PG_RETURN_BYTEA_P(mcc_pg_image_to_pgm(&c));
}
