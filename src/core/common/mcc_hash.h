/*
 * mcc_hash.h: a 64-bit hash of a stored template, identifying a tuple's
 * template in the matcher service's cache and in visibility re-checks.
 */
#ifndef MCC_HASH_H
#define MCC_HASH_H

#include <stddef.h>
#include <stdint.h>

/*
 * Hash of a template blob (mcc_template.h) over bytes [4, size): the varlena
 * header is skipped because the same value may be stored with a 1-byte or a
 * 4-byte header. Four 64-bit lanes over 32-byte steps (mcc_hash.c), in
 * host byte order; not cryptographic (the hash only tells versions of the
 * same key apart) and never stored: backend and engine must only agree.
 */
uint64_t	mcc_template_hash(const uint8_t *blob, size_t size);

#endif							/* MCC_HASH_H */
