/*
 * mcc_rng.h: the seeded pseudo-random numbers of the synthetic generator.
 *
 * xoshiro256** (Blackman and Vigna) for the stream, seeded through
 * splitmix64 from a key that mixes (seed, finger, impression, stream), so
 * that every finger, impression and purpose has its own independent stream
 * and can be generated alone, in any order, on any machine. Only integer
 * operations decide the bits; the floating-point helpers use exact scaling
 * and the reproducible functions of mcc_detmath.h.
 */
#ifndef MCC_RNG_H
#define MCC_RNG_H

#include <stdint.h>

typedef struct mcc_rng
{
	uint64_t	s[4];
} mcc_rng;

/* One step of splitmix64 on *x (advances it). */
uint64_t	mcc_splitmix64(uint64_t *x);

/* A 64-bit mix of four keys (distinct keys give unrelated values). */
uint64_t	mcc_rng_key(uint64_t seed, uint64_t a, uint64_t b, uint64_t c);

/* Seed a generator from a 64-bit key. */
void		mcc_rng_seed(mcc_rng *r, uint64_t key);

/* Next 64 random bits. */
uint64_t	mcc_rng_next(mcc_rng *r);

/* Uniform double in [0, 1), 53 random bits. */
double		mcc_rng_uniform(mcc_rng *r);

/* Uniform double in [lo, hi). */
double		mcc_rng_range(mcc_rng *r, double lo, double hi);

/* Uniform integer in [0, n) without modulo bias; 0 if n == 0. */
uint64_t	mcc_rng_below(mcc_rng *r, uint64_t n);

/* Standard normal deviate (Box-Muller, one value per two draws). */
double		mcc_rng_normal(mcc_rng *r);

/* True with probability p (p <= 0: never, p >= 1: always); one draw. */
int			mcc_rng_chance(mcc_rng *r, double p);

#endif							/* MCC_RNG_H */
