/*
 * mcc_gpu_gather.cu: a pass's candidates of every partition, gathered per
 * probe and merged into the first k (host code of mcc_gpu_search.cu's
 * pass: where each partition's list lies, the keys past its copied window
 * mapped here, the merge on several threads).
 */
#include <stdlib.h>
#include <string.h>

#include "mcc_gpu_rt.h"
#include "mcc_gpu_int.h"
#include "mcc_gpu_ties.h"

/* Hits read ahead of the one being merged (random reads of gallery-sized arrays). */
#define MERGE_AHEAD 16

/*
 * More than the copied window of probe q's candidates (exact ties past k +
 * margin): all len keys from the device, each mapped to its gallery index
 * and id here. gidx and lid are partition-sized and read at random:
 * fetching a few hits ahead keeps several cache misses in flight.
 */
static mcc_gpu_code
map_keys_host(mcc_gpu *g, mcc_gpu_part *p, int q, uint32_t ccap, uint32_t len, mcc_gpu_hit *h,
			  mcc_error *err)
{
	uint64_t   *keys = (uint64_t *) malloc(8 * (size_t) len);
	cudaError_t e;

	if (!keys)
		return mcc_gpu_rt_err(err, MCC_GPU_OOM, "out of host memory");
	if ((e = cudaSetDevice(p->dev)) != cudaSuccess ||
		(e = cudaMemcpy(keys, p->sorted + (size_t) q * ccap, 8 * (size_t) len,
						cudaMemcpyDeviceToHost)) != cudaSuccess)
	{
		free(keys);
		return mcc_gpu_fail(g, e, "result copy", p->dev, err);
	}
	for (uint32_t j = 0; j < len; j++)
	{
		uint32_t	bits = ~(uint32_t) (keys[j] >> 32);
		uint32_t	lt = (uint32_t) keys[j];

		if (j + MERGE_AHEAD < len)
		{
			__builtin_prefetch(&p->gidx[(uint32_t) keys[j + MERGE_AHEAD]]);
			__builtin_prefetch(&p->lid[(uint32_t) keys[j + MERGE_AHEAD]]);
		}
		memcpy(&h[j].score, &bits, 4);
		h[j].index = p->gidx[lt];
		h[j].id = p->lid[lt];
	}
	free(keys);
	return MCC_GPU_OK;
}

/*
 * Partition i's candidates of probe q for the merge: the hits of the
 * copied window, where they are (*in_acc false); or, when there are more
 * (every key mapped here), appended to acc (*in_acc true, from *off on).
 */
mcc_gpu_code
mcc_gpu_gather_part(mcc_gpu *g, int i, int q, const uint32_t *ccap, mcc_gpu_hit_acc *acc,
					const mcc_gpu_hit **list, bool *in_acc, size_t *off, mcc_error *err)
{
	mcc_gpu_part *p = &g->part[i];
	uint32_t	len = p->h_small[q];
	uint32_t	w = p->hits_width;
	mcc_gpu_code rc;

	*in_acc = len > w;
	if (!*in_acc)
	{
		*list = p->h_hits + (size_t) q * w;
		return MCC_GPU_OK;
	}
	if (acc->n + len > acc->cap)
	{
		size_t		nc = (acc->n + len) * 2 + 16;
		mcc_gpu_hit *na = (mcc_gpu_hit *) realloc(acc->h, nc * sizeof(mcc_gpu_hit));

		if (!na)
			return mcc_gpu_rt_err(err, MCC_GPU_OOM, "out of host memory");
		acc->h = na;
		acc->cap = nc;
	}
	if ((rc = map_keys_host(g, p, q, ccap[i], len, acc->h + acc->n, err)) != MCC_GPU_OK)
		return rc;
	*off = acc->n;
	acc->n += len;
	return MCC_GPU_OK;
}

/* One thread's segment of a merge (mcc_ties_split): its lists' parts, where its hits go. */
typedef struct merge_share
{
	const mcc_gpu_hit *list[MCC_GPU_MAX_DEVICES];
	size_t		len[MCC_GPU_MAX_DEVICES];
	int			nlists;
	size_t		k;				/* at most this many */
	mcc_gpu_hit *out;
	size_t		n;				/* merged */
} merge_share;

static void *
merge_share_run(void *arg)
{
	merge_share *m = (merge_share *) arg;
	size_t		pos[MCC_GPU_MAX_DEVICES];

	m->n = m->k > 0 ? mcc_ties_merge(m->list, m->len, m->nlists, m->k, pos, m->out) : 0;
	return NULL;
}

/*
 * The first k of the partitions' ordered lists merged into out (how many):
 * a refining search's k of 400,000 at 100 M on segments that merge apart,
 * one thread each (the one merge's hits, in its order).
 */
size_t
mcc_gpu_merge_lists(const mcc_gpu_hit *const *list, const size_t *len, int nlists, size_t k, mcc_gpu_hit *out)
{
	merge_share sh[MCC_JOB_LIST_SHARES_MAX];
	size_t		b[(MCC_JOB_LIST_SHARES_MAX + 1) * MCC_GPU_MAX_DEVICES];
	int			nsh = mcc_job_list_shares(k);
	size_t		n = 0;

	mcc_ties_split(list, len, nlists, nsh, b);
	for (int t = 0; t < nsh; t++)
	{
		size_t		off = 0;
		size_t		m = 0;

		for (int i = 0; i < nlists; i++)
		{
			sh[t].list[i] = list[i] + b[(size_t) t * nlists + i];
			sh[t].len[i] = b[(size_t) (t + 1) * nlists + i] - b[(size_t) t * nlists + i];
			off += b[(size_t) t * nlists + i];
			m += sh[t].len[i];
		}
		sh[t].nlists = nlists;
		sh[t].out = out + off;
		sh[t].k = off < k ? (m < k - off ? m : k - off) : 0;
	}
	mcc_job_run_each(nsh, merge_share_run, sh, sizeof(merge_share));
	for (int t = 0; t < nsh; t++)
		n += sh[t].n;
	return n;
}
