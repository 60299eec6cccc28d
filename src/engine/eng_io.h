/*
 * eng_io.h: what a nonblocking recv() or send() on one of the engine's
 * sockets returned, judged in one place for every loop that moves bytes
 * (connections, the greeter, the load receivers). EINTR is retried at
 * once, EAGAIN/EWOULDBLOCK waits for the socket, and a recv() of 0 (the
 * peer closed) ends the connection as an error does.
 */
#ifndef ENG_IO_H
#define ENG_IO_H

#include <errno.h>
#include <sys/types.h>

typedef enum eng_io
{
	ENG_IO_MOVED,				/* n > 0 bytes moved */
	ENG_IO_AGAIN,				/* interrupted: call again at once */
	ENG_IO_BLOCKED,				/* nothing to move now: wait for the socket */
	ENG_IO_ENDED				/* closed by the peer, or broken */
} eng_io;

/* The meaning of n, a recv()'s or send()'s result (errno read when n < 0). */
static inline eng_io
eng_io_of(ssize_t n)
{
	if (n > 0)
		return ENG_IO_MOVED;
	if (n < 0 && errno == EINTR)
		return ENG_IO_AGAIN;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return ENG_IO_BLOCKED;
	return ENG_IO_ENDED;
}

#endif							/* ENG_IO_H */
