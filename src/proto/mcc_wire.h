/*
 * mcc_wire.h: the one encoder and decoder of mcc_proto.h's frames, shared by
 * the engine (src/engine/eng_wire.h names them for it) and the backends
 * (src/service/service_client.c, whose wrappers turn the decoder's error
 * flag into ereport).
 *
 * Plain C, no PostgreSQL header. Host byte order, packed: each field is the
 * bytes of its C type, as mcc_proto.h lists them.
 *
 * - Field encoders write one field at dst and return its size; a side with
 *   its own buffer (a backend's StringInfo) appends what they wrote.
 * - mcc_wire_buf is a growable malloc'd buffer: a failed allocation sets
 *   `failed` and turns every later put into a no-op, so callers check once
 *   at the end.
 * - mcc_wire_rd reads a payload: reading past its end sets `bad` and returns
 *   zeros, so a truncated or garbage frame can never make either side read
 *   outside it.
 */
#ifndef MCC_WIRE_H
#define MCC_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mcc_proto.h"

#define MCC_WIRE_HDRSZ		16	/* bytes of an encoded mcc_frame_hdr */
#define MCC_WIRE_GALLERYSZ	16	/* bytes of an encoded mcc_gallery_id */

/* ---- field encoders: write at dst, return the bytes written ---- */

/*
 * The scalar fields of payloads, as (suffix, C type): the one list from
 * which every family of scalar encoders, writers and readers is defined
 * (X(suffix, type) for each), here, in mcc_wire.c and in the backend's
 * service_client.c. (u16 is only in frame headers: an encoder and a
 * buffer writer, no reader.)
 */
#define MCC_WIRE_SCALARS(X) \
	X(u32, uint32_t) \
	X(u64, uint64_t) \
	X(i64, int64_t) \
	X(f32, float) \
	X(f64, double)

/* mcc_wire_enc_<sfx>: the bytes of its C type (host byte order). */
#define MCC_WIRE_ENC(sfx, type) \
	static inline size_t \
	mcc_wire_enc_##sfx(uint8_t *dst, type v) \
	{ \
		memcpy(dst, &v, sizeof(v)); \
		return sizeof(v); \
	}

MCC_WIRE_ENC(u16, uint16_t)
MCC_WIRE_SCALARS(MCC_WIRE_ENC)

/* A gallery id: db_oid, rel_oid, signature (MCC_WIRE_GALLERYSZ bytes). */
size_t		mcc_wire_enc_gallery(uint8_t *dst, const mcc_gallery_id *g);

/* A frame header (MCC_WIRE_HDRSZ bytes) and its decoding. */
size_t		mcc_wire_enc_header(uint8_t *dst, const mcc_frame_hdr *h);
void		mcc_wire_dec_header(const uint8_t *p, mcc_frame_hdr *h);

/* ---- a growable output buffer ---- */

typedef struct mcc_wire_buf
{
	uint8_t    *data;
	size_t		len;
	size_t		cap;
	bool		failed;			/* an allocation failed */
} mcc_wire_buf;

void		mcc_wire_buf_init(mcc_wire_buf *b);
void		mcc_wire_buf_free(mcc_wire_buf *b);
bool		mcc_wire_buf_reserve(mcc_wire_buf *b, size_t extra);
void		mcc_wire_buf_put(mcc_wire_buf *b, const void *p, size_t n);
void		mcc_wire_buf_u16(mcc_wire_buf *b, uint16_t v);
void		mcc_wire_buf_u32(mcc_wire_buf *b, uint32_t v);
void		mcc_wire_buf_u64(mcc_wire_buf *b, uint64_t v);
void		mcc_wire_buf_i64(mcc_wire_buf *b, int64_t v);
void		mcc_wire_buf_f32(mcc_wire_buf *b, float v);
void		mcc_wire_buf_f64(mcc_wire_buf *b, double v);
void		mcc_wire_buf_bytes(mcc_wire_buf *b, const void *p, uint32_t n);
void		mcc_wire_buf_gallery(mcc_wire_buf *b, const mcc_gallery_id *g);

/* Drop the first n bytes (already sent or consumed). */
void		mcc_wire_buf_consume(mcc_wire_buf *b, size_t n);

/* Start a frame: writes a header with length 0; returns its offset. */
size_t		mcc_wire_frame_begin(mcc_wire_buf *b, uint16_t type, uint64_t request_id);

/* Patch the length of the frame begun at offset `start`. */
void		mcc_wire_frame_end(mcc_wire_buf *b, size_t start);

/* ---- a payload reader ---- */

typedef struct mcc_wire_rd
{
	const uint8_t *p;
	size_t		len;
	size_t		pos;
	bool		bad;			/* read past the end */
} mcc_wire_rd;

void		mcc_wire_rd_init(mcc_wire_rd *r, const void *p, size_t len);
uint32_t	mcc_wire_rd_u32(mcc_wire_rd *r);
uint64_t	mcc_wire_rd_u64(mcc_wire_rd *r);
int64_t		mcc_wire_rd_i64(mcc_wire_rd *r);
float		mcc_wire_rd_f32(mcc_wire_rd *r);
double		mcc_wire_rd_f64(mcc_wire_rd *r);
void		mcc_wire_rd_gallery(mcc_wire_rd *r, mcc_gallery_id *g);

/* n raw bytes: points into the payload, or NULL (and `bad`) if fewer are left. */
const uint8_t *mcc_wire_rd_raw(mcc_wire_rd *r, size_t n);

/* A length-prefixed field: points into the payload, *n its length. */
const uint8_t *mcc_wire_rd_bytes(mcc_wire_rd *r, uint32_t *n);

/* Bytes left. */
size_t		mcc_wire_rd_left(const mcc_wire_rd *r);

/* true if the payload was read exactly to its end without overrun. */
bool		mcc_wire_rd_done(const mcc_wire_rd *r);

#endif							/* MCC_WIRE_H */
