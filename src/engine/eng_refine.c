/*
 * eng_refine.c: REFINE jobs: parsing, the parts the pool's threads run, and
 * their life cycle in the server (reply, cancel, closed connections).
 */
#include <stdlib.h>
#include <string.h>

#include "eng_conn.h"
#include "eng_log.h"
#include "eng_refine.h"
#include "eng_server.h"
#include "eng_wire.h"

size_t
eng_refine_scratch_bytes(void)
{
	return mcc_match_work_size();
}

void
eng_refine_free(eng_refine *r)
{
	if (r == NULL)
		return;
	for (uint32_t i = 0; r->items && i < r->n_items; i++)
	{
		free(r->items[i].cand);
		free(r->items[i].score);
	}
	free(r->items);
	free(r->part_item);
	free(r->part_first);
	free(r->payload);
	eng_job_error_destroy(&r->fail);
	free(r);
}

/* Score the candidates of one part against their probe. */
static void
refine_run(eng_job *job, uint32_t part, void *scratch)
{
	eng_refine *r = (eng_refine *) job;
	eng_refine_item *it = &r->items[r->part_item[part]];
	uint32_t	first = r->part_first[part];
	uint32_t	end = first + ENG_REFINE_PART < it->n ? first + ENG_REFINE_PART : it->n;
	mcc_match_work *w = scratch;
	mcc_error	err;

	/* the scratch may have served a scan since: start afresh */
	mcc_match_work_init(w);
	mcc_match_set_probe(w, &it->probe);
	for (uint32_t c = first; c < end; c++)
	{
		if (atomic_load(&r->cancelled))
			return;
		if (mcc_match_candidate(w, &it->cand[c], r->method, NULL, &it->score[c],
								&err) != MCC_OK)
		{
			eng_job_error_set(&r->fail, &err);
			return;
		}
	}
}

/* Skip the rest once the request is gone. */
static bool
refine_dead(eng_job *job)
{
	return atomic_load(&((eng_refine *) job)->cancelled) != 0;
}

/* Check the framing of a REFINE payload; count its items' candidates. */
static bool
refine_frame_ok(const uint8_t *payload, size_t len, uint32_t *n_items, uint64_t *n_parts)
{
	eng_rd		rd;

	eng_rd_init(&rd, payload, len);
	(void) eng_rd_u32(&rd);		/* method */
	*n_items = eng_rd_u32(&rd);
	*n_parts = 0;
	if (rd.bad || (uint64_t) *n_items * 8 > eng_rd_left(&rd))
		return false;
	for (uint32_t i = 0; i < *n_items && !rd.bad; i++)
	{
		uint32_t	blen;
		uint32_t	n;

		(void) eng_rd_bytes(&rd, &blen);
		n = eng_rd_u32(&rd);
		if (rd.bad || (uint64_t) n * 4 > eng_rd_left(&rd))
			return false;
		for (uint32_t j = 0; j < n; j++)
			(void) eng_rd_bytes(&rd, &blen);
		*n_parts += (n + ENG_REFINE_PART - 1) / ENG_REFINE_PART;
	}
	return eng_rd_done(&rd) && *n_parts < UINT32_MAX;
}

/* Open item i of the payload copy at the reader's position. */
static mcc_status
refine_item_open(eng_refine *r, eng_rd *rd, uint32_t i, mcc_error *err)
{
	eng_refine_item *it = &r->items[i];
	uint32_t	blen;
	const uint8_t *p = eng_rd_bytes(rd, &blen);

	if (mcc_template_open(p, blen, &it->probe, err) != MCC_OK)
		return mcc_error_detail(err, "The probe of item %u is not a valid template.", i + 1);
	it->n = eng_rd_u32(rd);
	it->cand = malloc((it->n ? it->n : 1) * sizeof(mcc_template_view));
	it->score = calloc(it->n ? it->n : 1, sizeof(float));
	if (it->cand == NULL || it->score == NULL)
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
	for (uint32_t j = 0; j < it->n; j++)
	{
		p = eng_rd_bytes(rd, &blen);
		if (mcc_template_open(p, blen, &it->cand[j], err) != MCC_OK)
			return mcc_error_detail(err, "Candidate %u of item %u is not a valid template.",
									j + 1, i + 1);
		if (it->cand[j].profile != it->probe.profile)
			return mcc_error_set(err, MCC_ERR_VALUE,
								 "candidate %u of item %u has profile \"%s\", its probe \"%s\"",
								 j + 1, i + 1, it->cand[j].profile->name,
								 it->probe.profile->name);
	}
	return MCC_OK;
}

eng_refine *
eng_refine_parse(const uint8_t *payload, size_t len, int *perr, mcc_error *err)
{
	eng_refine *r;
	eng_rd		rd;
	uint32_t	n_items;
	uint64_t	n_parts;
	uint32_t	method;
	uint32_t	part = 0;

	mcc_error_clear(err);
	*perr = MCC_PERR_PROTOCOL;
	if (!refine_frame_ok(payload, len, &n_items, &n_parts))
		return NULL;
	*perr = MCC_PERR_DATA;
	memcpy(&method, payload, sizeof(method));
	if (method >= MCC_NMETHODS)
	{
		mcc_error_set(err, MCC_ERR_VALUE, "unknown matching method %u", method);
		return NULL;
	}
	*perr = MCC_PERR_INTERNAL;
	r = calloc(1, sizeof(*r));
	if (r == NULL)
	{
		mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
		return NULL;
	}
	eng_job_error_init(&r->fail);
	r->method = (mcc_method) method;
	r->n_items = n_items;
	r->payload = malloc(len ? len : 1);
	r->items = calloc(n_items ? n_items : 1, sizeof(eng_refine_item));
	r->part_item = malloc((n_parts ? n_parts : 1) * sizeof(uint32_t));
	r->part_first = malloc((n_parts ? n_parts : 1) * sizeof(uint32_t));
	if (r->payload == NULL || r->items == NULL || r->part_item == NULL ||
		r->part_first == NULL)
	{
		eng_refine_free(r);
		mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
		return NULL;
	}
	memcpy(r->payload, payload, len);
	eng_rd_init(&rd, r->payload, len);
	(void) eng_rd_u32(&rd);
	(void) eng_rd_u32(&rd);
	for (uint32_t i = 0; i < n_items; i++)
	{
		mcc_status	st = refine_item_open(r, &rd, i, err);

		if (st != MCC_OK)
		{
			*perr = st == MCC_ERR_MEMORY ? MCC_PERR_INTERNAL : MCC_PERR_DATA;
			eng_refine_free(r);
			return NULL;
		}
		for (uint32_t c = 0; c < r->items[i].n; c += ENG_REFINE_PART)
		{
			r->part_item[part] = i;
			r->part_first[part] = c;
			part++;
		}
	}
	r->job.run = refine_run;
	r->job.dead = refine_dead;
	r->job.tag = ENG_JOB_REFINE;
	r->job.n_parts = part;
	*perr = 0;
	return r;
}

void
eng_refine_run_here(eng_refine *r)
{
	void	   *scratch = malloc(eng_refine_scratch_bytes());

	if (scratch == NULL)
		return;
	for (uint32_t p = 0; p < r->job.n_parts; p++)
		refine_run(&r->job, p, scratch);
	free(scratch);
}

/* Write REFINED (or the first failure) to the request's connection. */
static void
refine_reply(eng_server *s, eng_refine *r)
{
	eng_conn   *c = eng_conn_by_id(s, r->conn_id);
	size_t		f;

	if (c == NULL)
		return;
	if (r->fail.failed)
	{
		eng_reply_error(c, r->request_id,
						r->fail.err.status == MCC_ERR_MEMORY ? MCC_PERR_INTERNAL : MCC_PERR_DATA,
						r->fail.err.status, "%s", r->fail.err.message);
		return;
	}
	f = eng_frame_begin(&c->out, MCC_MSG_REFINED, r->request_id);
	eng_buf_u32(&c->out, r->n_items);
	for (uint32_t i = 0; i < r->n_items; i++)
	{
		eng_buf_u32(&c->out, r->items[i].n);
		eng_buf_put(&c->out, r->items[i].score, (size_t) r->items[i].n * sizeof(float));
	}
	eng_frame_end(&c->out, f);
}

void
eng_refine_submit(eng_server *s, eng_conn *c, uint64_t request_id, eng_refine *r)
{
	r->conn_id = c->id;
	r->request_id = request_id;
	if (r->job.n_parts == 0)
	{
		refine_reply(s, r);		/* nothing to score */
		eng_refine_free(r);
		return;
	}
	r->next = s->refines;
	s->refines = r;
	eng_server_submit(s, s->pool, &r->job);
}

void
eng_refine_done(eng_server *s, eng_job *job)
{
	eng_refine *r = (eng_refine *) job;

	for (eng_refine **pp = &s->refines; *pp; pp = &(*pp)->next)
		if (*pp == r)
		{
			*pp = r->next;
			break;
		}
	if (!atomic_load(&r->cancelled))
		refine_reply(s, r);
	eng_refine_free(r);
}

bool
eng_refine_cancel(eng_server *s, uint64_t conn_id, uint64_t request_id)
{
	bool		found = false;

	for (eng_refine *r = s->refines; r; r = r->next)
		if (r->conn_id == conn_id && r->request_id == request_id)
		{
			atomic_store(&r->cancelled, 1);
			found = true;
		}
	return found;
}

void
eng_refine_conn_closed(eng_server *s, uint64_t conn_id)
{
	for (eng_refine *r = s->refines; r; r = r->next)
		if (r->conn_id == conn_id)
			atomic_store(&r->cancelled, 1);
}

void
eng_refine_fail_all(eng_server *s, const char *why)
{
	for (eng_refine *r = s->refines; r; r = r->next)
	{
		eng_conn   *c = eng_conn_by_id(s, r->conn_id);

		if (c && !atomic_load(&r->cancelled))
			eng_reply_error(c, r->request_id, MCC_PERR_CANCELLED, 0, "%s", why);
		atomic_store(&r->cancelled, 1);
	}
}

void
eng_refine_free_all(eng_server *s)
{
	while (s->refines)
	{
		eng_refine *r = s->refines;

		s->refines = r->next;
		eng_refine_free(r);
	}
}
