/*
 * eng_wire.c: byte-level encoding of frames (host byte order, packed).
 */
#include "eng_wire.h"

#include <stdlib.h>
#include <string.h>

void
eng_buf_init(eng_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void
eng_buf_free(eng_buf *b)
{
	free(b->data);
	eng_buf_init(b);
}

/* Make room for `extra` more bytes; false (and failed set) if impossible. */
bool
eng_buf_reserve(eng_buf *b, size_t extra)
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
eng_buf_put(eng_buf *b, const void *p, size_t n)
{
	if (n == 0 || !eng_buf_reserve(b, n))
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

void
eng_buf_u16(eng_buf *b, uint16_t v)
{
	eng_buf_put(b, &v, sizeof(v));
}

void
eng_buf_u32(eng_buf *b, uint32_t v)
{
	eng_buf_put(b, &v, sizeof(v));
}

void
eng_buf_u64(eng_buf *b, uint64_t v)
{
	eng_buf_put(b, &v, sizeof(v));
}

void
eng_buf_i64(eng_buf *b, int64_t v)
{
	eng_buf_put(b, &v, sizeof(v));
}

void
eng_buf_f32(eng_buf *b, float v)
{
	eng_buf_put(b, &v, sizeof(v));
}

void
eng_buf_f64(eng_buf *b, double v)
{
	eng_buf_put(b, &v, sizeof(v));
}

void
eng_buf_bytes(eng_buf *b, const void *p, uint32_t n)
{
	eng_buf_u32(b, n);
	eng_buf_put(b, p, n);
}

void
eng_buf_gallery(eng_buf *b, const mcc_gallery_id *g)
{
	eng_buf_u32(b, g->db_oid);
	eng_buf_u32(b, g->rel_oid);
	eng_buf_u64(b, g->signature);
}

void
eng_buf_consume(eng_buf *b, size_t n)
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
eng_frame_begin(eng_buf *b, uint16_t type, uint64_t request_id)
{
	size_t		start = b->len;

	eng_buf_u32(b, 0);
	eng_buf_u16(b, type);
	eng_buf_u16(b, 0);
	eng_buf_u64(b, request_id);
	return start;
}

void
eng_frame_end(eng_buf *b, size_t start)
{
	uint32_t	len;

	if (b->failed)
		return;
	len = (uint32_t) (b->len - start - ENG_FRAME_HDRSZ);
	memcpy(b->data + start, &len, sizeof(len));
}

void
eng_frame_decode(const uint8_t *p, mcc_frame_hdr *h)
{
	memcpy(&h->length, p, 4);
	memcpy(&h->type, p + 4, 2);
	memcpy(&h->flags, p + 6, 2);
	memcpy(&h->request_id, p + 8, 8);
}

void
eng_rd_init(eng_rd *r, const uint8_t *p, size_t len)
{
	r->p = p;
	r->len = len;
	r->pos = 0;
	r->bad = false;
}

/* Copy n bytes out, or zeros and `bad` if fewer are left. */
static void
rd_take(eng_rd *r, void *out, size_t n)
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

uint32_t
eng_rd_u32(eng_rd *r)
{
	uint32_t	v;

	rd_take(r, &v, sizeof(v));
	return v;
}

uint64_t
eng_rd_u64(eng_rd *r)
{
	uint64_t	v;

	rd_take(r, &v, sizeof(v));
	return v;
}

int64_t
eng_rd_i64(eng_rd *r)
{
	int64_t		v;

	rd_take(r, &v, sizeof(v));
	return v;
}

float
eng_rd_f32(eng_rd *r)
{
	float		v;

	rd_take(r, &v, sizeof(v));
	return v;
}

double
eng_rd_f64(eng_rd *r)
{
	double		v;

	rd_take(r, &v, sizeof(v));
	return v;
}

void
eng_rd_gallery(eng_rd *r, mcc_gallery_id *g)
{
	g->db_oid = eng_rd_u32(r);
	g->rel_oid = eng_rd_u32(r);
	g->signature = eng_rd_u64(r);
}

const uint8_t *
eng_rd_bytes(eng_rd *r, uint32_t *n)
{
	const uint8_t *p;

	*n = eng_rd_u32(r);
	if (r->bad || r->len - r->pos < *n)
	{
		r->bad = true;
		*n = 0;
		return NULL;
	}
	p = r->p + r->pos;
	r->pos += *n;
	return p;
}

size_t
eng_rd_left(const eng_rd *r)
{
	return r->bad ? 0 : r->len - r->pos;
}

bool
eng_rd_done(const eng_rd *r)
{
	return !r->bad && r->pos == r->len;
}
