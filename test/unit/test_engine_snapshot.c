/*
 * test_engine_snapshot.c: the cache snapshot file (eng_snapfile.h): CRC-32C,
 * a round trip of a cache (entries without a tuple id or purged are left
 * out) restored in bulk as the arrays of a new cache, and every kind of damaged or foreign file detected: truncated,
 * bytes flipped anywhere, another table, database, signature or cluster,
 * another format version, protocol or profile. Then the rule that says
 * whether a heap tuple is the snapshot's version (frozen xmins included),
 * and the atomic write and read of a file.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unit.h"
#include "engine_testlib.h"
#include "eng_cache.h"
#include "eng_index.h"
#include "eng_snapfile.h"
#include "mcc_crc32c.h"
#include "mcc_proto.h"
#include "testcrc.h"

static void
test_crc(void)
{
	uint8_t		buf[300];
	bool		ok = true;
	tg_rng		r = {7};

	UNIT_CHECK(mcc_crc32c(0, "123456789", 9) == 0xE3069283u, "CRC-32C of \"123456789\"");
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t) tg_int(&r, 0, 255);
	for (size_t off = 0; off < 8; off++)
		for (size_t n = 0; off + n <= sizeof(buf); n += 1 + n / 8)
			ok &= mcc_crc32c(0, buf + off, n) == tcrc_reflected(TCRC_32C, buf + off, n);
	UNIT_CHECK(ok, "CRC-32C equals the bitwise definition at every offset and length");
	UNIT_CHECK(mcc_crc32c(mcc_crc32c(0, buf, 100), buf + 100, 200) == tcrc_reflected(TCRC_32C, buf, 300),
			   "CRC-32C continues over pieces");
	ok = true;
	for (size_t cut = 0; cut <= sizeof(buf); cut += 1 + cut / 4)
		ok &= mcc_crc32c_combine(mcc_crc32c(0, buf, cut), mcc_crc32c(0, buf + cut, sizeof(buf) - cut),
								 sizeof(buf) - cut) == tcrc_reflected(TCRC_32C, buf, sizeof(buf));
	UNIT_CHECK(ok, "CRC-32C of pieces checked apart, combined, equals the whole's at every cut");
	{
		/* a long piece: the combination's powers of x beyond a few bytes */
		size_t		big = (size_t) 3 << 20;
		uint8_t    *p = malloc(big);

		for (size_t i = 0; i < big; i++)
			p[i] = (uint8_t) (i * 131 + (i >> 9));
		UNIT_CHECK(mcc_crc32c_combine(mcc_crc32c(0, p, 12345), mcc_crc32c(0, p + 12345, big - 12345),
									  big - 12345) == mcc_crc32c(0, p, big),
				   "CRC-32C combined over a 3 MB piece");
		free(p);
	}
}

static const eng_snap_ident ident = {.db_oid = 16384, .rel_oid = 16500,
.signature = UINT64_C(0x1234567890abcdef), .system_id = UINT64_C(7300000000000000001),
.profile_id = 0};

/*
 * A cache of n templates: entry i has tuple id i + 1 and xmin 1000 + i,
 * except every fifth (no tuple id: a delta row) and every seventh (purged).
 */
static eng_cache *
make_cache(const tl_tpl *t, int n, int *expect_rows)
{
	mcc_error	err;
	eng_cache  *c = eng_cache_new(mcc_profile_by_id(MCC_PROFILE_DEFAULT), NULL, 0, 0, &err);

	*expect_rows = 0;
	for (int i = 0; i < n; i++)
	{
		mcc_template_view v = tl_view(&t[i]);
		uint32_t	idx;

		eng_cache_append(c, 100 + i, mcc_template_hash(t[i].b, t[i].n), 0, 0, 0, &v, &idx, &err);
		if (i % 5 != 4)
		{
			c->entries[idx].tid = (uint64_t) i + 1;
			c->entries[idx].xmin = i % 3 == 0 ? (MCC_XMIN_FROZEN | (uint64_t) (1000 + i)) :
				(uint64_t) (1000 + i);
		}
		if (i % 7 == 6)
			eng_cache_purge(c, idx);
		else if (i % 5 != 4)
			(*expect_rows)++;
	}
	return c;
}

/* Decode a copy of buf[0, len); true if it is accepted. */
static bool
accepts(const uint8_t *buf, size_t len, const eng_snap_ident *expect, char *why, size_t why_size)
{
	uint8_t    *copy = malloc(len ? len : 1);
	eng_snap   *s;
	mcc_error	err;
	mcc_status	st;

	memcpy(copy, buf, len);
	mcc_error_clear(&err);
	st = eng_snap_decode(copy, len, expect, &s, &err);
	if (why)
		snprintf(why, why_size, "%s", err.message);
	eng_snap_free(s);
	return st == MCC_OK;
}

/* The CRC of a file's rows, after its bytes were changed, made right again. */
static void
fix_crc(uint8_t *p, size_t len)
{
	uint32_t	crc = mcc_crc32c(0, p, len - 4);

	memcpy(p + len - 4, &crc, 4);
}

/*
 * Patch a uint32 header field at off and fix both CRCs (a well-formed file
 * of another kind).
 */
static uint8_t *
patched(const uint8_t *buf, size_t len, size_t off, uint32_t v)
{
	uint8_t    *p = malloc(len);
	uint32_t	crc;

	memcpy(p, buf, len);
	memcpy(p + off, &v, 4);
	crc = mcc_crc32c(0, p, ENG_SNAP_HEADER_BYTES - 8);
	memcpy(p + ENG_SNAP_HEADER_BYTES - 8, &crc, 4);
	fix_crc(p, len);
	return p;
}

/* A test cache (make_cache) and its snapshot file. */
typedef struct snap_case
{
	eng_cache  *c;
	int			expect_rows;	/* the rows the file holds */
	uint8_t    *buf;			/* the file, malloc'ed */
	size_t		len;
} snap_case;

/* make_cache's cache of t[0, n) and its file of scan LSN scan_lsn; false if encoding failed. */
static bool
snap_case_make(snap_case *sc, const tl_tpl *t, int n, uint64_t scan_lsn)
{
	mcc_error	err;

	sc->c = make_cache(t, n, &sc->expect_rows);
	sc->buf = NULL;
	sc->len = 0;
	return eng_snap_encode(sc->c, &ident, scan_lsn, 1, &sc->buf, &sc->len, &err) == MCC_OK;
}

static void
snap_case_free(snap_case *sc)
{
	free(sc->buf);
	eng_cache_free(sc->c);
}

/*
 * The file decoded: every row's fields and template as the cache had them,
 * then the restored cache's counts, key index, revivals and appends.
 */
static void
check_round_trip(const tl_tpl *t, int n, const snap_case *sc)
{
	uint8_t    *copy = malloc(sc->len);	/* the snapshot's from here on */
	eng_snap   *s;
	mcc_error	err;
	bool		ok;
	int			rows = 0;

	memcpy(copy, sc->buf, sc->len);
	ok = eng_snap_decode(copy, sc->len, &ident, &s, &err) == MCC_OK;
	UNIT_CHECK(ok && s->n_rows == (uint64_t) sc->expect_rows && s->scan_lsn == 4242 &&
			   s->id.profile_id == MCC_PROFILE_DEFAULT,
			   "round trip: %d rows (live entries with a tuple id), header fields kept",
			   sc->expect_rows);
	for (int i = 0; ok && i < n; i++)
	{
		uint32_t	r = eng_snap_find(s, (uint64_t) i + 1);
		bool		written = i % 5 != 4 && i % 7 != 6;
		const eng_entry *e;
		uint8_t    *tb;
		mcc_template_view v;

		if (!written)
		{
			ok = r == ENG_NONE || i % 5 == 4;
			continue;
		}
		rows++;
		ok = r != ENG_NONE;
		if (!ok)
			break;
		e = &s->cache->entries[r];
		/* the template rebuilt from the restored arrays is the stored one, byte for byte */
		tb = malloc(eng_template_max_bytes());
		eng_cache_template(s->cache, r, tb, &v);
		ok = e->key == 100 + i && s->cache->soa.id[r] == 100 + i &&
			e->xmin == (i % 3 == 0 ? (MCC_XMIN_FROZEN | (uint64_t) (1000 + i)) :
						(uint64_t) (1000 + i)) &&
			e->hash == mcc_template_hash(t[i].b, t[i].n) &&
			eng_cache_template_bytes(s->cache, r) == t[i].n &&
			memcmp(tb + 4, t[i].b + 4, t[i].n - 4) == 0 &&
			(e->flags & ENG_E_PURGED);
		free(tb);
	}
	UNIT_CHECK(ok && rows == sc->expect_rows,
			   "round trip: every row's tuple id, xmin, key, hash and template (byte for byte) "
			   "come back, as tombstones until revived");
	/* the restored cache: rows in order, key index, counts; revived entries searchable */
	ok = s->cache->soa.n_tpl == (uint32_t) sc->expect_rows &&
		eng_cache_searchable(s->cache) == 0 && s->cache->n_unsettled == 0;
	for (uint32_t r = 0; r < s->cache->soa.n_tpl; r++)
		eng_cache_revive(s->cache, r, r % 2 ? 0 : 700 + r, 0, ENG_E_LOAD_INS | ENG_E_LOAD_DEL);
	ok = ok && eng_cache_searchable(s->cache) == (uint32_t) sc->expect_rows &&
		s->cache->n_unsettled == ((uint32_t) sc->expect_rows + 1) / 2 &&
		eng_cache_find_key(s->cache, 100) != ENG_NONE &&
		eng_cache_find_key(s->cache, 104) == ENG_NONE;
	{
		/* a row appended after a restore goes after the restored ones */
		mcc_template_view v = tl_view(&t[4]);
		uint32_t	idx = ENG_NONE;

		ok = ok && eng_cache_append(s->cache, 104, mcc_template_hash(t[4].b, t[4].n), 0, 0, 0,
									&v, &idx, &err) == MCC_OK &&
			idx == (uint32_t) sc->expect_rows && eng_cache_find_key(s->cache, 104) == idx &&
			s->cache->soa.first[idx] + (uint32_t) v.n_cyl == s->cache->soa.n_cyl;
	}
	UNIT_CHECK(ok, "the restored cache: counts, key index, revived entries live, appends after");
	UNIT_CHECK(eng_snap_find(s, 9999) == ENG_NONE, "an unknown tuple id is not found");
	eng_snap_free(s);

}

/* Every truncated file, and one with bytes added, is rejected. */
static void
check_truncated(const snap_case *sc)
{
	char		why[300];
	bool		ok = true;

	for (size_t cut = 0; cut < sc->len; cut += (cut < 200 ? 1 : 997))
		ok &= !accepts(sc->buf, cut, &ident, NULL, 0);
	ok &= !accepts(sc->buf, sc->len - 1, &ident, NULL, 0);
	UNIT_CHECK(ok, "every truncated file is rejected (%zu bytes in all)", sc->len);
	accepts(sc->buf, sc->len - 100, &ident, why, sizeof(why));
	UNIT_CHECK(strstr(why, "truncated") != NULL, "truncation: \"%s\"", why);
	{
		/* bytes added at the end */
		uint8_t    *p = malloc(sc->len + 8);

		memcpy(p, sc->buf, sc->len);
		memset(p + sc->len, 0, 8);
		UNIT_CHECK(!accepts(p, sc->len + 8, &ident, why, sizeof(why)), "a file with bytes added is rejected: \"%s\"", why);
		free(p);
	}
}

/* Flipped bits: every byte of the header and trailer, a spread over the rows. */
static void
check_flipped(const snap_case *sc)
{
	int			undetected = 0;
	int			tried = 0;

	for (size_t pos = 0; pos < sc->len; pos += (pos < ENG_SNAP_HEADER_BYTES + 64 || pos + 64 > sc->len) ? 1 : 61)
		for (int bit = 0; bit < 8; bit += 3)
		{
			uint8_t    *p = malloc(sc->len);

			memcpy(p, sc->buf, sc->len);
			p[pos] ^= (uint8_t) (1u << bit);
			tried++;
			undetected += accepts(p, sc->len, &ident, NULL, 0);
			free(p);
		}
	UNIT_CHECK(undetected == 0, "%d of %d files with a flipped bit are accepted", undetected, tried);
}

/* Files of another table, database, signature, cluster or profile are rejected. */
static void
check_foreign(const snap_case *sc)
{
	char		why[300];
	static const struct
	{
		const char *why;	/* what the reason must name */
		const char *what;
	}			foreign[5] = {
		{"another table", "another table's file"},
		{"another table", "another database's file"},
		{"signature", "a file of the table before a rewrite (another signature)"},
		{"cluster", "another cluster's file"},
		{"profile", "a file of another profile"},
	};
	eng_snap_ident expect[5] = {ident, ident, ident, ident, ident};

	expect[0].rel_oid++;
	expect[1].db_oid++;
	expect[2].signature ^= 1;
	expect[3].system_id++;
	expect[4].profile_id = MCC_PROFILE_TPAMI2010;
	for (int f = 0; f < 5; f++)
		UNIT_CHECK(!accepts(sc->buf, sc->len, &expect[f], why, sizeof(why)) && strstr(why, foreign[f].why),
				   "%s is rejected: \"%s\"", foreign[f].what, why);
	UNIT_CHECK(accepts(sc->buf, sc->len, &ident, why, sizeof(why)), "... and one of the profile asked for accepted");
}

/* Well-formed files (CRCs right) of another version or kind are rejected. */
static void
check_versions(const snap_case *sc)
{
	char		why[300];
	uint8_t    *p = patched(sc->buf, sc->len, 8, ENG_SNAP_FORMAT + 1);

	UNIT_CHECK(!accepts(p, sc->len, &ident, why, sizeof(why)) && strstr(why, "format"),
			   "another format version is rejected: \"%s\"", why);
	free(p);
	p = patched(sc->buf, sc->len, 12, MCC_PROTO_VERSION + 1);
	UNIT_CHECK(!accepts(p, sc->len, &ident, why, sizeof(why)) && strstr(why, "protocol"),
			   "a file of another engine protocol is rejected: \"%s\"", why);
	free(p);
	p = patched(sc->buf, sc->len, 16, MCC_PROFILE_TPAMI2010);
	UNIT_CHECK(!accepts(p, sc->len, &ident, why, sizeof(why)),
			   "a header claiming another profile than its templates' is rejected: \"%s\"", why);
	free(p);
	p = patched(sc->buf, sc->len, 28, 3);
	UNIT_CHECK(!accepts(p, sc->len, &ident, why, sizeof(why)),
			   "a header with another cylinder size is rejected: \"%s\"", why);
	free(p);
	p = patched(sc->buf, sc->len, 56, (uint32_t) sc->expect_rows + 1);
	UNIT_CHECK(!accepts(p, sc->len, &ident, why, sizeof(why)) && strstr(why, "inconsistent"),
			   "a header with another row count is rejected: \"%s\"", why);
	free(p);
	/* files of the older formats (1: rows of whole templates, 2: no minutiae counts) */
	for (uint32_t f = 1; f < ENG_SNAP_FORMAT; f++)
	{
		char		say[40];

		snprintf(say, sizeof(say), "format %u, not %u", f, ENG_SNAP_FORMAT);
		p = patched(sc->buf, sc->len, 8, f);
		UNIT_CHECK(!accepts(p, sc->len, &ident, why, sizeof(why)) && strstr(why, say),
				   "a file of format %u is rejected: \"%s\"", f, why);
		free(p);
	}
	p = patched(sc->buf, sc->len, 0, 0x5850414e);
	UNIT_CHECK(!accepts(p, sc->len, &ident, why, sizeof(why)) && strstr(why, "magic"),
			   "another kind of file is rejected: \"%s\"", why);
	free(p);
}

static void
test_round_trip_and_damage(const tl_tpl *t, int n)
{
	snap_case	sc;
	char		why[300];

	UNIT_CHECK(snap_case_make(&sc, t, n, 4242), "encode");
	UNIT_CHECK(accepts(sc.buf, sc.len, &ident, why, sizeof(why)), "the file is accepted (%s)", why);
	check_round_trip(t, n, &sc);
	check_truncated(&sc);
	check_flipped(&sc);
	check_foreign(&sc);
	check_versions(&sc);
	snap_case_free(&sc);
}

/*
 * Rows' minutiae counts (format 3) that disagree with their sides, in a
 * file whose CRCs are right: a count out of range, and two rows' counts
 * swapped (the totals still agree: only the sides tell).
 */
static void
test_minutiae_counts(const tl_tpl *t, int n)
{
	snap_case	sc;
	char		why[300];
	size_t		at;
	uint16_t	a;
	uint16_t	b;
	int			j = 1;

	snap_case_make(&sc, t, n, 1);
	at = ENG_SNAP_HEADER_BYTES + 2 * (size_t) sc.expect_rows;	/* the counts */
	memcpy(&a, sc.buf + at, 2);
	UNIT_CHECK(a >= 1 && a <= MCC_MAX_MINUTIAE, "row 0's minutiae count is stored (%u)", a);
	{
		uint8_t    *p = malloc(sc.len);
		uint16_t	big = MCC_MAX_MINUTIAE + 1;

		memcpy(p, sc.buf, sc.len);
		memcpy(p + at + 2, &big, 2);
		fix_crc(p, sc.len);
		UNIT_CHECK(!accepts(p, sc.len, &ident, why, sizeof(why)) && strstr(why, "entry 1 overruns"),
				   "a minutiae count out of range is rejected: \"%s\"", why);
		free(p);
	}
	/* the first row whose count differs from row 0's: swap the two */
	for (; j < sc.expect_rows; j++)
	{
		memcpy(&b, sc.buf + at + 2 * (size_t) j, 2);
		if (b != a)
			break;
	}
	if (j < sc.expect_rows)
	{
		uint8_t    *p = malloc(sc.len);

		memcpy(p, sc.buf, sc.len);
		memcpy(p + at, &b, 2);
		memcpy(p + at + 2 * (size_t) j, &a, 2);
		fix_crc(p, sc.len);
		UNIT_CHECK(!accepts(p, sc.len, &ident, why, sizeof(why)) && strstr(why, "entry 0 has a bad side"),
				   "two rows' minutiae counts swapped (totals right) are rejected: \"%s\"", why);
		free(p);
	}
	else
		UNIT_SKIP("every row has %u minutiae", a);
	snap_case_free(&sc);
}

/*
 * A cache of many rows (keys repeating, so that chains are long) written
 * and read back on 1 and 3 threads (the rows placed and both indexes built
 * by blocks and slot ranges): both equal the cache written, array by
 * array, every key's chain in the same order, every tuple id found.
 */
static void
test_threaded_restore(const tl_tpl *t, int n_tpl)
{
	const int	n = 20011;		/* several blocks of rows, not a multiple of one */
	char		dir[] = "/tmp/mcc-snap-test.XXXXXX";
	char		path[256];
	mcc_error	err;
	eng_cache  *c = eng_cache_new(mcc_profile_by_id(MCC_PROFILE_DEFAULT), NULL, 0, 0, &err);
	uint8_t    *buf;
	size_t		len;

	for (int i = 0; i < n; i++)
	{
		mcc_template_view v = tl_view(&t[i % n_tpl]);
		uint32_t	idx;

		eng_cache_append(c, i % 7001, (uint64_t) i * 31, 0, 0, 0, &v, &idx, &err);
		c->entries[idx].tid = (uint64_t) i * 3 + 1;
		c->entries[idx].xmin = 5000 + (uint64_t) i;
	}
	if (mkdtemp(dir) == NULL)
	{
		UNIT_SKIP("no temporary directory");
		eng_cache_free(c);
		return;
	}
	snprintf(path, sizeof(path), "%s/1_2.snap", dir);
	eng_snap_encode(c, &ident, 1, 1, &buf, &len, &err);
	eng_snap_write_file(path, buf, len, &err);
	for (int threads = 1; threads <= 3; threads += 2)
	{
		eng_snap   *s = NULL;
		bool		missing;
		const eng_cache *r;
		bool		ok;

		mcc_error_clear(&err);
		ok = eng_snap_read_file(path, &ident, threads, &s, &missing, &err) == MCC_OK;
		UNIT_CHECK(ok && s->n_rows == (uint64_t) n, "%d rows read back on %d thread(s) (%s)", n,
				   threads, err.message);
		if (!ok)
			continue;
		r = s->cache;
		ok = r->soa.n_tpl == c->soa.n_tpl && r->soa.n_cyl == c->soa.n_cyl && r->n_side == c->n_side &&
			memcmp(r->soa.first, c->soa.first, sizeof(uint32_t) * ((size_t) n + 1)) == 0 &&
			memcmp(r->soa.angle, c->soa.angle, c->soa.n_cyl) == 0 &&
			memcmp(r->soa.pc, c->soa.pc, sizeof(uint16_t) * c->soa.n_cyl) == 0 &&
			memcmp(r->soa.ncyl, c->soa.ncyl, sizeof(uint16_t) * (size_t) n) == 0 &&
			memcmp(r->side, c->side, (size_t) c->n_side) == 0;
		for (int w = 0; ok && w < c->soa.words; w++)
			ok = memcmp(r->soa.bits + (size_t) w * r->soa.cap_cyl, c->soa.bits + (size_t) w * c->soa.cap_cyl,
						sizeof(uint64_t) * c->soa.n_cyl) == 0;
		for (int i = 0; ok && i < n; i++)
			ok = r->entries[i].key == c->entries[i].key && r->entries[i].hash == c->entries[i].hash &&
				r->entries[i].tid == c->entries[i].tid && r->entries[i].xmin == c->entries[i].xmin &&
				r->entries[i].side == c->entries[i].side && (r->entries[i].flags & ENG_E_PURGED);
		UNIT_CHECK(ok, "%d thread(s): every row's place, cylinders, side and entry "
				   "are the written cache's", threads);
		ok = true;
		for (int k = 0; ok && k < 7001; k++)
		{
			/*
			 * The written cache's entries are live, the restored ones
			 * tombstones (eng_cache_find_key skips those): walk each
			 * key's slot chain, its entries of key k in order.
			 */
			uint32_t	x = c->slots[eng_index_slot((uint64_t) k, c->n_slots)];
			uint32_t	y = r->slots[eng_index_slot((uint64_t) k, r->n_slots)];

			for (;;)
			{
				while (x != ENG_NONE && c->entries[x].key != k)
					x = c->entries[x].next;
				while (y != ENG_NONE && r->entries[y].key != k)
					y = r->entries[y].next;
				if (x != y || x == ENG_NONE)
					break;
				x = c->entries[x].next;
				y = r->entries[y].next;
			}
			ok = x == ENG_NONE && y == ENG_NONE;
		}
		UNIT_CHECK(ok, "%d thread(s): every key's chain lists the rows in the written cache's order",
				   threads);
		ok = true;
		for (int i = 0; ok && i < n; i++)
			ok = eng_snap_find(s, (uint64_t) i * 3 + 1) == (uint32_t) i;
		UNIT_CHECK(ok && eng_snap_find(s, 2) == ENG_NONE,
				   "%d thread(s): every tuple id found at its row", threads);
		eng_snap_free(s);
	}
	unlink(path);
	rmdir(dir);
	free(buf);
	eng_cache_free(c);
}

static void
test_same_version(void)
{
	const uint64_t F = MCC_XMIN_FROZEN;
	const uint64_t E = UINT64_C(1) << 32;
	uint64_t	x = 5 * E + 1000;	/* a full xid in epoch 5 */

	UNIT_CHECK(eng_snap_same_version(x, 900, x, 100, x + 10), "same full xmin: same version");
	UNIT_CHECK(!eng_snap_same_version(x + 1, 50, x, 100, x + 10),
			   "another full xmin: another version, even on an unchanged page");
	UNIT_CHECK(!eng_snap_same_version(x + E, 900, x, 100, x + E + 10),
			   "same low 32 bits, another epoch (not frozen): another version");
	UNIT_CHECK(!eng_snap_same_version(0, 0, x, 100, x + 10) &&
			   !eng_snap_same_version(x, 0, 0, 100, x + 10), "an unknown xmin proves nothing");
	/* the heap tuple was frozen since the snapshot read it */
	UNIT_CHECK(eng_snap_same_version(F | (uint32_t) x, 900, x, 100, x + 10),
			   "frozen since, same raw xmin, within an epoch of the next xid: same version");
	UNIT_CHECK(!eng_snap_same_version(F | (uint32_t) x, 900, x, 100, x + E + 10),
			   "frozen since, but an epoch went by: not proved");
	UNIT_CHECK(eng_snap_same_version(F | (uint32_t) x, 90, x, 100, x + E + 10),
			   "... unless the page is unchanged since the snapshot's scan");
	UNIT_CHECK(!eng_snap_same_version(F | (uint32_t) (x + 1), 90, x, 100, x + 10),
			   "frozen with another raw xmin: another version");
	/* frozen when read: the epoch is unknown */
	UNIT_CHECK(eng_snap_same_version(F | 1000, 100, F | 1000, 100, x),
			   "frozen then and now, page unchanged since the scan: same version");
	UNIT_CHECK(!eng_snap_same_version(F | 1000, 101, F | 1000, 100, x),
			   "frozen then and now, page changed since (VACUUM FREEZE, a new tuple): not proved");
	UNIT_CHECK(!eng_snap_same_version(x, 50, F | (uint32_t) x, 100, x + 10),
			   "frozen then, not frozen now: another version");
	UNIT_CHECK(!eng_snap_same_version(F | 1000, UINT64_MAX, F | 1000, UINT64_MAX - 1, x),
			   "a relation without WAL (page LSN UINT64_MAX) proves nothing by its pages");
}

static void
test_files(const tl_tpl *t, int n)
{
	char		dir[] = "/tmp/mcc-snap-test.XXXXXX";
	char		path[256];
	snap_case	sc;
	mcc_error	err;
	eng_snap   *s = NULL;
	bool		missing;
	FILE	   *f;

	if (mkdtemp(dir) == NULL)
	{
		UNIT_SKIP("no temporary directory");
		return;
	}
	snprintf(path, sizeof(path), "%s/1_2.snap", dir);
	UNIT_CHECK(eng_snap_read_file(path, &ident, 3, &s, &missing, &err) != MCC_OK && missing,
			   "no file: said missing");
	snap_case_make(&sc, t, n, 1);
	mcc_error_clear(&err);
	UNIT_CHECK(eng_snap_write_file(path, sc.buf, sc.len, &err) == MCC_OK, "write (%s)", err.message);
	snprintf(path + strlen(path), sizeof(path) - strlen(path), ".tmp");
	UNIT_CHECK(access(path, F_OK) != 0, "no temporary file is left");
	path[strlen(path) - 4] = '\0';
	UNIT_CHECK(eng_snap_read_file(path, &ident, 3, &s, &missing, &err) == MCC_OK &&
			   s->n_rows == (uint64_t) sc.expect_rows, "read back");
	UNIT_CHECK(s != NULL && s->threads == 3,
			   "read back on 3 threads: its pieces' CRCs combined equal the file's");
	eng_snap_free(s);
	/* a byte flipped in the rows: the pieces read apart still catch it */
	f = fopen(path, "r+");
	if (f != NULL)
	{
		uint8_t		b = sc.buf[sc.len / 2] ^ 0x10;

		fseek(f, (long) (sc.len / 2), SEEK_SET);
		fwrite(&b, 1, 1, f);
		fclose(f);
	}
	UNIT_CHECK(eng_snap_read_file(path, &ident, 3, &s, &missing, &err) != MCC_OK &&
			   strstr(err.message, "checksum") != NULL,
			   "a file with a byte flipped is rejected on 3 threads: \"%s\"", err.message);
	/* truncate the file on disk */
	f = fopen(path, "r+");
	if (f != NULL)
	{
		(void) ftruncate(fileno(f), (off_t) sc.len / 2);
		fclose(f);
	}
	UNIT_CHECK(eng_snap_read_file(path, &ident, 3, &s, &missing, &err) != MCC_OK && !missing,
			   "a truncated file is rejected: \"%s\"", err.message);
	unlink(path);
	rmdir(dir);
	snap_case_free(&sc);
}

int
main(void)
{
	int			n = 40;
	tl_tpl	   *t;

	mcc_lss_init();
	t = tl_templates(5, n, 6);
	test_crc();
	test_round_trip_and_damage(t, n);
	test_minutiae_counts(t, n);
	test_threaded_restore(t, n);
	test_same_version();
	test_files(t, n);
	tl_templates_free(t, n);
	return unit_done();
}
