/*
 * testcrc.h: the bit-by-bit definition of a reflected CRC-32 (initial value
 * and final XOR all ones), the reference the tests hold the code's CRCs to:
 * CRC-32C (polynomial 0x82F63B78) of the engine's snapshot files, and
 * CRC-32 (ISO 3309, polynomial 0xEDB88320) of the PNG chunks the image
 * tests write.
 */
#ifndef MCC_TESTCRC_H
#define MCC_TESTCRC_H

#include <stddef.h>
#include <stdint.h>

#define TCRC_32C 0x82F63B78u
#define TCRC_ISO3309 0xEDB88320u

/* The CRC of p[0..n) with the reflected polynomial poly. */
static inline uint32_t
tcrc_reflected(uint32_t poly, const uint8_t *p, size_t n)
{
	uint32_t	c = 0xFFFFFFFFu;

	for (size_t i = 0; i < n; i++)
	{
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
	}
	return ~c;
}

#endif							/* MCC_TESTCRC_H */
