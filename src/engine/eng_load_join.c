/*
 * eng_load_join.c: a load's parts on other connections (LOAD_BEGIN with
 * MCC_LOAD_JOIN, LOAD_JOIN, LOAD_JOIN_END). A parallel load's workers send
 * their rows on connections of their own instead of through the leader's
 * one connection (docs/matcher-service.md, "Several readers"); the load
 * stays one: the leader's connection opened it and ends it, and whoever
 * joins must repeat the secret token its LOAD_BEGIN carried, so that no
 * other connection adds rows to it by mistake or on purpose. A part that
 * ends unfinished (its connection closed, its join cancelled) fails the
 * whole load, whose LOAD_END then reports it: the current cache stays.
 *
 * A joined connection keeps the load's gallery and token, not a pointer:
 * the load may be abandoned and freed while the part still sends; its rows
 * are then dropped, and its LOAD_JOIN_END answered with an ERROR.
 */
#include <string.h>

#include "eng_gallery.h"
#include "eng_load.h"
#include "eng_log.h"
#include "eng_server.h"

/* Equal tokens, in a time that does not depend on where they differ. */
static bool
token_equal(const uint64_t a[2], const uint64_t b[2])
{
	return ((a[0] ^ b[0]) | (a[1] ^ b[1])) == 0;
}

/* The open load of gallery id that token t joins (no profile check: rows check it), or NULL. */
static eng_load *
load_of_token(eng_server *s, const mcc_gallery_id *id, const uint64_t t[2])
{
	eng_gallery *g = eng_gallery_get(s, id, false);

	if (g == NULL)
		return NULL;
	for (eng_load *l = g->loads; l != NULL; l = l->next)
		if ((l->flags & MCC_LOAD_JOIN) && token_equal(l->token, t))
			return l;
	return NULL;
}

eng_load *
eng_load_joined(eng_server *s, const eng_conn *c)
{
	return c->joined ? load_of_token(s, &c->join_gal, c->join_token) : NULL;
}

eng_load *
eng_load_of_rows(eng_server *s, const eng_conn *c, uint64_t rid)
{
	if (c->load != NULL && c->load->request_id == rid)
		return c->load;
	return c->joined && c->join_rid == rid ? eng_load_joined(s, c) : NULL;
}

void
eng_load_join(eng_server *s, eng_conn *c, uint64_t request_id, const mcc_gallery_id *id,
			  uint64_t gen, const uint64_t token[2])
{
	eng_load   *l;

	/* one part per connection, and not beside a load of its own */
	if (c->joined)
		eng_load_join_abort(s, c, "a connection joined a second load before ending its part");
	l = load_of_token(s, id, token);
	if (l == NULL || l->gen != gen || c->load != NULL)
	{
		eng_log(ENG_LOG_WARNING, "connection %llu (pid %u): LOAD_JOIN refused: %s",
				(unsigned long long) c->id, c->pid,
				c->load != NULL ? "the connection streams a load of its own" :
				"no load of that gallery, generation and token is open");
		eng_reply_error(c, request_id, MCC_PERR_NOT_LOADED, 0,
						"no load of that gallery, generation and token is open");
		return;
	}
	c->joined = true;
	c->join_gal = *id;
	c->join_token[0] = token[0];
	c->join_token[1] = token[1];
	c->join_rid = request_id;
	c->join_rows = 0;
	l->joins_open++;
	l->joins++;
}

void
eng_load_join_end(eng_server *s, eng_conn *c)
{
	eng_load   *l = eng_load_joined(s, c);
	size_t		f;

	c->joined = false;
	if (l == NULL)
	{
		eng_reply_error(c, c->join_rid, MCC_PERR_CANCELLED, 0,
						"the load this connection joined was abandoned");
		return;
	}
	l->joins_open--;
	f = eng_frame_begin(&c->out, MCC_MSG_LOAD_JOINED, c->join_rid);
	eng_buf_u64(&c->out, c->join_rows);
	/* a failed load drops rows: its error is the leader's, at LOAD_END */
	eng_buf_u32(&c->out, l->perr != 0 ? 1 : 0);
	eng_frame_end(&c->out, f);
}

void
eng_load_join_abort(eng_server *s, eng_conn *c, const char *why)
{
	eng_load   *l = eng_load_joined(s, c);
	mcc_error	err;

	c->joined = false;
	if (l == NULL)
		return;
	l->joins_open--;
	eng_log(ENG_LOG_WARNING, "gallery %s: load abandoned: %s (connection %llu, pid %u)",
			eng_gallery_name(l->gallery), why, (unsigned long long) c->id, c->pid);
	mcc_error_set(&err, MCC_ERR_INTERNAL, "a part of the load ended unfinished");
	mcc_error_detail(&err, "%s.", why);
	eng_load_fail(l, MCC_PERR_CANCELLED, &err);
}

int
eng_load_conns(eng_server *s, const eng_load *l, const eng_conn *c, eng_conn **out, int max)
{
	int			n = 0;

	if (!(l->flags & MCC_LOAD_JOIN))
		return 0;
	for (uint32_t i = 0; i < s->n_conns && n < max; i++)
	{
		eng_conn   *o = s->conns[i];

		if (o != c && (o->load == l || eng_load_joined(s, o) == l))
			out[n++] = o;
	}
	return n;
}
