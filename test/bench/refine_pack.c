/*
 * refine_pack: the host side of mcc_gpu_refine_attach (no GPU): the
 * records of a gallery packed chunk by chunk as the engine sends them
 * (eng_gpu_refdata.c, GPU_GEOM_CHUNK templates a call), with the packing
 * of kernels/impl/mcc_refine_pack.h on several threads.
 *
 *   refine_pack [templates] [threads] [rounds]
 *
 * The gallery is synthetic impressions (continuous directions, as the 10 M
 * restart's gallery: nearly every cylinder a new entry of the direction
 * table) repeated with their directions nudged so that none repeats,
 * packed into one staging buffer reused by every call (pinned on a GPU
 * host), the new unit vectors written there for the device.
 * Prints wall and CPU seconds and nanoseconds per cylinder; the device
 * copies are not in it (no GPU here): on a GPU host the engine's log line
 * gives them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../kernels/impl/mcc_refine_pack.h"
#include "refine_testdata.h"
#include "testclock.h"

#define CHUNK 65536

/*
 * One pass over the gallery as mcc_gpu_refine_attach packs it: one staging
 * buffer of 25 bytes a record reused by every call (pinned on a GPU host),
 * the new unit vectors written there for the device; 0 or -1.
 */
static int
pack_all(const mcc_gpu_geom *geo, int nth, uint64_t *entries)
{
	rp_utab		u;
	rp_rec_item *items = malloc(sizeof(rp_rec_item) * CHUNK);
	size_t		cap = 0;
	unsigned char *mem = NULL;
	int			rc = 0;

	memset(&u, 0, sizeof(u));
	for (size_t c = 0; c < geo->n_tpl; c += CHUNK)
	{
		uint32_t	t1 = geo->n_tpl - c > CHUNK ? (uint32_t) c + CHUNK : geo->n_tpl;
		size_t		total = geo->first[t1] - geo->first[c];
		uint32_t	n = 0;

		if (cap < total + 1)
		{
			free(mem);
			cap = total + 1 + total / 4;
			mem = malloc(25 * cap);
		}
		for (uint32_t t = (uint32_t) c; t < t1; t++)
		{
			items[n].tpl = t;
			items[n].n = geo->first[t + 1] - geo->first[t];
			items[n].off = geo->first[t] - geo->first[c];
			n++;
		}
		rc |= rp_records_build(&u, geo, items, n, nth, (uint8_t *) (mem + 24 * cap),
							   (uint32_t *) (mem + 16 * cap), (uint32_t *) (mem + 20 * cap),
							   (double *) mem);
	}
	*entries = u.n;
	rp_utab_free(&u);
	free(mem);
	free(items);
	return rc;
}

int
main(int argc, char **argv)
{
	uint32_t	ntpl = argc > 1 ? (uint32_t) atol(argv[1]) : 1000000;
	int			nth = argc > 2 ? atoi(argv[2]) : 2;
	int			rounds = argc > 3 ? atoi(argv[3]) : 3;
	rt_set		s;
	mcc_gpu_geom geo;

	memset(&s, 0, sizeof(s));
	rt_add_synth(&s, 700, 0, 7);
	if (s.n == 0 || rp_geom_init(&geo, ntpl, 0) != 0)
		return 1;
	for (uint32_t t = 0; t < ntpl; t++)
	{
		uint32_t	base = geo.n_cyl;

		if (rp_geom_append(&geo, &s.v[t % (uint32_t) s.n]) != 0)
			return 1;
		/* a distinct direction per cylinder: nudge by the copy's number */
		for (uint32_t i = base; i < geo.n_cyl; i++)
			geo.theta[i] = mcc_angle_normalize(geo.theta[i] + 1e-6f * (float) (t / (uint32_t) s.n));
	}
	printf("# %u templates, %u cylinders, chunks of %d, %d thread(s)\n", geo.n_tpl, geo.n_cyl, CHUNK, nth);
	for (int r = 0; r < rounds; r++)
	{
		uint64_t	entries = 0;
		double		w0 = tclock_wall_s();
		double		c0 = tclock_process_cpu_s();
		int			rc = pack_all(&geo, nth, &entries);
		double		w = tclock_wall_s() - w0;
		double		c = tclock_process_cpu_s() - c0;

		printf("round %d: %.3f s wall, %.3f CPU-s, %.1f ns/cylinder (CPU), %lu table entries%s\n",
			   r + 1, w, c, c * 1e9 / geo.n_cyl, (unsigned long) entries, rc ? " FAILED" : "");
	}
	free(geo.first);
	free(geo.perm);
	free(geo.xy);
	free(geo.theta);
	rt_free(&s);
	return 0;
}
