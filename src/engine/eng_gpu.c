/*
 * eng_gpu.c: the engine's GPU path (eng_gpu.h): the devices, the state
 * shared by every cache's mirror, what a failure turns off, statistics and
 * the tests' hooks. A cache's copy on the devices is eng_gpu_mirror.c's,
 * GPU passes eng_gpu_search.c's, rescoring eng_gpu_refine.c's. Built
 * without MCC_ENGINE_GPU, only the stubs at the end exist and the engine
 * never touches CUDA.
 */
#include "eng_gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eng_cache.h"
#include "eng_log.h"

#ifdef MCC_ENGINE_GPU

#include <dlfcn.h>

#include "eng_gpu_int.h"

bool
eng_gpu_built(void)
{
	return true;
}

/*
 * Why a probe found no GPU, in words for the server log. cudart reports
 * "CUDA driver version is insufficient" both where no NVIDIA driver is
 * installed (the usual CPU-only server) and where the driver is too old for
 * this runtime: libcuda.so.1 being loadable tells the two apart.
 */
static const char *
no_gpu_reason(mcc_gpu_code code)
{
	void	   *libcuda;

	switch (code)
	{
		case MCC_GPU_NO_DEVICE:
			return "no GPU found (the NVIDIA driver reports no device)";
		case MCC_GPU_NO_DRIVER:
			libcuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
			if (libcuda == NULL)
				return "no GPU found (no NVIDIA driver is installed)";
			dlclose(libcuda);
			return "no usable GPU (the NVIDIA driver is older than this engine's CUDA runtime needs)";
		default:
			return "no usable GPU (the CUDA device probe failed)";
	}
}

eng_gpu *
eng_gpu_start(eng_gpu_mode mode, uint64_t mem_limit, int partitions, int cpu_threads)
{
	mcc_gpu_devinfo info[MCC_GPU_MAX_DEVICES];
	eng_log_level miss = mode == ENG_GPU_ON ? ENG_LOG_ERROR : ENG_LOG_INFO;
	mcc_error	err;
	mcc_gpu_code code;
	int			n = 0;
	eng_gpu    *g;

	if (mode == ENG_GPU_OFF)
	{
		eng_log(ENG_LOG_INFO, "GPU path off: searching on %d CPU threads", cpu_threads);
		return NULL;
	}
	mcc_error_clear(&err);
	if ((code = mcc_gpu_probe(&n, info, MCC_GPU_MAX_DEVICES, &err)) != MCC_GPU_OK)
	{
		eng_log(miss, "%s: searching on %d CPU threads", no_gpu_reason(code), cpu_threads);
		eng_log(ENG_LOG_DEBUG, "CUDA device probe: %s", err.message);
		return NULL;
	}
	g = calloc(1, sizeof(*g));
	if (g == NULL)
	{
		eng_log(ENG_LOG_WARNING, "out of memory for the GPU state: searching on %d CPU threads",
				cpu_threads);
		return NULL;
	}
	for (int i = 0; i < n && i < MCC_GPU_MAX_DEVICES; i++)
	{
		if (info[i].cc_major < 8 || info[i].ordinal >= MCC_GPU_MAX_DEVICES)
		{
			eng_log(ENG_LOG_INFO, "GPU %d (%s, compute capability %d.%d) is not used",
					info[i].ordinal, info[i].name, info[i].cc_major, info[i].cc_minor);
			continue;
		}
		g->dev[g->ndev++] = info[i];
	}
	if (g->ndev == 0)
	{
		eng_log(miss, "no usable GPU (no device of compute capability 8.0 or later): "
				"searching on %d CPU threads", cpu_threads);
		free(g);
		return NULL;
	}
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->idle, NULL);
	g->mem_limit = mem_limit;
	g->build_threads = cpu_threads > 0 ? cpu_threads : 1;
	g->nparts = partitions > 0 ?
		(partitions < MCC_GPU_MAX_DEVICES ? partitions : MCC_GPU_MAX_DEVICES) : g->ndev;
	for (int i = 0; i < g->nparts; i++)
		g->parts[i] = g->dev[i % g->ndev].ordinal;
	if (g->ndev == 1)
		snprintf(g->name, sizeof(g->name), "%s", g->dev[0].name);
	else
		snprintf(g->name, sizeof(g->name), "%d x %s", g->ndev, g->dev[0].name);
	for (int i = 0; i < g->ndev; i++)
		eng_log(ENG_LOG_INFO, "GPU %d: %s, compute capability %d.%d, %d SMs, %.1f GB (%.1f GB free)",
				g->dev[i].ordinal, g->dev[i].name, g->dev[i].cc_major, g->dev[i].cc_minor,
				g->dev[i].sm_count, (double) g->dev[i].mem_total / 1e9,
				(double) g->dev[i].mem_free / 1e9);
	eng_log(ENG_LOG_INFO, "GPU path on: %d device(s), %d partition(s) per gallery, "
			"device memory limit %llu bytes per device (0: what is free)",
			g->ndev, g->nparts, (unsigned long long) mem_limit);
	return g;
}

void
eng_gpu_stop(eng_gpu *g)
{
	if (g == NULL)
		return;
	eng_gpu_log_totals(g);
	pthread_cond_destroy(&g->idle);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

bool
eng_gpu_usable(const eng_gpu *g)
{
	return g != NULL && !atomic_load(&((eng_gpu *) g)->broken);
}

bool
eng_gpu_wants(const eng_gpu *g, const eng_cache *c)
{
	return eng_gpu_wants_rows(g, c) && eng_cache_searchable(c) > 0;
}

bool
eng_gpu_wants_rows(const eng_gpu *g, const eng_cache *c)
{
	return eng_gpu_usable(g) && c != NULL && c->profile->id == MCC_PROFILE_GPU2015 &&
		c->soa.n_tpl > 0 &&
		(c->gpu == NULL || (!atomic_load(&c->gpu->failed) && !atomic_load(&c->gpu->building)));
}

bool
eng_gpu_disable_all(eng_gpu *g)
{
	if (g == NULL)
		return false;
	atomic_store(&g->broken, true);
	if (g->broken_logged)
		return false;
	g->broken_logged = true;
	return true;
}

void
eng_gpu_get_stats(const eng_gpu *g, eng_gpu_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (g == NULL)
		return;
	pthread_mutex_lock(&((eng_gpu *) g)->lock);
	*st = g->stats;
	pthread_mutex_unlock(&((eng_gpu *) g)->lock);
}

void
eng_gpu_devices(const eng_gpu *g, int max, int *n, int *ordinals, char (*names)[64])
{
	*n = 0;
	if (g == NULL)
		return;
	for (int i = 0; i < g->ndev && *n < max; i++, (*n)++)
	{
		ordinals[i] = g->dev[i].ordinal;
		snprintf(names[i], 64, "%s", g->dev[i].name);
	}
}

bool
eng_gpu_test_scores(eng_gpu *g, eng_cache *c, const uint8_t *tpl, uint32_t len,
					bool fresh, float *scores, mcc_error *err)
{
	mcc_template_view v;
	mcc_gpu    *ctx = NULL;
	mcc_gpu_code rc;

	if (g == NULL || mcc_template_open(tpl, len, &v, err) != MCC_OK)
		return false;
	if (!fresh && !eng_gpu_attach(g, c))
		return false;
	pthread_mutex_lock(&g->lock);
	if (atomic_load(&g->broken))
		rc = MCC_GPU_STICKY;
	else if (fresh)
	{
		rc = eng_gpu_open_ctx(g, c, &ctx, err);
		if (rc == MCC_GPU_OK)
			rc = mcc_gpu_upload(ctx, &c->soa, err);
		if (rc == MCC_GPU_OK)
			rc = eng_gpu_remove_purged(g, ctx, c, err);
		if (rc == MCC_GPU_OK)
			rc = mcc_gpu_score_all(ctx, &v, 1, scores, err);
		mcc_gpu_close(ctx);
	}
	else
	{
		rc = eng_gpu_sync_mirror(g, c->gpu, c, err);
		if (rc == MCC_GPU_OK)
		{
			eng_gpu_quiesce(g, c->gpu);	/* a pass's search uses the same buffers */
			eng_gpu_busy(g, c->gpu, true);
			rc = mcc_gpu_score_all(c->gpu->ctx, &v, 1, scores, err);
			eng_gpu_busy(g, c->gpu, false);
		}
		eng_gpu_update_bytes(g, c->gpu);
	}
	pthread_mutex_unlock(&g->lock);
	return rc == MCC_GPU_OK;
}

bool
eng_gpu_test_fault(eng_gpu *g, eng_cache *c)
{
	mcc_error	err;
	bool		ok = false;

	if (g == NULL || c->gpu == NULL)
		return false;
	pthread_mutex_lock(&g->lock);
	if (c->gpu->ctx != NULL)
		ok = mcc_gpu_debug_fault(c->gpu->ctx, &err) == MCC_GPU_OK;
	pthread_mutex_unlock(&g->lock);
	return ok;
}

/* Set an injection slot of g to the library's code for fault. */
static void
inject(eng_gpu *g, mcc_gpu_code *slot, eng_gpu_fault fault)
{
	if (g == NULL)
		return;
	pthread_mutex_lock(&g->lock);
	*slot = fault == ENG_GPU_FAULT_CUDA ? MCC_GPU_CUDA :
		fault == ENG_GPU_FAULT_PROBE ? MCC_GPU_INVALID : MCC_GPU_OOM;
	pthread_mutex_unlock(&g->lock);
}

void
eng_gpu_test_inject(eng_gpu *g, eng_gpu_fault fault)
{
	inject(g, g ? &g->inject : NULL, fault);
}

void
eng_gpu_test_inject_refine(eng_gpu *g, eng_gpu_fault fault)
{
	inject(g, g ? &g->inject_refine : NULL, fault);
}

#else							/* !MCC_ENGINE_GPU */

/*
 * Built without nvcc: no GPU path. Nothing here allocates a mirror, so the
 * functions that take one are never reached with one.
 */
bool
eng_gpu_built(void)
{
	return false;
}

eng_gpu *
eng_gpu_start(eng_gpu_mode mode, uint64_t mem_limit, int partitions, int cpu_threads)
{
	if (mode != ENG_GPU_OFF)
		eng_log(mode == ENG_GPU_ON ? ENG_LOG_ERROR : ENG_LOG_INFO,
				"this mcc_engine was built without GPU support: searching on %d CPU threads",
				cpu_threads);
	return NULL;
}

void
eng_gpu_stop(eng_gpu *g)
{
}

bool
eng_gpu_usable(const eng_gpu *g)
{
	return false;
}

bool
eng_gpu_wants(const eng_gpu *g, const eng_cache *c)
{
	return false;
}

bool
eng_gpu_wants_rows(const eng_gpu *g, const eng_cache *c)
{
	return false;
}

void
eng_gpu_test_inject_refine(eng_gpu *g, eng_gpu_fault fault)
{
}

bool
eng_gpu_disable_all(eng_gpu *g)
{
	return false;
}

void
eng_gpu_get_stats(const eng_gpu *g, eng_gpu_stats *st)
{
	memset(st, 0, sizeof(*st));
}

void
eng_gpu_devices(const eng_gpu *g, int max, int *n, int *ordinals, char (*names)[64])
{
	*n = 0;
}

bool
eng_gpu_test_scores(eng_gpu *g, eng_cache *c, const uint8_t *tpl, uint32_t len,
					bool fresh, float *scores, mcc_error *err)
{
	mcc_error_set(err, MCC_ERR_INTERNAL, "built without GPU support");
	return false;
}

bool
eng_gpu_test_fault(eng_gpu *g, eng_cache *c)
{
	return false;
}

void
eng_gpu_test_inject(eng_gpu *g, eng_gpu_fault fault)
{
}

#endif							/* MCC_ENGINE_GPU */

/*
 * Where the device work went, for whoever tunes a server from its log: at
 * the engine's stop, and on SIGUSR1 (eng_server_log_totals), so that one
 * phase of a benchmark can be read apart from the next.
 */
void
eng_gpu_log_totals(const eng_gpu *g)
{
	eng_gpu_stats stats;
	const eng_gpu_stats *st = &stats;

	eng_gpu_get_stats(g, &stats);
	if (st->passes > 0 || st->refines > 0)
		eng_log(ENG_LOG_INFO, "GPU path totals: %llu passes %.3f s (library %.3f s, hits to slots %.3f s; "
				"probe image %.1f, upload %.1f, match %.1f, select %.1f, copies %.1f ms on partition 0; "
				"waiting for every partition %.1f, slowest partition's pass %.1f and selection %.1f; "
				"long lists ordered and copied %.1f, merge %.1f ms of which ties %.1f ms, longest tie %d; "
				"%llu selections again for ties), "
				"%llu rescorings of %llu pairs "
				"%.3f s (library %.3f s; prep %.1f, upload %.1f, kernel %.1f, copy back %.1f ms)",
				(unsigned long long) st->passes, st->search_s, st->search_lib_s, st->search_fill_s,
				st->lib_ms[ENG_GPU_T_PREP], st->lib_ms[ENG_GPU_T_H2D],
				st->lib_ms[ENG_GPU_T_MATCH], st->lib_ms[ENG_GPU_T_SELECT], st->lib_ms[ENG_GPU_T_D2H],
				st->lib_ms[ENG_GPU_T_WAIT], st->lib_ms[ENG_GPU_T_PART_MAX], st->lib_ms[ENG_GPU_T_SELECT_MAX],
				st->lib_ms[ENG_GPU_T_SETTLE], st->lib_ms[ENG_GPU_T_MERGE], st->lib_ms[ENG_GPU_T_TIES], st->tie_run_max,
				(unsigned long long) st->reselects,
				(unsigned long long) st->refines,
				(unsigned long long) st->refine_pairs, st->refine_s, st->refine_lib_s,
				st->lib_ms[ENG_GPU_T_RPREP], st->lib_ms[ENG_GPU_T_RH2D], st->lib_ms[ENG_GPU_T_RKERNEL],
				st->lib_ms[ENG_GPU_T_RD2H]);
}
