/*
 * mcc_gpu_ties.h: a search's runs of equal scores ordered by id (host code,
 * plain C, so that test/unit/test_gpu_ties.c checks it against qsort).
 *
 * A partition's selection returns its hits by score and then by local
 * index (the order of the device keys); the library's contract is score
 * and then id, so each run of equal scores is put in id order. LSS scores
 * are quantized (sums of n_P table values), so runs are not rare: a probe
 * of the SQL benchmark's gallery (a million synthetic fingers) had a run
 * of 1,737 equal scores in its shortlist of 4,000, and qsort of such runs
 * was most of the search's host time (0.47 ms per query on an H100 host).
 * Short runs: insertion. Long ones: an LSD radix sort on the id, in passes
 * only over the bytes in which the run's ids differ (row keys of a table
 * usually differ in their low three or four bytes only).
 *
 * With several partitions, each partition's list is put in that order and
 * the lists are merged, taking only the first k (mcc_ties_merge): a qsort
 * of all of them cost 0.34 s per query at 100 M templates on four GPUs,
 * where a refining search keeps 400,000 candidates of each partition.
 * Lists that long (k >= MCC_GPU_ORDER_MIN) are ordered on the device
 * instead (mcc_gpu_order.cu): this sort still cost 107 ms a query there.
 * Their merge (11 ms a query there) is cut into segments that merge apart
 * (mcc_ties_split), for a merge on several threads.
 */
#ifndef MCC_GPU_TIES_H
#define MCC_GPU_TIES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_gpu.h"

/* Runs up to this long are ordered by insertion. */
#define MCC_TIES_INSERTION_MAX 32

/* An id as an unsigned key in the same order. */
static inline uint64_t
mcc_ties_key(int64_t id)
{
	return (uint64_t) id ^ ((uint64_t) 1 << 63);
}

/* h[0..n) by id, by insertion (any n; quadratic). */
static inline void
mcc_ties_insertion(mcc_gpu_hit *h, size_t n)
{
	for (size_t a = 1; a < n; a++)
	{
		mcc_gpu_hit x = h[a];
		size_t		b = a;

		for (; b > 0 && h[b - 1].id > x.id; b--)
			h[b] = h[b - 1];
		h[b] = x;
	}
}

/* h[0..n) by id, LSD radix through tmp[0..n) (stable, so each pass keeps the last). */
static inline void
mcc_ties_radix(mcc_gpu_hit *h, size_t n, mcc_gpu_hit *tmp)
{
	uint64_t	k0 = mcc_ties_key(h[0].id);
	uint64_t	diff = 0;
	mcc_gpu_hit *src = h;
	mcc_gpu_hit *dst = tmp;

	for (size_t i = 1; i < n; i++)
		diff |= mcc_ties_key(h[i].id) ^ k0;
	for (int sh = 0; sh < 64 && (diff >> sh) != 0; sh += 8)
	{
		size_t		pos[256];
		size_t		acc = 0;

		if (((diff >> sh) & 0xff) == 0)
			continue;			/* every id has this byte: nothing to reorder */
		memset(pos, 0, sizeof(pos));
		for (size_t i = 0; i < n; i++)
			pos[(mcc_ties_key(src[i].id) >> sh) & 0xff]++;
		for (int d = 0; d < 256; d++)
		{
			size_t		c = pos[d];

			pos[d] = acc;
			acc += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[pos[(mcc_ties_key(src[i].id) >> sh) & 0xff]++] = src[i];
		{
			mcc_gpu_hit *t = src;

			src = dst;
			dst = t;
		}
	}
	if (src != h)
		memcpy(h, src, n * sizeof(mcc_gpu_hit));
}

/*
 * h[0..n) is ordered by score (descending): order each run of equal scores
 * by id. *run_max: raised to the longest run seen. Without memory for a
 * long run's buffer, insertion (slower, the same order).
 */
static inline void
mcc_ties_sort(mcc_gpu_hit *h, size_t n, int *run_max)
{
	mcc_gpu_hit *tmp = NULL;
	size_t		tmp_n = 0;

	for (size_t i = 0; i < n;)
	{
		size_t		j = i + 1;

		while (j < n && h[j].score == h[i].score)
			j++;
		if ((int) (j - i) > *run_max)
			*run_max = (int) (j - i);
		if (j - i > MCC_TIES_INSERTION_MAX && j - i > tmp_n)
		{
			free(tmp);
			tmp_n = j - i;
			if ((tmp = (mcc_gpu_hit *) malloc(tmp_n * sizeof(mcc_gpu_hit))) == NULL)
				tmp_n = 0;
		}
		if (j - i > MCC_TIES_INSERTION_MAX && tmp != NULL)
			mcc_ties_radix(h + i, j - i, tmp);
		else
			mcc_ties_insertion(h + i, j - i);
		i = j;
	}
	free(tmp);
}

/* Does a come before b: score descending, then id ascending. */
static inline int
mcc_ties_before(const mcc_gpu_hit *a, const mcc_gpu_hit *b)
{
	return a->score > b->score || (a->score == b->score && a->id < b->id);
}

/*
 * The first k of nlists lists lists[i][0 .. len[i]), each in the order of
 * mcc_ties_sort, merged in that order into out: returns how many (at most
 * k). pos: nlists entries of scratch. A list per partition, each where
 * its partition left it (no copy), and partitions are few: the heads are
 * compared in turn; once one list is left, the rest of it is copied.
 */
static inline size_t
mcc_ties_merge(const mcc_gpu_hit *const *lists, const size_t *len, int nlists, size_t k, size_t *pos,
			   mcc_gpu_hit *out)
{
	size_t		n = 0;

	for (int i = 0; i < nlists; i++)
		pos[i] = 0;
	while (n < k)
	{
		int			best = -1;
		int			open = 0;

		for (int i = 0; i < nlists; i++)
			if (pos[i] < len[i])
			{
				open++;
				if (best < 0 || mcc_ties_before(&lists[i][pos[i]], &lists[best][pos[best]]))
					best = i;
			}
		if (best < 0)
			break;
		if (open == 1)
		{
			size_t		m = len[best] - pos[best];

			if (m > k - n)
				m = k - n;
			memcpy(out + n, lists[best] + pos[best], m * sizeof(mcc_gpu_hit));
			n += m;
			break;
		}
		out[n++] = lists[best][pos[best]++];
	}
	return n;
}

/* The first position of list[0..len) whose hit is not before v (binary search). */
static inline size_t
mcc_ties_bound(const mcc_gpu_hit *list, size_t len, const mcc_gpu_hit *v)
{
	size_t		lo = 0;
	size_t		hi = len;

	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (mcc_ties_before(&list[mid], v))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Cut the merge of nlists ordered lists into nseg segments that merge
 * apart: segment t is lists[i][b[t][i] .. b[t + 1][i]) for every i (b is
 * (nseg + 1) rows of nlists, row-major), and the segments' merges, one
 * after the other, are mcc_ties_merge's merge of the whole lists. The cuts
 * are hits of the longest list at even steps: each list's part before a
 * cut holds its hits before the cut's hit, so hits equal to it, in
 * whichever list, fall in one segment, where the merge orders them as the
 * whole merge does. For a merge on several threads (segment t's hits go
 * to the output from sum_i b[t][i] on).
 */
static inline void
mcc_ties_split(const mcc_gpu_hit *const *lists, const size_t *len, int nlists, int nseg, size_t *b)
{
	int			longest = 0;

	for (int i = 1; i < nlists; i++)
		if (len[i] > len[longest])
			longest = i;
	for (int i = 0; i < nlists; i++)
	{
		b[i] = 0;
		b[(size_t) nseg * nlists + i] = len[i];
	}
	for (int t = 1; t < nseg; t++)
	{
		size_t		at = len[longest] * (size_t) t / (size_t) nseg;

		for (int i = 0; i < nlists; i++)
			b[(size_t) t * nlists + i] = at < len[longest] ?
				mcc_ties_bound(lists[i], len[i], &lists[longest][at]) : len[i];
	}
}

#endif							/* MCC_GPU_TIES_H */
