/*
 * test_gpu_ties.c: the GPU search's ordering of equal scores by id
 * (kernels/impl/mcc_gpu_ties.h, host code) against qsort by (score desc,
 * id asc): short and long runs, ids that differ in low or high bytes only,
 * negative ids, runs at both ends, and the longest run reported; and the
 * merge of several partitions' lists (the first k of their union in that
 * order, as qsort of all of them gives); and the merge cut into segments
 * (mcc_ties_split) that, merged apart and put one after the other, give
 * the whole merge hit for hit, hits of equal (score, id) in several lists
 * included.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_cmp.h"
#include "unit.h"
#include "impl/mcc_gpu_ties.h"

/* qsort: score descending, then id ascending (the library's contract) */
static int
cmp_hit(const void *a, const void *b)
{
	const mcc_gpu_hit *x = a;
	const mcc_gpu_hit *y = b;

	return MCC_CMP_THEN(MCC_CMP(y->score, x->score), x->id, y->id);
}

/* scores by rank in runs of run_len, ids from id_of; then shuffled within each run */
static void
fill(mcc_gpu_hit *h, size_t n, size_t run_len, int64_t (*id_of) (size_t, unsigned *), unsigned *seed)
{
	for (size_t i = 0; i < n; i++)
	{
		h[i].score = 1.0f - (float) (i / run_len) / 4096.0f;
		h[i].index = (uint32_t) i;
		h[i].id = id_of(i, seed);
	}
	for (size_t i = 0; i < n; i += run_len)
	{
		size_t		m = i + run_len < n ? run_len : n - i;

		for (size_t a = m; a > 1; a--)
		{
			size_t		b = (size_t) rand_r(seed) % a;
			mcc_gpu_hit t = h[i + a - 1];

			h[i + a - 1] = h[i + b];
			h[i + b] = t;
		}
	}
}

/* want[i]'s (score, id) is its own: its entry is determined, not only its key */
static int
unique_at(const mcc_gpu_hit *w, size_t n, size_t i)
{
	return (i == 0 || w[i - 1].id != w[i].id || w[i - 1].score != w[i].score) &&
		(i + 1 == n || w[i + 1].id != w[i].id || w[i + 1].score != w[i].score);
}

static int64_t
id_small(size_t i, unsigned *seed)
{
	return (int64_t) (rand_r(seed) % 1000000);
}

static int64_t
id_signed(size_t i, unsigned *seed)
{
	uint64_t	u = (uint64_t) rand_r(seed) << 33 ^ (uint64_t) rand_r(seed) << 2 ^
		(uint64_t) (rand_r(seed) & 1) << 63;

	return (int64_t) u;			/* negative where bit 63 is set */
}

static int64_t
id_high(size_t i, unsigned *seed)
{
	return (int64_t) ((uint64_t) (rand_r(seed) & 0xff) << 56) + 7;
}

static int64_t
id_equal(size_t i, unsigned *seed)
{
	return 42;
}

/*
 * Partitions' lists: n hits dealt at random to nlists lists (each id in one
 * list), each list put in order; their merge's first k against qsort of all.
 */
static void
check_merge(size_t n, size_t run_len, int nlists, size_t k, unsigned *seed)
{
	mcc_gpu_hit *all = malloc(n * sizeof(mcc_gpu_hit));
	mcc_gpu_hit *lists = malloc(n * sizeof(mcc_gpu_hit));
	mcc_gpu_hit *out = malloc((k + 1) * sizeof(mcc_gpu_hit));
	size_t		start[17];
	const mcc_gpu_hit *heads[16];
	size_t		lens[16];
	size_t		pos[16];
	size_t		got;
	size_t		bad;
	int			run_max = 0;

	fill(all, n, run_len, id_small, seed);
	for (size_t i = 0; i < n; i++)
		all[i].id = (int64_t) (i * 7919 % n);	/* distinct ids */
	start[0] = 0;
	for (int l = 0; l < nlists; l++)
	{
		start[l + 1] = start[l];
		for (size_t i = 0; i < n; i++)
			if (all[i].index % (uint32_t) nlists == (uint32_t) l)
				lists[start[l + 1]++] = all[i];
		/* a partition's order: by score (its runs of ties in any order) */
		mcc_ties_sort(lists + start[l], start[l + 1] - start[l], &run_max);
	}
	qsort(all, n, sizeof(mcc_gpu_hit), cmp_hit);
	for (int l = 0; l < nlists; l++)
	{
		heads[l] = lists + start[l];
		lens[l] = start[l + 1] - start[l];
	}
	got = mcc_ties_merge(heads, lens, nlists, k, pos, out);
	bad = got;
	for (size_t i = 0; i < got && bad == got; i++)
		if (out[i].id != all[i].id || out[i].score != all[i].score)
			bad = i;
	UNIT_CHECK(got == (k < n ? k : n) && bad == got,
			   "merge of %d lists, %zu hits in runs of %zu, k %zu: %zu hits, qsort's order (first difference at %zu)",
			   nlists, n, run_len, k, got, bad);
	free(all);
	free(lists);
	free(out);
}

static int64_t
id_few(size_t i, unsigned *seed)
{
	return (int64_t) (rand_r(seed) % 50);
}

/*
 * n hits (ids from id_of) dealt at random to nlists ordered lists; the
 * first k of their merge against the merges of nseg segments of
 * mcc_ties_split, each from its offset, taking what is left of k.
 */
static void
check_split(size_t n, size_t run_len, int nlists, size_t k, int nseg,
			int64_t (*id_of) (size_t, unsigned *), unsigned *seed)
{
	mcc_gpu_hit *all = malloc((n + 1) * sizeof(mcc_gpu_hit));
	mcc_gpu_hit *lists = malloc((n + 1) * sizeof(mcc_gpu_hit));
	mcc_gpu_hit *whole = malloc((k + 1) * sizeof(mcc_gpu_hit));
	mcc_gpu_hit *parts = malloc((k + 1) * sizeof(mcc_gpu_hit));
	const mcc_gpu_hit *heads[16];
	size_t		lens[16];
	size_t		start[17];
	size_t		pos[16];
	size_t		b[17 * 16];
	size_t		got;
	size_t		got_parts = 0;
	size_t		bad;
	int			run_max = 0;

	fill(all, n, run_len, id_of, seed);
	start[0] = 0;
	for (int l = 0; l < nlists; l++)
	{
		start[l + 1] = start[l];
		for (size_t i = 0; i < n; i++)
			if ((size_t) rand_r(seed) % (size_t) nlists == (size_t) l || l == nlists - 1)
			{
				if (all[i].index == UINT32_MAX)
					continue;
				lists[start[l + 1]++] = all[i];
				all[i].index = UINT32_MAX;	/* dealt */
			}
		mcc_ties_sort(lists + start[l], start[l + 1] - start[l], &run_max);
		heads[l] = lists + start[l];
		lens[l] = start[l + 1] - start[l];
	}
	got = mcc_ties_merge(heads, lens, nlists, k, pos, whole);
	mcc_ties_split(heads, lens, nlists, nseg, b);
	for (int t = 0; t < nseg; t++)
	{
		const mcc_gpu_hit *sh[16];
		size_t		sl[16];
		size_t		off = 0;

		for (int i = 0; i < nlists; i++)
		{
			sh[i] = heads[i] + b[t * nlists + i];
			sl[i] = b[(t + 1) * nlists + i] - b[t * nlists + i];
			off += b[t * nlists + i];
		}
		if (off < k)
			got_parts += mcc_ties_merge(sh, sl, nlists, k - off, pos, parts + off);
	}
	bad = got;
	for (size_t i = 0; i < got && bad == got; i++)
		if (parts[i].id != whole[i].id || parts[i].score != whole[i].score || parts[i].index != whole[i].index)
			bad = i;
	UNIT_CHECK(got_parts == got && bad == got,
			   "%d segments of the merge of %d lists (%zu hits, runs of %zu, k %zu): %zu hits, the whole merge's (first difference at %zu)",
			   nseg, nlists, n, run_len, k, got_parts, bad);
	free(all);
	free(lists);
	free(whole);
	free(parts);
}

int
main(void)
{
	static const size_t runs[] = {1, 2, 31, 32, 33, 64, 500, 1737, 4033};
	int64_t		(*ids[]) (size_t, unsigned *) = {id_small, id_signed, id_high, id_equal};
	static const char *id_names[] = {"small", "signed", "high byte", "equal"};
	size_t		n = 4033;
	mcc_gpu_hit *h = malloc(n * sizeof(mcc_gpu_hit));
	mcc_gpu_hit *want = malloc(n * sizeof(mcc_gpu_hit));
	unsigned	seed = 7;

	for (size_t r = 0; r < sizeof(runs) / sizeof(runs[0]); r++)
		for (int k = 0; k < 4; k++)
		{
			int			run_max = 0;
			size_t		bad = n;

			fill(h, n, runs[r], ids[k], &seed);
			memcpy(want, h, n * sizeof(mcc_gpu_hit));
			qsort(want, n, sizeof(mcc_gpu_hit), cmp_hit);
			mcc_ties_sort(h, n, &run_max);
			for (size_t i = 0; i < n && bad == n; i++)
				if (h[i].score != want[i].score || h[i].id != want[i].id ||
					(unique_at(want, n, i) && h[i].index != want[i].index))
					bad = i;
			UNIT_CHECK(bad == n, "runs of %zu, %s ids: qsort's order (first difference at %zu)",
					   runs[r], id_names[k], bad);
			UNIT_CHECK(run_max == (int) (runs[r] < n ? runs[r] : n), "runs of %zu: longest run %d",
					   runs[r], run_max);
		}
	for (int l = 1; l <= 16; l *= 2)
	{
		check_merge(4033, 1, l, 100, &seed);
		check_merge(4033, 40, l, 4033, &seed);
		check_merge(4033, 1737, l, 5000, &seed);
		check_merge(3, 1, l, 10, &seed);
	}
	check_merge(0, 1, 4, 10, &seed);
	for (int g = 2; g <= 16; g *= 2)
	{
		check_split(4033, 1, 4, 4033, g, id_small, &seed);
		check_split(4033, 40, 4, 1000, g, id_small, &seed);
		check_split(4033, 40, 3, 4033, g, id_few, &seed);	/* equal (score, id) in several lists */
		check_split(4033, 1737, 5, 5000, g, id_few, &seed);
		check_split(100, 1, 1, 50, g, id_small, &seed);
	}
	check_split(0, 1, 4, 10, 4, id_small, &seed);
	free(h);
	free(want);
	return unit_done();
}
