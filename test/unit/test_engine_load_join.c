/*
 * test_engine_load_join.c: a load's parts on other connections (LOAD_BEGIN
 * with MCC_LOAD_JOIN, LOAD_JOIN, LOAD_JOIN_END), in process: the rows of
 * three connections make one cache equal to the reference; a wrong token
 * or generation adds nothing; a part that closes, is cancelled or has not
 * ended at LOAD_END fails the whole load and the previous cache serves; a
 * bad row in a part fails it with its DATA error at LOAD_END; a leader
 * that goes away abandons the load under its parts. Then the same
 * over the engine's socket, with 4 load threads (so that the main thread
 * reads the other parts' frames while it adds one's: eng_conn_read_ahead_other).
 */
#include <stdlib.h>
#include <string.h>

#include "eng_conn.h"
#include "eng_load.h"
#include "unit.h"
#include "engine_inproc.h"
#include "eng_log.h"
#include "eng_server.h"
#include "engine_client.h"

#define NT 240					/* rows of a load */

static const mcc_gallery_id gal = {5, 16400, 91};
static tl_tpl *gt;				/* row templates */
static tl_tpl *pt;				/* probes */
static int64_t keys[NT];
static uint64_t xids[NT];

/* LOAD_BEGIN with MCC_LOAD_JOIN, profile 0 (the first row's), and token t. */
static void
join_begin(eng_buf *b, uint64_t rid, uint64_t gen, const uint64_t t[2])
{
	size_t		f = eng_frame_begin(b, MCC_MSG_LOAD_BEGIN, rid);

	eng_buf_gallery(b, &gal);
	eng_buf_u64(b, gen);
	eng_buf_u32(b, 0);
	eng_buf_u64(b, NT);
	eng_buf_u32(b, 0);
	eng_buf_u32(b, MCC_LOAD_JOIN);
	eng_buf_u64(b, t[0]);
	eng_buf_u64(b, t[1]);
	eng_frame_end(b, f);
}

static void
join(eng_buf *b, uint64_t rid, uint64_t gen, const uint64_t t[2])
{
	size_t		f = eng_frame_begin(b, MCC_MSG_LOAD_JOIN, rid);

	eng_buf_gallery(b, &gal);
	eng_buf_u64(b, gen);
	eng_buf_u64(b, t[0]);
	eng_buf_u64(b, t[1]);
	eng_frame_end(b, f);
}

static void
join_end(eng_buf *b, uint64_t rid)
{
	size_t		f = eng_frame_begin(b, MCC_MSG_LOAD_JOIN_END, rid);

	eng_frame_end(b, f);
}

/* LOAD_JOIN_END of request rid, fed to c. */
static void
send_join_end(eng_server *s, eng_conn *c, uint64_t rid)
{
	eng_buf		b;

	eng_buf_init(&b);
	join_end(&b, rid);
	ip_send(s, c, &b);
	eng_buf_free(&b);
}

/* Rows [a, b) of the table as one LOAD_ROWS frame of request rid, fed to c. */
static void
send_rows(eng_server *s, eng_conn *c, uint64_t rid, int a, int z)
{
	eng_buf		b;

	eng_buf_init(&b);
	tl_load_rows(&b, rid, z - a, keys + a, xids + a, NULL, gt + a);
	ip_feed(s, c, &b);
	eng_buf_free(&b);
}

/* Feed the buffer's frames to c, then run until idle. */
static void
feed(eng_server *s, eng_conn *c, eng_buf *b)
{
	ip_send(s, c, b);
}

/* The reply type to rid on c (0: none or several), and a LOADED/JOINED count. */
static uint16_t
reply_type(eng_conn *c, uint64_t rid, uint64_t *count)
{
	tl_frame	f;

	if (ip_reply(c, rid, &f, NULL) != 1)
		return 0;
	if (count != NULL && f.h.length >= 8)
		memcpy(count, f.p, 8);
	return f.h.type;
}

/* LOAD_JOINED's `failed` word for rid on c (2: no such reply). */
static uint32_t
joined_failed(eng_conn *c, uint64_t rid)
{
	tl_frame	f;
	uint32_t	v = 2;

	if (ip_reply(c, rid, &f, NULL) == 1 && f.h.type == MCC_MSG_LOAD_JOINED && f.h.length == 12)
		memcpy(&v, f.p + 8, 4);
	return v;
}

/* Does a search of the first n rows (rows [0, n) live) on c answer as the reference? */
static bool
serves_rows(eng_server *s, eng_conn *c, uint64_t rid, uint64_t gen, int n)
{
	tl_entry	ref[NT];
	eng_buf		b;
	bool		ok;

	for (int i = 0; i < NT; i++)
		ref[i] = (tl_entry) {keys[i], &gt[i], i < n};
	eng_buf_init(&b);
	tl_search(&b, rid, &gal, gen, 10, 0.0f, 2, pt);
	feed(s, c, &b);
	eng_buf_free(&b);
	ok = ip_result_ok(c, rid, 2, pt, 10, 0.0f, NULL, ref, NT);
	return ok;
}

/*
 * Three connections, one load: the leader's rows and two joined parts;
 * LOADED counts all, the search equals the reference. A connection with a
 * wrong token or generation is refused and adds nothing.
 */
static void
test_join_ok(eng_server *s, eng_conn *l, eng_conn *w1, eng_conn *w2, eng_conn *x)
{
	const uint64_t tok[2] = {0x1234567890abcdefULL, 0x0fedcba987654321ULL};
	const uint64_t bad[2] = {0x1234567890abcdefULL, 0x0fedcba987654320ULL};
	uint64_t	n1 = 0, n2 = 0, all = 0;
	eng_buf		b;

	eng_buf_init(&b);
	join_begin(&b, 10, 3, tok);
	feed(s, l, &b);
	UNIT_CHECK(reply_type(l, 10, NULL) == MCC_MSG_OK, "LOAD_BEGIN with MCC_LOAD_JOIN: OK");
	ip_clear_out(l);

	join(&b, 20, 3, tok);
	feed(s, w1, &b);
	join(&b, 30, 3, tok);
	feed(s, w2, &b);
	join(&b, 40, 3, bad);
	join(&b, 41, 4, tok);
	feed(s, x, &b);
	UNIT_CHECK(reply_type(x, 40, NULL) == MCC_MSG_ERROR && ip_error_of(x, 40) == MCC_PERR_NOT_LOADED,
			   "LOAD_JOIN with another token is refused");
	UNIT_CHECK(ip_error_of(x, 41) == MCC_PERR_NOT_LOADED,
			   "LOAD_JOIN of another generation is refused");
	UNIT_CHECK(reply_type(w1, 20, NULL) == 0 && reply_type(w2, 30, NULL) == 0,
			   "LOAD_JOIN with the token: no reply");
	ip_clear_out(x);

	send_rows(s, w1, 20, 0, 80);
	send_rows(s, x, 40, 200, 240);	/* refused: dropped */
	send_rows(s, w2, 30, 80, 150);
	send_rows(s, l, 10, 150, 200);
	send_rows(s, w1, 21, 150, 160);	/* another request of w1: not its part, dropped */
	ip_pump_all(s);
	send_join_end(s, w1, 20);
	send_join_end(s, w2, 30);
	send_join_end(s, x, 40);
	UNIT_CHECK(reply_type(w1, 20, &n1) == MCC_MSG_LOAD_JOINED && n1 == 80 &&
			   reply_type(w2, 30, &n2) == MCC_MSG_LOAD_JOINED && n2 == 70 &&
			   joined_failed(w1, 20) == 0 && joined_failed(w2, 30) == 0,
			   "LOAD_JOIN_END: LOAD_JOINED with the rows each part added (80, 70), not failed");
	UNIT_CHECK(ip_error_of(x, 40) == MCC_PERR_PROTOCOL,
			   "LOAD_JOIN_END of a refused join: ERROR");
	tl_load_end(&b, 10);
	feed(s, l, &b);
	UNIT_CHECK(reply_type(l, 10, &all) == MCC_MSG_LOADED && all == 200,
			   "LOADED: the leader's and the parts' rows, 200, none of the refused");
	UNIT_CHECK(serves_rows(s, l, 11, 3, 200),
			   "the joined load's cache answers as the reference of its 200 rows");
	ip_clear_out(l);
	ip_clear_out(w1);
	ip_clear_out(w2);
	ip_clear_out(x);
	eng_buf_free(&b);
}

/*
 * A part that ends unfinished fails the whole load; the cache of
 * generation 3 keeps serving. how: 0 its connection closes, 1 it cancels
 * its join, 2 the leader's LOAD_END comes before its LOAD_JOIN_END.
 */
static void
test_join_fails(eng_server *s, eng_conn *l, int how, uint64_t gen)
{
	const uint64_t tok[2] = {0xabcdef0123456789ULL + gen, 42};
	eng_conn   *w = eng_conn_add(s, -1);
	static const char *const what[] = {
		"a joined connection that closes mid-part fails the load (CANCELLED)",
		"a joined part cancelled fails the load (CANCELLED)",
		"LOAD_END before a part's LOAD_JOIN_END fails the load (PROTOCOL)"};
	const uint32_t want[] = {MCC_PERR_CANCELLED, MCC_PERR_CANCELLED, MCC_PERR_PROTOCOL};
	eng_buf		b;

	eng_buf_init(&b);
	join_begin(&b, 50, gen, tok);
	feed(s, l, &b);
	ip_clear_out(l);
	join(&b, 60, gen, tok);
	feed(s, w, &b);
	send_rows(s, w, 60, 0, 240);
	ip_pump_all(s);
	if (how == 0)
	{
		eng_conn_close(s, w);
		w = NULL;
	}
	else if (how == 1)
	{
		tl_cancel(&b, 60);
		feed(s, w, &b);
	}
	tl_load_end(&b, 50);
	feed(s, l, &b);
	UNIT_CHECK(ip_error_of(l, 50) == want[how], "%s", what[how]);
	UNIT_CHECK(serves_rows(s, l, 51, 3, 200), "the previous cache (200 rows) still serves");
	ip_clear_out(l);
	if (w != NULL)
	{
		/* a part whose load is gone: its end says so */
		send_join_end(s, w, 60);
		UNIT_CHECK(how == 1 ? ip_error_of(w, 60) == MCC_PERR_PROTOCOL :
				   ip_error_of(w, 60) == MCC_PERR_CANCELLED,
				   "the failed load's part: LOAD_JOIN_END answers ERROR");
		eng_conn_close(s, w);
	}
	eng_buf_free(&b);
}

/*
 * A bad template in a part's rows fails the load: LOAD_JOINED says so
 * (failed 1; the rows after it were dropped, so the count is short), and
 * the leader's LOAD_END gets the row's DATA error, as a serial load does.
 */
static void
test_join_bad_row(eng_server *s, eng_conn *l)
{
	const uint64_t tok[2] = {31, 32};
	eng_conn   *w = eng_conn_add(s, -1);
	tl_tpl		t[NT];
	tl_tpl		bad = {malloc(gt[5].n), gt[5].n};
	uint64_t	n = 0;
	uint32_t	failed = 0;
	tl_frame	f;
	eng_buf		b;

	memcpy(bad.b, gt[5].b, gt[5].n);
	bad.b[5] ^= 0x7f;			/* its profile: unknown */
	memcpy(t, gt, sizeof(t));
	t[100] = bad;
	eng_buf_init(&b);
	join_begin(&b, 90, 8, tok);
	feed(s, l, &b);
	ip_clear_out(l);
	join(&b, 91, 8, tok);
	tl_load_rows(&b, 91, 120, keys, xids, NULL, t);
	tl_load_rows(&b, 91, 120, keys + 120, xids + 120, NULL, t + 120);
	join_end(&b, 91);
	feed(s, w, &b);
	UNIT_CHECK(ip_reply(w, 91, &f, NULL) == 1 && f.h.type == MCC_MSG_LOAD_JOINED &&
			   f.h.length == 12 && (memcpy(&n, f.p, 8), memcpy(&failed, f.p + 8, 4), failed == 1) &&
			   n < NT, "a bad row in a part: LOAD_JOINED says the load failed (%llu rows taken)",
			   (unsigned long long) n);
	tl_load_end(&b, 90);
	feed(s, l, &b);
	UNIT_CHECK(ip_error_of(l, 90) == MCC_PERR_DATA, "and LOAD_END answers the row's DATA error");
	UNIT_CHECK(serves_rows(s, l, 92, 3, 200), "the previous cache still serves");
	ip_clear_out(l);
	eng_conn_close(s, w);
	eng_buf_free(&b);
	free(bad.b);
}

/* The leader goes away: the load is abandoned under its part, the cache stays. */
static void
test_leader_gone(eng_server *s, eng_conn *keep)
{
	const uint64_t tok[2] = {7, 8};
	eng_conn   *l = eng_conn_add(s, -1);
	eng_conn   *w = eng_conn_add(s, -1);
	eng_buf		b;

	eng_buf_init(&b);
	join_begin(&b, 70, 9, tok);
	feed(s, l, &b);
	join(&b, 80, 9, tok);
	feed(s, w, &b);
	send_rows(s, w, 80, 0, 100);
	ip_pump_all(s);
	eng_conn_close(s, l);
	send_rows(s, w, 80, 100, 240);	/* dropped */
	send_join_end(s, w, 80);
	UNIT_CHECK(ip_error_of(w, 80) == MCC_PERR_CANCELLED,
			   "the leader closed: its part's LOAD_JOIN_END answers CANCELLED");
	UNIT_CHECK(serves_rows(s, keep, 81, 3, 200), "the previous cache still serves");
	ip_clear_out(keep);
	eng_conn_close(s, w);
	eng_buf_free(&b);
}

/* A joinable load that gets no row: an empty cache of the default profile. */
static void
test_join_empty(eng_server *s)
{
	const mcc_gallery_id g2 = {5, 16401, 92};
	eng_conn   *l = eng_conn_add(s, -1);
	eng_buf		b;
	size_t		f;

	eng_buf_init(&b);
	f = eng_frame_begin(&b, MCC_MSG_LOAD_BEGIN, 5);
	eng_buf_gallery(&b, &g2);
	eng_buf_u64(&b, 1);
	eng_buf_u32(&b, 0);
	eng_buf_u64(&b, 0);
	eng_buf_u32(&b, 0);
	eng_buf_u32(&b, MCC_LOAD_JOIN);
	eng_buf_u64(&b, 1);
	eng_buf_u64(&b, 2);
	eng_frame_end(&b, f);
	tl_load_end(&b, 5);
	feed(s, l, &b);
	ip_clear_out(l);
	tl_search(&b, 6, &g2, 1, 10, 0.0f, 1, pt);
	feed(s, l, &b);
	UNIT_CHECK(reply_type(l, 6, NULL) == MCC_MSG_RESULT,
			   "an empty joinable load (profile 0) serves, with the default profile");
	eng_conn_close(s, l);
	eng_buf_free(&b);
}

/* Is the RESULT f of the two probes the reference of rows [0, n)? */
static bool
result_is_rows(const tl_frame *f, int n)
{
	tl_entry	ref[NT];
	tl_result	r;
	tl_probe_result *want = malloc(sizeof(tl_probe_result));
	bool		ok = tl_parse_result(f, &r) && r.n == 2;

	for (int i = 0; i < NT; i++)
		ref[i] = (tl_entry) {keys[i], &gt[i], i < n};
	for (int i = 0; ok && i < 2; i++)
	{
		tl_reference(&pt[i], ref, NT, 10, 0.0f, want);
		ok = tl_same(&r.p[i], want);
	}
	tl_result_free(&r);
	free(want);
	return ok;
}

/* A SEARCH of the two probes at generation gen on c: is it the reference of rows [0, n)? */
static bool
sock_serves_rows(tc_conn *c, uint64_t rid, uint64_t gen, int n)
{
	eng_buf		b;
	tl_frame	f;
	bool		ok;

	eng_buf_init(&b);
	tl_search(&b, rid, &gal, gen, 10, 0.0f, 2, pt);
	ok = tc_send(c, &b) && tc_await(c, rid, &f, 20000) == 1 && f.h.type == MCC_MSG_RESULT &&
		result_is_rows(&f, n);
	eng_buf_free(&b);
	return ok;
}

/*
 * Over the socket: the rows in frames of 16 (two parts for the load
 * threads) on three joined connections, all written while the engine is
 * stopped (SIGSTOP), so that the other parts' frames wait in their sockets
 * while the engine adds the first one's (whether it reads them meanwhile
 * depends on the threads' speed: said, not checked); then a part that
 * closes mid-way.
 */
static void
test_sockets(void)
{
	const char *const args[] = {"--threads", "4", "--log-level", "debug", NULL};
	const uint64_t tok[2] = {0x5151, 0x7272};
	const uint64_t tok2[2] = {0x5152, 0x7273};
	const uint64_t want[3] = {48, 48, 48};
	char	   *log;
	size_t		len;
	const char *at;
	int			reads = 0;
	tc_engine	e;
	tc_conn		l;
	tc_conn		w[3];
	eng_buf		b;
	tl_frame	f;
	uint64_t	n = 0;
	bool		ok = true;

	if (access(tc_engine_path(), X_OK) != 0)
	{
		UNIT_SKIP("%s not built: the joined load over sockets", tc_engine_path());
		return;
	}
	memset(&e, 0, sizeof(e));
	if (!tc_engine_start(&e, args))
	{
		UNIT_CHECK(false, "engine started with 4 threads");
		tc_engine_cleanup(&e);
		return;
	}
	eng_buf_init(&b);
	l = tc_connect(e.sock);
	join_begin(&b, 10, 3, tok);
	UNIT_CHECK(tc_send(&l, &b) && tc_await(&l, 10, &f, 20000) == 1 && f.h.type == MCC_MSG_OK,
			   "socket, 4 load threads: LOAD_BEGIN with MCC_LOAD_JOIN answered OK");
	/* joined first (a HELLO after the LOAD_JOIN: its answer says the join was handled) */
	for (int i = 0; i < 3; i++)
	{
		w[i] = tc_connect(e.sock);
		join(&b, 20 + (uint64_t) i, 3, tok);
		tl_hello(&b, 40 + (uint64_t) i);
		ok &= tc_send(&w[i], &b) && tc_await(&w[i], 40 + (uint64_t) i, &f, 20000) == 1 &&
			f.h.type == MCC_MSG_HELLO_OK;
	}
	/* about 100 kB a part: it fits in the socket while the engine is stopped */
	kill(e.pid, SIGSTOP);
	for (int i = 0; i < 3; i++)
	{
		for (int a = 48 * i; a < 48 * (i + 1); a += 16)
			tl_load_rows(&b, 20 + (uint64_t) i, 16, keys + a, xids + a, NULL, gt + a);
		join_end(&b, 20 + (uint64_t) i);
		ok &= tc_send(&w[i], &b);
	}
	kill(e.pid, SIGCONT);
	for (int i = 0; i < 3; i++)
		ok &= tc_await(&w[i], 20 + (uint64_t) i, &f, 20000) == 1 &&
			f.h.type == MCC_MSG_LOAD_JOINED && (memcpy(&n, f.p, 8), n == want[i]);
	UNIT_CHECK(ok, "three parts of 3 frames each, sent while the engine was stopped: LOAD_JOINED 48 each");
	tl_load_end(&b, 10);
	UNIT_CHECK(tc_send(&l, &b) && tc_await(&l, 10, &f, 20000) == 1 &&
			   f.h.type == MCC_MSG_LOADED && (memcpy(&n, f.p, 8), n == 144),
			   "LOADED 144 rows");
	UNIT_CHECK(sock_serves_rows(&l, 11, 3, 144), "the cache answers as the reference of the 144 rows");
	log = (char *) unit_read_file(e.log, &len);
	for (at = log; at != NULL && (at = strstr(at, "reads of the load's other connections")) != NULL; at++)
		reads++;
	printf("# frames added while the other parts' were read: %d\n", reads);
	free(log);

	/*
	 * a part that closes mid-way: the load fails, whether the engine sees
	 * the close (CANCELLED) or the leader's LOAD_END (PROTOCOL: a part not
	 * ended) first
	 */
	join_begin(&b, 12, 4, tok2);
	ok = tc_send(&l, &b) && tc_await(&l, 12, &f, 20000) == 1 && f.h.type == MCC_MSG_OK;
	join(&b, 30, 4, tok2);
	tl_hello(&b, 31);			/* the join handled before the leader's LOAD_END can be */
	ok &= tc_send(&w[0], &b) && tc_await(&w[0], 31, &f, 20000) == 1;
	for (int a = 0; a < 72; a += 24)
		tl_load_rows(&b, 30, 24, keys + a, xids + a, NULL, gt + a);
	ok &= tc_send(&w[0], &b);
	tc_close(&w[0]);
	tl_load_end(&b, 12);
	UNIT_CHECK(ok && tc_send(&l, &b) && tc_await(&l, 12, &f, 20000) == 1 &&
			   f.h.type == MCC_MSG_ERROR, "socket: a part whose connection closes mid-way fails the load");
	UNIT_CHECK(sock_serves_rows(&l, 13, 3, 144), "socket: the previous cache still serves");
	for (int i = 1; i < 3; i++)
		tc_close(&w[i]);
	tc_close(&l);
	eng_buf_free(&b);
	tc_engine_cleanup(&e);
}

/* Rows [a, z) as two LOAD_ROWS frames of rid received on c ahead, not yet handled. */
static void
rows_received(eng_conn *c, uint64_t rid, int a, int z)
{
	eng_buf		b;
	int			m = (a + z) / 2;

	eng_buf_init(&b);
	tl_load_rows(&b, rid, m - a, keys + a, xids + a, NULL, gt + a);
	tl_load_rows(&b, rid, z - m, keys + m, xids + m, NULL, gt + m);
	/* as eng_conn_read_ahead_other leaves them while another's frame is added */
	eng_buf_put(&c->in, b.data, b.len);
	c->input_pending = true;
	eng_buf_free(&b);
}

/*
 * Frames of two parts received while the leader's frame comes: they go in
 * behind it (the pipeline of eng_load_rows.c takes other connections'
 * frames when its own has none), each part's LOAD_JOINED counts its own
 * rows, and the cache answers as the reference.
 */
static void
test_join_pipeline(eng_server *s, eng_conn *l, eng_conn *w1, eng_conn *w2)
{
	const uint64_t tok[2] = {0x5555aaaa5555aaaaULL, 0x0123456789abcdefULL};
	uint64_t	n1 = 0, n2 = 0, all = 0;
	uint64_t	behind = 0;
	eng_buf		b;

	eng_buf_init(&b);
	join_begin(&b, 60, 50, tok);
	feed(s, l, &b);
	ip_clear_out(l);
	join(&b, 61, 50, tok);
	feed(s, w1, &b);
	join(&b, 62, 50, tok);
	feed(s, w2, &b);
	rows_received(w1, 61, 0, 80);
	rows_received(w2, 62, 80, 160);
	send_rows(s, l, 60, 160, 240);
	if (l->load != NULL)
		behind = l->load->frames_behind;
	/* the server's loop handles what is left of the received frames */
	eng_conn_pending(s, w1);
	eng_conn_pending(s, w2);
	ip_pump_all(s);
	send_join_end(s, w1, 61);
	send_join_end(s, w2, 62);
	tl_load_end(&b, 60);
	feed(s, l, &b);
	UNIT_CHECK(behind >= 1 && behind <= 4 && reply_type(w1, 61, &n1) == MCC_MSG_LOAD_JOINED &&
			   n1 == 80 && reply_type(w2, 62, &n2) == MCC_MSG_LOAD_JOINED && n2 == 80 &&
			   reply_type(l, 60, &all) == MCC_MSG_LOADED && all == 240,
			   "parts' frames received meanwhile go in behind the leader's (%llu of 4): "
			   "LOAD_JOINED counts each part's 80 rows, LOADED 240", (unsigned long long) behind);
	UNIT_CHECK(serves_rows(s, l, 63, 50, 240),
			   "that load's cache answers as the reference of its 240 rows");
	ip_clear_out(l);
	ip_clear_out(w1);
	ip_clear_out(w2);
	eng_buf_free(&b);
}

int
main(void)
{
	eng_config	cfg = {.threads = 2, .delta_timeout_ms = 300, .max_batch = 64};
	eng_server	s;
	eng_conn   *l, *w1, *w2, *x;

	mcc_lss_init();
	eng_log_set_level(ENG_LOG_ERROR);
	gt = tl_templates(41, NT, 15);
	pt = tl_templates(43, 2, 15);
	for (int i = 0; i < NT; i++)
	{
		keys[i] = 1000 + i;
		xids[i] = 0;
	}
	eng_server_init(&s, &cfg);
	l = eng_conn_add(&s, -1);
	w1 = eng_conn_add(&s, -1);
	w2 = eng_conn_add(&s, -1);
	x = eng_conn_add(&s, -1);
	test_join_ok(&s, l, w1, w2, x);
	for (int how = 0; how < 3; how++)
		test_join_fails(&s, l, how, 4 + (uint64_t) how);
	test_join_bad_row(&s, l);
	test_leader_gone(&s, l);
	test_join_empty(&s);
	test_join_pipeline(&s, l, w1, w2);
	eng_server_destroy(&s);
	test_sockets();
	tl_templates_free(gt, NT);
	tl_templates_free(pt, 2);
	return unit_done();
}
