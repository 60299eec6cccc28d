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

#include <stdlib.h>

#include "mcc_minutiae.h"
#include "mcc_template.h"

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

/* ms emptied: no minutiae, in a w x h image at dpi. */
static inline void
tg_frame(mcc_minutiae *ms, int w, int h, int dpi)
{
	memset(ms, 0, sizeof(*ms));
	ms->width = (uint16_t) w;
	ms->height = (uint16_t) h;
	ms->dpi = (uint16_t) dpi;
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

	tg_frame(ms, 300, 400, 500);
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

/*
 * A template blob made directly from cylinders (not from minutiae), for
 * tests of the scoring arithmetic: cylinder i gets the words w[i] (value
 * words, then mask words for a profile with masks) and the byte angle
 * angle[i]; its minutia i sits at (10 + i, 10) with a theta whose byte angle
 * is angle[i]. Popcounts are counted and the cylinders sorted as stored.
 * Returns a malloc'ed blob (first 4 bytes zero) and its size.
 */
static inline uint8_t *
tg_blob(const mcc_profile *p, int n, const uint64_t (*w)[2 * MCC_MAX_WORDS],
		const uint8_t *angle, size_t *size)
{
	int			words = mcc_profile_cyl_words(p);
	size_t		boff = (MCC_TEMPLATE_HDRSZ + MCC_MINUTIA_RECSZ * (size_t) n + 7) / 8 * 8;
	size_t		moff = boff + (size_t) n * words * 8;
	uint8_t    *b;
	int			order[MCC_MAX_CYL];
	uint16_t	u16;

	*size = moff + (size_t) MCC_CYLMETA_RECSZ * n;
	b = calloc(1, *size);
	b[4] = MCC_TEMPLATE_VERSION;
	b[5] = p->id;
	u16 = 300;
	memcpy(b + 8, &u16, 2);
	u16 = 400;
	memcpy(b + 10, &u16, 2);
	u16 = 500;
	memcpy(b + 12, &u16, 2);
	u16 = (uint16_t) n;
	memcpy(b + 14, &u16, 2);
	memcpy(b + 16, &u16, 2);
	u16 = (uint16_t) words;
	memcpy(b + 18, &u16, 2);
	for (int i = 0; i < n; i++)
	{
		uint8_t    *r = b + MCC_TEMPLATE_HDRSZ + MCC_MINUTIA_RECSZ * (size_t) i;
		int16_t		x = (int16_t) (10 + i);
		int16_t		y = 10;
		float		th = (float) (angle[i] * MCC_TWO_PI / 256.0);
		int			k = i;

		memcpy(r, &x, 2);
		memcpy(r + 2, &y, 2);
		memcpy(r + 4, &th, 4);
		r[8] = 1;
		r[9] = 50;
		/* insertion sort by (angle, index) */
		while (k > 0 && angle[order[k - 1]] > angle[i])
		{
			order[k] = order[k - 1];
			k--;
		}
		order[k] = i;
	}
	for (int c = 0; c < n; c++)
	{
		int			i = order[c];
		int			pc = 0;

		for (int k = 0; k < p->words; k++)
			pc += __builtin_popcountll(w[i][k]);
		memcpy(b + boff + (size_t) c * words * 8, w[i], (size_t) words * 8);
		u16 = (uint16_t) pc;
		memcpy(b + moff + 4 * (size_t) c, &u16, 2);
		b[moff + 4 * (size_t) c + 2] = angle[i];
		b[moff + 4 * (size_t) c + 3] = (uint8_t) i;
	}
	return b;
}

/*
 * Random cylinder words for profile p: value bits with the given density,
 * and for a profile with masks a mask of density mask_density (value bits
 * kept only inside it); bits beyond nbits clear.
 */
static inline void
tg_cylinder_words(tg_rng *r, const mcc_profile *p, double density,
				  double mask_density, uint64_t *w)
{
	memset(w, 0, sizeof(uint64_t) * 2 * MCC_MAX_WORDS);
	for (int b = 0; b < p->nbits; b++)
	{
		int			in_mask = !p->masks || tg_unit(r) < mask_density;

		if (p->masks && in_mask)
			w[p->words + b / 64] |= UINT64_C(1) << (b % 64);
		if (in_mask && tg_unit(r) < density)
			w[b / 64] |= UINT64_C(1) << (b % 64);
	}
}

/*
 * A template blob of ms in a fresh exact-size buffer (malloc'd), or NULL if
 * it cannot be built. The buffer is filled with 0xAB first, so that a test
 * can see that the build leaves the varlena header (bytes 0-3) untouched.
 */
static inline uint8_t *
tg_build_blob(const mcc_minutiae *ms, const mcc_profile *p, size_t *size)
{
	mcc_error	err;
	uint8_t    *b;

	if (mcc_template_build(ms, p, NULL, size, &err) != MCC_OK)
		return NULL;
	b = malloc(*size);
	if (b)
		memset(b, 0xAB, *size);
	if (b && mcc_template_build(ms, p, b, size, &err) != MCC_OK)
	{
		free(b);
		return NULL;
	}
	return b;
}

/* Build and open a template from minutiae into a malloc'ed blob (NULL on failure). */
static inline uint8_t *
tg_build_open(const mcc_minutiae *ms, const mcc_profile *p, mcc_template_view *v)
{
	mcc_error	err;
	size_t		size;
	uint8_t    *b = tg_build_blob(ms, p, &size);

	if (b && mcc_template_open(b, size, v, &err) != MCC_OK)
	{
		free(b);
		return NULL;
	}
	return b;
}

#endif							/* MCC_TESTGEN_H */
