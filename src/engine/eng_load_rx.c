/*
 * eng_load_rx.c: a loading connection's receiver thread (eng_load_rx.h
 * says why and what it may touch).
 *
 * Each frame is received into a buffer of its own, which the prepared
 * frame keeps (its rows' templates point into it) until the main thread
 * has linked its rows: nothing is copied but the few bytes of the next
 * frame a read brought beyond the one being completed (a read asks for no
 * more than the current frame's rest once its header is in).
 */
#include "eng_load_rx.h"
#include "eng_io.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mcc_job.h"
#include "mcc_proto.h"

#define RX_CHUNK		((size_t) 64 << 10)	/* a read while no frame's header is in */
/* frames prepared and not yet taken: the client waits beyond (its socket fills) */
#define RX_QUEUE_MAX	8
#define RX_SPARE		4		/* frames' buffers kept for the next frames */

struct eng_rx
{
	int			fd;
	uint64_t	rid;
	bool		ids;
	int			wake_fd;
	int			stop[2];		/* main -> receiver: stop reading */
	pthread_t	tid;
	/* the receiver's own: the frame being received */
	uint8_t    *buf;
	size_t		len;
	size_t		cap;
	pthread_mutex_t lock;		/* guards what follows */
	pthread_cond_t room;		/* the queue has room again, or stop */
	eng_rx_frame *head;			/* prepared, not taken, in order */
	eng_rx_frame *tail;
	uint32_t	queued;
	bool		stopping;		/* the main thread asked it to stop */
	bool		ended;			/* the thread stopped reading: buf[0..len) is the rest */
	bool		closed;			/* ... because the socket closed or broke */
	uint64_t	frames;
	uint8_t    *spare[RX_SPARE];	/* freed frames' buffers, for the next ones */
	size_t		spare_cap[RX_SPARE];
	int			n_spare;
};

/* Free f; its buffer too, unless its receiver keeps it (keep). */
static void
frame_free(eng_rx_frame *f, bool keep)
{
	eng_rx	   *r = f->owner;

	if (keep && r != NULL)
	{
		pthread_mutex_lock(&r->lock);
		if (r->n_spare < RX_SPARE)
		{
			r->spare[r->n_spare] = f->bytes;
			r->spare_cap[r->n_spare++] = f->cap;
			f->bytes = NULL;
		}
		pthread_mutex_unlock(&r->lock);
	}
	free(f->bytes);
	free(f->in);
	free(f->v);
	free(f);
}

void
eng_rx_frame_free(eng_rx_frame *f)
{
	if (f != NULL)
		frame_free(f, true);
}

/*
 * A buffer of at least min bytes for the next frame: a spare one (a frame
 * is about 1 MB: a new one's pages were faulted in each time), or a new
 * one; its size in *cap. NULL: out of memory.
 */
static uint8_t *
next_buffer(eng_rx *r, size_t min, size_t *cap)
{
	uint8_t    *b = NULL;

	pthread_mutex_lock(&r->lock);
	if (r->n_spare > 0 && r->spare_cap[r->n_spare - 1] >= min)
	{
		b = r->spare[--r->n_spare];
		*cap = r->spare_cap[r->n_spare];
	}
	pthread_mutex_unlock(&r->lock);
	if (b == NULL && (b = malloc(min)) != NULL)
		*cap = min;
	return b;
}

static void
wake(eng_rx *r)
{
	/* a full pipe wakes the main thread already */
	while (write(r->wake_fd, "r", 1) < 0 && errno == EINTR)
		;
}

/*
 * Prepare the frame in r->buf[0..need) (its header read into h): its rows
 * read and their headers opened. NULL if it is malformed or memory runs
 * out: the main thread's ordinary path then handles it (and says why).
 */
static eng_rx_frame *
prepare(eng_rx *r, const mcc_frame_hdr *h)
{
	eng_rx_frame *f = calloc(1, sizeof(*f));
	eng_rd		rd;
	mcc_error	err;

	if (f == NULL)
		return NULL;
	eng_rd_init(&rd, r->buf + ENG_FRAME_HDRSZ, h->length);
	f->n = eng_rd_u32(&rd);
	f->request_id = h->request_id;
	if (rd.bad || !eng_load_rows_fit(f->n, r->ids, eng_rd_left(&rd)) ||
		(f->in = malloc(sizeof(*f->in) * (f->n > 0 ? f->n : 1))) == NULL ||
		(f->v = malloc(sizeof(*f->v) * (f->n > 0 ? f->n : 1))) == NULL ||
		!eng_load_read_rows(&rd, f->n, r->ids, f->in))
	{
		frame_free(f, false);
		return NULL;
	}
	/* the headers (what the room needs); the whole check runs in the load threads */
	while (f->ok_n < f->n)
	{
		mcc_error_clear(&err);
		if (mcc_template_open_header(f->in[f->ok_n].tpl, f->in[f->ok_n].len, &f->v[f->ok_n],
									 &err) != MCC_OK)
			break;
		f->ok_n++;
	}
	return f;
}

/*
 * Queue f behind the frames prepared, waiting while RX_QUEUE_MAX wait
 * already (false: asked to stop meanwhile; f is freed).
 */
static bool
enqueue(eng_rx *r, eng_rx_frame *f)
{
	bool		ok;

	pthread_mutex_lock(&r->lock);
	while (r->queued >= RX_QUEUE_MAX && !r->stopping)
		pthread_cond_wait(&r->room, &r->lock);
	ok = !r->stopping;
	if (ok)
	{
		if (r->tail != NULL)
			r->tail->next = f;
		else
			r->head = f;
		r->tail = f;
		r->queued++;
		r->frames++;
	}
	pthread_mutex_unlock(&r->lock);
	if (ok)
		wake(r);
	else
		frame_free(f, false);
	return ok;
}

/*
 * The frame complete in buf[0..need) goes to a prepared frame, which
 * keeps the buffer; what a read brought beyond it starts the next one's.
 * False: it is not one to prepare (buf is then left as it is) or memory
 * ran out.
 */
static bool
take_frame(eng_rx *r, const mcc_frame_hdr *h, size_t need, eng_rx_frame **out)
{
	size_t		over = r->len - need;
	size_t		cap;
	uint8_t    *next = next_buffer(r, over > RX_CHUNK ? over : RX_CHUNK, &cap);
	eng_rx_frame *f;

	if (next == NULL || (f = prepare(r, h)) == NULL)
	{
		free(next);
		return false;
	}
	memcpy(next, r->buf + need, over);
	f->owner = r;
	f->bytes = r->buf;
	f->cap = r->cap;
	r->buf = next;
	r->len = over;
	r->cap = cap;
	*out = f;
	return true;
}

/*
 * Prepare and queue the complete frames in buf. Returns how many bytes
 * the next read should ask for (0: stop: a frame that is not this load's
 * LOAD_ROWS, a malformed one, no memory, or asked to stop).
 */
static size_t
frames_in_buffer(eng_rx *r)
{
	for (;;)
	{
		mcc_frame_hdr h;
		size_t		need;
		eng_rx_frame *f;

		if (r->len < ENG_FRAME_HDRSZ)
			return r->cap - r->len;
		eng_frame_decode(r->buf, &h);
		if (h.type != MCC_MSG_LOAD_ROWS || h.request_id != r->rid ||
			h.length > MCC_PROTO_MAX_FRAME)
			return 0;
		need = ENG_FRAME_HDRSZ + (size_t) h.length;
		if (r->len < need)
		{
			/*
			 * room for the whole frame, and an eighth more (so that the
			 * buffer, kept when the frame is freed, fits frames a little
			 * larger); only the bytes in are copied, not the old room
			 */
			if (r->cap < need)
			{
				uint8_t    *b = malloc(need + need / 8);

				if (b == NULL)
					return 0;
				memcpy(b, r->buf, r->len);
				free(r->buf);
				r->buf = b;
				r->cap = need + need / 8;
			}
			return need - r->len;	/* no further than this frame */
		}
		if (!take_frame(r, &h, need, &f) || !enqueue(r, f))
			return 0;
	}
}

/* Wait until fd can be read or the main thread asks to stop (false). */
static bool
wait_readable(eng_rx *r)
{
	struct pollfd pfd[2] = {{.fd = r->fd, .events = POLLIN}, {.fd = r->stop[0], .events = POLLIN}};

	while (poll(pfd, 2, -1) < 0)
		if (errno != EINTR)
			return false;
	return !(pfd[1].revents & POLLIN);
}

static void *
rx_main(void *arg)
{
	eng_rx	   *r = arg;
	size_t		want;

	while ((want = frames_in_buffer(r)) > 0)
	{
		ssize_t		n = recv(r->fd, r->buf + r->len, want, MSG_DONTWAIT);
		eng_io		io = eng_io_of(n);

		if (io == ENG_IO_MOVED)
			r->len += (size_t) n;
		if (io == ENG_IO_MOVED || io == ENG_IO_AGAIN)
			continue;
		if (io == ENG_IO_BLOCKED)
		{
			if (wait_readable(r))
				continue;
			break;
		}
		r->closed = true;		/* after the bytes before: the main thread handles them first */
		break;
	}
	pthread_mutex_lock(&r->lock);
	r->ended = true;
	pthread_mutex_unlock(&r->lock);
	wake(r);
	return NULL;
}

eng_rx *
eng_rx_start(int fd, uint64_t rid, bool ids, int wake_fd, const uint8_t *head, size_t n_head)
{
	eng_rx	   *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	r->fd = fd;
	r->rid = rid;
	r->ids = ids;
	r->wake_fd = wake_fd;
	r->cap = n_head > RX_CHUNK ? n_head : RX_CHUNK;
	r->buf = malloc(r->cap);
	r->stop[0] = r->stop[1] = -1;
	if (r->buf == NULL || pipe2(r->stop, O_CLOEXEC) != 0)
		goto fail;
	memcpy(r->buf, head, n_head);
	r->len = n_head;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->room, NULL);
	if (mcc_job_start_threads(&r->tid, 1, rx_main, r, 0) == 1)
		return r;
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->room);
fail:
	if (r->stop[0] >= 0)
	{
		close(r->stop[0]);
		close(r->stop[1]);
	}
	free(r->buf);
	free(r);
	return NULL;
}

eng_rx_frame *
eng_rx_peek(eng_rx *r)
{
	eng_rx_frame *f;

	pthread_mutex_lock(&r->lock);
	f = r->head;
	pthread_mutex_unlock(&r->lock);
	return f;
}

void
eng_rx_pop(eng_rx *r)
{
	pthread_mutex_lock(&r->lock);
	if (r->head != NULL)
	{
		r->head = r->head->next;
		if (r->head == NULL)
			r->tail = NULL;
		r->queued--;
		pthread_cond_signal(&r->room);
	}
	pthread_mutex_unlock(&r->lock);
}

bool
eng_rx_drained(eng_rx *r)
{
	bool		d;

	pthread_mutex_lock(&r->lock);
	d = r->ended && r->head == NULL;
	pthread_mutex_unlock(&r->lock);
	return d;
}

uint64_t
eng_rx_frames(eng_rx *r)
{
	uint64_t	n;

	pthread_mutex_lock(&r->lock);
	n = r->frames;
	pthread_mutex_unlock(&r->lock);
	return n;
}

bool
eng_rx_finish(eng_rx *r, eng_buf *rest)
{
	bool		closed;

	pthread_mutex_lock(&r->lock);
	r->stopping = true;
	pthread_cond_signal(&r->room);
	pthread_mutex_unlock(&r->lock);
	while (write(r->stop[1], "s", 1) < 0 && errno == EINTR)
		;
	pthread_join(r->tid, NULL);
	/* the thread is gone: what it left is the caller's */
	for (eng_rx_frame *f = r->head, *next; f != NULL; f = next)
	{
		next = f->next;
		frame_free(f, false);
	}
	while (r->n_spare > 0)
		free(r->spare[--r->n_spare]);
	if (rest != NULL && r->len > 0)
		eng_buf_put(rest, r->buf, r->len);
	closed = r->closed;
	close(r->stop[0]);
	close(r->stop[1]);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->room);
	free(r->buf);
	free(r);
	return closed;
}
