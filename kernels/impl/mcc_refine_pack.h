/*
 * mcc_refine_pack.h: the host side of GPU refinement that the unit tests
 * can run without a GPU: a template's cylinders in minutia order (the order
 * of mcc_match.c's side_load), a side of the kernel (rb_cyl) from a view,
 * the geometry records of mcc_gpu_geom (of many templates on several
 * threads), the table of unit vectors with its bounded de-duplication, and
 * the kernel's plan of a method. C and C++
 * (kernels/mcc_gpu_refine*.cu include it), static functions only.
 */
#ifndef MCC_REFINE_PACK_H
#define MCC_REFINE_PACK_H

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_gpu_refine.h"
#include "mcc_refine_body.h"

#ifdef __cplusplus
extern "C"
{
#endif
#include "mcc_detmath.h"
#include "mcc_template.h"

/*
 * src/core/common/mcc_job.h's ways to start threads (that header is C11,
 * not C++): the host-side packing of refinement data, uploads, a
 * rescoring's preparation.
 */
int			mcc_job_start_threads(pthread_t *tids, int n, void *(*fn) (void *), void *args,
								  size_t stride);
void		mcc_job_run_each(int n, void *(*fn) (void *), void *args, size_t stride);
#ifdef __cplusplus
}
#endif
#include "mcc_job_shares.h"

/*
 * The cylinders of t in the order of their minutiae, as side_load does:
 * order[k] = stored cylinder of rank k; returns the count, which is
 * t->n_cyl for every validated view (one cylinder per minutia at most).
 */
static inline int
rp_order(const mcc_template_view *t, int *order)
{
	int16_t		at[MCC_MAX_MINUTIAE];
	int			k = 0;

	for (int i = 0; i < t->n_min && i < MCC_MAX_MINUTIAE; i++)
		at[i] = -1;
	for (int c = 0; c < t->n_cyl; c++)
	{
		int			m = mcc_template_cyl_minutia(t, c);

		if (m < MCC_MAX_MINUTIAE)
			at[m] = (int16_t) c;
	}
	for (int i = 0; i < t->n_min && i < MCC_MAX_MINUTIAE; i++)
		if (at[i] >= 0)
			order[k++] = at[i];
	return k;
}

/* Cylinder c of t (its minutia's geometry included) as the kernel reads it. */
static inline void
rp_cyl(const mcc_template_view *t, int c, rb_cyl *out)
{
	uint64_t	w[2 * MCC_MAX_WORDS];
	mcc_minutia m;

	memset(out, 0, sizeof(*out));
	mcc_template_cyl_bits(t, c, w);
	for (int i = 0; i < 4 && i < t->words; i++)
		out->bits[i] = w[i];
	out->pc = (uint16_t) mcc_template_cyl_popcount(t, c);
	out->angle = (uint8_t) mcc_template_cyl_angle(t, c);
	mcc_template_minutia(t, mcc_template_cyl_minutia(t, c), &m);
	out->x = m.x;
	out->y = m.y;
	mcc_dm_sincos((double) m.theta, &out->uy, &out->ux);
}

/*
 * A side: t's cylinders in minutia order into out[0 .. n); returns n, or
 * -1 if t is not one cylinder per minutia (never for a validated view).
 */
static inline int
rp_side(const mcc_template_view *t, rb_cyl *out)
{
	int			order[MCC_MAX_CYL];
	int			n;

	if (t->n_cyl < 0 || t->n_cyl > MCC_MAX_CYL)
		return -1;
	n = rp_order(t, order);
	if (n != t->n_cyl)
		return -1;
	for (int k = 0; k < n; k++)
		rp_cyl(t, order[k], &out[k]);
	return n;
}

/* ------------------------------------------------------------------ */
/* unit vectors                                                        */

/*
 * Distinct minutia directions and their unit vectors (mcc_dm_sincos of the
 * stored float). The first RP_UHASH_MAX directions are de-duplicated by
 * their bits (real data has a few hundred: quantized angles); once the
 * hash is full, every direction gets an entry of its own without a look-up
 * (continuous synthetic angles: nearly every cylinder is new anyway), so
 * the hash never grows past RP_UHASH slots whatever the data. An entry's
 * vector is that of its direction in either case, so what a record points
 * at is the same. The host keeps the vectors of entries [0, nv); entries
 * that rp_records_build gives once the hash is full go only to its caller's
 * buffer (the device's copy), so nv <= n.
 */
#define RP_UHASH		(1u << 17)
#define RP_UHASH_MAX	(1u << 16)
#define RP_UEMPTY		0xFFFFFFFFu	/* never a valid direction's bits (a NaN) */

typedef struct rp_utab
{
	double	   *v;				/* (ux, uy) per entry held on the host */
	uint32_t	n;				/* entries */
	uint32_t	nv;				/* entries held in v: [0, nv) */
	uint32_t	cap;
	uint32_t   *hkey;			/* RP_UHASH slots: direction bits ... */
	uint32_t   *hval;			/* ... and entry */
	uint32_t	nh;
} rp_utab;

static inline void
rp_utab_free(rp_utab *u)
{
	free(u->v);
	free(u->hkey);
	free(u->hval);
	memset(u, 0, sizeof(*u));
}

static inline void
rp_utab_clear(rp_utab *u)
{
	u->n = 0;
	u->nv = 0;
	u->nh = 0;
	if (u->hkey)
		memset(u->hkey, 0xFF, sizeof(uint32_t) * RP_UHASH);
}

/*
 * Look direction bits up in the hash (which exists): 1 and *idx if there,
 * else 0 and *slot, the empty slot it would take. Reads only: threads may
 * look up while nothing adds.
 */
static inline int
rp_utab_find(const rp_utab *u, uint32_t bits, uint32_t *idx, uint32_t *slot)
{
	uint32_t	h = (bits * 0x9E3779B1u) >> 15;

	while (u->hkey[h] != RP_UEMPTY)
	{
		if (u->hkey[h] == bits)
		{
			*idx = u->hval[h];
			return 1;
		}
		h = (h + 1) & (RP_UHASH - 1);
	}
	*slot = h;
	return 0;
}

/* Room for n entries; -1 if out of memory. */
static inline int
rp_utab_reserve(rp_utab *u, uint32_t n)
{
	uint32_t	nc = u->cap ? u->cap : 1024;
	double	   *nv;

	if (n <= u->cap)
		return 0;
	while (nc < n)
		nc = nc > 0x7fffffffu ? n : nc * 2;
	nv = (double *) realloc(u->v, sizeof(double) * 2 * (size_t) nc);
	if (!nv)
		return -1;
	u->v = nv;
	u->cap = nc;
	return 0;
}

/* Is the hash full (every direction not in it now gets an entry of its own)? */
static inline int
rp_utab_frozen(const rp_utab *u)
{
	return u->hkey != NULL && u->nh >= RP_UHASH_MAX;
}

/* The hash, allocated empty the first time; -1 if out of memory. */
static inline int
rp_utab_hash(rp_utab *u)
{
	if (u->hkey)
		return 0;
	u->hkey = (uint32_t *) malloc(sizeof(uint32_t) * RP_UHASH);
	u->hval = (uint32_t *) malloc(sizeof(uint32_t) * RP_UHASH);
	if (!u->hkey || !u->hval)
	{
		free(u->hkey);
		free(u->hval);
		u->hkey = u->hval = NULL;
		return -1;
	}
	memset(u->hkey, 0xFF, sizeof(uint32_t) * RP_UHASH);
	return 0;
}

/*
 * The entry of direction theta: found in the hash while it is not full,
 * else added after every entry (all held in v: n = nv, else -1); -1 if
 * out of memory.
 */
static inline int
rp_utab_index(rp_utab *u, float theta, uint32_t *idx)
{
	uint32_t	bits;
	uint32_t	h = 0;
	int			frozen = rp_utab_frozen(u);

	memcpy(&bits, &theta, sizeof(bits));
	if (rp_utab_hash(u) != 0)
		return -1;
	if (!frozen && rp_utab_find(u, bits, idx, &h))
		return 0;
	if (u->nv != u->n || rp_utab_reserve(u, u->n + 1) != 0)
		return -1;
	mcc_dm_sincos((double) theta, &u->v[2 * (size_t) u->n + 1], &u->v[2 * (size_t) u->n]);
	*idx = u->n++;
	u->nv = u->n;
	if (!frozen)
	{
		u->hkey[h] = bits;
		u->hval[h] = *idx;
		u->nh++;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* geometry of gallery templates                                       */

/* An empty geometry; 0 or -1. */
static inline int
rp_geom_init(mcc_gpu_geom *geo, uint32_t cap_tpl, uint32_t cap_cyl)
{
	memset(geo, 0, sizeof(*geo));
	geo->cap_tpl = cap_tpl;
	geo->cap_cyl = cap_cyl;
	geo->first = (uint32_t *) malloc(sizeof(uint32_t) * ((size_t) cap_tpl + 1));
	geo->perm = (uint8_t *) malloc(cap_cyl ? cap_cyl : 1);
	geo->xy = (uint32_t *) malloc(sizeof(uint32_t) * (cap_cyl ? cap_cyl : 1));
	geo->theta = (float *) malloc(sizeof(float) * (cap_cyl ? cap_cyl : 1));
	if (!geo->first || !geo->perm || !geo->xy || !geo->theta)
		return -1;
	geo->first[0] = 0;
	return 0;
}

/* Free a geometry's arrays (NULL: nothing); it is empty and zeroed after. */
static inline void
rp_geom_free(mcc_gpu_geom *geo)
{
	if (!geo)
		return;
	free(geo->first);
	free(geo->perm);
	free(geo->xy);
	free(geo->theta);
	memset(geo, 0, sizeof(*geo));
}

/* Make room in geo for nt more templates with nc more cylinders; 0 or -1. */
static inline int
rp_geom_reserve(mcc_gpu_geom *geo, uint32_t nt, uint32_t nc)
{
	if (geo->n_tpl + nt > geo->cap_tpl || !geo->first)
	{
		uint32_t	cap = geo->cap_tpl ? geo->cap_tpl : 64;
		uint32_t   *f;

		while (cap < geo->n_tpl + nt)
			cap = cap > 0x7fffffffu ? geo->n_tpl + nt : cap * 2;
		f = (uint32_t *) realloc(geo->first, sizeof(uint32_t) * ((size_t) cap + 1));
		if (!f)
			return -1;
		if (!geo->first)
			f[0] = 0;
		geo->first = f;
		geo->cap_tpl = cap;
	}
	if (geo->n_cyl + nc > geo->cap_cyl || !geo->perm)
	{
		uint32_t	cap = geo->cap_cyl ? geo->cap_cyl : 1024;
		uint8_t    *p;
		uint32_t   *xy;
		float	   *th;

		while (cap < geo->n_cyl + nc)
			cap = cap > 0x7fffffffu ? geo->n_cyl + nc : cap * 2;
		p = (uint8_t *) realloc(geo->perm, cap);
		if (p)
			geo->perm = p;
		xy = (uint32_t *) realloc(geo->xy, sizeof(uint32_t) * (size_t) cap);
		if (xy)
			geo->xy = xy;
		th = (float *) realloc(geo->theta, sizeof(float) * (size_t) cap);
		if (th)
			geo->theta = th;
		if (!p || !xy || !th)
			return -1;
		geo->cap_cyl = cap;
	}
	return 0;
}

/*
 * Append the records of a template given by its parts: n_min minutiae
 * records as a stored template holds them (MCC_MINUTIA_RECSZ bytes each:
 * int16 x, int16 y, float theta, ...) and cylinder c's minutia index at
 * cmin[c * stride] (the template's metadata, or the engine cache's side,
 * which keeps them one byte apart), so that a caller holding these need
 * not rebuild the template. The cylinders in the order of their minutiae,
 * as rp_order. 0, -1 (memory) or -2 (not one cylinder per minutia).
 */
static inline int
rp_geom_append_parts(mcc_gpu_geom *geo, int n_min, const uint8_t *minutiae, int n_cyl,
					 const uint8_t *cmin, size_t stride)
{
	int16_t		at[MCC_MAX_MINUTIAE];
	int			order[MCC_MAX_CYL];
	int			n = 0;
	uint32_t	base;

	if (n_cyl < 0 || n_cyl > MCC_MAX_CYL)
		return -2;
	for (int i = 0; i < n_min && i < MCC_MAX_MINUTIAE; i++)
		at[i] = -1;
	for (int c = 0; c < n_cyl; c++)
	{
		int			m = cmin[(size_t) c * stride];

		if (m < MCC_MAX_MINUTIAE)
			at[m] = (int16_t) c;
	}
	for (int i = 0; i < n_min && i < MCC_MAX_MINUTIAE; i++)
		if (at[i] >= 0)
			order[n++] = at[i];
	if (n != n_cyl)
		return -2;
	if (rp_geom_reserve(geo, 1, (uint32_t) n) != 0)
		return -1;
	base = geo->n_cyl;
	for (int k = 0; k < n; k++)
	{
		const uint8_t *rec = minutiae + (size_t) cmin[(size_t) order[k] * stride] * MCC_MINUTIA_RECSZ;
		uint16_t	x;
		uint16_t	y;

		memcpy(&x, rec, 2);
		memcpy(&y, rec + 2, 2);
		geo->perm[base + k] = (uint8_t) order[k];
		geo->xy[base + k] = (uint32_t) x | (uint32_t) y << 16;
		memcpy(&geo->theta[base + k], rec + 4, 4);
	}
	geo->n_cyl += (uint32_t) n;
	geo->n_tpl++;
	geo->first[geo->n_tpl] = geo->n_cyl;
	return 0;
}

/* Append t's records to geo; 0, -1 (memory) or -2 (not one cylinder per minutia). */
static inline int
rp_geom_append(mcc_gpu_geom *geo, const mcc_template_view *t)
{
	return rp_geom_append_parts(geo, t->n_min, t->minutiae, t->n_cyl, t->meta + 3, MCC_CYLMETA_RECSZ);
}

/* Append template k of src to dst; 0 or -1. */
static inline int
rp_geom_copy(mcc_gpu_geom *dst, const mcc_gpu_geom *src, uint32_t k)
{
	uint32_t	f = src->first[k];
	uint32_t	n = src->first[k + 1] - f;

	if (rp_geom_reserve(dst, 1, n) != 0)
		return -1;
	memcpy(dst->perm + dst->n_cyl, src->perm + f, n);
	memcpy(dst->xy + dst->n_cyl, src->xy + f, sizeof(uint32_t) * n);
	memcpy(dst->theta + dst->n_cyl, src->theta + f, sizeof(float) * n);
	dst->n_cyl += n;
	dst->n_tpl++;
	dst->first[dst->n_tpl] = dst->n_cyl;
	return 0;
}

/*
 * Device records of template k of geo: rperm, rxy and ruix for its n
 * cylinders (directions entered into u); 0 or -1 (memory).
 */
static inline int
rp_geom_records(const mcc_gpu_geom *geo, uint32_t k, rp_utab *u, uint8_t *rperm,
				uint32_t *rxy, uint32_t *ruix)
{
	uint32_t	f = geo->first[k];
	uint32_t	n = geo->first[k + 1] - f;

	for (uint32_t i = 0; i < n; i++)
	{
		rperm[i] = geo->perm[f + i];
		rxy[i] = geo->xy[f + i];
		if (rp_utab_index(u, geo->theta[f + i], &ruix[i]) != 0)
			return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* the records of many templates, on several threads                  */

/* A template's records and their place in the staging arrays, in packing order. */
typedef struct rp_rec_item
{
	uint32_t	tpl;			/* gallery template */
	uint32_t	n;				/* its records */
	size_t		off;			/* its first, in the staging arrays */
} rp_rec_item;

#define RP_REC_MISS		0xFFFFFFFFu	/* a direction not in the table's hash */
#define RP_REC_MAX_THREADS	64

/*
 * A thread's run of items. Phase 1 (the hash not full): the records, each
 * direction looked up in the hash (read only), RP_REC_MISS where it is not
 * there. Phase 2 (the hash full): the records, each direction the next
 * new entry from base on, its unit vector written to vnew (entries from
 * vbase on) or, without vnew, to the table.
 */
typedef struct rp_rec_worker
{
	const mcc_gpu_geom *geo;
	rp_utab    *u;
	const rp_rec_item *items;
	uint32_t	i0,
				i1;
	uint8_t    *hperm;
	uint32_t   *hxy,
			   *huix;
	double	   *vnew;			/* or NULL: new entries from vbase on, also here */
	uint32_t	vbase;
	int			phase;
	uint32_t	base;
} rp_rec_worker;

static inline void *
rp_rec_worker_run(void *arg)
{
	rp_rec_worker *w = (rp_rec_worker *) arg;
	const mcc_gpu_geom *geo = w->geo;

	for (uint32_t it = w->i0; it < w->i1; it++)
	{
		const rp_rec_item *r = &w->items[it];
		uint32_t	f = geo->first[r->tpl];

		for (uint32_t c = 0; c < r->n; c++)
		{
			size_t		o = r->off + c;

			w->hperm[o] = geo->perm[f + c];
			w->hxy[o] = geo->xy[f + c];
			if (w->phase == 1)
			{
				uint32_t	bits;
				uint32_t	slot;

				memcpy(&bits, &geo->theta[f + c], sizeof(bits));
				if (!rp_utab_find(w->u, bits, &w->huix[o], &slot))
					w->huix[o] = RP_REC_MISS;
			}
			else
			{
				uint32_t	idx = w->base++;
				double	   *v = w->vnew ? &w->vnew[2 * (size_t) (idx - w->vbase)] :
					&w->u->v[2 * (size_t) idx];

				mcc_dm_sincos((double) geo->theta[f + c], &v[1], &v[0]);
				w->huix[o] = idx;
			}
		}
	}
	return NULL;
}

/* Run phase `phase` of n workers: w[1..] on threads, w[0] and any not started here. */
static inline void
rp_rec_run(rp_rec_worker *w, int n, int phase)
{
	for (int i = 0; i < n; i++)
		w[i].phase = phase;
	mcc_job_run_each(n, rp_rec_worker_run, w, sizeof(rp_rec_worker));
}

/* n workers over items[0..n_items), each knowing its first new entry: base on (the hash full). */
static inline int
rp_rec_workers(rp_rec_worker *w, int nth, rp_utab *u, const mcc_gpu_geom *geo,
			   const rp_rec_item *items, uint32_t n_items, uint8_t *hperm, uint32_t *hxy,
			   uint32_t *huix, double *vnew, uint32_t vbase, uint64_t *next)
{
	if (nth < 1)
		nth = 1;
	if (nth > RP_REC_MAX_THREADS)
		nth = RP_REC_MAX_THREADS;
	memset(w, 0, sizeof(rp_rec_worker) * nth);
	for (int i = 0; i < nth; i++)
	{
		w[i].geo = geo;
		w[i].u = u;
		w[i].items = items;
		w[i].i0 = (uint32_t) ((uint64_t) n_items * i / nth);
		w[i].i1 = (uint32_t) ((uint64_t) n_items * (i + 1) / nth);
		w[i].hperm = hperm;
		w[i].hxy = hxy;
		w[i].huix = huix;
		w[i].vnew = vnew;
		w[i].vbase = vbase;
		w[i].base = (uint32_t) *next;
		for (uint32_t it = w[i].i0; it < w[i].i1; it++)
			*next += items[it].n;
	}
	return nth;
}

/*
 * Items[0..n) with the hash full: the k-th record in item order gets entry
 * u->n + k, so each thread knows its first entry from the records before
 * its items and writes its records and vectors alone (into vnew at entry -
 * vbase, or without vnew into the table, which then holds every entry).
 */
static inline int
rp_records_frozen(rp_utab *u, const mcc_gpu_geom *geo, const rp_rec_item *items, uint32_t n,
				  int nth, uint8_t *hperm, uint32_t *hxy, uint32_t *huix, double *vnew, uint32_t vbase)
{
	rp_rec_worker w[RP_REC_MAX_THREADS];
	uint64_t	next = u->n;

	nth = rp_rec_workers(w, nth, u, geo, items, n, hperm, hxy, huix, vnew, vbase, &next);
	if (next >= RP_REC_MISS || (!vnew && (u->nv != u->n || rp_utab_reserve(u, (uint32_t) next) != 0)))
		return -1;
	rp_rec_run(w, nth, 2);
	u->n = (uint32_t) next;
	if (!vnew)
		u->nv = u->n;
	return 0;
}

/*
 * The records of items[0..n) into the staging arrays, and their
 * directions into table u, on nth threads, exactly as one loop of
 * rp_geom_records over them in order would. While the hash can take keys,
 * the directions are looked up on several threads (read only), then the
 * misses resolved in order here (a few hundred with real data's quantized
 * angles, at most RP_UHASH_MAX before the hash is full): a direction in the
 * hash at the start gets its entry whatever comes before it, since entries
 * are never removed or moved, unless the hash fills up before it in this
 * call (then it is new, as in the loop). From the item where the hash is
 * full on, rp_records_frozen. With vnew, the entries the call adds are also
 * written there (vnew[0] is entry u->n at the call), what a device lacks
 * after the call: once the hash is full only there, not in the table (u->nv
 * stays); without vnew the table holds every entry (then u->nv must equal
 * u->n at the call). 0, or -1 (memory: the table may hold new entries, as
 * after a failed rp_geom_records).
 */
static inline int
rp_records_build(rp_utab *u, const mcc_gpu_geom *geo, const rp_rec_item *items, uint32_t n,
				 int nth, uint8_t *hperm, uint32_t *hxy, uint32_t *huix, double *vnew)
{
	rp_rec_worker w[RP_REC_MAX_THREADS];
	uint32_t	n0 = u->n;
	uint64_t	next = u->n;
	uint32_t	it = 0;
	int			rc = 0;

	if (rp_utab_hash(u) != 0)
		return -1;
	if (rp_utab_frozen(u))
		return rp_records_frozen(u, geo, items, n, nth, hperm, hxy, huix, vnew, n0);
	nth = rp_rec_workers(w, nth, u, geo, items, n, hperm, hxy, huix, vnew, n0, &next);
	rp_rec_run(w, nth, 1);
	for (; it < n && !rp_utab_frozen(u); it++)
	{
		uint32_t	f = geo->first[items[it].tpl];

		/* once the hash fills up here, every later direction is new, found or not */
		for (uint32_t c = 0; c < items[it].n; c++)
			if ((huix[items[it].off + c] == RP_REC_MISS || rp_utab_frozen(u)) &&
				rp_utab_index(u, geo->theta[f + c], &huix[items[it].off + c]) != 0)
				return -1;
	}
	/* resolved here, in order (all held in the table): few with quantized directions */
	if (vnew && u->n > n0)
		memcpy(vnew, u->v + 2 * (size_t) n0, 16 * (size_t) (u->n - n0));
	if (it < n)
		rc = rp_records_frozen(u, geo, items + it, n - it, nth, hperm, hxy, huix, vnew, n0);
	return rc;
}

/* ------------------------------------------------------------------ */
/* methods                                                             */

/* Is the method computed by the kernel? */
static inline int
rp_method_ok(int method)
{
	switch (method)
	{
		case MCC_LSS:
		case MCC_LSS_R:
		case MCC_LSS_DTR:
		case MCC_LGS:
		case MCC_LGS_R:
		case MCC_LGS_DTR:
		case MCC_FUSED:
			return 1;
		default:
			return 0;
	}
}

static inline void
rp_relax(rb_relax *r, const mcc_relax_params *rp, int tab)
{
	r->w_r = rp->w_r;
	r->n_rel = rp->n_rel;
	r->d1 = (int) rp->d1;
	r->max_nr = rp->max_nr;
	r->tab = tab;
}

/* The kernel's plan of a supported method (mcc_match_rescore's dispatch). */
static inline void
rp_plan(rb_plan *pl, int method, const mcc_match_params *mp)
{
	memset(pl, 0, sizeof(*pl));
	switch (method)
	{
		case MCC_LSS:
			pl->votes = 1;
			break;
		case MCC_LSS_R:
		case MCC_LSS_DTR:
		case MCC_LGS_R:
		case MCC_LGS_DTR:
			pl->nsets = 1;
			pl->kind[0] = method == MCC_LSS_R || method == MCC_LSS_DTR ? RB_PAIRS_LSS : RB_PAIRS_LGS;
			pl->relax[0] = 1;
			if (method == MCC_LSS_R || method == MCC_LGS_R)
				rp_relax(&pl->rx[0], &mp->relax, 0);
			else
				rp_relax(&pl->rx[0], &mp->dtr, 1);
			break;
		case MCC_LGS:
			pl->nsets = 1;
			pl->kind[0] = RB_PAIRS_LGS;
			break;
		case MCC_FUSED:
			pl->nsets = 2;
			pl->kind[0] = RB_PAIRS_LSS;
			pl->relax[0] = 1;
			rp_relax(&pl->rx[0], &mp->relax, 0);
			pl->kind[1] = RB_PAIRS_LGS;
			pl->relax[1] = 1;
			rp_relax(&pl->rx[1], &mp->dtr, 1);
			break;
		default:
			break;
	}
}

/* n_P of the pair's scores for min(n_A, n_B) = m, as src/core defines them. */
static inline void
rp_np(uint8_t np[2], int method, const mcc_match_params *mp, const mcc_profile *p, int m)
{
	int			v[2];

	mcc_match_set_np(mp, method, p, m, v);
	for (int i = 0; i < 2; i++)
		np[i] = (uint8_t) (v[i] < 0 ? 0 : v[i] > 255 ? 255 : v[i]);
}

/*
 * Size classes of pairs by their larger side: up to lim cylinders, a block
 * holds nmax per side and kcap keys. Below 64 every key and rho fit the
 * shared buffer (lim^2 <= kcap), and the blocks are small enough for many
 * per SM (about 16, 21, 46 KB: typical templates of 30 to 45 cylinders
 * fall in the first two); above, Gamma and rho go to global memory when
 * they do not fit.
 */
#define RP_NCLASS 5
static const uint32_t rp_class_lim[RP_NCLASS] = {32, 45, 64, 128, 256};
static const uint32_t rp_class_nmax[RP_NCLASS] = {32, 48, 64, 128, 256};
static const uint32_t rp_class_kcap[RP_NCLASS] = {1024, 2048, 4096, 8192, 8192};

static inline int
rp_class(uint32_t na, uint32_t nb)
{
	uint32_t	m = na > nb ? na : nb;
	int			c = 0;

	while (c < RP_NCLASS - 1 && m > rp_class_lim[c])
		c++;
	return c;
}

#endif							/* MCC_REFINE_PACK_H */
