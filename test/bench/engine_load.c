/*
 * engine_load.c: where the engine's side of a full gallery load spends its
 * time (issue 19, part 1), in process (no socket, no PostgreSQL).
 *
 *   build/bench/engine_load [--templates N] [--distinct M] [--threads T]
 *                           [--prefault P] [--load-only 1]
 *
 * Builds M distinct synthetic templates (mcc_synth impressions, as
 * engine_bench) and LOAD_ROWS frames of about 1 MB for N rows (template
 * i % M under key i, with load_ids as a backend sends them when cache
 * snapshots are on), then times on this process:
 *   - parse:   reading the frames' rows (eng_rd, as h_load_rows does)
 *   - open:    mcc_template_open of every row (the blob's checks)
 *   - hash:    mcc_template_hash of every row
 *   - append:  eng_cache_append of every row into a cache sized beforehand
 *   - load:    the whole path: LOAD_BEGIN, the frames, LOAD_END fed to an
 *              in-process server with T worker threads, until LOADED
 *              (P: eng_config.load_prefault, the threads that fault the new
 *              cache in ahead of the rows; 0 the engine's default, -1 none)
 * Prints each stage's CPU seconds (this thread's: the machine may be
 * shared) and its share of their sum, then the whole load's wall time and
 * rows/s, and its CPU seconds (every thread's) and rows per CPU-second. The
 * stages are the per-row work a load did before rows were appended in bulk
 * (append: eng_cache_append into a cache sized as LOAD_BEGIN sizes it);
 * "load" is what the engine does now.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine_inproc.h"
#include "eng_cache.h"
#include "mcc_synth.h"
#include "testargs.h"
#include "testclock.h"

static const mcc_gallery_id G = {1, 42, 7};

/* Frames of LOAD_ROWS (about 1 MB each) for n rows, with load_ids. */
static eng_buf
rows_frames(const tl_tpl *t, int n, int distinct, uint64_t rid, int *n_frames)
{
	eng_buf		b;
	int			i = 0;

	eng_buf_init(&b);
	*n_frames = 0;
	while (i < n)
	{
		size_t		f = eng_frame_begin(&b, MCC_MSG_LOAD_ROWS, rid);
		size_t		count_at = b.len;
		uint32_t	m = 0;

		eng_buf_u32(&b, 0);
		while (i < n && b.len - f < 1024 * 1024)
		{
			const tl_tpl *x = &t[i % distinct];

			eng_buf_i64(&b, i);
			eng_buf_u64(&b, 0);
			eng_buf_u64(&b, 0);
			eng_buf_bytes(&b, x->b, (uint32_t) x->n);
			eng_buf_u64(&b, (uint64_t) i + 1);	/* tid */
			eng_buf_u64(&b, 3);	/* xmin */
			m++;
			i++;
		}
		memcpy(b.data + count_at, &m, 4);
		eng_frame_end(&b, f);
		(*n_frames)++;
	}
	return b;
}

/* The per-row stages a load did before rows were appended in bulk. */
typedef enum stage
{
	ST_PARSE, ST_OPEN, ST_HASH, ST_APPEND, N_STAGES
} stage;

static const char *const stage_names[N_STAGES] = {"parse", "open", "hash", "append"};

/* parse: walk every frame's rows as h_load_rows reads them; CPU seconds. */
static double
stage_parse(const eng_buf *frames, uint64_t *sink)
{
	double		t0 = tclock_cpu_s();

	for (size_t pos = 0; pos < frames->len;)
	{
		mcc_frame_hdr h;
		eng_rd		r;
		uint32_t	m;

		memcpy(&h, frames->data + pos, sizeof(h));
		eng_rd_init(&r, frames->data + pos + sizeof(h), h.length);
		m = eng_rd_u32(&r);
		for (uint32_t k = 0; k < m; k++)
		{
			uint32_t	len;

			*sink += (uint64_t) eng_rd_i64(&r) + eng_rd_u64(&r) + eng_rd_u64(&r);
			*sink += (uintptr_t) eng_rd_bytes(&r, &len) + len;
			*sink += eng_rd_u64(&r) + eng_rd_u64(&r);
		}
		pos += sizeof(h) + h.length;
	}
	return tclock_cpu_s() - t0;
}

/*
 * open, hash and append of the n rows (template i % distinct of t), the
 * CPU seconds of each into sec[ST_OPEN ..]; 0, or -1 if one failed.
 */
static int
stage_rows(const tl_tpl *t, int n, int distinct, double *sec, uint64_t *sink)
{
	mcc_template_view *views = malloc(sizeof(*views) * (size_t) n);
	eng_cache  *cache;
	mcc_error	err;
	double		t0 = tclock_cpu_s();

	for (int i = 0; i < n; i++)
	{
		const tl_tpl *x = &t[i % distinct];

		mcc_error_clear(&err);
		if (mcc_template_open(x->b, x->n, &views[i], &err) != MCC_OK)
			return -1;
	}
	sec[ST_OPEN] = tclock_cpu_s() - t0;

	t0 = tclock_cpu_s();
	for (int i = 0; i < n; i++)
		*sink += mcc_template_hash(t[i % distinct].b, t[i % distinct].n);
	sec[ST_HASH] = tclock_cpu_s() - t0;

	cache = eng_cache_new(views[0].profile, NULL, (uint32_t) n, (uint32_t) (n * 36), &err);
	if (cache == NULL)
		return -1;
	t0 = tclock_cpu_s();
	for (int i = 0; i < n; i++)
		if (eng_cache_append(cache, i, 1, 0, 0, ENG_E_LOAD_INS, &views[i], NULL, &err) != MCC_OK)
			return -1;
	sec[ST_APPEND] = tclock_cpu_s() - t0;
	eng_cache_free(cache);
	free(views);
	return 0;
}

/*
 * load: LOAD_BEGIN for n rows, the frames one by one as a socket's reads
 * bring them, LOAD_END, fed to an in-process server of cfg, until LOADED:
 * its wall seconds and the process's CPU seconds; 0, or -1 if it failed.
 */
static int
time_load(const eng_config *cfg, const eng_buf *frames, int n, double *wall, double *cpu)
{
	eng_server	s;
	eng_conn   *c;
	eng_buf		b;
	tl_frame	f;
	size_t		fb;
	double		t0;

	eng_server_init(&s, cfg);
	c = eng_conn_add(&s, -1);
	eng_buf_init(&b);
	fb = eng_frame_begin(&b, MCC_MSG_LOAD_BEGIN, 1);
	eng_buf_gallery(&b, &G);
	eng_buf_u64(&b, 1);
	eng_buf_u32(&b, MCC_PROFILE_DEFAULT);
	eng_buf_u64(&b, (uint64_t) n);
	eng_buf_u32(&b, 0);
	eng_buf_u32(&b, MCC_LOAD_IDS);
	eng_buf_u64(&b, 1);			/* scan_lsn */
	eng_buf_u64(&b, 100);		/* next_xid */
	eng_frame_end(&b, fb);
	t0 = tclock_wall_s();
	*cpu = tclock_process_cpu_s();
	ip_feed(&s, c, &b);
	for (size_t pos = 0; pos < frames->len;)
	{
		mcc_frame_hdr h;

		memcpy(&h, frames->data + pos, sizeof(h));
		eng_conn_input(&s, c, frames->data + pos, sizeof(h) + h.length);
		pos += sizeof(h) + h.length;
	}
	tl_load_end(&b, 1);
	ip_send(&s, c, &b);
	*wall = tclock_wall_s() - t0;
	*cpu = tclock_process_cpu_s() - *cpu;
	if (ip_reply(c, 1, &f, NULL) != 1 || f.h.type != MCC_MSG_LOADED)
	{
		fprintf(stderr, "the load failed\n");
		return -1;
	}
	eng_buf_free(&b);
	return 0;
}

/* Each stage's CPU seconds, its share of their sum and per row; then the sum's rate. */
static void
print_stages(const double *sec, int n)
{
	double		sum = 0;

	for (int i = 0; i < N_STAGES; i++)
		sum += sec[i];
	printf("stage   seconds  share  us/row\n");
	for (int i = 0; i < N_STAGES; i++)
		printf("%-7s %7.3f  %4.1f%%  %6.2f\n", stage_names[i], sec[i], 100 * sec[i] / sum, 1e6 * sec[i] / n);
	printf("per-row stages summed (one thread): %.0f rows per CPU-second\n", n / sum);
}

int
main(int argc, char **argv)
{
	int			n = 200000;
	int			distinct = 2000;
	eng_config	cfg = {.threads = 2, .memory_limit = 0, .delta_timeout_ms = 1000, .max_batch = 64,
	.load_prefault = 0};			/* 0 the engine's default, -1 none */
	int			load_only = 0;
	tl_tpl	   *t;
	eng_buf		frames;
	int			n_frames;
	double		sec[N_STAGES] = {0};	/* the stages a --load-only run skips */
	double		s_load;
	double		cpu_load;
	uint64_t	sink = 0;
	uint64_t	cyl = 0;
	const targ_opt opts[] = {
		OPT_INT("--templates", &n, "N"), OPT_INT("--distinct", &distinct, "M"),
		OPT_INT("--threads", &cfg.threads, "T"), OPT_INT("--prefault", &cfg.load_prefault, "P"),
		OPT_INT("--load-only", &load_only, "1"), OPT_END
	};

	targ_parse(argc, argv, opts);
	if (distinct > n)
		distinct = n;
	t = tl_synth_templates(42, distinct, false);
	frames = rows_frames(t, n, distinct, 1, &n_frames);
	for (int i = 0; i < distinct; i++)
		cyl += (uint64_t) tl_view(&t[i]).n_cyl;
	printf("# %d rows (%d distinct synthetic templates, %.1f cylinders each), %d LOAD_ROWS frames, %.1f MB\n",
		   n, distinct, (double) cyl / distinct, n_frames, frames.len / 1048576.0);
	if (!load_only)
	{
		sec[ST_PARSE] = stage_parse(&frames, &sink);
		if (stage_rows(t, n, distinct, sec, &sink) != 0)
			return 1;
	}
	if (time_load(&cfg, &frames, n, &s_load, &cpu_load) != 0)
		return 1;
	if (!load_only)
		print_stages(sec, n);
	printf("load (engine, %d threads): %.3f s wall, %.0f rows/s; %.3f CPU-s, %.0f rows per CPU-second\n",
		   cfg.threads, s_load, n / s_load, cpu_load, n / cpu_load);
	if (load_only)
		return 0;
	if (sink == 42)
		printf("#\n");
	tl_templates_free(t, distinct);
	eng_buf_free(&frames);
	return 0;
}
