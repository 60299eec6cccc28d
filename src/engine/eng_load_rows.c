/*
 * eng_load_rows.c: a load's LOAD_ROWS frames added in bulk, and pipelined.
 *
 * The main thread opens a frame's rows' headers (sizes and profile: what
 * the room needs) and reserves room for the frame at once; then, in one
 * job of the load threads (parts of per_part rows), each row's template is
 * checked, hashed and written into its place; the key index is linked on
 * the main thread. The cache being built is nobody else's, so the threads
 * may write its distinct rows at once. A row whose check fails fails the
 * load: the rows written after it are never linked, as the load's cache
 * is dropped. (One job a frame: two, checks then writes with the reserve
 * between, left the load threads idle twice a frame.)
 *
 * The pipeline: while one frame's job runs, the main thread prepares the
 * connection's next LOAD_ROWS frame of the same load when it is received
 * already (rows read, headers opened, room reserved behind the first
 * frame's: eng_cache_bulk_reserve) and queues its job behind, so that the
 * load threads go from one frame to the next without waiting for the main
 * thread's part of each (on the 16-core host that part, serial, was as
 * long as the threads' job). Frames are linked in the order they were
 * reserved. A next frame is only prepared when that cannot fail: its rows
 * parse, their headers open, its room is there without a growth (a growth
 * moves the arrays the frame in flight writes); anything else waits for
 * the ordinary path, which reports the error as before. Its bytes stay
 * where they are in the connection's input (nothing moves it until this
 * returns: reading ahead takes only the free room after them), and the
 * connection's in_pos moves past it.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eng_gallery.h"
#include "eng_load.h"
#include "eng_load_rx.h"
#include "eng_log.h"
#include "eng_server.h"
#include "eng_pool.h"
#include "mcc_hash.h"

#define ROWS_PER_PART	64		/* at most */
#define ROWS_PER_PART_MIN 8
/* the load threads that make reading ahead pay: cores beyond the client's and the main thread's */
#define AHEAD_MIN_THREADS 4
#define AHEAD_CONNS		16		/* a load's other connections read meanwhile, at most */
/*
 * Frames taken behind a pipeline's first, at most: receivers keep their
 * queues full as fast as the load goes, and a pipeline is one turn of the
 * main loop, which other clients wait for (some 12,000 rows)
 */
#define BEHIND_MAX		32

/* One frame's rows: prepared by the main thread, written by the load threads. */
typedef struct rows_job
{
	eng_job		job;			/* first */
	const eng_load_in *in;
	eng_load_in *own_in;		/* in, when read here (a pipelined frame) */
	eng_rx_frame *rx;			/* in's frame, when a receiver prepared it (owned) */
	uint32_t	n;				/* rows with an open header: reserved and written */
	bool		checked;		/* templates the engine cached before */
	bool		done;			/* its job came back (or ran here) */
	mcc_template_view *v;		/* the rows' headers, opened by the main thread */
	uint8_t    *bad;			/* rows whose template does not pass the check */
	eng_cache  *c;
	eng_bulk_at *at;
	uint32_t	per_part;		/* rows per part */
	eng_conn   *conn;			/* the connection it came on (NULL: none) */
} rows_job;

/*
 * Who the main thread reads while the load threads work (wait_round), and
 * whose received frames may go behind the one being written.
 */
typedef struct ahead_state
{
	eng_conn   *c;				/* the first frame's connection, read ahead; or NULL */
	eng_conn   *other[AHEAD_CONNS];	/* the load's other connections read ahead (NULL: not) */
	eng_conn   *src[1 + AHEAD_CONNS];	/* the connections whose frames may go behind */
	int			n_other;
	int			n_src;
	bool		rx;				/* a source's frames come from its receiver */
	uint32_t	behind;			/* frames taken behind the first */
	uint32_t	others_read;
} ahead_state;

bool
eng_load_read_rows(eng_rd *r, uint32_t n, bool ids, eng_load_in *in)
{
	for (uint32_t i = 0; i < n; i++)
	{
		in[i].key = eng_rd_i64(r);
		in[i].insert_xid = eng_rd_u64(r);
		in[i].delete_xid = eng_rd_u64(r);
		in[i].tpl = eng_rd_bytes(r, &in[i].len);
		in[i].tid = ids ? eng_rd_u64(r) : 0;
		in[i].xmin = ids ? eng_rd_u64(r) : 0;
	}
	return eng_rd_done(r);
}

/* A load still without a profile (MCC_LOAD_JOIN, profile 0) takes in's first row's. */
static void
profile_from_row(eng_server *s, eng_load *l, const eng_load_in *in)
{
	mcc_template_view v;
	mcc_error	err;

	if (l->profile != NULL || l->perr != 0)
		return;
	mcc_error_clear(&err);
	if (mcc_template_open_header(in->tpl, in->len, &v, &err) != MCC_OK)
	{
		mcc_error_detail(&err, "The row with key %lld cannot be cached.", (long long) in->key);
		eng_load_fail(l, MCC_PERR_DATA, &err);
		return;
	}
	eng_load_build_first(s, l, v.profile);
}

/* Open (and check, unless checked) one row's template. */
static mcc_status
open_row(const eng_load_in *in, bool checked, mcc_template_view *v, mcc_error *err)
{
	mcc_error_clear(err);
	return checked ? mcc_template_open_header(in->tpl, in->len, v, err) :
		mcc_template_open(in->tpl, in->len, v, err);
}

static void
rows_run(eng_job *job, uint32_t part, void *scratch)
{
	rows_job   *j = (rows_job *) job;
	uint32_t	a = part * j->per_part;
	uint32_t	b = a + j->per_part < j->n ? a + j->per_part : j->n;
	mcc_error	err;

	(void) scratch;
	for (uint32_t i = a; i < b; i++)
	{
		const eng_load_in *in = &j->in[i];
		mcc_template_view *v = &j->v[i];

		if (!j->checked)
		{
			mcc_template_view full;

			/* the whole check; the room was reserved for what its header says */
			j->bad[i] = open_row(in, false, &full, &err) != MCC_OK ||
				full.n_cyl != v->n_cyl || eng_side_bytes(&full) != eng_side_bytes(v);
			if (j->bad[i])
				continue;
			*v = full;
		}
		eng_cache_bulk_put(j->c, &j->at[i], in->key, mcc_template_hash(in->tpl, in->len),
						   in->insert_xid, in->delete_xid, v, in->tid, in->xmin);
	}
}

/*
 * Room for n rows' check flags and places, and their headers unless a
 * receiver opened them (j->v set); false if out of memory.
 */
static bool
job_alloc(rows_job *j, uint32_t n)
{
	if (j->v == NULL)
		j->v = malloc(sizeof(*j->v) * n);
	j->bad = calloc(n, 1);
	j->at = malloc(sizeof(*j->at) * n);
	return j->v != NULL && j->bad != NULL && j->at != NULL;
}

static void
job_free(rows_job *j)
{
	free(j->v);
	free(j->bad);
	free(j->at);
	free(j->own_in);
	eng_rx_frame_free(j->rx);
}

/* Mark the load pool's finished jobs done (the load pool runs only a load's rows). */
static void
take_done(eng_server *s)
{
	for (eng_job *d = eng_pool_take_done(s->load_pool), *next; d != NULL; d = next)
	{
		next = d->next;
		((rows_job *) d)->done = true;
	}
}

/*
 * Start j's rows: in the load threads when there are several parts (two
 * parts per thread, of 8 to 64 rows: a 1 MB frame has about 380 rows,
 * which parts of 64 gave to 6 threads only on a 16-core machine), else
 * here, at once.
 */
static void
job_start(eng_server *s, rows_job *j)
{
	int			threads = s->load_pool != NULL ? eng_pool_threads(s->load_pool) : 1;
	uint32_t	parts;

	j->per_part = j->n / (2 * (uint32_t) threads);
	j->per_part = j->per_part < ROWS_PER_PART_MIN ? ROWS_PER_PART_MIN :
		j->per_part > ROWS_PER_PART ? ROWS_PER_PART : j->per_part;
	parts = (j->n + j->per_part - 1) / j->per_part;
	memset(&j->job, 0, sizeof(j->job));
	j->job.run = rows_run;
	j->job.n_parts = parts;
	j->done = false;
	if (s->load_pool == NULL || parts < 2)
	{
		for (uint32_t p = 0; p < parts; p++)
			rows_run(&j->job, p, NULL);
		j->done = true;
		return;
	}
	eng_pool_submit(s->load_pool, &j->job);
}

/*
 * One round of waiting for the load threads: receive what the frames'
 * connection and the load's other connections (its parts, its leader)
 * sent, so that their senders keep writing (one frame at a time, the
 * client and the load threads took turns); poll when nothing came.
 */
static void
wait_round(eng_server *s, ahead_state *a)
{
	struct pollfd pfd[3 + AHEAD_CONNS] = {{.fd = eng_pool_fd(s->load_pool), .events = POLLIN},
	{.fd = -1, .events = POLLIN}};
	eng_conn   *c = a->c;
	int			got = c != NULL ? eng_conn_read_ahead(c) : 0;
	bool		got_other = false;
	int64_t		t0;

	for (int i = 0; i < a->n_other; i++)
	{
		int			o = a->other[i] != NULL ? eng_conn_read_ahead_other(a->other[i]) : 0;

		if (o < 0)
			a->other[i] = NULL;
		got_other |= o > 0;
		a->others_read += o > 0;
		pfd[2 + i] = (struct pollfd) {.fd = a->other[i] != NULL ? a->other[i]->fd : -1,
		.events = POLLIN};
	}
	if (got > 0 || got_other)
		return;
	if (got < 0 || (c != NULL && (c->in.cap == c->in.len || c->ahead_left == 0)))
		a->c = NULL;
	pfd[1].fd = a->c != NULL ? a->c->fd : -1;
	/* a frame a receiver prepared may go behind (the server's loop looks at them all again) */
	pfd[2 + a->n_other] = (struct pollfd) {.fd = a->rx ? s->rx_wake[0] : -1, .events = POLLIN};
	t0 = eng_now_usec();
	while (poll(pfd, 3 + (nfds_t) a->n_other, -1) < 0 && errno == EINTR)
		;
	s->load_wait_usec += eng_now_usec() - t0;
	if (pfd[2 + a->n_other].revents & POLLIN)
	{
		char		buf[256];

		while (read(s->rx_wake[0], buf, sizeof(buf)) > 0)
			;
	}
}

/*
 * The next frame of connection c for load l, if it is received whole and
 * is LOAD_ROWS of l (the load h_load_rows would give it to) that can be
 * prepared without a failure: its rows read into *j, their headers
 * opened, room reserved behind the frames in flight, without a growth;
 * in_pos then moves past it (1). 0: not received whole yet. -1: it cannot
 * go behind (another frame, another load's, or one that would fail or
 * need a growth): it is left to the ordinary path, and so is everything
 * after it on c.
 */
static int
take_next_frame(eng_server *s, eng_load *l, eng_conn *c, rows_job *j)
{
	size_t		avail = c->in.len - c->in_pos;
	const uint8_t *p = c->in.data + c->in_pos;
	bool		ids = (l->flags & MCC_LOAD_IDS) != 0;
	mcc_frame_hdr h;
	eng_rd		r;
	uint32_t	n;
	mcc_error	err;
	bool		ok;

	if (c->dead || c->closing || l->perr != 0 || l->build == NULL || l->build->pins > 0)
		return -1;
	if (avail < ENG_FRAME_HDRSZ)
		return 0;
	eng_frame_decode(p, &h);
	if (h.type != MCC_MSG_LOAD_ROWS || h.length > MCC_PROTO_MAX_FRAME)
		return -1;
	if (avail < ENG_FRAME_HDRSZ + (size_t) h.length)
		return 0;
	if (eng_load_of_rows(s, c, h.request_id) != l)
		return -1;
	eng_rd_init(&r, p + ENG_FRAME_HDRSZ, h.length);
	n = eng_rd_u32(&r);
	if (r.bad || n == 0 || !eng_load_rows_fit(n, ids, eng_rd_left(&r)))
		return -1;
	memset(j, 0, sizeof(*j));
	j->own_in = malloc(sizeof(*j->own_in) * n);
	ok = j->own_in != NULL && eng_load_read_rows(&r, n, ids, j->own_in) && job_alloc(j, n);
	for (uint32_t i = 0; ok && i < n; i++)
		ok = open_row(&j->own_in[i], true, &j->v[i], &err) == MCC_OK;
	if (!ok || eng_cache_bulk_reserve(l->build, n, j->v, j->at, false, &err) != MCC_OK)
	{
		job_free(j);
		return -1;
	}
	c->in_pos += ENG_FRAME_HDRSZ + (size_t) h.length;
	l->frames_behind++;
	j->conn = c;
	j->in = j->own_in;
	j->n = n;
	j->c = l->build;
	job_start(s, j);
	return 1;
}

/*
 * The same for a connection whose receiver prepares its frames
 * (eng_load_rx.h): the next one it queued, its rows read and headers
 * opened already; it is taken off the queue only once it goes behind.
 */
static int
take_next_rx(eng_server *s, eng_load *l, eng_conn *c, rows_job *j)
{
	eng_rx_frame *f = eng_rx_peek(c->rx);
	mcc_error	err;

	if (c->dead || c->closing || l->perr != 0 || l->build == NULL || l->build->pins > 0)
		return -1;
	if (f == NULL)
		return eng_rx_drained(c->rx) ? -1 : 0;
	if (f->n == 0 || f->ok_n < f->n || eng_load_of_rows(s, c, f->request_id) != l)
		return -1;
	memset(j, 0, sizeof(*j));
	j->v = f->v;				/* not the job's yet: freed with f on a failure */
	if (!job_alloc(j, f->n) ||
		eng_cache_bulk_reserve(l->build, f->n, f->v, j->at, false, &err) != MCC_OK)
	{
		j->v = NULL;
		job_free(j);
		return -1;
	}
	eng_rx_pop(c->rx);
	f->v = NULL;
	l->frames_behind++;
	j->rx = f;
	j->conn = c;
	j->in = f->in;
	j->n = f->n;
	j->c = l->build;
	job_start(s, j);
	return 1;
}

/*
 * Link j's rows once its job is done: true, or false with the check's
 * error of its first row that did not pass it (the load fails there, as
 * a load row by row would).
 */
static bool
job_finish(eng_load *l, rows_job *j, mcc_error *err)
{
	const mcc_template_view *last = &j->v[j->n - 1];
	mcc_template_view v;

	for (uint32_t i = 0; i < j->n; i++)
		if (j->bad[i])
		{
			if (open_row(&j->in[i], j->checked, &v, err) == MCC_OK)	/* failed in a thread only:
																	 * cannot be */
				mcc_error_set(err, MCC_ERR_INTERNAL, "template check not repeatable");
			mcc_error_detail(err, "The row with key %lld cannot be cached.",
							 (long long) j->in[i].key);
			return false;
		}
	eng_cache_bulk_end(l->build, j->n, j->at[j->n - 1].cyl + (uint64_t) last->n_cyl - j->at[0].cyl,
					   j->at[j->n - 1].side + eng_side_bytes(last) - j->at[0].side);
	l->rows += j->n;
	l->frames++;
	/* a joined part's rows, which its LOAD_JOINED reports */
	if (j->conn != NULL && j->conn->load != l)
		j->conn->join_rows += j->n;
	return true;
}

/*
 * The next frame to go behind the one being written, into j: from the
 * first frame's connection if it has one, else from the first of the
 * load's other connections that has. A connection whose next frame cannot
 * go behind is asked no more in this pipeline (its frames stay in order);
 * one that gave a frame is read ahead no more: that would move its
 * buffer, into which the frame's rows point (the first frame's connection
 * is read into its free room only, never moved).
 */
static bool
take_next(eng_server *s, eng_load *l, ahead_state *a, rows_job *j)
{
	if (a->behind >= BEHIND_MAX)
		return false;
	for (int i = 0; i < a->n_src; i++)
	{
		eng_conn   *c = a->src[i];
		int			got = c == NULL ? 0 : c->rx != NULL ? take_next_rx(s, l, c, j) :
			take_next_frame(s, l, c, j);

		if (got < 0)
			a->src[i] = NULL;	/* its frames wait for the ordinary path */
		if (got <= 0)
			continue;
		for (int o = 0; i > 0 && o < a->n_other; o++)
			if (a->other[o] == a->src[i])
				a->other[o] = NULL;
		a->behind++;
		return true;
	}
	return false;
}

/* Wait until j's job is done, reading ahead meanwhile. */
static void
wait_done(eng_server *s, rows_job *j, ahead_state *a)
{
	for (;;)
	{
		if (!j->done)
			take_done(s);
		if (j->done)
			return;
		wait_round(s, a);
	}
}

/*
 * Run job cur (reserved, not started) and, while it runs, the next frames
 * of connection from (NULL: none) that can go behind it; every job is done
 * and every frame linked, or the load failed, when this returns.
 */
static void
run_pipeline(eng_server *s, eng_load *l, rows_job *cur, eng_conn *from)
{
	int			threads = s->load_pool != NULL ? eng_pool_threads(s->load_pool) : 1;
	ahead_state a = {.c = threads >= AHEAD_MIN_THREADS && from != NULL && from->fd >= 0 &&
	from->rx == NULL ? from : NULL};
	rows_job	slot[2];
	rows_job   *first = cur;		/* the caller's, which it frees */
	rows_job   *next = NULL;
	int			k = 0;
	mcc_error	err;

	/* frames go behind from the first frame's connection first, then the load's others */
	if (from != NULL && !cur->checked && s->load_pool != NULL)
	{
		a.src[a.n_src++] = from;
		a.n_src += eng_load_conns(s, l, from, a.src + 1, AHEAD_CONNS);
	}
	for (int i = 0; i < a.n_src; i++)
		a.rx |= a.src[i]->rx != NULL;
	/* reading ahead needs cores to spare: on two, the client's writes only took the threads' CPU */
	if (a.c != NULL)
	{
		a.n_other = a.n_src - 1;
		memcpy(a.other, a.src + 1, sizeof(a.other[0]) * (size_t) a.n_other);
	}
	job_start(s, cur);
	for (;;)
	{
		bool		ok;

		if (next == NULL && take_next(s, l, &a, &slot[k]))
		{
			next = &slot[k];
			k ^= 1;
		}
		if (!cur->done && s->load_pool != NULL)
			take_done(s);
		if (!cur->done)
		{
			wait_round(s, &a);
			continue;
		}
		mcc_error_clear(&err);
		ok = job_finish(l, cur, &err);
		if (cur != first)
			job_free(cur);
		/* a failed frame's successor writes into the cache still: it goes first */
		if (!ok && next != NULL)
		{
			wait_done(s, next, &a);
			job_free(next);
			next = NULL;
		}
		if (!ok)
			eng_load_fail(l, MCC_PERR_DATA, &err);
		if (next == NULL)
			break;
		cur = next;
		next = NULL;
	}
	if (a.others_read > 0 && eng_log_enabled(ENG_LOG_DEBUG))
		eng_log(ENG_LOG_DEBUG, "gallery %s: %u reads of the load's other connections while a frame was added",
				eng_gallery_name(l->gallery), a.others_read);
}

/*
 * May rows in[0..n) go into load l? Not when it failed or has no cache,
 * nor before a snapshot check's WANT (which fails the load); a load still
 * without a profile takes the first row's.
 */
static bool
rows_welcome(eng_server *s, eng_load *l, const eng_load_in *in, uint32_t n)
{
	mcc_error	err;

	if (n > 0)
		profile_from_row(s, l, &in[0]);
	if (l->build == NULL || n == 0)
		return false;
	/* rows before WANT would grow the cache a GPU job reads (eng_pass_start_gpu_prebuild) */
	if (l->build->pins > 0)
	{
		mcc_error_set(&err, MCC_ERR_INTERNAL, "rows arrived before the snapshot check's WANT");
		eng_load_fail(l, MCC_PERR_INTERNAL, &err);
		return false;
	}
	return true;
}

/*
 * Add j's n rows (j->in, j->checked) whose headers in[0..ok_n) are open
 * into j->v: room reserved, the job and those behind it run, linked; the
 * load fails at the row whose header did not open (its check's error),
 * after the rows before it.
 */
static void
rows_add(eng_server *s, eng_load *l, rows_job *j, uint32_t n, uint32_t ok_n, eng_conn *from)
{
	mcc_error	err;
	mcc_status	st = MCC_OK;

	mcc_error_clear(&err);
	if (ok_n > 0 && (st = eng_load_reserve_rows(s, l, j->v, ok_n, j->at, &err)) == MCC_OK)
	{
		eng_load_prefault_room(s, l);
		j->n = ok_n;
		j->c = l->build;
		j->conn = from;
		/* a frame cut short by a bad header fails the load there: nothing goes behind it */
		run_pipeline(s, l, j, ok_n == n ? from : NULL);
	}
	if (st == MCC_OK && ok_n < n && l->perr == 0)
	{
		mcc_template_view v;

		/* the header that did not open: its check's own error */
		st = open_row(&j->in[ok_n], j->checked, &v, &err);
		if (st == MCC_OK)		/* it failed in a thread but not here: cannot be */
			st = mcc_error_set(&err, MCC_ERR_INTERNAL, "template check not repeatable");
		mcc_error_detail(&err, "The row with key %lld cannot be cached.",
						 (long long) j->in[ok_n].key);
	}
	else if (st != MCC_OK && st != MCC_ERR_MEMORY)
		mcc_error_detail(&err, "The rows from key %lld cannot be cached.",
						 (long long) j->in[0].key);
	if (st != MCC_OK)
		eng_load_fail(l, st == MCC_ERR_MEMORY ? MCC_PERR_MEMORY : MCC_PERR_DATA, &err);
}

/* Out of memory for a frame's rows: the load fails. */
static void
fail_memory(eng_load *l)
{
	mcc_error	err;

	mcc_error_set(&err, MCC_ERR_MEMORY, "out of memory");
	eng_load_fail(l, MCC_PERR_MEMORY, &err);
}

void
eng_load_rows(eng_server *s, eng_load *l, const eng_load_in *in, uint32_t n, bool checked,
			  eng_conn *from)
{
	rows_job	j = {.in = in, .checked = checked};
	uint32_t	ok_n = 0;
	mcc_error	err;

	if (!rows_welcome(s, l, in, n))
		return;
	if (!job_alloc(&j, n))
		fail_memory(l);
	else
	{
		/* the headers here (cheap): the rows before a bad one go in, the load fails at it */
		while (ok_n < n && mcc_template_open_header(in[ok_n].tpl, in[ok_n].len, &j.v[ok_n],
													&err) == MCC_OK)
			ok_n++;
		rows_add(s, l, &j, n, ok_n, from);
	}
	job_free(&j);
}

void
eng_load_rx_rows(eng_server *s, eng_conn *c, eng_rx_frame *f)
{
	eng_load   *l = eng_load_of_rows(s, c, f->request_id);
	rows_job	j = {.in = f->in, .v = f->v, .rx = f};

	f->v = NULL;				/* the job's now, as f */
	/* a load cancelled or replaced meanwhile: its rows are dropped */
	if (l != NULL && rows_welcome(s, l, f->in, f->n))
	{
		if (!job_alloc(&j, f->n))
			fail_memory(l);
		else
			rows_add(s, l, &j, f->n, f->ok_n, c);
	}
	job_free(&j);
}
