/*
 * eng_snapfile.c: encode, check and decode a gallery cache's snapshot, and
 * write and read it as a file (eng_snapfile.h).
 */
#include "eng_snapfile.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mcc_crc32c.h"
#include "mcc_hash.h"
#include "mcc_proto.h"
#include "mcc_template.h"

#define ROW_FIXED	28			/* tid, xmin, key, length */

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

mcc_status
eng_snap_encode(const eng_cache *c, const eng_snap_ident *id, uint64_t scan_lsn,
				int64_t written_at, uint8_t **out, size_t *out_len, mcc_error *err)
{
	uint64_t	rows = 0;
	uint64_t	payload = 0;
	uint8_t    *buf;
	uint8_t    *p;
	size_t		total;
	uint32_t	crc;

	for (uint32_t i = 0; i < c->soa.n_tpl; i++)
		if (written(c, i))
		{
			rows++;
			payload += ROW_FIXED + eng_cache_template_bytes(c, i);
		}
	total = ENG_SNAP_HEADER_BYTES + payload + 4;
	buf = malloc(total);
	if (buf == NULL)
		return mcc_error_set(err, MCC_ERR_MEMORY, "no memory for a snapshot of %zu bytes", total);
	p = buf;
	memset(p, 0, 8);
	memcpy(p, ENG_SNAP_MAGIC, sizeof(ENG_SNAP_MAGIC));
	p += 8;
	put32(&p, ENG_SNAP_FORMAT);
	put32(&p, MCC_PROTO_VERSION);
	put32(&p, (uint32_t) c->profile->id);
	put32(&p, id->db_oid);
	put32(&p, id->rel_oid);
	put32(&p, 0);
	put64(&p, id->signature);
	put64(&p, id->system_id);
	put64(&p, scan_lsn);
	put64(&p, rows);
	put64(&p, payload);
	put64(&p, (uint64_t) written_at);
	for (uint32_t i = 0; i < c->soa.n_tpl; i++)
	{
		mcc_template_view v;
		size_t		n;

		if (!written(c, i))
			continue;
		n = eng_cache_template_bytes(c, i);
		put64(&p, c->entries[i].tid);
		put64(&p, c->entries[i].xmin);
		put64(&p, (uint64_t) c->entries[i].key);
		put32(&p, (uint32_t) n);
		eng_cache_template(c, i, p, &v);
		p += n;
	}
	crc = mcc_crc32c(0, buf, (size_t) (p - buf));
	put32(&p, crc);
	*out = buf;
	*out_len = total;
	return MCC_OK;
}

static uint32_t
tid_slot(const eng_snap *s, uint64_t tid)
{
	uint64_t	z = tid + UINT64_C(0x9E3779B97F4A7C15);

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return (uint32_t) (z ^ (z >> 31)) & (s->n_slots - 1);
}

/* Fail decoding: free what was built and buf. */
static mcc_status
reject(eng_snap *s, uint8_t *buf, mcc_error *err, const char *fmt, const char *what)
{
	if (s != NULL)
	{
		s->buf = NULL;
		eng_snap_free(s);
	}
	free(buf);
	return mcc_error_set(err, MCC_ERR_VALUE, fmt, what);
}

mcc_status
eng_snap_decode(uint8_t *buf, size_t len, const eng_snap_ident *expect,
				eng_snap **out, mcc_error *err)
{
	const uint8_t *p = buf;
	const uint8_t *end;
	eng_snap   *s;
	uint32_t	crc;
	uint64_t	payload;
	char		what[400];

	*out = NULL;
	if (len < ENG_SNAP_HEADER_BYTES + 4)
		return reject(NULL, buf, err, "%s", "the file is truncated (shorter than a header)");
	if (memcmp(buf, ENG_SNAP_MAGIC, sizeof(ENG_SNAP_MAGIC)) != 0)
		return reject(NULL, buf, err, "%s", "it is not a cache snapshot (bad magic)");
	memcpy(&crc, buf + len - 4, 4);
	if (mcc_crc32c(0, buf, len - 4) != crc)
		return reject(NULL, buf, err, "%s", "its checksum does not match (damaged or truncated)");
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return reject(NULL, buf, err, "%s", "out of memory");
	p += 8;
	s->format = get32(&p);
	s->proto = get32(&p);
	s->id.profile_id = get32(&p);
	s->id.db_oid = get32(&p);
	s->id.rel_oid = get32(&p);
	(void) get32(&p);
	s->id.signature = get64(&p);
	s->id.system_id = get64(&p);
	s->scan_lsn = get64(&p);
	s->n_rows = get64(&p);
	payload = get64(&p);
	s->written_at = (int64_t) get64(&p);
	if (s->format != ENG_SNAP_FORMAT)
	{
		snprintf(what, sizeof(what), "format %u, not %u", s->format, ENG_SNAP_FORMAT);
		return reject(s, buf, err, "it has another format version (%s)", what);
	}
	if (s->proto != MCC_PROTO_VERSION)
	{
		snprintf(what, sizeof(what), "%u, not %u", s->proto, MCC_PROTO_VERSION);
		return reject(s, buf, err, "it was written by an engine of another protocol (%s)", what);
	}
	if (s->id.system_id != expect->system_id)
		return reject(s, buf, err, "%s", "it belongs to another database cluster (system identifier)");
	if (s->id.db_oid != expect->db_oid || s->id.rel_oid != expect->rel_oid)
	{
		snprintf(what, sizeof(what), "database %u, relation %u", s->id.db_oid, s->id.rel_oid);
		return reject(s, buf, err, "it is the snapshot of another table (%s)", what);
	}
	if (s->id.signature != expect->signature)
		return reject(s, buf, err, "%s",
					  "the table was rewritten or its columns changed since (signature)");
	if (expect->profile_id != 0 && s->id.profile_id != expect->profile_id)
	{
		snprintf(what, sizeof(what), "%u, not %u", s->id.profile_id, expect->profile_id);
		return reject(s, buf, err, "its templates have another profile (%s)", what);
	}
	if (mcc_profile_by_id((int) s->id.profile_id) == NULL)
		return reject(s, buf, err, "%s", "its profile is unknown to this engine");
	if (payload != len - 4 - ENG_SNAP_HEADER_BYTES || s->n_rows > payload / ROW_FIXED ||
		s->n_rows >= ENG_NONE)
		return reject(s, buf, err, "%s", "its sizes are inconsistent");
	s->rows = malloc(sizeof(eng_snap_row) * (s->n_rows ? s->n_rows : 1));
	s->n_slots = 16;
	while (s->n_slots < s->n_rows * 2 && s->n_slots < (UINT32_C(1) << 31))
		s->n_slots *= 2;
	s->slots = malloc(sizeof(uint32_t) * s->n_slots);
	s->next = malloc(sizeof(uint32_t) * (s->n_rows ? s->n_rows : 1));
	if (s->rows == NULL || s->slots == NULL || s->next == NULL)
		return reject(s, buf, err, "%s", "out of memory");
	for (uint32_t i = 0; i < s->n_slots; i++)
		s->slots[i] = ENG_NONE;
	s->buf = buf;
	s->len = len;
	end = buf + len - 4;
	for (uint64_t i = 0; i < s->n_rows; i++)
	{
		eng_snap_row *r = &s->rows[i];
		mcc_template_view v;
		mcc_error	terr;
		uint32_t	h;

		mcc_error_clear(&terr);
		if ((size_t) (end - p) < ROW_FIXED)
			return reject(s, buf, err, "%s", "its rows end early");
		r->tid = get64(&p);
		r->xmin = get64(&p);
		r->key = (int64_t) get64(&p);
		r->len = get32(&p);
		r->used = false;
		if (r->len > (size_t) (end - p))
			return reject(s, buf, err, "%s", "its rows end early");
		r->off = (uint64_t) (p - buf);
		/*
		 * The header only: the CRC says these are the bytes the engine wrote,
		 * and every template was checked in full when it entered the cache.
		 */
		if (mcc_template_open_header(p, r->len, &v, &terr) != MCC_OK ||
			(v.profile->id != (int) s->id.profile_id &&
			 mcc_error_set(&terr, MCC_ERR_VALUE, "of another profile")))
		{
			snprintf(what, sizeof(what), "row %llu: %s", (unsigned long long) i + 1, terr.message);
			return reject(s, buf, err, "it holds a bad template (%s)", what);
		}
		p += r->len;
		h = tid_slot(s, r->tid);
		s->next[i] = s->slots[h];
		s->slots[h] = (uint32_t) i;
	}
	if (p != end)
		return reject(s, buf, err, "%s", "bytes follow its last row");
	*out = s;
	return MCC_OK;
}

uint32_t
eng_snap_find(const eng_snap *s, uint64_t tid)
{
	for (uint32_t i = s->slots[tid_slot(s, tid)]; i != ENG_NONE; i = s->next[i])
		if (s->rows[i].tid == tid && !s->rows[i].used)
			return i;
	return ENG_NONE;
}

void
eng_snap_free(eng_snap *s)
{
	if (s == NULL)
		return;
	free(s->buf);
	free(s->rows);
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
eng_snap_read_file(const char *path, const eng_snap_ident *expect, eng_snap **out,
				   bool *missing, mcc_error *err)
{
	int			fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	uint8_t    *buf;
	size_t		done = 0;

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
	buf = malloc(st.st_size > 0 ? (size_t) st.st_size : 1);
	if (buf == NULL)
	{
		close(fd);
		return mcc_error_set(err, MCC_ERR_MEMORY, "no memory to read %lld bytes",
							 (long long) st.st_size);
	}
	while (done < (size_t) st.st_size)
	{
		ssize_t		n = read(fd, buf + done, (size_t) st.st_size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t) n;
	}
	close(fd);
	return eng_snap_decode(buf, done, expect, out, err);
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
