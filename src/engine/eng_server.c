/*
 * eng_server.c: the engine's state and its poll() loop over the listener,
 * the clients, the supervisor's pipe, the signal pipe and the pool's
 * completion pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "eng_compact.h"
#include "mcc_clock.h"
#include "eng_conn.h"
#include "eng_gallery.h"
#include "eng_greet.h"
#include "eng_log.h"
#include "eng_pass.h"
#include "eng_server.h"
#include "eng_snapshot.h"

int64_t
eng_now_usec(void)
{
	return eng_pool_now_usec();
}

int64_t
eng_wall_usec(void)
{
	return mcc_clock_usec(CLOCK_REALTIME);
}

/* What a pool thread's scratch must hold for any job. */
static size_t
scratch_bytes(void)
{
	size_t		n = ENG_SCRATCH_BYTES;

	if (eng_refine_scratch_bytes() > n)
		n = eng_refine_scratch_bytes();
	if (eng_rescore_scratch_bytes() > n)
		n = eng_rescore_scratch_bytes();
	return n;
}

bool
eng_server_init(eng_server *s, const eng_config *cfg)
{
	memset(s, 0, sizeof(*s));
	s->cfg = *cfg;
	if (s->cfg.threads < 1)
		s->cfg.threads = 1;
	if (s->cfg.max_batch < 1)
		s->cfg.max_batch = 1;
	if (s->cfg.delta_timeout_ms < 0)
		s->cfg.delta_timeout_ms = 0;
	if (s->cfg.image_threads < 1)
		s->cfg.image_threads = s->cfg.threads / 2 > 1 ? s->cfg.threads / 2 : 1;
	if (s->cfg.image_queue < 1)
		s->cfg.image_queue = 4 * (uint32_t) s->cfg.image_threads;
	s->budget.limit = cfg->memory_limit;
	s->listen_fd = -1;
	/* without it loading connections are read by the main thread, as before receivers */
	if (pipe2(s->rx_wake, O_NONBLOCK | O_CLOEXEC) != 0)
		s->rx_wake[0] = s->rx_wake[1] = -1;
	s->incarnation = (uint64_t) eng_wall_usec();
	mcc_lss_init();
	/* refinements need the default parameters' tables: build them now */
	(void) mcc_match_params_std();
	s->pool = eng_pool_start(s->cfg.threads, scratch_bytes());
	if (s->pool == NULL)
		return false;
	/*
	 * Image jobs get threads of their own, below the searches' priority:
	 * a long one never holds a thread a search is waiting for.
	 */
	s->img_pool = eng_pool_start_niced(s->cfg.image_threads, ENG_SCRATCH_BYTES,
									   ENG_IMAGE_NICE);
	if (s->img_pool == NULL)
	{
		eng_pool_stop(s->pool);
		s->pool = NULL;
		return false;
	}
	/*
	 * Load rows get threads of their own, which the main thread waits for
	 * (a load's frame is opened and written in parallel): a pool of their
	 * own keeps them out of the searches' queue and its done list.
	 */
	if (s->cfg.threads > 1)
		s->load_pool = eng_pool_start(s->cfg.threads, 0);
	/* the only place CUDA is initialized; no GPU means the CPU threads */
	s->gpu = eng_gpu_start(s->cfg.gpu, s->cfg.gpu_memory_limit, s->cfg.gpu_partitions,
						   s->cfg.threads);
	/* image jobs use the same devices, with contexts of their own */
	s->img_gpu = eng_img_gpu_start(s->gpu);
	return true;
}

/* Names of the stages (eng_rstage) in the log's line. */
static const char *const rstage_names[ENG_RSTAGES] = {
	[ENG_RS_QUEUED] = "SEARCH read to its pass queued",
	[ENG_RS_PASS_QUEUED] = "pass queued",
	[ENG_RS_PASS] = "pass",
	[ENG_RS_PASS_BACK] = "pass back to the main thread",
	[ENG_RS_WAITED] = "waiting for the previous rescoring",
	[ENG_RS_HANDOVER] = "hand-over (cut, rescoring set up)",
	[ENG_RS_RESCORE_QUEUED] = "rescoring queued",
	[ENG_RS_RESCORE] = "rescoring",
	[ENG_RS_RESCORE_BACK] = "rescoring back to the main thread",
	[ENG_RS_REPLY] = "replies written",
	[ENG_RS_GPU] = "of the pass: its GPU part",
	[ENG_RS_COUNT] = "its visibility count",
};

/*
 * A refining search's time per reply, stage by stage, and what fell in no
 * stage (the whole minus the stages that follow one another).
 */
static void
log_refined_stages(const eng_server *s)
{
	char		line[1024];
	size_t		len = 0;
	int64_t		staged = 0;
	double		per = 1e3 * (double) s->refined;

	for (int i = 0; i < ENG_RSTAGES; i++)
	{
		if (i < ENG_RS_GPU)
			staged += s->refined_stage_usec[i];
		len += (size_t) snprintf(line + len, sizeof(line) - len, "%s%s %.2f",
								 i == 0 ? "" : ", ", rstage_names[i],
								 s->refined_stage_usec[i] / per);
		if (len >= sizeof(line))
			break;
	}
	eng_log(ENG_LOG_INFO, "refining searches, ms per reply: %s; in no stage %.2f", line,
			(s->refined_usec - staged) / per);
}

/* The refining searches' totals and their stages, if any ran. */
static void
log_refined(const eng_server *s)
{
	if (s->refined == 0)
		return;
	eng_log(ENG_LOG_INFO, "refining searches: %llu replies, %.1f ms from their SEARCH to their RESULT; "
			"shortlists cut %.1f ms, rescorings %.1f ms (from their start to their pass's end), "
			"replies written %.1f ms",
			(unsigned long long) s->refined, s->refined_usec / 1e3, s->cut_usec / 1e3,
			s->rescore_usec / 1e3, s->refined_reply_usec / 1e3);
	log_refined_stages(s);
}

void
eng_server_log_totals(const eng_server *s)
{
	log_refined(s);
	eng_gpu_log_totals(s->gpu);
}

void
eng_server_destroy(eng_server *s)
{
	/* threads first: nothing may read a cache while it is freed */
	eng_pool_stop(s->pool);
	s->pool = NULL;
	eng_pool_stop(s->img_pool);
	s->img_pool = NULL;
	eng_pool_stop(s->load_pool);
	s->load_pool = NULL;
	while (s->n_conns > 0)
		eng_conn_close(s, s->conns[s->n_conns - 1]);
	free(s->conns);
	s->conns = NULL;
	for (int i = 0; i < 2; i++)
		if (s->rx_wake[i] >= 0)
			close(s->rx_wake[i]);
	s->rx_wake[0] = s->rx_wake[1] = -1;
	eng_gallery_free_all(s);
	eng_refine_free_all(s);
	eng_image_free_all(s);
	eng_img_gpu_stop(s->img_gpu);
	s->img_gpu = NULL;
	log_refined(s);
	/* after the caches: each closed its GPU context */
	eng_gpu_stop(s->gpu);
	s->gpu = NULL;
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	s->listen_fd = -1;
}

typedef void (*job_done_fn) (eng_server *s, eng_job *job);

/* The owner of a job that came back from either pool, by the job's tag. */
static const job_done_fn job_done_by_tag[] = {
	[ENG_JOB_BATCH] = eng_gallery_job_done, /* passes and compactions, via their gallery */
	[ENG_JOB_COMPACTION] = eng_gallery_job_done,
	[ENG_JOB_RESCORE] = eng_gallery_job_done,	/* a refining pass's, which its pass awaits */
	[ENG_JOB_IMAGE] = eng_image_job_done,
	[ENG_JOB_REFINE] = eng_refine_done,
	[ENG_JOB_SNAPSHOT] = eng_snapshot_job_done,
	[ENG_JOB_SNAPSHOT_READ] = eng_snapshot_read_done,
};

void
eng_server_submit(eng_server *s, eng_pool *pool, eng_job *job)
{
	s->jobs++;
	eng_pool_submit(pool, job);
}

/* A job of either pool came back: count it out and hand it to its owner. */
static void
job_done(eng_server *s, eng_job *job)
{
	size_t		n = sizeof(job_done_by_tag) / sizeof(job_done_by_tag[0]);

	/* other tags are not the server's (a test's own job) */
	if (job->tag < 0 || (size_t) job->tag >= n || job_done_by_tag[job->tag] == NULL)
		return;
	s->jobs--;
	job_done_by_tag[job->tag] (s, job);
}

void
eng_server_step(eng_server *s)
{
	eng_pool   *pools[2] = {s->pool, s->img_pool};

	for (int i = 0; i < 2; i++)
	{
		eng_job    *job = eng_pool_take_done(pools[i]);

		while (job)
		{
			eng_job    *next = job->next;

			job_done(s, job);
			job = next;
		}
	}
	/* deadlines, and anything that became possible */
	for (uint32_t i = 0; i < s->n_gal; i++)
		eng_gallery_advance(s, s->gal[i]);
	eng_snapshot_step(s);
}

void
eng_server_pump(eng_server *s, int timeout_ms)
{
	struct pollfd pfd[2] = {
		{.fd = eng_pool_fd(s->pool), .events = POLLIN},
		{.fd = eng_pool_fd(s->img_pool), .events = POLLIN}
	};

	/* a job of either pool; one already done leaves a byte in its pipe */
	if (s->jobs > 0)
		while (poll(pfd, 2, timeout_ms) < 0 && errno == EINTR)
			;
	eng_server_step(s);
}

void
eng_server_fail_all(eng_server *s, const char *why)
{
	for (uint32_t i = 0; i < s->n_gal; i++)
	{
		eng_gallery *g = s->gal[i];
		eng_request *lists[3] = {g->waiting, g->running_reqs, g->rescored_reqs};

		for (int k = 0; k < 3; k++)
			for (eng_request *r = lists[k]; r; r = r->next)
			{
				eng_conn   *c = eng_conn_by_id(s, r->conn_id);

				if (c && !atomic_load(&r->cancelled))
					eng_reply_error(c, r->request_id, MCC_PERR_CANCELLED, 0, "%s", why);
				atomic_store(&r->cancelled, 1);
			}
	}
	eng_refine_fail_all(s, why);
	eng_image_fail_all(s, why);
	for (uint32_t i = 0; i < s->n_conns; i++)
	{
		eng_conn   *c = s->conns[i];

		if (c->load)
			eng_reply_error(c, c->load->request_id, MCC_PERR_CANCELLED, 0, "%s", why);
		eng_conn_flush(c);
	}
}

/*
 * Has a connection frames received ahead, not yet handled (eng_conn_pending),
 * or frames its receiver prepared, or a receiver that stopped?
 */
static bool
any_pending(const eng_server *s)
{
	for (uint32_t i = 0; i < s->n_conns; i++)
		if (s->conns[i]->input_pending || eng_conn_rx_ready(s->conns[i]))
			return true;
	return false;
}

/* Empty the receivers' wake pipe: what they prepared is looked at next. */
static void
drain_rx_wake(eng_server *s)
{
	char		buf[256];

	while (s->rx_wake[0] >= 0 && read(s->rx_wake[0], buf, sizeof(buf)) > 0)
		;
}

/* Accept every pending connection. */
static void
accept_all(eng_server *s)
{
	for (;;)
	{
		int			fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
		{
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				eng_log(ENG_LOG_WARNING, "accept failed: %s", strerror(errno));
			return;
		}
		if (eng_conn_add(s, fd) == NULL)
		{
			eng_log(ENG_LOG_WARNING, "out of memory for a connection");
			close(fd);
		}
	}
}

/*
 * Take the connections the greeter accepted (eng_greet.h): each answered
 * HELLO already, or brings the bytes of its first frame to handle here.
 */
static void
take_greeted(eng_server *s, eng_greeter *g)
{
	eng_greeted got[16];
	int			n = eng_greet_take(g, got, 16);

	for (int i = 0; i < n; i++)
	{
		eng_conn   *c = eng_conn_add(s, got[i].fd);

		if (c == NULL)
		{
			eng_log(ENG_LOG_WARNING, "out of memory for a connection");
			close(got[i].fd);
			continue;
		}
		c->pid = got[i].pid;
		if (got[i].greeted)
			eng_log(ENG_LOG_DEBUG, "connection %llu: hello from pid %u (answered on accept)",
					(unsigned long long) c->id, c->pid);
		if (got[i].n_head > 0)
			eng_conn_input(s, c, got[i].head, got[i].n_head);
	}
}

/*
 * Say when one turn of the loop kept every other client waiting for long
 * (what to look for in a large load: the turn's frames, or its jobs and
 * galleries).
 */
#define LONG_TURN_USEC	(1000 * 1000)

static void
note_long_turn(int64_t t0, int64_t t_frames, int64_t t_end)
{
	if (t_end - t0 < LONG_TURN_USEC)
		return;
	eng_log(ENG_LOG_INFO, "the main thread was busy for %.2f s in one turn "
			"(frames %.2f s, jobs and galleries %.2f s): other clients waited meanwhile",
			(double) (t_end - t0) / 1e6, (double) (t_frames - t0) / 1e6,
			(double) (t_end - t_frames) / 1e6);
}

/* Milliseconds until the nearest request deadline, or -1. */
static int
poll_timeout(eng_server *s)
{
	int64_t		d = eng_gallery_next_deadline(s);
	int64_t		snap = eng_snapshot_next_due(s);
	int64_t		ms;

	if (snap < d)
		d = snap;

	if (d == INT64_MAX)
		return -1;
	ms = (d - eng_now_usec() + 999) / 1000;
	if (ms < 0)
		return 0;
	return ms > 60000 ? 60000 : (int) ms;
}

/* Is the supervisor's pipe closed (EOF or error)? */
static bool
parent_gone(int fd)
{
	char		buf[64];
	ssize_t		n = read(fd, buf, sizeof(buf));

	return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR && errno != EWOULDBLOCK);
}

/*
 * The signals the self-pipe holds (eng_main.c writes one byte, the signal's
 * number, per signal): SIGUSR1 logs the totals so far; true if any other
 * (SIGTERM, SIGINT) asks the engine to exit.
 */
static bool
read_signals(const eng_server *s, int fd)
{
	unsigned char buf[64];
	ssize_t		n = read(fd, buf, sizeof(buf));
	bool		stop = n <= 0;

	for (ssize_t i = 0; i < n; i++)
	{
		if (buf[i] == SIGUSR1)
			eng_server_log_totals(s);
		else
			stop = true;
	}
	return stop;
}

int
eng_server_run(eng_server *s, int parent_fd, int signal_fd)
{
	struct pollfd *pfd = NULL;
	uint64_t   *ids = NULL;
	uint32_t	cap = 0;
	/* HELLO answered whatever this thread does; if it cannot start, accepted here */
	eng_greeter *greeter = eng_greet_start(s->listen_fd, s->incarnation,
										   (uint32_t) eng_pool_threads(s->pool),
										   eng_image_hello_flags(s));

	if (greeter == NULL)
		eng_log(ENG_LOG_WARNING, "the greeter thread did not start: HELLO is answered by the main thread");
	for (;;)
	{
		uint32_t	n = 0;
		uint32_t	base;
		int			rc;
		int64_t		t0;
		int64_t		t_frames;

		if (cap < s->n_conns + 6)
		{
			cap = (s->n_conns + 6) * 2;
			pfd = realloc(pfd, cap * sizeof(*pfd));
			ids = realloc(ids, cap * sizeof(*ids));
			if (pfd == NULL || ids == NULL)
			{
				eng_log(ENG_LOG_ERROR, "out of memory in the event loop");
				eng_greet_stop(greeter);
				free(pfd);
				free(ids);
				return 1;
			}
		}
		pfd[n++] = (struct pollfd) {.fd = greeter ? eng_greet_fd(greeter) : s->listen_fd,
		.events = POLLIN};
		pfd[n++] = (struct pollfd) {.fd = eng_pool_fd(s->pool), .events = POLLIN};
		pfd[n++] = (struct pollfd) {.fd = signal_fd, .events = POLLIN};
		pfd[n++] = (struct pollfd) {.fd = parent_fd, .events = POLLIN};
		pfd[n++] = (struct pollfd) {.fd = eng_pool_fd(s->img_pool), .events = POLLIN};
		pfd[n++] = (struct pollfd) {.fd = s->rx_wake[0], .events = POLLIN};
		base = n;
		for (uint32_t i = 0; i < s->n_conns; i++)
		{
			eng_conn   *c = s->conns[i];
			short		ev = 0;

			/* a receiver reads a loading connection (eng_load_rx.h) */
			if (!c->closing && !c->dead && c->rx == NULL)
				ev |= POLLIN;
			if (c->out_pos < c->out.len)
				ev |= POLLOUT;
			ids[n] = c->id;
			pfd[n++] = (struct pollfd) {.fd = c->fd, .events = ev};
		}
		rc = poll(pfd, n, any_pending(s) ? 0 : poll_timeout(s));
		if (rc < 0 && errno != EINTR)
		{
			eng_log(ENG_LOG_ERROR, "poll failed: %s", strerror(errno));
			break;
		}
		if (rc > 0 && (pfd[2].revents & POLLIN) && read_signals(s, signal_fd))
		{
			eng_log(ENG_LOG_INFO, "received a termination signal; exiting");
			break;
		}
		if (rc > 0 && parent_fd >= 0 && pfd[3].revents && parent_gone(parent_fd))
		{
			eng_log(ENG_LOG_INFO, "the supervisor is gone; exiting");
			break;
		}
		t0 = eng_now_usec();
		if (rc > 0 && (pfd[0].revents & POLLIN))
		{
			if (greeter)
				take_greeted(s, greeter);
			else
				accept_all(s);
		}
		for (uint32_t i = base; rc > 0 && i < n; i++)
		{
			eng_conn   *c;

			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			c = eng_conn_by_id(s, ids[i]);
			if (c == NULL || c->closing || c->rx != NULL)
				continue;
			if (!eng_conn_read(s, c))
				c->dead = true;
		}
		/* frames a load's connection received while another's were added */
		for (uint32_t i = 0; i < s->n_conns; i++)
			if (s->conns[i]->input_pending)
				eng_conn_pending(s, s->conns[i]);
		/* the frames the receivers prepared (a new one after the drain wakes the next poll) */
		drain_rx_wake(s);
		for (uint32_t i = 0; i < s->n_conns; i++)
			if (s->conns[i]->rx != NULL)
				eng_conn_rx_step(s, s->conns[i]);
		t_frames = eng_now_usec();
		eng_server_step(s);
		note_long_turn(t0, t_frames, eng_now_usec());
		s->busy_usec += eng_now_usec() - t0;
		if (greeter)
			eng_greet_set_flags(greeter, eng_image_hello_flags(s));
		for (uint32_t i = 0; i < s->n_conns; i++)
		{
			eng_conn   *c = s->conns[i];

			if (!c->dead && !eng_conn_flush(c))
				c->dead = true;
			if (c->closing && c->out_pos == c->out.len)
				c->dead = true;
		}
		for (uint32_t i = 0; i < s->n_conns;)
			if (s->conns[i]->dead)
				eng_conn_close(s, s->conns[i]);
			else
				i++;
	}
	eng_greet_stop(greeter);
	free(pfd);
	free(ids);
	return 0;
}
