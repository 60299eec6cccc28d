/*
 * mcc_job.h: the thread runner shared by the jobs of src/core that run a
 * piece of work on worker threads (mcc_sad_job.c, mcc_dp2d_job.c).
 *
 * mcc_job_start_threads() is the one place threads are started in src/core
 * and the engine (mcc_job_runner_start, mcc_chamfer_cpu.c's evaluator,
 * src/engine/eng_pool.c) and, through mcc_job_run_shared(), in the tools.
 *
 * A runner holds the threads, the count of those still running (under a
 * mutex, with a condition variable to wait on), the cancel flag the
 * workers poll, and the first failure a worker reports. The job that owns
 * it allocates its own per-thread data; the runner starts one thread per
 * element of that array. Threads are created with every signal blocked,
 * so signal handlers (PostgreSQL's among them) run in the caller's thread
 * only. Internal to src/core.
 */
#ifndef MCC_JOB_H
#define MCC_JOB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "mcc_error.h"

#include "mcc_job_shares.h"

typedef struct mcc_job_runner
{
	int			nthreads;		/* threads started */
	pthread_t  *tids;
	atomic_int	cancel;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int			running;		/* threads not yet finished (under mu) */
	int			sync_ok;		/* mu and cv initialized */
	mcc_status	status;			/* first failure (under mu) */
	mcc_error	error;
} mcc_job_runner;

/*
 * Start up to n threads running fn, the i-th on (char *) args + i * stride
 * (stride 0: all on args), with every signal blocked in them, so that
 * signal handlers (PostgreSQL's among them) run in the caller's threads
 * only. Stops at the first that cannot be created; returns how many
 * started (tids[0..that) are valid).
 */
int			mcc_job_start_threads(pthread_t *tids, int n, void *(*fn) (void *),
								  void *args, size_t stride);

/*
 * Run fn(arg) on n threads at once, every one on the same arg (workers that
 * share the work among themselves), and wait for them all. Where no thread
 * can be started, fn runs on the calling thread. For the tools and checks
 * whose workers need no runner (no cancel, no failure to report).
 */
void		mcc_job_run_shared(int n, void *(*fn) (void *), void *arg);

/*
 * For workers that share n items through a counter (*next, from 0), as
 * those of mcc_job_run_shared do: the first of the next `step` items this
 * worker takes, or -1 when none is left.
 */
static inline int
mcc_job_claim(atomic_int *next, int step, int n)
{
	int			i = atomic_fetch_add(next, step);

	return i < n ? i : -1;
}

/*
 * Run n workers fn on (char *) args + i * stride, i = 0 .. n - 1, and wait
 * for them all: worker 0 on the calling thread, the others on threads of
 * their own (any that cannot be started run on the calling thread after
 * it). For work split into shares whose results the caller merges; with
 * stride 0, workers that all take the parts of one job in turn (an atomic
 * counter in args: those that run finish it).
 */
void		mcc_job_run_each(int n, void *(*fn) (void *), void *args, size_t stride);

/*
 * Shut down long-lived workers of one's own that sleep on cv (under mu)
 * until there is work or *stop (the engine's pool, a load's prefault
 * threads): raise *stop under mu, wake them all, join the n threads of
 * tids, then destroy cv and mu, which nothing uses any more.
 */
void		mcc_job_shutdown(pthread_mutex_t *mu, pthread_cond_t *cv, bool *stop,
							 pthread_t *tids, int n);

/* Set up a zeroed runner for n threads (not started); 0 when out of memory. */
int			mcc_job_runner_init(mcc_job_runner *r, int n);

/* Free what a runner holds, once its threads are joined (or never started). */
void		mcc_job_runner_free(mcc_job_runner *r);

/* Initialize the mutex and condition variable. */
mcc_status	mcc_job_sync_init(mcc_job_runner *r, mcc_error *err);

/*
 * Initialize the mutex and start n threads running fn, the i-th on
 * (char *) args + i * stride. Fewer threads than asked is success; none
 * is an error "could not start <what>".
 */
mcc_status	mcc_job_runner_start(mcc_job_runner *r, int n, void *(*fn) (void *),
								 void *args, size_t stride, const char *what,
								 mcc_error *err);

/* Called by each worker thread as its last act. */
void		mcc_job_thread_exit(mcc_job_runner *r);

/* Wait for the threads to finish, at most timeout_ms (< 0: no limit); 1 when all did. */
int			mcc_job_wait(mcc_job_runner *r, int timeout_ms);

/* Join every started thread. */
void		mcc_job_join(mcc_job_runner *r);

/* Raise the cancel flag and join every started thread. */
void		mcc_job_cancel_join(mcc_job_runner *r);

/* Record the first failure and raise the cancel flag to stop the others. */
void		mcc_job_fail(mcc_job_runner *r, const mcc_error *err);

/* The first failure recorded (copied to err), or MCC_OK. */
mcc_status	mcc_job_status(const mcc_job_runner *r, mcc_error *err);

/* Whether the cancel flag is up; workers poll it between pieces of work. */
static inline int
mcc_job_cancelled(mcc_job_runner *r)
{
	return atomic_load_explicit(&r->cancel, memory_order_relaxed);
}

#endif							/* MCC_JOB_H */
