/*
 * mcc_dp2d_ref.c: the reference kernel of mcc_dp2d.h, Eq. 2 with the
 * slope constraint written out over full matrices, 64-bit sums, and
 * back-tracing through those matrices. Slow (a full matrix per row pair)
 * and simple: the lane kernels and the GPU are checked against it.
 */
#include <stdlib.h>
#include <string.h>

#include "mcc_dp2d_int.h"

#define INF MCC_DP2D_INF64

/* a + b, or INF when a is INF (no path) */
static inline uint64_t
add_inf(uint64_t a, uint64_t b)
{
	return a >= INF ? INF : a + b;
}

static inline uint64_t
min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/*
 * Fill the n x m matrices dd and dn of Eq. 2 under the slope constraint
 * from the local distances c (n x m, row i first).
 */
static void
ref_fill(uint32_t n, uint32_t m, const uint64_t *c, uint64_t *dd, uint64_t *dn)
{
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < m; j++)
		{
			size_t		k = (size_t) i * m + j;
			uint64_t	diag,
						up,
						left;

			if (i == 0 && j == 0)
				diag = 0;		/* the start counts as a diagonal move */
			else if (i > 0 && j > 0)
				diag = min64(dd[k - m - 1], dn[k - m - 1]);
			else
				diag = INF;
			up = i > 0 ? dd[k - m] : INF;
			left = j > 0 ? dd[k - 1] : INF;
			dd[k] = add_inf(diag, 2 * c[k]);
			dn[k] = add_inf(min64(up, left), c[k]);
		}
}

/*
 * Back-trace the optimal path from (n-1, m-1) with the tie rules of
 * mcc_dp2d.h. Calls visit(arg, i, j) for every cell, last cell first.
 */
static void
ref_trace(uint32_t n, uint32_t m, const uint64_t *dd, const uint64_t *dn,
		  void (*visit) (void *, uint32_t, uint32_t), void *arg)
{
	uint32_t	i = n - 1,
				j = m - 1;
	int			diagonal = dd[(size_t) i * m + j] <= dn[(size_t) i * m + j];

	for (;;)
	{
		size_t		k = (size_t) i * m + j;

		visit(arg, i, j);
		if (i == 0 && j == 0)
			break;
		if (diagonal)
		{
			i--;
			j--;
			k = (size_t) i * m + j;
			diagonal = dd[k] <= dn[k];
		}
		else
		{
			uint64_t	up = i > 0 ? dd[k - m] : INF;
			uint64_t	left = j > 0 ? dd[k - 1] : INF;

			if (up <= left)
				i--;
			else
				j--;
			diagonal = 1;
		}
	}
}

/* visit(): the first j of each i, i.e. the last one seen going back */
static void
visit_map(void *arg, uint32_t i, uint32_t j)
{
	((uint32_t *) arg)[i] = j;
}

typedef struct path_acc
{
	uint32_t   *pi;
	uint32_t   *pj;
	uint32_t	len;
} path_acc;

/* visit(): record the cells */
static void
visit_path(void *arg, uint32_t i, uint32_t j)
{
	path_acc   *p = arg;

	p->pi[p->len] = i;
	p->pj[p->len] = j;
	p->len++;
}

/* Local distances of two byte sequences. */
static void
seq_local(const uint8_t *x, uint32_t n, const uint8_t *y, uint32_t m, uint64_t *c)
{
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < m; j++)
			c[(size_t) i * m + j] = x[i] > y[j] ? x[i] - y[j] : y[j] - x[i];
}

/* The cost of two sequences; UINT64_MAX when no path exists or memory fails. */
uint64_t
mcc_dp2d_seq_cost(const uint8_t *x, uint32_t n, const uint8_t *y, uint32_t m)
{
	size_t		cells = (size_t) n * m;
	uint64_t   *mem,
				r;

	if (n == 0 || m == 0 || (mem = malloc(3 * cells * sizeof(uint64_t))) == NULL)
		return UINT64_MAX;
	seq_local(x, n, y, m, mem);
	ref_fill(n, m, mem, mem + cells, mem + 2 * cells);
	r = min64(mem[cells + cells - 1], mem[2 * cells + cells - 1]);
	free(mem);
	return r >= INF ? UINT64_MAX : r;
}

/* The optimal path of two sequences, first cell first; 0 if none. */
uint32_t
mcc_dp2d_seq_path(const uint8_t *x, uint32_t n, const uint8_t *y, uint32_t m,
				  uint32_t *pi, uint32_t *pj)
{
	size_t		cells = (size_t) n * m;
	uint64_t   *mem;
	path_acc	acc = {pi, pj, 0};

	if (n == 0 || m == 0 || (mem = malloc(3 * cells * sizeof(uint64_t))) == NULL)
		return 0;
	seq_local(x, n, y, m, mem);
	ref_fill(n, m, mem, mem + cells, mem + 2 * cells);
	if (min64(mem[2 * cells - 1], mem[3 * cells - 1]) < INF)
	{
		ref_trace(n, m, mem + cells, mem + 2 * cells, visit_path, &acc);
		/* reverse into path order */
		for (uint32_t k = 0; k < acc.len / 2; k++)
		{
			uint32_t	t = pi[k];

			pi[k] = pi[acc.len - 1 - k];
			pi[acc.len - 1 - k] = t;
			t = pj[k];
			pj[k] = pj[acc.len - 1 - k];
			pj[acc.len - 1 - k] = t;
		}
	}
	free(mem);
	return acc.len;
}

/* Row r of an image. */
static inline const uint8_t *
row_of(const mcc_image *img, uint32_t r)
{
	return img->pixels + (size_t) r * img->stride;
}

/* One pair, everything from full matrices. */
mcc_status
mcc_dp2d_match_ref(const mcc_image *a, const mcc_image *b, int flags, mcc_dp2d_out *out,
				   mcc_error *err)
{
	uint32_t	ha = a->height,
				wa = a->width,
				hb = b->height,
				wb = b->width;
	size_t		inner = (size_t) wa * wb,
				outer = (size_t) ha * hb;
	uint64_t   *c = malloc(3 * inner * sizeof(uint64_t));
	uint64_t   *oc = malloc(3 * outer * sizeof(uint64_t));
	uint32_t   *rmap = malloc((ha + wa) * sizeof(uint32_t));
	uint32_t   *cmap = rmap ? rmap + ha : NULL;
	uint64_t   *dd = c + inner,
			   *dn = c + 2 * inner;
	mcc_status	st = MCC_OK;

	if (c == NULL || oc == NULL || rmap == NULL)
	{
		st = mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for elastic matching");
		goto done;
	}
	/* Eq. 6: the local distance of every row pair */
	for (uint32_t i = 0; i < ha; i++)
		for (uint32_t j = 0; j < hb; j++)
		{
			seq_local(row_of(a, i), wa, row_of(b, j), wb, c);
			ref_fill(wa, wb, c, dd, dn);
			oc[(size_t) i * hb + j] = min64(dd[inner - 1], dn[inner - 1]);
		}
	/* Eq. 7: the DP over rows */
	ref_fill(ha, hb, oc, oc + outer, oc + 2 * outer);
	out->cost = min64(oc[2 * outer - 1], oc[3 * outer - 1]);
	if (out->cost >= INF)
	{
		st = mcc_error_set(err, MCC_ERR_VALUE, "no warping path between images of %ux%u and %ux%u",
						   wa, ha, wb, hb);
		goto done;
	}
	out->distance = (double) out->cost / (double) mcc_dp2d_weight(a, b);
	out->differences = 0;
	if (!(flags & MCC_DP2D_WARP))
		goto done;
	ref_trace(ha, hb, oc + outer, oc + 2 * outer, visit_map, rmap);
	for (uint32_t i = 0; i < ha; i++)
	{
		const uint8_t *ra = row_of(a, i);
		const uint8_t *rb = row_of(b, rmap[i]);

		seq_local(ra, wa, rb, wb, c);
		ref_fill(wa, wb, c, dd, dn);
		ref_trace(wa, wb, dd, dn, visit_map, cmap);
		for (uint32_t p = 0; p < wa; p++)
		{
			uint8_t		v = rb[cmap[p]];

			if (v != ra[p])
				out->differences++;
			if (out->warped)
				out->warped[(size_t) i * wa + p] = v;
			if (out->col_map)
				out->col_map[(size_t) i * wa + p] = cmap[p];
		}
		if (out->row_map)
			out->row_map[i] = rmap[i];
	}
done:
	free(c);
	free(oc);
	free(rmap);
	return st;
}
