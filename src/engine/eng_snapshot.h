/*
 * eng_snapshot.h: cache snapshots in the engine (docs/matcher-service.md,
 * "Cache snapshots"): when they are written (after a load, after settles,
 * at shutdown; encoded by a pool thread while the cache is pinned, written
 * by a thread of their own, never by the main thread while it serves), how
 * one is offered to a load (SNAPSHOT), and how a load checks the heap's
 * tuple headers against it (LOAD_HEADS, WANT). The file format is
 * eng_snapfile.h.
 */
#ifndef ENG_SNAPSHOT_H
#define ENG_SNAPSHOT_H

#include "eng_conn.h"
#include "eng_gallery.h"
#include "eng_load.h"
#include "eng_server.h"

#define ENG_JOB_SNAPSHOT	6		/* eng_job.tag (1-5: see eng_rescore.h) */
#define ENG_JOB_SNAPSHOT_READ	7	/* a snapshot file read in the pool */
#define ENG_SNAP_SETTLE_DELAY_USEC	((int64_t) 60 * 1000000)	/* after settles, at most this often */
#define ENG_SNAP_LOAD_DELAY_USEC	((int64_t) 5 * 1000000)	/* after a load */

/* Make the snapshot directory (if snapshots are on); false if it cannot be. */
bool		eng_snapshot_init(eng_server *s);

/*
 * SNAPSHOT: reply SNAPSHOT_INFO with the gallery's snapshot, read and
 * checked by a pool job first if it is not read yet (the reply comes then).
 */
void		eng_snapshot_info(eng_server *s, eng_conn *c, uint64_t request_id,
							  const mcc_gallery_id *id, uint32_t profile_id);

/* A snapshot's read came back from the pool: answer the SNAPSHOTs waiting. */
void		eng_snapshot_read_done(eng_server *s, eng_job *job);

/*
 * LOAD_BEGIN of a snapshot-checked load: take the snapshot read for the
 * gallery (if of the load's profile) and its cache as the one the load
 * builds (charged, making room as a load does). False if there is none or
 * no room: the load then has no snapshot to check.
 */
bool		eng_snapshot_take(eng_server *s, eng_load *l);

/* The gallery's cache changed: write a snapshot within delay_usec. */
void		eng_snapshot_due(eng_server *s, eng_gallery *g, int64_t delay_usec);

/* Start the snapshot writes that are due (from eng_server_step). */
void		eng_snapshot_step(eng_server *s);

/* Monotonic usec of the next write due, INT64_MAX if none. */
int64_t		eng_snapshot_next_due(const eng_server *s);

/* A snapshot's encoding came back from the pool. */
void		eng_snapshot_job_done(eng_server *s, eng_job *job);

/* Shutting down: finish the writes under way, write what changed since. */
void		eng_snapshot_shutdown(eng_server *s);

/* Free what a gallery holds for snapshots (the server is being destroyed). */
void		eng_snapshot_forget(eng_gallery *g);

/* Remove the snapshots of the galleries EVICT names (mcc_gallery_id rules). */
void		eng_snapshot_remove(eng_server *s, const mcc_gallery_id *id);

/* A head of a snapshot-checked load (mcc_proto.h's head). */
void		eng_snapshot_head(eng_server *s, eng_load *l, uint64_t tid, uint64_t xmin,
							  uint64_t page_lsn, uint64_t insert_xid, uint64_t delete_xid);

/*
 * LOAD_HEADS_END: reply WANT (or an error, abandoning the load); while the
 * GPU copy of the load's cache is being built (eng_pass_start_gpu_prebuild)
 * WANT waits for it: no row is appended to the cache that job reads.
 */
void		eng_snapshot_heads_end(eng_server *s, eng_conn *c, uint64_t request_id);

/* The GPU copy built during a check of g is done: send the WANT held for it. */
void		eng_snapshot_prebuilt(eng_server *s, eng_gallery *g);

#endif							/* ENG_SNAPSHOT_H */
