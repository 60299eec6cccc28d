/*
 * test_engine_server.c: the engine driven through frames, in process (no
 * sockets): loads, deltas in and out of order and in parts, reload marks,
 * loads racing with deltas, settle and purge, compaction, batching, cancel,
 * memory limit (a reload's old copy giving way, eviction by priority and
 * recency), evict and status, and malformed input.
 *
 * Every RESULT is compared with a brute-force search (mcc_lss_score over
 * what the table holds at that generation, in identify()'s order).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eng_conn.h"
#include "eng_gallery.h"
#include "unit.h"
#include "engine_inproc.h"
#include "eng_log.h"
#include "eng_server.h"

#define NT 240					/* gallery templates */
#define NX 40					/* extra templates for deltas */

static tl_tpl *gt;				/* gallery templates: key i has gt[i] */
static tl_tpl *xt;				/* delta templates: key 1000 + i inserts xt[i] */
static tl_tpl *pt;				/* probes */
static const mcc_gallery_id G = {5, 16384, 77};

/* What the table holds: the reference the engine must match. */
#define REF_CAP (NT + NX + 16)
#include "engine_ref.h"

/* Append a DELTA of generation gen inserting key 1000 + i (xt[i]) by xid. */
static void
delta_insert(eng_buf *b, uint64_t gen, uint64_t xid, int i, bool more)
{
	int64_t		key = 1000 + i;

	tl_delta(b, &G, gen, xid, 1, &key, &xt[i], 0, NULL, NULL, more);
}

/* Stream the reference's live rows as a load of generation gen. */
static void
load_ref(eng_server *s, eng_conn *c, uint64_t rid, uint64_t gen, const uint64_t *ixid)
{
	eng_buf		b;

	eng_buf_init(&b);
	ref_load_frames(&b, rid, gen, ixid, MCC_PROFILE_DEFAULT);
	ip_feed(s, c, &b);
	eng_buf_free(&b);
}

/* --gpu P: every pass on the GPU path, P partitions (0: one per device). */
static eng_gpu_mode gpu_mode = ENG_GPU_OFF;
static int	gpu_parts = 0;

/* A server with the given limits. */
static void
server(eng_server *s, uint64_t limit, int timeout_ms)
{
	eng_config	cfg = {.threads = 2, .memory_limit = limit,
		.delta_timeout_ms = timeout_ms, .max_batch = 64, .gpu = gpu_mode,
	.gpu_partitions = gpu_parts};

	eng_server_init(s, &cfg);
}

static void
test_hello_and_not_loaded(eng_server *s, eng_conn *c)
{
	eng_buf		b;
	tl_frame	f;
	uint64_t	inc;

	eng_buf_init(&b);
	tl_hello(&b, 1);
	tl_search(&b, 2, &G, 1, 10, 0.0f, 1, pt);
	ip_send(s, c, &b);
	UNIT_CHECK(ip_reply(c, 1, &f, NULL) == 1 && f.h.type == MCC_MSG_HELLO_OK &&
			   f.h.length == 16 && (memcpy(&inc, f.p, 8), inc == s->incarnation),
			   "HELLO answered with the incarnation");
	UNIT_CHECK(ip_error_of(c, 2) == MCC_PERR_NOT_LOADED, "SEARCH of an unknown gallery: NOT_LOADED");
	ip_clear_out(c);
	eng_buf_free(&b);
}

/*
 * The RESULT of request rid: no probe, the count's state and, DONE, its one
 * group of every entry (loaded with inserting xid 5, unsettled).
 */
static bool
count_alone_is(eng_conn *c, uint64_t rid, uint32_t state)
{
	tl_frame	f;
	uint8_t    *cp;
	tl_result	r = {0};
	bool		ok = ip_reply(c, rid, &f, &cp) == 1 && tl_parse_result(&f, &r) &&
		r.n == 0 && r.searchable == NT && r.count_state == state;

	if (ok && state == MCC_COUNT_DONE)
		ok = r.certain == 0 && r.n_groups == 1 && r.groups[0].ixid == 5 &&
			r.groups[0].entries == NT;
	if (ok && state == MCC_COUNT_NONE)
		ok = r.certain == 0 && r.n_groups == 0;
	tl_result_free(&r);
	free(cp);
	return ok;
}

/*
 * Protocol 8: a SEARCH without probes that asks for a count gets the count
 * alone (the scale-out refinement's row counts), in a pass of its own or
 * beside other searches; without the count asked for it only waits.
 */
static void
test_count_alone(eng_server *s, eng_conn *c, eng_buf *b)
{
	eng_gallery *g = eng_gallery_get(s, &G, false);
	uint64_t	passes = g->passes;

	tl_search_count(b, 14, &G, 10, 0, 0.0f, 6, 0, 0, NULL);
	ip_send(s, c, b);
	UNIT_CHECK(count_alone_is(c, 14, MCC_COUNT_DONE) && g->passes == passes + 1,
			   "SEARCH without probes, count asked: the count alone (one group of %d), one pass", NT);
	ip_clear_out(c);
	/* a refinement asked for without probes has nothing to rescore */
	tl_search_full(b, 15, &G, 10, 5, 0.0f, 6, 0,
				   &(tl_refine_spec) {MCC_FUSED, 3, 0.0, 20}, 0, NULL);
	tl_search_count(b, 16, &G, 10, 10, 0.0f, 6, 0, 2, pt);
	tl_search_count(b, 17, &G, 10, 0, 0.0f, 6, NT, 0, NULL);
	tl_search_count(b, 18, &G, 10, 0, 0.0f, 0, 0, 0, NULL);
	passes = g->passes;
	ip_send(s, c, b);
	UNIT_CHECK(count_alone_is(c, 15, MCC_COUNT_DONE),
			   "... with a refinement asked for: the count alone all the same");
	UNIT_CHECK(result_ok(c, 16, 2, pt, 10, 0.0f, NULL) && g->passes == passes + 1,
			   "... beside a search in one pass, whose hits equal brute force");
	UNIT_CHECK(count_alone_is(c, 17, MCC_COUNT_NONE),
			   "... no more entries searchable than count_above: no count, no pass");
	UNIT_CHECK(count_alone_is(c, 18, MCC_COUNT_NONE),
			   "... no count asked for: an empty RESULT once the generation is there");
	ip_clear_out(c);
}

static void
test_load_and_search(eng_server *s, eng_conn *c)
{
	eng_buf		b;
	tl_frame	f;
	uint64_t	entries;
	uint64_t	applied;

	for (int i = 0; i < NT; i++)
		ref_add(i, &gt[i]);
	load_ref(s, c, 10, 10, NULL);
	ip_pump_all(s);
	UNIT_CHECK(ip_reply(c, 10, &f, NULL) == 1 && f.h.type == MCC_MSG_LOADED &&
			   (memcpy(&entries, f.p, 8), entries == NT), "LOADED with %d entries", NT);
	eng_buf_init(&b);
	tl_search(&b, 11, &G, 10, 10, 0.0f, 3, pt);
	tl_search(&b, 12, &G, 3, 400, 0.15f, 1, pt + 3);
	ip_send(s, c, &b);
	UNIT_CHECK(result_ok(c, 11, 3, pt, 10, 0.0f, &applied) && applied == 10,
			   "SEARCH of 3 probes equals brute force, generation 10");
	UNIT_CHECK(result_ok(c, 12, 1, pt + 3, 400, 0.15f, NULL),
			   "SEARCH with a large k and min_score equals brute force");
	ip_clear_out(c);
	/* a visibility count is one more part of the pass (on the GPU path too) */
	tl_search_count(&b, 13, &G, 10, 10, 0.0f, 6, 0, 3, pt);
	ip_send(s, c, &b);
	{
		uint8_t    *cp;
		tl_result	r = {0};
		bool		ok = ip_reply(c, 13, &f, &cp) == 1 && tl_parse_result(&f, &r);

		/* every row was loaded with inserting xid 5, unsettled: one group */
		UNIT_CHECK(ok && r.count_state == MCC_COUNT_DONE && r.certain == 0 &&
				   r.n_groups == 1 && r.groups[0].ixid == 5 && r.groups[0].entries == NT &&
				   r.searchable == NT, "SEARCH with a count: one group of %d entries", NT);
		tl_result_free(&r);
		free(cp);
	}
	UNIT_CHECK(result_ok(c, 13, 3, pt, 10, 0.0f, NULL), "... and the same hits as brute force");
	ip_clear_out(c);
	test_count_alone(s, c, &b);
	eng_buf_free(&b);
}

static void
test_batching(eng_server *s, eng_conn *c)
{
	eng_buf		b;
	eng_gallery *g = eng_gallery_get(s, &G, false);
	uint64_t	passes = g->passes;
	bool		ok = true;

	eng_buf_init(&b);
	for (int i = 0; i < 8; i++)
		tl_search(&b, 100 + i, &G, 10, 5, 0.0f, 1, pt + i);
	ip_send(s, c, &b);
	for (int i = 0; i < 8; i++)
		ok = ok && result_ok(c, 100 + i, 1, pt + i, 5, 0.0f, NULL);
	UNIT_CHECK(ok && g->passes == passes + 1, "8 searches arriving together: one pass (%llu), "
			   "each equal to brute force", (unsigned long long) (g->passes - passes));
	ip_clear_out(c);
	s->cfg.max_batch = 1;
	passes = g->passes;
	for (int i = 0; i < 8; i++)
		tl_search(&b, 100 + i, &G, 10, 5, 0.0f, 1, pt + i);
	ip_send(s, c, &b);
	ok = true;
	for (int i = 0; i < 8; i++)
		ok = ok && result_ok(c, 100 + i, 1, pt + i, 5, 0.0f, NULL);
	UNIT_CHECK(ok && g->passes == passes + 8, "batching off: 8 passes, same results");
	s->cfg.max_batch = 64;
	ip_clear_out(c);
	eng_buf_free(&b);
}

static void
test_deltas(eng_server *s, eng_conn *c)
{
	eng_buf		b;
	int64_t		k1000 = 1000;
	int64_t		k3 = 3;
	uint64_t	h3 = mcc_template_hash(gt[3].b, gt[3].n);
	uint64_t	applied;

	eng_buf_init(&b);
	/* in order: insert 1000 (a copy of probe 0), delete key 3 (still searchable) */
	tl_delta(&b, &G, 11, 500, 1, &k1000, &xt[0], 1, &k3, &h3, false);
	tl_search(&b, 20, &G, 11, 10, 0.0f, 2, pt);
	ip_send(s, c, &b);
	ref_add(1000, &xt[0]);
	UNIT_CHECK(result_ok(c, 20, 2, pt, 10, 0.0f, &applied) && applied == 11,
			   "delta 11 applied before the search that needs it");
	tl_search(&b, 21, &G, 11, 3, 0.0f, 1, &gt[3]);
	ip_send(s, c, &b);
	UNIT_CHECK(result_ok(c, 21, 1, &gt[3], 3, 0.0f, NULL),
			   "a deleted version is still searched until settled");
	ip_clear_out(c);

	/* out of order: 13 before 12; the search for 13 waits for both */
	delta_insert(&b, 13, 502, 1, false);
	tl_search(&b, 22, &G, 13, 10, 0.0f, 2, pt);
	ip_send(s, c, &b);
	UNIT_CHECK(ip_reply(c, 22, NULL, NULL) == 0, "search for 13 waits while 12 is missing");
	delta_insert(&b, 12, 501, 2, false);
	ip_send(s, c, &b);
	ref_add(1001, &xt[1]);
	ref_add(1002, &xt[2]);
	UNIT_CHECK(result_ok(c, 22, 2, pt, 10, 0.0f, &applied) && applied == 13,
			   "12 arrives: 12 and 13 applied in order, the search answered");
	ip_clear_out(c);

	/* a generation in two parts (two subtransaction ids) */
	delta_insert(&b, 14, 600, 3, true);
	tl_search(&b, 23, &G, 14, 10, 0.0f, 1, &xt[4]);
	ip_send(s, c, &b);
	UNIT_CHECK(ip_reply(c, 23, NULL, NULL) == 0, "first part of generation 14 does not complete it");
	delta_insert(&b, 14, 601, 4, false);
	ip_send(s, c, &b);
	ref_add(1003, &xt[3]);
	ref_add(1004, &xt[4]);
	UNIT_CHECK(result_ok(c, 23, 1, &xt[4], 10, 0.0f, &applied) && applied == 14,
			   "last part completes generation 14");
	ip_clear_out(c);

	/*
	 * a delta that arrived but waits for a reader of the cache (a long pass)
	 * is not a missing delta: no GENERATION error past the timeout
	 */
	{
		eng_gallery *g = eng_gallery_get(s, &G, false);

		g->cache->pins++;		/* as a pass that runs long would */
		delta_insert(&b, 15, 602, 8, false);
		tl_search(&b, 25, &G, 15, 10, 0.0f, 1, &xt[8]);
		ip_send(s, c, &b);
		usleep(400000);
		ip_pump_all(s);
		UNIT_CHECK(ip_reply(c, 25, NULL, NULL) == 0 && g->cache->applied_gen == 14,
				   "delta 15 arrived while the cache is read: the search waits past the timeout");
		g->cache->pins--;
		ip_pump_all(s);
		ref_add(1008, &xt[8]);
		UNIT_CHECK(result_ok(c, 25, 1, &xt[8], 10, 0.0f, &applied) && applied == 15,
				   "once the reader is done, 15 is applied and the search answered");
		ip_clear_out(c);
	}

	/* a delta that never comes: MCC_PERR_GENERATION after the timeout */
	tl_search(&b, 24, &G, 30, 10, 0.0f, 1, pt);
	ip_feed(s, c, &b);
	for (int i = 0; i < 100 && ip_reply(c, 24, NULL, NULL) == 0; i++)
	{
		usleep(20000);
		ip_pump_all(s);
	}
	UNIT_CHECK(ip_error_of(c, 24) == MCC_PERR_GENERATION, "missing generation: GENERATION error");
	ip_clear_out(c);
	eng_buf_free(&b);
}

static void
test_reload_and_load_races(eng_server *s, eng_conn *c)
{
	eng_buf		b;
	uint64_t	applied;
	tl_frame	f;
	uint64_t	entries;
	int64_t		keys[1] = {1005};
	uint64_t	ix[1] = {700};

	eng_buf_init(&b);
	tl_reload(&b, &G, 16);
	tl_search(&b, 30, &G, 16, 10, 0.0f, 1, pt);
	tl_search(&b, 31, &G, 15, 10, 0.0f, 1, pt);
	ip_send(s, c, &b);
	UNIT_CHECK(ip_error_of(c, 30) == MCC_PERR_NOT_LOADED, "RELOAD 16: a search for 16 needs a load");
	UNIT_CHECK(result_ok(c, 31, 1, pt, 10, 0.0f, NULL), "RELOAD 16: a search for 15 is served");
	ip_clear_out(c);

	/* a reload at 16 while delta 17 arrives; the load's scan saw 17's row too */
	tl_load_begin(&b, 33, &G, 16, 0);
	ip_feed(s, c, &b);
	delta_insert(&b, 17, 700, 5, false);
	ip_send(s, c, &b);
	{
		int64_t		rk[NT + NX + 16];
		uint64_t	rx[NT + NX + 16];
		tl_tpl		rt[NT + NX + 16];
		int			n = 0;

		for (int i = 0; i < n_ref; i++)
			if (ref[i].live)
			{
				rk[n] = ref[i].key;
				rx[n] = 5;
				rt[n] = *ref[i].t;
				n++;
			}
		tl_load_rows(&b, 33, n, rk, rx, NULL, rt);
		tl_load_rows(&b, 33, 1, keys, ix, NULL, &xt[5]);
		tl_load_end(&b, 33);
		ip_send(s, c, &b);
		ref_add(1005, &xt[5]);
		UNIT_CHECK(ip_reply(c, 33, &f, NULL) == 1 && f.h.type == MCC_MSG_LOADED &&
				   (memcpy(&entries, f.p, 8), entries == (uint64_t) n + 1),
				   "load of 16 with delta 17 during it: %d entries, the row held once", n + 1);
	}
	tl_search(&b, 34, &G, 17, 100, 0.0f, 1, &xt[5]);
	ip_send(s, c, &b);
	UNIT_CHECK(result_ok(c, 34, 1, &xt[5], 100, 0.0f, &applied) && applied == 17,
			   "after the load: generation 17, equal to brute force");
	ip_clear_out(c);

	/* evict; delta 19 reaches the engine before the LOAD_BEGIN of 18 */
	tl_gallery_msg(&b, MCC_MSG_EVICT, 35, &G);
	tl_search(&b, 36, &G, 17, 10, 0.0f, 1, pt);
	ip_send(s, c, &b);
	UNIT_CHECK(ip_reply(c, 35, &f, NULL) == 1 && f.h.type == MCC_MSG_OK &&
			   ip_error_of(c, 36) == MCC_PERR_NOT_LOADED, "EVICT: then NOT_LOADED");
	ip_clear_out(c);
	delta_insert(&b, 19, 800, 6, false);
	ip_send(s, c, &b);
	load_ref(s, c, 37, 18, NULL);	/* the reference does not hold 1006 yet */
	ref_add(1006, &xt[6]);
	tl_search(&b, 38, &G, 19, 10, 0.0f, 1, &xt[6]);
	ip_send(s, c, &b);
	UNIT_CHECK(result_ok(c, 38, 1, &xt[6], 10, 0.0f, &applied) && applied == 19,
			   "a delta that came before the load's LOAD_BEGIN is applied after it");
	ip_clear_out(c);
	eng_buf_free(&b);
}

static void
test_settle_and_compaction(eng_server *s, eng_conn *c)
{
	eng_buf		b;
	uint64_t	ix[NT + NX + 16];
	uint64_t	xids[2] = {9, 10};
	uint32_t	st[2] = {MCC_XID_ABORTED, MCC_XID_COMMITTED};
	tl_frame	f;
	uint8_t    *cp;
	uint32_t	n;
	eng_gallery *g;
	int64_t		dk[NT];
	uint64_t	dh[NT];
	int			nd = 0;

	/* reload with two inserting xids: 9 (to abort) for every 4th row, else 10 */
	for (int i = 0; i < n_ref; i++)
		ix[i] = i % 4 == 1 ? 9 : 10;
	load_ref(s, c, 40, 20, ix);
	eng_buf_init(&b);
	tl_gallery_msg(&b, MCC_MSG_XIDS, 41, &G);
	ip_send(s, c, &b);
	UNIT_CHECK(ip_reply(c, 41, &f, &cp) == 1 && f.h.type == MCC_MSG_XID_LIST &&
			   (memcpy(&n, f.p, 4), n == 2), "XIDS: the two inserting xids");
	free(cp);
	tl_settle(&b, 42, &G, 11, 2, xids, st);
	tl_search(&b, 43, &G, 20, 1000, 0.0f, 2, pt);
	ip_send(s, c, &b);
	for (int i = 0; i < n_ref; i++)
		if (i % 4 == 1)
			ref[i].live = false;
	UNIT_CHECK(ip_reply(c, 42, &f, NULL) == 1 && f.h.type == MCC_MSG_OK, "SETTLE: OK");
	UNIT_CHECK(result_ok(c, 43, 2, pt, 1000, 0.0f, NULL),
			   "rows of the aborted xid are gone from the results");
	ip_clear_out(c);

	/* delete a third of the rows by xid 11, commit it below the horizon */
	for (int i = 0; i < n_ref; i++)
		if (ref[i].live && i % 3 == 0)
		{
			dk[nd] = ref[i].key;
			dh[nd] = mcc_template_hash(ref[i].t->b, ref[i].t->n);
			nd++;
		}
	tl_delta(&b, &G, 21, 11, 0, NULL, NULL, nd, dk, dh, false);
	xids[0] = 11;
	st[0] = MCC_XID_COMMITTED;
	tl_settle(&b, 44, &G, 12, 1, xids, st);
	ip_send(s, c, &b);
	for (int i = 0; i < n_ref; i++)
		if (ref[i].live && i % 3 == 0)
			ref[i].live = false;
	g = eng_gallery_get(s, &G, false);
	UNIT_CHECK(ip_reply(c, 44, NULL, NULL) == 1 && g->cache->n_purged == 0 &&
			   g->cache->soa.n_tpl == (uint32_t) eng_cache_searchable(g->cache),
			   "deletes purged and compacted away (%u entries left)", g->cache->soa.n_tpl);
	tl_search(&b, 45, &G, 21, 1000, 0.0f, 3, pt);
	ip_send(s, c, &b);
	UNIT_CHECK(result_ok(c, 45, 3, pt, 1000, 0.0f, NULL), "after compaction: equal to brute force");
	ip_clear_out(c);
	eng_buf_free(&b);
}

static void
test_cancel_and_close(eng_server *s, eng_conn *c)
{
	eng_buf		b;
	eng_conn   *c2 = eng_conn_add(s, -1);
	int64_t		k = 1007;

	eng_buf_init(&b);
	tl_search(&b, 50, &G, 22, 10, 0.0f, 1, pt);
	tl_cancel(&b, 50);
	tl_search(&b, 51, &G, 22, 10, 0.0f, 1, pt);
	ip_feed(s, c, &b);
	tl_search(&b, 52, &G, 22, 10, 0.0f, 1, pt);
	ip_send(s, c2, &b);
	eng_conn_close(s, c2);		/* its waiting search is dropped */
	tl_delta(&b, &G, 22, 900, 1, &k, &xt[7], 0, NULL, NULL, false);
	ip_send(s, c, &b);
	ref_add(1007, &xt[7]);
	UNIT_CHECK(ip_reply(c, 50, NULL, NULL) == 0, "a cancelled search gets no reply");
	UNIT_CHECK(result_ok(c, 51, 1, pt, 10, 0.0f, NULL),
			   "the other search is answered, after a closed connection's was dropped");
	ip_clear_out(c);
	eng_buf_free(&b);
}

static void
test_status(eng_server *s, eng_conn *c)
{
	eng_buf		b;
	tl_frame	f;
	uint8_t    *cp;
	uint32_t	n = 0;
	uint64_t	entries = 0;
	char		dev[32] = "";

	eng_buf_init(&b);
	tl_empty(&b, MCC_MSG_STATUS, 60);
	ip_send(s, c, &b);
	if (ip_reply(c, 60, &f, &cp) == 1 && f.h.length == 4 + 124)
	{
		memcpy(&n, f.p, 4);
		memcpy(&entries, f.p + 4 + 28, 8);
		memcpy(dev, f.p + 4 + 92, 32);
	}
	UNIT_CHECK(n == 1 && entries == eng_gallery_get(s, &G, false)->cache->soa.n_tpl &&
			   (gpu_mode == ENG_GPU_OFF) == (strcmp(dev, "cpu") == 0),
			   "STATUS: one gallery, %llu entries, device %s",
			   (unsigned long long) entries, dev);
	free(cp);
	ip_clear_out(c);
	eng_buf_free(&b);
}

/*
 * The checks eng_handle_frame's table makes before a handler runs: a frame
 * that must be empty and is not, a reply type, an unknown type close the
 * connection; LOAD_END and LOAD_HEADS_END without their load get a
 * PROTOCOL error and the connection stays.
 */
static void
test_dispatch_checks(eng_server *s)
{
	static const uint16_t bad_types[] = {MCC_MSG_RESULT, MCC_MSG_OK, 0, 40, 200};
	static const uint16_t empty_types[] = {MCC_MSG_STATUS, MCC_MSG_LOAD_END};
	eng_buf		b;
	eng_conn   *x;
	size_t		f;
	tl_frame	e;

	eng_buf_init(&b);
	x = eng_conn_add(s, -1);
	tl_empty(&b, MCC_MSG_LOAD_END, 80);
	tl_empty(&b, MCC_MSG_LOAD_HEADS_END, 81);
	ip_feed(s, x, &b);
	UNIT_CHECK(ip_error_of(x, 80) == MCC_PERR_PROTOCOL && ip_error_of(x, 81) == MCC_PERR_PROTOCOL &&
			   !x->closing && !x->dead,
			   "LOAD_END and LOAD_HEADS_END without a load: PROTOCOL error, connection kept");
	UNIT_CHECK(ip_reply(x, 81, &e, NULL) == 1 && e.h.length > 0 &&
			   memmem(e.p, e.h.length, "snapshot-checked", 16) != NULL,
			   "LOAD_HEADS_END's error names the snapshot-checked load");
	tl_load_begin(&b, 82, &G, 50, 1);
	tl_empty(&b, MCC_MSG_LOAD_HEADS_END, 82);
	ip_feed(s, x, &b);
	UNIT_CHECK(ip_error_of(x, 82) == MCC_PERR_PROTOCOL && !x->closing && !x->dead,
			   "LOAD_HEADS_END of a load that checks no snapshot: PROTOCOL error");
	eng_conn_close(s, x);

	for (size_t i = 0; i < sizeof(empty_types) / sizeof(empty_types[0]); i++)
	{
		uint16_t	type = empty_types[i];

		x = eng_conn_add(s, -1);
		f = eng_frame_begin(&b, type, 83);
		eng_buf_u32(&b, 0);
		eng_frame_end(&b, f);
		ip_feed(s, x, &b);
		UNIT_CHECK((x->closing || x->dead) && ip_reply(x, 83, &e, NULL) == 1 &&
				   e.h.type == MCC_MSG_ERROR,
				   "%s with a payload is malformed (load or not): an ERROR, and the connection closes",
				   type == MCC_MSG_STATUS ? "STATUS" : "LOAD_END");
		eng_conn_close(s, x);
	}
	for (size_t i = 0; i < sizeof(bad_types) / sizeof(bad_types[0]); i++)
	{
		x = eng_conn_add(s, -1);
		tl_empty(&b, bad_types[i], 85);
		ip_feed(s, x, &b);
		UNIT_CHECK(x->closing || x->dead, "a frame of type %u from a client closes the connection",
				   (unsigned) bad_types[i]);
		eng_conn_close(s, x);
	}
	ip_pump_all(s);
	eng_buf_free(&b);
}

/* Bad input: each malformed frame closes only its connection. */
static void
test_malformed(eng_server *s, eng_conn *c)
{
	eng_buf		b;
	tl_tpl		bad = {calloc(1, 40), 40};
	tg_rng		r = {99};
	int			closed = 0;
	int			trials = 3000;
	bool		alive = true;

	eng_buf_init(&b);
	tl_search(&b, 70, &G, 1, 10, 0.0f, 1, &bad);
	ip_send(s, c, &b);
	UNIT_CHECK(ip_error_of(c, 70) == MCC_PERR_DATA && !c->closing,
			   "a bad probe template: DATA error, connection kept");
	ip_clear_out(c);
	for (int i = 0; i < trials; i++)
	{
		eng_conn   *x = eng_conn_add(s, -1);
		int			kind = i % 4;

		/* start from a valid frame of some type, then damage it */
		switch (tg_int(&r, 0, 7))
		{
			case 0:
				tl_search(&b, 1, &G, 1, 10, 0.0f, 2, pt);
				break;
			case 1:
				tl_delta(&b, &G, 23 + i, 1000 + i, 1, &(int64_t) {2000}, &xt[8], 0, NULL, NULL, false);
				break;
			case 2:
				tl_load_begin(&b, 3, &G, 50, 1);
				tl_load_rows(&b, 3, 1, &(int64_t) {1}, &(uint64_t) {5}, NULL, &gt[0]);
				break;
			case 3:
				tl_settle(&b, 4, &G, 1, 1, &(uint64_t) {5}, &(uint32_t) {1});
				break;
			case 4:
				tl_gallery_msg(&b, (uint16_t) tg_int(&r, 0, 25), 5, &G);
				break;
			case 5:
				tl_cancel(&b, 1);
				break;
			case 6:
				tl_reload(&b, &G, (uint64_t) tg_int(&r, 0, 3));
				break;
			default:
				tl_hello(&b, 6);
				break;
		}
		if (kind == 0 && b.len > 16)	/* flip bytes */
			for (int j = 0; j < 3; j++)
				b.data[tg_int(&r, 0, (int) b.len - 1)] ^= (uint8_t) tg_int(&r, 1, 255);
		else if (kind == 1 && b.len > 16)	/* cut short, with a length saying so */
		{
			uint32_t	len = (uint32_t) tg_int(&r, 0, (int) b.len - 17);

			memcpy(b.data, &len, 4);
			b.len = 16 + len;
		}
		else if (kind == 2)		/* random bytes */
		{
			b.len = 0;
			for (int j = tg_int(&r, 0, 64); j > 0; j--)
				eng_buf_put(&b, &(uint8_t) {(uint8_t) tg_next(&r)}, 1);
		}
		ip_feed(s, x, &b);
		closed += x->closing || x->dead;
		eng_server_step(s);
		eng_conn_close(s, x);
	}
	ip_pump_all(s);
	printf("# %d of %d damaged inputs closed their connection\n", closed, trials);
	UNIT_CHECK(closed > trials / 10, "malformed frames close their connections");
	tl_search(&b, 71, &G, 1, 10, 0.0f, 1, pt);
	ip_send(s, c, &b);
	alive = ip_reply(c, 71, NULL, NULL) == 1;
	UNIT_CHECK(alive && !c->closing, "after %d damaged inputs the engine still answers", trials);
	ip_clear_out(c);
	/* a frame announcing more than the limit */
	{
		eng_conn   *x = eng_conn_add(s, -1);
		uint8_t		h[16] = {0};
		uint32_t	len = MCC_PROTO_MAX_FRAME + 1;

		memcpy(h, &len, 4);
		h[4] = MCC_MSG_SEARCH;
		eng_conn_input(s, x, h, 16);
		UNIT_CHECK(x->closing && ip_error_of(x, 0) == MCC_PERR_PROTOCOL,
				   "a frame over MCC_PROTO_MAX_FRAME: PROTOCOL error, connection closing");
		eng_conn_close(s, x);
	}
	free(bad.b);
	eng_buf_free(&b);
}

/* A load over the memory limit fails and leaves the old cache serving. */
static void
test_memory_limit(void)
{
	eng_server	s;
	eng_conn   *c;
	eng_buf		b;
	tl_frame	f;
	eng_gallery *g;
	uint64_t	bytes;
	int			keep = n_ref;

	/* room for one cache of NT templates, not for two */
	ref_all();
	server(&s, 0, 2000);
	c = eng_conn_add(&s, -1);
	load_ref(&s, c, 80, 1, NULL);
	ip_pump_all(&s);
	UNIT_CHECK(ip_reply(c, 80, &f, NULL) == 1 && f.h.type == MCC_MSG_LOADED, "load within the limit");
	g = eng_gallery_get(&s, &G, false);
	bytes = g->cache->bytes;
	s.budget.limit = bytes + bytes / 2;
	load_ref(&s, c, 81, 2, NULL);
	ip_pump_all(&s);
	UNIT_CHECK(ip_error_of(c, 81) == MCC_PERR_MEMORY && g->cache != NULL &&
			   g->cache->applied_gen == 1, "a second copy over the limit: MEMORY, cache unchanged");
	UNIT_CHECK(s.budget.used == g->cache->bytes, "the failed load released its memory");
	eng_buf_init(&b);
	tl_search(&b, 82, &G, 1, 10, 0.0f, 1, pt);
	ip_send(&s, c, &b);
	UNIT_CHECK(result_ok(c, 82, 1, pt, 10, 0.0f, NULL), "the old cache still serves");
	eng_buf_free(&b);
	eng_server_destroy(&s);
	n_ref = keep;
}

/* Stream the whole reference as a load of gallery gid with a priority and flags. */
static void
load_as(eng_server *s, eng_conn *c, uint64_t rid, const mcc_gallery_id *gid, uint64_t gen,
		int32_t priority, uint32_t flags)
{
	eng_buf		b;
	int64_t		keys[NT];
	uint64_t	xid[NT];

	for (int i = 0; i < NT; i++)
	{
		keys[i] = i;
		xid[i] = 5;
	}
	eng_buf_init(&b);
	tl_load_begin_p(&b, rid, gid, gen, NT, priority, flags);
	for (int i = 0; i < NT; i += 100)
		tl_load_rows(&b, rid, NT - i < 100 ? NT - i : 100, keys + i, xid + i, NULL, gt + i);
	tl_load_end(&b, rid);
	ip_send(s, c, &b);
	eng_buf_free(&b);
}

/* Is reply rid LOADED? */
static bool
loaded(eng_conn *c, uint64_t rid)
{
	tl_frame	f;

	return ip_reply(c, rid, &f, NULL) == 1 && f.h.type == MCC_MSG_LOADED;
}

/*
 * Sharing the cache memory: with room for one copy of a gallery, a reload
 * that may replace the current copy (MCC_LOAD_REPLACE, or a reload mark)
 * loads without a second copy; a load evicts another gallery's cache of
 * equal priority used less recently, or of lower priority, never one of
 * higher priority; a load that cannot fit even so evicts nothing.
 */
static void
test_memory_sharing(void)
{
	eng_server	s;
	eng_conn   *c;
	eng_buf		b;
	const mcc_gallery_id H = {5, 16400, 78};
	eng_gallery *g;
	eng_gallery *h;
	uint64_t	bytes;
	size_t		fr;
	int			keep = n_ref;

	ref_all();
	server(&s, 0, 2000);
	c = eng_conn_add(&s, -1);
	eng_buf_init(&b);
	load_as(&s, c, 90, &G, 1, 0, 0);
	g = eng_gallery_get(&s, &G, false);
	bytes = g->cache->bytes;
	s.budget.limit = bytes + bytes / 2;

	load_as(&s, c, 91, &G, 2, 0, MCC_LOAD_REPLACE);
	UNIT_CHECK(loaded(c, 91) && g->cache != NULL && g->cache->applied_gen == 2 &&
			   s.budget.used == g->cache->bytes,
			   "a reload that may replace the current copy fits where two copies do not");
	tl_reload(&b, &G, 3);
	ip_send(&s, c, &b);
	load_as(&s, c, 92, &G, 3, 0, 0);
	UNIT_CHECK(loaded(c, 92) && g->cache->applied_gen == 3 && s.budget.used == g->cache->bytes,
			   "a cache marked for a reload gives way to its reload");
	ip_clear_out(c);

	/* another gallery: the equal-priority cache used less recently goes */
	load_as(&s, c, 93, &H, 1, 0, 0);
	h = eng_gallery_get(&s, &H, false);
	UNIT_CHECK(loaded(c, 93) && h->cache != NULL && g->cache == NULL && s.evictions == 1 &&
			   s.budget.used == h->cache->bytes,
			   "a load evicts another gallery's cache of equal priority, used less recently");
	tl_search(&b, 94, &G, 3, 10, 0.0f, 1, pt);
	ip_send(&s, c, &b);
	UNIT_CHECK(ip_error_of(c, 94) == MCC_PERR_NOT_LOADED,
			   "the evicted gallery's searches get NOT_LOADED (the backend reloads it)");
	ip_clear_out(c);

	/* priorities: a higher one evicts, a lower one cannot */
	load_as(&s, c, 95, &G, 4, 5, 0);
	UNIT_CHECK(loaded(c, 95) && g->cache != NULL && h->cache == NULL && s.evictions == 2,
			   "priority 5 evicts a cache of priority 0");
	load_as(&s, c, 96, &H, 2, 0, 0);
	UNIT_CHECK(ip_error_of(c, 96) == MCC_PERR_MEMORY && g->cache != NULL && h->cache == NULL &&
			   s.evictions == 2, "priority 0 cannot evict priority 5: MEMORY, nothing evicted");
	ip_clear_out(c);
	fr = eng_frame_begin(&b, MCC_MSG_PRIORITY, 97);
	eng_buf_gallery(&b, &(mcc_gallery_id) {G.db_oid, G.rel_oid, 0});
	eng_buf_u32(&b, (uint32_t) -1);
	eng_frame_end(&b, fr);
	ip_feed(&s, c, &b);
	load_as(&s, c, 98, &H, 2, 0, 0);
	UNIT_CHECK(ip_reply(c, 97, NULL, NULL) == 1 && g->priority == -1 && loaded(c, 98) &&
			   g->cache == NULL && h->cache != NULL,
			   "PRIORITY lowers a cached gallery's priority: then it may be evicted");
	ip_clear_out(c);

	/* a load larger than the whole limit evicts nothing */
	s.budget.limit = bytes / 2;
	load_as(&s, c, 99, &G, 5, 9, MCC_LOAD_REPLACE);
	UNIT_CHECK(ip_error_of(c, 99) == MCC_PERR_MEMORY && h->cache != NULL && s.evictions == 3,
			   "a load that cannot fit even alone evicts nothing");
	eng_buf_free(&b);
	eng_server_destroy(&s);
	n_ref = keep;
}

/* After the suite on the GPU path: did the GPU answer, and is it still in use? */
static void
check_gpu_served(eng_server *s)
{
	eng_gpu_stats st;
	char		dev[32];
	uint64_t	bytes;
	eng_gallery *g = eng_gallery_get(s, &G, false);

	eng_gpu_get_stats(s->gpu, &st);
	eng_gpu_describe(s->gpu, g->cache, dev, sizeof(dev), &bytes);
	printf("# GPU: %llu passes, %llu handed to the CPU (bad probes), %llu uploads, "
		   "%llu appends, %llu tombstones; device %s, %llu bytes\n",
		   (unsigned long long) st.passes, (unsigned long long) st.fallbacks,
		   (unsigned long long) st.uploads, (unsigned long long) st.appends,
		   (unsigned long long) st.removes, dev, (unsigned long long) bytes);
	UNIT_CHECK(eng_gpu_usable(s->gpu) && st.passes >= 15 && st.uploads >= 3 &&
			   st.appends >= 1 && st.removes >= 1,
			   "the GPU answered the suite's searches (uploads, appends and tombstones seen)");
	UNIT_CHECK(strcmp(dev, "cpu") != 0 && bytes > 0, "the gallery is still on the GPU");
}

int
main(int argc, char **argv)
{
	eng_server	s;
	eng_conn   *c;

	mcc_lss_init();
	eng_log_set_level(ENG_LOG_ERROR);
	if (ip_gpu_option(argc, argv, &gpu_mode, &gpu_parts) < 0)
	{
		UNIT_SKIP("no usable GPU%s: the engine suite on the GPU path is skipped", ip_no_gpu_why());
		return unit_done();
	}
	gt = tl_templates(31, NT, 15);
	xt = tl_templates(32, NX, 15);
	pt = tl_templates(33, 10, 15);
	/* probes that have mates in the gallery */
	free(pt[0].b);
	pt[0] = (tl_tpl) {memcpy(malloc(gt[0].n), gt[0].b, gt[0].n), gt[0].n};
	free(xt[0].b);
	xt[0] = (tl_tpl) {memcpy(malloc(pt[1].n), pt[1].b, pt[1].n), pt[1].n};

	server(&s, 0, 300);
	c = eng_conn_add(&s, -1);
	test_hello_and_not_loaded(&s, c);
	test_load_and_search(&s, c);
	test_batching(&s, c);
	test_deltas(&s, c);
	test_reload_and_load_races(&s, c);
	test_settle_and_compaction(&s, c);
	test_cancel_and_close(&s, c);
	test_status(&s, c);
	if (gpu_mode != ENG_GPU_OFF)
		check_gpu_served(&s);	/* (damaged frames below may evict the gallery) */
	test_dispatch_checks(&s);
	test_malformed(&s, c);
	eng_server_destroy(&s);
	UNIT_CHECK(s.budget.used == 0, "destroying the server releases every cache's memory");
	test_memory_limit();
	test_memory_sharing();
	tl_templates_free(gt, NT);
	tl_templates_free(xt, NX);
	tl_templates_free(pt, 10);
	return unit_done();
}
