/*
 * test_engine_greet.c: a connection's HELLO is answered while the engine's
 * main thread is busy (eng_greet.h). At 100 M rows, parallel load workers
 * timed out on HELLO behind the load their leader had opened.
 *
 * First the greeter alone, with this test as its main thread that takes
 * nothing until the answers are in: HELLO answered with the incarnation,
 * threads and the flags published last; a silent connection holds nobody
 * up; a first frame other than HELLO, and a HELLO of another version, go
 * to the main thread unanswered with exactly the bytes read.
 *
 * Then the engine program in the middle of a load: its stderr is a pipe
 * this test has filled, so the main thread blocks in the log line of the
 * load's LOAD_END (seen in /proc/PID/syscall where the kernel shows it)
 * and cannot answer anyone; a new connection's HELLO is answered all the
 * same, before the LOADED that the blocked thread owes. Once the pipe is
 * read the load ends with every row, and the greeted connection is served
 * by the main thread like any other.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "unit.h"
#include "engine_client.h"
#include "engine_testlib.h"
#include "eng_greet.h"

#define WAIT_MS 30000			/* a bound for failures only: the answers are immediate */
#define NT 64

static const mcc_gallery_id gal = {5, 16500, 77};

/* A HELLO of version v from pid. */
static void
hello_v(eng_buf *b, uint64_t rid, uint32_t v, uint32_t pid)
{
	size_t		f = eng_frame_begin(b, MCC_MSG_HELLO, rid);

	eng_buf_u32(b, v);
	eng_buf_u32(b, pid);
	eng_frame_end(b, f);
}

/* HELLO_OK for rid with these fields? */
static bool
hello_ok_is(tc_conn *c, uint64_t rid, uint64_t inc, uint32_t threads, uint32_t flags)
{
	tl_frame	f;
	uint64_t	got_inc;
	uint32_t	got[2];

	if (tc_await(c, rid, &f, WAIT_MS) != 1 || f.h.type != MCC_MSG_HELLO_OK || f.h.length != 16)
		return false;
	memcpy(&got_inc, f.p, 8);
	memcpy(got, f.p + 8, 8);
	return got_inc == inc && got[0] == threads && got[1] == flags;
}

/* Nothing has come on c (and it is open). */
static bool
nothing_came(tc_conn *c)
{
	char		x;
	ssize_t		n = recv(c->fd, &x, 1, MSG_DONTWAIT | MSG_PEEK);

	return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

/* Take connections from the greeter until `want` are in out (waiting on its fd). */
static int
take_n(eng_greeter *g, eng_greeted *out, int want)
{
	int			n = 0;

	while (n < want)
	{
		struct pollfd p = {.fd = eng_greet_fd(g), .events = POLLIN};

		if (poll(&p, 1, WAIT_MS) <= 0)
			break;
		n += eng_greet_take(g, out + n, want - n);
	}
	return n;
}

/* A listening socket at path (non-blocking, as the engine's). */
static int
listen_at(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int			fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	strcpy(a.sun_path, path);
	if (fd < 0 || bind(fd, (struct sockaddr *) &a, sizeof(a)) != 0 || listen(fd, 16) != 0)
		return -1;
	return fd;
}

static void
greeter_alone(void)
{
	char		dir[] = "/tmp/mcc-greet-test.XXXXXX";
	char		path[128];
	int			lfd;
	eng_greeter *g;
	eng_greeted got[4];
	tc_conn		silent;
	tc_conn		a;
	tc_conn		b2;
	tc_conn		other;
	tc_conn		old;
	eng_buf		b;
	uint8_t		frame[64];
	size_t		frame_n;
	int			n;

	if (mkdtemp(dir) == NULL)
	{
		UNIT_CHECK(false, "temporary directory");
		return;
	}
	snprintf(path, sizeof(path), "%s/greet.sock", dir);
	lfd = listen_at(path);
	g = lfd >= 0 ? eng_greet_start(lfd, 0x1234abcd, 3, MCC_HELLO_IMAGES) : NULL;
	UNIT_CHECK(g != NULL, "greeter started on a listening socket");
	if (g == NULL)
		return;
	eng_buf_init(&b);
	silent = tc_connect(path);	/* says nothing, ever */
	a = tc_connect(path);
	hello_v(&b, 7, MCC_PROTO_VERSION, 777);
	UNIT_CHECK(tc_send(&a, &b) && hello_ok_is(&a, 7, 0x1234abcd, 3, MCC_HELLO_IMAGES),
			   "HELLO answered (incarnation, threads, flags) while the main thread takes nothing, "
			   "a silent connection beside it");
	eng_greet_set_flags(g, MCC_HELLO_IMAGES | MCC_HELLO_GPU);
	b2 = tc_connect(path);
	hello_v(&b, 8, MCC_PROTO_VERSION, 778);
	UNIT_CHECK(tc_send(&b2, &b) && hello_ok_is(&b2, 8, 0x1234abcd, 3, MCC_HELLO_IMAGES | MCC_HELLO_GPU),
			   "HELLO_OK carries the flags published last");
	n = take_n(g, got, 2);
	UNIT_CHECK(n == 2 && got[0].greeted && got[1].greeted && got[0].n_head == 0 &&
			   got[1].n_head == 0 && got[0].pid + got[1].pid == 777 + 778,
			   "both handed over greeted, with their pids and no bytes left to handle");
	for (int i = 0; i < n; i++)
		close(got[i].fd);

	/* a first frame that is not HELLO: handed over with its header, its payload left in the socket */
	other = tc_connect(path);
	tl_load_end(&b, 9);
	tl_empty(&b, MCC_MSG_STATUS, 10);
	frame_n = b.len;
	memcpy(frame, b.data, frame_n);
	n = tc_send(&other, &b) ? take_n(g, got, 1) : 0;
	UNIT_CHECK(n == 1 && !got[0].greeted && got[0].n_head == ENG_FRAME_HDRSZ &&
			   memcmp(got[0].head, frame, ENG_FRAME_HDRSZ) == 0 && nothing_came(&other),
			   "a first frame other than HELLO: handed over unanswered with its %d header bytes",
			   ENG_FRAME_HDRSZ);
	if (n == 1)
	{
		ssize_t		r = recv(got[0].fd, frame, sizeof(frame), MSG_DONTWAIT);

		UNIT_CHECK(r == (ssize_t) (frame_n - ENG_FRAME_HDRSZ),
				   "the rest (the next frame) still in the socket for the main thread");
		close(got[0].fd);
	}
	old = tc_connect(path);
	hello_v(&b, 11, MCC_PROTO_VERSION - 1, 779);
	frame_n = b.len;
	memcpy(frame, b.data, frame_n);
	n = tc_send(&old, &b) ? take_n(g, got, 1) : 0;
	UNIT_CHECK(n == 1 && !got[0].greeted && got[0].n_head == frame_n &&
			   memcmp(got[0].head, frame, frame_n) == 0 && nothing_came(&old),
			   "a HELLO of another version: handed over unanswered, whole (the main thread refuses it)");
	if (n == 1)
		close(got[0].fd);
	UNIT_CHECK(nothing_came(&silent) && eng_greet_take(g, got, 4) == 0,
			   "the silent connection is neither answered nor handed over");
	eng_greet_stop(g);
	tc_close(&silent);
	tc_close(&a);
	tc_close(&b2);
	tc_close(&other);
	tc_close(&old);
	eng_buf_free(&b);
	close(lfd);
	unlink(path);
	rmdir(dir);
}

/* Is the process's main thread inside write(2, ...)? -1: the kernel does not say. */
static int
main_thread_writing_log(pid_t pid)
{
	char		path[64];
	char		line[256];
	long		nr = -2;
	unsigned long fd = 0;
	FILE	   *f;
	int			got;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int) pid);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	got = fgets(line, sizeof(line), f) != NULL ? sscanf(line, "%ld %lx", &nr, &fd) : -1;
	fclose(f);
	if (got == 0 && strncmp(line, "running", 7) == 0)
		return 0;				/* on a CPU now: not yet blocked */
	if (got < 1)
		return -1;
	return nr == SYS_write && fd == 2;
}

/* Read what the pipe has (non-blocking); bytes read. */
static size_t
drain(int fd)
{
	char		buf[65536];
	size_t		total = 0;
	ssize_t		n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		total += (size_t) n;
	return total;
}

static void
engine_blocked_in_load(void)
{
	const char *args[] = {"--threads", "2", NULL};
	tc_engine	e;
	int			log_pipe[2];
	int			filler;
	char		self[64];
	tl_tpl	   *t = tl_templates(4711, NT, NT);
	int64_t		keys[NT];
	uint64_t	xids[NT];
	tc_conn		l;
	tc_conn		n;
	eng_buf		b;
	tl_frame	f;
	uint64_t	rows = 0;
	int			seen = -1;
	char		junk[4096];
	bool		greeted;

	if (access(tc_engine_path(), X_OK) != 0)
	{
		UNIT_SKIP("%s not built: HELLO during a held load", tc_engine_path());
		tl_templates_free(t, NT);
		return;
	}
	for (int i = 0; i < NT; i++)
	{
		keys[i] = 1000 + i;
		xids[i] = 2;
	}
	memset(&e, 0, sizeof(e));
	if (pipe2(log_pipe, O_CLOEXEC) != 0)
	{
		UNIT_CHECK(false, "log pipe");
		return;
	}
	e.log_fd = log_pipe[1];
	/* a second open file of the pipe's write end, non-blocking, to fill it (the engine's stays blocking) */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", log_pipe[1]);
	filler = open(self, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	fcntl(log_pipe[0], F_SETFL, O_NONBLOCK);
	if (filler < 0 || !tc_engine_start(&e, args))
	{
		UNIT_CHECK(false, "engine started with its stderr on a pipe");
		tc_engine_cleanup(&e);
		return;
	}
	close(log_pipe[1]);
	eng_buf_init(&b);
	l = tc_connect(e.sock);
	tl_hello(&b, 1);
	tl_load_begin(&b, 2, &gal, 1, NT);
	tl_load_rows(&b, 2, NT / 2, keys, xids, NULL, t);
	tl_load_rows(&b, 2, NT / 2, keys + NT / 2, xids + NT / 2, NULL, t + NT / 2);
	UNIT_CHECK(tc_send(&l, &b) && hello_ok_is(&l, 1, e.incarnation, 2, MCC_HELLO_IMAGES),
			   "engine: a load opened and its rows sent");

	/* the pipe full: the main thread's next log line (LOAD_END's) blocks it */
	drain(log_pipe[0]);
	while (write(filler, junk, sizeof(junk)) > 0 || errno == EINTR)
		;
	tl_load_end(&b, 2);
	UNIT_CHECK(tc_send(&l, &b), "LOAD_END sent with the engine's log pipe full");
	for (int64_t end = tc_now_ms() + WAIT_MS; tc_now_ms() < end && (seen = main_thread_writing_log(e.pid)) == 0;)
		usleep(1000);
	if (seen < 0)
		UNIT_SKIP("/proc/%d/syscall does not say where the main thread waits", (int) e.pid);
	else
		UNIT_CHECK(seen == 1, "the engine's main thread is blocked writing LOAD_END's log line");

	n = tc_connect(e.sock);
	tl_hello(&b, 5);
	greeted = tc_send(&n, &b) && hello_ok_is(&n, 5, e.incarnation, 2, MCC_HELLO_IMAGES);
	UNIT_CHECK(greeted && nothing_came(&l),
			   "a new connection's HELLO answered while the main thread is held in the load "
			   "(its LOADED not yet sent)");
	if (seen == 1)
		UNIT_CHECK(main_thread_writing_log(e.pid) == 1, "the main thread still held after the HELLO_OK");

	/* let the main thread go: the load ends, and the greeted connection is served as any */
	drain(log_pipe[0]);
	UNIT_CHECK(tc_await(&l, 2, &f, WAIT_MS) == 1 && f.h.type == MCC_MSG_LOADED &&
			   (memcpy(&rows, f.p, 8), rows == NT),
			   "once the log is read: LOADED with all %d rows", NT);
	tl_empty(&b, MCC_MSG_STATUS, 6);
	UNIT_CHECK(tc_send(&n, &b) && tc_await(&n, 6, &f, WAIT_MS) == 1 &&
			   f.h.type == MCC_MSG_STATUS_REPLY,
			   "the greeted connection's next request answered by the main thread");
	tc_close(&l);
	tc_close(&n);
	eng_buf_free(&b);
	close(filler);
	drain(log_pipe[0]);
	tc_engine_cleanup(&e);
	close(log_pipe[0]);
	tl_templates_free(t, NT);
}

int
main(void)
{
	greeter_alone();
	engine_blocked_in_load();
	return unit_done();
}
