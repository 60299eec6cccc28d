/*
 * eng_handlers.h: the engine's requests (eng_handlers.c): each frame a
 * client sends, checked and handed to the unit that serves it
 * (mcc_proto.h lists the messages).
 */
#ifndef ENG_HANDLERS_H
#define ENG_HANDLERS_H

#include <stdbool.h>
#include <stdint.h>

#include "eng_conn.h"
#include "mcc_proto.h"

#define ENG_MAX_XIDS		MCC_PROTO_MAX_XIDS

/* Handle one frame; false: malformed (the connection is closed). */
bool		eng_handle_frame(struct eng_server *s, struct eng_conn *c, const mcc_frame_hdr *h,
							 const uint8_t *payload);

#endif							/* ENG_HANDLERS_H */
