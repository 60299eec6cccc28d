/*
 * eng_gallery.h: what eng_gallery.c (serving a gallery's cache: requests,
 * passes, rescoring, deltas, settles, compaction, eviction) lends to the
 * rest of the engine beyond eng_server.h's entry points.
 */
#ifndef ENG_GALLERY_H
#define ENG_GALLERY_H

#include "eng_server.h"

/* Log-friendly name of a gallery. */
const char *eng_gallery_name(const eng_gallery *g);

/* Apply the queued generations that come next, in order (cache not pinned). */
void		eng_gallery_apply_pending(eng_server *s, eng_gallery *g);

/* Forget the queued records nobody needs any more and keep the rest bounded. */
void		eng_gallery_trim_queue(eng_gallery *g);

#endif							/* ENG_GALLERY_H */
