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

#endif							/* MCC_CRC32C_H */
