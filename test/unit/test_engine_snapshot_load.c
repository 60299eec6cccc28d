/*
 * test_engine_snapshot_load.c: cache snapshots through the engine, in
 * process: a load with tuple ids makes the engine write a snapshot; a new
 * engine (a restart) offers it (SNAPSHOT) and a snapshot-checked load
 * (LOAD_HEADS) takes the proved rows from it, asks (WANT) for exactly the
 * tuples it cannot prove (a new xmin, a new tuple, a frozen tuple on a
 * changed page an epoch later), drops the rows no tuple claims, and ends
 * with the cache a full load would have built; the xids come from the
 * heads. A damaged file is not offered and is removed.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eng_conn.h"
#include "eng_gallery.h"
#include "unit.h"
#include "engine_inproc.h"
#include "eng_log.h"
#include "eng_server.h"
#include "eng_snapfile.h"
#include "eng_snapshot.h"

#define NT 30
static const mcc_gallery_id G = {5, 16384, 77};
static char dir[] = "/tmp/mcc-snapload-test.XXXXXX";
static tl_tpl *t;				/* key i: t[i]; t[NT + j]: new templates */

static void
server(eng_server *s)
{
	eng_config	cfg = {.threads = 2, .delta_timeout_ms = 2000, .max_batch = 64,
	.gpu = ENG_GPU_OFF, .snapshot_dir = dir, .system_id = 42};

	eng_server_init(s, &cfg);
	eng_snapshot_init(s);
}

static void
load_begin(eng_buf *b, uint64_t rid, uint32_t flags, uint64_t lsn, uint64_t next)
{
	size_t		f = eng_frame_begin(b, MCC_MSG_LOAD_BEGIN, rid);

	eng_buf_gallery(b, &G);
	eng_buf_u64(b, 1);
	eng_buf_u32(b, MCC_PROFILE_DEFAULT);
	eng_buf_u64(b, NT);
	eng_buf_u32(b, 0);
	eng_buf_u32(b, flags);
	eng_buf_u64(b, lsn);
	eng_buf_u64(b, next);
	eng_frame_end(b, f);
}

/* One load row with ids. */
static void
row(eng_buf *b, uint64_t rid, int64_t key, uint64_t ins, const tl_tpl *tp, uint64_t tid,
	uint64_t xmin)
{
	size_t		f = eng_frame_begin(b, MCC_MSG_LOAD_ROWS, rid);

	eng_buf_u32(b, 1);
	eng_buf_i64(b, key);
	eng_buf_u64(b, ins);
	eng_buf_u64(b, 0);
	eng_buf_bytes(b, tp->b, (uint32_t) tp->n);
	eng_buf_u64(b, tid);
	eng_buf_u64(b, xmin);
	eng_frame_end(b, f);
}

static void
head(eng_buf *b, uint64_t rid, uint64_t tid, uint64_t xmin, uint64_t lsn, uint64_t ins,
	 uint64_t del)
{
	size_t		f = eng_frame_begin(b, MCC_MSG_LOAD_HEADS, rid);

	eng_buf_u32(b, 1);
	eng_buf_u64(b, tid);
	eng_buf_u64(b, xmin);
	eng_buf_u64(b, lsn);
	eng_buf_u64(b, ins);
	eng_buf_u64(b, del);
	eng_frame_end(b, f);
}

/* Wait for the gallery's snapshot writer; true once written. */
static bool
wait_written(eng_server *s)
{
	eng_gallery *g = eng_gallery_get(s, &G, false);

	/* a write is due some seconds after a load: wait up to a minute */
	for (int i = 0; i < 6000; i++)
	{
		ip_pump_all(s);
		if (g->snapshotting == NULL && !g->snap_dirty && atomic_load(&g->snap_writing) == 0)
			return true;
		usleep(10000);
	}
	return false;
}

/* The live entry of key (ENG_NONE if none). */
static uint32_t
entry(const eng_cache *c, int64_t key)
{
	return eng_cache_find_key(c, key);
}

static bool
has(const eng_cache *c, int64_t key, const tl_tpl *tp, uint64_t ins, uint64_t del)
{
	uint32_t	i = entry(c, key);

	return i != ENG_NONE && c->entries[i].hash == mcc_template_hash(tp->b, tp->n) &&
		c->entries[i].insert_xid == ins && c->entries[i].delete_xid == del &&
		eng_cache_next_key(c, i) == ENG_NONE;
}

static uint32_t
snapshot_info(eng_server *s, eng_conn *c, uint64_t rid, uint64_t *rows)
{
	eng_buf		b;
	tl_frame	f;
	size_t		x;
	uint32_t	usable = 0;

	eng_buf_init(&b);
	x = eng_frame_begin(&b, MCC_MSG_SNAPSHOT, rid);
	eng_buf_gallery(&b, &G);
	eng_buf_u32(&b, MCC_PROFILE_DEFAULT);
	eng_frame_end(&b, x);
	ip_send(s, c, &b);				/* the file is read in the pool; the reply comes after */
	if (ip_reply(c, rid, &f, NULL) == 1 && f.h.type == MCC_MSG_SNAPSHOT_INFO)
	{
		memcpy(&usable, f.p, 4);
		memcpy(rows, f.p + 8, 8);
	}
	eng_buf_free(&b);
	return usable;
}

int
main(void)
{
	eng_server	s;
	eng_conn   *c;
	eng_buf		b;
	tl_frame	f;
	char		path[256];
	uint64_t	rows = 0;
	const uint64_t F = MCC_XMIN_FROZEN;

	mcc_lss_init();
	eng_log_set_level(ENG_LOG_WARNING);
	if (mkdtemp(dir) == NULL)
	{
		UNIT_SKIP("no temporary directory");
		return unit_done();
	}
	snprintf(path, sizeof(path), "%s/%u_%u.snap", dir, G.db_oid, G.rel_oid);
	t = tl_templates(3, NT + 4, 5);

	/* a full load with tuple ids: key i at tid i + 1, xmin 1000 + i */
	server(&s);
	c = eng_conn_add(&s, -1);
	eng_buf_init(&b);
	load_begin(&b, 1, MCC_LOAD_IDS, 500, 2000);
	for (int i = 0; i < NT; i++)
		row(&b, 1, i, 0, &t[i], (uint64_t) i + 1, 1000 + (uint64_t) i);
	tl_load_end(&b, 1);
	ip_send(&s, c, &b);
	UNIT_CHECK(ip_reply(c, 1, &f, NULL) == 1 && f.h.type == MCC_MSG_LOADED, "full load with tuple ids");
	UNIT_CHECK(wait_written(&s) && access(path, F_OK) == 0, "the engine wrote a snapshot after the load");
	eng_server_destroy(&s);

	/* a restart: the snapshot is offered and checked */
	server(&s);
	c = eng_conn_add(&s, -1);
	UNIT_CHECK(snapshot_info(&s, c, 2, &rows) == 1 && rows == NT, "SNAPSHOT: usable, %d rows", NT);
	load_begin(&b, 3, MCC_LOAD_IDS | MCC_LOAD_SNAPSHOT, 600, 3000);
	for (int i = 0; i < NT; i++)
	{
		if (i >= 22 && i <= 25)
			continue;			/* deleted: no tuple */
		if (i == 20)
			head(&b, 3, i + 1, 2500, 700, 2500, 0);	/* updated in place (new xmin) */
		else if (i == 21)
			head(&b, 3, i + 1, F | 1021, 700, 0, 0);	/* frozen since: proved by the xid window */
		else if (i == 27)
			head(&b, 3, i + 1, 1000 + i, 700, 0, 2600);	/* being deleted: the heap's xids */
		else
			head(&b, 3, i + 1, 1000 + i, 700, 0, 0);
	}
	head(&b, 3, 100, 2700, 700, 2700, 0);	/* a new tuple */
	{
		size_t		x = eng_frame_begin(&b, MCC_MSG_LOAD_HEADS_END, 3);

		eng_frame_end(&b, x);
	}
	ip_feed(&s, c, &b);
	{
		uint32_t	n = 0;
		uint64_t	w[2] = {0, 0};
		bool		ok = ip_reply(c, 3, &f, NULL) == 1 && f.h.type == MCC_MSG_WANT;

		if (ok)
		{
			memcpy(&n, f.p, 4);
			if (n == 2)
				memcpy(w, f.p + 4, 16);
		}
		UNIT_CHECK(ok && n == 2 && w[0] == 21 && w[1] == 100,
				   "WANT: exactly the updated and the new tuple (%u wanted)", n);
	}
	ip_clear_out(c);
	row(&b, 3, 20, 2500, &t[NT], 21, 2500);
	row(&b, 3, 100, 2700, &t[NT + 1], 100, 2700);
	tl_load_end(&b, 3);
	ip_send(&s, c, &b);
	UNIT_CHECK(ip_reply(c, 3, &f, NULL) == 1 && f.h.type == MCC_MSG_LOADED, "snapshot-checked load ends");
	{
		eng_gallery *g = eng_gallery_get(&s, &G, false);
		const eng_cache *cc = g->cache;
		bool		ok = cc != NULL && eng_cache_searchable(cc) == NT - 4 + 1;

		for (int i = 0; ok && i < NT; i++)
		{
			if (i >= 22 && i <= 25)
				ok = entry(cc, i) == ENG_NONE;
			else if (i == 20)
				ok = has(cc, 20, &t[NT], 2500, 0);
			else
				ok = has(cc, i, &t[i], 0, i == 27 ? 2600 : 0);
		}
		ok = ok && has(cc, 100, &t[NT + 1], 2700, 0);
		UNIT_CHECK(ok, "the cache is what a full load builds: proved rows with the snapshot's "
				   "templates and the heads' xids, the wanted rows, no deleted row");
		ok = cc != NULL;
		for (uint32_t i = 0; ok && i < cc->soa.n_tpl; i++)
			if (cc->entries[i].key == 21)
				ok = cc->entries[i].xmin == 1021 && cc->entries[i].tid == 22;
		UNIT_CHECK(ok, "a row proved while frozen keeps its full xmin");
	}
	UNIT_CHECK(wait_written(&s), "the snapshot is written again after the check");
	eng_server_destroy(&s);

	/* a frozen tuple on a changed page an epoch later: not proved */
	server(&s);
	c = eng_conn_add(&s, -1);
	UNIT_CHECK(snapshot_info(&s, c, 4, &rows) == 1, "SNAPSHOT after the check");
	load_begin(&b, 5, MCC_LOAD_IDS | MCC_LOAD_SNAPSHOT, 800, 1021 + (UINT64_C(1) << 32));
	head(&b, 5, 22, F | 1021, 900, 0, 0);
	head(&b, 5, 1, F | 1000, 550, 0, 0);	/* page unchanged since the scan (LSN 600) */
	{
		size_t		x = eng_frame_begin(&b, MCC_MSG_LOAD_HEADS_END, 5);

		eng_frame_end(&b, x);
	}
	ip_feed(&s, c, &b);
	{
		uint32_t	n = 0;
		uint64_t	w = 0;

		if (ip_reply(c, 5, &f, NULL) == 1 && f.h.type == MCC_MSG_WANT)
		{
			memcpy(&n, f.p, 4);
			if (n == 1)
				memcpy(&w, f.p + 4, 8);
		}
		UNIT_CHECK(n == 1 && w == 22,
				   "a frozen tuple an epoch later on a changed page is wanted; one on an unchanged page is not");
	}
	eng_server_destroy(&s);

	/* damaged: not offered, removed */
	{
		FILE	   *fp = fopen(path, "r+b");

		if (fp != NULL)
		{
			fseek(fp, 200, SEEK_SET);
			fputc(0x5a, fp);
			fclose(fp);
		}
	}
	server(&s);
	c = eng_conn_add(&s, -1);
	UNIT_CHECK(snapshot_info(&s, c, 6, &rows) == 0 && access(path, F_OK) != 0,
			   "a damaged snapshot is not offered, and removed");
	load_begin(&b, 7, MCC_LOAD_IDS | MCC_LOAD_SNAPSHOT, 800, 3000);
	{
		size_t		x = eng_frame_begin(&b, MCC_MSG_LOAD_HEADS_END, 7);

		eng_frame_end(&b, x);
	}
	ip_feed(&s, c, &b);
	UNIT_CHECK(ip_error_of(c, 7) == MCC_PERR_NOT_LOADED,
			   "a snapshot-checked load without a snapshot: NOT_LOADED (the client loads in full)");
	eng_server_destroy(&s);

	eng_buf_free(&b);
	tl_templates_free(t, NT + 4);
	unlink(path);
	rmdir(dir);
	return unit_done();
}
