/*
 * eng_soa.h: capacity management of an mcc_soa for the caches.
 *
 * mcc_soa_append grows a gallery by itself, by an amount the core chooses.
 * The cache must know its memory before it grows (the limit is checked
 * first and a refused growth leaves the cache unchanged), so it always
 * reserves room here and appends only into free capacity. Moving templates
 * uses the layout documented in mcc_soa.h (one array per word, first[],
 * ncyl[], id[]); the arrays themselves are always allocated by
 * mcc_soa_init and released by mcc_soa_free.
 */
#ifndef ENG_SOA_H
#define ENG_SOA_H

#include <stdint.h>

#include "mcc_error.h"
#include "mcc_soa.h"

/* Bytes of a gallery with these capacities (the arrays of mcc_soa.h). */
uint64_t	eng_soa_bytes_for(const mcc_profile *p, uint32_t cap_tpl, uint32_t cap_cyl);

/* Bytes held by g. */
uint64_t	eng_soa_bytes(const mcc_soa *g);

/*
 * Ask the kernel for transparent huge pages in the block p of n bytes
 * (those whole 2 MB pages inside it), before it is first written: a
 * gallery's arrays are hundreds of MB written once, and a page fault per 4
 * kB was most of a load's time on a virtual machine. Harmless where the
 * kernel says no.
 */
void		eng_advise_huge(void *p, size_t n);

/* The same for g's per-cylinder arrays. */
void		eng_soa_advise(const mcc_soa *g);

/*
 * Replace g by a copy with capacities cap_tpl >= g->n_tpl and
 * cap_cyl >= g->n_cyl, copied on up to `threads` threads (eng_copy_all);
 * g is unchanged on failure.
 */
mcc_status	eng_soa_regrow(mcc_soa *g, uint32_t cap_tpl, uint32_t cap_cyl, int threads,
						   mcc_error *err);

/*
 * Append template k of src to dst (same profile), which must have room for
 * it; copies the cylinders as stored, with id[] taken from src.
 */
void		eng_soa_copy_template(mcc_soa *dst, const mcc_soa *src, uint32_t k);

#endif							/* ENG_SOA_H */
