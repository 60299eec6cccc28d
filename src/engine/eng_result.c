/*
 * eng_result.c: the RESULT frame of a search (eng_result.h, mcc_proto.h):
 * the cache's generation and counts, the visibility count, and each probe's
 * hits, with a refining search's refined scores and visibility or its TOP.
 */
#include "eng_result.h"
#include "eng_conn.h"
#include "eng_gallery.h"

#include <stdlib.h>

/* Reply an empty RESULT (a SEARCH without probes only waits for its generation). */
void
eng_result_reply_empty(eng_server *s, const eng_request *r, const eng_cache *c)
{
	eng_conn   *conn = eng_conn_by_id(s, r->conn_id);
	size_t		f;

	if (conn == NULL)
		return;
	f = eng_frame_begin(&conn->out, MCC_MSG_RESULT, r->request_id);
	eng_buf_u64(&conn->out, c->applied_gen);
	eng_buf_u32(&conn->out, c->n_unsettled);
	eng_buf_u64(&conn->out, eng_cache_searchable(c));
	eng_buf_u32(&conn->out, MCC_COUNT_NONE);
	eng_buf_u64(&conn->out, 0);
	eng_buf_u32(&conn->out, 0);
	eng_buf_u32(&conn->out, 0);
	eng_frame_end(&conn->out, f);
}

/* RESULT's count for request r (mcc_proto.h). */
static void
put_count(eng_buf *o, const eng_batch *b, const eng_request *r)
{
	bool		asked = eng_count_asked(r, b->cache);
	const eng_count *ct;

	if (!asked || r->count_index < 0 || b->counts[r->count_index].state != MCC_COUNT_DONE)
	{
		/* not asked for; or more groups than allowed, or no memory for them */
		eng_buf_u32(o, asked ? MCC_COUNT_OVERFLOW : MCC_COUNT_NONE);
		eng_buf_u64(o, 0);
		eng_buf_u32(o, 0);
		return;
	}
	ct = &b->counts[r->count_index];
	eng_buf_u32(o, MCC_COUNT_DONE);
	eng_buf_u64(o, ct->certain);
	eng_buf_u32(o, ct->n_groups);
	for (uint32_t i = 0; i < ct->n_groups; i++)
	{
		eng_buf_u64(o, ct->groups[i].insert_xid);
		eng_buf_u64(o, ct->groups[i].delete_xid);
		eng_buf_u32(o, ct->groups[i].flags);
		eng_buf_u32(o, ct->groups[i].entries);
	}
}

/* A refining search's hit j of slot sl: its refined score and visibility. */
static void
put_rhit_tail(eng_buf *o, const eng_cache *c, const eng_request *r, float refined,
			  uint32_t entry)
{
	const eng_entry *e = &c->entries[entry];
	uint32_t	flags = 0;

	if (e->flags & ENG_E_INS_SETTLED)
		flags |= MCC_COUNT_F_INS_COMMITTED;
	if (e->delete_xid != 0 && (e->flags & ENG_E_DEL_COMMITTED))
		flags |= MCC_COUNT_F_DEL_COMMITTED;
	if (r->count_xmin != 0 && eng_entry_certain(e, r->count_xmin))
		flags |= MCC_CAND_F_CERTAIN;
	eng_buf_f32(o, refined);
	eng_buf_u64(o, e->insert_xid);
	eng_buf_u64(o, e->delete_xid);
	eng_buf_u32(o, flags);
}

/* Is refined pair a (hit ha) better than b (hit hb): score desc, key asc. */
static bool
better_refined(const eng_rescore_pair *a, const eng_hit *ha, const eng_rescore_pair *b,
			   const eng_hit *hb)
{
	if (a->score != b->score)
		return a->score > b->score;
	return ha->key < hb->key;
}

/*
 * A TOP reply for one probe of a refining search (mcc_proto.h), if the
 * request welcomes it and it holds: the n rescored hits are exactly the
 * shortlist s and more hits follow. refine_cut stops at the s-th certain
 * hit, so n == s with hits beyond it means all n are certain. Writes the
 * best min(final_k, n) by refined score; false (nothing written) otherwise.
 */
static bool
put_top(eng_buf *o, const eng_cache *c, const eng_request *r, const eng_slot *sl,
		const eng_rescore_pair *rp, uint32_t n)
{
	uint32_t	t = r->final_k < n ? r->final_k : n;
	uint32_t   *best;
	uint32_t	nb = 0;

	if (!r->top || r->count_xmin == 0 || n == 0 || n != r->shortlist ||
		sl->hits.n <= n || t >= n)
		return false;
	if ((best = malloc(sizeof(uint32_t) * t)) == NULL)
		return false;			/* the whole shortlist instead */
	/* the t best by insertion: t is a final k, small next to n */
	for (uint32_t j = 0; j < n; j++)
	{
		uint32_t	at;

		if (nb == t && !better_refined(&rp[j], &sl->hits.h[j], &rp[best[t - 1]],
									   &sl->hits.h[best[t - 1]]))
			continue;
		at = nb < t ? nb++ : t - 1;
		while (at > 0 && better_refined(&rp[j], &sl->hits.h[j], &rp[best[at - 1]],
										&sl->hits.h[best[at - 1]]))
		{
			best[at] = best[at - 1];
			at--;
		}
		best[at] = j;
	}
	eng_buf_u32(o, MCC_RESULT_MORE | MCC_RESULT_TOP);
	eng_buf_u32(o, n);
	eng_buf_u32(o, t);
	for (uint32_t i = 0; i < t; i++)
	{
		const eng_hit *h = &sl->hits.h[best[i]];

		eng_buf_f32(o, h->score);
		eng_buf_i64(o, h->key);
		eng_buf_u64(o, h->hash);
		put_rhit_tail(o, c, r, rp[best[i]].score, rp[best[i]].entry);
	}
	free(best);
	return true;
}

/*
 * Write the RESULT of a request whose pass (and, refining, whose rescoring
 * rs) has finished.
 */
void
eng_result_reply(eng_server *s, const eng_batch *b, const eng_rescore *rs,
			 const eng_request *r)
{
	eng_conn   *conn = eng_conn_by_id(s, r->conn_id);
	bool		refining = r->refine != MCC_LSS;
	eng_buf    *o;
	size_t		f;

	if (conn == NULL)
		return;
	for (uint32_t i = 0; i < r->n_probes; i++)
		if (b->slots[r->first_slot + i].hits.failed)
		{
			eng_reply_error(conn, r->request_id, MCC_PERR_INTERNAL, MCC_ERR_MEMORY,
							"out of memory");
			return;
		}
	if (refining && (rs == NULL || rs->fail.failed))
	{
		mcc_error	err;

		if (rs == NULL)
			mcc_error_set(&err, MCC_ERR_MEMORY, "out of memory");
		eng_reply_error_by_id(s, r->conn_id, r->request_id,
							  rs == NULL || rs->fail.err.status == MCC_ERR_MEMORY ?
							  MCC_PERR_INTERNAL : MCC_PERR_DATA,
							  rs == NULL ? &err : &rs->fail.err);
		return;
	}
	o = &conn->out;
	f = eng_frame_begin(o, MCC_MSG_RESULT, r->request_id);
	eng_buf_u64(o, b->cache->applied_gen);
	eng_buf_u32(o, b->cache->n_unsettled);
	eng_buf_u64(o, eng_cache_searchable(b->cache));
	put_count(o, b, r);
	eng_buf_u32(o, r->n_probes);
	for (uint32_t i = 0; i < r->n_probes; i++)
	{
		const eng_slot *sl = &b->slots[r->first_slot + i];
		uint32_t	n = sl->hits.n;
		const eng_rescore_pair *rp = NULL;

		if (refining)
			rp = eng_rescore_pairs(rs, r->first_slot + i, &n);
		if (refining && put_top(o, b->cache, r, sl, rp, n))
			continue;
		eng_buf_u32(o, sl->n_ge > n ? MCC_RESULT_MORE : 0);
		eng_buf_u32(o, n);
		for (uint32_t j = 0; j < n; j++)
		{
			if (refining && j + ENG_HIT_AHEAD < n)
				__builtin_prefetch(&b->cache->entries[rp[j + ENG_HIT_AHEAD].entry]);
			eng_buf_f32(o, sl->hits.h[j].score);
			eng_buf_i64(o, sl->hits.h[j].key);
			eng_buf_u64(o, sl->hits.h[j].hash);
			if (refining)
				put_rhit_tail(o, b->cache, r, rp[j].score, rp[j].entry);
		}
	}
	eng_frame_end(o, f);
}
