/*
 * eng_load.h: full loads of a gallery cache (eng_load.c) beyond the entry
 * points eng_server.h declares: what eng_gallery.c needs when it evicts a
 * gallery whose load is in progress or closes a connection.
 */
#ifndef ENG_LOAD_H
#define ENG_LOAD_H

#include "eng_server.h"

/* Record a load's first failure and free what it built (LOAD_END replies it). */
void		eng_load_fail(eng_load *l, int perr, const mcc_error *err);

/*
 * Make cache c (not charged: a snapshot read back) the one load l builds,
 * charging it and making room as a load does. False if there is no room:
 * the load goes on with a new empty cache and c is left to the caller.
 */
bool		eng_load_adopt(eng_server *s, eng_load *l, eng_cache *c);

/* Free a load and unlink it from its gallery and connection. */
void		eng_load_free(eng_conn *c, eng_load *l);

/* One load row as a LOAD_ROWS frame carries it (load_ids 0 when absent). */
typedef struct eng_load_in
{
	int64_t		key;
	uint64_t	insert_xid;
	uint64_t	delete_xid;
	const uint8_t *tpl;
	uint32_t	len;
	uint64_t	tid;
	uint64_t	xmin;
} eng_load_in;

/*
 * Add n rows to load l at once (eng_load_row's work for each, in the load
 * threads): the first row that cannot be cached fails the load, as does a
 * cache that cannot grow. checked: templates the engine cached before.
 */
void		eng_load_rows(eng_server *s, eng_load *l, const eng_load_in *in, uint32_t n,
						  bool checked);

#endif							/* ENG_LOAD_H */
