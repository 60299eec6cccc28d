/*
 * mcc_wire.c: byte-level encoding of frames (host byte order, packed), for
 * the engine and the backends alike (mcc_wire.h).
 */
#include "mcc_wire.h"

#include <stdlib.h>
#include <string.h>

void
mcc_wire_buf_init(mcc_wire_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void
mcc_wire_buf_free(mcc_wire_buf *b)
{
	free(b->data);
	mcc_wire_buf_init(b);
}

/* Make room for `extra` more bytes; false (and failed set) if impossible. */
bool
mcc_wire_buf_reserve(mcc_wire_buf *b, size_t extra)
{
	size_t		need;
	size_t		cap;
	uint8_t    *p;

	if (b->failed)
		return false;
	if (extra > SIZE_MAX / 2 - b->len)
	{
		b->failed = true;
		return false;
	}
	need = b->len + extra;
	if (need <= b->cap)
		return true;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap *= 2;
	p = realloc(b->data, cap);
	if (p == NULL)
	{
		b->failed = true;
		return false;
	}
	b->data = p;
	b->cap = cap;
	return true;
}

void
mcc_wire_buf_put(mcc_wire_buf *b, const void *p, size_t n)
{
	if (n == 0 || !mcc_wire_buf_reserve(b, n))
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

/* A fixed-size field: its encoder's bytes, where there is room. */
#define WIRE_BUF_PUT(sfx, type) \
	void \
	mcc_wire_buf_##sfx(mcc_wire_buf *b, type v) \
	{ \
		if (mcc_wire_buf_reserve(b, sizeof(v))) \
			b->len += mcc_wire_enc_##sfx(b->data + b->len, v); \
	}

WIRE_BUF_PUT(u16, uint16_t)
MCC_WIRE_SCALARS(WIRE_BUF_PUT)

void
mcc_wire_buf_bytes(mcc_wire_buf *b, const void *p, uint32_t n)
{
	mcc_wire_buf_u32(b, n);
	mcc_wire_buf_put(b, p, n);
}

void
mcc_wire_buf_gallery(mcc_wire_buf *b, const mcc_gallery_id *g)
{
	if (mcc_wire_buf_reserve(b, MCC_WIRE_GALLERYSZ))
		b->len += mcc_wire_enc_gallery(b->data + b->len, g);
}

void
mcc_wire_buf_consume(mcc_wire_buf *b, size_t n)
{
	if (n >= b->len)
	{
		b->len = 0;
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
}

size_t
mcc_wire_frame_begin(mcc_wire_buf *b, uint16_t type, uint64_t request_id)
{
	size_t		start = b->len;
	mcc_frame_hdr h = {0, type, 0, request_id};

	if (mcc_wire_buf_reserve(b, MCC_WIRE_HDRSZ))
		b->len += mcc_wire_enc_header(b->data + b->len, &h);
	return start;
}

void
mcc_wire_frame_end(mcc_wire_buf *b, size_t start)
{
	if (b->failed)
		return;
	mcc_wire_enc_u32(b->data + start, (uint32_t) (b->len - start - MCC_WIRE_HDRSZ));
}

size_t
mcc_wire_enc_gallery(uint8_t *dst, const mcc_gallery_id *g)
{
	size_t		n = 0;

	n += mcc_wire_enc_u32(dst + n, g->db_oid);
	n += mcc_wire_enc_u32(dst + n, g->rel_oid);
	n += mcc_wire_enc_u64(dst + n, g->signature);
	return n;
}

size_t
mcc_wire_enc_header(uint8_t *dst, const mcc_frame_hdr *h)
{
	size_t		n = 0;

	n += mcc_wire_enc_u32(dst + n, h->length);
	n += mcc_wire_enc_u16(dst + n, h->type);
	n += mcc_wire_enc_u16(dst + n, h->flags);
	n += mcc_wire_enc_u64(dst + n, h->request_id);
	return n;
}

void
mcc_wire_dec_header(const uint8_t *p, mcc_frame_hdr *h)
{
	memcpy(&h->length, p, 4);
	memcpy(&h->type, p + 4, 2);
	memcpy(&h->flags, p + 6, 2);
	memcpy(&h->request_id, p + 8, 8);
}

void
mcc_wire_rd_init(mcc_wire_rd *r, const void *p, size_t len)
{
	r->p = p;
	r->len = len;
	r->pos = 0;
	r->bad = false;
}

/* Copy n bytes out, or zeros and `bad` if fewer are left. */
static void
rd_take(mcc_wire_rd *r, void *out, size_t n)
{
	if (r->bad || r->len - r->pos < n)
	{
		r->bad = true;
		memset(out, 0, n);
		return;
	}
	memcpy(out, r->p + r->pos, n);
	r->pos += n;
}

/* A fixed-size field, or 0 (and `bad`) past the end. */
#define WIRE_RD_GET(sfx, type) \
	type \
	mcc_wire_rd_##sfx(mcc_wire_rd *r) \
	{ \
		type		v; \
 \
		rd_take(r, &v, sizeof(v)); \
		return v; \
	}

MCC_WIRE_SCALARS(WIRE_RD_GET)

void
mcc_wire_rd_gallery(mcc_wire_rd *r, mcc_gallery_id *g)
{
	g->db_oid = mcc_wire_rd_u32(r);
	g->rel_oid = mcc_wire_rd_u32(r);
	g->signature = mcc_wire_rd_u64(r);
}

const uint8_t *
mcc_wire_rd_raw(mcc_wire_rd *r, size_t n)
{
	const uint8_t *p;

	if (r->bad || r->len - r->pos < n)
	{
		r->bad = true;
		return NULL;
	}
	p = r->p + r->pos;
	r->pos += n;
	return p;
}

const uint8_t *
mcc_wire_rd_bytes(mcc_wire_rd *r, uint32_t *n)
{
	const uint8_t *p;

	*n = mcc_wire_rd_u32(r);
	p = mcc_wire_rd_raw(r, *n);
	if (p == NULL)
		*n = 0;
	return p;
}

size_t
mcc_wire_rd_left(const mcc_wire_rd *r)
{
	return r->bad ? 0 : r->len - r->pos;
}

bool
mcc_wire_rd_done(const mcc_wire_rd *r)
{
	return !r->bad && r->pos == r->len;
}
