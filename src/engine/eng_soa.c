/*
 * eng_soa.c: reserving capacity in, and moving templates between, mcc_soa
 * galleries without going through their template blobs.
 */
#include "eng_soa.h"

#include "eng_bigmem.h"

#include <sys/mman.h>

#include <string.h>

uint64_t
eng_soa_bytes_for(const mcc_profile *p, uint32_t cap_tpl, uint32_t cap_cyl)
{
	uint64_t	per_cyl = 8u * (uint64_t) mcc_profile_cyl_words(p) +
		sizeof(uint8_t) + sizeof(uint16_t);
	uint64_t	per_tpl = sizeof(uint32_t) + sizeof(uint16_t) + sizeof(int64_t);

	return per_cyl * cap_cyl + per_tpl * cap_tpl + sizeof(uint32_t);
}

uint64_t
eng_soa_bytes(const mcc_soa *g)
{
	return eng_soa_bytes_for(g->profile, g->cap_tpl, g->cap_cyl);
}

void
eng_advise_huge(void *p, size_t n)
{
	const uintptr_t huge = (uintptr_t) 2 << 20;
	uintptr_t	a = ((uintptr_t) p + huge - 1) & ~(huge - 1);
	uintptr_t	b = ((uintptr_t) p + n) & ~(huge - 1);

	/* only whole huge pages inside the block; a refusal changes nothing */
	if (p != NULL && b > a)
		(void) madvise((void *) a, b - a, MADV_HUGEPAGE);
}

void
eng_soa_advise(const mcc_soa *g)
{
	eng_advise_huge(g->bits, sizeof(uint64_t) * g->words * (size_t) g->cap_cyl);
	eng_advise_huge(g->pc, sizeof(uint16_t) * (size_t) g->cap_cyl);
	eng_advise_huge(g->angle, (size_t) g->cap_cyl);
}

mcc_status
eng_soa_regrow(mcc_soa *g, uint32_t cap_tpl, uint32_t cap_cyl, int threads, mcc_error *err)
{
	mcc_soa		n;
	mcc_status	st;
	eng_copy	parts[8 + 64];
	int			np = 0;

	if (cap_tpl < g->n_tpl || cap_cyl < g->n_cyl)
		return mcc_error_set(err, MCC_ERR_INTERNAL,
							 "gallery capacity below its contents");
	st = mcc_soa_init(&n, g->profile, cap_tpl, cap_cyl, err);
	if (st != MCC_OK)
		return st;
	eng_soa_advise(&n);
	for (int w = 0; w < g->words && w < 64; w++)
		parts[np++] = (eng_copy) {n.bits + (size_t) w * n.cap_cyl, g->bits + (size_t) w * g->cap_cyl,
		(size_t) g->n_cyl * sizeof(uint64_t)};
	parts[np++] = (eng_copy) {n.angle, g->angle, (size_t) g->n_cyl * sizeof(*g->angle)};
	parts[np++] = (eng_copy) {n.pc, g->pc, (size_t) g->n_cyl * sizeof(*g->pc)};
	parts[np++] = (eng_copy) {n.first, g->first, ((size_t) g->n_tpl + 1) * sizeof(*g->first)};
	parts[np++] = (eng_copy) {n.ncyl, g->ncyl, (size_t) g->n_tpl * sizeof(*g->ncyl)};
	parts[np++] = (eng_copy) {n.id, g->id, (size_t) g->n_tpl * sizeof(*g->id)};
	/* the new arrays' pages are faulted in by the copy: on several threads, as the copy */
	eng_copy_all(parts, np, threads);
	n.n_tpl = g->n_tpl;
	n.n_cyl = g->n_cyl;
	mcc_soa_free(g);
	*g = n;
	return MCC_OK;
}

void
eng_soa_copy_template(mcc_soa *dst, const mcc_soa *src, uint32_t k)
{
	uint32_t	c0 = src->first[k];
	uint32_t	nc = src->ncyl[k];
	uint32_t	d0 = dst->n_cyl;
	uint32_t	t = dst->n_tpl;

	for (int w = 0; w < src->words; w++)
		memcpy(dst->bits + (size_t) w * dst->cap_cyl + d0,
			   src->bits + (size_t) w * src->cap_cyl + c0,
			   (size_t) nc * sizeof(uint64_t));
	memcpy(dst->angle + d0, src->angle + c0, nc * sizeof(*src->angle));
	memcpy(dst->pc + d0, src->pc + c0, nc * sizeof(*src->pc));
	dst->first[t] = d0;
	dst->ncyl[t] = (uint16_t) nc;
	dst->id[t] = src->id[k];
	dst->n_tpl = t + 1;
	dst->n_cyl = d0 + nc;
	dst->first[t + 1] = dst->n_cyl;
}
