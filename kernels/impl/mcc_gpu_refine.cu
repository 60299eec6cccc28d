/*
 * mcc_gpu_refine.cu: refinement on the GPU (mcc_gpu_refine.h): the kernel,
 * one block per (probe, candidate) pair, and the host side of a call.
 *
 * The kernel's arithmetic is kernels/impl/mcc_refine_body.h, phase by phase;
 * here a phase is a call followed by __syncthreads(), a warp step (the
 * sort's short distances) a call followed by __syncwarp(). This file must be
 * built with -fmad=false (kernels/gpu.mk): the relaxation's sums and
 * products round as the CPU's do only without fused multiply-adds.
 *
 * A call: the host puts every probe and every candidate given as a
 * template into sides (cylinders in minutia order, unit vectors from
 * mcc_dm_sincos), sorts the pairs by partition (a gallery candidate is
 * scored on the device that holds it; candidates given as templates are
 * spread over the partitions) and by size class (the larger side up to 64,
 * 128 or 256 cylinders: the shared memory a block gets), uploads sides and
 * pairs once per partition, launches one grid per class, copies the scores
 * back and scatters them into the caller's order. Classes whose pairs may
 * not fit the shared key buffer (na * nb > kcap) or rho (n^2 > kcap) get
 * per-block scratch in global memory and a grid of resident blocks that
 * walk the pairs; the others get one block per pair.
 */
#include <stdlib.h>
#include <string.h>

#include "mcc_gpu_rt.h"
#include "mcc_gpu_int.h"
#include "mcc_gpu_refine_prep.h"

/* the driver of mcc_refine_body.h, as device code */
#define RB_DRIVER static __device__ __forceinline__
#define RB_PHASE(...) do { const int tid = (int) threadIdx.x; __VA_ARGS__; __syncthreads(); } while (0)
#define RB_WSTEP(...) do { const int tid = (int) threadIdx.x; __VA_ARGS__; __syncwarp(); } while (0)
#include "mcc_refine_body.h"

#define RF_MAX_THREADS 256
/*
 * 4 blocks of 256 threads per SM: at most 64 registers a thread, so 8
 * blocks of 128 (the default) fit in the registers as in the shared memory
 * of the common class (templates of 33 to 45 cylinders). Left to itself,
 * ptxas gives the kernel 74 to 80 registers since rho is computed for both
 * directions at once (rb_ph_rho), which would leave 6 blocks of 128 per SM.
 */
#define RF_MIN_BLOCKS 4

static_assert(RP_NCLASS == MCC_GPU_RF_CLASSES, "a stream and an event per size class");

/* The kernel: blocks take pairs blockIdx.x, + gridDim.x, ... */
__global__ void __launch_bounds__(RF_MAX_THREADS, RF_MIN_BLOCKS)
refine_kernel(rb_args args)
{
	extern __shared__ __align__(16) unsigned char smem[];
	const rb_args *a = &args;
	rb_ws		ws;
	int			nt = (int) blockDim.x;

	if (a->fault)
		*(volatile int *) (uintptr_t) a->fault = 0;	/* test hook: write to a bad address */
	rb_ws_carve(&ws, smem, a->nmax, a->kcap);
	RB_PHASE(rb_ph_init(&ws, a, tid, nt));
	for (uint32_t pi = blockIdx.x; pi < a->npairs; pi += gridDim.x)
		rb_pair(&ws, a, pi, blockIdx.x, nt);
}

int
mcc_gpu_refine_supported(int method)
{
	return rp_method_ok(method);
}

void
mcc_gpu_refine_last_timing(const mcc_gpu *g, mcc_gpu_refine_timing *t)
{
	*t = g->rtiming;
}

mcc_gpu_code
mcc_gpu_refine_tune(mcc_gpu *g, int threads, int kcap, mcc_error *err)
{
	if (threads != 0 && threads != 64 && threads != 128 && threads != 256)
		return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "refinement block of %d threads: use 64, 128 or 256", threads);
	if (kcap != 0 && (kcap < 64 || kcap > 8192 || (kcap & (kcap - 1)) != 0))
		return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "refinement key buffer of %d: a power of two from 64 to 8192", kcap);
	g->rf_threads = threads;
	g->rf_kcap = kcap;
	return MCC_GPU_OK;
}

void
mcc_gpu_refine_debug(mcc_gpu *g, double *last)
{
	g->rf_dbg = last;
}

/* Check a view against the context. */
static mcc_gpu_code
check_view(const mcc_gpu *g, const mcc_template_view *v, const char *what, uint32_t i, mcc_error *err)
{
	if (!v->profile || v->profile->id != g->profile->id)
		return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "%s %u has another profile than the GPU context", what, i);
	if (v->n_cyl < 0 || v->n_cyl > MCC_MAX_CYL || (v->n_cyl > 0 && v->words != 4))
		return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "%s %u has an invalid cylinder layout", what, i);
	return MCC_GPU_OK;
}

/* Grow a partition's call buffer. */
static mcc_gpu_code
ensure_buf(mcc_gpu *g, mcc_gpu_part *p, size_t bytes, mcc_error *err)
{
	cudaError_t e;

	if (bytes <= p->rf_cap)
		return MCC_GPU_OK;
	cudaFree(p->rf_buf);
	p->rf_bytes -= p->rf_cap;
	p->rf_buf = NULL;
	p->rf_cap = 0;
	if (bytes + bytes / 2 <= mcc_gpu_room(g, p))
		bytes += bytes / 2;		/* room to grow without reallocating */
	if (bytes > mcc_gpu_room(g, p))
		return mcc_gpu_rt_err(err, MCC_GPU_OOM,
						   "out of GPU memory: refinement needs %zu bytes on GPU %d, %zu are available",
						   bytes, p->dev, mcc_gpu_room(g, p));
	if ((e = cudaMalloc(&p->rf_buf, bytes)) != cudaSuccess)
		return mcc_gpu_fail(g, e, "refinement buffer allocation", p->dev, err);
	p->rf_cap = bytes;
	p->rf_bytes += bytes;
	return MCC_GPU_OK;
}

/*
 * The refinement's streams and events on a partition's device (its own, so
 * that a rescoring and a search of the context can be on the device at
 * once: mcc_gpu_set_wait_hook), the kernel's shared-memory attribute.
 */
static mcc_gpu_code
ensure_streams(mcc_gpu *g, mcc_gpu_part *p, mcc_error *err)
{
	cudaFuncAttributes fa;
	cudaError_t e;

	if (p->rf_ready)
		return MCC_GPU_OK;
	if ((e = cudaFuncGetAttributes(&fa, (const void *) refine_kernel)) != cudaSuccess ||
		(e = cudaFuncSetAttribute((const void *) refine_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
								  (int) (p->smem_optin - fa.sharedSizeBytes))) != cudaSuccess)
		return mcc_gpu_fail(g, e, "refinement kernel setup", p->dev, err);
	if (!p->rf_main && (e = cudaStreamCreateWithFlags(&p->rf_main, cudaStreamNonBlocking)) != cudaSuccess)
		return mcc_gpu_fail(g, e, "refinement stream creation", p->dev, err);
	for (int k = 0; k < 4; k++)
		if (!p->rf_tev[k] && (e = cudaEventCreate(&p->rf_tev[k])) != cudaSuccess)
			return mcc_gpu_fail(g, e, "refinement event creation", p->dev, err);
	for (int k = 0; k < RP_NCLASS; k++)
		if (!p->rf_st[k] && (e = cudaStreamCreateWithFlags(&p->rf_st[k], cudaStreamNonBlocking)) != cudaSuccess)
			return mcc_gpu_fail(g, e, "refinement stream creation", p->dev, err);
	for (int k = 0; k <= RP_NCLASS; k++)
		if (!p->rf_ev[k] && (e = cudaEventCreateWithFlags(&p->rf_ev[k], cudaEventDisableTiming)) != cudaSuccess)
			return mcc_gpu_fail(g, e, "refinement event creation", p->dev, err);
	p->rf_ready = 1;
	return MCC_GPU_OK;
}

/* Tables of the parameters and LUT_sqrt on a partition's device. */
static mcc_gpu_code
ensure_tabs(mcc_gpu *g, mcc_gpu_part *p, mcc_error *err)
{
	mcc_gpu_code rc;
	cudaError_t e;

	if ((rc = ensure_streams(g, p, err)) != MCC_GPU_OK)
		return rc;
	if (!p->rf_tabs)
	{
		uint32_t	sq[RB_LUT];

		if ((e = cudaMalloc(&p->rf_tabs, sizeof(mcc_sigmoid_tab) * 6)) != cudaSuccess ||
			(e = cudaMalloc(&p->rf_sqrt, 4 * RB_LUT)) != cudaSuccess)
			return mcc_gpu_fail(g, e, "refinement table allocation", p->dev, err);
		p->rf_bytes += sizeof(mcc_sigmoid_tab) * 6 + 4 * RB_LUT;
		for (int i = 0; i < RB_LUT; i++)
			sq[i] = i <= 256 ? mcc_lss_sqrt_fx(i) : 0;
		if ((e = cudaMemcpyAsync(p->rf_sqrt, sq, sizeof(sq), cudaMemcpyHostToDevice, p->rf_main)) != cudaSuccess ||
			(e = cudaStreamSynchronize(p->rf_main)) != cudaSuccess)
			return mcc_gpu_fail(g, e, "refinement table upload", p->dev, err);
		p->rf_tabs_gen = 0;
	}
	if (p->rf_tabs_gen != g->rf_tabs_gen)
	{
		if ((e = cudaMemcpyAsync(p->rf_tabs, g->rf_tab, sizeof(mcc_sigmoid_tab) * 6, cudaMemcpyHostToDevice,
								 p->rf_main)) != cudaSuccess ||
			(e = cudaStreamSynchronize(p->rf_main)) != cudaSuccess)
			return mcc_gpu_fail(g, e, "refinement table upload", p->dev, err);
		p->rf_tabs_gen = g->rf_tabs_gen;
	}
	return MCC_GPU_OK;
}

/* A CUDA call of partition p's work; a failure returns its code (the caller drains). */
#define CK(call, what) \
	do { if ((e = (call)) != cudaSuccess) return mcc_gpu_fail(g, e, what, p->dev, err); } while (0)

/*
 * The grid of each class on partition pi (one block per pair, or the
 * resident blocks walking the pairs when a block needs global scratch) and
 * the scratch, fewer resident blocks when the device lacks room.
 */
static mcc_gpu_code
rf_scratch(mcc_gpu *g, const rf_call *c, int pi, size_t *grid, size_t *slot_bytes, mcc_error *err)
{
	mcc_gpu_part *p = &g->part[pi];
	size_t		scr = 0;
	cudaError_t e;

	/* grids and per-block scratch (one buffer: the classes run one after the other) */
	for (int k = 0; k < RP_NCLASS; k++)
	{
		uint32_t	nmax = rp_class_nmax[k];
		uint32_t	kcap = g->rf_kcap ? (uint32_t) g->rf_kcap : rp_class_kcap[k];
		size_t		smem = rb_ws_carve(NULL, NULL, nmax, kcap);
		int			nb = 0;

		grid[k] = c->cnt[pi][k];
		slot_bytes[k] = A16(4 * c->gmax[pi][k]) + A16(8 * c->rmax[pi][k]);
		if (c->cnt[pi][k] == 0)
			continue;
		CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, refine_kernel, c->threads, smem), "occupancy");
		if (nb < 1)
			return mcc_gpu_rt_err(err, MCC_GPU_CUDA, "refinement needs %zu bytes of shared memory per block",
								  smem);
		if (pi == 0 && (k == 0 || g->rtiming.blocks_per_sm == 0))
			g->rtiming.blocks_per_sm = nb;
		if (slot_bytes[k])
		{
			size_t		resident = (size_t) p->sm_count * nb;

			if (grid[k] > resident)
				grid[k] = resident;
			if (grid[k] * slot_bytes[k] > scr)
				scr = grid[k] * slot_bytes[k];
		}
		else if (grid[k] > 0x7fffffffu)
			grid[k] = 0x7fffffffu;
	}
	if (scr > p->rf_scr_cap)
	{
		size_t		room;

		cudaFree(p->rf_scr);
		p->rf_bytes -= p->rf_scr_cap;
		p->rf_scr = NULL;
		p->rf_scr_cap = 0;
		room = mcc_gpu_room(g, p);
		if (scr > room)
		{
			/* fewer resident blocks, down to one */
			for (int k = 0; k < RP_NCLASS; k++)
				if (slot_bytes[k] && grid[k] * slot_bytes[k] > room)
					grid[k] = room / slot_bytes[k];
			scr = 0;
			for (int k = 0; k < RP_NCLASS; k++)
			{
				if (slot_bytes[k] && c->cnt[pi][k] && grid[k] == 0)
					return mcc_gpu_rt_err(err, MCC_GPU_OOM,
										  "out of GPU memory: refinement of a pair needs %zu bytes of scratch on GPU %d, %zu are available",
										  slot_bytes[k], p->dev, room);
				if (slot_bytes[k] && grid[k] * slot_bytes[k] > scr)
					scr = grid[k] * slot_bytes[k];
			}
		}
		CK(cudaMalloc(&p->rf_scr, scr), "refinement scratch allocation");
		p->rf_scr_cap = scr;
		p->rf_bytes += scr;
	}
	return MCC_GPU_OK;
}

/*
 * Partition pi's work on its stream: buffers, the upload of the common
 * part and its pairs, one launch per class, the scores back (events
 * rf_tev[0..3] on partition 0).
 */
static mcc_gpu_code
rf_queue(mcc_gpu *g, rf_call *c, int pi, mcc_error *err)
{
	mcc_gpu_part *p = &g->part[pi];
	rf_part    *q = &c->rp[pi];
	size_t		slot_bytes[RP_NCLASS];
	size_t		grid[RP_NCLASS];
	unsigned char *dbase;
	mcc_gpu_code rc;
	cudaError_t e;
	int			nside = 0;

	q->pairs_off = c->common;
	q->out_off = q->pairs_off + A16(sizeof(rb_pair_desc) * q->count);
	q->dbg_off = q->out_off + A16(4 * q->count);
	q->bytes = q->dbg_off + (g->rf_dbg ? A16(8 * q->count) : 0);
	CK(cudaSetDevice(p->dev), "device selection");
	if ((rc = ensure_buf(g, p, q->bytes, err)) != MCC_GPU_OK || (rc = ensure_tabs(g, p, err)) != MCC_GPU_OK ||
		(rc = rf_scratch(g, c, pi, grid, slot_bytes, err)) != MCC_GPU_OK)
		return rc;
	dbase = p->rf_buf;
	if (pi == 0)
		CK(cudaEventRecord(p->rf_tev[0], p->rf_main), "event");
	CK(cudaMemcpyAsync(dbase, g->rf_h, c->common, cudaMemcpyHostToDevice, p->rf_main), "refinement upload");
	CK(cudaMemcpyAsync(dbase + q->pairs_off, c->hpair + q->first, sizeof(rb_pair_desc) * q->count,
					   cudaMemcpyHostToDevice, p->rf_main), "refinement upload");
	if (pi == 0)
		CK(cudaEventRecord(p->rf_tev[1], p->rf_main), "event");
	/*
	 * Classes without global scratch run side by side, each on its own
	 * stream after the upload (a small class of big templates would
	 * otherwise leave most of the device idle at its end); the others share
	 * the scratch buffer and run in turn on the partition's stream.
	 */
	for (int k = 0; k < RP_NCLASS; k++)
		nside += c->cnt[pi][k] > 0 && slot_bytes[k] == 0;
	if (nside > 1)
		CK(cudaEventRecord(p->rf_ev[RP_NCLASS], p->rf_main), "event");
	/* the classes of the biggest templates (the longest blocks) first */
	for (int k = RP_NCLASS - 1; k >= 0; k--)
	{
		rb_args		a;
		void	   *args[1] = {&a};
		size_t		first = 0;
		cudaStream_t st = p->rf_main;

		if (c->cnt[pi][k] == 0)
			continue;
		if (nside > 1 && slot_bytes[k] == 0)
		{
			st = p->rf_st[k];
			CK(cudaStreamWaitEvent(st, p->rf_ev[RP_NCLASS], 0), "refinement stream wait");
		}
		for (int kk = 0; kk < k; kk++)
			first += c->cnt[pi][kk];
		memset(&a, 0, sizeof(a));
		a.pairs = (const rb_pair_desc *) (dbase + q->pairs_off) + first;
		a.npairs = (uint32_t) c->cnt[pi][k];
		a.cyl = (const rb_cyl *) dbase;
		a.sides = (const rb_side *) (dbase + c->off_sides);
		a.gal.lo = (const uint32_t *) p->lo;
		a.gal.hi = (const uint32_t *) p->hi;
		a.gal.meta = p->meta;
		a.gal.tcoff = p->tcoff;
		a.gal.tncyl = p->tncyl;
		a.gal.sslot = p->sslot;
		a.gal.rperm = p->rperm;
		a.gal.rxy = p->rxy;
		a.gal.ruix = p->ruix;
		a.gal.utab = p->utab;
		a.tabs = p->rf_tabs;
		a.sqrt_tab = p->rf_sqrt;
		a.plan = c->plan;
		a.delta = g->profile->delta_theta;
		a.nmax = rp_class_nmax[k];
		a.kcap = g->rf_kcap ? (uint32_t) g->rf_kcap : rp_class_kcap[k];
		if (slot_bytes[k])
		{
			size_t		gb = A16(4 * c->gmax[pi][k]);

			a.gscr = c->gmax[pi][k] ? (float *) p->rf_scr : NULL;
			a.gstride = c->gmax[pi][k] ? slot_bytes[k] / 4 : 0;
			a.rscr = c->rmax[pi][k] ? (double *) (p->rf_scr + gb) : NULL;
			a.rstride = c->rmax[pi][k] ? slot_bytes[k] / 8 : 0;
		}
		a.out = (float *) (dbase + q->out_off);
		a.dbg = g->rf_dbg ? (double *) (dbase + q->dbg_off) : NULL;
		a.fault = pi == 0 && g->fault_next ? 16 : 0;
		g->fault_next = pi == 0 ? 0 : g->fault_next;
		CK(cudaLaunchKernel((const void *) refine_kernel, dim3((unsigned) grid[k]), dim3(c->threads), args,
							rb_ws_carve(NULL, NULL, a.nmax, a.kcap), st), "refinement kernel launch");
		g->rtiming.launches++;
		if (st != p->rf_main)
		{
			CK(cudaEventRecord(p->rf_ev[k], st), "event");
			CK(cudaStreamWaitEvent(p->rf_main, p->rf_ev[k], 0), "refinement stream wait");
		}
	}
	if (pi == 0)
		CK(cudaEventRecord(p->rf_tev[2], p->rf_main), "event");
	CK(cudaMemcpyAsync(c->hout + q->first, dbase + q->out_off, 4 * q->count, cudaMemcpyDeviceToHost, p->rf_main),
	   "score copy");
	if (g->rf_dbg)
		CK(cudaMemcpyAsync(c->hdbg + q->first, dbase + q->dbg_off, 8 * q->count, cudaMemcpyDeviceToHost, p->rf_main),
		   "score copy");
	if (pi == 0)
		CK(cudaEventRecord(p->rf_tev[3], p->rf_main), "event");
	return MCC_GPU_OK;
}

/* Wait for partition pi's work; its stage times on partition 0. */
static mcc_gpu_code
rf_wait(mcc_gpu *g, int pi, mcc_error *err)
{
	mcc_gpu_part *p = &g->part[pi];
	mcc_gpu_code rc = mcc_gpu_part_wait(g, p, p->rf_main, "refinement", err);
	cudaError_t e;

	if (rc != MCC_GPU_OK || pi != 0)
		return rc;
	CK(mcc_gpu_rt_add_ms(&g->rtiming.h2d_ms, p->rf_tev[0], p->rf_tev[1]), "timing");
	CK(mcc_gpu_rt_add_ms(&g->rtiming.kernel_ms, p->rf_tev[1], p->rf_tev[2]), "timing");
	CK(mcc_gpu_rt_add_ms(&g->rtiming.d2h_ms, p->rf_tev[2], p->rf_tev[3]), "timing");
	return MCC_GPU_OK;
}
#undef CK

mcc_gpu_code
mcc_gpu_refine(mcc_gpu *g, const mcc_template_view *probes, int nq,
			   const mcc_template_view *cands, uint32_t ncand,
			   const mcc_gpu_pair *pairs, size_t npairs, int method,
			   const mcc_match_params *mp, float *scores, mcc_error *err)
{
	double		t0 = mcc_cuda_now_ms();
	mcc_gpu_code rc = MCC_GPU_OK;
	rf_call    *c;

	memset(&g->rtiming, 0, sizeof(g->rtiming));
	if (g->lost.lost)
		return mcc_gpu_rt_usable(&g->lost, err);
	if (!rp_method_ok(method))
		return mcc_gpu_rt_err(err, MCC_GPU_UNSUPPORTED, "method \"%s\" is not computed on the GPU",
							  mcc_method_name(method) ? mcc_method_name(method) : "?");
	if (mp == NULL)
		mp = mcc_match_params_std();
	if (!mp->prepared)
		return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "matching parameters are not prepared");
	if (nq < 0 || (nq > 0 && !probes) || (ncand > 0 && !cands) || (npairs > 0 && (!pairs || !scores)))
		return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "invalid refinement arguments");
	if (npairs == 0)
		return MCC_GPU_OK;
	for (int q = 0; q < nq; q++)
		if ((rc = check_view(g, &probes[q], "probe", (uint32_t) q, err)) != MCC_GPU_OK)
			return rc;
	for (uint32_t k = 0; k < ncand; k++)
		if ((rc = check_view(g, &cands[k], "candidate", k, err)) != MCC_GPU_OK)
			return rc;
	if ((c = (rf_call *) calloc(1, sizeof(*c))) == NULL)
		return mcc_gpu_rt_err(err, MCC_GPU_OOM, "out of host memory");
	c->probes = probes;
	c->nq = nq;
	c->cands = cands;
	c->ncand = ncand;
	c->pairs = pairs;
	c->npairs = npairs;
	c->method = method;
	c->mp = mp;
	c->scores = scores;
	c->nsides = (uint32_t) nq + ncand;
	c->threads = g->rf_threads ? g->rf_threads : 128;

	/* the host's part: pairs classified, the host image, the pairs placed */
	if ((rc = rf_prepare(g, c, err)) != MCC_GPU_OK)
		goto out;
	g->rtiming.prep_ms = mcc_cuda_now_ms() - t0;
	g->rtiming.pairs = c->ndev;

	/* per partition: buffers, uploads, one launch per class, scores back */
	for (int pi = 0; pi < g->nparts; pi++)
		if (c->rp[pi].count > 0 && (rc = rf_queue(g, c, pi, err)) != MCC_GPU_OK)
			goto fail;
	/* wait (the caller's lock may be released meanwhile), then collect */
	{
		uint32_t	busy = 0;

		for (int pi = 0; pi < g->nparts; pi++)
			busy |= (uint32_t) (c->rp[pi].count > 0) << pi;
		mcc_gpu_wait_outside(g, true, busy);
	}
	for (int pi = 0; pi < g->nparts; pi++)
		if (c->rp[pi].count > 0 && (rc = rf_wait(g, pi, err)) != MCC_GPU_OK)
			goto fail;
	for (size_t j = 0; j < c->ndev; j++)
	{
		scores[c->idx[j]] = c->hout[j];
		if (g->rf_dbg)
			g->rf_dbg[c->idx[j]] = c->hdbg[j];
	}
	g->rtiming.total_ms = mcc_cuda_now_ms() - t0;
	goto out;
fail:
	if (rc != MCC_GPU_STICKY)
		mcc_gpu_drain(g);
out:
	rf_call_free(c);
	return rc;
}
