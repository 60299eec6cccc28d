/*
 * eng_refine.h: REFINE requests, the second stage of identification (paper
 * 000 Sec. 5.4, docs/accuracy.md), on the pool's CPU threads.
 *
 * The client sends, per probe, the templates of the candidates it kept after
 * its visibility re-check (the LSS shortlist); a job scores each of them
 * against its probe with mcc_match_candidate, in parts of a few candidates,
 * every thread with its own mcc_match_work in its scratch. A REFINE reads no
 * cache and needs no gallery: it is pure computation, so it never waits for
 * a generation or for a pass, and its results are those of the same
 * function in the backend, bit for bit.
 */
#ifndef ENG_REFINE_H
#define ENG_REFINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "eng_pool.h"
#include "mcc_error.h"
#include "mcc_match.h"
#include "mcc_template.h"

#define ENG_JOB_REFINE	4		/* eng_job.tag (1: eng_pass.h, 2: eng_compact.h, 3: eng_image.h) */
#define ENG_REFINE_PART 8		/* candidates per part, at most */

/* One probe and its candidates; views point into the request's payload copy. */
typedef struct eng_refine_item
{
	mcc_template_view probe;
	uint32_t	n;
	mcc_template_view *cand;
	float	   *score;
} eng_refine_item;

typedef struct eng_refine
{
	eng_job		job;			/* first: the pool hands this pointer back */
	struct eng_refine *next;	/* the server's list of running refinements */
	uint64_t	conn_id;
	uint64_t	request_id;
	mcc_method	method;
	uint8_t    *payload;		/* a copy of the frame's payload */
	uint32_t	n_items;
	eng_refine_item *items;
	uint32_t   *part_item;		/* per part: its item ... */
	uint32_t   *part_first;		/* ... and its first candidate */
	atomic_int	cancelled;		/* CANCEL or the connection closed */
	eng_job_error fail;			/* the first failure of a part */
} eng_refine;

/* Scratch bytes a pool thread needs for refinements (one mcc_match_work). */
size_t		eng_refine_scratch_bytes(void);

/*
 * A REFINE payload as a job of parts of at most ENG_REFINE_PART candidates.
 * NULL on failure: *perr is MCC_PERR_PROTOCOL for a malformed frame (close
 * the connection), else the error code to reply, with err saying why.
 */
eng_refine *eng_refine_parse(const uint8_t *payload, size_t len, int *perr,
							 mcc_error *err);

void		eng_refine_free(eng_refine *r);

/* Run every part on the calling thread (tests). */
void		eng_refine_run_here(eng_refine *r);

struct eng_server;
struct eng_conn;

/* Queue a parsed REFINE for connection c (replies at once if it is empty). */
void		eng_refine_submit(struct eng_server *s, struct eng_conn *c, uint64_t request_id,
							  eng_refine *r);

/* A finished REFINE job: reply unless cancelled, free it. */
void		eng_refine_done(struct eng_server *s, eng_job *job);
bool		eng_refine_cancel(struct eng_server *s, uint64_t conn_id, uint64_t request_id);
void		eng_refine_conn_closed(struct eng_server *s, uint64_t conn_id);
void		eng_refine_fail_all(struct eng_server *s, const char *why);

/* Free the refinements the stopped pool did not hand back. */
void		eng_refine_free_all(struct eng_server *s);

#endif							/* ENG_REFINE_H */
