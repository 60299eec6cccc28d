/*
 * mcc_sad.c: the reference SAD, plans and bands, top-k sets and kernel
 * dispatch (mcc_sad.h). Threads are in mcc_sad_job.c.
 */
#include "mcc_sad.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_cmp.h"
#include "mcc_cpu_kernel.h"
#include "mcc_sad_int.h"

/* Reference "band": one map row, each SAD by Eq. 1. */
static void
sad_band_reference(const struct mcc_sad_plan *pl, uint32_t y0, uint64_t *out)
{
	for (uint32_t x = 0; x < pl->nx; x++)
		out[x] = mcc_sad_at(pl->target, pl->pattern, x, y0);
}

/* The reference runs everywhere. */
static int
always(void)
{
	return 1;
}

static const mcc_sad_kern kern_reference = {
	MCC_SAD_REFERENCE, "reference", 0, 1, 1, sad_band_reference, always
};

/* Kernel descriptor by id, NULL for AUTO or unknown. */
static const mcc_sad_kern *
kern_of(int kernel)
{
	switch (kernel)
	{
		case MCC_SAD_REFERENCE:
			return &kern_reference;
		case MCC_SAD_SSE2:
			return &mcc_sad_kern_sse2;
		case MCC_SAD_AVX2:
			return &mcc_sad_kern_avx2;
		case MCC_SAD_AVX512:
			return &mcc_sad_kern_avx512;
	}
	return NULL;
}

/* Kernel name. */
const char *
mcc_sad_kernel_name(int kernel)
{
	const mcc_sad_kern *k = kern_of(kernel);

	return kernel == MCC_SAD_AUTO ? "auto" : k ? k->name : NULL;
}

/* Kernel by name. */
int
mcc_sad_kernel_by_name(const char *name)
{
	for (int k = 0; k < MCC_SAD_KERNELS; k++)
		if (strcmp(mcc_sad_kernel_name(k), name) == 0)
			return k;
	return -1;
}

/* Whether the kernel can run here. */
int
mcc_sad_kernel_usable(int kernel)
{
	const mcc_sad_kern *k = kern_of(kernel);

	if (kernel == MCC_SAD_AUTO)
		return 1;
	return k != NULL && k->band != NULL && k->usable();
}

/* Best usable kernel: widest vectors first. */
int
mcc_sad_kernel_auto(void)
{
	static const int order[] = {MCC_SAD_AVX512, MCC_SAD_AVX2, MCC_SAD_SSE2};

	return mcc_kernel_first(order, (int) (sizeof(order) / sizeof(order[0])),
							mcc_sad_kernel_usable, MCC_SAD_REFERENCE);
}

/* The map size, or an error if the pattern does not fit. */
mcc_status
mcc_sad_positions(const mcc_image *target, const mcc_image *pattern, uint32_t *nx,
				  uint32_t *ny, mcc_error *err)
{
	if (pattern->width > target->width || pattern->height > target->height)
		return mcc_error_set(err, MCC_ERR_VALUE, "pattern is larger than the target"),
			mcc_error_detail(err, "The pattern is %u x %u pixels and the target %u x %u.",
							 pattern->width, pattern->height, target->width, target->height);
	if (pattern->width == 0 || pattern->height == 0)
		return mcc_error_set(err, MCC_ERR_VALUE, "pattern is empty");
	*nx = target->width - pattern->width + 1;
	*ny = target->height - pattern->height + 1;
	return MCC_OK;
}

/* Eq. 1 at one shift, as paper 002's Algorithm 1 writes it. */
uint64_t
mcc_sad_at(const mcc_image *target, const mcc_image *pattern, uint32_t x, uint32_t y)
{
	uint64_t	sum = 0;

	for (uint32_t k = 0; k < pattern->height; k++)
	{
		const uint8_t *t = target->pixels + (size_t) (y + k) * target->stride + x;
		const uint8_t *q = pattern->pixels + (size_t) k * pattern->stride;

		for (uint32_t l = 0; l < pattern->width; l++)
		{
			int			d = (int) t[l] - (int) q[l];

			sum += (uint64_t) (d < 0 ? -d : d);
		}
	}
	return sum;
}

/* Smaller SAD first, then smaller y, then smaller x. */
int
mcc_sad_hit_cmp(const mcc_sad_hit *a, const mcc_sad_hit *b)
{
	int			c = MCC_CMP(a->sad, b->sad);

	c = MCC_CMP_THEN(c, a->y, b->y);
	return MCC_CMP_THEN(c, a->x, b->x);
}

/* true if hit a ranks before hit b (mcc_sad_hit_cmp's order). */
static inline bool
sad_hit_better(const mcc_sad_hit *a, const mcc_sad_hit *b)
{
	return mcc_sad_hit_cmp(a, b) < 0;
}

/* a heap with the worst hit on top (mcc_heap.h) */
#define MCC_HEAP_PREFIX sad_hits
#define MCC_HEAP_TYPE mcc_sad_hit
#define MCC_HEAP_BETTER(a, b) sad_hit_better(a, b)
#include "mcc_heap.h"

/* Keep hit if it is among the k best so far. */
void
mcc_sad_topk_offer(mcc_sad_topk *t, const mcc_sad_hit *hit)
{
	t->n = (uint32_t) sad_hits_offer(t->hits, t->n, t->k, hit);
}

/* Best first (qsort's array must not be NULL, even empty). */
void
mcc_sad_topk_sort(mcc_sad_topk *t)
{
	if (t->n > 1)
		qsort(t->hits, t->n, sizeof(mcc_sad_hit), sad_hits_cmp);
}

/* Round v up to a multiple of m. */
static size_t
round_up(size_t v, size_t m)
{
	return (v + m - 1) / m * m;
}

/*
 * Fill the padded copies and the strip sums of a SIMD plan (its sizes are
 * set): target rows into tp, pattern rows into pp, and for every target row
 * the sum of the cw - w pixels right of each window.
 */
static mcc_status
plan_fill(mcc_sad_plan *pl, mcc_error *err)
{
	const mcc_image *t = pl->target;
	const mcc_image *p = pl->pattern;
	uint32_t	rows = t->height + pl->kern->by;
	uint32_t   *pre = NULL;

	memset(pl->tp, 0, pl->tstride * rows);
	for (uint32_t y = 0; y < t->height; y++)
		memcpy(pl->tp + y * pl->tstride, t->pixels + y * t->stride, t->width);
	memset(pl->pp, 0, (size_t) pl->cw * p->height);
	for (uint32_t y = 0; y < p->height; y++)
		memcpy(pl->pp + (size_t) y * pl->cw, p->pixels + y * p->stride, p->width);
	if (pl->strip == NULL)
		return MCC_OK;
	pre = malloc((pl->tstride + 1) * sizeof(uint32_t));
	if (pre == NULL)
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for a SAD search");
	memset(pl->strip, 0, (size_t) rows * pl->nx * sizeof(uint16_t));
	for (uint32_t y = 0; y < t->height; y++)
	{
		const uint8_t *row = pl->tp + y * pl->tstride;
		uint16_t   *s = pl->strip + (size_t) y * pl->nx;

		pre[0] = 0;
		for (size_t x = 0; x < pl->tstride; x++)
			pre[x + 1] = pre[x] + row[x];
		for (uint32_t x = 0; x < pl->nx; x++)
			s[x] = (uint16_t) (pre[x + pl->cw] - pre[x + p->width]);
	}
	free(pre);
	return MCC_OK;
}

/* Prepare a search with kernel (MCC_SAD_AUTO: the best usable). */
mcc_status
mcc_sad_plan_create(const mcc_image *target, const mcc_image *pattern, int kernel,
					mcc_sad_plan **plan, mcc_error *err)
{
	mcc_sad_plan *pl;
	const mcc_sad_kern *k;
	mcc_status	st;
	uint32_t	nx,
				ny;
	size_t		tbytes,
				pbytes,
				sbytes;

	*plan = NULL;
	if ((st = mcc_sad_positions(target, pattern, &nx, &ny, err)) != MCC_OK)
		return st;
	if (kernel == MCC_SAD_AUTO)
		kernel = mcc_sad_kernel_auto();
	k = kern_of(kernel);
	if (k == NULL || !mcc_sad_kernel_usable(kernel))
		return mcc_error_set(err, MCC_ERR_VALUE, "SAD kernel %d is not available on this CPU",
							 kernel);
	pl = calloc(1, sizeof(*pl));
	if (pl == NULL)
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for a SAD search");
	pl->kern = k;
	pl->target = target;
	pl->pattern = pattern;
	pl->nx = nx;
	pl->ny = ny;
	pl->nxp = (uint32_t) round_up(nx, k->bx);
	pl->bands = (ny + k->by - 1) / k->by;
	if (k->vec > 0)
	{
		pl->nch = (pattern->width + k->vec - 1) / k->vec;
		pl->cw = pl->nch * k->vec;
		pl->tstride = round_up((size_t) target->width + k->bx + k->vec, 64);
		tbytes = round_up(pl->tstride * (target->height + k->by), 64);
		pbytes = round_up((size_t) pl->cw * pattern->height, 64);
		sbytes = pl->cw > pattern->width ?
			(size_t) (target->height + k->by) * nx * sizeof(uint16_t) : 0;
		pl->mem = aligned_alloc(64, round_up(tbytes + pbytes + sbytes, 64));
		if (pl->mem == NULL)
		{
			free(pl);
			return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for a SAD search"),
				mcc_error_detail(err, "The padded images need %zu bytes.", tbytes + pbytes + sbytes);
		}
		pl->tp = pl->mem;
		pl->pp = pl->tp + tbytes;
		pl->strip = sbytes ? (uint16_t *) (pl->pp + pbytes) : NULL;
		if ((st = plan_fill(pl, err)) != MCC_OK)
		{
			mcc_sad_plan_free(pl);
			return st;
		}
	}
	*plan = pl;
	return MCC_OK;
}

/* Free a plan. */
void
mcc_sad_plan_free(mcc_sad_plan *plan)
{
	if (plan == NULL)
		return;
	free(plan->mem);
	free(plan);
}

/* Number of bands. */
uint32_t
mcc_sad_plan_bands(const mcc_sad_plan *plan)
{
	return plan->bands;
}

/* Kernel in use. */
int
mcc_sad_plan_kernel(const mcc_sad_plan *plan)
{
	return plan->kern->id;
}

/* Map size. */
void
mcc_sad_plan_size(const mcc_sad_plan *plan, uint32_t *nx, uint32_t *ny)
{
	*nx = plan->nx;
	*ny = plan->ny;
}

/* Raw sums of a band (by x nxp u64), then the running strip box (nx u32). */
size_t
mcc_sad_plan_scratch(const mcc_sad_plan *plan)
{
	return round_up((size_t) plan->kern->by * plan->nxp * sizeof(uint64_t), 64) +
		round_up((size_t) plan->nx * sizeof(uint32_t), 64);
}

/* One band: raw sums, less the padding's share, to the map and the top-k. */
void
mcc_sad_plan_band(const mcc_sad_plan *plan, uint32_t band, void *scratch, uint64_t *map,
				  mcc_sad_topk *topk)
{
	const uint32_t by = plan->kern->by;
	const uint32_t y0 = band * by;
	const uint32_t rows = plan->ny - y0 < by ? plan->ny - y0 : by;
	const uint32_t nx = plan->nx;
	const uint32_t h = plan->pattern->height;
	uint64_t   *raw = scratch;
	uint32_t   *box = (uint32_t *) ((uint8_t *) scratch +
									round_up((size_t) by * plan->nxp * sizeof(uint64_t), 64));
	const uint16_t *strip = plan->strip;

	plan->kern->band(plan, y0, raw);
	if (strip)
	{
		memset(box, 0, nx * sizeof(uint32_t));
		for (uint32_t t = y0; t < y0 + h; t++)
		{
			const uint16_t *s = strip + (size_t) t * nx;

			for (uint32_t x = 0; x < nx; x++)
				box[x] += s[x];
		}
	}
	for (uint32_t dy = 0; dy < rows; dy++)
	{
		const uint32_t y = y0 + dy;
		const uint64_t *r = raw + (size_t) dy * plan->nxp;

		for (uint32_t x = 0; x < nx; x++)
		{
			uint64_t	v = r[x] - (strip ? box[x] : 0);

			if (map)
				map[(size_t) y * nx + x] = v;
			if (topk && (topk->n < topk->k || v <= topk->hits[0].sad))
			{
				mcc_sad_hit hit = {v, x, y};

				mcc_sad_topk_offer(topk, &hit);
			}
		}
		if (strip && dy + 1 < rows)
		{
			const uint16_t *out = strip + (size_t) y * nx;
			const uint16_t *in = strip + (size_t) (y + h) * nx;

			for (uint32_t x = 0; x < nx; x++)
				box[x] += (uint32_t) in[x] - out[x];
		}
	}
}
