/*
 * eng_bigmem.h: host memory work too large for the engine's main thread:
 * copies split over threads (a cache that grows while a load fills it),
 * and blocks freed on a thread of their own (a cache dropped or replaced).
 *
 * Why: at 100 M rows a cache holds about 220 GB. Copying it when it grows,
 * or handing its pages back to the kernel when it is replaced (about 23
 * GB/s on the dev VM with 4 kB pages: seconds for such a cache), held the
 * main thread, which every client waits for, for seconds.
 */
#ifndef ENG_BIGMEM_H
#define ENG_BIGMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One copy of a list: len bytes from src to dst (not overlapping). */
typedef struct eng_copy
{
	void	   *dst;
	const void *src;
	size_t		len;
} eng_copy;

/*
 * Do every copy of parts[0..n), split into blocks over up to `threads`
 * threads (this one among them) when they are large enough to pay; in
 * this thread alone when threads < 2 or no thread starts.
 */
void		eng_copy_all(const eng_copy *parts, int n, int threads);

/*
 * Have free_fn(arg) run on a thread of its own, which the caller does not
 * wait for, when what it frees holds `bytes` >= eng_free_set_async_bytes'
 * size (1 GB): true if that thread started; false, and nothing done, when
 * the caller must free here (smaller, or no thread).
 */
bool		eng_free_detached(void (*free_fn) (void *), void *arg, uint64_t bytes);

/* The size from which eng_free_detached frees on a thread; returns the old one (tests). */
uint64_t	eng_free_set_async_bytes(uint64_t bytes);

/* eng_free_detached threads that have finished (tests). */
uint64_t	eng_free_async_done(void);

#endif							/* ENG_BIGMEM_H */
