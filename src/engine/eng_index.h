/*
 * eng_index.h: a chained hash index of 64-bit keys over rows 0 .. n-1
 * (a cache's key index, a restored snapshot's tuple id index): slots[h]
 * holds the last row whose key hashes to h, each row's next the row before
 * it with the same slot, ENG_NONE (all ones) ends a chain. So a chain lists
 * its rows from the last to the first, as appending the rows one at a time
 * leaves it.
 *
 * eng_index_build builds it on several threads, each taking a range of
 * slots in turn and linking, in row order, the rows whose keys fall in it:
 * every chain is exactly the one-thread loop's. At 10 M rows the loop was
 * a serial pass of random writes after a restart's read (docs/benchmarks.md,
 * "Serving after a restart").
 */
#ifndef ENG_INDEX_H
#define ENG_INDEX_H

#include <stddef.h>
#include <stdint.h>

/* The slot of key among n_slots (a power of two): splitmix64's finalizer (keys are often sequential). */
static inline uint32_t
eng_index_slot(uint64_t key, uint32_t n_slots)
{
	uint64_t	z = key + UINT64_C(0x9e3779b97f4a7c15);

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	z ^= z >> 31;
	return (uint32_t) z & (n_slots - 1);
}

/*
 * Index keys[0 .. n): slots[0 .. n_slots) (n_slots a power of two) set
 * here, and row i's next at (char *) next + i * next_stride (a uint32_t:
 * an array of its own, or a field of the rows' structs), on up to
 * `threads` threads, this one among them.
 */
void		eng_index_build(const uint64_t *keys, uint32_t n, uint32_t *slots, uint32_t n_slots,
							uint32_t *next, size_t next_stride, int threads);

#endif							/* ENG_INDEX_H */
