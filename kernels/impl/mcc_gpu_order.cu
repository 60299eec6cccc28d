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
 * (docs/benchmarks.md, "100 M templates"). Here: two stable radix sorts,
 * first by id, then by score, so that equal scores keep id order; then the
 * hits gathered in that order. A few passes over the list in device
 * memory, well under a millisecond for 500,000 hits.
 */
#include <cub/device/device_radix_sort.cuh>

#include "mcc_gpu_int.h"

#define ORD_THREADS 256

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

	if (n <= o->cap)
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
