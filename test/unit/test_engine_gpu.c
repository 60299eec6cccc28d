/*
 * test_engine_gpu.c: the matcher engine's GPU path (src/engine/eng_gpu.c),
 * in process. Run by make gpu-check, linked with the GPU library; in
 * make unit (built without it) and on a machine without a GPU every check
 * skips and says why.
 *
 *   - every score of the GPU copy of a cache equals mcc_soa_scan over the
 *     cache, after a load, after deltas (appends), settles (tombstones) and
 *     a compaction (a new upload), and equals a fresh full upload: the
 *     incremental updates equal a reload; on one and on three partitions;
 *   - every SEARCH answered on the GPU equals the brute-force reference
 *     (hits, scores, keys, hashes, `more`) for several k and min_score,
 *     one batch of many probes equals the probes one by one, and versions
 *     of one key with equal scores and different hashes are cut exactly
 *     where the CPU path cuts them (the engine asks again);
 *   - fallbacks: profile tpami2010 stays on the CPU; an injected CUDA error
 *     or bad probe sends that search to the CPU and the next one back to
 *     the GPU; out of GPU memory (a tiny --gpu-memory-limit) keeps the
 *     gallery on the CPU with one WARNING; a kernel fault (a sticky error)
 *     closes every context, one WARNING, the CPU for the rest of the
 *     process (last, since the process's CUDA context is lost);
 *   - --no-device (run with CUDA_VISIBLE_DEVICES=): no GPU found, the
 *     engine serves on the CPU; with --gpu on that is an error-level line.
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
#include "mcc_soa.h"

#define NT	600					/* gallery templates */
#define NX	40					/* delta templates */
#define NP	12					/* probes */

static tl_tpl *gt;
static tl_tpl *xt;
static tl_tpl *pt;
static const mcc_gallery_id G = {7, 24576, 99};

#define REF_CAP (NT + NX + 64)
#include "engine_ref.h"

/* A server whose passes go to the GPU (partitions: 0 = one per device). */
static void
server(eng_server *s, int partitions, uint64_t gpu_limit)
{
	eng_config	cfg = {.threads = 2, .delta_timeout_ms = 2000, .max_batch = 64,
	.gpu = ENG_GPU_ON, .gpu_memory_limit = gpu_limit, .gpu_partitions = partitions};

	eng_server_init(s, &cfg);
}

/* LOAD of the reference's live rows at generation gen, profile prof_id. */
static void
load_ref(eng_server *s, eng_conn *c, uint64_t rid, uint64_t gen, const uint64_t *ixid,
		 uint32_t prof_id)
{
	eng_buf		b;

	eng_buf_init(&b);
	ref_load_frames(&b, rid, gen, ixid, prof_id);
	ip_send(s, c, &b);
	eng_buf_free(&b);
}

/* A server on the GPU (one partition), the reference loaded: its connection. */
static eng_conn *
server_loaded(eng_server *s, uint32_t prof_id)
{
	eng_conn   *c;

	server(s, 0, 0);
	c = eng_conn_add(s, -1);
	load_ref(s, c, 1, 1, NULL, prof_id);
	return c;
}

/* The current cache of G. */
static eng_cache *
cache_of(eng_server *s)
{
	eng_gallery *g = eng_gallery_get(s, &G, false);

	return g ? g->cache : NULL;
}

/* STATUS's device name of the current cache. */
static const char *
device_of(eng_server *s)
{
	static char dev[32];
	uint64_t	bytes;

	eng_gpu_describe(s->gpu, cache_of(s), dev, sizeof(dev), &bytes);
	return dev;
}

/*
 * Every score of probes pt[0..np) on the cache's GPU copy (incremental),
 * on a fresh full upload, and by mcc_soa_scan (tombstones: -1 on the GPU):
 * the number of differences.
 */
static uint64_t
score_diffs(eng_server *s, int np, uint64_t *compared)
{
	eng_cache  *c = cache_of(s);
	uint32_t	n = c->soa.n_tpl;
	float	   *inc = malloc(sizeof(float) * n);
	float	   *fresh = malloc(sizeof(float) * n);
	float	   *cpu = malloc(sizeof(float) * n);
	mcc_probe  *q = aligned_alloc(64, (mcc_probe_size() + 63) & ~(size_t) 63);
	uint64_t	diffs = 0;
	mcc_error	err;

	*compared = 0;
	for (int p = 0; p < np; p++)
	{
		mcc_template_view v;

		mcc_template_open(pt[p].b, pt[p].n, &v, &err);
		mcc_probe_init(q, &v);
		mcc_soa_scan(q, &c->soa, 0, n, cpu);
		if (!eng_gpu_test_scores(s->gpu, c, pt[p].b, (uint32_t) pt[p].n, false, inc, &err) ||
			!eng_gpu_test_scores(s->gpu, c, pt[p].b, (uint32_t) pt[p].n, true, fresh, &err))
		{
			printf("# GPU scores failed: %s\n", err.message);
			diffs += n;
			continue;
		}
		for (uint32_t i = 0; i < n; i++)
		{
			float		want = (c->entries[i].flags & ENG_E_PURGED) ? -1.0f : cpu[i];

			if (inc[i] != want || fresh[i] != want)
			{
				if (diffs < 5)
					printf("# probe %d entry %u: cpu %.9g, gpu %.9g, fresh upload %.9g\n",
						   p, i, want, inc[i], fresh[i]);
				diffs++;
			}
		}
		*compared += n;
	}
	free(inc);
	free(fresh);
	free(cpu);
	free(q);
	return diffs;
}

/* Searches of several shapes on the current state, each against the reference. */
static bool
searches_ok(eng_server *s, eng_conn *c, uint64_t gen, uint64_t rid0)
{
	static const uint32_t ks[] = {1, 10, 50, 0, NT + NX + 64};
	static const float mins[] = {0.0f, 0.0f, 0.12f, 0.0f, 0.05f};
	eng_buf		b;
	bool		ok = true;

	eng_buf_init(&b);
	for (int i = 0; i < 5; i++)
		tl_search(&b, rid0 + i, &G, gen, ks[i], mins[i], 3, pt + (i % 4) * 3);
	ip_send(s, c, &b);
	for (int i = 0; i < 5; i++)
		if (!result_ok(c, rid0 + i, 3, pt + (i % 4) * 3, ks[i], mins[i], NULL))
		{
			printf("# search %d (k %u, min_score %.2f) differs\n", i, ks[i], mins[i]);
			ok = false;
		}
	ip_clear_out(c);
	eng_buf_free(&b);
	return ok;
}

/* Load, deltas, settle and compaction on `parts` partitions. */
static void
test_updates(int parts)
{
	eng_server	s;
	eng_conn   *c;
	eng_buf		b;
	eng_gpu_stats st0;
	eng_gpu_stats st;
	uint64_t	ix[NT + NX + 64];
	uint64_t	cmp;
	uint64_t	d;
	int64_t		keys[NX];
	int64_t		dk[NT];
	uint64_t	dh[NT];
	int			nd = 0;
	char		what[48];

	snprintf(what, sizeof(what), "%d partition(s)", parts ? parts : 1);
	ref_all();
	for (int i = 0; i < n_ref; i++)
		ix[i] = i % 10 == 2 ? 9 : 10;
	server(&s, parts, 0);
	c = eng_conn_add(&s, -1);
	load_ref(&s, c, 1, 1, ix, MCC_PROFILE_DEFAULT);
	st = ip_gpu_stats(&s);
	UNIT_CHECK(st.uploads == 1 && strcmp(device_of(&s), "cpu") != 0,
			   "%s: the load is uploaded at once (device %s)", what, device_of(&s));
	d = score_diffs(&s, 4, &cmp);
	UNIT_CHECK(d == 0 && cmp > 0, "%s: after the load, %llu scores equal mcc_soa_scan's",
			   what, (unsigned long long) cmp);
	st0 = ip_gpu_stats(&s);
	UNIT_CHECK(searches_ok(&s, c, 1, 100), "%s: searches after the load equal brute force", what);
	st = ip_gpu_stats(&s);
	UNIT_CHECK(st.passes == st0.passes + 1 && st.fallbacks == 0,
			   "%s: 5 searches arriving together: one GPU pass", what);

	/* inserts (appends), then deletes of loaded rows (still searchable) */
	eng_buf_init(&b);
	for (int i = 0; i < NX; i++)
		keys[i] = 1000 + i;
	tl_delta(&b, &G, 2, 600, NX / 2, keys, xt, 0, NULL, NULL, false);
	tl_delta(&b, &G, 3, 601, NX / 2, keys + NX / 2, xt + NX / 2, 0, NULL, NULL, false);
	for (int i = 0; i < NX; i++)
		ref_add(keys[i], &xt[i]);
	for (int i = 0; i < NT; i += 13)
	{
		dk[nd] = ref[i].key;
		dh[nd] = mcc_template_hash(ref[i].t->b, ref[i].t->n);
		nd++;
	}
	tl_delta(&b, &G, 4, 602, 0, NULL, NULL, nd, dk, dh, false);
	ip_send(&s, c, &b);
	UNIT_CHECK(searches_ok(&s, c, 4, 200), "%s: after 3 deltas, searches equal brute force", what);
	st = ip_gpu_stats(&s);
	UNIT_CHECK(st.appends >= 1 && st.uploads == 1, "%s: deltas appended (%llu appends), no reload",
			   what, (unsigned long long) st.appends);

	/*
	 * settle: xid 9 aborted (its rows purged), the deletes committed below
	 * the horizon (purged): 16% tombstones, too few to compact
	 */
	{
		uint64_t	xids[3] = {9, 10, 602};
		uint32_t	sts[3] = {MCC_XID_ABORTED, MCC_XID_COMMITTED, MCC_XID_COMMITTED};

		tl_settle(&b, 300, &G, 1000, 3, xids, sts);
		ip_send(&s, c, &b);
		for (int i = 0; i < NT; i++)
			if (i % 10 == 2 || i % 13 == 0)
				ref[i].live = false;
	}
	UNIT_CHECK(searches_ok(&s, c, 4, 400), "%s: after the settle, searches equal brute force", what);
	st = ip_gpu_stats(&s);
	UNIT_CHECK(cache_of(&s)->n_purged > 0 && st.removes > 0 && st.uploads == 1,
			   "%s: %u tombstones sent to the GPU without a reload", what, cache_of(&s)->n_purged);
	d = score_diffs(&s, 4, &cmp);
	UNIT_CHECK(d == 0 && cmp > 0,
			   "%s: appended + tombstoned copy equals a full upload and mcc_soa_scan (%llu scores)",
			   what, (unsigned long long) cmp);

	/* a third of the rest deleted and purged: compaction, a new cache, a new upload */
	nd = 0;
	for (int i = 0; i < n_ref; i++)
		if (ref[i].live && i % 3 == 1)
		{
			dk[nd] = ref[i].key;
			dh[nd] = mcc_template_hash(ref[i].t->b, ref[i].t->n);
			nd++;
			ref[i].live = false;
		}
	tl_delta(&b, &G, 5, 603, 0, NULL, NULL, nd, dk, dh, false);
	{
		uint64_t	xids[1] = {603};
		uint32_t	sts[1] = {MCC_XID_COMMITTED};

		tl_settle(&b, 500, &G, 1000, 1, xids, sts);
	}
	ip_send(&s, c, &b);
	ip_pump_all(&s);
	st = ip_gpu_stats(&s);
	UNIT_CHECK(cache_of(&s)->n_purged == 0 && st.uploads == 2,
			   "%s: compacted to %u entries, uploaded again", what, cache_of(&s)->soa.n_tpl);
	UNIT_CHECK(searches_ok(&s, c, 5, 600), "%s: after compaction, searches equal brute force", what);
	d = score_diffs(&s, 4, &cmp);
	UNIT_CHECK(d == 0 && cmp > 0, "%s: after compaction, %llu scores equal",
			   what, (unsigned long long) cmp);
	st = ip_gpu_stats(&s);
	UNIT_CHECK(st.fallbacks == 0 && eng_gpu_usable(s.gpu), "%s: no search left the GPU", what);
	eng_buf_free(&b);
	eng_server_destroy(&s);
}

/* One SEARCH of NP probes (one pass) equals NP searches one by one, mixed k. */
static void
test_batches(void)
{
	eng_server	s;
	eng_conn   *c;
	eng_buf		b;
	eng_gpu_stats st0;
	eng_gpu_stats st;
	bool		ok = true;

	ref_all();
	c = server_loaded(&s, MCC_PROFILE_DEFAULT);
	eng_buf_init(&b);
	st0 = ip_gpu_stats(&s);
	tl_search(&b, 10, &G, 1, 20, 0.0f, NP, pt);
	for (int i = 0; i < NP; i++)
		tl_search(&b, 20 + i, &G, 1, (uint32_t) (5 + 7 * i), 0.0f, 1, pt + i);
	ip_send(&s, c, &b);
	st = ip_gpu_stats(&s);
	ok = result_ok(c, 10, NP, pt, 20, 0.0f, NULL);
	for (int i = 0; i < NP; i++)
		ok = ok && result_ok(c, 20 + i, 1, pt + i, (uint32_t) (5 + 7 * i), 0.0f, NULL);
	UNIT_CHECK(ok && st.passes == st0.passes + 1,
			   "%d probes in one SEARCH and %d searches of other k: one GPU pass, all equal brute force",
			   NP, NP);
	ip_clear_out(c);
	s.cfg.max_batch = 1;
	for (int i = 0; i < NP; i++)
		tl_search(&b, 40 + i, &G, 1, 20, 0.0f, 1, pt + i);
	ip_send(&s, c, &b);
	ok = true;
	for (int i = 0; i < NP; i++)
		ok = ok && result_ok(c, 40 + i, 1, pt + i, 20, 0.0f, NULL);
	st0 = st;
	st = ip_gpu_stats(&s);
	UNIT_CHECK(ok && st.passes == st0.passes + NP, "batching off: %d GPU passes, same results", NP);
	ip_clear_out(c);
	eng_buf_free(&b);
	eng_server_destroy(&s);
}

/* A copy of t whose header (dpi) differs: same cylinders, another hash. */
static tl_tpl
variant(const tl_tpl *t, uint16_t dpi)
{
	tl_tpl		v = {malloc(t->n), t->n};

	memcpy(v.b, t->b, t->n);
	memcpy(v.b + 12, &dpi, 2);
	return v;
}

/*
 * Versions of one key with equal scores and different hashes: the CPU path
 * returns the smallest hashes first; the GPU must cut them the same way.
 */
static void
test_ties(void)
{
	eng_server	s;
	eng_conn   *c;
	eng_buf		b;
	tl_tpl		v[20];
	eng_gpu_stats st;
	bool		ok = true;
	bool		distinct = true;
	uint64_t	rid = 10;

	ref_reset();
	for (int i = 0; i < 60; i++)
		ref_add(i, &gt[i]);
	for (int i = 0; i < 12; i++)
	{
		v[i] = variant(&pt[0], (uint16_t) (500 + 37 * i));
		ref_add(7, &v[i]);
	}
	for (int i = 12; i < 20; i++)
	{
		v[i] = variant(&pt[0], (uint16_t) (900 + 11 * i));
		ref_add(3, &v[i]);
	}
	for (int i = 0; i < 20; i++)
		for (int j = 0; j < i; j++)
			distinct = distinct && mcc_template_hash(v[i].b, v[i].n) != mcc_template_hash(v[j].b, v[j].n);
	UNIT_CHECK(distinct, "20 versions of keys 3 and 7: equal cylinders, distinct hashes");
	c = server_loaded(&s, MCC_PROFILE_DEFAULT);
	eng_buf_init(&b);
	for (uint32_t k = 1; k <= 24; k++)
		tl_search(&b, rid++, &G, 1, k, 0.0f, 1, pt);
	tl_search(&b, rid++, &G, 1, 10, 0.999f, 1, pt);
	ip_send(&s, c, &b);
	rid = 10;
	for (uint32_t k = 1; k <= 24; k++)
		ok = result_ok(c, rid++, 1, pt, k, 0.0f, NULL) && ok;
	ok = result_ok(c, rid++, 1, pt, 10, 0.999f, NULL) && ok;
	st = ip_gpu_stats(&s);
	UNIT_CHECK(ok && st.fallbacks == 0,
			   "k = 1 .. 24 over 8 + 12 tied versions: equal to brute force, on the GPU");
	UNIT_CHECK(st.requeries > 0, "ties at the cut were asked again (%llu times)",
			   (unsigned long long) st.requeries);
	ip_clear_out(c);
	eng_buf_free(&b);
	eng_server_destroy(&s);
	for (int i = 0; i < 20; i++)
		free(v[i].b);
}

/* Templates of profile tpami2010 (the GPU kernels are gpu2015 only). */
static void
test_tpami(void)
{
	const mcc_profile *p = mcc_profile_by_id(MCC_PROFILE_TPAMI2010);
	tl_tpl		t[60];
	eng_server	s;
	eng_conn   *c;
	eng_buf		b;
	tg_rng		r = {77};
	eng_gpu_stats st;
	bool		ok;

	for (int i = 0; i < 60; i++)
	{
		mcc_minutiae ms;
		mcc_error	err;

		do
		{
			tg_minutiae(&r, &ms, 20, 50, 12.0);
			t[i].n = 0;
			t[i].b = NULL;
			if (mcc_template_build(&ms, p, NULL, &t[i].n, &err) == MCC_OK)
			{
				t[i].b = calloc(1, t[i].n);
				if (mcc_template_build(&ms, p, t[i].b, &t[i].n, &err) != MCC_OK)
				{
					free(t[i].b);
					t[i].b = NULL;
				}
			}
		} while (t[i].b == NULL);
	}
	ref_reset();
	for (int i = 0; i < 50; i++)
		ref_add(i, &t[i]);
	c = server_loaded(&s, MCC_PROFILE_TPAMI2010);
	eng_buf_init(&b);
	tl_search(&b, 2, &G, 1, 10, 0.0f, 10, t + 50);
	ip_send(&s, c, &b);
	ok = result_ok(c, 2, 10, t + 50, 10, 0.0f, NULL);
	st = ip_gpu_stats(&s);
	UNIT_CHECK(ok && st.passes == 0 && st.uploads == 0 && strcmp(device_of(&s), "cpu") == 0,
			   "profile tpami2010: searched on the CPU, nothing uploaded, equal to brute force");
	eng_buf_free(&b);
	eng_server_destroy(&s);
	for (int i = 0; i < 60; i++)
		free(t[i].b);
}

/* Log lines written while capturing (eng_log writes to fd 2). */
static int	cap_saved = -1;
static char cap_path[64];

static void
capture_start(void)
{
	int			fd;

	strcpy(cap_path, "/tmp/mcc-gpu-log.XXXXXX");
	fd = mkstemp(cap_path);
	fflush(stderr);
	cap_saved = dup(2);
	dup2(fd, 2);
	close(fd);
	eng_log_set_level(ENG_LOG_INFO);
}

/* Stop capturing; the captured text in out (cut to cap - 1 bytes). */
static void
capture_read(char *out, size_t cap)
{
	FILE	   *f;
	size_t		n = 0;

	eng_log_set_level(ENG_LOG_ERROR);
	dup2(cap_saved, 2);
	close(cap_saved);
	f = fopen(cap_path, "r");
	if (f)
	{
		n = fread(out, 1, cap - 1, f);
		fclose(f);
	}
	out[n] = '\0';
	unlink(cap_path);
}

/* Stop capturing; the number of lines that contain both needles. */
static int
capture_count(const char *a, const char *b)
{
	FILE	   *f;
	char		line[1200];
	int			n = 0;

	eng_log_set_level(ENG_LOG_ERROR);
	dup2(cap_saved, 2);
	close(cap_saved);
	f = fopen(cap_path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, a) && (b == NULL || strstr(line, b)))
			n++;
	if (f)
		fclose(f);
	unlink(cap_path);
	return n;
}

/* Failures the library reports: the search moves to the CPU, as far as needed. */
static void
test_injected(void)
{
	eng_server	s;
	eng_conn   *c;
	eng_buf		b;
	eng_gpu_stats st0;
	eng_gpu_stats st;
	bool		ok;
	int			warnings;

	ref_all();
	c = server_loaded(&s, MCC_PROFILE_DEFAULT);
	eng_buf_init(&b);

	/* a CUDA error: this search on the CPU, a WARNING; the next on the GPU */
	st0 = ip_gpu_stats(&s);
	capture_start();
	eng_gpu_test_inject(s.gpu, ENG_GPU_FAULT_CUDA);
	tl_search(&b, 2, &G, 1, 10, 0.0f, 2, pt);
	ip_send(&s, c, &b);
	warnings = capture_count("WARNING", "this search runs on the CPU");
	st = ip_gpu_stats(&s);
	UNIT_CHECK(result_ok(c, 2, 2, pt, 10, 0.0f, NULL) && st.fallbacks == st0.fallbacks + 1 &&
			   st.passes == st0.passes && warnings == 1,
			   "a CUDA error: that search answered on the CPU, one WARNING");
	tl_search(&b, 3, &G, 1, 10, 0.0f, 2, pt + 2);
	ip_send(&s, c, &b);
	st0 = st;
	st = ip_gpu_stats(&s);
	UNIT_CHECK(result_ok(c, 3, 2, pt + 2, 10, 0.0f, NULL) && st.passes == st0.passes + 1,
			   "the next search is on the GPU again");

	/* a probe the kernels refuse: that search on the CPU */
	eng_gpu_test_inject(s.gpu, ENG_GPU_FAULT_PROBE);
	tl_search(&b, 4, &G, 1, 10, 0.0f, 1, pt + 4);
	tl_search(&b, 5, &G, 1, 10, 0.0f, 1, pt + 5);
	ip_send(&s, c, &b);
	st0 = st;
	st = ip_gpu_stats(&s);
	UNIT_CHECK(result_ok(c, 4, 1, pt + 4, 10, 0.0f, NULL) && result_ok(c, 5, 1, pt + 5, 10, 0.0f, NULL) &&
			   st.fallbacks == st0.fallbacks + 1 && strcmp(device_of(&s), "cpu") != 0,
			   "a refused probe: searched on the CPU, the gallery stays on the GPU");

	/* out of memory reported: this gallery on the CPU until its next load */
	capture_start();
	eng_gpu_test_inject(s.gpu, ENG_GPU_FAULT_OOM);
	tl_search(&b, 6, &G, 1, 10, 0.0f, 2, pt + 6);
	ip_send(&s, c, &b);
	tl_search(&b, 7, &G, 1, 10, 0.0f, 2, pt + 8);
	ip_send(&s, c, &b);
	warnings = capture_count("WARNING", "GPU not used for this cache");
	st0 = st;
	st = ip_gpu_stats(&s);
	ok = result_ok(c, 6, 2, pt + 6, 10, 0.0f, NULL) && result_ok(c, 7, 2, pt + 8, 10, 0.0f, NULL);
	UNIT_CHECK(ok && st.passes == st0.passes && warnings == 1 && strcmp(device_of(&s), "cpu") == 0,
			   "out of GPU memory: one WARNING, the gallery searched on the CPU");
	load_ref(&s, c, 8, 2, NULL, MCC_PROFILE_DEFAULT);
	tl_search(&b, 9, &G, 2, 10, 0.0f, 2, pt);
	ip_send(&s, c, &b);
	st0 = st;
	st = ip_gpu_stats(&s);
	UNIT_CHECK(result_ok(c, 9, 2, pt, 10, 0.0f, NULL) && st.uploads == st0.uploads + 1 &&
			   st.passes == st0.passes + 1 && strcmp(device_of(&s), "cpu") != 0,
			   "its next load goes to the GPU again");
	ip_clear_out(c);
	eng_buf_free(&b);
	eng_server_destroy(&s);
}

/* A real out-of-memory: --gpu-memory-limit smaller than the gallery. */
static void
test_memory_limit(void)
{
	eng_server	s;
	eng_conn   *c;
	eng_buf		b;
	eng_gpu_stats st;
	int			warnings;

	ref_all();
	server(&s, 0, 64 * 1024);
	c = eng_conn_add(&s, -1);
	capture_start();
	load_ref(&s, c, 1, 1, NULL, MCC_PROFILE_DEFAULT);
	eng_buf_init(&b);
	tl_search(&b, 2, &G, 1, 10, 0.0f, 3, pt);
	ip_send(&s, c, &b);
	warnings = capture_count("WARNING", "out of GPU memory");
	st = ip_gpu_stats(&s);
	UNIT_CHECK(result_ok(c, 2, 3, pt, 10, 0.0f, NULL) && st.passes == 0 && warnings == 1 &&
			   strcmp(device_of(&s), "cpu") == 0,
			   "--gpu-memory-limit 64 kB: out of GPU memory, one WARNING, searched on the CPU");
	ip_clear_out(c);
	eng_buf_free(&b);
	eng_server_destroy(&s);
}

/* A kernel fault: the process's CUDA context is lost; the CPU from now on. */
static void
test_sticky(void)
{
	eng_server	s;
	eng_conn   *c;
	eng_buf		b;
	eng_gpu_stats st;
	static const mcc_gallery_id G2 = {7, 24577, 5};
	bool		ok;
	int			warnings;

	ref_all();
	c = server_loaded(&s, MCC_PROFILE_DEFAULT);
	eng_buf_init(&b);
	/* a second gallery on the GPU too: its context must close as well */
	{
		int64_t		keys[20];
		uint64_t	xid[20];

		for (int i = 0; i < 20; i++)
		{
			keys[i] = i;
			xid[i] = 3;
		}
		tl_load_begin(&b, 30, &G2, 1, 20);
		tl_load_rows(&b, 30, 20, keys, xid, NULL, gt);
		tl_load_end(&b, 30);
		ip_send(&s, c, &b);
	}
	tl_search(&b, 2, &G, 1, 10, 0.0f, 2, pt);
	ip_send(&s, c, &b);
	UNIT_CHECK(result_ok(c, 2, 2, pt, 10, 0.0f, NULL) && ip_gpu_stats(&s).passes == 1,
			   "before the fault: answered on the GPU");
	UNIT_CHECK(eng_gpu_test_fault(s.gpu, cache_of(&s)), "the next kernel is made to fault");
	capture_start();
	tl_search(&b, 3, &G, 1, 10, 0.0f, 3, pt + 3);
	ip_send(&s, c, &b);
	tl_search(&b, 4, &G, 1, 10, 0.0f, 2, pt + 6);
	tl_search(&b, 5, &G2, 1, 5, 0.0f, 1, pt);
	ip_send(&s, c, &b);
	load_ref(&s, c, 6, 2, NULL, MCC_PROFILE_DEFAULT);
	tl_search(&b, 7, &G, 2, 10, 0.0f, 2, pt + 8);
	ip_send(&s, c, &b);
	warnings = capture_count("WARNING", "GPU disabled for the rest of the process");
	st = ip_gpu_stats(&s);
	ok = result_ok(c, 3, 3, pt + 3, 10, 0.0f, NULL) && result_ok(c, 4, 2, pt + 6, 10, 0.0f, NULL) &&
		result_ok(c, 7, 2, pt + 8, 10, 0.0f, NULL);
	UNIT_CHECK(ok, "the faulting search and every later one answered on the CPU, equal to brute force");
	UNIT_CHECK(ip_reply(c, 5, NULL, NULL) == 1 && ip_error_of(c, 5) == 0,
			   "the other gallery answered too");
	UNIT_CHECK(warnings == 1 && !eng_gpu_usable(s.gpu) && st.passes == 1,
			   "one WARNING; the GPU is not used again");
	{
		char		dev2[32];
		uint64_t	bytes2;

		eng_gpu_describe(s.gpu, eng_gallery_get(&s, &G2, false)->cache, dev2, sizeof(dev2), &bytes2);
		UNIT_CHECK(strcmp(device_of(&s), "cpu") == 0 && strcmp(dev2, "cpu") == 0 && bytes2 == 0,
				   "STATUS: every gallery on the CPU");
	}
	ip_clear_out(c);
	eng_buf_free(&b);
	eng_server_destroy(&s);
}

/* CUDA_VISIBLE_DEVICES= : no device, the engine serves on the CPU. */
static void
test_no_device(void)
{
	eng_server	s;
	eng_conn   *c;
	eng_buf		b;
	int			errors;

	UNIT_CHECK(eng_gpu_start(ENG_GPU_AUTO, 0, 0, 1) == NULL, "--gpu auto without a device: no GPU path");
	capture_start();
	ref_all();
	server(&s, 0, 0);
	errors = capture_count("ERROR", "no GPU found (the NVIDIA driver reports no device): searching on");
	UNIT_CHECK(s.gpu == NULL && errors == 1, "--gpu on without a device: one error-level line");
	c = eng_conn_add(&s, -1);
	load_ref(&s, c, 1, 1, NULL, MCC_PROFILE_DEFAULT);
	eng_buf_init(&b);
	tl_search(&b, 2, &G, 1, 10, 0.0f, 3, pt);
	ip_send(&s, c, &b);
	UNIT_CHECK(result_ok(c, 2, 3, pt, 10, 0.0f, NULL) && strcmp(device_of(&s), "cpu") == 0,
			   "and serves searches on the CPU, equal to brute force");
	eng_buf_free(&b);
	eng_server_destroy(&s);
}

/*
 * Probe as the engine starts (--gpu auto, 3 CPU threads). Without a usable
 * GPU the log holds one plain line that says so and how many CPU threads
 * search; CUDA's own wording ("CUDA driver version is insufficient" where
 * no driver is installed) is for the debug level only.
 */
static eng_gpu *
probe_logged(void)
{
	char		log[4096];
	int			lines = 0;
	eng_gpu    *g;

	capture_start();
	g = eng_gpu_start(ENG_GPU_AUTO, 0, 0, 3);
	capture_read(log, sizeof(log));
	for (const char *p = log; (p = strchr(p, '\n')) != NULL; p++)
		lines++;
	if (g == NULL)
		UNIT_CHECK(lines == 1 && strstr(log, "LOG:") &&
				   (strstr(log, "no GPU found (") || strstr(log, "no usable GPU (")) &&
				   strstr(log, "): searching on 3 CPU threads") && !strstr(log, "CUDA"),
				   "without a usable GPU the engine logs one plain line: %s", log);
	return g;
}

int
main(int argc, char **argv)
{
	bool		no_device = argc > 1 && strcmp(argv[1], "--no-device") == 0;
	eng_gpu    *probe;

	mcc_lss_init();
	eng_log_set_level(ENG_LOG_ERROR);
	if (!eng_gpu_built())
	{
		UNIT_SKIP("built without the GPU path (make gpu-check builds it with nvcc): GPU checks skipped");
		return unit_done();
	}
	gt = tl_templates(51, NT, 25);
	xt = tl_templates(52, NX, 25);
	pt = tl_templates(53, NP, 25);
	/* probes with mates in the gallery and among the delta templates */
	for (int i = 0; i < 3; i++)
	{
		free(pt[i].b);
		pt[i] = (tl_tpl) {memcpy(malloc(gt[5 * i].n), gt[5 * i].b, gt[5 * i].n), gt[5 * i].n};
	}
	free(pt[3].b);
	pt[3] = (tl_tpl) {memcpy(malloc(xt[1].n), xt[1].b, xt[1].n), xt[1].n};
	if (no_device)
		test_no_device();
	else if ((probe = probe_logged()) == NULL)
		UNIT_SKIP("no usable GPU: engine GPU path checks skipped");
	else
	{
		eng_gpu_stop(probe);
		test_updates(0);
		test_updates(3);
		test_batches();
		test_ties();
		test_tpami();
		test_injected();
		test_memory_limit();
		test_sticky();			/* last: the process's CUDA context is lost */
	}
	tl_templates_free(gt, NT);
	tl_templates_free(xt, NX);
	tl_templates_free(pt, NP);
	return unit_done();
}
