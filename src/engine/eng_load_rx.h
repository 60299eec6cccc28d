/*
 * eng_load_rx.h: a loading connection's receiver (eng_load_rx.c), a thread
 * of its own that reads the connection's LOAD_ROWS frames off its socket
 * and prepares them (rows read, templates' headers opened) so that the
 * engine's main thread keeps only what must be serial: the room reserved,
 * the rows' job handed to the load threads, their linking.
 *
 * On a 16-core host the main thread received every loading connection's
 * frames on its one socket loop, read their rows and opened their headers:
 * 80-90 % of a parallel load's wall time (docs/benchmarks.md, "load8").
 * Now each connection that opens a load (LOAD_BEGIN) or joins one
 * (LOAD_JOIN) hands its socket's input to a receiver until a frame comes
 * that is not one of that load's LOAD_ROWS (LOAD_END, LOAD_JOIN_END,
 * CANCEL, anything else), a malformed frame, or the end of the socket: the
 * receiver then stops reading and gives back the bytes from that frame on,
 * which the main thread handles as it handled every frame before. The
 * frames are handled in the order they came: the prepared ones first, then
 * the bytes given back. Replies are written by the main thread as before.
 *
 * Only the receiver reads its socket while it runs, and only the main
 * thread takes its frames, peeks at them, stops it and frees it.
 */
#ifndef ENG_LOAD_RX_H
#define ENG_LOAD_RX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eng_load.h"
#include "mcc_template.h"

typedef struct eng_rx eng_rx;

/* A LOAD_ROWS frame as the receiver prepared it. */
typedef struct eng_rx_frame
{
	struct eng_rx_frame *next;
	struct eng_rx *owner;		/* takes bytes back for the next frames */
	uint64_t	request_id;
	uint8_t    *bytes;			/* the frame (its rows' templates point into it) */
	size_t		cap;			/* bytes' size */
	eng_load_in *in;			/* its n rows */
	uint32_t	n;
	mcc_template_view *v;		/* headers of in[0..ok_n) opened; in[ok_n]'s did not open */
	uint32_t	ok_n;
} eng_rx_frame;

/*
 * Start receiving connection fd's LOAD_ROWS frames of request rid (ids:
 * its rows carry load_ids) on a thread of its own; head[0..n_head): the
 * bytes received already after the frame that opened the load or the
 * part. wake_fd: written (a byte) when a frame is ready or the receiver
 * stops. NULL if the thread cannot start (the caller reads as before).
 */
eng_rx	   *eng_rx_start(int fd, uint64_t rid, bool ids, int wake_fd,
						 const uint8_t *head, size_t n_head);

/* The next prepared frame, still queued, or NULL (none now). */
eng_rx_frame *eng_rx_peek(eng_rx *r);

/* Take the frame eng_rx_peek gave (the caller frees it: eng_rx_frame_free). */
void		eng_rx_pop(eng_rx *r);

/*
 * Free f, its buffer back to its receiver for the next frames (no memory
 * of a new buffer faulted in a frame). Only while its receiver runs: the
 * main thread frees a frame before it stops its receiver.
 */
void		eng_rx_frame_free(eng_rx_frame *f);

/* Has the receiver stopped with every frame it prepared taken? */
bool		eng_rx_drained(eng_rx *r);

/*
 * Stop the receiver, wait for its thread and free it with the frames not
 * taken; the bytes it received after its last frame are appended to rest
 * (the main thread's input). True if the socket was closed or broke
 * (after those bytes).
 */
bool		eng_rx_finish(eng_rx *r, eng_buf *rest);

/* Frames this receiver prepared (for the log). */
uint64_t	eng_rx_frames(eng_rx *r);

#endif							/* ENG_LOAD_RX_H */
