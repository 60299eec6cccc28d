/*
 * eng_greet.c: the greeter, a thread that accepts the engine's connections
 * and answers their HELLO while the main thread may be busy (eng_greet.h
 * says why and what it may touch).
 */
#include "eng_greet.h"
#include "eng_io.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mcc_job.h"
#include "mcc_proto.h"

/* Connections being greeted at once; more are handed over as they come. */
#define MAX_PENDING 64
#define HELLO_BYTES (ENG_FRAME_HDRSZ + 8)	/* HELLO: version, pid */

struct eng_greeter
{
	int			listen_fd;
	uint64_t	incarnation;
	uint32_t	threads;
	atomic_uint flags;
	int			wake[2];		/* greeter -> main: connections to take */
	int			stop[2];		/* main -> greeter: stop */
	pthread_t	tid;
	eng_greeted pending[MAX_PENDING];	/* the greeter's own */
	int			n_pending;
	pthread_mutex_t lock;		/* guards what follows */
	eng_greeted *ready;			/* handed over, not yet taken */
	int			n_ready;
	int			cap_ready;
};

void
eng_greet_hello_ok(eng_buf *out, uint64_t rid, uint64_t incarnation, uint32_t threads,
				   uint32_t flags)
{
	size_t		f = eng_frame_begin(out, MCC_MSG_HELLO_OK, rid);

	eng_buf_u64(out, incarnation);
	eng_buf_u32(out, threads);
	eng_buf_u32(out, flags);
	eng_frame_end(out, f);
}

/* Hand connection p over to the main thread (closed if memory runs out). */
static void
hand_over(eng_greeter *g, const eng_greeted *p)
{
	bool		ok = true;

	pthread_mutex_lock(&g->lock);
	if (g->n_ready == g->cap_ready)
	{
		int			cap = g->cap_ready ? 2 * g->cap_ready : 16;
		eng_greeted *r = realloc(g->ready, (size_t) cap * sizeof(*r));

		if (r != NULL)
		{
			g->ready = r;
			g->cap_ready = cap;
		}
		ok = r != NULL;
	}
	if (ok)
		g->ready[g->n_ready++] = *p;
	pthread_mutex_unlock(&g->lock);
	if (!ok)
		close(p->fd);
	/* a full pipe already wakes the main thread */
	while (ok && write(g->wake[1], "c", 1) < 0 && errno == EINTR)
		;
}

/* Send all of buf on a fresh connection's socket (a few dozen bytes); false on error. */
static bool
send_all(int fd, const uint8_t *buf, size_t len)
{
	size_t		off = 0;

	while (off < len)
	{
		ssize_t		n = send(fd, buf + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		eng_io		io = eng_io_of(n);

		if (io == ENG_IO_MOVED)
			off += (size_t) n;
		else if (io == ENG_IO_ENDED)
			return false;
		else if (io == ENG_IO_BLOCKED)
			(void) poll(&p, 1, 100);
	}
	return true;
}

/* p's HELLO is complete: answer it if it is this version's; hand p over either way. */
static void
answer_hello(eng_greeter *g, eng_greeted *p)
{
	mcc_frame_hdr h;
	eng_rd		r;
	uint32_t	version;
	uint32_t	pid;
	eng_buf		out;

	eng_frame_decode(p->head, &h);
	eng_rd_init(&r, p->head + ENG_FRAME_HDRSZ, 8);
	version = eng_rd_u32(&r);
	pid = eng_rd_u32(&r);
	/* another version: the main thread's HELLO says why, and closes */
	if (version == MCC_PROTO_VERSION)
	{
		eng_buf_init(&out);
		eng_greet_hello_ok(&out, h.request_id, g->incarnation, g->threads,
						   atomic_load(&g->flags));
		if (out.failed || !send_all(p->fd, out.data, out.len))
		{
			eng_buf_free(&out);
			close(p->fd);
			return;
		}
		eng_buf_free(&out);
		p->greeted = true;
		p->pid = pid;
		p->n_head = 0;
	}
	hand_over(g, p);
}

/*
 * Read what p's socket has of its first frame, never past it. True while
 * p stays with the greeter; false once it was handed over or closed.
 */
static bool
greet_step(eng_greeter *g, eng_greeted *p)
{
	size_t		need = p->n_head < ENG_FRAME_HDRSZ ? ENG_FRAME_HDRSZ : HELLO_BYTES;
	ssize_t		n = recv(p->fd, p->head + p->n_head, need - p->n_head, MSG_DONTWAIT);
	mcc_frame_hdr h;

	if (eng_io_of(n) == ENG_IO_AGAIN || eng_io_of(n) == ENG_IO_BLOCKED)
		return true;
	if (n <= 0)
	{
		/* closed: what came goes to the main thread, which sees the close too */
		if (n == 0 && p->n_head > 0)
			hand_over(g, p);
		else
			close(p->fd);
		return false;
	}
	p->n_head += (size_t) n;
	if (p->n_head == ENG_FRAME_HDRSZ)
	{
		eng_frame_decode(p->head, &h);
		if (h.type != MCC_MSG_HELLO || h.length != 8)
		{
			hand_over(g, p);	/* not a HELLO: the main thread's to handle */
			return false;
		}
	}
	if (p->n_head < HELLO_BYTES)
		return true;
	answer_hello(g, p);
	return false;
}

/* Accept what the listener has: each connection greeted, or handed over if too many wait. */
static void
accept_all(eng_greeter *g)
{
	for (;;)
	{
		int			fd = accept4(g->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		eng_greeted p = {.fd = fd};

		if (fd < 0 && errno == EINTR)
			continue;
		if (fd < 0)
			return;				/* EAGAIN, or a failure the next poll sees again */
		if (g->n_pending < MAX_PENDING)
			g->pending[g->n_pending++] = p;
		else
			hand_over(g, &p);
	}
}

static void *
greet_main(void *arg)
{
	eng_greeter *g = arg;
	struct pollfd pfd[2 + MAX_PENDING];

	for (;;)
	{
		int			n = 0;

		pfd[n++] = (struct pollfd) {.fd = g->stop[0], .events = POLLIN};
		pfd[n++] = (struct pollfd) {.fd = g->listen_fd, .events = POLLIN};
		for (int i = 0; i < g->n_pending; i++)
			pfd[n++] = (struct pollfd) {.fd = g->pending[i].fd, .events = POLLIN};
		if (poll(pfd, (nfds_t) n, -1) < 0)
			continue;			/* EINTR; nothing else is expected of these fds */
		if (pfd[0].revents)
			break;
		/* the pending connections by their poll slots, before new ones move them */
		for (int i = 0, k = 2; k < n; k++)
		{
			if (pfd[k].revents == 0 || greet_step(g, &g->pending[i]))
			{
				i++;
				continue;
			}
			g->pending[i] = g->pending[--g->n_pending];
			/* the moved one's slot is the last polled: look at it now */
			if (i < g->n_pending)
			{
				pfd[k] = pfd[n - 1];
				n--;
				k--;
			}
		}
		if (pfd[1].revents)
			accept_all(g);
	}
	for (int i = 0; i < g->n_pending; i++)
		close(g->pending[i].fd);
	g->n_pending = 0;
	return NULL;
}

eng_greeter *
eng_greet_start(int listen_fd, uint64_t incarnation, uint32_t threads, uint32_t flags)
{
	eng_greeter *g = calloc(1, sizeof(*g));

	if (g == NULL)
		return NULL;
	g->listen_fd = listen_fd;
	g->incarnation = incarnation;
	g->threads = threads;
	atomic_init(&g->flags, flags);
	pthread_mutex_init(&g->lock, NULL);
	g->wake[0] = g->wake[1] = g->stop[0] = g->stop[1] = -1;
	if (pipe2(g->wake, O_NONBLOCK | O_CLOEXEC) == 0 && pipe2(g->stop, O_CLOEXEC) == 0 &&
		mcc_job_start_threads(&g->tid, 1, greet_main, g, 0) == 1)
		return g;
	for (int i = 0; i < 2; i++)
	{
		if (g->wake[i] >= 0)
			close(g->wake[i]);
		if (g->stop[i] >= 0)
			close(g->stop[i]);
	}
	pthread_mutex_destroy(&g->lock);
	free(g);
	return NULL;
}

void
eng_greet_set_flags(eng_greeter *g, uint32_t flags)
{
	atomic_store(&g->flags, flags);
}

int
eng_greet_fd(const eng_greeter *g)
{
	return g->wake[0];
}

int
eng_greet_take(eng_greeter *g, eng_greeted *out, int max)
{
	char		buf[64];
	int			n;

	while (read(g->wake[0], buf, sizeof(buf)) > 0)
		;
	pthread_mutex_lock(&g->lock);
	n = g->n_ready < max ? g->n_ready : max;
	memcpy(out, g->ready, (size_t) n * sizeof(*out));
	memmove(g->ready, g->ready + n, (size_t) (g->n_ready - n) * sizeof(*out));
	g->n_ready -= n;
	/* the rest at the next turn: the pipe says so again */
	if (g->n_ready > 0)
		(void) !write(g->wake[1], "c", 1);
	pthread_mutex_unlock(&g->lock);
	return n;
}

void
eng_greet_stop(eng_greeter *g)
{
	if (g == NULL)
		return;
	while (write(g->stop[1], "s", 1) < 0 && errno == EINTR)
		;
	pthread_join(g->tid, NULL);
	for (int i = 0; i < g->n_ready; i++)
		close(g->ready[i].fd);
	free(g->ready);
	close(g->wake[0]);
	close(g->wake[1]);
	close(g->stop[0]);
	close(g->stop[1]);
	pthread_mutex_destroy(&g->lock);
	free(g);
}
