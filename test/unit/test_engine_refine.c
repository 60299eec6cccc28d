/*
 * test_engine_refine.c: the matcher engine's part of identification with
 * refinement (mcc_proto.h): the visibility count that SEARCH may ask for,
 * and REFINE.
 *
 * - eng_cache_count on a hand-built cache: which entries are certain for a
 *   snapshot xmin, which are grouped (and how), which are left out, the
 *   group limit;
 * - SEARCH with a count through the in-process server, against the count
 *   each entry's xids give by the definition, and the count_above rule;
 * - REFINE through the server: every method's scores equal mcc_match_pair on
 *   the same pair, for several probes and with 1, 2 and 3 threads; empty
 *   items; bad templates, mixed profiles and unknown methods are DATA
 *   errors that keep the connection; a truncated frame is a PROTOCOL error
 *   that closes it; a cancelled REFINE is never answered and frees the
 *   threads; a connection closed mid-refinement leaves the engine serving.
 */
#include <stdlib.h>
#include <string.h>

#include "eng_conn.h"
#include "unit.h"
#include "engine_inproc.h"
#include "eng_cache_count.h"
#include "eng_cache_settle.h"
#include "eng_log.h"
#include "eng_server.h"
#include "mcc_match.h"

#define NT 120					/* gallery templates */
#define NP 6					/* probes */

static tl_tpl *gt;
static tl_tpl *pt;
static const mcc_gallery_id G = {5, 16400, 91};

/* Append t to c with these xids (load flags: as a load row would). */
static void
add(eng_cache *c, int64_t key, uint64_t ixid, uint64_t dxid, const tl_tpl *t)
{
	mcc_template_view v = tl_view(t);
	mcc_error	err;

	eng_cache_append(c, key, mcc_template_hash(t->b, t->n), ixid, dxid,
					 ENG_E_LOAD_INS | ENG_E_LOAD_DEL, &v, NULL, &err);
}

/* Is group i of (groups, n) equal to (ixid, dxid, flags, entries)? */
static bool
group_is(const eng_count_group *g, uint32_t n, uint32_t i, uint64_t ixid,
		 uint64_t dxid, uint32_t flags, uint32_t entries)
{
	return i < n && g[i].insert_xid == ixid && g[i].delete_xid == dxid &&
		g[i].flags == flags && g[i].entries == entries;
}

/* eng_cache_count on seven hand-made entries. */
static void
test_count_cache(void)
{
	mcc_error	err;
	eng_cache  *c = eng_cache_new(mcc_profile_by_id(MCC_PROFILE_DEFAULT), NULL, 16, 512, &err);
	uint64_t	xids[3] = {50, 60, 70};
	uint32_t	states[3] = {MCC_XID_COMMITTED, MCC_XID_COMMITTED, MCC_XID_ABORTED};
	eng_count_group *g;
	uint32_t	n;
	uint64_t	certain;
	bool		ok;

	add(c, 0, 0, 0, &gt[0]);	/* settled before every snapshot */
	add(c, 1, 100, 0, &gt[1]);	/* inserter's fate unknown */
	add(c, 2, 100, 0, &gt[2]);	/* the same xid */
	add(c, 3, 50, 0, &gt[3]);	/* committed (settled below) */
	add(c, 4, 0, 120, &gt[4]);	/* deleter's fate unknown */
	add(c, 5, 0, 60, &gt[5]);	/* deleter committed (settled below) */
	add(c, 6, 70, 0, &gt[6]);	/* inserter aborted: purged below */
	/* horizon 55: 60 committed but not below it, so entry 5 stays */
	eng_cache_settle(c, 55, xids, states, 3);
	UNIT_CHECK(eng_cache_searchable(c) == 6, "six searchable entries after the settle");

	ok = eng_cache_count(c, 80, 100, &certain, &g, &n);
	UNIT_CHECK(ok && certain == 2, "xmin 80: entries 0 and 3 are certain (%llu)",
			   (unsigned long long) certain);
	UNIT_CHECK(ok && n == 2 &&
			   group_is(g, n, 0, 0, 120, MCC_COUNT_F_INS_COMMITTED, 1) &&
			   group_is(g, n, 1, 100, 0, 0, 2),
			   "xmin 80: groups (0, 120, inserted) x1 and (100, -) x2; the deletion committed at 60 is left out");
	free(g);

	ok = eng_cache_count(c, 45, 100, &certain, &g, &n);
	UNIT_CHECK(ok && certain == 1, "xmin 45: only entry 0 is certain (%llu)",
			   (unsigned long long) certain);
	UNIT_CHECK(ok && n == 4 &&
			   group_is(g, n, 0, 0, 60, MCC_COUNT_F_INS_COMMITTED | MCC_COUNT_F_DEL_COMMITTED, 1) &&
			   group_is(g, n, 1, 0, 120, MCC_COUNT_F_INS_COMMITTED, 1) &&
			   group_is(g, n, 2, 50, 0, MCC_COUNT_F_INS_COMMITTED, 1) &&
			   group_is(g, n, 3, 100, 0, 0, 2),
			   "xmin 45: four groups, sorted by xids, with their flags");
	free(g);

	ok = eng_cache_count(c, 45, 3, &certain, &g, &n);
	UNIT_CHECK(!ok && g == NULL && n == 0 && certain == 0,
			   "more groups than allowed: false, nothing returned");
	ok = eng_cache_count(c, 1000, 0, &certain, &g, &n);
	UNIT_CHECK(!ok, "xmin 1000 still leaves the unknown xids 100 and 120 in groups");
	eng_cache_free(c);
}

/* Expected count of the server test's gallery, from each row's xids. */
typedef struct row_xids
{
	uint64_t	ixid;
	uint64_t	dxid;
} row_xids;

static row_xids rows[NT];

/* The xids of row i: a mix of settled, unknown and deleted versions. */
static row_xids
xids_of(int i)
{
	row_xids	r;

	r.ixid = i % 3 == 0 ? 0 : i % 3 == 1 ? (uint64_t) (1000 + i % 5) : 2000;
	r.dxid = i % 7 == 0 ? 3000 : 0;
	return r;
}

static void
load_rows(eng_server *s, eng_conn *c, uint64_t rid)
{
	eng_buf		b;
	int64_t		keys[NT];
	uint64_t	ix[NT];
	uint64_t	dx[NT];

	for (int i = 0; i < NT; i++)
	{
		rows[i] = xids_of(i);
		keys[i] = i;
		ix[i] = rows[i].ixid;
		dx[i] = rows[i].dxid;
	}
	eng_buf_init(&b);
	tl_load_begin(&b, rid, &G, 1, NT);
	tl_load_rows(&b, rid, NT, keys, ix, dx, gt);
	tl_load_end(&b, rid);
	ip_send(s, c, &b);
	eng_buf_free(&b);
}

/* SEARCH with counts through the server. */
static void
test_count_search(eng_server *s, eng_conn *c)
{
	eng_buf		b;
	tl_frame	f;
	uint8_t    *cp;
	tl_result	r = {0};
	uint64_t	want_certain = 0;
	uint32_t	want_groups = 0;
	uint32_t	in_groups = 0;
	bool		ok;

	for (int i = 0; i < NT; i++)
	{
		bool		first = true;

		/* by definition, for a snapshot with xmin 1500 (nothing settled since) */
		if (rows[i].ixid == 0 && rows[i].dxid == 0)
		{
			want_certain++;
			continue;
		}
		for (int j = 0; j < i && first; j++)
			if (!(rows[j].ixid == 0 && rows[j].dxid == 0) &&
				rows[j].ixid == rows[i].ixid && rows[j].dxid == rows[i].dxid)
				first = false;
		want_groups += first;
	}
	eng_buf_init(&b);
	tl_search_count(&b, 20, &G, 1, 5, 0.0f, 1500, 0, 2, pt);
	tl_search_count(&b, 21, &G, 1, 5, 0.0f, 1500, NT, 1, pt);
	tl_search_count(&b, 22, &G, 1, 5, 0.0f, 0, 0, 1, pt);
	ip_send(s, c, &b);

	ok = ip_reply(c, 20, &f, &cp) == 1 && tl_parse_result(&f, &r);
	UNIT_CHECK(ok && r.searchable == NT && r.count_state == MCC_COUNT_DONE &&
			   r.certain == want_certain,
			   "count at xmin 1500: DONE, %llu certain (%llu), %llu searchable",
			   (unsigned long long) want_certain, (unsigned long long) r.certain,
			   (unsigned long long) r.searchable);
	for (uint32_t i = 0; ok && i < r.n_groups; i++)
	{
		uint32_t	want = 0;
		tl_group   *gr = &r.groups[i];

		for (int j = 0; j < NT; j++)
			want += rows[j].ixid == gr->ixid && rows[j].dxid == gr->dxid &&
				!(rows[j].ixid == 0 && rows[j].dxid == 0);
		/* only the settled inserts (xid 0) carry a flag: nothing else was settled */
		ok = gr->entries == want && gr->flags == (gr->ixid == 0 ? MCC_COUNT_F_INS_COMMITTED : 0u);
		if (i > 0 && (gr[-1].ixid > gr->ixid || (gr[-1].ixid == gr->ixid && gr[-1].dxid >= gr->dxid)))
			ok = false;
		in_groups += gr->entries;
	}
	UNIT_CHECK(ok && r.n_groups == want_groups && r.certain + in_groups == NT,
			   "%u groups (%u), one per distinct xids, sorted, with each one's entries and flags",
			   want_groups, r.n_groups);
	UNIT_CHECK(ok && r.n == 2 && r.p[0].n == 5 && r.p[1].n == 5,
			   "the counted SEARCH still answers both probes");
	tl_result_free(&r);
	free(cp);

	ok = ip_reply(c, 21, &f, &cp) == 1 && tl_parse_result(&f, &r);
	UNIT_CHECK(ok && r.count_state == MCC_COUNT_NONE && r.certain == 0 && r.n_groups == 0 &&
			   r.n == 1, "searchable not above count_above: no count");
	tl_result_free(&r);
	free(cp);
	ok = ip_reply(c, 22, &f, &cp) == 1 && tl_parse_result(&f, &r);
	UNIT_CHECK(ok && r.count_state == MCC_COUNT_NONE, "count_xmin 0: no count");
	tl_result_free(&r);
	free(cp);
	ip_clear_out(c);
	eng_buf_free(&b);
}

/* Does REFINED rid hold, per item, mcc_match_pair's scores? */
static bool
refined_ok(eng_conn *c, uint64_t rid, int method, int n_items, const tl_tpl *probes,
		   const int *n, const tl_tpl *const *cand)
{
	mcc_match_work *w = tl_match_work();
	tl_frame	f;
	eng_rd		rd;
	bool		ok;

	if (ip_reply(c, rid, &f, NULL) != 1 || f.h.type != MCC_MSG_REFINED)
		return false;
	eng_rd_init(&rd, f.p, f.h.length);
	ok = eng_rd_u32(&rd) == (uint32_t) n_items;
	for (int i = 0; ok && i < n_items; i++)
	{
		mcc_template_view pv = tl_view(&probes[i]);

		ok = eng_rd_u32(&rd) == (uint32_t) n[i];
		for (int j = 0; ok && j < n[i]; j++)
		{
			mcc_template_view cv = tl_view(&cand[i][j]);
			float		want;
			float		got = eng_rd_f32(&rd);
			mcc_error	err;

			ok = mcc_match_pair(w, &pv, &cv, (mcc_method) method, NULL, &want, &err) == MCC_OK &&
				memcmp(&want, &got, sizeof(float)) == 0;
		}
	}
	return ok && eng_rd_done(&rd);
}

/* Every method, NP probes of 40, 17 and 0 candidates; one server per thread count. */
static void
test_refine_methods(int threads)
{
	eng_server	s;
	eng_conn   *c;
	eng_buf		b;
	eng_config	cfg = {.threads = threads, .delta_timeout_ms = 1000, .max_batch = 64};
	int			n[NP];
	const tl_tpl *cand[NP];
	bool		all = true;

	eng_server_init(&s, &cfg);
	c = eng_conn_add(&s, -1);
	eng_buf_init(&b);
	for (int i = 0; i < NP; i++)
	{
		n[i] = i == 2 ? 0 : i % 2 ? 17 : 40;
		cand[i] = gt + 10 * i;
	}
	for (int m = 0; m < MCC_NMETHODS; m++)
		tl_refine(&b, 100 + m, (uint32_t) m, NP, pt, n, cand);
	ip_send(&s, c, &b);
	for (int m = 0; m < MCC_NMETHODS; m++)
	{
		bool		ok = refined_ok(c, 100 + m, m, NP, pt, n, cand);

		all = all && ok;
		if (!ok || threads == 2)
			UNIT_CHECK(ok, "%d thread(s): REFINE %s of %d probes (40, 17, 0 candidates) equals mcc_match_pair",
					   threads, mcc_method_name(m), NP);
	}
	if (threads != 2)
		UNIT_CHECK(all, "%d thread(s): every method equals mcc_match_pair", threads);
	/* no items at all, and one item without candidates */
	tl_refine(&b, 200, MCC_LSS_DTR, 0, pt, n, cand);
	tl_refine(&b, 201, MCC_LSS_DTR, 1, pt + 2, n + 2, cand + 2);
	ip_send(&s, c, &b);
	UNIT_CHECK(refined_ok(c, 200, MCC_LSS_DTR, 0, pt, n, cand) &&
			   refined_ok(c, 201, MCC_LSS_DTR, 1, pt + 2, n + 2, cand + 2),
			   "%d thread(s): REFINE of no items and of an item without candidates", threads);
	ip_clear_out(c);
	eng_buf_free(&b);
	eng_server_destroy(&s);
}

/* Errors, cancel and closed connections. */
static void
test_refine_errors(eng_server *s, eng_conn *c)
{
	eng_buf		b;
	tl_tpl		bad;
	tl_tpl		other;
	tl_tpl		two[2];
	int			n1 = 1;
	int			nbig = NT;
	const tl_tpl *cand;
	mcc_minutiae ms;
	mcc_error	err;
	eng_conn   *x;
	uint32_t	jobs_before;

	/* a damaged template, a template of the other profile, an unknown method */
	bad.n = gt[3].n;
	bad.b = malloc(bad.n);
	memcpy(bad.b, gt[3].b, bad.n);
	bad.b[bad.n / 2] ^= 0x5a;
	bad.b[10] ^= 0xff;
	{
		mcc_template_view v = tl_view(&gt[4]);

		mcc_template_minutiae(&v, &ms);
	}
	mcc_template_build(&ms, mcc_profile_by_id(MCC_PROFILE_TPAMI2010), NULL, &other.n, &err);
	other.b = calloc(1, other.n);
	mcc_template_build(&ms, mcc_profile_by_id(MCC_PROFILE_TPAMI2010), other.b, &other.n, &err);

	eng_buf_init(&b);
	cand = &bad;
	tl_refine(&b, 300, MCC_LSS_DTR, 1, pt, &n1, &cand);
	cand = &other;
	tl_refine(&b, 301, MCC_LSS_DTR, 1, pt, &n1, &cand);
	cand = gt;
	tl_refine(&b, 302, MCC_NMETHODS, 1, pt, &n1, &cand);
	two[0] = pt[0];
	two[1] = pt[1];
	tl_refine(&b, 303, MCC_LSS, 1, two, &n1, &cand);
	ip_send(s, c, &b);
	UNIT_CHECK(ip_error_of(c, 300) == MCC_PERR_DATA, "REFINE of a damaged template: DATA error");
	UNIT_CHECK(ip_error_of(c, 301) == MCC_PERR_DATA,
			   "REFINE of a candidate of another profile than its probe: DATA error");
	UNIT_CHECK(ip_error_of(c, 302) == MCC_PERR_DATA, "REFINE with an unknown method: DATA error");
	UNIT_CHECK(!c->closing && refined_ok(c, 303, MCC_LSS, 1, two, &n1, &cand),
			   "after those errors the connection still refines");
	ip_clear_out(c);

	/* a truncated frame closes its connection */
	x = eng_conn_add(s, -1);
	tl_refine(&b, 310, MCC_LSS_DTR, 1, pt, &n1, &cand);
	{
		uint32_t	len;

		memcpy(&len, b.data, 4);
		len -= 3;
		memcpy(b.data, &len, 4);
		b.len -= 3;
	}
	ip_feed(s, x, &b);
	UNIT_CHECK(x->closing && ip_error_of(x, 310) == MCC_PERR_PROTOCOL,
			   "a REFINE cut short: PROTOCOL error, connection closing");
	eng_conn_close(s, x);

	/* cancel right after the request: no reply, the threads are freed */
	jobs_before = s->jobs;
	cand = gt;
	tl_refine(&b, 320, MCC_LSA_DTR, 1, pt, &nbig, &cand);
	tl_cancel(&b, 320);
	ip_feed(s, c, &b);
	UNIT_CHECK(s->jobs == jobs_before + 1 && s->refines != NULL &&
			   atomic_load(&s->refines->cancelled), "a cancelled REFINE is marked in the pool");
	ip_pump_all(s);
	UNIT_CHECK(ip_reply(c, 320, NULL, NULL) == 0 && s->refines == NULL && s->jobs == jobs_before,
			   "a cancelled REFINE is never answered and leaves the pool");
	/* the connection closes with a refinement in the pool */
	x = eng_conn_add(s, -1);
	tl_refine(&b, 330, MCC_LSA_DTR, 1, pt, &nbig, &cand);
	ip_feed(s, x, &b);
	eng_conn_close(s, x);
	ip_pump_all(s);
	tl_refine(&b, 331, MCC_LSS_DTR, 1, pt + 1, &n1, &cand);
	ip_send(s, c, &b);
	UNIT_CHECK(s->refines == NULL && refined_ok(c, 331, MCC_LSS_DTR, 1, pt + 1, &n1, &cand),
			   "a connection closed mid-refinement: dropped, the engine refines on");
	ip_clear_out(c);
	eng_buf_free(&b);
	free(bad.b);
	free(other.b);
}

int
main(void)
{
	eng_server	s;
	eng_conn   *c;
	eng_config	cfg = {.threads = 2, .delta_timeout_ms = 1000, .max_batch = 64};

	eng_log_set_level(ENG_LOG_ERROR);
	mcc_lss_init();
	gt = tl_templates(31, NT, 20);
	pt = tl_templates(32, NP, 0);

	test_count_cache();

	eng_server_init(&s, &cfg);
	c = eng_conn_add(&s, -1);
	load_rows(&s, c, 10);
	test_count_search(&s, c);
	test_refine_errors(&s, c);
	eng_server_destroy(&s);

	test_refine_methods(1);
	test_refine_methods(2);
	test_refine_methods(3);

	tl_templates_free(gt, NT);
	tl_templates_free(pt, NP);
	return unit_done();
}
