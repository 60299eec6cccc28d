/*
 * eng_bigmem.c: large copies over threads and large frees on a thread of
 * their own, off the engine's main thread (eng_bigmem.h says why).
 */
#include "eng_bigmem.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_job.h"

#define COPY_BLOCK		((size_t) 64 << 20)	/* a thread's piece of a copy */

/* The copies of one eng_copy_all, taken a block at a time by its threads. */
typedef struct copy_run
{
	const eng_copy *parts;
	int			n;
	atomic_size_t next;			/* the next block, counted over every part in turn */
} copy_run;

/* The part and offset of block b of r, or false past the last. */
static bool
block_at(const copy_run *r, size_t b, int *part, size_t *off)
{
	for (int i = 0; i < r->n; i++)
	{
		size_t		blocks = (r->parts[i].len + COPY_BLOCK - 1) / COPY_BLOCK;

		if (b < blocks)
		{
			*part = i;
			*off = b * COPY_BLOCK;
			return true;
		}
		b -= blocks;
	}
	return false;
}

static void *
copy_main(void *arg)
{
	copy_run   *r = arg;
	int			i;
	size_t		off;

	while (block_at(r, atomic_fetch_add(&r->next, 1), &i, &off))
	{
		const eng_copy *p = &r->parts[i];
		size_t		len = p->len - off < COPY_BLOCK ? p->len - off : COPY_BLOCK;

		memcpy((char *) p->dst + off, (const char *) p->src + off, len);
	}
	return NULL;
}

void
eng_copy_all(const eng_copy *parts, int n, int threads)
{
	copy_run	r = {.parts = parts, .n = n};
	size_t		blocks = 0;

	for (int i = 0; i < n; i++)
		blocks += (parts[i].len + COPY_BLOCK - 1) / COPY_BLOCK;
	if ((size_t) threads > blocks)
		threads = (int) blocks;
	atomic_init(&r.next, 0);
	mcc_job_run_each(threads > 1 ? threads : 1, copy_main, &r, 0);
}

/* What eng_free_detached hands to its thread. */
typedef struct free_job
{
	void		(*fn) (void *);
	void	   *arg;
} free_job;

static atomic_uint_fast64_t async_bytes = (uint64_t) 1 << 30;
static atomic_uint_fast64_t async_done;

static void *
free_main(void *arg)
{
	free_job	j = *(free_job *) arg;

	free(arg);
	j.fn(j.arg);
	atomic_fetch_add(&async_done, 1);
	return NULL;
}

bool
eng_free_detached(void (*free_fn) (void *), void *arg, uint64_t bytes)
{
	free_job   *j;
	pthread_t	tid;

	if (bytes < atomic_load(&async_bytes) || (j = malloc(sizeof(*j))) == NULL)
		return false;
	j->fn = free_fn;
	j->arg = arg;
	if (mcc_job_start_threads(&tid, 1, free_main, j, 0) != 1)
	{
		free(j);
		return false;
	}
	pthread_detach(tid);
	return true;
}

uint64_t
eng_free_set_async_bytes(uint64_t bytes)
{
	return atomic_exchange(&async_bytes, bytes);
}

uint64_t
eng_free_async_done(void)
{
	return atomic_load(&async_done);
}
