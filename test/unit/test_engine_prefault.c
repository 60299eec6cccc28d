/*
 * test_engine_prefault.c: a load's cache faulted in ahead of its rows
 * (eng_prefault.h): the pages come in writable without any byte changing,
 * also while another thread writes them; the threads stay within their
 * lead of the rows; and a load with the prefault builds exactly the cache
 * that one without it builds, through growth, a failed row and an
 * abandoned load.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "eng_conn.h"
#include "eng_load.h"
#include "eng_prefault.h"
#include "unit.h"
#include "engine_inproc.h"
#include "eng_log.h"
#include "eng_server.h"
#include "testclock.h"

#define AREA ((size_t) 24 << 20)	/* bytes of the test areas */
#define DISTINCT 150			/* distinct row templates */

static tl_tpl *gt;

/* Pages of [p, p + n) resident (mincore), of all of them. */
static size_t
resident_pages(void *p, size_t n, size_t *all)
{
	size_t		pg = (size_t) sysconf(_SC_PAGESIZE);
	size_t		np = (n + pg - 1) / pg;
	unsigned char *v = malloc(np);
	size_t		in = 0;

	*all = np;
	if (v == NULL || mincore(p, n, v) != 0)
	{
		free(v);
		return 0;
	}
	for (size_t i = 0; i < np; i++)
		in += v[i] & 1;
	free(v);
	return in;
}

static void *
new_area(void)
{
	void	   *p = mmap(NULL, AREA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* The byte a writer puts at offset i. */
static uint8_t
pattern(size_t i)
{
	return (uint8_t) (i * 2654435761u >> 7) | 1;
}

typedef struct toucher
{
	uint8_t    *p;
	bool		populate;
	int			rounds;
} toucher;

static void *
touch_main(void *arg)
{
	toucher    *t = arg;

	for (int r = 0; r < t->rounds; r++)
		eng_prefault_range(t->p + 3, AREA - 5, t->populate);
	return NULL;
}

/*
 * Both paths (MADV_POPULATE_WRITE, the atomic add per page) fault an
 * unaligned range in, leave what it holds, and leave what a thread writes
 * meanwhile.
 */
static void
test_range(bool populate)
{
	uint8_t    *p = new_area();
	size_t		all;
	size_t		in;
	bool		same = true;
	pthread_t	tid;
	toucher		t = {.populate = populate, .rounds = 4};

	UNIT_CHECK(p != NULL, "a test area");
	if (p == NULL)
		return;
	for (size_t i = 0; i < 4096; i++)
		p[i] = pattern(i);
	/* past the first 4 MB: the page written may have come as a huge page */
	UNIT_CHECK(resident_pages(p + ((size_t) 4 << 20), AREA - ((size_t) 4 << 20), &all) == 0,
			   "a fresh area's pages are not yet in");
	UNIT_CHECK(eng_prefault_range(p + 3, AREA - 5, populate),
			   populate ? "MADV_POPULATE_WRITE known to this kernel" : "the per-page path");
	in = resident_pages(p, AREA, &all);
	UNIT_CHECK(in == all, populate ? "populate: every page in (%zu of %zu)" :
			   "per page: every page in (%zu of %zu)", in, all);
	for (size_t i = 0; i < 4096; i++)
		same = same && p[i] == pattern(i);
	for (size_t i = 4096; i < AREA; i++)
		same = same && p[i] == 0;
	UNIT_CHECK(same, "what the area held is unchanged");
	munmap(p, AREA);

	/* a second area written while the range is faulted in again and again */
	p = new_area();
	if (p == NULL)
		return;
	t.p = p;
	UNIT_CHECK(pthread_create(&tid, NULL, touch_main, &t) == 0, "a faulting thread");
	for (size_t i = 0; i < AREA; i++)
		p[i] = pattern(i);
	pthread_join(tid, NULL);
	same = true;
	for (size_t i = 0; i < AREA; i++)
		same = same && p[i] == pattern(i);
	UNIT_CHECK(same, populate ? "populate: every byte written meanwhile kept" :
			   "per page: every byte written meanwhile kept");
	munmap(p, AREA);
}

/* Threads stay within their lead of the rows, then fault all in once let. */
static void
test_lead(void)
{
	uint8_t    *a = new_area();
	uint8_t    *b = new_area();
	eng_prefault_area ar[3] = {{a, AREA}, {b, AREA / 2}, {a, 4096}};
	eng_prefault *p;
	size_t		all;
	size_t		in;
	double		t0 = tclock_wall_s();
	bool		done = false;

	UNIT_CHECK(a != NULL && b != NULL, "two test areas");
	if (a == NULL || b == NULL)
		return;
	p = eng_prefault_start(ar, 3, 2, 1000, 0);
	UNIT_CHECK(p != NULL, "a prefault starts on two threads");
	if (p == NULL)
		return;
	/* the last eighth of each area lies beyond the lead (and its huge pages) */
	UNIT_CHECK(resident_pages(a + AREA / 2, AREA / 2, &all) == 0 &&
			   resident_pages(b + AREA / 4, AREA / 4, &all) == 0,
			   "nothing faulted beyond the lead of the rows");
	eng_prefault_advance(p, 1000);
	/* no speed assumed: wait as long as it takes (a minute at most) */
	while (!(done = eng_prefault_done(p)) && tclock_wall_s() - t0 < 60)
		usleep(1000);
	UNIT_CHECK(done, "every step done once the rows fill the room");
	eng_prefault_stop(p);
	in = resident_pages(a, AREA, &all);
	UNIT_CHECK(in == all, "the first area faulted in (%zu of %zu pages)", in, all);
	in = resident_pages(b, AREA / 2, &all);
	UNIT_CHECK(in == all, "the second area's room faulted in (%zu of %zu pages)", in, all);
	UNIT_CHECK(eng_prefault_start(ar, 0, 2, 1000, 0) == NULL && eng_prefault_start(ar + 2, 1, 2, 1000, 0) == NULL,
			   "nothing to fault in (no area, or only small ones): no prefault");
	eng_prefault_stop(NULL);
	munmap(a, AREA);
	munmap(b, AREA);
}

/* LOAD_ROWS frames of `per` rows for keys [k0, k1), row k a copy of gt[k % DISTINCT]. */
static void
frames(eng_buf *b, uint64_t rid, int k0, int k1, int per, int bad_key)
{
	int64_t		keys[512];
	uint64_t	xid[512];
	tl_tpl		t[512];
	tl_tpl		bad = {NULL, 0};

	for (int k = k0; k < k1; k += per)
	{
		int			n = k1 - k < per ? k1 - k : per;

		for (int i = 0; i < n; i++)
		{
			keys[i] = k + i;
			xid[i] = 7 + (uint64_t) (k + i) % 5;
			t[i] = gt[(k + i) % DISTINCT];
			if (k + i == bad_key)
			{
				bad.b = malloc(t[i].n);
				bad.n = t[i].n;
				memcpy(bad.b, t[i].b, t[i].n);
				bad.b[5] ^= 0x7f;	/* its profile: unknown */
				t[i] = bad;
			}
		}
		tl_load_rows(b, rid, n, keys, xid, NULL, t);
	}
	free(bad.b);
}

/* The same cache, array by array (the rows' bytes, their entries' fields). */
static bool
same_cache(const eng_cache *x, const eng_cache *y)
{
	const mcc_soa *a = &x->soa;
	const mcc_soa *b = &y->soa;

	if (a->n_tpl != b->n_tpl || a->n_cyl != b->n_cyl || x->n_side != y->n_side)
		return false;
	for (int w = 0; w < a->words; w++)
		if (memcmp(a->bits + (size_t) w * a->cap_cyl, b->bits + (size_t) w * b->cap_cyl,
				   sizeof(uint64_t) * a->n_cyl) != 0)
			return false;
	if (memcmp(a->angle, b->angle, a->n_cyl) != 0 || memcmp(a->pc, b->pc, 2 * (size_t) a->n_cyl) != 0 ||
		memcmp(a->first, b->first, 4 * ((size_t) a->n_tpl + 1)) != 0 ||
		memcmp(a->ncyl, b->ncyl, 2 * (size_t) a->n_tpl) != 0 ||
		memcmp(a->id, b->id, 8 * (size_t) a->n_tpl) != 0 || memcmp(x->side, y->side, x->n_side) != 0)
		return false;
	for (uint32_t i = 0; i < a->n_tpl; i++)
	{
		const eng_entry *e = &x->entries[i];
		const eng_entry *f = &y->entries[i];

		if (e->key != f->key || e->hash != f->hash || e->side != f->side ||
			e->insert_xid != f->insert_xid || e->delete_xid != f->delete_xid ||
			e->flags != f->flags)
			return false;
	}
	return true;
}

/*
 * A load of `rows` rows (LOAD_BEGIN expecting `expected`) on server s:
 * first an abandoned load of half of them and a load failing at a bad row
 * (both with their prefault running), then the load itself. Returns the
 * gallery's cache; *started: whether a prefault ran during the load.
 */
static eng_cache *
load_on(eng_server *s, int expected, int rows, bool *started)
{
	const mcc_gallery_id g = {5, 16400, 3};
	eng_conn   *c = eng_conn_add(s, -1);
	eng_gallery *gal;
	eng_buf		b;
	tl_frame	f;

	eng_buf_init(&b);
	/* abandoned: a second LOAD_BEGIN on the connection drops the first */
	tl_load_begin(&b, 1, &g, 1, (uint64_t) expected);
	frames(&b, 1, 0, rows / 2, 400, -1);
	tl_load_begin(&b, 2, &g, 2, (uint64_t) expected);
	frames(&b, 2, 0, rows / 2, 400, rows / 2 - 10);
	tl_load_end(&b, 2);
	ip_send(s, c, &b);
	UNIT_CHECK(ip_error_of(c, 2) == MCC_PERR_DATA, "a load with a bad row fails (prefault %d)",
			   s->cfg.load_prefault);
	ip_clear_out(c);
	eng_buf_free(&b);

	eng_buf_init(&b);
	tl_load_begin(&b, 3, &g, 3, (uint64_t) expected);
	frames(&b, 3, 0, 800, 400, -1);
	ip_send(s, c, &b);
	gal = eng_gallery_get(s, &g, false);
	*started = gal != NULL && gal->loads != NULL && gal->loads->build != NULL &&
		gal->loads->build->prefault != NULL;
	eng_buf_free(&b);
	eng_buf_init(&b);
	frames(&b, 3, 800, rows, 400, -1);
	tl_load_end(&b, 3);
	ip_send(s, c, &b);
	UNIT_CHECK(ip_reply(c, 3, &f, NULL) == 1 && f.h.type == MCC_MSG_LOADED, "the load of %d rows (%d expected) succeeds (prefault %d)",
			   rows, expected, s->cfg.load_prefault);
	ip_clear_out(c);
	eng_buf_free(&b);
	return gal != NULL ? gal->cache : NULL;
}

/* The same loads with and without the prefault build the same cache. */
static void
test_loads(int expected, int rows)
{
	eng_config	off = {.threads = 2, .delta_timeout_ms = 300, .max_batch = 64, .load_prefault = -1};
	eng_config	on = off;
	eng_server	s0;
	eng_server	s1;
	eng_cache  *c0;
	eng_cache  *c1;
	bool		started0;
	bool		started1;

	on.load_prefault = 2;
	eng_server_init(&s0, &off);
	eng_server_init(&s1, &on);
	c0 = load_on(&s0, expected, rows, &started0);
	c1 = load_on(&s1, expected, rows, &started1);
	UNIT_CHECK(!started0 && started1, "a prefault runs during the load only where configured");
	UNIT_CHECK(c0 != NULL && c1 != NULL && c1->prefault == NULL &&
			   c1->soa.n_tpl == (uint32_t) rows,
			   "both loads serve %d rows, the prefault stopped at LOAD_END", rows);
	UNIT_CHECK(c0 != NULL && c1 != NULL && same_cache(c0, c1),
			   "%d rows (%d expected): the cache built with the prefault equals the one without",
			   rows, expected);
	eng_server_destroy(&s0);
	eng_server_destroy(&s1);
}

/* Cylinders of template t. */
static int
cyl_of(const tl_tpl *t)
{
	mcc_template_view v;
	mcc_error	err;

	return mcc_template_open(t->b, t->n, &v, &err) == MCC_OK ? v.n_cyl : 0;
}

/*
 * A load whose first frame's rows have fewer cylinders than the rest (the
 * rest about 4 % more a row, as a first frame's sample can be short): the
 * room made at the first frame holds the whole load, so the cache never
 * grows with rows in it (each such growth copies them and faults the new
 * arrays in again: 32 s at 100 M rows). A margin of 2 % alone would not.
 */
static void
test_first_margin(void)
{
	const mcc_gallery_id g = {5, 16401, 3};
	eng_config	cfg = {.threads = 2, .delta_timeout_ms = 300, .max_batch = 64, .load_prefault = -1};
	eng_server	s;
	eng_conn   *c;
	eng_gallery *gal;
	eng_buf		b;
	tl_frame	f;
	int			order[DISTINCT];
	double		all = 0;
	double		top = 0;
	int			m = 0;
	double		ratio = 0;
	int64_t		keys[400];
	uint64_t	xid[400];
	tl_tpl		t[400];
	uint32_t	cap_first = 0;
	uint32_t	cap_last = 0;
	const int	rows = 6000;

	/* templates by cylinders, most first; the first m the later rows' */
	for (int i = 0; i < DISTINCT; i++)
	{
		order[i] = i;
		all += cyl_of(&gt[i]);
	}
	for (int i = 1; i < DISTINCT; i++)
		for (int j = i; j > 0 && cyl_of(&gt[order[j]]) > cyl_of(&gt[order[j - 1]]); j--)
		{
			int			x = order[j];

			order[j] = order[j - 1];
			order[j - 1] = x;
		}
	all /= DISTINCT;
	/* the largest set of the biggest templates whose mean is still 4 % above all's */
	for (int i = 0; i < DISTINCT; i++)
	{
		top += cyl_of(&gt[order[i]]);
		if (top / (i + 1) >= all * 1.04)
		{
			m = i + 1;
			ratio = top / (i + 1) / all;
		}
	}
	UNIT_CHECK(m > 0 && ratio >= 1.03 && ratio < 1.06,
			   "later rows' templates: %d with %.3f times the first frame's cylinders a row", m, ratio);
	eng_server_init(&s, &cfg);
	c = eng_conn_add(&s, -1);
	eng_buf_init(&b);
	tl_load_begin(&b, 1, &g, 1, (uint64_t) rows);
	for (int k = 0; k < rows; k += 400)
	{
		for (int i = 0; i < 400; i++)
		{
			keys[i] = k + i;
			xid[i] = 7;
			/* the first frame: every template in turn; then the biggest m */
			t[i] = gt[k == 0 ? i % DISTINCT : order[(k + i) % m]];
		}
		tl_load_rows(&b, 1, 400, keys, xid, NULL, t);
		ip_send(&s, c, &b);
		eng_buf_free(&b);
		eng_buf_init(&b);
		gal = eng_gallery_get(&s, &g, false);
		if (gal != NULL && gal->loads != NULL && gal->loads->build != NULL)
		{
			if (k == 0)
				cap_first = gal->loads->build->soa.cap_cyl;
			cap_last = gal->loads->build->soa.cap_cyl;
		}
	}
	tl_load_end(&b, 1);
	ip_send(&s, c, &b);
	UNIT_CHECK(ip_reply(c, 1, &f, NULL) == 1 && f.h.type == MCC_MSG_LOADED, "the load of %d rows succeeds", rows);
	/* the loaded cache is the one built: its room is still the first frame's */
	gal = eng_gallery_get(&s, &g, false);
	if (gal != NULL && gal->cache != NULL)
		cap_last = gal->cache->soa.cap_cyl;
	UNIT_CHECK(cap_first != 0 && cap_last == cap_first,
			   "the room made at the first frame held every row (%u cylinders then, %u once loaded)",
			   cap_first, cap_last);
	eng_buf_free(&b);
	eng_server_destroy(&s);
}

int
main(void)
{
	mcc_lss_init();
	eng_log_set_level(ENG_LOG_ERROR);
	test_range(true);
	test_range(false);
	test_lead();
	gt = tl_templates(41, DISTINCT, 15);
	test_loads(20000, 12000);	/* room to spare */
	test_loads(8000, 14000);	/* the cache grows: the prefault stops and starts again */
	test_first_margin();
	tl_templates_free(gt, DISTINCT);
	return unit_done();
}
