/*
 * service_identify.h: one identify() or identify_batch() request through
 * the matcher service, as src/service/service_identify.c serves it and its pieces
 * (service_recheck.c, service_settle.c, service_batch.c) share it.
 */
#ifndef SERVICE_IDENTIFY_H
#define SERVICE_IDENTIFY_H

#include "mcc_pg.h"
#include "service.h"
#include "gallery.h"
#include "refine.h"
#include "service_timing.h"
#include "shortlist.h"

/* One candidate of the engine. */
typedef struct candidate
{
	float		score;
	int64		key;
	uint64		hash;
} candidate;

/* The engine's answer for one probe, then the visible hits. */
typedef struct probe_answer
{
	candidate  *cand;			/* a plain search's */
	int			n_cand;
	mcc_rhit   *rc;				/* a refining search's */
	int			n_rc;
	bool		more;
	bool		top;			/* rc: the best of top_total certain (MCC_RESULT_TOP) */
	int64		top_total;
	candidate  *hits;			/* visible, best first, at most k (or n') */
	struct varlena **hit_tpl;	/* refining: the hits' templates */
	int			n_hits;
} probe_answer;

/* One identify() or identify_batch() call. */
typedef struct serve_req
{
	const mcc_gallery *g;
	struct varlena **probes;	/* detoasted */
	int			n_probes;
	int			profile_id;
	int32		k;
	float4		min_score;
	mcc_method	method;			/* MCC_LSS: no refinement */
	int64		want;			/* visible candidates to keep: k, or n' */
	mcc_gallery_ref ref;
	probe_answer *ans;
	uint32		n_unsettled;
	uint64		searchable;		/* the engine's, from the last RESULT */
	uint32		count_state;	/* MCC_COUNT_* of the last RESULT */
	uint64		count_certain;
	mcc_count_group *count_groups;
	uint32		count_n_groups;
	int64		count_rows;		/* n from the count, -1 if none was made */
	bool		in_engine;		/* the engine refined the hits */
	bool		no_top;			/* ask for whole shortlists (n' is not the engine's s) */
	int64		fixed_short;	/* > 0: n' is this many rows, not the settings' (identify_shortlist()) */
	int64		list_from;		/* identify_shortlist(): window_from */
	mcc_list_answer *list;		/* identify_shortlist(): the answer, for the one probe */
	bool		ahead;			/* only send the first SEARCH, ahead (service_ahead.c) */
	MemoryContext cxt;			/* what serving allocates; the caller deletes it */
	serve_timing tm;			/* where serve() spent its time (service_timing.h) */
} serve_req;

/*
 * Serve r through the service. True with r->ans filled; false to scan in
 * the backend (mcc.fallback has had its say). What it allocates is in
 * r->cxt, which the caller deletes when done with r->ans.
 */
extern bool serve(serve_req *r);

/*
 * identify_shortlist() (src/service/service_list.c): the probe's shortlist
 * a->hits (LSS order, LSS scores) with the refined scores becomes r->list,
 * and a->hits the rows it keeps, for the re-check of the final hits.
 */
extern void keep_list(serve_req *r, probe_answer *a, const float *refined);

/* The same from a refining search's kept shortlist; the kept rows' hashes into *hashes. */
extern mcc_pick_result pick_list(serve_req *r, probe_answer *a, const mcc_refined *kept,
								 const float *kept_lss, const uint64 *kept_hash, int64 n_kept,
								 uint64 **hashes);

/* r zeroed, then set for one probe (*probe, detoasted), k and method. */
extern void serve_req_one(serve_req *r, const mcc_gallery *g, struct varlena **probe, int32 k,
						  int method);

/* Detoasted probe, validated. */
extern struct varlena *checked_probe(Datum d);

#endif							/* SERVICE_IDENTIFY_H */
