/*
 * service_list.c: identify_shortlist() through the matcher service
 * (src/identify/shortlist.h): a refining request whose n' is the given
 * shortlist length (serve_req's fixed_short), answered not by its top k but
 * by the rows of the whole shortlist that identify_shortlist() returns,
 * with their LSS and refined scores. src/service/service_identify.c serves
 * it as any refining request and hands the shortlist here. And
 * mcc_gallery_rows(), the row count the scale-out refinement sizes each
 * partition's window with: a request without probes, which serve() answers
 * with the engine's visibility count alone. Both can be sent ahead
 * (service_ahead.c), so that identify_shortlists() and
 * mcc_galleries_rows() have all their galleries' requests in the engine at
 * once.
 */
#include "mcc_pg.h"
#include "service.h"
#include "service_identify.h"
#include "shortlist.h"

#include "utils/memutils.h"

/*
 * identify_shortlist(): the probe's shortlist a->hits (LSS order, LSS
 * scores) with refined[] becomes r->list, and a->hits the rows it keeps
 * (for the re-check of the final hits).
 */
void
keep_list(serve_req *r, probe_answer *a, const float *refined)
{
	mcc_list_row *rows = palloc(Max(a->n_hits, 1) * sizeof(mcc_list_row));
	candidate  *kept;
	int64		i;

	for (i = 0; i < a->n_hits; i++)
	{
		rows[i].lss = a->hits[i].score;
		rows[i].refined = refined[i];
		rows[i].key = a->hits[i].key;
	}
	mcc_list_answer_fill(r->list, rows, a->n_hits, r->k, r->list_from);
	kept = palloc(Max(r->list->n, 1) * sizeof(candidate));
	for (i = 0; i < r->list->n; i++)
		kept[i] = a->hits[r->list->pos[i]];
	a->hits = kept;
	a->n_hits = (int) r->list->n;
}

/*
 * identify_shortlist(), refined in the engine: the kept shortlist (LSS
 * order) goes through keep_list; the hashes of the rows it keeps follow.
 */
mcc_pick_result
pick_list(serve_req *r, probe_answer *a, const mcc_refined *kept, const float *kept_lss,
		  const uint64 *kept_hash, int64 n_kept, uint64 **hashes)
{
	float	   *refined = palloc(Max(n_kept, 1) * sizeof(float));
	int64		i;

	a->hits = palloc(Max(n_kept, 1) * sizeof(candidate));
	for (i = 0; i < n_kept; i++)
	{
		a->hits[i].score = kept_lss[i];
		a->hits[i].key = kept[i].key;
		a->hits[i].hash = kept_hash[i];
		refined[i] = kept[i].score;
	}
	a->n_hits = (int) n_kept;
	keep_list(r, a, refined);
	*hashes = palloc(Max(a->n_hits, 1) * sizeof(uint64));
	for (i = 0; i < a->n_hits; i++)
		(*hashes)[i] = a->hits[i].hash;
	a->hit_tpl = NULL;
	return MCC_PICK_DONE;
}

/*
 * identify_shortlist() through the service: a refining request whose n' is
 * `shortlist`, answered as a whole list into *out; or, ahead, only its
 * first SEARCH sent (service_ahead.c).
 */
static bool
serve_list(const mcc_gallery *g, const struct varlena *probe, int32 k, int method,
		   int64 shortlist, int64 from, mcc_list_answer *out, bool ahead)
{
	serve_req	r;
	struct varlena *p = (struct varlena *) probe;
	bool		ok;

	serve_req_one(&r, g, &p, k, method);
	r.no_top = true;			/* every row of the shortlist, not its top k */
	r.fixed_short = shortlist;
	r.list_from = from;
	r.list = out;
	r.ahead = ahead;
	ok = serve(&r);
	MemoryContextDelete(r.cxt);
	return ok;
}

/* identify_shortlist() through the service (src/identify/shortlist.h). */
bool
mcc_service_identify_list(const mcc_gallery *g, const struct varlena *probe, int32 k, int method,
						  int64 shortlist, int64 from, mcc_list_answer *out)
{
	return serve_list(g, probe, k, method, shortlist, from, out, false);
}

/* Its request sent ahead, for a later mcc_service_identify_list() to take. */
void
mcc_service_identify_list_ahead(const mcc_gallery *g, const struct varlena *probe, int32 k,
								int method, int64 shortlist)
{
	(void) serve_list(g, probe, k, method, shortlist, 0, NULL, true);
}

/*
 * mcc_gallery_rows() through the service: a request without probes, whose
 * count serve() judges against the statement's snapshot as identify()'s n;
 * or, ahead, only that request sent.
 */
static bool
serve_rows(const mcc_gallery *g, int64 *n, bool ahead)
{
	serve_req	r;
	bool		ok;

	serve_req_one(&r, g, NULL, 1, MCC_LSS);
	r.n_probes = 0;
	r.ahead = ahead;
	ok = serve(&r);
	*n = r.count_rows;
	MemoryContextDelete(r.cxt);
	return ok;
}

/* mcc_gallery_rows() through the service. */
bool
mcc_service_gallery_rows(const mcc_gallery *g, int64 *n)
{
	return serve_rows(g, n, false);
}

/* Its request sent ahead, for a later mcc_service_gallery_rows() to take. */
void
mcc_service_gallery_rows_ahead(const mcc_gallery *g)
{
	int64		n;

	(void) serve_rows(g, &n, true);
}
