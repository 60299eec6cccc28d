/*
 * eng_pool.c: a fixed set of pthreads over a FIFO of parted jobs.
 */
#include "eng_pool.h"
#include "mcc_clock.h"
#include "mcc_job.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct eng_pool
{
	pthread_mutex_t lock;
	pthread_cond_t wake;
	eng_job    *queue;			/* jobs with parts not yet taken */
	eng_job   **queue_tail;
	eng_job    *done;			/* finished, oldest first */
	eng_job   **done_tail;
	bool		stop;
	int			n;
	int			nice;			/* added to each thread's nice value */
	int			started;
	size_t		scratch_bytes;
	pthread_t  *threads;
	int			pipe_rd;
	int			pipe_wr;
};

int64_t
eng_pool_now_usec(void)
{
	return mcc_clock_usec(CLOCK_MONOTONIC);
}

/* Remove the queue's head (the caller holds the lock). */
static void
dequeue_head(eng_pool *p)
{
	p->queue = p->queue->next;
	if (p->queue == NULL)
		p->queue_tail = &p->queue;
}

/* Record that `parts` parts of j ended; move j to the done list at the end. */
static void
parts_done(eng_pool *p, eng_job *j, uint32_t parts)
{
	ssize_t		w;
	char		b = 1;

	j->done_parts += parts;
	if (j->done_parts < j->n_parts)
		return;
	j->done_usec = eng_pool_now_usec();
	j->next = NULL;
	*p->done_tail = j;
	p->done_tail = &j->next;
	w = write(p->pipe_wr, &b, 1);	/* a full pipe already wakes the reader */
	(void) w;
}

/* Thread body: take parts of the oldest job until told to stop. */
static void *
worker(void *arg)
{
	eng_pool   *p = arg;
	void	   *scratch = malloc(p->scratch_bytes ? p->scratch_bytes : 1);

	/* best effort: a thread that keeps its priority still works */
	if (p->nice != 0)
		(void) setpriority(PRIO_PROCESS, (id_t) syscall(SYS_gettid),
						   getpriority(PRIO_PROCESS, 0) + p->nice);
	pthread_mutex_lock(&p->lock);
	while (!p->stop)
	{
		eng_job    *j = p->queue;
		uint32_t	part;

		if (j == NULL)
		{
			pthread_cond_wait(&p->wake, &p->lock);
			continue;
		}
		if (scratch == NULL || (j->dead && j->dead(j)))
		{
			/* skip what is left; a thread without scratch cannot work */
			uint32_t	left = j->n_parts - j->next_part;

			j->next_part = j->n_parts;
			dequeue_head(p);
			parts_done(p, j, left);
			if (scratch == NULL)
				break;
			continue;
		}
		if (j->next_part == 0)
			j->first_usec = eng_pool_now_usec();
		part = j->next_part++;
		if (j->next_part == j->n_parts)
			dequeue_head(p);
		pthread_mutex_unlock(&p->lock);
		j->run(j, part, scratch);
		pthread_mutex_lock(&p->lock);
		parts_done(p, j, 1);
	}
	pthread_mutex_unlock(&p->lock);
	free(scratch);
	return NULL;
}

eng_pool *
eng_pool_start(int n, size_t scratch_bytes)
{
	return eng_pool_start_niced(n, scratch_bytes, 0);
}

eng_pool *
eng_pool_start_niced(int n, size_t scratch_bytes, int nice)
{
	eng_pool   *p = calloc(1, sizeof(*p));
	int			fds[2];

	if (p == NULL || n < 1)
	{
		free(p);
		return NULL;
	}
	if (pipe(fds) != 0)
	{
		free(p);
		return NULL;
	}
	p->pipe_rd = fds[0];
	p->pipe_wr = fds[1];
	fcntl(p->pipe_rd, F_SETFL, O_NONBLOCK);
	fcntl(p->pipe_wr, F_SETFL, O_NONBLOCK);
	fcntl(p->pipe_rd, F_SETFD, FD_CLOEXEC);
	fcntl(p->pipe_wr, F_SETFD, FD_CLOEXEC);
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	p->queue_tail = &p->queue;
	p->done_tail = &p->done;
	p->n = n;
	p->nice = nice;
	p->scratch_bytes = scratch_bytes;
	p->threads = calloc((size_t) n, sizeof(pthread_t));
	if (p->threads == NULL)
	{
		eng_pool_stop(p);
		return NULL;
	}
	/* all or none (src/core's runner: signals blocked in the workers) */
	p->started = mcc_job_start_threads(p->threads, n, worker, p, 0);
	if (p->started < n)
	{
		eng_pool_stop(p);
		return NULL;
	}
	return p;
}

void
eng_pool_stop(eng_pool *p)
{
	if (p == NULL)
		return;
	mcc_job_shutdown(&p->lock, &p->wake, &p->stop, p->threads, p->started);
	free(p->threads);
	close(p->pipe_rd);
	close(p->pipe_wr);
	free(p);
}

int
eng_pool_threads(const eng_pool *p)
{
	return p->n;
}

void
eng_pool_submit(eng_pool *p, eng_job *job)
{
	pthread_mutex_lock(&p->lock);
	job->next = NULL;
	job->next_part = 0;
	job->done_parts = 0;
	job->submitted_usec = eng_pool_now_usec();
	job->first_usec = job->submitted_usec;	/* a job without parts is done at once */
	if (job->n_parts == 0)
		parts_done(p, job, 0);
	else
	{
		*p->queue_tail = job;
		p->queue_tail = &job->next;
		pthread_cond_broadcast(&p->wake);
	}
	pthread_mutex_unlock(&p->lock);
}

int
eng_pool_fd(const eng_pool *p)
{
	return p->pipe_rd;
}

eng_job *
eng_pool_take_done(eng_pool *p)
{
	char		buf[256];
	eng_job    *list;

	while (read(p->pipe_rd, buf, sizeof(buf)) > 0)
		;
	pthread_mutex_lock(&p->lock);
	list = p->done;
	p->done = NULL;
	p->done_tail = &p->done;
	pthread_mutex_unlock(&p->lock);
	return list;
}

void
eng_pool_job_progress(eng_pool *p, const eng_job *job, uint32_t *done, uint32_t *total)
{
	pthread_mutex_lock(&p->lock);
	*done = job->done_parts;
	*total = job->n_parts;
	pthread_mutex_unlock(&p->lock);
}

bool
eng_pool_wait(eng_pool *p, int timeout_ms)
{
	struct pollfd pfd = {.fd = p->pipe_rd, .events = POLLIN};
	bool		any;

	pthread_mutex_lock(&p->lock);
	any = p->done != NULL;
	pthread_mutex_unlock(&p->lock);
	if (any)
		return true;
	while (poll(&pfd, 1, timeout_ms) < 0 && errno == EINTR)
		;
	pthread_mutex_lock(&p->lock);
	any = p->done != NULL;
	pthread_mutex_unlock(&p->lock);
	return any;
}

void
eng_job_error_init(eng_job_error *e)
{
	pthread_mutex_init(&e->lock, NULL);
	e->failed = false;
	mcc_error_clear(&e->err);
}

void
eng_job_error_destroy(eng_job_error *e)
{
	pthread_mutex_destroy(&e->lock);
}

void
eng_job_error_set(eng_job_error *e, const mcc_error *err)
{
	pthread_mutex_lock(&e->lock);
	if (!e->failed)
	{
		e->failed = true;
		e->err = *err;
	}
	pthread_mutex_unlock(&e->lock);
}
