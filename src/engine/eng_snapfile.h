/*
 * eng_snapfile.h: the file format of a gallery cache's snapshot on disk
 * (docs/matcher-service.md, "Cache snapshots").
 *
 * A snapshot keeps the cache's own arrays for every live cache entry whose
 * tuple identity is known (entries a load or a snapshot check read from the
 * heap; those of deltas have no ctid): the identity (the gallery-wide tuple
 * id and the xmin, eng_cache.h), its key and template hash, and its
 * template as the cache holds it (cylinder planes, sides). Reading one back
 * puts these arrays in place in a new cache (eng_cache_restore_begin): no
 * template is rebuilt. It keeps no xids that decide visibility: after a
 * restart those come from the heap again.
 *
 * Layout (format 3), host byte order (the engine and PostgreSQL share the
 * machine):
 *   header (ENG_SNAP_HEADER_BYTES): magic "MCCSNAP\0", uint32 format,
 *     uint32 protocol (MCC_PROTO_VERSION), uint32 profile id, uint32 db
 *     oid, uint32 relation oid, uint32 words per cylinder, uint64
 *     signature (the relations' relfilenodes and columns), uint64 system
 *     identifier, uint64 scan_lsn (the WAL insert position before the heap
 *     scan that last read the identities), uint64 rows, uint64 cylinders,
 *     uint64 side bytes, int64 written at (realtime usec), uint32 CRC-32C
 *     of the header before it, uint32 0
 *   per row: uint16 cylinders, uint16 minutiae, then int64 keys, uint64
 *     template hashes, uint64 tuple ids, uint64 xmins (each array whole,
 *     in row order)
 *   per cylinder: uint8 angles, uint16 bit counts, then the words' planes
 *     (plane w: word w of every cylinder), uint64 each
 *   the rows' sides (eng_cache.h), in row order
 *   uint32 CRC-32C of everything before it
 * The header is checked (its CRC, then what it is of) before its sizes are
 * used; the rest is read into place and trusted only once the whole
 * file's CRC matches. The rows' minutiae counts give each side's length
 * without reading the side before it, so the rows are placed on several
 * threads (eng_cache_restore_end); each side must hold its row's count.
 * Older formats are rejected: format 1 (rows of whole templates), format
 * 2 (no minutiae counts: the sides were placed by one serial walk).
 * Reading a file splits the arrays into pieces of 8 MB that several
 * threads read (pread) and checksum at once; the pieces' CRCs combined in
 * file order (mcc_crc32c_combine) give the file's, so the format is the
 * one a single thread writes and reads.
 */
#ifndef ENG_SNAPFILE_H
#define ENG_SNAPFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eng_cache.h"
#include "mcc_error.h"

#define ENG_SNAP_MAGIC		"MCCSNAP"	/* 8 bytes with its NUL */
#define ENG_SNAP_FORMAT		3
#define ENG_SNAP_HEADER_BYTES 96

/* What a snapshot is of: the header fields a reader must find equal. */
typedef struct eng_snap_ident
{
	uint32_t	db_oid;
	uint32_t	rel_oid;
	uint64_t	signature;
	uint64_t	system_id;
	uint32_t	profile_id;		/* reading: 0 accepts any profile */
} eng_snap_ident;

/*
 * A snapshot read back and checked: its rows restored as the entries of a
 * cache (row i is entry i, a tombstone until a heap tuple proves it:
 * eng_cache_revive), with an index of their tuple ids.
 */
typedef struct eng_snap
{
	eng_snap_ident id;
	uint32_t	format;
	uint32_t	proto;
	uint64_t	scan_lsn;
	int64_t		written_at;
	size_t		len;			/* bytes of the file */
	uint64_t	n_rows;
	eng_cache  *cache;			/* not charged until a load takes it */
	bool		cache_taken;	/* a load's build now: not freed with the snapshot */
	uint8_t    *used;			/* per row: taken by a heap tuple of the check */
	uint32_t   *slots;			/* tid index: first row of each slot, ENG_NONE */
	uint32_t   *next;			/* next row of the same slot */
	uint32_t	n_slots;		/* a power of two */
	/* where a read's time went (wall seconds; the engine logs them) */
	double		io_s;			/* reading the arrays into place and their CRC */
	double		rebuild_s;		/* eng_cache_restore_end: places, entries, key index */
	double		index_s;		/* the tuple id index */
	int			threads;		/* threads that read */
} eng_snap;

/*
 * Encode cache c as a snapshot into a malloc'ed buffer (*out, *out_len):
 * its live entries with a known tuple id. Reads c only: safe in a thread
 * while c is pinned.
 */
mcc_status	eng_snap_encode(const eng_cache *c, const eng_snap_ident *id,
							uint64_t scan_lsn, int64_t written_at,
							uint8_t **out, size_t *out_len, mcc_error *err);

/*
 * Decode and check a snapshot held in buf (taken over: freed here). MCC_OK
 * with *out, or an error saying what is wrong (truncated, bad checksum,
 * another format, protocol, profile, relation, signature or system,
 * inconsistent sizes).
 */
mcc_status	eng_snap_decode(uint8_t *buf, size_t len, const eng_snap_ident *expect,
							eng_snap **out, mcc_error *err);

/*
 * Write buf to path atomically: path.tmp, fsync, rename, fsync of the
 * directory. The temporary file is removed on failure.
 */
mcc_status	eng_snap_write_file(const char *path, const uint8_t *buf, size_t len,
								mcc_error *err);

/*
 * Read and decode path, its arrays read straight into the cache's (as
 * eng_snap_decode checks), on up to `threads` threads (this one included).
 * *missing is set (and an error returned) when there is no file.
 */
mcc_status	eng_snap_read_file(const char *path, const eng_snap_ident *expect, int threads,
							   eng_snap **out, bool *missing, mcc_error *err);

/* The row with this tuple id not yet used, or ENG_NONE. */
uint32_t	eng_snap_find(const eng_snap *s, uint64_t tid);

void		eng_snap_free(eng_snap *s);

/*
 * Does heap tuple (heap_xmin, page_lsn) prove to be the version of
 * snapshot row xmin snap_xmin found at the same tuple id?
 * (docs/matcher-service.md, "Cache snapshots", gives the proof.)
 * next_xid: the next full xid when the heap was read; scan_lsn: the
 * snapshot's.
 */
bool		eng_snap_same_version(uint64_t heap_xmin, uint64_t page_lsn,
								  uint64_t snap_xmin, uint64_t scan_lsn,
								  uint64_t next_xid);

#endif							/* ENG_SNAPFILE_H */
