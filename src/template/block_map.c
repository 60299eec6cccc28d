/*
 * block_map.c: where a relation's blocks lay in shared buffers when this
 * backend last read them (src/template/block_map.h).
 */
#include "mcc_pg.h"
#include "block_map.h"

#include "storage/buf_internals.h"
#include "utils/memutils.h"
#include "utils/rel.h"

/* relations whose maps a backend keeps (a gallery's heap and TOAST table, a few galleries) */
#define MAX_MAPS	4

struct mcc_block_map
{
	RelFileNode node;
	uint64		last_use;
	BlockNumber cap;
	Buffer	   *buf;			/* by block: the buffer that held it, or InvalidBuffer */
};

static mcc_block_map maps[MAX_MAPS];
static uint64 use_clock;

/* The map of node (emptied when it is a new one), the least recently used one given up. */
static mcc_block_map *
find_map(RelFileNode node)
{
	mcc_block_map *m = &maps[0];

	for (int i = 0; i < MAX_MAPS; i++)
	{
		if (maps[i].buf != NULL && RelFileNodeEquals(maps[i].node, node))
			return &maps[i];
		if (maps[i].last_use < m->last_use)
			m = &maps[i];
	}
	if (m->buf != NULL)
		pfree(m->buf);
	m->buf = NULL;
	m->cap = 0;
	m->node = node;
	return m;
}

mcc_block_map *
mcc_block_map_get(Relation rel, BlockNumber nblocks)
{
	mcc_block_map *m;

	if (RelationUsesLocalBuffers(rel) || nblocks == 0 || nblocks > (BlockNumber) NBuffers)
		return NULL;
	m = find_map(rel->rd_node);
	if (m->cap < nblocks)
	{
		BlockNumber cap = Min(Max(nblocks, 2 * m->cap), (BlockNumber) NBuffers);
		Buffer	   *buf = MemoryContextAllocExtended(TopMemoryContext, (Size) cap * sizeof(Buffer),
													 MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);

		if (m->buf != NULL)
		{
			memcpy(buf, m->buf, (Size) m->cap * sizeof(Buffer));
			pfree(m->buf);
		}
		m->buf = buf;
		m->cap = cap;
	}
	m->last_use = ++use_clock;
	return m;
}

Buffer
mcc_block_map_read(mcc_block_map *m, Relation rel, BlockNumber blk, BufferAccessStrategy strategy)
{
	Buffer		buf;

	if (m != NULL && blk < m->cap && m->buf[blk] != InvalidBuffer &&
		ReadRecentBuffer(rel->rd_node, MAIN_FORKNUM, blk, m->buf[blk]))
		return m->buf[blk];
	buf = ReadBufferExtended(rel, MAIN_FORKNUM, blk, RBM_NORMAL, strategy);
	if (m != NULL && blk < m->cap)
		m->buf[blk] = buf;
	return buf;
}

const char *
mcc_block_map_guess(const mcc_block_map *m, BlockNumber blk)
{
	if (m == NULL || blk >= m->cap || m->buf[blk] == InvalidBuffer)
		return NULL;
	return BufferBlocks + (Size) (m->buf[blk] - 1) * BLCKSZ;
}

void
mcc_block_map_prefetch(const mcc_block_map *m, BlockNumber blk)
{
	const char *page = mcc_block_map_guess(m, blk);

	if (page == NULL)
		return;
	__builtin_prefetch(GetBufferDescriptor(m->buf[blk] - 1));
	__builtin_prefetch(page);
}
