/*
 * mcc_sad_job.c: a SAD plan run by worker threads (mcc_sad.h).
 *
 * Every thread takes the next band from an atomic counter until none is
 * left or the cancel flag is up, offering hits to its own top-k set; the
 * sets are merged at the end, so the result does not depend on which
 * thread did which band. Everything the threads use is allocated before
 * they start, and they are created with every signal blocked: signal
 * handlers (PostgreSQL's among them) run in the caller's thread only.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_job.h"
#include "mcc_sad.h"

typedef struct sad_worker
{
	struct mcc_sad_job *job;
	void	   *scratch;
	mcc_sad_topk topk;
} sad_worker;

struct mcc_sad_job
{
	mcc_sad_plan *plan;
	uint64_t   *map;
	uint32_t	k;				/* hits wanted, at most the positions */
	uint32_t	bands;
	int			nworkers;		/* worker slots allocated */
	sad_worker *workers;
	atomic_uint next;			/* next band to take */
	atomic_uint done;			/* bands finished */
	mcc_job_runner run;			/* threads, cancel flag */
};

/* Thread body: bands until none is left or the job is cancelled. */
static void *
worker_main(void *arg)
{
	sad_worker *w = arg;
	mcc_sad_job *job = w->job;

	while (!mcc_job_cancelled(&job->run))
	{
		unsigned	b = atomic_fetch_add(&job->next, 1);

		if (b >= job->bands)
			break;
		mcc_sad_plan_band(job->plan, b, w->scratch, job->map, job->k ? &w->topk : NULL);
		atomic_fetch_add(&job->done, 1);
	}
	mcc_job_thread_exit(&job->run);
	return NULL;
}

/* Free a job whose threads have been joined. */
static void
job_free(mcc_sad_job *job)
{
	if (job->workers)
		for (int i = 0; i < job->nworkers; i++)
		{
			free(job->workers[i].scratch);
			free(job->workers[i].topk.hits);
		}
	free(job->workers);
	mcc_job_runner_free(&job->run);
	mcc_sad_plan_free(job->plan);
	free(job);
}

/* Check a request's scalar arguments. */
static mcc_status
check_request(const mcc_sad_request *req, mcc_error *err)
{
	if (req->k > MCC_SAD_MAX_K)
		return mcc_error_set(err, MCC_ERR_LIMIT, "k is too large: %u", req->k),
			mcc_error_detail(err, "At most %d hits are returned; the SAD map gives every position.",
							 MCC_SAD_MAX_K);
	if (req->threads < 1 || req->threads > MCC_SAD_MAX_THREADS)
		return mcc_error_set(err, MCC_ERR_VALUE, "thread count %d is outside 1..%d",
							 req->threads, MCC_SAD_MAX_THREADS);
	return MCC_OK;
}

/*
 * Allocate a job with the plan and per-thread memory for n threads (not
 * started).
 */
static mcc_status
job_create(const mcc_sad_request *req, int n, mcc_sad_job **out, mcc_error *err)
{
	mcc_sad_job *job;
	mcc_status	st;
	uint32_t	nx,
				ny;
	size_t		scratch;

	*out = NULL;
	if ((st = check_request(req, err)) != MCC_OK)
		return st;
	job = calloc(1, sizeof(*job));
	if (job == NULL)
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for a SAD search");
	if ((st = mcc_sad_plan_create(req->target, req->pattern, req->kernel, &job->plan, err)) != MCC_OK)
	{
		free(job);
		return st;
	}
	mcc_sad_plan_size(job->plan, &nx, &ny);
	job->map = req->map;
	job->k = (uint64_t) nx * ny < req->k ? (uint32_t) ((uint64_t) nx * ny) : req->k;
	job->bands = mcc_sad_plan_bands(job->plan);
	atomic_init(&job->next, 0);
	atomic_init(&job->done, 0);
	scratch = mcc_sad_plan_scratch(job->plan);
	job->workers = calloc((size_t) n, sizeof(sad_worker));
	if (!mcc_job_runner_init(&job->run, n) || job->workers == NULL)
		goto oom;
	job->nworkers = n;
	for (int i = 0; i < n; i++)
	{
		sad_worker *w = &job->workers[i];

		w->job = job;
		w->scratch = aligned_alloc(64, scratch);
		w->topk.k = job->k;
		w->topk.hits = job->k ? malloc(job->k * sizeof(mcc_sad_hit)) : NULL;
		if (w->scratch == NULL || (job->k && w->topk.hits == NULL))
			goto oom;
	}
	*out = job;
	return MCC_OK;
oom:
	job_free(job);
	return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for a SAD search");
}

/* Start the workers of a job; fewer threads than asked still take every band. */
mcc_status
mcc_sad_start(const mcc_sad_request *req, mcc_sad_job **out, mcc_error *err)
{
	mcc_sad_job *job;
	mcc_status	st;

	*out = NULL;
	if ((st = job_create(req, req->threads, &job, err)) != MCC_OK)
		return st;
	if ((st = mcc_job_runner_start(&job->run, req->threads, worker_main, job->workers,
								   sizeof(sad_worker), "SAD worker threads", err)) != MCC_OK)
	{
		job_free(job);
		return st;
	}
	*out = job;
	return MCC_OK;
}

/* Wait for the threads to finish, at most timeout_ms. */
int
mcc_sad_wait(mcc_sad_job *job, int timeout_ms)
{
	return mcc_job_wait(&job->run, timeout_ms);
}

/* Fraction of bands done. */
double
mcc_sad_progress(const mcc_sad_job *job)
{
	return job->bands ? (double) atomic_load(&job->done) / job->bands : 1.0;
}

/* Merge the workers' top-k sets into the first one, sort, copy out. */
static void
merge_hits(mcc_sad_job *job, int nworkers, mcc_sad_hit *hits, uint32_t *n_hits)
{
	mcc_sad_topk *t0 = &job->workers[0].topk;

	for (int i = 1; i < nworkers; i++)
	{
		mcc_sad_topk *t = &job->workers[i].topk;

		for (uint32_t j = 0; j < t->n; j++)
			mcc_sad_topk_offer(t0, &t->hits[j]);
	}
	mcc_sad_topk_sort(t0);
	if (hits && t0->n)
		memcpy(hits, t0->hits, t0->n * sizeof(mcc_sad_hit));
	if (n_hits)
		*n_hits = t0->n;
}

/* Wait, merge and free. */
mcc_status
mcc_sad_finish(mcc_sad_job *job, mcc_sad_hit *hits, uint32_t *n_hits, mcc_error *err)
{
	mcc_job_wait(&job->run, -1);
	mcc_job_join(&job->run);
	merge_hits(job, job->run.nthreads, hits, n_hits);
	job_free(job);
	return MCC_OK;
}

/* Cancel, join, free. */
void
mcc_sad_abort(mcc_sad_job *job)
{
	if (job == NULL)
		return;
	mcc_job_cancel_join(&job->run);
	job_free(job);
}

/* Run to the end, inline for one thread. */
mcc_status
mcc_sad_run(const mcc_sad_request *req, mcc_sad_hit *hits, uint32_t *n_hits, mcc_error *err)
{
	mcc_sad_job *job;
	mcc_status	st;

	if (req->threads != 1)
	{
		if ((st = mcc_sad_start(req, &job, err)) != MCC_OK)
			return st;
		return mcc_sad_finish(job, hits, n_hits, err);
	}
	if ((st = job_create(req, 1, &job, err)) != MCC_OK)
		return st;
	for (uint32_t b = 0; b < job->bands; b++)
		mcc_sad_plan_band(job->plan, b, job->workers[0].scratch, job->map,
						  job->k ? &job->workers[0].topk : NULL);
	merge_hits(job, 1, hits, n_hits);
	job_free(job);
	return MCC_OK;
}
