/*
 * mcc_crc32c.c: CRC-32C in software (slicing by 8) and with the SSE 4.2
 * crc32 instruction where the CPU has it (chosen once, at the first call).
 */
#include "mcc_crc32c.h"

#include <stdbool.h>
#include <string.h>

#define POLY 0x82F63B78u		/* reflected Castagnoli polynomial */

static uint32_t table[8][256];
static bool table_ready = false;

static void
make_table(void)
{
	for (uint32_t i = 0; i < 256; i++)
	{
		uint32_t	c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xFF];
	table_ready = true;
}

static uint32_t
crc_soft(uint32_t c, const uint8_t *p, size_t len)
{
	if (!table_ready)
		make_table();
	while (len >= 8)
	{
		uint32_t	lo;
		uint32_t	hi;

		memcpy(&lo, p, 4);
		memcpy(&hi, p + 4, 4);
		lo ^= c;				/* little-endian hosts (x86-64, aarch64) */
		c = table[7][lo & 0xFF] ^ table[6][(lo >> 8) & 0xFF] ^
			table[5][(lo >> 16) & 0xFF] ^ table[4][lo >> 24] ^
			table[3][hi & 0xFF] ^ table[2][(hi >> 8) & 0xFF] ^
			table[1][(hi >> 16) & 0xFF] ^ table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		c = table[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
	return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_SSE42_PATH 1

__attribute__((target("sse4.2")))
static uint32_t
crc_sse42(uint32_t c, const uint8_t *p, size_t len)
{
	uint64_t	c64 = c;

	while (len >= 8)
	{
		uint64_t	w;

		memcpy(&w, p, 8);
		c64 = __builtin_ia32_crc32di(c64, w);
		p += 8;
		len -= 8;
	}
	c = (uint32_t) c64;
	while (len--)
		c = __builtin_ia32_crc32qi(c, *p++);
	return c;
}
#endif

uint32_t
mcc_crc32c(uint32_t crc, const void *data, size_t len)
{
	uint32_t	c = ~crc;

#ifdef HAVE_SSE42_PATH
	static int	use_sse = -1;

	if (use_sse < 0)
	{
		__builtin_cpu_init();
		use_sse = __builtin_cpu_supports("sse4.2") ? 1 : 0;
	}
	if (use_sse)
		return ~crc_sse42(c, data, len);
#endif
	return ~crc_soft(c, data, len);
}

/* a * b modulo the polynomial, both reflected (bit 31: x^0) */
static uint32_t
mult_mod(uint32_t a, uint32_t b)
{
	uint32_t	m = UINT32_C(1) << 31;
	uint32_t	p = 0;

	for (;;)
	{
		if (a & m)
		{
			p ^= b;
			if ((a & (m - 1)) == 0)
				break;
		}
		m >>= 1;
		b = b & 1 ? (b >> 1) ^ POLY : b >> 1;
	}
	return p;
}

uint32_t
mcc_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
	uint32_t	x = UINT32_C(1) << 30;	/* x^1 */
	uint32_t	p = UINT32_C(1) << 31;	/* x^0 */
	uint64_t	bits = len_b;

	/* p = x^(8 len_b): square x up to x^8 first, then by the bits of len_b */
	for (int k = 0; k < 3; k++)
		x = mult_mod(x, x);
	while (bits)
	{
		if (bits & 1)
			p = mult_mod(x, p);
		x = mult_mod(x, x);
		bits >>= 1;
	}
	return mult_mod(p, crc_a) ^ crc_b;
}
