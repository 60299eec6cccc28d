/*
 * engine_refgeom: the geometry of GPU refinement built from an engine cache
 * (eng_gpu_refdata.c's workers), on one thread, two ways:
 *   template: each template rebuilt (eng_cache_template), its geometry from
 *             the view (rp_geom_append): the way before 0.2.0's restart work;
 *   parts:    the minutiae and cylinder minutia indices read in place
 *             (eng_cache_minutiae, rp_geom_append_parts): the way now.
 * Both must give the same geometry (checked here too).
 *
 *   engine_refgeom [--templates N] [--distinct M] [--rounds R]
 *
 * Prints CPU nanoseconds per cylinder (the calling thread's CPU time, which
 * other load on a shared machine does not inflate).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../kernels/impl/mcc_refine_pack.h"
#include "engine_cachefill.h"
#include "testargs.h"
#include "testclock.h"

#define CHUNK 65536				/* GPU_GEOM_CHUNK: a worker's geometry at a time */

/* The geometry of every entry of c into geo, chunk by chunk, one way; CPU seconds. */
static double
build(const eng_cache *c, mcc_gpu_geom *geo, bool parts, uint8_t *buf, bool *ok)
{
	double		t0 = tclock_cpu_s();

	for (uint32_t i = 0; i < c->soa.n_tpl; i++)
	{
		if (i % CHUNK == 0)
		{
			geo->n_tpl = 0;
			geo->n_cyl = 0;
			geo->first[0] = 0;
		}
		if (parts)
		{
			int			n_min;
			int			n_cyl;
			const uint8_t *mins;
			const uint8_t *cmin;

			eng_cache_minutiae(c, i, &n_min, &mins, &n_cyl, &cmin);
			*ok &= rp_geom_append_parts(geo, n_min, mins, n_cyl, cmin, 1) == 0;
		}
		else
		{
			mcc_template_view v;

			eng_cache_template(c, i, buf, &v);
			*ok &= rp_geom_append(geo, &v) == 0;
		}
	}
	return tclock_cpu_s() - t0;
}

int
main(int argc, char **argv)
{
	int			n = 200000;
	int			distinct = 2000;
	int			rounds = 3;
	tl_tpl	   *t;
	eng_cache  *c;
	mcc_gpu_geom a;
	mcc_gpu_geom b;
	uint8_t    *buf = malloc(eng_template_max_bytes());
	const targ_opt opts[] = {
		OPT_INT("--templates", &n, "N"), OPT_INT("--distinct", &distinct, "M"),
		OPT_INT("--rounds", &rounds, "R"), OPT_END
	};

	targ_parse(argc, argv, opts);
	c = tl_bench_cache(n, &distinct, &t);
	if (c == NULL || buf == NULL || rp_geom_init(&a, CHUNK, 0) != 0 || rp_geom_init(&b, CHUNK, 0) != 0)
		return 1;
	printf("# %d rows (%d distinct synthetic templates), %u cylinders\n", n, distinct, c->soa.n_cyl);
	for (int r = 0; r < rounds; r++)
	{
		bool		ok = true;
		double		ta = build(c, &a, false, buf, &ok);
		double		tb = build(c, &b, true, buf, &ok);

		/* the last chunk of each way: the same records */
		ok = ok && a.n_cyl == b.n_cyl && memcmp(a.perm, b.perm, a.n_cyl) == 0 &&
			memcmp(a.xy, b.xy, 4 * (size_t) a.n_cyl) == 0 && memcmp(a.theta, b.theta, 4 * (size_t) a.n_cyl) == 0;
		printf("round %d: template %.1f ns/cylinder, parts %.1f ns/cylinder (CPU)%s\n", r + 1,
			   ta * 1e9 / c->soa.n_cyl, tb * 1e9 / c->soa.n_cyl, ok ? "" : " DIFFERENT");
	}
	eng_cache_free(c);
	tl_templates_free(t, distinct);
	free(a.first);
	free(a.perm);
	free(a.xy);
	free(a.theta);
	free(b.first);
	free(b.perm);
	free(b.xy);
	free(b.theta);
	free(buf);
	return 0;
}
