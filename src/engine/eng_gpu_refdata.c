/*
 * eng_gpu_refdata.c: a mirror's refinement data (eng_gpu_int.h,
 * kernels/mcc_gpu_refine.h): the geometry of the templates a context lacks,
 * rebuilt from the cache's sides on several threads, and sent to the device
 * chunk by chunk in gallery order.
 *
 * A template's geometry (from its minutiae and its cylinders' minutia
 * indices as the cache keeps them, eng_cache_minutiae: no template is
 * rebuilt) depends on that template only, so workers build the
 * geometry of GPU_GEOM_CHUNK templates at a time, each chunk into a slot of
 * a small ring, while the calling thread (holding eng_gpu.lock) sends the
 * chunks in order. The order matters: mcc_gpu_refine_attach adds each new
 * direction to the context's table of unit vectors as it meets it, so the
 * device data is that of the one-thread loop only if the chunks go up in
 * gallery order. Each chunk's geometry numbers its templates from 0; the
 * caller copies its offsets into one array indexed by gallery template
 * (the library reads first[t0..t1] and the records those point at), so the
 * host holds the offsets of the gallery and the records of a few chunks,
 * never the whole gallery's records.
 */
#include "eng_gpu.h"

#include <stdlib.h>
#include <string.h>

#include "eng_cache.h"
#include "eng_log.h"

#ifdef MCC_ENGINE_GPU

#include <pthread.h>

#include "eng_gpu_int.h"
#include "mcc_gpu_refine.h"
#include "mcc_job.h"

#define REF_MAX_WORKERS	16		/* threads rebuilding geometry */

/* One chunk's geometry, its templates numbered from 0. */
typedef struct ref_slot
{
	mcc_gpu_geom geo;
	int64_t		chunk;			/* the chunk it holds, -1: none (under mu) */
	mcc_status	status;			/* of its build (under mu) */
	mcc_error	err;
} ref_slot;

/* The ring the workers fill and the sending thread empties. */
typedef struct ref_ring
{
	const eng_cache *c;
	uint32_t	from;			/* first template */
	uint32_t	to;				/* end */
	uint32_t	n_chunks;
	int			n_slots;
	ref_slot   *slots;			/* chunk i in slots[i % n_slots] */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint32_t	next;			/* the next chunk a worker takes (under mu) */
	uint32_t	sent;			/* chunks taken out by the sender (under mu) */
	bool		stop;			/* the sender gave up (under mu) */
} ref_ring;

/* Templates [*t0, *t1) of chunk i. */
static void
chunk_range(const ref_ring *r, uint32_t i, uint32_t *t0, uint32_t *t1)
{
	*t0 = r->from + i * GPU_GEOM_CHUNK;
	*t1 = r->to - *t0 > GPU_GEOM_CHUNK ? *t0 + GPU_GEOM_CHUNK : r->to;
}

/*
 * The geometry of chunk i into geo (cleared first), from what the cache
 * keeps of each template (its minutiae and its cylinders' minutia indices,
 * eng_cache_minutiae): the template itself is not rebuilt.
 */
static mcc_status
build_chunk(const ref_ring *r, uint32_t i, mcc_gpu_geom *geo, mcc_error *err)
{
	uint32_t	t0;
	uint32_t	t1;

	chunk_range(r, i, &t0, &t1);
	mcc_gpu_geom_clear(geo);
	for (uint32_t k = t0; k < t1; k++)
	{
		int			n_min;
		int			n_cyl;
		const uint8_t *minutiae;
		const uint8_t *cyl_minutia;

		eng_cache_minutiae(r->c, k, &n_min, &minutiae, &n_cyl, &cyl_minutia);
		if (mcc_gpu_geom_append_parts(geo, n_min, minutiae, n_cyl, cyl_minutia, err) != MCC_OK)
			return err->status;
	}
	return MCC_OK;
}

/* A worker: take the next chunk while its slot is free, build it, hand it over. */
static void *
ref_worker(void *arg)
{
	ref_ring   *r = arg;

	pthread_mutex_lock(&r->mu);
	for (;;)
	{
		uint32_t	i;
		ref_slot   *sl;
		mcc_status	st;
		mcc_error	err;

		while (!r->stop && r->next < r->n_chunks && r->next >= r->sent + (uint32_t) r->n_slots)
			pthread_cond_wait(&r->cv, &r->mu);
		if (r->stop || r->next >= r->n_chunks)
			break;
		i = r->next++;
		sl = &r->slots[i % r->n_slots];
		pthread_mutex_unlock(&r->mu);
		mcc_error_clear(&err);
		st = build_chunk(r, i, &sl->geo, &err);
		pthread_mutex_lock(&r->mu);
		sl->status = st;
		sl->err = err;
		sl->chunk = i;
		pthread_cond_broadcast(&r->cv);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

/*
 * Wait for chunk i's slot. A worker leaves only when every chunk was taken
 * or the sender stopped, and finishes each chunk it took: chunk i comes.
 */
static ref_slot *
wait_chunk(ref_ring *r, uint32_t i)
{
	ref_slot   *sl = &r->slots[i % r->n_slots];

	pthread_mutex_lock(&r->mu);
	while (sl->chunk != (int64_t) i)
		pthread_cond_wait(&r->cv, &r->mu);
	pthread_mutex_unlock(&r->mu);
	return sl;
}

/* Chunk i was sent: its slot takes chunk i + n_slots. */
static void
release_chunk(ref_ring *r, uint32_t i)
{
	pthread_mutex_lock(&r->mu);
	r->slots[i % r->n_slots].chunk = -1;
	r->sent = i + 1;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

/* Stop the workers (none takes another chunk) and wait for them. */
static void
stop_workers(ref_ring *r, pthread_t *tids, int n)
{
	pthread_mutex_lock(&r->mu);
	r->stop = true;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	for (int i = 0; i < n; i++)
		pthread_join(tids[i], NULL);
}

/*
 * Send chunk sl (templates [t0, t1)) through abs, the geometry indexed by
 * gallery template: its offsets copied to abs->first[t0..t1], its records
 * borrowed.
 */
static mcc_gpu_code
send_chunk(eng_gpu_mirror *m, const eng_cache *c, mcc_gpu_geom *abs, const mcc_gpu_geom *part,
		   uint32_t t0, uint32_t t1, mcc_error *err)
{
	memcpy(abs->first + t0, part->first, sizeof(uint32_t) * ((size_t) (t1 - t0) + 1));
	abs->n_tpl = t1;
	abs->n_cyl = part->n_cyl;
	abs->perm = part->perm;
	abs->xy = part->xy;
	abs->theta = part->theta;
	return mcc_gpu_refine_attach(m->ctx, &c->soa, abs, t0, t1, err);
}

/* The code of a failed geometry build. */
static mcc_gpu_code
build_code(mcc_status st)
{
	return st == MCC_ERR_MEMORY ? MCC_GPU_OOM : MCC_GPU_INVALID;
}

/*
 * The chunks of r, built by workers (n of them started, tids) or, with
 * none, here; each sent as soon as it is built, in order. m->ref_given
 * follows what went up. *wait_s: seconds this thread waited for (or
 * built) geometry; *send_s: seconds in mcc_gpu_refine_attach (the records,
 * the direction table, the copies to the device): which of the two bounds
 * the time, for the log.
 */
static mcc_gpu_code
send_all(eng_gpu_mirror *m, ref_ring *r, pthread_t *tids, int n, mcc_gpu_geom *abs,
		 double *wait_s, double *send_s, mcc_error *err)
{
	mcc_gpu_code rc = MCC_GPU_OK;

	for (uint32_t i = 0; i < r->n_chunks && rc == MCC_GPU_OK; i++)
	{
		ref_slot   *sl;
		uint32_t	t0;
		uint32_t	t1;
		double		at = eng_gpu_now_s();

		if (n == 0)
		{
			sl = &r->slots[0];
			if ((sl->status = build_chunk(r, i, &sl->geo, &sl->err)) == MCC_OK)
				sl->chunk = i;
		}
		else
			sl = wait_chunk(r, i);
		if (sl->status != MCC_OK)
		{
			*err = sl->err;
			rc = build_code(sl->status);
			break;
		}
		chunk_range(r, i, &t0, &t1);
		*wait_s += eng_gpu_now_s() - at;
		at = eng_gpu_now_s();
		rc = send_chunk(m, r->c, abs, &sl->geo, t0, t1, err);
		*send_s += eng_gpu_now_s() - at;
		if (rc == MCC_GPU_OK)
			m->ref_given = t1;
		if (n > 0)
			release_chunk(r, i);
		else
			sl->chunk = -1;
	}
	/* the attaches queued their copies: the data is there when they are done */
	if (rc == MCC_GPU_OK)
	{
		double		at = eng_gpu_now_s();

		rc = mcc_gpu_refine_attach_wait(m->ctx, err);
		*send_s += eng_gpu_now_s() - at;
	}
	return rc;
}

/*
 * Send the refinement data of templates [m->ref_given, m->given) (lock
 * held): workers when there is more than one chunk (a full gallery after
 * an upload), else this thread (the appends since the last job).
 */
mcc_gpu_code
eng_gpu_attach_refinement(eng_gpu *g, eng_gpu_mirror *m, const eng_cache *c, mcc_error *err)
{
	ref_ring	r;
	mcc_gpu_geom abs;
	pthread_t	tids[REF_MAX_WORKERS];
	int			want;
	int			n = 0;
	uint32_t	from = m->ref_given;
	double		t_start = eng_gpu_now_s();
	double		wait_s = 0;
	double		send_s = 0;
	mcc_gpu_attach_timing t0;
	mcc_gpu_attach_timing t1;
	mcc_gpu_code rc = MCC_GPU_OK;

	if (m->ref_given >= m->given)
		return MCC_GPU_OK;
	/* a rescoring's kernels may be reading the refinement data */
	eng_gpu_quiesce(g, m);
	if (m->ctx == NULL)
	{
		mcc_error_set(err, MCC_ERR_INTERNAL, "the cache's GPU copy was dropped meanwhile");
		return MCC_GPU_CUDA;
	}
	if (m->ref_given >= m->given)
		return MCC_GPU_OK;
	from = m->ref_given;
	mcc_gpu_refine_attach_timing(m->ctx, &t0);
	memset(&r, 0, sizeof(r));
	memset(&abs, 0, sizeof(abs));
	r.c = c;
	r.from = m->ref_given;
	r.to = m->given;
	r.n_chunks = (uint32_t) (((uint64_t) (r.to - r.from) + GPU_GEOM_CHUNK - 1) / GPU_GEOM_CHUNK);
	want = r.n_chunks < 2 ? 0 : g->build_threads < (int) r.n_chunks ? g->build_threads : (int) r.n_chunks;
	if (want > REF_MAX_WORKERS)
		want = REF_MAX_WORKERS;
	r.n_slots = want > 0 ? want + 1 : 1;	/* one more: a worker builds while the sender sends */
	r.slots = calloc(r.n_slots, sizeof(ref_slot));
	/* offsets of every template up to the end; records per slot */
	abs.first = malloc(sizeof(uint32_t) * ((size_t) m->given + 1));
	abs.cap_tpl = m->given;
	if (r.slots == NULL || abs.first == NULL)
	{
		mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for the refinement data");
		rc = MCC_GPU_OOM;
		goto out;
	}
	for (int i = 0; i < r.n_slots && rc == MCC_GPU_OK; i++)
	{
		r.slots[i].chunk = -1;
		if (mcc_gpu_geom_init(&r.slots[i].geo, GPU_GEOM_CHUNK, 0, err) != MCC_OK)
		{
			mcc_error_set(err, MCC_ERR_MEMORY, "out of memory for the refinement data");
			rc = MCC_GPU_OOM;
		}
	}
	if (rc != MCC_GPU_OK)
		goto out;
	pthread_mutex_init(&r.mu, NULL);
	pthread_cond_init(&r.cv, NULL);
	if (want > 0)
		n = mcc_job_start_threads(tids, want, ref_worker, &r, 0);
	rc = send_all(m, &r, tids, n, &abs, &wait_s, &send_s, err);
	stop_workers(&r, tids, n);
	pthread_cond_destroy(&r.cv);
	pthread_mutex_destroy(&r.mu);
	{
		double		took = eng_gpu_now_s() - t_start;

		g->stats.refine_attached += m->ref_given - from;
		g->stats.refine_attach_s += took;
		mcc_gpu_refine_attach_timing(m->ctx, &t1);
		if (rc == MCC_GPU_OK)
			eng_log(ENG_LOG_INFO, "sent the refinement data of %u templates to the GPU in %.3f s "
					"(geometry rebuilt on %d thread(s); the sender waited %.3f s for geometry "
					"and spent %.3f s attaching records: packing %.3f s, waiting for a staging "
					"buffer %.3f s, device room and queuing copies %.3f s, last copies %.3f s)",
					m->ref_given - from, took, n > 0 ? n : 1, wait_s, send_s,
					(t1.pack_ms - t0.pack_ms) / 1e3, (t1.wait_ms - t0.wait_ms) / 1e3,
					(t1.copy_ms - t0.copy_ms) / 1e3, (t1.sync_ms - t0.sync_ms) / 1e3);
		/*
		 * A failed attach loses the context's refinement data (the unit
		 * vectors given once its hash is full are only on the devices):
		 * the next attempt sends it all again (mcc_gpu_refine.h).
		 */
		if (rc != MCC_GPU_OK)
			m->ref_given = 0;
	}
out:
	for (int i = 0; r.slots != NULL && i < r.n_slots; i++)
		mcc_gpu_geom_free(&r.slots[i].geo);
	free(r.slots);
	free(abs.first);
	return rc;
}

void
eng_gpu_prepare_refinement(eng_gpu *g, const eng_cache *c)
{
	eng_gpu_mirror *m = c->gpu;
	mcc_gpu_code rc;
	mcc_error	err;

	mcc_error_clear(&err);
	pthread_mutex_lock(&g->lock);
	if (atomic_load(&g->broken) || m == NULL || m->ctx == NULL || atomic_load(&m->failed) ||
		atomic_load(&m->ref_failed) || m->ref_given >= m->given)
	{
		pthread_mutex_unlock(&g->lock);
		return;
	}
	rc = eng_gpu_attach_refinement(g, m, c, &err);
	switch (rc)
	{
		case MCC_GPU_OK:
			break;
		case MCC_GPU_STICKY:
		case MCC_GPU_NO_DRIVER:
		case MCC_GPU_NO_DEVICE:
			/* the next job finds the GPU gone and says so */
			atomic_store(&g->broken, true);
			break;
		case MCC_GPU_OOM:
		case MCC_GPU_INVALID:
		case MCC_GPU_UNSUPPORTED:
			/* as a rescoring job's attach would: the LSS copy stays */
			atomic_store(&m->ref_failed, true);
			eng_log(ENG_LOG_WARNING, "GPU refinement data not sent, rescoring of this cache "
					"stays on the CPU threads: %s", err.message);
			break;
		default:
			/* the next rescoring job sends what is missing, or fails there */
			eng_log(ENG_LOG_WARNING, "GPU refinement data not sent (the next refining search "
					"tries again): %s", err.message);
			break;
	}
	pthread_mutex_unlock(&g->lock);
}

#else							/* !MCC_ENGINE_GPU */

void
eng_gpu_prepare_refinement(eng_gpu *g, const eng_cache *c)
{
}

#endif							/* MCC_ENGINE_GPU */
