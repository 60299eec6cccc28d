/*
 * mcc_crc32c.h: CRC-32C (Castagnoli), the checksum PostgreSQL uses for its
 * own files (pg_crc32c), for files the matcher engine writes (its cache
 * snapshots), where PostgreSQL's implementation is not available.
 */
#ifndef MCC_CRC32C_H
#define MCC_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/*
 * Continue a CRC-32C: start with crc = 0, feed the data in any pieces,
 * the result of the last call is the checksum ("123456789" gives
 * 0xE3069283). Uses the SSE 4.2 instruction where the CPU has it, else
 * tables (slicing by 8); both give the same value.
 */
uint32_t	mcc_crc32c(uint32_t crc, const void *data, size_t len);

/*
 * The CRC-32C of A followed by B from crc_a (of A) and crc_b (of B, len_b
 * bytes), as zlib's crc32_combine: pieces checked on several threads give
 * the checksum of the whole.
 */
uint32_t	mcc_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

#endif							/* MCC_CRC32C_H */
