/*
 * test_dp2d.c: elastic image matching (mcc_dp2d.h).
 *
 * Known answers come from independent computations here: a brute-force
 * enumeration of every path obeying the slope constraint (1D and 2D on
 * tiny inputs), images built with known duplicated rows/columns (cost 0,
 * known maps) and known shifts. Then every lane kernel against the
 * reference (cost, maps, warped image, differences), threads against one
 * thread in both sharing modes, and the bad inputs.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_dp2d.h"
#include "mcc_rng.h"
#include "unit.h"

#define BF_INF UINT64_MAX

/* Brute force: every constrained path from (i, j) on; min of the rest. */
static uint64_t
bf_walk(const uint64_t *c, uint32_t n, uint32_t m, uint32_t i, uint32_t j, int free_move)
{
	uint64_t	best = BF_INF,
				r;

	if (i == n - 1 && j == m - 1)
		return 0;
	if (i + 1 < n && j + 1 < m &&
		(r = bf_walk(c, n, m, i + 1, j + 1, 1)) != BF_INF && r + 2 * c[(i + 1) * m + j + 1] < best)
		best = r + 2 * c[(i + 1) * m + j + 1];
	if (free_move && i + 1 < n &&
		(r = bf_walk(c, n, m, i + 1, j, 0)) != BF_INF && r + c[(i + 1) * m + j] < best)
		best = r + c[(i + 1) * m + j];
	if (free_move && j + 1 < m &&
		(r = bf_walk(c, n, m, i, j + 1, 0)) != BF_INF && r + c[i * m + j + 1] < best)
		best = r + c[i * m + j + 1];
	return best;
}

/* Brute-force constrained DP cost of an n x m grid of local distances. */
static uint64_t
bf_cost(const uint64_t *c, uint32_t n, uint32_t m)
{
	uint64_t	r = bf_walk(c, n, m, 0, 0, 1);

	return r == BF_INF ? BF_INF : r + 2 * c[0];
}

/* Brute-force cost of two byte sequences. */
static uint64_t
bf_seq(const uint8_t *x, uint32_t n, const uint8_t *y, uint32_t m)
{
	uint64_t	c[64];

	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < m; j++)
			c[i * m + j] = x[i] > y[j] ? x[i] - y[j] : y[j] - x[i];
	return bf_cost(c, n, m);
}

/* Random bytes. */
static void
fill_random(mcc_rng *r, uint8_t *p, size_t n, uint32_t range)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t) mcc_rng_below(r, range);
}

/* An image with its own pixels (stride may exceed the width). */
static mcc_image
img_new(uint32_t w, uint32_t h, size_t stride)
{
	mcc_image	im;

	im.width = w;
	im.height = h;
	im.stride = stride;
	im.pixels = calloc(stride * h + 1, 1);
	return im;
}

/* A random image; pad bytes beyond the width get noise too. */
static mcc_image
img_random(mcc_rng *r, uint32_t w, uint32_t h, size_t pad, uint32_t range)
{
	mcc_image	im = img_new(w, h, w + pad);

	fill_random(r, im.pixels, im.stride * h, range);
	return im;
}

/* Outputs with their own buffers for a pair. */
typedef struct result
{
	mcc_dp2d_out o;
	mcc_status	st;
} result;

static void
result_init(result *res, const mcc_image *a)
{
	memset(res, 0, sizeof(*res));
	res->o.row_map = calloc(a->height, sizeof(uint32_t));
	res->o.col_map = calloc((size_t) a->height * a->width, sizeof(uint32_t));
	res->o.warped = calloc((size_t) a->height * a->width, 1);
}

static void
result_free(result *res)
{
	free(res->o.row_map);
	free(res->o.col_map);
	free(res->o.warped);
}

/* Whether two results of the same a are identical in every output. */
static int
result_same(const result *x, const result *y, const mcc_image *a)
{
	size_t		n = (size_t) a->height * a->width;

	return x->st == y->st && x->o.cost == y->o.cost && x->o.distance == y->o.distance &&
		x->o.differences == y->o.differences &&
		memcmp(x->o.row_map, y->o.row_map, a->height * sizeof(uint32_t)) == 0 &&
		memcmp(x->o.col_map, y->o.col_map, n * sizeof(uint32_t)) == 0 &&
		memcmp(x->o.warped, y->o.warped, n) == 0;
}

/* The first kernel from k on that this CPU can run; MCC_DP2D_KERNELS when none is left. */
static int
usable_from(int k)
{
	while (k < MCC_DP2D_KERNELS && !mcc_dp2d_kernel_usable(k))
		k++;
	return k;
}

/* Match with a kernel and every output. */
static void
run_kernel(const mcc_image *a, const mcc_image *b, int kernel, result *res)
{
	mcc_error	err;

	result_init(res, a);
	res->st = mcc_dp2d_match(a, b, kernel, MCC_DP2D_WARP, &res->o, &err);
	if (res->st != MCC_OK)
		printf("# %s: %s\n", mcc_dp2d_kernel_name(kernel), err.message);
}

/* 1D: the DP against brute force, the feasibility rule, the path. */
static void
test_seq(void)
{
	mcc_rng		r;
	int			bad_cost = 0,
				bad_inf = 0,
				bad_path = 0,
				n_feasible = 0,
				n_inf = 0;

	mcc_rng_seed(&r, 1);
	for (int t = 0; t < 3000; t++)
	{
		uint8_t		x[8],
					y[8];
		uint32_t	n = 1 + (uint32_t) mcc_rng_below(&r, 7);
		uint32_t	m = 1 + (uint32_t) mcc_rng_below(&r, 7);
		uint32_t	pi[16],
					pj[16],
					len;
		uint64_t	c = 0,
					bf,
					dp;
		int			nondiag_run = 0;

		fill_random(&r, x, n, t % 3 == 0 ? 4 : 256);
		fill_random(&r, y, m, t % 3 == 0 ? 4 : 256);
		bf = bf_seq(x, n, y, m);
		dp = mcc_dp2d_seq_cost(x, n, y, m);
		if (bf != dp)
			bad_cost++;
		/* a path exists iff the longer is at most twice the shorter */
		if ((dp == UINT64_MAX) != ((n > m ? n : m) > 2 * (n < m ? n : m)))
			bad_inf++;
		len = mcc_dp2d_seq_path(x, n, y, m, pi, pj);
		if (dp == UINT64_MAX)
		{
			n_inf++;
			bad_path += len != 0;
			continue;
		}
		n_feasible++;
		/* starts and ends at the corners, unit monotone moves, constraint, sum */
		if (len == 0 || pi[0] != 0 || pj[0] != 0 || pi[len - 1] != n - 1 || pj[len - 1] != m - 1)
		{
			bad_path++;
			continue;
		}
		c = 2 * (uint64_t) (x[0] > y[0] ? x[0] - y[0] : y[0] - x[0]);
		for (uint32_t k = 1; k < len; k++)
		{
			uint32_t	di = pi[k] - pi[k - 1],
						dj = pj[k] - pj[k - 1];
			uint64_t	d = x[pi[k]] > y[pj[k]] ? x[pi[k]] - y[pj[k]] : y[pj[k]] - x[pi[k]];

			if (di > 1 || dj > 1 || di + dj == 0)
				bad_path++;
			if (di + dj == 1)
			{
				if (nondiag_run)
					bad_path++;	/* two non-diagonal moves in a row */
				nondiag_run = 1;
				c += d;
			}
			else
			{
				nondiag_run = 0;
				c += 2 * d;
			}
		}
		if (c != dp)
			bad_path++;
	}
	UNIT_CHECK(bad_cost == 0, "1D DP equals brute force over constrained paths (3000 pairs, %d wrong)",
			   bad_cost);
	UNIT_CHECK(bad_inf == 0 && n_inf > 0 && n_feasible > 0,
			   "no path exactly when the longer sequence is over twice the shorter (%d infeasible)",
			   n_inf);
	UNIT_CHECK(bad_path == 0,
			   "back-traced paths: corners, unit moves, never two non-diagonal moves in a row, "
			   "weighted sum = cost (%d bad)", bad_path);
}

/* Brute-force 2D cost of tiny images: outer brute force over inner brute force. */
static uint64_t
bf_image(const mcc_image *a, const mcc_image *b)
{
	uint64_t	c[64];

	for (uint32_t i = 0; i < a->height; i++)
		for (uint32_t j = 0; j < b->height; j++)
			c[i * b->height + j] = bf_seq(a->pixels + i * a->stride, a->width,
										  b->pixels + j * b->stride, b->width);
	return bf_cost(c, a->height, b->height);
}

/* 2D against brute force, every kernel. */
static void
test_brute_2d(void)
{
	mcc_rng		r;
	int			bad[MCC_DP2D_KERNELS] = {0};
	int			bad_dist = 0;

	mcc_rng_seed(&r, 2);
	for (int t = 0; t < 200; t++)
	{
		uint32_t	ha = 1 + (uint32_t) mcc_rng_below(&r, 4),
					wa = 1 + (uint32_t) mcc_rng_below(&r, 4);
		uint32_t	hb = (ha + 1) / 2 + (uint32_t) mcc_rng_below(&r, 2 * ha - (ha + 1) / 2 + 1);
		uint32_t	wb = (wa + 1) / 2 + (uint32_t) mcc_rng_below(&r, 2 * wa - (wa + 1) / 2 + 1);
		mcc_image	a = img_random(&r, wa, ha, t % 2, 256);
		mcc_image	b = img_random(&r, wb, hb, 0, 256);
		uint64_t	bf = bf_image(&a, &b);

		for (int k = usable_from(MCC_DP2D_REFERENCE); k < MCC_DP2D_KERNELS; k = usable_from(k + 1))
		{
			mcc_dp2d_out o = {0};
			mcc_error	err;

			if (mcc_dp2d_match(&a, &b, k, 0, &o, &err) != MCC_OK || o.cost != bf)
				bad[k]++;
			if (k == MCC_DP2D_REFERENCE &&
				o.distance != (double) bf / (double) ((ha + hb) * (wa + wb)))
				bad_dist++;
		}
		free(a.pixels);
		free(b.pixels);
	}
	for (int k = MCC_DP2D_REFERENCE; k < MCC_DP2D_KERNELS; k++)
		if (mcc_dp2d_kernel_usable(k))
			UNIT_CHECK(bad[k] == 0, "%s: 2D cost equals brute force (200 tiny pairs, %d wrong)",
					   mcc_dp2d_kernel_name(k), bad[k]);
		else
			UNIT_SKIP("%s: not usable on this CPU", mcc_dp2d_kernel_name(k));
	UNIT_CHECK(bad_dist == 0, "distance = cost / ((Ha + Hb)(Wa + Wb)) (Eq. 8)");
}

/* Identical images: cost 0 and the identity warp, every kernel. */
static void
test_identity(void)
{
	mcc_rng		r;
	static const uint32_t sizes[][2] = {{1, 1}, {5, 3}, {17, 17}, {33, 40}, {85, 85}, {140, 6}};

	mcc_rng_seed(&r, 3);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (int flat = 0; flat < 2; flat++)
		{
			mcc_image	a = img_random(&r, sizes[s][0], sizes[s][1], 3, flat ? 1 : 256);
			mcc_image	b = img_new(a.width, a.height, a.width);

			if (flat)
				memset(a.pixels, 77, a.stride * a.height);
			for (uint32_t i = 0; i < a.height; i++)
				memcpy(b.pixels + i * b.stride, a.pixels + i * a.stride, a.width);
			for (int k = usable_from(MCC_DP2D_REFERENCE); k < MCC_DP2D_KERNELS; k = usable_from(k + 1))
			{
				result		res;
				int			ident = 1;

				run_kernel(&a, &b, k, &res);
				for (uint32_t i = 0; i < a.height; i++)
				{
					ident &= res.o.row_map[i] == i;
					for (uint32_t p = 0; p < a.width; p++)
						ident &= res.o.col_map[i * a.width + p] == p &&
							res.o.warped[i * a.width + p] == a.pixels[i * a.stride + p];
				}
				UNIT_CHECK(res.st == MCC_OK && res.o.cost == 0 && res.o.distance == 0.0 &&
						   res.o.differences == 0 && ident,
						   "%s: %ux%u %s image against itself: distance 0, identity warp",
						   mcc_dp2d_kernel_name(k), a.width, a.height, flat ? "flat" : "random");
				result_free(&res);
			}
			free(a.pixels);
			free(b.pixels);
		}
}

/*
 * b = a with some rows and columns doubled (never two in a row): a path of
 * cost 0 exists, a's random rows make it the only one, and warping b onto
 * a gives a back with row_map = the first copy of each row.
 */
static void
test_stretch(void)
{
	mcc_rng		r;

	mcc_rng_seed(&r, 4);
	for (int t = 0; t < 6; t++)
	{
		uint32_t	w = t < 3 ? 24 + 7 * t : 130, /* 130: 32-bit lanes */
					h = 20 + 5 * t;
		mcc_image	a = img_random(&r, w, h, 0, 256);
		uint8_t		dup_r[200] = {0},
					dup_c[200] = {0};
		uint32_t	hb = h,
					wb = w,
					first_row[200];
		uint32_t   *col_src;
		mcc_image	b;

		/* double every third row/column from a random phase */
		for (uint32_t i = (uint32_t) mcc_rng_below(&r, 3); i < h; i += 3)
			dup_r[i] = 1, hb++;
		for (uint32_t p = (uint32_t) mcc_rng_below(&r, 3); p < w; p += 3)
			dup_c[p] = 1, wb++;
		b = img_new(wb, hb, wb);
		col_src = calloc(wb, sizeof(uint32_t));
		for (uint32_t p = 0, q = 0; p < w; p++)
		{
			col_src[q++] = p;
			if (dup_c[p])
				col_src[q++] = p;
		}
		for (uint32_t i = 0, j = 0; i < h; i++)
		{
			first_row[i] = j;
			for (uint32_t q = 0; q < wb; q++)
				b.pixels[j * wb + q] = a.pixels[i * w + col_src[q]];
			j++;
			if (dup_r[i])
			{
				memcpy(b.pixels + j * wb, b.pixels + (j - 1) * wb, wb);
				j++;
			}
		}
		for (int k = usable_from(MCC_DP2D_REFERENCE); k < MCC_DP2D_KERNELS; k = usable_from(k + 1))
		{
			result		res;
			int			rows_ok = 1,
						back = 1;

			run_kernel(&a, &b, k, &res);
			for (uint32_t i = 0; i < h; i++)
				rows_ok &= res.o.row_map[i] == first_row[i];
			back = memcmp(res.o.warped, a.pixels, (size_t) w * h) == 0;
			UNIT_CHECK(res.st == MCC_OK && res.o.cost == 0 && rows_ok && back &&
					   res.o.differences == 0,
					   "%s: %ux%u stretched to %ux%u: cost 0, known row map, warp gives a back",
					   mcc_dp2d_kernel_name(k), w, h, wb, hb);
			result_free(&res);
		}
		free(col_src);
		free(a.pixels);
		free(b.pixels);
	}
}

/*
 * b = a moved down by one row and right by one column, with new random
 * pixels entering at the top and left: inside, row i of a must map to row
 * i + 1 of b and column p to p + 1.
 */
static void
test_shift(void)
{
	mcc_rng		r;
	uint32_t	w = 40,
				h = 32;
	mcc_image	a,
				b;

	mcc_rng_seed(&r, 5);
	a = img_random(&r, w, h, 0, 256);
	b = img_random(&r, w, h, 0, 256);
	for (uint32_t i = 0; i + 1 < h; i++)
		for (uint32_t p = 0; p + 1 < w; p++)
			b.pixels[(i + 1) * w + p + 1] = a.pixels[i * w + p];
	for (int k = usable_from(MCC_DP2D_REFERENCE); k < MCC_DP2D_KERNELS; k = usable_from(k + 1))
	{
		result		res;
		int			rows_ok = 1,
					cols_ok = 1;

		run_kernel(&a, &b, k, &res);
		for (uint32_t i = 1; i + 1 < h; i++)
		{
			rows_ok &= res.o.row_map[i] == i + 1;
			for (uint32_t p = 1; p + 1 < w; p++)
				cols_ok &= res.o.col_map[i * w + p] == p + 1;
		}
		UNIT_CHECK(res.st == MCC_OK && rows_ok && cols_ok,
				   "%s: a shift of (1, 1) is recovered inside the image",
				   mcc_dp2d_kernel_name(k));
		result_free(&res);
	}
	free(a.pixels);
	free(b.pixels);
}

/* Lane kernels equal the reference in every output on random images. */
static void
test_kernels_vs_reference(void)
{
	mcc_rng		r;
	static const uint32_t sizes[][4] = {
		{8, 8, 8, 8}, {13, 9, 20, 12}, {31, 33, 17, 40}, {64, 20, 48, 30},
		{120, 10, 136, 9},		/* 256 columns in all: the last 16-bit size */
		{140, 7, 131, 8},		/* 32-bit lanes */
		{3, 50, 5, 70}, {1, 1, 2, 2}, {2, 1, 1, 2}
	};
	int			compared = 0;

	mcc_rng_seed(&r, 6);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (int range = 0; range < 2; range++)
		{
			/* small ranges make ties, where the tie rules must agree */
			uint32_t	rg = range ? 256 : 3;
			mcc_image	a = img_random(&r, sizes[s][0], sizes[s][1], 5, rg);
			mcc_image	b = img_random(&r, sizes[s][2], sizes[s][3], 0, rg);
			result		ref;

			run_kernel(&a, &b, MCC_DP2D_REFERENCE, &ref);
			for (int k = usable_from(MCC_DP2D_GENERIC); k < MCC_DP2D_KERNELS; k = usable_from(k + 1))
			{
				result		res;

				run_kernel(&a, &b, k, &res);
				UNIT_CHECK(ref.st == MCC_OK && result_same(&ref, &res, &a),
						   "%s == reference: %ux%u onto %ux%u, values 0..%u (cost %llu, %llu differences)",
						   mcc_dp2d_kernel_name(k), sizes[s][2], sizes[s][3], sizes[s][0],
						   sizes[s][1], rg - 1, (unsigned long long) ref.o.cost,
						   (unsigned long long) ref.o.differences);
				result_free(&res);
				compared++;
			}
			result_free(&ref);
			free(a.pixels);
			free(b.pixels);
		}
	UNIT_CHECK(compared > 0, "at least one lane kernel was compared with the reference");
}

/*
 * Run the batch req into res[0..npairs-1] (fresh outputs through req->out,
 * shaped by each pair's image a); every result gets the run's status,
 * which is returned.
 */
static mcc_status
run_into(const mcc_dp2d_request *req, result *res)
{
	mcc_error	err;
	mcc_status	st;

	for (uint32_t p = 0; p < req->npairs; p++)
	{
		result_init(&res[p], req->a[p]);
		req->out[p] = res[p].o;
	}
	st = mcc_dp2d_run(req, &err);
	for (uint32_t p = 0; p < req->npairs; p++)
	{
		res[p].o = req->out[p];
		res[p].st = st;
	}
	return st;
}

/* Whether every result of res equals that of one; frees res. */
static int
same_then_free(const mcc_dp2d_request *req, const result *one, result *res)
{
	int			same = 1;

	for (uint32_t p = 0; p < req->npairs; p++)
	{
		same &= result_same(&one[p], &res[p], req->a[p]);
		result_free(&res[p]);
	}
	return same;
}

/* A batch with threads equals the batch on one thread, in both modes. */
static void
test_threads(void)
{
	enum
	{
		NP = 7
	};
	mcc_rng		r;
	mcc_image	imgs_a[NP],
				imgs_b[NP];
	const mcc_image *pa[NP],
			   *pb[NP];
	result		one[NP],
				many[NP];
	mcc_dp2d_out outs[NP];
	static const int counts[] = {2, 3, 8, 16};
	static const uint32_t npairs[] = {1, 2, 7};

	mcc_rng_seed(&r, 7);
	for (int p = 0; p < NP; p++)
	{
		imgs_a[p] = img_random(&r, 30 + p, 28, 1, 256);
		imgs_b[p] = img_random(&r, 27 + 2 * p, 31 - p, 0, 256);
		pa[p] = &imgs_a[p];
		pb[p] = &imgs_b[p];
	}
	for (size_t np = 0; np < sizeof(npairs) / sizeof(npairs[0]); np++)
	{
		mcc_dp2d_request req = {npairs[np], pa, pb, outs, MCC_DP2D_WARP, 1, MCC_DP2D_AUTO};
		mcc_status	st;

		run_into(&req, one);
		for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
		{
			int			same;

			req.threads = counts[c];
			st = run_into(&req, many);
			same = same_then_free(&req, one, many);
			UNIT_CHECK(st == MCC_OK && same, "%u pairs on %d threads (%s) == one thread",
					   npairs[np], counts[c],
					   npairs[np] < (uint32_t) counts[c] ? "rows shared" : "whole pairs");
		}
		/* the reference kernel through a job too */
		{
			int			same;

			req.threads = 2;
			req.kernel = MCC_DP2D_REFERENCE;
			st = run_into(&req, many);
			same = same_then_free(&req, one, many);
			UNIT_CHECK(st == MCC_OK && same, "%u pairs, reference kernel in a job == lane kernel",
					   npairs[np]);
		}
		for (uint32_t p = 0; p < npairs[np]; p++)
			result_free(&one[p]);
	}
	/* a job stopped at once returns and frees everything */
	{
		mcc_image	big_a = img_random(&r, 200, 200, 0, 256),
					big_b = img_random(&r, 200, 200, 0, 256);
		const mcc_image *ba[1] = {&big_a},
				   *bb[1] = {&big_b};
		mcc_dp2d_out o = {0};
		mcc_dp2d_request req = {1, ba, bb, &o, 0, 2, MCC_DP2D_AUTO};
		mcc_dp2d_job *job;
		mcc_error	err;
		mcc_status	st = mcc_dp2d_start(&req, &job, &err);

		if (st == MCC_OK)
			mcc_dp2d_abort(job);
		UNIT_CHECK(st == MCC_OK, "a started job can be aborted");
		free(big_a.pixels);
		free(big_b.pixels);
	}
	for (int p = 0; p < NP; p++)
	{
		free(imgs_a[p].pixels);
		free(imgs_b[p].pixels);
	}
}

/* Status of matching two sizes. */
static mcc_status
match_sizes(uint32_t wa, uint32_t ha, uint32_t wb, uint32_t hb, mcc_error *err)
{
	mcc_image	a = img_new(wa ? wa : 1, ha ? ha : 1, wa ? wa : 1),
				b = img_new(wb ? wb : 1, hb ? hb : 1, wb ? wb : 1);
	mcc_dp2d_out o = {0};
	mcc_status	st;

	a.width = wa;
	a.height = ha;
	b.width = wb;
	b.height = hb;
	st = mcc_dp2d_match(&a, &b, MCC_DP2D_AUTO, 0, &o, err);
	free(a.pixels);
	free(b.pixels);
	return st;
}

/* Bad inputs. */
static void
test_bad(void)
{
	mcc_error	err;
	mcc_image	a = img_new(4, 4, 4);
	const mcc_image *pa[1] = {&a};
	mcc_dp2d_out o = {0};
	mcc_dp2d_request req = {1, pa, pa, &o, 0, 1, MCC_DP2D_AUTO};

	UNIT_CHECK(match_sizes(0, 4, 4, 4, &err) == MCC_ERR_VALUE, "width 0: %s", err.message);
	UNIT_CHECK(match_sizes(4, 4, 4, 0, &err) == MCC_ERR_VALUE, "height 0: %s", err.message);
	UNIT_CHECK(match_sizes(513, 4, 300, 4, &err) == MCC_ERR_LIMIT, "width 513: %s", err.message);
	UNIT_CHECK(match_sizes(4, 400, 4, 513, &err) == MCC_ERR_LIMIT, "height 513: %s", err.message);
	UNIT_CHECK(match_sizes(512, 2, 512, 2, &err) == MCC_OK, "width 512 is accepted");
	UNIT_CHECK(match_sizes(10, 4, 21, 4, &err) == MCC_ERR_VALUE && err.detail[0],
			   "widths 10 and 21 (over 2:1): %s", err.message);
	UNIT_CHECK(match_sizes(10, 4, 20, 4, &err) == MCC_OK, "widths 10 and 20 (2:1) are accepted");
	UNIT_CHECK(match_sizes(4, 7, 4, 3, &err) == MCC_ERR_VALUE, "heights 7 and 3: %s", err.message);
	UNIT_CHECK(mcc_dp2d_match(&a, NULL, MCC_DP2D_AUTO, 0, &o, &err) == MCC_ERR_VALUE,
			   "a missing image: %s", err.message);
	UNIT_CHECK(mcc_dp2d_match(&a, &a, 99, 0, &o, &err) == MCC_ERR_VALUE, "unknown kernel: %s",
			   err.message);
	req.npairs = 0;
	UNIT_CHECK(mcc_dp2d_run(&req, &err) == MCC_ERR_LIMIT, "no pairs: %s", err.message);
	req.npairs = 1;
	req.threads = 0;
	UNIT_CHECK(mcc_dp2d_run(&req, &err) == MCC_ERR_VALUE, "0 threads: %s", err.message);
	req.threads = MCC_DP2D_MAX_THREADS + 1;
	UNIT_CHECK(mcc_dp2d_run(&req, &err) == MCC_ERR_VALUE, "too many threads: %s", err.message);
	UNIT_CHECK(mcc_dp2d_kernel_by_name("avx2") == MCC_DP2D_AVX2 &&
			   mcc_dp2d_kernel_by_name("nope") == -1 &&
			   strcmp(mcc_dp2d_kernel_name(mcc_dp2d_kernel_auto()), "reference") != 0,
			   "kernel names; auto picks a lane kernel (%s)",
			   mcc_dp2d_kernel_name(mcc_dp2d_kernel_auto()));
	free(a.pixels);
}

int
main(void)
{
	test_seq();
	test_brute_2d();
	test_identity();
	test_stretch();
	test_shift();
	test_kernels_vs_reference();
	test_threads();
	test_bad();
	return unit_done();
}
