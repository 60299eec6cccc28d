/*
 * test_hash.c: mcc_template_hash, the key the matcher service tells template
 * versions apart by: the 4 header bytes do not count, every other byte and
 * the length do, at every position (the lanes, the remaining words and the
 * tail bytes each take part), and no two of many related blobs collide.
 */
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "mcc_cmp.h"
#include "mcc_hash.h"

#define MAXLEN 2100

/* Fill blob with the bytes of a fixed linear congruential sequence. */
static void
fill_blob(uint8_t *blob, int len)
{
	uint32_t	x = 12345;

	for (int i = 0; i < len; i++)
	{
		x = x * 1103515245u + 12345u;
		blob[i] = (uint8_t) (x >> 16);
	}
}

/* The 4 header bytes do not count; nothing but the header hashes alike. */
static void
test_header(const uint8_t *blob)
{
	static uint8_t copy[MAXLEN];
	int			header_free = 1;

	UNIT_CHECK(mcc_template_hash(blob, MAXLEN) == mcc_template_hash(blob, MAXLEN),
			   "the hash is a function of the bytes");
	memcpy(copy, blob, MAXLEN);
	for (int i = 0; i < 4; i++)
	{
		copy[i] ^= 0xa5;
		header_free &= mcc_template_hash(copy, MAXLEN) == mcc_template_hash(blob, MAXLEN);
	}
	UNIT_CHECK(header_free, "the 4 header bytes do not change the hash");
	UNIT_CHECK(mcc_template_hash(blob, 0) == mcc_template_hash(blob, 4) &&
			   mcc_template_hash(blob, 4) != mcc_template_hash(blob, 5),
			   "blobs of 0 to 4 bytes hash alike (nothing after the header); a fifth byte counts");
}

/* How many of seen[0 .. n) equal the one before them once sorted. */
static int
count_collisions(uint64_t *seen, int n)
{
	int			dups = 0;

	qsort(seen, (size_t) n, sizeof(seen[0]), mcc_cmp_u64);
	for (int i = 1; i < n; i++)
		dups += seen[i] == seen[i - 1];
	return dups;
}

/*
 * Every length 4..MAXLEN, then every single-bit flip of a 2,000-byte blob:
 * each flip changes the hash, and no two of them all collide.
 */
static void
test_lengths_and_flips(const uint8_t *blob)
{
	static uint8_t copy[MAXLEN];
	static uint64_t seen[MAXLEN + 1 + 8 * 2000];
	int			n = 0;
	int			flips_change = 1;
	int			dups;

	for (int len = 4; len <= MAXLEN; len++)
		seen[n++] = mcc_template_hash(blob, (size_t) len);
	for (int i = 4; i < 2000; i++)
		for (int bit = 0; bit < 8; bit++)
		{
			uint64_t	h;

			memcpy(copy, blob, 2000);
			copy[i] ^= (uint8_t) (1u << bit);
			h = mcc_template_hash(copy, 2000);
			flips_change &= h != mcc_template_hash(blob, 2000);
			seen[n++] = h;
		}
	UNIT_CHECK(flips_change, "flipping any one bit after the header changes the hash");
	dups = count_collisions(seen, n);
	UNIT_CHECK(dups == 0, "no two of %d related blobs (every length, every one-bit flip) collide (%d did)",
			   n, dups);
}

int
main(void)
{
	static uint8_t blob[MAXLEN];

	fill_blob(blob, MAXLEN);
	test_header(blob);
	test_lengths_and_flips(blob);
	return unit_done();
}
