/*
 * service_ahead.c: requests sent to the matcher engine ahead of the call
 * that needs their answer, so that a backend's independent requests are in
 * the engine together (identify_shortlists(), mcc_galleries_rows(): one
 * request per gallery and probe, which the engine serves in passes of its
 * galleries at once, on its threads or its GPU, instead of one after
 * another).
 *
 * Why this cannot change an answer: a request is sent ahead by the same
 * code that would send it later (serve() in its sending-ahead mode,
 * src/service/service_identify.c), and its reply is used only for a later
 * request whose frame is the same byte for byte (gallery, generation,
 * snapshot xmin of the count, k', refinement, probes). The engine's answer
 * to a frame holds whenever the frame is sent: it waits for the frame's
 * generation and judges nothing by time. A request sent ahead that nobody
 * takes (a generation moved on meanwhile, a fallback) is cancelled when the
 * set ends, and its reply, if it came, is dropped.
 *
 * The replies to requests sent ahead are kept when they arrive while the
 * backend waits for another one (service_client.c, take_frame), until their
 * request is taken and awaited.
 */
#include "mcc_pg.h"
#include "service.h"

#include "utils/memutils.h"

/* A request sent ahead, and its reply once it came. */
typedef struct ahead_req
{
	uint64		id;
	uint16		type;
	char	   *payload;		/* the frame's bytes after the header */
	uint32		len;
	bool		taken;			/* a later request is this one */
	bool		answered;
	uint16		reply_type;
	char	   *reply;			/* the reply's payload (NUL-terminated copy) */
	uint32		reply_len;
} ahead_req;

static MemoryContext ahead_cxt = NULL;	/* NULL: no set begun */
static int	ahead_depth = 0;	/* begun and not ended (a nested call joins the set) */
static ahead_req *ahead = NULL;
static int	n_ahead = 0;
static int	max_ahead = 0;

/* Begin a set of requests sent ahead (mcc_ahead_end ends it, also on error). */
void
mcc_ahead_begin(void)
{
	if (ahead_depth++ > 0)
		return;
	ahead_cxt = AllocSetContextCreate(TopMemoryContext, "mcc requests sent ahead",
									  ALLOCSET_DEFAULT_SIZES);
	n_ahead = 0;
	max_ahead = 16;
	ahead = MemoryContextAlloc(ahead_cxt, max_ahead * sizeof(ahead_req));
}

/* Is a set begun (may serve() send ahead)? */
bool
mcc_ahead_active(void)
{
	return ahead_cxt != NULL;
}

/* Remember request id, sent with this frame payload. */
void
mcc_ahead_add(uint64 id, uint16 type, const char *payload, uint32 len)
{
	ahead_req  *a;

	Assert(ahead_cxt != NULL);
	if (n_ahead == max_ahead)
	{
		max_ahead *= 2;
		ahead = repalloc(ahead, max_ahead * sizeof(ahead_req));
	}
	a = &ahead[n_ahead++];
	memset(a, 0, sizeof(*a));
	a->id = id;
	a->type = type;
	a->len = len;
	a->payload = MemoryContextAlloc(ahead_cxt, Max(len, 1));
	memcpy(a->payload, payload, len);
}

/*
 * The id of a request sent ahead with exactly this frame payload, not taken
 * yet, into *id (then taken); false if none.
 */
bool
mcc_ahead_take(uint16 type, const char *payload, uint32 len, uint64 *id)
{
	for (int i = 0; i < n_ahead; i++)
	{
		ahead_req  *a = &ahead[i];

		if (!a->taken && a->type == type && a->len == len && memcmp(a->payload, payload, len) == 0)
		{
			a->taken = true;
			*id = a->id;
			return true;
		}
	}
	return false;
}

/* The entry of request id, or NULL. */
static ahead_req *
find(uint64 id)
{
	for (int i = 0; i < n_ahead; i++)
		if (ahead[i].id == id)
			return &ahead[i];
	return NULL;
}

/*
 * A frame for request id arrived while another reply was awaited: keep it
 * if id was sent ahead (true), else the caller drops it.
 */
bool
mcc_ahead_keep(uint64 id, uint16 type, const char *body, uint32 len)
{
	ahead_req  *a = find(id);

	if (a == NULL || a->answered)
		return false;
	a->reply = MemoryContextAlloc(ahead_cxt, (Size) len + 1);
	memcpy(a->reply, body, len);
	a->reply[len] = '\0';
	a->reply_len = len;
	a->reply_type = type;
	a->answered = true;
	return true;
}

/*
 * The kept reply to request id, if it came: its type, and its payload
 * copied into the current memory context. False if none was kept.
 */
bool
mcc_ahead_reply(uint64 id, uint16 *type, char **body, uint32 *len)
{
	ahead_req  *a = find(id);

	if (a == NULL || !a->answered)
		return false;
	*type = a->reply_type;
	*len = a->reply_len;
	*body = palloc((Size) a->reply_len + 1);
	memcpy(*body, a->reply, (Size) a->reply_len + 1);
	pfree(a->reply);
	a->reply = NULL;
	a->answered = false;
	a->id = 0;					/* consumed: a later frame of this id is stale */
	return true;
}

/* The connection closed: no request of the set will be answered. */
void
mcc_ahead_forget(void)
{
	n_ahead = 0;
}

/*
 * End the set (the outermost caller's end): cancel the requests nobody
 * took and not yet answered (the engine drops them, or their replies are
 * dropped as stale ones).
 */
void
mcc_ahead_end(void)
{
	int			taken = 0;

	if (ahead_depth == 0 || --ahead_depth > 0)
		return;
	for (int i = 0; i < n_ahead; i++)
	{
		if (ahead[i].taken)
			taken++;
		else if (!ahead[i].answered && ahead[i].id != 0)
			mcc_conn_cancel(ahead[i].id);
	}
	if (n_ahead > 0)
		ereport(DEBUG1,
				(errmsg_internal("mcc: %d of %d requests sent ahead to the matcher engine were taken",
								 taken, n_ahead)));
	MemoryContextDelete(ahead_cxt);
	ahead_cxt = NULL;
	ahead = NULL;
	n_ahead = max_ahead = 0;
}
