/*
 * eng_index.c: a chained hash index of 64-bit keys built on several
 * threads (eng_index.h).
 */
#include "eng_index.h"

#include <stdatomic.h>
#include <string.h>

#include "eng_bigmem.h"
#include "mcc_job.h"

#define ROWS_PER_THREAD 4096	/* fewer rows than this a thread: not worth one */

/* A build: the slot ranges its threads take in turn. */
typedef struct index_run
{
	const uint64_t *keys;
	uint32_t	n;
	uint32_t   *slots;
	uint32_t	n_slots;
	uint8_t    *next;
	size_t		stride;
	uint32_t	n_ranges;
	atomic_uint range;			/* the next range to take */
} index_run;

/*
 * Take ranges of slots until none is left: each cleared, then the rows
 * whose keys fall in it linked in row order (every thread reads every key:
 * 8 bytes a row, sequentially, against one random write a row it owns).
 */
static void *
index_main(void *arg)
{
	index_run  *r = arg;
	uint32_t	k;

	while ((k = atomic_fetch_add(&r->range, 1)) < r->n_ranges)
	{
		uint32_t	lo = (uint32_t) ((uint64_t) r->n_slots * k / r->n_ranges);
		uint32_t	hi = (uint32_t) ((uint64_t) r->n_slots * (k + 1) / r->n_ranges);

		memset(r->slots + lo, 0xff, sizeof(uint32_t) * (size_t) (hi - lo));
		for (uint32_t i = 0; i < r->n; i++)
		{
			uint32_t	h = eng_index_slot(r->keys[i], r->n_slots);

			if (h < lo || h >= hi)
				continue;
			memcpy(r->next + (size_t) i * r->stride, &r->slots[h], sizeof(uint32_t));
			r->slots[h] = i;
		}
	}
	return NULL;
}

void
eng_index_build(const uint64_t *keys, uint32_t n, uint32_t *slots, uint32_t n_slots,
				uint32_t *next, size_t next_stride, int threads)
{
	index_run	r = {.keys = keys, .n = n, .slots = slots, .n_slots = n_slots,
	.next = (uint8_t *) next, .stride = next_stride};

	if ((uint64_t) threads > n / ROWS_PER_THREAD + 1)
		threads = (int) (n / ROWS_PER_THREAD + 1);
	if (threads < 1)
		threads = 1;
	r.n_ranges = (uint32_t) threads < n_slots ? (uint32_t) threads : n_slots;
	atomic_init(&r.range, 0);
	mcc_job_run_each(threads > 1 ? threads : 1, index_main, &r, 0);
}
