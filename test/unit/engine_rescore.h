/*
 * engine_rescore.h: the fixture of test_engine_rescore.c: a gallery of NT
 * rows whose xids the test knows (ref_row), loaded into an in-process
 * engine, and the reference a refining search's RESULT is checked against
 * (refined_ok: the LSS order's certain cut, mcc_match_pair's scores, each
 * row's xids and flags). The tests themselves are in test_engine_rescore.c;
 * this header holds the state they share (one includer).
 */
#ifndef ENGINE_RESCORE_H
#define ENGINE_RESCORE_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eng_conn.h"
#include "eng_gallery.h"
#include "unit.h"
#include "engine_inproc.h"
#include "eng_log.h"
#include "eng_server.h"
#include "mcc_match.h"

#define NT 320					/* gallery rows loaded */
#define NI 24					/* rows a delta inserts */
#define NP 4					/* probes */
#define XMIN 6000				/* the snapshot xmin of the searches */

static eng_gpu_mode gpu_mode = ENG_GPU_OFF;
static int	gpu_parts;
static bool gpu_refine_off;
static tl_tpl *gt;				/* NT + NI templates, by key */
static tl_tpl probes[NP];
static const mcc_gallery_id G = {5, 16500, 77};

/* What the reference knows of a row version. */
typedef struct ref_row
{
	int64_t		key;
	uint64_t	ixid;
	uint64_t	dxid;
	bool		ins_settled;
	bool		del_committed;
	bool		live;			/* searchable (not purged) */
} ref_row;

static ref_row rows[NT + NI];
static int	n_rows;
static bool all_certain;		/* initial_rows: every row settled and live */

/* The xids a row is loaded with: settled, unknown inserters, deleted. */
static void
initial_rows(void)
{
	for (int i = 0; i < NT; i++)
	{
		ref_row    *r = &rows[i];

		memset(r, 0, sizeof(*r));
		r->key = i;
		r->live = true;
		switch (all_certain ? 0 : i % 4)
		{
			case 0:
			case 3:
				r->ixid = 0;	/* committed before every snapshot */
				break;
			case 1:
				r->ixid = i % 8 == 1 ? 5000 : 5001;
				break;
			case 2:
				r->ixid = 0;
				r->dxid = 7000;
				break;
		}
		r->ins_settled = r->ixid == 0;
	}
	n_rows = NT;
}

static bool
certain(const ref_row *r, uint64_t xmin)
{
	return r->ins_settled && r->ixid < xmin && r->dxid == 0;
}

/* ---- frames and replies --------------------------------------------------- */

static void
load_gallery(eng_server *s, eng_conn *c)
{
	eng_buf		b;
	int64_t		keys[NT];
	uint64_t	ix[NT];
	uint64_t	dx[NT];

	for (int i = 0; i < NT; i++)
	{
		keys[i] = rows[i].key;
		ix[i] = rows[i].ixid;
		dx[i] = rows[i].dxid;
	}
	eng_buf_init(&b);
	tl_load_begin(&b, 1, &G, 1, NT);
	tl_load_rows(&b, 1, NT, keys, ix, dx, gt);
	tl_load_end(&b, 1);
	ip_send(s, c, &b);
	eng_buf_free(&b);
}

/* Parse a refining RESULT of np probes into out[0 .. np); false if malformed. */
static bool
parse_rresult(const tl_frame *f, int np, uint64_t *searchable, tl_rprobe *out)
{
	uint32_t	n;
	tl_rprobe	   *p = tl_parse_refined(f, NT + NI, searchable, &n);

	if (p == NULL || n != (uint32_t) np)
	{
		tl_rprobes_free(p, p ? n : 0);
		return false;
	}
	memcpy(out, p, sizeof(tl_rprobe) * (size_t) np);
	free(p);
	return true;
}

static void
free_rprobes(tl_rprobe *p, int np)
{
	for (int i = 0; i < np; i++)
		free(p[i].h);
}

/* ---- the reference -------------------------------------------------------- */

static const ref_row *
row_of(int64_t key)
{
	for (int i = 0; i < n_rows; i++)
		if (rows[i].key == key && rows[i].live)
			return &rows[i];
	return NULL;
}

/*
 * Does RESULT rid hold, for probes p[0 .. np), exactly the candidates the
 * definition gives: LSS order, the certain cut, scores of mcc_match_pair,
 * the rows' xids and flags?
 */
static bool
refined_ok(eng_conn *c, uint64_t rid, const tl_tpl *p, int np, const tl_refine_spec *rf,
		   uint32_t extra, uint64_t xmin)
{
	mcc_match_work *w = tl_match_work();
	tl_entry	ref[NT + NI];
	tl_probe_result *want = malloc(sizeof(tl_probe_result));
	tl_rprobe		got[NP];
	tl_frame	f;
	uint8_t    *cp;
	uint64_t	searchable = 0;
	uint64_t	live = 0;
	int64_t		s;
	uint64_t	keep;
	bool		ok;

	memset(got, 0, sizeof(got));
	for (int i = 0; i < n_rows; i++)
	{
		ref[i].key = rows[i].key;
		ref[i].t = &gt[rows[i].key < NT ? rows[i].key : NT + rows[i].key - 1000];
		ref[i].live = rows[i].live;
		live += rows[i].live;
	}
	s = mcc_refine_count((int64_t) live, rf->fraction, rf->refine_min, rf->final_k);
	keep = (uint64_t) s + extra < live ? (uint64_t) s + extra : live;
	ok = ip_reply(c, rid, &f, &cp) == 1 && parse_rresult(&f, np, &searchable, got) &&
		searchable == live;
	for (int i = 0; ok && i < np; i++)
	{
		mcc_template_view pv = tl_view(&p[i]);
		uint32_t	n = 0;
		int64_t		n_certain = 0;

		tl_reference(&p[i], ref, n_rows, (uint32_t) keep, 0.0f, want);
		/* the cut: the shortest prefix with s certain entries, else all */
		while (n < want->n && n_certain < s)
			n_certain += certain(row_of(want->key[n++]), xmin);
		ok = got[i].n == n && got[i].more == (live > n);
		for (uint32_t j = 0; ok && j < n; j++)
		{
			const tl_rhit *h = &got[i].h[j];
			const ref_row *r = row_of(want->key[j]);
			mcc_template_view cv = tl_view(&gt[h->key < NT ? h->key : NT + h->key - 1000]);
			uint32_t	flags = (r->ins_settled ? MCC_COUNT_F_INS_COMMITTED : 0) |
				(r->dxid != 0 && r->del_committed ? MCC_COUNT_F_DEL_COMMITTED : 0) |
				(xmin != 0 && certain(r, xmin) ? MCC_CAND_F_CERTAIN : 0);
			float		score;
			mcc_error	err;

			ok = h->score == want->score[j] && h->key == want->key[j] &&
				h->hash == want->hash[j] &&
				mcc_match_pair(w, &pv, &cv, (mcc_method) rf->method, NULL, &score, &err) == MCC_OK &&
				memcmp(&score, &h->refined, sizeof(float)) == 0 &&
				h->ixid == r->ixid && h->dxid == r->dxid && h->flags == flags;
			if (!ok)
				printf("# probe %d hit %u: key %lld (want %lld), refined %.9g (want %.9g), flags %u (want %u)\n",
					   i, j, (long long) h->key, (long long) want->key[j], h->refined, score,
					   h->flags, flags);
		}
		if (!ok && got[i].n != n)
			printf("# probe %d: %u candidates (more %u), want %u of %u\n", i, got[i].n,
				   got[i].more, n, want->n);
	}
	free_rprobes(got, np);
	free(cp);
	free(want);
	return ok;
}

/* ---- servers -------------------------------------------------------------- */

static eng_server *
server_new(int threads, eng_conn **c)
{
	eng_server *s = calloc(1, sizeof(*s));
	eng_config	cfg = {.threads = threads, .delta_timeout_ms = 1000, .max_batch = 64,
	.gpu = gpu_mode, .gpu_partitions = gpu_parts, .gpu_refine_off = gpu_refine_off};

	eng_server_init(s, &cfg);
	*c = eng_conn_add(s, -1);
	initial_rows();
	load_gallery(s, *c);
	return s;
}

static void
server_free(eng_server *s)
{
	eng_server_destroy(s);
	free(s);
}

#endif							/* ENGINE_RESCORE_H */
