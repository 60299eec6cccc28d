/*
 * eng_load.h: full loads of a gallery cache (eng_load.c): LOAD_BEGIN, ROWS
 * and END, and what eng_gallery.c needs when it evicts a gallery whose load
 * is in progress or closes a connection.
 */
#ifndef ENG_LOAD_H
#define ENG_LOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "eng_cache.h"
#include "eng_conn.h"
#include "eng_gallery.h"
#include "mcc_error.h"

struct eng_server;
struct eng_snap;

/* A full load a connection is streaming. */
typedef struct eng_load
{
	struct eng_load *next;		/* gallery's loads */
	struct eng_gallery *gallery;
	uint64_t	conn_id;
	uint64_t	request_id;
	uint64_t	gen;
	const mcc_profile *profile;
	eng_cache  *build;			/* built aside; NULL after a failure */
	int			perr;			/* 0, or the mcc_proto_error to reply at LOAD_END */
	mcc_error	err;
	uint64_t	rows;
	uint64_t	frames;			/* LOAD_ROWS frames linked */
	uint64_t	frames_behind;	/* of them, prepared while the one before was written */
	uint64_t	expected;		/* LOAD_BEGIN's estimate of the rows (0: none) */
	int64_t		t_start;
	int64_t		busy_start;		/* the server's busy_usec and load_wait_usec at LOAD_BEGIN */
	int64_t		wait_start;
	uint32_t	flags;			/* MCC_LOAD_* */
	uint64_t	scan_lsn;		/* MCC_LOAD_IDS: LOAD_BEGIN's */
	uint64_t	next_xid;
	struct eng_snap *snap;		/* MCC_LOAD_SNAPSHOT: the snapshot checked, until WANT */
	uint64_t   *want;			/* tids the snapshot did not prove */
	uint32_t	n_want;
	uint32_t	cap_want;
	uint64_t	from_snap;		/* rows taken from the snapshot */
	uint64_t	snap_rows;		/* rows the snapshot had */
	bool		want_held;		/* WANT waits for the GPU copy being built of build */
	uint64_t	want_rid;		/* LOAD_HEADS_END's request id */
	uint64_t	want_rows;		/* the room reserve_ahead made for the rows expected (0: none) */
	uint64_t	want_cyl;
	uint64_t	want_side;
	uint64_t	prefault_for;	/* the build's room when its prefault started (0: none yet) */
	/* MCC_LOAD_JOIN: other connections' parts (eng_load_join.c) */
	uint64_t	token[2];		/* LOAD_BEGIN's secret, which LOAD_JOIN must repeat */
	uint32_t	joins_open;		/* joined connections whose part has not ended */
	uint32_t	joins;			/* connections that joined */
} eng_load;

eng_load   *eng_load_begin(struct eng_server *s, struct eng_conn *c, uint64_t request_id,
						   const mcc_gallery_id *id, uint64_t gen,
						   uint32_t profile_id, uint64_t expected_rows,
						   int32_t priority, uint32_t flags);
void		eng_load_row(struct eng_server *s, eng_load *l, int64_t key, uint64_t insert_xid,
						 uint64_t delete_xid, const uint8_t *tpl, uint32_t len,
						 uint64_t tid, uint64_t xmin, bool checked);
void		eng_load_end(struct eng_server *s, struct eng_conn *c);
void		eng_load_abort(struct eng_server *s, struct eng_conn *c);

/* Record a load's first failure and free what it built (LOAD_END replies it). */
void		eng_load_fail(eng_load *l, int perr, const mcc_error *err);

/*
 * Make cache c (not charged: a snapshot read back) the one load l builds,
 * charging it and making room as a load does. False if there is no room:
 * the load goes on with a new empty cache and c is left to the caller.
 */
bool		eng_load_adopt(struct eng_server *s, eng_load *l, eng_cache *c);

/* Free a load and unlink it from its gallery and connection. */
void		eng_load_free(struct eng_conn *c, eng_load *l);

/* One load row as a LOAD_ROWS frame carries it (load_ids 0 when absent). */
typedef struct eng_load_in
{
	int64_t		key;
	uint64_t	insert_xid;
	uint64_t	delete_xid;
	const uint8_t *tpl;
	uint32_t	len;
	uint64_t	tid;
	uint64_t	xmin;
} eng_load_in;

/*
 * eng_load_rows.c: add n rows to load l at once (eng_load_row's work for
 * each, in the load threads): the first row that cannot be cached fails
 * the load, as does a cache that cannot grow. checked: templates the
 * engine cached before. from (or NULL): the connection the rows came on
 * (in points into its input): while they are written, the load's next
 * LOAD_ROWS frames that are already received, its own first, then those
 * of the load's other connections, are prepared and written too (a
 * pipeline: their bytes stay where they are, each connection's in_pos
 * moves past them; a part's rows are counted in its join_rows), and with
 * enough load threads the sockets are read meanwhile (eng_conn_read_ahead).
 */
void		eng_load_rows(struct eng_server *s, eng_load *l, const eng_load_in *in, uint32_t n,
						  bool checked, struct eng_conn *from);

/*
 * eng_load_rows.c: a LOAD_ROWS frame of connection c that its receiver
 * prepared (eng_load_rx.h), into the load it belongs to (eng_load_of_rows;
 * none: dropped), as eng_load_rows does; f is freed.
 */
struct eng_rx_frame;
void		eng_load_rx_rows(struct eng_server *s, struct eng_conn *c, struct eng_rx_frame *f);

/*
 * Can n rows fit in `left` payload bytes? A row is at least its key, two
 * xids and its template's length (28 bytes), 16 more with load_ids: the
 * bound checked before n rows' arrays are allocated.
 */
static inline bool
eng_load_rows_fit(uint32_t n, bool ids, size_t left)
{
	return (uint64_t) n * (ids ? 44 : 28) <= left;
}

/*
 * Read the rows of a LOAD_ROWS payload after its count n into in[0..n)
 * (ids: each carries load_ids); false if r ran short or bytes are left.
 */
bool		eng_load_read_rows(eng_rd *r, uint32_t n, bool ids, eng_load_in *in);

/*
 * eng_load.c for eng_load_rows.c: room for rows v[0..n) in l's cache
 * (growing it early for the rows LOAD_BEGIN expects, making room in the
 * budget if it must), their places in at[]; and the cache's room faulted
 * in ahead of the rows once it is made.
 */
mcc_status	eng_load_reserve_rows(struct eng_server *s, eng_load *l, const mcc_template_view *v,
								  uint32_t n, eng_bulk_at *at, mcc_error *err);
void		eng_load_prefault_room(struct eng_server *s, eng_load *l);

/*
 * eng_load_join.c: a load's parts on other connections (MCC_LOAD_JOIN): a
 * parallel load's workers send their rows on connections of their own,
 * each joined to the leader's load by the token of its LOAD_BEGIN.
 */

/* LOAD_JOIN on connection c: its rows of request_id go into that load. */
void		eng_load_join(struct eng_server *s, struct eng_conn *c, uint64_t request_id,
						  const mcc_gallery_id *id, uint64_t gen, const uint64_t token[2]);

/* LOAD_JOIN_END: the part of connection c is complete (LOAD_JOINED). */
void		eng_load_join_end(struct eng_server *s, struct eng_conn *c);

/* Connection c's part ended unfinished (closed, cancelled): its load fails. */
void		eng_load_join_abort(struct eng_server *s, struct eng_conn *c, const char *why);

/*
 * The load a LOAD_ROWS frame of request rid on connection c goes into:
 * c's own load of that request, else the load c joined for it; NULL: none
 * (cancelled, replaced, ended: the rows are dropped).
 */
eng_load   *eng_load_of_rows(struct eng_server *s, const struct eng_conn *c, uint64_t rid);

/* The load connection c's open part belongs to, or NULL (none, or it ended). */
eng_load   *eng_load_joined(struct eng_server *s, const struct eng_conn *c);

/*
 * The connections of load l other than c (its leader, its open parts), at
 * most max of them into out; how many. Their frames come in while c's
 * frame is added (eng_conn_read_ahead_other), and those received go in
 * behind it (eng_load_rows).
 */
int			eng_load_conns(struct eng_server *s, const eng_load *l, const struct eng_conn *c,
						   struct eng_conn **out, int max);

/* A load opened without a profile (MCC_LOAD_JOIN, profile 0): build its cache for p. */
void		eng_load_build_first(struct eng_server *s, eng_load *l, const mcc_profile *p);

#endif							/* ENG_LOAD_H */
