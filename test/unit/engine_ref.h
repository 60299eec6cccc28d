/*
 * engine_ref.h: what a test's table holds, the reference every engine
 * answer is compared with (ip_result_ok, engine_inproc.h): rows by key and
 * template, REF_CAP of them at most, and the frames that load it. The
 * includer defines REF_CAP, NT, its gallery templates gt (ref_all: gt's NT
 * templates as keys 0..NT-1) and its gallery id G first; the state is
 * static, one reference per test program (test_engine_server.c,
 * test_engine_gpu.c).
 */
#ifndef ENGINE_REF_H
#define ENGINE_REF_H

#include "engine_inproc.h"

static tl_entry ref[REF_CAP];
static int	n_ref;

static void
ref_reset(void)
{
	n_ref = 0;
}

static void
ref_add(int64_t key, const tl_tpl *t)
{
	ref[n_ref].key = key;
	ref[n_ref].t = t;
	ref[n_ref].live = true;
	n_ref++;
}

/* The reference holds the NT templates of gt as keys 0..NT-1, and nothing else. */
static void
ref_all(void)
{
	ref_reset();
	for (int i = 0; i < NT; i++)
		ref_add(i, &gt[i]);
}

/* ip_result_ok on this reference (applied: the RESULT's, if not NULL). */
static bool
result_ok(eng_conn *c, uint64_t rid, int np, const tl_tpl *probes, uint32_t k,
		  float min_score, uint64_t *applied)
{
	return ip_result_ok(c, rid, np, probes, k, min_score, applied, ref, n_ref);
}

/*
 * Frames into b that load the reference's live rows as generation gen of
 * the includer's gallery G, profile prof_id, row i inserted by ixid[i]
 * (every row by xid 5 if ixid is NULL).
 */
static void
ref_load_frames(eng_buf *b, uint64_t rid, uint64_t gen, const uint64_t *ixid, uint32_t prof_id)
{
	int64_t		keys[REF_CAP];
	uint64_t	xid[REF_CAP];
	tl_tpl		t[REF_CAP];
	int			n = 0;

	for (int i = 0; i < n_ref; i++)
		if (ref[i].live)
		{
			keys[n] = ref[i].key;
			xid[n] = ixid ? ixid[i] : 5;
			t[n] = *ref[i].t;
			n++;
		}
	tl_load_begin_prof(b, rid, &G, gen, (uint64_t) n, 0, 0, prof_id);
	for (int i = 0; i < n; i += 100)
		tl_load_rows(b, rid, n - i < 100 ? n - i : 100, keys + i, xid + i, NULL, t + i);
	tl_load_end(b, rid);
}

#endif							/* ENGINE_REF_H */
