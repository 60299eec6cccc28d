/*
 * service_search_msg.c: the SEARCH request of identify() and its RESULT
 * reply, encoded and parsed (service_search_msg.h; the layouts are in
 * src/proto/mcc_proto.h).
 */
#include "postgres.h"

#include "service_search_msg.h"

#include <limits.h>

#define REFINE_UNIT			256		/* candidates per mcc.request_timeout, beyond one per probe */

/*
 * Send SEARCH and wait; false on mcc.request_timeout, or at once when
 * r->ahead (sent ahead, src/service/service_ahead.c; the same frame sent
 * later takes that request's reply). count_xmin: 0, or ask
 * for the visibility count at this snapshot xmin when more than count_above
 * entries are searchable. in_engine: a refining search (the engine rescores
 * its shortlist; kprime is then the slack of mcc_proto.h).
 */
bool
send_search(serve_req *r, uint64 gen, uint32 kprime, uint64 count_xmin,
			uint64 count_above, bool in_engine, mcc_reply *reply)
{
	StringInfoData f;
	uint64		id;
	int			i;
	bool		answered;

	serve_timing_lap(&r->tm, SERVE_T_OTHER);
	r->tm.requests++;
	mcc_frame_begin(&f);
	mcc_put_gallery(&f, &r->ref.id);
	mcc_put_u64(&f, gen);
	mcc_put_u32(&f, kprime);
	/* refining: every LSS score may refine to one above min_score */
	mcc_put_f32(&f, r->method == MCC_LSS ? r->min_score : 0.0f);
	mcc_put_u64(&f, count_xmin);
	mcc_put_u64(&f, count_above);
	mcc_put_u32(&f, in_engine ? (uint32) r->method | (r->no_top ? 0 : MCC_REFINE_F_TOP) :
				(uint32) MCC_LSS);
	mcc_put_u32(&f, in_engine ? (uint32) r->k : 0);
	/* a fixed n' (identify_shortlist()): fraction 0 and refine_min n' make s exactly it */
	mcc_put_f64(&f, in_engine && r->fixed_short == 0 ? mcc_refine_fraction : 0.0);
	mcc_put_u32(&f, !in_engine ? 0 : r->fixed_short > 0 ?
				(uint32) Min(r->fixed_short, (int64) PG_UINT32_MAX) : (uint32) mcc_refine_min);
	mcc_put_u32(&f, (uint32) r->n_probes);
	for (i = 0; i < r->n_probes; i++)
		mcc_put_bytes(&f, r->probes[i], VARSIZE(r->probes[i]));
	if (r->ahead)
	{
		/* serve() sending ahead: the call that needs the reply takes it */
		(void) mcc_conn_send_ahead(&f, MCC_MSG_SEARCH);
		pfree(f.data);
		return false;
	}
	id = mcc_conn_send_or_take(&f, MCC_MSG_SEARCH);
	pfree(f.data);
	serve_timing_lap(&r->tm, SERVE_T_SEND);
	/* mcc.request_timeout per probe; refining, also per REFINE_UNIT candidates */
	answered = mcc_conn_wait_reply_units(id, reply, in_engine ?
										 (int) Min((int64) r->n_probes +
												   (int64) r->n_probes * (r->want + kprime) / REFINE_UNIT,
												   INT_MAX / 2) :
										 r->n_probes);
	serve_timing_lap(&r->tm, SERVE_T_WAIT);
	return answered;
}

/* Parse RESULT's visibility count into r. */
static void
parse_count(serve_req *r, mcc_reader *b)
{
	uint32		n;
	uint32		i;

	r->count_state = mcc_get_u32(b);
	r->count_certain = mcc_get_u64(b);
	r->count_groups = mcc_get_records(b, 24, sizeof(mcc_count_group), &n);
	r->count_n_groups = n;
	for (i = 0; i < n; i++)
	{
		r->count_groups[i].insert_xid = mcc_get_u64(b);
		r->count_groups[i].delete_xid = mcc_get_u64(b);
		r->count_groups[i].flags = mcc_get_u32(b);
		r->count_groups[i].entries = mcc_get_u32(b);
	}
}

/* A hit: LSS score, key, template hash (20 bytes; a refining search's rhit begins so). */
static void
get_hit(mcc_reader *b, float *score, int64 *key, uint64 *hash)
{
	*score = mcc_get_f32(b);
	*key = mcc_get_i64(b);
	*hash = mcc_get_u64(b);
}

/* Parse a probe's rhits (a refining search) into a: a hit, the refined score, the version. */
static void
parse_rhits(probe_answer *a, mcc_reader *b)
{
	uint32		n;

	a->rc = mcc_get_records(b, 40, sizeof(mcc_rhit), &n);
	a->n_rc = (int) n;
	for (uint32 j = 0; j < n; j++)
	{
		mcc_rhit   *h = &a->rc[j];

		get_hit(b, &h->score, &h->key, &h->hash);
		h->refined = mcc_get_f32(b);
		h->v.insert_xid = mcc_get_u64(b);
		h->v.delete_xid = mcc_get_u64(b);
		h->v.flags = mcc_get_u32(b);
	}
}

/* Parse a RESULT into r->ans (in_engine: of a refining search). */
void
parse_result(serve_req *r, mcc_reply *reply, bool in_engine)
{
	mcc_reader *b = &reply->body;
	int			i;

	(void) mcc_get_u64(b);		/* applied generation */
	r->n_unsettled = mcc_get_u32(b);
	r->searchable = mcc_get_u64(b);
	parse_count(r, b);
	if (mcc_get_u32(b) != (uint32) r->n_probes)
		mcc_pg_malformed_reply("The result has another number of probes than the request.");
	for (i = 0; i < r->n_probes; i++)
	{
		probe_answer *a = &r->ans[i];
		uint32		n;
		uint32		more;

		more = mcc_get_u32(b);
		a->more = (more & MCC_RESULT_MORE) != 0;
		a->top = in_engine && (more & MCC_RESULT_TOP) != 0;
		a->top_total = a->top ? (int64) mcc_get_u32(b) : 0;
		if (in_engine)
		{
			parse_rhits(a, b);
			continue;
		}
		a->cand = mcc_get_records(b, 20, sizeof(candidate), &n);
		a->n_cand = (int) n;
		for (uint32 j = 0; j < n; j++)
			get_hit(b, &a->cand[j].score, &a->cand[j].key, &a->cand[j].hash);
	}
	serve_timing_lap(&r->tm, SERVE_T_PARSE);
}
