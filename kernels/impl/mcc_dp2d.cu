/*
 * mcc_dp2d.cu: elastic image matching on the GPU (mcc_dp2d_gpu.h).
 *
 * Kernels (K = columns per lane, a template parameter 1..16 so that each
 * lane's columns live in registers):
 *   k_rows<K>   one warp per row pair (pair, i, j): the row DP in
 *               wavefront order; lane t computes row s - t of its K columns
 *               at step s; the last real column's E is the local distance
 *               cost[pair][i][j];
 *   k_outer<K>  one warp (block) per pair: the DP over rows on those
 *               distances with the back-tracing bits in shared memory (two
 *               ballots per column and step), then lane 0 back-traces the
 *               row map;
 *   k_warp<K>   one warp per (pair, row i of a): the row DP of (i,
 *               row_map[i]) again with its ballots in shared memory, lane 0
 *               back-traces the column map, then the warp writes the warped
 *               row and adds its differing pixels to the pair's count. Its
 *               final value must equal cost[pair][i][row_map[i]]; a
 *               mismatch raises a flag (MCC_GPU_INTERNAL).
 * The per-lane step is kernels/impl/mcc_dp2d_wave.h, shared with the host
 * emulation that test_dp2d_wave checks against the CPU reference.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "mcc_gpu_rt.h"
#include "mcc_dp2d_gpu.h"
#include "mcc_dp2d_wave.h"

#define FULL_MASK	0xFFFFFFFFu
#define ROW_WARPS	8			/* warps per block of k_rows */
#define WARP_WARPS_MAX 8		/* warps per block of k_warp at most */

struct mcc_dp2d_gpu
{
	int			device;
	char		name[96];
	size_t		smem_optin;		/* dynamic shared memory a block may use */
	mcc_gpu_rt_lost lost;		/* a sticky error happened (mcc_gpu_rt.h) */
	cudaStream_t stream;
	/* device buffers, grown on demand */
	uint8_t    *d_a;
	size_t		cap_a;
	uint8_t    *d_b;
	size_t		cap_b;
	uint8_t    *d_work;			/* per-chunk buffers, carved below */
	size_t		cap_work;
	int		   *d_flag;
};

/* ------------------------------------------------------------------ */
/* device code                                                         */

/* |x - y| of two pixels */
__device__ __forceinline__ uint32_t
absdiff(uint32_t x, uint32_t y)
{
	return x > y ? x - y : y - x;
}

/* The value of column c of a lane's state, without a dynamic register index. */
template <int K>
__device__ __forceinline__ uint32_t
lane_e(const mcc_dp2d_lane &st, uint32_t c)
{
	uint32_t	v = 0;

#pragma unroll
	for (int q = 0; q < K; q++)
		if ((uint32_t) q == c)
			v = st.e[q];
	return v;
}

/*
 * Wavefront step s's traceback bits into the warp's ballot words: bit c of
 * each lane's b0 and b1 gathered over the warp, stored by lane 0 at
 * words[(s * K + c) * 2] and the word after it.
 */
template <int K>
__device__ __forceinline__ void
store_ballots(uint32_t b0, uint32_t b1, uint32_t lane, uint32_t s, uint32_t *words)
{
#pragma unroll
	for (int c = 0; c < K; c++)
	{
		uint32_t	w0 = __ballot_sync(FULL_MASK, (b0 >> c) & 1u);
		uint32_t	w1 = __ballot_sync(FULL_MASK, (b1 >> c) & 1u);

		if (lane == 0)
		{
			words[((size_t) s * K + c) * 2] = w0;
			words[((size_t) s * K + c) * 2 + 1] = w1;
		}
	}
}

/*
 * The wavefront DP of n rows against m columns, the lane owning columns
 * lane * K .. lane * K + K - 1: cost(i, cst) gives row i's K local
 * distances of the lane. words: NULL, or the warp's ballot words (steps x
 * K x 2). Returns E(n-1, m-1) in every lane.
 */
template <int K, typename Cost>
__device__ __forceinline__ uint32_t
wave(uint32_t n, uint32_t m, uint32_t lane, uint32_t *words, Cost cost)
{
	mcc_dp2d_lane st;
	uint32_t	steps = n + (m - 1) / K;
	uint32_t	tl = (m - 1) / K;

	mcc_dp2d_lane_init(&st, K);
	for (uint32_t s = 0; s < steps; s++)
	{
		uint32_t	le = __shfl_up_sync(FULL_MASK, st.e[K - 1], 1);
		uint32_t	ld = __shfl_up_sync(FULL_MASK, st.d[K - 1], 1);
		int			i = (int) s - (int) lane;
		uint32_t	b0 = 0,
					b1 = 0;

		if (i >= 0 && i < (int) n)
		{
			uint32_t	cst[K];

			cost((uint32_t) i, cst);
			if (words)
				mcc_dp2d_lane_row(&st, K, lane, (uint32_t) i, cst, le, ld, &b0, &b1);
			else
				mcc_dp2d_lane_row(&st, K, lane, (uint32_t) i, cst, le, ld, NULL, NULL);
		}
		mcc_dp2d_lane_shift(&st, le);
		if (words)
			store_ballots<K>(b0, b1, lane, s, words);
	}
	return __shfl_sync(FULL_MASK, lane_e<K>(st, (m - 1) % K), tl);
}

/* Local distances of a row DP: pixel x[i] against the lane's K pixels y. */
template <int K>
struct row_cost
{
	const uint8_t *x;
	const uint32_t *y;

	__device__ __forceinline__ void operator() (uint32_t i, uint32_t *cst) const
	{
		uint32_t	xv = x[i];

#pragma unroll
		for (int c = 0; c < K; c++)
			cst[c] = absdiff(xv, y[c]);
	}
};

/* Local distances of the outer DP: row i of the pair's cost matrix C (hb columns). */
template <int K>
struct outer_cost
{
	const uint32_t *C;
	uint32_t	hb;
	uint32_t	lane;

	__device__ __forceinline__ void operator() (uint32_t i, uint32_t *cst) const
	{
#pragma unroll
		for (int c = 0; c < K; c++)
			cst[c] = lane * K + c < hb ? C[(size_t) i * hb + lane * K + c] : 0;
	}
};

/*
 * The row DP of row xa (n pixels) against row yb (m pixels), in wavefront
 * order: xa copied to the warp's shared x, this lane's K pixels of yb in
 * registers. words: NULL, or the warp's ballot words (steps x K x 2).
 * Returns E(n-1, m-1) in every lane.
 */
template <int K>
__device__ __forceinline__ uint32_t
row_wave(const uint8_t *xa, uint32_t n, const uint8_t *yb, uint32_t m, uint32_t lane,
		 uint8_t *x, uint32_t *words)
{
	uint32_t	y[K];

	for (uint32_t q = lane; q < n; q += 32)
		x[q] = xa[q];
#pragma unroll
	for (int c = 0; c < K; c++)
		y[c] = lane * K + c < m ? yb[lane * K + c] : 0;
	__syncwarp();
	return wave<K>(n, m, lane, words, row_cost<K> {x, y});
}

/* Kernel 1: the local distance of every row pair of every pair. */
template <int K>
__global__ void
k_rows(const uint8_t *A, const uint8_t *B, const uint32_t *pa, const uint32_t *pb,
	   uint32_t npairs, uint32_t wa, uint32_t ha, uint32_t wb, uint32_t hb, uint32_t xstride,
	   uint32_t *cost)
{
	extern __shared__ uint8_t smem_rows[];
	uint32_t	warp = threadIdx.x / 32,
				lane = threadIdx.x % 32;
	uint64_t	gw = (uint64_t) blockIdx.x * (blockDim.x / 32) + warp;
	uint64_t	per_pair = (uint64_t) ha * hb;
	uint8_t    *x = smem_rows + (size_t) warp * xstride;
	uint32_t	p,
				i,
				j,
				v;
	const uint8_t *xa;
	const uint8_t *yb;

	if (gw >= (uint64_t) npairs * per_pair)
		return;					/* the whole warp leaves */
	p = (uint32_t) (gw / per_pair);
	i = (uint32_t) (gw % per_pair / hb);
	j = (uint32_t) (gw % hb);
	xa = A + (size_t) pa[p] * wa * ha + (size_t) i * wa;
	yb = B + (size_t) pb[p] * wb * hb + (size_t) j * wb;
	v = row_wave<K>(xa, wa, yb, wb, lane, x, NULL);
	if (lane == 0)
		cost[gw] = v;
}

/* Kernel 2: the DP over rows of each pair, and its row map. One warp per block. */
template <int K>
__global__ void
k_outer(const uint32_t *cost, uint32_t npairs, uint32_t ha, uint32_t hb, uint32_t *total,
		uint32_t *rmap)
{
	extern __shared__ uint32_t words_outer[];
	uint32_t	lane = threadIdx.x;
	uint32_t	p = blockIdx.x;
	const uint32_t *C = cost + (size_t) p * ha * hb;
	uint32_t	v;

	if (p >= npairs)
		return;
	v = wave<K>(ha, hb, lane, words_outer, outer_cost<K> {C, hb, lane});
	if (lane == 0)
	{
		total[p] = v;
		mcc_dp2d_wave_trace(words_outer, K, ha, hb, rmap + (size_t) p * ha);
	}
}

/*
 * Kernel 3: column maps, warped rows and differences. Shared memory per
 * warp: ballot words, the column map (wa words), the row of a.
 */
template <int K>
__global__ void
k_warp(const uint8_t *A, const uint8_t *B, const uint32_t *pa, const uint32_t *pb,
	   uint32_t npairs, uint32_t wa, uint32_t ha, uint32_t wb, uint32_t hb,
	   const uint32_t *cost, const uint32_t *rmap, size_t warp_bytes, uint32_t nwords,
	   uint32_t *cmap_out, uint8_t *warp_out, unsigned long long *diff, int *flag)
{
	extern __shared__ uint32_t smem_warp[];
	uint32_t	warp = threadIdx.x / 32,
				lane = threadIdx.x % 32;
	uint64_t	gw = (uint64_t) blockIdx.x * (blockDim.x / 32) + warp;
	uint32_t   *words = (uint32_t *) ((uint8_t *) smem_warp + (size_t) warp * warp_bytes);
	uint32_t   *cmap = words + nwords;
	uint8_t    *x = (uint8_t *) (cmap + wa);
	uint32_t	p,
				i,
				j,
				v,
				count = 0;
	const uint8_t *xa;
	const uint8_t *yb;

	if (gw >= (uint64_t) npairs * ha)
		return;
	p = (uint32_t) (gw / ha);
	i = (uint32_t) (gw % ha);
	j = rmap[gw];
	xa = A + (size_t) pa[p] * wa * ha + (size_t) i * wa;
	yb = B + (size_t) pb[p] * wb * hb + (size_t) j * wb;
	v = row_wave<K>(xa, wa, yb, wb, lane, x, words);
	if (lane == 0)
	{
		if (v != cost[(size_t) p * ha * hb + (size_t) i * hb + j])
			atomicExch(flag, 1);
		mcc_dp2d_wave_trace(words, K, wa, wb, cmap);
	}
	__syncwarp();
	for (uint32_t q = lane; q < wa; q += 32)
	{
		uint32_t	m = cmap[q];
		uint8_t		val = yb[m];
		size_t		at = (size_t) gw * wa + q;

		count += val != x[q];
		if (warp_out)
			warp_out[at] = val;
		if (cmap_out)
			cmap_out[at] = m;
	}
	count = __reduce_add_sync(FULL_MASK, count);
	if (lane == 0 && count)
		atomicAdd(&diff[p], (unsigned long long) count);
}

/* ------------------------------------------------------------------ */
/* host code                                                           */

/* A CUDA failure as a code and a message (the runtime's translation). */
static mcc_gpu_code
gpu_fail(mcc_dp2d_gpu *g, cudaError_t e, const char *what, mcc_error *err)
{
	return mcc_gpu_rt_fail(g ? &g->lost : NULL, e, what, -1, err);
}

#define CUDA_TRY(g, call, what) \
	do { cudaError_t e_ = (call); if (e_ != cudaSuccess) return gpu_fail((g), e_, (what), err); } while (0)

/* Launch helpers: one instantiation per K. */
#define K_CASES(X) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16)

static void
launch_rows(uint32_t k, dim3 grid, dim3 block, size_t smem, cudaStream_t st, const uint8_t *A,
			const uint8_t *B, const uint32_t *pa, const uint32_t *pb, uint32_t np, uint32_t wa,
			uint32_t ha, uint32_t wb, uint32_t hb, uint32_t xstride, uint32_t *cost)
{
	switch (k)
	{
#define X(K) case K: k_rows<K><<<grid, block, smem, st>>>(A, B, pa, pb, np, wa, ha, wb, hb, xstride, cost); break;
			K_CASES(X)
#undef X
	}
}

static void
launch_outer(uint32_t k, dim3 grid, size_t smem, cudaStream_t st, const uint32_t *cost,
			 uint32_t np, uint32_t ha, uint32_t hb, uint32_t *total, uint32_t *rmap)
{
	switch (k)
	{
#define X(K) case K: k_outer<K><<<grid, 32, smem, st>>>(cost, np, ha, hb, total, rmap); break;
			K_CASES(X)
#undef X
	}
}

static void
launch_warp(uint32_t k, dim3 grid, dim3 block, size_t smem, cudaStream_t st, const uint8_t *A,
			const uint8_t *B, const uint32_t *pa, const uint32_t *pb, uint32_t np, uint32_t wa,
			uint32_t ha, uint32_t wb, uint32_t hb, const uint32_t *cost, const uint32_t *rmap,
			size_t warp_bytes, uint32_t nwords, uint32_t *cmap, uint8_t *wout,
			unsigned long long *diff, int *flag)
{
	switch (k)
	{
#define X(K) case K: k_warp<K><<<grid, block, smem, st>>>(A, B, pa, pb, np, wa, ha, wb, hb, cost, rmap, warp_bytes, nwords, cmap, wout, diff, flag); break;
			K_CASES(X)
#undef X
	}
}

/* Let every instantiation use the device's whole opt-in shared memory. */
static cudaError_t
allow_smem(size_t bytes)
{
	cudaError_t e = cudaSuccess;

#define X(K) \
	if (e == cudaSuccess) e = cudaFuncSetAttribute(k_outer<K>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int) bytes); \
	if (e == cudaSuccess) e = cudaFuncSetAttribute(k_warp<K>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int) bytes);
	K_CASES(X)
#undef X
	return e;
}

/* Open a context. */
extern "C" mcc_gpu_code
mcc_dp2d_gpu_open(int ordinal, mcc_dp2d_gpu **out, mcc_error *err)
{
	mcc_dp2d_gpu *g;
	mcc_gpu_rt_dev d;
	mcc_gpu_code code;
	cudaError_t e;

	*out = NULL;
	if ((code = mcc_gpu_rt_open(ordinal < 0 ? 0 : ordinal, 9, "elastic matching", &d, err)) != MCC_GPU_OK)
		return code;
	if ((g = (mcc_dp2d_gpu *) calloc(1, sizeof(*g))) == NULL)
		return mcc_gpu_rt_err(err, MCC_GPU_OOM, "out of memory for a GPU context");
	g->device = d.ordinal;
	snprintf(g->name, sizeof(g->name), "%s", d.name);
	g->smem_optin = d.smem_optin;
	if ((e = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking)) != cudaSuccess ||
		(e = allow_smem(g->smem_optin)) != cudaSuccess ||
		(e = cudaMalloc((void **) &g->d_flag, sizeof(int))) != cudaSuccess)
	{
		code = gpu_fail(NULL, e, "GPU context setup", err);
		mcc_dp2d_gpu_close(g);
		return code;
	}
	*out = g;
	return MCC_GPU_OK;
}

/* Free everything. */
extern "C" void
mcc_dp2d_gpu_close(mcc_dp2d_gpu *g)
{
	if (g == NULL)
		return;
	if (!g->lost.lost)
	{
		cudaSetDevice(g->device);
		mcc_gpu_rt_free(g->d_a, g->d_b, g->d_work, g->d_flag);
		if (g->stream)
			cudaStreamDestroy(g->stream);
	}
	free(g);
}

extern "C" const char *
mcc_dp2d_gpu_name(const mcc_dp2d_gpu *g)
{
	return g ? g->name : "";
}

static size_t
up256(size_t n)
{
	return (n + 255) & ~(size_t) 255;
}

/* Device bytes one pair of a chunk needs. */
static size_t
pair_bytes(const mcc_dp2d_gpu_batch *bt)
{
	size_t		n = up256((size_t) bt->ha * bt->hb * 4) + 2 * 4 + 4 + up256((size_t) bt->ha * 4) + 8;

	if (bt->flags & MCC_DP2D_WARP)
	{
		if (bt->col_map)
			n += up256((size_t) bt->ha * bt->wa * 4);
		if (bt->warped)
			n += up256((size_t) bt->ha * bt->wa);
	}
	return n + 6 * 256;			/* alignment of the carved arrays */
}

/* Check a batch. */
static mcc_gpu_code
check_batch(const mcc_dp2d_gpu_batch *bt, mcc_error *err)
{
	mcc_image	a = {bt->wa, bt->ha, bt->wa, (uint8_t *) bt->a};
	mcc_image	b = {bt->wb, bt->hb, bt->wb, (uint8_t *) bt->b};

	if (bt->a == NULL || bt->b == NULL || bt->pair_a == NULL || bt->pair_b == NULL)
		return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "missing arrays in a GPU elastic matching batch");
	if (mcc_dp2d_check(&a, &b, err) != MCC_OK)
		return MCC_GPU_INVALID;	/* err says why */
	if (bt->npairs == 0 || bt->npairs > MCC_DP2D_MAX_PAIRS || bt->na == 0 || bt->nb == 0)
		return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "empty or oversized GPU elastic matching batch");
	for (uint32_t k = 0; k < bt->npairs; k++)
		if (bt->pair_a[k] >= bt->na || bt->pair_b[k] >= bt->nb)
			return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "pair %u refers to image (%u, %u) of (%u, %u)",
						   k, bt->pair_a[k], bt->pair_b[k], bt->na, bt->nb);
	return MCC_GPU_OK;
}

/* Run a batch in chunks. */
extern "C" mcc_gpu_code
mcc_dp2d_gpu_run(mcc_dp2d_gpu *g, const mcc_dp2d_gpu_batch *bt, const volatile int *cancel,
				 mcc_error *err)
{
	mcc_gpu_code code;
	uint32_t	wa = bt->wa,
				ha = bt->ha,
				wb = bt->wb,
				hb = bt->hb;
	int			warp = (bt->flags & MCC_DP2D_WARP) != 0;
	size_t		per_pair,
				free_b = 0,
				total_b = 0,
				budget;
	uint32_t	chunk;
	uint32_t	ki = mcc_dp2d_wave_k(wb),
				ko = mcc_dp2d_wave_k(hb);
	uint32_t	xstride = (wa + 3) & ~3u;
	size_t		outer_smem = (size_t) mcc_dp2d_wave_steps(ha, hb) * ko * 2 * 4;
	uint32_t	nwords = mcc_dp2d_wave_steps(wa, wb) * ki * 2;
	size_t		warp_bytes = ((size_t) nwords * 4 + (size_t) wa * 4 + xstride + 15) & ~(size_t) 15;
	uint32_t	warps_per_block;
	uint64_t	weight = ((uint64_t) ha + hb) * ((uint64_t) wa + wb);
	uint32_t   *h_total = NULL;

	if (g == NULL)
		return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "no GPU context");
	if (g->lost.lost)
		return mcc_gpu_rt_usable(&g->lost, err);
	if ((code = check_batch(bt, err)) != MCC_GPU_OK)
		return code;
	if (outer_smem > g->smem_optin || warp_bytes > g->smem_optin)
		return mcc_gpu_rt_err(err, MCC_GPU_UNSUPPORTED, "%zu bytes of shared memory needed, %zu available",
					   outer_smem > warp_bytes ? outer_smem : warp_bytes, g->smem_optin);
	warps_per_block = (uint32_t) (g->smem_optin / warp_bytes);
	if (warps_per_block > WARP_WARPS_MAX)
		warps_per_block = WARP_WARPS_MAX;
	CUDA_TRY(g, cudaSetDevice(g->device), "selecting the GPU");
	CUDA_TRY(g, mcc_gpu_rt_upload((void **) &g->d_a, &g->cap_a, bt->a, (size_t) bt->na * wa * ha,
								  g->stream), "copying images to the GPU");
	CUDA_TRY(g, mcc_gpu_rt_upload((void **) &g->d_b, &g->cap_b, bt->b, (size_t) bt->nb * wb * hb,
								  g->stream), "copying images to the GPU");
	CUDA_TRY(g, cudaMemsetAsync(g->d_flag, 0, sizeof(int), g->stream), "clearing a GPU flag");

	/* chunk: what fits in half the free memory (at most 2 GiB) */
	CUDA_TRY(g, cudaMemGetInfo(&free_b, &total_b), "GPU memory query");
	per_pair = pair_bytes(bt);
	budget = free_b / 2 + g->cap_work;
	if (budget > ((size_t) 2 << 30))
		budget = (size_t) 2 << 30;
	chunk = budget / per_pair > bt->npairs ? bt->npairs : (uint32_t) (budget / per_pair);
	if (bt->max_chunk && chunk > bt->max_chunk)
		chunk = bt->max_chunk;
	if (chunk == 0)
		return mcc_gpu_rt_err(err, MCC_GPU_OOM, "the GPU has too little free memory for one pair");
	CUDA_TRY(g, mcc_gpu_rt_reserve((void **) &g->d_work, &g->cap_work, per_pair * chunk), "GPU allocation of work buffers");
	if ((h_total = (uint32_t *) malloc((size_t) chunk * sizeof(uint32_t))) == NULL)
		return mcc_gpu_rt_err(err, MCC_GPU_OOM, "out of memory for GPU results");

	for (uint32_t p0 = 0; p0 < bt->npairs; p0 += chunk)
	{
		uint32_t	np = bt->npairs - p0 < chunk ? bt->npairs - p0 : chunk;
		uint8_t    *w = g->d_work;
		uint32_t   *d_pa,
				   *d_pb,
				   *d_cost,
				   *d_total,
				   *d_rmap,
				   *d_cmap = NULL;
		uint8_t    *d_wout = NULL;
		unsigned long long *d_diff;
		uint64_t	nwarps;
		int			flag = 0;
		cudaError_t e;

		if (cancel && *cancel)
		{
			free(h_total);
			return mcc_gpu_rt_err(err, MCC_GPU_CANCELLED, "GPU elastic matching was cancelled");
		}
#define CARVE(ptr, type, bytes) do { ptr = (type) w; w += up256(bytes); } while (0)
		CARVE(d_pa, uint32_t *, (size_t) np * 4);
		CARVE(d_pb, uint32_t *, (size_t) np * 4);
		CARVE(d_cost, uint32_t *, (size_t) np * ha * hb * 4);
		CARVE(d_total, uint32_t *, (size_t) np * 4);
		CARVE(d_rmap, uint32_t *, (size_t) np * ha * 4);
		CARVE(d_diff, unsigned long long *, (size_t) np * 8);
		if (warp && bt->col_map)
			CARVE(d_cmap, uint32_t *, (size_t) np * ha * wa * 4);
		if (warp && bt->warped)
			CARVE(d_wout, uint8_t *, (size_t) np * ha * wa);
#undef CARVE
		e = cudaMemcpyAsync(d_pa, bt->pair_a + p0, (size_t) np * 4, cudaMemcpyHostToDevice, g->stream);
		if (e == cudaSuccess)
			e = cudaMemcpyAsync(d_pb, bt->pair_b + p0, (size_t) np * 4, cudaMemcpyHostToDevice, g->stream);
		if (e == cudaSuccess)
			e = cudaMemsetAsync(d_diff, 0, (size_t) np * 8, g->stream);
		if (e != cudaSuccess)
		{
			free(h_total);
			return gpu_fail(g, e, "copying pairs to the GPU", err);
		}

		nwarps = (uint64_t) np * ha * hb;
		launch_rows(ki, dim3((unsigned) ((nwarps + ROW_WARPS - 1) / ROW_WARPS)), dim3(32 * ROW_WARPS),
					(size_t) ROW_WARPS * xstride, g->stream, g->d_a, g->d_b, d_pa, d_pb, np,
					wa, ha, wb, hb, xstride, d_cost);
		launch_outer(ko, dim3(np), outer_smem, g->stream, d_cost, np, ha, hb, d_total, d_rmap);
		if (warp)
		{
			nwarps = (uint64_t) np * ha;
			launch_warp(ki, dim3((unsigned) ((nwarps + warps_per_block - 1) / warps_per_block)),
						dim3(32 * warps_per_block), warp_bytes * warps_per_block, g->stream,
						g->d_a, g->d_b, d_pa, d_pb, np, wa, ha, wb, hb, d_cost, d_rmap,
						warp_bytes, nwords, d_cmap, d_wout, d_diff, g->d_flag);
		}
		if ((e = cudaGetLastError()) != cudaSuccess)
		{
			free(h_total);
			return gpu_fail(g, e, "launching the elastic matching kernels", err);
		}
		e = cudaMemcpyAsync(h_total, d_total, (size_t) np * 4, cudaMemcpyDeviceToHost, g->stream);
		if (e == cudaSuccess && bt->row_map && warp)
			e = cudaMemcpyAsync(bt->row_map + (size_t) p0 * ha, d_rmap, (size_t) np * ha * 4,
								cudaMemcpyDeviceToHost, g->stream);
		if (e == cudaSuccess && bt->differences && warp)
			e = cudaMemcpyAsync(bt->differences + p0, d_diff, (size_t) np * 8,
								cudaMemcpyDeviceToHost, g->stream);
		if (e == cudaSuccess && d_cmap)
			e = cudaMemcpyAsync(bt->col_map + (size_t) p0 * ha * wa, d_cmap,
								(size_t) np * ha * wa * 4, cudaMemcpyDeviceToHost, g->stream);
		if (e == cudaSuccess && d_wout)
			e = cudaMemcpyAsync(bt->warped + (size_t) p0 * ha * wa, d_wout, (size_t) np * ha * wa,
								cudaMemcpyDeviceToHost, g->stream);
		if (e == cudaSuccess)
			e = cudaMemcpyAsync(&flag, g->d_flag, sizeof(int), cudaMemcpyDeviceToHost, g->stream);
		if (e == cudaSuccess)
			e = cudaStreamSynchronize(g->stream);
		if (e != cudaSuccess)
		{
			free(h_total);
			return gpu_fail(g, e, "elastic matching on the GPU", err);
		}
		if (flag)
		{
			free(h_total);
			return mcc_gpu_rt_err(err, MCC_GPU_INTERNAL,
						   "GPU elastic matching recomputed a row pair differently");
		}
		for (uint32_t k = 0; k < np; k++)
		{
			if (bt->cost)
				bt->cost[p0 + k] = h_total[k];
			if (bt->distance)
				bt->distance[p0 + k] = (double) h_total[k] / (double) weight;
		}
	}
	free(h_total);
	return MCC_GPU_OK;
}
