/*
 * image_pg.h: images in the PostgreSQL layer, shared by every image
 * feature (SAD search now, elastic matching later).
 *
 * An image argument is a bytea holding a PGM (P5) or PNG (src/core's
 * mcc_image.h decodes it) or a two-dimensional smallint array [row][column]
 * of values 0..255. Both become an mcc_image whose pixels are palloc'd in
 * the current memory context; errors are raised with the SQLSTATE of
 * their mcc_status (22P02, 22P03, 22023, 54000) or, for arrays, 22004 for
 * NULL elements and 22003 for values outside 0..255.
 */
#ifndef IMAGE_PG_H
#define IMAGE_PG_H

#include "mcc_pg.h"

#include "lib/stringinfo.h"
#include "utils/array.h"

#include "mcc_image.h"
#include "mcc_wire.h"

/* mcc.image_threads: worker threads of one image search (src/image/image_io.c). */
extern int	mcc_image_threads;

/* Decode a PGM or PNG bytea; info (may be NULL) gets its header. */
extern void mcc_pg_image_from_bytea(const bytea *b, mcc_image *img, mcc_image_info *info);

/*
 * The same, naming the argument in errors: "invalid <what> image: <why>"
 * (what NULL: the decoder's message alone, as mcc_pg_image_from_bytea).
 */
extern void mcc_pg_image_arg(const bytea *b, const char *what, mcc_image *img,
							 mcc_image_info *info);

/* A smallint[][] as an image (what names the argument in messages: "target image"). */
extern void mcc_pg_image_from_array(ArrayType *a, const char *what, mcc_image *img);

/* The image as a binary PGM bytea (maxval 255). */
extern bytea *mcc_pg_image_to_pgm(const mcc_image *img);

/*
 * A two-dimensional array [rows][cols] (lower bounds 1) of elemtype,
 * elemsize bytes an element, without NULLs: its data (ARR_DATA_PTR)
 * zeroed for the caller to fill. NULL when it exceeds one allocation.
 */
extern ArrayType *mcc_pg_array_2d(Oid elemtype, int elemsize, uint32 rows, uint32 cols);

/*
 * Wait for a job on src/core's worker threads (mcc_sad_job, mcc_dp2d_job;
 * wait and abort are its library's functions) in steps of poll_ms, with
 * CHECK_FOR_INTERRUPTS() between steps. A cancel or statement_timeout
 * raises its error there, and abort stops, joins and frees the threads
 * before the error goes on, so that no thread outlives the memory it
 * writes to. A macro because the jobs are of different types; the caller
 * includes miscadmin.h.
 */
#define MCC_PG_WAIT_JOB(job, wait, abort, poll_ms) \
	do { \
		PG_TRY(); \
		{ \
			while (!wait((job), (poll_ms))) \
				CHECK_FOR_INTERRUPTS(); \
		} \
		PG_CATCH(); \
		{ \
			abort(job); \
			PG_RE_THROW(); \
		} \
		PG_END_TRY(); \
	} while (0)

/* ---------------------------------------------------------------------
 * Image and point jobs in the matcher engine (src/image/image_engine.c,
 * docs/matcher-engine.md "Image jobs"), chosen by mcc.image_device.
 */

/* Define mcc.image_device; called once from mcc_image_init. */
extern void mcc_image_engine_init(void);

/*
 * Does this call of fn (its SQL name, for messages) run in the matcher
 * engine? request_bytes and reply_bytes are the sizes of its frames.
 * true: connected, and frame is started (room for its header, then the
 * device field) for the request's fields. false: the backend runs it
 * (mcc.image_device = cpu, or auto without an engine GPU). Raises when
 * mcc.image_device = gpu or engine and the engine cannot.
 */
extern bool mcc_image_request_start(const char *fn, uint64 request_bytes, uint64 reply_bytes,
									StringInfo frame);

/* A job's answer: its error (status MCC_OK: none), where it ran, the rest. */
typedef struct mcc_image_result
{
	mcc_error	err;
	char	   *device;
	mcc_wire_rd body;			/* the fields after job_status */
} mcc_image_result;

/* Request fields. */
extern void mcc_image_put_u32(StringInfo s, uint32 v);
extern void mcc_image_put_u64(StringInfo s, uint64 v);
extern void mcc_image_put_f64(StringInfo s, double v);
extern void mcc_image_put_image(StringInfo s, const mcc_image *img);

/* Bytes of an image field. */
extern uint64 mcc_image_field_bytes(const mcc_image *img);

/*
 * Send the request (mcc_proto.h type `type`) and wait for its result,
 * interruptibly: a cancel or statement_timeout sends CANCEL and raises.
 * An engine ERROR is raised; a job's own error comes back in res->err.
 * false: the engine has all the image jobs it takes and mcc.image_device
 * is auto, so this backend runs the call.
 */
extern bool mcc_image_engine_run(StringInfo frame, uint16 type, const char *fn,
								 mcc_image_result *res);

/* Result fields. */
extern uint32 mcc_image_get_u32(mcc_image_result *res);
extern uint64 mcc_image_get_u64(mcc_image_result *res);
extern double mcc_image_get_f64(mcc_image_result *res);
extern const char *mcc_image_get_raw(mcc_image_result *res, size_t n);

#endif							/* IMAGE_PG_H */
