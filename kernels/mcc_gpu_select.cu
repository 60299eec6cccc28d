/*
 * mcc_gpu_select.cu: device-side top-k of one partition.
 *
 * 1. thresh: per probe, the highest score bin b such that the bins >= b of
 *    the coarse histogram (filled by the match kernel) hold >= k templates.
 * 2. compact: the templates in bins >= b become keys
 *    (~float_bits(score)) << 32 | local index, so that ascending order is
 *    score desc, index asc; one atomic per warp.
 * 3. CUB DeviceSegmentedSort sorts each probe's candidates.
 * 4. ties: per probe, the number of keys to return: k, plus every further
 *    key with the k-th score, so that the host can order ties by id.
 *
 * Layout of p->small (uint32): [0] work counter, [1..] thr[nq], ccnt[nq],
 * outlen[nq], then int begin[nq], end[nq].
 */
#include <cub/device/device_segmented_sort.cuh>

#include "mcc_gpu_int.h"

#define FULL 0xffffffffu

/* Threshold bin per probe; one warp per probe. */
__global__ void
mcc_sel_thresh(const uint32_t *schist, uint32_t k, uint32_t *thr)
{
	const uint32_t *h = schist + (size_t) blockIdx.x * MCC_GPU_SC_BINS;
	int			lane = threadIdx.x;
	uint32_t	acc = 0;
	uint32_t	res = 0;

	for (int base = MCC_GPU_SC_BINS - 32; base >= 0; base -= 32)
	{
		uint32_t	v = h[base + 31 - lane];
		uint32_t	ball;

		for (int o = 1; o < 32; o <<= 1)
		{
			uint32_t	u = __shfl_up_sync(FULL, v, o);

			if (lane >= o)
				v += u;
		}
		ball = __ballot_sync(FULL, acc + v >= k);
		if (ball)
		{
			res = base + 31 - (__ffs(ball) - 1);
			break;
		}
		acc += __shfl_sync(FULL, v, 31);
	}
	if (lane == 0)
		thr[blockIdx.x] = res;
}

/* Keys of the templates at or above the threshold; grid.y = probe. */
__global__ void
mcc_sel_compact(const float *scores, uint32_t stride, uint32_t n_tpl,
				const uint32_t *thr, uint64_t *cand, uint32_t cap, uint32_t *ccnt)
{
	uint32_t	q = blockIdx.y;
	uint32_t	lt = blockIdx.x * blockDim.x + threadIdx.x;
	int			lane = threadIdx.x & 31;
	float		sc = lt < n_tpl ? scores[(size_t) q * stride + lt] : -1.0f;
	uint32_t	bits = __float_as_uint(sc);
	bool		take = sc >= 0.0f && (bits >> MCC_GPU_SC_SHIFT) >= thr[q];
	uint32_t	ball = __ballot_sync(FULL, take);
	uint32_t	base = 0;

	if (!ball)
		return;
	if (lane == 0)
		base = atomicAdd(&ccnt[q], __popc(ball));
	base = __shfl_sync(FULL, base, 0);
	if (take)
		cand[(size_t) q * cap + base + __popc(ball & ((1u << lane) - 1))] =
			((uint64_t) ~bits << 32) | lt;
}

/* Segment bounds for CUB. */
__global__ void
mcc_sel_segments(const uint32_t *ccnt, uint32_t cap, int nq, int *begin, int *end)
{
	int			q = threadIdx.x;

	if (q < nq)
	{
		begin[q] = q * (int) cap;
		end[q] = q * (int) cap + (int) ccnt[q];
	}
}

/* Keys to return per probe: k, extended over ties with the k-th score. */
__global__ void
mcc_sel_ties(const uint64_t *sorted, uint32_t cap, const uint32_t *ccnt,
			 uint32_t k, uint32_t *outlen)
{
	uint32_t	q = blockIdx.x;
	int			lane = threadIdx.x;
	uint32_t	c = ccnt[q];
	uint32_t	len = min(k, c);
	const uint64_t *s = sorted + (size_t) q * cap;

	if (len > 0 && len < c)
	{
		uint32_t	last = (uint32_t) (s[len - 1] >> 32);
		uint32_t	base;

		for (base = len; base < c; base += 32)
		{
			uint32_t	i = base + lane;
			bool		same = i < c && (uint32_t) (s[i] >> 32) == last;
			uint32_t	ball = __ballot_sync(FULL, same);

			if (ball != FULL)
			{
				base += __ffs(~ball) - 1;
				break;
			}
		}
		len = min(base, c);
	}
	if (lane == 0)
		outlen[q] = len;
}

/* CUB temporary storage for nq segments of at most cap keys. */
cudaError_t
mcc_gpu_select_tmp_bytes(int nq, uint32_t cap, size_t *bytes)
{
	*bytes = 0;
	return cub::DeviceSegmentedSort::SortKeys((void *) NULL, *bytes,
											  (const uint64_t *) NULL, (uint64_t *) NULL,
											  (int64_t) nq * cap, (int64_t) nq,
											  (const int *) NULL, (const int *) NULL);
}

/* Selection of one partition after its match kernel. */
cudaError_t
mcc_gpu_select_launch(mcc_gpu_part *p, int nq, int k, uint32_t n_tpl, uint32_t cap)
{
	uint32_t   *thr = p->small + 1;
	uint32_t   *ccnt = thr + nq;
	uint32_t   *outlen = ccnt + nq;
	int		   *begin = (int *) (outlen + nq);
	int		   *end = begin + nq;
	dim3		grid((n_tpl + 255) / 256, nq);
	cudaError_t e;
	size_t		bytes = p->cub_bytes;

	mcc_sel_thresh<<<nq, 32, 0, p->st>>>(p->schist, (uint32_t) k, thr);
	if (n_tpl > 0)
		mcc_sel_compact<<<grid, 256, 0, p->st>>>(p->scores, cap, n_tpl, thr,
												 p->cand, cap, ccnt);
	mcc_sel_segments<<<1, 32 * ((nq + 31) / 32), 0, p->st>>>(ccnt, cap, nq, begin, end);
	if ((e = cudaGetLastError()) != cudaSuccess)
		return e;
	e = cub::DeviceSegmentedSort::SortKeys(p->cub_tmp, bytes, p->cand, p->sorted,
										   (int64_t) nq * cap, (int64_t) nq,
										   begin, end, p->st);
	if (e != cudaSuccess)
		return e;
	mcc_sel_ties<<<nq, 32, 0, p->st>>>(p->sorted, cap, ccnt, (uint32_t) k, outlen);
	return cudaGetLastError();
}
