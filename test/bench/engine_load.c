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

int
main(int argc, char **argv)
{
	int			n = 200000;
	int			distinct = 2000;
	int			threads = 2;
	int			prefault = 0;	/* eng_config.load_prefault: 0 the engine's default, -1 none */
	int			load_only = 0;
	tl_tpl	   *t;
	eng_buf		frames;
	int			n_frames;
	double		t0;
	double		s_parse = 0;	/* the stages a --load-only run skips */
	double		s_open = 0;
	double		s_hash = 0;
	double		s_append = 0;
	double		s_load;
	double		cpu_load;
	double		sum;
	uint64_t	sink = 0;
	uint64_t	cyl = 0;
	mcc_template_view *views;
	eng_cache  *cache;
	mcc_error	err;
	const targ_opt opts[] = {
		OPT_INT("--templates", &n, "N"), OPT_INT("--distinct", &distinct, "M"),
		OPT_INT("--threads", &threads, "T"), OPT_INT("--prefault", &prefault, "P"),
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

	/* parse: walk every frame's rows */
	if (load_only)
		goto load;
	t0 = tclock_cpu_s();
	for (size_t pos = 0; pos < frames.len;)
	{
		mcc_frame_hdr h;
		eng_rd		r;
		uint32_t	m;

		memcpy(&h, frames.data + pos, sizeof(h));
		eng_rd_init(&r, frames.data + pos + sizeof(h), h.length);
		m = eng_rd_u32(&r);
		for (uint32_t k = 0; k < m; k++)
		{
			uint32_t	len;

			sink += (uint64_t) eng_rd_i64(&r) + eng_rd_u64(&r) + eng_rd_u64(&r);
			sink += (uintptr_t) eng_rd_bytes(&r, &len) + len;
			sink += eng_rd_u64(&r) + eng_rd_u64(&r);
		}
		pos += sizeof(h) + h.length;
	}
	s_parse = tclock_cpu_s() - t0;

	views = malloc(sizeof(*views) * (size_t) n);
	t0 = tclock_cpu_s();
	for (int i = 0; i < n; i++)
	{
		const tl_tpl *x = &t[i % distinct];

		mcc_error_clear(&err);
		if (mcc_template_open(x->b, x->n, &views[i], &err) != MCC_OK)
			return 1;
	}
	s_open = tclock_cpu_s() - t0;

	t0 = tclock_cpu_s();
	for (int i = 0; i < n; i++)
		sink += mcc_template_hash(t[i % distinct].b, t[i % distinct].n);
	s_hash = tclock_cpu_s() - t0;

	cache = eng_cache_new(views[0].profile, NULL, (uint32_t) n, (uint32_t) (n * 36), &err);
	if (cache == NULL)
		return 1;
	t0 = tclock_cpu_s();
	for (int i = 0; i < n; i++)
		if (eng_cache_append(cache, i, 1, 0, 0, ENG_E_LOAD_INS, &views[i], NULL, &err) != MCC_OK)
			return 1;
	s_append = tclock_cpu_s() - t0;
	eng_cache_free(cache);
	free(views);
load:

	{
		eng_server	s;
		eng_config	cfg = {.threads = threads, .memory_limit = 0, .delta_timeout_ms = 1000,
		.max_batch = 64, .load_prefault = prefault};
		eng_conn   *c;
		eng_buf		b;
		tl_frame	f;

		eng_server_init(&s, &cfg);
		c = eng_conn_add(&s, -1);
		eng_buf_init(&b);
		{
			size_t		fb = eng_frame_begin(&b, MCC_MSG_LOAD_BEGIN, 1);

			eng_buf_gallery(&b, &G);
			eng_buf_u64(&b, 1);
			eng_buf_u32(&b, MCC_PROFILE_DEFAULT);
			eng_buf_u64(&b, (uint64_t) n);
			eng_buf_u32(&b, 0);
			eng_buf_u32(&b, MCC_LOAD_IDS);
			eng_buf_u64(&b, 1);	/* scan_lsn */
			eng_buf_u64(&b, 100);	/* next_xid */
			eng_frame_end(&b, fb);
		}
		t0 = tclock_wall_s();
		cpu_load = tclock_process_cpu_s();
		ip_feed(&s, c, &b);
		/* frame by frame, as a socket's reads bring them */
		for (size_t pos = 0; pos < frames.len;)
		{
			mcc_frame_hdr h;

			memcpy(&h, frames.data + pos, sizeof(h));
			eng_conn_input(&s, c, frames.data + pos, sizeof(h) + h.length);
			pos += sizeof(h) + h.length;
		}
		tl_load_end(&b, 1);
		ip_send(&s, c, &b);
		s_load = tclock_wall_s() - t0;
		cpu_load = tclock_process_cpu_s() - cpu_load;
		if (ip_reply(c, 1, &f, NULL) != 1 || f.h.type != MCC_MSG_LOADED)
		{
			fprintf(stderr, "the load failed\n");
			return 1;
		}
		eng_buf_free(&b);
	}
	if (load_only)
	{
		printf("load (engine, %d threads): %.3f s wall, %.0f rows/s; %.3f CPU-s, %.0f rows per CPU-second\n",
			   threads, s_load, n / s_load, cpu_load, n / cpu_load);
		return 0;
	}
	sum = s_parse + s_open + s_hash + s_append;
	printf("stage   seconds  share  us/row\n");
	printf("parse   %7.3f  %4.1f%%  %6.2f\n", s_parse, 100 * s_parse / sum, 1e6 * s_parse / n);
	printf("open    %7.3f  %4.1f%%  %6.2f\n", s_open, 100 * s_open / sum, 1e6 * s_open / n);
	printf("hash    %7.3f  %4.1f%%  %6.2f\n", s_hash, 100 * s_hash / sum, 1e6 * s_hash / n);
	printf("append  %7.3f  %4.1f%%  %6.2f\n", s_append, 100 * s_append / sum, 1e6 * s_append / n);
	printf("per-row stages summed (one thread): %.0f rows per CPU-second\n", n / sum);
	printf("load (engine, %d threads): %.3f s wall, %.0f rows/s; %.3f CPU-s, %.0f rows per CPU-second\n",
		   threads, s_load, n / s_load, cpu_load, n / cpu_load);
	if (sink == 42)
		printf("#\n");
	tl_templates_free(t, distinct);
	eng_buf_free(&frames);
	return 0;
}
