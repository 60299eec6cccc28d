/*
 * mcc_chamfer.cu: the GPU evaluator of parametric chamfer alignment (paper
 * 004, Sec. 3.2): per-point work from mcc_chamfer_model.h, per-block
 * partial sums (Fig. 3), a fixed-order reduction of the partials, and the
 * pipelined candidate evaluation of Sec. 3.2.2 (f, g and H in one pass).
 * mcc_chamfer_gpu.h is the interface.
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_chamfer_gpu.h"
#include "mcc_gpu_rt.h"

/* Threads per block. Paper 004 found 128 best on Kepler; 256 suits Hopper's schedulers as well. */
#define CH_BLOCK		256
#define CH_WARPS		(CH_BLOCK / 32)
/* Threads of the kernel that adds the per-block partials. */
#define CH_FINAL_BLOCK	256

/* Sum vector length of (type, dim), at compile time (checked against the core at open). */
__host__ __device__ constexpr int
ch_nsums(int type, int dim)
{
	return 2 + (dim == 2 ? (type == 0 ? 3 : type == 1 ? 4 : type == 2 ? 6 : 8)
				: (type == 0 ? 6 : type == 1 ? 7 : type == 2 ? 12 : 15))
		+ (dim == 2 ? (type <= 1 ? 3 : type == 2 ? 5 : 12) : (type == 3 ? 25 : 9));
}

struct mcc_chamfer_gpu
{
	int			device;
	char		name[128];
	int			sm_count;
	mcc_gpu_rt_lost lost;		/* a sticky error happened: refuse further work */
	cudaStream_t stream;
	/* reference: distance transform and normalized points */
	int32_t    *d_site;
	size_t		cap_site;		/* bytes */
	double	   *d_ref;
	size_t		cap_ref;		/* bytes */
	mcc_edt_geom geom;
	const mcc_chamfer_ref *ref;
	/* observed points */
	double	   *d_obs;
	size_t		cap_obs;		/* bytes */
	long long	n_obs;
	int			dim;
	/* sums */
	double	   *d_partial;
	size_t		cap_partial;	/* doubles */
	double	   *d_out;
	double	   *h_out;			/* pinned, MCC_CHAMFER_MAX_SUMS */
	int			grid[2][MCC_XFORM_COUNT][2];	/* blocks per launch, by occupancy */
	mcc_gpu_code last;	/* code of the last failure inside the evaluator */
	mcc_chamfer_gpu_times times;
	/* the global search (mcc_chamfer_search.h): the pyramid's levels, a batch */
	uint64_t	pyr_id;			/* pyramid uploaded (0: none) */
	int32_t    *d_levels;		/* every level's values, one after the other */
	size_t		cap_levels;		/* bytes */
	size_t		level_off[MCC_CHAMFER_SEARCH_LEVELS];
	double	   *d_spts;			/* the sample */
	size_t		cap_spts;		/* bytes */
	mcc_chamfer_spose *d_poses;
	size_t		cap_poses;		/* bytes */
	long long  *d_scores;
	size_t		cap_scores;		/* bytes */
};

/* A CUDA failure as a code and a message (the runtime's translation). */
static mcc_gpu_code
cuda_fail(mcc_chamfer_gpu *g, cudaError_t e, const char *what, mcc_error *err)
{
	return mcc_gpu_rt_fail(g ? &g->lost : NULL, e, what, g ? g->device : -1, err);
}

/* Usable devices. */
extern "C" mcc_gpu_code
mcc_chamfer_gpu_device_count(int *count, mcc_error *err)
{
	return mcc_gpu_rt_count(count, err);
}

/* Sum of v over a warp, fixed shuffle order. */
__device__ static inline double
warp_sum(double v)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_down_sync(0xffffffffu, v, o);
	return v;
}

/*
 * Reduce acc[NS] over the block into out[NS] (thread 0 of warp 0 writes):
 * warps by shuffles, then warp 0 over the warps' sums in warp order.
 */
template <int NS, int NWARPS>
__device__ static inline void
block_sum(double *acc, double *out)
{
	__shared__ double sh[NWARPS][NS];
	int			lane = threadIdx.x & 31;
	int			warp = threadIdx.x >> 5;

#pragma unroll
	for (int k = 0; k < NS; k++)
	{
		double		v = warp_sum(acc[k]);

		if (lane == 0)
			sh[warp][k] = v;
	}
	__syncthreads();
	if (warp == 0)
	{
#pragma unroll
		for (int k = 0; k < NS; k++)
		{
			double		v = lane < NWARPS ? sh[lane][k] : 0.0;

			v = warp_sum(v);
			if (lane == 0)
				out[k] = v;
		}
	}
}

/*
 * GradientHessianResidualReduce (paper 004, Algorithm 2) for one (dim,
 * type, gh): every thread evaluates points i = tid, tid + stride, ... (a
 * fixed partition of the points over the grid), then the block reduces.
 * GH = 0 is the f-only kernel of traditional LM.
 */
template <int DIM, int TYPE, int GH>
__global__ void __launch_bounds__(CH_BLOCK)
chamfer_eval_kernel(const double *__restrict__ pts, long long n, mcc_edt_geom g,
					const int32_t *__restrict__ site, const double *__restrict__ ref,
					mcc_chamfer_xf xf, double *__restrict__ partial)
{
	constexpr int NS = ch_nsums(TYPE, DIM);
	double		acc[NS];
	long long	stride = (long long) gridDim.x * CH_BLOCK;

#pragma unroll
	for (int k = 0; k < NS; k++)
		acc[k] = 0.0;
	for (long long i = (long long) blockIdx.x * CH_BLOCK + threadIdx.x; i < n; i += stride)
		mcc_chamfer_point(&xf, DIM, TYPE, GH, &g, site, ref, pts + (size_t) DIM * i, acc);
	block_sum<NS, CH_WARPS>(acc, partial + (size_t) blockIdx.x * NS);
}

/* Add nblocks partials of NS sums into out, each thread over blocks t, t + T, ... */
template <int NS>
__global__ void __launch_bounds__(CH_FINAL_BLOCK)
chamfer_final_kernel(const double *__restrict__ partial, int nblocks, double *__restrict__ out)
{
	double		acc[NS];

#pragma unroll
	for (int k = 0; k < NS; k++)
		acc[k] = 0.0;
	for (int b = threadIdx.x; b < nblocks; b += CH_FINAL_BLOCK)
#pragma unroll
		for (int k = 0; k < NS; k++)
			acc[k] += partial[(size_t) b * NS + k];
	block_sum<NS, CH_FINAL_BLOCK / 32>(acc, out);
}

/* Warps per block of the search's scoring kernel: one warp per pose. */
#define CH_SCORE_WARPS	8

/*
 * Scores of a batch of poses (mcc_chamfer_search.h): warp w of the grid
 * sums the integer scores of the sample points under pose w, lane l over
 * points l, l + 32, ...; integer sums, so the order does not matter and
 * the scores are the CPU's.
 */
__global__ void __launch_bounds__(CH_SCORE_WARPS * 32)
chamfer_score_kernel(const double *__restrict__ pts, int n, mcc_chamfer_sgeom g,
					 const int32_t *__restrict__ v, const mcc_chamfer_spose *__restrict__ poses,
					 int n_poses, long long *__restrict__ out)
{
	int			lane = threadIdx.x & 31;
	long long	pose = (long long) blockIdx.x * CH_SCORE_WARPS + (threadIdx.x >> 5);
	long long	s = 0;

	if (pose >= n_poses)
		return;
	{
		mcc_chamfer_spose P = poses[pose];

		for (int k = lane; k < n; k += 32)
			s += mcc_chamfer_score_point(&g, v, &P, pts + 2 * k);
	}
	for (int o = 16; o > 0; o >>= 1)
		s += __shfl_down_sync(0xffffffffu, s, o);
	if (lane == 0)
		out[pose] = s;
}

/* Blocks per SM an instantiation can keep resident (at least 1). */
template <int DIM, int TYPE, int GH>
static int
occupancy(void)
{
	int			blocks = 0;

	if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, chamfer_eval_kernel<DIM, TYPE, GH>,
													  CH_BLOCK, 0) != cudaSuccess || blocks < 1)
	{
		(void) cudaGetLastError();
		blocks = 1;
	}
	return blocks;
}

/* Launch one evaluation: eval kernel over grid blocks, then the final sum. */
template <int DIM, int TYPE, int GH>
static cudaError_t
launch(mcc_chamfer_gpu *g, const mcc_chamfer_xf *xf)
{
	constexpr int NS = ch_nsums(TYPE, DIM);
	int			grid = g->grid[DIM - 2][TYPE][GH];
	long long	need = (g->n_obs + CH_BLOCK - 1) / CH_BLOCK;

	if (need < grid)
		grid = (int) (need > 0 ? need : 1);
	chamfer_eval_kernel<DIM, TYPE, GH><<<grid, CH_BLOCK, 0, g->stream>>>(
		g->d_obs, g->n_obs, g->geom, g->d_site, g->d_ref, *xf, g->d_partial);
	chamfer_final_kernel<NS><<<1, CH_FINAL_BLOCK, 0, g->stream>>>(g->d_partial, grid, g->d_out);
	return cudaGetLastError();
}

/*
 * Grid sizes by occupancy. The f-only and the f+g+H kernels of a type get
 * the same grid, so that they partition the points alike and their f is
 * the same bits: pipelined and traditional LM then take the same path.
 */
template <int DIM, int TYPE>
static void
set_grid(mcc_chamfer_gpu *g)
{
	int			o0 = occupancy<DIM, TYPE, 0>();
	int			o1 = occupancy<DIM, TYPE, 1>();

	g->grid[DIM - 2][TYPE][0] = g->grid[DIM - 2][TYPE][1] = g->sm_count * (o0 < o1 ? o0 : o1);
}

/* Open a context. */
extern "C" mcc_gpu_code
mcc_chamfer_gpu_open(int device, mcc_chamfer_gpu **out, mcc_error *err)
{
	mcc_chamfer_gpu *g;
	mcc_gpu_rt_dev d;
	cudaError_t e;
	int			maxgrid = 0;
	mcc_gpu_code code;

	*out = NULL;
	for (int t = 0; t < MCC_XFORM_COUNT; t++)
		for (int k = 2; k <= 3; k++)
			if (ch_nsums(t, k) != mcc_chamfer_nsums(t, k))
				return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "GPU and core disagree on the sum layout");
	if ((code = mcc_gpu_rt_open(device, 9, "chamfer alignment", &d, err)) != MCC_GPU_OK)
		return code;
	g = (mcc_chamfer_gpu *) calloc(1, sizeof(*g));
	if (g == NULL)
		return mcc_gpu_rt_err(err, MCC_GPU_OOM, "out of memory for a GPU context");
	g->device = device;
	snprintf(g->name, sizeof(g->name), "%s", d.name);
	g->sm_count = d.sm_count;
	if ((e = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking)) != cudaSuccess ||
		(e = cudaMalloc((void **) &g->d_out, sizeof(double) * MCC_CHAMFER_MAX_SUMS)) != cudaSuccess ||
		(e = cudaMallocHost((void **) &g->h_out, sizeof(double) * MCC_CHAMFER_MAX_SUMS)) != cudaSuccess)
	{
		code = cuda_fail(g, e, "context set-up", err);
		mcc_chamfer_gpu_close(g);
		return code;
	}
	set_grid<2, 0>(g);
	set_grid<2, 1>(g);
	set_grid<2, 2>(g);
	set_grid<2, 3>(g);
	set_grid<3, 0>(g);
	set_grid<3, 1>(g);
	set_grid<3, 2>(g);
	set_grid<3, 3>(g);
	for (int d = 0; d < 2; d++)
		for (int t = 0; t < MCC_XFORM_COUNT; t++)
			for (int h = 0; h < 2; h++)
				if (g->grid[d][t][h] * ch_nsums(t, d + 2) > maxgrid)
					maxgrid = g->grid[d][t][h] * ch_nsums(t, d + 2);
	g->cap_partial = (size_t) maxgrid;
	if ((e = cudaMalloc((void **) &g->d_partial, sizeof(double) * g->cap_partial)) != cudaSuccess)
	{
		code = cuda_fail(g, e, "cudaMalloc of the partial sums", err);
		mcc_chamfer_gpu_close(g);
		return code;
	}
	*out = g;
	return MCC_GPU_OK;
}

/* Free a context. */
extern "C" void
mcc_chamfer_gpu_close(mcc_chamfer_gpu *g)
{
	if (g == NULL)
		return;
	(void) cudaSetDevice(g->device);
	mcc_gpu_rt_free(g->d_site, g->d_ref, g->d_obs, g->d_partial, g->d_out, g->d_levels, g->d_spts,
					g->d_poses, g->d_scores);
	if (g->h_out)
		cudaFreeHost(g->h_out);
	if (g->stream)
		cudaStreamDestroy(g->stream);
	(void) cudaGetLastError();
	free(g);
}

/* Device name. */
extern "C" const char *
mcc_chamfer_gpu_device_name(const mcc_chamfer_gpu *g)
{
	return g->name;
}

/* A usable context, on its device. */
static mcc_gpu_code
ready(mcc_chamfer_gpu *g, mcc_error *err)
{
	cudaError_t e;

	if (g->lost.lost)
		return mcc_gpu_rt_usable(&g->lost, err);
	if ((e = cudaSetDevice(g->device)) != cudaSuccess)
		return cuda_fail(g, e, "cudaSetDevice", err);
	return MCC_GPU_OK;
}

/* A host array to copy into a device buffer of the context (mcc_gpu_rt_upload). */
typedef struct ch_upload
{
	void	  **buf;
	size_t	   *cap;
	const void *src;
	size_t		bytes;
} ch_upload;

/* Copy n arrays to the device and wait for them; an error names what failed. */
static mcc_gpu_code
upload_wait(mcc_chamfer_gpu *g, const ch_upload *u, int n, const char *what, mcc_error *err)
{
	cudaError_t e = cudaSuccess;

	for (int i = 0; i < n && e == cudaSuccess; i++)
		e = mcc_gpu_rt_upload(u[i].buf, u[i].cap, u[i].src, u[i].bytes, g->stream);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(g->stream);
	return e == cudaSuccess ? MCC_GPU_OK : cuda_fail(g, e, what, err);
}

/* Upload a reference set: its distance transform's sites and its points. */
extern "C" mcc_gpu_code
mcc_chamfer_gpu_set_reference(mcc_chamfer_gpu *g, const mcc_chamfer_ref *ref, mcc_error *err)
{
	const ch_upload u[2] = {
		{(void **) &g->d_site, &g->cap_site, ref->edt.site, ref->edt.cells * sizeof(int32_t)},
		{(void **) &g->d_ref, &g->cap_ref, ref->pts, ref->n * (size_t) ref->dim * sizeof(double)},
	};
	mcc_gpu_code code;

	if ((code = ready(g, err)) != MCC_GPU_OK)
		return code;
	g->ref = NULL;
	if ((code = upload_wait(g, u, 2, "upload of the reference", err)) != MCC_GPU_OK)
		return code;
	g->geom = ref->edt.geom;
	g->ref = ref;
	g->dim = ref->dim;
	return MCC_GPU_OK;
}

/* Upload an observed set. */
extern "C" mcc_gpu_code
mcc_chamfer_gpu_set_observed(mcc_chamfer_gpu *g, const mcc_chamfer_obs *obs, mcc_error *err)
{
	const ch_upload u = {(void **) &g->d_obs, &g->cap_obs, obs->pts,
	obs->n * (size_t) obs->dim * sizeof(double)};
	mcc_gpu_code code = ready(g, err);

	if (code != MCC_GPU_OK)
		return code;
	if (g->ref == NULL || obs->dim != g->dim)
	{
		mcc_error_set(err, MCC_ERR_INTERNAL, "observed set uploaded without a matching reference");
		return MCC_GPU_INVALID;
	}
	g->n_obs = 0;
	if ((code = upload_wait(g, &u, 1, "upload of the observed points", err)) != MCC_GPU_OK)
		return code;
	g->n_obs = (long long) obs->n;
	return MCC_GPU_OK;
}

/* The evaluator (see the header). */
extern "C" mcc_status
mcc_chamfer_gpu_eval(void *ctx, const mcc_chamfer_xf *xf, int gh, double *sums, mcc_error *err)
{
	mcc_chamfer_gpu *g = (mcc_chamfer_gpu *) ctx;
	int			ns = mcc_chamfer_nsums(xf->type, xf->dim);
	cudaError_t e = cudaSuccess;
	int			key = (xf->dim - 2) * 8 + xf->type * 2 + (gh ? 1 : 0);

	if (g->lost.lost || g->n_obs == 0 || xf->dim != g->dim || xf->type < 0 || xf->type >= MCC_XFORM_COUNT)
	{
		g->last = g->lost.lost ? MCC_GPU_STICKY : MCC_GPU_INVALID;
		return mcc_error_set(err, MCC_ERR_INTERNAL, "GPU evaluator not ready for this transform");
	}
	switch (key)
	{
		case 0: e = launch<2, 0, 0>(g, xf); break;
		case 1: e = launch<2, 0, 1>(g, xf); break;
		case 2: e = launch<2, 1, 0>(g, xf); break;
		case 3: e = launch<2, 1, 1>(g, xf); break;
		case 4: e = launch<2, 2, 0>(g, xf); break;
		case 5: e = launch<2, 2, 1>(g, xf); break;
		case 6: e = launch<2, 3, 0>(g, xf); break;
		case 7: e = launch<2, 3, 1>(g, xf); break;
		case 8: e = launch<3, 0, 0>(g, xf); break;
		case 9: e = launch<3, 0, 1>(g, xf); break;
		case 10: e = launch<3, 1, 0>(g, xf); break;
		case 11: e = launch<3, 1, 1>(g, xf); break;
		case 12: e = launch<3, 2, 0>(g, xf); break;
		case 13: e = launch<3, 2, 1>(g, xf); break;
		case 14: e = launch<3, 3, 0>(g, xf); break;
		case 15: e = launch<3, 3, 1>(g, xf); break;
	}
	if (e == cudaSuccess)
		e = cudaMemcpyAsync(g->h_out, g->d_out, sizeof(double) * ns, cudaMemcpyDeviceToHost, g->stream);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(g->stream);
	if (e != cudaSuccess)
	{
		g->last = cuda_fail(g, e, "the evaluation kernels", err);
		return err->status;
	}
	memset(sums, 0, sizeof(double) * MCC_CHAMFER_MAX_SUMS);
	memcpy(sums, g->h_out, sizeof(double) * ns);
	return MCC_OK;
}

/* Upload a pyramid's levels unless they are there already. */
static cudaError_t
upload_pyramid(mcc_chamfer_gpu *g, const mcc_chamfer_pyramid *pyr)
{
	size_t		total = 0;
	cudaError_t e;

	if (g->pyr_id == pyr->id && pyr->id != 0)
		return cudaSuccess;
	g->pyr_id = 0;
	for (int l = 0; l < pyr->levels; l++)
	{
		g->level_off[l] = total;
		total += (size_t) pyr->level[l].geom.nx * pyr->level[l].geom.ny;
	}
	if ((e = mcc_gpu_rt_reserve((void **) &g->d_levels, &g->cap_levels,
								total * sizeof(int32_t))) != cudaSuccess)
		return e;
	for (int l = 0; l < pyr->levels; l++)
		if ((e = cudaMemcpyAsync(g->d_levels + g->level_off[l], pyr->level[l].v,
								 sizeof(int32_t) * pyr->level[l].geom.nx * pyr->level[l].geom.ny,
								 cudaMemcpyHostToDevice, g->stream)) != cudaSuccess)
			return e;
	g->pyr_id = pyr->id;
	return cudaSuccess;
}

/* The search's scorer (mcc_chamfer_score_fn; see the header). */
extern "C" mcc_status
mcc_chamfer_gpu_score(void *ctx, const mcc_chamfer_pyramid *pyr, int level, const double *pts, int n,
					  const mcc_chamfer_spose *poses, int n_poses, int64_t *out, mcc_error *err)
{
	mcc_chamfer_gpu *g = (mcc_chamfer_gpu *) ctx;
	cudaError_t e;
	int			blocks = (n_poses + CH_SCORE_WARPS - 1) / CH_SCORE_WARPS;

	if (g->lost.lost || level < 0 || level >= pyr->levels || n < 0 || n_poses < 0)
	{
		g->last = g->lost.lost ? MCC_GPU_STICKY : MCC_GPU_INVALID;
		return mcc_error_set(err, MCC_ERR_INTERNAL, "GPU scorer not ready for this batch");
	}
	if (n_poses == 0)
		return MCC_OK;
	if ((e = upload_pyramid(g, pyr)) != cudaSuccess ||
		(e = mcc_gpu_rt_reserve((void **) &g->d_spts, &g->cap_spts,
								2 * (size_t) (n ? n : 1) * sizeof(double))) != cudaSuccess ||
		(e = mcc_gpu_rt_reserve((void **) &g->d_poses, &g->cap_poses,
								(size_t) n_poses * sizeof(mcc_chamfer_spose))) != cudaSuccess ||
		(e = mcc_gpu_rt_reserve((void **) &g->d_scores, &g->cap_scores,
								(size_t) n_poses * sizeof(long long))) != cudaSuccess ||
		(e = cudaMemcpyAsync(g->d_spts, pts, sizeof(double) * 2 * n, cudaMemcpyHostToDevice,
							 g->stream)) != cudaSuccess ||
		(e = cudaMemcpyAsync(g->d_poses, poses, sizeof(mcc_chamfer_spose) * n_poses,
							 cudaMemcpyHostToDevice, g->stream)) != cudaSuccess)
	{
		g->last = cuda_fail(g, e, "the search's uploads", err);
		return err->status;
	}
	chamfer_score_kernel<<<blocks, CH_SCORE_WARPS * 32, 0, g->stream>>>(
		g->d_spts, n, pyr->level[level].geom, g->d_levels + g->level_off[level], g->d_poses, n_poses,
		g->d_scores);
	if ((e = cudaGetLastError()) != cudaSuccess ||
		(e = cudaMemcpyAsync(out, g->d_scores, sizeof(long long) * n_poses, cudaMemcpyDeviceToHost,
							 g->stream)) != cudaSuccess ||
		(e = cudaStreamSynchronize(g->stream)) != cudaSuccess)
	{
		g->last = cuda_fail(g, e, "the search's scoring kernel", err);
		return err->status;
	}
	return MCC_OK;
}

/* The options of an alignment: opts, or by default pipelined LM, the GPU's own. */
static mcc_chamfer_opts
gpu_opts(const mcc_chamfer_opts *opts)
{
	mcc_chamfer_opts o;

	if (opts != NULL)
		return *opts;
	mcc_chamfer_opts_init(&o);
	o.pipelined = 1;
	return o;
}

/* Align with the uploaded reference. */
extern "C" mcc_gpu_code
mcc_chamfer_gpu_align_ref(mcc_chamfer_gpu *g, const mcc_chamfer_ref *ref, const double *obs,
						  size_t n, const mcc_chamfer_opts *opts, mcc_chamfer_result *res,
						  mcc_error *err)
{
	mcc_chamfer_opts o = gpu_opts(opts);
	mcc_chamfer_obs ob;
	mcc_chamfer_evaluator ev;
	mcc_gpu_code code;
	mcc_status	st;
	double		t0;
	double		t1;

	memset(res, 0, sizeof(*res));
	if ((code = ready(g, err)) != MCC_GPU_OK)
		return code;
	if (g->ref != ref)
	{
		mcc_error_set(err, MCC_ERR_INTERNAL, "the reference was not uploaded to this context");
		return MCC_GPU_INVALID;
	}
	t0 = mcc_cuda_now_ms();
	if (mcc_chamfer_obs_prepare(ref, obs, n, o.transform, &ob, err) != MCC_OK)
		return MCC_GPU_INVALID;
	code = mcc_chamfer_gpu_set_observed(g, &ob, err);
	t1 = mcc_cuda_now_ms();
	g->times.observed_ms = t1 - t0;
	if (code != MCC_GPU_OK)
	{
		mcc_chamfer_obs_free(&ob);
		return code;
	}
	g->last = MCC_GPU_OK;
	memset(&ev, 0, sizeof(ev));
	ev.eval = mcc_chamfer_gpu_eval;
	ev.ctx = g;
	ev.score = mcc_chamfer_gpu_score;
	ev.score_ctx = g;
	st = mcc_chamfer_solve(ref, &ob, &o, &ev, res, err);
	g->times.solve_ms = mcc_cuda_now_ms() - t1;
	mcc_chamfer_obs_free(&ob);
	if (st == MCC_OK)
		return MCC_GPU_OK;
	if (res->canceled)
		return MCC_GPU_CANCELLED;
	return g->last != MCC_GPU_OK ? g->last : MCC_GPU_INVALID;
}

/* The whole alignment with the GPU evaluator. */
extern "C" mcc_gpu_code
mcc_chamfer_gpu_align(mcc_chamfer_gpu *g, const double *obs, size_t n_obs, const double *ref,
					  size_t n_ref, int dim, const mcc_chamfer_opts *opts,
					  mcc_chamfer_result *res, mcc_error *err)
{
	mcc_chamfer_opts o = gpu_opts(opts);
	mcc_chamfer_ref rf;
	mcc_gpu_code code;
	double		t0;

	memset(res, 0, sizeof(*res));
	if (mcc_chamfer_ref_build(ref, n_ref, dim, &o, &rf, err) != MCC_OK)
		return (o.cancel && *o.cancel) ? MCC_GPU_CANCELLED : MCC_GPU_INVALID;
	t0 = mcc_cuda_now_ms();
	code = mcc_chamfer_gpu_set_reference(g, &rf, err);
	g->times.reference_ms = mcc_cuda_now_ms() - t0;
	if (code == MCC_GPU_OK)
		code = mcc_chamfer_gpu_align_ref(g, &rf, obs, n_obs, &o, res, err);
	g->ref = NULL;				/* rf dies here */
	mcc_chamfer_ref_free(&rf);
	return code;
}

/* Timings of the last alignment. */
extern "C" mcc_chamfer_gpu_times
mcc_chamfer_gpu_last_times(const mcc_chamfer_gpu *g)
{
	return g->times;
}
