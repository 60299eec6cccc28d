/*
 * engine_refine_check.c: refining searches of the matcher engine with the
 * rescoring on the GPU against the same searches rescored on the CPU
 * threads, answer by answer, and their throughput.
 *
 *   build/gpu/engine_refine_check [--templates N] [--distinct D] [--probes Q]
 *       [--batch B] [--rounds R] [--threads T] [--partitions P]
 *       [--method fused] [--fraction F] [--refine-min S] [--k K] [--cpu-search] [--count]
 *
 * Two engines in this process (eng_server, no sockets) load the same
 * synthetic gallery: N rows, D distinct impressions (mcc_synth, impressions
 * 0 and 1 of finger i / 2) repeated under distinct keys. Both search on the
 * GPU; engine A rescores the shortlists on the GPU (eng_gpu_refine), engine
 * B on its CPU threads (--gpu-refine off). Q one-probe refining SEARCHes
 * (impression 5 of fingers 0 .. Q-1: every probe has mates) arrive together
 * at each engine, B of them per pass, so the probes of a pass are rescored
 * in one job. Every RESULT of A must equal B's byte for byte: the LSS hits,
 * every refined score, the candidates' order and visibility, hence every
 * ranking by refined score. A's counters must show the rescoring on the GPU
 * with no fallback. --cpu-search adds an engine C without any GPU (LSS and
 * rescoring on the CPU threads), which must give the same bytes too.
 * --count: every search also asks for the visibility count of count_xmin
 * (as identify() does when n' depends on the rows a statement sees).
 *
 * Then each engine answers R more rounds of the Q searches, timed: queries/s
 * for A and B (the first round, timed apart, also pays the GPU upload and
 * the refinement data). Prints TAP (ok / not ok) and "# bench" lines.
 * Without a usable GPU it says so and skips (exit 0).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "eng_conn.h"
#include "unit.h"
#include "engine_inproc.h"
#include "eng_log.h"
#include "eng_server.h"
#include "mcc_match.h"
#include "mcc_synth.h"
#include "../unit/testargs.h"
#include "../unit/testclock.h"

#define XMIN	2				/* snapshot xmin: rows loaded with xid 0 are certain */

typedef struct opts
{
	int			n;
	int			distinct;
	int			probes;
	int			batch;
	int			rounds;
	int			threads;
	int			partitions;
	int			method;
	double		fraction;
	uint32_t	refine_min;
	uint32_t	k;
	int			cpu_search;
	int			count;			/* every search asks for the visibility count, as identify() does */
} opts;

static const mcc_gallery_id G = {1, 42, 7};

/* Impression imp of synthetic finger f. */
static tl_tpl
synth(uint64_t f, uint64_t imp)
{
	mcc_synth_params sp;
	mcc_minutiae master;
	mcc_minutiae m;
	tl_tpl		t;

	mcc_synth_defaults(&sp);
	sp.seed = 20240611;
	mcc_synth_master(&sp, f, &master);
	mcc_synth_impression(&sp, &master, f, imp, &m);
	t = tl_build(&m);
	if (t.b == NULL)
	{
		fprintf(stderr, "could not build the template of finger %llu\n", (unsigned long long) f);
		exit(1);
	}
	return t;
}

static eng_server *
server_new(const opts *o, eng_gpu_mode gpu, bool refine_off, eng_conn **c)
{
	eng_server *s = calloc(1, sizeof(*s));
	eng_config	cfg = {.threads = o->threads, .delta_timeout_ms = 1000,
		.max_batch = (uint32_t) o->batch, .gpu = gpu, .gpu_partitions = o->partitions,
	.gpu_refine_off = refine_off};

	if (s == NULL || !eng_server_init(s, &cfg))
	{
		fprintf(stderr, "could not start an engine\n");
		exit(1);
	}
	*c = eng_conn_add(s, -1);
	return s;
}

/* Load rows 0 .. n-1 (row i: distinct template i % D) in frames of 4096 rows. */
static bool
load(eng_server *s, eng_conn *c, const opts *o, const tl_tpl *gal)
{
	enum
	{
		CHUNK = 4096
	};
	int64_t    *keys = malloc(CHUNK * sizeof(int64_t));
	uint64_t   *xid = calloc(CHUNK, sizeof(uint64_t));
	tl_tpl	   *t = malloc(CHUNK * sizeof(tl_tpl));
	eng_buf		b;
	bool		ok;

	eng_buf_init(&b);
	tl_load_begin(&b, 1, &G, 1, (uint64_t) o->n);
	ip_feed(s, c, &b);
	for (int i0 = 0; i0 < o->n; i0 += CHUNK)
	{
		int			m = o->n - i0 < CHUNK ? o->n - i0 : CHUNK;

		for (int j = 0; j < m; j++)
		{
			keys[j] = i0 + j;
			t[j] = gal[(i0 + j) % o->distinct];
		}
		tl_load_rows(&b, 1, m, keys, xid, NULL, t);
		ip_feed(s, c, &b);
		eng_server_step(s);
	}
	tl_load_end(&b, 1);
	ip_send(s, c, &b);
	ok = ip_reply(c, 1, NULL, NULL) == 1 && ip_error_of(c, 1) == 0;
	ip_clear_out(c);
	eng_buf_free(&b);
	free(keys);
	free(xid);
	free(t);
	return ok;
}

/* One round: Q one-probe refining SEARCHes, request ids rid0 + i. */
static void
round_feed(eng_server *s, eng_conn *c, const opts *o, const tl_tpl *probes, uint64_t rid0)
{
	tl_refine_spec rf = {(uint32_t) o->method, o->k, o->fraction, o->refine_min};
	eng_buf		b;

	eng_buf_init(&b);
	for (int i = 0; i < o->probes; i++)
		tl_search_full(&b, rid0 + (uint64_t) i, &G, 1, o->k, 0.0f, XMIN, o->count ? 0 : UINT64_MAX, &rf, 1,
					   probes + i);
	ip_send(s, c, &b);
	eng_buf_free(&b);
}

/* Time R rounds on one engine: queries/s. */
static double
bench(eng_server *s, eng_conn *c, const opts *o, const tl_tpl *probes, const char *what)
{
	double		t0 = tclock_wall_s();
	double		wall;
	double		nq = (double) o->rounds * o->probes;
	eng_gpu_stats s0;
	eng_gpu_stats s1;

	eng_gpu_get_stats(s->gpu, &s0);
	for (int r = 0; r < o->rounds; r++)
	{
		round_feed(s, c, o, probes, 1000000 + (uint64_t) r * (uint64_t) o->probes);
		ip_clear_out(c);
	}
	wall = tclock_wall_s() - t0;
	eng_gpu_get_stats(s->gpu, &s1);
	/* where a query's time goes, ms per query (wall time of each stage) */
	printf("# bench stages, %s: %.3f ms per query: GPU search %.3f (library %.3f, hits to slots %.3f), "
		   "GPU rescoring %.3f (library %.3f), rest %.3f\n", what, 1e3 * wall / nq,
		   1e3 * (s1.search_s - s0.search_s) / nq, 1e3 * (s1.search_lib_s - s0.search_lib_s) / nq,
		   1e3 * (s1.search_fill_s - s0.search_fill_s) / nq, 1e3 * (s1.refine_s - s0.refine_s) / nq,
		   1e3 * (s1.refine_lib_s - s0.refine_lib_s) / nq,
		   1e3 * (wall - (s1.search_s - s0.search_s) - (s1.refine_s - s0.refine_s)) / nq);
	printf("# bench stages, %s, libraries, ms per query: search: match %.3f select %.3f d2h %.3f merge %.3f; "
		   "rescoring: prep %.3f h2d %.3f kernel %.3f d2h %.3f\n", what,
		   (s1.lib_ms[0] - s0.lib_ms[0]) / nq, (s1.lib_ms[1] - s0.lib_ms[1]) / nq,
		   (s1.lib_ms[2] - s0.lib_ms[2]) / nq, (s1.lib_ms[3] - s0.lib_ms[3]) / nq,
		   (s1.lib_ms[4] - s0.lib_ms[4]) / nq, (s1.lib_ms[5] - s0.lib_ms[5]) / nq,
		   (s1.lib_ms[6] - s0.lib_ms[6]) / nq, (s1.lib_ms[7] - s0.lib_ms[7]) / nq);
	return nq / wall;
}

/* Candidates in a refining RESULT (mcc_proto.h); 0 if malformed. */
static uint64_t
n_candidates(const tl_frame *f)
{
	uint64_t	searchable;
	uint32_t	np;
	uint64_t	n = 0;
	tl_rprobe  *p = tl_parse_refined(f, 1u << 24, &searchable, &np);

	for (uint32_t i = 0; p != NULL && i < np; i++)
		n += p[i].n;
	tl_rprobes_free(p, p ? np : 0);
	return n;
}

/*
 * Do the RESULTs of rid0 .. rid0 + Q in a and b agree byte for byte? Counts
 * the candidates compared; prints the first difference.
 */
static bool
same_results(eng_conn *a, eng_conn *b, const opts *o, uint64_t rid0, uint64_t *cands,
			 const char *what)
{
	for (int i = 0; i < o->probes; i++)
	{
		tl_frame	fa;
		tl_frame	fb;
		uint64_t	n;

		memset(&fa, 0, sizeof(fa));
		memset(&fb, 0, sizeof(fb));

		if (ip_reply(a, rid0 + (uint64_t) i, &fa, NULL) != 1 ||
			ip_reply(b, rid0 + (uint64_t) i, &fb, NULL) != 1 ||
			fa.h.type != MCC_MSG_RESULT || fb.h.type != MCC_MSG_RESULT)
		{
			printf("# probe %d: no RESULT from %s (types %u, %u)\n", i, what, fa.h.type, fb.h.type);
			return false;
		}
		if (fa.h.length != fb.h.length || memcmp(fa.p, fb.p, fa.h.length) != 0)
		{
			printf("# probe %d: the RESULTs differ (%s; %u and %u bytes)\n", i, what,
				   fa.h.length, fb.h.length);
			return false;
		}
		if ((n = n_candidates(&fa)) == 0)
		{
			printf("# probe %d: a RESULT without candidates or malformed (%s)\n", i, what);
			return false;
		}
		*cands += n;
	}
	return true;
}

static void
parse(int argc, char **argv, opts *o)
{
	const char *method = "fused";
	const targ_opt table[] = {
		OPT_INT("--templates", &o->n, "N"), OPT_INT("--distinct", &o->distinct, "M"),
		OPT_INT("--probes", &o->probes, "P"), OPT_INT("--batch", &o->batch, "B"),
		OPT_INT("--rounds", &o->rounds, "R"), OPT_INT("--threads", &o->threads, "T"),
		OPT_INT("--partitions", &o->partitions, "N"), OPT_STR("--method", &method, "NAME"),
		OPT_DOUBLE("--fraction", &o->fraction, "F"), OPT_U32("--refine-min", &o->refine_min, "K"),
		OPT_U32("--k", &o->k, "K"), OPT_SET("--cpu-search", &o->cpu_search, 1),
		OPT_SET("--count", &o->count, 1), OPT_END
	};

	*o = (opts) {.n = 100000, .distinct = 20000, .probes = 256, .batch = 64, .rounds = 3,
		.threads = 0, .partitions = 0, .fraction = 0.001, .refine_min = 100, .k = 10};
	targ_parse(argc, argv, table);
	o->method = mcc_method_parse(method, (int) strlen(method));
	if (o->threads <= 0)
	{
		long		n = sysconf(_SC_NPROCESSORS_ONLN);

		o->threads = n > 0 ? (int) n : 1;
	}
	if (o->distinct > o->n)
		o->distinct = o->n;
	if (o->n < 1 || o->distinct < 1 || o->probes < 1 || o->batch < 1 || o->rounds < 0 ||
		o->method <= MCC_LSS || o->method >= MCC_NMETHODS)
	{
		fprintf(stderr, "bad options (a refining method other than lss is needed)\n");
		exit(2);
	}
}

int
main(int argc, char **argv)
{
	opts		o;
	eng_gpu    *probe;
	tl_tpl	   *gal;
	tl_tpl	   *probes;
	eng_conn   *ca;
	eng_conn   *cb;
	eng_conn   *cc = NULL;
	eng_server *a;
	eng_server *b;
	eng_server *c = NULL;
	eng_gpu_stats st;
	uint64_t	cands = 0;
	double		t0;
	double		first_a;
	double		first_b;
	bool		ok;

	parse(argc, argv, &o);
	eng_log_set_level(ENG_LOG_WARNING);
	mcc_lss_init();
	probe = eng_gpu_start(ENG_GPU_AUTO, 0, 0, 1);
	if (probe == NULL)
	{
		UNIT_SKIP("no usable GPU%s: the engine's GPU rescoring is not checked",
				  eng_gpu_built() ? "" : " (built without GPU support)");
		return unit_done();
	}
	eng_gpu_stop(probe);

	t0 = tclock_wall_s();
	gal = calloc((size_t) o.distinct, sizeof(tl_tpl));
	probes = calloc((size_t) o.probes, sizeof(tl_tpl));
	for (int i = 0; i < o.distinct; i++)
		gal[i] = synth((uint64_t) (i / 2), (uint64_t) (i % 2));
	for (int i = 0; i < o.probes; i++)
		probes[i] = synth((uint64_t) (i % ((o.distinct + 1) / 2)), 5);
	printf("# %d rows (%d distinct synthetic impressions), %d probes, %s, fraction %g, "
		   "refine_min %u, k %u, batch %d, %d threads: templates built in %.1f s\n",
		   o.n, o.distinct, o.probes, mcc_method_name(o.method), o.fraction, o.refine_min,
		   o.k, o.batch, o.threads, tclock_wall_s() - t0);

	a = server_new(&o, ENG_GPU_ON, false, &ca);
	b = server_new(&o, ENG_GPU_ON, true, &cb);
	t0 = tclock_wall_s();
	ok = load(a, ca, &o, gal) && load(b, cb, &o, gal);
	if (o.cpu_search)
	{
		c = server_new(&o, ENG_GPU_OFF, true, &cc);
		ok = ok && load(c, cc, &o, gal);
	}
	UNIT_CHECK(ok, "every engine loaded the %d rows (%.1f s)", o.n, tclock_wall_s() - t0);
	if (!ok)
		return unit_done();

	/* the first round: upload, refinement data, then the answers compared */
	t0 = tclock_wall_s();
	round_feed(a, ca, &o, probes, 1);
	first_a = tclock_wall_s() - t0;
	t0 = tclock_wall_s();
	round_feed(b, cb, &o, probes, 1);
	first_b = tclock_wall_s() - t0;
	/* compared first: the message below reports the count it makes */
	ok = same_results(ca, cb, &o, 1, &cands, "GPU rescoring against CPU threads");
	UNIT_CHECK(ok && cands > 0,
			   "%d refining searches (%s): every RESULT with the rescoring on the GPU equals "
			   "the CPU threads' byte for byte (%llu candidates: scores, order, visibility)",
			   o.probes, mcc_method_name(o.method), (unsigned long long) cands);
	if (c != NULL)
	{
		uint64_t	n = 0;

		round_feed(c, cc, &o, probes, 1);
		UNIT_CHECK(same_results(ca, cc, &o, 1, &n, "GPU engine against CPU-only engine"),
				   "... and equals an engine without GPU (LSS and rescoring on the CPU)");
	}
	eng_gpu_get_stats(a->gpu, &st);
	UNIT_CHECK(st.refines > 0 && st.refine_fallbacks == 0 && st.refine_pairs >= cands,
			   "engine A rescored on the GPU: %llu jobs, %llu pairs, no fallback",
			   (unsigned long long) st.refines, (unsigned long long) st.refine_pairs);
	eng_gpu_get_stats(b->gpu, &st);
	UNIT_CHECK(st.refines == 0 && st.passes > 0,
			   "engine B searched on the GPU and rescored on its CPU threads");
	ip_clear_out(ca);
	ip_clear_out(cb);

	printf("# bench first round (upload + refinement data): GPU rescoring %.3f s, CPU rescoring %.3f s\n",
		   first_a, first_b);
	if (o.rounds > 0)
	{
		double		qa = bench(a, ca, &o, probes, "GPU rescoring");
		double		qb = bench(b, cb, &o, probes, "CPU rescoring");

		printf("# bench %d templates, %s, shortlist %lld: GPU rescoring %.1f queries/s, "
			   "CPU rescoring (%d threads) %.1f queries/s, x%.2f\n",
			   o.n, mcc_method_name(o.method),
			   (long long) mcc_refine_count(o.n, o.fraction, o.refine_min, o.k), qa,
			   o.threads, qb, qa / qb);
	}
	eng_server_destroy(a);
	eng_server_destroy(b);
	free(a);
	free(b);
	if (c != NULL)
	{
		eng_server_destroy(c);
		free(c);
	}
	for (int i = 0; i < o.distinct; i++)
		free(gal[i].b);
	for (int i = 0; i < o.probes; i++)
		free(probes[i].b);
	free(gal);
	free(probes);
	return unit_done();
}
