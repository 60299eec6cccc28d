/*
 * test_engine_cache.c: the matcher engine's cache of tuple versions:
 * growth and memory accounting, the dedupe of load and delta rows, the
 * delete rules, settling and purging, and compaction; the templates it
 * rebuilds from its cylinders and sides (eng_cache_template) equal the
 * stored blobs byte for byte, in both profiles.
 */
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "engine_testlib.h"
#include "eng_cache.h"
#include "eng_cache_count.h"
#include "eng_cache_settle.h"
#include "eng_soa.h"

static const mcc_profile *prof;

static uint64_t
hash_of(const tl_tpl *t)
{
	return mcc_template_hash(t->b, t->n);
}

/* Append t as a plain entry; returns the status. */
static mcc_status
add(eng_cache *c, int64_t key, uint64_t ixid, uint64_t dxid, uint32_t flags,
	const tl_tpl *t)
{
	mcc_template_view v = tl_view(t);
	mcc_error	err;

	return eng_cache_append(c, key, hash_of(t), ixid, dxid, flags, &v, NULL, &err);
}

/* Entries with this key that are live (not purged). */
static int
count_key(const eng_cache *c, int64_t key)
{
	int			n = 0;

	for (uint32_t i = eng_cache_find_key(c, key); i != ENG_NONE; i = eng_cache_next_key(c, i))
		n++;
	return n;
}

/* Live entries of key that are not marked deleted. */
static int
count_undeleted(const eng_cache *c, int64_t key)
{
	int			n = 0;

	for (uint32_t i = eng_cache_find_key(c, key); i != ENG_NONE; i = eng_cache_next_key(c, i))
		n += c->entries[i].delete_xid == 0;
	return n;
}

/* Does every live template's scan score equal mcc_lss_score? */
static bool
scan_matches(const eng_cache *c, const tl_tpl *probe, const tl_tpl *by_key, int n_keys)
{
	mcc_template_view pv = tl_view(probe);
	mcc_probe  *q = aligned_alloc(64, (mcc_probe_size() + 63) & ~(size_t) 63);
	float	   *s = malloc(sizeof(float) * (c->soa.n_tpl + 1));
	bool		ok = true;

	mcc_probe_init(q, &pv);
	mcc_soa_scan(q, &c->soa, 0, c->soa.n_tpl, s);
	for (uint32_t i = 0; i < c->soa.n_tpl && ok; i++)
	{
		int64_t		key = c->entries[i].key;
		mcc_template_view gv;

		if (key < 0 || key >= n_keys)
			return false;
		gv = tl_view(&by_key[key]);
		ok = s[i] == mcc_lss_score(q, &gv) && c->soa.id[i] == key &&
			c->entries[i].hash == hash_of(&by_key[key]);
	}
	free(s);
	free(q);
	return ok;
}

/*
 * Does every live entry's rebuilt template equal its stored blob (after the
 * varlena header), open as a valid template with the same view, and hash to
 * the entry's hash?
 */
static bool
rebuilt_matches(const eng_cache *c, const tl_tpl *by_key, int n_keys)
{
	uint8_t    *buf = malloc(eng_template_max_bytes());
	bool		ok = buf != NULL;

	for (uint32_t i = 0; i < c->soa.n_tpl && ok; i++)
	{
		int64_t		key = c->entries[i].key;
		mcc_template_view v;
		mcc_template_view w;
		mcc_error	err;

		if (c->entries[i].flags & ENG_E_PURGED)
			continue;
		if (key < 0 || key >= n_keys)
			return false;
		eng_cache_template(c, i, buf, &v);
		ok = eng_cache_template_bytes(c, i) == by_key[key].n && v.size == by_key[key].n &&
			v.base == buf && memcmp(buf + 4, by_key[key].b + 4, by_key[key].n - 4) == 0 &&
			mcc_template_hash(buf, v.size) == c->entries[i].hash &&
			mcc_template_open(buf, v.size, &w, &err) == MCC_OK &&
			v.profile == w.profile && v.size == w.size && v.width == w.width &&
			v.height == w.height && v.dpi == w.dpi && v.n_min == w.n_min &&
			v.n_cyl == w.n_cyl && v.words == w.words && v.minutiae == w.minutiae &&
			v.bits == w.bits && v.meta == w.meta;
		/* the parts refinement geometry reads in place are the template's */
		{
			int			n_min;
			int			n_cyl;
			const uint8_t *mins;
			const uint8_t *cmin;

			eng_cache_minutiae(c, i, &n_min, &mins, &n_cyl, &cmin);
			ok = ok && n_min == v.n_min && n_cyl == v.n_cyl &&
				memcmp(mins, v.minutiae, (size_t) n_min * MCC_MINUTIA_RECSZ) == 0;
			for (int k = 0; ok && k < n_cyl; k++)
				ok = cmin[k] == mcc_template_cyl_minutia(&v, k);
		}
	}
	free(buf);
	return ok;
}

/*
 * An empty cache of prof, its capacities left to the first append and its
 * memory not charged: for the tests of entries and their versions, not of
 * accounting.
 */
static eng_cache *
entries_cache(void)
{
	mcc_error	err;
	eng_cache  *c = eng_cache_new(prof, NULL, 0, 0, &err);

	if (c == NULL)
	{
		fprintf(stderr, "eng_cache_new: %s\n", err.message);
		exit(1);
	}
	return c;
}

/* Growth through regrow keeps every cylinder; accounting follows capacity. */
static void
test_growth_and_accounting(const tl_tpl *t, int n)
{
	eng_budget	b = {0, 0};
	mcc_error	err;
	eng_cache  *c = eng_cache_new(prof, &b, 4, 8, &err);
	bool		ok = true;

	UNIT_CHECK(c != NULL && b.used == c->bytes, "new cache charges its bytes");
	for (int i = 0; i < n && ok; i++)
		ok = add(c, i, 100 + i, 0, 0, &t[i]) == MCC_OK;
	UNIT_CHECK(ok && c->soa.n_tpl == (uint32_t) n, "%d appends through several regrows", n);
	UNIT_CHECK(c->bytes == eng_cache_bytes_for(prof, c->soa.cap_tpl, c->soa.cap_cyl, c->cap_side) &&
			   b.used == c->bytes, "charge equals the capacities' bytes (%llu)",
			   (unsigned long long) c->bytes);
	UNIT_CHECK(c->soa.first[c->soa.n_tpl] == c->soa.n_cyl, "first[n_tpl] == n_cyl after regrows");
	UNIT_CHECK(scan_matches(c, &t[0], t, n), "scan after regrows equals mcc_lss_score");
	UNIT_CHECK(rebuilt_matches(c, t, n), "after regrows every rebuilt template is its stored blob");
	UNIT_CHECK(count_key(c, 7) == 1 && eng_cache_find_key(c, n + 5) == ENG_NONE,
			   "key index finds keys");
	eng_cache_free(c);
	UNIT_CHECK(b.used == 0, "free releases the charge");
}

/* A limit refuses growth with MCC_ERR_MEMORY and leaves the cache as it was. */
static void
test_memory_limit(const tl_tpl *t, int n)
{
	eng_budget	b = {0, 0};
	mcc_error	err;
	eng_cache  *c;
	uint32_t	before;
	uint64_t	used;
	mcc_status	st = MCC_OK;
	int			i;

	b.limit = eng_cache_bytes_for(prof, 40, 40 * 40, 40 * 600);
	c = eng_cache_new(prof, &b, 16, 16, &err);
	for (i = 0; i < n && st == MCC_OK; i++)
		st = add(c, i, 5, 0, 0, &t[i]);
	UNIT_CHECK(st == MCC_ERR_MEMORY, "append over the limit fails with MCC_ERR_MEMORY after %d", i - 1);
	before = c->soa.n_tpl;
	used = b.used;
	UNIT_CHECK(b.used <= b.limit, "usage stays within the limit (%llu <= %llu)",
			   (unsigned long long) b.used, (unsigned long long) b.limit);
	UNIT_CHECK(add(c, 9999, 5, 0, 0, &t[n - 1]) == MCC_ERR_MEMORY && c->soa.n_tpl == before &&
			   b.used == used && eng_cache_find_key(c, 9999) == ENG_NONE,
			   "a refused append changes nothing");
	UNIT_CHECK(scan_matches(c, &t[1], t, n), "cache still scans correctly after refusals");
	eng_cache_free(c);
	UNIT_CHECK(eng_cache_new(prof, &b, 1000000, 1000, &err) == NULL &&
			   err.status == MCC_ERR_MEMORY && b.used == 0, "a new cache over the limit is refused");
}

/* Delta inserts: absorbed by the load's identical version only. */
static void
test_dedupe(const tl_tpl *t)
{
	eng_cache  *c = entries_cache();
	mcc_error	err;
	mcc_template_view v0 = tl_view(&t[0]);
	mcc_template_view v1 = tl_view(&t[1]);
	bool		added;

	add(c, 1, 50, 0, ENG_E_LOAD_INS | ENG_E_LOAD_DEL, &t[0]);	/* load saw (1, h0, 50) */
	add(c, 2, 60, 0, 0, &t[1]);	/* not from a load */
	UNIT_CHECK(eng_cache_insert(c, 1, 50, &v0, &added, &err) == MCC_OK && !added &&
			   count_key(c, 1) == 1, "delta insert seen by the load is held once");
	UNIT_CHECK(eng_cache_insert(c, 1, 50, &v0, &added, &err) == MCC_OK && added &&
			   count_key(c, 1) == 2, "a second identical insert is a second version");
	UNIT_CHECK(eng_cache_insert(c, 1, 51, &v0, &added, &err) == MCC_OK && added &&
			   count_key(c, 1) == 3, "another xid is another version");
	UNIT_CHECK(eng_cache_insert(c, 1, 50, &v1, &added, &err) == MCC_OK && added &&
			   count_key(c, 1) == 4, "another template is another version");
	UNIT_CHECK(eng_cache_insert(c, 2, 60, &v1, &added, &err) == MCC_OK && added &&
			   count_key(c, 2) == 2, "entries not from a load never absorb");
	eng_cache_free(c);
}

/* The delete rules for the cases a transaction can produce. */
static void
test_deletes(const tl_tpl *t)
{
	eng_cache  *c = entries_cache();
	mcc_error	err;
	mcc_template_view v0 = tl_view(&t[0]);
	uint64_t	h0 = hash_of(&t[0]);
	bool		added;
	uint32_t	i;

	/* update keeping the template: old version (key 1, xid 10), new by 20 */
	add(c, 1, 10, 0, 0, &t[0]);
	eng_cache_insert(c, 1, 20, &v0, &added, &err);
	i = eng_cache_delete(c, 1, h0, 20);
	UNIT_CHECK(i != ENG_NONE && c->entries[i].insert_xid == 10 && c->entries[i].delete_xid == 20,
			   "update: the delete marks the older version, not the new one");
	UNIT_CHECK(count_undeleted(c, 1) == 1 && count_key(c, 1) == 2,
			   "deleted versions stay searchable");

	/* insert then delete in one transaction */
	eng_cache_insert(c, 2, 30, &v0, &added, &err);
	i = eng_cache_delete(c, 2, h0, 30);
	UNIT_CHECK(i != ENG_NONE && c->entries[i].insert_xid == 30 && count_undeleted(c, 2) == 0,
			   "insert and delete in one transaction: its own version is marked");

	/* update then delete of the new version in one transaction: both go */
	add(c, 3, 10, 0, 0, &t[0]);
	eng_cache_insert(c, 3, 40, &v0, &added, &err);
	eng_cache_delete(c, 3, h0, 40);
	eng_cache_delete(c, 3, h0, 40);
	UNIT_CHECK(count_undeleted(c, 3) == 0, "update then delete: both versions marked");

	/* a delete the load already saw is absorbed, not applied twice */
	add(c, 4, 10, 40, ENG_E_LOAD_INS | ENG_E_LOAD_DEL, &t[0]);
	add(c, 4, 40, 0, ENG_E_LOAD_INS | ENG_E_LOAD_DEL, &t[0]);
	eng_cache_insert(c, 4, 40, &v0, &added, &err);
	i = eng_cache_delete(c, 4, h0, 40);
	UNIT_CHECK(!added && i != ENG_NONE && c->entries[i].insert_xid == 10 &&
			   count_undeleted(c, 4) == 1,
			   "load saw update by 40: its delta is absorbed and the new version stays live");

	/* a version whose earlier deleter aborted can be deleted again */
	add(c, 5, 10, 77, 0, &t[0]);
	i = eng_cache_delete(c, 5, h0, 80);
	UNIT_CHECK(i != ENG_NONE && c->entries[i].delete_xid == 80,
			   "delete over an (aborted) earlier deleter takes the version");
	UNIT_CHECK(eng_cache_delete(c, 6, h0, 80) == ENG_NONE &&
			   eng_cache_delete(c, 1, h0 ^ 1, 80) == ENG_NONE,
			   "deletes of unknown keys or hashes mark nothing");
	eng_cache_free(c);
}

/* SETTLE: commit and abort of inserts and deletes, the horizon, XIDS. */
static void
test_settle(const tl_tpl *t)
{
	eng_cache  *c = entries_cache();
	uint64_t   *x;
	uint32_t	n;
	uint64_t	xids[4] = {10, 11, 12, 13};
	uint32_t	st[4] = {MCC_XID_COMMITTED, MCC_XID_ABORTED, MCC_XID_COMMITTED, MCC_XID_IN_PROGRESS};

	add(c, 1, 10, 0, 0, &t[0]);	/* committed insert */
	add(c, 2, 11, 0, 0, &t[1]);	/* aborted insert */
	add(c, 3, 10, 12, 0, &t[2]);	/* committed delete by 12 */
	add(c, 4, 2, 11, 0, &t[3]);	/* frozen insert, aborted delete */
	add(c, 5, 13, 0, 0, &t[4]);	/* in progress */
	UNIT_CHECK(c->n_unsettled == 5, "five unsettled entries (%u)", c->n_unsettled);
	n = eng_cache_xids(c, 100, &x);
	UNIT_CHECK(n == 4 && x[0] == 10 && x[1] == 11 && x[2] == 12 && x[3] == 13,
			   "XIDS lists the distinct xids ascending (%u)", n);
	free(x);
	n = eng_cache_xids(c, 2, &x);
	UNIT_CHECK(n == 2 && x[1] == 11, "XIDS is capped at its maximum");
	free(x);
	/* horizon 12: the delete by 12 is committed but not yet older than all */
	UNIT_CHECK(eng_cache_settle(c, 12, xids, st, 4) == 1, "one purge (the aborted insert)");
	UNIT_CHECK(count_key(c, 2) == 0 && count_key(c, 3) == 1 && count_key(c, 1) == 1,
			   "aborted insert purged, recent delete kept searchable");
	UNIT_CHECK(count_undeleted(c, 4) == 1, "aborted delete undone");
	UNIT_CHECK(c->n_unsettled == 2, "unsettled: the kept delete and the in-progress insert (%u)",
			   c->n_unsettled);
	UNIT_CHECK(eng_cache_settle(c, 13, NULL, NULL, 0) == 1 && count_key(c, 3) == 0,
			   "a later horizon purges the committed delete");
	UNIT_CHECK(c->n_unsettled == 1 && eng_cache_searchable(c) == 3,
			   "one unsettled left, three searchable");
	eng_cache_free(c);
}

/*
 * The count by definition (eng_cache.h), reading every entry: certain
 * entries, and the others as (insert, delete, flags) -> entries, in a list
 * sorted like eng_cache_count's groups.
 */
static uint64_t
count_ref(const eng_cache *c, uint64_t xmin, eng_count_group *g, uint32_t *ng)
{
	uint64_t	n = 0;

	*ng = 0;
	for (uint32_t i = 0; i < c->soa.n_tpl; i++)
	{
		const eng_entry *e = &c->entries[i];
		uint32_t	flags = 0;
		uint32_t	j;

		if ((e->flags & ENG_E_PURGED) ||
			(e->delete_xid != 0 && (e->flags & ENG_E_DEL_COMMITTED) && e->delete_xid < xmin))
			continue;
		if (eng_entry_certain(e, xmin))
		{
			n++;
			continue;
		}
		flags |= (e->flags & ENG_E_INS_SETTLED) ? MCC_COUNT_F_INS_COMMITTED : 0;
		flags |= e->delete_xid != 0 && (e->flags & ENG_E_DEL_COMMITTED) ? MCC_COUNT_F_DEL_COMMITTED : 0;
		for (j = 0; j < *ng; j++)
			if (g[j].insert_xid == e->insert_xid && g[j].delete_xid == e->delete_xid && g[j].flags == flags)
				break;
		if (j == *ng)
			g[(*ng)++] = (eng_count_group) {e->insert_xid, e->delete_xid, flags, 0};
		g[j].entries++;
	}
	return n;
}

/* Does eng_cache_count at xmin equal the definition (groups in any order)? */
static bool
count_matches(const eng_cache *c, uint64_t xmin)
{
	eng_count_group want[64];
	eng_count_group *got;
	uint32_t	nw;
	uint32_t	ng;
	uint64_t	certain;
	uint64_t	n = count_ref(c, xmin, want, &nw);
	bool		ok = eng_cache_count(c, xmin, 64, &certain, &got, &ng) && certain == n && ng == nw;

	for (uint32_t i = 0; ok && i < nw; i++)
	{
		bool		found = false;

		for (uint32_t j = 0; j < ng && !found; j++)
			found = memcmp(&got[j], &want[i], sizeof(eng_count_group)) == 0;
		ok = found;
	}
	free(got);
	if (!ok)
		printf("# count at xmin %llu: %llu certain (want %llu), %u groups (want %u)\n",
			   (unsigned long long) xmin, (unsigned long long) certain, (unsigned long long) n, ng, nw);
	return ok;
}

/*
 * Counts keep a memo of the entries certain for every snapshot: after each
 * kind of change (an insert, a delete, a settle that commits, aborts and
 * purges, a load's flags cleared) the count still equals the definition.
 */
static void
test_count_memo(const tl_tpl *t)
{
	eng_cache  *c = entries_cache();
	mcc_error	err;
	mcc_template_view v = tl_view(&t[7]);
	uint64_t	xids[3] = {40, 41, 42};
	uint32_t	st[3] = {MCC_XID_COMMITTED, MCC_XID_ABORTED, MCC_XID_COMMITTED};
	bool		added;
	bool		ok = true;

	for (int i = 0; i < 20; i++)
		add(c, i, i % 5 == 0 ? 30 : 0, i % 7 == 3 ? 35 : 0, 0, &t[i]);
	ok = ok && count_matches(c, 100) && count_matches(c, 32) && count_matches(c, 100);
	ok = ok && eng_cache_insert(c, 100, 40, &v, &added, &err) == MCC_OK && count_matches(c, 100);
	ok = ok && eng_cache_insert(c, 101, 41, &v, &added, &err) == MCC_OK && count_matches(c, 100);
	ok = ok && eng_cache_delete(c, 2, hash_of(&t[2]), 42) != ENG_NONE && count_matches(c, 100);
	(void) eng_cache_settle(c, 36, xids, st, 3);
	ok = ok && count_matches(c, 100) && count_matches(c, 41);
	eng_cache_purge(c, 4);
	ok = ok && count_matches(c, 100) && c->count_base > 0;
	UNIT_CHECK(ok, "visibility counts equal the definition after each change (the memo follows the cache)");
	eng_cache_free(c);
}

/* Compaction drops tombstones and keeps scores, keys and the index. */
static void
test_compaction(const tl_tpl *t, int n)
{
	eng_budget	b = {0, 0};
	mcc_error	err;
	eng_cache  *c = eng_cache_new(prof, &b, 0, 0, &err);
	eng_cache  *d;
	uint64_t	pred;
	bool		ok = true;
	uint32_t	live = 0;

	for (int i = 0; i < n; i++)
		add(c, i, 100, i % 3 == 0 ? 200 : 0, 0, &t[i]);
	for (uint32_t i = 0; i < c->soa.n_tpl; i++)
		if (i % 3 == 0)
			eng_cache_purge(c, i);
	UNIT_CHECK(eng_cache_wants_compaction(c), "a third tombstones asks for compaction");
	pred = eng_cache_compacted_bytes(c);
	d = eng_cache_compacted(c, &err);
	UNIT_CHECK(d != NULL && d->bytes == pred, "compacted copy has the predicted size");
	eng_budget_force(&b, pred);
	eng_cache_adopt(d, &b, pred);
	for (int i = 0; i < n; i++)
		live += i % 3 != 0;
	UNIT_CHECK(d->soa.n_tpl == live && d->n_purged == 0 && d->n_unsettled == c->n_unsettled,
			   "compacted: %u live entries, no tombstones", live);
	for (int i = 0; i < n && ok; i++)
		ok = count_key(d, i) == (i % 3 != 0);
	UNIT_CHECK(ok, "index of the copy finds exactly the live keys");
	UNIT_CHECK(scan_matches(d, &t[2], t, n), "scan of the copy equals mcc_lss_score");
	UNIT_CHECK(rebuilt_matches(d, t, n), "every rebuilt template of the copy is its stored blob");
	UNIT_CHECK(!eng_cache_wants_compaction(d), "the copy wants no compaction");
	eng_cache_free(c);
	eng_cache_free(d);
	UNIT_CHECK(b.used == 0, "all charges released");
}

/* The other profile (validity masks, other word counts) rebuilds as well. */
static void
test_rebuild_other_profile(const tl_tpl *t, int n)
{
	const mcc_profile *p = mcc_profile_by_id(MCC_PROFILE_TPAMI2010);
	tl_tpl	   *o = calloc((size_t) n, sizeof(tl_tpl));
	mcc_error	err;
	eng_cache  *c = eng_cache_new(p, NULL, 0, 0, &err);
	bool		ok = c != NULL;

	for (int i = 0; i < n && ok; i++)
	{
		mcc_template_view v = tl_view(&t[i]);
		mcc_minutiae ms;

		mcc_template_minutiae(&v, &ms);
		ok = mcc_template_build(&ms, p, NULL, &o[i].n, &err) == MCC_OK &&
			(o[i].b = calloc(1, o[i].n)) != NULL &&
			mcc_template_build(&ms, p, o[i].b, &o[i].n, &err) == MCC_OK;
		if (ok)
		{
			mcc_template_view w = tl_view(&o[i]);

			ok = eng_cache_append(c, i, hash_of(&o[i]), 3, 0, 0, &w, NULL, &err) == MCC_OK;
		}
	}
	UNIT_CHECK(ok && rebuilt_matches(c, o, n),
			   "%s: every rebuilt template of %d is its stored blob", p->name, n);
	eng_cache_free(c);
	tl_templates_free(o, n);
}

/*
 * Rows [lo, hi) of t (views v) appended in `frames` frames of the bulk
 * path, every frame reserved before any is written (as a load's pipeline
 * does with two), the rows written backwards (threads write in any order),
 * then linked in the order reserved; the xids as test_bulk_equals_append's
 * row-by-row cache has them. false if a reservation failed.
 */
static bool
bulk_frames(eng_cache *b, const tl_tpl *t, const mcc_template_view *v, eng_bulk_at *at,
			int lo, int hi, int frames)
{
	int			cut[4] = {lo, lo + (hi - lo) / frames, hi, hi};
	mcc_error	err;

	cut[frames] = hi;
	for (int f = 0; f < frames; f++)
		if (eng_cache_bulk_reserve(b, (uint32_t) (cut[f + 1] - cut[f]), v + cut[f], at + cut[f],
								   f == 0, &err) != MCC_OK)
			return false;
	for (int r = hi - 1; r >= lo; r--)
		eng_cache_bulk_put(b, &at[r], r % 50, mcc_template_hash(t[r].b, t[r].n),
						   r % 4 == 0 ? 0 : 100 + (uint64_t) r % 7,
						   r % 5 == 0 ? 200 + (uint64_t) r % 3 : 0, &v[r], (uint64_t) r + 1, 7);
	for (int f = 0; f < frames; f++)
	{
		uint64_t	cyl = 0;
		uint64_t	side = 0;

		for (int r = cut[f]; r < cut[f + 1]; r++)
		{
			cyl += (uint64_t) v[r].n_cyl;
			side += eng_side_bytes(&v[r]);
		}
		eng_cache_bulk_end(b, (uint32_t) (cut[f + 1] - cut[f]), cyl, side);
	}
	return true;
}

/*
 * A bulk reservation never grows the cache while another frame's rows are
 * reserved (their writers would write into arrays that moved): it says
 * MCC_ERR_LIMIT and reserves nothing, and grows once they are linked.
 */
static void
test_bulk_no_growth_while_reserved(const tl_tpl *t, int n)
{
	mcc_error	err;
	eng_cache  *c = eng_cache_new(prof, NULL, 8, 8, &err);
	mcc_template_view v[2];
	eng_bulk_at at[2];
	bool		refused = false;
	bool		kept = true;
	bool		grew_after = false;
	int			reserved = 0;

	v[0] = tl_view(&t[0]);
	v[1] = tl_view(&t[1 % n]);
	UNIT_CHECK(c != NULL && eng_cache_bulk_reserve(c, 1, v, at, false, &err) == MCC_ERR_LIMIT &&
			   c->bulk_rows == 0, "bulk reserve: no room and no growth allowed: refused, nothing reserved");
	for (int i = 0; c != NULL && i < 10000 && !refused; i++)
	{
		uint32_t	cap_cyl = c->soa.cap_cyl;
		uint32_t	cap_tpl = c->soa.cap_tpl;
		mcc_status	st = eng_cache_bulk_reserve(c, 1, &v[i % 2], at, true, &err);

		if (st == MCC_OK)
			reserved++;
		refused = st == MCC_ERR_LIMIT && reserved > 0;
		kept = kept && (st == MCC_OK || (c->soa.cap_cyl == cap_cyl && c->soa.cap_tpl == cap_tpl &&
										 c->bulk_rows == (uint32_t) reserved));
	}
	UNIT_CHECK(refused && kept, "bulk reserve: a growth is refused while %d rows are reserved, "
			   "the room and the reservations unchanged", reserved);
	if (c != NULL && refused)
	{
		uint64_t	cyl = 0;
		uint64_t	side = 0;

		for (int i = 0; i < reserved; i++)
		{
			cyl += (uint64_t) v[i % 2].n_cyl;
			side += eng_side_bytes(&v[i % 2]);
		}
		eng_cache_bulk_end(c, (uint32_t) reserved, cyl, side);
		grew_after = eng_cache_bulk_reserve(c, 1, &v[reserved % 2], at, true, &err) == MCC_OK &&
			at[0].row == (uint32_t) reserved;
	}
	UNIT_CHECK(grew_after, "bulk reserve: once they are linked the cache grows");
	eng_cache_free(c);
}

/*
 * Rows appended in bulk (eng_cache_bulk_*: a load's frames) leave the cache
 * exactly as eng_cache_append row by row would, in three frames (the last
 * two reserved before either is written, as a load's pipeline does), with
 * rows written out of order (as threads may), settled and unsettled xids
 * and deletes.
 */
static void
test_bulk_equals_append(const tl_tpl *t, int n)
{
	mcc_error	err;
	eng_cache  *a = eng_cache_new(prof, NULL, 8, 8, &err);
	eng_cache  *b = eng_cache_new(prof, NULL, 8, 8, &err);
	mcc_template_view *v = calloc((size_t) n, sizeof(*v));
	eng_bulk_at *at = calloc((size_t) n, sizeof(*at));
	bool		ok = a != NULL && b != NULL && v != NULL && at != NULL;
	int			split = n / 3;
	uint64_t	rest_cyl = 0;
	uint64_t	rest_side = 0;

	for (int i = 0; ok && i < n; i++)
	{
		uint64_t	ixid = i % 4 == 0 ? 0 : 100 + (uint64_t) i % 7;
		uint64_t	dxid = i % 5 == 0 ? 200 + (uint64_t) i % 3 : 0;
		uint32_t	idx;

		v[i] = tl_view(&t[i]);
		ok = eng_cache_append(a, i % 50, mcc_template_hash(t[i].b, t[i].n), ixid, dxid,
							  ENG_E_LOAD_INS | ENG_E_LOAD_DEL, &v[i], &idx, &err) == MCC_OK;
		a->entries[idx].tid = (uint64_t) i + 1;
		a->entries[idx].xmin = 7;
	}
	/* the first frame grows the cache; room for the rest made at once */
	for (int i = split; i < n; i++)
	{
		rest_cyl += (uint64_t) v[i].n_cyl;
		rest_side += eng_side_bytes(&v[i]);
	}
	ok = ok && bulk_frames(b, t, v, at, 0, split, 1) &&
		eng_cache_reserve(b, (uint64_t) (n - split), rest_cyl, rest_side, &err) == MCC_OK;
	/* the other two reserved before either is written (a load's pipeline) */
	ok = ok && bulk_frames(b, t, v, at, split, n, 2);
	UNIT_CHECK(ok && a->soa.n_tpl == b->soa.n_tpl && a->soa.n_cyl == b->soa.n_cyl &&
			   a->n_side == b->n_side && a->n_unsettled == b->n_unsettled,
			   "bulk append: the same counts as row by row (%u entries)", ok ? b->soa.n_tpl : 0);
	for (uint32_t k = 0; ok && k < a->soa.n_tpl; k++)
	{
		const eng_entry *x = &a->entries[k];
		const eng_entry *y = &b->entries[k];

		ok = x->key == y->key && x->hash == y->hash && x->insert_xid == y->insert_xid &&
			x->delete_xid == y->delete_xid && x->side == y->side && x->flags == y->flags &&
			x->tid == y->tid && x->xmin == y->xmin &&
			a->soa.first[k] == b->soa.first[k] && a->soa.ncyl[k] == b->soa.ncyl[k] &&
			a->soa.id[k] == b->soa.id[k];
	}
	ok = ok && a->soa.first[a->soa.n_tpl] == b->soa.first[b->soa.n_tpl] &&
		memcmp(a->side, b->side, a->n_side) == 0 &&
		memcmp(a->soa.pc, b->soa.pc, a->soa.n_cyl * sizeof(uint16_t)) == 0 &&
		memcmp(a->soa.angle, b->soa.angle, a->soa.n_cyl) == 0;
	for (int w = 0; ok && w < a->soa.words; w++)
		ok = memcmp(a->soa.bits + (size_t) w * a->soa.cap_cyl, b->soa.bits + (size_t) w * b->soa.cap_cyl,
					a->soa.n_cyl * sizeof(uint64_t)) == 0;
	UNIT_CHECK(ok, "bulk append: entries, sides and cylinders equal to row by row");
	/* the key index finds the same versions */
	for (int64_t key = 0; ok && key < 50; key++)
	{
		int			na = 0;
		int			nb = 0;

		for (uint32_t k = eng_cache_find_key(a, key); k != ENG_NONE; k = eng_cache_next_key(a, k))
			na++;
		for (uint32_t k = eng_cache_find_key(b, key); k != ENG_NONE; k = eng_cache_next_key(b, k))
			nb++;
		ok = na == nb;
	}
	UNIT_CHECK(ok, "bulk append: the key index finds the same entries");
	eng_cache_free(a);
	eng_cache_free(b);
	free(v);
	free(at);
}

int
main(void)
{
	int			n = 210;
	tl_tpl	   *t;

	mcc_lss_init();
	prof = mcc_profile_by_id(MCC_PROFILE_DEFAULT);
	t = tl_templates(11, n, 10);
	test_growth_and_accounting(t, n);
	test_memory_limit(t, n);
	test_dedupe(t);
	test_deletes(t);
	test_settle(t);
	test_count_memo(t);
	test_compaction(t, n);
	test_rebuild_other_profile(t, n);
	test_bulk_equals_append(t, n);
	test_bulk_no_growth_while_reserved(t, n);
	tl_templates_free(t, n);
	return unit_done();
}
