/*
 * test_engine_rescore.c: refining searches (mcc_proto.h, SEARCH with
 * `refine`): the engine rescores each probe's LSS shortlist from its cache's
 * own copy of the templates and returns every candidate's visibility.
 *
 * Against a reference built from each row's template and xids:
 * - every method but lss (method 0 is a plain search), 1, 2 and 3 threads: the candidates are the LSS order's
 *   prefix that holds s = n'(searchable) entries certain for count_xmin (or
 *   all s + k), each refined score equal to mcc_match_pair on the stored
 *   template bit for bit, each candidate's xids and flags those of its row,
 *   `more` right;
 * - count_xmin 0 (nothing certain): all s + k come back;
 * - refining and plain searches arriving together share one pass and one
 *   rescoring job, and each gets its own answer;
 * - after deltas, a settle that purges, and the compaction it triggers, the
 *   rebuilt templates still refine exactly;
 * - a bad method, fraction or k is a DATA error that keeps the connection;
 * - CANCEL during the rescoring: never answered, the job and the cache's
 *   pin released; a connection closed during it: the same, the engine
 *   serves on;
 * - the next pass searches during a rescoring, both passes' answers exact;
 *   a delta waiting for the cache holds the next pass back until the
 *   rescoring ends.
 *
 * --gpu P (make gpu-check): every pass on the GPU path with P partitions,
 * so that the shortlists come from the GPU's hits, and every rescoring of a
 * method the device runs on the GPU (eng_gpu_refine): all the checks above
 * then hold for the GPU's refined scores, and besides
 * - the GPU did rescore (its counters), with no fallback;
 * - refinement data follows the cache: deltas appended, the compacted
 *   cache uploaded anew;
 * - a CUDA error during a rescoring: the same job on the CPU threads, the
 *   same answer, the next job on the GPU again; data the library refuses:
 *   that cache's rescoring on the CPU from then on, answers unchanged;
 * - --gpu-refine off (gpu_refine_off): passes on the GPU, rescoring on the
 *   CPU threads, the same answers.
 */
#include "engine_rescore.h"

/* ---- the tests ------------------------------------------------------------ */


/* Every method on `threads` threads. */
static void
test_methods(int threads)
{
	eng_conn   *c;
	eng_server *s = server_new(threads, &c);
	eng_buf		b;
	bool		all = true;

	eng_buf_init(&b);
	/* method 0 (lss) is a plain search: refining with LSS changes no score */
	for (int m = 1; m < MCC_NMETHODS; m++)
	{
		tl_refine_spec rf = {(uint32_t) m, 5, 0.2, 10};

		tl_search_full(&b, 100 + m, &G, 1, 8, 0.0f, XMIN, UINT64_MAX, &rf, NP, probes);
	}
	ip_send(s, c, &b);
	for (int m = 1; m < MCC_NMETHODS; m++)
	{
		tl_refine_spec rf = {(uint32_t) m, 5, 0.2, 10};
		bool		ok = refined_ok(c, 100 + m, probes, NP, &rf, 8, XMIN);

		all = all && ok;
		if (!ok || threads == 2)
			UNIT_CHECK(ok, "%d thread(s): a refining search with %s: the certain cut of the LSS order, "
					   "mcc_match_pair's scores, each row's xids", threads, mcc_method_name(m));
	}
	if (threads != 2)
		UNIT_CHECK(all, "%d thread(s): every method's refining search equals the reference", threads);
	ip_clear_out(c);
	eng_buf_free(&b);
	server_free(s);
}

/* Cuts, batching with plain searches, DATA errors. */
static void
test_cut_and_batch(void)
{
	eng_conn   *c;
	eng_server *s = server_new(2, &c);
	eng_gallery *g = eng_gallery_get(s, &G, false);
	eng_buf		b;
	tl_refine_spec fused = {MCC_FUSED, 10, 0.05, 20};
	tl_refine_spec all_rows = {MCC_LSS_DTR, 3, 1.0, 0};
	tl_refine_spec bad_m = {MCC_NMETHODS, 5, 0.1, 1};
	tl_refine_spec bad_f = {MCC_FUSED, 5, 1.5, 1};
	tl_refine_spec bad_k = {MCC_FUSED, 0, 0.1, 1};
	tl_entry	ref[NT];
	uint64_t	passes;

	for (int i = 0; i < NT; i++)
		ref[i] = (tl_entry) {rows[i].key, &gt[i], true};
	eng_buf_init(&b);
	/* nothing certain at xmin 0: all s + k come back */
	tl_search_full(&b, 200, &G, 1, 30, 0.0f, 0, UINT64_MAX, &fused, 2, probes);
	/* xmin below the unknown inserters: fewer certain entries */
	tl_search_full(&b, 201, &G, 1, 30, 0.0f, 4000, UINT64_MAX, &fused, 2, probes + 2);
	/* fraction 1: every row is the shortlist */
	tl_search_full(&b, 202, &G, 1, 0, 0.0f, XMIN, UINT64_MAX, &all_rows, 1, probes + 1);
	/* two plain searches in the same pass */
	tl_search(&b, 203, &G, 1, 10, 0.0f, 2, probes);
	tl_search(&b, 204, &G, 1, 7, 0.05f, 1, probes + 3);
	passes = g->passes;
	ip_send(s, c, &b);
	UNIT_CHECK(g->passes == passes + 1, "three refining and two plain searches arriving together: one pass");
	UNIT_CHECK(refined_ok(c, 200, probes, 2, &fused, 30, 0),
			   "count_xmin 0: no entry certain, all s + k candidates refined");
	UNIT_CHECK(refined_ok(c, 201, probes + 2, 2, &fused, 30, 4000),
			   "count_xmin 4000: the cut waits for s entries certain at 4000");
	UNIT_CHECK(refined_ok(c, 202, probes + 1, 1, &all_rows, 0, XMIN),
			   "fraction 1: every searchable entry refined");
	UNIT_CHECK(ip_result_ok(c, 203, 2, probes, 10, 0.0f, NULL, ref, NT) &&
			   ip_result_ok(c, 204, 1, probes + 3, 7, 0.05f, NULL, ref, NT),
			   "the plain searches of that pass get their plain answers");
	ip_clear_out(c);

	tl_search_full(&b, 210, &G, 1, 5, 0.0f, XMIN, UINT64_MAX, &bad_m, 1, probes);
	tl_search_full(&b, 211, &G, 1, 5, 0.0f, XMIN, UINT64_MAX, &bad_f, 1, probes);
	tl_search_full(&b, 212, &G, 1, 5, 0.0f, XMIN, UINT64_MAX, &bad_k, 1, probes);
	tl_search_full(&b, 213, &G, 1, 8, 0.0f, XMIN, UINT64_MAX, &fused, 1, probes);
	ip_send(s, c, &b);
	UNIT_CHECK(ip_error_of(c, 210) == MCC_PERR_DATA && ip_error_of(c, 211) == MCC_PERR_DATA &&
			   ip_error_of(c, 212) == MCC_PERR_DATA,
			   "an unknown method, a fraction above 1, a final k of 0: DATA errors");
	UNIT_CHECK(!c->closing && refined_ok(c, 213, probes, 1, &fused, 8, XMIN),
			   "... and the connection still refines");
	ip_clear_out(c);
	eng_buf_free(&b);
	server_free(s);
}

/* Deltas, a settle that purges, the compaction: refined from the new cache. */
static void
test_after_changes(void)
{
	eng_conn   *c;
	eng_server *s = server_new(2, &c);
	eng_gallery *g = eng_gallery_get(s, &G, false);
	eng_buf		b;
	int64_t		ikeys[NI];
	int64_t		dkeys[3] = {4, 8, 12};
	uint64_t	dhash[3];
	uint64_t	xids[3] = {5001, 7000, 8000};
	uint32_t	states[3] = {MCC_XID_ABORTED, MCC_XID_COMMITTED, MCC_XID_COMMITTED};
	tl_refine_spec rf = {MCC_FUSED, 6, 0.1, 12};
	eng_cache  *before = g->cache;

	for (int i = 0; i < NI; i++)
	{
		ikeys[i] = 1000 + i;
		rows[n_rows++] = (ref_row) {1000 + i, 8000, 0, false, false, true};
	}
	for (int i = 0; i < 3; i++)
	{
		dhash[i] = mcc_template_hash(gt[dkeys[i]].b, gt[dkeys[i]].n);
		rows[dkeys[i]].dxid = 8000;
	}
	eng_buf_init(&b);
	tl_delta(&b, &G, 2, 8000, NI, ikeys, gt + NT, 3, dkeys, dhash, false);
	tl_search_full(&b, 300, &G, 2, 8, 0.0f, 9000, UINT64_MAX, &rf, NP, probes);
	ip_send(s, c, &b);
	UNIT_CHECK(refined_ok(c, 300, probes, NP, &rf, 8, 9000),
			   "after a delta: the new rows (unsettled) and the deleted ones refine with their xids");
	ip_clear_out(c);

	/* 5001 aborted: its inserts purged; 7000 committed below the horizon: purged */
	tl_settle(&b, 301, &G, 7500, 3, xids, states);
	ip_send(s, c, &b);
	for (int i = 0; i < n_rows; i++)
	{
		ref_row    *r = &rows[i];

		if (r->ixid == 5001 || r->dxid == 7000)
			r->live = false;
		if (r->ixid == 8000)
			r->ins_settled = true;
		if (r->dxid == 8000)
			r->del_committed = true;
	}
	UNIT_CHECK(g->cache != before && g->cache->n_purged == 0,
			   "the settle purged a third of the cache and a compaction replaced it");
	tl_search_full(&b, 302, &G, 2, 8, 0.0f, 9000, UINT64_MAX, &rf, NP, probes);
	tl_search_full(&b, 303, &G, 2, 8, 0.0f, 7900, UINT64_MAX, &rf, NP, probes);
	ip_send(s, c, &b);
	UNIT_CHECK(refined_ok(c, 302, probes, NP, &rf, 8, 9000) &&
			   refined_ok(c, 303, probes, NP, &rf, 8, 7900),
			   "the compacted cache refines exactly (xmin 9000 and 7900), settled flags reported");
	ip_clear_out(c);
	eng_buf_free(&b);
	server_free(s);
}

/* Pump until gallery g's pass has handed its shortlists to a rescoring job. */
static bool
pump_to_rescoring(eng_server *s, eng_gallery *g)
{
	eng_server_step(s);
	while (g->rescoring == NULL && s->jobs > 0)
		eng_server_pump(s, 1000);
	return g->rescoring != NULL;
}

/* CANCEL and a closed connection while the rescoring job runs. */
static void
test_cancel(void)
{
	eng_conn   *c;
	eng_server *s = server_new(1, &c);
	eng_gallery *g = eng_gallery_get(s, &G, false);
	eng_conn   *x;
	eng_buf		b;
	tl_refine_spec slow = {MCC_LSA_DTR, 5, 1.0, 0};
	tl_refine_spec rf = {MCC_LSS_DTR, 5, 0.1, 10};
	bool		caught;

	eng_buf_init(&b);
	tl_search_full(&b, 400, &G, 1, 0, 0.0f, XMIN, UINT64_MAX, &slow, NP, probes);
	ip_feed(s, c, &b);
	caught = pump_to_rescoring(s, g);
	UNIT_CHECK(caught && g->cache->pins == 1,
			   "a refining search's pass ends, its rescoring runs with the cache pinned");
	tl_cancel(&b, 400);
	ip_send(s, c, &b);
	UNIT_CHECK(ip_reply(c, 400, NULL, NULL) == 0 && g->rescoring == NULL && g->running == NULL &&
			   s->jobs == 0 && g->cache->pins == 0,
			   "cancelled during its rescoring: never answered, the job gone, the cache unpinned");

	x = eng_conn_add(s, -1);
	tl_search_full(&b, 410, &G, 1, 0, 0.0f, XMIN, UINT64_MAX, &slow, NP, probes);
	ip_feed(s, x, &b);
	caught = pump_to_rescoring(s, g);
	eng_conn_close(s, x);
	ip_pump_all(s);
	tl_search_full(&b, 411, &G, 1, 8, 0.0f, XMIN, UINT64_MAX, &rf, 2, probes);
	ip_send(s, c, &b);
	UNIT_CHECK(caught && g->rescoring == NULL && s->jobs == 0 && g->cache->pins == 0 &&
			   refined_ok(c, 411, probes, 2, &rf, 8, XMIN),
			   "a connection closed during a rescoring: dropped, the engine refines on");
	ip_clear_out(c);
	eng_buf_free(&b);
	server_free(s);
}

/*
 * The refining replies' stages (eng_rstage): each stamp set and in order
 * (no stage below 0), the stages that follow one another together within
 * the whole from SEARCH to RESULT, the count within its pass.
 */
static bool
stages_ok(const eng_server *s)
{
	int64_t		staged = 0;

	for (int i = 0; i < ENG_RSTAGES; i++)
	{
		if (s->refined_stage_usec[i] < 0)
			return false;
		if (i < ENG_RS_GPU)
			staged += s->refined_stage_usec[i];
	}
	return staged <= s->refined_usec &&
		s->refined_stage_usec[ENG_RS_COUNT] <= s->refined_stage_usec[ENG_RS_PASS];
}

/*
 * The next pass searches while a pass's shortlists are rescored: it starts
 * at once, and every answer of both equals the reference (whichever of the
 * two ends first). A delta waiting to be applied keeps the next pass back
 * until the rescoring has ended, so the delta is applied between passes and
 * a search of its generation sees it.
 */
static void
test_overlap(void)
{
	eng_conn   *c;
	eng_server *s = server_new(1, &c);
	eng_gallery *g = eng_gallery_get(s, &G, false);
	eng_buf		b;
	tl_refine_spec slow = {MCC_LSA_DTR, 5, 1.0, 0};
	tl_refine_spec rf = {MCC_FUSED, 6, 0.1, 12};
	tl_entry	ref[NT];
	int64_t		ikeys[NI];
	uint64_t	passes;
	bool		caught;
	bool		beside;

	for (int i = 0; i < NT; i++)
		ref[i] = (tl_entry) {rows[i].key, &gt[i], true};
	eng_buf_init(&b);
	tl_search_full(&b, 500, &G, 1, 0, 0.0f, XMIN, UINT64_MAX, &slow, 2, probes);
	ip_feed(s, c, &b);
	caught = pump_to_rescoring(s, g);
	passes = g->passes;
	tl_search(&b, 501, &G, 1, 10, 0.0f, 2, probes + 2);
	tl_search_full(&b, 502, &G, 1, 8, 0.0f, XMIN, UINT64_MAX, &rf, NP, probes);
	ip_feed(s, c, &b);
	eng_server_step(s);
	beside = g->passes == passes + 1 && g->rescoring != NULL;
	ip_pump_all(s);
	UNIT_CHECK(caught && beside, "a pass starts while the previous pass's shortlists are rescored");
	UNIT_CHECK(refined_ok(c, 500, probes, 2, &slow, 0, XMIN) &&
			   ip_result_ok(c, 501, 2, probes + 2, 10, 0.0f, NULL, ref, NT) &&
			   refined_ok(c, 502, probes, NP, &rf, 8, XMIN),
			   "... the rescored pass, and the plain and refining searches of the pass beside it, "
			   "each get the reference answer");
	UNIT_CHECK(g->running == NULL && g->rescored == NULL && g->rescoring == NULL &&
			   g->cache->pins == 0 && s->jobs == 0,
			   "... both passes ended, the cache unpinned");
	UNIT_CHECK(s->refined == 2 && stages_ok(s),
			   "... the two refining replies timed stage by stage (the plain one not): no stage "
			   "below 0, together within the whole, the count within its pass");
	ip_clear_out(c);

	/* a delta arrives during a rescoring: no pass beside it */
	tl_search_full(&b, 510, &G, 1, 0, 0.0f, XMIN, UINT64_MAX, &slow, 2, probes);
	ip_feed(s, c, &b);
	caught = pump_to_rescoring(s, g);
	passes = g->passes;
	for (int i = 0; i < NI; i++)
	{
		ikeys[i] = 1000 + i;
		rows[n_rows++] = (ref_row) {1000 + i, 8000, 0, false, false, true};
	}
	tl_delta(&b, &G, 2, 8000, NI, ikeys, gt + NT, 0, NULL, NULL, false);
	tl_search_full(&b, 511, &G, 1, 8, 0.0f, 9000, UINT64_MAX, &rf, NP, probes);
	tl_search_full(&b, 512, &G, 2, 8, 0.0f, 9000, UINT64_MAX, &rf, NP, probes);
	ip_feed(s, c, &b);
	eng_server_step(s);
	beside = g->passes != passes || g->running != NULL;
	ip_pump_all(s);
	UNIT_CHECK(caught && !beside && g->cache->applied_gen == 2,
			   "a delta waiting for the cache: no pass beside the rescoring, the delta applied after it");
	/* 511 (generation 1) was served after the delta was applied: the new rows are in it too */
	n_rows -= NI;				/* 510's pass saw the rows before the delta */
	beside = refined_ok(c, 510, probes, 2, &slow, 0, XMIN);
	n_rows += NI;
	UNIT_CHECK(beside && refined_ok(c, 511, probes, NP, &rf, 8, 9000) &&
			   refined_ok(c, 512, probes, NP, &rf, 8, 9000),
			   "... and every answer equals the reference of the rows it saw");
	ip_clear_out(c);
	eng_buf_free(&b);
	server_free(s);
}

/*
 * A job whose GPU stage rescored some probes: the CPU stage that follows
 * (eng_rescore_next: the probes of methods the GPU does not run) scores
 * only its own probes' pairs and leaves the GPU's scores as they are. The
 * layout of test_methods on the GPU path: CPU probes (lsa-dtr, then
 * consolidation) each followed by GPU probes (lgs ..., fused), 13 pairs per
 * probe so that a probe's last part is short. Run on the CPU alone: the GPU
 * stage's scores are set by hand.
 */
static void
test_cpu_stage_after_gpu(void)
{
	enum {NPR = 5, NPE = 13};
	static const mcc_method meth[NPR] = {MCC_LSA_DTR, MCC_LGS, MCC_LGS_DTR, MCC_CONSOLIDATION, MCC_FUSED};
	static const bool on_gpu[NPR] = {false, true, true, false, true};
	eng_conn   *c;
	eng_server *s = server_new(1, &c);
	eng_gallery *g = eng_gallery_get(s, &G, false);
	eng_rescore *rs = eng_rescore_new(g->cache, NPR);
	mcc_match_work *w = malloc(mcc_match_work_size());
	uint32_t	entries[NPE];
	bool		gpu_kept = true;
	bool		cpu_ok = true;

	mcc_match_work_init(w);
	for (int i = 0; i < NPE; i++)
		entries[i] = (uint32_t) (7 * i + 3);
	for (int i = 0; i < NPR; i++)
	{
		const tl_tpl *t = &probes[i % NP];

		eng_rescore_set(rs, (uint32_t) i, t->b, (uint32_t) t->n, meth[i], entries, NPE, NULL);
		rs->probes[i].on_gpu = on_gpu[i];
		for (int j = 0; on_gpu[i] && j < NPE; j++)
			rs->pairs[rs->probes[i].first + j].score = 100.0f + (float) (i * NPE + j);
	}
	eng_rescore_run_here(rs);
	for (int i = 0; i < NPR; i++)
	{
		mcc_template_view pv = tl_view(&probes[i % NP]);

		for (int j = 0; j < NPE; j++)
		{
			float		got = rs->pairs[rs->probes[i].first + j].score;
			int64_t		key = g->cache->entries[entries[j]].key;
			mcc_template_view cv = tl_view(&gt[key]);
			float		want;
			mcc_error	err;

			if (on_gpu[i])
				gpu_kept = gpu_kept && got == 100.0f + (float) (i * NPE + j);
			else
				cpu_ok = cpu_ok && mcc_match_pair(w, &pv, &cv, meth[i], NULL, &want, &err) == MCC_OK &&
					memcmp(&want, &got, sizeof(float)) == 0;
		}
	}
	UNIT_CHECK(gpu_kept && cpu_ok && !rs->fail.failed,
			   "the CPU stage after a GPU stage scores its own probes (mcc_match_pair's scores) and "
			   "leaves the GPU's scores of the probes between them alone");
	free(w);
	eng_rescore_free(rs);
	server_free(s);
}

/* One round of refining searches with fused (on the GPU) and lsa-dtr (not). */
static bool
refine_round(eng_server *s, eng_conn *c, uint64_t rid)
{
	eng_buf		b;
	tl_refine_spec fused = {MCC_FUSED, 6, 0.1, 12};
	tl_refine_spec dtr = {MCC_LSS_DTR, 4, 0.05, 8};
	bool		ok;

	eng_buf_init(&b);
	tl_search_full(&b, rid, &G, 1, 8, 0.0f, XMIN, UINT64_MAX, &fused, NP, probes);
	tl_search_full(&b, rid + 1, &G, 1, 12, 0.0f, XMIN, UINT64_MAX, &dtr, 2, probes + 1);
	ip_send(s, c, &b);
	ok = refined_ok(c, rid, probes, NP, &fused, 8, XMIN) &&
		refined_ok(c, rid + 1, probes + 1, 2, &dtr, 12, XMIN);
	ip_clear_out(c);
	eng_buf_free(&b);
	return ok;
}

/* Rescoring on the GPU: counters, failures, the CPU fallback (--gpu only). */
static void
test_gpu_refine(void)
{
	eng_conn   *c;
	eng_server *s = server_new(2, &c);
	eng_gpu_stats st0;
	eng_gpu_stats st1;
	eng_gpu_stats before;
	bool		ok;

	st0 = ip_gpu_stats(s);
	ok = refine_round(s, c, 500);
	st1 = ip_gpu_stats(s);
	UNIT_CHECK(ok && st1.refines == st0.refines + 1 && st1.refine_pairs > st0.refine_pairs &&
			   st1.refine_fallbacks == 0 && st1.refine_attached >= NT,
			   "fused and lss-dtr searches of one pass: one rescoring job on the GPU (%llu pairs), "
			   "answers equal to the reference",
			   (unsigned long long) (st1.refine_pairs - st0.refine_pairs));

	eng_gpu_test_inject_refine(s->gpu, ENG_GPU_FAULT_CUDA);
	st0 = ip_gpu_stats(s);
	before = st0;
	ok = refine_round(s, c, 510);
	st1 = ip_gpu_stats(s);
	UNIT_CHECK(ok && st1.refine_fallbacks == st0.refine_fallbacks + 1 && st1.refines == st0.refines,
			   "a CUDA error in a rescoring: the job runs again on the CPU threads, same answers");
	st0 = st1;
	ok = refine_round(s, c, 520);
	st1 = ip_gpu_stats(s);

	/*
	 * The error closed the cache's context; the gallery's GPU sync (when
	 * the pass ended, or this round's pass) uploaded the copy again, which
	 * drops the refinement data: the sync (eng_gpu_prepare_refinement) or
	 * this round's job sent it afresh.
	 */
	UNIT_CHECK(ok && st1.refines == st0.refines + 1 && st1.refine_fallbacks == st0.refine_fallbacks &&
			   st1.uploads > before.uploads && st1.refine_attached >= before.refine_attached + NT,
			   "... and the next one is on the GPU again (the copy uploaded afresh, its refinement data sent again)");

	eng_gpu_test_inject_refine(s->gpu, ENG_GPU_FAULT_PROBE);
	st0 = ip_gpu_stats(s);
	ok = refine_round(s, c, 530) && refine_round(s, c, 540);
	st1 = ip_gpu_stats(s);
	UNIT_CHECK(ok && st1.refine_fallbacks == st0.refine_fallbacks + 1 &&
			   st1.refines == st0.refines && st1.passes >= st0.passes + 2,
			   "data the refinement library refuses: this cache rescored on the CPU from then on "
			   "(its searches still on the GPU), same answers");
	server_free(s);

	gpu_refine_off = true;
	s = server_new(2, &c);
	st0 = ip_gpu_stats(s);
	ok = refine_round(s, c, 550);
	st1 = ip_gpu_stats(s);
	UNIT_CHECK(ok && st1.refines == 0 && st1.passes > st0.passes,
			   "--gpu-refine off: passes on the GPU, rescoring on the CPU threads, same answers");
	server_free(s);
	gpu_refine_off = false;
}

/* Is refined hit a before b in the final ranking (score desc, key asc)? */
static bool
ranks_before(const tl_rhit *a, const tl_rhit *b)
{
	if (a->refined != b->refined)
		return a->refined > b->refined;
	return a->key < b->key;
}

/*
 * The TOP reply of probe i against its whole shortlist `full`: the best
 * final_k of it in ranking order, every field equal. True when it is one.
 */
static bool
top_matches(const tl_rprobe *full, const tl_rprobe *top, uint32_t final_k)
{
	tl_rhit	   *sorted = malloc(sizeof(tl_rhit) * (full->n + 1));
	uint32_t	t = final_k < full->n ? final_k : full->n;
	bool		ok;

	memcpy(sorted, full->h, sizeof(tl_rhit) * full->n);
	/* insertion sort: a few hundred candidates */
	for (uint32_t i = 1; i < full->n; i++)
	{
		tl_rhit		x = sorted[i];
		uint32_t	j = i;

		while (j > 0 && ranks_before(&x, &sorted[j - 1]))
		{
			sorted[j] = sorted[j - 1];
			j--;
		}
		sorted[j] = x;
	}
	ok = top->more == (MCC_RESULT_MORE | MCC_RESULT_TOP) && top->total == full->n && top->n == t &&
		memcmp(top->h, sorted, sizeof(tl_rhit) * t) == 0;
	free(sorted);
	return ok;
}

/*
 * MCC_REFINE_F_TOP: a gallery whose versions are all certain gets, per
 * probe, the best final_k of the very shortlist a whole reply holds; where
 * the shortlist holds uncertain versions (the mixed gallery), or final_k is
 * not below it, the reply is the whole one, byte for byte.
 */
static void
test_top(void)
{
	tl_refine_spec rf = {MCC_FUSED, 5, 0.2, 10};
	tl_refine_spec rf_top = {MCC_FUSED | MCC_REFINE_F_TOP, 5, 0.2, 10};
	tl_refine_spec big = {MCC_FUSED, 400, 0.2, 10};
	tl_refine_spec big_top = {MCC_FUSED | MCC_REFINE_F_TOP, 400, 0.2, 10};
	bool		ok = true;
	int			tops = 0;

	for (int pass = 0; pass < 2; pass++)
	{
		eng_conn   *c;
		eng_server *s;
		eng_buf		b;
		tl_frame	f[4];
		uint8_t    *cp[4];
		tl_rprobe		got[4][NP];
		uint64_t	searchable;

		all_certain = pass == 0;
		s = server_new(2, &c);
		eng_buf_init(&b);
		tl_search_full(&b, 600, &G, 1, 8, 0.0f, XMIN, UINT64_MAX, &rf, NP, probes);
		tl_search_full(&b, 601, &G, 1, 8, 0.0f, XMIN, UINT64_MAX, &rf_top, NP, probes);
		tl_search_full(&b, 602, &G, 1, 8, 0.0f, XMIN, UINT64_MAX, &big, NP, probes);
		tl_search_full(&b, 603, &G, 1, 8, 0.0f, XMIN, UINT64_MAX, &big_top, NP, probes);
		ip_send(s, c, &b);
		memset(got, 0, sizeof(got));
		memset(cp, 0, sizeof(cp));
		for (int q = 0; q < 4; q++)
		{
			bool		parsed = ip_reply(c, 600 + (uint64_t) q, &f[q], &cp[q]) == 1 &&
				parse_rresult(&f[q], NP, &searchable, got[q]);

			ok = ok && parsed;
		}
		for (int i = 0; ok && i < NP; i++)
		{
			if (got[1][i].more & MCC_RESULT_TOP)
			{
				ok = pass == 0 && top_matches(&got[0][i], &got[1][i], rf.final_k);
				tops++;
			}
			else
				ok = pass == 1 && got[1][i].n == got[0][i].n &&
					memcmp(got[1][i].h, got[0][i].h, sizeof(tl_rhit) * got[0][i].n) == 0;
			if (!ok)
				printf("# pass %d probe %d: TOP reply of %u (more %u, total %u) against %u\n",
					   pass, i, got[1][i].n, got[1][i].more, got[1][i].total, got[0][i].n);
		}
		/* final_k 400 is not below the shortlist: whole replies, byte for byte */
		ok = ok && f[2].h.length == f[3].h.length && memcmp(f[2].p, f[3].p, f[2].h.length) == 0;
		for (int q = 0; q < 4; q++)
		{
			free_rprobes(got[q], NP);
			free(cp[q]);
		}
		eng_buf_free(&b);
		server_free(s);
	}
	all_certain = false;
	UNIT_CHECK(ok && tops == NP,
			   "MCC_REFINE_F_TOP: every probe of a certain gallery gets the best final_k of its "
			   "whole shortlist (%d), a mixed gallery and a final_k over the shortlist whole replies", tops);
}

int
main(int argc, char **argv)
{
	tl_tpl	   *other;

	eng_log_set_level(ENG_LOG_ERROR);
	mcc_lss_init();
	if (ip_gpu_option(argc, argv, &gpu_mode, &gpu_parts) < 0)
	{
		UNIT_SKIP("no usable GPU%s: refining searches on the GPU path are skipped", ip_no_gpu_why());
		return unit_done();
	}
	gt = tl_templates(51, NT + NI, 30);
	other = tl_templates(52, 2, 0);
	/* two probes that are gallery templates, two that are not */
	probes[0] = gt[9];
	probes[1] = gt[NT + 3];
	probes[2] = other[0];
	probes[3] = other[1];

	test_methods(1);
	test_methods(2);
	test_methods(3);
	test_cut_and_batch();
	test_after_changes();
	test_cancel();
	test_overlap();
	test_cpu_stage_after_gpu();
	test_top();
	if (gpu_mode != ENG_GPU_OFF)
		test_gpu_refine();

	tl_templates_free(gt, NT + NI);
	tl_templates_free(other, 2);
	return unit_done();
}
