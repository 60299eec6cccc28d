/*
 * refine_testdata.h: templates and (probe, candidate) pairs for the checks
 * of GPU refinement: test/unit/test_refine_gpu_emu.c (the kernel's code
 * run on the CPU) and test/gpu/gpu_check_refine.c (the kernel on a GPU).
 * Both compare every score with mcc_match_candidate().
 *
 * A set holds templates (blobs and views) and pairs of indices:
 *   rt_add_synth     impressions of synthetic fingers (mcc_synth.h);
 *   rt_add_sizes     templates of 0, 1, 2 and 3 cylinders (subsets of a
 *                    real template), at the limits of the kernel's size
 *                    classes (32/33, 45/46, 64/65, 128/129 cylinders) and
 *                    200+ (up to 256);
 *   rt_add_fvc       FVC2002 records from ../shared/data (mindtct xyt and
 *                    FingerJetFX ISO; nothing when absent).
 */
#ifndef MCC_REFINE_TESTDATA_H
#define MCC_REFINE_TESTDATA_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_iso.h"
#include "mcc_match.h"
#include "mcc_synth.h"
#include "mcc_template.h"
#include "mcc_xyt.h"
#include "testgen.h"
#include "unit.h"
#include "testfvc.h"
#include "../tools/record_file.h"

typedef struct rt_set
{
	int			n;				/* templates */
	int			cap;
	uint8_t   **blob;
	size_t	   *size;
	mcc_template_view *v;
	int			npairs;
	int			pcap;
	int		   *pa;				/* probe template of pair i */
	int		   *pb;				/* candidate template of pair i */
} rt_set;

static inline void
rt_free(rt_set *s)
{
	for (int i = 0; i < s->n; i++)
		free(s->blob[i]);
	free(s->blob);
	free(s->size);
	free(s->v);
	free(s->pa);
	free(s->pb);
	memset(s, 0, sizeof(*s));
}

/* Keep a blob (taken over) as a template; its index, or -1. */
static inline int
rt_keep(rt_set *s, uint8_t *b, size_t size)
{
	mcc_error	err;

	if (!b)
		return -1;
	if (s->n == s->cap)
	{
		int			nc = s->cap ? 2 * s->cap : 256;

		s->blob = (uint8_t **) realloc(s->blob, sizeof(uint8_t *) * nc);
		s->size = (size_t *) realloc(s->size, sizeof(size_t) * nc);
		s->v = (mcc_template_view *) realloc(s->v, sizeof(mcc_template_view) * nc);
		s->cap = nc;
	}
	if (mcc_template_open(b, size, &s->v[s->n], &err) != MCC_OK)
	{
		printf("# rt_keep: %s\n", err.message);
		free(b);
		return -1;
	}
	s->blob[s->n] = b;
	s->size[s->n] = size;
	return s->n++;
}

/* A template from minutiae; its index, or -1. */
static inline int
rt_build(rt_set *s, const mcc_minutiae *ms)
{
	mcc_error	err;
	size_t		size;
	uint8_t    *b;
	const mcc_profile *p = mcc_profile_by_id(MCC_PROFILE_GPU2015);

	if (mcc_template_build(ms, p, NULL, &size, &err) != MCC_OK)
		return -1;
	b = (uint8_t *) malloc(size);
	if (!b || mcc_template_build(ms, p, b, &size, &err) != MCC_OK)
	{
		free(b);
		return -1;
	}
	return rt_keep(s, b, size);
}

/*
 * Template k with only its cylinders c where keep(c) (every minutia kept):
 * the layout of mcc_template.h rewritten; its index, or -1.
 */
static inline int
rt_subset(rt_set *s, int k, int first, int count)
{
	const mcc_template_view *v = &s->v[k];
	int			nc = 0;
	size_t		size;
	uint8_t    *b;
	size_t		bo;
	size_t		mo;
	size_t		cw = (size_t) v->words * 8;
	uint16_t	n16;

	for (int c = first; c < v->n_cyl && nc < count; c++)
		nc++;
	size = mcc_template_size(v->profile, v->n_min, nc);
	b = (uint8_t *) calloc(1, size);
	if (!b)
		return -1;
	memcpy(b, v->base, MCC_TEMPLATE_HDRSZ + (size_t) MCC_MINUTIA_RECSZ * v->n_min);
	n16 = (uint16_t) nc;
	memcpy(b + 16, &n16, 2);
	bo = (MCC_TEMPLATE_HDRSZ + (size_t) MCC_MINUTIA_RECSZ * v->n_min + 7) & ~(size_t) 7;
	mo = bo + cw * nc;
	for (int i = 0; i < nc; i++)
	{
		memcpy(b + bo + cw * i, v->bits + cw * (first + i), cw);
		memcpy(b + mo + (size_t) MCC_CYLMETA_RECSZ * i, v->meta + (size_t) MCC_CYLMETA_RECSZ * (first + i),
			   MCC_CYLMETA_RECSZ);
	}
	return rt_keep(s, b, size);
}

static inline void
rt_pair(rt_set *s, int a, int b)
{
	if (a < 0 || b < 0)
		return;
	if (s->npairs == s->pcap)
	{
		int			nc = s->pcap ? 2 * s->pcap : 1024;

		s->pa = (int *) realloc(s->pa, sizeof(int) * nc);
		s->pb = (int *) realloc(s->pb, sizeof(int) * nc);
		s->pcap = nc;
	}
	s->pa[s->npairs] = a;
	s->pb[s->npairs] = b;
	s->npairs++;
}

/*
 * nf synthetic fingers, impressions 0 and 1 (gallery) and 2 (probe): each
 * probe against its two mates and `others` other templates.
 */
static inline void
rt_add_synth(rt_set *s, int nf, int others, uint64_t seed)
{
	mcc_synth_params sp;
	mcc_minutiae *master = (mcc_minutiae *) malloc(sizeof(mcc_minutiae));
	mcc_minutiae *imp = (mcc_minutiae *) malloc(sizeof(mcc_minutiae));
	int			t0 = s->n;
	int		   *probe = (int *) malloc(sizeof(int) * nf);
	int		   *gal = (int *) malloc(sizeof(int) * 2 * nf);
	tg_rng		r = {seed};

	mcc_synth_defaults(&sp);
	sp.seed = seed;
	for (int f = 0; f < nf; f++)
	{
		mcc_synth_master(&sp, (uint64_t) f, master);
		for (int i = 0; i < 3; i++)
		{
			int			t;

			mcc_synth_impression(&sp, master, (uint64_t) f, (uint64_t) i, imp);
			t = rt_build(s, imp);
			if (i < 2)
				gal[2 * f + i] = t;
			else
				probe[f] = t;
		}
	}
	for (int f = 0; f < nf; f++)
	{
		rt_pair(s, probe[f], gal[2 * f]);
		rt_pair(s, probe[f], gal[2 * f + 1]);
		for (int o = 0; o < others; o++)
			rt_pair(s, probe[f], gal[tg_int(&r, 0, 2 * nf - 1)]);
	}
	(void) t0;
	free(probe);
	free(gal);
	free(master);
	free(imp);
}

/*
 * Templates of every size that matters to the kernel: 0..3 cylinders, the
 * class limits (32/33, 45/46, 64/65, 128/129), 200+ and 256 (dense random minutiae and
 * a noisy impression of each). full: every one against every other; else
 * a third of the pairs of templates below 200 cylinders, and each big one
 * against its impression, the next big one and a few small ones (the CPU
 * reference of a 256-cylinder relaxation costs milliseconds).
 */
static inline void
rt_add_sizes(rt_set *s, uint64_t seed, int full)
{
	tg_rng		r = {seed};
	mcc_minutiae *ms = (mcc_minutiae *) malloc(sizeof(mcc_minutiae));
	mcc_minutiae *im = (mcc_minutiae *) malloc(sizeof(mcc_minutiae));
	int			t0 = s->n;
	static const int want[] = {32, 33, 45, 46, 64, 65, 128, 129};
	int			big = -1;

	/* dense sets: 200..256 minutiae and their impressions */
	for (int i = 0; i < 6; i++)
	{
		int			t;

		tg_minutiae(&r, ms, i == 0 ? 256 : 200, 256, 9.0);
		t = rt_build(s, ms);
		if (t >= 0 && (big < 0 || s->v[t].n_cyl > s->v[big].n_cyl))
			big = t;
		tg_impression(&r, ms, im, 0.9, 2, 0.08, 4);
		rt_build(s, im);
	}
	/* medium sets around 64 and 128 cylinders: subsets of the densest template */
	if (big >= 0)
	{
		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
			if (s->v[big].n_cyl >= want[i])
			{
				rt_subset(s, big, 0, want[i]);
				rt_subset(s, big, s->v[big].n_cyl - want[i], want[i]);
			}
		for (int c = 0; c <= 3; c++)
			rt_subset(s, big, 17, c);
	}
	/* ordinary sets and impressions */
	for (int i = 0; i < 4; i++)
	{
		tg_minutiae(&r, ms, 20, 60, 12.0);
		rt_build(s, ms);
		tg_impression(&r, ms, im, 0.85, 3, 0.1, 3);
		rt_build(s, im);
	}
	for (int a = t0; a < s->n; a++)
		for (int b = t0; b < s->n; b++)
		{
			int			ba = s->v[a].n_cyl >= 200;
			int			bb = s->v[b].n_cyl >= 200;

			if (full || (!ba && !bb && (a + 2 * b) % 3 == 0) || (ba && bb && (b == a + 1 || b == a + 2)) ||
				(ba != bb && (a + b) % 9 == 0))
				rt_pair(s, a, b);
		}
	free(ms);
	free(im);
}

/*
 * FVC2002 DB db, set B, in one encoding ("xyt" or "ist"): the 80 records,
 * and pairs: impression `probe_imp` of every finger against all 80 (every
 * `stride`-th candidate). Returns the records loaded (0: absent).
 */
static inline int
rt_add_fvc(rt_set *s, const char *data, int db, const char *ext, int stride)
{
	mcc_minutiae *ms = (mcc_minutiae *) malloc(sizeof(mcc_minutiae));
	int			idx[80];
	int			loaded = 0;

	for (int f = 0; f < 10; f++)
		for (int i = 0; i < 8; i++)
		{
			const char *dir = strcmp(ext, "xyt") == 0 ? "nbis-mindtct-xyt" : "fingerjetfx-iso19794-2-2005";
			mcc_error	err;

			idx[f * 8 + i] = -1;
			if (rf_read_print(data, dir, &tfvc_dbs[db - 1], 101 + f, 1 + i, ext, ms, &err) == MCC_OK)
				idx[f * 8 + i] = rt_build(s, ms);
			loaded += idx[f * 8 + i] >= 0;
		}
	for (int f = 0; f < 10; f++)
		for (int k = 0; k < 80; k += stride)
			if (idx[f * 8] >= 0 && idx[k] >= 0)
				rt_pair(s, idx[f * 8], idx[k]);
	free(ms);
	return loaded;
}

/* Largest cylinder count of the set. */
static inline int
rt_max_cyl(const rt_set *s)
{
	int			m = 0;

	for (int i = 0; i < s->n; i++)
		if (s->v[i].n_cyl > m)
			m = s->v[i].n_cyl;
	return m;
}

/* Pairs whose larger side has at least lo cylinders. */
static inline int
rt_count_pairs(const rt_set *s, int lo)
{
	int			n = 0;

	for (int i = 0; i < s->npairs; i++)
	{
		int			a = s->v[s->pa[i]].n_cyl;
		int			b = s->v[s->pb[i]].n_cyl;

		n += (a > b ? a : b) >= lo;
	}
	return n;
}

#endif							/* MCC_REFINE_TESTDATA_H */
