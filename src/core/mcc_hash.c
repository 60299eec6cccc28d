/*
 * mcc_hash.c: FNV-1a over a template's bytes after the varlena header.
 */
#include "mcc_hash.h"

uint64_t
mcc_template_hash(const uint8_t *blob, size_t size)
{
	uint64_t	h = UINT64_C(0xcbf29ce484222325);

	for (size_t i = 4; i < size; i++)
	{
		h ^= blob[i];
		h *= UINT64_C(0x100000001b3);
	}
	return h;
}
