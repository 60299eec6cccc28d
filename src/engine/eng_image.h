/*
 * eng_image.h: image and point jobs in the engine (mcc_proto.h's SAD,
 * DP2D, CHAMFER and ALIGN; docs/matcher-engine.md, "Image jobs").
 *
 * A job goes through stages, each one job of the pool (eng_pool.h, tag
 * ENG_JOB_IMAGE) whose end the main thread handles (eng_image_job_done):
 *
 *   ENHANCE   DP2D with MCC_IMG_ENHANCE: one part per image, on the CPU
 *             threads (the enhancement is CPU code on every path);
 *   GPU       one part: the whole job through a GPU library on one device
 *             (eng_image_gpu.c), the device held for the call;
 *   CPU       the job on the engine's CPU threads: SAD one part per band
 *             of map rows, DP2D one part per pair, CHAMFER and ALIGN one
 *             part (the fit's evaluator may start threads of its own).
 *
 * A GPU stage that fails (out of memory, a CUDA error, no such device, a
 * lost context) is logged and the same job runs again as a CPU stage,
 * unless the client asked for a GPU only (MCC_IMG_GPU: it gets
 * MCC_PERR_NO_GPU). Every stage computes what the backend's own function
 * would (the same src/core code, or the GPU libraries that equal it), and
 * checks the inputs the same way, so errors are the backend's too.
 *
 * `cancel` is raised by CANCEL, by the connection's end and at shutdown;
 * the GPU libraries and the core read it between launches, bands, pairs
 * and LM evaluations, and the pool skips a cancelled job's parts. A
 * cancelled job is freed without a reply.
 */
#ifndef ENG_IMAGE_H
#define ENG_IMAGE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "eng_pool.h"
#include "eng_wire.h"
#include "mcc_align.h"
#include "mcc_chamfer.h"
#include "mcc_dp2d.h"
#include "mcc_error.h"
#include "mcc_image.h"
#include "mcc_proto.h"
#include "mcc_sad.h"

#define ENG_JOB_IMAGE	3		/* eng_job.tag (1: eng_pass.h, 2: eng_compact.h) */
#define ENG_IMAGE_NICE	10		/* the image threads' nice value above the searches' */

struct eng_server;
struct eng_conn;
struct eng_gpu;
struct eng_img_gpu;

typedef enum eng_img_kind
{
	ENG_IMG_SAD = 1,
	ENG_IMG_DP2D,
	ENG_IMG_CHAMFER,
	ENG_IMG_ALIGN
} eng_img_kind;

typedef enum eng_img_stage
{
	ENG_IMG_STAGE_ENHANCE = 1,
	ENG_IMG_STAGE_GPU,
	ENG_IMG_STAGE_CPU
} eng_img_stage;

/* How a GPU stage ended (eng_image_gpu.c turns each library's codes into these). */
typedef enum eng_img_gpu_rc
{
	ENG_IMG_GPU_OK = 0,
	ENG_IMG_GPU_CANCELLED,		/* the cancel flag stopped it */
	ENG_IMG_GPU_DATA,			/* the inputs are bad: job err holds the reply */
	ENG_IMG_GPU_RETRY,			/* out of memory, a CUDA error: this job on the CPU */
	ENG_IMG_GPU_UNAVAILABLE,	/* no device for this library: the CPU from now on */
	ENG_IMG_GPU_STICKY			/* the CUDA context is lost: no GPU for the process */
} eng_img_gpu_rc;

typedef struct eng_img_sad
{
	mcc_image	target;			/* pixels owned */
	mcc_image	pattern;
	uint32_t	k;				/* hits wanted, at most the shifts */
	bool		want_map;
	uint32_t	nx,
				ny;
	uint64_t   *map;			/* nx * ny when want_map */
	mcc_sad_hit *hits;			/* k, best first at the end */
	uint32_t	n_hits;
	mcc_sad_plan *plan;			/* CPU stage */
	mcc_sad_topk topk;			/* CPU stage: every band's hits, under the job's lock */
} eng_img_sad;

typedef struct eng_img_dp2d
{
	uint32_t	flags;			/* MCC_IMG_* */
	uint32_t	na,
				nb;
	mcc_image  *a;				/* na images, pixels owned (enhanced after ENHANCE) */
	mcc_image  *b;
	uint32_t	npairs;
	uint32_t   *pa;				/* npairs indices into a */
	uint32_t   *pb;
	mcc_dp2d_out *out;			/* npairs; warped points into `warped` */
	uint8_t    *warped;			/* npairs x the a image's pixels (MCC_IMG_WARPED) */
	uint32_t	fail_side;		/* a failed enhancement: 1 a, 2 b (0 none) */
	uint32_t	fail_index;
	uint64_t	fail_key;		/* (side, index) of the first failure, for the order */
	int			pair_threads;	/* core threads per pair on the CPU */
} eng_img_dp2d;

typedef struct eng_img_chamfer
{
	int			dim;
	mcc_chamfer_opts opts;		/* transform, resolution, max_distance, init, max_cells */
	double	   *obs;			/* n_obs * dim */
	size_t		n_obs;
	double	   *ref;
	size_t		n_ref;
	mcc_chamfer_result res;
} eng_img_chamfer;

typedef struct eng_img_align
{
	mcc_minutiae *probe;
	mcc_minutiae *cand;
	mcc_align_opts opts;		/* transform, use_directions, max_distance, max_cells */
	mcc_align_result *res;
} eng_img_align;

typedef struct eng_image_job
{
	eng_job		job;			/* first: the pool hands this pointer back */
	struct eng_image_job *next; /* the server's list of jobs */
	uint64_t	conn_id;
	uint64_t	request_id;
	eng_img_kind kind;
	uint32_t	device;			/* mcc_img_device asked for */
	eng_img_stage stage;
	volatile int cancel;		/* CANCEL, the connection's end, shutdown */
	pthread_mutex_t lock;		/* parts' shared results (SAD hits, first errors) */
	mcc_error	err;			/* status != MCC_OK: the data error to reply */
	uint64_t	err_key;		/* CPU parts: which part's error came first */
	struct eng_img_gpu *gpu;	/* GPU stage: the devices */
	eng_img_gpu_rc gpu_rc;		/* how the GPU stage ended */
	mcc_error	gpu_err;		/* and why */
	int			cpu_threads;	/* the engine's threads (core threads of a fit) */
	char		ran_on[64];		/* "cpu" or the GPU's name */
	union
	{
		eng_img_sad sad;
		eng_img_dp2d dp2d;
		eng_img_chamfer ch;
		eng_img_align al;
	}			u;
} eng_image_job;

/* Counters for the log and tests. */
typedef struct eng_image_stats
{
	uint64_t	jobs;			/* replied with a result */
	uint64_t	gpu_jobs;		/* of those, run on a GPU */
	uint64_t	fallbacks;		/* GPU stages handed to the CPU */
	uint64_t	cancelled;		/* dropped without a reply */
} eng_image_stats;

/* --- eng_image.c: lifecycle ----------------------------------------------- */

/* Handle SAD, DP2D, CHAMFER or ALIGN; false: malformed frame. */
bool		eng_image_request(struct eng_server *s, struct eng_conn *c, const mcc_frame_hdr *h,
							  eng_rd *r);

/* A stage's pool job ended (main thread). */
void		eng_image_job_done(struct eng_server *s, eng_job *job);

/* CANCEL of request_id on conn_id; true if it was an image job. */
bool		eng_image_cancel(struct eng_server *s, uint64_t conn_id, uint64_t request_id);

/* The connection went: cancel its jobs. */
void		eng_image_conn_closed(struct eng_server *s, uint64_t conn_id);

/* Shutting down: ERROR to every job's client, then cancel them all. */
void		eng_image_fail_all(struct eng_server *s, const char *why);

/* Free every job (the pool is stopped). */
void		eng_image_free_all(struct eng_server *s);

/* Does the engine have a GPU for image jobs now (HELLO_OK's MCC_HELLO_GPU)? */
bool		eng_image_has_gpu(const struct eng_server *s);

/* HELLO_OK's and ENGINE_STATUS's flags: MCC_HELLO_IMAGES, and MCC_HELLO_GPU when eng_image_has_gpu. */
uint32_t	eng_image_hello_flags(const struct eng_server *s);

void		eng_image_get_stats(const struct eng_server *s, eng_image_stats *st);

/* Parts of the admitted jobs' current stages, and of them those done. */
void		eng_image_progress(struct eng_server *s, uint64_t *parts, uint64_t *done);

/* --- per kind (eng_image_sad.c, eng_image_dp2d.c, eng_image_fit.c) ---------- */

/*
 * Parse a request into j (kind set by the caller); false: malformed. A
 * well-formed request with bad data sets j->err instead.
 */
bool		eng_img_sad_parse(eng_image_job *j, eng_rd *r);
bool		eng_img_dp2d_parse(eng_image_job *j, eng_rd *r);
bool		eng_img_chamfer_parse(eng_image_job *j, eng_rd *r);
bool		eng_img_align_parse(eng_image_job *j, eng_rd *r);

/* Set a CPU (or ENHANCE) stage up: its number of parts (0 with j->err set: failed). */
uint32_t	eng_img_sad_cpu_setup(eng_image_job *j);
uint32_t	eng_img_dp2d_cpu_setup(eng_image_job *j);
uint32_t	eng_img_dp2d_enhance_setup(eng_image_job *j);

/* One part of a stage (pool threads). */
void		eng_img_sad_cpu_part(eng_image_job *j, uint32_t part);
void		eng_img_dp2d_cpu_part(eng_image_job *j, uint32_t part);
void		eng_img_dp2d_enhance_part(eng_image_job *j, uint32_t part);
/* (chamfer and align: one part, the whole fit, on the core's own threads) */
void		eng_img_chamfer_cpu(eng_image_job *j, uint32_t part);
void		eng_img_align_cpu(eng_image_job *j, uint32_t part);

/* After the ENHANCE stage: the enhanced images replace the raw ones. */
void		eng_img_dp2d_enhance_done(eng_image_job *j);

/* After a CPU stage: results in their final form (SAD: hits sorted). */
void		eng_img_sad_cpu_done(eng_image_job *j);

/* The result fields after job_status (the job succeeded). */
void		eng_img_sad_reply(const eng_image_job *j, eng_buf *o);
void		eng_img_dp2d_reply(const eng_image_job *j, eng_buf *o);
void		eng_img_chamfer_reply(const eng_image_job *j, eng_buf *o);
void		eng_img_align_reply(const eng_image_job *j, eng_buf *o);

/* Reply bytes of the result fields (for the frame limit). */
uint64_t	eng_img_reply_bytes(const eng_image_job *j);

/* Free the kind's memory. */
void		eng_img_sad_free(eng_image_job *j);
void		eng_img_dp2d_free(eng_image_job *j);
void		eng_img_chamfer_free(eng_image_job *j);
void		eng_img_align_free(eng_image_job *j);

/* Record a part's error if it comes before the one recorded (lock taken here). */
void		eng_img_part_error(eng_image_job *j, uint64_t key, const mcc_error *err);

/* Read an image field into img (pixels malloc'd); false: malformed or no memory. */
bool		eng_img_read_image(eng_rd *r, mcc_image *img, bool *no_memory);

/* --- eng_image_gpu.c: the devices ----------------------------------------- */

/*
 * The GPU state of image jobs over the devices the search path found
 * (eng_gpu.h); NULL without them. One context per device and library,
 * opened at its first job; a device runs one job at a time.
 */
struct eng_img_gpu *eng_img_gpu_start(struct eng_gpu *g);

/* Close every context (nothing runs). */
void		eng_img_gpu_stop(struct eng_img_gpu *ig);

/* Can a GPU run a job of this kind now? */
bool		eng_img_gpu_usable(const struct eng_img_gpu *ig, eng_img_kind kind);

/* The GPU stage's one part: run j on a free device (pool thread). */
void		eng_img_gpu_run(struct eng_img_gpu *ig, eng_image_job *j);

/* After ENG_IMG_GPU_STICKY: stop for the process; true the first time. */
bool		eng_img_gpu_disable(struct eng_img_gpu *ig);

/* Make the next GPU stage end with rc without running (tests). */
void		eng_img_gpu_test_inject(struct eng_img_gpu *ig, eng_img_gpu_rc rc);

#endif							/* ENG_IMAGE_H */
