/*
 * gpu_data.c: synthetic templates and the reference LSS (see gpu_data.h).
 */
#include "gpu_data.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_synth.h"
#include "../unit/testgen.h"

/* splitmix64 */
uint64_t
gd_next(gd_rng *r)
{
	uint64_t	z = (r->s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* uniform in [0, n) */
uint32_t
gd_below(gd_rng *r, uint32_t n)
{
	return (uint32_t) (((gd_next(r) >> 32) * (uint64_t) n) >> 32);
}

/* A byte angle: uniform, or in two clusters 128 apart (sd about 16). */
static int
gen_angle(gd_rng *r, const gd_params *gp)
{
	int			a;

	if (!gp->oriented)
		return (int) gd_below(r, 256);
	a = 64 + 128 * (int) gd_below(r, 2);
	for (int i = 0; i < 3; i++)
		a += (int) gd_below(r, 33) - 16;
	return a & 255;
}

/* 255 cylinder bits with a density of 1/8 .. 1/2; popcount returned. */
static int
gen_bits(uint64_t w[4], gd_rng *r, const gd_params *gp)
{
	int			cov = (int) gd_below(r, 4);
	int			pc = 0;

	if (gp->zero_pc && (int) gd_below(r, 1000) < gp->zero_pc)
	{
		memset(w, 0, 32);
		return 0;
	}
	for (int i = 0; i < 4; i++)
	{
		uint64_t	m = cov == 0 ? gd_next(r) & gd_next(r) : cov == 1 ? gd_next(r) :
			cov == 2 ? gd_next(r) | gd_next(r) : ~0ull;

		w[i] = gd_next(r) & m;
	}
	w[3] &= ~(1ull << 63);
	for (int i = 0; i < 4; i++)
		pc += __builtin_popcountll(w[i]);
	return pc;
}

/* Cylinders of one template before sorting. */
typedef struct gd_cyl
{
	uint64_t	w[4];
	int			pc;
	int			angle;
} gd_cyl;

/* Sort cylinders by angle (insertion sort, stable). */
static void
sort_cyls(gd_cyl *c, int n)
{
	for (int i = 1; i < n; i++)
	{
		gd_cyl		x = c[i];
		int			j = i - 1;

		while (j >= 0 && c[j].angle > x.angle)
		{
			c[j + 1] = c[j];
			j--;
		}
		c[j + 1] = x;
	}
}

/* Append one template of n cylinders to g. */
static void
put_template(mcc_soa *g, gd_cyl *c, int n)
{
	uint32_t	k = g->n_tpl;
	uint32_t	j0 = g->n_cyl;

	sort_cyls(c, n);
	for (int i = 0; i < n; i++)
	{
		for (int w = 0; w < 4; w++)
			g->bits[(size_t) w * g->cap_cyl + j0 + i] = c[i].w[w];
		g->angle[j0 + i] = (uint8_t) c[i].angle;
		g->pc[j0 + i] = (uint16_t) c[i].pc;
	}
	g->first[k] = j0;
	g->ncyl[k] = (uint16_t) n;
	g->id[k] = (int64_t) (uint32_t) (k * 2654435761u ^ 0x5bd1e995u);
	g->n_cyl = j0 + n;
	g->n_tpl = k + 1;
	g->first[k + 1] = g->n_cyl;
}

/* Allocate a gallery with room for cap_tpl templates and cap_cyl cylinders. */
static int
gallery_alloc(mcc_soa *g, uint32_t cap_tpl, uint32_t cap_cyl)
{
	memset(g, 0, sizeof(*g));
	g->profile = mcc_profile_by_id(MCC_PROFILE_GPU2015);
	g->words = 4;
	g->cap_tpl = cap_tpl;
	g->cap_cyl = cap_cyl;
	g->bits = malloc(sizeof(uint64_t) * 4 * (size_t) cap_cyl);
	g->angle = malloc(cap_cyl);
	g->pc = malloc(2 * (size_t) cap_cyl);
	g->first = malloc(4 * ((size_t) cap_tpl + 1));
	g->ncyl = malloc(2 * (size_t) cap_tpl);
	g->id = malloc(8 * (size_t) cap_tpl);
	if (!g->bits || !g->angle || !g->pc || !g->first || !g->ncyl || !g->id)
		return -1;
	g->first[0] = 0;
	return 0;
}

/* Number of cylinders of template k under the parameters. */
static int
pick_n(gd_rng *r, const gd_params *gp, uint32_t k)
{
	if (gp->edge_cases)
	{
		if (k % 97 == 13)
			return 0;
		if (k % 89 == 1)
			return 1;
		if (k == 5)
			return MCC_MAX_CYL;
	}
	return gp->min_cyl + (int) gd_below(r, (uint32_t) (gp->max_cyl - gp->min_cyl + 1));
}

/* A gallery of n templates, with room for twice as many. */
int
gd_gallery(mcc_soa *g, uint32_t n, const gd_params *gp, uint64_t seed)
{
	uint32_t	cap = 2 * n + 64;
	uint64_t	cyl = (uint64_t) cap * (gp->max_cyl > 64 ? gp->max_cyl : 64) + 1024;

	if (gallery_alloc(g, cap, (uint32_t) cyl))
		return -1;
	return gd_gallery_more(g, n, gp, seed);
}

/* Append n templates. */
int
gd_gallery_more(mcc_soa *g, uint32_t n, const gd_params *gp, uint64_t seed)
{
	gd_rng		r = {seed};
	gd_cyl	   *c = malloc(sizeof(gd_cyl) * MCC_MAX_CYL);

	if (!c)
		return -1;
	for (uint32_t i = 0; i < n; i++)
	{
		int			nc = pick_n(&r, gp, g->n_tpl);

		if (g->n_tpl + 1 >= g->cap_tpl || g->n_cyl + (uint32_t) nc > g->cap_cyl)
		{
			free(c);
			return -1;
		}
		for (int j = 0; j < nc; j++)
		{
			c[j].pc = gen_bits(c[j].w, &r, gp);
			c[j].angle = gen_angle(&r, gp);
		}
		put_template(g, c, nc);
	}
	free(c);
	return 0;
}

/* Free a gallery (its arrays are mcc_soa's). */
void
gd_gallery_free(mcc_soa *g)
{
	mcc_soa_free(g);
	memset(g, 0, sizeof(*g));
}

/* Point the view at the probe's own storage. */
void
gd_probe_fix(gd_probe *p)
{
	p->v.bits = (const uint8_t *) p->bits;
	p->v.meta = p->meta;
}

/* Fill a probe from cylinders. */
static void
probe_set(gd_probe *p, gd_cyl *c, int n)
{
	sort_cyls(c, n);
	memset(&p->v, 0, sizeof(p->v));
	p->v.profile = mcc_profile_by_id(MCC_PROFILE_GPU2015);
	p->v.n_cyl = n;
	p->v.words = 4;
	for (int i = 0; i < n; i++)
	{
		uint16_t	pc = (uint16_t) c[i].pc;

		memcpy(p->bits + 4 * i, c[i].w, 32);
		memcpy(p->meta + 4 * i, &pc, 2);
		p->meta[4 * i + 2] = (uint8_t) c[i].angle;
		p->meta[4 * i + 3] = (uint8_t) i;
	}
	gd_probe_fix(p);
}

/* A random probe. */
void
gd_probe_random(gd_probe *p, int n, const gd_params *gp, gd_rng *r)
{
	gd_cyl		c[MCC_MAX_CYL];

	for (int j = 0; j < n; j++)
	{
		c[j].pc = gen_bits(c[j].w, r, gp);
		c[j].angle = gen_angle(r, gp);
	}
	probe_set(p, c, n);
}

/* A probe from template k: 80% of its cylinders, 1/16 bits flipped, +-4 jitter, 5 extras. */
void
gd_probe_mated(gd_probe *p, const mcc_soa *g, uint32_t k, const gd_params *gp, gd_rng *r)
{
	gd_cyl		c[MCC_MAX_CYL];
	int			n = 0;

	for (uint32_t j = g->first[k]; j < g->first[k + 1] && n < MCC_MAX_CYL; j++)
	{
		if (gd_below(r, 10) < 2)
			continue;
		c[n].pc = 0;
		for (int w = 0; w < 4; w++)
		{
			uint64_t	f = gd_next(r) & gd_next(r) & gd_next(r) & gd_next(r);

			c[n].w[w] = g->bits[(size_t) w * g->cap_cyl + j] ^ f;
		}
		c[n].w[3] &= ~(1ull << 63);
		for (int w = 0; w < 4; w++)
			c[n].pc += __builtin_popcountll(c[n].w[w]);
		c[n].angle = (g->angle[j] + (int) gd_below(r, 9) - 4) & 255;
		n++;
	}
	for (int e = 0; e < 5 && n < MCC_MAX_CYL; e++, n++)
	{
		c[n].pc = gen_bits(c[n].w, r, gp);
		c[n].angle = gen_angle(r, gp);
	}
	probe_set(p, c, n);
}

/* Reference LSS: every pair, the integer steps of mcc_lss.h. */
float
gd_ref_score(const mcc_template_view *v, const mcc_soa *g, uint32_t k)
{
	uint32_t	b[MCC_W];
	int			na = v->n_cyl;
	int			nb = g->first[k + 1] - g->first[k];
	int			mn = na < nb ? na : nb;
	int			np, left, sum;
	int			dt = g->profile->delta_theta;

	if (mn == 0)
		return 0.0f;
	memset(b, 0, sizeof(b));
	for (int i = 0; i < na; i++)
	{
		uint64_t	wi[4];
		uint16_t	pci;
		int			ai = v->meta[4 * i + 2];

		memcpy(wi, v->bits + 32 * (size_t) i, 32);
		memcpy(&pci, v->meta + 4 * i, 2);
		for (uint32_t j = g->first[k]; j < g->first[k + 1]; j++)
		{
			uint32_t	den, d;
			int			p = 0;

			if (!mcc_lss_gate(ai, g->angle[j], dt))
				continue;
			den = mcc_lss_sqrt_fx(pci) + mcc_lss_sqrt_fx(g->pc[j]);
			if (den == 0)
				continue;
			for (int w = 0; w < 4; w++)
				p += __builtin_popcountll(wi[w] ^ g->bits[(size_t) w * g->cap_cyl + j]);
			d = mcc_lss_dist(mcc_lss_sqrt_fx(p), mcc_lss_rcp(den));
			if (d < MCC_W)
				b[d]++;
		}
	}
	np = mcc_lss_np(g->profile, mn);
	if (np <= 0)
		return 0.0f;
	left = np;
	sum = 0;
	for (int i = 0; i < MCC_W && left > 0; i++)
	{
		int			c = (int) b[i] < left ? (int) b[i] : left;

		sum += c * i;
		left -= c;
	}
	sum += left * MCC_W;
	return (float) (np * MCC_W - sum) / (float) (np * MCC_W);
}

/* Gated pairs of v against every template of g. */
double
gd_ref_pairs(const mcc_template_view *v, const mcc_soa *g)
{
	double		hist[256];
	double		pairs = 0;

	memset(hist, 0, sizeof(hist));
	for (uint32_t j = 0; j < g->n_cyl; j++)
		hist[g->angle[j]] += 1;
	for (int i = 0; i < v->n_cyl; i++)
		for (int a = 0; a < 256; a++)
			if (mcc_lss_gate(v->meta[4 * i + 2], a, g->profile->delta_theta))
				pairs += hist[a];
	return pairs;
}

/* Double from its two halves, and the high half of a double. */
static double
hilo(uint32_t hi, uint32_t lo)
{
	uint64_t	u = (uint64_t) hi << 32 | lo;
	double		d;

	memcpy(&d, &u, 8);
	return d;
}

static uint32_t
hi_of(double d)
{
	uint64_t	u;

	memcpy(&u, &d, 8);
	return (uint32_t) (u >> 32);
}

/* The kernels' rcp_fp64 in C (same IEEE steps) against mcc_lss_rcp. */
long
gd_check_rcp_fp64(void)
{
	long		bad = 0;

	for (uint32_t den = 1; den <= (1u << 17); den++)
	{
		double		dd = den;
		double		g = hilo(0x7FDE6238u - hi_of(dd), 0);
		uint32_t	r;

		for (int k = 0; k < 4; k++)
		{
			double		e = fma(-dd, g, 1.0);

			g = fma(g, e, g);
		}
		r = (uint32_t) (uint64_t) floor(fma(0x1p38, g, 0x1p-20));
		if (r != mcc_lss_rcp(den))
			bad++;
	}
	return bad;
}

/* Copy a template view into probe storage. */
static void
probe_from_view(gd_probe *p, const mcc_template_view *v)
{
	memset(&p->v, 0, sizeof(p->v));
	p->v.profile = v->profile;
	p->v.n_cyl = v->n_cyl;
	p->v.words = v->words;
	memcpy(p->bits, v->bits, 32 * (size_t) v->n_cyl);
	memcpy(p->meta, v->meta, 4 * (size_t) v->n_cyl);
	gd_probe_fix(p);
}

/* Synthetic fingers through src/core: gallery of n from `unique` distinct, and probes. */
int
gd_gallery_synth(mcc_soa *g, uint32_t n, uint32_t unique, uint64_t seed,
				 gd_probe *probes, int nprobes)
{
	const mcc_profile *p = mcc_profile_by_id(MCC_PROFILE_GPU2015);
	mcc_synth_params sp;
	mcc_minutiae *masters = malloc(sizeof(mcc_minutiae) * unique);
	uint64_t   *finger_of = malloc(sizeof(uint64_t) * unique);
	uint8_t   **blobs = calloc(unique, sizeof(uint8_t *));
	size_t	   *sizes = malloc(sizeof(size_t) * unique);
	mcc_error	err;
	gd_rng		r = {seed ^ 0x5eed};
	int			rc = -1;

	if (!masters || !finger_of || !blobs || !sizes)
		goto done;
	mcc_synth_defaults(&sp);
	sp.seed = seed;
	for (uint32_t i = 0; i < unique; i++)
	{
		uint64_t	finger = i;

		blobs[i] = NULL;
		while (!blobs[i])
		{
			mcc_minutiae imp;

			mcc_synth_master(&sp, finger, &masters[i]);
			mcc_synth_impression(&sp, &masters[i], finger, 0, &imp);
			blobs[i] = tg_build_blob(&imp, p, &sizes[i]);
			finger_of[i] = finger;
			finger += unique;
		}
	}
	if (mcc_soa_init(g, p, n, n * 40u + 1024, &err) != MCC_OK)
		goto done;
	for (uint32_t i = 0; i < n; i++)
	{
		mcc_template_view v;

		if (mcc_template_open(blobs[i % unique], sizes[i % unique], &v, &err) != MCC_OK ||
			mcc_soa_append(g, &v, (int64_t) i * 7 + 3, &err) != MCC_OK)
			goto done;
	}
	for (int i = 0; i < nprobes; i++)
	{
		uint8_t    *b = NULL;
		size_t		sz = 0;
		mcc_template_view v;

		while (!b)
		{
			mcc_minutiae imp;
			uint32_t	m = gd_below(&r, unique);

			mcc_synth_impression(&sp, &masters[m], finger_of[m], 1 + (uint64_t) i, &imp);
			b = tg_build_blob(&imp, p, &sz);
		}
		if (mcc_template_open(b, sz, &v, &err) != MCC_OK)
		{
			free(b);
			goto done;
		}
		probe_from_view(&probes[i], &v);
		free(b);
	}
	rc = 0;
done:
	for (uint32_t i = 0; blobs && i < unique; i++)
		free(blobs[i]);
	free(masters);
	free(finger_of);
	free(blobs);
	free(sizes);
	return rc;
}

/* src/core's scan of every probe over g. */
float *
gd_core_scores(const gd_probe *pr, int nq, const mcc_soa *g, const uint8_t *removed)
{
	float	   *r = malloc(sizeof(float) * ((size_t) nq * g->n_tpl + 1));
	mcc_probe  *q = malloc(mcc_probe_size());

	if (!r || !q)
	{
		free(r);
		free(q);
		return NULL;
	}
	for (int i = 0; i < nq; i++)
	{
		mcc_probe_init(q, &pr[i].v);
		mcc_soa_scan(q, g, 0, g->n_tpl, r + (size_t) i * g->n_tpl);
		for (uint32_t k = 0; removed && k < g->n_tpl; k++)
			if (removed[k])
				r[(size_t) i * g->n_tpl + k] = -1.0f;
	}
	free(q);
	return r;
}

/* A view of the first n templates of g. */
mcc_soa
gd_prefix(const mcc_soa *g, uint32_t n)
{
	mcc_soa		s = *g;

	s.n_tpl = n;
	s.n_cyl = g->first[n];
	return s;
}

FILE	   *gd_logf;

/* printf to stdout and the log. */
void
gd_say(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (gd_logf)
	{
		va_start(ap, fmt);
		vfprintf(gd_logf, fmt, ap);
		va_end(ap);
		fflush(gd_logf);
	}
	fflush(stdout);
}
