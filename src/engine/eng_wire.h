/*
 * eng_wire.h: the engine's names for the one wire encoder and decoder,
 * src/proto/mcc_wire.h (shared with the backends).
 *
 * eng_buf is a growable output buffer; a failed allocation sets `failed` and
 * turns every later put into a no-op, so callers check once at the end.
 * eng_rd reads a payload; reading past its end sets `bad` and returns zeros,
 * so a truncated or garbage frame can never make the engine read outside it.
 */
#ifndef ENG_WIRE_H
#define ENG_WIRE_H

#include "mcc_wire.h"

#define ENG_FRAME_HDRSZ MCC_WIRE_HDRSZ

typedef mcc_wire_buf eng_buf;
typedef mcc_wire_rd eng_rd;

#define eng_buf_init		mcc_wire_buf_init
#define eng_buf_free		mcc_wire_buf_free
#define eng_buf_reserve		mcc_wire_buf_reserve
#define eng_buf_put			mcc_wire_buf_put
#define eng_buf_u16			mcc_wire_buf_u16
#define eng_buf_u32			mcc_wire_buf_u32
#define eng_buf_u64			mcc_wire_buf_u64
#define eng_buf_i64			mcc_wire_buf_i64
#define eng_buf_f32			mcc_wire_buf_f32
#define eng_buf_f64			mcc_wire_buf_f64
#define eng_buf_bytes		mcc_wire_buf_bytes
#define eng_buf_gallery		mcc_wire_buf_gallery
#define eng_buf_consume		mcc_wire_buf_consume
#define eng_frame_begin		mcc_wire_frame_begin
#define eng_frame_end		mcc_wire_frame_end
#define eng_frame_decode	mcc_wire_dec_header

#define eng_rd_init			mcc_wire_rd_init
#define eng_rd_u32			mcc_wire_rd_u32
#define eng_rd_u64			mcc_wire_rd_u64
#define eng_rd_i64			mcc_wire_rd_i64
#define eng_rd_f32			mcc_wire_rd_f32
#define eng_rd_f64			mcc_wire_rd_f64
#define eng_rd_gallery		mcc_wire_rd_gallery
#define eng_rd_bytes		mcc_wire_rd_bytes
#define eng_rd_left			mcc_wire_rd_left
#define eng_rd_done			mcc_wire_rd_done

#endif							/* ENG_WIRE_H */
