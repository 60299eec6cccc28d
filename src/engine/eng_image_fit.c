/*
 * eng_image_fit.c: chamfer alignment of point sets and of minutiae
 * (mcc_proto.h's CHAMFER and ALIGN; src/core/image/mcc_chamfer.h, mcc_align.h).
 *
 * On the CPU a job is one part that runs the core's alignment with the
 * job's cancel flag; a chamfer fit of many points sums them on core
 * threads of its own (one per MCC_CHAMFER_CHUNK points, at most the
 * engine's thread count: results do not depend on the count). The GPU
 * path is in eng_image_gpu.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eng_image.h"
#include "mcc_template.h"

/* Read n points of dim coordinates; false: malformed. */
static bool
read_points(eng_rd *r, int dim, double **out, size_t *n, bool *no_memory)
{
	uint32_t	count = eng_rd_u32(r);
	uint64_t	values = (uint64_t) count * (uint64_t) dim;

	*out = NULL;
	*n = count;
	if (r->bad || values * 8 > eng_rd_left(r))
		return false;
	*out = malloc(values ? (size_t) values * sizeof(double) : sizeof(double));
	if (*out == NULL)
	{
		*no_memory = true;
		r->pos += (size_t) values * 8;
		return true;
	}
	for (uint64_t i = 0; i < values; i++)
		(*out)[i] = eng_rd_f64(r);
	return true;
}

bool
eng_img_chamfer_parse(eng_image_job *j, eng_rd *r)
{
	eng_img_chamfer *q = &j->u.ch;
	bool		no_memory = false;
	uint64_t	max_cells;

	mcc_chamfer_opts_init(&q->opts);
	q->dim = (int) eng_rd_u32(r);
	q->opts.transform = (int) eng_rd_u32(r);
	q->opts.resolution = eng_rd_f64(r);
	q->opts.max_distance = eng_rd_f64(r);
	q->opts.init_type = (int) eng_rd_u32(r);
	for (int i = 0; i < 16; i++)
		q->opts.init[i] = eng_rd_f64(r);
	q->opts.min_scale = eng_rd_f64(r);
	q->opts.max_scale = eng_rd_f64(r);
	max_cells = eng_rd_u64(r);
	/* max_cells: what mcc.align_max_cells allows at most */
	if (r->bad || (q->dim != 2 && q->dim != 3) || q->opts.transform < 0 ||
		q->opts.transform >= MCC_XFORM_COUNT || q->opts.init_type < -1 ||
		q->opts.init_type >= MCC_XFORM_COUNT || max_cells > INT32_MAX)
		return false;
	q->opts.max_cells = (size_t) max_cells;
	if (!read_points(r, q->dim, &q->obs, &q->n_obs, &no_memory) ||
		!read_points(r, q->dim, &q->ref, &q->n_ref, &no_memory))
		return false;
	if (no_memory)
		mcc_error_set(&j->err, MCC_ERR_MEMORY, "out of memory for an alignment");
	return true;
}

/* Open a template blob's minutiae into a new set; false: malformed or bad. */
static bool
read_minutiae(eng_rd *r, eng_image_job *j, mcc_minutiae **out)
{
	uint32_t	len;
	const uint8_t *p = eng_rd_bytes(r, &len);
	mcc_template_view v;

	*out = NULL;
	if (r->bad)
		return false;
	if (j->err.status != MCC_OK)
		return true;
	if (mcc_template_open(p, len, &v, &j->err) != MCC_OK)
		return true;
	*out = malloc(sizeof(mcc_minutiae));
	if (*out == NULL)
	{
		mcc_error_set(&j->err, MCC_ERR_MEMORY, "out of memory for an alignment");
		return true;
	}
	mcc_template_minutiae(&v, *out);
	return true;
}

bool
eng_img_align_parse(eng_image_job *j, eng_rd *r)
{
	eng_img_align *q = &j->u.al;

	mcc_align_opts_init(&q->opts);
	q->opts.transform = (int) eng_rd_u32(r);
	q->opts.use_directions = eng_rd_u32(r) != 0;
	q->opts.max_distance = eng_rd_f64(r);
	q->opts.init_type = (int) eng_rd_u32(r);
	for (int i = 0; i < 9; i++)
		q->opts.init[i] = eng_rd_f64(r);
	q->opts.max_cells = (size_t) eng_rd_u64(r);
	if (r->bad || q->opts.transform < 0 || q->opts.transform >= MCC_XFORM_COUNT ||
		q->opts.init_type < -1 || q->opts.init_type >= MCC_XFORM_COUNT || q->opts.max_cells > INT32_MAX)
		return false;
	if (!read_minutiae(r, j, &q->probe) || !read_minutiae(r, j, &q->cand))
		return false;
	if (j->err.status != MCC_OK)
		return true;
	if (isnan(q->opts.max_distance) || !(q->opts.max_distance > 0) || isinf(q->opts.max_distance))
	{
		mcc_error_set(&j->err, MCC_ERR_VALUE, "max_distance must be a positive finite number of pixels");
		return true;
	}
	q->res = malloc(sizeof(mcc_align_result));
	if (q->res == NULL)
		mcc_error_set(&j->err, MCC_ERR_MEMORY, "out of memory for an alignment");
	return true;
}

void
eng_img_chamfer_cpu(eng_image_job *j, uint32_t part)
{
	eng_img_chamfer *q = &j->u.ch;
	mcc_chamfer_opts o = q->opts;
	size_t		chunks = (q->n_obs + MCC_CHAMFER_CHUNK - 1) / MCC_CHAMFER_CHUNK;
	mcc_error	err;

	o.threads = chunks < (size_t) j->cpu_threads ? (int) (chunks ? chunks : 1) : j->cpu_threads;
	if (o.threads > MCC_CHAMFER_MAX_THREADS)
		o.threads = MCC_CHAMFER_MAX_THREADS;
	o.cancel = &j->cancel;
	if (mcc_chamfer_align(q->obs, q->n_obs, q->ref, q->n_ref, q->dim, &o, &q->res, &err) != MCC_OK &&
		!q->res.canceled)
		eng_img_part_error(j, 0, &err);
}

void
eng_img_align_cpu(eng_image_job *j, uint32_t part)
{
	eng_img_align *q = &j->u.al;
	mcc_align_opts o = q->opts;
	mcc_error	err;

	o.threads = 1;
	o.cancel = &j->cancel;
	if (mcc_align_minutiae(q->probe, q->cand, &o, q->res, &err) != MCC_OK && !q->res->fit.canceled)
		eng_img_part_error(j, 0, &err);
}

/* fit = n_params, params, residual, iterations, converged */
static void
put_fit(eng_buf *o, const mcc_chamfer_result *res, int iterations)
{
	eng_buf_u32(o, (uint32_t) res->n_params);
	for (int i = 0; i < res->n_params; i++)
		eng_buf_f64(o, res->params[i]);
	eng_buf_f64(o, res->residual);
	eng_buf_u32(o, (uint32_t) iterations);
	eng_buf_u32(o, res->converged ? 1 : 0);
}

void
eng_img_chamfer_reply(const eng_image_job *j, eng_buf *o)
{
	put_fit(o, &j->u.ch.res, j->u.ch.res.iterations);
}

void
eng_img_align_reply(const eng_image_job *j, eng_buf *o)
{
	const mcc_align_result *res = j->u.al.res;

	put_fit(o, &res->fit, res->iterations);
	eng_buf_u32(o, (uint32_t) res->n_probe);
	for (int i = 0; i < res->n_probe; i++)
		for (int k = 0; k < 3; k++)
			eng_buf_f64(o, res->mapped[i][k]);
	eng_buf_u32(o, (uint32_t) res->paired);
}

void
eng_img_chamfer_free(eng_image_job *j)
{
	free(j->u.ch.obs);
	free(j->u.ch.ref);
}

void
eng_img_align_free(eng_image_job *j)
{
	free(j->u.al.probe);
	free(j->u.al.cand);
	free(j->u.al.res);
}
