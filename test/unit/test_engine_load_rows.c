/*
 * test_engine_load_rows.c: LOAD_ROWS frames through the engine, in process
 * (no sockets), beyond what test_engine_server.c's loads cover: a frame's
 * rows go in at once on the load threads, and one bad template among them
 * fails the whole load; the frames received already go in behind the one
 * being written (the pipeline of eng_load_rows.c), with a bad row in the
 * first or the second of them, and a connection closed mid-frame after
 * them.
 */
#include <stdlib.h>
#include <string.h>

#include "eng_conn.h"
#include "eng_load.h"
#include "unit.h"
#include "engine_inproc.h"
#include "eng_log.h"
#include "eng_server.h"

#define NT 200					/* rows of the frame */
#define REF_CAP NT

static tl_tpl *gt;				/* row templates */
static tl_tpl *pt;				/* probes */
static const mcc_gallery_id G = {5, 16391, 79};

#include "engine_ref.h"

/*
 * A frame whose rows go in at once (in the load threads, parts of 64 rows)
 * with one bad template among them: the load fails with DATA at LOAD_END,
 * nothing is served, and the connection stays usable.
 */
static void
test_load_bad_row(eng_server *s, eng_conn *c)
{
	const mcc_gallery_id g3 = {5, 16390, 78};
	int			n = NT;
	int64_t    *keys = calloc((size_t) n, sizeof(int64_t));
	uint64_t   *xid = calloc((size_t) n, sizeof(uint64_t));
	tl_tpl	   *t = calloc((size_t) n, sizeof(tl_tpl));
	tl_tpl		bad = {malloc(gt[0].n), gt[0].n};
	eng_buf		b;

	memcpy(bad.b, gt[0].b, gt[0].n);
	bad.b[5] ^= 0x7f;			/* its profile: unknown */
	for (int i = 0; i < n; i++)
	{
		keys[i] = i;
		xid[i] = 5;
		t[i] = i == n - 20 ? bad : gt[i];
	}
	eng_buf_init(&b);
	tl_load_begin(&b, 90, &g3, 3, (uint64_t) n);
	tl_load_rows(&b, 90, n, keys, xid, NULL, t);
	tl_load_end(&b, 90);
	tl_search(&b, 91, &g3, 0, 10, 0.0f, 1, pt);
	ip_send(s, c, &b);
	UNIT_CHECK(ip_error_of(c, 90) == MCC_PERR_DATA && !c->closing,
			   "a bad template in a frame's rows: the load fails with DATA, connection kept");
	UNIT_CHECK(ip_error_of(c, 91) == MCC_PERR_NOT_LOADED,
			   "nothing of the failed load is served");
	ip_clear_out(c);
	eng_buf_free(&b);
	free(bad.b);
	free(keys);
	free(xid);
	free(t);
}

/* Frames of `per` rows of keys 0..n-1 (templates t) into b, as request rid. */
static void
frames_of(eng_buf *b, uint64_t rid, int n, int per, const tl_tpl *t)
{
	int64_t		keys[NT];
	uint64_t	xid[NT];

	for (int i = 0; i < n; i++)
	{
		keys[i] = i;
		xid[i] = 5;
	}
	for (int i = 0; i < n; i += per)
		tl_load_rows(b, rid, n - i < per ? n - i : per, keys + i, xid + i, NULL, t + i);
}

/*
 * Ten frames received at once: each after the first is prepared while the
 * one before is written (at least one: a frame that would need the cache
 * to grow waits), all ten are linked, and the gallery answers as the
 * reference of its NT rows.
 */
static void
test_pipeline_loads_all(eng_server *s, eng_conn *c)
{
	eng_buf		b;
	uint64_t	frames = 0;
	uint64_t	behind = 0;

	eng_buf_init(&b);
	tl_load_begin_prof(&b, 100, &G, 4, NT, 0, 0, MCC_PROFILE_DEFAULT);
	frames_of(&b, 100, NT, NT / 10, gt);
	ip_send(s, c, &b);
	if (c->load != NULL)
	{
		frames = c->load->frames;
		behind = c->load->frames_behind;
	}
	UNIT_CHECK(frames == 10 && behind >= 1 && behind <= 9 && c->load->rows == NT,
			   "ten frames received at once: all linked, %llu of them prepared behind the one before",
			   (unsigned long long) behind);
	tl_load_end(&b, 100);
	tl_search(&b, 101, &G, 0, 10, 0.0f, 1, pt);
	ip_send(s, c, &b);
	ref_all();
	UNIT_CHECK(ip_error_of(c, 100) == 0 && result_ok(c, 101, 1, pt, 10, 0.0f, NULL),
			   "the pipelined load answers as the reference of its %d rows", NT);
	ip_clear_out(c);
	eng_buf_free(&b);
}

/* Does the ERROR replied to rid say `what`? */
static bool
error_says(eng_conn *c, uint64_t rid, const char *what)
{
	tl_frame	f;
	size_t		n = strlen(what);

	if (ip_reply(c, rid, &f, NULL) != 1 || tl_error_code(&f) == 0)
		return false;
	for (size_t i = 0; i + n <= f.h.length; i++)
		if (memcmp(f.p + i, what, n) == 0)
			return true;
	return false;
}

/*
 * Two frames received at once, the second prepared and written while the
 * first is: a template whose header opens but whose cylinders do not pass
 * the check, in the first frame (the second is still written when the
 * first fails: the load waits for it before dropping the cache) or in the
 * second, fails the load with DATA and that row's key; nothing is served.
 */
static void
test_pipeline_bad_row(eng_server *s, eng_conn *c, int bad_at)
{
	tl_tpl	   *t = calloc(NT, sizeof(tl_tpl));
	tl_tpl		bad = {malloc(gt[bad_at].n), gt[bad_at].n};
	const mcc_gallery_id g4 = {5, 16392, 80};
	char		key[32];
	eng_buf		b;
	uint64_t	behind = 0;

	memcpy(bad.b, gt[bad_at].b, gt[bad_at].n);
	bad.b[bad.n - 1] ^= 0x80;	/* the last cylinder's last word: its popcount or its tail */
	for (int i = 0; i < NT; i++)
		t[i] = i == bad_at ? bad : gt[i];
	eng_buf_init(&b);
	tl_load_begin(&b, 110, &g4, 3, NT);
	frames_of(&b, 110, NT, NT / 2, t);
	ip_send(s, c, &b);
	if (c->load != NULL)
		behind = c->load->frames_behind;
	tl_load_end(&b, 110);
	tl_search(&b, 111, &g4, 0, 10, 0.0f, 1, pt);
	ip_send(s, c, &b);
	snprintf(key, sizeof(key), "key %d ", bad_at);
	UNIT_CHECK(behind == 1 && ip_error_of(c, 110) == MCC_PERR_DATA && error_says(c, 110, key) &&
			   error_says(c, 110, "corrupt") && !c->closing,
			   "a bad template in the %s of two pipelined frames: the load fails with DATA at key %d",
			   bad_at < NT / 2 ? "first" : "second", bad_at);
	UNIT_CHECK(ip_error_of(c, 111) == MCC_PERR_NOT_LOADED, "nothing of that load is served");
	ip_clear_out(c);
	eng_buf_free(&b);
	free(bad.b);
	free(t);
}

/*
 * A load's connection closed in the middle of a frame, after frames that
 * went in behind one another: the load is abandoned (no job of it left
 * running: the pipeline ends with its frames), and another connection's
 * load of the gallery serves every row.
 */
static void
test_pipeline_closed_mid_frame(eng_server *s)
{
	eng_conn   *c = eng_conn_add(s, -1);
	eng_conn   *d = eng_conn_add(s, -1);
	eng_buf		b;
	size_t		cut;
	bool		had_load;

	eng_buf_init(&b);
	tl_load_begin_prof(&b, 120, &G, 5, NT, 0, 0, MCC_PROFILE_DEFAULT);
	frames_of(&b, 120, NT, NT / 4, gt);
	cut = b.len - 1000;			/* the last frame cut short */
	eng_conn_input(s, c, b.data, cut);
	ip_pump_all(s);
	had_load = c->load != NULL && c->load->frames == 3 && c->load->frames_behind >= 1;
	b.len = 0;
	eng_conn_close(s, c);
	ref_all();
	ref_load_frames(&b, 121, 6, NULL, MCC_PROFILE_DEFAULT);
	tl_search(&b, 122, &G, 0, 10, 0.0f, 1, pt);
	ip_send(s, d, &b);
	UNIT_CHECK(had_load && ip_error_of(d, 121) == 0 && result_ok(d, 122, 1, pt, 10, 0.0f, NULL),
			   "a load's connection closed mid-frame after pipelined frames: abandoned, "
			   "and another connection's load serves every row");
	eng_conn_close(s, d);
	eng_buf_free(&b);
}

int
main(void)
{
	eng_config	cfg = {.threads = 2, .delta_timeout_ms = 300, .max_batch = 64};
	eng_server	s;
	eng_conn   *c;

	mcc_lss_init();
	eng_log_set_level(ENG_LOG_ERROR);
	gt = tl_templates(31, NT, 15);
	pt = tl_templates(33, 1, 15);
	eng_server_init(&s, &cfg);
	c = eng_conn_add(&s, -1);
	test_load_bad_row(&s, c);
	test_pipeline_loads_all(&s, c);
	test_pipeline_bad_row(&s, c, 37);
	test_pipeline_bad_row(&s, c, NT / 2 + 41);
	test_pipeline_closed_mid_frame(&s);
	eng_server_destroy(&s);
	tl_templates_free(gt, NT);
	tl_templates_free(pt, 1);
	return unit_done();
}
