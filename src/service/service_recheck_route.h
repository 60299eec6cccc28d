/*
 * service_recheck_route.h: the re-check of a partitioned gallery's
 * candidates without planning a query (service_recheck_route.c).
 */
#ifndef SERVICE_RECHECK_ROUTE_H
#define SERVICE_RECHECK_ROUTE_H

#include "postgres.h"

#include "gallery.h"

/* A row the re-check found visible: its key and its template as stored. */
typedef void (*recheck_row_fn) (void *arg, int64 key, Datum tpl);

/*
 * The rows of partitioned gallery g whose key is one of keys[0..n) (repeats
 * allowed), each once, as `SELECT key, template FROM g WHERE key = ANY
 * (keys)` returns them under the active snapshot: every key routed to the
 * one partition that may hold it, as an INSERT would route it, and looked
 * up in that partition's unique index on the key. False, with nothing
 * returned, where routing cannot stand in for the query (a level not
 * partitioned by the key column alone, a partition that is not a heap
 * table with a unique btree index on the key): the caller runs the query.
 */
extern bool recheck_routed(const mcc_gallery *g, const int64 *keys, int n,
						   recheck_row_fn fn, void *arg);

#endif							/* SERVICE_RECHECK_ROUTE_H */
