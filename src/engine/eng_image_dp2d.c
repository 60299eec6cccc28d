/*
 * eng_image_dp2d.c: elastic matching jobs (mcc_proto.h's DP2D;
 * src/core/image/mcc_dp2d.h, mcc_dp2d_verify.h).
 *
 * With MCC_IMG_ENHANCE every image is first enhanced and binarized
 * (mcc_dp2d_enhance, default parameters), one image per part of the pool;
 * the first failure in the order a[0..na), b[0..nb) is the one replied,
 * as the backend enhances in that order. The pairs then run on a GPU in
 * one batch (eng_image_gpu.c) or on the CPU one pair per part: with fewer
 * pairs than threads each pair gets core threads of its own
 * (mcc_dp2d_start), watched for the job's cancel. Every path computes the
 * exact integers of mcc_dp2d_match().
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eng_image.h"
#include "mcc_dp2d_verify.h"

#define DP2D_POLL_MS	10

/* Read n images into a new array; false: malformed. */
static bool
read_images(eng_rd *r, uint32_t n, mcc_image **out, bool *no_memory)
{
	mcc_image  *v;

	*out = NULL;
	if (r->bad || n == 0 || n > MCC_DP2D_MAX_PAIRS || (uint64_t) n * 8 > eng_rd_left(r))
		return false;
	v = calloc(n, sizeof(mcc_image));
	if (v == NULL)
	{
		*no_memory = true;
		/* skip them: the frame is still checked to its end */
		for (uint32_t i = 0; i < n && !r->bad; i++)
		{
			uint32_t	w = eng_rd_u32(r);
			uint32_t	h = eng_rd_u32(r);

			if ((uint64_t) w * h > eng_rd_left(r))
				r->bad = true;
			else
				r->pos += (size_t) w * h;
		}
		return !r->bad;
	}
	*out = v;
	for (uint32_t i = 0; i < n; i++)
		if (!eng_img_read_image(r, &v[i], no_memory))
			return false;
	return true;
}

/* Do all n images have the size of the first? */
static bool
same_size(const mcc_image *v, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++)
		if (v[i].width != v[0].width || v[i].height != v[0].height)
			return false;
	return true;
}

/* Outputs for the pairs (after the images have their final size). */
static bool
alloc_outputs(eng_image_job *j)
{
	eng_img_dp2d *d = &j->u.dp2d;
	size_t		px = (size_t) d->a[0].width * d->a[0].height;

	d->out = calloc(d->npairs, sizeof(mcc_dp2d_out));
	if ((d->flags & MCC_IMG_WARPED) && d->out != NULL)
		d->warped = malloc(px * d->npairs);
	if (d->out == NULL || ((d->flags & MCC_IMG_WARPED) && d->warped == NULL))
	{
		mcc_error_set(&j->err, MCC_ERR_MEMORY, "out of memory for elastic matching");
		return false;
	}
	return true;
}

/* Check the images for matching as they are (no enhancement, or after it). */
static bool
check_pairs(eng_image_job *j)
{
	eng_img_dp2d *d = &j->u.dp2d;

	if (!same_size(d->a, d->na) || !same_size(d->b, d->nb))
	{
		mcc_error_set(&j->err, MCC_ERR_VALUE, "the images of one elastic matching request differ in size");
		return false;
	}
	if (mcc_dp2d_check(&d->a[0], &d->b[0], &j->err) != MCC_OK)
		return false;
	return alloc_outputs(j);
}

bool
eng_img_dp2d_parse(eng_image_job *j, eng_rd *r)
{
	eng_img_dp2d *d = &j->u.dp2d;
	bool		no_memory = false;
	uint32_t	flags_known = MCC_IMG_WARP | MCC_IMG_ENHANCE | MCC_IMG_WARPED;

	d->flags = eng_rd_u32(r);
	if ((d->flags & ~flags_known) || ((d->flags & MCC_IMG_WARPED) && !(d->flags & MCC_IMG_WARP)))
		return false;
	d->na = eng_rd_u32(r);
	if (!read_images(r, d->na, &d->a, &no_memory))
		return false;
	d->nb = eng_rd_u32(r);
	if (!read_images(r, d->nb, &d->b, &no_memory))
		return false;
	d->npairs = eng_rd_u32(r);
	if (r->bad || d->npairs == 0 || d->npairs > MCC_DP2D_MAX_PAIRS ||
		(uint64_t) d->npairs * 8 != eng_rd_left(r))
		return false;
	d->pa = malloc(sizeof(uint32_t) * d->npairs);
	d->pb = malloc(sizeof(uint32_t) * d->npairs);
	if (d->pa == NULL || d->pb == NULL)
	{
		r->pos = r->len;
		mcc_error_set(&j->err, MCC_ERR_MEMORY, "out of memory for elastic matching");
		return true;
	}
	for (uint32_t i = 0; i < d->npairs; i++)
	{
		d->pa[i] = eng_rd_u32(r);
		d->pb[i] = eng_rd_u32(r);
		if (d->pa[i] >= d->na || d->pb[i] >= d->nb)
			return false;
	}
	if (no_memory)
	{
		mcc_error_set(&j->err, MCC_ERR_MEMORY, "out of memory for elastic matching");
		return true;
	}
	for (uint32_t i = 0; i < d->na + d->nb; i++)
	{
		const mcc_image *im = i < d->na ? &d->a[i] : &d->b[i - d->na];

		if (mcc_image_check_size(im->width, im->height, &j->err) != MCC_OK)
			return true;
	}
	if (!(d->flags & MCC_IMG_ENHANCE))
		(void) check_pairs(j);
	return true;
}

uint32_t
eng_img_dp2d_enhance_setup(eng_image_job *j)
{
	eng_img_dp2d *d = &j->u.dp2d;
	mcc_dp2d_prep p;

	mcc_dp2d_prep_default(&p);
	/* the enhanced images replace the raw ones one by one at the end */
	for (uint32_t i = 0; i < d->na + d->nb; i++)
	{
		mcc_image  *im = i < d->na ? &d->a[i] : &d->b[i - d->na];

		im->stride = im->width;
	}
	return d->na + d->nb;
}

void
eng_img_dp2d_enhance_part(eng_image_job *j, uint32_t part)
{
	eng_img_dp2d *d = &j->u.dp2d;
	mcc_image  *im = part < d->na ? &d->a[part] : &d->b[part - d->na];
	mcc_dp2d_prep p;
	uint8_t    *out;
	mcc_error	err;

	mcc_dp2d_prep_default(&p);
	out = malloc((size_t) p.side * p.side);
	if (out == NULL)
	{
		mcc_error_set(&err, MCC_ERR_MEMORY, "out of memory for the enhancement");
		eng_img_part_error(j, part, &err);
		return;
	}
	if (mcc_dp2d_enhance(im, &p, out, &err) != MCC_OK)
	{
		free(out);
		eng_img_part_error(j, part, &err);
		return;
	}
	/* each part owns its image: no lock */
	free(im->pixels);
	im->pixels = out;
	im->width = im->height = p.side;
	im->stride = p.side;
}

void
eng_img_dp2d_enhance_done(eng_image_job *j)
{
	eng_img_dp2d *d = &j->u.dp2d;

	if (j->err.status != MCC_OK)
	{
		/* part k enhanced a[k] (k < na) or b[k - na] */
		d->fail_side = j->err_key < d->na ? 1 : 2;
		d->fail_index = (uint32_t) (j->err_key < d->na ? j->err_key : j->err_key - d->na);
		return;
	}
	(void) check_pairs(j);
}

uint32_t
eng_img_dp2d_cpu_setup(eng_image_job *j)
{
	eng_img_dp2d *d = &j->u.dp2d;
	int			t = j->cpu_threads / (int) (d->npairs < (uint32_t) j->cpu_threads ? d->npairs : (uint32_t) j->cpu_threads);

	d->pair_threads = t < 1 ? 1 : t > MCC_DP2D_MAX_THREADS ? MCC_DP2D_MAX_THREADS : t;
	memset(d->out, 0, sizeof(mcc_dp2d_out) * d->npairs);
	return d->npairs;
}

/* Match one pair on core threads, stopping them when the job is cancelled. */
static mcc_status
match_threaded(eng_image_job *j, const mcc_image *a, const mcc_image *b, int flags,
			   mcc_dp2d_out *out, mcc_error *err)
{
	const mcc_image *pa[1] = {a};
	const mcc_image *pb[1] = {b};
	mcc_dp2d_request req = {.npairs = 1, .a = pa, .b = pb, .out = out, .flags = flags,
	.threads = j->u.dp2d.pair_threads, .kernel = MCC_DP2D_AUTO};
	mcc_dp2d_job *job;

	if (mcc_dp2d_start(&req, &job, err) != MCC_OK)
		return err->status;
	while (!mcc_dp2d_wait(job, DP2D_POLL_MS))
		if (j->cancel)
		{
			mcc_dp2d_abort(job);
			return mcc_error_set(err, MCC_ERR_INTERNAL, "elastic matching cancelled");
		}
	return mcc_dp2d_finish(job, err);
}

void
eng_img_dp2d_cpu_part(eng_image_job *j, uint32_t part)
{
	eng_img_dp2d *d = &j->u.dp2d;
	const mcc_image *a = &d->a[d->pa[part]];
	const mcc_image *b = &d->b[d->pb[part]];
	mcc_dp2d_out *out = &d->out[part];
	int			flags = (d->flags & MCC_IMG_WARP) ? MCC_DP2D_WARP : 0;
	mcc_status	st;
	mcc_error	err;

	if (d->warped != NULL)
		out->warped = d->warped + (size_t) part * a->width * a->height;
	if (d->pair_threads > 1)
		st = match_threaded(j, a, b, flags, out, &err);
	else
		st = mcc_dp2d_match(a, b, MCC_DP2D_AUTO, flags, out, &err);
	if (st != MCC_OK && !j->cancel)
		eng_img_part_error(j, part, &err);
}

void
eng_img_dp2d_reply(const eng_image_job *j, eng_buf *o)
{
	const eng_img_dp2d *d = &j->u.dp2d;

	eng_buf_u32(o, d->npairs);
	for (uint32_t i = 0; i < d->npairs; i++)
	{
		eng_buf_u64(o, d->out[i].cost);
		eng_buf_f64(o, d->out[i].distance);
		eng_buf_u64(o, d->out[i].differences);
	}
	if (d->flags & MCC_IMG_WARPED)
		eng_buf_put(o, d->warped, (size_t) d->npairs * d->a[0].width * d->a[0].height);
}

void
eng_img_dp2d_free(eng_image_job *j)
{
	eng_img_dp2d *d = &j->u.dp2d;

	for (uint32_t i = 0; d->a && i < d->na; i++)
		free(d->a[i].pixels);
	for (uint32_t i = 0; d->b && i < d->nb; i++)
		free(d->b[i].pixels);
	free(d->a);
	free(d->b);
	free(d->pa);
	free(d->pb);
	free(d->out);
	free(d->warped);
}
