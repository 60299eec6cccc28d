/*
 * engine_testlib.h: helpers shared by the engine's tests and benchmark:
 * random templates, frames of mcc_proto.h, reply parsing, and the
 * brute-force reference search that every engine answer is compared with
 * (mcc_lss_score over every live entry, sorted in identify()'s order).
 */
#ifndef ENGINE_TESTLIB_H
#define ENGINE_TESTLIB_H

#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eng_wire.h"
#include "mcc_cmp.h"
#include "mcc_hash.h"
#include "mcc_lss.h"
#include "mcc_match.h"
#include "mcc_proto.h"
#include "mcc_synth.h"
#include "mcc_template.h"
#include "testgen.h"

/*
 * The work area of the reference mcc_match_candidate() calls, made once and
 * kept for the process (the refined checks score thousands of pairs).
 */
static inline mcc_match_work *
tl_match_work(void)
{
	static mcc_match_work *w;

	if (w == NULL)
	{
		w = malloc(mcc_match_work_size());
		mcc_match_work_init(w);
	}
	return w;
}

/* A template blob (first 4 bytes: a zero varlena header). */
typedef struct tl_tpl
{
	uint8_t    *b;
	size_t		n;
} tl_tpl;

/* Build a template of the default profile from minutiae; b NULL on failure. */
static inline tl_tpl
tl_build(const mcc_minutiae *ms)
{
	const mcc_profile *p = mcc_profile_by_id(MCC_PROFILE_DEFAULT);
	tl_tpl		t = {NULL, 0};
	mcc_error	err;

	if (mcc_template_build(ms, p, NULL, &t.n, &err) != MCC_OK)
		return t;
	t.b = calloc(1, t.n);
	if (t.b && mcc_template_build(ms, p, t.b, &t.n, &err) != MCC_OK)
	{
		free(t.b);
		t.b = NULL;
	}
	return t;
}

/*
 * n templates: every third one an impression of one of `fingers` masters
 * (so that high scores and near ties occur), the others unrelated fingers.
 */
static inline tl_tpl *
tl_templates(uint64_t seed, int n, int fingers)
{
	tg_rng		r = {seed};
	tl_tpl	   *t = calloc((size_t) n, sizeof(tl_tpl));
	mcc_minutiae *master = calloc((size_t) (fingers > 0 ? fingers : 1), sizeof(mcc_minutiae));
	mcc_minutiae ms;

	for (int f = 0; f < fingers; f++)
		tg_minutiae(&r, &master[f], 25, 50, 12.0);
	for (int i = 0; i < n; i++)
	{
		do
		{
			if (fingers > 0 && i % 3 == 0)
				tg_impression(&r, &master[tg_int(&r, 0, fingers - 1)], &ms, 0.85, 4, 0.1, 3);
			else
				tg_minutiae(&r, &ms, 20, 55, 12.0);
			t[i] = tl_build(&ms);
		} while (t[i].b == NULL);
	}
	free(master);
	return t;
}

/*
 * Synthetic impressions from mcc_synth (realistic minutiae and cylinder
 * counts): for a gallery impressions 0 and 1 of finger i / 2, for probes
 * impression 5 of finger i. Exits if one cannot be built (benchmarks).
 */
static inline tl_tpl *
tl_synth_templates(uint64_t seed, int n, bool probes)
{
	mcc_synth_params sp;
	mcc_minutiae master;
	mcc_minutiae imp;
	tl_tpl	   *t = calloc((size_t) n, sizeof(tl_tpl));

	mcc_synth_defaults(&sp);
	sp.seed = seed;
	for (int i = 0; i < n; i++)
	{
		uint64_t	finger = probes ? (uint64_t) i : (uint64_t) (i / 2);

		mcc_synth_master(&sp, finger, &master);
		mcc_synth_impression(&sp, &master, finger, probes ? 5 : (uint64_t) (i % 2), &imp);
		t[i] = tl_build(&imp);
		if (t[i].b == NULL)
		{
			fprintf(stderr, "could not build template %d\n", i);
			exit(1);
		}
	}
	return t;
}

static inline void
tl_templates_free(tl_tpl *t, int n)
{
	for (int i = 0; i < n; i++)
		free(t[i].b);
	free(t);
}

/* Open a test template (they were built valid). */
static inline mcc_template_view
tl_view(const tl_tpl *t)
{
	mcc_template_view v;
	mcc_error	err;

	mcc_template_open(t->b, t->n, &v, &err);
	return v;
}

/* ---- frames ------------------------------------------------------------ */

static inline void
tl_hello(eng_buf *b, uint64_t rid)
{
	size_t		f = eng_frame_begin(b, MCC_MSG_HELLO, rid);

	eng_buf_u32(b, MCC_PROTO_VERSION);
	eng_buf_u32(b, 4242);
	eng_frame_end(b, f);
}

/* SEARCH's refine fields (mcc_proto.h); method MCC_LSS: a plain search. */
typedef struct tl_refine_spec
{
	uint32_t	method;
	uint32_t	final_k;
	double		fraction;
	uint32_t	refine_min;
} tl_refine_spec;

/*
 * A SEARCH, refining with rf (NULL: plain), with a visibility count at xmin
 * when more than `above` are searchable (xmin 0: none).
 */
static inline void
tl_search_full(eng_buf *b, uint64_t rid, const mcc_gallery_id *g, uint64_t need,
			   uint32_t k, float min_score, uint64_t xmin, uint64_t above,
			   const tl_refine_spec *rf, int n, const tl_tpl *probes)
{
	size_t		f = eng_frame_begin(b, MCC_MSG_SEARCH, rid);

	eng_buf_gallery(b, g);
	eng_buf_u64(b, need);
	eng_buf_u32(b, k);
	eng_buf_f32(b, min_score);
	eng_buf_u64(b, xmin);
	eng_buf_u64(b, above);
	eng_buf_u32(b, rf ? rf->method : 0);
	eng_buf_u32(b, rf ? rf->final_k : 0);
	eng_buf_f64(b, rf ? rf->fraction : 0.0);
	eng_buf_u32(b, rf ? rf->refine_min : 0);
	eng_buf_u32(b, (uint32_t) n);
	for (int i = 0; i < n; i++)
		eng_buf_bytes(b, probes[i].b, (uint32_t) probes[i].n);
	eng_frame_end(b, f);
}

/* SEARCH with a visibility count at xmin when more than `above` are searchable. */
static inline void
tl_search_count(eng_buf *b, uint64_t rid, const mcc_gallery_id *g, uint64_t need,
				uint32_t k, float min_score, uint64_t xmin, uint64_t above,
				int n, const tl_tpl *probes)
{
	tl_search_full(b, rid, g, need, k, min_score, xmin, above, NULL, n, probes);
}

/* SEARCH without a count. */
static inline void
tl_search(eng_buf *b, uint64_t rid, const mcc_gallery_id *g, uint64_t need,
		  uint32_t k, float min_score, int n, const tl_tpl *probes)
{
	tl_search_count(b, rid, g, need, k, min_score, 0, 0, n, probes);
}

/* REFINE of one item: probe and its n candidates, with a method. */
static inline void
tl_refine(eng_buf *b, uint64_t rid, uint32_t method, int n_items,
		  const tl_tpl *probes, const int *n, const tl_tpl *const *cand)
{
	size_t		f = eng_frame_begin(b, MCC_MSG_REFINE, rid);

	eng_buf_u32(b, method);
	eng_buf_u32(b, (uint32_t) n_items);
	for (int i = 0; i < n_items; i++)
	{
		eng_buf_bytes(b, probes[i].b, (uint32_t) probes[i].n);
		eng_buf_u32(b, (uint32_t) n[i]);
		for (int j = 0; j < n[i]; j++)
			eng_buf_bytes(b, cand[i][j].b, (uint32_t) cand[i][j].n);
	}
	eng_frame_end(b, f);
}

/* LOAD_BEGIN with a priority and MCC_LOAD_* flags. */
static inline void
tl_load_begin_prof(eng_buf *b, uint64_t rid, const mcc_gallery_id *g, uint64_t gen,
				   uint64_t expected, int32_t priority, uint32_t flags, uint32_t prof_id)
{
	size_t		f = eng_frame_begin(b, MCC_MSG_LOAD_BEGIN, rid);

	eng_buf_gallery(b, g);
	eng_buf_u64(b, gen);
	eng_buf_u32(b, prof_id);
	eng_buf_u64(b, expected);
	eng_buf_u32(b, (uint32_t) priority);
	eng_buf_u32(b, flags);
	eng_frame_end(b, f);
}

static inline void
tl_load_begin_p(eng_buf *b, uint64_t rid, const mcc_gallery_id *g, uint64_t gen,
				uint64_t expected, int32_t priority, uint32_t flags)
{
	tl_load_begin_prof(b, rid, g, gen, expected, priority, flags, MCC_PROFILE_DEFAULT);
}

static inline void
tl_load_begin(eng_buf *b, uint64_t rid, const mcc_gallery_id *g, uint64_t gen,
			  uint64_t expected)
{
	tl_load_begin_p(b, rid, g, gen, expected, 0, 0);
}

/* A load row; keys, xids and delete xids come from the caller's arrays. */
static inline void
tl_load_rows(eng_buf *b, uint64_t rid, int n, const int64_t *keys,
			 const uint64_t *ixid, const uint64_t *dxid, const tl_tpl *t)
{
	size_t		f = eng_frame_begin(b, MCC_MSG_LOAD_ROWS, rid);

	eng_buf_u32(b, (uint32_t) n);
	for (int i = 0; i < n; i++)
	{
		eng_buf_i64(b, keys[i]);
		eng_buf_u64(b, ixid[i]);
		eng_buf_u64(b, dxid ? dxid[i] : 0);
		eng_buf_bytes(b, t[i].b, (uint32_t) t[i].n);
	}
	eng_frame_end(b, f);
}

static inline void
tl_load_end(eng_buf *b, uint64_t rid)
{
	size_t		f = eng_frame_begin(b, MCC_MSG_LOAD_END, rid);

	eng_frame_end(b, f);
}

/* DELTA: n_ins inserts (keys, templates), n_del deletes (keys, hashes). */
static inline void
tl_delta(eng_buf *b, const mcc_gallery_id *g, uint64_t gen, uint64_t xid,
		 int n_ins, const int64_t *ikeys, const tl_tpl *itpl,
		 int n_del, const int64_t *dkeys, const uint64_t *dhash, bool more)
{
	size_t		f = eng_frame_begin(b, MCC_MSG_DELTA, 0);

	eng_buf_gallery(b, g);
	eng_buf_u64(b, gen);
	eng_buf_u64(b, xid);
	eng_buf_u32(b, (uint32_t) n_ins);
	eng_buf_u32(b, (uint32_t) n_del);
	for (int i = 0; i < n_ins; i++)
	{
		eng_buf_i64(b, ikeys[i]);
		eng_buf_bytes(b, itpl[i].b, (uint32_t) itpl[i].n);
	}
	for (int i = 0; i < n_del; i++)
	{
		eng_buf_i64(b, dkeys[i]);
		eng_buf_u64(b, dhash[i]);
	}
	eng_frame_end(b, f);
	if (more && !b->failed)
	{
		uint16_t	fl = MCC_FRAME_MORE;

		memcpy(b->data + f + 6, &fl, 2);
	}
}

static inline void
tl_reload(eng_buf *b, const mcc_gallery_id *g, uint64_t gen)
{
	size_t		f = eng_frame_begin(b, MCC_MSG_RELOAD, 0);

	eng_buf_gallery(b, g);
	eng_buf_u64(b, gen);
	eng_frame_end(b, f);
}

static inline void
tl_gallery_msg(eng_buf *b, uint16_t type, uint64_t rid, const mcc_gallery_id *g)
{
	size_t		f = eng_frame_begin(b, type, rid);

	eng_buf_gallery(b, g);
	eng_frame_end(b, f);
}

static inline void
tl_settle(eng_buf *b, uint64_t rid, const mcc_gallery_id *g, uint64_t horizon,
		  int n, const uint64_t *xids, const uint32_t *states)
{
	size_t		f = eng_frame_begin(b, MCC_MSG_SETTLE, rid);

	eng_buf_gallery(b, g);
	eng_buf_u64(b, horizon);
	eng_buf_u32(b, (uint32_t) n);
	for (int i = 0; i < n; i++)
	{
		eng_buf_u64(b, xids[i]);
		eng_buf_u32(b, states[i]);
	}
	eng_frame_end(b, f);
}

static inline void
tl_cancel(eng_buf *b, uint64_t target)
{
	size_t		f = eng_frame_begin(b, MCC_MSG_CANCEL, 0);

	eng_buf_u64(b, target);
	eng_frame_end(b, f);
}

static inline void
tl_empty(eng_buf *b, uint16_t type, uint64_t rid)
{
	size_t		f = eng_frame_begin(b, type, rid);

	eng_frame_end(b, f);
}

/* ---- replies ----------------------------------------------------------- */

typedef struct tl_frame
{
	mcc_frame_hdr h;
	const uint8_t *p;
} tl_frame;

/* The next complete frame of data[*pos..len), or false. */
static inline bool
tl_next(const uint8_t *data, size_t len, size_t *pos, tl_frame *f)
{
	if (len - *pos < ENG_FRAME_HDRSZ)
		return false;
	eng_frame_decode(data + *pos, &f->h);
	if (len - *pos - ENG_FRAME_HDRSZ < f->h.length)
		return false;
	f->p = data + *pos + ENG_FRAME_HDRSZ;
	*pos += ENG_FRAME_HDRSZ + f->h.length;
	return true;
}

#define TL_MAX_HITS 4096

typedef struct tl_probe_result
{
	uint32_t	more;
	uint32_t	n;
	float		score[TL_MAX_HITS];
	int64_t		key[TL_MAX_HITS];
	uint64_t	hash[TL_MAX_HITS];
} tl_probe_result;

typedef struct tl_group
{
	uint64_t	ixid;
	uint64_t	dxid;
	uint32_t	flags;
	uint32_t	entries;
} tl_group;

typedef struct tl_result
{
	uint64_t	applied;
	uint32_t	unsettled;
	uint64_t	searchable;
	uint32_t	count_state;
	uint64_t	certain;
	uint32_t	n_groups;
	tl_group   *groups;			/* n_groups, malloc'ed */
	uint32_t	n;
	tl_probe_result *p;			/* n, malloc'ed */
} tl_result;

/*
 * Read a RESULT's head (mcc_proto.h: counts and version groups) into r, the
 * groups malloc'ed; false if malformed. Plain and refining RESULTs share it.
 */
static inline bool
tl_rd_result_head(eng_rd *rd, tl_result *r)
{
	r->applied = eng_rd_u64(rd);
	r->unsettled = eng_rd_u32(rd);
	r->searchable = eng_rd_u64(rd);
	r->count_state = eng_rd_u32(rd);
	r->certain = eng_rd_u64(rd);
	r->n_groups = eng_rd_u32(rd);
	if (rd->bad || r->n_groups > MCC_PROTO_MAX_GROUPS)
		return false;
	r->groups = calloc(r->n_groups ? r->n_groups : 1, sizeof(tl_group));
	for (uint32_t i = 0; i < r->n_groups; i++)
	{
		r->groups[i].ixid = eng_rd_u64(rd);
		r->groups[i].dxid = eng_rd_u64(rd);
		r->groups[i].flags = eng_rd_u32(rd);
		r->groups[i].entries = eng_rd_u32(rd);
	}
	return !rd->bad;
}

/* Parse a RESULT payload; false if malformed. */
static inline bool
tl_parse_result(const tl_frame *f, tl_result *r)
{
	eng_rd		rd;

	memset(r, 0, sizeof(*r));
	if (f->h.type != MCC_MSG_RESULT)
		return false;
	eng_rd_init(&rd, f->p, f->h.length);
	if (!tl_rd_result_head(&rd, r))
		return false;
	r->n = eng_rd_u32(&rd);
	if (rd.bad || r->n > 4096)
		return false;
	r->p = calloc(r->n ? r->n : 1, sizeof(tl_probe_result));
	for (uint32_t i = 0; i < r->n; i++)
	{
		r->p[i].more = eng_rd_u32(&rd);
		r->p[i].n = eng_rd_u32(&rd);
		if (rd.bad || r->p[i].n > TL_MAX_HITS)
			return false;
		for (uint32_t j = 0; j < r->p[i].n; j++)
		{
			r->p[i].score[j] = eng_rd_f32(&rd);
			r->p[i].key[j] = eng_rd_i64(&rd);
			r->p[i].hash[j] = eng_rd_u64(&rd);
		}
	}
	return eng_rd_done(&rd);
}

static inline void
tl_result_free(tl_result *r)
{
	free(r->p);
	r->p = NULL;
	free(r->groups);
	r->groups = NULL;
}

/* One candidate of a refining RESULT (mcc_proto.h: SEARCH with `refine`). */
typedef struct tl_rhit
{
	float		score;			/* LSS */
	int64_t		key;
	uint64_t	hash;
	float		refined;
	uint64_t	ixid;
	uint64_t	dxid;
	uint32_t	flags;
} tl_rhit;

typedef struct tl_rprobe
{
	uint32_t	more;
	uint32_t	total;			/* MCC_RESULT_TOP: the shortlist's size */
	uint32_t	n;
	tl_rhit    *h;				/* n (+1), malloc'ed */
} tl_rprobe;

static inline void
tl_rprobes_free(tl_rprobe *p, uint32_t np)
{
	for (uint32_t i = 0; p != NULL && i < np; i++)
		free(p[i].h);
	free(p);
}

/*
 * Parse a refining RESULT: its probes (*np of them, each at most max_hits
 * candidates), malloc'ed, and its searchable count; NULL if malformed.
 */
static inline tl_rprobe *
tl_parse_refined(const tl_frame *f, uint32_t max_hits, uint64_t *searchable, uint32_t *np)
{
	eng_rd		rd;
	tl_result	head;
	tl_rprobe  *out;
	bool		ok;

	memset(&head, 0, sizeof(head));
	if (f->h.type != MCC_MSG_RESULT)
		return NULL;
	eng_rd_init(&rd, f->p, f->h.length);
	ok = tl_rd_result_head(&rd, &head);
	tl_result_free(&head);
	*searchable = head.searchable;
	*np = eng_rd_u32(&rd);
	if (!ok || rd.bad || *np > 4096)
		return NULL;
	out = calloc(*np ? *np : 1, sizeof(tl_rprobe));
	for (uint32_t i = 0; i < *np && !rd.bad; i++)
	{
		out[i].more = eng_rd_u32(&rd);
		out[i].total = (out[i].more & MCC_RESULT_TOP) ? eng_rd_u32(&rd) : 0;
		out[i].n = eng_rd_u32(&rd);
		if (rd.bad || out[i].n > max_hits)
			break;
		out[i].h = calloc(out[i].n + 1, sizeof(tl_rhit));
		for (uint32_t j = 0; j < out[i].n; j++)
		{
			tl_rhit    *h = &out[i].h[j];

			h->score = eng_rd_f32(&rd);
			h->key = eng_rd_i64(&rd);
			h->hash = eng_rd_u64(&rd);
			h->refined = eng_rd_f32(&rd);
			h->ixid = eng_rd_u64(&rd);
			h->dxid = eng_rd_u64(&rd);
			h->flags = eng_rd_u32(&rd);
		}
	}
	if (!eng_rd_done(&rd))
	{
		tl_rprobes_free(out, *np);
		return NULL;
	}
	return out;
}

/* The code of an ERROR frame (0 if not an error). */
static inline uint32_t
tl_error_code(const tl_frame *f)
{
	uint32_t	code;

	if (f->h.type != MCC_MSG_ERROR || f->h.length < 4)
		return 0;
	memcpy(&code, f->p, 4);
	return code;
}

/* ---- the reference ----------------------------------------------------- */

/* An entry of the reference gallery. */
typedef struct tl_entry
{
	int64_t		key;
	const tl_tpl *t;
	bool		live;
} tl_entry;

/* Sort order of identify(): score desc, key asc, then hash asc. */
static inline int
tl_cmp_hit(float sa, int64_t ka, uint64_t ha, float sb, int64_t kb, uint64_t hb)
{
	int			c = MCC_CMP(sb, sa);

	c = MCC_CMP_THEN(c, ka, kb);
	return MCC_CMP_THEN(c, ha, hb);
}

/*
 * Brute force: score probe against every live entry with mcc_lss_score,
 * keep those >= min_score, sort, cut at k. Fills out (n, hits, more).
 */
static inline void
tl_reference(const tl_tpl *probe, const tl_entry *e, int n, uint32_t k,
			 float min_score, tl_probe_result *out)
{
	mcc_template_view pv;
	mcc_template_view gv;
	mcc_error	err;
	mcc_probe  *q = aligned_alloc(64, (mcc_probe_size() + 63) & ~(size_t) 63);
	int			m = 0;
	float	   *s = malloc(sizeof(float) * (n ? n : 1));
	int64_t    *key = malloc(sizeof(int64_t) * (n ? n : 1));
	uint64_t   *h = malloc(sizeof(uint64_t) * (n ? n : 1));

	memset(out, 0, sizeof(*out));
	mcc_template_open(probe->b, probe->n, &pv, &err);
	mcc_probe_init(q, &pv);
	for (int i = 0; i < n; i++)
	{
		float		sc;
		int			j;

		if (!e[i].live)
			continue;
		mcc_template_open(e[i].t->b, e[i].t->n, &gv, &err);
		sc = mcc_lss_score(q, &gv);
		if (!(sc >= min_score))
			continue;
		/* insertion into the sorted prefix */
		j = m++;
		while (j > 0 && tl_cmp_hit(sc, e[i].key, mcc_template_hash(e[i].t->b, e[i].t->n),
								   s[j - 1], key[j - 1], h[j - 1]) < 0)
		{
			s[j] = s[j - 1];
			key[j] = key[j - 1];
			h[j] = h[j - 1];
			j--;
		}
		s[j] = sc;
		key[j] = e[i].key;
		h[j] = mcc_template_hash(e[i].t->b, e[i].t->n);
	}
	out->n = (uint32_t) m < k ? (uint32_t) m : k;
	if (out->n > TL_MAX_HITS)
		out->n = TL_MAX_HITS;
	out->more = (uint32_t) m > out->n;
	for (uint32_t i = 0; i < out->n; i++)
	{
		out->score[i] = s[i];
		out->key[i] = key[i];
		out->hash[i] = h[i];
	}
	free(s);
	free(key);
	free(h);
	free(q);
}

/* Do two probe results agree hit for hit (scores compared exactly)? */
static inline bool
tl_same(const tl_probe_result *a, const tl_probe_result *b)
{
	if (a->n != b->n || a->more != b->more)
		return false;
	for (uint32_t i = 0; i < a->n; i++)
		if (a->score[i] != b->score[i] || a->key[i] != b->key[i] || a->hash[i] != b->hash[i])
			return false;
	return true;
}

#endif							/* ENGINE_TESTLIB_H */
