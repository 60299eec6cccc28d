/*
 * engine_client.h: start build/mcc_engine as the supervisor would (socket
 * path, ready pipe, parent pipe) and talk to it over its UNIX socket; for
 * the end-to-end test and the benchmark.
 */
#ifndef ENGINE_CLIENT_H
#define ENGINE_CLIENT_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine_testlib.h"

typedef struct tc_engine
{
	pid_t		pid;
	int			parent_wr;		/* closing it tells the engine its parent is gone */
	char		dir[64];
	char		sock[128];
	char		log[128];
	uint64_t	incarnation;
	int			log_fd;			/* > 0: the engine's stderr instead of the log file */
} tc_engine;

/* The engine binary: $MCC_ENGINE or build/mcc_engine (tests run from the root). */
static inline const char *
tc_engine_path(void)
{
	const char *p = getenv("MCC_ENGINE");

	return p && *p ? p : "build/mcc_engine";
}

static inline int64_t
tc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Start the engine in dir (made if empty) with extra arguments (NULL-ended);
 * waits for its ready line. Returns false if it did not get ready.
 */
static inline bool
tc_engine_start(tc_engine *e, const char *const *extra)
{
	int			ready[2];
	int			parent[2];
	char		line[64];
	size_t		got = 0;
	int64_t		end = tc_now_ms() + 20000;

	if (e->dir[0] == '\0')
	{
		strcpy(e->dir, "/tmp/mcc-engine-test.XXXXXX");
		if (mkdtemp(e->dir) == NULL)
			return false;
	}
	snprintf(e->sock, sizeof(e->sock), "%s/engine.sock", e->dir);
	snprintf(e->log, sizeof(e->log), "%s/engine.log", e->dir);
	if (pipe(ready) != 0 || pipe(parent) != 0)
		return false;
	e->pid = fork();
	if (e->pid < 0)
		return false;
	if (e->pid == 0)
	{
		const char *argv[32];
		char		rfd[16];
		char		pfd[16];
		int			n = 0;
		int			lf = open(e->log, O_WRONLY | O_CREAT | O_APPEND, 0600);

		close(ready[0]);
		close(parent[1]);
		if (e->log_fd > 0)
			dup2(e->log_fd, 2);
		else if (lf >= 0)
			dup2(lf, 2);
		snprintf(rfd, sizeof(rfd), "%d", ready[1]);
		snprintf(pfd, sizeof(pfd), "%d", parent[0]);
		argv[n++] = tc_engine_path();
		argv[n++] = "--socket";
		argv[n++] = e->sock;
		argv[n++] = "--ready-fd";
		argv[n++] = rfd;
		argv[n++] = "--parent-fd";
		argv[n++] = pfd;
		for (int i = 0; extra && extra[i] && n < 30; i++)
			argv[n++] = extra[i];
		argv[n] = NULL;
		execv(argv[0], (char *const *) argv);
		_exit(127);
	}
	close(ready[1]);
	close(parent[0]);
	e->parent_wr = parent[1];
	fcntl(e->parent_wr, F_SETFD, FD_CLOEXEC);
	while (got < sizeof(line) - 1 && tc_now_ms() < end)
	{
		struct pollfd p = {.fd = ready[0], .events = POLLIN};
		ssize_t		n;

		if (poll(&p, 1, 200) <= 0)
			continue;
		n = read(ready[0], line + got, sizeof(line) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t) n;
		if (memchr(line, '\n', got))
			break;
	}
	close(ready[0]);
	line[got] = '\0';
	return sscanf(line, "ready %llu", (unsigned long long *) &e->incarnation) == 1;
}

/* Wait up to ms for the engine to exit; its wait status, or -1 if it did not. */
static inline int
tc_engine_wait(tc_engine *e, int ms)
{
	int64_t		end = tc_now_ms() + ms;
	int			st;

	while (tc_now_ms() < end)
	{
		pid_t		r = waitpid(e->pid, &st, WNOHANG);

		if (r == e->pid)
		{
			e->pid = 0;
			close(e->parent_wr);
			return st;
		}
		usleep(10000);
	}
	return -1;
}

/* Stop the engine (SIGKILL if it does not exit on SIGTERM) and remove dir. */
static inline void
tc_engine_cleanup(tc_engine *e)
{
	char		cmd[200];

	if (e->pid > 0)
	{
		kill(e->pid, SIGTERM);
		if (tc_engine_wait(e, 5000) == -1)
		{
			kill(e->pid, SIGKILL);
			tc_engine_wait(e, 5000);
		}
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", e->dir);
}

typedef struct tc_conn
{
	int			fd;
	eng_buf		in;
	size_t		pos;
} tc_conn;

/* Connect to the engine's socket; fd -1 on failure. */
static inline tc_conn
tc_connect(const char *path)
{
	tc_conn		c;
	struct sockaddr_un a;

	memset(&c, 0, sizeof(c));
	eng_buf_init(&c.in);
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	if (strlen(path) < sizeof(a.sun_path))
		memcpy(a.sun_path, path, strlen(path) + 1);
	c.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c.fd >= 0 && connect(c.fd, (struct sockaddr *) &a, sizeof(a)) != 0)
	{
		close(c.fd);
		c.fd = -1;
	}
	return c;
}

static inline void
tc_close(tc_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	eng_buf_free(&c->in);
}

/* Send a buffer of frames completely and empty it; false on error. */
static inline bool
tc_send(tc_conn *c, eng_buf *b)
{
	size_t		off = 0;

	while (off < b->len)
	{
		ssize_t		n = send(c->fd, b->data + off, b->len - off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		off += (size_t) n;
	}
	b->len = 0;
	return true;
}

/*
 * The next frame, waiting up to timeout_ms: 1 (f valid until the next call),
 * 0 on timeout, -1 on EOF or error.
 */
static inline int
tc_recv(tc_conn *c, tl_frame *f, int timeout_ms)
{
	int64_t		end = tc_now_ms() + timeout_ms;

	for (;;)
	{
		struct pollfd p = {.fd = c->fd, .events = POLLIN};
		int64_t		left;
		ssize_t		n;

		if (c->pos > 0 && c->pos == c->in.len)
			c->in.len = c->pos = 0;
		else if (c->pos > (1u << 20))
		{
			eng_buf_consume(&c->in, c->pos);
			c->pos = 0;
		}
		if (tl_next(c->in.data, c->in.len, &c->pos, f))
			return 1;
		left = end - tc_now_ms();
		if (left < 0)
			return 0;
		if (poll(&p, 1, (int) left) <= 0)
			continue;
		if (!eng_buf_reserve(&c->in, 65536))
			return -1;
		n = recv(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		c->in.len += (size_t) n;
	}
}

/* The next frame answering request rid (others are skipped); as tc_recv. */
static inline int
tc_await(tc_conn *c, uint64_t rid, tl_frame *f, int timeout_ms)
{
	int64_t		end = tc_now_ms() + timeout_ms;
	int			r;

	do
	{
		int64_t		left = end - tc_now_ms();

		r = tc_recv(c, f, left > 0 ? (int) left : 0);
		if (r == 1 && f->h.request_id == rid)
			return 1;
	} while (r == 1);
	return r;
}

#endif							/* ENGINE_CLIENT_H */
