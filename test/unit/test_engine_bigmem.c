/*
 * test_engine_bigmem.c: host memory work kept off the engine's main thread
 * (eng_bigmem.h): copies split over threads give the same bytes as one
 * memcpy, whatever the parts' sizes and the threads; a gallery's growth
 * copied on several threads keeps every array; a large cache's memory is
 * freed on a thread of its own (and a small one's here).
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "eng_bigmem.h"
#include "eng_cache.h"
#include "eng_soa.h"
#include "mcc_rng.h"
#include "unit.h"
#include "testclock.h"

#define WAIT_MS 30000			/* a bound for failures only */

/* Bytes from a seeded generator. */
static void
fill(uint8_t *p, size_t n, uint64_t seed)
{
	mcc_rng		r;

	mcc_rng_seed(&r, seed);
	for (size_t i = 0; i < n; i += 8)
	{
		uint64_t	x = mcc_rng_next(&r);

		memcpy(p + i, &x, n - i < 8 ? n - i : 8);
	}
}

static void
copies(void)
{
	/* one part over several 64 MB blocks, one short of a block, tiny, empty */
	const size_t sizes[] = {((size_t) 150 << 20) + 13, ((size_t) 64 << 20) - 1, 3, 0};
	const int	threads[] = {1, 2, 5};
	eng_copy	parts[4];
	uint8_t    *src[4];
	uint8_t    *dst[4];
	bool		ok = true;

	for (int i = 0; i < 4; i++)
	{
		src[i] = malloc(sizes[i] + 1);
		dst[i] = malloc(sizes[i] + 1);
		if (src[i] == NULL || dst[i] == NULL)
			ok = false;
		else
			fill(src[i], sizes[i], 77 + (uint64_t) i);
	}
	UNIT_CHECK(ok, "test buffers");
	for (int t = 0; ok && t < 3; t++)
	{
		bool		same = true;

		for (int i = 0; i < 4; i++)
		{
			memset(dst[i], 0xa5, sizes[i] + 1);
			parts[i] = (eng_copy) {dst[i], src[i], sizes[i]};
		}
		eng_copy_all(parts, 4, threads[t]);
		for (int i = 0; i < 4; i++)
			same &= memcmp(dst[i], src[i], sizes[i]) == 0 && dst[i][sizes[i]] == 0xa5;
		UNIT_CHECK(same, "%d thread(s): every part copied exactly, nothing past its end", threads[t]);
	}
	for (int i = 0; i < 4; i++)
	{
		free(src[i]);
		free(dst[i]);
	}
}

/* A gallery of n templates with every array filled from seed. */
static bool
soa_filled(mcc_soa *g, uint32_t n, uint32_t ncyl, uint64_t seed)
{
	mcc_error	err;

	if (mcc_soa_init(g, mcc_profile_by_id(MCC_PROFILE_DEFAULT), n, ncyl, &err) != MCC_OK)
		return false;
	for (int w = 0; w < g->words; w++)
		fill((uint8_t *) (g->bits + (size_t) w * g->cap_cyl), (size_t) ncyl * 8, seed + (uint64_t) w);
	fill(g->angle, ncyl, seed + 100);
	fill((uint8_t *) g->pc, (size_t) ncyl * 2, seed + 101);
	fill((uint8_t *) g->first, ((size_t) n + 1) * 4, seed + 103);
	fill((uint8_t *) g->ncyl, (size_t) n * 2, seed + 104);
	fill((uint8_t *) g->id, (size_t) n * 8, seed + 105);
	g->n_tpl = n;
	g->n_cyl = ncyl;
	return true;
}

static bool
soa_same(const mcc_soa *a, const mcc_soa *b)
{
	bool		same = a->n_tpl == b->n_tpl && a->n_cyl == b->n_cyl;
	size_t		nc = a->n_cyl;
	size_t		nt = a->n_tpl;

	for (int w = 0; same && w < a->words; w++)
		same = memcmp(a->bits + (size_t) w * a->cap_cyl, b->bits + (size_t) w * b->cap_cyl, nc * 8) == 0;
	return same && memcmp(a->angle, b->angle, nc) == 0 && memcmp(a->pc, b->pc, nc * 2) == 0 &&
		memcmp(a->first, b->first, (nt + 1) * 4) == 0 &&
		memcmp(a->ncyl, b->ncyl, nt * 2) == 0 && memcmp(a->id, b->id, nt * 8) == 0;
}

static void
regrow(void)
{
	const uint32_t n = 60000;
	const uint32_t ncyl = 2200000;	/* bits planes of 17.6 MB, over several threads' blocks together */
	mcc_soa		a;
	mcc_soa		b;
	mcc_error	err;

	if (!soa_filled(&a, n, ncyl, 5) || !soa_filled(&b, n, ncyl, 5))
	{
		UNIT_CHECK(false, "galleries filled");
		return;
	}
	UNIT_CHECK(eng_soa_regrow(&a, n + n / 2, ncyl + ncyl / 2, 4, &err) == MCC_OK &&
			   a.cap_tpl == n + n / 2 && a.cap_cyl == ncyl + ncyl / 2 && soa_same(&a, &b),
			   "a gallery grown by half, copied on 4 threads: every array as before");
	UNIT_CHECK(eng_soa_regrow(&a, a.cap_tpl, a.cap_cyl + 1, 1, &err) == MCC_OK && soa_same(&a, &b),
			   "grown again on one thread: the same");
	mcc_soa_free(&a);
	mcc_soa_free(&b);
}

static _Atomic int freed_here;

static void
mark_free(void *p)
{
	free(p);
	freed_here++;
}

/* Wait until eng_free_async_done() passes `from` (bounded for failures only). */
static bool
async_done_after(uint64_t from)
{
	for (double end = tclock_wall_ms() + WAIT_MS; tclock_wall_ms() < end;)
	{
		if (eng_free_async_done() > from)
			return true;
		sched_yield();
	}
	return false;
}

static void
frees(void)
{
	uint64_t	old = eng_free_set_async_bytes(1000);
	uint64_t	done = eng_free_async_done();
	mcc_error	err;
	eng_cache  *c;

	void	   *p = malloc(8);
	bool		refused = !eng_free_detached(mark_free, p, 999);

	UNIT_CHECK(refused && eng_free_async_done() == done, "below the size: refused, the caller frees");
	if (refused)
		free(p);				/* as a caller would */
	UNIT_CHECK(eng_free_detached(mark_free, malloc(8), 1000) && async_done_after(done) &&
			   freed_here == 1, "from the size on: freed on a thread of its own");
	done = eng_free_async_done();
	c = eng_cache_new(mcc_profile_by_id(MCC_PROFILE_DEFAULT), NULL, 1000, 36000, &err);
	UNIT_CHECK(c != NULL, "a cache of %llu bytes", c ? (unsigned long long) c->bytes : 0ULL);
	eng_cache_free(c);
	UNIT_CHECK(async_done_after(done), "eng_cache_free of a cache above the size: freed on a thread");
	eng_free_set_async_bytes(UINT64_MAX);
	done = eng_free_async_done();
	c = eng_cache_new(mcc_profile_by_id(MCC_PROFILE_DEFAULT), NULL, 1000, 36000, &err);
	eng_cache_free(c);
	UNIT_CHECK(eng_free_async_done() == done, "below the size: freed in the caller, no thread");
	eng_free_set_async_bytes(old);
}

int
main(void)
{
	copies();
	regrow();
	frees();
	return unit_done();
}
