/*
 * service_settle.h: settling the transaction ids of the engine's entries
 * (src/service/service_settle.c).
 */
#ifndef SERVICE_SETTLE_H
#define SERVICE_SETTLE_H

#include "service_identify.h"

/* Settle the gallery's entries if due (a full XID_LIST asks for another round). */
extern void settle(serve_req *r);

#endif							/* SERVICE_SETTLE_H */
