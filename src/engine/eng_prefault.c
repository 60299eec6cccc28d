/*
 * eng_prefault.c: a cache's memory faulted in ahead of the rows a load
 * writes, on threads of its own (eng_prefault.h says why and what it must
 * never do).
 */
#include "eng_prefault.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mcc_job.h"

#define MAX_THREADS 16

struct eng_prefault
{
	eng_prefault_area areas[ENG_PREFAULT_MAX_AREAS];
	int			n_areas;
	pthread_mutex_t lock;
	pthread_cond_t moved;		/* limit raised, or stop */
	uint32_t	next;			/* the next step to take (under lock) */
	uint32_t	limit;			/* steps below it may be taken (under lock) */
	uint32_t	done;			/* steps finished (under lock) */
	uint64_t	total;			/* rows that fill the areas */
	bool		stop;			/* (under lock) */
	pthread_t	tids[MAX_THREADS];
	int			n_threads;
};

/* Set once a kernel refused MADV_POPULATE_WRITE: every later range goes page by page. */
static atomic_bool no_populate;

static size_t
page_size(void)
{
	long		n = sysconf(_SC_PAGESIZE);

	return n > 0 ? (size_t) n : 4096;
}

bool
eng_prefault_range(void *p, size_t n, bool use_populate)
{
	uintptr_t	a = (uintptr_t) p;
	uintptr_t	b = a + n;
	size_t		pg = page_size();

	if (n == 0)
		return true;
#ifdef MADV_POPULATE_WRITE
	if (use_populate)
	{
		/* whole pages: the pages at the ends hold this block's bytes too */
		uintptr_t	a0 = a & ~(uintptr_t) (pg - 1);
		uintptr_t	b0 = (b + pg - 1) & ~(uintptr_t) (pg - 1);

		if (madvise((void *) a0, b0 - a0, MADV_POPULATE_WRITE) == 0)
			return true;
		/* unknown advice: an older kernel; other failures leave it to the rows' own faults */
		return errno != EINVAL;
	}
#else
	if (use_populate)
		return false;
#endif
	/*
	 * One aligned word of every page inside the block: an atomic add of
	 * zero faults the page in writable, and a row written there at the same
	 * time keeps its value.
	 */
	for (uintptr_t q = (a + 7) & ~(uintptr_t) 7; q + 8 <= b;)
	{
		__atomic_fetch_add((uint64_t *) q, 0, __ATOMIC_RELAXED);
		q = (q | (uintptr_t) (pg - 1)) + 1;
	}
	return true;
}

/* len * k / ENG_PREFAULT_STEPS, rounded down, without overflow. */
static size_t
slice_at(size_t len, uint32_t k)
{
	return len / ENG_PREFAULT_STEPS * k + len % ENG_PREFAULT_STEPS * k / ENG_PREFAULT_STEPS;
}

/* Step k: the k-th of ENG_PREFAULT_STEPS slices of every area. */
static void
run_step(const eng_prefault *p, uint32_t k)
{
	for (int i = 0; i < p->n_areas; i++)
	{
		const eng_prefault_area *a = &p->areas[i];
		size_t		from = slice_at(a->len, k);
		size_t		to = slice_at(a->len, k + 1);
		char	   *base = a->base;

		if (!atomic_load_explicit(&no_populate, memory_order_relaxed) &&
			eng_prefault_range(base + from, to - from, true))
			continue;
		atomic_store_explicit(&no_populate, true, memory_order_relaxed);
		eng_prefault_range(base + from, to - from, false);
	}
}

static void *
prefault_main(void *arg)
{
	eng_prefault *p = arg;

	for (;;)
	{
		uint32_t	k;

		pthread_mutex_lock(&p->lock);
		while (!p->stop && p->next < ENG_PREFAULT_STEPS && p->next >= p->limit)
			pthread_cond_wait(&p->moved, &p->lock);
		if (p->stop || p->next >= ENG_PREFAULT_STEPS)
		{
			pthread_mutex_unlock(&p->lock);
			return NULL;
		}
		k = p->next++;
		pthread_mutex_unlock(&p->lock);
		run_step(p, k);
		pthread_mutex_lock(&p->lock);
		p->done++;
		pthread_mutex_unlock(&p->lock);
	}
}

/* The steps that may be taken once `filled` of p's total rows are in. */
static uint32_t
limit_for(const eng_prefault *p, uint64_t filled)
{
	uint64_t	steps = filled >= p->total ? ENG_PREFAULT_STEPS :
		(uint64_t) ((double) filled / (double) p->total * ENG_PREFAULT_STEPS);

	return steps >= ENG_PREFAULT_STEPS - ENG_PREFAULT_LEAD ? ENG_PREFAULT_STEPS :
		(uint32_t) steps + ENG_PREFAULT_LEAD;
}

eng_prefault *
eng_prefault_start(const eng_prefault_area *areas, int n, int threads, uint64_t total,
				   uint64_t filled)
{
	eng_prefault *p;

	if (threads < 1 || total == 0)
		return NULL;
	if (threads > MAX_THREADS)
		threads = MAX_THREADS;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	for (int i = 0; i < n && p->n_areas < ENG_PREFAULT_MAX_AREAS; i++)
		if (areas[i].base != NULL && areas[i].len >= ENG_PREFAULT_MIN_BYTES)
			p->areas[p->n_areas++] = areas[i];
	if (p->n_areas == 0)
	{
		free(p);
		return NULL;
	}
	p->total = total;
	p->limit = limit_for(p, filled);
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->moved, NULL);
	p->n_threads = mcc_job_start_threads(p->tids, threads, prefault_main, p, 0);
	if (p->n_threads == 0)
	{
		pthread_cond_destroy(&p->moved);
		pthread_mutex_destroy(&p->lock);
		free(p);
		return NULL;
	}
	return p;
}

void
eng_prefault_advance(eng_prefault *p, uint64_t filled)
{
	uint32_t	limit = limit_for(p, filled);

	pthread_mutex_lock(&p->lock);
	if (limit > p->limit)
	{
		p->limit = limit;
		pthread_cond_broadcast(&p->moved);
	}
	pthread_mutex_unlock(&p->lock);
}

bool
eng_prefault_done(eng_prefault *p)
{
	bool		done;

	pthread_mutex_lock(&p->lock);
	done = p->done == ENG_PREFAULT_STEPS;
	pthread_mutex_unlock(&p->lock);
	return done;
}

void
eng_prefault_stop(eng_prefault *p)
{
	if (p == NULL)
		return;
	mcc_job_shutdown(&p->lock, &p->moved, &p->stop, p->tids, p->n_threads);
	free(p);
}
