/*
 * mcc_chamfer_cpu.c: the threaded CPU evaluator of chamfer alignment (the
 * role of paper 004's OpenMP version, Algorithms 4 and 5, with pthreads).
 *
 * The observed points are cut into chunks of MCC_CHAMFER_CHUNK. A chunk is
 * summed in point order into its own slot; the slots are added in chunk
 * order on the calling thread. Which thread sums which chunk does not
 * matter, so the result is the same bits for any thread count. Threads
 * take chunks from an atomic counter; the calling thread works too. The
 * threads live as long as the evaluator (one alignment) and block every
 * signal, so that a PostgreSQL backend's handlers run on its own thread.
 */
/* pthread_sigmask, sysconf */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "mcc_chamfer.h"
#include "mcc_job.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Sum points [0, n) of p into S: one function per (dim, type, gh). */
typedef void (*chunk_fn) (const mcc_chamfer_xf *xf, const mcc_edt_geom *g,
						  const int32_t *site, const double *ref,
						  const double *p, size_t n, double *S);

/*
 * A chunk loop specialized for constant dim, type and gh. The sums live in
 * a local array, which the compiler keeps in registers where it can.
 */
#define CHUNK_FN(name, DIM, TYPE, GH) \
static void \
name(const mcc_chamfer_xf *xf, const mcc_edt_geom *g, const int32_t *site, \
	 const double *ref, const double *p, size_t n, double *S) \
{ \
	double		acc[MCC_CHAMFER_MAX_SUMS] = {0}; \
	int			ns = mcc_chamfer_nsums(TYPE, DIM); \
	for (size_t i = 0; i < n; i++) \
		mcc_chamfer_point(xf, DIM, TYPE, GH, g, site, ref, p + (size_t) (DIM) * i, acc); \
	memcpy(S, acc, sizeof(double) * ns); \
}

CHUNK_FN(chunk_2e0, 2, MCC_XFORM_EUCLIDEAN, 0)
CHUNK_FN(chunk_2e1, 2, MCC_XFORM_EUCLIDEAN, 1)
CHUNK_FN(chunk_2s0, 2, MCC_XFORM_SIMILARITY, 0)
CHUNK_FN(chunk_2s1, 2, MCC_XFORM_SIMILARITY, 1)
CHUNK_FN(chunk_2a0, 2, MCC_XFORM_AFFINE, 0)
CHUNK_FN(chunk_2a1, 2, MCC_XFORM_AFFINE, 1)
CHUNK_FN(chunk_2p0, 2, MCC_XFORM_PROJECTIVE, 0)
CHUNK_FN(chunk_2p1, 2, MCC_XFORM_PROJECTIVE, 1)
CHUNK_FN(chunk_3e0, 3, MCC_XFORM_EUCLIDEAN, 0)
CHUNK_FN(chunk_3e1, 3, MCC_XFORM_EUCLIDEAN, 1)
CHUNK_FN(chunk_3s0, 3, MCC_XFORM_SIMILARITY, 0)
CHUNK_FN(chunk_3s1, 3, MCC_XFORM_SIMILARITY, 1)
CHUNK_FN(chunk_3a0, 3, MCC_XFORM_AFFINE, 0)
CHUNK_FN(chunk_3a1, 3, MCC_XFORM_AFFINE, 1)
CHUNK_FN(chunk_3p0, 3, MCC_XFORM_PROJECTIVE, 0)
CHUNK_FN(chunk_3p1, 3, MCC_XFORM_PROJECTIVE, 1)

/* [dim - 2][type][gh] */
static const chunk_fn chunk_fns[2][MCC_XFORM_COUNT][2] = {
	{{chunk_2e0, chunk_2e1}, {chunk_2s0, chunk_2s1}, {chunk_2a0, chunk_2a1}, {chunk_2p0, chunk_2p1}},
	{{chunk_3e0, chunk_3e1}, {chunk_3s0, chunk_3s1}, {chunk_3a0, chunk_3a1}, {chunk_3p0, chunk_3p1}},
};

struct mcc_chamfer_cpu
{
	const mcc_chamfer_ref *ref;
	const mcc_chamfer_obs *obs;
	volatile int *cancel;
	int			threads;		/* including the calling thread */
	size_t		n_chunks;
	double	   *partial;		/* n_chunks * MCC_CHAMFER_MAX_SUMS */

	/* the current job */
	mcc_chamfer_xf xf;
	chunk_fn	fn;
	atomic_size_t next;			/* next chunk to take */

	/* the pool: workers wait for gen to change */
	pthread_t  *tid;
	int			n_started;
	pthread_mutex_t mu;
	pthread_cond_t go;
	pthread_cond_t done;
	unsigned long gen;
	int			pending;		/* workers still on the current job */
	int			stop;
};

/* Take and sum chunks until none is left (or a cancel). */
static void
run_chunks(mcc_chamfer_cpu *c)
{
	const mcc_chamfer_ref *ref = c->ref;
	const mcc_chamfer_obs *obs = c->obs;
	int			dim = obs->dim;

	for (;;)
	{
		size_t		k = atomic_fetch_add(&c->next, 1);
		size_t		first;
		size_t		n;

		if (k >= c->n_chunks)
			break;
		if (c->cancel != NULL && *c->cancel)
			continue;			/* drain the counter without work */
		first = k * MCC_CHAMFER_CHUNK;
		n = obs->n - first < MCC_CHAMFER_CHUNK ? obs->n - first : MCC_CHAMFER_CHUNK;
		c->fn(&c->xf, &ref->edt.geom, ref->edt.site, ref->pts, obs->pts + first * (size_t) dim, n,
			  c->partial + k * MCC_CHAMFER_MAX_SUMS);
	}
}

/* A worker: one job per generation until stop. */
static void *
worker_main(void *arg)
{
	mcc_chamfer_cpu *c = arg;
	unsigned long seen = 0;

	for (;;)
	{
		pthread_mutex_lock(&c->mu);
		while (c->gen == seen && !c->stop)
			pthread_cond_wait(&c->go, &c->mu);
		if (c->stop)
		{
			pthread_mutex_unlock(&c->mu);
			return NULL;
		}
		seen = c->gen;
		pthread_mutex_unlock(&c->mu);
		run_chunks(c);
		pthread_mutex_lock(&c->mu);
		if (--c->pending == 0)
			pthread_cond_signal(&c->done);
		pthread_mutex_unlock(&c->mu);
	}
}

/* Start threads - 1 workers with every signal blocked; returns how many started. */
static int
start_workers(mcc_chamfer_cpu *c, int workers)
{
	return mcc_job_start_threads(c->tid, workers, worker_main, c, 0);
}

/* Start an evaluator (see mcc_chamfer.h). */
mcc_status
mcc_chamfer_cpu_open(const mcc_chamfer_ref *ref, const mcc_chamfer_obs *obs, int threads,
					 volatile int *cancel, mcc_chamfer_cpu **out, mcc_error *err)
{
	mcc_chamfer_cpu *c;

	*out = NULL;
	if (threads < 0)
		return mcc_error_set(err, MCC_ERR_VALUE, "thread count must be >= 0");
	if (threads == 0)
	{
		long		ncpu = sysconf(_SC_NPROCESSORS_ONLN);

		threads = ncpu > 0 ? (int) ncpu : 1;
	}
	if (threads > MCC_CHAMFER_MAX_THREADS)
		threads = MCC_CHAMFER_MAX_THREADS;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for the alignment evaluator");
	c->ref = ref;
	c->obs = obs;
	c->cancel = cancel;
	c->n_chunks = (obs->n + MCC_CHAMFER_CHUNK - 1) / MCC_CHAMFER_CHUNK;
	if ((size_t) threads > c->n_chunks)
		threads = (int) c->n_chunks;
	c->partial = malloc(c->n_chunks * MCC_CHAMFER_MAX_SUMS * sizeof(double));
	c->tid = threads > 1 ? malloc(sizeof(pthread_t) * (size_t) (threads - 1)) : NULL;
	if (c->partial == NULL || (threads > 1 && c->tid == NULL))
	{
		free(c->partial);
		free(c->tid);
		free(c);
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for the alignment evaluator");
	}
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->go, NULL);
	pthread_cond_init(&c->done, NULL);
	atomic_init(&c->next, 0);
	/* fewer threads if the system refuses some: the sums do not depend on it */
	c->n_started = threads > 1 ? start_workers(c, threads - 1) : 0;
	c->threads = c->n_started + 1;
	*out = c;
	return MCC_OK;
}

/* Evaluate sums for xf (see mcc_chamfer.h). */
mcc_status
mcc_chamfer_cpu_eval(void *ctx, const mcc_chamfer_xf *xf, int gh, double *sums, mcc_error *err)
{
	mcc_chamfer_cpu *c = ctx;
	int			ns = mcc_chamfer_nsums(xf->type, xf->dim);

	if (xf->dim != c->obs->dim || xf->type < 0 || xf->type >= MCC_XFORM_COUNT)
		return mcc_error_set(err, MCC_ERR_INTERNAL, "evaluator called with a wrong transform");
	c->xf = *xf;
	c->fn = chunk_fns[xf->dim - 2][xf->type][gh ? 1 : 0];
	atomic_store(&c->next, 0);
	if (c->n_started > 0)
	{
		pthread_mutex_lock(&c->mu);
		c->gen++;
		c->pending = c->n_started;
		pthread_cond_broadcast(&c->go);
		pthread_mutex_unlock(&c->mu);
	}
	run_chunks(c);
	if (c->n_started > 0)
	{
		pthread_mutex_lock(&c->mu);
		while (c->pending > 0)
			pthread_cond_wait(&c->done, &c->mu);
		pthread_mutex_unlock(&c->mu);
	}
	if (c->cancel != NULL && *c->cancel)
		return mcc_error_set(err, MCC_ERR_INTERNAL, "alignment canceled");
	/* the chunk sums, in chunk order */
	memset(sums, 0, sizeof(double) * MCC_CHAMFER_MAX_SUMS);
	for (size_t k = 0; k < c->n_chunks; k++)
	{
		const double *p = c->partial + k * MCC_CHAMFER_MAX_SUMS;

		for (int j = 0; j < ns; j++)
			sums[j] += p[j];
	}
	return MCC_OK;
}

/* Threads in use. */
int
mcc_chamfer_cpu_threads(const mcc_chamfer_cpu *c)
{
	return c->threads;
}

/* Stop the workers and free. */
void
mcc_chamfer_cpu_close(mcc_chamfer_cpu *c)
{
	if (c == NULL)
		return;
	if (c->n_started > 0)
	{
		pthread_mutex_lock(&c->mu);
		c->stop = 1;
		pthread_cond_broadcast(&c->go);
		pthread_mutex_unlock(&c->mu);
		for (int i = 0; i < c->n_started; i++)
			pthread_join(c->tid[i], NULL);
	}
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->go);
	pthread_cond_destroy(&c->done);
	free(c->partial);
	free(c->tid);
	free(c);
}
