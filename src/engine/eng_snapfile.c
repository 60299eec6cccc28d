/*
 * eng_snapfile.c: encode, check and decode a gallery cache's snapshot, and
 * write and read it as a file (eng_snapfile.h).
 */
#include "eng_snapfile.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eng_bigmem.h"
#include "eng_index.h"
#include "eng_server.h"
#include "mcc_crc32c.h"
#include "mcc_grow.h"
#include "mcc_hash.h"
#include "mcc_proto.h"
#include "mcc_template.h"
#include "mcc_job.h"

#define CHUNK		((size_t) 1 << 20)	/* bytes read (and checked) at a time: the header */
#define PIECE		((size_t) 8 << 20)	/* bytes a reading thread takes at a time */

static void
put16(uint8_t **p, uint16_t v)
{
	memcpy(*p, &v, 2);
	*p += 2;
}

static void
put32(uint8_t **p, uint32_t v)
{
	memcpy(*p, &v, 4);
	*p += 4;
}

static void
put64(uint8_t **p, uint64_t v)
{
	memcpy(*p, &v, 8);
	*p += 8;
}

static uint32_t
get32(const uint8_t **p)
{
	uint32_t	v;

	memcpy(&v, *p, 4);
	*p += 4;
	return v;
}

static uint64_t
get64(const uint8_t **p)
{
	uint64_t	v;

	memcpy(&v, *p, 8);
	*p += 8;
	return v;
}

/* Is entry i written: live, with a known tuple id? */
static bool
written(const eng_cache *c, uint32_t i)
{
	return !(c->entries[i].flags & ENG_E_PURGED) && c->entries[i].tid != 0;
}

/* The minutiae of entry i's template (its side's). */
static int
n_minutiae(const eng_cache *c, uint32_t i)
{
	int			n_min;
	int			n_cyl;
	const uint8_t *minutiae;
	const uint8_t *cyl_minutia;

	eng_cache_minutiae(c, i, &n_min, &minutiae, &n_cyl, &cyl_minutia);
	return n_min;
}

/* Bytes of a file of these counts. */
static uint64_t
file_bytes(uint64_t rows, uint64_t cyl, uint64_t side, int words)
{
	return ENG_SNAP_HEADER_BYTES + rows * (2 + 2 + 4 * 8) + cyl * (1 + 2 + 8 * (uint64_t) words) +
		side + 4;
}

/* The first row at or after i that is written, and the end of its run. */
static bool
next_run(const eng_cache *c, uint32_t *i, uint32_t *end)
{
	while (*i < c->soa.n_tpl && !written(c, *i))
		(*i)++;
	if (*i >= c->soa.n_tpl)
		return false;
	*end = *i;
	while (*end < c->soa.n_tpl && written(c, *end))
		(*end)++;
	return true;
}

/* Copy per-cylinder array src (elem bytes each) of the written rows' cylinders to *p. */
static void
put_cyl_array(const eng_cache *c, const void *src, size_t elem, uint8_t **p)
{
	const uint32_t *first = c->soa.first;

	for (uint32_t i = 0, end; next_run(c, &i, &end); i = end)
	{
		size_t		n = (size_t) (first[end] - first[i]) * elem;

		memcpy(*p, (const uint8_t *) src + (size_t) first[i] * elem, n);
		*p += n;
	}
}

/* Copy per-row array src (elem bytes each) of the written rows to *p. */
static void
put_row_array(const eng_cache *c, const void *src, size_t elem, uint8_t **p)
{
	for (uint32_t i = 0, end; next_run(c, &i, &end); i = end)
	{
		size_t		n = (size_t) (end - i) * elem;

		memcpy(*p, (const uint8_t *) src + (size_t) i * elem, n);
		*p += n;
	}
}

/* Write the header (its CRC included) at p. */
static void
put_header(uint8_t *p, const eng_cache *c, const eng_snap_ident *id, uint64_t scan_lsn,
		   int64_t written_at, uint64_t rows, uint64_t cyl, uint64_t side)
{
	uint8_t    *h = p;

	memset(p, 0, ENG_SNAP_HEADER_BYTES);
	memcpy(p, ENG_SNAP_MAGIC, sizeof(ENG_SNAP_MAGIC));
	p += 8;
	put32(&p, ENG_SNAP_FORMAT);
	put32(&p, MCC_PROTO_VERSION);
	put32(&p, (uint32_t) c->profile->id);
	put32(&p, id->db_oid);
	put32(&p, id->rel_oid);
	put32(&p, (uint32_t) c->soa.words);
	put64(&p, id->signature);
	put64(&p, id->system_id);
	put64(&p, scan_lsn);
	put64(&p, rows);
	put64(&p, cyl);
	put64(&p, side);
	put64(&p, (uint64_t) written_at);
	put32(&p, mcc_crc32c(0, h, (size_t) (p - h)));
	put32(&p, 0);
}

mcc_status
eng_snap_encode(const eng_cache *c, const eng_snap_ident *id, uint64_t scan_lsn,
				int64_t written_at, uint8_t **out, size_t *out_len, mcc_error *err)
{
	const mcc_soa *g = &c->soa;
	uint64_t	rows = 0;
	uint64_t	cyl = 0;
	uint64_t	side = 0;
	uint64_t	total;
	uint8_t    *buf;
	uint8_t    *p;

	for (uint32_t i = 0; i < g->n_tpl; i++)
		if (written(c, i))
		{
			rows++;
			cyl += g->ncyl[i];
			side += eng_cache_side_bytes(c, i);
		}
	total = file_bytes(rows, cyl, side, g->words);
	buf = total <= SIZE_MAX ? malloc((size_t) total) : NULL;
	if (buf == NULL)
		return mcc_error_set(err, MCC_ERR_MEMORY, "no memory for a snapshot of %llu bytes",
							 (unsigned long long) total);
	put_header(buf, c, id, scan_lsn, written_at, rows, cyl, side);
	p = buf + ENG_SNAP_HEADER_BYTES;
	put_row_array(c, g->ncyl, sizeof(uint16_t), &p);
	for (uint32_t i = 0; i < g->n_tpl; i++)
		if (written(c, i))
			put16(&p, (uint16_t) n_minutiae(c, i));
	put_row_array(c, g->id, sizeof(int64_t), &p);
	for (int f = 0; f < 3; f++)
		for (uint32_t i = 0; i < g->n_tpl; i++)
			if (written(c, i))
				put64(&p, f == 0 ? c->entries[i].hash :
					  f == 1 ? c->entries[i].tid : c->entries[i].xmin);
	put_cyl_array(c, g->angle, sizeof(uint8_t), &p);
	put_cyl_array(c, g->pc, sizeof(uint16_t), &p);
	for (int w = 0; w < g->words; w++)
		put_cyl_array(c, g->bits + (size_t) w * g->cap_cyl, sizeof(uint64_t), &p);
	for (uint32_t i = 0; i < g->n_tpl; i++)
		if (written(c, i))
		{
			uint64_t	n = eng_cache_side_bytes(c, i);

			memcpy(p, c->side + c->entries[i].side, (size_t) n);
			p += n;
		}
	put32(&p, mcc_crc32c(0, buf, (size_t) (p - buf)));
	*out = buf;
	*out_len = (size_t) total;
	return MCC_OK;
}

static double
seconds_since(int64_t t0)
{
	return (double) (eng_now_usec() - t0) / 1e6;
}

/* Where a snapshot is read from: a file or a buffer; the CRC of what was read. */
typedef struct snap_src
{
	int			fd;				/* -1: mem */
	const uint8_t *mem;
	size_t		len;
	size_t		pos;
	uint32_t	crc;
} snap_src;

/* Read n bytes into dst, adding them to the CRC; false if the source ends first. */
static bool
src_read(snap_src *s, void *dst, size_t n)
{
	uint8_t    *d = dst;

	while (n > 0)
	{
		size_t		want = n < CHUNK ? n : CHUNK;
		size_t		got = 0;

		if (s->fd < 0)
		{
			if (s->len - s->pos < want)
				return false;
			memcpy(d, s->mem + s->pos, want);
			got = want;
		}
		else
			while (got < want)
			{
				ssize_t		r = read(s->fd, d + got, want - got);

				if (r < 0 && errno == EINTR)
					continue;
				if (r <= 0)
					return false;
				got += (size_t) r;
			}
		s->crc = mcc_crc32c(s->crc, d, got);
		s->pos += got;
		d += got;
		n -= got;
	}
	return true;
}

/*
 * A piece of the file read by one thread: PIECE bytes at most, inside one
 * array (so that it lands at one place), with its own CRC-32C. The file's
 * CRC is the pieces' combined in file order (mcc_crc32c_combine).
 */
typedef struct snap_piece
{
	size_t		off;			/* in the file */
	uint8_t    *dst;
	size_t		len;
	uint32_t	crc;
} snap_piece;

/* The pieces of a read and the threads taking them in turn. */
typedef struct snap_reader
{
	const snap_src *src;
	snap_piece *pieces;
	uint32_t	n;
	uint32_t	cap;
	atomic_uint next;
	atomic_bool failed;			/* a piece could not be read: the file ends early */
} snap_reader;

/* Add the pieces of n bytes of the file at *off, read to dst. */
static bool
add_array(snap_reader *r, size_t *off, void *dst, size_t n)
{
	for (size_t done = 0, k; done < n; done += k)
	{
		snap_piece *p = mcc_grow(r->pieces, r->n, &r->cap, sizeof(*p), 64);

		if (p == NULL)
			return false;
		r->pieces = p;
		k = n - done < PIECE ? n - done : PIECE;
		r->pieces[r->n++] = (snap_piece) {*off + done, (uint8_t *) dst + done, k, 0};
	}
	*off += n;
	return true;
}

/* Read piece p (pread or memcpy) and its CRC; false if the source ends first. */
static bool
read_piece(const snap_src *s, snap_piece *p)
{
	size_t		got = 0;

	if (s->fd < 0)
	{
		if (p->off > s->len || s->len - p->off < p->len)
			return false;
		memcpy(p->dst, s->mem + p->off, p->len);
	}
	else
		while (got < p->len)
		{
			ssize_t		r = pread(s->fd, p->dst + got, p->len - got, (off_t) (p->off + got));

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				return false;
			got += (size_t) r;
		}
	p->crc = mcc_crc32c(0, p->dst, p->len);
	return true;
}

/* A reading thread: the next piece not taken, until none is left. */
static void *
reader_main(void *arg)
{
	snap_reader *r = arg;

	for (;;)
	{
		uint32_t	i = atomic_fetch_add(&r->next, 1);

		if (i >= r->n || atomic_load(&r->failed))
			break;
		if (!read_piece(r->src, &r->pieces[i]))
			atomic_store(&r->failed, true);
	}
	return NULL;
}

/*
 * Read the pieces on up to `threads` threads, this one included (fewer if
 * some cannot start: the others take their pieces). False if one failed.
 */
static bool
read_pieces(snap_reader *r, int threads)
{
	if ((uint32_t) threads > r->n / 2 + 1)
		threads = (int) (r->n / 2 + 1);
	mcc_job_run_each(threads > 1 ? threads : 1, reader_main, r, 0);
	return !atomic_load(&r->failed);
}

/* Read and check the header (sizes against the source's length). */
static mcc_status
read_header(snap_src *src, const eng_snap_ident *expect, eng_snap *s, uint64_t *cyl,
			uint64_t *side, mcc_error *err)
{
	uint8_t		h[ENG_SNAP_HEADER_BYTES];
	const uint8_t *p = h + 8;
	uint32_t	words;
	uint32_t	crc;
	const mcc_profile *prof;
	char		what[400];

	if (src->len < ENG_SNAP_HEADER_BYTES + 4 || !src_read(src, h, sizeof(h)))
		return mcc_error_set(err, MCC_ERR_VALUE, "the file is truncated (shorter than a header)");
	if (memcmp(h, ENG_SNAP_MAGIC, sizeof(ENG_SNAP_MAGIC)) != 0)
		return mcc_error_set(err, MCC_ERR_VALUE, "it is not a cache snapshot (bad magic)");
	s->format = get32(&p);
	if (s->format != ENG_SNAP_FORMAT)
		return mcc_error_set(err, MCC_ERR_VALUE, "it has another format version (format %u, not %u)",
							 s->format, ENG_SNAP_FORMAT);
	memcpy(&crc, h + ENG_SNAP_HEADER_BYTES - 8, 4);
	if (mcc_crc32c(0, h, ENG_SNAP_HEADER_BYTES - 8) != crc)
		return mcc_error_set(err, MCC_ERR_VALUE, "its header checksum does not match (damaged)");
	s->proto = get32(&p);
	s->id.profile_id = get32(&p);
	s->id.db_oid = get32(&p);
	s->id.rel_oid = get32(&p);
	words = get32(&p);
	s->id.signature = get64(&p);
	s->id.system_id = get64(&p);
	s->scan_lsn = get64(&p);
	s->n_rows = get64(&p);
	*cyl = get64(&p);
	*side = get64(&p);
	s->written_at = (int64_t) get64(&p);
	if (s->proto != MCC_PROTO_VERSION)
		return mcc_error_set(err, MCC_ERR_VALUE, "it was written by an engine of another protocol "
							 "(%u, not %u)", s->proto, MCC_PROTO_VERSION);
	if (s->id.system_id != expect->system_id)
		return mcc_error_set(err, MCC_ERR_VALUE,
							 "it belongs to another database cluster (system identifier)");
	if (s->id.db_oid != expect->db_oid || s->id.rel_oid != expect->rel_oid)
		return mcc_error_set(err, MCC_ERR_VALUE, "it is the snapshot of another table "
							 "(database %u, relation %u)", s->id.db_oid, s->id.rel_oid);
	if (s->id.signature != expect->signature)
		return mcc_error_set(err, MCC_ERR_VALUE,
							 "the table was rewritten or its columns changed since (signature)");
	if (expect->profile_id != 0 && s->id.profile_id != expect->profile_id)
		return mcc_error_set(err, MCC_ERR_VALUE, "its templates have another profile (%u, not %u)",
							 s->id.profile_id, expect->profile_id);
	prof = s->id.profile_id <= 255 ? mcc_profile_by_id((int) s->id.profile_id) : NULL;
	if (prof == NULL || (int) words != mcc_profile_cyl_words(prof))
		return mcc_error_set(err, MCC_ERR_VALUE, "its profile is unknown to this engine");
	snprintf(what, sizeof(what), "%llu rows, %llu cylinders, %llu side bytes in %zu bytes",
			 (unsigned long long) s->n_rows, (unsigned long long) *cyl,
			 (unsigned long long) *side, src->len);
	if (s->n_rows >= UINT32_MAX / 4 || *cyl >= UINT32_MAX / 2 || *side > src->len ||
		file_bytes(s->n_rows, *cyl, *side, (int) words) != src->len)
		return mcc_error_set(err, MCC_ERR_VALUE, "it is truncated or its sizes are inconsistent "
							 "(%s)", what);
	return MCC_OK;
}

/* The tid index (eng_index.h) of a restored snapshot's rows and their used flags. */
static mcc_status
index_rows(eng_snap *s, const uint64_t *tids, int threads, mcc_error *err)
{
	uint64_t	n = s->n_rows;

	for (uint64_t i = 0; i < n; i++)
		if (tids[i] == 0)
			return mcc_error_set(err, MCC_ERR_VALUE, "row %llu has no tuple id",
								 (unsigned long long) i + 1);
	s->n_slots = 16;
	while (s->n_slots < n * 2 && s->n_slots < (UINT32_C(1) << 31))
		s->n_slots *= 2;
	s->slots = malloc(sizeof(uint32_t) * s->n_slots);
	s->next = malloc(sizeof(uint32_t) * (n ? n : 1));
	s->used = calloc(n ? n : 1, 1);
	if (s->slots == NULL || s->next == NULL || s->used == NULL)
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
	eng_index_build(tids, (uint32_t) n, s->slots, s->n_slots, s->next, sizeof(uint32_t), threads);
	return MCC_OK;
}

/*
 * Read the arrays into s->cache on up to `threads` threads and check the
 * file's CRC; then the cache's rows placed and the tid index built on as
 * many. The per-row minutiae counts, hashes, tuple ids and xmins go
 * through a buffer of their own (the entries are not in the file's
 * layout).
 */
static mcc_status
read_arrays(snap_src *src, eng_snap *s, uint64_t cyl, uint64_t side, int threads,
			mcc_error *err)
{
	eng_cache  *c = s->cache;
	mcc_soa    *g = &c->soa;
	uint64_t	n = s->n_rows;
	uint64_t   *ent = malloc((size_t) (n ? n : 1) * (3 * sizeof(uint64_t) + sizeof(uint16_t)));
	uint16_t   *n_min = (uint16_t *) (ent + 3 * n);
	eng_restore_rows rows = {.n_min = n_min, .hash = ent, .tid = ent + n, .xmin = ent + 2 * n};
	snap_reader r = {.src = src};
	size_t		off = src->pos;
	uint32_t	crc = src->crc;
	uint32_t	stored = 0;
	bool		ok;
	int64_t		t0 = eng_now_usec();
	mcc_status	st;

	ok = ent != NULL &&
		add_array(&r, &off, g->ncyl, (size_t) n * sizeof(uint16_t)) &&
		add_array(&r, &off, n_min, (size_t) n * sizeof(uint16_t)) &&
		add_array(&r, &off, g->id, (size_t) n * sizeof(int64_t)) &&
		add_array(&r, &off, ent, (size_t) n * 3 * sizeof(uint64_t)) &&
		add_array(&r, &off, g->angle, (size_t) cyl) &&
		add_array(&r, &off, g->pc, (size_t) cyl * sizeof(uint16_t));
	for (int w = 0; ok && w < g->words; w++)
		ok = add_array(&r, &off, g->bits + (size_t) w * g->cap_cyl, (size_t) cyl * 8);
	ok = ok && add_array(&r, &off, c->side, (size_t) side) &&
		add_array(&r, &off, &stored, 4);
	if (!ok)
	{
		free(ent);
		free(r.pieces);
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
	}
	s->threads = threads < 1 ? 1 : threads;
	ok = read_pieces(&r, s->threads);
	for (uint32_t i = 0; ok && i + 1 < r.n; i++)
		crc = mcc_crc32c_combine(crc, r.pieces[i].crc, r.pieces[i].len);
	free(r.pieces);
	if (!ok || crc != stored)
	{
		free(ent);
		return mcc_error_set(err, MCC_ERR_VALUE, !ok ? "its rows end early (truncated)" :
							 "its checksum does not match (damaged or truncated)");
	}
	s->io_s = seconds_since(t0);
	t0 = eng_now_usec();
	st = eng_cache_restore_end(c, (uint32_t) n, (uint32_t) cyl, side, &rows, s->threads, err);
	s->rebuild_s = seconds_since(t0);
	t0 = eng_now_usec();
	if (st == MCC_OK)
		st = index_rows(s, rows.tid, s->threads, err);
	s->index_s = seconds_since(t0);
	free(ent);
	return st;
}

/* Decode a snapshot from src. */
static mcc_status
decode(snap_src *src, const eng_snap_ident *expect, int threads, eng_snap **out,
	   mcc_error *err)
{
	eng_snap   *s = calloc(1, sizeof(*s));
	uint64_t	cyl;
	uint64_t	side;

	*out = NULL;
	if (s == NULL)
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
	s->len = src->len;
	if (read_header(src, expect, s, &cyl, &side, err) != MCC_OK ||
		(s->cache = eng_cache_restore_begin(mcc_profile_by_id((int) s->id.profile_id),
											(uint32_t) s->n_rows, (uint32_t) cyl, side,
											err)) == NULL ||
		read_arrays(src, s, cyl, side, threads, err) != MCC_OK)
	{
		eng_snap_free(s);
		return err->status;
	}
	*out = s;
	return MCC_OK;
}

mcc_status
eng_snap_decode(uint8_t *buf, size_t len, const eng_snap_ident *expect,
				eng_snap **out, mcc_error *err)
{
	snap_src	src = {.fd = -1, .mem = buf, .len = len};
	mcc_status	st = decode(&src, expect, 1, out, err);

	free(buf);
	return st;
}

uint32_t
eng_snap_find(const eng_snap *s, uint64_t tid)
{
	for (uint32_t i = s->slots[eng_index_slot(tid, s->n_slots)]; i != ENG_NONE; i = s->next[i])
		if (s->cache->entries[i].tid == tid && !s->used[i])
			return i;
	return ENG_NONE;
}

void
eng_snap_free(eng_snap *s)
{
	if (s == NULL)
		return;
	if (!s->cache_taken)
		eng_cache_free(s->cache);
	free(s->used);
	free(s->slots);
	free(s->next);
	free(s);
}

/* fsync the directory holding path (the rename's durability). */
static int
sync_dir_of(const char *path)
{
	char	   *copy = strdup(path);
	int			fd;
	int			rc;

	if (copy == NULL)
		return -1;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
	free(copy);
	if (fd < 0)
		return -1;
	rc = fsync(fd);
	close(fd);
	return rc;
}

mcc_status
eng_snap_write_file(const char *path, const uint8_t *buf, size_t len, mcc_error *err)
{
	char		tmp[4096];
	int			fd;
	size_t		done = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int) sizeof(tmp))
		return mcc_error_set(err, MCC_ERR_LIMIT, "snapshot path too long");
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return mcc_error_set(err, MCC_ERR_INTERNAL, "could not create \"%s\": %s", tmp,
							 strerror(errno));
	while (done < len)
	{
		ssize_t		n = write(fd, buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
		{
			mcc_error_set(err, MCC_ERR_INTERNAL, "could not write \"%s\": %s", tmp,
						  n < 0 ? strerror(errno) : "no space");
			close(fd);
			unlink(tmp);
			return err->status;
		}
		done += (size_t) n;
	}
	if (fsync(fd) != 0 || close(fd) != 0)
	{
		mcc_error_set(err, MCC_ERR_INTERNAL, "could not fsync \"%s\": %s", tmp, strerror(errno));
		unlink(tmp);
		return err->status;
	}
	if (rename(tmp, path) != 0)
	{
		mcc_error_set(err, MCC_ERR_INTERNAL, "could not rename \"%s\": %s", tmp, strerror(errno));
		unlink(tmp);
		return err->status;
	}
	if (sync_dir_of(path) != 0)
		return mcc_error_set(err, MCC_ERR_INTERNAL, "could not fsync the directory of \"%s\": %s",
							 path, strerror(errno));
	return MCC_OK;
}

mcc_status
eng_snap_read_file(const char *path, const eng_snap_ident *expect, int threads,
				   eng_snap **out, bool *missing, mcc_error *err)
{
	int			fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	snap_src	src = {.fd = fd};
	mcc_status	rc;

	*out = NULL;
	*missing = false;
	if (fd < 0)
	{
		*missing = errno == ENOENT;
		return mcc_error_set(err, MCC_ERR_INTERNAL, "could not open it: %s", strerror(errno));
	}
	if (fstat(fd, &st) != 0 || st.st_size < 0)
	{
		close(fd);
		return mcc_error_set(err, MCC_ERR_INTERNAL, "could not stat it: %s", strerror(errno));
	}
	src.len = (size_t) st.st_size;
	(void) posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	rc = decode(&src, expect, threads, out, err);
	close(fd);
	return rc;
}

bool
eng_snap_same_version(uint64_t heap_xmin, uint64_t page_lsn, uint64_t snap_xmin,
					  uint64_t scan_lsn, uint64_t next_xid)
{
	if (heap_xmin == 0 || snap_xmin == 0)
		return false;			/* unknown */
	if (!(heap_xmin & MCC_XMIN_FROZEN))
		return heap_xmin == snap_xmin;	/* one full xid places one version at a tid */
	if ((uint32_t) heap_xmin != (uint32_t) snap_xmin)
		return false;
	if (page_lsn <= scan_lsn)
		return true;			/* the page has not changed since the tuple was read there */
	/* frozen since: the raw xmin is the full xid's if no epoch went by */
	return !(snap_xmin & MCC_XMIN_FROZEN) && next_xid > snap_xmin &&
		next_xid - snap_xmin < (UINT64_C(1) << 32);
}
