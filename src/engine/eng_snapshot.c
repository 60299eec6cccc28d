/*
 * eng_snapshot.c: cache snapshots in the engine (eng_snapshot.h).
 *
 * Writing never holds up the main thread for long: a pool job encodes the
 * cache while it is pinned (readers go on; changes wait, as for a
 * compaction), the main thread unpins it when the job comes back, and a
 * detached thread writes the file (temporary file, fsync, rename). At
 * shutdown the caches that changed since their last snapshot are written
 * by the main thread, which serves nobody any more.
 *
 * Reading does not hold it up either: SNAPSHOT starts a pool job that reads
 * and checks the file into a cache of its own (eng_snapfile.h), and the
 * main thread answers every SNAPSHOT that waited for it when it comes back.
 * A load that checks the snapshot then takes that cache as the one it
 * builds: a heap tuple that proves a row makes its entry live
 * (eng_cache_revive), nothing is copied or rebuilt.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "eng_load.h"
#include "eng_log.h"
#include "eng_pass.h"
#include "eng_snapfile.h"
#include "eng_snapshot.h"
#include "mcc_grow.h"

/* A snapshot being encoded in the pool. */
typedef struct eng_snap_job
{
	eng_job		job;			/* first */
	eng_gallery *gallery;
	eng_cache  *cache;			/* pinned */
	eng_snap_ident ident;
	uint64_t	scan_lsn;
	int64_t		written_at;
	uint8_t    *buf;
	size_t		len;
	mcc_error	err;
	mcc_status	st;
} eng_snap_job;

/* A file a detached thread writes. */
typedef struct snap_writer
{
	char		path[4096];
	char		name[64];
	uint8_t    *buf;
	size_t		len;
	atomic_int *writing;		/* the gallery's snap_writing */
} snap_writer;

/* A SNAPSHOT waiting for its gallery's file to be read. */
typedef struct snap_waiter
{
	uint64_t	conn_id;
	uint64_t	request_id;
	uint32_t	profile_id;
} snap_waiter;

/* A snapshot file being read and checked in the pool. */
typedef struct eng_snap_read
{
	eng_job		job;			/* first */
	eng_gallery *gallery;
	char		path[4096];
	eng_snap_ident want;		/* profile 0: any */
	int			threads;		/* to read on (the pool's count: idle at a restart) */
	eng_snap   *snap;			/* the result, or NULL */
	bool		missing;
	bool		cancelled;		/* EVICT removed the file meanwhile */
	double		seconds;
	mcc_error	err;
	snap_waiter *waiters;
	uint32_t	n_waiters;
	uint32_t	cap_waiters;
} eng_snap_read;

static atomic_int writers_running = 0;

static const char *
gname(const mcc_gallery_id *id, char *buf, size_t size)
{
	snprintf(buf, size, "%u/%u", id->db_oid, id->rel_oid);
	return buf;
}

/* The snapshot file of a relation. */
static bool
snap_path(const eng_server *s, uint32_t db, uint32_t rel, char *buf, size_t size)
{
	return snprintf(buf, size, "%s/%u_%u.snap", s->cfg.snapshot_dir, db, rel) < (int) size;
}

static eng_snap_ident
ident_of(const eng_server *s, const mcc_gallery_id *id, uint32_t profile_id)
{
	eng_snap_ident x = {.db_oid = id->db_oid, .rel_oid = id->rel_oid,
	.signature = id->signature, .system_id = s->cfg.system_id, .profile_id = profile_id};

	return x;
}

bool
eng_snapshot_init(eng_server *s)
{
	if (s->cfg.snapshot_dir == NULL)
		return true;
	if (mkdir(s->cfg.snapshot_dir, 0700) != 0 && errno != EEXIST)
	{
		eng_log(ENG_LOG_WARNING, "could not create the cache snapshot directory \"%s\": %s; "
				"snapshots are off", s->cfg.snapshot_dir, strerror(errno));
		s->cfg.snapshot_dir = NULL;
	}
	return true;
}

static void
reply_info(eng_conn *c, uint64_t request_id, const eng_snap *snap)
{
	size_t		f = eng_frame_begin(&c->out, MCC_MSG_SNAPSHOT_INFO, request_id);

	eng_buf_u32(&c->out, snap != NULL);
	eng_buf_u32(&c->out, snap ? snap->id.profile_id : 0);
	eng_buf_u64(&c->out, snap ? snap->n_rows : 0);
	eng_frame_end(&c->out, f);
}

/* Reply SNAPSHOT_INFO to a waiter still connected. */
static void
reply_waiter(eng_server *s, const snap_waiter *w, const eng_snap *snap)
{
	eng_conn   *c = eng_conn_by_id(s, w->conn_id);

	if (c == NULL)
		return;
	if (snap != NULL && w->profile_id != 0 && snap->id.profile_id != w->profile_id)
		snap = NULL;
	reply_info(c, w->request_id, snap);
}

/* Add a SNAPSHOT to those a read answers; false if out of memory. */
static bool
add_waiter(eng_snap_read *r, const eng_conn *c, uint64_t request_id, uint32_t profile_id)
{
	snap_waiter *w = mcc_grow(r->waiters, r->n_waiters, &r->cap_waiters, sizeof(*w), 4);

	if (w == NULL)
		return false;
	r->waiters = w;
	r->waiters[r->n_waiters++] = (snap_waiter) {c->id, request_id, profile_id};
	return true;
}

static void
read_run(eng_job *job, uint32_t part, void *scratch)
{
	eng_snap_read *r = (eng_snap_read *) job;
	int64_t		t0 = eng_now_usec();

	mcc_error_clear(&r->err);
	(void) eng_snap_read_file(r->path, &r->want, r->threads, &r->snap, &r->missing, &r->err);
	r->seconds = (double) (eng_now_usec() - t0) / 1e6;
}

static void
read_free(eng_snap_read *r)
{
	eng_snap_free(r->snap);
	free(r->waiters);
	free(r);
}

void
eng_snapshot_info(eng_server *s, eng_conn *c, uint64_t request_id,
				  const mcc_gallery_id *id, uint32_t profile_id)
{
	eng_gallery *g;
	eng_snap_read *r;

	if (s->cfg.snapshot_dir == NULL || (g = eng_gallery_get(s, id, true)) == NULL)
	{
		reply_info(c, request_id, NULL);
		return;
	}
	if (g->snap != NULL && (profile_id == 0 || g->snap->id.profile_id == profile_id))
	{
		reply_info(c, request_id, g->snap);
		return;
	}
	if (g->snap_reading != NULL)
	{
		/* the read under way answers it too */
		if (!add_waiter(g->snap_reading, c, request_id, profile_id))
			reply_info(c, request_id, NULL);
		return;
	}
	eng_snap_free(g->snap);
	g->snap = NULL;
	/* one writer at a time: a file being replaced is read after */
	if (atomic_load(&g->snap_writing) || g->snapshotting || (r = calloc(1, sizeof(*r))) == NULL)
	{
		reply_info(c, request_id, NULL);
		return;
	}
	if (!snap_path(s, id->db_oid, id->rel_oid, r->path, sizeof(r->path)) ||
		!add_waiter(r, c, request_id, profile_id))
	{
		read_free(r);
		reply_info(c, request_id, NULL);
		return;
	}
	r->job.run = read_run;
	r->job.tag = ENG_JOB_SNAPSHOT_READ;
	r->job.n_parts = 1;
	r->gallery = g;
	r->want = ident_of(s, id, 0);
	r->threads = eng_pool_threads(s->pool);
	g->snap_reading = r;
	eng_server_submit(s, s->pool, &r->job);
}

void
eng_snapshot_read_done(eng_server *s, eng_job *job)
{
	eng_snap_read *r = (eng_snap_read *) job;
	eng_gallery *g = r->gallery;
	char		name[64];

	g->snap_reading = NULL;
	gname(&g->id, name, sizeof(name));
	if (r->cancelled)
	{
		eng_snap_free(r->snap);
		r->snap = NULL;
	}
	else if (r->snap == NULL && !r->missing)
	{
		eng_log(ENG_LOG_INFO, "gallery %s: cache snapshot \"%s\" ignored and removed: %s",
				name, r->path, r->err.message);
		unlink(r->path);
	}
	else if (r->snap != NULL)
		eng_log(ENG_LOG_INFO, "gallery %s: cache snapshot \"%s\" read: %llu rows (%.1f MB) "
				"in %.2f s, to check against the table (arrays and checksum %.2f s on %d "
				"thread(s), cache rebuilt %.2f s, tuple id index %.2f s)", name, r->path,
				(unsigned long long) r->snap->n_rows, (double) r->snap->len / 1048576.0,
				r->seconds, r->snap->io_s, r->snap->threads, r->snap->rebuild_s,
				r->snap->index_s);
	eng_snap_free(g->snap);
	g->snap = r->snap;
	r->snap = NULL;
	for (uint32_t i = 0; i < r->n_waiters; i++)
		reply_waiter(s, &r->waiters[i], g->snap);
	read_free(r);
}

void
eng_snapshot_due(eng_server *s, eng_gallery *g, int64_t delay_usec)
{
	int64_t		due = eng_now_usec() + delay_usec;

	if (s->cfg.snapshot_dir == NULL)
		return;
	if (!g->snap_dirty || due < g->snap_due)
		g->snap_due = due;
	g->snap_dirty = true;
}

int64_t
eng_snapshot_next_due(const eng_server *s)
{
	int64_t		d = INT64_MAX;

	for (uint32_t i = 0; i < s->n_gal; i++)
	{
		const eng_gallery *g = s->gal[i];

		if (g->snap_dirty && g->cache != NULL && g->snap_due < d)
			d = g->snap_due;
	}
	return d;
}

static void
encode_run(eng_job *job, uint32_t part, void *scratch)
{
	eng_snap_job *j = (eng_snap_job *) job;

	mcc_error_clear(&j->err);
	j->st = eng_snap_encode(j->cache, &j->ident, j->scan_lsn, j->written_at,
							&j->buf, &j->len, &j->err);
}

void
eng_snapshot_step(eng_server *s)
{
	int64_t		now = eng_now_usec();

	for (uint32_t i = 0; i < s->n_gal; i++)
	{
		eng_gallery *g = s->gal[i];
		eng_snap_job *j;

		if (!g->snap_dirty || g->snap_due > now || g->cache == NULL ||
			g->snapshotting != NULL || atomic_load(&g->snap_writing))
			continue;
		j = calloc(1, sizeof(*j));
		if (j == NULL)
			continue;
		j->job.run = encode_run;
		j->job.tag = ENG_JOB_SNAPSHOT;
		j->job.n_parts = 1;
		j->gallery = g;
		j->cache = g->cache;
		j->ident = ident_of(s, &g->id, (uint32_t) g->cache->profile->id);
		j->scan_lsn = g->scan_lsn;
		j->written_at = (int64_t) time(NULL) * 1000000;
		g->cache->pins++;
		g->snapshotting = j;
		g->snap_dirty = false;
		atomic_store(&g->snap_writing, 1);
		eng_server_submit(s, s->pool, &j->job);
	}
}

static void *
writer_main(void *arg)
{
	snap_writer *w = arg;
	mcc_error	err;

	mcc_error_clear(&err);
	if (eng_snap_write_file(w->path, w->buf, w->len, &err) == MCC_OK)
		eng_log(ENG_LOG_INFO, "gallery %s: cache snapshot written (%.1f MB)", w->name,
				(double) w->len / 1048576.0);
	else
		eng_log(ENG_LOG_WARNING, "gallery %s: cache snapshot not written: %s", w->name,
				err.message);
	free(w->buf);
	atomic_store(w->writing, 0);
	atomic_fetch_sub(&writers_running, 1);
	free(w);
	return NULL;
}

void
eng_snapshot_job_done(eng_server *s, eng_job *job)
{
	eng_snap_job *j = (eng_snap_job *) job;
	eng_gallery *g = j->gallery;
	snap_writer *w = NULL;
	pthread_t	th;
	pthread_attr_t attr;

	g->snapshotting = NULL;
	eng_gallery_unpin(g, j->cache);
	if (j->st == MCC_OK)
		w = calloc(1, sizeof(*w));
	if (w != NULL && snap_path(s, g->id.db_oid, g->id.rel_oid, w->path, sizeof(w->path)))
	{
		gname(&g->id, w->name, sizeof(w->name));
		w->buf = j->buf;
		w->len = j->len;
		w->writing = &g->snap_writing;
		atomic_fetch_add(&writers_running, 1);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&th, &attr, writer_main, w) == 0)
		{
			pthread_attr_destroy(&attr);
			free(j);
			return;
		}
		pthread_attr_destroy(&attr);
		atomic_fetch_sub(&writers_running, 1);
	}
	if (j->st != MCC_OK)
		eng_log(ENG_LOG_WARNING, "gallery %u/%u: cache snapshot not encoded: %s",
				g->id.db_oid, g->id.rel_oid, j->err.message);
	free(w);
	free(j->buf);
	atomic_store(&g->snap_writing, 0);
	g->snap_dirty = true;		/* try again later */
	g->snap_due = eng_now_usec() + ENG_SNAP_SETTLE_DELAY_USEC;
	free(j);
}

void
eng_snapshot_forget(eng_gallery *g)
{
	eng_snap_free(g->snap);
	g->snap = NULL;
	if (g->snap_reading != NULL)
	{
		/* the pool stopped with the read queued or done: nobody hands it back */
		read_free(g->snap_reading);
		g->snap_reading = NULL;
	}
	if (g->snapshotting != NULL)
	{
		/* the pool stopped with the encoding queued or done: nobody hands it back */
		free(g->snapshotting->buf);
		free(g->snapshotting);
		g->snapshotting = NULL;
	}
}

void
eng_snapshot_shutdown(eng_server *s)
{
	bool		busy = true;

	if (s->cfg.snapshot_dir == NULL)
		return;
	/* encodings under way come back, writers finish (bounded: 60 s) */
	for (int t = 0; busy && t < 6000; t++)
	{
		busy = atomic_load(&writers_running) > 0;
		for (uint32_t i = 0; i < s->n_gal; i++)
			if (s->gal[i]->snapshotting != NULL)
				busy = true;
		if (busy)
			eng_server_pump(s, 10);
		if (busy && atomic_load(&writers_running) > 0)
			usleep(10000);
	}
	for (uint32_t i = 0; i < s->n_gal; i++)
	{
		eng_gallery *g = s->gal[i];
		eng_snap_ident id;
		uint8_t    *buf;
		size_t		len;
		char		path[4096];
		char		name[64];
		mcc_error	err;

		if (!g->snap_dirty || g->cache == NULL || g->snapshotting != NULL ||
			!snap_path(s, g->id.db_oid, g->id.rel_oid, path, sizeof(path)))
			continue;
		id = ident_of(s, &g->id, (uint32_t) g->cache->profile->id);
		mcc_error_clear(&err);
		if (eng_snap_encode(g->cache, &id, g->scan_lsn, (int64_t) time(NULL) * 1000000,
							&buf, &len, &err) == MCC_OK)
		{
			if (eng_snap_write_file(path, buf, len, &err) == MCC_OK)
				eng_log(ENG_LOG_INFO, "gallery %s: cache snapshot written at shutdown (%zu bytes)",
						gname(&g->id, name, sizeof(name)), len);
			free(buf);
		}
		if (err.status != MCC_OK)
			eng_log(ENG_LOG_WARNING, "gallery %s: cache snapshot not written at shutdown: %s",
					gname(&g->id, name, sizeof(name)), err.message);
		g->snap_dirty = false;
	}
}

void
eng_snapshot_remove(eng_server *s, const mcc_gallery_id *id)
{
	DIR		   *d;
	struct dirent *de;

	if (s->cfg.snapshot_dir == NULL)
		return;
	for (uint32_t i = 0; i < s->n_gal; i++)
	{
		eng_gallery *g = s->gal[i];

		if ((id->db_oid == 0 || g->id.db_oid == id->db_oid) &&
			(id->rel_oid == 0 || g->id.rel_oid == id->rel_oid))
		{
			eng_snap_free(g->snap);
			g->snap = NULL;
			g->snap_dirty = false;
			if (g->snap_reading != NULL)
				g->snap_reading->cancelled = true;
		}
	}
	d = opendir(s->cfg.snapshot_dir);
	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL)
	{
		unsigned	db;
		unsigned	rel;
		char		tail[8];
		char		path[4096];

		if (sscanf(de->d_name, "%u_%u.%7s", &db, &rel, tail) != 3 || strcmp(tail, "snap") != 0)
			continue;
		if ((id->db_oid == 0 || db == id->db_oid) && (id->rel_oid == 0 || rel == id->rel_oid) &&
			snap_path(s, db, rel, path, sizeof(path)))
			unlink(path);
	}
	closedir(d);
}

/* Remember a tid the snapshot did not prove. */
static void
want(eng_load *l, uint64_t tid)
{
	uint64_t   *p = mcc_grow(l->want, l->n_want, &l->cap_want, sizeof(*p), 1024);

	if (p == NULL)
	{
		mcc_error	err;

		mcc_error_set(&err, MCC_ERR_MEMORY, "out of memory for the tuples to read");
		l->perr = MCC_PERR_MEMORY;
		l->err = err;
		return;
	}
	l->want = p;
	l->want[l->n_want++] = tid;
}

void
eng_snapshot_head(eng_server *s, eng_load *l, uint64_t tid, uint64_t xmin,
				  uint64_t page_lsn, uint64_t insert_xid, uint64_t delete_xid)
{
	uint32_t	i;

	if (l->build == NULL || l->snap == NULL || l->perr != 0)
		return;
	i = eng_snap_find(l->snap, tid);
	if (i == ENG_NONE ||
		!eng_snap_same_version(xmin, page_lsn, l->build->entries[i].xmin, l->snap->scan_lsn,
							   l->next_xid))
	{
		want(l, tid);
		return;
	}
	/* the entry keeps the snapshot's xmin: the heap's is equal, or frozen since */
	l->snap->used[i] = 1;
	eng_cache_revive(l->build, i, insert_xid, delete_xid, ENG_E_LOAD_INS | ENG_E_LOAD_DEL);
	l->rows++;
	l->from_snap++;
}

bool
eng_snapshot_take(eng_server *s, eng_load *l)
{
	eng_gallery *g = l->gallery;
	eng_snap   *snap = g->snap;
	char		name[64];

	if (snap == NULL || snap->cache_taken || l->profile == NULL || l->perr != 0 ||
		snap->id.profile_id != (uint32_t) l->profile->id)
		return false;
	g->snap = NULL;
	if (!eng_load_adopt(s, l, snap->cache))
	{
		eng_log(ENG_LOG_INFO, "gallery %s: cache snapshot not used: no room for its %.1f MB "
				"under the memory limit", gname(&g->id, name, sizeof(name)),
				(double) snap->cache->bytes / 1048576.0);
		eng_snap_free(snap);
		return false;
	}
	snap->cache_taken = true;	/* the load's now; its index serves until WANT */
	l->snap = snap;
	l->snap_rows = snap->n_rows;
	/*
	 * Its GPU copy is built while the check runs (the heap scan on the
	 * backend, the revivals here): nothing on the device serves before the
	 * check has ended and the mirror has been brought up to date with the
	 * cache it left (matcher-service.md, "Cache snapshots").
	 */
	eng_pass_start_gpu_prebuild(s, g, l->build);
	return true;
}

/* Reply WANT with the tuples the snapshot did not prove; the snapshot is done with. */
static void
send_want(eng_conn *c, eng_load *l, uint64_t request_id)
{
	size_t		f;

	f = eng_frame_begin(&c->out, MCC_MSG_WANT, request_id);
	eng_buf_u32(&c->out, l->n_want);
	for (uint32_t i = 0; i < l->n_want; i++)
		eng_buf_u64(&c->out, l->want[i]);
	eng_frame_end(&c->out, f);
	eng_snap_free(l->snap);
	l->snap = NULL;
	free(l->want);
	l->want = NULL;
	l->n_want = l->cap_want = 0;
}

void
eng_snapshot_heads_end(eng_server *s, eng_conn *c, uint64_t request_id)
{
	eng_load   *l = c->load;

	if (l->snap == NULL || l->build == NULL || l->perr != 0)
	{
		if (l->perr != 0)
			eng_reply_error_by_id(s, c->id, request_id, l->perr, &l->err);
		else
			eng_reply_error(c, request_id, MCC_PERR_NOT_LOADED, 0,
							"no cache snapshot to check: load in full");
		eng_load_abort(s, c);
		return;
	}
	if ((uint64_t) l->n_want * 8 + 4 > MCC_PROTO_MAX_FRAME)
	{
		eng_reply_error(c, request_id, MCC_PERR_TOO_LARGE, 0,
						"%u tuples to read: load in full", l->n_want);
		eng_load_abort(s, c);
		return;
	}
	if (l->gallery->gpu_prebuild != NULL && l->gallery->gpu_prebuild->cache == l->build)
	{
		l->want_held = true;
		l->want_rid = request_id;
		return;
	}
	send_want(c, l, request_id);
}

void
eng_snapshot_prebuilt(eng_server *s, eng_gallery *g)
{
	eng_load   *next;

	for (eng_load *l = g->loads; l; l = next)
	{
		eng_conn   *c = eng_conn_by_id(s, l->conn_id);

		next = l->next;
		if (!l->want_held)
			continue;
		l->want_held = false;
		if (c == NULL || c->load != l)
			continue;
		/* failed meanwhile (its cache dropped): the reply WANT would have been */
		if (l->perr != 0 || l->build == NULL)
		{
			if (l->perr != 0)
				eng_reply_error_by_id(s, c->id, l->want_rid, l->perr, &l->err);
			else
				eng_reply_error(c, l->want_rid, MCC_PERR_NOT_LOADED, 0,
								"no cache snapshot to check: load in full");
			eng_load_abort(s, c);
			continue;
		}
		send_want(c, l, l->want_rid);
	}
}

