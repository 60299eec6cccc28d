/*
 * testgen.h: deterministic random numbers and plausible minutiae sets for
 * the src/core unit tests (the real synthetic generator is mcc_synth.h; these
 * sets only need to look like a finger to the cylinder code: 20..60 minutiae
 * spread over a ~300x400 area with a minimum spacing).
 */
#ifndef MCC_TESTGEN_H
#define MCC_TESTGEN_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "mcc_minutiae.h"

typedef struct tg_rng
{
	uint64_t	s;
} tg_rng;

/* splitmix64: a tiny generator with good mixing, fully reproducible. */
static inline uint64_t
tg_next(tg_rng *r)
{
	uint64_t	z = (r->s += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* Uniform double in [0, 1). */
static inline double
tg_unit(tg_rng *r)
{
	return (double) (tg_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform integer in [lo, hi]. */
static inline int
tg_int(tg_rng *r, int lo, int hi)
{
	return lo + (int) (tg_next(r) % (uint64_t) (hi - lo + 1));
}

/*
 * A plausible minutiae set: count in [min_n, max_n], positions inside an
 * ellipse of semi-axes 130 x 180 px centred in a 300 x 400 image, at least
 * `spacing` px apart, uniform directions, endings and bifurcations.
 */
static inline void
tg_minutiae(tg_rng *r, mcc_minutiae *ms, int min_n, int max_n, double spacing)
{
	int			want = tg_int(r, min_n, max_n);
	int			tries = 0;

	memset(ms, 0, sizeof(*ms));
	ms->width = 300;
	ms->height = 400;
	ms->dpi = 500;
	while (ms->count < want && tries < 100000)
	{
		double		u = tg_unit(r) * 2.0 - 1.0;
		double		v = tg_unit(r) * 2.0 - 1.0;
		int			x;
		int			y;
		int			ok = 1;

		tries++;
		if (u * u + v * v > 1.0)
			continue;
		x = (int) lround(150 + 130 * u);
		y = (int) lround(200 + 180 * v);
		for (int i = 0; i < ms->count && ok; i++)
		{
			double		dx = ms->m[i].x - x;
			double		dy = ms->m[i].y - y;

			ok = dx * dx + dy * dy >= spacing * spacing;
		}
		if (!ok)
			continue;
		ms->m[ms->count].x = (int16_t) x;
		ms->m[ms->count].y = (int16_t) y;
		ms->m[ms->count].theta = mcc_angle_normalize(tg_unit(r) * MCC_TWO_PI);
		ms->m[ms->count].type = (uint8_t) tg_int(r, 1, 2);
		ms->m[ms->count].quality = (uint8_t) tg_int(r, 20, 100);
		ms->count++;
	}
}

/*
 * A noisy impression of ms: each minutia kept with probability keep, moved by
 * up to +-jitter px and turned by up to +-turn radians; a few spurious ones
 * added. Gives pairs that score like mates rather than impostors.
 */
static inline void
tg_impression(tg_rng *r, const mcc_minutiae *ms, mcc_minutiae *out,
			  double keep, int jitter, double turn, int spurious)
{
	memset(out, 0, sizeof(*out));
	out->width = ms->width;
	out->height = ms->height;
	out->dpi = ms->dpi;
	for (int i = 0; i < ms->count; i++)
	{
		mcc_minutia m = ms->m[i];
		int			x;
		int			y;

		if (tg_unit(r) >= keep)
			continue;
		x = m.x + tg_int(r, -jitter, jitter);
		y = m.y + tg_int(r, -jitter, jitter);
		if (x < 0 || x >= ms->width || y < 0 || y >= ms->height)
			continue;
		m.x = (int16_t) x;
		m.y = (int16_t) y;
		m.theta = mcc_angle_normalize(m.theta + (tg_unit(r) * 2 - 1) * turn);
		out->m[out->count++] = m;
	}
	for (int s = 0; s < spurious && out->count < MCC_MAX_MINUTIAE; s++)
	{
		mcc_minutia *m = &out->m[out->count++];

		m->x = (int16_t) tg_int(r, 20, ms->width - 21);
		m->y = (int16_t) tg_int(r, 20, ms->height - 21);
		m->theta = mcc_angle_normalize(tg_unit(r) * MCC_TWO_PI);
		m->type = 1;
		m->quality = 50;
	}
}

#endif							/* MCC_TESTGEN_H */
