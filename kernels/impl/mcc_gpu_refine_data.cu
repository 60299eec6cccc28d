/*
 * mcc_gpu_refine_data.cu: the refinement data of gallery templates: the
 * caller's host geometry (mcc_gpu_geom, next to its mcc_soa) and its upload
 * next to the device gallery (mcc_gpu_refine_attach). The layout is in
 * mcc_gpu_int.h; the per-template packing in mcc_refine_pack.h (unit-tested
 * on the CPU by test/unit/test_refine_gpu_emu.c).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcc_gpu_int.h"

/* ------------------------------------------------------------------ */
/* host geometry                                                       */

mcc_status
mcc_gpu_geom_init(mcc_gpu_geom *geo, uint32_t cap_tpl, uint32_t cap_cyl, mcc_error *err)
{
	if (rp_geom_init(geo, cap_tpl, cap_cyl) != 0)
	{
		mcc_gpu_geom_free(geo);
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
	}
	return MCC_OK;
}

void
mcc_gpu_geom_free(mcc_gpu_geom *geo)
{
	rp_geom_free(geo);
}

void
mcc_gpu_geom_clear(mcc_gpu_geom *geo)
{
	geo->n_tpl = 0;
	geo->n_cyl = 0;
	if (geo->first)
		geo->first[0] = 0;
}

/* The status of an rp_geom_append* result rc for a template of n_cyl cylinders. */
static mcc_status
geom_status(int rc, int n_cyl, mcc_error *err)
{
	if (rc == -1)
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
	if (rc != 0)
		return mcc_error_set(err, MCC_ERR_VALUE,
							 "template with %d cylinders is not one cylinder per minutia", n_cyl);
	return MCC_OK;
}

mcc_status
mcc_gpu_geom_append(mcc_gpu_geom *geo, const mcc_template_view *t, mcc_error *err)
{
	return geom_status(rp_geom_append(geo, t), t->n_cyl, err);
}

mcc_status
mcc_gpu_geom_append_parts(mcc_gpu_geom *geo, int n_min, const uint8_t *minutiae, int n_cyl,
						  const uint8_t *cyl_minutia, mcc_error *err)
{
	return geom_status(rp_geom_append_parts(geo, n_min, minutiae, n_cyl, cyl_minutia, 1), n_cyl, err);
}

mcc_status
mcc_gpu_geom_copy(mcc_gpu_geom *dst, const mcc_gpu_geom *src, uint32_t k, mcc_error *err)
{
	if (k >= src->n_tpl)
		return mcc_error_set(err, MCC_ERR_INTERNAL, "geometry of template %u does not exist (%u held)",
							 k, src->n_tpl);
	if (rp_geom_copy(dst, src, k) != 0)
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
	return MCC_OK;
}

/* ------------------------------------------------------------------ */
/* upload                                                              */

/* Records of one partition's run of consecutive local templates, on the host. */
typedef struct run
{
	int			part;
	uint32_t	g0;				/* first gallery index of [t0, t1) in the run */
	uint32_t	l0;				/* its local index */
	uint32_t	nt;				/* templates */
	uint32_t	r0;				/* first record */
	uint32_t	nr;				/* records */
	size_t		off;			/* into the staging arrays */
} run;

#define REC_MAX_THREADS	16

/*
 * The records of items[0..n) (total records) into the staging arrays and
 * their directions into the context's table (the new entries also into
 * vnew), on up to REC_MAX_THREADS threads (rp_records_build: as one loop
 * of rp_geom_records would).
 */
static mcc_gpu_code
records_build(mcc_gpu *g, const mcc_gpu_geom *geo, const rp_rec_item *items, uint32_t n,
			  size_t total, uint8_t *hperm, uint32_t *hxy, uint32_t *huix, double *vnew,
			  mcc_error *err)
{
	long		cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int			nth = (int) (total / 65536) + 1;

	if (nth > (cpus > 1 ? cpus : 1))
		nth = (int) (cpus > 1 ? cpus : 1);
	if (nth > REC_MAX_THREADS)
		nth = REC_MAX_THREADS;
	if (rp_records_build(&g->utab, geo, items, n, nth, hperm, hxy, huix, vnew) != 0)
		return mcc_gpu_rt_err(err, MCC_GPU_OOM, "out of host memory");
	return MCC_GPU_OK;
}

/* ------------------------------------------------------------------ */
/* staging buffers                                                     */

/* The arrays of a staging buffer of cap records (vnew first: 8-aligned). */
static void
rstage_arrays(const mcc_gpu_rstage_buf *sb, double **vnew, uint32_t **hxy, uint32_t **huix,
			  uint8_t **hperm)
{
	*vnew = (double *) sb->mem;
	*hxy = (uint32_t *) (sb->mem + 16 * sb->cap);
	*huix = *hxy + sb->cap;
	*hperm = (uint8_t *) (*huix + sb->cap);
}

/* Wait for the copies from sb on every partition (errors left to the caller's next call). */
static cudaError_t
rstage_buf_wait(mcc_gpu *g, mcc_gpu_rstage_buf *sb)
{
	cudaError_t e = cudaSuccess;

	for (int pi = 0; pi < g->nparts && e == cudaSuccess; pi++)
		if (sb->used[pi])
		{
			if ((e = cudaSetDevice(g->part[pi].dev)) == cudaSuccess)
				e = cudaEventSynchronize(sb->done[pi]);
			if (e == cudaSuccess)
				sb->used[pi] = 0;
		}
	return e;
}

/*
 * The next staging buffer, free of copies in flight and holding at least
 * need records: pinned where the host allows (else malloc'ed: its copies
 * are then as slow as pageable ones, but right).
 */
static mcc_gpu_code
rstage_take(mcc_gpu *g, size_t need, mcc_gpu_rstage_buf **out, mcc_error *err)
{
	mcc_gpu_rstage *st = &g->rstage;
	mcc_gpu_rstage_buf *sb = &st->buf[st->next];
	double		at = mcc_cuda_now_ms();
	cudaError_t e;

	st->next = (st->next + 1) % MCC_GPU_RSTAGE_BUFS;
	if ((e = rstage_buf_wait(g, sb)) != cudaSuccess)
		return mcc_gpu_fail(g, e, "refinement upload", g->part[0].dev, err);
	st->wait_ms += mcc_cuda_now_ms() - at;
	if (sb->cap < need)
	{
		size_t		cap = need + need / 4;	/* chunks differ a little in size */

		if (sb->pinned)
			cudaFreeHost(sb->mem);
		else
			free(sb->mem);
		sb->mem = NULL;
		sb->cap = 0;
		sb->pinned = 0;
		if (cudaHostAlloc((void **) &sb->mem, 25 * cap, cudaHostAllocPortable) == cudaSuccess)
			sb->pinned = 1;
		else
		{
			(void) cudaGetLastError();	/* not sticky: forget it */
			sb->mem = (unsigned char *) malloc(25 * cap);
			if (!sb->mem)
				return mcc_gpu_rt_err(err, MCC_GPU_OOM, "out of host memory");
		}
		sb->cap = cap;
	}
	*out = sb;
	return MCC_GPU_OK;
}

/* Partition pi's copies from sb are queued: record it. */
static cudaError_t
rstage_mark(mcc_gpu *g, mcc_gpu_rstage_buf *sb, int pi)
{
	mcc_gpu_part *p = &g->part[pi];
	cudaError_t e;

	if (!sb->done[pi] && (e = cudaEventCreateWithFlags(&sb->done[pi], cudaEventDisableTiming)) != cudaSuccess)
		return e;
	if ((e = cudaEventRecord(sb->done[pi], p->st)) != cudaSuccess)
		return e;
	sb->used[pi] = 1;
	return cudaSuccess;
}

void
mcc_gpu_rstage_drain(mcc_gpu *g)
{
	for (int i = 0; i < MCC_GPU_RSTAGE_BUFS; i++)
	{
		mcc_gpu_rstage_buf *sb = &g->rstage.buf[i];

		for (int pi = 0; pi < g->nparts; pi++)
			if (sb->used[pi] && cudaSetDevice(g->part[pi].dev) == cudaSuccess)
			{
				cudaEventSynchronize(sb->done[pi]);
				sb->used[pi] = 0;
			}
	}
	(void) cudaGetLastError();
}

void
mcc_gpu_rstage_free(mcc_gpu *g)
{
	mcc_gpu_rstage_drain(g);
	for (int i = 0; i < MCC_GPU_RSTAGE_BUFS; i++)
	{
		mcc_gpu_rstage_buf *sb = &g->rstage.buf[i];

		for (int pi = 0; pi < g->nparts; pi++)
			if (sb->done[pi] && cudaSetDevice(g->part[pi].dev) == cudaSuccess)
				cudaEventDestroy(sb->done[pi]);
		if (sb->pinned)
			cudaFreeHost(sb->mem);
		else
			free(sb->mem);
		memset(sb, 0, sizeof(*sb));
	}
	(void) cudaGetLastError();
}

/*
 * After a failed attach some device may lack records or table entries that
 * the host no longer holds (entries given once the hash is full go only to
 * the devices): no template counts as attached, and the next attach must
 * start again at template 0 with empty tables. Rare enough to redo
 * everything; the kernel never reads records that did not arrive.
 */
static void
attach_lost(mcc_gpu *g)
{
	mcc_gpu_rstage_drain(g);
	for (uint32_t t = 0; t < g->n_tpl; t++)
		g->tref[t].refd = 0;
	g->rstage.lost = 1;
}

mcc_gpu_code
mcc_gpu_refine_attach_wait(mcc_gpu *g, mcc_error *err)
{
	double		at = mcc_cuda_now_ms();

	if (g->lost.lost)
		return mcc_gpu_rt_usable(&g->lost, err);
	for (int i = 0; i < MCC_GPU_RSTAGE_BUFS; i++)
	{
		cudaError_t e = rstage_buf_wait(g, &g->rstage.buf[i]);

		if (e != cudaSuccess)
		{
			mcc_gpu_code rc = mcc_gpu_fail(g, e, "refinement upload", g->part[0].dev, err);

			attach_lost(g);
			return rc;
		}
	}
	g->rstage.sync_ms += mcc_cuda_now_ms() - at;
	return MCC_GPU_OK;
}

void
mcc_gpu_refine_attach_timing(const mcc_gpu *g, mcc_gpu_attach_timing *t)
{
	t->pack_ms = g->rstage.pack_ms;
	t->wait_ms = g->rstage.wait_ms;
	t->copy_ms = g->rstage.copy_ms;
	t->sync_ms = g->rstage.sync_ms;
}

/* Check the arguments of an attach. */
static mcc_gpu_code
attach_check(mcc_gpu *g, const mcc_soa *s, const mcc_gpu_geom *geo, uint32_t t0, uint32_t t1,
			 mcc_error *err)
{
	if (g->lost.lost)
		return mcc_gpu_rt_usable(&g->lost, err);
	if (!s || !geo || !s->profile || s->profile->id != g->profile->id)
		return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "gallery profile differs from the GPU context's");
	if (t0 > t1 || t1 > g->n_tpl || t1 > s->n_tpl || t1 > geo->n_tpl)
		return mcc_gpu_rt_err(err, MCC_GPU_INVALID,
						   "refinement range [%u, %u) is not in the gallery (%u templates given, %u in the soa, %u in the geometry)",
						   t0, t1, g->n_tpl, s->n_tpl, geo->n_tpl);
	for (uint32_t i = t0; i < t1; i++)
		if (geo->first[i + 1] - geo->first[i] != s->first[i + 1] - s->first[i])
			return mcc_gpu_rt_err(err, MCC_GPU_INVALID,
							   "template %u has %u cylinders in the gallery and %u in its geometry",
							   i, s->first[i + 1] - s->first[i], geo->first[i + 1] - geo->first[i]);
	return MCC_GPU_OK;
}

/*
 * Room on p's device for its records and for entries of the table, grown
 * where short. Growing copies the old arrays on the device outside p's
 * stream, so the copies queued into them are waited for first (rare: the
 * records are sized for the partition at the first attach, the table grows
 * by half).
 */
static mcc_gpu_code
attach_room(mcc_gpu *g, mcc_gpu_part *p, uint32_t entries, mcc_error *err)
{
	mcc_gpu_code rc = MCC_GPU_OK;
	size_t		need = mcc_gpu_grown(9, p->cap_ref, p->n_rc) + mcc_gpu_grown(16, p->cap_utab, entries);
	cudaError_t e;

	if (need == 0)
		return MCC_GPU_OK;
	if (need > mcc_gpu_room(g, p))
		return mcc_gpu_rt_err(err, MCC_GPU_OOM,
							  "out of GPU memory: refinement data needs %zu more bytes on GPU %d, %zu are available",
							  need, p->dev, mcc_gpu_room(g, p));
#define CK(call, what) \
	do { if ((e = (call)) != cudaSuccess) { rc = mcc_gpu_fail(g, e, what, p->dev, err); goto done; } } while (0)
	CK(cudaSetDevice(p->dev), "device selection");
	CK(cudaStreamSynchronize(p->st), "refinement upload");
	{
		uint32_t	c1 = p->cap_ref;
		uint32_t	c2 = p->cap_ref;
		uint32_t	c3 = p->cap_ref;
		uint32_t	keep = p->cap_ref;

		CK(mcc_gpu_grow((void **) &p->rperm, 1, &c1, p->n_rc, keep, &p->gallery_bytes), "refinement allocation");
		CK(mcc_gpu_grow((void **) &p->rxy, 4, &c2, p->n_rc, keep, &p->gallery_bytes), "refinement allocation");
		CK(mcc_gpu_grow((void **) &p->ruix, 4, &c3, p->n_rc, keep, &p->gallery_bytes), "refinement allocation");
		p->cap_ref = c3;
	}
	CK(mcc_gpu_grow((void **) &p->utab, 16, &p->cap_utab, entries, p->n_utab, &p->gallery_bytes),
	   "refinement allocation");
#undef CK
done:
	return rc;
}

/*
 * The records at the end of run r whose entries are past the host's shared
 * ones (shared: [0, shared)): their count, the first at *o0. Entries that
 * only a device holds are given once the table's hash is full, one per
 * record, in the order of the records (rp_records_frozen), so within a run
 * they are its last records, with consecutive entries.
 */
static uint32_t
run_own(const run *r, const uint32_t *huix, uint32_t shared, size_t *o0)
{
	size_t		o = r->off + r->nr;

	while (o > r->off && huix[o - 1] >= shared)
		o--;
	*o0 = o;
	return (uint32_t) (r->off + r->nr - o);
}

/* Entries partition pi will hold after an attach: the shared ones, its own and the call's. */
static mcc_gpu_code
attach_entries(const mcc_gpu *g, int pi, const run *runs, int nruns, const uint32_t *huix,
			   uint32_t *entries, mcc_error *err)
{
	const mcc_gpu_part *p = &g->part[pi];
	uint32_t	shared = g->utab.nv;
	uint64_t	n = (uint64_t) shared + (p->n_utab - p->n_ushared);
	size_t		o0;

	/* the host's entries stop growing once a device holds entries of its own */
	if (p->n_utab > p->n_ushared && shared != p->n_ushared)
		return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "GPU %d: the shared unit vectors changed under its own",
							  p->dev);
	for (int k = 0; k < nruns; k++)
		if (runs[k].part == pi)
			n += run_own(&runs[k], huix, shared, &o0);
	if (n >= RP_REC_MISS)
		return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "GPU %d: more than 2^32 unit vectors", p->dev);
	*entries = (uint32_t) n;
	return MCC_GPU_OK;
}

/*
 * Queue partition pi's part of an attach from staging buffer sb: the
 * host's shared table entries it lacks (those before n0 from the host
 * table, at pageable speed: only the first attach after an upload finds a
 * partition short of them; the call's new ones, n0 on, from vnew), the
 * entries of its own records that only devices hold (given once the hash
 * is full: one per record, so each partition gets its own only, placed
 * after the shared ones, and its records' indexes are rewritten to match
 * before they are copied), then its runs' records.
 */
static mcc_gpu_code
attach_copies(mcc_gpu *g, int pi, const run *runs, int nruns, mcc_gpu_rstage_buf *sb, uint32_t n0,
			  mcc_error *err)
{
	mcc_gpu_part *p = &g->part[pi];
	mcc_gpu_code rc = MCC_GPU_OK;
	uint32_t	shared = g->utab.nv;
	double	   *vnew;
	uint32_t   *hxy;
	uint32_t   *huix;
	uint8_t    *hperm;
	cudaError_t e;

	rstage_arrays(sb, &vnew, &hxy, &huix, &hperm);
#define CK(call, what) \
	do { if ((e = (call)) != cudaSuccess) { rc = mcc_gpu_fail(g, e, what, p->dev, err); goto done; } } while (0)
	CK(cudaSetDevice(p->dev), "device selection");
	if (p->n_ushared < shared)
	{
		uint32_t	old = n0 < shared ? n0 : shared;

		if (p->n_ushared < old)
			CK(cudaMemcpy(p->utab + 2 * (size_t) p->n_ushared, g->utab.v + 2 * (size_t) p->n_ushared,
						  16 * (size_t) (old - p->n_ushared), cudaMemcpyHostToDevice), "refinement upload");
		if (old < shared)
			CK(cudaMemcpyAsync(p->utab + 2 * (size_t) old, vnew + 2 * (size_t) (old - n0),
							   16 * (size_t) (shared - old), cudaMemcpyHostToDevice, p->st), "refinement upload");
		p->n_ushared = p->n_utab = shared;
	}
	for (int k = 0; k < nruns; k++)
	{
		const run  *r = &runs[k];
		size_t		o0;
		uint32_t	own;

		if (r->part != pi || r->nr == 0)
			continue;
		if ((own = run_own(r, huix, shared, &o0)) > 0)
		{
			uint32_t	first = huix[o0];
			uint32_t	delta = first - p->n_utab;	/* global entry - this device's */

			if (huix[o0 + own - 1] != first + own - 1 || first < p->n_utab)
				return mcc_gpu_rt_err(err, MCC_GPU_INVALID, "GPU %d: unit vector entries out of order", p->dev);
			CK(cudaMemcpyAsync(p->utab + 2 * (size_t) p->n_utab, vnew + 2 * (size_t) (first - n0),
							   16 * (size_t) own, cudaMemcpyHostToDevice, p->st), "refinement upload");
			if (delta != 0)
				for (size_t o = o0; o < o0 + own; o++)
					huix[o] -= delta;
			p->n_utab += own;
		}
		CK(cudaMemcpyAsync(p->rperm + r->r0, hperm + r->off, r->nr, cudaMemcpyHostToDevice, p->st),
		   "refinement upload");
		CK(cudaMemcpyAsync(p->rxy + r->r0, hxy + r->off, 4 * (size_t) r->nr, cudaMemcpyHostToDevice, p->st),
		   "refinement upload");
		CK(cudaMemcpyAsync(p->ruix + r->r0, huix + r->off, 4 * (size_t) r->nr, cudaMemcpyHostToDevice, p->st),
		   "refinement upload");
	}
	CK(rstage_mark(g, sb, pi), "refinement upload");
#undef CK
done:
	return rc;
}

/*
 * Records are packed into a staging buffer (several threads), then each
 * partition's copies are queued on its stream: the next attach packs into
 * the other buffer while they travel. What the device holds is what the
 * one-thread loop of rp_geom_records, copied synchronously, gave.
 */
mcc_gpu_code
mcc_gpu_refine_attach(mcc_gpu *g, const mcc_soa *s, const mcc_gpu_geom *geo, uint32_t t0,
					  uint32_t t1, mcc_error *err)
{
	mcc_gpu_code rc;
	run		   *runs = NULL;
	int			nruns = 0;
	size_t		total = 0;
	mcc_gpu_rstage_buf *sb = NULL;
	double	   *vnew;
	uint32_t   *hxy;
	uint32_t   *huix;
	uint8_t    *hperm;
	rp_rec_item   *items = NULL;
	uint32_t	nitems = 0;
	uint32_t	n0 = g->utab.n;
	int			changed = 0;
	double		at;

	if ((rc = attach_check(g, s, geo, t0, t1, err)) != MCC_GPU_OK)
		return rc;
	if (g->rstage.lost)
	{
		if (t0 != 0)
			return mcc_gpu_rt_err(err, MCC_GPU_INVALID,
								  "the refinement data was lost by a failed attach: attach again from template 0");
		rp_utab_clear(&g->utab);
		for (int pi = 0; pi < g->nparts; pi++)
			g->part[pi].n_utab = g->part[pi].n_ushared = 0;
		g->rstage.lost = 0;
		n0 = 0;
	}
	if (t0 == t1)
		return MCC_GPU_OK;
	/* runs of consecutive local templates per partition (one per partition, by construction) */
	runs = (run *) malloc(sizeof(run) * (t1 - t0));
	if (!runs)
		return mcc_gpu_rt_err(err, MCC_GPU_OOM, "out of host memory");
	for (int pi = 0; pi < g->nparts; pi++)
	{
		mcc_gpu_part *p = &g->part[pi];

		for (uint32_t i = t0; i < t1; i++)
		{
			run		   *r = nruns ? &runs[nruns - 1] : NULL;
			uint32_t	l = g->tref[i].local;

			if (g->tref[i].where != pi)
				continue;
			if (!r || r->part != pi || r->l0 + r->nt != l)
			{
				r = &runs[nruns++];
				r->part = pi;
				r->g0 = i;
				r->l0 = l;
				r->nt = 0;
				r->r0 = p->h_tcoff[l];
				r->off = total;
			}
			r->nt++;
			r->nr = p->h_tcoff[l + 1] - r->r0;
			total += p->h_tcoff[l + 1] - p->h_tcoff[l];
		}
	}
	if ((rc = rstage_take(g, total + 1, &sb, err)) != MCC_GPU_OK)
		goto done;
	rstage_arrays(sb, &vnew, &hxy, &huix, &hperm);
	/* the records, and the new directions into the table, in the order of the runs */
	items = (rp_rec_item *) malloc(sizeof(rp_rec_item) * (t1 - t0));
	if (!items)
	{
		rc = mcc_gpu_rt_err(err, MCC_GPU_OOM, "out of host memory");
		goto done;
	}
	for (int k = 0; k < nruns; k++)
	{
		run		   *r = &runs[k];
		mcc_gpu_part *p = &g->part[r->part];
		uint32_t	i = r->g0;

		for (uint32_t lt = r->l0; lt < r->l0 + r->nt; lt++, i++)
		{
			while (g->tref[i].where != r->part)
				i++;			/* the run's next template in gallery order */
			items[nitems].tpl = i;
			items[nitems].n = geo->first[i + 1] - geo->first[i];
			items[nitems].off = r->off + (p->h_tcoff[lt] - r->r0);
			nitems++;
		}
	}
	at = mcc_cuda_now_ms();
	rc = records_build(g, geo, items, nitems, total, hperm, hxy, huix, vnew, err);
	g->rstage.pack_ms += mcc_cuda_now_ms() - at;
	changed = 1;				/* the table, maybe, even on failure */
	if (rc != MCC_GPU_OK)
		goto done;
	/* per partition: room, then the copies queued */
	at = mcc_cuda_now_ms();
	for (int pi = 0; pi < g->nparts && rc == MCC_GPU_OK; pi++)
	{
		uint32_t	entries;

		if ((rc = attach_entries(g, pi, runs, nruns, huix, &entries, err)) == MCC_GPU_OK &&
			(rc = attach_room(g, &g->part[pi], entries, err)) == MCC_GPU_OK)
			rc = attach_copies(g, pi, runs, nruns, sb, n0, err);
	}
	g->rstage.copy_ms += mcc_cuda_now_ms() - at;
	if (rc == MCC_GPU_OK)
		for (uint32_t i = t0; i < t1; i++)
			g->tref[i].refd = 1;
done:
	/*
	 * A failure once the table changed loses the refinement data
	 * (attach_lost); before, nothing changed. Either way the copies queued
	 * are waited for, so nothing reads the buffer after this call.
	 */
	if (rc != MCC_GPU_OK && changed)
		attach_lost(g);
	else if (rc != MCC_GPU_OK)
		mcc_gpu_rstage_drain(g);
	free(runs);
	free(items);
	return rc;
}
