/*
 * eng_compact.h: compaction of a gallery's cache (eng_compact.c). A cache
 * whose tombstones are a large enough share (eng_cache_wants_compaction) is
 * copied without them by a pool thread while the main thread goes on; the
 * copy replaces the cache only if the cache is still the gallery's current
 * one when the job comes back.
 */
#ifndef ENG_COMPACT_H
#define ENG_COMPACT_H

#include "eng_gallery.h"
#include "eng_server.h"

#define ENG_JOB_COMPACTION	2	/* eng_job.tag (1-6: see eng_rescore.h) */

/* Start a compaction if the cache has enough tombstones and nothing reads it. */
void		eng_compaction_maybe_start(eng_server *s, eng_gallery *g);

/* A finished compaction: swap it in if the cache it copied is still current. */
void		eng_compaction_done(eng_server *s, eng_compaction *cj);

#endif							/* ENG_COMPACT_H */
