/*
 * eng_gpu_mirror.c: a cache's copy on the devices (eng_gpu_int.h): its
 * library context, the device memory it holds, and its upkeep (a full
 * upload, appends, tombstones) before a pass or a rescoring reads it.
 */
#include "eng_gpu.h"
#include "mcc_clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eng_cache.h"
#include "eng_log.h"

#ifdef MCC_ENGINE_GPU

#include <time.h>

#include "eng_gpu_int.h"

/*
 * How far c's mirror lags: 0 not at all (or no GPU work wanted, or a pass
 * failed: the next search retries), 1 appends or tombstones, 2 a full
 * upload. Read by the main thread only while no pass runs on c (the pool's
 * done list orders it after the last pass's writes).
 */
static int
mirror_lag(const eng_gpu *g, const eng_cache *c)
{
	const eng_gpu_mirror *m = c ? c->gpu : NULL;

	if (!eng_gpu_wants(g, c))
		return 0;
	if (m == NULL)
		return 2;
	if (m->failures != 0)
		return 0;
	if (m->ctx == NULL || m->given > c->soa.n_tpl || c->purge_log_lost)
		return 2;
	return m->given != c->soa.n_tpl || m->purges_sent != c->n_purge_log || m->removals_due;
}

bool
eng_gpu_stale(const eng_gpu *g, const eng_cache *c)
{
	return mirror_lag(g, c) > 0;
}

bool
eng_gpu_needs_upload(const eng_gpu *g, const eng_cache *c)
{
	return mirror_lag(g, c) == 2;
}

void
eng_gpu_set_building(eng_cache *c, bool on)
{
	if (c->gpu != NULL)
		atomic_store(&c->gpu->building, on);
}

void
eng_gpu_hold_removals(eng_cache *c, bool on)
{
	if (c->gpu == NULL)
		return;
	pthread_mutex_lock(&c->gpu->owner->lock);
	c->gpu->removals_held = on;
	pthread_mutex_unlock(&c->gpu->owner->lock);
}

bool
eng_gpu_attach(eng_gpu *g, eng_cache *c)
{
	if (c->gpu != NULL)
		return true;
	c->gpu = calloc(1, sizeof(eng_gpu_mirror));
	if (c->gpu == NULL)
		return false;
	c->gpu->owner = g;
	return true;
}

/* Monotonic seconds, for the log. */
double
eng_gpu_now_s(void)
{
	return (double) mcc_clock_usec(CLOCK_MONOTONIC) / 1e6;
}

/*
 * The library's wait hook (mcc_gpu_set_wait_hook): a search or rescoring
 * gives the lock up while its kernels run. The caller made its mirror busy
 * first, so nothing changes the context's device data meanwhile.
 */
static void
wait_hook(void *arg, int leaving)
{
	eng_gpu    *g = arg;

	if (leaving)
		pthread_mutex_unlock(&g->lock);
	else
		pthread_mutex_lock(&g->lock);
}

void
eng_gpu_busy(eng_gpu *g, eng_gpu_mirror *m, bool on)
{
	if (on)
		m->busy++;
	else if (--m->busy == 0)
		pthread_cond_broadcast(&g->idle);
}

void
eng_gpu_quiesce(eng_gpu *g, eng_gpu_mirror *m)
{
	while (m->busy > 0)
		pthread_cond_wait(&g->idle, &g->lock);
}

/* Close m's context and forget its device memory (lock held). */
void
eng_gpu_close_ctx(eng_gpu *g, eng_gpu_mirror *m)
{
	eng_gpu_quiesce(g, m);
	mcc_gpu_close(m->ctx);
	m->ctx = NULL;
	m->given = 0;
	m->ref_given = 0;
	m->purges_sent = 0;
	m->removals_due = false;
	for (int d = 0; d < MCC_GPU_MAX_DEVICES; d++)
	{
		g->dev_used[d] -= m->dev_bytes[d] < g->dev_used[d] ? m->dev_bytes[d] : g->dev_used[d];
		m->dev_bytes[d] = 0;
	}
	atomic_store(&m->bytes, 0);
	atomic_store(&m->on_device, false);
}

/* Record what m's context holds on each device (lock held). */
void
eng_gpu_update_bytes(eng_gpu *g, eng_gpu_mirror *m)
{
	mcc_gpu_meminfo info[MCC_GPU_MAX_DEVICES];
	uint64_t	now[MCC_GPU_MAX_DEVICES];
	uint64_t	total = 0;
	mcc_error	err;
	int			n = 0;

	if (m->ctx == NULL ||
		mcc_gpu_memory(m->ctx, info, MCC_GPU_MAX_DEVICES, &n, &err) != MCC_GPU_OK)
		return;
	memset(now, 0, sizeof(now));
	for (int i = 0; i < n; i++)
		if (info[i].ordinal >= 0 && info[i].ordinal < MCC_GPU_MAX_DEVICES)
			now[info[i].ordinal] += info[i].gallery_bytes + info[i].scratch_bytes;
	for (int d = 0; d < MCC_GPU_MAX_DEVICES; d++)
	{
		g->dev_used[d] += now[d];
		g->dev_used[d] -= m->dev_bytes[d] < g->dev_used[d] ? m->dev_bytes[d] : g->dev_used[d];
		m->dev_bytes[d] = now[d];
		total += now[d];
	}
	atomic_store(&m->bytes, total);
}

/*
 * Open a context for cache c over every partition. With a limit, it may
 * take what the other mirrors leave on the fullest device (checked now;
 * their later growth is not).
 */
mcc_gpu_code
eng_gpu_open_ctx(eng_gpu *g, const eng_cache *c, mcc_gpu **out, mcc_error *err)
{
	mcc_gpu_options opt;
	uint64_t	fullest = 0;
	mcc_gpu_code rc;

	memset(&opt, 0, sizeof(opt));
	for (int d = 0; d < MCC_GPU_MAX_DEVICES; d++)
		if (g->dev_used[d] > fullest)
			fullest = g->dev_used[d];
	if (g->mem_limit != 0)
		opt.mem_limit = g->mem_limit > fullest ? g->mem_limit - fullest : 1;
	if ((rc = mcc_gpu_open(g->parts, g->nparts, c->profile, &opt, out, err)) == MCC_GPU_OK)
		mcc_gpu_set_wait_hook(*out, wait_hook, g);
	return rc;
}

/* Tombstone every purged entry of c in ctx (after a full upload). */
mcc_gpu_code
eng_gpu_remove_purged(eng_gpu *g, mcc_gpu *ctx, const eng_cache *c, mcc_error *err)
{
	mcc_gpu_code rc;

	for (uint32_t i = 0; i < c->soa.n_tpl; i++)
		if (c->entries[i].flags & ENG_E_PURGED)
		{
			if ((rc = mcc_gpu_remove(ctx, i, err)) != MCC_GPU_OK)
				return rc;
			g->stats.removes++;
		}
	return MCC_GPU_OK;
}

/*
 * Bring m up to date with c (lock held): a full upload for a new context,
 * else appends of the templates added since; then tombstones for the
 * entries purged since. On failure the caller closes the context.
 */
mcc_gpu_code
eng_gpu_sync_mirror(eng_gpu *g, eng_gpu_mirror *m, const eng_cache *c, mcc_error *err)
{
	mcc_gpu_code rc;

	/* up to date (the usual case): a job may be on the context meanwhile */
	if (m->ctx != NULL && !c->purge_log_lost && m->given == c->soa.n_tpl &&
		!(m->removals_due && !m->removals_held) && m->purges_sent >= c->n_purge_log)
		return MCC_GPU_OK;
	eng_gpu_quiesce(g, m);

	if (m->ctx == NULL || c->purge_log_lost || m->given > c->soa.n_tpl)
	{
		double		t0 = eng_gpu_now_s();

		eng_gpu_close_ctx(g, m);
		if ((rc = eng_gpu_open_ctx(g, c, &m->ctx, err)) != MCC_GPU_OK)
			return rc;
		atomic_store(&m->on_device, true);
		if ((rc = mcc_gpu_upload(m->ctx, &c->soa, err)) != MCC_GPU_OK)
			return rc;
		m->given = c->soa.n_tpl;
		m->ref_given = 0;		/* an upload drops the refinement data */
		g->stats.uploads++;
		g->stats.upload_s += eng_gpu_now_s() - t0;
		eng_log(ENG_LOG_INFO, "uploaded %u templates (%u cylinders) to the GPU in %.3f s",
				c->soa.n_tpl, c->soa.n_cyl, eng_gpu_now_s() - t0);
		m->removals_due = true;
		m->purges_sent = c->n_purge_log;	/* purged entries: all of them tombstoned below */
	}
	else if (m->given < c->soa.n_tpl)
	{
		if ((rc = mcc_gpu_append(m->ctx, &c->soa, m->given, c->soa.n_tpl, err)) != MCC_GPU_OK)
			return rc;
		m->given = c->soa.n_tpl;
		g->stats.appends++;
	}
	/*
	 * After a full upload, every purged entry's tombstone; not while a
	 * snapshot check revives the restored rows (they are all purged until
	 * revived, and a device tombstone is never undone): its end sends them.
	 */
	if (m->removals_due && !m->removals_held)
	{
		if ((rc = eng_gpu_remove_purged(g, m->ctx, c, err)) != MCC_GPU_OK)
			return rc;
		m->removals_due = false;
		m->purges_sent = c->n_purge_log;
	}
	for (; m->purges_sent < c->n_purge_log; m->purges_sent++)
	{
		if ((rc = mcc_gpu_remove(m->ctx, c->purge_log[m->purges_sent], err)) != MCC_GPU_OK)
			return rc;
		g->stats.removes++;
	}
	return MCC_GPU_OK;
}

/* A failure a test injected for the next job (lock held), consumed; MCC_GPU_OK if none. */
mcc_gpu_code
eng_gpu_take_injected(mcc_gpu_code *slot, const char *what, mcc_error *err)
{
	mcc_gpu_code rc = *slot;

	if (rc == MCC_GPU_OK)
		return rc;
	*slot = MCC_GPU_OK;
	mcc_error_set(err, rc == MCC_GPU_OOM ? MCC_ERR_MEMORY :
				  rc == MCC_GPU_INVALID ? MCC_ERR_VALUE : MCC_ERR_INTERNAL,
				  "injected GPU %sfailure %d (a test)", what, (int) rc);
	return rc;
}

/*
 * Why the GPU or mirror m cannot take a job now (lock held): the GPU off
 * for the process, or m off the GPU (for a rescoring, its refinement too);
 * err says so. ENG_GPU_DONE if it can.
 */
eng_gpu_outcome
eng_gpu_job_blocked(eng_gpu *g, const eng_gpu_mirror *m, bool refining, mcc_error *err)
{
	if (atomic_load(&g->broken))
	{
		mcc_error_set(err, MCC_ERR_INTERNAL, "the GPU was disabled by an earlier error");
		return ENG_GPU_PROCESS_CPU;
	}
	if (m == NULL || atomic_load(&((eng_gpu_mirror *) m)->failed) ||
		(refining && atomic_load(&((eng_gpu_mirror *) m)->ref_failed)))
	{
		mcc_error_set(err, MCC_ERR_INTERNAL, "the cache has no GPU copy");
		/* a pass says the cache stays on the CPU; a rescoring job just runs there */
		return refining ? ENG_GPU_RETRY_CPU : ENG_GPU_CACHE_CPU;
	}
	return ENG_GPU_DONE;
}

/*
 * Bring m up to date with c before a job (lock held). On failure (*rc) the
 * context is closed, unless the error is sticky, and the outcome says what
 * the failure means.
 */
eng_gpu_outcome
eng_gpu_sync_for_job(eng_gpu *g, eng_gpu_mirror *m, const eng_cache *c, mcc_gpu_code *rc,
					 mcc_error *err)
{
	if ((*rc = eng_gpu_sync_mirror(g, m, c, err)) == MCC_GPU_OK)
		return ENG_GPU_DONE;
	if (*rc != MCC_GPU_STICKY)
		eng_gpu_close_ctx(g, m);
	return eng_gpu_outcome_of(*rc, true);
}

/* What a library failure means for the engine. */
eng_gpu_outcome
eng_gpu_outcome_of(mcc_gpu_code rc, bool syncing)
{
	switch (rc)
	{
		case MCC_GPU_OK:
			return ENG_GPU_DONE;
		case MCC_GPU_STICKY:
		case MCC_GPU_NO_DRIVER:
		case MCC_GPU_NO_DEVICE:
			return ENG_GPU_PROCESS_CPU;
		case MCC_GPU_OOM:
		case MCC_GPU_UNSUPPORTED:
			return ENG_GPU_CACHE_CPU;
		case MCC_GPU_INVALID:
			/* bad gallery data stays; a bad probe is this request's */
			return syncing ? ENG_GPU_CACHE_CPU : ENG_GPU_RETRY_CPU;
		case MCC_GPU_CUDA:
		default:
			return ENG_GPU_RETRY_CPU;
	}
}

void
eng_gpu_disable_cache(eng_gpu *g, eng_cache *c)
{
	if (g == NULL || c == NULL || c->gpu == NULL)
		return;
	pthread_mutex_lock(&g->lock);
	eng_gpu_close_ctx(g, c->gpu);
	atomic_store(&c->gpu->failed, true);
	pthread_mutex_unlock(&g->lock);
}

void
eng_gpu_mirror_free(eng_gpu_mirror *m)
{
	if (m == NULL)
		return;
	pthread_mutex_lock(&m->owner->lock);
	eng_gpu_close_ctx(m->owner, m);
	pthread_mutex_unlock(&m->owner->lock);
	free(m);
}

void
eng_gpu_describe(const eng_gpu *g, const eng_cache *c, char *device, size_t len,
				 uint64_t *bytes)
{
	const eng_gpu_mirror *m = c ? c->gpu : NULL;

	if (g != NULL && m != NULL && atomic_load(&((eng_gpu_mirror *) m)->on_device) &&
		!atomic_load(&((eng_gpu_mirror *) m)->building))
	{
		snprintf(device, len, "%s", g->name);
		*bytes = atomic_load(&((eng_gpu_mirror *) m)->bytes);
		return;
	}
	snprintf(device, len, "cpu");
	*bytes = 0;
}

#else							/* !MCC_ENGINE_GPU */

bool
eng_gpu_stale(const eng_gpu *g, const eng_cache *c)
{
	return false;
}

bool
eng_gpu_needs_upload(const eng_gpu *g, const eng_cache *c)
{
	return false;
}

void
eng_gpu_set_building(eng_cache *c, bool on)
{
}

void
eng_gpu_hold_removals(eng_cache *c, bool on)
{
}

bool
eng_gpu_attach(eng_gpu *g, eng_cache *c)
{
	return false;
}

void
eng_gpu_disable_cache(eng_gpu *g, eng_cache *c)
{
}

void
eng_gpu_mirror_free(eng_gpu_mirror *m)
{
	free(m);
}

void
eng_gpu_describe(const eng_gpu *g, const eng_cache *c, char *device, size_t len,
				 uint64_t *bytes)
{
	snprintf(device, len, "cpu");
	*bytes = 0;
}

#endif							/* MCC_ENGINE_GPU */
