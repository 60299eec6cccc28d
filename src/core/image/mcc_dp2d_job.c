/*
 * mcc_dp2d_job.c: a batch of elastic matches run by worker threads
 * (mcc_dp2d.h).
 *
 * Two ways to share the work, chosen by the batch:
 *   - pairs: at least as many pairs as threads; each thread takes the next
 *     whole pair (own buffers), so there is no waiting at all;
 *   - rows: fewer pairs than threads; every pair gets its own buffers and
 *     the threads take single rows of a (step 1 of mcc_dp2d.c) from a
 *     counter running over all pairs' rows. The thread that completes a
 *     pair's last row runs its steps 2 and 3.
 * The cancel flag is checked before every row. Everything is allocated
 * before the threads start; they are created with every signal blocked,
 * so signal handlers (PostgreSQL's among them) run in the caller's thread
 * only. Results do not depend on which thread did what.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_dp2d_int.h"
#include "mcc_job.h"

typedef struct dp2d_worker
{
	struct mcc_dp2d_job *job;
	mcc_dp2d_scratch scratch;
	mcc_dp2d_pairbuf pair;		/* pairs mode: this thread's pair buffer */
} dp2d_worker;

/* Rows mode: a pair's buffer, the task of its first row, its rows done. */
typedef struct dp2d_pair
{
	mcc_dp2d_pairbuf buf;
	uint64_t	first;			/* rows of the pairs before it */
	atomic_uint rows_done;
} dp2d_pair;

struct mcc_dp2d_job
{
	uint32_t	npairs;
	const mcc_image *const *a;
	const mcc_image *const *b;
	mcc_dp2d_out *out;
	int			flags;
	const mcc_dp2d_kern *kern;	/* NULL: the reference kernel */
	int			by_rows;
	uint64_t	total_rows;
	dp2d_pair  *pairs;			/* rows mode: one per pair */
	int			nworkers;
	dp2d_worker *workers;
	void	   *mem;			/* every buffer, one allocation */
	atomic_ullong next;			/* next task: a pair, or a row of the batch */
	atomic_ullong rows_done;
	mcc_job_runner run;			/* threads, cancel flag, first failure */
};

/* Pairs mode: whole pairs until none is left. */
static void
run_pairs(dp2d_worker *w)
{
	mcc_dp2d_job *job = w->job;
	mcc_error	err;

	while (!mcc_job_cancelled(&job->run))
	{
		unsigned long long p = atomic_fetch_add(&job->next, 1);
		const mcc_image *a,
				   *b;
		mcc_dp2d_geom g;
		mcc_status	st;

		if (p >= job->npairs)
			break;
		a = job->a[p];
		b = job->b[p];
		if (job->kern == NULL)
		{
			st = mcc_dp2d_match_ref(a, b, job->flags, &job->out[p], &err);
			atomic_fetch_add(&job->rows_done, a->height);
		}
		else
		{
			mcc_dp2d_geom_init(&g, job->kern, a, b);
			mcc_dp2d_pair_prepare(job->kern, &g, b, &w->pair);
			for (uint32_t i = 0; i < g.ha; i++)
			{
				if (mcc_job_cancelled(&job->run))
					return;
				mcc_dp2d_pair_row(job->kern, &g, a, i, &w->pair, &w->scratch);
				atomic_fetch_add(&job->rows_done, 1);
			}
			st = mcc_dp2d_pair_finish(job->kern, &g, a, b, job->flags, &w->pair, &w->scratch,
									  &job->out[p], &err);
		}
		if (st != MCC_OK)
		{
			mcc_job_fail(&job->run, &err);
			return;
		}
	}
}

/* Rows mode: single rows of any pair; the last row of a pair finishes it. */
static void
run_rows(dp2d_worker *w)
{
	mcc_dp2d_job *job = w->job;
	uint32_t	p = 0;
	mcc_error	err;

	while (!mcc_job_cancelled(&job->run))
	{
		unsigned long long t = atomic_fetch_add(&job->next, 1);
		const mcc_image *a,
				   *b;
		dp2d_pair  *pr;
		mcc_dp2d_geom g;

		if (t >= job->total_rows)
			break;
		while (t >= job->pairs[p].first + job->a[p]->height)	/* tasks only grow */
			p++;
		pr = &job->pairs[p];
		a = job->a[p];
		b = job->b[p];
		mcc_dp2d_geom_init(&g, job->kern, a, b);
		mcc_dp2d_pair_row(job->kern, &g, a, (uint32_t) (t - pr->first), &pr->buf, &w->scratch);
		atomic_fetch_add(&job->rows_done, 1);
		if (atomic_fetch_add(&pr->rows_done, 1) + 1 == g.ha &&
			mcc_dp2d_pair_finish(job->kern, &g, a, b, job->flags, &pr->buf, &w->scratch,
								 &job->out[p], &err) != MCC_OK)
		{
			mcc_job_fail(&job->run, &err);
			return;
		}
	}
}

/* Thread body. */
static void *
worker_main(void *arg)
{
	dp2d_worker *w = arg;
	mcc_dp2d_job *job = w->job;

	if (job->by_rows)
		run_rows(w);
	else
		run_pairs(w);
	mcc_job_thread_exit(&job->run);
	return NULL;
}

/* Free a job whose threads have been joined. */
static void
job_free(mcc_dp2d_job *job)
{
	free(job->mem);
	free(job->workers);
	free(job->pairs);
	mcc_job_runner_free(&job->run);
	free(job);
}

/* Check the request and every pair; the largest sizes go to d. */
static mcc_status
check_request(const mcc_dp2d_request *req, mcc_dp2d_maxdims *d, mcc_error *err)
{
	mcc_status	st;

	if (req->npairs < 1 || req->npairs > MCC_DP2D_MAX_PAIRS)
		return mcc_error_set(err, MCC_ERR_LIMIT, "pair count %u is outside 1..%u", req->npairs,
							 MCC_DP2D_MAX_PAIRS);
	if (req->threads < 1 || req->threads > MCC_DP2D_MAX_THREADS)
		return mcc_error_set(err, MCC_ERR_VALUE, "thread count %d is outside 1..%d",
							 req->threads, MCC_DP2D_MAX_THREADS);
	if (req->a == NULL || req->b == NULL || req->out == NULL)
		return mcc_error_set(err, MCC_ERR_VALUE, "missing arrays in an elastic matching request");
	memset(d, 0, sizeof(*d));
	for (uint32_t p = 0; p < req->npairs; p++)
	{
		const mcc_image *a = req->a[p],
				   *b = req->b[p];

		if ((st = mcc_dp2d_check(a, b, err)) != MCC_OK)
		{
			if (req->npairs > 1 && err != NULL && err->detail[0] == '\0')
				mcc_error_detail(err, "In pair %u of the batch.", p);
			return st;
		}
		if (a->height > d->ha)
			d->ha = a->height;
		if (a->width > d->wa)
			d->wa = a->width;
		if (b->height > d->hb)
			d->hb = b->height;
		if (b->width > d->wb)
			d->wb = b->width;
	}
	return MCC_OK;
}

/* Allocate a job for n threads with every buffer (not started). */
static mcc_status
job_create(const mcc_dp2d_request *req, int n, mcc_dp2d_job **out, mcc_error *err)
{
	mcc_dp2d_job *job;
	mcc_dp2d_maxdims d;
	mcc_status	st;
	size_t		pbsize,
				ssize,
				total;
	int			npb;
	char	   *p;

	*out = NULL;
	if ((st = check_request(req, &d, err)) != MCC_OK)
		return st;
	if (req->kernel != MCC_DP2D_REFERENCE && mcc_dp2d_kern_get(req->kernel) == NULL)
		return mcc_error_set(err, MCC_ERR_VALUE, "elastic matching kernel %d is not usable here",
							 req->kernel);
	if ((job = calloc(1, sizeof(*job))) == NULL)
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for elastic matching");
	job->npairs = req->npairs;
	job->a = req->a;
	job->b = req->b;
	job->out = req->out;
	job->flags = req->flags;
	job->kern = req->kernel == MCC_DP2D_REFERENCE ? NULL : mcc_dp2d_kern_get(req->kernel);
	job->by_rows = job->kern != NULL && req->npairs < (uint32_t) n;
	job->nworkers = n;
	atomic_init(&job->next, 0);
	atomic_init(&job->rows_done, 0);
	for (uint32_t q = 0; q < req->npairs; q++)
		job->total_rows += req->a[q]->height;

	/* buffers: per-pair ones (rows mode) or one per worker, then scratches */
	pbsize = job->kern ? mcc_dp2d_pairbuf_size(&d) : 0;
	ssize = job->kern ? mcc_dp2d_scratch_size(&d, req->flags) : 0;
	npb = job->by_rows ? (int) req->npairs : n;
	total = (size_t) npb * pbsize + (size_t) n * ssize;
	job->workers = calloc((size_t) n, sizeof(dp2d_worker));
	if (!mcc_job_runner_init(&job->run, n) || job->workers == NULL ||
		(total > 0 && (job->mem = aligned_alloc(64, total)) == NULL))
		goto oom;
	p = job->mem;
	if (job->by_rows)
	{
		uint64_t	first = 0;

		if ((job->pairs = calloc(req->npairs, sizeof(dp2d_pair))) == NULL)
			goto oom;
		for (uint32_t q = 0; q < req->npairs; q++)
		{
			dp2d_pair  *pr = &job->pairs[q];
			mcc_dp2d_geom g;

			mcc_dp2d_pairbuf_init(&pr->buf, p, &d);
			p += pbsize;
			mcc_dp2d_geom_init(&g, job->kern, req->a[q], req->b[q]);
			mcc_dp2d_pair_prepare(job->kern, &g, req->b[q], &pr->buf);
			pr->first = first;
			atomic_init(&pr->rows_done, 0);
			first += req->a[q]->height;
		}
	}
	for (int i = 0; i < n; i++)
	{
		dp2d_worker *w = &job->workers[i];

		w->job = job;
		if (job->kern == NULL)
			continue;
		if (!job->by_rows)
		{
			mcc_dp2d_pairbuf_init(&w->pair, p, &d);
			p += pbsize;
		}
		mcc_dp2d_scratch_init(&w->scratch, p, &d, req->flags);
		p += ssize;
	}
	*out = job;
	return MCC_OK;
oom:
	job_free(job);
	return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for elastic matching");
}

/* Start the workers of a job; fewer threads than asked still take every task. */
mcc_status
mcc_dp2d_start(const mcc_dp2d_request *req, mcc_dp2d_job **out, mcc_error *err)
{
	mcc_dp2d_job *job;
	mcc_status	st;

	*out = NULL;
	if ((st = job_create(req, req->threads, &job, err)) != MCC_OK)
		return st;
	if ((st = mcc_job_runner_start(&job->run, req->threads, worker_main, job->workers,
								   sizeof(dp2d_worker), "elastic matching threads",
								   err)) != MCC_OK)
	{
		job_free(job);
		return st;
	}
	*out = job;
	return MCC_OK;
}

/* Wait for the threads to finish, at most timeout_ms. */
int
mcc_dp2d_wait(mcc_dp2d_job *job, int timeout_ms)
{
	return mcc_job_wait(&job->run, timeout_ms);
}

/* Fraction of rows done. */
double
mcc_dp2d_progress(const mcc_dp2d_job *job)
{
	return job->total_rows ? (double) atomic_load(&job->rows_done) / (double) job->total_rows : 1.0;
}

/* Wait, join, report the first failure, free. */
mcc_status
mcc_dp2d_finish(mcc_dp2d_job *job, mcc_error *err)
{
	mcc_status	st;

	mcc_job_wait(&job->run, -1);
	mcc_job_join(&job->run);
	st = mcc_job_status(&job->run, err);
	job_free(job);
	return st;
}

/* Cancel, join, free. */
void
mcc_dp2d_abort(mcc_dp2d_job *job)
{
	if (job == NULL)
		return;
	mcc_job_cancel_join(&job->run);
	job_free(job);
}

/* Run to the end, inline for one thread. */
mcc_status
mcc_dp2d_run(const mcc_dp2d_request *req, mcc_error *err)
{
	mcc_dp2d_job *job;
	mcc_status	st;

	if (req->threads != 1)
	{
		if ((st = mcc_dp2d_start(req, &job, err)) != MCC_OK)
			return st;
		return mcc_dp2d_finish(job, err);
	}
	if ((st = job_create(req, 1, &job, err)) != MCC_OK)
		return st;
	/* one worker in this thread: no threads, but mcc_job_fail's mutex is set up too */
	if ((st = mcc_job_sync_init(&job->run, err)) != MCC_OK)
	{
		job_free(job);
		return st;
	}
	run_pairs(&job->workers[0]);
	st = mcc_job_status(&job->run, err);
	job_free(job);
	return st;
}
