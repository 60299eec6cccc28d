/*
 * eng_delta.h: deltas and reload marks of one gallery, by generation.
 *
 * Every commit that changes a gallery bumps its generation and sends one
 * DELTA (or several frames of the same generation, the last without
 * MCC_FRAME_MORE) or a RELOAD mark. They can reach the engine out of order
 * (different connections), during a load, or before any load; the queue
 * keeps them, sorted, until the cache they belong to has applied them and no
 * load in progress may still need them.
 */
#ifndef ENG_DELTA_H
#define ENG_DELTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mcc_error.h"
#include "mcc_proto.h"

typedef struct eng_ins
{
	int64_t		key;
	const uint8_t *tpl;			/* into the part's payload */
	uint32_t	len;
} eng_ins;

typedef struct eng_del
{
	int64_t		key;
	uint64_t	hash;
} eng_del;

/* One DELTA frame: the rows one (sub)transaction id changed. */
typedef struct eng_part
{
	struct eng_part *next;
	uint64_t	xid;
	uint32_t	n_ins;
	uint32_t	n_del;
	uint64_t	n_cyl;			/* cylinders of the inserts */
	uint64_t	n_side;			/* bytes of their sides (eng_side_bytes) */
	eng_ins    *ins;
	eng_del    *del;
	uint8_t    *payload;		/* owned copy of the frame */
	size_t		bytes;
} eng_part;

/* One generation: its parts, or a reload mark. */
typedef struct eng_gen
{
	struct eng_gen *next;		/* ascending generation */
	uint64_t	gen;
	bool		reload;			/* cannot be applied: the cache must reload */
	bool		complete;		/* the last part arrived */
	uint64_t	conn_id;		/* sender of the parts while incomplete */
	eng_part   *parts;
	eng_part  **tail;
	size_t		bytes;
} eng_gen;

typedef struct eng_genq
{
	eng_gen    *head;
	uint32_t	n;
	size_t		bytes;
} eng_genq;

typedef enum eng_parse_result
{
	ENG_PARSE_OK = 0,
	ENG_PARSE_UNUSABLE,			/* well formed, but a template is bad or no memory */
	ENG_PARSE_MALFORMED			/* close the connection */
} eng_parse_result;

/*
 * Parse a DELTA payload: the gallery and generation, and a part with every
 * template checked by mcc_template_open. On ENG_PARSE_UNUSABLE *id and *gen
 * are set, *part is NULL and err says why.
 */
eng_parse_result eng_delta_parse(const uint8_t *payload, size_t len,
								 mcc_gallery_id *id, uint64_t *gen,
								 eng_part **part, mcc_error *err);

void		eng_part_free(eng_part *p);

/* Add a part to generation gen (more: another part follows). */
void		eng_genq_add_part(eng_genq *q, uint64_t gen, eng_part *part, bool more,
							  uint64_t conn_id);

/* Mark generation gen as needing a reload (its delta is lost or bad). */
void		eng_genq_add_reload(eng_genq *q, uint64_t gen);

/* The record of generation gen, or NULL. */
eng_gen    *eng_genq_find(const eng_genq *q, uint64_t gen);

/* Drop every record of generation <= upto. */
void		eng_genq_trim(eng_genq *q, uint64_t upto);

/*
 * Drop the oldest records while there are more than max_n or max_bytes;
 * returns the highest generation dropped (0: none).
 */
uint64_t	eng_genq_bound(eng_genq *q, uint32_t max_n, size_t max_bytes);

/* Incomplete generations sent by a closed connection become reload marks. */
void		eng_genq_conn_closed(eng_genq *q, uint64_t conn_id);

void		eng_genq_free(eng_genq *q);

#endif							/* ENG_DELTA_H */
