/*
 * mcc_template.c: serialize and check the stored template (layout in
 * mcc_template.h).
 *
 * mcc_template_open() is the gate every stored or received blob passes
 * before anything reads its cylinders, so it checks every field against the
 * layout and the cylinder metadata against the bits and the minutiae, never
 * reading outside the blob: corrupt data is refused, never trusted.
 */
#include "mcc_template.h"

#include <stdlib.h>
#include <string.h>

#include "mcc_cylinder.h"
#include "mcc_popcount.h"

/* Header field offsets (from the start of the varlena). */
#define OFF_VERSION		4
#define OFF_PROFILE		5
#define OFF_FLAGS		6
#define OFF_WIDTH		8
#define OFF_HEIGHT		10
#define OFF_DPI			12
#define OFF_NMIN		14
#define OFF_NCYL		16
#define OFF_WORDS		18
#define OFF_RESERVED	20

/* Round up to a multiple of 8. */
static size_t
align8(size_t n)
{
	return (n + 7) & ~(size_t) 7;
}

/* Read a host-order uint16 at any alignment. */
static uint16_t
rd16(const uint8_t *p)
{
	uint16_t	v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Read a host-order uint32 at any alignment. */
static uint32_t
rd32(const uint8_t *p)
{
	uint32_t	v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Write a host-order uint16 at any alignment. */
static void
wr16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, sizeof(v));
}

/* Offset of the cylinder bits for n_min minutiae. */
static size_t
bits_offset(int n_min)
{
	return align8(MCC_TEMPLATE_HDRSZ + (size_t) MCC_MINUTIA_RECSZ * n_min);
}

/* Bytes of a template with n_min minutiae and n_cyl cylinders (layout in the header). */
size_t
mcc_template_size(const mcc_profile *p, int n_min, int n_cyl)
{
	return bits_offset(n_min) +
		(size_t) n_cyl * mcc_profile_cyl_words(p) * 8 +
		(size_t) n_cyl * MCC_CYLMETA_RECSZ;
}

/* Encode minutia m as a 12-byte record at out. */
static void
put_minutia(uint8_t *out, const mcc_minutia *m)
{
	memset(out, 0, MCC_MINUTIA_RECSZ);
	memcpy(out, &m->x, 2);
	memcpy(out + 2, &m->y, 2);
	memcpy(out + 4, &m->theta, 4);
	out[8] = m->type;
	out[9] = m->quality;
}

/* Decode the 12-byte record at rec. */
static void
get_minutia(const uint8_t *rec, mcc_minutia *m)
{
	memcpy(&m->x, rec, 2);
	memcpy(&m->y, rec + 2, 2);
	memcpy(&m->theta, rec + 4, 4);
	m->type = rec[8];
	m->quality = rec[9];
}

/* Validate, create cylinders, serialize (two-call protocol in the header). */
mcc_status
mcc_template_build(const mcc_minutiae *ms, const mcc_profile *p,
				   uint8_t *out, size_t *size, mcc_error *err)
{
	mcc_cylinder *cyl;
	mcc_status	st;
	int			n_cyl;
	int			words;
	size_t		need;
	size_t		boff;
	size_t		moff;

	if (p == NULL)
		return mcc_error_set(err, MCC_ERR_INTERNAL, "no template profile given");
	st = mcc_minutiae_validate(ms, err);
	if (st != MCC_OK)
		return st;
	if (ms->count == 0)
		return mcc_error_set(err, MCC_ERR_VALUE, "template has no minutiae"),
			mcc_error_detail(err, "A template needs at least one minutia.");

	cyl = malloc(sizeof(mcc_cylinder) * MCC_MAX_CYL);
	if (cyl == NULL)
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
	st = mcc_cylinders_create(ms, p, cyl, &n_cyl, err);
	if (st != MCC_OK)
	{
		free(cyl);
		return st;
	}
	need = mcc_template_size(p, ms->count, n_cyl);
	if (out == NULL)
	{
		free(cyl);
		*size = need;
		return MCC_OK;
	}
	if (*size < need)
	{
		free(cyl);
		return mcc_error_set(err, MCC_ERR_INTERNAL,
							 "template buffer of %zu bytes is too small for %zu",
							 *size, need);
	}

	words = mcc_profile_cyl_words(p);
	memset(out + 4, 0, need - 4);
	out[OFF_VERSION] = MCC_TEMPLATE_VERSION;
	out[OFF_PROFILE] = p->id;
	wr16(out + OFF_WIDTH, ms->width);
	wr16(out + OFF_HEIGHT, ms->height);
	wr16(out + OFF_DPI, ms->dpi);
	wr16(out + OFF_NMIN, ms->count);
	wr16(out + OFF_NCYL, (uint16_t) n_cyl);
	wr16(out + OFF_WORDS, (uint16_t) words);
	for (int i = 0; i < ms->count; i++)
		put_minutia(out + MCC_TEMPLATE_HDRSZ + (size_t) i * MCC_MINUTIA_RECSZ, &ms->m[i]);
	boff = bits_offset(ms->count);
	moff = boff + (size_t) n_cyl * words * 8;
	for (int c = 0; c < n_cyl; c++)
	{
		uint8_t    *meta = out + moff + (size_t) c * MCC_CYLMETA_RECSZ;

		/* value words are bits[0..words), masks follow in bits[words..) */
		memcpy(out + boff + (size_t) c * words * 8, cyl[c].bits, (size_t) words * 8);
		wr16(meta, cyl[c].popcount);
		meta[2] = cyl[c].angle;
		meta[3] = cyl[c].minutia;
	}
	free(cyl);
	*size = need;
	return MCC_OK;
}

/* Fail with a "corrupt template" error and a detail sentence. */
#define CORRUPT(...) \
	(mcc_error_set(err, MCC_ERR_VALUE, "corrupt mcc_template"), \
	 mcc_error_detail(err, __VA_ARGS__))

/* Check the header fields; fills the counts of v. */
static mcc_status
open_header(const uint8_t *base, size_t size, mcc_template_view *v, mcc_error *err)
{
	const mcc_profile *p;
	size_t		need;

	if (size < MCC_TEMPLATE_HDRSZ)
		return mcc_error_set(err, MCC_ERR_TRUNCATED, "mcc_template is truncated"),
			mcc_error_detail(err, "It has %zu bytes; the header alone needs %d.",
							 size, MCC_TEMPLATE_HDRSZ);
	if (base[OFF_VERSION] != MCC_TEMPLATE_VERSION)
		return mcc_error_set(err, MCC_ERR_VERSION,
							 "unsupported mcc_template format version %u",
							 base[OFF_VERSION]),
			mcc_error_detail(err, "This build reads version %d.", MCC_TEMPLATE_VERSION);
	p = mcc_profile_by_id(base[OFF_PROFILE]);
	if (p == NULL)
		return mcc_error_set(err, MCC_ERR_VERSION,
							 "unknown mcc_template profile %u", base[OFF_PROFILE]);
	if (rd16(base + OFF_FLAGS) != 0 || rd32(base + OFF_RESERVED) != 0)
		return CORRUPT("Its flags or reserved header bytes are not zero.");

	v->base = base;
	v->size = size;
	v->profile = p;
	v->width = rd16(base + OFF_WIDTH);
	v->height = rd16(base + OFF_HEIGHT);
	v->dpi = rd16(base + OFF_DPI);
	v->n_min = rd16(base + OFF_NMIN);
	v->n_cyl = rd16(base + OFF_NCYL);
	v->words = rd16(base + OFF_WORDS);
	if (v->n_min < 1 || v->n_min > MCC_MAX_MINUTIAE)
		return CORRUPT("It has %d minutiae; 1 to %d are allowed.",
					   v->n_min, MCC_MAX_MINUTIAE);
	if (v->n_cyl > v->n_min || v->n_cyl > MCC_MAX_CYL)
		return CORRUPT("It has %d cylinders for %d minutiae.", v->n_cyl, v->n_min);
	if (v->words != mcc_profile_cyl_words(p))
		return CORRUPT("It stores %d words per cylinder; profile \"%s\" uses %d.",
					   v->words, p->name, mcc_profile_cyl_words(p));
	need = mcc_template_size(p, v->n_min, v->n_cyl);
	if (size < need)
		return mcc_error_set(err, MCC_ERR_TRUNCATED, "mcc_template is truncated"),
			mcc_error_detail(err, "It has %zu bytes; its counts need %zu.", size, need);
	if (size > need)
		return CORRUPT("It has %zu bytes; its counts need %zu.", size, need);
	v->minutiae = base + MCC_TEMPLATE_HDRSZ;
	v->bits = base + bits_offset(v->n_min);
	v->meta = v->bits + (size_t) v->n_cyl * v->words * 8;
	return MCC_OK;
}

/* Check the minutiae records as mcc_minutiae_validate() checks a set. */
static mcc_status
open_minutiae(const mcc_template_view *v, mcc_error *err)
{
	mcc_minutiae ms;
	size_t		end = MCC_TEMPLATE_HDRSZ + (size_t) MCC_MINUTIA_RECSZ * v->n_min;

	for (int i = 0; i < v->n_min; i++)
		if (rd16(v->minutiae + (size_t) i * MCC_MINUTIA_RECSZ + 10) != 0)
			return CORRUPT("Minutia %d has non-zero reserved bytes.", i + 1);
	for (size_t off = end; off < bits_offset(v->n_min); off++)
		if (v->base[off] != 0)
			return CORRUPT("Its padding bytes are not zero.");
	mcc_template_minutiae(v, &ms);
	return mcc_minutiae_validate(&ms, err);
}

/* Check every cylinder's metadata against its bits and its minutia. */
static mcc_status
open_cylinders(const mcc_template_view *v, mcc_error *err)
{
	const mcc_profile *p = v->profile;
	int			vw = p->words;
	int			tail = p->nbits % 64;	/* used bits of the last word, 0: all */
	uint64_t	tail_mask = tail ? (UINT64_C(1) << tail) - 1 : ~UINT64_C(0);
	int			prev_key = -1;

	for (int c = 0; c < v->n_cyl; c++)
	{
		const uint8_t *meta = v->meta + (size_t) c * MCC_CYLMETA_RECSZ;
		uint64_t	w[2 * MCC_MAX_WORDS];
		int			pc = 0;
		int			idx = meta[3];
		int			key = meta[2] * 256 + idx;
		mcc_minutia m;

		if (idx >= v->n_min)
			return CORRUPT("Cylinder %d refers to minutia %d of %d.", c + 1, idx + 1, v->n_min);
		if (key <= prev_key)
			return CORRUPT("Cylinder %d is out of order.", c + 1);
		prev_key = key;
		mcc_template_minutia(v, idx, &m);
		if (meta[2] != mcc_angle_to_byte(m.theta))
			return CORRUPT("Cylinder %d has angle %d; its minutia has %d.",
						   c + 1, meta[2], mcc_angle_to_byte(m.theta));
		mcc_template_cyl_bits(v, c, w);
		for (int i = 0; i < vw; i++)
			pc += mcc_popcount64_swar(w[i]);
		if (pc != rd16(meta))
			return CORRUPT("Cylinder %d records popcount %d; its bits have %d.",
						   c + 1, rd16(meta), pc);
		if ((w[vw - 1] & ~tail_mask) != 0 ||
			(p->masks && (w[2 * vw - 1] & ~tail_mask) != 0))
			return CORRUPT("Cylinder %d has bits set beyond bit %d.", c + 1, p->nbits - 1);
		if (p->masks)
			for (int i = 0; i < vw; i++)
				if ((w[i] & ~w[vw + i]) != 0)
					return CORRUPT("Cylinder %d has value bits in invalid cells.", c + 1);
	}
	return MCC_OK;
}

/* Check a blob completely and fill a view of it. */
mcc_status
mcc_template_open(const uint8_t *base, size_t size, mcc_template_view *v,
				  mcc_error *err)
{
	mcc_status	st;

	st = open_header(base, size, v, err);
	if (st == MCC_OK)
		st = open_minutiae(v, err);
	if (st == MCC_OK)
		st = open_cylinders(v, err);
	return st;
}

mcc_status
mcc_template_open_header(const uint8_t *base, size_t size, mcc_template_view *v,
						 mcc_error *err)
{
	return open_header(base, size, v, err);
}

/* Decode minutia i of an opened template. */
void
mcc_template_minutia(const mcc_template_view *v, int i, mcc_minutia *m)
{
	get_minutia(v->minutiae + (size_t) i * MCC_MINUTIA_RECSZ, m);
}

/* Decode the whole minutiae set of an opened template. */
void
mcc_template_minutiae(const mcc_template_view *v, mcc_minutiae *ms)
{
	ms->width = v->width;
	ms->height = v->height;
	ms->dpi = v->dpi;
	ms->count = (uint16_t) v->n_min;
	for (int i = 0; i < v->n_min; i++)
		mcc_template_minutia(v, i, &ms->m[i]);
}

/* Copy cylinder c's words (values, then masks) to aligned storage. */
void
mcc_template_cyl_bits(const mcc_template_view *v, int c, uint64_t *out)
{
	memcpy(out, v->bits + (size_t) c * v->words * 8, (size_t) v->words * 8);
}

/* Popcount of cylinder c's value bits, from its metadata. */
int
mcc_template_cyl_popcount(const mcc_template_view *v, int c)
{
	return rd16(v->meta + (size_t) c * MCC_CYLMETA_RECSZ);
}

/* Byte angle of cylinder c, from its metadata. */
int
mcc_template_cyl_angle(const mcc_template_view *v, int c)
{
	return v->meta[(size_t) c * MCC_CYLMETA_RECSZ + 2];
}

/* Minutia index of cylinder c, from its metadata. */
int
mcc_template_cyl_minutia(const mcc_template_view *v, int c)
{
	return v->meta[(size_t) c * MCC_CYLMETA_RECSZ + 3];
}

/*
 * Check a stored blob for a scan: the header and the size, and every
 * cylinder's popcount within the profile's bits (the scan kernels take a
 * row of the probe's reciprocal table by it). What else mcc_template_open
 * checks (minutiae, ordering, popcounts and angles against the bits and the
 * minutiae) was checked when the value was stored, and a scan reads none of
 * it beyond the bits and the angle byte, which any value may have.
 */
mcc_status
mcc_template_open_stored(const uint8_t *base, size_t size, mcc_template_view *v,
						 mcc_error *err)
{
	mcc_status	st = open_header(base, size, v, err);
	int			nbits = v->profile != NULL ? v->profile->nbits : 0;

	if (st != MCC_OK)
		return st;
	for (int c = 0; c < v->n_cyl; c++)
		if (rd16(v->meta + (size_t) c * MCC_CYLMETA_RECSZ) > nbits)
			return CORRUPT("Cylinder %d records popcount %d; the profile has %d bits.",
						   c + 1, rd16(v->meta + (size_t) c * MCC_CYLMETA_RECSZ), nbits);
	return MCC_OK;
}
