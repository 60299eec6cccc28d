/*
 * service_client.c: a backend's connection to the matcher engine.
 *
 * One UNIX stream socket per backend, opened on first use and kept; it is
 * reopened when the engine restarts (a new incarnation). The socket is
 * non-blocking and every wait goes through a WaitEventSet with the process
 * latch, so cancel requests and statement_timeout interrupt a wait at once.
 * When an interrupt ends a wait for a reply, the backend sends CANCEL and
 * keeps the connection: replies are matched by request id and stale ones
 * are skipped. When an error leaves a frame half written (or a multi-frame
 * load unfinished), the connection is closed instead, which tells the
 * engine to forget everything the backend had begun.
 */
#include "mcc_pg.h"
#include "service.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/memutils.h"

#define HDR_SIZE		MCC_WIRE_HDRSZ
#define HELLO_TIMEOUT_MS 2000
#define UNRESPONSIVE_MS	5000		/* after a HELLO timeout, do not retry for this long */
#define RBUF_KEEP		(4 << 20)	/* a receive buffer above this is freed once empty */

static int	conn_fd = -1;
static uint64 conn_launch = 0;	/* supervisor's launch number at connect */
static uint64 conn_incarnation = 0; /* engine's own, from HELLO_OK */
static uint32 conn_flags = 0;	/* MCC_HELLO_*, from HELLO_OK */
static uint64 next_request_id = 1;
static WaitEventSet *conn_wait = NULL;
static int	conn_wait_pos = -1;	/* position of the socket event */
static StringInfoData rbuf;		/* received bytes not yet consumed */
static int	rbuf_start = 0;		/* first unconsumed byte of rbuf */
static uint64 unresponsive_launch = 0;	/* engine launch that did not answer HELLO */
static TimestampTz unresponsive_until = 0;

/* Close the connection and forget everything received on it. */
void
mcc_conn_close(void)
{
	if (conn_wait != NULL)
	{
		FreeWaitEventSet(conn_wait);
		conn_wait = NULL;
	}
	if (conn_fd >= 0)
		close(conn_fd);
	conn_fd = -1;
	conn_incarnation = 0;
	conn_flags = 0;
	if (rbuf.data != NULL)
		resetStringInfo(&rbuf);
	rbuf_start = 0;
	mcc_ahead_forget();
}

/* Incarnation of the engine this backend is connected to. */
uint64
mcc_conn_incarnation(void)
{
	return conn_fd >= 0 ? conn_incarnation : 0;
}

/* HELLO_OK's flags of the connected engine (0 if not connected). */
uint32
mcc_conn_engine_flags(void)
{
	return conn_fd >= 0 ? conn_flags : 0;
}

/* A fresh request id. */
uint64
mcc_conn_next_id(void)
{
	return next_request_id++;
}

/* Raise the ERROR for a connection that broke under a request. */
static void
engine_terminated(const char *when)
{
	mcc_conn_close();
	ereport(ERROR,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("matcher engine terminated"),
			 errdetail("The connection to the matcher engine closed %s.", when),
			 errhint("The engine restarts by itself; retry the statement.")));
}

/*
 * Wait until the socket is ready for events or timeout_ms (-1: none) passes;
 * returns false on timeout. Interrupts are serviced here.
 */
static bool
wait_socket(uint32 events, long timeout_ms)
{
	WaitEvent	ev;
	int			n;

	ModifyWaitEvent(conn_wait, conn_wait_pos, events, NULL);
	n = WaitEventSetWait(conn_wait, timeout_ms, &ev, 1, PG_WAIT_EXTENSION);
	if (n > 0 && (ev.events & WL_LATCH_SET))
		ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
	return n > 0;
}

/* Milliseconds left until deadline (-1: no deadline), at least 0. */
static long
ms_left(TimestampTz deadline)
{
	long		ms;

	if (deadline == 0)
		return -1;
	ms = (long) ((deadline - GetCurrentTimestamp()) / 1000);
	return Max(ms, 0);
}

/* The deadline for one reply under mcc.request_timeout (0: none). */
static TimestampTz
reply_deadline(int timeout_ms)
{
	if (timeout_ms <= 0)
		return 0;
	return TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms);
}

/* Start a frame: room for the header. */
void
mcc_frame_begin(StringInfo buf)
{
	initStringInfo(buf);
	appendStringInfoSpaces(buf, HDR_SIZE);
}

/* Fill in the header of a frame begun with mcc_frame_begin. */
static void
frame_finish(StringInfo frame, uint16 type, uint64 request_id, uint16 flags)
{
	mcc_frame_hdr hdr;

	if ((uint64) frame->len - HDR_SIZE > MCC_PROTO_MAX_FRAME)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("request to the matcher engine is too large"),
				 errdetail("The request has %d bytes; the limit is %u.",
						   frame->len - HDR_SIZE, MCC_PROTO_MAX_FRAME)));
	hdr.length = (uint32) (frame->len - HDR_SIZE);
	hdr.type = type;
	hdr.flags = flags;
	hdr.request_id = request_id;
	mcc_wire_enc_header((uint8 *) frame->data, &hdr);
}

/* Write all of buf, waiting interruptibly; closes the connection on any error. */
static void
write_all(const char *buf, size_t len)
{
	volatile size_t done = 0;

	PG_TRY();
	{
		while (done < len)
		{
			ssize_t		n = send(conn_fd, buf + done, len - done, MSG_NOSIGNAL);

			if (n > 0)
				done += n;
			else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				wait_socket(WL_SOCKET_WRITEABLE, -1);
			else if (n < 0 && errno == EINTR)
				CHECK_FOR_INTERRUPTS();
			else
				engine_terminated("while a request was being sent");
		}
	}
	PG_CATCH();
	{
		if (done < len)
			mcc_conn_close();
		PG_RE_THROW();
	}
	PG_END_TRY();
}

/* Send a frame; an error closes the connection if the frame was cut. */
void
mcc_conn_send(StringInfo frame, uint16 type, uint64 request_id)
{
	if (conn_fd < 0)
		engine_terminated("before a request could be sent");
	frame_finish(frame, type, request_id, 0);
	write_all(frame->data, frame->len);
}

/*
 * Send a frame ahead of the call that will await its reply
 * (service_ahead.c): the reply is kept when it comes, and the call whose
 * frame is the same takes it. Returns the request id.
 */
uint64
mcc_conn_send_ahead(StringInfo frame, uint16 type)
{
	uint64		id = mcc_conn_next_id();

	mcc_ahead_add(id, type, frame->data + HDR_SIZE, (uint32) (frame->len - HDR_SIZE));
	mcc_conn_send(frame, type, id);
	return id;
}

/*
 * Send a frame and return its request id: the id of the request sent ahead
 * with the same frame if there is one (its reply is then the one awaited),
 * else a fresh one.
 */
uint64
mcc_conn_send_or_take(StringInfo frame, uint16 type)
{
	uint64		id;

	if (mcc_ahead_take(type, frame->data + HDR_SIZE, (uint32) (frame->len - HDR_SIZE), &id))
		return id;
	id = mcc_conn_next_id();
	mcc_conn_send(frame, type, id);
	return id;
}

/* Send with poll() only (no interrupts, as under an LWLock). */
bool
mcc_conn_send_nowait(StringInfo frame, uint16 type, uint16 flags, uint64 request_id,
					 int timeout_ms)
{
	size_t		done = 0;
	TimestampTz deadline = reply_deadline(timeout_ms);

	if (conn_fd < 0)
		return false;
	frame_finish(frame, type, request_id, flags);
	while (done < (size_t) frame->len)
	{
		ssize_t		n = send(conn_fd, frame->data + done, frame->len - done, MSG_NOSIGNAL);
		struct pollfd pfd;

		if (n > 0)
		{
			done += n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			break;
		pfd.fd = conn_fd;
		pfd.events = POLLOUT;
		pfd.revents = 0;
		if (poll(&pfd, 1, (int) ms_left(deadline)) == 0)
			break;
	}
	if (done == (size_t) frame->len)
		return true;
	mcc_conn_close();
	return false;
}

/* Best-effort CANCEL of request_id; never raises, never blocks. */
void
mcc_conn_cancel(uint64 request_id)
{
	uint8		buf[HDR_SIZE + 8];
	mcc_frame_hdr hdr;
	ssize_t		n;

	if (conn_fd < 0)
		return;
	hdr.length = 8;
	hdr.type = MCC_MSG_CANCEL;
	hdr.flags = 0;
	hdr.request_id = mcc_conn_next_id();
	mcc_wire_enc_header(buf, &hdr);
	mcc_wire_enc_u64(buf + HDR_SIZE, request_id);
	n = send(conn_fd, buf, sizeof(buf), MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n != (ssize_t) sizeof(buf))
		mcc_conn_close();		/* a cut frame would corrupt the stream */
}

/* Parse an ERROR payload into reply. */
static void
parse_error(mcc_reply *reply)
{
	mcc_reader	r = reply->body;
	uint32		len;

	reply->err_code = mcc_get_u32(&r);
	reply->err_status = mcc_get_u32(&r);
	len = mcc_get_u32(&r);
	reply->err_message = pnstrdup(mcc_get_raw(&r, len), len);
}

/* reply of this type from body (len bytes, palloc'ed, one more for a NUL). */
static void
make_reply(mcc_reply *reply, uint16 type, char *body, uint32 len)
{
	memset(reply, 0, sizeof(*reply));
	reply->type = type;
	mcc_wire_rd_init(&reply->body, body, len);
	if (type == MCC_MSG_ERROR)
		parse_error(reply);
}

/*
 * Take one complete frame from rbuf if there is one. Frames for other
 * requests are kept if those were sent ahead (service_ahead.c), else
 * dropped (answers to cancelled ones). Returns true when the reply to
 * request_id was taken.
 */
static bool
take_frame(uint64 request_id, mcc_reply *reply, bool *took_any)
{
	mcc_frame_hdr hdr;
	int			avail = rbuf.len - rbuf_start;
	char	   *body;

	*took_any = false;
	if (avail < HDR_SIZE)
		return false;
	mcc_wire_dec_header((const uint8 *) rbuf.data + rbuf_start, &hdr);
	if (hdr.length > MCC_PROTO_MAX_FRAME)
	{
		mcc_conn_close();
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("malformed frame from the matcher engine"),
				 errdetail("A frame announced %u payload bytes.", hdr.length)));
	}
	if ((uint64) avail < (uint64) HDR_SIZE + hdr.length)
		return false;
	*took_any = true;
	if (hdr.request_id != request_id)
	{
		/* a request sent ahead keeps its reply; others' are stale */
		(void) mcc_ahead_keep(hdr.request_id, hdr.type, rbuf.data + rbuf_start + HDR_SIZE,
							  hdr.length);
		rbuf_start += HDR_SIZE + hdr.length;
		return false;
	}
	body = palloc(hdr.length + 1);
	memcpy(body, rbuf.data + rbuf_start + HDR_SIZE, hdr.length);
	rbuf_start += HDR_SIZE + hdr.length;
	make_reply(reply, hdr.type, body, hdr.length);
	return true;
}

/* Drop consumed bytes from the front of rbuf. */
static void
rbuf_compact(void)
{
	/* a large reply (an image job's map) must not keep its buffer for good */
	if (rbuf_start == rbuf.len && rbuf.maxlen > RBUF_KEEP)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		pfree(rbuf.data);
		initStringInfo(&rbuf);
		MemoryContextSwitchTo(old);
		rbuf_start = 0;
		return;
	}
	if (rbuf_start == 0)
		return;
	memmove(rbuf.data, rbuf.data + rbuf_start, rbuf.len - rbuf_start);
	rbuf.len -= rbuf_start;
	rbuf.data[rbuf.len] = '\0';
	rbuf_start = 0;
}

/* Read what the socket has; false if nothing was there. Raises at EOF. */
static bool
read_some(void)
{
	ssize_t		n;

	rbuf_compact();
	enlargeStringInfo(&rbuf, 65536);
	n = recv(conn_fd, rbuf.data + rbuf.len, rbuf.maxlen - rbuf.len - 1, 0);
	if (n > 0)
	{
		rbuf.len += n;
		return true;
	}
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return false;
	engine_terminated("while a reply was awaited");
	return false;				/* not reached */
}

/* Wait for the reply to request_id with a deadline (0: none). */
static bool
wait_reply_until(uint64 request_id, mcc_reply *reply, TimestampTz deadline)
{
	volatile bool got = false;
	uint16		type;
	char	   *body;
	uint32		len;

	/* a request sent ahead whose reply came while another was awaited */
	if (mcc_ahead_reply(request_id, &type, &body, &len))
	{
		make_reply(reply, type, body, len);
		return true;
	}
	PG_TRY();
	{
		for (;;)
		{
			bool		took_any;

			if (conn_fd < 0)
				engine_terminated("while a reply was awaited");
			if (take_frame(request_id, reply, &took_any))
			{
				got = true;
				break;
			}
			if (took_any)
				continue;
			if (read_some())
				continue;
			if (!wait_socket(WL_SOCKET_READABLE, ms_left(deadline)) &&
				deadline != 0 && GetCurrentTimestamp() >= deadline)
				break;
		}
	}
	PG_CATCH();
	{
		/* cancel, statement_timeout, termination: tell the engine to drop it */
		mcc_conn_cancel(request_id);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (!got)
		mcc_conn_cancel(request_id);
	return got;
}

/* Wait for the reply to request_id, bounded by interrupts only (image jobs). */
void
mcc_conn_wait_reply_unbounded(uint64 request_id, mcc_reply *reply)
{
	(void) wait_reply_until(request_id, reply, 0);
}

/* Wait for the reply to request_id under mcc.request_timeout. */
bool
mcc_conn_wait_reply(uint64 request_id, mcc_reply *reply)
{
	return wait_reply_until(request_id, reply, reply_deadline(mcc_request_timeout));
}

/* The same with a wait of at most timeout_ms (and mcc.request_timeout). */
bool
mcc_conn_wait_reply_ms(uint64 request_id, mcc_reply *reply, int timeout_ms)
{
	int			ms = mcc_request_timeout > 0 ? Min(timeout_ms, mcc_request_timeout) : timeout_ms;

	return wait_reply_until(request_id, reply, reply_deadline(ms));
}

/*
 * The same for a request of `units` units of work (the probes of a batch):
 * mcc.request_timeout applies to each.
 */
bool
mcc_conn_wait_reply_units(uint64 request_id, mcc_reply *reply, int units)
{
	int64		ms = (int64) mcc_request_timeout * Max(units, 1);

	return wait_reply_until(request_id, reply, reply_deadline((int) Min(ms, INT_MAX)));
}

/* Open the socket; returns errno-style failure text or NULL. */
static char *
open_socket(const char *path)
{
	struct sockaddr_un addr;
	int			fd;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return psprintf("could not create socket: %m");
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	strlcpy(addr.sun_path, path, sizeof(addr.sun_path));
	if (connect(fd, (struct sockaddr *) &addr, sizeof(addr)) < 0)
	{
		char	   *why = psprintf("could not connect to \"%s\": %m", path);

		close(fd);
		return why;
	}
	conn_fd = fd;
	if (rbuf.data == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		initStringInfo(&rbuf);
		MemoryContextSwitchTo(old);
	}
	resetStringInfo(&rbuf);
	rbuf_start = 0;
	conn_wait = CreateWaitEventSet(TopMemoryContext, 3);
	AddWaitEventToSet(conn_wait, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
	AddWaitEventToSet(conn_wait, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
	conn_wait_pos = AddWaitEventToSet(conn_wait, WL_SOCKET_READABLE, fd, NULL, NULL);
	return NULL;
}

/* HELLO exchange, waiting at most hello_ms (0: no bound but interrupts);
 * NULL on success, else why it failed. */
static char *
hello(int hello_ms)
{
	StringInfoData f;
	uint64		id = mcc_conn_next_id();
	mcc_reply	reply;

	mcc_frame_begin(&f);
	mcc_put_u32(&f, MCC_PROTO_VERSION);
	mcc_put_u32(&f, (uint32) MyProcPid);
	mcc_conn_send(&f, MCC_MSG_HELLO, id);
	pfree(f.data);
	if (!wait_reply_until(id, &reply, hello_ms > 0 ? reply_deadline(hello_ms) : 0))
	{
		/* a hung engine must not stall every commit of this backend */
		unresponsive_until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), UNRESPONSIVE_MS);
		return pstrdup("the matcher engine did not answer HELLO in time");
	}
	if (reply.type == MCC_MSG_ERROR)
		return psprintf("the matcher engine refused HELLO: %s", reply.err_message);
	if (reply.type != MCC_MSG_HELLO_OK)
		return psprintf("the matcher engine answered HELLO with message type %u", reply.type);
	conn_incarnation = mcc_get_u64(&reply.body);
	(void) mcc_get_u32(&reply.body);	/* the engine's threads */
	conn_flags = mcc_get_u32(&reply.body);
	return NULL;
}

/*
 * HELLO on a fresh socket, turning an engine that dies meanwhile into a
 * failure to connect (returned as text) rather than an ERROR.
 */
static char *
hello_guarded(int hello_ms)
{
	MemoryContext cxt = CurrentMemoryContext;
	char	   *volatile fail = NULL;

	PG_TRY();
	{
		fail = hello(hello_ms);
	}
	PG_CATCH();
	{
		ErrorData  *e;

		MemoryContextSwitchTo(cxt);
		e = CopyErrorData();
		if (e->sqlerrcode != ERRCODE_CONNECTION_FAILURE)
			PG_RE_THROW();
		FlushErrorState();
		fail = e->message;
	}
	PG_END_TRY();
	return fail;
}

/* Connect unless connected to the current engine. */
mcc_conn_result
mcc_conn_ensure(char **why)
{
	return mcc_conn_ensure_within(why, HELLO_TIMEOUT_MS);
}

/*
 * The same, waiting up to hello_ms (0: until an interrupt) for HELLO's
 * answer. A backend that would fall back to its own scan gives up after
 * HELLO_TIMEOUT_MS; a parallel load worker joining a load already under way
 * has nothing to fall back to, and the engine's main thread may be busy
 * with the leader's frames for longer than that.
 */
mcc_conn_result
mcc_conn_ensure_within(char **why, int hello_ms)
{
	uint64		launch;
	mcc_service_state st = mcc_service_state_now(&launch);
	char	   *fail;

	*why = NULL;
	if (mcc_svc == NULL)
	{
		*why = pstrdup("mcc is not in shared_preload_libraries");
		return MCC_CONN_NOT_READY;
	}
	if (st != MCC_SVC_READY)
	{
		*why = pstrdup(st == MCC_SVC_STARTING ? "the matcher engine is starting" :
					   st == MCC_SVC_BACKOFF ? "the matcher engine is restarting" :
					   "the matcher service is not running");
		return MCC_CONN_NOT_READY;
	}
	if (conn_fd >= 0 && conn_launch == launch)
		return MCC_CONN_OK;
	if (unresponsive_launch == launch && GetCurrentTimestamp() < unresponsive_until)
	{
		*why = pstrdup("the matcher engine did not answer HELLO a moment ago");
		return MCC_CONN_FAILED;
	}
	unresponsive_launch = launch;
	unresponsive_until = 0;
	mcc_conn_close();
	fail = open_socket(mcc_svc->socket_path);
	if (fail == NULL)
		fail = hello_guarded(hello_ms);
	if (fail == NULL)
	{
		conn_launch = launch;
		return MCC_CONN_OK;
	}
	mcc_conn_close();
	*why = fail;
	return MCC_CONN_FAILED;
}

/* ---- payload writers: the shared encoder into a StringInfo ---- */

/* Append a fixed-size field: the shared encoder's bytes. */
#define PUT_FIELD(sfx, type) \
	void \
	mcc_put_##sfx(StringInfo s, type v) \
	{ \
		uint8		b[sizeof(v)]; \
 \
		appendBinaryStringInfo(s, (const char *) b, mcc_wire_enc_##sfx(b, v)); \
	}

MCC_WIRE_SCALARS(PUT_FIELD)

/* A "bytes" field: uint32 length, then the bytes. */
void
mcc_put_bytes(StringInfo s, const void *p, uint32 len)
{
	mcc_put_u32(s, len);
	appendBinaryStringInfo(s, (const char *) p, len);
}

/* Append a gallery id. */
void
mcc_put_gallery(StringInfo s, const mcc_gallery_id *g)
{
	uint8		b[MCC_WIRE_GALLERYSZ];

	appendBinaryStringInfo(s, (const char *) b, mcc_wire_enc_gallery(b, g));
}

/* ---- payload readers: the shared decoder, its error flag raised ---- */

/* Raise the protocol violation of a payload read past its end. */
void
mcc_reader_check(const mcc_reader *r, const char *detail)
{
	if (r->bad)
		mcc_pg_malformed_reply("%s", detail);
}

#define ENDED_EARLY "The reply ended early."

/* n raw bytes of a payload; a shorter one raises, detail saying what ended. */
const char *
mcc_reader_take(mcc_reader *r, size_t n, const char *detail)
{
	const char *p = (const char *) mcc_wire_rd_raw(r, n);

	mcc_reader_check(r, detail);
	return p;
}

/* An array's count and room for it, once the payload holds it (service.h). */
void *
mcc_get_records(mcc_reader *r, size_t each, size_t elem, uint32 *n)
{
	*n = mcc_get_u32(r);
	if (mcc_wire_rd_left(r) / each < *n)
		r->bad = true;
	mcc_reader_check(r, ENDED_EARLY);
	return palloc(Max(*n, 1) * elem);
}

/* A count and that many uint64s. */
uint64 *
mcc_get_u64_array(mcc_reader *r, uint32 *n)
{
	uint64	   *v = mcc_get_records(r, sizeof(uint64), sizeof(uint64), n);

	for (uint32 i = 0; i < *n; i++)
		v[i] = mcc_get_u64(r);
	return v;
}

/* n raw bytes of a payload; raises if the payload is shorter. */
const char *
mcc_get_raw(mcc_reader *r, size_t n)
{
	return mcc_reader_take(r, n, ENDED_EARLY);
}

/* Read a fixed-size field with the shared decoder; raise past the end. */
#define GET_FIELD(sfx, type) \
	type \
	mcc_get_##sfx(mcc_reader *r) \
	{ \
		type		v = mcc_wire_rd_##sfx(r); \
 \
		mcc_reader_check(r, ENDED_EARLY); \
		return v; \
	}

MCC_WIRE_SCALARS(GET_FIELD)

/* Read a gallery id. */
void
mcc_get_gallery(mcc_reader *r, mcc_gallery_id *g)
{
	mcc_wire_rd_gallery(r, g);
	mcc_reader_check(r, ENDED_EARLY);
}

/* SQLSTATE of an engine error code. */
static int
engine_sqlstate(const mcc_reply *reply)
{
	switch ((mcc_proto_error) reply->err_code)
	{
		case MCC_PERR_DATA:
			return mcc_pg_sqlstate((mcc_status) reply->err_status);
		case MCC_PERR_PROTOCOL:
			return ERRCODE_PROTOCOL_VIOLATION;
		case MCC_PERR_MEMORY:
			return ERRCODE_OUT_OF_MEMORY;
		case MCC_PERR_CANCELLED:
			return ERRCODE_QUERY_CANCELED;
		case MCC_PERR_NO_GPU:
			return ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE;
		case MCC_PERR_BUSY:
			return ERRCODE_INSUFFICIENT_RESOURCES;
		case MCC_PERR_TOO_LARGE:
			return ERRCODE_PROGRAM_LIMIT_EXCEEDED;
		case MCC_PERR_NOT_LOADED:
		case MCC_PERR_GENERATION:
		case MCC_PERR_INTERNAL:
			break;
	}
	return ERRCODE_INTERNAL_ERROR;
}

/* Raise an engine ERROR reply. */
void
mcc_raise_engine_error(const mcc_reply *reply)
{
	if (reply->type != MCC_MSG_ERROR)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("unexpected reply from the matcher engine"),
				 errdetail("Message type %u arrived.", reply->type)));
	ereport(ERROR,
			(errcode(engine_sqlstate(reply)),
			 errmsg("matcher engine: %s", reply->err_message),
			 errdetail("Engine error code %u.", reply->err_code)));
	pg_unreachable();
}
