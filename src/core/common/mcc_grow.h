/*
 * mcc_grow.h: room for one more element in a malloc'd array that grows by
 * doubling (the engine's lists of galleries, snapshot pieces, waiters,
 * tids to read).
 *
 *     snap_piece *p = mcc_grow(r->pieces, r->n, &r->cap, sizeof(*p), 64);
 *
 *     if (p == NULL)
 *         return false;
 *     r->pieces = p;
 *     r->pieces[r->n++] = ...;
 */
#ifndef MCC_GROW_H
#define MCC_GROW_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/*
 * arr holds n of *cap elements of elem bytes. While n < *cap it is returned
 * as it is; else it is reallocated to twice *cap elements (first when *cap
 * is 0) and *cap updated. NULL when out of memory or past UINT32_MAX
 * elements: arr and *cap are then unchanged (and arr still to be freed).
 */
static inline void *
mcc_grow(void *arr, uint32_t n, uint32_t *cap, size_t elem, uint32_t first)
{
	uint32_t	c;
	void	   *p;

	if (n < *cap)
		return arr;
	if (*cap > UINT32_MAX / 2)
		return NULL;
	c = *cap ? *cap * 2 : first;
	p = realloc(arr, elem * c);
	if (p != NULL)
		*cap = c;
	return p;
}

#endif							/* MCC_GROW_H */
