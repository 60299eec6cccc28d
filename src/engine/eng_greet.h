/*
 * eng_greet.h: new connections accepted, and their HELLO answered, on a
 * thread of the engine's own (the greeter), then handed to the main thread.
 *
 * Why: a client's HELLO waited for the main thread, which during a large
 * load spends long stretches on one connection's frames (a cache's growth,
 * a frame's job, freeing a replaced cache); at 100 M rows parallel load
 * workers timed out on HELLO (2 s) and the whole load failed. HELLO_OK
 * says only what is fixed at start (the incarnation, the pool's threads)
 * and the flags the main thread publishes (eng_greet_set_flags), so the
 * greeter needs nothing else of the server's state and answers at once,
 * whatever the main thread is doing.
 *
 * The greeter reads a connection's first frame exactly (never a byte
 * past it). A HELLO of this protocol version is answered there; anything
 * else (another first frame, another version, a frame cut short by the
 * peer's close) goes to the main thread with the bytes read, which handles
 * them as if it had read them (eng_handlers.c's HELLO answers another
 * version). The greeter never logs: its work must not wait for the log.
 */
#ifndef ENG_GREET_H
#define ENG_GREET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eng_wire.h"

typedef struct eng_greeter eng_greeter;

/* A connection the greeter hands over. */
typedef struct eng_greeted
{
	int			fd;
	uint32_t	pid;			/* HELLO's (0: not greeted) */
	bool		greeted;		/* HELLO_OK was sent */
	uint8_t		head[ENG_FRAME_HDRSZ + 8];	/* bytes read and not handled */
	size_t		n_head;
} eng_greeted;

/*
 * Start greeting the connections of listen_fd (non-blocking). NULL if the
 * thread does not start: the caller then accepts them itself.
 */
eng_greeter *eng_greet_start(int listen_fd, uint64_t incarnation, uint32_t threads,
							 uint32_t flags);

/* HELLO_OK's flags from now on (MCC_HELLO_*). */
void		eng_greet_set_flags(eng_greeter *g, uint32_t flags);

/* Readable while connections wait to be taken (poll it with POLLIN). */
int			eng_greet_fd(const eng_greeter *g);

/* Take up to max connections handed over; how many. */
int			eng_greet_take(eng_greeter *g, eng_greeted *out, int max);

/* Stop and join the thread; connections not taken are closed. NULL: nothing. */
void		eng_greet_stop(eng_greeter *g);

/* HELLO_OK for request rid: what the greeter and the main thread both send. */
void		eng_greet_hello_ok(eng_buf *out, uint64_t rid, uint64_t incarnation,
							   uint32_t threads, uint32_t flags);

#endif							/* ENG_GREET_H */
