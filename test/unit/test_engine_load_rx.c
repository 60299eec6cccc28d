/*
 * test_engine_load_rx.c: a loading connection's frames read and prepared
 * by its receiver thread (eng_load_rx.h), over the engine's socket with 4
 * load threads: rows sent in odd pieces across frame boundaries make a
 * cache equal to the reference, with load_ids rows as well; a frame that
 * is not LOAD_ROWS in the middle of the rows is answered in its place and
 * the rows after it still go in; a bad template (one whose header does
 * not open, one that only the whole check refuses) fails the load with
 * DATA at LOAD_END; a malformed LOAD_ROWS frame closes the connection; a
 * connection closed in the middle of a frame abandons its load. After
 * each failure the previous cache serves. The engine's log says its
 * receivers prepared the frames (the path under test was taken).
 */
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "engine_client.h"
#include "mcc_template.h"

#define NT 300					/* rows of a load */
#define PER_FRAME 20

static const mcc_gallery_id gal = {5, 16410, 93};
static tl_tpl *gt;				/* row templates */
static tl_tpl *pt;				/* probes */
static int64_t keys[NT];
static uint64_t xids[NT];

/* Rows [from, n) of t as LOAD_ROWS frames of PER_FRAME rows (load_ids if ids). */
static void
rows_frames(eng_buf *b, uint64_t rid, int from, int n, const tl_tpl *t, bool ids)
{
	for (int a = from; a < n; a += PER_FRAME)
	{
		int			m = n - a < PER_FRAME ? n - a : PER_FRAME;
		size_t		f = eng_frame_begin(b, MCC_MSG_LOAD_ROWS, rid);

		eng_buf_u32(b, (uint32_t) m);
		for (int i = a; i < a + m; i++)
		{
			eng_buf_i64(b, keys[i]);
			eng_buf_u64(b, xids[i]);
			eng_buf_u64(b, 0);
			eng_buf_bytes(b, t[i].b, (uint32_t) t[i].n);
			if (ids)
			{
				eng_buf_u64(b, 100 + (uint64_t) i);	/* tid */
				eng_buf_u64(b, 7);	/* xmin */
			}
		}
		eng_frame_end(b, f);
	}
}

/* Send b's bytes in pieces of a prime size, a short pause between some. */
static bool
send_in_pieces(tc_conn *c, eng_buf *b)
{
	size_t		off = 0;
	int			k = 0;

	while (off < b->len)
	{
		size_t		len = b->len - off < 7919 ? b->len - off : 7919;
		ssize_t		n = send(c->fd, b->data + off, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		off += (size_t) n;
		if (++k % 16 == 0)
			usleep(2000);
	}
	b->len = 0;
	return true;
}

/* The reply to rid on c: its type (0: none in 20 s) and LOADED's count. */
static uint16_t
await_type(tc_conn *c, uint64_t rid, uint64_t *count)
{
	tl_frame	f;

	if (tc_await(c, rid, &f, 20000) != 1)
		return 0;
	if (count != NULL && f.h.length >= 8)
		memcpy(count, f.p, 8);
	return f.h.type;
}

/* Does a SEARCH of the probes on c answer as the reference of rows [0, n)? */
static bool
serves_rows(tc_conn *c, uint64_t rid, int n)
{
	tl_entry	ref[NT];
	tl_probe_result want;
	tl_result	r;
	tl_frame	f;
	eng_buf		b;
	bool		ok;

	for (int i = 0; i < NT; i++)
		ref[i] = (tl_entry) {keys[i], &gt[i], i < n};
	eng_buf_init(&b);
	tl_search(&b, rid, &gal, 0, 10, 0.0f, 2, pt);
	ok = tc_send(c, &b) && tc_await(c, rid, &f, 20000) == 1 && f.h.type == MCC_MSG_RESULT &&
		tl_parse_result(&f, &r);
	eng_buf_free(&b);
	if (!ok)
		return false;
	ok = r.n == 2;
	for (int i = 0; ok && i < 2; i++)
	{
		tl_reference(&pt[i], ref, NT, 10, 0.0f, &want);
		ok = tl_same(&r.p[i], &want);
	}
	tl_result_free(&r);
	return ok;
}

/* A load of rows [0, n) of t on c (request rid, generation gen); its reply's type. */
static uint16_t
load(tc_conn *c, uint64_t rid, uint64_t gen, int n, const tl_tpl *t, uint32_t flags,
	 uint64_t *count)
{
	eng_buf		b;
	bool		ok;

	eng_buf_init(&b);
	if (flags & MCC_LOAD_IDS)
	{
		size_t		f = eng_frame_begin(&b, MCC_MSG_LOAD_BEGIN, rid);

		eng_buf_gallery(&b, &gal);
		eng_buf_u64(&b, gen);
		eng_buf_u32(&b, MCC_PROFILE_DEFAULT);
		eng_buf_u64(&b, (uint64_t) n);
		eng_buf_u32(&b, 0);		/* priority */
		eng_buf_u32(&b, flags);
		eng_buf_u64(&b, 1);		/* scan_lsn */
		eng_buf_u64(&b, 100);	/* next_xid */
		eng_frame_end(&b, f);
	}
	else
		tl_load_begin_p(&b, rid, &gal, gen, (uint64_t) n, 0, flags);
	rows_frames(&b, rid, 0, n, t, (flags & MCC_LOAD_IDS) != 0);
	tl_load_end(&b, rid);
	ok = send_in_pieces(c, &b);
	eng_buf_free(&b);
	return ok ? await_type(c, rid, count) : 0;
}

/* A copy of the rows' templates with row `at` replaced by a copy of it with byte i flipped. */
static tl_tpl *
with_bad_row(int at, size_t i, uint8_t flip)
{
	tl_tpl	   *t = calloc(NT, sizeof(tl_tpl));

	memcpy(t, gt, NT * sizeof(tl_tpl));
	t[at].b = malloc(gt[at].n);
	memcpy(t[at].b, gt[at].b, gt[at].n);
	t[at].b[i] ^= flip;
	return t;
}

static void
free_bad(tl_tpl *t, int at)
{
	free(t[at].b);
	free(t);
}

/* A byte of template t whose flip the header passes and the whole check refuses; 0: none. */
static size_t
byte_only_check_refuses(const tl_tpl *t)
{
	uint8_t    *copy = malloc(t->n);
	size_t		found = 0;

	for (size_t i = t->n - 1; found == 0 && i > 64; i--)
	{
		mcc_template_view v;
		mcc_error	err;

		memcpy(copy, t->b, t->n);
		copy[i] ^= 0xa5;
		if (mcc_template_open_header(copy, t->n, &v, &err) == MCC_OK &&
			mcc_template_open(copy, t->n, &v, &err) != MCC_OK)
			found = i;
	}
	free(copy);
	return found;
}

/* How many times the engine's log says a receiver prepared more than no frame. */
static int
receivers_used(const tc_engine *e)
{
	size_t		len;
	char	   *log = (char *) unit_read_file(e->log, &len);
	int			n = 0;

	for (const char *at = log; at != NULL && (at = strstr(at, "its receiver prepared ")) != NULL; at++)
		n += atoi(at + strlen("its receiver prepared ")) > 0;
	free(log);
	return n;
}

static void
test_failures(tc_engine *e, tc_conn *c)
{
	tc_conn		d = tc_connect(e->sock);
	size_t		only_check = byte_only_check_refuses(&gt[NT - 7]);
	tl_tpl	   *bad;
	eng_buf		b;
	uint64_t	n = 0;

	/* a header that does not open (unknown profile), in the middle of a frame */
	bad = with_bad_row(NT / 2 + 3, 5, 0x7f);
	UNIT_CHECK(load(c, 20, 2, NT, bad, 0, NULL) == MCC_MSG_ERROR,
			   "receiver: a row whose header does not open fails the load at LOAD_END");
	free_bad(bad, NT / 2 + 3);
	UNIT_CHECK(serves_rows(c, 21, NT), "the previous cache still serves");

	/* a row only the whole check (in the load threads) refuses */
	UNIT_CHECK(only_check > 0, "a byte only the template's whole check refuses (found: %zu)",
			   only_check);
	bad = with_bad_row(NT - 7, only_check, 0xa5);
	UNIT_CHECK(load(c, 22, 2, NT, bad, 0, NULL) == MCC_MSG_ERROR,
			   "receiver: a row the whole check refuses fails the load at LOAD_END");
	free_bad(bad, NT - 7);
	UNIT_CHECK(serves_rows(c, 23, NT), "the previous cache still serves");

	/* a malformed LOAD_ROWS frame: its count says one row more than it has */
	eng_buf_init(&b);
	tl_load_begin(&b, 30, &gal, 2, NT);
	rows_frames(&b, 30, 0, 2 * PER_FRAME, gt, false);
	{
		size_t		f = eng_frame_begin(&b, MCC_MSG_LOAD_ROWS, 30);

		eng_buf_u32(&b, 2);
		eng_buf_i64(&b, keys[0]);
		eng_buf_u64(&b, 0);
		eng_buf_u64(&b, 0);
		eng_buf_bytes(&b, gt[0].b, (uint32_t) gt[0].n);
		eng_frame_end(&b, f);
	}
	UNIT_CHECK(send_in_pieces(&d, &b) && await_type(&d, 30, NULL) == MCC_MSG_ERROR,
			   "receiver: a malformed LOAD_ROWS frame is answered with an ERROR");
	UNIT_CHECK(serves_rows(c, 31, NT), "the previous cache still serves");
	tc_close(&d);

	/* a connection closed in the middle of a frame, after whole frames */
	d = tc_connect(e->sock);
	tl_load_begin(&b, 40, &gal, 3, NT);
	rows_frames(&b, 40, 0, NT, gt, false);
	b.len -= gt[NT - 1].n / 2;
	UNIT_CHECK(send_in_pieces(&d, &b), "a load's frames sent, the last one cut short");
	usleep(100 * 1000);
	tc_close(&d);
	usleep(100 * 1000);
	UNIT_CHECK(serves_rows(c, 41, NT), "connection closed mid-frame: its load is abandoned, "
			   "the previous cache serves");
	/* the gallery loads again afterwards */
	UNIT_CHECK(load(c, 42, 4, NT - 10, gt, 0, &n) == MCC_MSG_LOADED && n == NT - 10,
			   "a later load: LOADED its rows");
	UNIT_CHECK(serves_rows(c, 43, NT - 10), "and it serves its rows");
	eng_buf_free(&b);
}

int
main(void)
{
	const char *const args[] = {"--threads", "4", "--log-level", "debug", NULL};
	tc_engine	e;
	tc_conn		c;
	eng_buf		b;
	uint64_t	n = 0;
	tl_frame	f;

	if (access(tc_engine_path(), X_OK) != 0)
	{
		UNIT_SKIP("%s not built: a loading connection's receiver", tc_engine_path());
		return unit_done();
	}
	mcc_lss_init();
	gt = tl_templates(51, NT, 15);
	pt = tl_templates(53, 2, 15);
	for (int i = 0; i < NT; i++)
	{
		keys[i] = 5000 + i;
		xids[i] = 0;
	}
	memset(&e, 0, sizeof(e));
	if (!tc_engine_start(&e, args))
	{
		UNIT_CHECK(false, "engine started with 4 threads");
		tc_engine_cleanup(&e);
		return unit_done();
	}
	c = tc_connect(e.sock);
	UNIT_CHECK(load(&c, 10, 1, NT, gt, 0, &n) == MCC_MSG_LOADED && n == NT,
			   "receiver: %d rows in frames of %d sent in pieces: LOADED them all", NT, PER_FRAME);
	UNIT_CHECK(serves_rows(&c, 11, NT), "the cache answers as the reference");
	UNIT_CHECK(receivers_used(&e) >= 1, "the engine's log: a receiver prepared the frames");

	/* load_ids rows: 16 bytes more a row */
	UNIT_CHECK(load(&c, 12, 2, NT, gt, MCC_LOAD_IDS, &n) == MCC_MSG_LOADED && n == NT,
			   "receiver, rows with load_ids: LOADED them all");
	UNIT_CHECK(serves_rows(&c, 13, NT), "the cache answers as the reference");

	/* a HELLO among the rows: answered in its place, the rows after it go in */
	eng_buf_init(&b);
	tl_load_begin(&b, 14, &gal, 3, NT);
	rows_frames(&b, 14, 0, NT / 2, gt, false);
	tl_hello(&b, 15);
	rows_frames(&b, 14, NT / 2, NT, gt, false);
	tl_load_end(&b, 14);
	UNIT_CHECK(send_in_pieces(&c, &b) && tc_await(&c, 15, &f, 20000) == 1 &&
			   f.h.type == MCC_MSG_HELLO_OK, "a HELLO among a load's rows is answered");
	UNIT_CHECK(await_type(&c, 14, &n) == MCC_MSG_LOADED && n == NT,
			   "and the rows after it go in: LOADED them all");
	UNIT_CHECK(serves_rows(&c, 16, NT), "the cache answers as the reference");
	eng_buf_free(&b);

	test_failures(&e, &c);
	tc_close(&c);
	tc_engine_cleanup(&e);
	tl_templates_free(gt, NT);
	tl_templates_free(pt, 2);
	return unit_done();
}
