/*
 * service_search_msg.h: the SEARCH request of identify() and its RESULT
 * reply (src/service/service_search_msg.c).
 */
#ifndef SERVICE_SEARCH_MSG_H
#define SERVICE_SEARCH_MSG_H

#include "service_identify.h"

/*
 * Send SEARCH and wait; false on mcc.request_timeout. count_xmin: 0, or ask
 * for the visibility count at this snapshot xmin when more than count_above
 * entries are searchable. in_engine: a refining search (the engine rescores
 * its shortlist; kprime is then the slack of mcc_proto.h).
 */
extern bool send_search(serve_req *r, uint64 gen, uint32 kprime, uint64 count_xmin,
						uint64 count_above, bool in_engine, mcc_reply *reply);

/* Parse a RESULT into r->ans (in_engine: of a refining search). */
extern void parse_result(serve_req *r, mcc_reply *reply, bool in_engine);

#endif							/* SERVICE_SEARCH_MSG_H */
