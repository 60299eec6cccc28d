/*
 * engine_image.h: frames and replies of the engine's image and point jobs
 * (mcc_proto.h's SAD, DP2D, CHAMFER, ALIGN) for the engine's tests, and
 * the in-process helpers of test_engine_image.c and
 * test_engine_image_threads.c (a SAD job checked against the reference).
 */
#ifndef ENGINE_IMAGE_H
#define ENGINE_IMAGE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_inproc.h"
#include "engine_testlib.h"
#include "eng_wire.h"
#include "mcc_align.h"
#include "mcc_chamfer.h"
#include "mcc_image.h"
#include "mcc_proto.h"
#include "mcc_sad.h"

/* ---- requests ---------------------------------------------------------- */

static inline void
ti_put_image(eng_buf *b, const mcc_image *im)
{
	eng_buf_u32(b, im->width);
	eng_buf_u32(b, im->height);
	for (uint32_t y = 0; y < im->height; y++)
		eng_buf_put(b, im->pixels + (size_t) y * im->stride, im->width);
}

static inline void
ti_sad(eng_buf *b, uint64_t rid, uint32_t device, uint32_t k, bool want_map,
	   const mcc_image *t, const mcc_image *p)
{
	size_t		f = eng_frame_begin(b, MCC_MSG_SAD, rid);

	eng_buf_u32(b, device);
	eng_buf_u32(b, k);
	eng_buf_u32(b, want_map ? 1 : 0);
	ti_put_image(b, t);
	ti_put_image(b, p);
	eng_frame_end(b, f);
}

static inline void
ti_dp2d(eng_buf *b, uint64_t rid, uint32_t device, uint32_t flags, uint32_t na,
		const mcc_image *a, uint32_t nb, const mcc_image *bb, uint32_t npairs,
		const uint32_t *pa, const uint32_t *pb)
{
	size_t		f = eng_frame_begin(b, MCC_MSG_DP2D, rid);

	eng_buf_u32(b, device);
	eng_buf_u32(b, flags);
	eng_buf_u32(b, na);
	for (uint32_t i = 0; i < na; i++)
		ti_put_image(b, &a[i]);
	eng_buf_u32(b, nb);
	for (uint32_t i = 0; i < nb; i++)
		ti_put_image(b, &bb[i]);
	eng_buf_u32(b, npairs);
	for (uint32_t i = 0; i < npairs; i++)
	{
		eng_buf_u32(b, pa[i]);
		eng_buf_u32(b, pb[i]);
	}
	eng_frame_end(b, f);
}

static inline void
ti_chamfer(eng_buf *b, uint64_t rid, uint32_t device, int dim, const mcc_chamfer_opts *o,
		   const double *obs, uint32_t n_obs, const double *ref, uint32_t n_ref)
{
	size_t		f = eng_frame_begin(b, MCC_MSG_CHAMFER, rid);

	eng_buf_u32(b, device);
	eng_buf_u32(b, (uint32_t) dim);
	eng_buf_u32(b, (uint32_t) o->transform);
	eng_buf_f64(b, o->resolution);
	eng_buf_f64(b, o->max_distance);
	eng_buf_u32(b, (uint32_t) o->init_type);
	for (int i = 0; i < 16; i++)
		eng_buf_f64(b, o->init[i]);
	eng_buf_f64(b, o->min_scale);
	eng_buf_f64(b, o->max_scale);
	eng_buf_u64(b, o->max_cells);
	eng_buf_u32(b, n_obs);
	for (uint32_t i = 0; i < n_obs * (uint32_t) dim; i++)
		eng_buf_f64(b, obs[i]);
	eng_buf_u32(b, n_ref);
	for (uint32_t i = 0; i < n_ref * (uint32_t) dim; i++)
		eng_buf_f64(b, ref[i]);
	eng_frame_end(b, f);
}

static inline void
ti_align(eng_buf *b, uint64_t rid, uint32_t device, const mcc_align_opts *o,
		 const tl_tpl *probe, const tl_tpl *cand)
{
	size_t		f = eng_frame_begin(b, MCC_MSG_ALIGN, rid);

	eng_buf_u32(b, device);
	eng_buf_u32(b, (uint32_t) o->transform);
	eng_buf_u32(b, o->use_directions ? 1 : 0);
	eng_buf_f64(b, o->max_distance);
	eng_buf_u32(b, (uint32_t) o->init_type);
	for (int i = 0; i < 9; i++)
		eng_buf_f64(b, o->init[i]);
	eng_buf_u64(b, o->max_cells);
	eng_buf_bytes(b, probe->b, (uint32_t) probe->n);
	eng_buf_bytes(b, cand->b, (uint32_t) cand->n);
	eng_frame_end(b, f);
}

/* ---- replies ----------------------------------------------------------- */

/* job_status, and what follows it. */
typedef struct ti_reply
{
	uint16_t	type;
	uint32_t	status;
	char		message[512];
	char		detail[512];
	char		device[128];
	eng_rd		rd;				/* positioned after job_status */
} ti_reply;

/* Copy a bytes field into a string of room n. */
static inline void
ti_str(eng_rd *r, char *out, size_t n)
{
	uint32_t	len;
	const uint8_t *p = eng_rd_bytes(r, &len);

	if (len >= n)
		len = (uint32_t) n - 1;
	memcpy(out, p ? (const char *) p : "", len);
	out[len] = '\0';
}

/* Parse job_status of a result frame; false if f is no image result. */
static inline bool
ti_parse(const tl_frame *f, ti_reply *r)
{
	memset(r, 0, sizeof(*r));
	r->type = f->h.type;
	if (f->h.type < MCC_MSG_SAD || f->h.type > MCC_MSG_ALIGN_RESULT)
		return false;
	eng_rd_init(&r->rd, f->p, f->h.length);
	r->status = eng_rd_u32(&r->rd);
	ti_str(&r->rd, r->message, sizeof(r->message));
	ti_str(&r->rd, r->detail, sizeof(r->detail));
	ti_str(&r->rd, r->device, sizeof(r->device));
	return !r->rd.bad;
}

/* A fit as CHAMFER_RESULT and ALIGN_RESULT carry it. */
typedef struct ti_fit
{
	uint32_t	n_params;
	double		params[MCC_CHAMFER_MAX_PARAMS];
	double		residual;
	int32_t		iterations;
	uint32_t	converged;
} ti_fit;

static inline bool
ti_read_fit(eng_rd *r, ti_fit *fit)
{
	fit->n_params = eng_rd_u32(r);
	if (fit->n_params > MCC_CHAMFER_MAX_PARAMS)
		return false;
	for (uint32_t i = 0; i < fit->n_params; i++)
		fit->params[i] = eng_rd_f64(r);
	fit->residual = eng_rd_f64(r);
	fit->iterations = (int32_t) eng_rd_u32(r);
	fit->converged = eng_rd_u32(r);
	return !r->bad;
}

/* ---- in process (engine_inproc.h) -------------------------------------- */

/* Run every stage to its end. */
static inline void
ti_pump(eng_server *s)
{
	ip_pump_all(s);
}

/* A w x h image of random pixels of r (malloc'd). */
static inline mcc_image
ti_random_image(tg_rng *rng, uint32_t w, uint32_t h)
{
	mcc_image	im = {w, h, w, malloc((size_t) w * h)};

	for (size_t i = 0; i < (size_t) w * h; i++)
		im.pixels[i] = (uint8_t) tg_int(rng, 0, 255);
	return im;
}

/* The reply of request rid parsed (false: none, or no image result). */
static inline bool
ti_reply_of(eng_conn *c, uint64_t rid, ti_reply *r, uint8_t **copy)
{
	tl_frame	f;

	if (ip_reply(c, rid, &f, copy) != 1)
		return false;
	return ti_parse(&f, r);
}

/*
 * Send the request built in b (then freed), run the engine to its end and
 * read the reply of rid: true if it is a result of `type` with status OK.
 * *copy is the reply's copy, to free in every case.
 */
static inline bool
ti_result(eng_server *s, eng_conn *c, eng_buf *b, uint64_t rid, uint16_t type, ti_reply *r,
		  uint8_t **copy)
{
	ip_feed(s, c, b);
	eng_buf_free(b);
	ti_pump(s);
	return ti_reply_of(c, rid, r, copy) && r->type == type && r->status == MCC_OK;
}

/*
 * The end of a result's check: ok only if the reply was read to its end;
 * the reply's copy freed and the connection's output cleared.
 */
static inline bool
ti_done(eng_conn *c, ti_reply *r, uint8_t *copy, bool ok)
{
	ok = ok && eng_rd_done(&r->rd);
	free(copy);
	ip_clear_out(c);
	return ok;
}

/* Does the job have run where `where` says ("cpu", or "gpu": anything else)? */
static inline bool
ti_ran_on(const ti_reply *r, const char *where)
{
	if (strcmp(where, "cpu") == 0)
		return strcmp(r->device, "cpu") == 0;
	return r->device[0] != '\0' && strcmp(r->device, "cpu") != 0;
}

/*
 * SAD of pattern p in target t through the engine equals mcc_sad_run with
 * the reference kernel: every hit and, with want_map, the whole map.
 */
static inline bool
ti_sad_ok(eng_server *s, eng_conn *c, uint64_t rid, uint32_t device, const char *where,
		  const mcc_image *t, const mcc_image *p, uint32_t k, bool want_map)
{
	eng_buf		b;
	ti_reply	r;
	uint8_t    *cp;
	uint32_t	nx,
				ny,
				n,
				want,
				n_ref = 0;
	uint64_t   *map_ref;
	mcc_sad_hit *hits_ref;
	mcc_sad_request req;
	mcc_error	err;
	bool		ok;

	eng_buf_init(&b);
	ti_sad(&b, rid, device, k, want_map, t, p);
	if (!ti_result(s, c, &b, rid, MCC_MSG_SAD_RESULT, &r, &cp))
	{
		printf("# SAD %llu: no result (%s)\n", (unsigned long long) rid, r.message);
		free(cp);
		return false;
	}
	nx = eng_rd_u32(&r.rd);
	ny = eng_rd_u32(&r.rd);
	n = eng_rd_u32(&r.rd);
	want = (uint64_t) nx * ny < k ? nx * ny : k;
	map_ref = malloc(sizeof(uint64_t) * nx * ny);
	hits_ref = malloc(sizeof(mcc_sad_hit) * (want ? want : 1));
	memset(&req, 0, sizeof(req));
	req.target = t;
	req.pattern = p;
	req.map = map_ref;
	req.k = want;
	req.threads = 1;
	req.kernel = MCC_SAD_REFERENCE;
	ok = mcc_sad_run(&req, hits_ref, &n_ref, &err) == MCC_OK && n == n_ref &&
		nx == t->width - p->width + 1 && ny == t->height - p->height + 1 && ti_ran_on(&r, where);
	for (uint32_t i = 0; ok && i < n; i++)
	{
		uint64_t	sad = eng_rd_u64(&r.rd);
		uint32_t	x = eng_rd_u32(&r.rd);
		uint32_t	y = eng_rd_u32(&r.rd);

		ok = sad == hits_ref[i].sad && x == hits_ref[i].x && y == hits_ref[i].y;
	}
	if (ok && eng_rd_u32(&r.rd) != (want_map ? 1u : 0u))
		ok = false;
	if (ok && want_map)
		for (size_t i = 0; ok && i < (size_t) nx * ny; i++)
			ok = eng_rd_u64(&r.rd) == map_ref[i];
	free(map_ref);
	free(hits_ref);
	return ti_done(c, &r, cp, ok);
}

#endif							/* ENGINE_IMAGE_H */
