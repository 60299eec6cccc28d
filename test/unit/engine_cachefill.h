/*
 * engine_cachefill.h: an engine cache filled with synthetic rows for the
 * engine benchmarks (test/bench/engine_*.c): n rows cycling over
 * templates t[0 .. distinct), keys 0 .. n-1, tuple ids 1 .. n, xmins from
 * 1000, as a load with tuple ids leaves them; tl_bench_cache also makes
 * the templates.
 */
#ifndef MCC_ENGINE_CACHEFILL_H
#define MCC_ENGINE_CACHEFILL_H

#include <stdio.h>

#include "eng_cache.h"
#include "engine_testlib.h"

/* The cache, or NULL (said on stderr). */
static inline eng_cache *
tl_cache_cycle(const tl_tpl *t, int distinct, int n)
{
	uint64_t	cyl = 0;
	mcc_error	err;
	eng_cache  *c;

	for (int i = 0; i < distinct; i++)
		cyl += (uint64_t) tl_view(&t[i]).n_cyl;
	c = eng_cache_new(mcc_profile_by_id(MCC_PROFILE_DEFAULT), NULL, (uint32_t) n,
					  (uint32_t) (cyl * ((uint64_t) n / distinct + 1)), &err);
	if (c == NULL)
	{
		fprintf(stderr, "cache: %s\n", err.message);
		return NULL;
	}
	for (int i = 0; i < n; i++)
	{
		mcc_template_view v = tl_view(&t[i % distinct]);
		uint32_t	idx;

		if (eng_cache_append(c, i, 1, 0, 0, ENG_E_LOAD_INS, &v, &idx, &err) != MCC_OK)
		{
			fprintf(stderr, "append: %s\n", err.message);
			eng_cache_free(c);
			return NULL;
		}
		c->entries[idx].tid = (uint64_t) i + 1;
		c->entries[idx].xmin = 1000 + (uint64_t) i;
	}
	return c;
}

/*
 * The benchmarks' gallery: the LSS tables ready, *distinct (at most n)
 * synthetic templates into *t (seed 42) and the cache of n rows cycling
 * over them, or NULL (said on stderr).
 */
static inline eng_cache *
tl_bench_cache(int n, int *distinct, tl_tpl **t)
{
	if (*distinct > n)
		*distinct = n;
	mcc_lss_init();
	*t = tl_synth_templates(42, *distinct, false);
	return tl_cache_cycle(*t, *distinct, n);
}

#endif							/* MCC_ENGINE_CACHEFILL_H */
