/*
 * eng_handlers.c: one handler per client message of mcc_proto.h, reached
 * through a table by message type that also names the checks the handler
 * needs before it runs (eng_handle_frame).
 *
 * A handler returns false only when the frame is malformed (the caller then
 * closes the connection after an ERROR); requests that are well formed but
 * cannot be served get an ERROR reply and the connection stays.
 */
#include <stdlib.h>
#include <string.h>

#include "eng_cache_settle.h"
#include "eng_conn.h"
#include "eng_gallery.h"
#include "eng_greet.h"
#include "eng_handlers.h"
#include "eng_load.h"
#include "eng_log.h"
#include "eng_server.h"
#include "eng_snapfile.h"
#include "eng_snapshot.h"
#include "mcc_cmp.h"

/* HELLO: check the version, introduce the engine. */
static bool
h_hello(eng_server *s, eng_conn *c, const mcc_frame_hdr *h, eng_rd *r)
{
	uint32_t	version = eng_rd_u32(r);
	uint32_t	pid = eng_rd_u32(r);

	if (!eng_rd_done(r))
		return false;
	c->pid = pid;
	if (version != MCC_PROTO_VERSION)
	{
		eng_reply_error(c, h->request_id, MCC_PERR_PROTOCOL, 0,
						"protocol version %u is not supported (the engine speaks %u)",
						version, MCC_PROTO_VERSION);
		c->closing = true;
		return true;
	}
	eng_log(ENG_LOG_DEBUG, "connection %llu: hello from pid %u",
			(unsigned long long) c->id, pid);
	eng_greet_hello_ok(&c->out, h->request_id, s->incarnation,
					   (uint32_t) eng_pool_threads(s->pool), eng_image_hello_flags(s));
	return true;
}

/* Prepare a probe from a template blob; NULL with err set on failure. */
static mcc_probe *
make_probe(const uint8_t *p, uint32_t len, mcc_error *err)
{
	mcc_template_view v;
	size_t		size = (mcc_probe_size() + 63) & ~(size_t) 63;
	mcc_probe  *q;

	if (mcc_template_open(p, len, &v, err) != MCC_OK)
		return NULL;
	q = aligned_alloc(64, size);
	if (q == NULL)
	{
		mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
		return NULL;
	}
	mcc_probe_init(q, &v);
	return q;
}

/*
 * Prepare SEARCH's n probes (their framing checked) into req, keeping the
 * blobs that the GPU path or a refinement reads. False, with the ERROR
 * replied, if a probe is bad or memory runs out.
 */
static bool
read_probes(eng_server *s, eng_conn *c, uint64_t request_id, eng_rd *r, eng_request *req,
			uint32_t n)
{
	mcc_error	err;

	req->probes = calloc(n ? n : 1, sizeof(mcc_probe *));
	req->tpls = calloc(n ? n : 1, sizeof(uint8_t *));
	req->tpl_lens = calloc(n ? n : 1, sizeof(uint32_t));
	if (req->probes == NULL || req->tpls == NULL || req->tpl_lens == NULL)
	{
		eng_reply_error(c, request_id, MCC_PERR_INTERNAL, MCC_ERR_MEMORY, "out of memory");
		return false;
	}
	mcc_error_clear(&err);
	for (uint32_t i = 0; i < n; i++)
	{
		uint32_t	len;
		const uint8_t *p = eng_rd_bytes(r, &len);

		req->probes[i] = make_probe(p, len, &err);
		/* the GPU path reads the blob itself; a refinement sets it as its probe */
		if (req->probes[i] != NULL && (s->gpu != NULL || req->refine != MCC_LSS) &&
			(req->tpls[i] = malloc(len ? len : 1)) == NULL)
		{
			free(req->probes[i]);
			req->probes[i] = NULL;
			mcc_error_set(&err, MCC_ERR_MEMORY, "out of memory");
		}
		if (req->probes[i] == NULL)
		{
			eng_reply_error(c, request_id, MCC_PERR_DATA, err.status,
							"probe %u: %s", i + 1, err.message);
			return false;
		}
		if (req->tpls[i] != NULL)
		{
			memcpy(req->tpls[i], p, len);
			req->tpl_lens[i] = len;
		}
		req->n_probes++;
	}
	return true;
}

/* SEARCH: queue a request on its gallery (it waits for its generation). */
static bool
h_search(eng_server *s, eng_conn *c, const mcc_frame_hdr *h, eng_rd *r)
{
	mcc_gallery_id id;
	eng_request *req;
	eng_gallery *g;
	size_t		probes_at;
	uint32_t	n;
	uint32_t	refine;
	bool		top;

	eng_rd_gallery(r, &id);
	req = calloc(1, sizeof(*req));
	if (req == NULL)
	{
		eng_reply_error(c, h->request_id, MCC_PERR_INTERNAL, MCC_ERR_MEMORY, "out of memory");
		return true;
	}
	req->need_gen = eng_rd_u64(r);
	req->k = eng_rd_u32(r);
	req->min_score = eng_rd_f32(r);
	req->count_xmin = eng_rd_u64(r);
	req->count_above = eng_rd_u64(r);
	req->count_index = -1;
	refine = eng_rd_u32(r);
	top = (refine & MCC_REFINE_F_TOP) != 0 && (refine & MCC_REFINE_METHOD) != MCC_LSS;
	refine &= ~MCC_REFINE_F_TOP;
	req->final_k = eng_rd_u32(r);
	req->fraction = eng_rd_f64(r);
	req->refine_min = eng_rd_u32(r);
	n = eng_rd_u32(r);
	if (r->bad || (uint64_t) n * 4 > eng_rd_left(r))
	{
		free(req);
		return false;
	}
	/* check the framing of every probe before preparing any */
	probes_at = r->pos;
	for (uint32_t i = 0; i < n; i++)
	{
		uint32_t	len;

		(void) eng_rd_bytes(r, &len);
	}
	if (!eng_rd_done(r))
	{
		free(req);
		return false;
	}
	r->pos = probes_at;
	if (refine >= MCC_NMETHODS ||
		(refine != MCC_LSS && (req->final_k == 0 || !(req->fraction >= 0.0 && req->fraction <= 1.0))))
	{
		eng_reply_error(c, h->request_id, MCC_PERR_DATA, MCC_ERR_VALUE,
						"bad refinement: method %u, k %u, fraction %g",
						refine, req->final_k, req->fraction);
		free(req);
		return true;
	}
	/* without probes there is nothing to rescore: a wait, or a count alone */
	req->refine = n == 0 ? MCC_LSS : (mcc_method) refine;
	req->top = top;
	req->conn_id = c->id;
	req->request_id = h->request_id;
	if (!read_probes(s, c, h->request_id, r, req, n))
	{
		eng_request_free(req);
		return true;
	}
	g = eng_gallery_get(s, &id, false);
	if (g == NULL || g->cache == NULL)
	{
		eng_reply_error(c, h->request_id, MCC_PERR_NOT_LOADED, 0, "gallery is not loaded");
		eng_request_free(req);
		return true;
	}
	req->arrived = eng_now_usec();
	req->deadline = req->arrived + (int64_t) s->cfg.delta_timeout_ms * 1000;
	eng_gallery_submit(s, g, req);
	return true;
}

/* LOAD_BEGIN: start building a cache aside. */
static bool
h_load_begin(eng_server *s, eng_conn *c, const mcc_frame_hdr *h, eng_rd *r)
{
	mcc_gallery_id id;
	uint64_t	gen;
	uint32_t	profile;
	uint64_t	expected;
	int32_t		priority;
	uint32_t	flags;
	uint64_t	scan_lsn = 0;
	uint64_t	next_xid = 0;
	uint64_t	token[2] = {0, 0};
	eng_load   *l;

	eng_rd_gallery(r, &id);
	gen = eng_rd_u64(r);
	profile = eng_rd_u32(r);
	expected = eng_rd_u64(r);
	priority = (int32_t) eng_rd_u32(r);
	flags = eng_rd_u32(r);
	if (flags & MCC_LOAD_IDS)
	{
		scan_lsn = eng_rd_u64(r);
		next_xid = eng_rd_u64(r);
	}
	if (flags & MCC_LOAD_JOIN)
	{
		token[0] = eng_rd_u64(r);
		token[1] = eng_rd_u64(r);
	}
	/* a snapshot's check needs tuple ids and stays on one connection */
	if (!eng_rd_done(r) || (flags & (MCC_LOAD_SNAPSHOT | MCC_LOAD_IDS)) == MCC_LOAD_SNAPSHOT ||
		(flags & (MCC_LOAD_SNAPSHOT | MCC_LOAD_JOIN)) == (MCC_LOAD_SNAPSHOT | MCC_LOAD_JOIN))
		return false;
	l = eng_load_begin(s, c, h->request_id, &id, gen, profile, expected, priority, flags);
	if (l == NULL)
	{
		eng_reply_error(c, h->request_id, MCC_PERR_INTERNAL, MCC_ERR_MEMORY, "out of memory");
		return true;
	}
	l->scan_lsn = scan_lsn;
	l->next_xid = next_xid;
	if (flags & MCC_LOAD_JOIN)
	{
		/* open to other connections now: the client lets its parts join after this OK */
		l->token[0] = token[0];
		l->token[1] = token[1];
		eng_reply_ok(c, h->request_id);
	}
	/* the snapshot SNAPSHOT read, if its profile is the load's: its cache is the build */
	if (flags & MCC_LOAD_SNAPSHOT)
		(void) eng_snapshot_take(s, l);
	return true;
}

/*
 * LOAD_ROWS: add rows to the load of this request (others are ignored), all
 * of the frame at once, and the load's next LOAD_ROWS frames already
 * received behind them (eng_load_rows).
 */
static bool
h_load_rows(eng_server *s, eng_conn *c, const mcc_frame_hdr *h, eng_rd *r)
{
	uint32_t	n = eng_rd_u32(r);
	eng_load   *l = eng_load_of_rows(s, c, h->request_id);
	eng_load_in *in;
	bool		ids;

	/* a row carries load_ids when its load said so (MCC_LOAD_IDS) */
	ids = l != NULL && (l->flags & MCC_LOAD_IDS);
	if (r->bad || !eng_load_rows_fit(n, ids, eng_rd_left(r)))
		return false;
	in = malloc(sizeof(*in) * (n > 0 ? n : 1));
	if (in == NULL)
	{
		if (l != NULL)
		{
			mcc_error	err;

			mcc_error_set(&err, MCC_ERR_MEMORY, "out of memory");
			eng_load_fail(l, MCC_PERR_MEMORY, &err);
		}
		return true;
	}
	/* a load cancelled or replaced meanwhile: its rows are not checked */
	if (!eng_load_read_rows(r, n, ids, in) && l != NULL)
	{
		free(in);
		return false;
	}
	/* a part's rows are counted where they are linked (eng_load_rows: join_rows) */
	if (l != NULL)
		eng_load_rows(s, l, in, n, false, c);
	free(in);
	return true;
}

/* LOAD_JOIN: this connection's rows of this request go into another connection's load. */
static bool
h_load_join(eng_server *s, eng_conn *c, const mcc_frame_hdr *h, eng_rd *r)
{
	mcc_gallery_id id;
	uint64_t	gen;
	uint64_t	token[2];

	eng_rd_gallery(r, &id);
	gen = eng_rd_u64(r);
	token[0] = eng_rd_u64(r);
	token[1] = eng_rd_u64(r);
	if (!eng_rd_done(r))
		return false;
	eng_load_join(s, c, h->request_id, &id, gen, token);
	return true;
}

/* LOAD_JOIN_END: this connection's part is complete. */
static bool
h_load_join_end(eng_server *s, eng_conn *c, const mcc_frame_hdr *h, eng_rd *r)
{
	(void) r;
	if (!c->joined || c->join_rid != h->request_id)
	{
		eng_reply_error(c, h->request_id, MCC_PERR_PROTOCOL, 0,
						"no joined load part for this request");
		return true;
	}
	eng_load_join_end(s, c);
	return true;
}

/* SNAPSHOT: is there a usable snapshot of this gallery? */
static bool
h_snapshot(eng_server *s, eng_conn *c, const mcc_frame_hdr *h, eng_rd *r)
{
	mcc_gallery_id id;
	uint32_t	profile;

	eng_rd_gallery(r, &id);
	profile = eng_rd_u32(r);
	if (!eng_rd_done(r))
		return false;
	eng_snapshot_info(s, c, h->request_id, &id, profile);
	return true;
}

/* LOAD_HEADS: tuple headers of a load that checks a snapshot. */
static bool
h_load_heads(eng_server *s, eng_conn *c, const mcc_frame_hdr *h, eng_rd *r)
{
	uint32_t	n = eng_rd_u32(r);
	eng_load   *l = c->load;

	if (r->bad || (uint64_t) n * 40 != eng_rd_left(r))
		return false;
	if (l == NULL || l->request_id != h->request_id || !(l->flags & MCC_LOAD_SNAPSHOT))
		return true;			/* a load cancelled or replaced meanwhile */
	for (uint32_t i = 0; i < n; i++)
	{
		uint64_t	tid = eng_rd_u64(r);
		uint64_t	xmin = eng_rd_u64(r);
		uint64_t	lsn = eng_rd_u64(r);
		uint64_t	ixid = eng_rd_u64(r);
		uint64_t	dxid = eng_rd_u64(r);

		eng_snapshot_head(s, l, tid, xmin, lsn, ixid, dxid);
	}
	return true;
}

/* LOAD_HEADS_END: reply the tuples to read. */
static bool
h_load_heads_end(eng_server *s, eng_conn *c, const mcc_frame_hdr *h, eng_rd *r)
{
	eng_snapshot_heads_end(s, c, h->request_id);
	return true;
}

/* LOAD_END: swap the new cache in (or report why not). */
static bool
h_load_end(eng_server *s, eng_conn *c, const mcc_frame_hdr *h, eng_rd *r)
{
	eng_load_end(s, c);
	return true;
}

/* DELTA: queue a generation's changes; applied in order. */
static bool
h_delta(eng_server *s, eng_conn *c, const mcc_frame_hdr *h, eng_rd *r)
{
	mcc_gallery_id id;
	uint64_t	gen;
	eng_part   *part;
	eng_gallery *g;
	mcc_error	err;
	eng_parse_result pr;

	mcc_error_clear(&err);
	pr = eng_delta_parse(r->p, r->len, &id, &gen, &part, &err);
	if (pr == ENG_PARSE_MALFORMED)
		return false;
	g = eng_gallery_get(s, &id, true);
	if (g == NULL)
	{
		eng_part_free(part);
		return true;
	}
	if (pr == ENG_PARSE_UNUSABLE)
	{
		eng_log(ENG_LOG_WARNING, "gallery %u/%u: delta of generation %llu unusable: %s",
				id.db_oid, id.rel_oid, (unsigned long long) gen, err.message);
		eng_genq_add_reload(&g->q, gen);
	}
	else
		eng_genq_add_part(&g->q, gen, part, (h->flags & MCC_FRAME_MORE) != 0, c->id);
	return true;
}

/* RELOAD: the generation's delta will not come; the cache must reload. */
static bool
h_reload(eng_server *s, eng_conn *c, const mcc_frame_hdr *h, eng_rd *r)
{
	mcc_gallery_id id;
	uint64_t	gen;
	eng_gallery *g;

	eng_rd_gallery(r, &id);
	gen = eng_rd_u64(r);
	if (!eng_rd_done(r))
		return false;
	g = eng_gallery_get(s, &id, true);
	if (g == NULL)
		return true;
	eng_genq_add_reload(&g->q, gen);
	return true;
}

/* XIDS: the unsettled xids of the cache. */
static bool
h_xids(eng_server *s, eng_conn *c, const mcc_frame_hdr *h, eng_rd *r)
{
	mcc_gallery_id id;
	eng_gallery *g;
	uint64_t   *x = NULL;
	uint32_t	n = 0;
	size_t		f;

	eng_rd_gallery(r, &id);
	if (!eng_rd_done(r))
		return false;
	g = eng_gallery_get(s, &id, false);
	if (g != NULL && g->cache != NULL)
		n = eng_cache_xids(g->cache, ENG_MAX_XIDS, &x);
	f = eng_frame_begin(&c->out, MCC_MSG_XID_LIST, h->request_id);
	eng_buf_u32(&c->out, n);
	eng_buf_put(&c->out, x, (size_t) n * sizeof(uint64_t));
	eng_frame_end(&c->out, f);
	free(x);
	return true;
}

/* Order of (xid, state) pairs for sorting. */
typedef struct xid_state
{
	uint64_t	xid;
	uint32_t	state;
} xid_state;

static int
cmp_xid_state(const void *a, const void *b)
{
	return mcc_cmp_u64(&((const xid_state *) a)->xid, &((const xid_state *) b)->xid);
}

/* SETTLE: transaction states from the commit log; applied between passes. */
static bool
h_settle(eng_server *s, eng_conn *c, const mcc_frame_hdr *h, eng_rd *r)
{
	mcc_gallery_id id;
	eng_gallery *g;
	eng_settle *st;
	xid_state  *pairs;
	uint64_t	horizon;
	uint32_t	n;

	eng_rd_gallery(r, &id);
	horizon = eng_rd_u64(r);
	n = eng_rd_u32(r);
	if (r->bad || (uint64_t) n * 12 != eng_rd_left(r))
		return false;
	g = eng_gallery_get(s, &id, false);
	if (g == NULL || (g->cache == NULL && g->settles == NULL))
	{
		eng_reply_ok(c, h->request_id);
		return true;
	}
	st = calloc(1, sizeof(*st));
	pairs = malloc(((size_t) n + 1) * sizeof(xid_state));
	if (st != NULL)
	{
		st->xids = malloc(((size_t) n + 1) * sizeof(uint64_t));
		st->states = malloc(((size_t) n + 1) * sizeof(uint32_t));
	}
	if (st == NULL || pairs == NULL || st->xids == NULL || st->states == NULL)
	{
		eng_settle_free(st);
		free(pairs);
		eng_reply_error(c, h->request_id, MCC_PERR_INTERNAL, MCC_ERR_MEMORY, "out of memory");
		return true;
	}
	for (uint32_t i = 0; i < n; i++)
	{
		pairs[i].xid = eng_rd_u64(r);
		pairs[i].state = eng_rd_u32(r);
	}
	qsort(pairs, n, sizeof(xid_state), cmp_xid_state);
	for (uint32_t i = 0; i < n; i++)
	{
		st->xids[i] = pairs[i].xid;
		st->states[i] = pairs[i].state;
	}
	free(pairs);
	st->n = n;
	st->horizon = horizon;
	st->conn_id = c->id;
	st->request_id = h->request_id;
	eng_gallery_settle(s, g, st);
	return true;
}

/* CANCEL: drop a request of this connection (no reply). */
static bool
h_cancel(eng_server *s, eng_conn *c, const mcc_frame_hdr *h, eng_rd *r)
{
	uint64_t	rid = eng_rd_u64(r);

	if (!eng_rd_done(r))
		return false;
	if (c->load && c->load->request_id == rid)
	{
		eng_log(ENG_LOG_DEBUG, "connection %llu: load cancelled", (unsigned long long) c->id);
		eng_load_abort(s, c);
	}
	if (c->joined && c->join_rid == rid)
		eng_load_join_abort(s, c, "a joined part was cancelled");
	if (!eng_gallery_cancel(s, c->id, rid) && !eng_refine_cancel(s, c->id, rid))
		eng_image_cancel(s, c->id, rid);
	return true;
}

/* REFINE: score shortlisted templates against their probes on the threads. */
static bool
h_refine(eng_server *s, eng_conn *c, const mcc_frame_hdr *h, eng_rd *r)
{
	mcc_error	err;
	int			perr;
	eng_refine *job = eng_refine_parse(r->p, r->len, &perr, &err);

	if (job == NULL)
	{
		if (perr == MCC_PERR_PROTOCOL)
			return false;
		eng_reply_error(c, h->request_id, perr, err.status, "%s%s%s", err.message,
						err.detail[0] ? ": " : "", err.detail);
		return true;
	}
	eng_refine_submit(s, c, h->request_id, job);
	return true;
}

/* STATUS: one record per loaded gallery. */
static bool
h_status(eng_server *s, eng_conn *c, const mcc_frame_hdr *h, eng_rd *r)
{
	eng_buf    *o = &c->out;
	uint32_t	n = 0;
	size_t		f;

	for (uint32_t i = 0; i < s->n_gal; i++)
		n += s->gal[i]->cache != NULL;
	f = eng_frame_begin(o, MCC_MSG_STATUS_REPLY, h->request_id);
	eng_buf_u32(o, n);
	for (uint32_t i = 0; i < s->n_gal; i++)
	{
		const eng_gallery *g = s->gal[i];
		const eng_cache *cc = g->cache;
		char		device[32];
		uint64_t	device_bytes = 0;

		if (cc == NULL)
			continue;
		memset(device, 0, sizeof(device));
		eng_gpu_describe(s->gpu, cc, device, sizeof(device), &device_bytes);
		eng_buf_gallery(o, &g->id);
		eng_buf_u32(o, cc->profile->id);
		eng_buf_u64(o, cc->applied_gen);
		eng_buf_u64(o, cc->soa.n_tpl);
		eng_buf_u64(o, eng_cache_searchable(cc));
		eng_buf_u64(o, cc->soa.n_cyl);
		eng_buf_u64(o, cc->bytes);
		eng_buf_u64(o, device_bytes);
		eng_buf_i64(o, g->loaded_at);
		eng_buf_f64(o, g->load_seconds);
		eng_buf_u64(o, g->searches);
		eng_buf_put(o, device, sizeof(device));
	}
	eng_frame_end(o, f);
	return true;
}

/* ENGINE_STATUS: the cache budget and the image jobs. */
static bool
h_engine_status(eng_server *s, eng_conn *c, const mcc_frame_hdr *h, eng_rd *r)
{
	eng_buf    *o = &c->out;
	uint64_t	parts;
	uint64_t	done;
	size_t		f;

	eng_image_progress(s, &parts, &done);
	f = eng_frame_begin(o, MCC_MSG_ENGINE_STATUS_REPLY, h->request_id);
	eng_buf_u64(o, s->budget.used);
	eng_buf_u64(o, s->budget.limit);
	eng_buf_u64(o, s->evictions);
	eng_buf_u32(o, (uint32_t) eng_pool_threads(s->img_pool));
	eng_buf_u32(o, s->cfg.image_queue);
	eng_buf_u32(o, s->n_images);
	eng_buf_u64(o, parts);
	eng_buf_u64(o, done);
	eng_buf_u32(o, eng_image_hello_flags(s));
	eng_frame_end(o, f);
	return true;
}

/* PRIORITY: a gallery's priority changed (who may evict whom). */
static bool
h_priority(eng_server *s, eng_conn *c, const mcc_frame_hdr *h, eng_rd *r)
{
	mcc_gallery_id id;
	int32_t		priority;

	eng_rd_gallery(r, &id);
	priority = (int32_t) eng_rd_u32(r);
	if (!eng_rd_done(r))
		return false;
	eng_gallery_set_priority(s, &id, priority);
	eng_reply_ok(c, h->request_id);
	return true;
}

/* EVICT: drop matching caches. */
static bool
h_evict(eng_server *s, eng_conn *c, const mcc_frame_hdr *h, eng_rd *r)
{
	mcc_gallery_id id;

	eng_rd_gallery(r, &id);
	if (!eng_rd_done(r))
		return false;
	eng_gallery_evict(s, &id);
	eng_snapshot_remove(s, &id);
	eng_reply_ok(c, h->request_id);
	return true;
}

typedef bool (*handler_fn) (eng_server *s, eng_conn *c, const mcc_frame_hdr *h, eng_rd *r);

/* What eng_handle_frame checks before a handler runs. */
#define CHECK_EMPTY		0x01	/* no payload: a longer frame is malformed */
#define CHECK_LOAD		0x02	/* the connection's load is this request's, else ERROR */
#define CHECK_SNAP_LOAD	0x04	/* ... and it checks a snapshot (MCC_LOAD_SNAPSHOT) */

typedef struct handler
{
	handler_fn	fn;				/* NULL: not a client's message */
	uint32_t	checks;			/* CHECK_* */
} handler;

/* The client messages of mcc_proto.h, by type; replies and unknown types have none. */
static const handler handlers[MCC_MSG_ALIGN_RESULT + 1] = {
	[MCC_MSG_HELLO] = {h_hello, 0},
	[MCC_MSG_SEARCH] = {h_search, 0},
	[MCC_MSG_LOAD_BEGIN] = {h_load_begin, 0},
	[MCC_MSG_LOAD_ROWS] = {h_load_rows, 0},
	[MCC_MSG_LOAD_END] = {h_load_end, CHECK_EMPTY | CHECK_LOAD},
	[MCC_MSG_DELTA] = {h_delta, 0},
	[MCC_MSG_RELOAD] = {h_reload, 0},
	[MCC_MSG_XIDS] = {h_xids, 0},
	[MCC_MSG_SETTLE] = {h_settle, 0},
	[MCC_MSG_CANCEL] = {h_cancel, 0},
	[MCC_MSG_STATUS] = {h_status, CHECK_EMPTY},
	[MCC_MSG_EVICT] = {h_evict, 0},
	[MCC_MSG_REFINE] = {h_refine, 0},
	[MCC_MSG_ENGINE_STATUS] = {h_engine_status, CHECK_EMPTY},
	[MCC_MSG_PRIORITY] = {h_priority, 0},
	[MCC_MSG_SNAPSHOT] = {h_snapshot, 0},
	[MCC_MSG_LOAD_HEADS] = {h_load_heads, 0},
	[MCC_MSG_LOAD_HEADS_END] = {h_load_heads_end, CHECK_EMPTY | CHECK_LOAD | CHECK_SNAP_LOAD},
	[MCC_MSG_LOAD_JOIN] = {h_load_join, 0},
	[MCC_MSG_LOAD_JOIN_END] = {h_load_join_end, CHECK_EMPTY},
	[MCC_MSG_SAD] = {eng_image_request, 0},
	[MCC_MSG_DP2D] = {eng_image_request, 0},
	[MCC_MSG_CHAMFER] = {eng_image_request, 0},
	[MCC_MSG_ALIGN] = {eng_image_request, 0},
};

/*
 * The checks of a handler's entry: false if the frame is malformed; true
 * with *replied set if a request that cannot be served got its ERROR.
 */
static bool
check_frame(eng_conn *c, const mcc_frame_hdr *h, eng_rd *r, uint32_t checks, bool *replied)
{
	*replied = false;
	if ((checks & CHECK_EMPTY) && !eng_rd_done(r))
		return false;
	if ((checks & CHECK_LOAD) &&
		(c->load == NULL || c->load->request_id != h->request_id ||
		 ((checks & CHECK_SNAP_LOAD) && !(c->load->flags & MCC_LOAD_SNAPSHOT))))
	{
		eng_reply_error(c, h->request_id, MCC_PERR_PROTOCOL, 0,
						(checks & CHECK_SNAP_LOAD) ?
						"no snapshot-checked load in progress for this request" :
						"no load in progress for this request");
		*replied = true;
	}
	return true;
}

bool
eng_handle_frame(eng_server *s, eng_conn *c, const mcc_frame_hdr *h,
				 const uint8_t *payload)
{
	const handler *hd;
	eng_rd		r;
	bool		replied;

	if (h->type >= sizeof(handlers) / sizeof(handlers[0]) || handlers[h->type].fn == NULL)
		return false;			/* unknown, or a reply type */
	hd = &handlers[h->type];
	eng_rd_init(&r, payload, h->length);
	if (!check_frame(c, h, &r, hd->checks, &replied))
		return false;
	return replied || hd->fn(s, c, h, &r);
}
