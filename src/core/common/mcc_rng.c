/*
 * mcc_rng.c: splitmix64 seeding and xoshiro256** (see mcc_rng.h).
 */
#include "mcc_rng.h"

#include <math.h>

#include "mcc_detmath.h"

uint64_t
mcc_splitmix64(uint64_t *x)
{
	uint64_t	z = (*x += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

uint64_t
mcc_rng_key(uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t	x = seed;
	uint64_t	h = mcc_splitmix64(&x);

	/* chain: each key goes through a full splitmix round with the state */
	x = h ^ a;
	h = mcc_splitmix64(&x);
	x = h ^ b;
	h = mcc_splitmix64(&x);
	x = h ^ c;
	return mcc_splitmix64(&x);
}

void
mcc_rng_seed(mcc_rng *r, uint64_t key)
{
	uint64_t	x = key;

	for (int i = 0; i < 4; i++)
		r->s[i] = mcc_splitmix64(&x);
	/* splitmix64 is a bijection of distinct states, so s is never all zero */
}

/* Rotate left. */
static inline uint64_t
rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t
mcc_rng_next(mcc_rng *r)
{
	uint64_t	result = rotl(r->s[1] * 5, 7) * 9;
	uint64_t	t = r->s[1] << 17;

	r->s[2] ^= r->s[0];
	r->s[3] ^= r->s[1];
	r->s[1] ^= r->s[2];
	r->s[0] ^= r->s[3];
	r->s[2] ^= t;
	r->s[3] = rotl(r->s[3], 45);
	return result;
}

double
mcc_rng_uniform(mcc_rng *r)
{
	/* exact: a 53-bit integer times a power of two */
	return (double) (mcc_rng_next(r) >> 11) * 0x1.0p-53;
}

double
mcc_rng_range(mcc_rng *r, double lo, double hi)
{
	return lo + (hi - lo) * mcc_rng_uniform(r);
}

uint64_t
mcc_rng_below(mcc_rng *r, uint64_t n)
{
	uint64_t	threshold,
				v;

	if (n == 0)
		return 0;
	/* reject the lowest (2^64 mod n) values so that v % n is uniform */
	threshold = (0 - n) % n;
	do
		v = mcc_rng_next(r);
	while (v < threshold);
	return v % n;
}

double
mcc_rng_normal(mcc_rng *r)
{
	/* u1 in (0, 1] so that the logarithm is finite */
	double		u1 = (double) ((mcc_rng_next(r) >> 11) + 1) * 0x1.0p-53;
	double		u2 = mcc_rng_uniform(r);

	return sqrt(-2.0 * mcc_dm_log(u1)) * mcc_dm_cos(2.0 * MCC_DM_PI * u2);
}

int
mcc_rng_chance(mcc_rng *r, double p)
{
	return mcc_rng_uniform(r) < p;
}
