/*
 * eng_pool.h: the engine's worker threads.
 *
 * A job is split into parts (chunks of a gallery); every idle thread takes
 * the next part of the oldest job, so one batch uses all threads. Threads
 * only compute: they never touch sockets, caches' metadata or the log's
 * callers' state. A finished job goes to a done list and a byte is written to
 * a pipe that the main thread's poll() watches.
 */
#ifndef ENG_POOL_H
#define ENG_POOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mcc_error.h"

typedef struct eng_job eng_job;

/* Work on one part of a job; scratch is the thread's own buffer. */
typedef void (*eng_job_run) (eng_job *job, uint32_t part, void *scratch);

/* true if the job's remaining parts can be skipped (all its requests gone). */
typedef bool (*eng_job_dead) (eng_job *job);

struct eng_job
{
	eng_job    *next;			/* queue or done list */
	eng_job_run run;
	eng_job_dead dead;			/* may be NULL */
	int			tag;			/* the submitter's: what kind of job */
	uint32_t	n_parts;
	uint32_t	next_part;		/* pool-private */
	uint32_t	done_parts;		/* pool-private */
	/*
	 * when the pool queued it, a thread took its first part, and its last
	 * part ended (eng_pool_now_usec): the owner's timers read them once the
	 * job is back
	 */
	int64_t		submitted_usec;
	int64_t		first_usec;
	int64_t		done_usec;
};

typedef struct eng_pool eng_pool;

/* The engine's monotonic clock in microseconds (eng_now_usec is this one). */
int64_t		eng_pool_now_usec(void);

/* Start n threads, each with scratch_bytes of private scratch; NULL on failure. */
eng_pool   *eng_pool_start(int n, size_t scratch_bytes);

/*
 * The same with the threads' nice value raised by `nice` (Linux schedules
 * threads on their own): the image jobs' pool runs below the searches'
 * threads, so that a long image job slows a search as little as possible.
 */
eng_pool   *eng_pool_start_niced(int n, size_t scratch_bytes, int nice);

/* Stop the threads after the parts they are running; queued jobs are left. */
void		eng_pool_stop(eng_pool *p);

int			eng_pool_threads(const eng_pool *p);

/* Queue a job (the caller keeps ownership until it comes back done). */
void		eng_pool_submit(eng_pool *p, eng_job *job);

/* The read end of the completion pipe. */
int			eng_pool_fd(const eng_pool *p);

/* Drain the pipe and return the finished jobs (oldest first), or NULL. */
eng_job    *eng_pool_take_done(eng_pool *p);

/* Parts of a submitted job that are done, and its parts (under the pool's lock). */
void		eng_pool_job_progress(eng_pool *p, const eng_job *job, uint32_t *done,
								  uint32_t *total);

/* Block up to timeout_ms (-1: forever) until a job is done; true if one is. */
bool		eng_pool_wait(eng_pool *p, int timeout_ms);

/*
 * The first failure among a job's parts, which run on several threads at
 * once (REFINE's and a refining pass's rescoring): the job answers with it
 * when it comes back; later failures are dropped.
 */
typedef struct eng_job_error
{
	pthread_mutex_t lock;		/* guards failed and err */
	bool		failed;
	mcc_error	err;
} eng_job_error;

void		eng_job_error_init(eng_job_error *e);
void		eng_job_error_destroy(eng_job_error *e);

/* Keep err unless an earlier part failed (any thread). */
void		eng_job_error_set(eng_job_error *e, const mcc_error *err);

#endif							/* ENG_POOL_H */
