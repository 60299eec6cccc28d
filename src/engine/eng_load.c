/*
 * eng_load.c: full loads of a gallery cache (LOAD_BEGIN, LOAD_ROWS,
 * LOAD_END, and a connection's load abandoned): the cache built aside,
 * room made by evicting other galleries' caches by priority and use, then
 * swapped in, and the generations that arrived meanwhile applied on top
 * (docs/matcher-engine.md). Split from eng_gallery.c, which serves the
 * caches once loaded.
 */
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eng_gallery.h"
#include "eng_load.h"
#include "eng_log.h"
#include "eng_server.h"
#include "eng_snapfile.h"
#include "eng_snapshot.h"
#include "mcc_hash.h"

/*
 * Free what load l built, unless a job still reads it (the GPU copy of a
 * snapshot being checked: eng_pass_start_gpu_prebuild), which then frees it.
 */
static void
drop_build(eng_load *l)
{
	if (l->build != NULL && l->build->pins > 0)
		l->build->orphaned = true;
	else
		eng_cache_free(l->build);
	l->build = NULL;
}

/* Free a load and unlink it from its gallery and connection. */
void
eng_load_free(eng_conn *c, eng_load *l)
{
	eng_gallery *g = l->gallery;

	for (eng_load **pp = &g->loads; *pp; pp = &(*pp)->next)
		if (*pp == l)
		{
			*pp = l->next;
			break;
		}
	drop_build(l);
	eng_snap_free(l->snap);
	free(l->want);
	if (c)
		c->load = NULL;
	free(l);
}

/* Record a load's first failure and free what it built. */
void
eng_load_fail(eng_load *l, int perr, const mcc_error *err)
{
	if (l->perr != 0)
		return;
	l->perr = perr;
	l->err = *err;
	drop_build(l);
}

/*
 * May the gallery's current cache give way to its load? When the client
 * says so (the cache needs a reload: a second copy would only hold memory
 * against the limit), or when the engine knows it cannot serve anyway.
 */
static bool
own_cache_may_go(const eng_load *l)
{
	const eng_cache *c = l->gallery->cache;

	return c != NULL && ((l->flags & MCC_LOAD_REPLACE) || c->reload_at != 0 ||
						 c->profile != l->profile);
}

/*
 * May load l evict gallery o's cache? Galleries of lower priority, and
 * those of equal priority not used since the load began (least recently
 * used first): nobody keeps memory against an equal newcomer for good, and
 * the DBA's priorities (mcc_gallery_set_priority) decide who stays.
 */
static bool
may_evict(const eng_load *l, const eng_gallery *o)
{
	const eng_gallery *g = l->gallery;

	if (o == g || o->cache == NULL)
		return false;
	return o->priority < g->priority ||
		(o->priority == g->priority && o->last_used <= l->t_start);
}

/* The cache load l may evict first (lowest priority, then least recently used), or NULL. */
static eng_gallery *
eviction_victim(eng_server *s, const eng_load *l)
{
	eng_gallery *v = NULL;

	for (uint32_t i = 0; i < s->n_gal; i++)
	{
		eng_gallery *o = s->gal[i];

		if (!may_evict(l, o))
			continue;
		if (v == NULL || o->priority < v->priority ||
			(o->priority == v->priority && o->last_used < v->last_used))
			v = o;
	}
	return v;
}

/* Drop a cache whose memory a load needs now (its readers may finish first). */
static void
drop_for_room(eng_server *s, eng_gallery *o, const eng_load *l)
{
	char		for_whom[64];

	snprintf(for_whom, sizeof(for_whom), "%s", eng_gallery_name(l->gallery));
	eng_cache_uncharge(o->cache);
	if (o == l->gallery)
		eng_log(ENG_LOG_INFO, "gallery %s: current cache of %.1f MB dropped: its reload needs the room",
				eng_gallery_name(o), (double) o->cache->bytes / 1048576.0);
	else
		eng_log(ENG_LOG_INFO, "gallery %s: cache of %.1f MB (priority %d) evicted to make room "
				"for gallery %s (priority %d)", eng_gallery_name(o), (double) o->cache->bytes / 1048576.0,
				(int) o->priority, for_whom, (int) l->gallery->priority);
	eng_gallery_drop_cache(s, o, o == l->gallery ?
						   "the gallery is being reloaded" :
						   "the cache was evicted to make room for another gallery");
}

/*
 * Free `need` bytes of the cache budget for load l: the gallery's own
 * current cache if it may go, then caches load l may evict. Nothing is
 * dropped unless that makes enough room; false if it cannot (or if the
 * budget has room already, and a failure was the system's memory).
 */
static bool
make_room(eng_server *s, eng_load *l, uint64_t need)
{
	eng_budget *b = &s->budget;
	eng_gallery *g = l->gallery;
	uint64_t	room;
	uint64_t	evictable = 0;
	eng_gallery *v;

	if (b->limit == 0 || need > b->limit)
		return false;
	room = b->used < b->limit ? b->limit - b->used : 0;
	if (room >= need)
		return false;
	if (own_cache_may_go(l) && g->cache->budget != NULL)
		evictable += g->cache->bytes;
	for (uint32_t i = 0; i < s->n_gal; i++)
		if (may_evict(l, s->gal[i]) && s->gal[i]->cache->budget != NULL)
			evictable += s->gal[i]->cache->bytes;
	if (room + evictable < need)
		return false;			/* dropping them would serve nobody */
	if (own_cache_may_go(l) && g->cache->budget != NULL)
		drop_for_room(s, g, l);
	while (b->limit - (b->used < b->limit ? b->used : b->limit) < need &&
		   (v = eviction_victim(s, l)) != NULL)
	{
		drop_for_room(s, v, l);
		s->evictions++;
	}
	return b->used <= b->limit && b->limit - b->used >= need;
}

/* A new cache for load l, making room in the budget if it must. */
static eng_cache *
build_cache(eng_server *s, eng_load *l, uint32_t cap_tpl, uint32_t cap_cyl, mcc_error *err)
{
	eng_cache  *c = eng_cache_new(l->profile, &s->budget, cap_tpl, cap_cyl, err);

	if (c == NULL && err->status == MCC_ERR_MEMORY &&
		make_room(s, l, eng_cache_new_bytes(l->profile, cap_tpl, cap_cyl)))
	{
		mcc_error_clear(err);
		c = eng_cache_new(l->profile, &s->budget, cap_tpl, cap_cyl, err);
	}
	if (c != NULL)
		c->copy_threads = s->cfg.threads;	/* a growth copies on every core */
	return c;
}

bool
eng_load_adopt(eng_server *s, eng_load *l, eng_cache *c)
{
	mcc_error	err;

	eng_cache_free(l->build);
	l->build = NULL;
	if (eng_budget_charge(&s->budget, c->bytes) ||
		(make_room(s, l, c->bytes) && eng_budget_charge(&s->budget, c->bytes)))
	{
		eng_cache_adopt(c, &s->budget, c->bytes);
		c->copy_threads = s->cfg.threads;
		l->build = c;
		return true;
	}
	mcc_error_clear(&err);
	l->build = build_cache(s, l, 1024, 1024 * 36, &err);
	if (l->build == NULL)
		eng_load_fail(l, err.status == MCC_ERR_MEMORY ? MCC_PERR_MEMORY : MCC_PERR_INTERNAL, &err);
	return false;
}

eng_load *
eng_load_begin(eng_server *s, eng_conn *c, uint64_t request_id,
			   const mcc_gallery_id *id, uint64_t gen, uint32_t profile_id,
			   uint64_t expected_rows, int32_t priority, uint32_t flags)
{
	eng_gallery *g;
	eng_load   *l;
	const mcc_profile *p = profile_id <= 255 ? mcc_profile_by_id((int) profile_id) : NULL;
	mcc_error	err;

	if (c->load)
	{
		eng_log(ENG_LOG_DEBUG, "connection %llu: unfinished load abandoned",
				(unsigned long long) c->id);
		eng_load_abort(s, c);
	}
	/* a new signature of the same relation replaces the old caches */
	for (uint32_t i = 0; i < s->n_gal; i++)
	{
		eng_gallery *o = s->gal[i];

		if (o->id.db_oid == id->db_oid && o->id.rel_oid == id->rel_oid &&
			o->id.signature != id->signature && o->cache != NULL)
			eng_gallery_drop_cache(s, o, "the relation's signature changed");
	}
	g = eng_gallery_get(s, id, true);
	l = calloc(1, sizeof(*l));
	if (g == NULL || l == NULL)
	{
		free(l);
		return NULL;
	}
	l->gallery = g;
	l->conn_id = c->id;
	l->request_id = request_id;
	l->gen = gen;
	l->profile = p;
	l->flags = flags;
	l->expected = expected_rows;
	l->t_start = eng_now_usec();
	l->busy_start = s->busy_usec;
	l->wait_start = s->load_wait_usec;
	g->priority = priority;
	l->next = g->loads;
	g->loads = l;
	c->load = l;
	mcc_error_clear(&err);
	/* a joinable load may take its first row's profile, on whatever connection it comes */
	if (profile_id == 0 && (flags & MCC_LOAD_JOIN))
	{
		l->profile = NULL;
		return l;
	}
	if (p == NULL)
	{
		mcc_error_set(&err, MCC_ERR_VERSION, "unknown template profile id %u", profile_id);
		eng_load_fail(l, MCC_PERR_DATA, &err);
		return l;
	}
	eng_load_build_first(s, l, p);
	return l;
}

void
eng_load_build_first(eng_server *s, eng_load *l, const mcc_profile *p)
{
	uint64_t	expected_rows = l->expected;
	mcc_error	err;

	mcc_error_clear(&err);
	l->profile = p;
	/*
	 * Size for the hint (36 cylinders per template, a little above what real
	 * prints give), unless that does not fit: then grow as rows come.
	 */
	if (expected_rows > 0 && expected_rows <= (UINT32_MAX - 1) / 36)
		l->build = build_cache(s, l, (uint32_t) expected_rows,
							   (uint32_t) (expected_rows * 36), &err);
	if (l->build == NULL)
	{
		mcc_error_clear(&err);
		l->build = build_cache(s, l, 1024, 1024 * 36, &err);
	}
	if (l->build == NULL)
		eng_load_fail(l, err.status == MCC_ERR_MEMORY ? MCC_PERR_MEMORY : MCC_PERR_INTERNAL, &err);
}

void
eng_load_row(eng_server *s, eng_load *l, int64_t key, uint64_t insert_xid,
			 uint64_t delete_xid, const uint8_t *tpl, uint32_t len,
			 uint64_t tid, uint64_t xmin, bool checked)
{
	mcc_template_view v;
	mcc_error	err;
	mcc_status	st;

	if (l->build == NULL)
		return;
	mcc_error_clear(&err);
	/* checked: a template the engine cached before (a snapshot's, CRC-checked) */
	st = checked ? mcc_template_open_header(tpl, len, &v, &err) :
		mcc_template_open(tpl, len, &v, &err);
	if (st == MCC_OK)
		st = eng_cache_append(l->build, key, mcc_template_hash(tpl, len), insert_xid,
							  delete_xid, ENG_E_LOAD_INS | ENG_E_LOAD_DEL, &v, NULL, &err);
	/* growth doubles the capacity: room for as much again (more if that was short) */
	for (uint64_t need = l->build->bytes, tries = 0;
		 st == MCC_ERR_MEMORY && tries < 3 && make_room(s, l, need); need *= 2, tries++)
	{
		mcc_error_clear(&err);
		st = eng_cache_append(l->build, key, mcc_template_hash(tpl, len), insert_xid,
							  delete_xid, ENG_E_LOAD_INS | ENG_E_LOAD_DEL, &v, NULL, &err);
	}
	if (st == MCC_OK)
	{
		eng_entry  *e = &l->build->entries[l->build->soa.n_tpl - 1];

		e->tid = tid;
		e->xmin = xmin;
		l->rows++;
		return;
	}
	if (st != MCC_ERR_MEMORY)
		mcc_error_detail(&err, "The row with key %lld cannot be cached.", (long long) key);
	eng_load_fail(l, st == MCC_ERR_MEMORY ? MCC_PERR_MEMORY : MCC_PERR_DATA, &err);
}

/*
 * Room for the rows the load still expects as soon as they would not fit:
 * LOAD_BEGIN's estimate (the table's reltuples: often a little short) and
 * 2 % more, at this load's cylinders and side bytes per row so far and a
 * margin (below). The cache grows once, early and to that size (while a copy is
 * small), rather than by half again near the end, when a growth copies the
 * whole cache on the main thread (eng_soa_regrow: at 200,000 rows three
 * quarters of the engine's load CPU on the dev VM when the estimate was 25
 * rows short). Best effort: the frame's own reserve follows. Records that
 * room in l (want_*) for the prefault.
 */
static void
reserve_ahead(eng_load *l, const mcc_template_view *v, uint32_t n)
{
	eng_cache  *c = l->build;
	uint64_t	rows = (uint64_t) c->soa.n_tpl + n;
	uint64_t	cyl = c->soa.n_cyl;
	uint64_t	side = c->n_side;
	uint64_t	target = l->expected + l->expected / 50 + 16;
	uint64_t	more;
	double		margin;
	mcc_error	err;

	if (l->expected == 0 || target <= rows)
		return;
	for (uint32_t i = 0; i < n; i++)
	{
		cyl += (uint64_t) v[i].n_cyl;
		side += eng_side_bytes(&v[i]);
	}
	more = target - c->soa.n_tpl;

	/*
	 * Above the average so far by 2 % and, the first time, by a share that
	 * shrinks with the rows it was measured on (1 / sqrt(rows): 10 % on 100
	 * rows, 3 % on 10,000; 10 % at most); 10 % once the room was made (the
	 * average drifted). A growth with rows in the cache copies them and faults the
	 * new arrays in again: 32 s at 100 M rows on 64 cores (docs/benchmarks.md,
	 * "Fourth run"), when a first frame's average was 2 % short.
	 */
	margin = l->want_rows != 0 ? 1.10 : fmin(1.10, 1.02 + 1.0 / sqrt((double) rows));
	/* room enough at the average so far: nothing to grow */
	if ((uint64_t) c->soa.n_cyl + (uint64_t) ((double) cyl / rows * more) <= c->soa.cap_cyl &&
		target <= c->soa.cap_tpl && target <= c->cap_entries &&
		c->n_side + (uint64_t) ((double) side / rows * more) <= c->cap_side)
		margin = 1.0;
	cyl = (uint64_t) ((double) cyl / rows * more);
	side = (uint64_t) ((double) side / rows * more);
	if (l->want_rows == 0 || margin > 1.0)
	{
		/* the prefault's: what the rows will fill at the average, not the margin */
		l->want_rows = target;
		l->want_cyl = c->soa.n_cyl + cyl;
		l->want_side = c->n_side + side;
	}
	/* each exact growth copies the rows so far: a little variation must cost none */
	if (margin > 1.0)
		(void) eng_cache_reserve_exact(c, more, (uint64_t) (cyl * margin), (uint64_t) (side * margin), &err);
}

/* Threads that fault in a load's new cache ahead of its rows (eng_config.load_prefault). */
static int
prefault_threads(const eng_server *s)
{
	int			n = s->cfg.threads / 4;

	if (s->cfg.load_prefault != 0)
		return s->cfg.load_prefault;
	if (s->cfg.threads < 2)
		return 0;				/* one thread asked for: no others */
	return n < 1 ? 1 : n > 4 ? 4 : n;
}

/*
 * Once the room for the rows the load expects is made (reserve_ahead, at
 * the first frame; again after a growth, which stopped it), fault what the
 * rows will fill of it in on threads of their own, ahead of the rows (eng_prefault.h):
 * the kernel's zeroing of the new memory, the largest part of the
 * engine's load CPU, then runs beside the load threads instead of inside
 * their writes.
 */
void
eng_load_prefault_room(eng_server *s, eng_load *l)
{
	eng_cache  *c = l->build;
	uint64_t	room = (uint64_t) c->soa.cap_cyl + c->cap_side + c->soa.cap_tpl;

	/*
	 * only for the room reserve_ahead made: what the load expects to fill;
	 * not for a snapshot's check, whose cache holds the rows already
	 */
	if (l->want_rows == 0 || (l->flags & MCC_LOAD_SNAPSHOT) || l->prefault_for == room ||
		prefault_threads(s) < 1)
		return;
	l->prefault_for = room;
	eng_cache_prefault(c, prefault_threads(s), l->want_rows, l->want_cyl, l->want_side);
}

/*
 * Say when the cache being loaded grew with rows in it: each such growth
 * copies them on the main thread's watch (at 100 M rows, gigabytes), which
 * the first frame's reservation for the whole estimate is there to avoid.
 */
static void
note_growth(const eng_load *l, uint32_t cap_tpl_before, uint32_t cap_cyl_before, int64_t t0)
{
	const eng_cache *c = l->build;

	if (c == NULL || c->soa.n_tpl == 0 ||
		(c->soa.cap_cyl == cap_cyl_before && c->soa.cap_tpl == cap_tpl_before))
		return;
	eng_log(ENG_LOG_INFO, "gallery %s: the cache being loaded grew to room for %u rows and %u "
			"cylinders (expected %llu rows): %u rows copied in %.2f s",
			eng_gallery_name(l->gallery), c->soa.cap_tpl, c->soa.cap_cyl,
			(unsigned long long) l->expected, c->soa.n_tpl,
			(double) (eng_now_usec() - t0) / 1e6);
}

mcc_status
eng_load_reserve_rows(eng_server *s, eng_load *l, const mcc_template_view *v, uint32_t n,
			 eng_bulk_at *at, mcc_error *err)
{
	mcc_status	st;
	uint32_t	cap_tpl = l->build->soa.cap_tpl;
	uint32_t	cap_cyl = l->build->soa.cap_cyl;
	int64_t		t0 = eng_now_usec();

	reserve_ahead(l, v, n);
	st = eng_cache_bulk_reserve(l->build, n, v, at, true, err);
	/* growth takes half again the capacity: room for as much again (more if that was short) */
	for (uint64_t need = l->build->bytes, tries = 0;
		 st == MCC_ERR_MEMORY && tries < 3 && make_room(s, l, need); need *= 2, tries++)
	{
		mcc_error_clear(err);
		st = eng_cache_bulk_reserve(l->build, n, v, at, true, err);
	}
	note_growth(l, cap_tpl, cap_cyl, t0);
	return st;
}

/*
 * Reply LOADED with a cache's size: its searchable entries (a cache restored
 * from a snapshot keeps the rows no tuple claimed as tombstones).
 */
static void
reply_loaded(eng_conn *c, uint64_t request_id, const eng_cache *cache)
{
	size_t		f = eng_frame_begin(&c->out, MCC_MSG_LOADED, request_id);

	eng_buf_u64(&c->out, eng_cache_searchable(cache));
	eng_buf_u64(&c->out, cache->bytes);
	eng_frame_end(&c->out, f);
}

/*
 * Whether the main thread bounds a load: its own work (frames read,
 * parsed, reserved and linked, and whatever else it served meanwhile)
 * against the load's wall time, and its waits for the load threads.
 */
static void
note_main_thread(const eng_server *s, const eng_load *l, double secs)
{
	double		wait = (double) (s->load_wait_usec - l->wait_start) / 1e6;

	if (s->busy_usec > l->busy_start)	/* the server's loop ran it (not a test's feeding) */
		eng_log(ENG_LOG_INFO, "gallery %s: the load's main thread worked %.2f s of its %.2f s "
				"and waited %.2f s for the load threads; %llu of its %llu frames prepared "
				"while the one before was written", eng_gallery_name(l->gallery),
				(double) (s->busy_usec - l->busy_start) / 1e6 - wait, secs, wait,
				(unsigned long long) l->frames_behind, (unsigned long long) l->frames);
}

void
eng_load_end(eng_server *s, eng_conn *c)
{
	eng_load   *l = c->load;
	eng_gallery *g = l->gallery;
	eng_cache  *old = g->cache;
	double		secs = (double) (eng_now_usec() - l->t_start) / 1e6;
	uint64_t	request_id;
	bool		snap_unchanged;

	if (l->joins_open > 0 && l->perr == 0)
	{
		mcc_error	err;

		mcc_error_set(&err, MCC_ERR_INTERNAL, "LOAD_END came before every joined part ended");
		mcc_error_detail(&err, "%u of %u joined connections had not sent LOAD_JOIN_END.",
						 l->joins_open, l->joins);
		eng_load_fail(l, MCC_PERR_PROTOCOL, &err);
	}
	/* a joinable load that got no row: the default profile, as a client's empty load */
	if (l->perr == 0 && l->profile == NULL)
		eng_load_build_first(s, l, mcc_profile_by_id(MCC_PROFILE_DEFAULT));
	if (l->perr != 0)
	{
		eng_log(ENG_LOG_WARNING, "gallery %s: load failed: %s%s%s", eng_gallery_name(g),
				l->err.message, l->err.detail[0] ? ": " : "", l->err.detail);
		eng_reply_error_by_id(s, c->id, l->request_id, l->perr, &l->err);
		eng_load_free(c, l);
		eng_gallery_advance(s, g);
		return;
	}
	note_main_thread(s, l, secs);
	if (old != NULL && old->applied_gen >= l->gen)
	{
		/* another load or the deltas got further meanwhile: keep what is there */
		eng_log(ENG_LOG_DEBUG, "gallery %s: load of generation %llu superseded",
				eng_gallery_name(g), (unsigned long long) l->gen);
		reply_loaded(c, l->request_id, old);
		eng_load_free(c, l);
		eng_gallery_advance(s, g);
		return;
	}
	/* the room the rows did not fill stays unfaulted: the rest is not needed */
	eng_cache_prefault_stop(l->build);
	g->cache = l->build;
	l->build = NULL;
	g->cache->applied_gen = l->gen;
	g->scan_lsn = (l->flags & MCC_LOAD_IDS) ? l->scan_lsn : 0;
	eng_snap_free(g->snap);		/* a snapshot read for a load that did not use it */
	g->snap = NULL;
	snap_unchanged = (l->flags & MCC_LOAD_SNAPSHOT) && l->from_snap == l->rows &&
		l->from_snap == l->snap_rows;
	if (l->flags & MCC_LOAD_SNAPSHOT)
		eng_log(ENG_LOG_INFO, "gallery %s: %llu of %llu rows taken from the cache snapshot, "
				"%llu read from the table", eng_gallery_name(g), (unsigned long long) l->from_snap,
				(unsigned long long) l->rows, (unsigned long long) (l->rows - l->from_snap));
	if (old != NULL && old->pins == 0)
		eng_cache_free(old);
	g->loaded_at = eng_wall_usec();
	g->load_seconds = secs;
	request_id = l->request_id;
	eng_load_free(c, l);
	/* deltas that came during the load go on top of it */
	eng_gallery_apply_pending(s, g);
	if (g->cache != NULL)
	{
		eng_log(ENG_LOG_INFO,
				"gallery %s loaded: %u entries, %u cylinders, %.1f MB in %.2f s (generation %llu)",
				eng_gallery_name(g), g->cache->soa.n_tpl, g->cache->soa.n_cyl,
				(double) g->cache->bytes / 1048576.0, secs,
				(unsigned long long) g->cache->applied_gen);
		reply_loaded(c, request_id, g->cache);
		/*
		 * A snapshot check that read and dropped nothing leaves the file
		 * valid (its older scan position proves less, never more); else
		 * write soon, though not while the first searches run.
		 */
		if (!snap_unchanged)
			eng_snapshot_due(s, g, ENG_SNAP_LOAD_DELAY_USEC);
	}
	else
		eng_reply_error(c, request_id, MCC_PERR_NOT_LOADED, 0,
						"deltas after the load could not be applied");
	eng_gallery_advance(s, g);
}

void
eng_load_abort(eng_server *s, eng_conn *c)
{
	eng_gallery *g = c->load->gallery;

	eng_load_free(c, c->load);
	eng_gallery_trim_queue(g);
}

