/*
 * mcc_sad.cu: the SAD search on the GPU (mcc_sad_gpu.h).
 *
 * Paper 002's CUDA kernel gives each thread one map position and reads
 * both images byte by byte from global memory: two loads per absolute
 * difference. Here (kernels/impl/mcc_sad_body.h):
 *   - 4 bytes per instruction: PTX vabsdiff4 with accumulate (the packed
 *     byte SAD that __vsadu4 wraps, without its separate add);
 *   - 4 byte shifts without byte shuffles: the pattern is stored in 4
 *     copies shifted by 0..3 bytes, so every target word is read aligned
 *     and serves 4 map columns at once;
 *   - register tiling: a thread owns 4J x Y positions (J words, Y rows);
 *     per pattern row it loads J target words and one 16-byte group of the
 *     4 pattern copies, and does 4JY packed SADs (64 for J = 2, Y = 8);
 *   - a sliding window: going down the pattern rows, the Y target rows a
 *     thread needs slide by one, so only one new row of J words is loaded
 *     per step; target words come through the read-only data cache (__ldg),
 *     pattern words are warp-uniform (one broadcast load per warp), or, in
 *     the SMEM variant, staged per word column in shared memory;
 *   - no masks in the inner loop: zero padding makes every load valid, and
 *     the bytes the padding adds are subtracted afterwards from a column
 *     table built by its own small kernel;
 *   - device-side selection: 60-bit keys SAD << 26 | y * nx + x (unique,
 *     ordered as (SAD, y, x)); CUB reduces them to the minimum (k = 1) or
 *     radix-sorts them, and only the k best come back.
 * 32-bit accumulators hold 255 * 4 * nw * rows; a pattern tall enough to
 * overflow them is done in row chunks added into the 64-bit raw map.
 */
#include <cuda_runtime.h>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_gpu_rt.h"
#include "mcc_sad_gpu.h"

/* packed byte SAD with accumulate: vabsdiff4 on the device, a loop on the host */
__host__ __device__ static inline uint32_t
vsad4(uint32_t a, uint32_t b, uint32_t c)
{
#ifdef __CUDA_ARCH__
	uint32_t	d;

	asm("vabsdiff4.u32.u32.u32.add %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
	return d;
#else
	for (int i = 0; i < 32; i += 8)
	{
		int			x = (int) ((a >> i) & 255u) - (int) ((b >> i) & 255u);

		c += (uint32_t) (x < 0 ? -x : x);
	}
	return c;
#endif
}

/* the same sum as per-byte |a - b| (vabsdiff4 without accumulate) and a 4-way dot product with ones */
__host__ __device__ static inline uint32_t
vsad4_dp4a(uint32_t a, uint32_t b, uint32_t c)
{
#ifdef __CUDA_ARCH__
	return __dp4a(__vabsdiffu4(a, b), 0x01010101u, c);
#else
	return vsad4(a, b, c);
#endif
}

#define SAD_HD __host__ __device__
#define SAD_UNROLL _Pragma("unroll")
#define SAD_VSAD(a, b, acc) vsad4((a), (b), (acc))
#ifdef __CUDA_ARCH__
#define SAD_LDT(p) __ldg(p)
#else
#define SAD_LDT(p) (*(p))
#endif

/* pattern words from global memory, read-only path */
#ifdef __CUDA_ARCH__
#define SAD_LDP(p, a, b, c, d) \
	do { uint4 v_ = __ldg((const uint4 *) (p)); (a) = v_.x; (b) = v_.y; (c) = v_.z; (d) = v_.w; } while (0)
#else
#define SAD_LDP(p, a, b, c, d) \
	do { (a) = (p)[0]; (b) = (p)[1]; (c) = (p)[2]; (d) = (p)[3]; } while (0)
#endif

#include "mcc_sad_body.h"

#define SAD_NAME(x) sad_##x
#include "mcc_sad_variants.h"

/* the DP4A variant: the packed SAD as two instructions that are surely native */
#undef SAD_VSAD
#define SAD_VSAD(a, b, acc) vsad4_dp4a((a), (b), (acc))
#define SAD_J 2
#define SAD_Y 8
#define SAD_COLUMN_FN sad_column_j2y8_dp4a
#define SAD_THREAD_FN sad_thread_j2y8_dp4a
#include "mcc_sad_body.h"
#undef SAD_J
#undef SAD_Y
#undef SAD_COLUMN_FN
#undef SAD_THREAD_FN
#undef SAD_VSAD
#define SAD_VSAD(a, b, acc) vsad4((a), (b), (acc))

/* the SMEM variant reads its pattern words from shared memory */
#undef SAD_LDP
#define SAD_LDP(p, a, b, c, d) \
	do { (a) = (p)[0]; (b) = (p)[1]; (c) = (p)[2]; (d) = (p)[3]; } while (0)
#define SAD_J 2
#define SAD_Y 8
#define SAD_COLUMN_FN sad_column_j2y8_smem
#include "mcc_sad_body.h"
#undef SAD_J
#undef SAD_Y
#undef SAD_COLUMN_FN

/* Largest pattern row chunk of the SMEM variant (16 bytes per row, 48 KiB). */
#define SAD_SMEM_ROWS 3072

/*
 * The SAD kernel of one variant: map rows y_begin .. y_end - 1 (bands of
 * Y), pattern rows r_begin .. r_end - 1, raw sums stored or added (u64).
 * A thread's work is sad_thread_* of mcc_sad_body.h.
 */
#define SAD_KERNEL(NAME, THREAD, J, Y) \
__global__ void __launch_bounds__(SAD_BT) \
NAME(const uint32_t *__restrict__ tw, uint32_t tsw, const uint32_t *__restrict__ pp, int h, \
	 int nw, uint32_t nx, uint32_t y_begin, uint32_t y_end, int r_begin, int r_end, \
	 unsigned long long *__restrict__ raw, int accumulate) \
{ \
	THREAD(tw, tsw, pp, h, nw, nx, y_end, r_begin, r_end, (uint64_t *) raw, accumulate, \
		   (blockIdx.x * SAD_BT + threadIdx.x) * (J), y_begin + blockIdx.y * (Y)); \
}

SAD_KERNEL(sad_kernel_j2y8, sad_thread_j2y8, 2, 8)
SAD_KERNEL(sad_kernel_j2y4, sad_thread_j2y4, 2, 4)
SAD_KERNEL(sad_kernel_j1y4, sad_thread_j1y4, 1, 4)
SAD_KERNEL(sad_kernel_j4y4, sad_thread_j4y4, 4, 4)
SAD_KERNEL(sad_kernel_j2y8_dp4a, sad_thread_j2y8_dp4a, 2, 8)

/*
 * The SMEM variant: as sad_thread_j2y8, but the block first copies each
 * pattern word column (4 words per row) into shared memory.
 */
__global__ void __launch_bounds__(SAD_BT)
sad_kernel_j2y8_smem(const uint32_t *__restrict__ tw, uint32_t tsw, const uint32_t *__restrict__ pp,
					 int h, int nw, uint32_t nx, uint32_t y_begin, uint32_t y_end, int r_begin,
					 int r_end, unsigned long long *__restrict__ raw, int accumulate)
{
	extern __shared__ uint32_t sad_sp[];
	const uint32_t xw0 = (blockIdx.x * SAD_BT + threadIdx.x) * 2;
	const uint32_t y0 = y_begin + blockIdx.y * 8;
	const int	nrows = r_end - r_begin;
	uint32_t	acc[8][2][4] = {{{0}}};

	for (int i = 0; i < nw; i++)
	{
		const uint32_t *pcol = pp + ((size_t) i * h + r_begin) * 4;

		__syncthreads();
		for (int k = threadIdx.x; k < 4 * nrows; k += SAD_BT)
			sad_sp[k] = __ldg(pcol + k);
		__syncthreads();
		sad_column_j2y8_smem(tw + (size_t) (y0 + r_begin) * tsw + xw0 + i, tsw, sad_sp, nrows, acc);
	}
	SAD_UNROLL
	for (int dy = 0; dy < 8; dy++)
		SAD_UNROLL
		for (int j = 0; j < 2; j++)
			SAD_UNROLL
			for (int s = 0; s < 4; s++)
			{
				const uint32_t x = 4 * (xw0 + j) + s;
				const uint32_t y = y0 + dy;

				if (x < nx && y < y_end)
				{
					const size_t idx = (size_t) y * nx + x;

					raw[idx] = (accumulate ? raw[idx] : 0ull) + acc[dy][j][s];
				}
			}
}

typedef void (*sad_kernel_fn) (const uint32_t *, uint32_t, const uint32_t *, int, int, uint32_t,
							   uint32_t, uint32_t, int, int, unsigned long long *, int);

typedef struct sad_variant
{
	const char *name;
	sad_kernel_fn fn;
	int			j,
				y,
				smem;
} sad_variant;

static const sad_variant variants[MCC_SAD_GPU_VARIANTS] = {
	{"auto", NULL, 0, 0, 0},
	{"j2y8", sad_kernel_j2y8, 2, 8, 0},
	{"j2y4", sad_kernel_j2y4, 2, 4, 0},
	{"j1y4", sad_kernel_j1y4, 1, 4, 0},
	{"j4y4", sad_kernel_j4y4, 4, 4, 0},
	{"j2y8-smem", sad_kernel_j2y8_smem, 2, 8, 1},
	{"j2y8-dp4a", sad_kernel_j2y8_dp4a, 2, 8, 0},
};

/* Correction table, pass 1 (sad_corr_seg): one thread per (column, segment). */
__global__ void
sad_corr_seg_kernel(const uint8_t *__restrict__ tb, size_t tstride, int H, int w, uint32_t nx,
					uint32_t *__restrict__ seg)
{
	const uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;

	if (x < nx)
		seg[(size_t) blockIdx.y * nx + x] = sad_corr_seg(tb, tstride, H, w, x, (int) blockIdx.y);
}

/* Correction table, pass 2 (sad_corr_scan). */
__global__ void
sad_corr_scan_kernel(const uint8_t *__restrict__ tb, size_t tstride, int H, int w, uint32_t nx,
					 const uint32_t *__restrict__ seg, uint32_t *__restrict__ V)
{
	const uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;

	if (x < nx)
		sad_corr_scan(tb, tstride, H, w, x, nx, (int) blockIdx.y, seg, V);
}

/* Raw sums to selection keys, in place. */
__global__ void
sad_key_kernel(unsigned long long *__restrict__ raw, const uint32_t *__restrict__ V, uint32_t nx,
			   uint32_t ny, int h)
{
	const size_t n = (size_t) nx * ny;

	for (size_t idx = blockIdx.x * (size_t) blockDim.x + threadIdx.x; idx < n;
		 idx += (size_t) gridDim.x * blockDim.x)
	{
		const uint32_t y = (uint32_t) (idx / nx);
		const uint32_t x = (uint32_t) (idx % nx);
		const uint32_t corr = V[(size_t) (y + h) * nx + x] - V[(size_t) y * nx + x];

		raw[idx] = sad_key(raw[idx], corr, (uint32_t) idx);
	}
}

struct mcc_sad_gpu
{
	int			device;
	int			sm_count;
	char		desc[192];
	cudaStream_t stream;
	cudaEvent_t ev[6];
	mcc_gpu_rt_lost lost;		/* a sticky error happened (mcc_gpu_rt.h) */
	void	   *d_t;			/* padded target words */
	size_t		cap_t;
	void	   *d_p;			/* shifted pattern copies */
	size_t		cap_p;
	void	   *d_v;			/* correction table */
	size_t		cap_v;
	void	   *d_seg;			/* its segment sums */
	size_t		cap_seg;
	void	   *d_keys;			/* raw sums, then keys */
	size_t		cap_keys;
	void	   *d_alt;			/* sorted keys; the minimum for k = 1 */
	size_t		cap_alt;
	void	   *d_tmp;			/* CUB temporary storage */
	size_t		cap_tmp;
	uint32_t   *h_p;			/* host staging of the pattern copies */
	size_t		cap_hp;
};

/* Variant name. */
extern "C" const char *
mcc_sad_gpu_variant_name(int variant)
{
	return variant >= 0 && variant < MCC_SAD_GPU_VARIANTS ? variants[variant].name : NULL;
}

/* A CUDA failure as a code and a message (the runtime's translation). */
static mcc_gpu_code
fail(mcc_sad_gpu *ctx, cudaError_t e, const char *what, mcc_error *err)
{
	return mcc_gpu_rt_fail(ctx ? &ctx->lost : NULL, e, what, ctx ? ctx->device : -1, err);
}

#define CK(call) \
	do { cudaError_t e_ = (call); if (e_ != cudaSuccess) return fail(ctx, e_, #call, err); } while (0)

/* Open a device after probing the driver. */
extern "C" mcc_gpu_code
mcc_sad_gpu_open(int device, mcc_sad_gpu **out, mcc_error *err)
{
	mcc_sad_gpu *ctx = NULL;
	mcc_gpu_rt_dev d;
	mcc_gpu_code c;
	cudaError_t e;

	*out = NULL;
	if ((c = mcc_gpu_rt_open(device, 9, "SAD", &d, err)) != MCC_GPU_OK)
		return c;
	ctx = (mcc_sad_gpu *) calloc(1, sizeof(*ctx));
	if (ctx == NULL)
		return mcc_gpu_rt_err(err, MCC_GPU_OOM, "out of memory");
	ctx->device = device;
	ctx->sm_count = d.sm_count;
	snprintf(ctx->desc, sizeof(ctx->desc), "%s, %d SMs, cc %d.%d", d.name, d.sm_count, d.cc_major,
			 d.cc_minor);
	if ((e = cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking)) != cudaSuccess)
	{
		c = fail(NULL, e, "cudaStreamCreate", err);
		free(ctx);
		return c;
	}
	for (int i = 0; i < 6; i++)
		if ((e = cudaEventCreate(&ctx->ev[i])) != cudaSuccess)
		{
			c = fail(NULL, e, "cudaEventCreate", err);

			for (int k = 0; k < i; k++)
				cudaEventDestroy(ctx->ev[k]);
			cudaStreamDestroy(ctx->stream);
			free(ctx);
			return c;
		}
	*out = ctx;
	return MCC_GPU_OK;
}

/* Free everything. */
extern "C" void
mcc_sad_gpu_close(mcc_sad_gpu *ctx)
{
	if (ctx == NULL)
		return;
	cudaSetDevice(ctx->device);
	mcc_gpu_rt_free(ctx->d_t, ctx->d_p, ctx->d_v, ctx->d_seg, ctx->d_keys, ctx->d_alt, ctx->d_tmp);
	for (int i = 0; i < 6; i++)
		cudaEventDestroy(ctx->ev[i]);
	cudaStreamDestroy(ctx->stream);
	free(ctx->h_p);
	free(ctx);
}

/* Description of the device. */
extern "C" const char *
mcc_sad_gpu_describe(const mcc_sad_gpu *ctx)
{
	return ctx->desc;
}

/* The variant for a map: the largest tiles that still give every SM 8 warps. */
static int
auto_variant(const mcc_sad_gpu *ctx, uint32_t W, uint32_t H, uint32_t w, uint32_t h)
{
	static const int order[] = {MCC_SAD_GPU_J2_Y8, MCC_SAD_GPU_J2_Y4, MCC_SAD_GPU_J1_Y4};

	for (int i = 0; i < 3; i++)
	{
		sad_dims	d;

		sad_dims_compute(W, H, w, h, variants[order[i]].j, variants[order[i]].y, SAD_BT, &d);
		if ((uint64_t) d.gx * d.gy * (SAD_BT / 32) >= 8ull * (uint64_t) ctx->sm_count)
			return order[i];
	}
	return MCC_SAD_GPU_J1_Y4;
}

/* What one search computes, from its sizes (sad_plan_make). */
typedef struct sad_plan
{
	int			variant;
	const sad_variant *v;
	sad_dims	d;
	size_t		npos;			/* map positions */
	size_t		tbytes;			/* padded target */
	size_t		pwords;			/* shifted pattern copies, 32-bit words */
	size_t		tmp_bytes;		/* CUB temporary storage */
	uint32_t	nwant;			/* hits wanted: min(k, npos) */
	uint32_t	rows_max;		/* pattern rows per launch */
	uint32_t	band_rows;		/* map rows per band (cancel polled between bands) */
} sad_plan;

/* Check a search's arguments and size it. */
static mcc_gpu_code
sad_plan_make(const mcc_sad_gpu *ctx, const mcc_image *target, const mcc_image *pattern,
			  uint32_t k, int variant, const volatile int *cancel, sad_plan *pl, mcc_error *err)
{
	const uint32_t W = target->width,
				H = target->height,
				w = pattern->width,
				h = pattern->height;
	const sad_variant *v;

	memset(pl, 0, sizeof(*pl));
	if (w == 0 || h == 0 || w > W || h > H)
	{
		mcc_error_set(err, MCC_ERR_VALUE, "pattern is larger than the target");
		mcc_error_detail(err, "The pattern is %u x %u pixels and the target %u x %u.", w, h, W, H);
		return MCC_GPU_INVALID;
	}
	if (k > MCC_SAD_MAX_K || (uint64_t) W * H > MCC_IMAGE_MAX_PIXELS)
	{
		mcc_error_set(err, MCC_ERR_LIMIT, "SAD search is too large for the GPU path");
		return MCC_GPU_INVALID;
	}
	if (variant == MCC_SAD_GPU_AUTO)
		variant = auto_variant(ctx, W, H, w, h);
	if (variant <= 0 || variant >= MCC_SAD_GPU_VARIANTS)
	{
		mcc_error_set(err, MCC_ERR_VALUE, "unknown SAD kernel variant %d", variant);
		return MCC_GPU_INVALID;
	}
	pl->variant = variant;
	pl->v = v = &variants[variant];
	sad_dims_compute(W, H, w, h, v->j, v->y, SAD_BT, &pl->d);
	pl->npos = (size_t) pl->d.nx * pl->d.ny;
	pl->nwant = (uint64_t) k < pl->npos ? k : (uint32_t) pl->npos;
	pl->tbytes = (size_t) pl->d.tsw * 4 * pl->d.trows;
	pl->pwords = (size_t) pl->d.nw * h * 4;
	/* 32-bit accumulators: at most 255 * 4 * nw per pattern row */
	pl->rows_max = (uint32_t) (0xFFFFFFFFull / (255ull * 4 * pl->d.nw));
	if (v->smem && pl->rows_max > SAD_SMEM_ROWS)
		pl->rows_max = SAD_SMEM_ROWS;
	/* bands of map rows only when the caller may cancel: ~2^38 byte SADs each */
	pl->band_rows = pl->d.ny;
	if (cancel)
	{
		uint64_t	per_row = (uint64_t) pl->d.nx * h * 4 * pl->d.nw;
		uint64_t	rows = per_row ? (1ull << 38) / per_row : pl->d.ny;

		pl->band_rows = (uint32_t) (rows < (uint64_t) v->y ? v->y : rows > pl->d.ny ? pl->d.ny : rows);
		pl->band_rows = (pl->band_rows + v->y - 1) / v->y * v->y;
	}
	return MCC_GPU_OK;
}

/* Grow the device buffers and the host staging to the plan; lay out the pattern. */
static mcc_gpu_code
sad_buffers(mcc_sad_gpu *ctx, const mcc_image *target, const mcc_image *pattern, sad_plan *pl,
			mcc_error *err)
{
	const uint32_t H = target->height;
	const sad_dims d = pl->d;

	CK(cudaSetDevice(ctx->device));
	if (pl->nwant == 1)
		CK(cub::DeviceReduce::Min(NULL, pl->tmp_bytes, (unsigned long long *) NULL,
								  (unsigned long long *) NULL, (int) pl->npos, ctx->stream));
	else if (pl->nwant > 1)
		CK(cub::DeviceRadixSort::SortKeys(NULL, pl->tmp_bytes, (unsigned long long *) NULL,
										  (unsigned long long *) NULL, (int) pl->npos, 0,
										  MCC_SAD_KEY_BITS, ctx->stream));
	CK(mcc_gpu_rt_reserve(&ctx->d_t, &ctx->cap_t, pl->tbytes));
	CK(mcc_gpu_rt_reserve(&ctx->d_p, &ctx->cap_p, pl->pwords * 4));
	CK(mcc_gpu_rt_reserve(&ctx->d_v, &ctx->cap_v, (size_t) (H + 1) * d.nx * 4));
	CK(mcc_gpu_rt_reserve(&ctx->d_seg, &ctx->cap_seg,
			(size_t) ((H + SAD_CORR_SEG - 1) / SAD_CORR_SEG) * d.nx * 4));
	CK(mcc_gpu_rt_reserve(&ctx->d_keys, &ctx->cap_keys, pl->npos * 8));
	CK(mcc_gpu_rt_reserve(&ctx->d_alt, &ctx->cap_alt, (pl->nwant > 1 ? pl->npos : 1) * 8));
	CK(mcc_gpu_rt_reserve(&ctx->d_tmp, &ctx->cap_tmp, pl->tmp_bytes ? pl->tmp_bytes : 1));
	if (pl->pwords > ctx->cap_hp)
	{
		free(ctx->h_p);
		ctx->h_p = (uint32_t *) malloc(pl->pwords * 4);
		ctx->cap_hp = ctx->h_p ? pl->pwords : 0;
		if (ctx->h_p == NULL)
		{
			mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
			return MCC_GPU_OOM;
		}
	}
	sad_pattern_layout(pattern->pixels, pattern->stride, pattern->width, pattern->height, ctx->h_p);
	return MCC_GPU_OK;
}

/*
 * The device work, events ev[0..4] between its stages: upload, padding
 * correction, the SAD kernels (bands of map rows, cancel polled between
 * them), keys, then the reduction or sort. *launches counts SAD launches.
 */
static mcc_gpu_code
sad_launch(mcc_sad_gpu *ctx, const mcc_image *target, const mcc_image *pattern, const sad_plan *pl,
		   const volatile int *cancel, int *launches, mcc_error *err)
{
	const uint32_t W = target->width,
				H = target->height,
				w = pattern->width,
				h = pattern->height;
	const sad_dims d = pl->d;
	const sad_variant *v = pl->v;
	size_t		tmp_bytes = pl->tmp_bytes;

	/* upload: zero the padded target, copy its rows; the pattern copies */
	CK(cudaEventRecord(ctx->ev[0], ctx->stream));
	CK(cudaMemsetAsync(ctx->d_t, 0, pl->tbytes, ctx->stream));
	CK(cudaMemcpy2DAsync(ctx->d_t, (size_t) d.tsw * 4, target->pixels, target->stride, W, H,
						 cudaMemcpyHostToDevice, ctx->stream));
	CK(cudaMemcpyAsync(ctx->d_p, ctx->h_p, pl->pwords * 4, cudaMemcpyHostToDevice, ctx->stream));
	CK(cudaEventRecord(ctx->ev[1], ctx->stream));
	{
		dim3		cgrid((d.nx + 127) / 128, (H + SAD_CORR_SEG - 1) / SAD_CORR_SEG);

		sad_corr_seg_kernel<<<cgrid, 128, 0, ctx->stream>>>
			((const uint8_t *) ctx->d_t, (size_t) d.tsw * 4, (int) H, (int) w, d.nx,
			 (uint32_t *) ctx->d_seg);
		CK(cudaGetLastError());
		sad_corr_scan_kernel<<<cgrid, 128, 0, ctx->stream>>>
			((const uint8_t *) ctx->d_t, (size_t) d.tsw * 4, (int) H, (int) w, d.nx,
			 (const uint32_t *) ctx->d_seg, (uint32_t *) ctx->d_v);
		CK(cudaGetLastError());
	}
	CK(cudaEventRecord(ctx->ev[2], ctx->stream));
	for (uint32_t yb = 0; yb < d.ny; yb += pl->band_rows)
	{
		uint32_t	ye = yb + pl->band_rows < d.ny ? yb + pl->band_rows : d.ny;
		dim3		grid(d.gx, (ye - yb + v->y - 1) / v->y);

		for (uint32_t rb = 0; rb < h; rb += pl->rows_max)
		{
			uint32_t	re = rb + pl->rows_max < h ? rb + pl->rows_max : h;
			size_t		smem = v->smem ? (size_t) (re - rb) * 16 : 0;

			v->fn<<<grid, SAD_BT, smem, ctx->stream>>>
				((const uint32_t *) ctx->d_t, d.tsw, (const uint32_t *) ctx->d_p, (int) h,
				 (int) d.nw, d.nx, yb, ye, (int) rb, (int) re,
				 (unsigned long long *) ctx->d_keys, rb > 0);
			CK(cudaGetLastError());
			(*launches)++;
		}
		if (cancel && ye < d.ny)
		{
			CK(cudaStreamSynchronize(ctx->stream));
			if (*cancel)
			{
				mcc_error_set(err, MCC_ERR_INTERNAL, "SAD search was cancelled");
				return MCC_GPU_CANCELLED;
			}
		}
	}
	CK(cudaEventRecord(ctx->ev[3], ctx->stream));
	{
		int			blocks = (int) ((pl->npos + 255) / 256);

		if (blocks > ctx->sm_count * 16)
			blocks = ctx->sm_count * 16;
		sad_key_kernel<<<blocks, 256, 0, ctx->stream>>>
			((unsigned long long *) ctx->d_keys, (const uint32_t *) ctx->d_v, d.nx, d.ny, (int) h);
		CK(cudaGetLastError());
	}
	if (pl->nwant == 1)
		CK(cub::DeviceReduce::Min(ctx->d_tmp, tmp_bytes, (unsigned long long *) ctx->d_keys,
								  (unsigned long long *) ctx->d_alt, (int) pl->npos, ctx->stream));
	else if (pl->nwant > 1)
		CK(cub::DeviceRadixSort::SortKeys(ctx->d_tmp, tmp_bytes, (unsigned long long *) ctx->d_keys,
										  (unsigned long long *) ctx->d_alt, (int) pl->npos, 0,
										  MCC_SAD_KEY_BITS, ctx->stream));
	CK(cudaEventRecord(ctx->ev[4], ctx->stream));
	return MCC_GPU_OK;
}

/* The best keys (and the map) back, event ev[5]; hits decoded, map keys to SADs. */
static mcc_gpu_code
sad_download(mcc_sad_gpu *ctx, const sad_plan *pl, mcc_sad_hit *hits, uint32_t *n_hits,
			 uint64_t *map, mcc_error *err)
{
	unsigned long long *keys = NULL;
	cudaError_t e;

	if (pl->nwant > 0)
	{
		keys = (unsigned long long *) malloc((size_t) pl->nwant * 8);
		if (keys == NULL)
		{
			mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
			return MCC_GPU_OOM;
		}
		CK(cudaMemcpyAsync(keys, ctx->d_alt, (size_t) pl->nwant * 8, cudaMemcpyDeviceToHost,
						   ctx->stream));
	}
	if (map)
		CK(cudaMemcpyAsync(map, ctx->d_keys, pl->npos * 8, cudaMemcpyDeviceToHost, ctx->stream));
	CK(cudaEventRecord(ctx->ev[5], ctx->stream));
	if ((e = cudaStreamSynchronize(ctx->stream)) != cudaSuccess)
	{
		free(keys);
		return fail(ctx, e, "cudaStreamSynchronize", err);
	}
	for (uint32_t i = 0; i < pl->nwant; i++)
	{
		uint32_t	pos = (uint32_t) (keys[i] & ((1ull << MCC_SAD_KEY_POS_BITS) - 1));

		hits[i].sad = keys[i] >> MCC_SAD_KEY_POS_BITS;
		hits[i].y = pos / pl->d.nx;
		hits[i].x = pos % pl->d.nx;
	}
	free(keys);
	*n_hits = pl->nwant;
	if (map)
		for (size_t i = 0; i < pl->npos; i++)
			map[i] >>= MCC_SAD_KEY_POS_BITS;
	return MCC_GPU_OK;
}

/* The stage times of the search just done (events ev[0..5]). */
static void
sad_timing(const mcc_sad_gpu *ctx, double t_start, int variant, int launches,
		   mcc_sad_gpu_timing *timing)
{
	memset(timing, 0, sizeof(*timing));
	(void) mcc_gpu_rt_add_ms(&timing->upload_ms, ctx->ev[0], ctx->ev[1]);
	(void) mcc_gpu_rt_add_ms(&timing->corr_ms, ctx->ev[1], ctx->ev[2]);
	(void) mcc_gpu_rt_add_ms(&timing->sad_ms, ctx->ev[2], ctx->ev[3]);
	(void) mcc_gpu_rt_add_ms(&timing->select_ms, ctx->ev[3], ctx->ev[4]);
	(void) mcc_gpu_rt_add_ms(&timing->download_ms, ctx->ev[4], ctx->ev[5]);
	timing->total_ms = mcc_cuda_now_ms() - t_start;
	timing->variant = variant;
	timing->launches = launches;
}

/* Search on the GPU: plan, buffers, device work, results. */
extern "C" mcc_gpu_code
mcc_sad_gpu_search(mcc_sad_gpu *ctx, const mcc_image *target, const mcc_image *pattern,
				   uint32_t k, mcc_sad_hit *hits, uint32_t *n_hits, uint64_t *map, int variant,
				   const volatile int *cancel, mcc_sad_gpu_timing *timing, mcc_error *err)
{
	const double t_start = mcc_cuda_now_ms();
	sad_plan	pl;
	int			launches = 0;
	mcc_gpu_code c;

	*n_hits = 0;
	if (ctx->lost.lost)
		return mcc_gpu_rt_usable(&ctx->lost, err);
	if ((c = sad_plan_make(ctx, target, pattern, k, variant, cancel, &pl, err)) != MCC_GPU_OK ||
		(c = sad_buffers(ctx, target, pattern, &pl, err)) != MCC_GPU_OK ||
		(c = sad_launch(ctx, target, pattern, &pl, cancel, &launches, err)) != MCC_GPU_OK ||
		(c = sad_download(ctx, &pl, hits, n_hits, map, err)) != MCC_GPU_OK)
		return c;
	if (timing)
		sad_timing(ctx, t_start, pl.variant, launches, timing);
	return MCC_GPU_OK;
}
