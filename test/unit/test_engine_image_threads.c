/*
 * test_engine_image_threads.c: image jobs have threads of their own, in
 * process (the engine's CPU path): with every image thread held, a search
 * is answered and a queued SAD waits; ENGINE_STATUS reports the image
 * threads, the admitted jobs and their parts; beyond --image-queue a job
 * gets MCC_PERR_BUSY. The jobs themselves: test_engine_image.c.
 */
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "engine_image.h"
#include "engine_inproc.h"
#include "eng_log.h"
#include "eng_server.h"

static tg_rng rng = {20261201};

/* A job of the test's own that holds an image thread until released. */
typedef struct holder
{
	eng_job		job;			/* first */
	sem_t		started;
	sem_t		release;
} holder;

static void
holder_run(eng_job *job, uint32_t part, void *scratch)
{
	holder	   *h = (holder *) job;

	sem_post(&h->started);
	sem_wait(&h->release);
}

/* ENGINE_STATUS: image threads, queue limit, jobs, parts, parts done. */
static bool
engine_status(eng_server *s, eng_conn *c, uint32_t *threads, uint32_t *queue,
			  uint32_t *jobs, uint64_t *parts, uint64_t *done)
{
	eng_buf		b;
	tl_frame	f;
	bool		ok = false;

	eng_buf_init(&b);
	tl_empty(&b, MCC_MSG_ENGINE_STATUS, 77);
	ip_feed(s, c, &b);
	eng_buf_free(&b);
	if (ip_reply(c, 77, &f, NULL) == 1 && f.h.type == MCC_MSG_ENGINE_STATUS_REPLY &&
		f.h.length == 3 * 8 + 3 * 4 + 2 * 8 + 4)
	{
		memcpy(threads, f.p + 24, 4);
		memcpy(queue, f.p + 28, 4);
		memcpy(jobs, f.p + 32, 4);
		memcpy(parts, f.p + 36, 8);
		memcpy(done, f.p + 44, 8);
		ok = true;
	}
	ip_clear_out(c);
	return ok;
}

/*
 * With the only image thread held, a search is still answered (it runs on
 * the search threads), a SAD job waits with none of its parts done, and a
 * second job is refused (--image-queue 1); released, the SAD completes.
 */
static void
test_image_threads(void)
{
	eng_server	s;
	eng_config	cfg = {.threads = 2, .delta_timeout_ms = 2000, .max_batch = 64,
		.gpu = ENG_GPU_OFF, .image_threads = 1, .image_queue = 1};
	mcc_gallery_id gid = {5, 7001, 9};
	tl_tpl	   *gt = tl_templates(61, 40, 5);
	int64_t		keys[40];
	uint64_t	xids[40];
	eng_conn   *c;
	eng_buf		b;
	holder		h;
	mcc_image	t = ti_random_image(&rng, 300, 200),
				p = ti_random_image(&rng, 30, 20);
	uint32_t	threads = 0,
				queue = 0,
				jobs = 0;
	uint64_t	parts = 0,
				done = 0;
	tl_frame	f;
	bool		ok;

	eng_server_init(&s, &cfg);
	c = eng_conn_add(&s, -1);
	UNIT_CHECK(engine_status(&s, c, &threads, &queue, &jobs, &parts, &done) &&
			   threads == 1 && queue == 1 && jobs == 0,
			   "ENGINE_STATUS: 1 image thread, at most 1 image job, none now");
	for (int i = 0; i < 40; i++)
	{
		keys[i] = i;
		xids[i] = 0;
	}
	eng_buf_init(&b);
	tl_load_begin(&b, 1, &gid, 1, 40);
	tl_load_rows(&b, 1, 40, keys, xids, NULL, gt);
	tl_load_end(&b, 1);
	ip_feed(&s, c, &b);
	ti_pump(&s);
	UNIT_CHECK(ip_reply(c, 1, &f, NULL) == 1 && f.h.type == MCC_MSG_LOADED, "a gallery is loaded");
	ip_clear_out(c);

	/* hold the image thread */
	memset(&h, 0, sizeof(h));
	sem_init(&h.started, 0, 0);
	sem_init(&h.release, 0, 0);
	h.job.run = holder_run;
	h.job.tag = 99;
	h.job.n_parts = 1;
	eng_pool_submit(s.img_pool, &h.job);
	sem_wait(&h.started);

	ti_sad(&b, 2, MCC_IMG_CPU, 3, false, &t, &p);
	ip_feed(&s, c, &b);
	tl_search(&b, 3, &gid, 1, 5, 0.0f, 1, gt);
	ip_feed(&s, c, &b);
	eng_server_step(&s);
	while (ip_reply(c, 3, NULL, NULL) == 0)
		eng_server_pump(&s, 1000);
	UNIT_CHECK(ip_reply(c, 3, &f, NULL) == 1 && f.h.type == MCC_MSG_RESULT &&
			   ip_reply(c, 2, NULL, NULL) == 0,
			   "with every image thread held, a search is answered and the SAD job waits");
	ok = engine_status(&s, c, &threads, &queue, &jobs, &parts, &done);
	UNIT_CHECK(ok && jobs == 1 && parts > 0 && done == 0,
			   "ENGINE_STATUS: 1 image job, %llu parts, none done",
			   (unsigned long long) parts);
	ti_sad(&b, 4, MCC_IMG_CPU, 3, false, &t, &p);
	ip_feed(&s, c, &b);
	UNIT_CHECK(ip_error_of(c, 4) == MCC_PERR_BUSY && !c->closing,
			   "a second image job beyond --image-queue 1: BUSY, connection kept");
	ip_clear_out(c);

	sem_post(&h.release);
	ti_pump(&s);
	UNIT_CHECK(ti_sad_ok(&s, c, 5, MCC_IMG_CPU, "cpu", &t, &p, 3, false) && s.n_images == 0,
			   "released, the image thread runs SAD jobs again (equal to the reference)");
	eng_buf_free(&b);
	free(t.pixels);
	free(p.pixels);
	tl_templates_free(gt, 40);
	eng_server_destroy(&s);
	sem_destroy(&h.started);
	sem_destroy(&h.release);
}

int
main(void)
{
	mcc_lss_init();
	eng_log_set_level(ENG_LOG_ERROR);
	test_image_threads();
	return unit_done();
}
