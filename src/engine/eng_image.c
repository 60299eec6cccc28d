/*
 * eng_image.c: the life of an image or point job (eng_image.h): parsing
 * into a job, the choice of GPU or CPU, the stages on the pool, the GPU's
 * failures, the reply, cancellation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eng_image.h"
#include "eng_conn.h"
#include "eng_log.h"
#include "eng_server.h"

/*
 * What differs between the kinds of job, in one place: the request and
 * reply message types, the name for the log, and the kind's parser, CPU
 * stage part, reply body and release.
 */
typedef struct img_ops
{
	eng_img_kind kind;
	uint16_t	request;
	uint16_t	result;
	const char *name;
	bool		(*parse) (eng_image_job *j, eng_rd *r);
	void		(*cpu_part) (eng_image_job *j, uint32_t part);
	void		(*reply) (const eng_image_job *j, eng_buf *o);
	void		(*free) (eng_image_job *j);
} img_ops;

static const img_ops kinds[] = {
	{ENG_IMG_SAD, MCC_MSG_SAD, MCC_MSG_SAD_RESULT, "SAD", eng_img_sad_parse,
	eng_img_sad_cpu_part, eng_img_sad_reply, eng_img_sad_free},
	{ENG_IMG_DP2D, MCC_MSG_DP2D, MCC_MSG_DP2D_RESULT, "DP2D", eng_img_dp2d_parse,
	eng_img_dp2d_cpu_part, eng_img_dp2d_reply, eng_img_dp2d_free},
	{ENG_IMG_CHAMFER, MCC_MSG_CHAMFER, MCC_MSG_CHAMFER_RESULT, "CHAMFER", eng_img_chamfer_parse,
	eng_img_chamfer_cpu, eng_img_chamfer_reply, eng_img_chamfer_free},
	{ENG_IMG_ALIGN, MCC_MSG_ALIGN, MCC_MSG_ALIGN_RESULT, "ALIGN", eng_img_align_parse,
	eng_img_align_cpu, eng_img_align_reply, eng_img_align_free},
};

/* The entry of a kind; NULL for a job whose request was none of them. */
static const img_ops *
ops_of(eng_img_kind kind)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (kinds[i].kind == kind)
			return &kinds[i];
	return NULL;
}

/* The request's name for the log. */
static const char *
kind_name(eng_img_kind kind)
{
	const img_ops *k = ops_of(kind);

	return k ? k->name : "image";
}

/* Free a job and everything it owns (not linked, not in the pool). */
static void
job_free(eng_image_job *j)
{
	const img_ops *k = ops_of(j->kind);

	if (k != NULL)
		k->free(j);
	pthread_mutex_destroy(&j->lock);
	free(j);
}

/* Take j off the server's list and free it. */
static void
job_drop(eng_server *s, eng_image_job *j)
{
	for (eng_image_job **p = &s->images; *p; p = &(*p)->next)
		if (*p == j)
		{
			*p = j->next;
			s->n_images--;
			break;
		}
	job_free(j);
}

void
eng_img_part_error(eng_image_job *j, uint64_t key, const mcc_error *err)
{
	pthread_mutex_lock(&j->lock);
	if (j->err.status == MCC_OK || key < j->err_key)
	{
		j->err = *err;
		j->err_key = key;
	}
	pthread_mutex_unlock(&j->lock);
}

bool
eng_img_read_image(eng_rd *r, mcc_image *img, bool *no_memory)
{
	uint32_t	w = eng_rd_u32(r);
	uint32_t	h = eng_rd_u32(r);
	uint64_t	n = (uint64_t) w * h;

	memset(img, 0, sizeof(*img));
	if (r->bad || n > eng_rd_left(r))
	{
		r->bad = true;
		return false;
	}
	img->width = w;
	img->height = h;
	img->stride = w;
	img->pixels = malloc(n ? (size_t) n : 1);
	if (img->pixels == NULL)
	{
		*no_memory = true;
		r->pos += (size_t) n;
		return true;
	}
	memcpy(img->pixels, r->p + r->pos, (size_t) n);
	r->pos += (size_t) n;
	return true;
}

/* Pool callback: one part of the job's current stage. */
static void
run_part(eng_job *job, uint32_t part, void *scratch)
{
	eng_image_job *j = (eng_image_job *) job;

	if (j->cancel)
		return;
	switch (j->stage)
	{
		case ENG_IMG_STAGE_ENHANCE:
			eng_img_dp2d_enhance_part(j, part);
			break;
		case ENG_IMG_STAGE_GPU:
			eng_img_gpu_run(j->gpu, j);
			break;
		case ENG_IMG_STAGE_CPU:
			ops_of(j->kind)->cpu_part(j, part);
			break;
	}
}

/* Pool callback: may the job's remaining parts be skipped? */
static bool
job_dead(eng_job *job)
{
	return ((eng_image_job *) job)->cancel != 0;
}

/* Hand a stage of `parts` parts to the pool. */
static void
submit_stage(eng_server *s, eng_image_job *j, eng_img_stage stage, uint32_t parts)
{
	j->stage = stage;
	j->job.run = run_part;
	j->job.dead = job_dead;
	j->job.tag = ENG_JOB_IMAGE;
	j->job.n_parts = parts;
	eng_server_submit(s, s->img_pool, &j->job);
}

/* The result frame: job_status, then the kind's fields if it succeeded. */
static void
reply_result(eng_server *s, eng_image_job *j)
{
	eng_conn   *c = eng_conn_by_id(s, j->conn_id);
	eng_buf    *o;
	size_t		f;

	if (c == NULL)
		return;
	if (j->err.status == MCC_OK &&
		eng_img_reply_bytes(j) + 4096 > MCC_PROTO_MAX_FRAME)
	{
		mcc_error_set(&j->err, MCC_ERR_LIMIT, "the result is too large for the matcher engine's reply");
		mcc_error_detail(&j->err, "A reply holds at most %u bytes.", MCC_PROTO_MAX_FRAME);
	}
	o = &c->out;
	f = eng_frame_begin(o, ops_of(j->kind)->result, j->request_id);
	eng_buf_u32(o, (uint32_t) j->err.status);
	eng_buf_bytes(o, j->err.message, (uint32_t) strlen(j->err.message));
	eng_buf_bytes(o, j->err.detail, (uint32_t) strlen(j->err.detail));
	eng_buf_bytes(o, j->ran_on, (uint32_t) strlen(j->ran_on));
	if (j->kind == ENG_IMG_DP2D)
	{
		eng_buf_u32(o, j->err.status == MCC_OK ? 0 : j->u.dp2d.fail_side);
		eng_buf_u32(o, j->u.dp2d.fail_index);
	}
	if (j->err.status == MCC_OK)
		ops_of(j->kind)->reply(j, o);
	eng_frame_end(o, f);
}

/* Reply and free: the job is over. */
static void
finish(eng_server *s, eng_image_job *j)
{
	reply_result(s, j);
	if (j->err.status == MCC_OK)
	{
		s->img_stats.jobs++;
		if (strcmp(j->ran_on, "cpu") != 0)
			s->img_stats.gpu_jobs++;
	}
	job_drop(s, j);
}

/* Reply an ERROR and free. */
static void
fail(eng_server *s, eng_image_job *j, mcc_proto_error code, int status, const char *msg)
{
	eng_conn   *c = eng_conn_by_id(s, j->conn_id);

	if (c != NULL)
		eng_reply_error(c, j->request_id, code, status, "%s", msg);
	job_drop(s, j);
}

/* Run the job on the CPU threads. */
static void
start_cpu(eng_server *s, eng_image_job *j)
{
	uint32_t	parts = 1;

	strcpy(j->ran_on, "cpu");
	mcc_error_clear(&j->err);
	j->err_key = 0;
	if (j->kind == ENG_IMG_SAD)
		parts = eng_img_sad_cpu_setup(j);
	else if (j->kind == ENG_IMG_DP2D)
		parts = eng_img_dp2d_cpu_setup(j);
	if (parts == 0)
	{
		finish(s, j);
		return;
	}
	submit_stage(s, j, ENG_IMG_STAGE_CPU, parts);
}

/* Choose a GPU or the CPU for the job's main stage. */
static void
start_main(eng_server *s, eng_image_job *j)
{
	bool		gpu = j->device != MCC_IMG_CPU && s->img_gpu != NULL &&
		eng_gpu_usable(s->gpu) && eng_img_gpu_usable(s->img_gpu, j->kind);

	if (!gpu && j->device == MCC_IMG_GPU)
	{
		fail(s, j, MCC_PERR_NO_GPU, 0, s->img_gpu == NULL ?
			 "the matcher engine has no GPU" :
			 "no GPU of the matcher engine can run this job now");
		return;
	}
	if (!gpu)
	{
		start_cpu(s, j);
		return;
	}
	j->gpu = s->img_gpu;
	j->gpu_rc = ENG_IMG_GPU_OK;
	mcc_error_clear(&j->gpu_err);
	submit_stage(s, j, ENG_IMG_STAGE_GPU, 1);
}

/* A GPU stage that did not answer: log it, then the CPU or an error. */
static void
gpu_failed(eng_server *s, eng_image_job *j)
{
	char		why[2 * MCC_ERRMSG_LEN + 4];

	if (j->gpu_err.message[0] == '\0')
		strcpy(why, "unknown error");
	else if (j->gpu_err.detail[0])
		snprintf(why, sizeof(why), "%s: %s", j->gpu_err.message, j->gpu_err.detail);
	else
		snprintf(why, sizeof(why), "%s", j->gpu_err.message);
	switch (j->gpu_rc)
	{
		case ENG_IMG_GPU_STICKY:
			if (eng_img_gpu_disable(s->img_gpu))
				eng_log(ENG_LOG_WARNING, "GPU disabled for image jobs for the rest of the process: %s",
						why);
			if (eng_gpu_disable_all(s->gpu))
				eng_log(ENG_LOG_WARNING,
						"GPU disabled for the rest of the process, searching on the CPU: %s", why);
			break;
		case ENG_IMG_GPU_UNAVAILABLE:
			eng_log(ENG_LOG_WARNING, "%s jobs cannot use the GPU, they run on the CPU: %s",
					kind_name(j->kind), why);
			break;
		default:
			eng_log(ENG_LOG_WARNING, "%s job: the GPU failed, it runs on the CPU: %s",
					kind_name(j->kind), why);
			break;
	}
	s->img_stats.fallbacks++;
	if (j->device == MCC_IMG_GPU)
	{
		char		msg[sizeof(why) + 64];

		snprintf(msg, sizeof(msg), "the GPU could not run this job: %s", why);
		fail(s, j, MCC_PERR_NO_GPU, 0, msg);
		return;
	}
	start_cpu(s, j);
}

void
eng_image_job_done(eng_server *s, eng_job *job)
{
	eng_image_job *j = (eng_image_job *) job;

	if (j->cancel)
	{
		s->img_stats.cancelled++;
		job_drop(s, j);
		return;
	}
	switch (j->stage)
	{
		case ENG_IMG_STAGE_ENHANCE:
			eng_img_dp2d_enhance_done(j);
			if (j->err.status != MCC_OK)
			{
				finish(s, j);
				return;
			}
			start_main(s, j);
			return;
		case ENG_IMG_STAGE_GPU:
			if (j->gpu_rc == ENG_IMG_GPU_OK || j->gpu_rc == ENG_IMG_GPU_DATA)
				finish(s, j);
			else if (j->gpu_rc == ENG_IMG_GPU_CANCELLED)
			{
				/* only the flag stops a GPU call, and it was down: a library's bug */
				mcc_error_set(&j->gpu_err, MCC_ERR_INTERNAL, "the GPU call stopped without a cancel");
				j->gpu_rc = ENG_IMG_GPU_RETRY;
				gpu_failed(s, j);
			}
			else
				gpu_failed(s, j);
			return;
		case ENG_IMG_STAGE_CPU:
			if (j->kind == ENG_IMG_SAD && j->err.status == MCC_OK)
				eng_img_sad_cpu_done(j);
			finish(s, j);
			return;
	}
}

/* The request's data failed its checks (or memory ran out): reply now. */
static void
start(eng_server *s, eng_image_job *j)
{
	uint32_t	parts;

	if (j->err.status != MCC_OK)
	{
		finish(s, j);
		return;
	}
	if (j->kind == ENG_IMG_DP2D && (j->u.dp2d.flags & MCC_IMG_ENHANCE))
	{
		strcpy(j->ran_on, "cpu");
		parts = eng_img_dp2d_enhance_setup(j);
		if (parts == 0)
		{
			finish(s, j);
			return;
		}
		submit_stage(s, j, ENG_IMG_STAGE_ENHANCE, parts);
		return;
	}
	start_main(s, j);
}

bool
eng_image_request(eng_server *s, eng_conn *c, const mcc_frame_hdr *h, eng_rd *r)
{
	eng_image_job *j;
	bool		ok = false;

	if (s->n_images >= s->cfg.image_queue)
	{
		/* bounded: each admitted job holds its images until it is answered */
		eng_reply_error(c, h->request_id, MCC_PERR_BUSY, 0,
						"the matcher engine already runs %u image jobs, its limit",
						s->n_images);
		return true;
	}
	j = calloc(1, sizeof(*j));
	if (j == NULL)
	{
		eng_reply_error(c, h->request_id, MCC_PERR_INTERNAL, MCC_ERR_MEMORY, "out of memory");
		return true;
	}
	pthread_mutex_init(&j->lock, NULL);
	j->conn_id = c->id;
	j->request_id = h->request_id;
	j->cpu_threads = s->cfg.image_threads;
	mcc_error_clear(&j->err);
	strcpy(j->ran_on, "cpu");
	j->device = eng_rd_u32(r);
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (kinds[i].request == h->type)
		{
			j->kind = kinds[i].kind;
			ok = kinds[i].parse(j, r);
			break;
		}
	if (!ok || !eng_rd_done(r) || j->device > MCC_IMG_CPU)
	{
		job_free(j);
		return false;
	}
	j->next = s->images;
	s->images = j;
	s->n_images++;
	eng_log(ENG_LOG_DEBUG, "connection %llu: %s job %llu", (unsigned long long) c->id,
			kind_name(j->kind), (unsigned long long) j->request_id);
	start(s, j);
	return true;
}

/* Cancel conn_id's jobs, every one or request_id's; whether there was any. */
static bool
cancel_jobs(eng_server *s, uint64_t conn_id, bool every, uint64_t request_id)
{
	bool		found = false;

	for (eng_image_job *j = s->images; j; j = j->next)
		if (j->conn_id == conn_id && (every || j->request_id == request_id))
		{
			j->cancel = 1;
			found = true;
		}
	return found;
}

bool
eng_image_cancel(eng_server *s, uint64_t conn_id, uint64_t request_id)
{
	return cancel_jobs(s, conn_id, false, request_id);
}

void
eng_image_conn_closed(eng_server *s, uint64_t conn_id)
{
	cancel_jobs(s, conn_id, true, 0);
}

void
eng_image_fail_all(eng_server *s, const char *why)
{
	for (eng_image_job *j = s->images; j; j = j->next)
	{
		eng_conn   *c = eng_conn_by_id(s, j->conn_id);

		if (c != NULL && !j->cancel)
			eng_reply_error(c, j->request_id, MCC_PERR_CANCELLED, 0, "%s", why);
		j->cancel = 1;
	}
}

void
eng_image_free_all(eng_server *s)
{
	while (s->images)
	{
		eng_image_job *j = s->images;

		s->images = j->next;
		job_free(j);
	}
	s->n_images = 0;
}

bool
eng_image_has_gpu(const eng_server *s)
{
	return s->img_gpu != NULL && eng_gpu_usable(s->gpu) && eng_img_gpu_usable(s->img_gpu, 0);
}

uint32_t
eng_image_hello_flags(const eng_server *s)
{
	return MCC_HELLO_IMAGES | (eng_image_has_gpu(s) ? MCC_HELLO_GPU : 0);
}

void
eng_image_progress(eng_server *s, uint64_t *parts, uint64_t *done)
{
	*parts = 0;
	*done = 0;
	for (eng_image_job *j = s->images; j; j = j->next)
	{
		uint32_t	d;
		uint32_t	n;

		if (j->stage == 0)
			continue;			/* not submitted yet */
		eng_pool_job_progress(s->img_pool, &j->job, &d, &n);
		*parts += n;
		*done += d;
	}
}

void
eng_image_get_stats(const eng_server *s, eng_image_stats *st)
{
	*st = s->img_stats;
}
