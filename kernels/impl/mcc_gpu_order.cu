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
 * memory, well under a millisecond for 500,000 hits. Every probe of a pass
 * at once (segmented sorts, one list a segment): one sort a probe cost
 * about 0.15 ms of launches for a shortlist of 4,000 (1 M templates), more
 * than the sorting.
 */
#include <cub/device/device_segmented_sort.cuh>

#include "mcc_gpu_int.h"

#define ORD_THREADS 256

/* Hits ordered by one group of sorts at most by default (more: groups of probes). */
#define ORD_GROUP_MAX	(1u << 20)

/* Segment s of a group: the list of probe q0 + s, at s * w, outlen[q0 + s] long. */
__global__ void
mcc_ord_offsets(const uint32_t *outlen, int q0, int nseg, uint32_t w, uint32_t *begin, uint32_t *end)
{
	int			s = blockIdx.x * blockDim.x + threadIdx.x;

	if (s < nseg)
	{
		begin[s] = (uint32_t) s * w;
		end[s] = (uint32_t) s * w + outlen[q0 + s];
	}
}

/* Is position j of a group inside its probe's list? */
__device__ static inline bool
ord_inside(const uint32_t *outlen, int q0, uint32_t w, uint32_t j)
{
	return j % w < outlen[q0 + j / w];
}

/* The sort keys of pass 1: ids in signed order; values: positions. */
__global__ void
mcc_ord_ids(const mcc_gpu_hit *h, const uint32_t *outlen, int q0, uint32_t w, uint32_t n,
			uint64_t *key, uint32_t *val)
{
	uint32_t	j = blockIdx.x * blockDim.x + threadIdx.x;

	if (j < n && ord_inside(outlen, q0, w, j))
	{
		key[j] = (uint64_t) h[j].id ^ (1ull << 63);
		val[j] = j;
	}
}

/* The sort keys of pass 2: the score of each position in id order (~bits: descending). */
__global__ void
mcc_ord_scores(const mcc_gpu_hit *h, const uint32_t *outlen, int q0, uint32_t w, uint32_t n,
			   const uint32_t *pos, uint32_t *key)
{
	uint32_t	j = blockIdx.x * blockDim.x + threadIdx.x;

	if (j < n && ord_inside(outlen, q0, w, j))
		key[j] = ~__float_as_uint(h[pos[j]].score);
}

/* The hits in their final order (the gaps between the lists copied as they are). */
__global__ void
mcc_ord_gather(const mcc_gpu_hit *h, const uint32_t *outlen, int q0, uint32_t w, uint32_t n,
			   const uint32_t *pos, mcc_gpu_hit *out)
{
	uint32_t	j = blockIdx.x * blockDim.x + threadIdx.x;

	if (j < n)
		out[j] = h[ord_inside(outlen, q0, w, j) ? pos[j] : j];
}

/* CUB's temporary bytes for the larger of the two sorts of n items in nseg lists. */
static cudaError_t
order_tmp_bytes(uint32_t n, int nseg, size_t *bytes)
{
	size_t		b64 = 0;
	size_t		b32 = 0;
	cudaError_t e;

	if ((e = cub::DeviceSegmentedSort::StableSortPairs((void *) NULL, b64, (const uint64_t *) NULL,
													   (uint64_t *) NULL, (const uint32_t *) NULL,
													   (uint32_t *) NULL, (int64_t) n, (int64_t) nseg,
													   (const uint32_t *) NULL,
													   (const uint32_t *) NULL)) != cudaSuccess ||
		(e = cub::DeviceSegmentedSort::StableSortPairs((void *) NULL, b32, (const uint32_t *) NULL,
													   (uint32_t *) NULL, (const uint32_t *) NULL,
													   (uint32_t *) NULL, (int64_t) n, (int64_t) nseg,
													   (const uint32_t *) NULL,
													   (const uint32_t *) NULL)) != cudaSuccess)
		return e;
	*bytes = b64 > b32 ? b64 : b32;
	return cudaSuccess;
}

/* Bytes the order buffers take for n hits in nseg lists (cub: its temporary storage). */
static size_t
order_bytes(uint32_t n, int nseg, size_t cub)
{
	return (size_t) n * (8 + 8 + 4 + 4 + 4 + 4 + sizeof(mcc_gpu_hit)) + (size_t) nseg * 8 + cub;
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
	cudaFree(o->seg);
	cudaFree(o->tmp);
	cudaFree(o->cub);
	p->scratch_bytes -= o->bytes;
	memset(o, 0, sizeof(*o));
}

/* Room for n hits in nseg lists (kept when there is as much already). */
static cudaError_t
order_reserve(mcc_gpu_part *p, uint32_t n, int nseg, size_t room)
{
	mcc_gpu_order *o = &p->ord;
	size_t		cub = 0;
	cudaError_t e;

	if (n <= o->cap && nseg <= o->seg_cap)
		return cudaSuccess;
	if (n < o->cap)
		n = o->cap;
	if (nseg < o->seg_cap)
		nseg = o->seg_cap;
	n += n / 4;
	if ((e = order_tmp_bytes(n, nseg, &cub)) != cudaSuccess)
		return e;
	room += o->bytes;			/* what it holds now is given back first */
	mcc_gpu_order_free(p);
	if (order_bytes(n, nseg, cub) > room)
		return cudaErrorMemoryAllocation;
	if ((e = cudaMalloc(&o->k0, 8 * (size_t) n)) != cudaSuccess ||
		(e = cudaMalloc(&o->k1, 8 * (size_t) n)) != cudaSuccess ||
		(e = cudaMalloc(&o->v0, 4 * (size_t) n)) != cudaSuccess ||
		(e = cudaMalloc(&o->v1, 4 * (size_t) n)) != cudaSuccess ||
		(e = cudaMalloc(&o->s0, 4 * (size_t) n)) != cudaSuccess ||
		(e = cudaMalloc(&o->s1, 4 * (size_t) n)) != cudaSuccess ||
		(e = cudaMalloc(&o->seg, 8 * (size_t) nseg)) != cudaSuccess ||
		(e = cudaMalloc(&o->tmp, sizeof(mcc_gpu_hit) * (size_t) n)) != cudaSuccess ||
		(e = cudaMalloc(&o->cub, cub ? cub : 16)) != cudaSuccess)
	{
		mcc_gpu_order_free(p);
		return e;
	}
	o->cap = n;
	o->seg_cap = nseg;
	o->cub_bytes = cub;
	o->bytes = order_bytes(n, nseg, cub);
	p->scratch_bytes += o->bytes;
	return cudaSuccess;
}

/*
 * Probes [q0, q0 + nseg) of h (lists at stride w): two stable segmented
 * sorts for all of them at once, the hits gathered into o->tmp, then back.
 */
static cudaError_t
order_group(mcc_gpu_part *p, mcc_gpu_hit *h, const uint32_t *outlen, int q0, int nseg, uint32_t w)
{
	mcc_gpu_order *o = &p->ord;
	uint32_t	n = (uint32_t) nseg * w;
	uint32_t	blocks = (n + ORD_THREADS - 1) / ORD_THREADS;
	uint32_t   *begin = o->seg;
	uint32_t   *end = o->seg + nseg;
	size_t		bytes = o->cub_bytes;
	cudaError_t e;

	mcc_ord_offsets<<<(nseg + ORD_THREADS - 1) / ORD_THREADS, ORD_THREADS, 0, p->st>>>(outlen, q0, nseg, w,
																						begin, end);
	mcc_ord_ids<<<blocks, ORD_THREADS, 0, p->st>>>(h, outlen, q0, w, n, o->k0, o->v0);
	if ((e = cub::DeviceSegmentedSort::StableSortPairs(o->cub, bytes, o->k0, o->k1, o->v0, o->v1, (int64_t) n,
													   (int64_t) nseg, begin, end, p->st)) != cudaSuccess)
		return e;
	mcc_ord_scores<<<blocks, ORD_THREADS, 0, p->st>>>(h, outlen, q0, w, n, o->v1, o->s0);
	bytes = o->cub_bytes;
	/* stable: equal scores keep the id order of pass 1 */
	if ((e = cub::DeviceSegmentedSort::StableSortPairs(o->cub, bytes, o->s0, o->s1, o->v1, o->v0, (int64_t) n,
													   (int64_t) nseg, begin, end, p->st)) != cudaSuccess)
		return e;
	mcc_ord_gather<<<blocks, ORD_THREADS, 0, p->st>>>(h, outlen, q0, w, n, o->v0, o->tmp);
	if ((e = cudaGetLastError()) != cudaSuccess)
		return e;
	return cudaMemcpyAsync(h, o->tmp, sizeof(mcc_gpu_hit) * (size_t) n, cudaMemcpyDeviceToDevice, p->st);
}

cudaError_t
mcc_gpu_order_lists(mcc_gpu_part *p, mcc_gpu_hit *h, uint32_t w, int nq, int group, size_t room)
{
	const uint32_t *outlen = p->small + 1 + 4 * (size_t) nq;
	uint32_t	per = (group > 0 ? (uint32_t) group : ORD_GROUP_MAX) / w;	/* probes a group */
	cudaError_t e;

	if (per < 1)
		per = 1;
	if (per > (uint32_t) nq)
		per = (uint32_t) nq;
	/* all of them in a few groups if there is room, else one probe at a time */
	if (order_reserve(p, per * w, (int) per, room) != cudaSuccess)
	{
		(void) cudaGetLastError();
		per = 1;
		if ((e = order_reserve(p, w, 1, room)) != cudaSuccess)
			return e;
	}
	for (int q0 = 0; q0 < nq; q0 += (int) per)
	{
		int			nseg = nq - q0 < (int) per ? nq - q0 : (int) per;

		if ((e = order_group(p, h + (size_t) q0 * w, outlen, q0, nseg, w)) != cudaSuccess)
			return e;
	}
	return cudaSuccess;
}
