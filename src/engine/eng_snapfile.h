/*
 * eng_snapfile.h: the file format of a gallery cache's snapshot on disk
 * (docs/matcher-service.md, "Cache snapshots").
 *
 * A snapshot keeps, for every live cache entry whose tuple identity is
 * known (entries a load or a snapshot check read from the heap; those of
 * deltas have no ctid), that identity (the gallery-wide tuple id and the
 * xmin, eng_cache.h), its key and its stored template. It keeps no xids
 * that decide visibility: after a restart those come from the heap again.
 *
 * Layout, host byte order (the engine and PostgreSQL share the machine):
 *   header (ENG_SNAP_HEADER_BYTES): magic "MCCSNAP\0", uint32 format,
 *     uint32 protocol (MCC_PROTO_VERSION), uint32 profile id, uint32 db
 *     oid, uint32 relation oid, uint32 0, uint64 signature (the relations'
 *     relfilenodes and columns), uint64 system identifier, uint64 scan_lsn
 *     (the WAL insert position before the heap scan that last read the
 *     identities), uint64 rows, uint64 payload bytes, int64 written at
 *     (realtime usec)
 *   rows: uint64 tid, uint64 xmin, int64 key, uint32 length, template
 *   uint32 CRC-32C of everything before it
 * Nothing is trusted before the whole file is read and its CRC checked;
 * then every row's template is opened (a bad one rejects the file).
 */
#ifndef ENG_SNAPFILE_H
#define ENG_SNAPFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eng_cache.h"
#include "mcc_error.h"

#define ENG_SNAP_MAGIC		"MCCSNAP"	/* 8 bytes with its NUL */
#define ENG_SNAP_FORMAT		1
#define ENG_SNAP_HEADER_BYTES 80

/* What a snapshot is of: the header fields a reader must find equal. */
typedef struct eng_snap_ident
{
	uint32_t	db_oid;
	uint32_t	rel_oid;
	uint64_t	signature;
	uint64_t	system_id;
	uint32_t	profile_id;		/* reading: 0 accepts any profile */
} eng_snap_ident;

/* One row of a snapshot read back. */
typedef struct eng_snap_row
{
	uint64_t	tid;
	uint64_t	xmin;
	int64_t		key;
	uint64_t	off;			/* of its template in buf */
	uint32_t	len;
	bool		used;			/* taken by a heap tuple of the check */
} eng_snap_row;

/* A snapshot read back and checked. */
typedef struct eng_snap
{
	eng_snap_ident id;
	uint32_t	format;
	uint32_t	proto;
	uint64_t	scan_lsn;
	int64_t		written_at;
	uint8_t    *buf;			/* the whole file */
	size_t		len;
	eng_snap_row *rows;
	uint64_t	n_rows;
	uint32_t   *slots;			/* tid index: first row of each slot, ENG_NONE */
	uint32_t   *next;			/* next row of the same slot */
	uint32_t	n_slots;		/* a power of two */
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
 * Decode and check a snapshot held in buf (taken over: freed with the
 * snapshot, or here on failure). MCC_OK with *out, or an error saying
 * what is wrong (truncated, bad checksum, another format, protocol,
 * profile, relation, signature or system, a bad template).
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
 * Read and decode path. MCC_ERR_NOT_FOUND-like: *missing is set (and an
 * error returned) when there is no file.
 */
mcc_status	eng_snap_read_file(const char *path, const eng_snap_ident *expect,
							   eng_snap **out, bool *missing, mcc_error *err);

/* The row with this tuple id, or ENG_NONE. */
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
