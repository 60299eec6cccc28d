/*
 * eng_image_sad.c: SAD jobs (mcc_proto.h's SAD; src/core/image/mcc_sad.h).
 *
 * On the CPU a job is a plan whose bands of map rows are the pool's
 * parts: each part computes its band into the map and its own best k,
 * which join the job's set under its lock. The set orders hits by (SAD,
 * y, x), every shift has its own key, so the result does not depend on
 * the order of the bands: it is mcc_sad_run()'s, which the backend runs.
 */
#include <stdlib.h>
#include <string.h>

#include "eng_image.h"
#include "mcc_dp2d_verify.h"

bool
eng_img_sad_parse(eng_image_job *j, eng_rd *r)
{
	eng_img_sad *q = &j->u.sad;
	bool		no_memory = false;
	uint64_t	shifts;

	q->k = eng_rd_u32(r);
	q->want_map = eng_rd_u32(r) != 0;
	if (!eng_img_read_image(r, &q->target, &no_memory) ||
		!eng_img_read_image(r, &q->pattern, &no_memory))
		return false;
	if (no_memory)
	{
		mcc_error_set(&j->err, MCC_ERR_MEMORY, "out of memory for a SAD search");
		return true;
	}
	if (mcc_image_check_size(q->target.width, q->target.height, &j->err) != MCC_OK ||
		mcc_image_check_size(q->pattern.width, q->pattern.height, &j->err) != MCC_OK ||
		mcc_sad_positions(&q->target, &q->pattern, &q->nx, &q->ny, &j->err) != MCC_OK)
		return true;
	if (q->k > MCC_SAD_MAX_K)
	{
		mcc_error_set(&j->err, MCC_ERR_LIMIT, "k is too large: %u", q->k);
		mcc_error_detail(&j->err, "At most %d hits are returned; the SAD map gives every position.",
						 MCC_SAD_MAX_K);
		return true;
	}
	shifts = (uint64_t) q->nx * q->ny;
	if (shifts < q->k)
		q->k = (uint32_t) shifts;
	if (eng_img_reply_bytes(j) + 4096 > MCC_PROTO_MAX_FRAME)
	{
		mcc_error_set(&j->err, MCC_ERR_LIMIT, "the SAD map of %u x %u shifts is too large for the matcher engine's reply",
					  q->nx, q->ny);
		return true;
	}
	q->hits = malloc(sizeof(mcc_sad_hit) * (q->k ? q->k : 1));
	q->map = q->want_map ? malloc(sizeof(uint64_t) * (size_t) shifts) : NULL;
	if (q->hits == NULL || (q->want_map && q->map == NULL))
		mcc_error_set(&j->err, MCC_ERR_MEMORY, "out of memory for a SAD search");
	return true;
}

uint32_t
eng_img_sad_cpu_setup(eng_image_job *j)
{
	eng_img_sad *q = &j->u.sad;

	mcc_sad_plan_free(q->plan);
	q->plan = NULL;
	free(q->topk.hits);
	memset(&q->topk, 0, sizeof(q->topk));
	if (mcc_sad_plan_create(&q->target, &q->pattern, MCC_SAD_AUTO, &q->plan, &j->err) != MCC_OK)
		return 0;
	q->topk.k = q->k;
	if (q->k > 0 && (q->topk.hits = malloc(sizeof(mcc_sad_hit) * q->k)) == NULL)
	{
		mcc_error_set(&j->err, MCC_ERR_MEMORY, "out of memory for a SAD search");
		return 0;
	}
	return mcc_sad_plan_bands(q->plan);
}

void
eng_img_sad_cpu_part(eng_image_job *j, uint32_t part)
{
	eng_img_sad *q = &j->u.sad;
	void	   *scratch = aligned_alloc(64, (mcc_sad_plan_scratch(q->plan) + 63) & ~(size_t) 63);
	mcc_sad_topk mine = {NULL, q->k, 0};
	mcc_error	err;

	if (scratch == NULL || (q->k > 0 && (mine.hits = malloc(sizeof(mcc_sad_hit) * q->k)) == NULL))
	{
		mcc_error_set(&err, MCC_ERR_MEMORY, "out of memory for a SAD search");
		eng_img_part_error(j, part, &err);
		free(scratch);
		return;
	}
	mcc_sad_plan_band(q->plan, part, scratch, q->map, q->k > 0 ? &mine : NULL);
	if (q->k > 0)
	{
		pthread_mutex_lock(&j->lock);
		for (uint32_t i = 0; i < mine.n; i++)
			mcc_sad_topk_offer(&q->topk, &mine.hits[i]);
		pthread_mutex_unlock(&j->lock);
	}
	free(mine.hits);
	free(scratch);
}

void
eng_img_sad_cpu_done(eng_image_job *j)
{
	eng_img_sad *q = &j->u.sad;

	mcc_sad_topk_sort(&q->topk);
	q->n_hits = q->topk.n;
	if (q->n_hits > 0)
		memcpy(q->hits, q->topk.hits, sizeof(mcc_sad_hit) * q->n_hits);
}

void
eng_img_sad_reply(const eng_image_job *j, eng_buf *o)
{
	const eng_img_sad *q = &j->u.sad;

	eng_buf_u32(o, q->nx);
	eng_buf_u32(o, q->ny);
	eng_buf_u32(o, q->n_hits);
	for (uint32_t i = 0; i < q->n_hits; i++)
	{
		eng_buf_u64(o, q->hits[i].sad);
		eng_buf_u32(o, q->hits[i].x);
		eng_buf_u32(o, q->hits[i].y);
	}
	eng_buf_u32(o, q->want_map ? 1 : 0);
	if (q->want_map)
		eng_buf_put(o, q->map, sizeof(uint64_t) * (size_t) q->nx * q->ny);
}

uint64_t
eng_img_reply_bytes(const eng_image_job *j)
{
	switch (j->kind)
	{
		case ENG_IMG_SAD:
			return 16 + (uint64_t) j->u.sad.k * 16 +
				(j->u.sad.want_map ? (uint64_t) j->u.sad.nx * j->u.sad.ny * 8 : 0);
		case ENG_IMG_DP2D:
			{
				const eng_img_dp2d *d = &j->u.dp2d;
				uint64_t	px = d->na > 0 ? (uint64_t) d->a[0].width * d->a[0].height : 0;

				if (d->flags & MCC_IMG_ENHANCE)
				{
					mcc_dp2d_prep p;

					mcc_dp2d_prep_default(&p);
					px = (uint64_t) p.side * p.side;
				}
				return 4 + (uint64_t) d->npairs * (24 + ((d->flags & MCC_IMG_WARPED) ? px : 0));
			}
		case ENG_IMG_CHAMFER:
			return 32 + 8 * MCC_CHAMFER_MAX_PARAMS;
		case ENG_IMG_ALIGN:
			return 64 + 8 * MCC_CHAMFER_MAX_PARAMS + 24 * MCC_MAX_MINUTIAE;
	}
	return 0;
}

void
eng_img_sad_free(eng_image_job *j)
{
	eng_img_sad *q = &j->u.sad;

	mcc_sad_plan_free(q->plan);
	free(q->topk.hits);
	free(q->target.pixels);
	free(q->pattern.pixels);
	free(q->map);
	free(q->hits);
}
