/*
 * eng_gallery.h: galleries (eng_gallery.c): the cache serving each one, the
 * deltas and SETTLEs waiting to be applied to it, the searches waiting for
 * it, and what runs on it (a pass: eng_pass.h; a compaction: eng_compact.h;
 * loads: eng_load.h; snapshots: eng_snapshot.h).
 */
#ifndef ENG_GALLERY_H
#define ENG_GALLERY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "eng_cache.h"
#include "eng_delta.h"
#include "eng_pool.h"
#include "eng_rescore.h"
#include "eng_scan.h"
#include "mcc_lss.h"
#include "mcc_proto.h"

struct eng_server;
struct eng_load;
struct eng_snap;
struct eng_snap_job;

/* limits on data kept for generations the cache cannot apply yet */
#define ENG_GENQ_MAX_N		4096
#define ENG_GENQ_MAX_BYTES	((size_t) 256 << 20)
#define ENG_MAX_SHELLS		1024	/* galleries known only by their deltas */

/* A SEARCH from its arrival to its reply. */
typedef struct eng_request
{
	struct eng_request *next;	/* gallery's waiting list, or its batch */
	uint64_t	conn_id;
	uint64_t	request_id;
	uint64_t	need_gen;
	uint32_t	k;
	float		min_score;
	uint64_t	count_xmin;		/* 0, or a visibility count at this xmin ... */
	uint64_t	count_above;	/* ... if more entries are searchable than this */
	int			count_index;	/* in its batch's counts, or -1 */
	/* a refining search (refine != MCC_LSS): SEARCH's refine fields */
	mcc_method	refine;
	uint32_t	final_k;
	double		fraction;
	uint32_t	refine_min;
	bool		top;			/* MCC_REFINE_F_TOP: the best final_k may do */
	uint64_t	shortlist;		/* s of mcc_proto.h: n' for the pass's searchable entries */
	uint32_t	n_probes;
	mcc_probe **probes;
	uint8_t   **tpls;			/* the probes' template blobs (GPU path, refining) */
	uint32_t   *tpl_lens;
	int64_t		deadline;		/* monotonic usec: give up waiting for deltas */
	int64_t		arrived;		/* monotonic usec: when the SEARCH was read */
	atomic_int	cancelled;		/* CANCEL or the connection closed */
	uint32_t	first_slot;		/* in its batch */
	bool		held_for_build; /* waits for the GPU mirror being built (logged once) */
} eng_request;

/*
 * Does r ask for a visibility count of cache c (mcc_proto.h: count_xmin set
 * and more entries searchable than count_above)?
 */
static inline bool
eng_count_asked(const eng_request *r, const eng_cache *c)
{
	return r->count_xmin != 0 && eng_cache_searchable(c) > r->count_above;
}

/* A SETTLE waiting for its cache to be free of readers. */
typedef struct eng_settle
{
	struct eng_settle *next;
	uint64_t	conn_id;
	uint64_t	request_id;
	uint64_t	horizon;
	uint32_t	n;
	uint64_t   *xids;			/* sorted */
	uint32_t   *states;
} eng_settle;

/* A compaction running in a thread. */
typedef struct eng_compaction
{
	eng_job		job;			/* first */
	struct eng_gallery *gallery;
	eng_cache  *from;			/* pinned */
	eng_cache  *result;
	uint64_t	charged;
	mcc_error	err;
} eng_compaction;

typedef struct eng_gallery
{
	mcc_gallery_id id;
	eng_cache  *cache;			/* current, or NULL: not loaded */
	eng_genq	q;				/* deltas and reload marks not yet dropped */
	eng_request *waiting;		/* FIFO */
	eng_request **waiting_tail;
	eng_batch  *running;		/* the pass in its search stage, or NULL */
	eng_request *running_reqs;
	eng_cache  *running_cache;	/* what `running` reads (pinned) */
	bool		running_done;	/* `running` has searched; it waits for `rescored` to end */
	eng_batch  *rescored;		/* the pass in its rescoring stage (refining searches), or NULL */
	eng_request *rescored_reqs;
	eng_cache  *rescored_cache; /* what `rescored` read (pinned) */
	eng_rescore *rescoring;		/* its second stage, the job in flight */
	eng_batch  *gpu_building;	/* a full GPU upload beside the passes (pins its cache), or NULL */
	eng_batch  *gpu_prebuild;	/* the GPU copy of a snapshot being checked (pins the load's cache), or NULL */
	eng_compaction *compacting;
	struct eng_load *loads;
	eng_settle *settles;		/* FIFO of deferred SETTLEs */
	eng_settle **settles_tail;
	int32_t		priority;		/* LOAD_BEGIN's or PRIORITY's: who may evict whom */
	uint64_t	searches;		/* requests answered */
	uint64_t	passes;			/* batches started */
	uint64_t	gpu_syncs;		/* passes that only brought the GPU mirror up to date */
	int64_t		loaded_at;		/* realtime usec */
	double		load_seconds;
	int64_t		last_used;		/* monotonic usec */
	/* cache snapshots (eng_snapshot.h) */
	uint64_t	scan_lsn;		/* of the load that made the cache (0: unknown) */
	struct eng_snap *snap;		/* read for a load to check (SNAPSHOT), or NULL */
	bool		snap_dirty;		/* the cache changed since its last snapshot */
	int64_t		snap_due;		/* monotonic usec: write then */
	struct eng_snap_job *snapshotting;	/* encoding in the pool, or NULL */
	struct eng_snap_read *snap_reading; /* its file read in the pool, or NULL */
	atomic_int	snap_writing;	/* a writer thread has its file open */
} eng_gallery;

/* The gallery of id; with create, a new one (NULL: out of memory) if none. */
eng_gallery *eng_gallery_get(struct eng_server *s, const mcc_gallery_id *id, bool create);

/* Forget the cache (freed by its last reader) and fail the waiting searches. */
void		eng_gallery_drop_cache(struct eng_server *s, eng_gallery *g, const char *why);

/*
 * Bring g forward: apply deltas and SETTLEs if nothing reads the cache,
 * start a compaction, a pass for the ready searches, or a GPU upload.
 */
void		eng_gallery_advance(struct eng_server *s, eng_gallery *g);

/* Queue a search; it starts with the next eng_gallery_advance. */
void		eng_gallery_submit(struct eng_server *s, eng_gallery *g, eng_request *r);

/* Queue a SETTLE; applied by the next eng_gallery_advance with no reader. */
void		eng_gallery_settle(struct eng_server *s, eng_gallery *g, eng_settle *st);

/* A pass, rescoring stage or compaction came back from the pool. */
void		eng_gallery_job_done(struct eng_server *s, eng_job *job);

/* A connection closed: cancel its searches; its SETTLEs get no reply, its cut-off deltas become reload marks. */
void		eng_gallery_conn_closed(struct eng_server *s, uint64_t conn_id);

/* CANCEL of a search; false if no gallery has it. */
bool		eng_gallery_cancel(struct eng_server *s, uint64_t conn_id, uint64_t request_id);

/* EVICT: drop the caches, loads and deltas of the galleries matching id (0: any). */
void		eng_gallery_evict(struct eng_server *s, const mcc_gallery_id *id);

/* PRIORITY: set the priority of the galleries matching id (signature 0: any). */
void		eng_gallery_set_priority(struct eng_server *s, const mcc_gallery_id *id, int32_t priority);

/* Free every gallery (the pool is stopped). */
void		eng_gallery_free_all(struct eng_server *s);

/* A reader (a pass, a compaction, a snapshot's encoding) is done with cache c. */
void		eng_gallery_unpin(eng_gallery *g, eng_cache *c);

/* The earliest deadline of a waiting search (INT64_MAX: none). */
int64_t		eng_gallery_next_deadline(struct eng_server *s);

void		eng_request_free(eng_request *r);
void		eng_settle_free(eng_settle *st);

/* Log-friendly name of a gallery. */
const char *eng_gallery_name(const eng_gallery *g);

/* Apply the queued generations that come next, in order (cache not pinned). */
void		eng_gallery_apply_pending(struct eng_server *s, eng_gallery *g);

/* Forget the queued records nobody needs any more and keep the rest bounded. */
void		eng_gallery_trim_queue(eng_gallery *g);

#endif							/* ENG_GALLERY_H */
