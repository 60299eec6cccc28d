/*
 * test_engine_load_rows.c: LOAD_ROWS frames through the engine, in process
 * (no sockets), beyond what test_engine_server.c's loads cover: a frame's
 * rows go in at once on the load threads, and one bad template among them
 * fails the whole load.
 */
#include <stdlib.h>
#include <string.h>

#include "eng_conn.h"
#include "unit.h"
#include "engine_inproc.h"
#include "eng_log.h"
#include "eng_server.h"

#define NT 200					/* rows of the frame */

static tl_tpl *gt;				/* row templates */
static tl_tpl *pt;				/* probes */

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
	eng_server_destroy(&s);
	tl_templates_free(gt, NT);
	tl_templates_free(pt, 1);
	return unit_done();
}
