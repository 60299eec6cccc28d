/*
 * mcc_gpu_select.cu: device-side top-k of one partition, a two-level radix
 * select on the float bits of the scores (all in [0, 1], so bit order is
 * value order), then a sort of the few candidates.
 *
 * 1. thresh (level 1): the match kernel filled a 2048-bin histogram of
 *    bits >> 19; find the highest bin b1 such that bins >= b1 hold >= k
 *    templates, and need2 = k - (templates in bins > b1).
 * 2. hist2: templates in bin b1, histogram of (bits >> 8) & 2047.
 * 3. thresh (level 2): the highest bin b2 holding need2 from the top.
 *    Level-2 bins are 2^-15 wide relatively, narrower than the distance
 *    between two scores, so the candidates are about k plus exact ties.
 *    With a floor per probe (mcc_gpu_search_min), (b1, b2) is raised to
 *    the floor's bins when below them: the candidates are then the k best
 *    or those in or above the floor's level-2 bin, whichever are fewer
 *    (the host drops the few of that bin below the floor).
 * 4. compact: keys (~bits) << 32 | local index (ascending = score desc,
 *    index asc) of the candidates, one atomic per warp; more than ccap
 *    candidates of one probe set its overflow flag (the host then runs
 *    the selection again with room for every template).
 * 5. CUB DeviceSegmentedSort of each probe's candidates.
 * 6. ties: keys to return per probe: k, plus every further key with the
 *    k-th score, so that the host can order ties by id across partitions.
 * 7. hits (mcc_gpu_hits_launch): the first k + margin keys of each probe
 *    turned into (score, gallery index, id) on the device, so that the host
 *    does not look each one up in partition-sized arrays at random.
 *
 * p->small (uint32): [0] work counter, then thr1, need2, thr2, ccnt,
 * outlen, ovf (nq each), then int begin[nq], end[nq], then the floors'
 * float bits (nq, MCC_GPU_SMALL_FLOOR).
 */
#include <cub/block/block_scan.cuh>
#include <cub/device/device_segmented_sort.cuh>

#include "mcc_gpu_int.h"

#define FULL 0xffffffffu
#define SEL_THREADS 256

/*
 * Threshold of one probe's histogram: the highest bin b with
 * sum(bins >= b) >= need (0 if the histogram holds fewer); *above gets
 * need - sum(bins > b). Bins are read top down, 8 per thread.
 */
__global__ void
mcc_sel_thresh(const uint32_t *hist, const uint32_t *need_in, uint32_t k,
			   uint32_t *thr, uint32_t *need_out)
{
	typedef cub::BlockScan<uint32_t, SEL_THREADS> scan_t;
	__shared__ typename scan_t::TempStorage tmp;
	__shared__ uint32_t res, res_above;
	const uint32_t *h = hist + (size_t) blockIdx.x * MCC_GPU_SC_BINS;
	uint32_t	need = need_in ? need_in[blockIdx.x] : k;
	int			tid = threadIdx.x;
	int			top = MCC_GPU_SC_BINS - 1 - 8 * tid;	/* this thread: bins top .. top-7 */
	uint32_t	c[8];
	uint32_t	sum = 0, before;

	if (tid == 0)
	{
		res = 0;
		res_above = 0;
	}
	for (int i = 0; i < 8; i++)
	{
		c[i] = h[top - i];
		sum += c[i];
	}
	scan_t(tmp).ExclusiveSum(sum, before);
	__syncthreads();
	if (before < need && before + sum >= need)
	{
		uint32_t	run = before;

		for (int i = 0; i < 8; i++)
		{
			if (run + c[i] >= need)
			{
				res = top - i;
				res_above = run;
				break;
			}
			run += c[i];
		}
	}
	__syncthreads();
	if (tid == 0)
	{
		thr[blockIdx.x] = res;
		if (need_out)
			need_out[blockIdx.x] = need - res_above;
	}
}

/* Level-2 histogram of the templates in the level-1 threshold bin. */
__global__ void
mcc_sel_hist2(const float *scores, uint32_t stride, uint32_t n_tpl,
			  const uint32_t *thr1, uint32_t *hist2)
{
	uint32_t	q = blockIdx.y;
	uint32_t	lt = blockIdx.x * blockDim.x + threadIdx.x;
	int			lane = threadIdx.x & 31;
	float		sc = lt < n_tpl ? scores[(size_t) q * stride + lt] : -1.0f;
	uint32_t	bits = __float_as_uint(sc);
	bool		in = sc >= 0.0f && (bits >> MCC_GPU_SC_SHIFT) == thr1[q];
	uint32_t	bin = in ? (bits >> 8) & (MCC_GPU_SC_BINS - 1) : 0xffffffffu;
	uint32_t	mask;

	if (!__any_sync(FULL, in))
		return;
	mask = __match_any_sync(FULL, bin);
	if (in && lane == __ffs(mask) - 1)
		atomicAdd(&hist2[(size_t) q * MCC_GPU_SC_BINS + bin], __popc(mask));
}

/*
 * The thresholds raised to each probe's floor (float bits, 0: none): a
 * score below the floor's level-2 bin is never a candidate. Scores are
 * in [0, 1] and floors positive, so bit order is value order.
 */
__global__ void
mcc_sel_floor(const uint32_t *floor, int nq, uint32_t *thr1, uint32_t *thr2)
{
	int			q = blockIdx.x * blockDim.x + threadIdx.x;

	if (q < nq)
	{
		uint32_t	f1 = floor[q] >> MCC_GPU_SC_SHIFT;
		uint32_t	f2 = (floor[q] >> 8) & (MCC_GPU_SC_BINS - 1);

		if (thr1[q] < f1)
		{
			thr1[q] = f1;
			thr2[q] = f2;
		}
		else if (thr1[q] == f1 && thr2[q] < f2)
			thr2[q] = f2;
	}
}

/* Keys of the candidates; grid.y = probe. */
__global__ void
mcc_sel_compact(const float *scores, uint32_t stride, uint32_t n_tpl,
				const uint32_t *thr1, const uint32_t *thr2, uint64_t *cand,
				uint32_t ccap, uint32_t *ccnt, uint32_t *ovf)
{
	uint32_t	q = blockIdx.y;
	uint32_t	lt = blockIdx.x * blockDim.x + threadIdx.x;
	int			lane = threadIdx.x & 31;
	float		sc = lt < n_tpl ? scores[(size_t) q * stride + lt] : -1.0f;
	uint32_t	bits = __float_as_uint(sc);
	uint32_t	b1 = bits >> MCC_GPU_SC_SHIFT;
	bool		take = sc >= 0.0f && (b1 > thr1[q] ||
									  (b1 == thr1[q] && ((bits >> 8) & (MCC_GPU_SC_BINS - 1)) >= thr2[q]));
	uint32_t	ball = __ballot_sync(FULL, take);
	uint32_t	base = 0, pos;

	if (!ball)
		return;
	if (lane == 0)
		base = atomicAdd(&ccnt[q], __popc(ball));
	base = __shfl_sync(FULL, base, 0);
	pos = base + __popc(ball & ((1u << lane) - 1));
	if (take && pos < ccap)
		cand[(size_t) q * ccap + pos] = ((uint64_t) ~bits << 32) | lt;
	if (take && pos >= ccap)
		ovf[q] = 1;
}

/* Segment bounds for CUB. */
__global__ void
mcc_sel_segments(const uint32_t *ccnt, uint32_t ccap, int nq, int *begin, int *end)
{
	int			q = blockIdx.x * blockDim.x + threadIdx.x;

	if (q < nq)
	{
		begin[q] = q * (int) ccap;
		end[q] = q * (int) ccap + (int) min(ccnt[q], ccap);
	}
}

/* Keys to return per probe: k, extended over ties with the k-th score. */
__global__ void
mcc_sel_ties(const uint64_t *sorted, uint32_t ccap, const uint32_t *ccnt,
			 uint32_t k, uint32_t *outlen)
{
	uint32_t	q = blockIdx.x;
	int			lane = threadIdx.x;
	uint32_t	c = min(ccnt[q], ccap);
	uint32_t	len = min(k, c);
	const uint64_t *s = sorted + (size_t) q * ccap;

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

/*
 * Selection of one partition after its match kernel, candidates at most
 * ccap per probe. ev (may be NULL) is recorded before the sort.
 */
cudaError_t
mcc_gpu_select_launch(mcc_gpu_part *p, int nq, int k, uint32_t n_tpl, uint32_t ccap,
					  int floored, cudaEvent_t ev)
{
	uint32_t   *thr1 = p->small + 1;
	uint32_t   *need2 = thr1 + nq;
	uint32_t   *thr2 = need2 + nq;
	uint32_t   *ccnt = thr2 + nq;
	uint32_t   *outlen = ccnt + nq;
	uint32_t   *ovf = outlen + nq;
	int		   *begin = (int *) (ovf + nq);
	int		   *end = begin + nq;
	uint32_t   *hist2 = p->schist + (size_t) p->sc_q * MCC_GPU_SC_BINS;
	dim3		grid((n_tpl + 255) / 256, nq);
	cudaError_t e;
	size_t		bytes = p->cub_bytes;
	uint32_t	stride = p->sc_tpl;

	if ((e = cudaMemsetAsync(thr1, 0, 6 * sizeof(uint32_t) * nq, p->st)) != cudaSuccess ||
		(e = cudaMemsetAsync(hist2, 0, (size_t) nq * MCC_GPU_SC_BINS * 4, p->st)) != cudaSuccess)
		return e;
	mcc_sel_thresh<<<nq, SEL_THREADS, 0, p->st>>>(p->schist, NULL, (uint32_t) k, thr1, need2);
	if (n_tpl > 0)
	{
		mcc_sel_hist2<<<grid, 256, 0, p->st>>>(p->scores, stride, n_tpl, thr1, hist2);
		mcc_sel_thresh<<<nq, SEL_THREADS, 0, p->st>>>(hist2, need2, 0, thr2, NULL);
		if (floored)
			mcc_sel_floor<<<(nq + 127) / 128, 128, 0, p->st>>>(p->small + MCC_GPU_SMALL_FLOOR(nq), nq,
															   thr1, thr2);
		mcc_sel_compact<<<grid, 256, 0, p->st>>>(p->scores, stride, n_tpl, thr1, thr2,
												 p->cand, ccap, ccnt, ovf);
	}
	mcc_sel_segments<<<(nq + 127) / 128, 128, 0, p->st>>>(ccnt, ccap, nq, begin, end);
	if ((e = cudaGetLastError()) != cudaSuccess)
		return e;
	if (ev && (e = cudaEventRecord(ev, p->st)) != cudaSuccess)
		return e;
	e = cub::DeviceSegmentedSort::SortKeys(p->cub_tmp, bytes, p->cand, p->sorted,
										   (int64_t) nq * ccap, (int64_t) nq,
										   begin, end, p->st);
	if (e != cudaSuccess)
		return e;
	mcc_sel_ties<<<nq, 32, 0, p->st>>>(p->sorted, ccap, ccnt, (uint32_t) k, outlen);
	return cudaGetLastError();
}

/* Step 7: one block per probe. */
__global__ void
mcc_sel_hits(const uint64_t *sorted, uint32_t ccap, uint32_t width, const uint32_t *outlen,
			 const uint32_t *gidx, const int64_t *lid, mcc_gpu_hit *out)
{
	uint32_t	q = blockIdx.x;
	uint32_t	n = min(outlen[q], width);

	for (uint32_t j = threadIdx.x; j < n; j += blockDim.x)
	{
		uint64_t	key = sorted[(size_t) q * ccap + j];
		uint32_t	lt = (uint32_t) key;
		mcc_gpu_hit h;

		h.score = __uint_as_float(~(uint32_t) (key >> 32));
		h.index = gidx[lt];
		h.id = lid[lt];
		out[(size_t) q * width + j] = h;
	}
}

cudaError_t
mcc_gpu_hits_launch(mcc_gpu_part *p, int nq, uint32_t ccap, uint32_t width)
{
	uint32_t   *outlen = p->small + 1 + 4 * (size_t) nq;

	mcc_sel_hits<<<nq, SEL_THREADS, 0, p->st>>>(p->sorted, ccap, width, outlen, p->d_gidx, p->d_lid,
											   p->d_hits);
	return cudaGetLastError();
}
