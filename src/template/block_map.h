/*
 * block_map.h: where a relation's blocks lay in shared buffers when this
 * backend last read them, so that a scan that reads the same relation again
 * pins them without the buffer mapping's hash lookup.
 *
 * A pin through ReadBufferExtended first looks the block up in the shared
 * buffer mapping table: a hash table over every buffer, far larger than the
 * CPU's caches, whose entry and buffer header the lookup reaches one miss
 * after the other. On identify()'s backend scan of a gallery held in shared
 * buffers these lookups were a tenth of the backend's time (perf,
 * docs/benchmarks.md "Backend scan"). A backend that scans the same gallery
 * again finds most blocks where they were: ReadRecentBuffer() pins such a
 * buffer after checking, under its header lock, that it still holds the
 * block, and a block that moved is looked up as usual. The map is only ever
 * a guess: a stale entry costs a lookup, never a wrong page. Knowing where
 * the next blocks lie also lets a scan ask their pages into the CPU's caches
 * well ahead, without pinning them.
 *
 * Maps live in the backend's memory for a few relations at a time, one
 * Buffer per block (4 bytes per 8 kB), only for relations in shared buffers
 * that fit in them (NBuffers blocks or fewer). One difference from a pin
 * through the lookup: ReadRecentBuffer does not raise the buffer's usage
 * count on a backend's first pin of it, so under eviction pressure the
 * clock sweep may pick a gallery's pages somewhat sooner.
 */
#ifndef MCC_BLOCK_MAP_H
#define MCC_BLOCK_MAP_H

#include "postgres.h"

#include "storage/bufmgr.h"
#include "utils/relcache.h"

typedef struct mcc_block_map mcc_block_map;

/*
 * The map of rel's main fork for a scan of its first nblocks blocks, or
 * NULL when none is kept (local buffers, more blocks than shared buffers).
 * Valid until the next call.
 */
extern mcc_block_map *mcc_block_map_get(Relation rel, BlockNumber nblocks);

/*
 * Pin block blk of rel's main fork (m may be NULL): through the buffer that
 * held it last time when it still does, else ReadBufferExtended with
 * strategy; the map then remembers where it is.
 */
extern Buffer mcc_block_map_read(mcc_block_map *m, Relation rel, BlockNumber blk,
								 BufferAccessStrategy strategy);

/*
 * Where block blk's page lay last time (NULL if unknown): for prefetching
 * only, never to be read as the page (it may hold another block by now).
 */
extern const char *mcc_block_map_guess(const mcc_block_map *m, BlockNumber blk);

/*
 * Ask the CPU for what pinning block blk through the map will read first
 * (its buffer header) and the first line of its page (the line pointers),
 * if the map knows where it was.
 */
extern void mcc_block_map_prefetch(const mcc_block_map *m, BlockNumber blk);

#endif							/* MCC_BLOCK_MAP_H */
