/*
 * eng_gpu.c: the engine's GPU path (eng_gpu.h): devices, one library
 * context per cache, GPU passes and what their failures mean. Built
 * without MCC_ENGINE_GPU, only the stubs at the end exist and the engine
 * never touches CUDA.
 */
#include "eng_gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eng_cache.h"
#include "eng_log.h"
#include "eng_rescore.h"
#include "eng_scan.h"

#ifdef MCC_ENGINE_GPU

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "mcc_gpu.h"
#include "mcc_gpu_refine.h"

#define GPU_HITS_MAX		(1u << 22)	/* hits of one library call */
#define GPU_MAX_FAILURES	3	/* passes handed back in a row: CPU for the cache */
#define GPU_K_LIMIT			(1u << 20)	/* mcc_gpu_search's largest k */
#define GPU_GEOM_CHUNK		65536	/* templates whose refinement data is staged at once */

struct eng_gpu
{
	pthread_mutex_t lock;		/* held around every library call */
	int			ndev;
	mcc_gpu_devinfo dev[MCC_GPU_MAX_DEVICES];
	int			nparts;
	int			parts[MCC_GPU_MAX_DEVICES];	/* device of each partition */
	uint64_t	mem_limit;		/* per device, all mirrors; 0: what is free */
	uint64_t	dev_used[MCC_GPU_MAX_DEVICES];	/* by all mirrors, per ordinal */
	atomic_bool broken;			/* a sticky error: the CPU from now on */
	bool		broken_logged;	/* main thread */
	char		name[128];		/* for STATUS (cut to 31 bytes there) */
	mcc_gpu_code inject;		/* test: fail the next pass with this code */
	mcc_gpu_code inject_refine; /* test: fail the next rescoring job with it */
	eng_gpu_stats stats;
};

struct eng_gpu_mirror
{
	eng_gpu    *owner;
	mcc_gpu    *ctx;			/* NULL: nothing on the device */
	uint32_t	given;			/* templates the context holds */
	uint32_t	purges_sent;	/* entries of the cache's purge log applied */
	uint64_t	dev_bytes[MCC_GPU_MAX_DEVICES];	/* per ordinal */
	int			failures;		/* passes handed back in a row */
	atomic_bool failed;			/* this cache stays on the CPU */
	uint32_t	ref_given;		/* templates whose refinement data the context holds */
	int			ref_failures;	/* rescoring jobs handed back in a row */
	atomic_bool ref_failed;		/* this cache's rescoring stays on the CPU */
	atomic_bool on_device;		/* for STATUS (read without the lock) */
	atomic_uint_fast64_t bytes;
};

/* A live slot of a pass and the k' it asks the library for. */
typedef struct gpu_want
{
	uint32_t	kk;
	uint32_t	slot;
} gpu_want;

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
	g->mem_limit = mem_limit;
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
	return eng_gpu_usable(g) && c != NULL && c->profile->id == MCC_PROFILE_GPU2015 &&
		c->soa.n_tpl > 0 && eng_cache_searchable(c) > 0 &&
		(c->gpu == NULL || !atomic_load(&c->gpu->failed));
}

/*
 * Read by the main thread only while no pass runs on c (the pool's done
 * list orders it after the last pass's writes).
 */
bool
eng_gpu_stale(const eng_gpu *g, const eng_cache *c)
{
	const eng_gpu_mirror *m = c ? c->gpu : NULL;

	if (!eng_gpu_wants(g, c))
		return false;
	if (m == NULL)
		return true;
	return m->failures == 0 &&
		(m->ctx == NULL || m->given != c->soa.n_tpl ||
		 m->purges_sent != c->n_purge_log || c->purge_log_lost);
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
static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Close m's context and forget its device memory (lock held). */
static void
close_ctx(eng_gpu *g, eng_gpu_mirror *m)
{
	mcc_gpu_close(m->ctx);
	m->ctx = NULL;
	m->given = 0;
	m->ref_given = 0;
	m->purges_sent = 0;
	for (int d = 0; d < MCC_GPU_MAX_DEVICES; d++)
	{
		g->dev_used[d] -= m->dev_bytes[d] < g->dev_used[d] ? m->dev_bytes[d] : g->dev_used[d];
		m->dev_bytes[d] = 0;
	}
	atomic_store(&m->bytes, 0);
	atomic_store(&m->on_device, false);
}

/* Record what m's context holds on each device (lock held). */
static void
update_bytes(eng_gpu *g, eng_gpu_mirror *m)
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
static mcc_gpu_code
open_ctx(eng_gpu *g, const eng_cache *c, mcc_gpu **out, mcc_error *err)
{
	mcc_gpu_options opt;
	uint64_t	fullest = 0;

	memset(&opt, 0, sizeof(opt));
	for (int d = 0; d < MCC_GPU_MAX_DEVICES; d++)
		if (g->dev_used[d] > fullest)
			fullest = g->dev_used[d];
	if (g->mem_limit != 0)
		opt.mem_limit = g->mem_limit > fullest ? g->mem_limit - fullest : 1;
	return mcc_gpu_open(g->parts, g->nparts, c->profile, &opt, out, err);
}

/* Tombstone every purged entry of c in ctx (after a full upload). */
static mcc_gpu_code
remove_purged(eng_gpu *g, mcc_gpu *ctx, const eng_cache *c, mcc_error *err)
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
static mcc_gpu_code
sync_mirror(eng_gpu *g, eng_gpu_mirror *m, const eng_cache *c, mcc_error *err)
{
	mcc_gpu_code rc;

	if (m->ctx == NULL || c->purge_log_lost || m->given > c->soa.n_tpl)
	{
		double		t0 = now_s();

		close_ctx(g, m);
		if ((rc = open_ctx(g, c, &m->ctx, err)) != MCC_GPU_OK)
			return rc;
		atomic_store(&m->on_device, true);
		if ((rc = mcc_gpu_upload(m->ctx, &c->soa, err)) != MCC_GPU_OK)
			return rc;
		m->given = c->soa.n_tpl;
		m->ref_given = 0;		/* an upload drops the refinement data */
		g->stats.uploads++;
		eng_log(ENG_LOG_INFO, "uploaded %u templates (%u cylinders) to the GPU in %.3f s",
				c->soa.n_tpl, c->soa.n_cyl, now_s() - t0);
		if ((rc = remove_purged(g, m->ctx, c, err)) != MCC_GPU_OK)
			return rc;
		m->purges_sent = c->n_purge_log;
	}
	else if (m->given < c->soa.n_tpl)
	{
		if ((rc = mcc_gpu_append(m->ctx, &c->soa, m->given, c->soa.n_tpl, err)) != MCC_GPU_OK)
			return rc;
		m->given = c->soa.n_tpl;
		g->stats.appends++;
	}
	for (; m->purges_sent < c->n_purge_log; m->purges_sent++)
	{
		if ((rc = mcc_gpu_remove(m->ctx, c->purge_log[m->purges_sent], err)) != MCC_GPU_OK)
			return rc;
		g->stats.removes++;
	}
	return MCC_GPU_OK;
}

/* Do two library hits have equal (score, key)? */
static inline bool
same_cut(const mcc_gpu_hit *a, const mcc_gpu_hit *b)
{
	return a->score == b->score && a->id == b->id;
}

/* Hits whose cache entries fill_slot asks for ahead of the one it reads. */
#define FILL_AHEAD 8

/*
 * Turn the library's k' best of one probe (hits[0..n), k' = kk) into the
 * slot's result. hits are ordered by (score desc, key asc) but versions of
 * one key with equal scores come in any order, and only some of them may
 * fit in k': when the k-th and the k'-th hit are such a group, ask again
 * with a larger k' until the group is whole (or every template came back).
 */
static mcc_gpu_code
fill_slot(eng_gpu *g, mcc_gpu *ctx, const eng_cache *c, eng_slot *sl,
		  const mcc_template_view *v, const mcc_gpu_hit *hits, int n, uint32_t kk,
		  mcc_error *err)
{
	const mcc_gpu_hit *use = hits;
	mcc_gpu_hit *own = NULL;
	uint32_t	k = sl->k;
	uint64_t	ge = 0;
	mcc_gpu_code rc = MCC_GPU_OK;

	while ((uint32_t) n == kk && k > 0 && same_cut(&use[k - 1], &use[kk - 1]) &&
		   use[k - 1].score >= sl->min_score)
	{
		mcc_gpu_hit *more;

		if (kk >= GPU_K_LIMIT)
		{
			free(own);
			mcc_error_set(err, MCC_ERR_LIMIT, "more tied versions of one key than a GPU search returns");
			return MCC_GPU_INVALID; /* this request on the CPU */
		}
		kk = kk > GPU_K_LIMIT / 2 ? GPU_K_LIMIT : 2 * kk;
		more = realloc(own, (size_t) kk * sizeof(mcc_gpu_hit));
		if (more == NULL)
		{
			free(own);
			mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
			return MCC_GPU_OOM;
		}
		own = more;
		if ((rc = mcc_gpu_search(ctx, v, 1, (int) kk, own, &n, err)) != MCC_GPU_OK)
		{
			free(own);
			return rc;
		}
		use = own;
		g->stats.requeries++;
	}
	for (int i = 0; i < n; i++)
	{
		const eng_entry *e;
		eng_hit		h;

		/* entries are read at random: keep a few misses in flight */
		if (i + FILL_AHEAD < n && use[i + FILL_AHEAD].index < c->soa.n_tpl)
			__builtin_prefetch(&c->entries[use[i + FILL_AHEAD].index]);

		if (use[i].index >= c->soa.n_tpl ||
			(c->entries[use[i].index].flags & ENG_E_PURGED) ||
			c->entries[use[i].index].key != use[i].id)
		{
			free(own);
			mcc_error_set(err, MCC_ERR_INTERNAL, "the GPU copy of the gallery differs from the cache");
			return MCC_GPU_CUDA;	/* reloaded by the next pass */
		}
		if (!(use[i].score >= sl->min_score))
			continue;
		e = &c->entries[use[i].index];
		ge++;
		h.score = use[i].score;
		h.key = e->key;
		h.hash = e->hash;
		h.entry = use[i].index;
		if (eng_hits_may_enter(&sl->hits, h.score))
			eng_hits_push(&sl->hits, &h);
	}
	sl->n_ge = ge;
	free(own);
	return MCC_GPU_OK;
}

/* qsort: by k', then slot (probes asking for the same k' go together) */
static int
cmp_want(const void *a, const void *b)
{
	const gpu_want *x = a;
	const gpu_want *y = b;

	if (x->kk != y->kk)
		return x->kk < y->kk ? -1 : 1;
	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* Search every live probe of b on m's context (lock held). */
static mcc_gpu_code
search(eng_gpu *g, eng_gpu_mirror *m, eng_batch *b, mcc_error *err)
{
	gpu_want   *w = malloc(sizeof(gpu_want) * (b->n_slots ? b->n_slots : 1));
	mcc_template_view *v = malloc(sizeof(mcc_template_view) * (b->n_slots ? b->n_slots : 1));
	int		   *nhits = malloc(sizeof(int) * (b->n_slots ? b->n_slots : 1));
	mcc_gpu_hit *hits = NULL;
	size_t		cap = 0;
	uint32_t	n = 0;
	mcc_gpu_code rc = MCC_GPU_OK;
	double		t0;
	double		t1;

	if (w == NULL || v == NULL || nhits == NULL)
	{
		mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
		rc = MCC_GPU_OOM;
		goto out;
	}
	for (uint32_t i = 0; i < b->n_slots; i++)
		if (b->slots[i].cancel == NULL || !atomic_load(b->slots[i].cancel))
		{
			w[n].kk = b->slots[i].k + 1;
			w[n].slot = i;
			n++;
		}
	qsort(w, n, sizeof(gpu_want), cmp_want);
	for (uint32_t i = 0; i < n && rc == MCC_GPU_OK;)
	{
		uint32_t	kk = w[i].kk;
		uint32_t	j = i + 1;
		size_t		need;

		/* a run of equal k', its hits bounded */
		while (j < n && w[j].kk == kk && (uint64_t) (j - i + 1) * kk <= GPU_HITS_MAX)
			j++;
		need = (size_t) (j - i) * kk;
		if (need > cap)
		{
			mcc_gpu_hit *nh = realloc(hits, need * sizeof(mcc_gpu_hit));

			if (nh == NULL)
			{
				mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
				rc = MCC_GPU_OOM;
				break;
			}
			hits = nh;
			cap = need;
		}
		for (uint32_t q = i; q < j && rc == MCC_GPU_OK; q++)
		{
			const eng_slot *sl = &b->slots[w[q].slot];

			if (mcc_template_open(sl->tpl, sl->tpl_len, &v[q - i], err) != MCC_OK)
				rc = MCC_GPU_INVALID;
		}
		t0 = now_s();
		if (rc == MCC_GPU_OK)
			rc = mcc_gpu_search(m->ctx, v, (int) (j - i), (int) kk, hits, nhits, err);
		t1 = now_s();
		if (rc == MCC_GPU_OK)
		{
			mcc_gpu_timing tm;

			mcc_gpu_last_timing(m->ctx, &tm);
			g->stats.lib_ms[ENG_GPU_T_MATCH] += tm.match_ms;
			g->stats.lib_ms[ENG_GPU_T_SELECT] += tm.select_ms;
			g->stats.lib_ms[ENG_GPU_T_D2H] += tm.d2h_ms;
			g->stats.lib_ms[ENG_GPU_T_MERGE] += tm.merge_ms;
		}
		for (uint32_t q = i; q < j && rc == MCC_GPU_OK; q++)
			rc = fill_slot(g, m->ctx, b->cache, &b->slots[w[q].slot], &v[q - i],
						   hits + (size_t) (q - i) * kk, nhits[q - i], kk, err);
		g->stats.search_lib_s += t1 - t0;
		g->stats.search_fill_s += now_s() - t1;
		i = j;
	}
out:
	free(w);
	free(v);
	free(nhits);
	free(hits);
	return rc;
}

/* A failure a test injected for the next job (lock held), consumed; MCC_GPU_OK if none. */
static mcc_gpu_code
take_injected(mcc_gpu_code *slot, const char *what, mcc_error *err)
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

/* What a library failure means for the engine. */
static eng_gpu_outcome
outcome_of(mcc_gpu_code rc, bool syncing)
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

eng_gpu_outcome
eng_gpu_pass(eng_gpu *g, eng_batch *b, mcc_error *err)
{
	const eng_cache *c = b->cache;
	eng_gpu_mirror *m = c->gpu;
	eng_gpu_outcome out;
	mcc_gpu_code rc;
	double		t_in = now_s();

	pthread_mutex_lock(&g->lock);
	if (atomic_load(&g->broken))
	{
		mcc_error_set(err, MCC_ERR_INTERNAL, "the GPU was disabled by an earlier error");
		pthread_mutex_unlock(&g->lock);
		return ENG_GPU_PROCESS_CPU;
	}
	if (m == NULL || atomic_load(&m->failed))
	{
		mcc_error_set(err, MCC_ERR_INTERNAL, "the cache has no GPU copy");
		pthread_mutex_unlock(&g->lock);
		return ENG_GPU_CACHE_CPU;
	}
	if ((rc = take_injected(&g->inject, "", err)) != MCC_GPU_OK)
	{
		out = outcome_of(rc, false);
		goto failed;
	}
	if ((rc = sync_mirror(g, m, c, err)) != MCC_GPU_OK)
	{
		if (rc != MCC_GPU_STICKY)
			close_ctx(g, m);
		out = outcome_of(rc, true);
		goto failed;
	}
	if ((rc = search(g, m, b, err)) != MCC_GPU_OK)
	{
		out = outcome_of(rc, false);
		/* the next pass starts from a full upload rather than trust the copy */
		if (rc == MCC_GPU_CUDA)
			close_ctx(g, m);
		goto failed;
	}
	update_bytes(g, m);
	m->failures = 0;
	if (b->n_slots > 0)
		g->stats.passes++;
	g->stats.search_s += now_s() - t_in;
	pthread_mutex_unlock(&g->lock);
	return ENG_GPU_DONE;

failed:
	if (out == ENG_GPU_PROCESS_CPU)
		atomic_store(&g->broken, true);
	/* CUDA errors that keep coming (not a client's bad probe): give up on it */
	if (rc == MCC_GPU_CUDA && ++m->failures >= GPU_MAX_FAILURES)
		out = ENG_GPU_CACHE_CPU;
	g->stats.fallbacks++;
	pthread_mutex_unlock(&g->lock);
	return out;
}

/* ---- refinement (kernels/mcc_gpu_refine.h) ------------------------------ */

bool
eng_gpu_refine_wants(const eng_gpu *g, const eng_cache *c)
{
	const eng_gpu_mirror *m = c ? c->gpu : NULL;

	return eng_gpu_wants(g, c) && m != NULL && !atomic_load(&((eng_gpu_mirror *) m)->ref_failed);
}

bool
eng_gpu_refine_method(int method)
{
	return mcc_gpu_refine_supported(method) != 0;
}

/*
 * Send the refinement data of templates [m->ref_given, m->given) (lock
 * held), rebuilt from c's sides: the geometry of GPU_GEOM_CHUNK templates
 * at a time, so that the host never holds the whole gallery's. The library
 * reads the records of [t0, t1) only, so a chunk's geometry starts at
 * template t0 with nothing before it (first[t0] = 0).
 */
static mcc_gpu_code
attach_refinement(eng_gpu *g, eng_gpu_mirror *m, const eng_cache *c, mcc_error *err)
{
	mcc_gpu_geom geo;
	uint8_t    *buf;
	uint32_t	from = m->ref_given;
	double		t_start = now_s();
	mcc_gpu_code rc = MCC_GPU_OK;

	if (m->ref_given >= m->given)
		return MCC_GPU_OK;
	buf = malloc(eng_template_max_bytes());
	if (buf == NULL || mcc_gpu_geom_init(&geo, m->given, 0, err) != MCC_OK)
	{
		free(buf);
		mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for the refinement data");
		return MCC_GPU_OOM;
	}
	while (m->ref_given < m->given && rc == MCC_GPU_OK)
	{
		uint32_t	t0 = m->ref_given;
		uint32_t	t1 = m->given - t0 > GPU_GEOM_CHUNK ? t0 + GPU_GEOM_CHUNK : m->given;

		geo.n_tpl = t0;
		geo.n_cyl = 0;
		geo.first[t0] = 0;
		for (uint32_t k = t0; k < t1 && rc == MCC_GPU_OK; k++)
		{
			mcc_template_view v;

			eng_cache_template(c, k, buf, &v);
			if (mcc_gpu_geom_append(&geo, &v, err) != MCC_OK)
				rc = err->status == MCC_ERR_MEMORY ? MCC_GPU_OOM : MCC_GPU_INVALID;
		}
		if (rc == MCC_GPU_OK)
			rc = mcc_gpu_refine_attach(m->ctx, &c->soa, &geo, t0, t1, err);
		if (rc == MCC_GPU_OK)
			m->ref_given = t1;
	}
	mcc_gpu_geom_free(&geo);
	free(buf);
	g->stats.refine_attached += m->ref_given - from;
	if (rc == MCC_GPU_OK)
		eng_log(ENG_LOG_INFO, "sent the refinement data of %u templates to the GPU in %.3f s",
				m->ref_given - from, now_s() - t_start);
	return rc;
}

/*
 * Score the pairs of rs's live probes of one method (lock held): one
 * library call, its probes the job's probes of that method.
 */
static mcc_gpu_code
refine_method(eng_gpu *g, eng_gpu_mirror *m, eng_rescore *rs, mcc_method method,
			  mcc_template_view *views, uint32_t *qof, mcc_gpu_pair *pairs, float *scores,
			  mcc_error *err)
{
	size_t		np = 0;
	int			nq = 0;
	mcc_gpu_code rc;
	double		t0;

	for (uint32_t i = 0; i < rs->n_probes; i++)
	{
		const eng_rescore_probe *p = &rs->probes[i];

		if (!p->on_gpu || p->method != method || p->n == 0 ||
			(p->cancel && atomic_load(p->cancel)))
			continue;
		views[nq] = p->probe;
		qof[nq] = i;
		for (uint32_t j = 0; j < p->n; j++)
		{
			uint32_t	e = rs->pairs[p->first + j].entry;

			if (e >= m->ref_given)
			{
				mcc_error_set(err, MCC_ERR_INTERNAL,
							  "entry %u has no refinement data on the GPU (%u templates have)",
							  e, m->ref_given);
				return MCC_GPU_CUDA;	/* reloaded by the next pass */
			}
			pairs[np++] = (mcc_gpu_pair) {(uint32_t) nq, e, MCC_GPU_FROM_GALLERY};
		}
		nq++;
	}
	if (np == 0)
		return MCC_GPU_OK;
	t0 = now_s();
	rc = mcc_gpu_refine(m->ctx, views, nq, NULL, 0, pairs, np, method, NULL, scores, err);
	g->stats.refine_lib_s += now_s() - t0;
	if (rc != MCC_GPU_OK)
		return rc;
	{
		mcc_gpu_refine_timing tm;

		mcc_gpu_refine_last_timing(m->ctx, &tm);
		g->stats.lib_ms[ENG_GPU_T_RPREP] += tm.prep_ms;
		g->stats.lib_ms[ENG_GPU_T_RH2D] += tm.h2d_ms;
		g->stats.lib_ms[ENG_GPU_T_RKERNEL] += tm.kernel_ms;
		g->stats.lib_ms[ENG_GPU_T_RD2H] += tm.d2h_ms;
	}
	np = 0;
	for (int q = 0; q < nq; q++)
	{
		const eng_rescore_probe *p = &rs->probes[qof[q]];

		for (uint32_t j = 0; j < p->n; j++)
			rs->pairs[p->first + j].score = scores[np++];
	}
	g->stats.refine_pairs += np;
	return MCC_GPU_OK;
}

/* Every live pair of rs on m's context, one call per method (lock held). */
static mcc_gpu_code
refine_all(eng_gpu *g, eng_gpu_mirror *m, eng_rescore *rs, mcc_error *err)
{
	mcc_template_view *views = malloc(sizeof(mcc_template_view) * (rs->n_probes + 1));
	uint32_t   *qof = malloc(sizeof(uint32_t) * (rs->n_probes + 1));
	mcc_gpu_pair *pairs = malloc(sizeof(mcc_gpu_pair) * ((size_t) rs->n_pairs + 1));
	float	   *scores = malloc(sizeof(float) * ((size_t) rs->n_pairs + 1));
	mcc_gpu_code rc = MCC_GPU_OK;

	if (views == NULL || qof == NULL || pairs == NULL || scores == NULL)
	{
		mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
		rc = MCC_GPU_OOM;
	}
	for (int method = 0; method < MCC_NMETHODS && rc == MCC_GPU_OK; method++)
		rc = refine_method(g, m, rs, (mcc_method) method, views, qof, pairs, scores, err);
	free(views);
	free(qof);
	free(pairs);
	free(scores);
	return rc;
}

/*
 * What a failure of the refinement library means (lock held): the process
 * off the GPU for a sticky error; the cache's rescoring on the CPU for good
 * when the device cannot hold or take the gallery's refinement data
 * (attaching), runs no such method, or keeps failing; else this job on the
 * CPU (a CUDA error also drops the copy: the next pass uploads it again).
 * The LSS search of the cache keeps its GPU copy.
 */
static eng_gpu_outcome
refine_outcome(eng_gpu *g, eng_gpu_mirror *m, mcc_gpu_code rc, bool attaching, mcc_error *err)
{
	bool		for_good = false;

	switch (rc)
	{
		case MCC_GPU_OK:
			return ENG_GPU_DONE;
		case MCC_GPU_STICKY:
		case MCC_GPU_NO_DRIVER:
		case MCC_GPU_NO_DEVICE:
			return ENG_GPU_PROCESS_CPU;
		case MCC_GPU_UNSUPPORTED:
			for_good = true;
			break;
		case MCC_GPU_OOM:
		case MCC_GPU_INVALID:
			/* the gallery's data stays; a job's probes or size are its own */
			for_good = attaching || ++m->ref_failures >= GPU_MAX_FAILURES;
			break;
		case MCC_GPU_CUDA:
		default:
			close_ctx(g, m);
			for_good = ++m->ref_failures >= GPU_MAX_FAILURES;
			break;
	}
	if (for_good)
	{
		atomic_store(&m->ref_failed, true);
		mcc_error_detail(err, "Refinement of this cache stays on the CPU threads.");
	}
	return ENG_GPU_RETRY_CPU;
}

eng_gpu_outcome
eng_gpu_refine(eng_gpu *g, eng_rescore *rs, mcc_error *err)
{
	const eng_cache *c = rs->cache;
	eng_gpu_mirror *m = c->gpu;
	eng_gpu_outcome out;
	mcc_gpu_code rc;
	double		t_in = now_s();

	pthread_mutex_lock(&g->lock);
	if (atomic_load(&g->broken))
	{
		mcc_error_set(err, MCC_ERR_INTERNAL, "the GPU was disabled by an earlier error");
		out = ENG_GPU_PROCESS_CPU;
		goto failed;
	}
	if (m == NULL || atomic_load(&m->failed) || atomic_load(&m->ref_failed))
	{
		mcc_error_set(err, MCC_ERR_INTERNAL, "the cache has no GPU copy");
		out = ENG_GPU_RETRY_CPU;
		goto failed;
	}
	/* a test's failure stands for one of the refinement data */
	if ((rc = take_injected(&g->inject_refine, "refinement ", err)) != MCC_GPU_OK)
	{
		out = refine_outcome(g, m, rc, true, err);
		goto failed;
	}
	/* the pass synced the mirror unless it ran on the CPU */
	if ((rc = sync_mirror(g, m, c, err)) != MCC_GPU_OK)
	{
		if (rc != MCC_GPU_STICKY)
			close_ctx(g, m);
		out = outcome_of(rc, true);
		goto failed;
	}
	if ((rc = attach_refinement(g, m, c, err)) != MCC_GPU_OK)
	{
		out = refine_outcome(g, m, rc, true, err);
		goto failed;
	}
	if ((rc = refine_all(g, m, rs, err)) != MCC_GPU_OK)
	{
		out = refine_outcome(g, m, rc, false, err);
		goto failed;
	}
	update_bytes(g, m);
	m->ref_failures = 0;
	g->stats.refines++;
	g->stats.refine_s += now_s() - t_in;
	pthread_mutex_unlock(&g->lock);
	return ENG_GPU_DONE;

failed:
	if (out == ENG_GPU_PROCESS_CPU)
		atomic_store(&g->broken, true);
	g->stats.refine_fallbacks++;
	pthread_mutex_unlock(&g->lock);
	return out;
}

void
eng_gpu_disable_cache(eng_gpu *g, eng_cache *c)
{
	if (g == NULL || c == NULL || c->gpu == NULL)
		return;
	pthread_mutex_lock(&g->lock);
	close_ctx(g, c->gpu);
	atomic_store(&c->gpu->failed, true);
	pthread_mutex_unlock(&g->lock);
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
eng_gpu_mirror_free(eng_gpu_mirror *m)
{
	if (m == NULL)
		return;
	pthread_mutex_lock(&m->owner->lock);
	close_ctx(m->owner, m);
	pthread_mutex_unlock(&m->owner->lock);
	free(m);
}

void
eng_gpu_describe(const eng_gpu *g, const eng_cache *c, char *device, size_t len,
				 uint64_t *bytes)
{
	const eng_gpu_mirror *m = c ? c->gpu : NULL;

	if (g != NULL && m != NULL && atomic_load(&((eng_gpu_mirror *) m)->on_device))
	{
		snprintf(device, len, "%s", g->name);
		*bytes = atomic_load(&((eng_gpu_mirror *) m)->bytes);
		return;
	}
	snprintf(device, len, "cpu");
	*bytes = 0;
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
		rc = open_ctx(g, c, &ctx, err);
		if (rc == MCC_GPU_OK)
			rc = mcc_gpu_upload(ctx, &c->soa, err);
		if (rc == MCC_GPU_OK)
			rc = remove_purged(g, ctx, c, err);
		if (rc == MCC_GPU_OK)
			rc = mcc_gpu_score_all(ctx, &v, 1, scores, err);
		mcc_gpu_close(ctx);
	}
	else
	{
		rc = sync_mirror(g, c->gpu, c, err);
		if (rc == MCC_GPU_OK)
			rc = mcc_gpu_score_all(c->gpu->ctx, &v, 1, scores, err);
		update_bytes(g, c->gpu);
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
eng_gpu_stale(const eng_gpu *g, const eng_cache *c)
{
	return false;
}

bool
eng_gpu_attach(eng_gpu *g, eng_cache *c)
{
	return false;
}

eng_gpu_outcome
eng_gpu_pass(eng_gpu *g, eng_batch *b, mcc_error *err)
{
	mcc_error_set(err, MCC_ERR_INTERNAL, "built without GPU support");
	return ENG_GPU_PROCESS_CPU;
}

bool
eng_gpu_refine_wants(const eng_gpu *g, const eng_cache *c)
{
	return false;
}

bool
eng_gpu_refine_method(int method)
{
	return false;
}

eng_gpu_outcome
eng_gpu_refine(eng_gpu *g, eng_rescore *rs, mcc_error *err)
{
	mcc_error_set(err, MCC_ERR_INTERNAL, "built without GPU support");
	return ENG_GPU_PROCESS_CPU;
}

void
eng_gpu_test_inject_refine(eng_gpu *g, eng_gpu_fault fault)
{
}

void
eng_gpu_disable_cache(eng_gpu *g, eng_cache *c)
{
}

bool
eng_gpu_disable_all(eng_gpu *g)
{
	return false;
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
