/*
 * eng_image_gpu.c: image and point jobs on the GPU (eng_image.h) through
 * the kernel libraries kernels/mcc_sad_gpu.h, mcc_dp2d_gpu.h and
 * mcc_chamfer_gpu.h. Built without MCC_ENGINE_GPU only the stubs at the
 * end exist and image jobs run on the CPU threads.
 *
 * Devices are those the search path found (eng_gpu_devices). Each device
 * has a lock, held for the whole of a job, and at most one context per
 * library, opened at the first job that needs it and kept until the
 * engine stops. A job takes the next device round-robin, or the first
 * free one, or waits for its own. The inputs are checked on the CPU first
 * (as the backend's functions check them), so a library's refusal later
 * is the GPU's failure, and the job then runs on the CPU. Codes:
 *   NO_DRIVER, NO_DEVICE, UNSUPPORTED   that library is not used on that
 *                                       device again;
 *   OOM, CUDA, INVALID, INTERNAL        this job on the CPU;
 *   STICKY                              the context is closed and no GPU
 *                                       is used by the process again (the
 *                                       caller also stops the search path);
 *   CANCELLED                           the job's cancel flag was up.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eng_gpu.h"
#include "eng_image.h"
#include "eng_log.h"

#ifdef MCC_ENGINE_GPU

#include <stdatomic.h>

#include "mcc_chamfer_gpu.h"
#include "mcc_dp2d_gpu.h"
#include "mcc_gpu.h"
#include "mcc_sad_gpu.h"

/* the libraries, one context each per device */
enum
{
	LIB_SAD = 0,
	LIB_DP2D,
	LIB_CHAMFER,
	LIB_COUNT
};

typedef struct img_dev
{
	pthread_mutex_t lock;		/* held for a whole job */
	int			ordinal;
	char		name[64];
	mcc_sad_gpu *sad;
	mcc_dp2d_gpu *dp2d;
	mcc_chamfer_gpu *ch;
	atomic_bool off[LIB_COUNT]; /* that library cannot run here */
} img_dev;

struct eng_img_gpu
{
	int			ndev;
	img_dev		dev[MCC_GPU_MAX_DEVICES];
	atomic_bool broken;			/* a lost context: no GPU from now on */
	atomic_uint next;			/* round-robin start */
	pthread_mutex_t inject_lock;
	eng_img_gpu_rc inject;		/* tests: the next stage's outcome */
};

/* The library of a kind of job. */
static int
lib_of(eng_img_kind kind)
{
	return kind == ENG_IMG_SAD ? LIB_SAD : kind == ENG_IMG_DP2D ? LIB_DP2D : LIB_CHAMFER;
}

static const char *const lib_names[LIB_COUNT] = {"SAD", "elastic matching", "chamfer alignment"};

struct eng_img_gpu *
eng_img_gpu_start(struct eng_gpu *g)
{
	int			ordinals[MCC_GPU_MAX_DEVICES];
	char		names[MCC_GPU_MAX_DEVICES][64];
	int			n = 0;
	struct eng_img_gpu *ig;

	eng_gpu_devices(g, MCC_GPU_MAX_DEVICES, &n, ordinals, names);
	if (n == 0)
		return NULL;
	ig = calloc(1, sizeof(*ig));
	if (ig == NULL)
	{
		eng_log(ENG_LOG_WARNING, "out of memory for the GPU state of image jobs: they run on the CPU");
		return NULL;
	}
	ig->ndev = n;
	for (int i = 0; i < n; i++)
	{
		pthread_mutex_init(&ig->dev[i].lock, NULL);
		ig->dev[i].ordinal = ordinals[i];
		snprintf(ig->dev[i].name, sizeof(ig->dev[i].name), "%s", names[i]);
		for (int l = 0; l < LIB_COUNT; l++)
			atomic_init(&ig->dev[i].off[l], false);
	}
	atomic_init(&ig->broken, false);
	atomic_init(&ig->next, 0);
	pthread_mutex_init(&ig->inject_lock, NULL);
	return ig;
}

/* Close every context of a device (its lock held, or nothing runs). */
static void
close_device(img_dev *d)
{
	mcc_sad_gpu_close(d->sad);
	mcc_dp2d_gpu_close(d->dp2d);
	mcc_chamfer_gpu_close(d->ch);
	d->sad = NULL;
	d->dp2d = NULL;
	d->ch = NULL;
}

void
eng_img_gpu_stop(struct eng_img_gpu *ig)
{
	if (ig == NULL)
		return;
	for (int i = 0; i < ig->ndev; i++)
	{
		close_device(&ig->dev[i]);
		pthread_mutex_destroy(&ig->dev[i].lock);
	}
	pthread_mutex_destroy(&ig->inject_lock);
	free(ig);
}

bool
eng_img_gpu_usable(const struct eng_img_gpu *ig, eng_img_kind kind)
{
	struct eng_img_gpu *g = (struct eng_img_gpu *) ig;

	if (g == NULL || atomic_load(&g->broken))
		return false;
	for (int i = 0; i < g->ndev; i++)
		for (int l = 0; l < LIB_COUNT; l++)
			if ((kind == 0 || l == lib_of(kind)) && !atomic_load(&g->dev[i].off[l]))
				return true;
	return false;
}

bool
eng_img_gpu_disable(struct eng_img_gpu *ig)
{
	return ig != NULL && !atomic_exchange(&ig->broken, true);
}

void
eng_img_gpu_test_inject(struct eng_img_gpu *ig, eng_img_gpu_rc rc)
{
	if (ig == NULL)
		return;
	pthread_mutex_lock(&ig->inject_lock);
	ig->inject = rc;
	pthread_mutex_unlock(&ig->inject_lock);
}

/* Take a device that runs lib: the next free one from a round-robin start, else wait. */
static img_dev *
take_device(struct eng_img_gpu *ig, int lib)
{
	unsigned	start = atomic_fetch_add(&ig->next, 1);

	for (int i = 0; i < ig->ndev; i++)
	{
		img_dev    *d = &ig->dev[(start + i) % ig->ndev];

		if (!atomic_load(&d->off[lib]) && pthread_mutex_trylock(&d->lock) == 0)
			return d;
	}
	for (int i = 0; i < ig->ndev; i++)
	{
		img_dev    *d = &ig->dev[(start + i) % ig->ndev];

		if (!atomic_load(&d->off[lib]))
		{
			pthread_mutex_lock(&d->lock);
			return d;
		}
	}
	return NULL;
}

/* The outcome of a library's code (one code set for every library: mcc_gpu_runtime.h). */
static eng_img_gpu_rc
img_rc(mcc_gpu_code c)
{
	switch (c)
	{
		case MCC_GPU_OK:
			return ENG_IMG_GPU_OK;
		case MCC_GPU_NO_DRIVER:
		case MCC_GPU_NO_DEVICE:
		case MCC_GPU_UNSUPPORTED:
			return ENG_IMG_GPU_UNAVAILABLE;
		case MCC_GPU_CANCELLED:
			return ENG_IMG_GPU_CANCELLED;
		case MCC_GPU_STICKY:
			return ENG_IMG_GPU_STICKY;
		default:
			return ENG_IMG_GPU_RETRY;
	}
}

/* Open d's context of lib unless it is open (d's lock held). */
static eng_img_gpu_rc
ensure_context(img_dev *d, int lib, mcc_error *err)
{
	eng_img_gpu_rc rc = ENG_IMG_GPU_OK;

	if (lib == LIB_SAD && d->sad == NULL)
		rc = img_rc(mcc_sad_gpu_open(d->ordinal, &d->sad, err));
	else if (lib == LIB_DP2D && d->dp2d == NULL)
		rc = img_rc(mcc_dp2d_gpu_open(d->ordinal, &d->dp2d, err));
	else if (lib == LIB_CHAMFER && d->ch == NULL)
		rc = img_rc(mcc_chamfer_gpu_open(d->ordinal, &d->ch, err));
	else
		return ENG_IMG_GPU_OK;
	if (rc == ENG_IMG_GPU_OK)
		eng_log(ENG_LOG_INFO, "image jobs: %s context opened on GPU %d (%s)", lib_names[lib],
				d->ordinal, d->name);
	return rc;
}

/* SAD on d: hits and map straight into the job. */
static eng_img_gpu_rc
run_sad(img_dev *d, eng_image_job *j)
{
	eng_img_sad *q = &j->u.sad;

	return img_rc(mcc_sad_gpu_search(d->sad, &q->target, &q->pattern, q->k, q->hits,
									 &q->n_hits, q->map, MCC_SAD_GPU_AUTO, &j->cancel, NULL,
									 &j->gpu_err));
}

/* Pack n images of one size into one buffer (the batch's layout). */
static uint8_t *
pack(const mcc_image *v, uint32_t n)
{
	size_t		px = (size_t) v[0].width * v[0].height;
	uint8_t    *buf = malloc(px * n);

	if (buf != NULL)
		for (uint32_t i = 0; i < n; i++)
			for (uint32_t y = 0; y < v[i].height; y++)
				memcpy(buf + px * i + (size_t) y * v[i].width,
					   v[i].pixels + (size_t) y * v[i].stride, v[i].width);
	return buf;
}

/* Elastic matching on d: every pair in one batch. */
static eng_img_gpu_rc
run_dp2d(img_dev *d, eng_image_job *j)
{
	eng_img_dp2d *q = &j->u.dp2d;
	mcc_dp2d_gpu_batch bt;
	uint64_t   *cost = malloc(sizeof(uint64_t) * q->npairs);
	double	   *dist = malloc(sizeof(double) * q->npairs);
	uint64_t   *diff = malloc(sizeof(uint64_t) * q->npairs);
	eng_img_gpu_rc rc;

	memset(&bt, 0, sizeof(bt));
	bt.a = pack(q->a, q->na);
	bt.b = pack(q->b, q->nb);
	if (cost == NULL || dist == NULL || diff == NULL || bt.a == NULL || bt.b == NULL)
	{
		mcc_error_set(&j->gpu_err, MCC_ERR_MEMORY, "out of memory for a GPU batch");
		rc = ENG_IMG_GPU_RETRY;
		goto out;
	}
	bt.wa = q->a[0].width;
	bt.ha = q->a[0].height;
	bt.wb = q->b[0].width;
	bt.hb = q->b[0].height;
	bt.na = q->na;
	bt.nb = q->nb;
	bt.npairs = q->npairs;
	bt.pair_a = q->pa;
	bt.pair_b = q->pb;
	bt.flags = (q->flags & MCC_IMG_WARP) ? MCC_DP2D_WARP : 0;
	bt.cost = cost;
	bt.distance = dist;
	bt.differences = (q->flags & MCC_IMG_WARP) ? diff : NULL;
	bt.warped = q->warped;
	rc = img_rc(mcc_dp2d_gpu_run(d->dp2d, &bt, &j->cancel, &j->gpu_err));
	if (rc == ENG_IMG_GPU_OK)
		for (uint32_t i = 0; i < q->npairs; i++)
		{
			q->out[i].cost = cost[i];
			q->out[i].distance = dist[i];
			q->out[i].differences = bt.differences ? diff[i] : 0;
		}
out:
	free(cost);
	free(dist);
	free(diff);
	free((void *) bt.a);
	free((void *) bt.b);
	return rc;
}

/*
 * Chamfer alignment on d: the reference's distance transform and the
 * checks of both sets on the CPU (before the device was taken: see
 * eng_img_gpu_run), the LM iterations with the GPU evaluator.
 */
static eng_img_gpu_rc
run_chamfer(img_dev *d, eng_image_job *j, const mcc_chamfer_ref *rf, const mcc_chamfer_opts *o)
{
	eng_img_chamfer *q = &j->u.ch;
	mcc_gpu_code c;

	c = mcc_chamfer_gpu_set_reference(d->ch, rf, &j->gpu_err);
	if (c == MCC_GPU_OK)
		c = mcc_chamfer_gpu_align_ref(d->ch, rf, q->obs, q->n_obs, o, &q->res, &j->gpu_err);
	return img_rc(c);
}

/* mcc_align_opts.fit on a GPU context; a library failure is kept in code. */
typedef struct gpu_fit_arg
{
	mcc_chamfer_gpu *ctx;
	mcc_gpu_code code;
	mcc_error	err;
} gpu_fit_arg;

static mcc_status
gpu_fit(void *arg, const mcc_chamfer_ref *ref, const double *obs, size_t n,
		const mcc_chamfer_opts *opts, mcc_chamfer_result *res, mcc_error *err)
{
	gpu_fit_arg *fa = arg;
	mcc_chamfer_opts o = *opts;
	mcc_chamfer_obs ob;
	mcc_gpu_code c;

	/* the observed set's own checks first: a refusal there is the data's */
	memset(res, 0, sizeof(*res));
	if (mcc_chamfer_obs_prepare(ref, obs, n, o.transform, &ob, err) != MCC_OK)
		return err->status;
	mcc_chamfer_obs_free(&ob);
	o.pipelined = 1;
	c = mcc_chamfer_gpu_align_ref(fa->ctx, ref, obs, n, &o, res, &fa->err);
	if (c == MCC_GPU_OK)
		return MCC_OK;
	if (c == MCC_GPU_CANCELLED)
	{
		res->canceled = 1;
		return mcc_error_set(err, MCC_ERR_INTERNAL, "alignment canceled");
	}
	fa->code = c;
	*err = fa->err;
	return MCC_ERR_INTERNAL;
}

/* Minutiae alignment on d: starts and checks as mcc_align_minutiae, fits on the GPU. */
static eng_img_gpu_rc
run_align(img_dev *d, eng_image_job *j, const mcc_chamfer_ref *rf, const mcc_align_opts *opts)
{
	eng_img_align *q = &j->u.al;
	mcc_align_opts o = *opts;
	gpu_fit_arg fa;
	mcc_error	err;

	memset(&fa, 0, sizeof(fa));
	fa.ctx = d->ch;
	fa.code = MCC_GPU_OK;
	o.fit = gpu_fit;
	o.fit_arg = &fa;
	/* the candidate's distance transform serves every start */
	if ((fa.code = mcc_chamfer_gpu_set_reference(d->ch, rf, &j->gpu_err)) != MCC_GPU_OK)
		return img_rc(fa.code);
	if (mcc_align_minutiae_ref(q->probe, q->cand, rf, &o, q->res, &err) == MCC_OK)
		return ENG_IMG_GPU_OK;
	if (fa.code != MCC_GPU_OK)
	{
		j->gpu_err = fa.err;
		return img_rc(fa.code);
	}
	if (j->cancel || q->res->fit.canceled)
		return ENG_IMG_GPU_CANCELLED;
	j->err = err;
	return ENG_IMG_GPU_DATA;
}

/*
 * The CPU work of a fit before the device is taken: the reference's
 * distance transform and the checks the backend's function makes first.
 * ENG_IMG_GPU_OK with rf built, else the job's outcome (DATA: j->err).
 */
static eng_img_gpu_rc
fit_prepare(eng_image_job *j, mcc_chamfer_ref *rf, mcc_chamfer_opts *co, mcc_align_opts *ao)
{
	mcc_error	err;

	if (j->kind == ENG_IMG_CHAMFER)
	{
		eng_img_chamfer *q = &j->u.ch;
		mcc_chamfer_obs ob;

		*co = q->opts;
		co->threads = 1;
		co->pipelined = 1;
		co->cancel = &j->cancel;
		if (mcc_chamfer_ref_build(q->ref, q->n_ref, q->dim, co, rf, &err) != MCC_OK)
		{
			if (j->cancel)
				return ENG_IMG_GPU_CANCELLED;
			j->err = err;
			return ENG_IMG_GPU_DATA;
		}
		if (mcc_chamfer_obs_prepare(rf, q->obs, q->n_obs, co->transform, &ob, &err) != MCC_OK)
		{
			mcc_chamfer_ref_free(rf);
			j->err = err;
			return ENG_IMG_GPU_DATA;
		}
		mcc_chamfer_obs_free(&ob);
		return ENG_IMG_GPU_OK;
	}
	*ao = j->u.al.opts;
	ao->threads = 1;
	ao->cancel = &j->cancel;
	if (j->u.al.probe->count == 0)
	{
		mcc_error_set(&j->err, MCC_ERR_VALUE, "the probe has no minutiae");
		return ENG_IMG_GPU_DATA;
	}
	if (mcc_align_prepare(j->u.al.cand, ao, rf, &err) != MCC_OK)
	{
		if (j->cancel)
			return ENG_IMG_GPU_CANCELLED;
		j->err = err;
		return ENG_IMG_GPU_DATA;
	}
	return ENG_IMG_GPU_OK;
}

void
eng_img_gpu_run(struct eng_img_gpu *ig, eng_image_job *j)
{
	int			lib = lib_of(j->kind);
	bool		fit = j->kind == ENG_IMG_CHAMFER || j->kind == ENG_IMG_ALIGN;
	mcc_chamfer_ref rf;
	mcc_chamfer_opts co;
	mcc_align_opts ao;
	img_dev    *d;
	eng_img_gpu_rc rc;

	pthread_mutex_lock(&ig->inject_lock);
	rc = ig->inject;
	ig->inject = ENG_IMG_GPU_OK;
	pthread_mutex_unlock(&ig->inject_lock);
	if (rc != ENG_IMG_GPU_OK)
	{
		mcc_error_set(&j->gpu_err, MCC_ERR_INTERNAL, "injected GPU failure %d (a test)", (int) rc);
		j->gpu_rc = rc;
		return;
	}
	if (atomic_load(&ig->broken))
	{
		mcc_error_set(&j->gpu_err, MCC_ERR_INTERNAL, "the GPU was disabled by an earlier error");
		j->gpu_rc = ENG_IMG_GPU_RETRY;
		return;
	}
	if (fit && (rc = fit_prepare(j, &rf, &co, &ao)) != ENG_IMG_GPU_OK)
	{
		j->gpu_rc = rc;
		return;
	}
	if ((d = take_device(ig, lib)) == NULL)
	{
		mcc_error_set(&j->gpu_err, MCC_ERR_INTERNAL, "no GPU runs %s", lib_names[lib]);
		j->gpu_rc = ENG_IMG_GPU_UNAVAILABLE;
		if (fit)
			mcc_chamfer_ref_free(&rf);
		return;
	}
	rc = ensure_context(d, lib, &j->gpu_err);
	if (rc == ENG_IMG_GPU_OK)
	{
		switch (j->kind)
		{
			case ENG_IMG_SAD:
				rc = run_sad(d, j);
				break;
			case ENG_IMG_DP2D:
				rc = run_dp2d(d, j);
				break;
			case ENG_IMG_CHAMFER:
				rc = run_chamfer(d, j, &rf, &co);
				break;
			case ENG_IMG_ALIGN:
				rc = run_align(d, j, &rf, &ao);
				break;
		}
	}
	if (rc == ENG_IMG_GPU_UNAVAILABLE)
		atomic_store(&d->off[lib], true);
	if (rc == ENG_IMG_GPU_STICKY)
	{
		atomic_store(&ig->broken, true);
		close_device(d);
	}
	if (rc == ENG_IMG_GPU_OK)
		snprintf(j->ran_on, sizeof(j->ran_on), "%s", d->name);
	pthread_mutex_unlock(&d->lock);
	if (fit)
		mcc_chamfer_ref_free(&rf);
	j->gpu_rc = rc;
}

#else							/* !MCC_ENGINE_GPU */

/* Built without nvcc: no GPU state, so nothing below is ever reached with one. */
struct eng_img_gpu *
eng_img_gpu_start(struct eng_gpu *g)
{
	return NULL;
}

void
eng_img_gpu_stop(struct eng_img_gpu *ig)
{
}

bool
eng_img_gpu_usable(const struct eng_img_gpu *ig, eng_img_kind kind)
{
	return false;
}

bool
eng_img_gpu_disable(struct eng_img_gpu *ig)
{
	return false;
}

void
eng_img_gpu_test_inject(struct eng_img_gpu *ig, eng_img_gpu_rc rc)
{
}

void
eng_img_gpu_run(struct eng_img_gpu *ig, eng_image_job *j)
{
	mcc_error_set(&j->gpu_err, MCC_ERR_INTERNAL, "built without GPU support");
	j->gpu_rc = ENG_IMG_GPU_UNAVAILABLE;
}

#endif							/* MCC_ENGINE_GPU */
