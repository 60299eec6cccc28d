/*
 * mcc_gpu_context.cu: device discovery, contexts, errors, memory.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_gpu_rt.h"
#include "mcc_gpu_int.h"
#include "mcc_lss.h"

/* Record a CUDA failure (the runtime's translation); a sticky one marks the context lost. */
mcc_gpu_code
mcc_gpu_fail(mcc_gpu *g, cudaError_t e, const char *what, int dev, mcc_error *err)
{
	return mcc_gpu_rt_fail(g ? &g->lost : NULL, e, what, dev, err);
}

/* Select p's device and wait for its stream st; a failure is recorded as mcc_gpu_fail does. */
mcc_gpu_code
mcc_gpu_part_wait(mcc_gpu *g, const mcc_gpu_part *p, cudaStream_t st, const char *what, mcc_error *err)
{
	cudaError_t e;

	if ((e = cudaSetDevice(p->dev)) != cudaSuccess)
		return mcc_gpu_fail(g, e, "device selection", p->dev, err);
	if ((e = cudaStreamSynchronize(st)) != cudaSuccess)
		return mcc_gpu_fail(g, e, what, p->dev, err);
	return MCC_GPU_OK;
}

/* Count devices; never crashes without a driver. */
mcc_gpu_code
mcc_gpu_probe(int *count, mcc_gpu_devinfo *info, int max, mcc_error *err)
{
	int			n = 0;
	mcc_gpu_code rc;

	*count = 0;
	if ((rc = mcc_gpu_rt_count(&n, err)) != MCC_GPU_OK)
		return rc;
	for (int i = 0; info && i < n && i < max; i++)
		if ((rc = mcc_gpu_rt_describe(i, &info[i], err)) != MCC_GPU_OK)
			return rc;
	*count = n;
	return MCC_GPU_OK;
}

/* Open a context on a list of devices. */
mcc_gpu_code
mcc_gpu_open(const int *devices, int ndev, const mcc_profile *prof,
			 const mcc_gpu_options *opt, mcc_gpu **out, mcc_error *err)
{
	mcc_gpu    *g;
	int			count = 0;
	mcc_gpu_code rc;

	*out = NULL;
	if (!prof || prof->masks || prof->words != 4 || prof->nbits > 255)
		return mcc_gpu_rt_err(err, MCC_GPU_UNSUPPORTED,
						   "profile \"%s\" is not supported on the GPU",
						   prof ? prof->name : "(null)");
	if (ndev < 1 || ndev > MCC_GPU_MAX_DEVICES)
		return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "number of GPU partitions %d is out of range", ndev);
	if (opt && (opt->variant < 0 || opt->variant >= MCC_GPU_VARIANT_COUNT))
		return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "unknown GPU kernel variant %d", opt->variant);
	if ((rc = mcc_gpu_probe(&count, NULL, 0, err)) != MCC_GPU_OK)
		return rc;
	for (int i = 0; i < ndev; i++)
		if (devices[i] < 0 || devices[i] >= count)
			return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "GPU %d does not exist (%d found)",
							   devices[i], count);
	g = (mcc_gpu *) calloc(1, sizeof(mcc_gpu));
	if (!g)
		return mcc_gpu_rt_err(err, MCC_GPU_OOM, "out of host memory");
	g->profile = prof;
	if (opt)
		g->opt = *opt;
	if (g->opt.max_batch <= 0)
		g->opt.max_batch = 32;

	mcc_lss_init();
	for (int i = 0; i < MCC_GPU_LUT; i++)
		g->sqrt_fx[i] = i <= 256 ? mcc_lss_sqrt_fx(i) : 0;
	for (int i = 0; i < MCC_GPU_LUT; i++)
	{
		int			np = i <= MCC_MAX_CYL ? mcc_lss_np(prof, i) : 0;

		g->lutp[i] = (uint8_t) (np < 0 ? 0 : np > 255 ? 255 : np);
	}

	g->rcp_tab = (uint32_t *) malloc(sizeof(uint32_t) * 257 * MCC_GPU_TROW);
	if (!g->rcp_tab)
	{
		mcc_gpu_close(g);
		return mcc_gpu_rt_err(err, MCC_GPU_OOM, "out of host memory");
	}
	for (int a = 0; a <= 256; a++)
		for (int b = 0; b < MCC_GPU_TROW; b++)
			g->rcp_tab[a * MCC_GPU_TROW + b] = b <= 256 ? mcc_lss_rcp(g->sqrt_fx[a] + g->sqrt_fx[b]) : 0;

	g->nparts = ndev;
	for (int i = 0; i < ndev; i++)
	{
		mcc_gpu_part *p = &g->part[i];
		mcc_gpu_rt_dev d;
		cudaError_t e;

		p->dev = devices[i];
		if ((rc = mcc_gpu_rt_open(p->dev, 8, "search", &d, err)) != MCC_GPU_OK)
		{
			mcc_gpu_close(g);
			return rc;
		}
		p->sm_count = d.sm_count;
		p->smem_optin = d.smem_optin;
		if ((e = cudaStreamCreateWithFlags(&p->st, cudaStreamNonBlocking)) != cudaSuccess)
		{
			rc = mcc_gpu_fail(g, e, "stream creation", p->dev, err);
			mcc_gpu_close(g);
			return rc;
		}
		for (int k = 0; k < 6; k++)
			if ((e = cudaEventCreate(&p->ev[k])) != cudaSuccess)
			{
				rc = mcc_gpu_fail(g, e, "event creation", p->dev, err);
				mcc_gpu_close(g);
				return rc;
			}
		/* every variant, and its FP64 twin (the fallback for large probes) */
		for (int v = 1; v < 2 * MCC_GPU_VARIANT_COUNT; v++)
			for (int z = 0; z < 2; z++)
			{
				int			r, c, l, b, tc;
				const void *fn;
				cudaFuncAttributes fa;

				mcc_gpu_variant_params(v % MCC_GPU_VARIANT_COUNT, &r, &c, &l, &b, &tc);
				fn = mcc_gpu_match_kernel(v >= MCC_GPU_VARIANT_COUNT ? MCC_RCP_FP64 : r, c, z, l, b, tc);
				if (!fn)
					continue;
				/* static shared memory counts against the opt-in limit */
				if ((e = cudaFuncGetAttributes(&fa, fn)) != cudaSuccess ||
					(e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
											  (int) (p->smem_optin - fa.sharedSizeBytes))) != cudaSuccess)
				{
					rc = mcc_gpu_fail(g, e, "kernel setup", p->dev, err);
					mcc_gpu_close(g);
					return rc;
				}
			}
	}
	*out = g;
	return MCC_GPU_OK;
}

/* Release the refinement records and unit vectors of a partition. */
void
mcc_gpu_part_free_refine(mcc_gpu_part *p)
{
	mcc_gpu_rt_free(p->rperm, p->rxy, p->ruix, p->utab);
	p->gallery_bytes -= (size_t) p->cap_ref * 9 + (size_t) p->cap_utab * 16;
	p->cap_ref = 0;
	p->cap_utab = 0;
	p->n_utab = 0;
	p->n_ushared = 0;
}

/* Release the gallery arrays of a partition. */
void
mcc_gpu_part_free_gallery(mcc_gpu_part *p)
{
	mcc_gpu_part_free_refine(p);
	mcc_gpu_rt_free(p->tcoff, p->sslot);
	p->cap_tco = p->cap_rc = p->n_rc = 0;
	mcc_gpu_rt_free(p->lo, p->hi, p->meta, p->tiles, p->tncyl, p->alive, p->d_gidx, p->d_lid);
	p->cap_cyl = p->cap_tiles = p->cap_tpl = 0;
	p->n_cyl = p->n_tiles = p->n_tpl = 0;
	p->gallery_bytes = 0;
	mcc_gpu_rt_free_malloc(p->h_tcoff, p->gidx, p->lid, p->tile_off);
}

/* Release the selection buffers of a partition, sized by sc_q and sc_tpl. */
void
mcc_gpu_part_free_select(mcc_gpu_part *p)
{
	mcc_gpu_rt_free(p->scores, p->cand, p->sorted, p->schist, p->small, p->cub_tmp);
	mcc_gpu_rt_free_host(p->h_small);
	p->sc_q = 0;
	p->sc_tpl = 0;
}

/* Release the refinement scratch of a partition. */
void
mcc_gpu_part_free_rscratch(mcc_gpu_part *p)
{
	mcc_gpu_rt_free(p->rf_buf, p->rf_scr, p->rf_tabs, p->rf_sqrt);
	p->rf_bytes = 0;
	p->rf_cap = p->rf_scr_cap = 0;
	p->rf_tabs_gen = 0;
}

/* Release the search scratch of a partition. */
void
mcc_gpu_part_free_scratch(mcc_gpu_part *p)
{
	mcc_gpu_part_free_rscratch(p);
	mcc_gpu_order_free(p);
	mcc_gpu_part_free_select(p);
	mcc_gpu_rt_free(p->blob, p->d_hits);
	mcc_gpu_rt_free_host(p->h_hits);
	p->blob_cap = p->cub_bytes = p->hits_cap = 0;
	p->scratch_bytes = 0;
}

/* Release everything. */
void
mcc_gpu_close(mcc_gpu *g)
{
	if (!g)
		return;
	mcc_gpu_rstage_free(g);		/* its copies in flight first */
	for (int i = 0; i < g->nparts; i++)
	{
		mcc_gpu_part *p = &g->part[i];

		if (cudaSetDevice(p->dev) != cudaSuccess)
			continue;
		mcc_gpu_part_free_gallery(p);
		mcc_gpu_part_free_scratch(p);
		for (int k = 0; k < 6; k++)
			if (p->ev[k])
				cudaEventDestroy(p->ev[k]);
		if (p->st)
			cudaStreamDestroy(p->st);
		if (p->rf_main)
			cudaStreamDestroy(p->rf_main);
		for (int k = 0; k < 4; k++)
			if (p->rf_tev[k])
				cudaEventDestroy(p->rf_tev[k]);
		for (int k = 0; k < MCC_GPU_RF_CLASSES; k++)
			if (p->rf_st[k])
				cudaStreamDestroy(p->rf_st[k]);
		for (int k = 0; k <= MCC_GPU_RF_CLASSES; k++)
			if (p->rf_ev[k])
				cudaEventDestroy(p->rf_ev[k]);
	}
	(void) cudaGetLastError();
	cudaFreeHost(g->h_blob);
	cudaFreeHost(g->rf_h);
	rp_utab_free(&g->utab);
	free(g->ids);
	free(g->tref);
	free(g->rcp_tab);
	free(g);
}

void
mcc_gpu_set_wait_hook(mcc_gpu *g, mcc_gpu_wait_hook fn, void *arg)
{
	if (!g)
		return;
	g->wait_hook = fn;
	g->wait_arg = arg;
}

void
mcc_gpu_wait_outside(mcc_gpu *g, bool refine, uint32_t parts)
{
	if (g->wait_hook)
		g->wait_hook(g->wait_arg, 1);
	for (int i = 0; i < g->nparts; i++)
		if ((parts >> i & 1) && cudaSetDevice(g->part[i].dev) == cudaSuccess)
			(void) cudaStreamSynchronize(refine ? g->part[i].rf_main : g->part[i].st);
	if (g->wait_hook)
		g->wait_hook(g->wait_arg, 0);
}

/* Bytes the context may still take on p's device. */
size_t
mcc_gpu_room(mcc_gpu *g, mcc_gpu_part *p)
{
	size_t		fr = 0, tot = 0, used = 0;

	cudaSetDevice(p->dev);
	if (cudaMemGetInfo(&fr, &tot) != cudaSuccess)
	{
		(void) cudaGetLastError();
		return 0;
	}
	if (g->opt.mem_limit == 0)
		return fr;
	for (int i = 0; i < g->nparts; i++)
		if (g->part[i].dev == p->dev)
			used += g->part[i].gallery_bytes + g->part[i].scratch_bytes + g->part[i].rf_bytes;
	if (used >= g->opt.mem_limit)
		return 0;
	return g->opt.mem_limit - used < fr ? g->opt.mem_limit - used : fr;
}

/* Templates given so far. */
uint32_t
mcc_gpu_size(const mcc_gpu *g)
{
	return g ? g->n_tpl : 0;
}

/* Memory per partition. */
mcc_gpu_code
mcc_gpu_memory(mcc_gpu *g, mcc_gpu_meminfo *info, int max, int *n, mcc_error *err)
{
	*n = 0;
	if (g->lost.lost)
		return mcc_gpu_rt_usable(&g->lost, err);
	for (int i = 0; i < g->nparts && i < max; i++)
	{
		mcc_gpu_part *p = &g->part[i];
		cudaError_t e;

		memset(&info[i], 0, sizeof(info[i]));
		info[i].ordinal = p->dev;
		info[i].n_tpl = p->n_tpl;
		info[i].n_cyl = p->n_cyl;
		info[i].gallery_bytes = p->gallery_bytes;
		info[i].scratch_bytes = p->scratch_bytes + p->rf_bytes;
		if ((e = cudaSetDevice(p->dev)) != cudaSuccess ||
			(e = cudaMemGetInfo(&info[i].dev_free, &info[i].dev_total)) != cudaSuccess)
			return mcc_gpu_fail(g, e, "memory query", p->dev, err);
		*n = i + 1;
	}
	return MCC_GPU_OK;
}

/* Stage times of the last search. */
void
mcc_gpu_last_timing(const mcc_gpu *g, mcc_gpu_timing *t)
{
	*t = g->timing;
}

/* Name of a variant. */
const char *
mcc_gpu_variant_name(int variant)
{
	static const char *const names[] = {
		"default", "fp64-csa2", "fp64-csa4", "table-csa2", "table-csa4",
		"blk-fp64-csa2", "blk-fp64-csa4", "blk-table-csa2", "blk-table-csa4",
		"blk-fp64-csa2-x2", "blk-fp64-csa4-x2", "blk-table-csa2-x2", "blk-table-csa4-x2",
		"tc-table", "tc-fp64", "tc-table-sp", "tc-table-w10", "tc-table-w10-sp",
		"tc-lean", "tc-lean-u4"
	};

	return variant >= 0 && variant < MCC_GPU_VARIANT_COUNT ? names[variant] : "unknown";
}

/* Test hook: the next match kernel of partition 0 faults. */
mcc_gpu_code
mcc_gpu_debug_fault(mcc_gpu *g, mcc_error *err)
{
	if (g->lost.lost)
		return mcc_gpu_rt_usable(&g->lost, err);
	g->fault_next = 1;
	return MCC_GPU_OK;
}
