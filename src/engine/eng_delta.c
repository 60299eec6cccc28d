/*
 * eng_delta.c: parsing DELTA frames and the per-gallery generation queue.
 */
#include "eng_delta.h"

#include <stdlib.h>
#include <string.h>

#include "eng_cache.h"
#include "eng_wire.h"
#include "mcc_template.h"

void
eng_part_free(eng_part *p)
{
	if (p == NULL)
		return;
	free(p->ins);
	free(p->del);
	free(p->payload);
	free(p);
}

eng_parse_result
eng_delta_parse(const uint8_t *payload, size_t len, mcc_gallery_id *id,
				uint64_t *gen, eng_part **part, mcc_error *err)
{
	eng_rd		r;
	eng_part   *p;
	mcc_status	st = MCC_OK;

	*part = NULL;
	eng_rd_init(&r, payload, len);
	eng_rd_gallery(&r, id);
	*gen = eng_rd_u64(&r);
	p = calloc(1, sizeof(*p));
	if (p == NULL)
	{
		mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
		return r.bad ? ENG_PARSE_MALFORMED : ENG_PARSE_UNUSABLE;
	}
	p->xid = eng_rd_u64(&r);
	p->n_ins = eng_rd_u32(&r);
	p->n_del = eng_rd_u32(&r);
	/* every insert takes at least 12 bytes and every delete 16 */
	if (r.bad || (uint64_t) p->n_ins * 12 + (uint64_t) p->n_del * 16 > eng_rd_left(&r))
	{
		eng_part_free(p);
		mcc_error_set(err, MCC_ERR_SYNTAX, "malformed DELTA frame");
		return ENG_PARSE_MALFORMED;
	}
	p->payload = malloc(len ? len : 1);
	p->ins = malloc(((size_t) p->n_ins + 1) * sizeof(eng_ins));
	p->del = malloc(((size_t) p->n_del + 1) * sizeof(eng_del));
	if (p->payload == NULL || p->ins == NULL || p->del == NULL)
	{
		eng_part_free(p);
		mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
		return ENG_PARSE_UNUSABLE;
	}
	memcpy(p->payload, payload, len);
	p->bytes = len + sizeof(*p) + (size_t) p->n_ins * sizeof(eng_ins) +
		(size_t) p->n_del * sizeof(eng_del);
	/* re-read from the owned copy so that template pointers stay valid */
	eng_rd_init(&r, p->payload, len);
	r.pos = 16 + 8 + 8 + 4 + 4;
	for (uint32_t i = 0; i < p->n_ins && !r.bad; i++)
	{
		mcc_template_view v;

		p->ins[i].key = eng_rd_i64(&r);
		p->ins[i].tpl = eng_rd_bytes(&r, &p->ins[i].len);
		if (r.bad)
			break;
		if (st == MCC_OK)
		{
			st = mcc_template_open(p->ins[i].tpl, p->ins[i].len, &v, err);
			if (st == MCC_OK)
			{
				p->n_cyl += (uint64_t) v.n_cyl;
				p->n_side += eng_side_bytes(&v);
			}
		}
	}
	for (uint32_t i = 0; i < p->n_del && !r.bad; i++)
	{
		p->del[i].key = eng_rd_i64(&r);
		p->del[i].hash = eng_rd_u64(&r);
	}
	if (!eng_rd_done(&r))
	{
		eng_part_free(p);
		mcc_error_set(err, MCC_ERR_SYNTAX, "malformed DELTA frame");
		return ENG_PARSE_MALFORMED;
	}
	if (st != MCC_OK)
	{
		eng_part_free(p);
		return ENG_PARSE_UNUSABLE;
	}
	*part = p;
	return ENG_PARSE_OK;
}

/* The record of generation gen, created in order if absent; NULL if no memory. */
static eng_gen *
genq_get(eng_genq *q, uint64_t gen)
{
	eng_gen   **pp = &q->head;
	eng_gen    *g;

	while (*pp && (*pp)->gen < gen)
		pp = &(*pp)->next;
	if (*pp && (*pp)->gen == gen)
		return *pp;
	g = calloc(1, sizeof(*g));
	if (g == NULL)
		return NULL;
	g->gen = gen;
	g->tail = &g->parts;
	g->bytes = sizeof(*g);
	g->next = *pp;
	*pp = g;
	q->n++;
	q->bytes += g->bytes;
	return g;
}

/* Drop a record's parts: it now stands for "reload". */
static void
gen_make_reload(eng_genq *q, eng_gen *g)
{
	while (g->parts)
	{
		eng_part   *p = g->parts;

		g->parts = p->next;
		q->bytes -= p->bytes;
		g->bytes -= p->bytes;
		eng_part_free(p);
	}
	g->tail = &g->parts;
	g->reload = true;
	g->complete = true;
}

void
eng_genq_add_part(eng_genq *q, uint64_t gen, eng_part *part, bool more,
				  uint64_t conn_id)
{
	eng_gen    *g = genq_get(q, gen);

	if (g == NULL)
	{
		eng_part_free(part);
		return;
	}
	if (g->reload || (g->complete && g->parts != NULL))
	{
		/* a reload mark wins; a second sender of one generation is a bug */
		eng_part_free(part);
		if (!g->reload)
			gen_make_reload(q, g);
		return;
	}
	part->next = NULL;
	*g->tail = part;
	g->tail = &part->next;
	g->bytes += part->bytes;
	q->bytes += part->bytes;
	g->complete = !more;
	g->conn_id = conn_id;
}

void
eng_genq_add_reload(eng_genq *q, uint64_t gen)
{
	eng_gen    *g = genq_get(q, gen);

	if (g != NULL)
		gen_make_reload(q, g);
}

eng_gen *
eng_genq_find(const eng_genq *q, uint64_t gen)
{
	eng_gen    *g = q->head;

	while (g && g->gen < gen)
		g = g->next;
	return g && g->gen == gen ? g : NULL;
}

/* Unlink and free the head record. */
static void
drop_head(eng_genq *q)
{
	eng_gen    *g = q->head;

	gen_make_reload(q, g);
	q->head = g->next;
	q->n--;
	q->bytes -= g->bytes;
	free(g);
}

void
eng_genq_trim(eng_genq *q, uint64_t upto)
{
	while (q->head && q->head->gen <= upto)
		drop_head(q);
}

uint64_t
eng_genq_bound(eng_genq *q, uint32_t max_n, size_t max_bytes)
{
	uint64_t	dropped = 0;

	while (q->head && (q->n > max_n || q->bytes > max_bytes))
	{
		dropped = q->head->gen;
		drop_head(q);
	}
	return dropped;
}

void
eng_genq_conn_closed(eng_genq *q, uint64_t conn_id)
{
	for (eng_gen *g = q->head; g; g = g->next)
		if (!g->complete && g->conn_id == conn_id)
			gen_make_reload(q, g);
}

void
eng_genq_free(eng_genq *q)
{
	while (q->head)
		drop_head(q);
}
