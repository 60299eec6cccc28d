/*
 * eng_compact.c: compaction of a gallery's cache (eng_compact.h): a copy
 * without its tombstones, made by a pool thread from the pinned cache and
 * swapped in by the main thread if nothing replaced the cache meanwhile.
 */
#include "eng_compact.h"

#include <stdlib.h>

#include "eng_gallery.h"
#include "eng_log.h"

/* Compact away the tombstones in a thread. */
static void
compaction_run(eng_job *job, uint32_t part, void *scratch)
{
	eng_compaction *cj = (eng_compaction *) job;

	cj->result = eng_cache_compacted(cj->from, &cj->err);
}

/* Start a compaction if the cache has enough tombstones and nothing reads it. */
void
eng_compaction_maybe_start(eng_server *s, eng_gallery *g)
{
	eng_cache  *c = g->cache;
	eng_compaction *cj;
	uint64_t	bytes;

	if (c == NULL || c->pins != 0 || g->compacting || !eng_cache_wants_compaction(c))
		return;
	bytes = eng_cache_compacted_bytes(c);
	if (!eng_budget_charge(&s->budget, bytes))
		return;					/* retried after the next change */
	cj = calloc(1, sizeof(*cj));
	if (cj == NULL)
	{
		eng_budget_release(&s->budget, bytes);
		return;
	}
	cj->job.run = compaction_run;
	cj->job.tag = ENG_JOB_COMPACTION;
	cj->job.n_parts = 1;
	cj->gallery = g;
	cj->from = c;
	cj->charged = bytes;
	c->pins++;
	g->compacting = cj;
	eng_log(ENG_LOG_DEBUG, "gallery %s: compacting %u tombstones of %u entries",
			eng_gallery_name(g), c->n_purged, c->soa.n_tpl);
	eng_server_submit(s, s->pool, &cj->job);
}

/* A finished compaction: swap it in if the cache it copied is still current. */
void
eng_compaction_done(eng_server *s, eng_compaction *cj)
{
	eng_gallery *g = cj->gallery;
	eng_cache  *from = cj->from;

	g->compacting = NULL;
	if (cj->result != NULL && g->cache == from)
	{
		eng_cache_adopt(cj->result, &s->budget, cj->charged);
		eng_log(ENG_LOG_DEBUG, "gallery %s: compacted to %u entries", eng_gallery_name(g),
				cj->result->soa.n_tpl);
		g->cache = cj->result;
	}
	else
	{
		if (cj->result == NULL)
			eng_log(ENG_LOG_WARNING, "gallery %s: compaction failed: %s", eng_gallery_name(g),
					cj->err.message);
		eng_cache_free(cj->result);
		eng_budget_release(&s->budget, cj->charged);
	}
	eng_gallery_unpin(g, from);
	free(cj);
}
