/*
 * engine_inproc.h: driving an eng_server in process (no sockets) for the
 * engine's tests: feed frames to a connection, run the pool until idle,
 * find replies in the connection's output, and compare a RESULT with the
 * brute-force reference (engine_testlib.h) of what the table holds.
 */
#ifndef ENGINE_INPROC_H
#define ENGINE_INPROC_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eng_conn.h"
#include "engine_testlib.h"
#include "eng_server.h"

/* Feed a buffer of frames to a connection and empty it. */
static inline void
ip_feed(eng_server *s, eng_conn *c, eng_buf *b)
{
	eng_conn_input(s, c, b->data, b->len);
	b->len = 0;
}

/* Step until no pass or compaction is running. */
static inline void
ip_pump_all(eng_server *s)
{
	eng_server_step(s);
	while (s->jobs > 0)
		eng_server_pump(s, 1000);
}

/* Feed a buffer of frames and step until the server is idle: sent and served. */
static inline void
ip_send(eng_server *s, eng_conn *c, eng_buf *b)
{
	ip_feed(s, c, b);
	ip_pump_all(s);
}

/*
 * The first reply to request rid in c's output (copied to *copy, to be
 * freed, when copy is not NULL), and how many replies there are.
 */
static inline int
ip_reply(eng_conn *c, uint64_t rid, tl_frame *f, uint8_t **copy)
{
	size_t		pos = c->out_pos;
	tl_frame	x;
	int			n = 0;

	if (copy)
		*copy = NULL;
	while (tl_next(c->out.data, c->out.len, &pos, &x))
		if (x.h.request_id == rid && n++ == 0 && f)
		{
			*f = x;
			if (copy)
			{
				*copy = malloc(x.h.length + 1);
				memcpy(*copy, x.p, x.h.length);
				f->p = *copy;
			}
		}
	return n;
}

/*
 * The engine tests' option --gpu P (make gpu-check): every pass on the GPU
 * path with P partitions (0: one per device). 0 without the option; 1 with
 * *mode ENG_GPU_ON and *parts P, said on stdout; -1 when no GPU is usable
 * (the test skips, with ip_no_gpu_why()).
 */
static inline int
ip_gpu_option(int argc, char **argv, eng_gpu_mode *mode, int *parts)
{
	eng_gpu    *probe;

	if (argc != 3 || strcmp(argv[1], "--gpu") != 0)
		return 0;
	if ((probe = eng_gpu_start(ENG_GPU_AUTO, 0, 0, 1)) == NULL)
		return -1;
	eng_gpu_stop(probe);
	*mode = ENG_GPU_ON;
	*parts = atoi(argv[2]);
	printf("# every pass on the GPU path, %d partition(s) (0: one per device)\n", *parts);
	return 1;
}

/* Why ip_gpu_option found no GPU: "" or that this build has no GPU path. */
static inline const char *
ip_no_gpu_why(void)
{
	return eng_gpu_built() ? "" : " (built without GPU support)";
}

/* The server's GPU counters (eng_gpu.h; zero without a GPU path). */
static inline eng_gpu_stats
ip_gpu_stats(eng_server *s)
{
	eng_gpu_stats st;

	eng_gpu_get_stats(s->gpu, &st);
	return st;
}

/* Drop everything in c's output. */
static inline void
ip_clear_out(eng_conn *c)
{
	c->out.len = c->out_pos = 0;
}

/* The error code replied to rid (0: none or not an error). */
static inline uint32_t
ip_error_of(eng_conn *c, uint64_t rid)
{
	tl_frame	f;

	if (ip_reply(c, rid, &f, NULL) != 1)
		return 0;
	return tl_error_code(&f);
}

/*
 * Do the hits of RESULT rid equal the reference ref[0..n_ref) for these
 * probes (every score, key, hash and `more`)? *applied gets the RESULT's
 * generation (applied may be NULL).
 */
static inline bool
ip_result_ok(eng_conn *c, uint64_t rid, int np, const tl_tpl *probes, uint32_t k,
			 float min_score, uint64_t *applied, const tl_entry *ref, int n_ref)
{
	tl_frame	f;
	uint8_t    *cp;
	tl_result	r;
	tl_probe_result *want = malloc(sizeof(tl_probe_result));
	bool		ok;

	if (ip_reply(c, rid, &f, &cp) != 1)
	{
		free(cp);
		free(want);
		return false;
	}
	ok = tl_parse_result(&f, &r) && r.n == (uint32_t) np;
	for (int i = 0; ok && i < np; i++)
	{
		tl_reference(&probes[i], ref, n_ref, k, min_score, want);
		ok = tl_same(&r.p[i], want);
		if (!ok)
			printf("# probe %d: got %u hits (more %u), want %u (more %u)\n", i,
				   r.p[i].n, r.p[i].more, want->n, want->more);
	}
	if (applied)
		*applied = r.applied;
	tl_result_free(&r);
	free(cp);
	free(want);
	return ok;
}

#endif							/* ENGINE_INPROC_H */
