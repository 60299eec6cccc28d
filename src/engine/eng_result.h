/*
 * eng_result.h: writing the RESULT of a search (eng_result.c) once its pass
 * (and, for a refining search, its rescoring) has finished.
 */
#ifndef ENG_RESULT_H
#define ENG_RESULT_H

#include "eng_gallery.h"
#include "eng_server.h"

/*
 * Hits whose cache entries a loop over a shortlist asks for ahead: the
 * entries of thousands of hits lie at random in a gallery-sized array.
 */
#define ENG_HIT_AHEAD 8

/* Reply an empty RESULT (a SEARCH without probes only waits for its generation). */
void		eng_result_reply_empty(eng_server *s, const eng_request *r, const eng_cache *c);

/*
 * Write the RESULT of a request whose pass (and, refining, whose rescoring
 * rs) has finished.
 */
void		eng_result_reply(eng_server *s, const eng_batch *b, const eng_rescore *rs,
							 const eng_request *r);

#endif							/* ENG_RESULT_H */
