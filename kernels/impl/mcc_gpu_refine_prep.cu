/*
 * mcc_gpu_refine_prep.cu: the host's preparation of an mcc_gpu_refine call
 * (mcc_gpu_refine_prep.h): pairs checked and classified, the pinned host
 * image, the device pairs placed. Host code only.
 *
 * Shares: the pairs are cut into contiguous shares (one when there are few,
 * up to MCC_JOB_LIST_SHARES_MAX threads for a large shortlist). Each share classifies
 * its pairs into counts of its own; the counts are summed in share order,
 * so each share knows where its pairs of each (partition, class) go, and
 * places them there: the device list is the one a single loop makes. A
 * template candidate's partition depends on how many such pairs came
 * before it (contiguous shares of them per partition), counted per share
 * first. The first failing share's first error is the call's, as one loop
 * would stop at it.
 */
#include <stdlib.h>
#include <string.h>

#include "mcc_gpu_refine_prep.h"

/* Pairs read ahead of the one being prepared. */
#define RF_AHEAD 8

/* One thread's share of the pairs, [i0, i1), and what it found. */
typedef struct rf_share
{
	mcc_gpu    *g;
	rf_call    *c;
	size_t		i0;
	size_t		i1;
	int			phase;			/* 0: classify, 1: place */
	size_t		vview;			/* pairs of template candidates before i0 */
	size_t		nview;			/* ... in the whole call */
	size_t		ndev;
	size_t		cnt[MCC_GPU_MAX_DEVICES][RP_NCLASS];
	uint64_t	gmax[MCC_GPU_MAX_DEVICES][RP_NCLASS];
	uint64_t	rmax[MCC_GPU_MAX_DEVICES][RP_NCLASS];
	size_t		pos[MCC_GPU_MAX_DEVICES][RP_NCLASS];	/* placing: the next slot of each */
	mcc_gpu_code rc;
	mcc_error	err;
} rf_share;

/*
 * Ask for the host record of pair i's gallery template ahead of its use:
 * records are read at random, and a shortlist of thousands of candidates
 * would otherwise wait on each miss in turn.
 */
static inline void
prefetch_gallery(const mcc_gpu *g, const mcc_gpu_pair *pairs, size_t npairs, size_t i)
{
	if (i < npairs && pairs[i].from == MCC_GPU_FROM_GALLERY && pairs[i].cand < g->n_tpl)
		__builtin_prefetch(&g->tref[pairs[i].cand]);
}

/* Mark side sdx used (shares mark the same probe: a relaxed store, no race). */
static inline void
mark_used(rf_call *c, uint32_t sdx)
{
	__atomic_store_n(&c->used[sdx], (uint8_t) 1, __ATOMIC_RELAXED);
}

/*
 * Classify share s's pairs: check each; score on the host those with a
 * removed template (-1) or an empty side (0); count the others by
 * partition (a gallery template's device, else contiguous shares of the
 * template candidates) and size class. Stops at the share's first error.
 */
static mcc_gpu_code
classify_share(rf_share *s)
{
	mcc_gpu    *g = s->g;
	rf_call    *c = s->c;
	const mcc_gpu_pair *pairs = c->pairs;
	size_t		npairs = c->npairs;
	size_t		vview = s->vview;
	mcc_error  *err = &s->err;

	for (size_t i = s->i0; i < s->i1; i++)
	{
		const mcc_gpu_pair *pr = &pairs[i];
		uint32_t	na;
		uint32_t	nb;
		int			part;
		int			cls;
		uint32_t	kcap;

		prefetch_gallery(g, pairs, npairs, i + 2 * RF_AHEAD);

		if (pr->probe >= (uint32_t) c->nq)
			return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "pair %zu: probe %u does not exist (%d given)", i,
								  pr->probe, c->nq);
		na = (uint32_t) c->probes[pr->probe].n_cyl;
		if (pr->from == MCC_GPU_FROM_VIEW)
		{
			if (pr->cand >= c->ncand)
				return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "pair %zu: candidate %u does not exist (%u given)",
									  i, pr->cand, c->ncand);
			nb = (uint32_t) c->cands[pr->cand].n_cyl;
			/* contiguous shares of the template candidates per partition */
			part = (int) (vview++ * (size_t) g->nparts / (s->nview ? s->nview : 1));
			c->pb[i] = (uint32_t) c->nq + pr->cand;
		}
		else if (pr->from == MCC_GPU_FROM_GALLERY)
		{
			if (pr->cand >= g->n_tpl)
				return mcc_gpu_rt_err(err, MCC_GPU_INVALID,
									  "pair %zu: gallery template %u does not exist (%u given)",
									  i, pr->cand, g->n_tpl);
			const mcc_gpu_tref *tr = &g->tref[pr->cand];

			if (tr->removed)
			{
				c->scores[i] = -1.0f;
				c->ppart[i] = 0xFF;
				continue;
			}
			if (!tr->refd)
				return mcc_gpu_rt_err(err, MCC_GPU_INVALID,
									  "gallery template %u has no refinement data on the GPU (mcc_gpu_refine_attach)",
									  pr->cand);
			part = tr->where;
			c->pb[i] = tr->local;
			nb = tr->ncyl;
		}
		else
			return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "pair %zu: unknown candidate source %u", i, pr->from);
		if (na == 0 || nb == 0)
		{
			c->scores[i] = 0.0f;	/* mcc_match_rescore: templates with no cylinder score 0 */
			c->ppart[i] = 0xFF;
			continue;
		}
		c->pnb[i] = nb;
		mark_used(c, pr->probe);
		if (pr->from == MCC_GPU_FROM_VIEW)
			mark_used(c, (uint32_t) c->nq + pr->cand);
		cls = rp_class(na, nb);
		kcap = g->rf_kcap ? (uint32_t) g->rf_kcap : rp_class_kcap[cls];
		c->ppart[i] = (uint8_t) (part * RP_NCLASS + cls);
		s->cnt[part][cls]++;
		if ((uint64_t) na * nb > kcap && (uint64_t) na * nb > s->gmax[part][cls])
			s->gmax[part][cls] = (uint64_t) na * nb;
		{
			uint64_t	m = na < nb ? na : nb;

			if (m * m > kcap && m * m > s->rmax[part][cls])
				s->rmax[part][cls] = m * m;
		}
		s->ndev++;
	}
	return MCC_GPU_OK;
}

/* Place share s's device pairs in the host image, each with its n_P. */
static void
place_share(rf_share *s)
{
	mcc_gpu    *g = s->g;
	rf_call    *c = s->c;
	uint8_t		np_tab[MCC_MAX_CYL + 1][2];
	uint8_t		np_have[MCC_MAX_CYL + 1];

	memset(np_have, 0, sizeof(np_have));
	for (size_t i = s->i0; i < s->i1; i++)
	{
		const mcc_gpu_pair *pr = &c->pairs[i];
		int			part;
		int			cls;
		size_t		j;
		rb_pair_desc *d;
		uint32_t	na;
		uint32_t	nb;

		if (c->ppart[i] == 0xFF)
			continue;
		part = c->ppart[i] / RP_NCLASS;
		cls = c->ppart[i] % RP_NCLASS;
		j = s->pos[part][cls]++;
		d = &c->hpair[j];
		memset(d, 0, sizeof(*d));
		d->a = pr->probe;
		d->b = c->pb[i];
		d->bside = pr->from == MCC_GPU_FROM_VIEW;
		/* a view's side: its cylinders as rf_image wrote them (as classified, or rp_side refused it) */
		nb = d->bside ? c->hside[d->b].n : c->pnb[i];
		na = c->hside[d->a].n;
		d->out = (uint32_t) (j - c->rp[part].first);
		{
			/* n_P depends on the smaller side only: once per size in a share */
			uint32_t	m = na < nb ? na : nb;

			if (!np_have[m])
			{
				rp_np(np_tab[m], c->method, c->mp, g->profile, (int) m);
				np_have[m] = 1;
			}
			d->np[0] = np_tab[m][0];
			d->np[1] = np_tab[m][1];
		}
		c->idx[j] = i;
	}
}

/* A share's thread: its phase. */
static void *
share_run(void *arg)
{
	rf_share   *s = (rf_share *) arg;

	if (s->phase == 0)
		s->rc = classify_share(s);
	else
		place_share(s);
	return NULL;
}

/*
 * Classify every pair on the shares; the counts summed into c, the first
 * failing share's error returned.
 */
static mcc_gpu_code
rf_classify(mcc_gpu *g, rf_call *c, rf_share *sh, int nsh, mcc_error *err)
{
	size_t		nview = 0;

	for (int t = 0; t < nsh; t++)
	{
		sh[t].vview = nview;
		for (size_t i = sh[t].i0; i < sh[t].i1; i++)
			nview += c->pairs[i].from == MCC_GPU_FROM_VIEW;
	}
	for (int t = 0; t < nsh; t++)
	{
		sh[t].nview = nview;
		sh[t].phase = 0;
	}
	mcc_job_run_each(nsh, share_run, sh, sizeof(rf_share));
	for (int t = 0; t < nsh; t++)
	{
		if (sh[t].rc != MCC_GPU_OK)
		{
			*err = sh[t].err;
			return sh[t].rc;
		}
		c->ndev += sh[t].ndev;
		for (int p = 0; p < g->nparts; p++)
			for (int k = 0; k < RP_NCLASS; k++)
			{
				c->cnt[p][k] += sh[t].cnt[p][k];
				if (sh[t].gmax[p][k] > c->gmax[p][k])
					c->gmax[p][k] = sh[t].gmax[p][k];
				if (sh[t].rmax[p][k] > c->rmax[p][k])
					c->rmax[p][k] = sh[t].rmax[p][k];
			}
	}
	return MCC_GPU_OK;
}

/*
 * The parameters' tables and the kernel's plan; the pinned host image:
 * the cylinders and sides of the sides used, room for the pairs and the
 * scores.
 */
static mcc_gpu_code
rf_image(mcc_gpu *g, rf_call *c, mcc_error *err)
{
	size_t		ncyl = 0;
	size_t		off_out;
	size_t		off_dbg;
	size_t		hbytes;
	unsigned char *h;
	rb_cyl	   *hcyl;
	cudaError_t e;
	uint32_t	o = 0;

	for (uint32_t sdx = 0; sdx < c->nsides; sdx++)
		if (c->used[sdx])
			ncyl += (size_t) (sdx < (uint32_t) c->nq ? c->probes[sdx].n_cyl : c->cands[sdx - c->nq].n_cyl);

	/* the parameters' tables: a new generation when they change */
	if (memcmp(g->rf_tab, c->mp->tab, sizeof(g->rf_tab)) != 0 || g->rf_tabs_gen == 0)
	{
		memcpy(g->rf_tab, c->mp->tab, sizeof(g->rf_tab));
		g->rf_tabs_gen++;
	}
	rp_plan(&c->plan, c->method, c->mp);

	/* host image: sides, pairs per partition and class, scores */
	c->off_sides = A16(sizeof(rb_cyl) * ncyl);
	c->common = c->off_sides + A16(sizeof(rb_side) * c->nsides);
	off_out = c->common + A16(sizeof(rb_pair_desc) * c->ndev);
	off_dbg = off_out + A16(4 * c->ndev);
	hbytes = off_dbg + (g->rf_dbg ? A16(8 * c->ndev) : 0) + 16;
	if (hbytes > g->rf_h_cap)
	{
		cudaFreeHost(g->rf_h);
		g->rf_h = NULL;
		g->rf_h_cap = 0;
		if ((e = cudaMallocHost(&g->rf_h, hbytes + hbytes / 2)) != cudaSuccess)
			return mcc_gpu_fail(g, e, "pinned host allocation", -1, err);
		g->rf_h_cap = hbytes + hbytes / 2;
	}
	h = g->rf_h;
	hcyl = (rb_cyl *) h;
	c->hside = (rb_side *) (h + c->off_sides);
	c->hpair = (rb_pair_desc *) (h + c->common);
	c->hout = (float *) (h + off_out);
	c->hdbg = (double *) (h + off_dbg);
	for (uint32_t sdx = 0; sdx < c->nsides; sdx++)
	{
		const mcc_template_view *v = sdx < (uint32_t) c->nq ? &c->probes[sdx] : &c->cands[sdx - c->nq];
		int			n = c->used[sdx] ? rp_side(v, hcyl + o) : 0;

		if (n < 0)
			return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "%s %u is not one cylinder per minutia",
								  sdx < (uint32_t) c->nq ? "probe" : "candidate",
								  sdx < (uint32_t) c->nq ? sdx : sdx - c->nq);
		c->hside[sdx].off = o;
		c->hside[sdx].n = (uint32_t) n;
		o += (uint32_t) n;
	}
	return MCC_GPU_OK;
}

/*
 * Place the device pairs in the host image, partition-major and
 * class-minor (idx: position -> the caller's pair); each share's pairs of
 * a (partition, class) after those of the shares before it.
 */
static mcc_gpu_code
rf_place(mcc_gpu *g, rf_call *c, rf_share *sh, int nsh, mcc_error *err)
{
	size_t		acc = 0;

	for (int pi = 0; pi < g->nparts; pi++)
	{
		c->rp[pi].first = acc;
		for (int k = 0; k < RP_NCLASS; k++)
			for (int t = 0; t < nsh; t++)
			{
				sh[t].pos[pi][k] = acc;
				acc += sh[t].cnt[pi][k];
			}
		c->rp[pi].count = acc - c->rp[pi].first;
	}
	c->idx = (size_t *) malloc(sizeof(size_t) * (c->ndev + 1));
	if (!c->idx)
		return mcc_gpu_rt_err(err, MCC_GPU_OOM, "out of host memory");
	for (int t = 0; t < nsh; t++)
		sh[t].phase = 1;
	mcc_job_run_each(nsh, share_run, sh, sizeof(rf_share));
	return MCC_GPU_OK;
}

mcc_gpu_code
rf_prepare(mcc_gpu *g, rf_call *c, mcc_error *err)
{
	int			nsh = mcc_job_list_shares(c->npairs);
	rf_share   *sh;
	mcc_gpu_code rc;

	c->ppart = (uint8_t *) malloc(c->npairs);
	c->used = (uint8_t *) calloc((size_t) c->nsides + 1, 1);
	c->pb = (uint32_t *) malloc(sizeof(uint32_t) * (c->npairs + 1));
	c->pnb = (uint32_t *) malloc(sizeof(uint32_t) * (c->npairs + 1));
	sh = (rf_share *) calloc((size_t) nsh, sizeof(rf_share));
	if (!c->ppart || !c->used || !c->pb || !c->pnb || !sh)
	{
		free(sh);
		return mcc_gpu_rt_err(err, MCC_GPU_OOM, "out of host memory");
	}
	for (int t = 0; t < nsh; t++)
	{
		sh[t].g = g;
		sh[t].c = c;
		sh[t].i0 = c->npairs * (size_t) t / (size_t) nsh;
		sh[t].i1 = c->npairs * (size_t) (t + 1) / (size_t) nsh;
		sh[t].rc = MCC_GPU_OK;
		mcc_error_clear(&sh[t].err);
	}
	if ((rc = rf_classify(g, c, sh, nsh, err)) == MCC_GPU_OK && (rc = rf_image(g, c, err)) == MCC_GPU_OK)
		rc = rf_place(g, c, sh, nsh, err);
	free(sh);
	return rc;
}

void
rf_call_free(rf_call *c)
{
	mcc_gpu_rt_free_malloc(c->ppart, c->used, c->pb, c->pnb, c->idx);
	free(c);
}
