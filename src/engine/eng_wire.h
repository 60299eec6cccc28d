/*
 * eng_wire.h: encoding and decoding of mcc_proto.h payloads.
 *
 * eng_buf is a growable output buffer; a failed allocation sets `failed` and
 * turns every later put into a no-op, so callers check once at the end.
 * eng_rd reads a payload; reading past its end sets `bad` and returns zeros,
 * so a truncated or garbage frame can never make the engine read outside it.
 */
#ifndef ENG_WIRE_H
#define ENG_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mcc_proto.h"

#define ENG_FRAME_HDRSZ 16

typedef struct eng_buf
{
	uint8_t    *data;
	size_t		len;
	size_t		cap;
	bool		failed;			/* an allocation failed */
} eng_buf;

void		eng_buf_init(eng_buf *b);
void		eng_buf_free(eng_buf *b);
bool		eng_buf_reserve(eng_buf *b, size_t extra);
void		eng_buf_put(eng_buf *b, const void *p, size_t n);
void		eng_buf_u16(eng_buf *b, uint16_t v);
void		eng_buf_u32(eng_buf *b, uint32_t v);
void		eng_buf_u64(eng_buf *b, uint64_t v);
void		eng_buf_i64(eng_buf *b, int64_t v);
void		eng_buf_f32(eng_buf *b, float v);
void		eng_buf_f64(eng_buf *b, double v);
void		eng_buf_bytes(eng_buf *b, const void *p, uint32_t n);
void		eng_buf_gallery(eng_buf *b, const mcc_gallery_id *g);

/* Drop the first n bytes (already sent or consumed). */
void		eng_buf_consume(eng_buf *b, size_t n);

/* Start a frame: writes a header with length 0; returns its offset. */
size_t		eng_frame_begin(eng_buf *b, uint16_t type, uint64_t request_id);

/* Patch the length of the frame begun at offset `start`. */
void		eng_frame_end(eng_buf *b, size_t start);

/* Decode a frame header from 16 bytes. */
void		eng_frame_decode(const uint8_t *p, mcc_frame_hdr *h);

typedef struct eng_rd
{
	const uint8_t *p;
	size_t		len;
	size_t		pos;
	bool		bad;			/* read past the end */
} eng_rd;

void		eng_rd_init(eng_rd *r, const uint8_t *p, size_t len);
uint32_t	eng_rd_u32(eng_rd *r);
uint64_t	eng_rd_u64(eng_rd *r);
int64_t		eng_rd_i64(eng_rd *r);
float		eng_rd_f32(eng_rd *r);
double		eng_rd_f64(eng_rd *r);
void		eng_rd_gallery(eng_rd *r, mcc_gallery_id *g);

/* A length-prefixed field: points into the payload, *n its length. */
const uint8_t *eng_rd_bytes(eng_rd *r, uint32_t *n);

/* Bytes left. */
size_t		eng_rd_left(const eng_rd *r);

/* true if the payload was read exactly to its end without overrun. */
bool		eng_rd_done(const eng_rd *r);

#endif							/* ENG_WIRE_H */
