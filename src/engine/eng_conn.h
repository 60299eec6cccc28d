/*
 * eng_conn.h: a client's connection to the engine (eng_conn.c): its input
 * and output buffers, the frames read from it, the replies written to it.
 * A connection is known by its id to everything that answers it later
 * (a search, a SETTLE, a load): the connection may be gone by then.
 */
#ifndef ENG_CONN_H
#define ENG_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eng_wire.h"
#include "mcc_error.h"
#include "mcc_proto.h"

struct eng_server;
struct eng_load;
struct eng_rx;

#define ENG_OUT_MAX			((size_t) 512 << 20)	/* unread replies: close */

typedef struct eng_conn
{
	uint64_t	id;
	int			fd;				/* -1: fed in-process (tests, fuzzing) */
	eng_buf		in;
	size_t		in_pos;			/* first unprocessed byte */
	size_t		ahead_left;		/* bytes eng_conn_read_ahead may take in this turn */
	eng_buf		out;
	size_t		out_pos;		/* first unsent byte */
	bool		closing;		/* close once out is sent */
	bool		dead;			/* close now */
	struct eng_load *load;
	/*
	 * This connection's part of another connection's load (LOAD_JOIN),
	 * found again by its gallery and token (eng_load_joined): the load
	 * may end, and be freed, before the part does
	 */
	bool		joined;			/* a part not yet ended */
	mcc_gallery_id join_gal;
	uint64_t	join_token[2];
	uint64_t	join_rid;		/* LOAD_JOIN's request id */
	uint64_t	join_rows;		/* rows this part added */
	bool		input_pending;	/* frames received while another's were added: handle them */
	/*
	 * A loading connection's receiver (eng_load_rx.h): it reads the socket
	 * meanwhile (in stays empty), the main thread takes its frames
	 */
	struct eng_rx *rx;
	uint32_t	pid;
} eng_conn;

eng_conn   *eng_conn_add(struct eng_server *s, int fd);
eng_conn   *eng_conn_by_id(struct eng_server *s, uint64_t id);
void		eng_conn_close(struct eng_server *s, eng_conn *c);

/* Append bytes received and handle the complete frames among them. */
void		eng_conn_input(struct eng_server *s, eng_conn *c, const void *data, size_t len);

/* Read what the socket has (false: closed). */
bool		eng_conn_read(struct eng_server *s, eng_conn *c);

/*
 * Receive what the socket has into the input buffer's free room, never
 * moving the buffer (a frame being handled points into it); the frames
 * are handled once the current one is done. 1: bytes came; 0: none now
 * (or no room); -1: closed or broken (eng_conn_read will say so). While a
 * load's rows are added on the load threads, the client's next frames come
 * in meanwhile instead of waiting in its socket.
 */
int			eng_conn_read_ahead(eng_conn *c);

/*
 * The same for another connection of the load whose frame is being added
 * (a part joined to it, or its leader): its buffer may grow (no frame of
 * it is being handled); the frames are handled by eng_conn_pending, from
 * the server's loop. 1: bytes came; 0: none now; -1: closed, broken, closing,
 * or 8 MB of its frames wait already (read no more in this wait).
 */
int			eng_conn_read_ahead_other(eng_conn *c);

/* Handle the frames eng_conn_read_ahead_other received on c. */
void		eng_conn_pending(struct eng_server *s, eng_conn *c);

/*
 * A receiver reads c (eng_load_rx.h): handle the frames it prepared and,
 * once it stopped and they are all handled, stop it and handle the bytes it
 * gave back as frames read here; c is dead then if its socket closed.
 */
void		eng_conn_rx_step(struct eng_server *s, eng_conn *c);

/* Has c's receiver frames for eng_conn_rx_step, or has it stopped? */
bool		eng_conn_rx_ready(const eng_conn *c);

/* Send what is queued (false: the peer is gone). */
bool		eng_conn_flush(eng_conn *c);

void		eng_reply_error(eng_conn *c, uint64_t request_id, mcc_proto_error code,
							int status, const char *fmt,...)
			__attribute__((format(printf, 5, 6)));
void		eng_reply_error_by_id(struct eng_server *s, uint64_t conn_id, uint64_t request_id,
								  mcc_proto_error code, const mcc_error *err);
void		eng_reply_ok(eng_conn *c, uint64_t request_id);

#endif							/* ENG_CONN_H */
