/*
 * mcc_hash.c: a word-at-a-time 64-bit hash of a template's bytes after the
 * varlena header.
 *
 * Loading a gallery hashes every template once in the engine (and each
 * change capture and visibility re-check hashes its rows in the backend),
 * so the hash must run near memory speed: four independent 64-bit lanes
 * take 32 bytes per step (multiply, rotate, multiply: the multiplies of
 * different lanes overlap), then the lanes, the remaining words and bytes
 * and the length are folded and the result is finished by an avalanche of
 * xor-shifts and multiplies. The byte-at-a-time FNV-1a used before spent
 * about 4 cycles per byte on one dependent multiply chain.
 *
 * Words are read in host byte order: both ends of the matcher service run on
 * one machine, and the value is never stored.
 */
#include "mcc_hash.h"

#include <string.h>

#define K1	UINT64_C(0x9e3779b185ebca87)
#define K2	UINT64_C(0xc2b2ae3d27d4eb4f)
#define K3	UINT64_C(0x165667b19e3779f9)

static inline uint64_t
rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t
word_at(const uint8_t *p)
{
	uint64_t	w;

	memcpy(&w, p, sizeof(w));
	return w;
}

/* One lane step: mix word w into accumulator acc. */
static inline uint64_t
lane_step(uint64_t acc, uint64_t w)
{
	return rotl64(acc + w * K2, 31) * K1;
}

/* Final avalanche: every input bit reaches every output bit. */
static inline uint64_t
avalanche(uint64_t h)
{
	h ^= h >> 33;
	h *= K2;
	h ^= h >> 29;
	h *= K3;
	h ^= h >> 32;
	return h;
}

uint64_t
mcc_template_hash(const uint8_t *blob, size_t size)
{
	const uint8_t *p = blob + 4;
	const uint8_t *end = blob + (size > 4 ? size : 4);
	uint64_t	n = (uint64_t) (end - p);
	uint64_t	a = K1 + K2;
	uint64_t	b = K2;
	uint64_t	c = 0;
	uint64_t	d = 0 - K1;
	uint64_t	h;

	for (; end - p >= 32; p += 32)
	{
		a = lane_step(a, word_at(p));
		b = lane_step(b, word_at(p + 8));
		c = lane_step(c, word_at(p + 16));
		d = lane_step(d, word_at(p + 24));
	}
	h = rotl64(a, 1) + rotl64(b, 7) + rotl64(c, 12) + rotl64(d, 18) + n * K3;
	for (; end - p >= 8; p += 8)
		h = rotl64(h ^ lane_step(0, word_at(p)), 27) * K1 + K3;
	for (; p < end; p++)
		h = rotl64(h ^ (*p * K3), 11) * K1;
	return avalanche(h);
}
