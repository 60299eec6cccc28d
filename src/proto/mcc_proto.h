/*
 * mcc_proto.h: the wire protocol between backends and the matcher engine.
 *
 * Plain C (no PostgreSQL headers): included by the engine (src/engine/) and
 * by the PostgreSQL layer (src/service/, src/image/). Both ends run on the
 * same machine, so integers travel in host byte order; both encode and
 * decode through mcc_wire.h, the one encoder. See docs/matcher-service.md.
 *
 * A connection is a UNIX stream socket. Every message is a frame: a 16-byte
 * header followed by `length` payload bytes. Requests carry a client-chosen
 * request_id that the reply repeats. Payload layouts below list fields in
 * order, packed (no padding); "bytes" fields are preceded by a uint32 length.
 *
 * Client -> engine
 *   HELLO        uint32 proto_version, uint32 client_pid
 *                -> HELLO_OK uint64 incarnation, uint32 threads, uint32 flags
 *                   (MCC_HELLO_*)
 *   SEARCH       gallery, uint64 need_generation, uint32 k, float min_score,
 *                uint64 count_xmin, uint64 count_above, refine,
 *                uint32 n_probes, n_probes x bytes(template)
 *                -> RESULT uint64 applied_generation, uint32 n_unsettled,
 *                   uint64 searchable (entries the pass scored, tombstones
 *                   not counted), count,
 *                   uint32 n_probes, then per probe: uint32 more (bit
 *                   MCC_RESULT_MORE if the engine holds more candidates at
 *                   or above min_score than it returns; bit MCC_RESULT_TOP,
 *                   then a uint32 total follows), uint32 n, n x hit (n x
 *                   rhit when refining)
 *                (count_xmin != 0 and searchable > count_above: the engine
 *                 also sorts its searchable entries for a count of the
 *                 versions visible to a snapshot whose xmin is count_xmin:
 *                 see `count` below; otherwise count says MCC_COUNT_NONE)
 *                (refine.method other than MCC_LSS, a refining search: per
 *                 probe the pass keeps the best s + k entries at or above
 *                 min_score, s = mcc_refine_count(searchable, fraction,
 *                 refine_min, final_k) (the n' of a statement that would
 *                 see every searchable entry: none sees more, and n' grows
 *                 with the rows seen), and returns of them the shortest
 *                 prefix that holds s entries certain for count_xmin
 *                 (MCC_CAND_F_CERTAIN), or all of them, each rescored by
 *                 mcc_match_candidate(probe, the entry's template, method)
 *                 with the default parameters from the cache's own copy;
 *                 with MCC_REFINE_F_TOP or'ed into the method, a probe
 *                 whose prefix is exactly s entries, every one certain,
 *                 with more candidates after it, gets only the best
 *                 min(final_k, s) of the prefix by refined score
 *                 (descending, key ascending), flagged MCC_RESULT_TOP with
 *                 total = s: for a statement whose n' is s that is its
 *                 whole answer, which spares sending, judging and ranking
 *                 thousands of candidates; any other n' asks again without
 *                 the flag. The key column's unique index makes the keys
 *                 of certain entries distinct)
 *                -> ERROR (MCC_PERR_NOT_LOADED: load first;
 *                   MCC_PERR_GENERATION: a needed delta never came: reload;
 *                   MCC_PERR_DATA: a bad probe, a probe of another profile
 *                   than the gallery's, a bad refine, or a plain RESULT over
 *                   MCC_PROTO_MAX_FRAME; MCC_PERR_TOO_LARGE: a refining
 *                   RESULT over MCC_PROTO_MAX_FRAME)
 *                (n_probes 0: just waits until need_generation is applied;
 *                 with the count asked for, the RESULT then carries the count
 *                 alone, from a pass of its own or one beside other
 *                 searches: the rows a statement sees without a search; the
 *                 refine fields are ignored)
 *   LOAD_BEGIN   gallery, uint64 generation, uint32 profile_id,
 *                uint64 expected_rows (hint, may be 0), int32 priority,
 *                uint32 flags (MCC_LOAD_*)
 *                (priority: the gallery's, mcc_galleries.priority; when the
 *                 cache memory is short the load may evict caches of other
 *                 galleries of lower priority, or of equal priority used
 *                 less recently; with MCC_LOAD_REPLACE, or when the current
 *                 cache needs a reload anyway, the gallery's own current
 *                 cache gives way first; otherwise it stays and the load
 *                 fails with MCC_PERR_MEMORY)
 *                (with MCC_LOAD_JOIN: then uint64 token[2], a secret the
 *                 client drew; other connections may add rows to this load
 *                 with LOAD_JOIN; -> OK once the load is open to them;
 *                 profile_id 0: the first row's, whatever connection it
 *                 comes on, MCC_PROFILE_DEFAULT if none comes)
 *   LOAD_ROWS    uint32 n, n x load_row          (any number of frames)
 *   LOAD_END     (empty)
 *                -> LOADED uint64 entries (searchable), uint64 bytes   or ERROR
 *                (LOAD_BEGIN/ROWS carry the request_id of LOAD_END's reply;
 *                 deltas of generation > `generation` that arrive during the
 *                 load are applied after it; a joined connection that has
 *                 not ended its part fails the load here)
 *   LOAD_JOIN    gallery, uint64 generation, uint64 token[2]
 *                (another connection's part of a load opened with
 *                 MCC_LOAD_JOIN for that gallery, generation and token: its
 *                 LOAD_ROWS with this request_id go into that load; no reply
 *                 but ERROR MCC_PERR_NOT_LOADED when no such load is open)
 *   LOAD_JOIN_END (empty) -> LOAD_JOINED uint64 rows (that this connection
 *                added), uint32 failed (1: the load failed meanwhile, its
 *                error comes at LOAD_END, and rows may have been dropped)
 *                or ERROR (the load was abandoned meanwhile)
 *                (a joined connection that closes, or CANCELs its join,
 *                 before LOAD_JOIN_END fails the whole load)
 *   DELTA        gallery, uint64 generation, uint64 xid, uint32 n_ins,
 *                uint32 n_del, n_ins x (int64 key, bytes template),
 *                n_del x (int64 key, uint64 hash)          (no reply)
 *                (rows of different (sub)transaction ids go in separate
 *                 DELTA frames of the same generation, sent back to back on
 *                 one connection, every one but the last with flag
 *                 MCC_FRAME_MORE; the engine applies a frame's inserts before
 *                 its deletes; a connection that closes in the middle of a
 *                 generation's frames turns that generation into a RELOAD)
 *   RELOAD       gallery, uint64 generation     (no reply: the cache must be
 *                reloaded before serving generation >= this)
 *   XIDS         gallery -> XID_LIST uint32 n, n x uint64 xid (the distinct
 *                unsettled inserting and deleting xids of the cache,
 *                ascending, at most MCC_PROTO_MAX_XIDS: settle them and ask
 *                again if the list was full)
 *   SETTLE       gallery, uint64 horizon, uint32 n, n x (uint64 xid,
 *                uint32 state) with state one of MCC_XID_*   -> OK
 *   REFINE       uint32 method (mcc_match.h's mcc_method), uint32 n_items,
 *                n_items x (bytes(probe), uint32 n, n x bytes(template))
 *                -> REFINED uint32 n_items, per item: uint32 n, n x float
 *                   (the score of each template against the item's probe
 *                   with the method, mcc_match_candidate's, in the order sent)
 *                -> ERROR (MCC_PERR_DATA: a bad template, or one of another
 *                   profile than its probe)
 *                (stateless: the client sends the templates it re-checked;
 *                 the engine's CPU threads score them)
 *   CANCEL       uint64 request_id_to_cancel              (no reply)
 *   STATUS       (empty) -> STATUS_REPLY uint32 n, n x gallery_status
 *   ENGINE_STATUS (empty) -> ENGINE_STATUS_REPLY uint64 cache_bytes, uint64
 *                cache_limit (0: none), uint64 evictions, uint32
 *                image_threads, uint32 image_queue (jobs admitted at most),
 *                uint32 image_jobs (admitted, not yet answered), uint64
 *                image_parts, uint64 image_parts_done (of those jobs'
 *                current stages), uint32 flags (MCC_HELLO_*)
 *   PRIORITY     gallery (signature 0: every signature of db/rel), int32
 *                priority -> OK (the priority of LOAD_BEGIN, changed)
 *   EVICT        gallery (rel 0: every gallery of db; db 0: all;
 *                signature 0: every signature of db/rel) -> OK
 *                (also removes the cache snapshots of those galleries)
 *
 * Cache snapshots (docs/matcher-service.md, "Cache snapshots"): the engine
 * keeps on disk, per gallery, the identity, key and template of its cached
 * tuple versions (src/engine/eng_snapfile.h); after a restart a load
 * checks them against the heap's tuple headers instead of reading every
 * template:
 *   SNAPSHOT     gallery, uint32 profile_id (0: any)
 *                -> SNAPSHOT_INFO uint32 usable (1: a snapshot of this
 *                   gallery, signature and profile was read and checked),
 *                   uint32 profile_id, uint64 rows
 *                (a damaged or foreign file is logged, removed, usable 0;
 *                the file is read in a pool thread: the reply comes then)
 *   LOAD_BEGIN with MCC_LOAD_SNAPSHOT, then
 *   LOAD_HEADS   uint32 n, n x head                   (any number of frames)
 *   LOAD_HEADS_END (empty)
 *                -> WANT uint32 n, n x uint64 tid: the heap tuples whose
 *                   version the snapshot does not prove (the client sends
 *                   them as LOAD_ROWS, then LOAD_END as for any load);
 *                   every other head made the snapshot's row of its
 *                   tuple id live with the head's xids; rows no head
 *                   claimed stay tombstones
 *                -> ERROR MCC_PERR_NOT_LOADED (no usable snapshot any more),
 *                   MCC_PERR_TOO_LARGE (WANT would pass the frame limit):
 *                   the client loads in full instead
 *
 *
 * Image and point jobs (docs/matcher-engine.md, "Image jobs"): one request,
 * one reply; run on a GPU of the engine when it has one and `device`
 * allows it, else on the engine's CPU threads (also when the GPU fails:
 * out of memory, a CUDA error, a lost context), with the same results as
 * the backend's own functions. CANCEL or a closed connection stops them.
 * They run on threads of their own (--image-threads), never on those of
 * searches, and at most --image-queue of them are admitted at once: more
 * get ERROR MCC_PERR_BUSY.
 *   SAD          uint32 device, uint32 k, uint32 want_map, image target,
 *                image pattern
 *                -> SAD_RESULT job_status, then if it succeeded: uint32 nx,
 *                   uint32 ny, uint32 n, n x (uint64 sad, uint32 x,
 *                   uint32 y) best first, uint32 has_map, has_map x
 *                   (nx * ny x uint64, row y first)
 *   DP2D         uint32 device, uint32 flags (MCC_IMG_*), uint32 na,
 *                na x image, uint32 nb, nb x image, uint32 npairs,
 *                npairs x (uint32 a, uint32 b): image b[b] warped onto
 *                a[a] (1:N: one a and N b, or N a and one b). Without
 *                MCC_IMG_ENHANCE every a has one size and every b one size.
 *                -> DP2D_RESULT job_status, uint32 side, uint32 index (a
 *                   failed enhancement: side 1 for a, 2 for b, index from 0;
 *                   side 0 otherwise), then if it succeeded: uint32 npairs,
 *                   npairs x (uint64 cost, double distance, uint64
 *                   differences), and with MCC_IMG_WARPED npairs x (the
 *                   warped image: the a image's width * height bytes)
 *   CHAMFER      uint32 device, uint32 dim, uint32 transform, double
 *                resolution, double max_distance, int32 init_type,
 *                16 x double init, double min_scale, double max_scale,
 *                uint64 max_cells, uint32 n_obs,
 *                n_obs * dim x double, uint32 n_ref, n_ref * dim x double
 *                (mcc_chamfer.h's options, max_cells at most 2^31 - 1 as
 *                mcc.align_max_cells; the others keep their defaults)
 *                -> CHAMFER_RESULT job_status, then if it succeeded: fit
 *   ALIGN        uint32 device, uint32 transform, uint32 use_directions,
 *                double max_distance, int32 init_type, 9 x double init,
 *                uint64 max_cells, bytes probe
 *                template, bytes candidate template (mcc_align.h)
 *                -> ALIGN_RESULT job_status, then if it succeeded: fit,
 *                   uint32 n, n x (double x, double y, double theta) (the
 *                   probe's minutiae mapped), int32 paired
 *
 * gallery       = uint32 db_oid, uint32 rel_oid, uint64 signature
 * hit           = float score, int64 key, uint64 hash
 * refine        = uint32 method (mcc_match.h's mcc_method; MCC_LSS: a plain
 *                 search, the rest ignored), uint32 final_k (identify()'s k,
 *                 at least 1), double fraction (0..1), uint32 refine_min
 *                 (mcc.refine_fraction and mcc.refine_min)
 * rhit          = hit, float refined (the method's score), uint64
 *                 insert_xid, uint64 delete_xid (0: none), uint32 flags
 *                 (MCC_COUNT_F_* and MCC_CAND_F_CERTAIN): the tuple version's
 *                 visibility, for the client to judge against its snapshot
 *                 as it judges a count's group
 * count         = uint32 state (MCC_COUNT_*), uint64 n_certain, uint32
 *                 n_groups, n_groups x (uint64 insert_xid, uint64 delete_xid
 *                 (0: none), uint32 flags (MCC_COUNT_F_*), uint32 entries)
 *                 (MCC_COUNT_DONE: n_certain searchable entries are visible
 *                 to every snapshot with that xmin: inserted by a committed
 *                 xid below it, not deleted; every other searchable entry is
 *                 in one group of equal xids and flags, for the client to
 *                 judge against its snapshot; at most MCC_PROTO_MAX_GROUPS,
 *                 else MCC_COUNT_OVERFLOW with n_certain and n_groups 0)
 * load_row      = int64 key, uint64 insert_xid, uint64 delete_xid (0: none),
 *                 bytes template, and with MCC_LOAD_IDS: load_ids
 * load_ids      = uint64 tid (the tuple's gallery-wide id: the partition's
 *                 ordinal among the gallery's relations sorted by OID << 48
 *                 | block << 16 | offset), uint64 xmin (the full inserting
 *                 xid, or MCC_XMIN_FROZEN | the raw xmin when the tuple is
 *                 frozen)
 * head          = load_ids, uint64 page_lsn (the tuple's page LSN; UINT64_MAX
 *                 for relations without WAL), uint64 insert_xid, uint64
 *                 delete_xid (a load_row's xids, for the same tuple)
 *                 (insert_xid: the raw xmin; delete_xid: the raw xmax whenever
 *                 a deleter exists that has not aborted, in progress included,
 *                 else 0; xids below 3 count as committed)
 * gallery_status= gallery, uint32 profile_id, uint64 generation, uint64
 *                 entries, uint64 searchable, uint64 cylinders, uint64
 *                 host_bytes, uint64 device_bytes, int64 loaded_at_usec,
 *                 double load_seconds, uint64 searches, char device[32]
 *
 * image         = uint32 width, uint32 height, width * height bytes (8-bit
 *                 gray, rows top to bottom; mcc_image.h's size limits)
 * job_status    = uint32 status (an mcc_status: 0 done, else the error the
 *                 backend's function would raise), bytes message, bytes
 *                 detail, bytes device (where the job ran: "cpu" or the
 *                 GPU's name)
 * fit           = uint32 n_params, n_params x double, double residual,
 *                 int32 iterations, uint32 converged
 * device        = MCC_IMG_ANY, MCC_IMG_GPU (a GPU or MCC_PERR_NO_GPU) or
 *                 MCC_IMG_CPU (the engine's CPU threads)
 *
 * A template is the exact stored blob of mcc_template.h (first 4 bytes: the
 * varlena header, ignored by the engine). Its hash is mcc_template_hash().
 * xids are PostgreSQL FullTransactionIds (64-bit, no wraparound).
 *
 * Engine behaviour the client relies on (docs/matcher-engine.md):
 * - a malformed frame gets ERROR MCC_PERR_PROTOCOL, then the engine closes
 *   that connection; ERROR's message is "message" or "message: detail";
 * - SEARCH of a gallery without a cache gets MCC_PERR_NOT_LOADED at once,
 *   even while another connection loads it;
 * - a load's errors come at LOAD_END; LOAD_BEGIN on a connection whose load
 *   is unfinished abandons that load, and so does CANCEL of its request_id;
 *   a load older than what the cache already applied is dropped and LOADED
 *   reports the cache that stays;
 * - on shutdown, pending requests get MCC_PERR_CANCELLED.
 *
 * Client behaviour the engine may rely on (src/service_*.c,
 * docs/matcher-service.md):
 * - a commit sends its DELTA frames, or one RELOAD, under the gallery's lock
 *   in shared memory, taking the gallery's next generation, before the
 *   commit can become visible; it nets its rows first, so a DELTA never
 *   deletes a row it inserts and never holds the same (key, hash) twice;
 * - a DELTA's xid is the (sub)transaction that wrote its rows, the xmin or
 *   xmax a heap scan reports; load_row insert_xid 0 means committed before
 *   every snapshot;
 * - a backend keeps one connection and has at most one request waiting on
 *   it; after CANCEL it skips replies to the request it gave up; it closes
 *   the connection when a frame or a load was left unfinished.
 */
#ifndef MCC_PROTO_H
#define MCC_PROTO_H

#include <stdint.h>

/*
 * 8: a SEARCH without probes answers the visibility count it asks for (the
 * scale-out refinement's per-partition row counts; a version-7 engine
 * answered it with MCC_COUNT_NONE).
 * 7: LOAD_BEGIN's MCC_LOAD_JOIN, LOAD_JOIN, LOAD_JOIN_END (a parallel load's
 * workers send their rows on their own connections).
 * 5: CHAMFER carries the search's scale range, ALIGN an initial transform;
 * LOAD_BEGIN's priority and flags, PRIORITY, ENGINE_STATUS, MCC_PERR_BUSY.
 * 4: SEARCH carries `refine` (a refining search: the engine rescores the
 * shortlist from its cache and returns rhits). 3: templates hashed by
 * mcc_hash.c's four-lane hash (2: FNV-1a); both ends must hash alike, so
 * the version keeps them from mixing.
 */
#define MCC_PROTO_VERSION	8
#define MCC_PROTO_MAX_FRAME	(64u * 1024u * 1024u)	/* payload limit */
#define MCC_PROTO_MAX_XIDS	(1u << 20)	/* xids per XID_LIST */
#define MCC_PROTO_MAX_GROUPS (1u << 16)	/* groups of a RESULT's count */

/* frame flags */
#define MCC_FRAME_MORE		0x0001	/* DELTA: more frames of this generation follow */

/* SEARCH's refine method word: a TOP reply is welcome (see SEARCH) */
#define MCC_REFINE_F_TOP	0x10000u
#define MCC_REFINE_METHOD	0xFFFFu
/* RESULT's per-probe `more` word */
#define MCC_RESULT_MORE		0x0001u
#define MCC_RESULT_TOP		0x0002u	/* a uint32 total follows */

typedef enum mcc_msg_type
{
	MCC_MSG_HELLO = 1,
	MCC_MSG_HELLO_OK,
	MCC_MSG_SEARCH,
	MCC_MSG_RESULT,
	MCC_MSG_LOAD_BEGIN,
	MCC_MSG_LOAD_ROWS,
	MCC_MSG_LOAD_END,
	MCC_MSG_LOADED,
	MCC_MSG_DELTA,
	MCC_MSG_RELOAD,
	MCC_MSG_XIDS,
	MCC_MSG_XID_LIST,
	MCC_MSG_SETTLE,
	MCC_MSG_OK,
	MCC_MSG_CANCEL,
	MCC_MSG_STATUS,
	MCC_MSG_STATUS_REPLY,
	MCC_MSG_EVICT,
	MCC_MSG_ERROR,				/* uint32 code, uint32 status, bytes message */
	MCC_MSG_REFINE,
	MCC_MSG_REFINED,
	MCC_MSG_ENGINE_STATUS,
	MCC_MSG_ENGINE_STATUS_REPLY,
	MCC_MSG_PRIORITY,

	/* cache snapshots: numbered apart, like the image jobs */
	MCC_MSG_SNAPSHOT = 48,
	MCC_MSG_SNAPSHOT_INFO,
	MCC_MSG_LOAD_HEADS,
	MCC_MSG_LOAD_HEADS_END,
	MCC_MSG_WANT,
	MCC_MSG_LOAD_JOIN,
	MCC_MSG_LOAD_JOIN_END,
	MCC_MSG_LOAD_JOINED,

	/* image and point jobs: numbered apart, so other additions cannot shift them */
	MCC_MSG_SAD = 64,
	MCC_MSG_SAD_RESULT,
	MCC_MSG_DP2D,
	MCC_MSG_DP2D_RESULT,
	MCC_MSG_CHAMFER,
	MCC_MSG_CHAMFER_RESULT,
	MCC_MSG_ALIGN,
	MCC_MSG_ALIGN_RESULT
} mcc_msg_type;

/* RESULT: the state of the visibility count */
typedef enum mcc_count_state
{
	MCC_COUNT_NONE = 0,			/* not asked for, or searchable <= count_above */
	MCC_COUNT_DONE,				/* n_certain and the groups */
	MCC_COUNT_OVERFLOW			/* more groups than MCC_PROTO_MAX_GROUPS */
} mcc_count_state;

/* flags of a count group */
#define MCC_COUNT_F_INS_COMMITTED	0x01	/* the inserting xid is known committed */
#define MCC_COUNT_F_DEL_COMMITTED	0x02	/* the deleting xid is known committed */

/* flags of a refining search's rhit: those of a count group, and */
#define MCC_CAND_F_CERTAIN	0x04	/* visible to every snapshot with xmin count_xmin */

/* LOAD_BEGIN flags */
#define MCC_LOAD_REPLACE	0x0001	/* the current cache may give way to make room */
/*
 * Rows carry load_ids; LOAD_BEGIN ends with uint64 scan_lsn (the WAL insert
 * position read before the heap scan, 0 if unknown) and uint64 next_xid
 * (the next full xid read then).
 */
#define MCC_LOAD_IDS		0x0002
#define MCC_LOAD_SNAPSHOT	0x0004	/* heads first, checked against the snapshot */
#define MCC_LOAD_JOIN		0x0008	/* other connections may join it (LOAD_JOIN) */

/* load_ids xmin of a tuple frozen when read: the raw 32-bit xmin below it */
#define MCC_XMIN_FROZEN		(UINT64_C(1) << 63)

/* HELLO_OK flags */
#define MCC_HELLO_IMAGES	0x0001	/* the engine takes image and point jobs */
#define MCC_HELLO_GPU		0x0002	/* ... and has a GPU for them */

/* where an image or point job may run */
typedef enum mcc_img_device
{
	MCC_IMG_ANY = 0,			/* a GPU if the engine has one, else its CPU threads */
	MCC_IMG_GPU = 1,			/* a GPU or the error MCC_PERR_NO_GPU */
	MCC_IMG_CPU = 2				/* the engine's CPU threads */
} mcc_img_device;

/* DP2D flags */
#define MCC_IMG_WARP		0x0001	/* back-trace: differences (mcc_dp2d.h's MCC_DP2D_WARP) */
#define MCC_IMG_ENHANCE		0x0002	/* enhance and binarize every image first (verification) */
#define MCC_IMG_WARPED		0x0004	/* reply with the warped images (needs MCC_IMG_WARP) */

/* ERROR codes (the `status` field carries an mcc_status for data errors) */
typedef enum mcc_proto_error
{
	MCC_PERR_DATA = 1,			/* bad template etc.: see status */
	MCC_PERR_PROTOCOL,			/* malformed frame */
	MCC_PERR_NOT_LOADED,		/* gallery absent or reload needed */
	MCC_PERR_GENERATION,		/* a needed delta did not arrive in time */
	MCC_PERR_MEMORY,			/* cache memory limit exceeded */
	MCC_PERR_CANCELLED,
	MCC_PERR_INTERNAL,
	MCC_PERR_TOO_LARGE,			/* a refining search's RESULT would pass the frame limit */
	MCC_PERR_NO_GPU = 32,		/* an image job asked for a GPU that cannot run it */
	MCC_PERR_BUSY				/* --image-queue image jobs are admitted already */
} mcc_proto_error;

/* states in SETTLE */
typedef enum mcc_xid_state
{
	MCC_XID_COMMITTED = 1,		/* inserts settle; deletes purge if xid < horizon */
	MCC_XID_ABORTED,			/* inserts purge; deletes are undone */
	MCC_XID_IN_PROGRESS			/* leave as is */
} mcc_xid_state;

typedef struct mcc_frame_hdr
{
	uint32_t	length;			/* payload bytes after the header */
	uint16_t	type;			/* mcc_msg_type */
	uint16_t	flags;			/* MCC_FRAME_* (0 but on DELTA) */
	uint64_t	request_id;
} mcc_frame_hdr;

typedef struct mcc_gallery_id
{
	uint32_t	db_oid;
	uint32_t	rel_oid;
	uint64_t	signature;		/* relfilenode, key and template columns */
} mcc_gallery_id;

#endif							/* MCC_PROTO_H */
