/*
 * mcc_gpu_order.cu: a long list of one probe's hits put in the library's
 * order, score descending and then id ascending, on the device.
 *
 * The selection sorts a partition's candidates by score and then by local
 * index (its 64-bit keys); the contract is score and then id, so runs of
 * equal scores must be reordered by id. For a few dozen hits the host does
 * it (mcc_gpu_ties.h). For a refining search's shortlist it does not pay:
 * at 100 M templates on four GPUs each partition returns 400,000 and more
 * candidates of quantized LSS scores (a tie run of 150,303 at the edge),
 * and ordering their ties and looking the candidates past the copied
 * window up on the host took about 220 ms of a 319 ms query
 * (docs/benchmarks.md, "100 M templates").
 *
 * Lists of up to MCC_GPU_ORDER_BLOCK_MAX hits (a shortlist of 4,000 at
 * 1 M): one block a list, every list of a pass in one launch, each sorted
 * in shared memory by CUB's block merge sort and written back in place.
 * The radix path below cost about 18 launches and a copy a list, 0.158 ms
 * a probe on an H100 (docs/gpu-notes.md), most of it launch gaps. Longer
 * lists: two stable radix sorts over the whole device, first by id, then
 * by score, so that equal scores keep id order; then the hits gathered in
 * that order. A few passes over the list in device memory, well under a
 * millisecond for 500,000 hits.
 *
 * Both give the same order for every input, hits of equal score and id
 * (versions of one key) included: the radix sorts are stable, so those
 * keep their order in the list; the merge sort, which CUB does not promise
 * to be stable, compares their positions in the list last.
 */
#include <cub/block/block_merge_sort.cuh>
#include <cub/device/device_radix_sort.cuh>

#include "mcc_gpu_int.h"

#define ORD_THREADS 256

/*
 * Items a thread of the block sorts: with 8, a thread of 1,024 (the most
 * a block has) keeps its keys and values in 62 registers, no spills; 16
 * would not fit the 64 a thread may have there.
 */
#define ORD_ITEMS	8

/*
 * A hit's key in the block sort: ~score bits (ascending: score descending,
 * the radix path's key, so that -0.0 comes before 0.0 as there), the id,
 * and the hit's position in the list (equal score and id: the list's order,
 * as the stable radix sorts leave them). A total order: any correct sort
 * gives the one result.
 */
typedef struct ord_key
{
	uint32_t	s;
	uint32_t	pos;
	int64_t		id;
} ord_key;

struct ord_less
{
	__device__ __forceinline__ bool operator() (const ord_key &a, const ord_key &b) const
	{
		if (a.s != b.s)
			return a.s < b.s;
		if (a.id != b.id)
			return a.id < b.id;
		return a.pos < b.pos;
	}
};

/* CUB's shared memory of the block sort of THREADS threads. */
template <int THREADS>
struct ord_block_sort
{
	using sort = cub::BlockMergeSort<ord_key, THREADS, ORD_ITEMS, uint32_t>;
	static const size_t smem = sizeof(typename sort::TempStorage);
};

/*
 * List blockIdx.x (h + blockIdx.x * width, len[blockIdx.x] hits, or n1
 * when len is NULL) in order, in place: lists longer than the block holds
 * are left to the radix path. The reads are striped (coalesced): the keys
 * carry their positions, so the arrangement going in does not matter; the
 * padding keys sort after every hit. Every thread reads its hits before
 * the sort's first barrier and writes after its last, so writing in place
 * overwrites nothing that is still to be read.
 */
template <int THREADS>
__global__ void
__launch_bounds__(THREADS)
mcc_ord_block(mcc_gpu_hit *h, uint32_t width, const uint32_t *len, uint32_t n1)
{
	using sort_t = typename ord_block_sort<THREADS>::sort;
	extern __shared__ __align__(16) unsigned char ord_smem[];
	typename sort_t::TempStorage *ts = reinterpret_cast<typename sort_t::TempStorage *>(ord_smem);
	mcc_gpu_hit *l = h + (size_t) blockIdx.x * width;
	uint32_t	n = len ? len[blockIdx.x] : n1;
	ord_key		k[ORD_ITEMS];
	uint32_t	v[ORD_ITEMS];

	if (n < 2 || n > (uint32_t) THREADS * ORD_ITEMS)
		return;
#pragma unroll
	for (int i = 0; i < ORD_ITEMS; i++)
	{
		uint32_t	j = (uint32_t) i * THREADS + threadIdx.x;

		if (j < n)
		{
			mcc_gpu_hit x = l[j];

			k[i].s = ~__float_as_uint(x.score);
			k[i].pos = j;
			k[i].id = x.id;
			v[i] = x.index;
		}
		else
		{
			k[i].s = 0xffffffffu;
			k[i].pos = 0xffffffffu;
			k[i].id = INT64_MAX;
			v[i] = 0;
		}
	}
	sort_t(*ts).Sort(k, v, ord_less());
	/* blocked: thread t holds ranks [t * ORD_ITEMS, (t + 1) * ORD_ITEMS) */
#pragma unroll
	for (int i = 0; i < ORD_ITEMS; i++)
	{
		uint32_t	j = threadIdx.x * ORD_ITEMS + (uint32_t) i;

		if (j < n)
		{
			mcc_gpu_hit x;

			x.score = __uint_as_float(~k[i].s);
			x.index = v[i];
			x.id = k[i].id;
			l[j] = x;
		}
	}
}

/* Threads of the block sorts, smallest first: a launch takes the first that holds its lists. */
static const int ord_threads[] = {256, 512, 1024};

#define ORD_CLASSES ((int) (sizeof(ord_threads) / sizeof(ord_threads[0])))

static const void *
ord_kernel(int c, size_t *smem)
{
	switch (ord_threads[c])
	{
		case 256:
			*smem = ord_block_sort<256>::smem;
			return (const void *) mcc_ord_block<256>;
		case 512:
			*smem = ord_block_sort<512>::smem;
			return (const void *) mcc_ord_block<512>;
		default:
			*smem = ord_block_sort<1024>::smem;
			return (const void *) mcc_ord_block<1024>;
	}
}

/*
 * The block sorts' shared memory (above 48 KB only on request) and the
 * longest list they take on this device: 8,192 on an H100 (a block may
 * have 227 KB), less where a block may have less than 128 KB.
 */
cudaError_t
mcc_gpu_order_setup(mcc_gpu_part *p)
{
	cudaError_t e;

	p->ord_block = 0;
	for (int c = 0; c < ORD_CLASSES; c++)
	{
		size_t		smem;
		const void *fn = ord_kernel(c, &smem);

		if (smem > p->smem_optin)
			break;
		if ((e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int) smem)) != cudaSuccess)
			return e;
		p->ord_block = (uint32_t) ord_threads[c] * ORD_ITEMS;
	}
	return cudaSuccess;
}

/*
 * One launch: list q of the nq at h + q * width (len: device lengths, or
 * NULL: every list n1 long) ordered by block q, by the smallest block sort
 * that holds maxlen, the longest list up to p->ord_block; longer lists are
 * left as they are.
 */
static cudaError_t
order_blocks(mcc_gpu_part *p, mcc_gpu_hit *h, uint32_t width, const uint32_t *len, uint32_t n1, int nq,
			 uint32_t maxlen)
{
	int			c = 0;
	size_t		smem;
	const void *fn;
	void	   *args[4] = {&h, &width, &len, &n1};

	while (c + 1 < ORD_CLASSES && (uint32_t) ord_threads[c] * ORD_ITEMS < maxlen)
		c++;
	fn = ord_kernel(c, &smem);
	return cudaLaunchKernel(fn, dim3(nq), dim3(ord_threads[c]), args, smem, p->st);
}

/* The sort keys of pass 1: ids in signed order; values: positions. */
__global__ void
mcc_ord_ids(const mcc_gpu_hit *h, uint32_t n, uint64_t *key, uint32_t *val)
{
	uint32_t	j = blockIdx.x * blockDim.x + threadIdx.x;

	if (j < n)
	{
		key[j] = (uint64_t) h[j].id ^ (1ull << 63);
		val[j] = j;
	}
}

/* The sort keys of pass 2: the score of each position in id order (~bits: descending). */
__global__ void
mcc_ord_scores(const mcc_gpu_hit *h, uint32_t n, const uint32_t *pos, uint32_t *key)
{
	uint32_t	j = blockIdx.x * blockDim.x + threadIdx.x;

	if (j < n)
		key[j] = ~__float_as_uint(h[pos[j]].score);
}

/* The hits in their final order. */
__global__ void
mcc_ord_gather(const mcc_gpu_hit *h, uint32_t n, const uint32_t *pos, mcc_gpu_hit *out)
{
	uint32_t	j = blockIdx.x * blockDim.x + threadIdx.x;

	if (j < n)
		out[j] = h[pos[j]];
}

/* CUB's temporary bytes for the larger of the two sorts of n items. */
static cudaError_t
order_tmp_bytes(uint32_t n, size_t *bytes)
{
	size_t		b64 = 0;
	size_t		b32 = 0;
	cudaError_t e;

	if ((e = cub::DeviceRadixSort::SortPairs((void *) NULL, b64, (const uint64_t *) NULL, (uint64_t *) NULL,
											 (const uint32_t *) NULL, (uint32_t *) NULL, (int) n)) != cudaSuccess ||
		(e = cub::DeviceRadixSort::SortPairs((void *) NULL, b32, (const uint32_t *) NULL, (uint32_t *) NULL,
											 (const uint32_t *) NULL, (uint32_t *) NULL, (int) n)) != cudaSuccess)
		return e;
	*bytes = b64 > b32 ? b64 : b32;
	return cudaSuccess;
}

/* Bytes the order buffers take for n hits (cub: its temporary storage). */
static size_t
order_bytes(uint32_t n, size_t cub)
{
	return (size_t) n * (8 + 8 + 4 + 4 + 4 + 4 + sizeof(mcc_gpu_hit)) + cub;
}

void
mcc_gpu_order_free(mcc_gpu_part *p)
{
	mcc_gpu_order *o = &p->ord;

	cudaFree(o->k0);
	cudaFree(o->k1);
	cudaFree(o->v0);
	cudaFree(o->v1);
	cudaFree(o->s0);
	cudaFree(o->s1);
	cudaFree(o->tmp);
	cudaFree(o->cub);
	p->scratch_bytes -= o->bytes;
	memset(o, 0, sizeof(*o));
}

cudaError_t
mcc_gpu_order_reserve(mcc_gpu_part *p, uint32_t n, size_t room)
{
	mcc_gpu_order *o = &p->ord;
	size_t		cub = 0;
	cudaError_t e;

	if (n <= o->cap || n <= p->ord_block)
		return cudaSuccess;
	n += n / 4;
	if ((e = order_tmp_bytes(n, &cub)) != cudaSuccess)
		return e;
	mcc_gpu_order_free(p);
	if (order_bytes(n, cub) > room)
		return cudaErrorMemoryAllocation;
	if ((e = cudaMalloc(&o->k0, 8 * (size_t) n)) != cudaSuccess ||
		(e = cudaMalloc(&o->k1, 8 * (size_t) n)) != cudaSuccess ||
		(e = cudaMalloc(&o->v0, 4 * (size_t) n)) != cudaSuccess ||
		(e = cudaMalloc(&o->v1, 4 * (size_t) n)) != cudaSuccess ||
		(e = cudaMalloc(&o->s0, 4 * (size_t) n)) != cudaSuccess ||
		(e = cudaMalloc(&o->s1, 4 * (size_t) n)) != cudaSuccess ||
		(e = cudaMalloc(&o->tmp, sizeof(mcc_gpu_hit) * (size_t) n)) != cudaSuccess ||
		(e = cudaMalloc(&o->cub, cub ? cub : 16)) != cudaSuccess)
	{
		mcc_gpu_order_free(p);
		return e;
	}
	o->cap = n;
	o->cub_bytes = cub;
	o->bytes = order_bytes(n, cub);
	p->scratch_bytes += o->bytes;
	return cudaSuccess;
}

cudaError_t
mcc_gpu_order_launch(mcc_gpu_part *p, mcc_gpu_hit *h, uint32_t n)
{
	mcc_gpu_order *o = &p->ord;
	uint32_t	blocks = (n + ORD_THREADS - 1) / ORD_THREADS;
	size_t		bytes = o->cub_bytes;
	cudaError_t e;

	if (n < 2)
		return cudaSuccess;
	if (n <= p->ord_block)
		return order_blocks(p, h, n, NULL, n, 1, n);
	mcc_ord_ids<<<blocks, ORD_THREADS, 0, p->st>>>(h, n, o->k0, o->v0);
	if ((e = cub::DeviceRadixSort::SortPairs(o->cub, bytes, o->k0, o->k1, o->v0, o->v1, (int) n,
											 0, 64, p->st)) != cudaSuccess)
		return e;
	mcc_ord_scores<<<blocks, ORD_THREADS, 0, p->st>>>(h, n, o->v1, o->s0);
	bytes = o->cub_bytes;
	/* stable: equal scores keep the id order of pass 1 */
	if ((e = cub::DeviceRadixSort::SortPairs(o->cub, bytes, o->s0, o->s1, o->v1, o->v0, (int) n,
											 0, 32, p->st)) != cudaSuccess)
		return e;
	mcc_ord_gather<<<blocks, ORD_THREADS, 0, p->st>>>(h, n, o->v0, o->tmp);
	if ((e = cudaGetLastError()) != cudaSuccess)
		return e;
	return cudaMemcpyAsync(h, o->tmp, sizeof(mcc_gpu_hit) * (size_t) n, cudaMemcpyDeviceToDevice, p->st);
}

/* A pass's lists: those up to p->ord_block in one launch, then the longer ones one by one. */
cudaError_t
mcc_gpu_order_lists(mcc_gpu_part *p, mcc_gpu_hit *h, uint32_t width, const uint32_t *d_len,
					const uint32_t *len, int nq)
{
	uint32_t	maxlen = 0;
	cudaError_t e;

	for (int q = 0; q < nq; q++)
		if (len[q] <= p->ord_block && len[q] > maxlen)
			maxlen = len[q];
	if (maxlen >= 2 && (e = order_blocks(p, h, width, d_len, 0, nq, maxlen)) != cudaSuccess)
		return e;
	for (int q = 0; q < nq; q++)
		if (len[q] > p->ord_block && (e = mcc_gpu_order_launch(p, h + (size_t) q * width, len[q])) != cudaSuccess)
			return e;
	return cudaSuccess;
}

/*
 * Test entry (mcc_gpu.h): the lists through partition 0's ordering, as a
 * search's settle_hits gives them (each: one mcc_gpu_order_launch a list).
 */
mcc_gpu_code
mcc_gpu_debug_order(mcc_gpu *g, mcc_gpu_hit *lists, const uint32_t *len, int nq, uint32_t width,
					int each, uint32_t *bound, mcc_error *err)
{
	mcc_gpu_part *p = &g->part[0];
	mcc_gpu_hit *d = NULL;
	uint32_t   *d_len = NULL;
	uint32_t	maxlen = 0;
	size_t		bytes = sizeof(mcc_gpu_hit) * (size_t) nq * width;
	mcc_gpu_code rc = MCC_GPU_OK;
	cudaError_t e;

	if (g->lost.lost)
		return mcc_gpu_rt_usable(&g->lost, err);
	*bound = p->ord_block;
	if (nq <= 0)
		return MCC_GPU_OK;
	for (int q = 0; q < nq; q++)
	{
		if (len[q] > width)
			return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "list %d is longer than the width", q);
		maxlen = len[q] > maxlen ? len[q] : maxlen;
	}
	if ((e = cudaSetDevice(p->dev)) != cudaSuccess ||
		(e = mcc_gpu_order_reserve(p, maxlen, mcc_gpu_room(g, p))) != cudaSuccess ||
		(e = cudaMalloc(&d, bytes)) != cudaSuccess ||
		(e = cudaMalloc(&d_len, 4 * (size_t) nq)) != cudaSuccess ||
		(e = cudaMemcpyAsync(d, lists, bytes, cudaMemcpyHostToDevice, p->st)) != cudaSuccess ||
		(e = cudaMemcpyAsync(d_len, len, 4 * (size_t) nq, cudaMemcpyHostToDevice, p->st)) != cudaSuccess)
		rc = mcc_gpu_fail(g, e, "order test setup", p->dev, err);
	for (int q = 0; rc == MCC_GPU_OK && each && q < nq; q++)
		if ((e = mcc_gpu_order_launch(p, d + (size_t) q * width, len[q])) != cudaSuccess)
			rc = mcc_gpu_fail(g, e, "hit order", p->dev, err);
	if (rc == MCC_GPU_OK && !each && (e = mcc_gpu_order_lists(p, d, width, d_len, len, nq)) != cudaSuccess)
		rc = mcc_gpu_fail(g, e, "hit order", p->dev, err);
	if (rc == MCC_GPU_OK &&
		((e = cudaMemcpyAsync(lists, d, bytes, cudaMemcpyDeviceToHost, p->st)) != cudaSuccess ||
		 (e = cudaStreamSynchronize(p->st)) != cudaSuccess))
		rc = mcc_gpu_fail(g, e, "hit order", p->dev, err);
	if (rc != MCC_GPU_STICKY)
	{
		cudaStreamSynchronize(p->st);
		cudaFree(d);
		cudaFree(d_len);
		(void) cudaGetLastError();
	}
	return rc;
}
