/*
 * mcc_job.c: the thread runner shared by the threaded jobs (mcc_job.h).
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "mcc_job.h"

/* Start up to n threads with every signal blocked (mcc_job.h). */
int
mcc_job_start_threads(pthread_t *tids, int n, void *(*fn) (void *), void *args, size_t stride)
{
	sigset_t	all,
				old;
	int			started = 0;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (int i = 0; i < n; i++)
	{
		if (pthread_create(&tids[i], NULL, fn, (char *) args + (size_t) i * stride) != 0)
			break;
		started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return started;
}

/* Shares of n items of at least per_share each (mcc_job.h). */
int
mcc_job_shares(size_t n, size_t per_share, int max)
{
	long		cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t		k = per_share ? n / per_share : 1;

	if (k > (size_t) max)
		k = (size_t) max;
	if (cpus > 0 && k > (size_t) cpus)
		k = (size_t) cpus;
	return k > 1 ? (int) k : 1;
}

/* Run n workers, w[0] and any not started here, and join them (mcc_job.h). */
void
mcc_job_run_each(int n, void *(*fn) (void *), void *args, size_t stride)
{
	pthread_t  *tids = n > 1 ? malloc((size_t) (n - 1) * sizeof(pthread_t)) : NULL;
	int			started = tids ? mcc_job_start_threads(tids, n - 1, fn, (char *) args + stride, stride) : 0;

	if (n > 0)
		fn(args);
	for (int i = started + 1; i < n; i++)
		fn((char *) args + (size_t) i * stride);
	for (int i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	free(tids);
}

/* Run fn(arg) on n threads and join them (mcc_job.h). */
void
mcc_job_run_shared(int n, void *(*fn) (void *), void *arg)
{
	pthread_t  *tids = n > 0 ? malloc((size_t) n * sizeof(pthread_t)) : NULL;
	int			started = tids ? mcc_job_start_threads(tids, n, fn, arg, 0) : 0;

	for (int i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	free(tids);
	if (started == 0)
		fn(arg);
}

/* Stop, join, and tear down workers that wait on cv for work or *stop (mcc_job.h). */
void
mcc_job_shutdown(pthread_mutex_t *mu, pthread_cond_t *cv, bool *stop, pthread_t *tids, int n)
{
	pthread_mutex_lock(mu);
	*stop = true;
	pthread_cond_broadcast(cv);
	pthread_mutex_unlock(mu);
	for (int i = 0; i < n; i++)
		pthread_join(tids[i], NULL);
	pthread_cond_destroy(cv);
	pthread_mutex_destroy(mu);
}

/* Set up a zeroed runner for n threads (not started). */
int
mcc_job_runner_init(mcc_job_runner *r, int n)
{
	atomic_init(&r->cancel, 0);
	r->status = MCC_OK;
	r->tids = calloc((size_t) n, sizeof(pthread_t));
	return r->tids != NULL;
}

/* Free what a runner holds. */
void
mcc_job_runner_free(mcc_job_runner *r)
{
	free(r->tids);
	r->tids = NULL;
	if (r->sync_ok)
	{
		pthread_mutex_destroy(&r->mu);
		pthread_cond_destroy(&r->cv);
		r->sync_ok = 0;
	}
}

/* Initialize the mutex and condition variable. */
mcc_status
mcc_job_sync_init(mcc_job_runner *r, mcc_error *err)
{
	if (pthread_mutex_init(&r->mu, NULL) != 0)
		return mcc_error_set(err, MCC_ERR_INTERNAL, "could not initialize a mutex");
	if (pthread_cond_init(&r->cv, NULL) != 0)
	{
		pthread_mutex_destroy(&r->mu);
		return mcc_error_set(err, MCC_ERR_INTERNAL, "could not initialize a condition variable");
	}
	r->sync_ok = 1;
	return MCC_OK;
}

/* Start the threads with every signal blocked. */
mcc_status
mcc_job_runner_start(mcc_job_runner *r, int n, void *(*fn) (void *), void *args, size_t stride,
					 const char *what, mcc_error *err)
{
	mcc_status	st;

	if ((st = mcc_job_sync_init(r, err)) != MCC_OK)
		return st;
	/* counted before they start: a thread may finish before the loop ends */
	pthread_mutex_lock(&r->mu);
	r->running += n;
	pthread_mutex_unlock(&r->mu);
	r->nthreads = mcc_job_start_threads(r->tids, n, fn, args, stride);
	pthread_mutex_lock(&r->mu);
	r->running -= n - r->nthreads;
	pthread_mutex_unlock(&r->mu);
	if (r->nthreads == 0)
		return mcc_error_set(err, MCC_ERR_MEMORY, "could not start %s", what);
	/* fewer threads than asked still take every piece of work */
	return MCC_OK;
}

/* Called by each worker thread as its last act. */
void
mcc_job_thread_exit(mcc_job_runner *r)
{
	pthread_mutex_lock(&r->mu);
	r->running--;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

/* Wait for the threads to finish, at most timeout_ms. */
int
mcc_job_wait(mcc_job_runner *r, int timeout_ms)
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
	pthread_mutex_lock(&r->mu);
	while (r->running > 0)
	{
		if (timeout_ms < 0)
			pthread_cond_wait(&r->cv, &r->mu);
		else if (pthread_cond_timedwait(&r->cv, &r->mu, &until) == ETIMEDOUT)
			break;
	}
	done = r->running == 0;
	pthread_mutex_unlock(&r->mu);
	return done;
}

/* Join every started thread. */
void
mcc_job_join(mcc_job_runner *r)
{
	for (int i = 0; i < r->nthreads; i++)
		pthread_join(r->tids[i], NULL);
}

/* Raise the cancel flag and join every started thread. */
void
mcc_job_cancel_join(mcc_job_runner *r)
{
	atomic_store(&r->cancel, 1);
	mcc_job_join(r);
}

/* Record the first failure and stop the others. */
void
mcc_job_fail(mcc_job_runner *r, const mcc_error *err)
{
	pthread_mutex_lock(&r->mu);
	if (r->status == MCC_OK)
	{
		r->status = err->status;
		r->error = *err;
	}
	pthread_mutex_unlock(&r->mu);
	atomic_store(&r->cancel, 1);
}

/* The first failure recorded, or MCC_OK. */
mcc_status
mcc_job_status(const mcc_job_runner *r, mcc_error *err)
{
	if (r->status != MCC_OK)
		*err = r->error;
	return r->status;
}
