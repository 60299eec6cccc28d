/*
 * eng_prefault.h: the memory of a cache being loaded faulted in ahead of
 * its rows, on threads of its own (docs/matcher-service.md, "Loads").
 *
 * A new cache's arrays are fresh anonymous memory: the first write to each
 * page makes the kernel zero it, about 2.7 kB a template, which was the
 * largest part of a load's CPU in the engine, paid by the load threads in
 * the middle of writing the rows. A prefault has the kernel fault those
 * pages in (writable, zeroed) on other threads, a slice of every array at a
 * time, in the order the rows fill them, a bounded distance ahead of the
 * rows added so far (a load that stops short of LOAD_BEGIN's estimate
 * commits little memory it does not use). It never changes what the
 * memory holds (MADV_POPULATE_WRITE, or an atomic add of zero per page
 * where the kernel lacks it), so the load threads write their rows into
 * the same arrays at the same time.
 *
 * The arrays must stay where they are while it runs: whoever frees or
 * moves them (a cache's growth, its free) stops it first.
 */
#ifndef ENG_PREFAULT_H
#define ENG_PREFAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Slices of every array: a step faults one slice of each. */
#define ENG_PREFAULT_STEPS 1024
/* How far ahead of the rows the steps may go, in steps (an eighth). */
#define ENG_PREFAULT_LEAD (ENG_PREFAULT_STEPS / 8)
/* Arrays smaller than this are not worth a thread's step. */
#define ENG_PREFAULT_MIN_BYTES ((size_t) 2 << 20)
#define ENG_PREFAULT_MAX_AREAS 64

typedef struct eng_prefault eng_prefault;

/* One array to fault in: the block at base of len bytes. */
typedef struct eng_prefault_area
{
	void	   *base;
	size_t		len;
} eng_prefault_area;

/*
 * Start faulting in areas[0..n) (copied; those under ENG_PREFAULT_MIN_BYTES
 * skipped) on `threads` threads. The areas are what a load is expected to
 * fill by the time `total` rows are in, each in proportion; `filled` rows
 * are in now: the threads go up to ENG_PREFAULT_LEAD steps ahead of them.
 * NULL when there is nothing to do or no thread starts.
 */
eng_prefault *eng_prefault_start(const eng_prefault_area *areas, int n, int threads,
								 uint64_t total, uint64_t filled);

/* `filled` of the `total` rows are in now: the threads may go further. */
void		eng_prefault_advance(eng_prefault *p, uint64_t filled);

/* Whether every step was done (its threads may still be exiting). */
bool		eng_prefault_done(eng_prefault *p);

/*
 * Stop: the threads end after their current step and are joined; p is
 * freed. NULL does nothing.
 */
void		eng_prefault_stop(eng_prefault *p);

/*
 * Fault in the pages of [p, p + n) writable without changing what they
 * hold; use_populate false takes the per-page path of kernels without
 * MADV_POPULATE_WRITE. Returns false if the populate call was refused as
 * unknown (the caller then takes the per-page path).
 */
bool		eng_prefault_range(void *p, size_t n, bool use_populate);

#endif							/* ENG_PREFAULT_H */
