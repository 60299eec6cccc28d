/*
 * template_io.c: text and binary I/O of type mcc_template.
 *
 * Text form: the JSON of src/core/mcc/mcc_json.h (minutiae only; cylinders are
 * derived data and are rebuilt on input).
 *
 * Binary form (send/recv, COPY BINARY, binary protocol), all integers in
 * network byte order:
 *
 *   uint8   wire format version (MCC_WIRE_VERSION)
 *   uint8   profile id (mcc_profile.h)
 *   uint16  width, height, dpi, minutiae count n
 *   n x     int16 x, int16 y, float4 theta (IEEE bits), uint8 type,
 *           uint8 quality
 *
 * Like the text form it carries only the minutiae: recv validates them and
 * rebuilds the cylinders, so a crafted binary value cannot plant cylinders
 * that disagree with its minutiae. The wire version is independent of the
 * stored format version (mcc_template.h): storage may change without
 * changing what clients exchange.
 */
#include "mcc_pg.h"

#include "libpq/pqformat.h"

#include "mcc_json.h"

#define MCC_WIRE_VERSION	1
#define MCC_WIRE_HDRSZ		10	/* version, profile, 4 x uint16 */
#define MCC_WIRE_MINSZ		10	/* one minutia record */

/* JSON output buffer estimate: the keys, then a typical minutia (~40 bytes) */
#define JSON_HEAD_ESTIMATE		128
#define JSON_MINUTIA_ESTIMATE	48

PG_FUNCTION_INFO_V1(mcc_template_in);
PG_FUNCTION_INFO_V1(mcc_template_out);
PG_FUNCTION_INFO_V1(mcc_template_recv);
PG_FUNCTION_INFO_V1(mcc_template_send);

/* Template from JSON text: parse, validate, build the cylinders. */
struct varlena *
mcc_pg_template_from_json(const char *text, size_t len)
{
	mcc_minutiae ms;
	const mcc_profile *p = NULL;
	mcc_error	err;

	if (mcc_json_read(text, len, &ms, &p, &err) != MCC_OK)
		mcc_pg_raise(&err);
	return mcc_pg_build(&ms, p);
}

/* A template's minutiae, and its profile (mcc_pg.h). */
void
mcc_pg_minutiae(const struct varlena *t, mcc_minutiae *ms, const mcc_profile **profile)
{
	mcc_template_view v;

	mcc_pg_open(t, &v);
	mcc_template_minutiae(&v, ms);
	if (profile != NULL)
		*profile = v.profile;
}

/* Canonical JSON of a stored template. */
char *
mcc_pg_template_to_json(const struct varlena *t)
{
	mcc_minutiae ms;
	const mcc_profile *p;
	size_t		cap;
	size_t		len;
	char	   *out;

	mcc_pg_minutiae(t, &ms, &p);
	/* one pass for typical values; a second only if they do not fit */
	cap = JSON_HEAD_ESTIMATE + JSON_MINUTIA_ESTIMATE * (size_t) ms.count;
	out = palloc(cap);
	len = mcc_json_write(&ms, p, out, cap);
	if (len >= cap)
	{
		pfree(out);
		out = palloc(len + 1);
		mcc_json_write(&ms, p, out, len + 1);
	}
	return out;
}

/* Text input: the JSON form. */
Datum
mcc_template_in(PG_FUNCTION_ARGS)
{
	char	   *s = PG_GETARG_CSTRING(0);

	PG_RETURN_POINTER(mcc_pg_template_from_json(s, strlen(s)));
}

/* Text output: the canonical JSON form. */
Datum
mcc_template_out(PG_FUNCTION_ARGS)
{
	struct varlena *t = MCC_GETARG_TEMPLATE(0);

	PG_RETURN_CSTRING(mcc_pg_template_to_json(t));
}

/* Read a uint16 in network byte order (length already checked). */
static uint16
recv_uint16(StringInfo buf)
{
	return (uint16) pq_getmsgint(buf, 2);
}

/* Check the wire header and read it into ms; returns the profile. */
static const mcc_profile *
recv_header(StringInfo buf, mcc_minutiae *ms)
{
	const mcc_profile *p;
	int			version;
	int			profile_id;

	/* the version first, so that a newer format is reported as such */
	if (buf->len - buf->cursor >= 1)
	{
		version = pq_getmsgbyte(buf);
		if (version != MCC_WIRE_VERSION)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
					 errmsg("unsupported binary format version %d for type mcc_template",
							version),
					 errdetail("This version of mcc reads binary format version %d.",
							   MCC_WIRE_VERSION)));
	}
	if (buf->len - buf->cursor < MCC_WIRE_HDRSZ - 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("binary mcc_template value is truncated"),
				 errdetail("The header takes %d bytes, but the value has only %d.",
						   MCC_WIRE_HDRSZ, buf->len)));
	profile_id = pq_getmsgbyte(buf);
	p = mcc_profile_by_id(profile_id);
	if (p == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("unknown MCC profile id %d in binary mcc_template value",
						profile_id)));
	ms->width = recv_uint16(buf);
	ms->height = recv_uint16(buf);
	ms->dpi = recv_uint16(buf);
	ms->count = recv_uint16(buf);
	return p;
}

/* Binary input: validate the wire form and rebuild the template. */
Datum
mcc_template_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	mcc_minutiae ms;
	const mcc_profile *p = recv_header(buf, &ms);
	int			left;
	int			need;

	if (ms.count > MCC_MAX_MINUTIAE)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("too many minutiae: %u", ms.count),
				 errdetail("A template holds at most %d minutiae.",
						   MCC_MAX_MINUTIAE)));

	/* the minutiae must fill the rest of the value exactly */
	left = buf->len - buf->cursor;
	need = ms.count * MCC_WIRE_MINSZ;
	if (left < need)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("binary mcc_template value is truncated"),
				 errdetail("%u minutiae take %d bytes after the header, but only %d follow it.",
						   ms.count, need, left)));
	if (left > need)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg_plural("binary mcc_template value has %d trailing byte",
							   "binary mcc_template value has %d trailing bytes",
							   left - need, left - need),
				 errdetail("%u minutiae take %d bytes after the header, but %d follow it.",
						   ms.count, need, left)));

	for (int i = 0; i < ms.count; i++)
	{
		mcc_minutia *m = &ms.m[i];

		m->x = (int16) recv_uint16(buf);
		m->y = (int16) recv_uint16(buf);
		m->theta = pq_getmsgfloat4(buf);
		m->type = (uint8) pq_getmsgbyte(buf);
		m->quality = (uint8) pq_getmsgbyte(buf);
	}

	/* every field is validated, and the cylinders built, here */
	PG_RETURN_POINTER(mcc_pg_build(&ms, p));
}

/* Binary output: the wire form above. */
Datum
mcc_template_send(PG_FUNCTION_ARGS)
{
	struct varlena *t = MCC_GETARG_TEMPLATE(0);
	mcc_template_view v;
	StringInfoData buf;

	mcc_pg_open(t, &v);
	pq_begintypsend(&buf);
	pq_sendbyte(&buf, MCC_WIRE_VERSION);
	pq_sendbyte(&buf, v.profile->id);
	pq_sendint16(&buf, v.width);
	pq_sendint16(&buf, v.height);
	pq_sendint16(&buf, v.dpi);
	pq_sendint16(&buf, (uint16) v.n_min);
	for (int i = 0; i < v.n_min; i++)
	{
		mcc_minutia m;

		mcc_template_minutia(&v, i, &m);
		pq_sendint16(&buf, (uint16) m.x);
		pq_sendint16(&buf, (uint16) m.y);
		pq_sendfloat4(&buf, m.theta);
		pq_sendbyte(&buf, m.type);
		pq_sendbyte(&buf, m.quality);
	}
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}
