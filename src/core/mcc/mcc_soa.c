/*
 * mcc_soa.c: the structure-of-arrays gallery (layout in mcc_soa.h), its
 * growth, and the run-time choice of the CPU scan kernel.
 */
#include "mcc_soa.h"

#include <stdlib.h>
#include <string.h>

#include "mcc_cpu_kernel.h"
#include "mcc_soa_int.h"

/* ------------------------------------------------------------------ */
/* storage                                                             */

/* Allocate an empty gallery with the given capacities (0: small defaults). */
mcc_status
mcc_soa_init(mcc_soa *g, const mcc_profile *p, uint32_t cap_tpl,
			 uint32_t cap_cyl, mcc_error *err)
{
	memset(g, 0, sizeof(*g));
	g->profile = p;
	g->words = mcc_profile_cyl_words(p);
	g->cap_tpl = cap_tpl > 0 ? cap_tpl : 16;
	g->cap_cyl = cap_cyl > 0 ? cap_cyl : 256;
	g->bits = malloc(sizeof(uint64_t) * g->words * (size_t) g->cap_cyl);
	g->angle = malloc(sizeof(uint8_t) * (size_t) g->cap_cyl);
	g->pc = malloc(sizeof(uint16_t) * (size_t) g->cap_cyl);
	g->first = malloc(sizeof(uint32_t) * ((size_t) g->cap_tpl + 1));
	g->ncyl = malloc(sizeof(uint16_t) * (size_t) g->cap_tpl);
	g->id = malloc(sizeof(int64_t) * (size_t) g->cap_tpl);
	if (!g->bits || !g->angle || !g->pc || !g->first || !g->ncyl || !g->id)
	{
		mcc_soa_free(g);
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory"),
			mcc_error_detail(err, "Failed to allocate a gallery for %u templates and %u cylinders.",
							 cap_tpl, cap_cyl);
	}
	g->first[0] = 0;
	return MCC_OK;
}

/* Free the arrays; the gallery is empty and unusable until init. */
void
mcc_soa_free(mcc_soa *g)
{
	free(g->bits);
	free(g->angle);
	free(g->pc);
	free(g->first);
	free(g->ncyl);
	free(g->id);
	/* every array NULL and every count 0; the profile stays */
	*g = (mcc_soa) {.profile = g->profile, .words = g->words};
}

/* Forget all templates, keep the arrays. */
void
mcc_soa_clear(mcc_soa *g)
{
	g->n_tpl = 0;
	g->n_cyl = 0;
	if (g->first)
		g->first[0] = 0;
}

/* The next capacity for at least need entries: doubling, capped at 2^32 - 1. */
static uint32_t
grown(uint32_t cap, uint64_t need)
{
	uint64_t	c = cap ? cap : 16;

	while (c < need)
		c *= 2;
	return c > UINT32_MAX ? UINT32_MAX : (uint32_t) c;
}

/* realloc that leaves *ptr alone on failure; 0 on failure. */
static int
resize(void **ptr, uint64_t n, size_t elem)
{
	void	   *p;

	if (n > SIZE_MAX / elem)
		return 0;
	p = realloc(*ptr, (size_t) n * elem);
	if (p == NULL)
		return 0;
	*ptr = p;
	return 1;
}

/*
 * Grow the cylinder arrays to hold need cylinders. On failure the gallery
 * is unchanged (arrays that did grow keep their old contents and capacity).
 */
static mcc_status
grow_cyl(mcc_soa *g, uint64_t need, mcc_error *err)
{
	uint32_t	cap = grown(g->cap_cyl, need);

	if (!resize((void **) &g->bits, (uint64_t) cap * g->words, sizeof(uint64_t)) ||
		!resize((void **) &g->angle, cap, sizeof(uint8_t)) ||
		!resize((void **) &g->pc, cap, sizeof(uint16_t)))
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory"),
			mcc_error_detail(err, "Failed to grow the gallery to %u cylinders.", cap);
	/* one array per word: move words 1.. to their new offsets, last first */
	for (int w = g->words - 1; w > 0; w--)
		memmove(g->bits + (size_t) w * cap, g->bits + (size_t) w * g->cap_cyl,
				sizeof(uint64_t) * g->n_cyl);
	g->cap_cyl = cap;
	return MCC_OK;
}

/* Grow the template arrays to hold need templates; unchanged on failure. */
static mcc_status
grow_tpl(mcc_soa *g, uint64_t need, mcc_error *err)
{
	uint32_t	cap = grown(g->cap_tpl, need);

	if (cap == UINT32_MAX)
		cap--;					/* first[] has cap + 1 entries */
	if (!resize((void **) &g->first, (uint64_t) cap + 1, sizeof(uint32_t)) ||
		!resize((void **) &g->ncyl, cap, sizeof(uint16_t)) ||
		!resize((void **) &g->id, cap, sizeof(int64_t)))
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory"),
			mcc_error_detail(err, "Failed to grow the gallery to %u templates.", cap);
	g->cap_tpl = cap;
	return MCC_OK;
}

/*
 * Copy t's cylinders to positions base.. of the arrays, in the layout of
 * mcc_soa.h: word w of each cylinder to its own array, and from the
 * metadata records (popcount, angle) the per-cylinder arrays, as template
 * k's. The blob's words may be unaligned. One pass per array keeps each
 * store stream sequential.
 */
void
mcc_soa_put(mcc_soa *g, uint32_t k, uint32_t base, const mcc_template_view *t, int64_t id)
{
	uint32_t	nc = (uint32_t) t->n_cyl;
	size_t		stride = (size_t) t->words * 8;
	const uint8_t *meta = t->meta;

	for (int w = 0; w < g->words; w++)
	{
		uint64_t   *dst = g->bits + (size_t) w * g->cap_cyl + base;
		const uint8_t *src = t->bits + (size_t) w * 8;

		for (uint32_t c = 0; c < nc; c++)
			memcpy(&dst[c], src + c * stride, sizeof(uint64_t));
	}
	for (uint32_t c = 0; c < nc; c++)
	{
		uint16_t	pc;

		memcpy(&pc, meta + (size_t) c * MCC_CYLMETA_RECSZ, sizeof(pc));
		g->pc[base + c] = pc;
		g->angle[base + c] = meta[(size_t) c * MCC_CYLMETA_RECSZ + 2];
	}
	g->first[k] = base;
	g->ncyl[k] = (uint16_t) nc;
	g->id[k] = id;
}

/* Append one template's cylinders, growing the arrays as needed. */
mcc_status
mcc_soa_append(mcc_soa *g, const mcc_template_view *t, int64_t id, mcc_error *err)
{
	uint32_t	nc = (uint32_t) t->n_cyl;
	uint32_t	base = g->n_cyl;
	mcc_status	st;

	if (t->profile->id != g->profile->id)
		return mcc_error_set(err, MCC_ERR_VALUE,
							 "template profile \"%s\" does not match the gallery's \"%s\"",
							 t->profile->name, g->profile->name);
	if ((uint64_t) g->n_cyl + nc > UINT32_MAX || (uint64_t) g->n_tpl + 1 >= UINT32_MAX)
		return mcc_error_set(err, MCC_ERR_LIMIT, "gallery is too large"),
			mcc_error_detail(err, "A gallery holds fewer than 2^32 templates and cylinders.");
	if (g->n_cyl + nc > g->cap_cyl &&
		(st = grow_cyl(g, (uint64_t) g->n_cyl + nc, err)) != MCC_OK)
		return st;
	if (g->n_tpl + 1 > g->cap_tpl &&
		(st = grow_tpl(g, (uint64_t) g->n_tpl + 1, err)) != MCC_OK)
		return st;
	mcc_soa_put(g, g->n_tpl, base, t, id);
	g->n_cyl += nc;
	g->n_tpl++;
	g->first[g->n_tpl] = g->n_cyl;
	return MCC_OK;
}

/* ------------------------------------------------------------------ */
/* kernels                                                             */

/* Votes of one gallery cylinder as bucket bytes, by the generic loop (den may be 0). */
int
mcc_votes_den0(const mcc_probe *q, const uint64_t *gw, int pc, int a, uint8_t *d)
{
	uint32_t	h[MCC_HIST_LEN] = {0};
	int			nv = 0;

	MCC_VOTES_GENERIC(q, gw, pc, a, h, mcc_popcount64_swar);
	for (int b = 0; b < MCC_W; b++)
		for (uint32_t i = 0; i < h[b]; i++)
			d[nv++] = (uint8_t) b;
	return nv;
}

/* Portable scan: the generic vote loop with a software popcount. */
void
mcc_scan_generic(const mcc_probe *q, const mcc_soa *g, uint32_t t0, uint32_t t1,
				 float *scores)
{
	for (uint32_t k = t0; k < t1; k++)
		MCC_SCORE_TEMPLATE_GENERIC(q, g, k, mcc_popcount64_swar, scores[k - t0]);
}

/* The generic loop compiled for the POPCNT instruction. */
__attribute__((target("popcnt")))
void
mcc_scan_popcnt(const mcc_probe *q, const mcc_soa *g, uint32_t t0, uint32_t t1,
				float *scores)
{
	for (uint32_t k = t0; k < t1; k++)
		MCC_SCORE_TEMPLATE_GENERIC(q, g, k, __builtin_popcountll, scores[k - t0]);
}

/* One template in place, generic loop, software popcount. */
float
mcc_score_view_generic(const mcc_probe *q, const mcc_template_view *t)
{
	float		score;

	MCC_SCORE_VIEW_GENERIC(q, t, mcc_popcount64_swar, score);
	return score;
}

/* One template in place, generic loop with the POPCNT instruction. */
__attribute__((target("popcnt")))
float
mcc_score_view_popcnt(const mcc_probe *q, const mcc_template_view *t)
{
	float		score;

	MCC_SCORE_VIEW_GENERIC(q, t, __builtin_popcountll, score);
	return score;
}

typedef struct kernel
{
	mcc_kernel_head h;
	mcc_scan_fn fn;
	mcc_score_view_fn view_fn;
} kernel;

/* Best first: the automatic choice is the first usable one. */
static const kernel kernels[] = {
	{{"avx512", mcc_avx512_ok}, mcc_scan_avx512, mcc_score_view_avx512},
	{{"avx2", mcc_avx2_ok}, mcc_scan_avx2, mcc_score_view_avx2},
	{{"popcnt", mcc_cpu_has_popcnt}, mcc_scan_popcnt, mcc_score_view_popcnt},
	{{"generic", mcc_kernel_always}, mcc_scan_generic, mcc_score_view_generic},
};

static mcc_kernel_table choice = {kernels, sizeof(kernel), sizeof(kernels) / sizeof(kernels[0]), -1};

/* The kernel in use, chosen on first call. */
static const kernel *
current_kernel(void)
{
	return mcc_kernel_current(&choice);
}

/* Force a scan kernel by name, or NULL for the automatic choice. */
int
mcc_soa_set_kernel(const char *name)
{
	return mcc_kernel_force(&choice, name);
}

/* Name of the kernel scans use now. */
const char *
mcc_soa_kernel_name(void)
{
	return current_kernel()->h.name;
}

/* Scores of probe q against templates [t0, t1) with the current kernel. */
void
mcc_soa_scan(const mcc_probe *q, const mcc_soa *g, uint32_t t0, uint32_t t1,
			 float *scores)
{
	const kernel *k = current_kernel();

	if (t1 > g->n_tpl)
		t1 = g->n_tpl;
	if (t0 >= t1)
		return;
	if (q->profile->id != g->profile->id)
	{
		for (uint32_t i = t0; i < t1; i++)
			scores[i - t0] = 0.0f;
		return;
	}
	k->fn(q, g, t0, t1, scores);
}

/* LSS score of q against one template read in place, with the current kernel. */
float
mcc_soa_score_view(const mcc_probe *q, const mcc_template_view *t)
{
	if (q->profile->id != t->profile->id)
		return 0.0f;
	return current_kernel()->view_fn(q, t);
}
