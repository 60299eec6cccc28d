/*
 * eng_conn.c: client connections: non-blocking reads into an input buffer,
 * frame splitting, and the output buffer that replies are queued in.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "eng_conn.h"
#include "eng_io.h"
#include "eng_gallery.h"
#include "eng_handlers.h"
#include "eng_load.h"
#include "eng_load_rx.h"
#include "eng_log.h"
#include "eng_server.h"

#define READ_CHUNK		(64 * 1024)
/*
 * Room kept free in a loading connection's input for the frames that
 * arrive while the load threads add one (eng_conn_read_ahead): about three
 * of the backend's 1 MB LOAD_ROWS frames.
 */
#define LOAD_AHEAD		((size_t) 4 << 20)
#define READ_PER_CALL	((size_t) 4 << 20)	/* then let other clients in */
#define RX_FRAMES_PER_TURN 4	/* a receiver's frames handled in a turn (and those behind them) */

eng_conn *
eng_conn_add(eng_server *s, int fd)
{
	eng_conn   *c;

	if (s->n_conns == s->cap_conns)
	{
		uint32_t	cap = s->cap_conns ? s->cap_conns * 2 : 16;
		eng_conn  **p = realloc(s->conns, cap * sizeof(*p));

		if (p == NULL)
			return NULL;
		s->conns = p;
		s->cap_conns = cap;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->id = ++s->next_conn_id;
	c->fd = fd;
	eng_buf_init(&c->in);
	eng_buf_init(&c->out);
	s->conns[s->n_conns++] = c;
	return c;
}

eng_conn *
eng_conn_by_id(eng_server *s, uint64_t id)
{
	for (uint32_t i = 0; i < s->n_conns; i++)
		if (s->conns[i]->id == id)
			return s->conns[i]->dead ? NULL : s->conns[i];
	return NULL;
}

void
eng_conn_close(eng_server *s, eng_conn *c)
{
	for (uint32_t i = 0; i < s->n_conns; i++)
		if (s->conns[i] == c)
		{
			s->conns[i] = s->conns[--s->n_conns];
			break;
		}
	/* its thread first: it reads c->fd, which closes below */
	if (c->rx != NULL)
		(void) eng_rx_finish(c->rx, NULL);
	c->rx = NULL;
	if (c->load)
		eng_load_abort(s, c);
	if (c->joined)
		eng_load_join_abort(s, c, "a joined connection closed before its part ended");
	eng_gallery_conn_closed(s, c->id);
	eng_refine_conn_closed(s, c->id);
	eng_image_conn_closed(s, c->id);
	if (c->fd >= 0)
		close(c->fd);
	eng_log(ENG_LOG_DEBUG, "connection %llu closed (pid %u)",
			(unsigned long long) c->id, c->pid);
	eng_buf_free(&c->in);
	eng_buf_free(&c->out);
	free(c);
}

/* Stop reading from a connection that broke the protocol; say why first. */
static void
protocol_violation(eng_conn *c, uint64_t request_id, const char *what)
{
	eng_log(ENG_LOG_WARNING, "closing connection %llu (pid %u): %s",
			(unsigned long long) c->id, c->pid, what);
	eng_reply_error(c, request_id, MCC_PERR_PROTOCOL, 0, "%s", what);
	c->closing = true;
}

/*
 * After frame h was handled on c: if it opened a load (LOAD_BEGIN; a
 * snapshot's check: LOAD_HEADS_END) or joined one (LOAD_JOIN), hand c's
 * input to a receiver (eng_load_rx.h) with the bytes received after h;
 * true if one started. Not for a connection fed in-process, nor with one
 * load thread.
 */
static bool
rx_start(eng_server *s, eng_conn *c, const mcc_frame_hdr *h)
{
	eng_load   *l;

	if (c->fd < 0 || s->load_pool == NULL || s->rx_wake[1] < 0 || c->dead || c->closing)
		return false;
	/* a snapshot's check sends its rows after LOAD_HEADS_END's WANT */
	if (h->type == MCC_MSG_LOAD_BEGIN && c->load != NULL && (c->load->flags & MCC_LOAD_SNAPSHOT))
		return false;
	l = eng_load_of_rows(s, c, h->request_id);
	if (l == NULL || l->perr != 0)
		return false;
	c->rx = eng_rx_start(c->fd, h->request_id, (l->flags & MCC_LOAD_IDS) != 0, s->rx_wake[1],
						 c->in.data + c->in_pos, c->in.len - c->in_pos);
	if (c->rx == NULL)
		return false;
	/* the receiver has the rest: the input's room goes back */
	eng_buf_free(&c->in);
	eng_buf_init(&c->in);
	c->in_pos = 0;
	return true;
}

/* Handle every complete frame in the input buffer. */
static void
process_frames(eng_server *s, eng_conn *c)
{
	while (!c->dead && !c->closing)
	{
		size_t		avail = c->in.len - c->in_pos;
		mcc_frame_hdr h;
		const uint8_t *p;

		if (avail < ENG_FRAME_HDRSZ)
			break;
		p = c->in.data + c->in_pos;
		eng_frame_decode(p, &h);
		if (h.length > MCC_PROTO_MAX_FRAME)
		{
			protocol_violation(c, h.request_id, "frame too large");
			break;
		}
		if (avail < ENG_FRAME_HDRSZ + (size_t) h.length)
		{
			/* make room for the whole frame at once, after it (moved to the front if that does) */
			if (c->in_pos > 0 && c->in.cap - c->in.len < ENG_FRAME_HDRSZ + (size_t) h.length - avail)
			{
				eng_buf_consume(&c->in, c->in_pos);
				c->in_pos = 0;
			}
			eng_buf_reserve(&c->in, ENG_FRAME_HDRSZ + (size_t) h.length - avail);
			break;
		}
		c->in_pos += ENG_FRAME_HDRSZ + (size_t) h.length;
		if (!eng_handle_frame(s, c, &h, p + ENG_FRAME_HDRSZ))
			protocol_violation(c, h.request_id, "malformed frame");
		else if ((h.type == MCC_MSG_LOAD_BEGIN || h.type == MCC_MSG_LOAD_JOIN ||
				  h.type == MCC_MSG_LOAD_HEADS_END) && rx_start(s, c, &h))
			break;
	}
	if (c->in_pos == c->in.len)
	{
		c->in.len = c->in_pos = 0;
		/* a finished load's room for reading ahead goes back */
		if (c->load == NULL && !c->joined && c->in.cap > LOAD_AHEAD)
		{
			eng_buf_free(&c->in);
			eng_buf_init(&c->in);
		}
	}
	else if (c->in_pos > 0 && c->in.cap - c->in.len < (c->load != NULL || c->joined ? LOAD_AHEAD : READ_CHUNK))
	{
		/*
		 * The unprocessed rest to the front only when the room after it
		 * runs short: a socket read brings a fifth of a 1 MB frame, and
		 * moving the frame's part so far after each read copied about two
		 * bytes for each byte received (a sixth of the main thread's CPU
		 * in a load)
		 */
		eng_buf_consume(&c->in, c->in_pos);
		c->in_pos = 0;
	}
	if (c->in.failed)
	{
		eng_log(ENG_LOG_WARNING, "closing connection %llu: out of memory for input",
				(unsigned long long) c->id);
		c->dead = true;
	}
	if (c->out.len - c->out_pos > ENG_OUT_MAX || c->out.failed)
	{
		eng_log(ENG_LOG_WARNING, "closing connection %llu: replies are not read",
				(unsigned long long) c->id);
		c->dead = true;
	}
}

void
eng_conn_input(eng_server *s, eng_conn *c, const void *data, size_t len)
{
	if (c->dead || c->closing)
		return;
	eng_buf_put(&c->in, data, len);
	process_frames(s, c);
}

bool
eng_conn_read(eng_server *s, eng_conn *c)
{
	size_t		total = 0;

	/* a turn's frames read ahead are bounded too: other clients wait meanwhile */
	c->ahead_left = READ_PER_CALL;
	while (!c->dead && !c->closing && c->rx == NULL && total < READ_PER_CALL)
	{
		ssize_t		n;

		if (!eng_buf_reserve(&c->in, c->load != NULL || c->joined ? LOAD_AHEAD : READ_CHUNK))
			return false;
		n = recv(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len, 0);
		switch (eng_io_of(n))
		{
			case ENG_IO_MOVED:
				c->in.len += (size_t) n;
				total += (size_t) n;
				process_frames(s, c);
				break;
			case ENG_IO_AGAIN:
				break;
			case ENG_IO_BLOCKED:
				return true;
			case ENG_IO_ENDED:
				return false;
		}
	}
	return true;
}

int
eng_conn_read_ahead(eng_conn *c)
{
	size_t		room = c->in.cap - c->in.len;
	ssize_t		n;

	if (room > c->ahead_left)
		room = c->ahead_left;
	if (c->fd < 0 || room == 0 || c->rx != NULL)
		return 0;
	/* into the room there is: the buffer must not move under the frame being handled */
	n = recv(c->fd, c->in.data + c->in.len, room, MSG_DONTWAIT);
	if (eng_io_of(n) == ENG_IO_MOVED)
	{
		c->in.len += (size_t) n;
		c->ahead_left -= (size_t) n;
		return 1;
	}
	return eng_io_of(n) == ENG_IO_ENDED ? -1 : 0;					/* closed or broken: the next eng_conn_read says so */
}

int
eng_conn_read_ahead_other(eng_conn *c)
{
	ssize_t		n;

	if (c->fd < 0 || c->dead || c->closing || c->rx != NULL)
		return -1;
	/* enough of its frames wait already: its sender waits for their turn */
	if (c->in.len - c->in_pos >= 2 * LOAD_AHEAD || !eng_buf_reserve(&c->in, LOAD_AHEAD))
		return -1;
	n = recv(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len, MSG_DONTWAIT);
	if (eng_io_of(n) == ENG_IO_MOVED)
	{
		c->in.len += (size_t) n;
		c->input_pending = true;
		return 1;
	}
	if (eng_io_of(n) != ENG_IO_ENDED)
		return 0;
	c->input_pending = true;	/* the loop's next read says it is closed */
	return -1;
}

void
eng_conn_pending(eng_server *s, eng_conn *c)
{
	c->input_pending = false;
	if (!c->dead && !c->closing)
		process_frames(s, c);
}

bool
eng_conn_rx_ready(const eng_conn *c)
{
	return c->rx != NULL && !c->dead && !c->closing &&
		(eng_rx_peek(c->rx) != NULL || eng_rx_drained(c->rx));
}

void
eng_conn_rx_step(eng_server *s, eng_conn *c)
{
	eng_rx_frame *f;
	uint64_t	frames;
	bool		closed;

	/*
	 * in order; a frame's pipeline takes the next ones off the queue
	 * itself; a few frames a turn, so that other clients get theirs while
	 * the receiver keeps its queue full
	 */
	for (int k = 0; k < RX_FRAMES_PER_TURN && c->rx != NULL && !c->dead && !c->closing &&
		 (f = eng_rx_peek(c->rx)) != NULL; k++)
	{
		eng_rx_pop(c->rx);
		eng_load_rx_rows(s, c, f);
	}
	if (c->rx == NULL || c->dead || c->closing || !eng_rx_drained(c->rx))
		return;
	frames = eng_rx_frames(c->rx);
	/* the input is empty while a receiver runs: what it gave back is read as if here */
	closed = eng_rx_finish(c->rx, &c->in);
	c->rx = NULL;
	eng_log(ENG_LOG_DEBUG, "connection %llu: its receiver prepared %llu LOAD_ROWS frames",
			(unsigned long long) c->id, (unsigned long long) frames);
	process_frames(s, c);
	if (closed)
		c->dead = true;
}

bool
eng_conn_flush(eng_conn *c)
{
	if (c->fd < 0)
		return true;
	while (c->out_pos < c->out.len)
	{
		ssize_t		n = send(c->fd, c->out.data + c->out_pos, c->out.len - c->out_pos,
							 MSG_NOSIGNAL | MSG_DONTWAIT);

		eng_io		io = eng_io_of(n);

		if (io == ENG_IO_MOVED)
			c->out_pos += (size_t) n;
		else if (io == ENG_IO_BLOCKED)
			break;
		else if (io == ENG_IO_ENDED)
			return false;
	}
	if (c->out_pos == c->out.len)
		c->out.len = c->out_pos = 0;
	else if (c->out_pos > ((size_t) 1 << 20))
	{
		eng_buf_consume(&c->out, c->out_pos);
		c->out_pos = 0;
	}
	return true;
}

void
eng_reply_error(eng_conn *c, uint64_t request_id, mcc_proto_error code,
				int status, const char *fmt,...)
{
	char		msg[512];
	va_list		ap;
	size_t		f;
	int			n;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if (n >= (int) sizeof(msg))
		n = (int) sizeof(msg) - 1;
	f = eng_frame_begin(&c->out, MCC_MSG_ERROR, request_id);
	eng_buf_u32(&c->out, (uint32_t) code);
	eng_buf_u32(&c->out, (uint32_t) status);
	eng_buf_bytes(&c->out, msg, (uint32_t) n);
	eng_frame_end(&c->out, f);
}

void
eng_reply_error_by_id(eng_server *s, uint64_t conn_id, uint64_t request_id,
					  mcc_proto_error code, const mcc_error *err)
{
	eng_conn   *c = eng_conn_by_id(s, conn_id);

	if (c == NULL)
		return;
	if (err->detail[0])
		eng_reply_error(c, request_id, code, err->status, "%s: %s", err->message,
						err->detail);
	else
		eng_reply_error(c, request_id, code, err->status, "%s", err->message);
}

void
eng_reply_ok(eng_conn *c, uint64_t request_id)
{
	size_t		f = eng_frame_begin(&c->out, MCC_MSG_OK, request_id);

	eng_frame_end(&c->out, f);
}
