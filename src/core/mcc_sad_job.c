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

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
	int			nthreads;		/* threads started */
	pthread_t  *tids;
	sad_worker *workers;
	atomic_uint next;			/* next band to take */
	atomic_uint done;			/* bands finished */
	atomic_int	cancel;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int			running;		/* threads not yet finished (under mu) */
	int			sync_ok;		/* mu and cv initialized */
};

/* Thread body: bands until none is left or the job is cancelled. */
static void *
worker_main(void *arg)
{
	sad_worker *w = arg;
	mcc_sad_job *job = w->job;

	while (!atomic_load_explicit(&job->cancel, memory_order_relaxed))
	{
		unsigned	b = atomic_fetch_add(&job->next, 1);

		if (b >= job->bands)
			break;
		mcc_sad_plan_band(job->plan, b, w->scratch, job->map, job->k ? &w->topk : NULL);
		atomic_fetch_add(&job->done, 1);
	}
	pthread_mutex_lock(&job->mu);
	job->running--;
	pthread_cond_broadcast(&job->cv);
	pthread_mutex_unlock(&job->mu);
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
	free(job->tids);
	if (job->sync_ok)
	{
		pthread_mutex_destroy(&job->mu);
		pthread_cond_destroy(&job->cv);
	}
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
	atomic_init(&job->cancel, 0);
	scratch = mcc_sad_plan_scratch(job->plan);
	job->workers = calloc((size_t) n, sizeof(sad_worker));
	job->tids = calloc((size_t) n, sizeof(pthread_t));
	if (job->workers == NULL || job->tids == NULL)
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

/* Start the workers of a job. */
mcc_status
mcc_sad_start(const mcc_sad_request *req, mcc_sad_job **out, mcc_error *err)
{
	mcc_sad_job *job;
	mcc_status	st;
	sigset_t	all,
				old;
	int			n = req->threads;

	*out = NULL;
	if ((st = job_create(req, n, &job, err)) != MCC_OK)
		return st;
	if (pthread_mutex_init(&job->mu, NULL) != 0)
	{
		job_free(job);
		return mcc_error_set(err, MCC_ERR_INTERNAL, "could not initialize a mutex");
	}
	if (pthread_cond_init(&job->cv, NULL) != 0)
	{
		pthread_mutex_destroy(&job->mu);
		job_free(job);
		return mcc_error_set(err, MCC_ERR_INTERNAL, "could not initialize a condition variable");
	}
	job->sync_ok = 1;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (int i = 0; i < n; i++)
	{
		pthread_mutex_lock(&job->mu);
		job->running++;
		pthread_mutex_unlock(&job->mu);
		if (pthread_create(&job->tids[i], NULL, worker_main, &job->workers[i]) != 0)
		{
			pthread_mutex_lock(&job->mu);
			job->running--;
			pthread_mutex_unlock(&job->mu);
			break;
		}
		job->nthreads = i + 1;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (job->nthreads == 0)
	{
		job_free(job);
		return mcc_error_set(err, MCC_ERR_MEMORY, "could not start SAD worker threads");
	}
	/* fewer threads than asked still take every band */
	*out = job;
	return MCC_OK;
}

/* Wait for the threads to finish, at most timeout_ms. */
int
mcc_sad_wait(mcc_sad_job *job, int timeout_ms)
{
	struct timespec until;
	int			done;

	clock_gettime(CLOCK_REALTIME, &until);
	if (timeout_ms >= 0)
	{
		until.tv_sec += timeout_ms / 1000;
		until.tv_nsec += (long) (timeout_ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L)
		{
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
	}
	pthread_mutex_lock(&job->mu);
	while (job->running > 0)
	{
		if (timeout_ms < 0)
			pthread_cond_wait(&job->cv, &job->mu);
		else if (pthread_cond_timedwait(&job->cv, &job->mu, &until) == ETIMEDOUT)
			break;
	}
	done = job->running == 0;
	pthread_mutex_unlock(&job->mu);
	return done;
}

/* Fraction of bands done. */
double
mcc_sad_progress(const mcc_sad_job *job)
{
	return job->bands ? (double) atomic_load(&job->done) / job->bands : 1.0;
}

/* Join every started thread. */
static void
join_all(mcc_sad_job *job)
{
	for (int i = 0; i < job->nthreads; i++)
		pthread_join(job->tids[i], NULL);
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
	mcc_sad_wait(job, -1);
	join_all(job);
	merge_hits(job, job->nthreads, hits, n_hits);
	job_free(job);
	return MCC_OK;
}

/* Cancel, join, free. */
void
mcc_sad_abort(mcc_sad_job *job)
{
	if (job == NULL)
		return;
	atomic_store(&job->cancel, 1);
	join_all(job);
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
