/*
 * mcc_dp2d.c: elastic image matching (mcc_dp2d.h) with a lane kernel:
 * kernel choice, size rules, buffers, and the three steps of a pair:
 *
 *   1. the local distance of every row pair (Eq. 6): for each row i of a,
 *      the kernel runs the row DPs of i against `lanes` rows of b at once
 *      (b's rows transposed into lane groups once per pair);
 *   2. the DP over rows (Eq. 7) on those local distances, in 64-bit
 *      scalar code, keeping each cell's two back-tracing choices;
 *   3. with MCC_DP2D_WARP: back-tracing the row path, then the row DPs of
 *      (i, row_map[i]) again, `lanes` rows of a at a time, with the
 *      kernel's choice masks, back-tracing each into a column map, and
 *      the warped rows and their differences.
 */
#include <stdlib.h>
#include <string.h>

#include "mcc_cpu_kernel.h"
#include "mcc_dp2d_int.h"
#include "mcc_dp2d_trace.h"

#define INF MCC_DP2D_INF64

static const char *const kernel_names[MCC_DP2D_KERNELS] = {
	"auto", "reference", "generic", "avx2", "avx512"
};

/* Kernel name. */
const char *
mcc_dp2d_kernel_name(int kernel)
{
	return kernel >= 0 && kernel < MCC_DP2D_KERNELS ? kernel_names[kernel] : NULL;
}

/* Kernel by name. */
int
mcc_dp2d_kernel_by_name(const char *name)
{
	for (int k = 0; k < MCC_DP2D_KERNELS; k++)
		if (strcmp(name, kernel_names[k]) == 0)
			return k;
	return -1;
}

/* The lane kernel of an id, NULL for the reference or an unknown id. */
static const mcc_dp2d_kern *
kern_of(int kernel)
{
	switch (kernel)
	{
		case MCC_DP2D_GENERIC:
			return &mcc_dp2d_kern_generic;
		case MCC_DP2D_AVX2:
			return &mcc_dp2d_kern_avx2;
		case MCC_DP2D_AVX512:
			return &mcc_dp2d_kern_avx512;
		default:
			return NULL;
	}
}

/* Whether this CPU can run the kernel. */
int
mcc_dp2d_kernel_usable(int kernel)
{
	const mcc_dp2d_kern *k;

	if (kernel == MCC_DP2D_AUTO || kernel == MCC_DP2D_REFERENCE)
		return 1;
	k = kern_of(kernel);
	return k != NULL && k->run16 != NULL && k->usable();
}

/* Best usable kernel: widest vectors first. */
int
mcc_dp2d_kernel_auto(void)
{
	static const int order[] = {MCC_DP2D_AVX512, MCC_DP2D_AVX2, MCC_DP2D_GENERIC};

	return mcc_kernel_first(order, (int) (sizeof(order) / sizeof(order[0])),
							mcc_dp2d_kernel_usable, MCC_DP2D_GENERIC);
}

/* The lane kernel for an id (AUTO: the best); NULL for the reference. */
const mcc_dp2d_kern *
mcc_dp2d_kern_get(int kernel)
{
	if (kernel == MCC_DP2D_AUTO)
		kernel = mcc_dp2d_kernel_auto();
	if (!mcc_dp2d_kernel_usable(kernel))
		return NULL;
	return kern_of(kernel);
}

/* Check one dimension: sizes within limits and at most 2:1. */
static mcc_status
check_dim(const char *what, uint32_t na, uint32_t nb, mcc_error *err)
{
	uint32_t	lo = na < nb ? na : nb;
	uint32_t	hi = na < nb ? nb : na;

	if (lo == 0)
		return mcc_error_set(err, MCC_ERR_VALUE, "image %s must be positive", what);
	if (hi > MCC_DP2D_MAX_SIDE)
		return mcc_error_set(err, MCC_ERR_LIMIT, "image %s %u is too large for elastic matching",
							 what, hi),
			mcc_error_detail(err, "Elastic matching takes images of at most %d x %d pixels; "
							 "its time grows with the fourth power of the side.",
							 MCC_DP2D_MAX_SIDE, MCC_DP2D_MAX_SIDE);
	if (hi > 2 * (uint64_t) lo)
		return mcc_error_set(err, MCC_ERR_VALUE, "image %ss %u and %u are too different for elastic matching",
							 what, na, nb),
			mcc_error_detail(err, "The slope constraint (no two non-diagonal moves in a row) "
							 "needs the larger %s to be at most twice the smaller.", what);
	return MCC_OK;
}

/* Size rules. */
mcc_status
mcc_dp2d_check(const mcc_image *a, const mcc_image *b, mcc_error *err)
{
	mcc_status	st;

	if (a == NULL || b == NULL || a->pixels == NULL || b->pixels == NULL)
		return mcc_error_set(err, MCC_ERR_VALUE, "missing image for elastic matching");
	if ((st = check_dim("width", a->width, b->width, err)) != MCC_OK)
		return st;
	if ((st = check_dim("height", a->height, b->height, err)) != MCC_OK)
		return st;
	if (a->stride < a->width || b->stride < b->width)
		return mcc_error_set(err, MCC_ERR_INTERNAL, "image stride below its width");
	return MCC_OK;
}

/* (Ha + Hb) (Wa + Wb) */
uint64_t
mcc_dp2d_weight(const mcc_image *a, const mcc_image *b)
{
	return ((uint64_t) a->height + b->height) * ((uint64_t) a->width + b->width);
}

/* Element width, lanes and lane groups of a pair with kernel k. */
void
mcc_dp2d_geom_init(mcc_dp2d_geom *g, const mcc_dp2d_kern *k, const mcc_image *a,
				   const mcc_image *b)
{
	g->ha = a->height;
	g->wa = a->width;
	g->hb = b->height;
	g->wb = b->width;
	g->wide = !MCC_DP2D_FITS16(g->wa, g->wb);
	g->lanes = g->wide ? k->lanes32 : k->lanes16;
	g->esize = g->wide ? 4 : 2;
	g->groups = (g->hb + g->lanes - 1) / g->lanes;
}

/* n rounded up to 64 */
static inline size_t
up64(size_t n)
{
	return (n + 63) & ~(size_t) 63;
}

/* Pair buffer: costs, then b transposed (any kernel: at most 32 rows of padding). */
size_t
mcc_dp2d_pairbuf_size(const mcc_dp2d_maxdims *d)
{
	return up64((size_t) d->ha * d->hb * sizeof(uint32_t)) +
		up64(((size_t) d->hb + MCC_DP2D_MAX_LANES) * d->wb * 4);
}

void
mcc_dp2d_pairbuf_init(mcc_dp2d_pairbuf *pb, void *mem, const mcc_dp2d_maxdims *d)
{
	char	   *p = mem;

	pb->cost = (uint32_t *) p;
	p += up64((size_t) d->ha * d->hb * sizeof(uint32_t));
	pb->bt = p;
}

/* Scratch: the parts of mcc_dp2d_scratch in order, each 64-byte aligned. */
static size_t
scratch_layout(mcc_dp2d_scratch *s, char *p, const mcc_dp2d_maxdims *d, int flags)
{
	size_t		off = 0;

#define TAKE(field, type, bytes) \
	do { if (s) s->field = (type) (p + off); off += up64(bytes); } while (0)
	TAKE(xt, void *, (size_t) d->wa * MCC_DP2D_VEC_BYTES);
	TAKE(yt, void *, (size_t) d->wb * MCC_DP2D_VEC_BYTES);
	TAKE(work, void *, 2 * (size_t) d->wb * MCC_DP2D_VEC_BYTES);
	TAKE(oe, uint64_t *, (size_t) d->hb * sizeof(uint64_t));
	TAKE(od, uint64_t *, (size_t) d->hb * sizeof(uint64_t));
	TAKE(odir, uint8_t *, (size_t) d->ha * d->hb);
	TAKE(row_map, uint32_t *, (size_t) d->ha * sizeof(uint32_t));
	TAKE(col_map, uint32_t *, (size_t) d->wa * sizeof(uint32_t));
	if (flags & MCC_DP2D_WARP)
		TAKE(masks, uint32_t *, 2 * (size_t) d->wa * d->wb * sizeof(uint32_t));
	else if (s)
		s->masks = NULL;
#undef TAKE
	return off;
}

size_t
mcc_dp2d_scratch_size(const mcc_dp2d_maxdims *d, int flags)
{
	return scratch_layout(NULL, NULL, d, flags);
}

void
mcc_dp2d_scratch_init(mcc_dp2d_scratch *s, void *mem, const mcc_dp2d_maxdims *d, int flags)
{
	scratch_layout(s, mem, d, flags);
}

/* Store v at lane l of vector k of a lane array. */
static inline void
lane_put(void *arr, const mcc_dp2d_geom *g, size_t k, uint32_t l, uint32_t v)
{
	size_t		at = k * g->lanes + l;

	if (g->wide)
		((uint32_t *) arr)[at] = v;
	else
		((uint16_t *) arr)[at] = (uint16_t) v;
}

/* Row r of an image. */
static inline const uint8_t *
row_of(const mcc_image *img, uint32_t r)
{
	return img->pixels + (size_t) r * img->stride;
}

/* b's rows into lane groups: group gi, column q, lane l = b[gi * lanes + l][q]. */
void
mcc_dp2d_pair_prepare(const mcc_dp2d_kern *k, const mcc_dp2d_geom *g, const mcc_image *b,
					  mcc_dp2d_pairbuf *pb)
{
	for (uint32_t gi = 0; gi < g->groups; gi++)
		for (uint32_t l = 0; l < g->lanes; l++)
		{
			uint32_t	r = gi * g->lanes + l;
			const uint8_t *row = r < g->hb ? row_of(b, r) : NULL;

			for (uint32_t q = 0; q < g->wb; q++)
				lane_put(pb->bt, g, (size_t) gi * g->wb + q, l, row ? row[q] : 0);
		}
}

/* Row i of the local distances: row i of a against every row of b. */
void
mcc_dp2d_pair_row(const mcc_dp2d_kern *k, const mcc_dp2d_geom *g, const mcc_image *a,
				  uint32_t i, mcc_dp2d_pairbuf *pb, mcc_dp2d_scratch *s)
{
	const uint8_t *ra = row_of(a, i);
	mcc_dp2d_lanes_fn run = g->wide ? k->run32 : k->run16;
	size_t		gbytes = (size_t) g->wb * g->lanes * g->esize;
	uint32_t   *crow = pb->cost + (size_t) i * g->hb;

	for (uint32_t p = 0; p < g->wa; p++)
		for (uint32_t l = 0; l < g->lanes; l++)
			lane_put(s->xt, g, p, l, ra[p]);
	for (uint32_t gi = 0; gi < g->groups; gi++)
	{
		uint32_t	r0 = gi * g->lanes;
		uint32_t	nl = g->hb - r0 < g->lanes ? g->hb - r0 : g->lanes;

		run(s->xt, g->wa, (const char *) pb->bt + gi * gbytes, g->wb, s->work, NULL,
			s->lanes_out);
		memcpy(crow + r0, s->lanes_out, nl * sizeof(uint32_t));
	}
}

static inline uint64_t
add_inf(uint64_t a, uint64_t b)
{
	return a >= INF ? INF : a + b;
}

/*
 * The DP over rows (Eq. 7) with two rows of values, recording per cell
 * bit 0 = "Dd <= Dn" and bit 1 = "Dd(i-1, j) <= Dd(i, j-1)".
 */
static uint64_t
outer_dp(const uint32_t *cost, uint32_t ha, uint32_t hb, mcc_dp2d_scratch *s)
{
	uint64_t   *e = s->oe,
			   *d = s->od;

	for (uint32_t j = 0; j < hb; j++)
		e[j] = d[j] = INF;
	for (uint32_t i = 0; i < ha; i++)
	{
		uint64_t	diag = i == 0 ? 0 : INF;
		uint64_t	left = INF;
		const uint32_t *c = cost + (size_t) i * hb;
		uint8_t    *dir = s->odir + (size_t) i * hb;

		for (uint32_t j = 0; j < hb; j++)
		{
			uint64_t	dd = add_inf(diag, 2 * (uint64_t) c[j]);
			uint64_t	up = d[j];
			uint64_t	dn = add_inf(up < left ? up : left, c[j]);

			diag = e[j];
			e[j] = dd <= dn ? dd : dn;
			d[j] = dd;
			dir[j] = (uint8_t) ((dd <= dn) | ((up <= left) << 1));
			left = dd;
		}
	}
	return e[hb - 1];
}

/* Back-trace the outer DP into map[i] = first j paired with row i. */
static void
outer_trace(const uint8_t *odir, uint32_t ha, uint32_t hb, uint32_t *map)
{
#define OUTER_BIT(i, j, b) ((odir[(size_t) (i) * hb + (j)] >> (b)) & 1u)
	MCC_DP2D_BACK_TRACE(ha, hb, map, OUTER_BIT);
#undef OUTER_BIT
}

/* Back-trace lane l of a row DP from the kernel's masks into map[p]. */
static void
lane_trace(const uint32_t *masks, uint32_t wa, uint32_t wb, uint32_t l, uint32_t *map)
{
#define LANE_BIT(p, q, b) ((masks[2 * ((size_t) (p) * wb + (q)) + (b)] >> l) & 1u)
	MCC_DP2D_BACK_TRACE(wa, wb, map, LANE_BIT);
#undef LANE_BIT
}

/* Step 3: column maps of the rows (i, row_map[i]), the warp, the differences. */
static mcc_status
warp_rows(const mcc_dp2d_kern *k, const mcc_dp2d_geom *g, const mcc_image *a,
		  const mcc_image *b, const mcc_dp2d_pairbuf *pb, mcc_dp2d_scratch *s,
		  mcc_dp2d_out *out, mcc_error *err)
{
	mcc_dp2d_lanes_fn run = g->wide ? k->run32 : k->run16;
	const uint32_t *rmap = s->row_map;

	out->differences = 0;
	for (uint32_t i0 = 0; i0 < g->ha; i0 += g->lanes)
	{
		uint32_t	nl = g->ha - i0 < g->lanes ? g->ha - i0 : g->lanes;

		for (uint32_t l = 0; l < g->lanes; l++)
		{
			const uint8_t *ra = l < nl ? row_of(a, i0 + l) : NULL;
			const uint8_t *rb = l < nl ? row_of(b, rmap[i0 + l]) : NULL;

			for (uint32_t p = 0; p < g->wa; p++)
				lane_put(s->xt, g, p, l, ra ? ra[p] : 0);
			for (uint32_t q = 0; q < g->wb; q++)
				lane_put(s->yt, g, q, l, rb ? rb[q] : 0);
		}
		run(s->xt, g->wa, s->yt, g->wb, s->work, s->masks, s->lanes_out);
		for (uint32_t l = 0; l < nl; l++)
		{
			uint32_t	i = i0 + l;
			const uint8_t *ra = row_of(a, i);
			const uint8_t *rb = row_of(b, rmap[i]);

			if (s->lanes_out[l] != pb->cost[(size_t) i * g->hb + rmap[i]])
				return mcc_error_set(err, MCC_ERR_INTERNAL,
									 "elastic matching recomputed row %u differently", i);
			lane_trace(s->masks, g->wa, g->wb, l, s->col_map);
			for (uint32_t p = 0; p < g->wa; p++)
			{
				uint8_t		v = rb[s->col_map[p]];

				out->differences += v != ra[p];
				if (out->warped)
					out->warped[(size_t) i * g->wa + p] = v;
			}
			if (out->col_map)
				memcpy(out->col_map + (size_t) i * g->wa, s->col_map, g->wa * sizeof(uint32_t));
		}
	}
	if (out->row_map)
		memcpy(out->row_map, rmap, g->ha * sizeof(uint32_t));
	return MCC_OK;
}

/* Steps 2 and 3 of a pair whose local distances are all known. */
mcc_status
mcc_dp2d_pair_finish(const mcc_dp2d_kern *k, const mcc_dp2d_geom *g, const mcc_image *a,
					 const mcc_image *b, int flags, const mcc_dp2d_pairbuf *pb,
					 mcc_dp2d_scratch *s, mcc_dp2d_out *out, mcc_error *err)
{
	uint64_t	cost = outer_dp(pb->cost, g->ha, g->hb, s);

	if (cost >= INF)
		return mcc_error_set(err, MCC_ERR_VALUE, "no warping path between images of %ux%u and %ux%u",
							 g->wa, g->ha, g->wb, g->hb);
	out->cost = cost;
	out->distance = (double) cost / (double) mcc_dp2d_weight(a, b);
	out->differences = 0;
	if (!(flags & MCC_DP2D_WARP))
		return MCC_OK;
	outer_trace(s->odir, g->ha, g->hb, s->row_map);
	return warp_rows(k, g, a, b, pb, s, out, err);
}

/* One pair in the caller's thread. */
mcc_status
mcc_dp2d_match(const mcc_image *a, const mcc_image *b, int kernel, int flags,
			   mcc_dp2d_out *out, mcc_error *err)
{
	const mcc_dp2d_kern *k;
	mcc_dp2d_maxdims d;
	mcc_dp2d_geom g;
	mcc_dp2d_pairbuf pb;
	mcc_dp2d_scratch s;
	size_t		pbsize,
				ssize;
	void	   *mem;
	mcc_status	st;

	if ((st = mcc_dp2d_check(a, b, err)) != MCC_OK)
		return st;
	if (kernel == MCC_DP2D_REFERENCE)
		return mcc_dp2d_match_ref(a, b, flags, out, err);
	if ((k = mcc_dp2d_kern_get(kernel)) == NULL)
		return mcc_error_set(err, MCC_ERR_VALUE, "elastic matching kernel %d is not usable here",
							 kernel);
	d.ha = a->height;
	d.wa = a->width;
	d.hb = b->height;
	d.wb = b->width;
	pbsize = mcc_dp2d_pairbuf_size(&d);
	ssize = mcc_dp2d_scratch_size(&d, flags);
	if ((mem = aligned_alloc(64, pbsize + ssize)) == NULL)
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for elastic matching");
	mcc_dp2d_pairbuf_init(&pb, mem, &d);
	mcc_dp2d_scratch_init(&s, (char *) mem + pbsize, &d, flags);
	mcc_dp2d_geom_init(&g, k, a, b);
	mcc_dp2d_pair_prepare(k, &g, b, &pb);
	for (uint32_t i = 0; i < g.ha; i++)
		mcc_dp2d_pair_row(k, &g, a, i, &pb, &s);
	st = mcc_dp2d_pair_finish(k, &g, a, b, flags, &pb, &s, out, err);
	free(mem);
	return st;
}
