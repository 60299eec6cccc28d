/*
 * eng_rescore.c: rescoring jobs of refining searches: building them from a
 * pass's shortlists, the parts the pool's threads run, and the dispatch.
 */
#include <stdlib.h>
#include <string.h>

#include "eng_rescore.h"
#include "eng_server.h"

/* Where a thread's scratch holds the template being rebuilt. */
static size_t
work_bytes(void)
{
	return (mcc_match_work_size() + 63) & ~(size_t) 63;
}

size_t
eng_rescore_scratch_bytes(void)
{
	return work_bytes() + eng_template_max_bytes();
}

eng_rescore *
eng_rescore_new(const eng_cache *c, uint32_t n_probes)
{
	eng_rescore *rs = calloc(1, sizeof(*rs));

	if (rs == NULL)
		return NULL;
	rs->probes = calloc(n_probes ? n_probes : 1, sizeof(eng_rescore_probe));
	if (rs->probes == NULL)
	{
		free(rs);
		return NULL;
	}
	eng_job_error_init(&rs->fail);
	rs->cache = c;
	rs->n_probes = n_probes;
	rs->job.tag = ENG_JOB_RESCORE;
	return rs;
}

void
eng_rescore_free(eng_rescore *rs)
{
	if (rs == NULL)
		return;
	free(rs->probes);
	free(rs->pairs);
	free(rs->part_first);
	free(rs->part_probe);
	eng_job_error_destroy(&rs->fail);
	free(rs);
}

bool
eng_rescore_set(eng_rescore *rs, uint32_t i, const uint8_t *tpl, uint32_t len,
				mcc_method method, const uint32_t *entries, uint32_t n,
				atomic_int *cancel)
{
	eng_rescore_probe *p = &rs->probes[i];
	mcc_error	err;

	if (mcc_template_open(tpl, len, &p->probe, &err) != MCC_OK ||
		p->probe.profile != rs->cache->profile || (uint64_t) rs->n_pairs + n > UINT32_MAX)
		return false;
	if (rs->n_pairs + n > rs->cap_pairs)
	{
		uint64_t	cap = rs->cap_pairs ? rs->cap_pairs : 64;
		eng_rescore_pair *q;

		while (cap < (uint64_t) rs->n_pairs + n)
			cap *= 2;
		if (cap > UINT32_MAX)
			cap = UINT32_MAX;
		q = realloc(rs->pairs, (size_t) cap * sizeof(*q));
		if (q == NULL)
			return false;
		rs->pairs = q;
		rs->cap_pairs = (uint32_t) cap;
	}
	p->method = method;
	p->cancel = cancel;
	p->first = rs->n_pairs;
	p->n = n;
	for (uint32_t j = 0; j < n; j++)
	{
		rs->pairs[p->first + j].entry = entries[j];
		rs->pairs[p->first + j].score = 0.0f;
	}
	rs->n_pairs += n;
	return true;
}

const eng_rescore_pair *
eng_rescore_pairs(const eng_rescore *rs, uint32_t i, uint32_t *n)
{
	*n = rs->probes[i].n;
	/* no pairs yet: pairs may be NULL, and NULL + 0 is undefined in C */
	if (*n == 0)
		return NULL;
	return rs->pairs + rs->probes[i].first;
}

/*
 * The end of the part that starts at pair p0 of probe p: ENG_RESCORE_PART
 * pairs later or at the probe's last pair. Not the next part's start: the
 * probes between two CPU parts may be the GPU stage's, whose scores are
 * already in place (a part that ran on to the next CPU part overwrote them
 * with its own probe's scores).
 */
static uint32_t
part_end(const eng_rescore_probe *p, uint32_t p0)
{
	uint32_t	end = p->first + p->n;

	return end - p0 > ENG_RESCORE_PART ? p0 + ENG_RESCORE_PART : end;
}

/* Score the pairs of one part against their probe, on this thread's scratch. */
static void
rescore_run(eng_job *job, uint32_t part, void *scratch)
{
	eng_rescore *rs = (eng_rescore *) job;
	const eng_rescore_probe *p = &rs->probes[rs->part_probe[part]];
	uint32_t	p0 = rs->part_first[part];
	uint32_t	p1 = part_end(p, p0);
	mcc_match_work *w = scratch;
	uint8_t    *buf = (uint8_t *) scratch + work_bytes();
	mcc_error	err;

	if (p->cancel && atomic_load(p->cancel))
		return;
	/* the scratch may have served a scan since: start afresh */
	mcc_match_work_init(w);
	mcc_match_set_probe(w, &p->probe);
	for (uint32_t i = p0; i < p1; i++)
	{
		eng_rescore_pair *pr = &rs->pairs[i];
		mcc_template_view v;

		if (p->cancel && atomic_load(p->cancel))
			return;
		eng_cache_template(rs->cache, pr->entry, buf, &v);
		if (mcc_match_candidate(w, &v, p->method, NULL, &pr->score, &err) != MCC_OK)
		{
			eng_job_error_set(&rs->fail, &err);
			return;
		}
	}
}

/* Skip the rest once every probe is gone. */
static bool
rescore_dead(eng_job *job)
{
	eng_rescore *rs = (eng_rescore *) job;

	for (uint32_t i = 0; i < rs->n_probes; i++)
		if (rs->probes[i].n > 0 &&
			(rs->probes[i].cancel == NULL || !atomic_load(rs->probes[i].cancel)))
			return false;
	return true;
}

/*
 * Cut the pairs of the probes not on the GPU into CPU parts: at most
 * ENG_RESCORE_PART pairs, never two probes in one part. False if no memory.
 */
static bool
cpu_parts(eng_rescore *rs)
{
	uint64_t	n_parts = 0;
	uint32_t	k = 0;

	for (uint32_t i = 0; i < rs->n_probes; i++)
		if (!rs->probes[i].on_gpu)
			n_parts += (rs->probes[i].n + ENG_RESCORE_PART - 1) / ENG_RESCORE_PART;
	if (n_parts >= UINT32_MAX)
		return false;
	free(rs->part_first);
	free(rs->part_probe);
	rs->part_first = malloc(((size_t) n_parts + 1) * sizeof(uint32_t));
	rs->part_probe = malloc(((size_t) n_parts + 1) * sizeof(uint32_t));
	if (rs->part_first == NULL || rs->part_probe == NULL)
		return false;
	for (uint32_t i = 0; i < rs->n_probes; i++)
		for (uint32_t j = 0; !rs->probes[i].on_gpu && j < rs->probes[i].n; j += ENG_RESCORE_PART)
		{
			rs->part_probe[k] = i;
			rs->part_first[k++] = rs->probes[i].first + j;
		}
	rs->part_first[k] = rs->n_pairs;
	rs->job.run = rescore_run;
	rs->job.dead = rescore_dead;
	rs->job.n_parts = k;
	return true;
}

/* The whole job on the GPU, as one part (eng_gpu_refine). */
static void
rescore_gpu_run(eng_job *job, uint32_t part, void *scratch)
{
	eng_rescore *rs = (eng_rescore *) job;

	rs->gpu_outcome = eng_gpu_refine(rs->gpu, rs, &rs->gpu_err);
}

/* Queue the job's probes not on the GPU on the CPU threads. */
static void
submit_cpu(eng_server *s, eng_rescore *rs)
{
	rs->gpu = NULL;
	if (!cpu_parts(rs))
	{
		mcc_error	err;

		mcc_error_set(&err, MCC_ERR_MEMORY, "out of memory");
		eng_job_error_set(&rs->fail, &err);
		rs->job.n_parts = 0;
	}
	eng_server_submit(s, s->pool, &rs->job);
}

void
eng_refine_candidates(eng_server *s, eng_rescore *rs)
{
	bool		gpu = false;

	/*
	 * On the GPU when the cache's mirror can take the job: one part hands
	 * the pairs of all the pass's probes of the device's methods to the
	 * library (the batching of the pass carries over), as eng_batch_use_gpu
	 * does for a pass; the rest follows on the CPU threads. A failure comes
	 * back to eng_pass.c, which logs it and runs the stage again on the
	 * CPU (eng_rescore_next).
	 */
	if (rs->n_pairs > 0 && !s->cfg.gpu_refine_off && eng_gpu_refine_wants(s->gpu, rs->cache))
		for (uint32_t i = 0; i < rs->n_probes; i++)
		{
			rs->probes[i].on_gpu = rs->probes[i].n > 0 &&
				eng_gpu_refine_method(rs->probes[i].method);
			gpu = gpu || rs->probes[i].on_gpu;
		}
	if (!gpu)
	{
		submit_cpu(s, rs);
		return;
	}
	rs->gpu = s->gpu;
	rs->gpu_outcome = ENG_GPU_DONE;
	mcc_error_clear(&rs->gpu_err);
	rs->job.run = rescore_gpu_run;
	rs->job.dead = rescore_dead;
	rs->job.n_parts = 1;
	eng_server_submit(s, s->pool, &rs->job);
}

bool
eng_rescore_gpu_failed(const eng_rescore *rs)
{
	return rs->gpu != NULL && rs->gpu_outcome != ENG_GPU_DONE;
}

bool
eng_rescore_next(eng_server *s, eng_rescore *rs)
{
	bool		left = false;

	if (rs->gpu == NULL)
		return false;			/* the CPU stage came back: complete */
	for (uint32_t i = 0; i < rs->n_probes; i++)
	{
		if (rs->gpu_outcome != ENG_GPU_DONE)
			rs->probes[i].on_gpu = false;
		left = left || (!rs->probes[i].on_gpu && rs->probes[i].n > 0);
	}
	rs->gpu = NULL;
	if (!left)
		return false;
	submit_cpu(s, rs);
	return true;
}

void
eng_rescore_run_here(eng_rescore *rs)
{
	void	   *scratch = malloc(eng_rescore_scratch_bytes());

	if (scratch == NULL || !cpu_parts(rs))
	{
		free(scratch);
		return;
	}
	for (uint32_t p = 0; p < rs->job.n_parts; p++)
		rescore_run(&rs->job, p, scratch);
	free(scratch);
}
